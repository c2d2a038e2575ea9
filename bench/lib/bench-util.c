/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-util.h"
#include "list.h"

extern char **environ;

/* ---- the options every program has ------------------------------------------------------ */

const char *arg_socket = "/run/nsd/socket";
const char *arg_nsd_log = NULL;
uid_t arg_uid_base = 100000;

int bench_parse_options(int argc, char *argv[], const struct bench_option *own, size_t n_own,
                        bool in_order, void (*help)(void)) {
        static const struct bench_option common[] = {
                { "socket", BENCH_STRING, &arg_socket },
                { "nsd-log", BENCH_STRING, &arg_nsd_log },
                /* not root; room above it for the million uids of nsd's ceiling of
                 * MaxNamespaces= (nsd-bench --max-namespaces, nsd-start --counts) */
                { "uid-base", BENCH_UNSIGNED, &arg_uid_base, .lo = LIST_UID_MIN,
                  .hi = LIST_UID_MAX - 1000000 },
        };

        return options_parse(argc, argv, common, ELEMENTSOF(common), own, n_own, in_order, help);
}

/* ---- output ------------------------------------------------------------------------------ */

static void (*die_cleanup)(void);

static void __attribute__((format(printf, 2, 0)))
vresult(const char *key, const char *fmt, va_list ap) {
        if (key)
                printf("%s ", key);
        vprintf(fmt, ap);
        putchar('\n');
        fflush(stdout);
}

void result(const char *key, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vresult(key, fmt, ap);
        va_end(ap);
}

void result_line(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vresult(NULL, fmt, ap);
        va_end(ap);
}

void progress(const char *fmt, ...) {
        va_list ap;

        fprintf(stderr, "%s: ", program_invocation_short_name);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

void bench_on_die(void (*cleanup)(void)) {
        die_cleanup = cleanup;
}

void die(const char *what, int r) {
        const char *e = strerror(r < 0 ? -r : r);

        fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, e);
        result("error", "'%s: %s'", what, e);
        if (die_cleanup)
                die_cleanup();
        exit(1);
}

void die_nsc(nsc_conn *c, int r, const char *fmt, ...) {
        const char *m = c ? nsc_last_error_message(c) : NULL;
        char what[256];
        size_t len;
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        len = strlen(what);
        if (m && *m)
                snprintf(what + len, sizeof(what) - len, " ('%s')", m);
        die(what, r);
}

/* ---- time -------------------------------------------------------------------------------- */

