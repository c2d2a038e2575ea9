/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/tap.h: the one TAP helper of the C tests (unit, fuzz regression, VM helpers).
 *
 *   ok(cond, "what should hold")      one test point; returns cond
 *   is_int(got, want, "what")         ok(got == want), printing both when they differ
 *   is_str(got, want, "what")         the same for strings (NULL allowed)
 *   tap_skip("why")                   one test point that is skipped
 *   return tap_done();                the plan ("1..N") at the end, exit status 1 on failure
 *   tap_bail_errno("what")            "Bail out! what: <strerror(errno)>", exit 1 (setup failed)
 *   pid = tap_fork();                 fork() with stdout flushed first; bails out on failure
 *
 * Header-only (static functions), so each test is one program with no helper library.
 */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static int tap_n_test, tap_n_failed;

__attribute__((format(printf, 3, 0))) static inline void tap_vline(bool pass, const char *directive,
                                                                   const char *fmt, va_list ap) {
        tap_n_test++;
        if (!pass)
                tap_n_failed++;
        printf("%s %d - ", pass ? "ok" : "not ok", tap_n_test);
        vprintf(fmt, ap);
        if (directive)
                printf(" # %s", directive);
        printf("\n");
        fflush(stdout);
}

__attribute__((format(printf, 2, 3), unused)) static bool ok(bool pass, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        tap_vline(pass, NULL, fmt, ap);
        va_end(ap);
        return pass;
}

#define is_int(got, want, ...)                                             \
        ({                                                                 \
                long long _g = (long long) (got), _w = (long long) (want); \
                bool _p = ok(_g == _w, __VA_ARGS__);                       \
                if (!_p)                                                   \
                        printf("#   got %lld, expected %lld\n", _g, _w);   \
                _p;                                                        \
        })

#define is_str(got, want, ...)                                                            \
        ({                                                                                \
                const char *_g = (got), *_w = (want);                                     \
                bool _p = ok(_g == _w || (_g && _w && strcmp(_g, _w) == 0), __VA_ARGS__); \
                if (!_p)                                                                  \
                        printf("#   got '%s', expected '%s'\n", _g ? _g : "(null)",       \
                               _w ? _w : "(null)");                                       \
                _p;                                                                       \
        })

__attribute__((format(printf, 1, 2), unused)) static void tap_skip(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        tap_vline(true, "SKIP", fmt, ap);
        va_end(ap);
}

/* Diagnostics: a "# " line. */
#define tap_diag(...) (printf("# "), printf(__VA_ARGS__), printf("\n"), fflush(stdout))

/* The test cannot go on (its setup failed): say so and stop, exit status 1. */
__attribute__((noreturn, unused)) static void tap_bail_errno(const char *what) {
        printf("Bail out! %s: %s\n", what, strerror(errno));
        exit(1);
}

/* fork(), with stdout flushed first so that no TAP line is printed twice; bails out on
 * failure. */
__attribute__((unused)) static pid_t tap_fork(void) {
        pid_t pid;

        fflush(stdout);
        pid = fork();
        if (pid < 0)
                tap_bail_errno("fork");
        return pid;
}

__attribute__((unused)) static int tap_done(void) {
        printf("1..%d\n", tap_n_test);
        return tap_n_failed > 0 ? 1 : 0;
}
