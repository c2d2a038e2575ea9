/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pam-cost: what one PAM session costs a login, as a whole process: exec, libpam reading the
 * service file and loading its modules, open_session, close_session, exit. Stacks are
 * measured in interleaved rounds (one process of each per round, the order rotating), so
 * that they share the machine's state and a ratio is taken within one run. A benchmark, not a
 * test: it asserts nothing about time, it prints figures ("key value" lines on stdout).
 *
 *   pam-cost [--pairs N] [--warmup N] --pam-dir DIR --user USER SERVICE...
 *
 * SERVICE names a file in DIR (pam_start_confdir()); the first is the reference (e.g. a
 * stack of pam_permit.so alone). Each process must open and close its session with
 * PAM_SUCCESS, else the run stops. Per service: the median and p90 wall time of a whole
 * process, the median CPU time (user + system, from wait4()) and minor page faults, and the
 * medians of the per-round ratios to the reference (wall, and CPU).
 *
 * Also the medians of the phases inside the process, wall and CPU time (<phase>_p50_us,
 * <phase>_cpu_p50_us): pam_start (reading the service file, loading the modules),
 * pam_open_session, pam_close_session, pam_end.
 *
 *   pam-cost --once DIR SERVICE USER FD  (internal: one session; its phases to FD; exit)
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_appl.h>

#include "bench-util.h"

#define SERVICES_MAX 8
#define PAIRS_MAX 100000 /* rounds: 13 doubles per service each, 83 MB at most */
#define WARMUP_MAX 100000
#define PHASES 4             /* pam_start, open, close, end */
#define FIGURES (2 * PHASES) /* each phase's wall time, then its CPU time */
static const char *const phase_names[PHASES] = { "start", "open", "close", "end" };

static int conv_none(int n, const struct pam_message **msg, struct pam_response **resp,
                     void *data) {
        return PAM_CONV_ERR;
}

/* The process's CPU time so far (user + system), in ns. */
static uint64_t cpu_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* One session, its phases in ns to fd (wall clock, then CPU time): 0, or the step that
 * failed (1 start, 2 open, 3 close). */
static int once(const char *dir, const char *service, const char *user, int fd) {
        struct pam_conv conv = { .conv = conv_none };
        pam_handle_t *h = NULL;
        uint64_t t[2 * (PHASES + 1)], *c = t + PHASES + 1;
        int rc;

        c[0] = cpu_ns();
        t[0] = now_ns();
        rc = pam_start_confdir(service, user, &conv, dir, &h);
        if (rc != PAM_SUCCESS)
                return 1;
        t[1] = now_ns();
        c[1] = cpu_ns();
        rc = pam_open_session(h, 0);
        if (rc != PAM_SUCCESS) {
                progress("%s: open_session: %s", service, pam_strerror(h, rc));
                pam_end(h, rc);
                return 2;
        }
        t[2] = now_ns();
        c[2] = cpu_ns();
        rc = pam_close_session(h, 0);
        t[3] = now_ns();
        c[3] = cpu_ns();
        pam_end(h, rc);
        t[4] = now_ns();
        c[4] = cpu_ns();
        if (write(fd, t, sizeof(t)) != (ssize_t) sizeof(t))
                return 4;
        return rc == PAM_SUCCESS ? 0 : 3;
}

/* The q-quantile (0..1) of v[0..n), sorted in place. */
static double quantile(double *v, size_t n, double q) {
        size_t i;

        qsort(v, n, sizeof(*v), cmp_double);
        i = (size_t) (q * (double) (n - 1) + 0.5);
        return v[i < n ? i : n - 1];
}

/* Run `self --once dir service user fd`; its wall and CPU time, and its phases, in
 * microseconds. */
static int run_one(const char *self, const char *dir, const char *service, const char *user,
                   double *ret_wall, double *ret_cpu, double *ret_faults,
                   double ret_phase[FIGURES]) {
        struct rusage ru;
        uint64_t t0 = now_ns(), t[2 * (PHASES + 1)];
        char fdarg[16];
        int status, p[2];
        pid_t pid;

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                int fd = fcntl(p[1], F_DUPFD, 10); /* without O_CLOEXEC */

                snprintf(fdarg, sizeof(fdarg), "%d", fd);
                execl(self, self, "--once", dir, service, user, fdarg, (char *) NULL);
                _exit(127);
        }
        close(p[1]);
        if (wait4(pid, &status, 0, &ru) != pid)
                return -errno;
        *ret_wall = (double) (now_ns() - t0) / 1000.0;
        *ret_faults = (double) ru.ru_minflt;
        if (read(p[0], t, sizeof(t)) == (ssize_t) sizeof(t))
                for (size_t i = 0; i < PHASES; i++) {
                        ret_phase[i] = (double) (t[i + 1] - t[i]) / 1000.0;
                        ret_phase[PHASES + i] = (double) (t[PHASES + 2 + i] - t[PHASES + 1 + i]) /
                                                1000.0;
                }
        close(p[0]);
        *ret_cpu = (double) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
                   (double) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                progress("%s: the session process failed (%s %d)", service,
                         WIFEXITED(status) ? "exit" : "signal",
                         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                return -EIO;
        }
        return 0;
}

