/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsd-start: how long a restarted nsd takes until it serves, with N namespaces to adopt. A
 * benchmark, not a test: it asserts nothing about time, it prints figures.
 *
 *   nsd-start [OPTIONS] -- NSD-COMMAND [ARG...]
 *
 * This program plays the service manager. It listens on a NOTIFY_SOCKET and keeps what nsd
 * puts into the fd store (FDSTORE=1 + FDNAME=, FDSTOREREMOVE=1), as systemd does for
 * FileDescriptorStoreMax=. For every count N of --counts it creates namespaces by JOIN (uids
 * --uid-base..) until nsd holds N, then, --repeat times, for each mode of --modes: stops nsd
 * (SIGTERM, timed), prepares, starts NSD-COMMAND anew and times from fork() to
 *   ready_ms   nsd's READY=1 on the notify socket (kernel receive time, SO_TIMESTAMPNS)
 *   status_ms  the answer to a STATUS sent as soon as the socket accepts a connection: nsd's
 *              first served request
 * and records, at that answer, what STATUS says (namespaces, pinned), nsd's VmRSS and VmHWM,
 * its descriptors and its CPU time (its own and its reaped helper children's).
 *
 * Modes:
 *   pins         no NOTIFY_SOCKET: nsd outside a service manager, adoption from its pins alone
 *   empty-store  NOTIFY_SOCKET, nothing passed (the store was flushed, e.g. systemctl stop +
 *                start): adoption from the pins, and nsd puts every namespace into the store
 *   store        NOTIFY_SOCKET and the store passed back in LISTEN_FDS/LISTEN_FDNAMES, as
 *                systemd does at a restart: pins and store, cross-checked
 *   store-only   as store, with every user pin removed before the start (umount + unlink in
 *                the pin namespace, which stays): adoption from the fd store alone, and nsd
 *                pins every namespace again before it serves
 * Results go to stdout as "key value" lines, a markdown table to --table; progress to stderr.
 *
 * Run it only where mounting is harmless: inside `unshare -m --propagation private` on a host
 * with a tmpfs on /run (bench/start/run does that). It mounts nothing itself except that it
 * unmounts pins inside nsd's pin namespace (store-only).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "nsclient.h"

#define MAX_COUNTS 8
#define MAX_COUNT 1000000 /* nsd's own ceiling of MaxNamespaces= (nsd/policy/conf.c) */
#define MAX_REPEAT 64

static const char *arg_run_dir = "/run/nsd";
static const char *arg_notify = "/run/nsd-start/notify";
static const char *arg_table = NULL;
static unsigned arg_counts[MAX_COUNTS] = { 1, 1000, 7000 };
static size_t arg_n_counts = 3;
static unsigned arg_repeat = 5;
static unsigned arg_nofile_soft = 0; /* 0: the hard limit */
static bool arg_attach = false;

enum mode { MODE_PINS, MODE_EMPTY_STORE, MODE_STORE, MODE_STORE_ONLY, N_MODES };
static const char *const mode_name[N_MODES] = { "pins", "empty-store", "store", "store-only" };
static const char *const mode_what[N_MODES] = {
        "pins only (no service manager)",
        "pins, fd store empty (nsd refills it)",
        "pins + fd store passed back",
        "fd store only (pins removed; nsd pins again)",
};
static bool arg_mode[N_MODES] = { true, true, true, true };

static char *const *nsd_argv;
static pid_t nsd_pid = -1;
static bool nsd_has_store; /* the running nsd was given NOTIFY_SOCKET */
static int notify_fd = -1;
static int store_fd_base; /* the store's descriptors live at and above this number */

/* ---- the fd store (the notify thread fills it) ------------------------------------------- */

struct stored {
        int fd;
        char name[64];
};
static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stored *store;
static size_t n_store, cap_store;
static uint64_t ready_rt_ns; /* CLOCK_REALTIME of the last READY=1, 0: none yet */
static unsigned long n_fdstore_msgs, n_fdstore_remove_msgs;

/* ---- small helpers ----------------------------------------------------------------------- */

/* CPU time of pid in ms: its own from /proc/PID/schedstat (ns; else utime + stime in clock
 * ticks), plus cutime + cstime of its reaped children (the helpers, in clock ticks) from
 * /proc/PID/stat */
static double proc_cpu_ms(pid_t pid) {
        uint64_t own_ns, wait_ns, children, ticks = proc_cpu_ticks(pid, &children);

        if (proc_schedstat(pid, &own_ns, &wait_ns) < 0 || own_ns == 0)
                own_ns = ticks * 1000000000ull / (uint64_t) sysconf(_SC_CLK_TCK);
        return (double) own_ns / 1e6 + ticks_ms(children);
}

/* ---- the notify socket: a service manager's side ------------------------------------------ */

static void store_add_locked(int fd, const char *name) {
        int high;

        /* systemd keeps every descriptor put (it refuses only the same open file twice, which
         * nsd never sends): so do we */
        high = fcntl(fd, F_DUPFD_CLOEXEC, store_fd_base);
        close(fd);
        if (high < 0) {
                fprintf(stderr, "nsd-start: cannot keep '%s' in the fd store: %s\n", name,
                        strerror(errno));
                return;
        }
        if (n_store == cap_store) {
                cap_store = cap_store ? 2 * cap_store : 1024;
                store = realloc(store, cap_store * sizeof(*store));
                if (!store)
                        abort();
        }
        store[n_store].fd = high;
        snprintf(store[n_store].name, sizeof(store[n_store].name), "%s", name);
        n_store++;
}

static void store_remove_locked(const char *name) {
        size_t k = 0;

        for (size_t i = 0; i < n_store; i++) {
                if (strcmp(store[i].name, name) == 0) {
                        close(store[i].fd);
                        continue;
                }
                store[k++] = store[i];
        }
        n_store = k;
}

static void store_clear(void) {
        pthread_mutex_lock(&store_lock);
        for (size_t i = 0; i < n_store; i++)
                close(store[i].fd);
        n_store = 0;
        pthread_mutex_unlock(&store_lock);
}

/* a line "KEY=..." of a notify message, or NULL */
static const char *notify_field(const char *msg, const char *key) {
        size_t len = strlen(key);

        for (const char *l = msg; l && *l;) {
                if (strncmp(l, key, len) == 0 && l[len] == '=')
                        return l + len + 1;
                l = strchr(l, '\n');
                l = l ? l + 1 : NULL;
        }
        return NULL;
}

static void *notify_thread(void *unused) {
        (void) unused;
        for (;;) {
                char buf[4096], name[64] = "stored";
                union {
                        struct cmsghdr h;
                        char b[CMSG_SPACE(sizeof(int) * 64) + CMSG_SPACE(sizeof(struct timespec))];
                } ctl;
                struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) - 1 };
                struct msghdr mh = {
                        .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = &ctl,
                        .msg_controllen = sizeof(ctl),
                };
                int fds[64], n_fds = 0;
                uint64_t rt = 0;
                const char *v;
                ssize_t n = recvmsg(notify_fd, &mh, MSG_CMSG_CLOEXEC);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        fprintf(stderr, "nsd-start: notify socket: %s\n", strerror(errno));
                        return NULL;
                }
                buf[n] = 0;
                for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                                size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                                for (size_t i = 0; i < k && n_fds < 64; i++)
                                        memcpy(&fds[n_fds++], CMSG_DATA(c) + i * sizeof(int),
                                               sizeof(int));
                        } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
                                struct timespec ts;
                                memcpy(&ts, CMSG_DATA(c), sizeof(ts));
                                rt = (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
                        }
                }
                if (!rt)
                        rt = clock_ns(CLOCK_REALTIME);
                if ((v = notify_field(buf, "FDNAME"))) {
                        size_t len = strcspn(v, "\n");
                        if (len >= sizeof(name))
                                len = sizeof(name) - 1;
                        memcpy(name, v, len);
                        name[len] = 0;
                }
                pthread_mutex_lock(&store_lock);
                if ((v = notify_field(buf, "READY")) && v[0] == '1')
                        ready_rt_ns = rt;
                if ((v = notify_field(buf, "FDSTOREREMOVE")) && v[0] == '1') {
                        n_fdstore_remove_msgs++;
                        store_remove_locked(name);
                }
                if ((v = notify_field(buf, "FDSTORE")) && v[0] == '1') {
                        n_fdstore_msgs++;
                        for (int i = 0; i < n_fds; i++)
                                store_add_locked(fds[i], name);
                        n_fds = 0;
                }
                pthread_mutex_unlock(&store_lock);
                for (int i = 0; i < n_fds; i++) /* descriptors without FDSTORE=1: closed */
                        close(fds[i]);
        }
}