uint64_t clock_ns(clockid_t c) {
        struct timespec ts;

        clock_gettime(c, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

void sleep_ns(uint64_t ns) {
        struct timespec ts = { .tv_sec = (time_t) (ns / 1000000000u),
                               .tv_nsec = (long) (ns % 1000000000u) };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* ---- samples ----------------------------------------------------------------------------- */

void samples_add(struct samples *s, uint64_t ns) {
        if (s->n == s->cap) {
                uint64_t *v;

                s->cap = s->cap ? s->cap * 2 : 1024;
                v = realloc(s->v, s->cap * sizeof(*s->v));
                if (!v)
                        die("realloc", ENOMEM);
                s->v = v;
        }
        s->v[s->n++] = ns;
}

void samples_error(struct samples *s, const char *fmt, ...) {
        va_list ap;

        if (s->errors++ == 0) {
                va_start(ap, fmt);
                vsnprintf(s->first_error, sizeof(s->first_error), fmt, ap);
                va_end(ap);
        }
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array, in µs. */
static double pct_us(const uint64_t *v, size_t n, unsigned p) {
        size_t k = (n * p + 99) / 100; /* ceil(n*p/100), 1-based */

        return v[(k ? k : 1) - 1] / 1000.0;
}

void samples_report(const char *prefix, struct samples *s) {
        static const unsigned pcts[] = { 50, 90, 95, 99 };
        double sum = 0;

        qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
        for (size_t i = 0; i < s->n; i++)
                sum += s->v[i];
        result_line("%s.n %zu", prefix, s->n);
        result_line("%s.errors %u", prefix, s->errors);
        if (s->errors)
                result_line("%s.first_error '%s'", prefix, s->first_error);
        if (s->n == 0)
                return;
        result_line("%s.min_us %.1f", prefix, s->v[0] / 1000.0);
        for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++)
                result_line("%s.p%u_us %.1f", prefix, pcts[i], pct_us(s->v, s->n, pcts[i]));
        result_line("%s.max_us %.1f", prefix, s->v[s->n - 1] / 1000.0);
        result_line("%s.mean_us %.1f", prefix, sum / s->n / 1000.0);
}

void samples_free(struct samples *s) {
        free(s->v);
        *s = (struct samples) {};
}

/* ---- /proc ------------------------------------------------------------------------------- */

/* The number after "<name>" + sep at the start of a line of path, or -1. */
static long file_field(const char *path, const char *name, char sep) {
        char line[256];
        size_t len = strlen(name);
        long v = -1;
        FILE *f = fopen(path, "re");

        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, name, len) == 0 && (sep == ' ' || line[len] == sep)) {
                        v = strtol(line + len + (sep != ' '), NULL, 10);
                        break;
                }
        fclose(f);
        return v;
}

long proc_status_kb(pid_t pid, const char *name) {
        char path[64];

        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        return file_field(path, name, ':');
}

long meminfo_kb(const char *name) {
        return file_field("/proc/meminfo", name, ':');
}

long proc_nofile(pid_t pid) {
        char path[64];

        snprintf(path, sizeof(path), "/proc/%d/limits", (int) pid);
        return file_field(path, "Max open files", ' ');
}

long count_fds(pid_t pid) {
        char path[64];
        struct dirent *de;
        long n = 0;
        DIR *d;

        snprintf(path, sizeof(path), "/proc/%d/fd", (int) pid);
        d = opendir(path);
        if (!d)
                return -1;
        while ((de = readdir(d)))
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

uint64_t proc_cpu_ticks(pid_t pid, uint64_t *ret_children) {
        char path[64], buf[1024];
        unsigned long ut = 0, st = 0;
        long cut = 0, cst = 0;
        const char *p;
        size_t n;
        FILE *f;

        if (ret_children)
                *ret_children = 0;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return 0;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        /* after the name's ')': state (field 3) ... utime 14, stime 15, cutime 16, cstime 17 */
        p = strrchr(buf, ')');
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %ld %ld", &ut,
                         &st, &cut, &cst) != 4)
                return 0;
        if (ret_children)
                *ret_children = (uint64_t) (cut + cst);
        return ut + st;
}

int proc_schedstat(pid_t pid, uint64_t *ret_exec, uint64_t *ret_wait) {
        unsigned long long e = 0, w = 0;
        char path[64];
        int r = 0;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/schedstat", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        if (fscanf(f, "%llu %llu", &e, &w) != 2)
                r = -EIO;
        fclose(f);
        if (r < 0)
                return r;
        *ret_exec = e;
        *ret_wait = w;
        return 0;
}

double ticks_ms(uint64_t ticks) {
        return ticks * 1000.0 / (double) sysconf(_SC_CLK_TCK);
}

void loadavg(char buf[static 64]) {
        double l[3] = {};

        if (getloadavg(l, 3) != 3)
                l[0] = l[1] = l[2] = 0;
        snprintf(buf, 64, "%.2f/%.2f/%.2f", l[0], l[1], l[2]);
}

char *read_file(const char *path) {
        size_t cap = 65536, len = 0;
        char *buf = malloc(cap);
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0 || !buf) {
                free(buf);
                if (fd >= 0)
                        close(fd);
                return NULL;
        }
        for (;;) {
                ssize_t k;

                if (len + 4096 >= cap) {
                        char *nb = realloc(buf, cap *= 2);

                        if (!nb)
                                break;
                        buf = nb;
                }
                k = read(fd, buf + len, cap - len - 1);
                if (k <= 0)
                        break;
                len += (size_t) k;
        }
        buf[len] = 0;
        close(fd);
        return buf;
}