static void help(void) {
        printf("usage: pam-cost [--pairs N] [--warmup N] --pam-dir DIR --user USER SERVICE...\n");
}

int main(int argc, char *argv[]) {
        const char *dir = NULL, *user = NULL, *const * services;
        unsigned pairs = 40, warmup = 5;
        const struct bench_option options[] = {
                { "pairs", BENCH_UNSIGNED, &pairs, .lo = 1, .hi = PAIRS_MAX },
                { "warmup", BENCH_UNSIGNED, &warmup, .lo = 0, .hi = WARMUP_MAX },
                { "pam-dir", BENCH_STRING, &dir },
                { "user", BENCH_STRING, &user },
        };
        double *wall[SERVICES_MAX], *cpu[SERVICES_MAX], *ratio[SERVICES_MAX],
                *cpu_ratio[SERVICES_MAX], *faults[SERVICES_MAX], *phase[SERVICES_MAX][FIGURES];
        char self[4096];
        size_t ns;
        ssize_t l;
        int first;

        if (argc == 6 && strcmp(argv[1], "--once") == 0)
                return once(argv[2], argv[3], argv[4],
                            (int) list_uint("--once FD", argv[5], 0, INT_MAX));

        /* its own options only: it starts no nsd (no --socket, --nsd-log, --uid-base) */
        first = options_parse(argc, argv, NULL, 0, options, ELEMENTSOF(options), false, help);
        services = (const char *const *) argv + first;
        ns = (size_t) (argc - first);
        if (!dir || !user || ns == 0 || ns > SERVICES_MAX) {
                progress("need --pam-dir, --user and 1 to %d services", SERVICES_MAX);
                return 2;
        }
        l = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (l < 0)
                return 1;
        self[l] = 0;

        for (size_t s = 0; s < ns; s++) {
                wall[s] = calloc(pairs, sizeof(double));
                cpu[s] = calloc(pairs, sizeof(double));
                ratio[s] = calloc(pairs, sizeof(double));
                cpu_ratio[s] = calloc(pairs, sizeof(double));
                faults[s] = calloc(pairs, sizeof(double));
                if (!wall[s] || !cpu[s] || !ratio[s] || !cpu_ratio[s] || !faults[s])
                        return 1;
                for (size_t k = 0; k < FIGURES; k++)
                        if (!(phase[s][k] = calloc(pairs, sizeof(double))))
                                return 1;
        }
        for (unsigned i = 0; i < warmup + pairs; i++)
                for (size_t k = 0; k < ns; k++) {
                        size_t s = (k + i) % ns; /* rotate who goes first */
                        double w = 0, u = 0, f = 0, ph[FIGURES] = {};

                        if (run_one(self, dir, services[s], user, &w, &u, &f, ph) < 0)
                                return 1;
                        if (i < warmup)
                                continue;
                        wall[s][i - warmup] = w;
                        cpu[s][i - warmup] = u;
                        faults[s][i - warmup] = f;
                        for (size_t q = 0; q < FIGURES; q++)
                                phase[s][q][i - warmup] = ph[q];
                }
        for (unsigned i = 0; i < pairs; i++)
                for (size_t s = 0; s < ns; s++) {
                        ratio[s][i] = wall[s][i] / wall[0][i];
                        cpu_ratio[s][i] = cpu[s][i] / cpu[0][i];
                }

        printf("pairs %u\n", pairs);
        for (size_t s = 0; s < ns; s++) {
                printf("%s.wall_p50_us %.0f\n", services[s], quantile(wall[s], pairs, 0.5));
                printf("%s.wall_p90_us %.0f\n", services[s], quantile(wall[s], pairs, 0.9));
                printf("%s.cpu_p50_us %.0f\n", services[s], quantile(cpu[s], pairs, 0.5));
                printf("%s.ratio_p50 %.3f\n", services[s], quantile(ratio[s], pairs, 0.5));
                printf("%s.cpu_ratio_p50 %.3f\n", services[s], quantile(cpu_ratio[s], pairs, 0.5));
                printf("%s.minflt_p50 %.0f\n", services[s], quantile(faults[s], pairs, 0.5));
                for (size_t q = 0; q < FIGURES; q++)
                        printf("%s.%s%s_p50_us %.0f\n", services[s], phase_names[q % PHASES],
                               q < PHASES ? "" : "_cpu", quantile(phase[s][q], pairs, 0.5));
        }
        return 0;
}
