/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsd-bench: measure nsd through libnsclient. A benchmark, not a test: it asserts nothing
 * about time, it prints figures.
 *
 *   nsd-bench [OPTIONS] -- NSD-COMMAND [ARG...]
 *
 * Starts NSD-COMMAND (which must listen on --socket), waits until it answers STATUS, then:
 *   create      first-login JOIN latency, one new uid per request (uids from --uid-base)
 *   join_reuse  JOIN + setns() of an existing namespace, one connection reused
 *   join_login  connect + JOIN + setns() + disconnect, as a PAM login does (and the same with
 *               SESSION_OPEN, plus connect + SESSION_CLOSE + disconnect for the logout)
 *   tput_P      JOINs per second from P concurrent client processes, one connection each
 *   scale_N     with N namespaces held: nsd's VmRSS and descriptors, kernel memory, this
 *               mount namespace's mountinfo lines, pins
 * and stops nsd with SIGTERM. Results go to stdout as "key value" lines (bench/core/run turns them
 * into a table); progress to stderr.
 *
 * Run it only where mounting is harmless: inside `unshare -m --propagation private` on a
 * host, or in the VM. It changes no mount itself, nsd does.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "nsclient.h"

#define MAX_PROCS 64           /* client processes of one throughput level, --procs */
#define MAX_NAMESPACES 1000000 /* nsd's own ceiling of MaxNamespaces= (nsd/policy/conf.c) */

static unsigned arg_iterations = 2000;
static unsigned arg_creates = 200;
static unsigned arg_max_namespaces = 10000;
static unsigned arg_scale_budget = 300; /* seconds for growing to arg_max_namespaces */
static unsigned arg_seconds = 3;
static unsigned arg_procs[8] = { 1, 2, 8 };
static size_t arg_n_procs = 3;
static bool arg_no_sessions = false;

static pid_t nsd_pid = -1;
static const char *join_reuse_prefix = "join_reuse";

/* ---- small helpers ------------------------------------------------------------------ */

static void stop_nsd(void) {
        (void) nsd_stop(&nsd_pid, 5000, NULL);
}

/* Report the mount points (field 5) of lines of `now` whose mount id (field 1) is not in
 * `before`. */
static void report_new_mounts(const char *key, const char *before, const char *now) {
        char out[1024] = "";
        size_t used = 0;
        const char *line = now;

        while (line && *line) {
                const char *eol = strchr(line, '\n');
                unsigned id, parent;
                char mp[512], needle[32];
                if (sscanf(line, "%u %u %*s %*s %511s", &id, &parent, mp) == 3) {
                        snprintf(needle, sizeof(needle), "%u ", id);
                        bool found = false;
                        for (const char *b = before; b && *b;) {
                                if (strncmp(b, needle, strlen(needle)) == 0) {
                                        found = true;
                                        break;
                                }
                                b = strchr(b, '\n');
                                b = b ? b + 1 : NULL;
                        }
                        if (!found && used + strlen(mp) + 2 < sizeof(out))
                                used += snprintf(out + used, sizeof(out) - used, "%s%s",
                                                 used ? "," : "", mp);
                }
                line = eol ? eol + 1 : NULL;
        }
        result(key, "%s", used ? out : "-");
}

/* ---- phases ------------------------------------------------------------------------- */

struct baseline {
        long mountinfo_lines;
        char *mountinfo;
        long slab_kb, sunreclaim_kb, memavailable_kb;
};

static nsc_conn *connect_or_die(void) {
        nsc_conn *c;
        int r = nsc_connect(arg_socket, &c);
        if (r < 0)
                die("cannot connect to nsd", r);
        return c;
}

static void start_nsd(char **argv, struct nsc_status *ret_status) {
        uint64_t t0 = now_ns();

        nsd_pid = fork();
        if (nsd_pid < 0)
                die("fork", errno);
        if (nsd_pid == 0) {
                /* what systemd gives a service: soft 1024, hard 524288 (or the hard limit we
                 * have, where raising it is not allowed) */
                nofile_limit_set(1024, 524288);
                nsd_exec(argv, environ, arg_nsd_log);
        }
        nsd_wait_status(&nsd_pid, arg_socket, 60000, ret_status); /* the VM under TCG is slow */
        result("nsd.start_ms", "%.1f", (now_ns() - t0) / 1e6);
}