long count_lines(const char *path) {
        char buf[65536];
        long n = 0;
        ssize_t k;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return -1;
        while ((k = read(fd, buf, sizeof(buf))) > 0)
                for (ssize_t i = 0; i < k; i++)
                        n += buf[i] == '\n';
        close(fd);
        return n;
}

/* ---- nsd as a child ---------------------------------------------------------------------- */

void nofile_limit_set(rlim_t soft, rlim_t hard) {
        struct rlimit rl = { .rlim_cur = soft ? soft : hard, .rlim_max = hard };

        if (rl.rlim_cur > hard)
                rl.rlim_cur = hard;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0 || getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return;
        /* not allowed to raise the hard limit (no CAP_SYS_RESOURCE): the one we have */
        rl.rlim_cur = soft && soft < rl.rlim_max ? soft : rl.rlim_max;
        (void) setrlimit(RLIMIT_NOFILE, &rl);
}

char **environ_without(const char *const *prefixes, size_t extra) {
        size_t n = 0;
        char **env;

        for (char **e = environ; *e; e++)
                n++;
        env = calloc(n + extra + 1, sizeof(*env));
        if (!env)
                die("calloc", ENOMEM);
        n = 0;
        for (char **e = environ; *e; e++) {
                bool drop = false;

                for (const char *const *p = prefixes; *p && !drop; p++)
                        drop = strncmp(*e, *p, strlen(*p)) == 0;
                if (!drop)
                        env[n++] = *e;
        }
        return env;
}

void nsd_exec(char *const argv[], char *const envp[], const char *log) {
        if (log) {
                int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

                if (fd >= 0) {
                        dup2(fd, STDOUT_FILENO);
                        dup2(fd, STDERR_FILENO);
                }
        }
        execve(argv[0], argv, envp);
        fprintf(stderr, "%s: cannot execute %s: %m\n", program_invocation_short_name, argv[0]);
        _exit(127);
}

void nsd_wait_status(pid_t *pid, const char *socket, unsigned timeout_ms,
                     struct nsc_status *ret_status) {
        int r = -ENOENT;

        for (unsigned i = 0; i < timeout_ms / 10; i++) {
                nsc_conn *c;

                if (waitpid(*pid, NULL, WNOHANG) == *pid) {
                        *pid = -1;
                        die("nsd exited at start (see its log)", ECHILD);
                }
                r = nsc_connect_timeout(socket, 5000000, &c);
                if (r >= 0) {
                        r = nsc_status(c, ret_status);
                        nsc_disconnect(c);
                        if (r >= 0)
                                return;
                }
                usleep(10000);
        }
        die("nsd did not answer STATUS", r);
}

double nsd_stop(pid_t *pid, unsigned timeout_ms, bool *ret_clean) {
        /* a pidfd tells the exit at once (the stop time is a figure); without one, every ms */
        uint64_t t0 = now_ns(), end = t0 + timeout_ms * 1000000ull;
        int pidfd, status = -1;

        if (*pid <= 0)
                return 0;
        pidfd = (int) syscall(SYS_pidfd_open, *pid, 0);
        kill(*pid, SIGTERM);
        for (;;) {
                uint64_t now = now_ns();

                if (waitpid(*pid, &status, WNOHANG) == *pid)
                        break;
                if (now >= end) {
                        kill(*pid, SIGKILL);
                        waitpid(*pid, &status, 0);
                        break;
                }
                if (pidfd >= 0)
                        (void) poll(&(struct pollfd) { .fd = pidfd, .events = POLLIN }, 1,
                                    (int) ((end - now) / 1000000u) + 1);
                else
                        usleep(1000);
        }
        if (pidfd >= 0)
                close(pidfd);
        *pid = -1;
        if (ret_clean)
                *ret_clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        return (now_ns() - t0) / 1e6;
}

void join_close(struct nsc_join_result *j) {
        if (j->root_fd >= 0)
                close(j->root_fd);
        if (j->ns_fd >= 0)
                close(j->ns_fd);
        j->root_fd = j->ns_fd = -1;
}
