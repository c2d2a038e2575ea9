/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-metrics: base/metrics.c, METRICS' counters: the class of a JOIN's answer (every errno
 * lands in one of a fixed set of labels), the latency buckets at and around their bounds,
 * counters that only go up and never step outside their arrays. The handler and the places
 * that bump them are test-handlers'. TAP, no root.
 */
#include <errno.h>
#include <string.h>

#include "base/metrics.h"
#include "tap.h"

static void test_join_result(void) {
        static const struct {
                int error;
                enum nsd_metrics_join want;
        } cases[] = {
                { 0, NSD_METRICS_JOIN_OK },
                { -EPERM, NSD_METRICS_JOIN_REFUSED },
                { EPERM, NSD_METRICS_JOIN_REFUSED },
                { -ENOENT, NSD_METRICS_JOIN_REFUSED },
                { -EUSERS, NSD_METRICS_JOIN_REFUSED },
                { -EBUSY, NSD_METRICS_JOIN_REFUSED },
                { -ENXIO, NSD_METRICS_JOIN_NOT_MANAGED },
                { -EAGAIN, NSD_METRICS_JOIN_NOT_YET },
                { -ETIMEDOUT, NSD_METRICS_JOIN_TIMEOUT },
                { -EIO, NSD_METRICS_JOIN_ERROR },
                { -ENOMEM, NSD_METRICS_JOIN_ERROR },
                { -4095, NSD_METRICS_JOIN_ERROR },
        };
        bool bounded = true;

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                is_int(metrics_join_result(cases[i].error), cases[i].want, "error %d: label %d",
                       cases[i].error, cases[i].want);
        for (int e = 0; e < 4096; e++)
                bounded = bounded && (unsigned) metrics_join_result(-e) < _NSD_METRICS_JOIN_MAX;
        ok(bounded, "every errno 0..4095 lands in one of %d labels", _NSD_METRICS_JOIN_MAX);
}

static void test_buckets(void) {
        static const uint64_t bounds[] = NSD_METRICS_LATENCY_BOUNDS_USEC;
        const unsigned n = sizeof bounds / sizeof bounds[0];
        bool at = true, above = true;

        is_int(metrics_latency_bucket(0), 0, "0 us: the first bucket");
        for (unsigned i = 0; i < n; i++) {
                at = at && metrics_latency_bucket(bounds[i]) == i;
                above = above && metrics_latency_bucket(bounds[i] + 1) == i + 1;
        }
        ok(at, "a latency equal to a bound is in that bound's bucket (le)");
        ok(above, "one microsecond more is in the next");
        is_int(metrics_latency_bucket(UINT64_MAX), NSD_METRICS_LATENCY_BUCKETS - 1,
               "the longest: the last bucket (+Inf)");
}

static void test_counters(void) {
        const Metrics *m = metrics_get();
        Metrics zero;

        metrics_reset();
        memset(&zero, 0, sizeof zero);
        ok(memcmp(m, &zero, sizeof zero) == 0, "reset: everything 0");
        metrics_count_join(0, 150);
        metrics_count_join(-EPERM, 7000000);
        ok(m->joins[NSD_METRICS_JOIN_OK] == 1 && m->joins[NSD_METRICS_JOIN_REFUSED] == 1,
           "joins by label");
        ok(m->join_latency[1] == 1 && m->join_latency[NSD_METRICS_LATENCY_BUCKETS - 1] == 1 &&
                   m->join_latency_sum_usec == 7000150,
           "latency: 150 us in the 250 us bucket, 7 s in the last, the sum");
        metrics_count_release(NSD_METRICS_RELEASE_LINGER);
        metrics_count_release((enum nsd_metrics_release) 99); /* out of range: ignored */
        metrics_count_lookup(NSD_METRICS_LOOKUP_TIMEOUT);
        metrics_count_throttled(NSD_METRICS_THROTTLE_RATE);
        metrics_count_created();
        metrics_count_setup_failure();
        metrics_count_path_walk_timeout();
        ok(m->releases[NSD_METRICS_RELEASE_LINGER] == 1 && m->releases[3] == 0 &&
                   m->lookups[NSD_METRICS_LOOKUP_TIMEOUT] == 1 &&
                   m->throttled[NSD_METRICS_THROTTLE_RATE] == 1 && m->created == 1 &&
                   m->setup_failures == 1 && m->path_walk_timeouts == 1,
           "each counter counts, a label out of range is dropped");
        metrics_reset();
}

int main(void) {
        test_join_result();
        test_buckets();
        test_counters();
        return tap_done();
}