static void notify_open(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int one = 1, big = 8 << 20;
        pthread_t t;
        char *dir = strdup(arg_notify), *slash;

        slash = dir ? strrchr(dir, '/') : NULL;
        if (slash && slash != dir) {
                *slash = 0;
                (void) mkdir(dir, 0755);
        }
        free(dir);
        (void) unlink(arg_notify);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", arg_notify);
        notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (notify_fd < 0 || bind(notify_fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                die("cannot open the notify socket", errno);
        (void) setsockopt(notify_fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
        (void) setsockopt(notify_fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
        if (pthread_create(&t, NULL, notify_thread, NULL) != 0)
                die("pthread_create", EAGAIN);
        pthread_detach(t);
}

/* ---- nsd ---------------------------------------------------------------------------------- */

static void stop_nsd_quietly(void) {
        (void) nsd_stop(&nsd_pid, 30000, NULL);
}

/* SIGTERM, then the time until nsd has exited, ms */
static double stop_nsd(void) {
        bool clean;
        double ms = nsd_stop(&nsd_pid, 600000, &clean);

        if (!clean)
                progress("warning: nsd did not exit cleanly at SIGTERM");
        return ms;
}

/* async-signal-safe decimal */
static void put_uint(char *p, unsigned long v) {
        char t[24];
        int n = 0;
        do
                t[n++] = (char) ('0' + v % 10);
        while ((v /= 10));
        while (n)
                *p++ = t[--n];
        *p = 0;
}

struct start_result {
        double status_ms, ready_ms, cpu_ms;
        long rss_kb, hwm_kb, fds;
        unsigned namespaces, pinned, passed;
};

/* Start nsd: with_store gives it NOTIFY_SOCKET, pass the fd store in LISTEN_FDS. Times from
 * fork() to READY=1 and to the first STATUS answer. */
static void start_nsd(bool with_store, bool pass, struct start_result *res) {
        static const char *const manager_env[] = { "NOTIFY_SOCKET=", "LISTEN_", "WATCHDOG_", NULL };
        size_t n_env = 0, n_pass = 0, names_len = 0;
        char **env, *names, *listen_pid, *listen_fds, *notify, *p;
        int *pass_fds = NULL;
        struct nsc_status st;
        uint64_t t0, t0_rt;
        nsc_conn *c = NULL;
        int r;

        memset(res, 0, sizeof(*res));
        env = environ_without(manager_env, 4); /* LISTEN_{FDS,PID,FDNAMES}, NOTIFY_SOCKET */
        while (env[n_env])
                n_env++;

        pthread_mutex_lock(&store_lock);
        if (pass && n_store > 0) {
                n_pass = n_store;
                pass_fds = calloc(n_pass, sizeof(int));
                for (size_t i = 0; i < n_store; i++)
                        names_len += strlen(store[i].name) + 1;
                names = malloc(names_len + sizeof("LISTEN_FDNAMES="));
                if (!pass_fds || !names)
                        die("calloc", ENOMEM);
                p = stpcpy(names, "LISTEN_FDNAMES=");
                for (size_t i = 0; i < n_store; i++) {
                        pass_fds[i] = store[i].fd;
                        if (i)
                                *p++ = ':';
                        p = stpcpy(p, store[i].name);
                }
                listen_fds = malloc(40);
                listen_pid = malloc(40);
                if (!listen_fds || !listen_pid)
                        die("malloc", ENOMEM);
                strcpy(listen_fds, "LISTEN_FDS=");
                put_uint(listen_fds + strlen(listen_fds), n_pass);
                strcpy(listen_pid, "LISTEN_PID=");
                env[n_env++] = listen_fds;
                env[n_env++] = listen_pid;
                env[n_env++] = names;
        } else
                names = listen_pid = listen_fds = NULL;
        ready_rt_ns = 0;
        pthread_mutex_unlock(&store_lock);
        if (with_store) {
                notify = malloc(strlen(arg_notify) + sizeof("NOTIFY_SOCKET="));
                if (!notify)
                        die("malloc", ENOMEM);
                strcpy(notify, "NOTIFY_SOCKET=");
                strcat(notify, arg_notify);
                env[n_env++] = notify;
        } else
                notify = NULL;
        env[n_env] = NULL;
        res->passed = (unsigned) n_pass;
        /* the store's descriptors are above store_fd_base >= 3 + n_pass: dup2() to 3.. never
         * overwrites one still to be passed */
        for (size_t i = 0; i < n_pass; i++)
                if (pass_fds[i] < 3 + (int) n_pass)
                        die("the fd store's descriptors overlap LISTEN_FDS' range", EINVAL);

        fflush(stdout);
        fflush(stderr);
        t0 = clock_ns(CLOCK_MONOTONIC);
        t0_rt = clock_ns(CLOCK_REALTIME);
        nsd_pid = fork();
        if (nsd_pid < 0)
                die("fork", errno);
        if (nsd_pid == 0) {
                if (listen_pid)
                        put_uint(listen_pid + strlen("LISTEN_PID="), (unsigned long) getpid());
                for (size_t i = 0; i < n_pass; i++)
                        if (dup2(pass_fds[i], 3 + (int) i) < 0)
                                _exit(126);
                /* what nsd.service's LimitNOFILE= gives: hard 524288 where allowed, else the
                 * hard limit we have; soft the same, or --nofile-soft (systemd's default
                 * soft limit is 1024: the descriptors passed above it stay open, but nothing
                 * more can be opened until nsd raises it) */
                nofile_limit_set(arg_nofile_soft, 524288);
                nsd_exec(nsd_argv, env, arg_nsd_log);
        }
        free(pass_fds);
        free(names);
        free(listen_pid);
        free(listen_fds);
        free(notify);
        free(env);

        /* the first request: as soon as the socket takes a connection, STATUS, and wait */
        for (;;) {
                if (waitpid(nsd_pid, NULL, WNOHANG) == nsd_pid) {
                        nsd_pid = -1;
                        die("nsd exited at start (see its log)", ECHILD);
                }
                r = nsc_connect_timeout(arg_socket, 600 * 1000000ull, &c);
                if (r >= 0)
                        break;
                if (clock_ns(CLOCK_MONOTONIC) - t0 > 600 * 1000000000ull)
                        die("nsd did not listen within 600 s", r);
                usleep(1000);
        }
        r = nsc_status(c, &st);
        res->status_ms = (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6;
        nsc_disconnect(c);
        if (r < 0)
                die("STATUS", r);
        res->rss_kb = proc_status_kb(nsd_pid, "VmRSS");
        res->hwm_kb = proc_status_kb(nsd_pid, "VmHWM");
        res->fds = count_fds(nsd_pid);
        res->cpu_ms = proc_cpu_ms(nsd_pid);
        res->namespaces = st.namespaces;
        res->pinned = st.pinned;
        nsd_has_store = with_store;
        if (with_store) {
                /* READY=1 comes before the first request is read; wait a little for it */
                for (int i = 0; i < 2000; i++) {
                        uint64_t rt;
                        pthread_mutex_lock(&store_lock);
                        rt = ready_rt_ns;
                        pthread_mutex_unlock(&store_lock);
                        if (rt) {
                                res->ready_ms = (double) (int64_t) (rt - t0_rt) / 1e6;
                                break;
                        }
                        usleep(1000);
                }
        }
}

/* ---- namespaces and pins ------------------------------------------------------------------ */

/* JOIN uids until nsd holds `to` namespaces (uids arg_uid_base + [from, to)). */
static void grow(unsigned from, unsigned to) {
        nsc_conn *c;
        uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
        unsigned pinned = 0;
        int r = nsc_connect_timeout(arg_socket, 60 * 1000000ull, &c);

        if (r < 0)
                die("cannot connect to nsd", r);
        for (unsigned i = from; i < to; i++) {
                struct nsc_join_result j = { .root_fd = -1, .ns_fd = -1 };
                r = nsc_join(c, arg_uid_base + i, 0, &j);
                if (r < 0)
                        die_nsc(c, r, "JOIN of uid %u", (unsigned) (arg_uid_base + i));
                pinned += !!(j.ns_flags & NSC_NS_PINNED);
                join_close(&j);
        }
        nsc_disconnect(c);
        progress("created %u namespaces (%u pinned) in %.1f s", to - from, pinned,
                 (clock_ns(CLOCK_MONOTONIC) - t0) / 1e9);
}

/* Remove every user pin inside the pin namespace (nsd stopped): umount + unlink of <uid> and
 * <uid>.info in its tmpfs on the run dir. The pin namespace itself stays pinned. Returns the
 * number of pins removed. */
static unsigned remove_pins(void) {
        char pins[512];
        int pfd[2], status;
        unsigned n = 0;
        pid_t p;

        snprintf(pins, sizeof(pins), "%s/pins", arg_run_dir);
        if (pipe2(pfd, O_CLOEXEC) < 0)
                die("pipe", errno);
        p = fork(); /* the child is single-threaded: setns(CLONE_NEWNS) allows that only */
        if (p < 0)
                die("fork", errno);
        if (p == 0) {
                int fd = open(pins, O_RDONLY | O_CLOEXEC);
                unsigned k = 0;
                struct dirent *de;
                DIR *d;

                if (fd < 0 || setns(fd, CLONE_NEWNS) < 0 || chdir(arg_run_dir) < 0 ||
                    !(d = opendir(".")))
                        _exit(1);
                while ((de = readdir(d))) {
                        char info[300];
                        if (de->d_name[0] < '0' || de->d_name[0] > '9' || strchr(de->d_name, '.'))
                                continue;
                        (void) umount2(de->d_name, MNT_DETACH);
                        if (unlink(de->d_name) == 0)
                                k++;
                        snprintf(info, sizeof(info), "%s.info", de->d_name);
                        (void) unlink(info);
                }
                if (write(pfd[1], &k, sizeof(k)) != sizeof(k))
                        _exit(1);
                _exit(0);
        }
        close(pfd[1]);
        if (read(pfd[0], &n, sizeof(n)) != sizeof(n))
                n = 0;
        close(pfd[0]);
        if (waitpid(p, &status, 0) != p || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                die("cannot remove the pins in the pin namespace", EIO);
        return n;
}

/* ---- the table ---------------------------------------------------------------------------- */

struct cell {
        double status_ms[MAX_REPEAT], ready_ms[MAX_REPEAT], cpu_ms[MAX_REPEAT], stop_ms[MAX_REPEAT];
        long rss_kb, hwm_kb, fds;
        unsigned namespaces, pinned, passed, n;
        bool ran;
};
static struct cell cells[MAX_COUNTS][N_MODES];

static void stats(const double *v, unsigned n, double *med, double *min, double *max) {
        double s[MAX_REPEAT];

        memcpy(s, v, n * sizeof(double));
        qsort(s, n, sizeof(double), cmp_double);
        *min = s[0];
        *max = s[n - 1];
        *med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void print_stat(FILE *f, const double *v, unsigned n) {
        double med, min, max;

        stats(v, n, &med, &min, &max);
        if (med >= 100)
                fprintf(f, " %.0f (%.0f–%.0f) |", med, min, max);
        else
                fprintf(f, " %.1f (%.1f–%.1f) |", med, min, max);
}

static void write_table(FILE *f) {
        fprintf(f, "| namespaces | adoption from | to first STATUS answer, ms | to READY=1, ms "
                   "| nsd CPU, ms | stop (SIGTERM to exit), ms | at the answer: namespaces / "
                   "pinned | VmRSS / VmHWM MiB | descriptors |\n");
        fprintf(f, "|---|---|---|---|---|---|---|---|---|\n");
        for (unsigned k = 0; k < arg_n_counts; k++)
                for (int m = 0; m < N_MODES; m++) {
                        struct cell *c = &cells[k][m];
                        if (!c->ran)
                                continue;
                        fprintf(f, "| %u | %s |", arg_counts[k], mode_what[m]);
                        print_stat(f, c->status_ms, c->n);
                        if (m == MODE_PINS)
                                fprintf(f, " – |");
                        else
                                print_stat(f, c->ready_ms, c->n);
                        print_stat(f, c->cpu_ms, c->n);
                        print_stat(f, c->stop_ms, c->n);
                        fprintf(f, " %u / %u | %.1f / %.1f | %ld |\n", c->namespaces, c->pinned,
                                c->rss_kb / 1024.0, c->hwm_kb / 1024.0, c->fds);
                }
        fprintf(f,
                "\nmedian (min–max) of %u starts each; nsd CPU: its own (schedstat) and "
                "its reaped helper children's (clock ticks), at the first answer\n",
                arg_repeat);
}

/* ---- main --------------------------------------------------------------------------------- */

static void help(void) {
        printf("nsd-start [OPTIONS] -- NSD-COMMAND [ARG...]\n\n"
               "Time nsd's restart with N namespaces to adopt: from fork() to READY=1 and to\n"
               "its first STATUS answer, from its pins, its fd store (this program keeps it,\n"
               "as systemd does) or both. Run it only inside `unshare -m`: see bench/start/run.\n\n"
               "  -h --help            this help\n"
               "     --socket PATH     nsd's socket (default /run/nsd/socket)\n"
               "     --run-dir DIR     nsd's run dir, for its pins (default /run/nsd)\n"
               "     --notify PATH     the NOTIFY_SOCKET to listen on (default "
               "/run/nsd-start/notify)\n"
               "     --counts N,N,...  namespaces held at each step, growing, 1..1000000, at most\n"
               "                       8 steps (default 1,1000,7000)\n"
               "     --repeat R        starts per count and mode, 1..64 (default 5)\n"
               "     --modes M,M,...   of pins, empty-store, store, store-only (default all)\n"
               "     --uid-base UID    first uid (default 100000)\n"
               "     --nsd-log FILE    nsd's stdout and stderr (appended)\n"
               "     --table FILE      the markdown table\n"
               "     --nofile-soft N   nsd's soft RLIMIT_NOFILE at exec (default: the hard limit,\n"
               "                       as nsd.service's LimitNOFILE= gives; systemd's default is\n"
               "                       1024)\n"
               "     --attach          start and stop nothing: JOIN against the nsd that serves\n"
               "                       --socket until it holds the last count, then exit (for\n"
               "                       an nsd that systemd runs); no NSD-COMMAND\n\n"
               "See bench/README.md.\n");
}

static void parse_modes(const char *arg) {
        char *s = strdup(arg), *save = NULL;

        if (!s)
                die("strdup", ENOMEM);
        memset(arg_mode, 0, sizeof(arg_mode));
        for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int m;

                for (m = 0; m < N_MODES && strcmp(t, mode_name[m]) != 0; m++)
                        ;
                if (m == N_MODES) {
                        fprintf(stderr, "nsd-start: unknown mode '%s'\n", t);
                        exit(2);
                }
                arg_mode[m] = true;
        }
        free(s);
}

int main(int argc, char *argv[]) {
        static const struct bench_option options[] = {
                { "run-dir", BENCH_STRING, &arg_run_dir },
                { "notify", BENCH_STRING, &arg_notify },
                { "counts", BENCH_LIST, arg_counts, MAX_COUNTS, &arg_n_counts, .lo = 1,
                  .hi = MAX_COUNT },
                { "repeat", BENCH_UNSIGNED, &arg_repeat, .lo = 1, .hi = MAX_REPEAT },
                { "modes", BENCH_CALL, .call = parse_modes },
                { "table", BENCH_STRING, &arg_table },
                /* 0: the hard limit; above it: capped at it; a descriptor is an int */
                { "nofile-soft", BENCH_UNSIGNED, &arg_nofile_soft, .lo = 0, .hi = INT_MAX },
                { "attach", BENCH_FLAG, &arg_attach },
        };
        struct start_result sr;
        struct rlimit rl;
        unsigned held = 0, max_count = 0;

        optind = bench_parse_options(argc, argv, options, ELEMENTSOF(options), false, help);
        if (arg_attach) {
                nsc_conn *c;
                struct nsc_status st;
                int r = nsc_connect_timeout(arg_socket, 60 * 1000000ull, &c);

                if (r < 0 || (r = nsc_status(c, &st)) < 0)
                        die("STATUS", r);
                nsc_disconnect(c);
                if (st.namespaces < arg_counts[arg_n_counts - 1])
                        grow(st.namespaces, arg_counts[arg_n_counts - 1]);
                return 0;
        }
        if (optind >= argc) {
                fprintf(stderr, "nsd-start: no NSD-COMMAND given (see --help)\n");
                return 2;
        }
        nsd_argv = argv + optind;
        for (unsigned k = 0; k < arg_n_counts; k++) {
                if (arg_counts[k] < held) {
                        fprintf(stderr, "nsd-start: --counts must grow\n");
                        return 2;
                }
                held = max_count = arg_counts[k];
        }
        held = 0;
        signal(SIGPIPE, SIG_IGN);
        bench_on_die(stop_nsd_quietly);

        /* our own limit: the fd store's copy of every namespace, high, and LISTEN_FDS' range
         * 3..3+N below it */
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                die("getrlimit", errno);
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                die("setrlimit", errno);
        if (rl.rlim_max < 2 * ((rlim_t) max_count + 64))
                die("RLIMIT_NOFILE's hard limit is below 2 × (the largest count + 64)", EMFILE);
        store_fd_base = (int) (rl.rlim_max - max_count - 64);
        if (store_fd_base < 3 + (int) max_count + 64)
                store_fd_base = 3 + (int) max_count + 64;
        result("machine.nofile_hard", "%llu", (unsigned long long) rl.rlim_max);
        result("machine.nproc", "%ld", sysconf(_SC_NPROCESSORS_ONLN));
        result("nsd.nofile_soft_at_exec", "%lu",
               arg_nofile_soft ? arg_nofile_soft : (unsigned long) rl.rlim_max);
        {
                struct utsname un;
                if (uname(&un) == 0)
                        result("machine.kernel", "%s", un.release);
        }
        {
                double l[3];
                if (getloadavg(l, 3) == 3)
                        result("machine.loadavg_start", "%.2f %.2f %.2f", l[0], l[1], l[2]);
        }

        notify_open();
        start_nsd(true, false, &sr);
        result("nsd.first_start_ms", "%.1f", sr.status_ms);

        for (unsigned k = 0; k < arg_n_counts; k++) {
                unsigned n = arg_counts[k];

                if (!nsd_has_store) {
                        /* growth with the store in use, so that it holds every namespace */
                        (void) stop_nsd();
                        start_nsd(true, true, &sr);
                }
                grow(held, n);
                held = n;
                usleep(200000); /* the notify thread's last FDSTORE=1 */
                pthread_mutex_lock(&store_lock);
                result("store.entries", "%zu", n_store);
                pthread_mutex_unlock(&store_lock);
                for (unsigned rep = 0; rep < arg_repeat; rep++)
                        for (int m = 0; m < N_MODES; m++) {
                                struct cell *c = &cells[k][m];
                                char key[96];
                                double stop_ms;
                                unsigned removed = 0;

                                if (!arg_mode[m])
                                        continue;
                                stop_ms = stop_nsd();
                                if (m == MODE_EMPTY_STORE)
                                        store_clear();
                                if (m == MODE_STORE_ONLY)
                                        removed = remove_pins();
                                start_nsd(m != MODE_PINS, m == MODE_STORE || m == MODE_STORE_ONLY,
                                          &sr);
                                c->ran = true;
                                c->status_ms[c->n] = sr.status_ms;
                                c->ready_ms[c->n] = sr.ready_ms;
                                c->cpu_ms[c->n] = sr.cpu_ms;
                                c->stop_ms[c->n] = stop_ms;
                                c->n++;
                                c->rss_kb = sr.rss_kb;
                                c->hwm_kb = sr.hwm_kb;
                                c->fds = sr.fds;
                                c->namespaces = sr.namespaces;
                                c->pinned = sr.pinned;
                                c->passed = sr.passed;
#define K(what) (snprintf(key, sizeof(key), "start.%u.%s.%u.%s", n, mode_name[m], rep, what), key)
                                result(K("status_ms"), "%.1f", sr.status_ms);
                                result(K("ready_ms"), "%.1f", sr.ready_ms);
                                result(K("cpu_ms"), "%.0f", sr.cpu_ms);
                                result(K("prev_stop_ms"), "%.1f", stop_ms);
                                result(K("namespaces"), "%u", sr.namespaces);
                                result(K("pinned"), "%u", sr.pinned);
                                result(K("passed_fds"), "%u", sr.passed);
                                result(K("pins_removed"), "%u", removed);
                                result(K("rss_kb"), "%ld", sr.rss_kb);
                                result(K("hwm_kb"), "%ld", sr.hwm_kb);
                                result(K("fds"), "%ld", sr.fds);
#undef K
                                progress("%u namespaces, %s, start %u: first STATUS after %.1f "
                                         "ms (READY=1 %.1f ms), %u held, %u pinned, VmRSS %ld kB",
                                         n, mode_name[m], rep + 1, sr.status_ms, sr.ready_ms,
                                         sr.namespaces, sr.pinned, sr.rss_kb);
                                if (sr.namespaces != n)
                                        progress("warning: nsd holds %u namespaces, not %u",
                                                 sr.namespaces, n);
                        }
        }
        (void) stop_nsd();
        pthread_mutex_lock(&store_lock);
        result("store.fdstore_messages", "%lu", n_fdstore_msgs);
        result("store.fdstoreremove_messages", "%lu", n_fdstore_remove_msgs);
        pthread_mutex_unlock(&store_lock);
        {
                double l[3];
                if (getloadavg(l, 3) == 3)
                        result("machine.loadavg_end", "%.2f %.2f %.2f", l[0], l[1], l[2]);
        }
        if (arg_table) {
                FILE *f = fopen(arg_table, "we");
                if (f) {
                        write_table(f);
                        fclose(f);
                }
        }
        result("done", "1");
        return 0;
}