static void snapshot(const char *label, const struct baseline *b) {
        char key[128];
        struct nsc_status st;
        nsc_conn *c = connect_or_die();
        int r = nsc_status(c, &st);
        char *mi;

        nsc_disconnect(c);
        if (r < 0)
                die("STATUS", r);
#define K(name) (snprintf(key, sizeof(key), "%s.%s", label, name), key)
        result(K("namespaces"), "%u", st.namespaces);
        result(K("pinned"), "%u", st.pinned);
        result(K("nsd_rss_kb"), "%ld", proc_status_kb(nsd_pid, "VmRSS"));
        result(K("nsd_fds"), "%ld", count_fds(nsd_pid));
        result(K("slab_delta_kb"), "%ld", meminfo_kb("Slab") - b->slab_kb);
        result(K("sunreclaim_delta_kb"), "%ld", meminfo_kb("SUnreclaim") - b->sunreclaim_kb);
        result(K("memavailable_drop_kb"), "%ld", b->memavailable_kb - meminfo_kb("MemAvailable"));
        result(K("mountinfo_lines"), "%ld", count_lines("/proc/self/mountinfo"));
        result(K("mountinfo_delta"), "%ld",
               count_lines("/proc/self/mountinfo") - b->mountinfo_lines);
        mi = read_file("/proc/self/mountinfo");
        report_new_mounts(K("mountinfo_new"), b->mountinfo, mi);
        free(mi);
#undef K
        progress("%s: %u namespaces (%u pinned), nsd VmRSS %ld kB", label, st.namespaces, st.pinned,
                 proc_status_kb(nsd_pid, "VmRSS"));
}

/* Create namespaces for uids [from, to) on connection c; record each latency into lat when
 * not NULL. Snapshots at the counts in `marks`. Stops
 * early when the deadline (monotonic ns, 0 = none) passes; returns the uid reached. */
static uid_t create_range(nsc_conn *c, uid_t from, uid_t to, struct samples *lat,
                          unsigned *ret_pinned, unsigned *ret_not_created, const unsigned *marks,
                          size_t n_marks, const struct baseline *b, uint64_t deadline) {
        unsigned pinned = 0, not_created = 0;
        uid_t u;

        for (u = from; u < to; u++) {
                struct nsc_join_result j = { .root_fd = -1, .ns_fd = -1 };
                uint64_t t0 = now_ns();
                int r = nsc_join(c, u, 0, &j);
                uint64_t t1 = now_ns();
                if (r < 0 && deadline) {
                        /* growing: a limit was hit; say which and keep what we have */
                        const char *m = nsc_last_error_message(c);
                        result("grow.stopped_by", "'%s'", m ? m : strerror(-r));
                        progress("growth stopped at %u namespaces: %s",
                                 (unsigned) (u - arg_uid_base), m ? m : strerror(-r));
                        break;
                }
                if (r < 0)
                        die_nsc(c, r, "JOIN (create) of uid %u", (unsigned) u);
                if (lat)
                        samples_add(lat, t1 - t0);
                pinned += !!(j.ns_flags & NSC_NS_PINNED);
                not_created += !(j.ns_flags & NSC_NS_CREATED);
                join_close(&j);
                for (size_t m = 0; m < n_marks; m++)
                        if (u - arg_uid_base + 1 == marks[m]) {
                                char label[32];
                                snprintf(label, sizeof(label), "scale_%u", marks[m]);
                                snapshot(label, b);
                        }
                if (deadline && now_ns() > deadline) {
                        u++;
                        break;
                }
        }
        *ret_pinned = pinned;
        *ret_not_created = not_created;
        return u;
}

