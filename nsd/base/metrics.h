/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * metrics.h: nsd's counters since it started, for METRICS (nsd-protocol.h, 1.4; `nsctl
 * metrics`). One plain struct of uint64_t for the whole process, on the bottom floor so that
 * every room bumps its own counters where the thing happens: a JOIN answered (api), a
 * namespace created or released (domain), a lookup answered (policy), a path walk past its
 * deadline (domain), a request throttled (transport). Gauges are not kept here: METRICS asks
 * their owners (users, connections, the fd store) at the time.
 *
 * Every label is an index into a fixed array (the enums of nsd-protocol.h): nothing here
 * grows with the number of users. Everything runs on nsd's loop (the lookup threads report
 * there first), so nothing is atomic.
 */
#pragma once

#include <stdint.h>

#include "nsd-protocol.h"

typedef struct Metrics {
        uint64_t joins[NSD_METRICS_JOINS];
        uint64_t join_latency[NSD_METRICS_LATENCY_BUCKETS]; /* not cumulative */
        uint64_t join_latency_sum_usec;
        uint64_t created;
        uint64_t setup_failures;
        uint64_t releases[NSD_METRICS_RELEASES];
        uint64_t lookups[NSD_METRICS_LOOKUPS];
        uint64_t path_walk_timeouts;
        uint64_t throttled[NSD_METRICS_THROTTLES];
        uint64_t lookup_timeouts[NSD_METRICS_LOOKUP_TIMEOUTS];
} Metrics;

/* The class of a JOIN's answer: 0 or -errno (either sign) -> NSD_METRICS_JOIN_*. */
enum nsd_metrics_join metrics_join_result(int error);
/* The latency bucket of usec (0 .. NSD_METRICS_LATENCY_BUCKETS - 1). */
unsigned metrics_latency_bucket(uint64_t usec);

/* A JOIN or JOIN_SESSION answered with error (0 or -errno), usec after it was read. */
void metrics_count_join(int error, uint64_t usec);
void metrics_count_created(void);
void metrics_count_setup_failure(void);
void metrics_count_release(enum nsd_metrics_release reason);
void metrics_count_lookup(enum nsd_metrics_lookup result);
/* A managed-lookup past its deadline, and what OnLookupTimeout= made of it. */
void metrics_count_lookup_timeout(enum nsd_metrics_lookup_timeout decision);
void metrics_count_path_walk_timeout(void);
void metrics_count_throttled(enum nsd_metrics_throttle why);

/* The counters now. */
const Metrics *metrics_get(void);
/* Back to 0: for the unit tests, which run several servers in one process. */
void metrics_reset(void);
