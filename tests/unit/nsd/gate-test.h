/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/nsd/gate-test.h: a gate for a test's fakes that nsd calls in its threads (a user
 * database whose lookups hang): they wait at it while it is closed; the test opens it, and
 * reads how many wait now, how many waited at once at most, and how many came in all.
 * Header-only, like tap.h. A Gate of static storage starts closed and needs no init.
 *
 *   gate_pass(&g);                  in the fake: wait while g is closed
 *   gate_waiting(&g)                in the test: how many wait now
 *   gate_set_open(&g, true);        every waiter passes, and later ones do not wait
 */
#pragma once

#include <glib.h>
#include <stdbool.h>

typedef struct Gate {
        GMutex lock;
        GCond cond;
        bool open;
        int waiting, waiting_max, calls;
} Gate;

static inline void gate_pass(Gate *g) {
        g_mutex_lock(&g->lock);
        g->calls++;
        g->waiting++;
        g->waiting_max = MAX(g->waiting, g->waiting_max);
        while (!g->open)
                g_cond_wait(&g->cond, &g->lock);
        g->waiting--;
        g_mutex_unlock(&g->lock);
}

static inline int gate_waiting(Gate *g) {
        int n;

        g_mutex_lock(&g->lock);
        n = g->waiting;
        g_mutex_unlock(&g->lock);
        return n;
}

static inline void gate_set_open(Gate *g, bool open) {
        g_mutex_lock(&g->lock);
        g->open = open;
        g_cond_broadcast(&g->cond);
        g_mutex_unlock(&g->lock);
}
