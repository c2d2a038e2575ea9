/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/lib: what the bench programs (nsd-bench, nsd-login, nsd-start) share: their output
 * ("key value" lines on stdout, progress on stderr, one way to die), samples and their
 * percentiles, figures of a process from /proc, and nsd as a child process (its limits, its
 * log, its start and its stop). Plain C on libnsclient; a static library beside the programs.
 *
 * A program names the cleanup that die() runs (stopping its nsd) with bench_on_die().
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>

#include "list.h"
#include "nsclient.h"
#include "options.h"

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the options every program has ------------------------------------------------------ */

extern const char *arg_socket;  /* --socket: nsd's socket (default /run/nsd/socket) */
extern const char *arg_nsd_log; /* --nsd-log: nsd's stdout and stderr, appended (default: ours) */
extern uid_t arg_uid_base;      /* --uid-base: the first synthetic uid (default 100000) */

/* The options of argv (options_parse(), options.h): --socket, --nsd-log, --uid-base, -h (help()
 * and exit 0) and the program's own (n_own of them); an unknown one or a bad value exits 2 with
 * a message. With in_order, the options end at the first operand (what follows is a
 * command's). Returns the index of the first operand. */
int bench_parse_options(int argc, char *argv[], const struct bench_option *own, size_t n_own,
                        bool in_order, void (*help)(void));

/* ---- output ------------------------------------------------------------------------------ */

/* One result line on stdout, "key value", flushed at once (a run cut short keeps its lines). */
void result(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for a line whose key is part of fmt ("%s.n %zu", prefix, n). */
void result_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A line on stderr for the person running the bench: "<program>: ...". */
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* What die() runs before it exits (stop nsd); NULL for nothing. */
void bench_on_die(void (*cleanup)(void));

/* "<program>: <what>: <strerror>" on stderr and the result line "error '<what>: <strerror>'",
 * the cleanup, exit 1. r is an errno, either sign. */
void die(const char *what, int r) __attribute__((noreturn));
/* The same for a libnsclient call on c that failed with r, with nsd's reason when it gave one:
 * "<what, formatted> ('<nsd's message>')". */
void die_nsc(nsc_conn *c, int r, const char *fmt, ...)
        __attribute__((format(printf, 3, 4), noreturn));

/* ---- time -------------------------------------------------------------------------------- */

uint64_t clock_ns(clockid_t c);
static inline uint64_t now_ns(void) {
        return clock_ns(CLOCK_MONOTONIC);
}
/* Sleep ns, through EINTR. */
void sleep_ns(uint64_t ns);

/* ---- samples ----------------------------------------------------------------------------- */

/* A growing array of latencies (ns) and the errors met instead. Zero-initialise it. */
struct samples {
        uint64_t *v;
        size_t n, cap;
        unsigned errors;
        char first_error[160];
};

void samples_add(struct samples *s, uint64_t ns);
void samples_error(struct samples *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* <prefix>.{n,errors[,first_error]} and, when there are samples,
 * <prefix>.{min,p50,p90,p95,p99,max,mean}_us (nearest rank; sorts in place). */
void samples_report(const char *prefix, struct samples *s);
void samples_free(struct samples *s);

int cmp_double(const void *a, const void *b);

/* ---- /proc ------------------------------------------------------------------------------- */

/* A field of /proc/PID/status ("VmRSS", "nonvoluntary_ctxt_switches") as a number (kB for
 * sizes), or -1. */
long proc_status_kb(pid_t pid, const char *name);
/* A field of /proc/meminfo in kB, or -1. */
long meminfo_kb(const char *name);
/* How many descriptors PID has open, or -1. */
long count_fds(pid_t pid);
/* The soft "Max open files" of PID as it is now, or -1. */
long proc_nofile(pid_t pid);
/* From /proc/PID/stat: user + system CPU time of PID, in clock ticks (0 when unknown); that of
 * its reaped children in *ret_children when not NULL. */
uint64_t proc_cpu_ticks(pid_t pid, uint64_t *ret_children);
/* The time PID's main thread spent on a CPU and waiting for one (run queue), ns, from
 * /proc/PID/schedstat; 0, or -errno (a kernel without CONFIG_SCHED_INFO). */
int proc_schedstat(pid_t pid, uint64_t *ret_exec, uint64_t *ret_wait);
/* Clock ticks in ms. */
double ticks_ms(uint64_t ticks);
/* The load average as "1.00/0.50/0.25" ("0.00/0.00/0.00" when unknown). */
void loadavg(char buf[static 64]);

/* A whole file, NUL-terminated, malloc()ed; NULL on error. */
char *read_file(const char *path);
/* Its number of lines, or -1. */
long count_lines(const char *path);

/* ---- nsd as a child ---------------------------------------------------------------------- */

/* RLIMIT_NOFILE as a service manager gives it: hard, where this process may raise it that far,
 * else the hard limit it has; soft as asked (0: the hard limit), at most the hard limit. */
void nofile_limit_set(rlim_t soft, rlim_t hard);

/* A copy of environ without the variables that start with one of the prefixes
 * (NULL-terminated), with room for extra more entries and the NULL; the strings are
 * environ's. Exits through die() on ENOMEM. */
char **environ_without(const char *const *prefixes, size_t extra);

/* In a forked child: stdout and stderr to log (appended) when not NULL, then execve(argv,
 * envp); "<program>: cannot execute ..." and _exit(127) when that fails. */
void nsd_exec(char *const argv[], char *const envp[], const char *log) __attribute__((noreturn));

/* Wait until the nsd started as *pid answers STATUS on socket (at most timeout_ms, every
 * 10 ms); die() when it exits first (and *pid = -1) or does not answer in time. */
void nsd_wait_status(pid_t *pid, const char *socket, unsigned timeout_ms,
                     struct nsc_status *ret_status);

/* SIGTERM to the nsd at *pid, up to timeout_ms for it to exit, then SIGKILL. *pid = -1.
 * Returns the ms from SIGTERM to its exit; *ret_clean (when not NULL): it exited with 0. */
double nsd_stop(pid_t *pid, unsigned timeout_ms, bool *ret_clean);

/* Close the descriptors of a JOIN reply (-1 after). */
void join_close(struct nsc_join_result *j);