/* Run fn in a forked child (it may setns() and die without harming this process). */
static void in_child(void (*fn)(void)) {
        pid_t p;
        int status;

        fflush(stdout);
        fflush(stderr);
        p = fork();
        if (p < 0)
                die("fork", errno);
        if (p == 0) {
                fn();
                fflush(stdout);
                _exit(0);
        }
        if (waitpid(p, &status, 0) != p || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                die("a measuring child failed", EIO);
}

static int open_own_mntns(void) {
        int fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                die("open /proc/self/ns/mnt", errno);
        return fd;
}

static uid_t existing_uid(unsigned i) {
        return arg_uid_base + i % arg_creates;
}

/* (a) one connection reused: JOIN, setns() in, setns() back (untimed). */
static void phase_join_reuse(void) {
        struct samples tot = {}, join = {}, sns = {};
        int home = open_own_mntns();
        nsc_conn *c = connect_or_die();
        bool checked = false;
        char key[64];

        for (unsigned i = 0; i < arg_iterations + 50; i++) { /* 50 warm-up rounds */
                struct nsc_join_result j = { .root_fd = -1, .ns_fd = -1 };
                uint64_t t0 = now_ns(), t1, t2;
                int r = nsc_join(c, existing_uid(i), NSC_JOIN_NO_CREATE, &j);
                if (r < 0)
                        die("JOIN (existing)", r);
                t1 = now_ns();
                if (setns(j.ns_fd, CLONE_NEWNS) < 0)
                        die("setns into the user namespace", errno);
                t2 = now_ns();
                if (!checked) {
                        struct stat s;
                        if (stat("/proc/self/ns/mnt", &s) < 0 || s.st_ino != j.ns_inode)
                                die("setns did not land in the namespace JOIN named", EIO);
                        checked = true;
                }
                if (setns(home, CLONE_NEWNS) < 0)
                        die("setns back", errno);
                join_close(&j);
                if (i >= 50) {
                        samples_add(&tot, t2 - t0);
                        samples_add(&join, t1 - t0);
                        samples_add(&sns, t2 - t1);
                }
        }
        nsc_disconnect(c);
        snprintf(key, sizeof(key), "%s.join_setns", join_reuse_prefix);
        samples_report(key, &tot);
        snprintf(key, sizeof(key), "%s.join", join_reuse_prefix);
        samples_report(key, &join);
        snprintf(key, sizeof(key), "%s.setns", join_reuse_prefix);
        samples_report(key, &sns);
}

/* (b) as a PAM login: connect + JOIN + setns + disconnect per iteration; then the same with
 * SESSION_OPEN (pam_sm_open_session) and connect + SESSION_CLOSE + disconnect
 * (pam_sm_close_session). */
static void phase_join_login(void) {
        struct samples tot = {}, open_s = {}, close_s = {};
        int home = open_own_mntns();
        int sess_err = 0;

        for (unsigned i = 0; i < arg_iterations + 50; i++) {
                struct nsc_join_result j = { .root_fd = -1, .ns_fd = -1 };
                nsc_conn *c;
                uint64_t t0 = now_ns();
                int r = nsc_connect(arg_socket, &c);
                if (r < 0)
                        die("connect", r);
                r = nsc_join(c, existing_uid(i), 0, &j);
                if (r < 0)
                        die("JOIN (existing, new connection)", r);
                if (setns(j.ns_fd, CLONE_NEWNS) < 0)
                        die("setns into the user namespace", errno);
                nsc_disconnect(c);
                if (i >= 50)
                        samples_add(&tot, now_ns() - t0);
                if (setns(home, CLONE_NEWNS) < 0)
                        die("setns back", errno);
                join_close(&j);
        }
        samples_report("join_login.connect_join_setns_close", &tot);

        if (arg_no_sessions)
                return;
        for (unsigned i = 0; i < arg_iterations + 50; i++) {
                struct nsc_join_result j = { .root_fd = -1, .ns_fd = -1 };
                uid_t uid = existing_uid(i);
                uint64_t sid = 0, t0, t1;
                unsigned n;
                nsc_conn *c;
                int r;

                t0 = now_ns();
                r = nsc_connect(arg_socket, &c);
                if (r < 0)
                        die("connect", r);
                r = nsc_join(c, uid, 0, &j);
                if (r < 0)
                        die("JOIN (existing, new connection)", r);
                if (setns(j.ns_fd, CLONE_NEWNS) < 0)
                        die("setns into the user namespace", errno);
                r = nsc_session_open(c, uid, getpid(), "nsd-bench", &sid, &n);
                nsc_disconnect(c);
                t1 = now_ns();
                if (setns(home, CLONE_NEWNS) < 0)
                        die("setns back", errno);
                join_close(&j);
                if (r < 0) {
                        sess_err = r;
                        break;
                }
                r = nsc_connect(arg_socket, &c);
                if (r < 0)
                        die("connect", r);
                r = nsc_session_close(c, uid, getpid(), sid, &n);
                nsc_disconnect(c);
                if (r < 0) {
                        sess_err = r;
                        break;
                }
                if (i >= 50) {
                        samples_add(&open_s, t1 - t0);
                        samples_add(&close_s, now_ns() - t1);
                }
        }
        if (sess_err < 0) {
                result("login_session.error", "'%s'", strerror(-sess_err));
                return;
        }
        samples_report("login_session.open", &open_s);
        samples_report("login_session.close", &close_s);
}

/* Throughput: P processes, one connection each, JOIN + close descriptors in a loop. */
static void phase_throughput(unsigned procs) {
        int pfd[2];
        uint64_t start, end, total = 0, cpu0, cpu1;
        char key[64];
        pid_t kids[MAX_PROCS];

        if (pipe2(pfd, O_CLOEXEC) < 0)
                die("pipe", errno);
        fflush(stdout);
        fflush(stderr);
        start = now_ns() + 300000000ull; /* every child connected by then */
        end = start + (uint64_t) arg_seconds * 1000000000ull;
        for (unsigned k = 0; k < procs; k++) {
                kids[k] = fork();
                if (kids[k] < 0)
                        die("fork", errno);
                if (kids[k] == 0) {
                        uint64_t count = 0;
                        nsc_conn *c;
                        close(pfd[0]);
                        if (nsc_connect(arg_socket, &c) < 0)
                                _exit(2);
                        while (now_ns() < start)
                                ;
                        for (unsigned i = k; now_ns() < end; i += procs) {
                                struct nsc_join_result j = { .root_fd = -1, .ns_fd = -1 };
                                if (nsc_join(c, existing_uid(i), NSC_JOIN_NO_CREATE, &j) < 0)
                                        _exit(3);
                                join_close(&j);
                                count++;
                        }
                        nsc_disconnect(c);
                        if (write(pfd[1], &count, sizeof(count)) != sizeof(count))
                                _exit(4);
                        _exit(0);
                }
        }
        close(pfd[1]);
        while (now_ns() < start)
                usleep(1000);
        cpu0 = proc_cpu_ticks(nsd_pid, NULL);
        for (unsigned k = 0; k < procs; k++) {
                uint64_t n;
                int status;
                if (read(pfd[0], &n, sizeof(n)) == sizeof(n))
                        total += n;
                (void) status;
        }
        cpu1 = proc_cpu_ticks(nsd_pid, NULL);
        for (unsigned k = 0; k < procs; k++) {
                int status;
                if (waitpid(kids[k], &status, 0) != kids[k] || !WIFEXITED(status) ||
                    WEXITSTATUS(status) != 0)
                        die("a throughput client failed", EIO);
        }
        close(pfd[0]);
        snprintf(key, sizeof(key), "tput_%u.joins", procs);
        result(key, "%" PRIu64, total);
        snprintf(key, sizeof(key), "tput_%u.joins_per_s", procs);
        result(key, "%.0f", total / (double) arg_seconds);
        snprintf(key, sizeof(key), "tput_%u.nsd_cpu_pct", procs);
        result(key, "%.0f", 100.0 * (cpu1 - cpu0) / sysconf(_SC_CLK_TCK) / arg_seconds);
        progress("throughput with %u clients: %.0f JOIN/s", procs, total / (double) arg_seconds);
}

/* Pins as the LIST reply tells them. */
static void report_list_pins(const char *label) {
        struct nsc_ns_info *e = NULL;
        size_t n = 0, pinned = 0;
        char key[64];
        nsc_conn *c = connect_or_die();
        int r = nsc_list(c, &e, &n);

        nsc_disconnect(c);
        if (r < 0) {
                snprintf(key, sizeof(key), "%s.list_error", label);
                result(key, "'%s'", strerror(-r));
                return;
        }
        for (size_t i = 0; i < n; i++)
                pinned += !!(e[i].ns_flags & NSC_NS_PINNED);
        free(e);
        snprintf(key, sizeof(key), "%s.list_namespaces", label);
        result(key, "%zu", n);
        snprintf(key, sizeof(key), "%s.list_pinned", label);
        result(key, "%zu", pinned);
}

/* ---- main ----------------------------------------------------------------------------- */

static void help(void) {
        printf("Usage: nsd-bench [OPTIONS] -- NSD-COMMAND [ARG...]\n"
               "Start nsd, measure JOIN latency, throughput and the cost of many namespaces,\n"
               "print \"key value\" lines, stop nsd. Run it inside unshare -m or in the VM.\n\n"
               "  --socket PATH        nsd's socket (default /run/nsd/socket)\n"
               "  --nsd-log FILE       nsd's stdout and stderr (default: inherited)\n"
               "  --uid-base UID       first synthetic uid (default 100000)\n"
               "  --iterations N       JOINs of an existing namespace per latency set (2000)\n"
               "  --creates N          first-login JOINs, one new uid each (200)\n"
               "  --max-namespaces N   grow to N namespaces for the memory figures (10000)\n"
               "  --scale-budget S     stop growing after S seconds (300)\n"
               "  --seconds S          per throughput level (3)\n"
               "  --procs LIST         client processes per throughput level, 1..64 each, at\n"
               "                       most 8 levels (1,2,8)\n"
               "  --no-sessions        skip SESSION_OPEN/CLOSE latency\n"
               "See bench/README.md.\n");
}

int main(int argc, char *argv[]) {
        static const struct bench_option options[] = {
                /* a JOIN each, 50 more to warm up; a million is a minute or more */
                { "iterations", BENCH_UNSIGNED, &arg_iterations, .lo = 1, .hi = 1000000 },
                { "creates", BENCH_UNSIGNED, &arg_creates, .lo = 1, .hi = MAX_NAMESPACES },
                /* fewer than --creates: --creates (no growth) */
                { "max-namespaces", BENCH_UNSIGNED, &arg_max_namespaces, .lo = 0,
                  .hi = MAX_NAMESPACES },
                /* 0: growth stops after one creation; at most a day */
                { "scale-budget", BENCH_UNSIGNED, &arg_scale_budget, .lo = 0, .hi = 86400 },
                /* a throughput level divides by it; at most an hour each */
                { "seconds", BENCH_UNSIGNED, &arg_seconds, .lo = 1, .hi = 3600 },
                { "procs", BENCH_LIST, arg_procs, ELEMENTSOF(arg_procs), &arg_n_procs, .lo = 1,
                  .hi = MAX_PROCS },
                { "no-sessions", BENCH_FLAG, &arg_no_sessions },
        };
        static const unsigned marks[] = { 1, 100, 1000, 10000, 100000 };
        struct baseline base = {};
        struct nsc_status st;
        struct utsname un;
        unsigned pinned, not_created, reached;
        struct samples lat = {};
        uint64_t t_grow;
        nsc_conn *c;
        uid_t u;

        optind = bench_parse_options(argc, argv, options, ELEMENTSOF(options), false, help);
        if (optind >= argc) {
                fprintf(stderr, "nsd-bench: no NSD-COMMAND given (see --help)\n");
                return 1;
        }
        if (arg_max_namespaces < arg_creates)
                arg_max_namespaces = arg_creates;
        signal(SIGPIPE, SIG_IGN);
        bench_on_die(stop_nsd);

        uname(&un);
        result("machine.kernel", "%s", un.release);
        result("machine.nproc", "%ld", sysconf(_SC_NPROCESSORS_ONLN));
        result("machine.memtotal_kb", "%ld", meminfo_kb("MemTotal"));
        {
                char *v = read_file("/proc/sys/user/max_mnt_namespaces");
                result("machine.max_mnt_namespaces", "%ld", v ? strtol(v, NULL, 10) : -1L);
                free(v);
        }

        /* baseline, before nsd exists */
        base.mountinfo_lines = count_lines("/proc/self/mountinfo");
        base.mountinfo = read_file("/proc/self/mountinfo");
        base.slab_kb = meminfo_kb("Slab");
        base.sunreclaim_kb = meminfo_kb("SUnreclaim");
        base.memavailable_kb = meminfo_kb("MemAvailable");
        result("baseline.mountinfo_lines", "%ld", base.mountinfo_lines);

        start_nsd(argv + optind, &st);
        result("nsd.version", "%s", st.version);
        result("nsd.max_namespaces", "%u", st.max_namespaces);
        result("nsd.features", "0x%x", st.features);
        result("nsd.pin_namespace", "%s", st.features & NSC_FEATURE_PIN_NAMESPACE ? "yes" : "no");
        if (st.namespaces > 0)
                progress("warning: nsd already holds %u namespaces (adopted pins?)", st.namespaces);
        snapshot("scale_0", &base);

        /* nsd holds descriptors per namespace; it raises its soft limit to the hard one. Do
         * not ask for more namespaces than that allows: say so instead. */
        long nofile = proc_nofile(nsd_pid);
        long per_ns = 2; /* ns_fd + root_fd, see nsd/userns.h */
        result("nsd.nofile_limit", "%ld", nofile);
        if (nofile > 0 && (long) arg_max_namespaces * per_ns + 64 > nofile) {
                unsigned cap = (unsigned) ((nofile - 64) / per_ns);
                cap -= cap % 100;
                result("grow.capped_by_nofile", "%u", cap);
                progress("nsd may open only %ld descriptors (RLIMIT_NOFILE): growing to %u "
                         "namespaces instead of %u",
                         nofile, cap, arg_max_namespaces);
                arg_max_namespaces = cap > arg_creates ? cap : arg_creates;
        }

        /* first-login creation */
        progress("creating %u namespaces (first-login JOIN)", arg_creates);
        c = connect_or_die();
        create_range(c, arg_uid_base, arg_uid_base + arg_creates, &lat, &pinned, &not_created,
                     marks, ELEMENTSOF(marks), &base, 0);
        samples_report("create", &lat);
        result("create.pinned", "%u", pinned);
        result("create.not_created", "%u", not_created);
        samples_free(&lat);
        nsc_disconnect(c);

        progress("JOIN of existing namespaces, %u iterations each", arg_iterations);
        in_child(phase_join_reuse);
        in_child(phase_join_login);

        for (unsigned k = 0; k < arg_n_procs; k++)
                phase_throughput(arg_procs[k]);

        /* grow to arg_max_namespaces */
        if (arg_max_namespaces > arg_creates) {
                progress("growing to %u namespaces (budget %u s)", arg_max_namespaces,
                         arg_scale_budget);
                c = connect_or_die();
                t_grow = now_ns();
                u = create_range(c, arg_uid_base + arg_creates, arg_uid_base + arg_max_namespaces,
                                 &lat, &pinned, &not_created, marks, ELEMENTSOF(marks), &base,
                                 t_grow + (uint64_t) arg_scale_budget * 1000000000ull);
                reached = u - arg_uid_base;
                result("grow.seconds", "%.1f", (now_ns() - t_grow) / 1e9);
                result("grow.reached", "%u", reached);
                samples_report("grow.create", &lat);
                result("grow.pinned", "%u", pinned);
                nsc_disconnect(c);
                samples_free(&lat);
                /* a last snapshot where the budget stopped growth between marks */
                bool at_mark = false;
                for (size_t m = 0; m < ELEMENTSOF(marks); m++)
                        at_mark |= marks[m] == reached;
                if (!at_mark) {
                        char label[32];
                        snprintf(label, sizeof(label), "scale_%u", reached);
                        snapshot(label, &base);
                }
                /* JOIN of an existing namespace with many held */
                arg_creates = reached;
                arg_iterations = arg_iterations > 1000 ? 1000 : arg_iterations;
                join_reuse_prefix = "join_reuse_at_scale";
                in_child(phase_join_reuse);
        }
        report_list_pins("final");
        stop_nsd();
        result("done", "1");
        return 0;
}
