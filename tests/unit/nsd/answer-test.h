/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/nsd/answer-test.h: what one of nsd's asynchronous answers told a test, for the
 * callbacks of the form (int r, const char *why, void *userdata): policy.c's PolicyCallback,
 * users.c's UsersJoinDone. Header-only, like tap.h. An Answer may be reused; it keeps the
 * last r and why, and counts the calls.
 *
 *   Answer a = { 0 };   policy_uid_managed(..., on_answer, &a);   RUN_UNTIL(a.calls) ...
 *   g_auto(Answer) b = { 0 };                                     frees b.why at the end
 */
#pragma once

#include <glib.h>

typedef struct Answer {
        unsigned calls;
        int r; /* PolicyCallback's managed */
        char *why;
} Answer;

static inline void on_answer(int r, const char *why, void *userdata) {
        Answer *a = userdata;

        a->calls++;
        a->r = r;
        g_free(a->why);
        a->why = g_strdup(why);
}

static inline void answer_clear(Answer *a) {
        g_clear_pointer(&a->why, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Answer, answer_clear)
