/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Time in microseconds, as systemd's now(). Plain C, no GLib. Private. */
#pragma once

#include <stdint.h>
#include <time.h>

#define USEC_PER_SEC 1000000ull

/* The clock (CLOCK_MONOTONIC for deadlines, CLOCK_REALTIME for timestamps) in microseconds. */
static inline uint64_t now_usec(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000u;
}
