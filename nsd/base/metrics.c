/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* metrics.c: nsd's counters, see metrics.h. */
#include "base/metrics.h"

#include <errno.h>
#include <string.h>

static Metrics metrics;

static const uint64_t latency_bounds_usec[] = NSD_METRICS_LATENCY_BOUNDS_USEC;
_Static_assert(sizeof latency_bounds_usec / sizeof latency_bounds_usec[0] + 1 ==
                       NSD_METRICS_LATENCY_BUCKETS,
               "one latency bucket per bound, and one past the last");
_Static_assert(_NSD_METRICS_JOIN_MAX <= NSD_METRICS_JOINS &&
                       _NSD_METRICS_RELEASE_MAX <= NSD_METRICS_RELEASES &&
                       _NSD_METRICS_LOOKUP_MAX <= NSD_METRICS_LOOKUPS &&
                       _NSD_METRICS_THROTTLE_MAX <= NSD_METRICS_THROTTLES,
               "every label has its slot");

enum nsd_metrics_join metrics_join_result(int error) {
        switch (error < 0 ? -error : error) {
        case 0:
                return NSD_METRICS_JOIN_OK;
        case EPERM:
        case EACCES:
        case ENOENT:
        case EUSERS:
        case EBUSY:
        case E2BIG:
        case EOWNERDEAD: /* a recycled uid: the namespace is another person's */
                return NSD_METRICS_JOIN_REFUSED;
        case NSD_ERRNO_NOT_MANAGED:
                return NSD_METRICS_JOIN_NOT_MANAGED;
        case NSD_ERRNO_NOT_YET:
                return NSD_METRICS_JOIN_NOT_YET;
        case ETIMEDOUT:
                return NSD_METRICS_JOIN_TIMEOUT;
        default:
                return NSD_METRICS_JOIN_ERROR;
        }
}

unsigned metrics_latency_bucket(uint64_t usec) {
        unsigned i = 0;

        while (i < sizeof latency_bounds_usec / sizeof latency_bounds_usec[0] &&
               usec > latency_bounds_usec[i])
                i++;
        return i;
}

void metrics_count_join(int error, uint64_t usec) {
        metrics.joins[metrics_join_result(error)]++;
        metrics.join_latency[metrics_latency_bucket(usec)]++;
        metrics.join_latency_sum_usec += usec;
}

void metrics_count_created(void) {
        metrics.created++;
}

void metrics_count_setup_failure(void) {
        metrics.setup_failures++;
}

void metrics_count_release(enum nsd_metrics_release reason) {
        if ((unsigned) reason < NSD_METRICS_RELEASES)
                metrics.releases[reason]++;
}

void metrics_count_lookup(enum nsd_metrics_lookup result) {
        if ((unsigned) result < NSD_METRICS_LOOKUPS)
                metrics.lookups[result]++;
}

void metrics_count_lookup_timeout(enum nsd_metrics_lookup_timeout decision) {
        if ((unsigned) decision < NSD_METRICS_LOOKUP_TIMEOUTS)
                metrics.lookup_timeouts[decision]++;
}

void metrics_count_path_walk_timeout(void) {
        metrics.path_walk_timeouts++;
}

void metrics_count_throttled(enum nsd_metrics_throttle why) {
        if ((unsigned) why < NSD_METRICS_THROTTLES)
                metrics.throttled[why]++;
}

const Metrics *metrics_get(void) {
        return &metrics;
}

void metrics_reset(void) {
        memset(&metrics, 0, sizeof metrics);
}
