/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsd-login: what root's logins cost while unprivileged clients attack nsd, and what 1000
 * concurrent logins cost nsd. A benchmark, not a test: it asserts nothing about time, it
 * prints figures ("key value" lines on stdout; bench/login/table draws the table).
 *
 *   nsd-login [OPTIONS] -- NSD-COMMAND [ARG...]
 *
 * Starts NSD-COMMAND (which must listen on --socket and --root-socket), then:
 *
 *   burst   --bursts times: --burst-logins forked processes, --users users round robin,
 *           released at once; each opens a PAM session through the real pam_nsjoin.so
 *           (pam_start_confdir() with a service file of our own), holds it until all have
 *           opened, then closes it. Errors, latencies, nsd's RSS / descriptors / CPU time
 *           before, at the peak and after.
 *   phases  for each phase (--phases): start its attackers, let them settle, then for
 *           --phase-seconds measure in rounds, one after the other, as root:
 *             pam_root   a PAM login (open_session + close_session in a forked process)
 *                        through root's socket, the way pam_nsjoin does it
 *             nsc_root   the same through libnsclient: connect + JOIN_SESSION + setns +
 *                        disconnect, connect + SESSION_CLOSE + disconnect
 *             status     connect + STATUS + disconnect on root's socket (nsctl status)
 *             pam_user   a PAM login with socket= the user socket (root's connections
 *                        there do not count against the unprivileged limits either)
 *           and, all along, in a process of its own, an unprivileged uid (--victim-uid)
 *           doing connect + STATUS + disconnect on the user socket every 100 ms (below
 *           RequestRatePerUser=20).
 *
 * Attackers are forked processes, one per uid (setresuid), each with some connections to
 * the user socket:
 *   idle   connect and never send; reconnect at once when nsd closes the connection
 *   slow   send requests (JOIN of their own uid: replies carry two descriptors) as fast
 *          as nsd takes them, never read a reply; reconnect when dropped
 *   flood  the same, but read every reply (at most 8 requests in flight per connection)
 *
 * Phases (names for --phases, comma separated; each may repeat):
 *   idle      no attacker
 *   exhaust   --exhaust-uids uids (from 200000: not managed) x --exhaust-conns idle
 *             connections: MaxConnections= (512 = 64 x 8) full
 *   slow      --slow-uids managed uids (from 150000) x --slow-conns slow readers
 *   both      exhaust with --slow-uids fewer uids, plus slow
 *   flood     --flood-uids managed uids (from 160000) x 1 connection, flooding
 *
 * Run it only where mounting is harmless (nsd mounts): inside
 * `unshare -m --propagation private` on a host, or in the VM. The PAM side needs users:
 * run it under nss_wrapper (LD_PRELOAD=libnss_wrapper.so, NSS_WRAPPER_PASSWD/GROUP) with
 * users "nb<uid>" for uids --uid-base.. (bench/login/run writes the files); nsd itself is
 * started without nss_wrapper, its policy is numeric.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_appl.h>

#include "bench-util.h"
#include "nsclient.h"
#include "nsd-protocol.h"
#include "socket-util.h"

static const char *arg_root_socket = "/run/nsd/root.socket";
static const char *arg_pam_module = NULL;
static const char *arg_pam_dir = NULL;
static const char *arg_timeout = "5";
static const char *arg_phases = "idle,exhaust,slow,both,flood,idle";
static unsigned arg_users = 100;
static unsigned arg_bursts = 3;
static unsigned arg_burst_logins = 1000;
static double arg_phase_seconds = 20;
static double arg_settle_seconds = 3;
static unsigned arg_exhaust_uids = 64, arg_exhaust_conns = 8;
static unsigned arg_slow_uids = 16, arg_slow_conns = 8;
static unsigned arg_flood_uids = 512;
static uid_t arg_victim_uid = 170000;
static unsigned arg_gap_ms = 5;
static int arg_nsd_nice = 0;

#define SERVICE_ROOT "nsd-login-root"
#define SERVICE_USER "nsd-login-user"
#define UID_IDLE_BASE 200000u
#define UID_SLOW_BASE 150000u
#define UID_FLOOD_BASE 160000u
#define ATTACKER_UIDS 10000 /* at most, of one kind: 150000.. 160000.. 170000 (the victim) */
#define FLOOD_INFLIGHT 8
#define VICTIM_MAX 200000

static pid_t nsd_pid = -1;
static pid_t main_pid; /* the bench's own process, the parent of every child */
static uint64_t own_mntns_ino;

/* ---- small helpers ------------------------------------------------------------------ */

static void stop_nsd(void) {
        (void) nsd_stop(&nsd_pid, 5000, NULL);
}

/* ---- nsd as a process ------------------------------------------------------------------ */

/* The main thread's time on a CPU and waiting for one (run queue), ns; and its
 * involuntary context switches. */
static void proc_sched(pid_t pid, uint64_t *ret_exec, uint64_t *ret_wait, long *ret_nvcsw) {
        if (proc_schedstat(pid, ret_exec, ret_wait) < 0)
                *ret_exec = *ret_wait = 0;
        *ret_nvcsw = proc_status_kb(pid, "nonvoluntary_ctxt_switches");
}

static int root_status(struct nsc_status *st) {
        nsc_conn *c;
        int r = nsc_connect_timeout(arg_root_socket, 5000000, &c);

        if (r < 0)
                return r;
        r = nsc_status(c, st);
        nsc_disconnect(c);
        return r;
}

static void start_nsd(char **argv) {
        static const char *const nss_wrapper_env[] = { "LD_PRELOAD=", "NSS_WRAPPER_", NULL };
        struct nsc_status st;
        uint64_t t0 = now_ns();
        pid_t parent = getpid();

        nsd_pid = fork();
        if (nsd_pid < 0)
                die("fork", errno);
        if (nsd_pid == 0) {
                /* nsd goes when we go, however we go (the sandbox must not keep it) */
                (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
                if (getppid() != parent)
                        _exit(1);
                /* what systemd gives a service (soft 1024, hard 524288), or what we may */
                nofile_limit_set(1024, 524288);
                if (arg_nsd_nice != 0 && setpriority(PRIO_PROCESS, 0, arg_nsd_nice) < 0)
                        fprintf(stderr, "nsd-login: cannot set nsd's nice value to %d: %m\n",
                                arg_nsd_nice);
                /* nsd without nss_wrapper: its policy is numeric, it needs no user database */
                nsd_exec(argv, environ_without(nss_wrapper_env, 0), arg_nsd_log);
        }
        nsd_wait_status(&nsd_pid, arg_root_socket, 60000, &st);
        result_line("nsd.start_ms %.1f", (now_ns() - t0) / 1e6);
        result_line("nsd.nice %d", arg_nsd_nice);
        progress("nsd runs as pid %d", (int) nsd_pid);
        result_line("nsd.version %s", st.version);
        result_line("nsd.protocol %u.%u", st.proto_major, st.proto_minor);
        result_line("nsd.max_namespaces %u", st.max_namespaces);
        result_line("nsd.max_connections_per_uid %u", st.max_connections_per_uid);
}

/* Wait (at most secs) until nsd has no session and at most `conns` connections. */
static void wait_nsd_quiet(unsigned sessions, unsigned conns, double secs) {
        uint64_t end = now_ns() + (uint64_t) (secs * 1e9);
        struct nsc_status st;

        while (now_ns() < end) {
                if (root_status(&st) >= 0 && st.sessions <= sessions && st.connections <= conns)
                        return;
                usleep(20000);
        }
}

/* ---- PAM ----------------------------------------------------------------------------- */

static int conv_none(int n, const struct pam_message **msg, struct pam_response **resp,
                     void *data) {
        return PAM_CONV_ERR;
}

static void write_pam_config(void) {
        const char *names[2] = { SERVICE_ROOT, SERVICE_USER };
        const char *socks[2] = { arg_root_socket, arg_socket };

        if (mkdir(arg_pam_dir, 0755) < 0 && errno != EEXIST)
                die("mkdir --pam-dir", errno);
        for (int i = 0; i < 2; i++) {
                char path[4096];
                FILE *f;

                snprintf(path, sizeof(path), "%s/%s", arg_pam_dir, names[i]);
                f = fopen(path, "we");
                if (!f)
                        die("cannot write the PAM service file", errno);
                fprintf(f, "session required %s socket=%s timeout=%s min_uid=%u max_uid=%u\n",
                        arg_pam_module, socks[i], arg_timeout, (unsigned) arg_uid_base,
                        (unsigned) (UID_SLOW_BASE - 1));
                fclose(f);
                progress("PAM service %s: session required %s socket=%s timeout=%s min_uid=%u "
                         "max_uid=%u",
                         names[i], arg_pam_module, socks[i], arg_timeout, (unsigned) arg_uid_base,
                         (unsigned) (UID_SLOW_BASE - 1));
        }
}

static uint64_t mntns_ino(void) {
        struct stat st;
        return stat("/proc/self/ns/mnt", &st) < 0 ? 0 : (uint64_t) st.st_ino;
}

/* What a login child reports. */
struct login_result {
        int idx;
        int rc_start, rc_open, rc_close; /* PAM codes, or -errno for nsc */
        int entered;                     /* its mount namespace changed */
        uint64_t open_ns, close_ns;
};

static void write_all(int fd, const void *p, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return;
                p = (const char *) p + k;
                n -= (size_t) k;
        }
}

static bool read_all(int fd, void *p, size_t n) {
        while (n > 0) {
                ssize_t k = read(fd, p, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return false;
                p = (char *) p + k;
                n -= (size_t) k;
        }
        return true;
}

/* Read up to n one-byte tokens from fd within secs; returns how many came. A login child
 * that dies or hangs must not hang the whole bench (the others hold the pipe open). */
static unsigned read_tokens(int fd, unsigned n, double secs) {
        uint64_t end = now_ns() + (uint64_t) (secs * 1e9);
        unsigned got = 0;
        char buf[256];

        while (got < n) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                uint64_t now = now_ns();
                ssize_t k;

                if (now >= end)
                        break;
                if (poll(&pfd, 1, (int) ((end - now) / 1000000u) + 1) <= 0)
                        continue;
                k = read(fd, buf, n - got < sizeof(buf) ? n - got : sizeof(buf));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                got += (unsigned) k;
        }
        return got;
}

/* In a login child: PAM open + close of user; fills *res. */
static void child_pam(const char *service, const char *user, struct login_result *res) {
        struct pam_conv conv = { .conv = conv_none };
        pam_handle_t *h = NULL;
        uint64_t t0, t1, t2;

        res->rc_start = pam_start_confdir(service, user, &conv, arg_pam_dir, &h);
        if (res->rc_start != PAM_SUCCESS)
                return;
        t0 = now_ns();
        res->rc_open = pam_open_session(h, 0);
        t1 = now_ns();
        res->entered = mntns_ino() != own_mntns_ino;
        res->rc_close = pam_close_session(h, 0);
        t2 = now_ns();
        pam_end(h, res->rc_close);
        res->open_ns = t1 - t0;
        res->close_ns = t2 - t1;
}

/* In a login child: the same through libnsclient. */
static void child_nsc(uid_t uid, struct login_result *res) {
        struct nsc_join_result j;
        uint64_t t0, t1, t2, sid = 0;
        unsigned n;
        nsc_conn *c;
        int r;

        t0 = now_ns();
        r = nsc_connect_timeout(arg_root_socket, 5000000, &c);
        if (r >= 0) {
                r = nsc_join_session(c, uid, 0, getpid(), "nsd-login", &j, &sid, &n);
                if (r >= 0) {
                        r = nsc_enter_setns(&j);
                        close(j.root_fd);
                        close(j.ns_fd);
                }
                nsc_disconnect(c);
        }
        t1 = now_ns();
        res->rc_open = r < 0 ? r : 0;
        res->entered = mntns_ino() != own_mntns_ino;
        if (r >= 0) {
                r = nsc_connect_timeout(arg_root_socket, 5000000, &c);
                if (r >= 0) {
                        r = nsc_session_close(c, uid, getpid(), sid, NULL);
                        nsc_disconnect(c);
                }
        }
        t2 = now_ns();
        res->rc_close = r < 0 ? r : 0;
        res->open_ns = t1 - t0;
        res->close_ns = t2 - t1;
}

enum login_kind { LOGIN_PAM_ROOT, LOGIN_PAM_USER, LOGIN_NSC };

/* One login in a forked single-threaded child (setns needs that). Records open/close and
 * the whole fork-to-reaped time. */
static void one_login(enum login_kind kind, unsigned user_idx, struct samples *open_s,
                      struct samples *close_s, struct samples *total_s) {
        struct login_result res = { .rc_start = PAM_SUCCESS, .rc_open = -1, .rc_close = -1 };
        uid_t uid = arg_uid_base + user_idx % arg_users;
        char user[32];
        int p[2], status;
        uint64_t t0;
        pid_t pid;
        bool got;

        snprintf(user, sizeof(user), "nb%u", (unsigned) uid);
        if (pipe2(p, O_CLOEXEC) < 0)
                die("pipe", errno);
        t0 = now_ns();
        pid = fork();
        if (pid < 0)
                die("fork", errno);
        if (pid == 0) {
                close(p[0]);
                if (kind == LOGIN_NSC)
                        child_nsc(uid, &res);
                else
                        child_pam(kind == LOGIN_PAM_ROOT ? SERVICE_ROOT : SERVICE_USER, user, &res);
                write_all(p[1], &res, sizeof(res));
                _exit(0);
        }
        close(p[1]);
        got = read_all(p[0], &res, sizeof(res));
        close(p[0]);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (!got) {
                samples_error(open_s, "the login child died (status %#x)", status);
                return;
        }
        if (kind == LOGIN_NSC) {
                if (res.rc_open < 0)
                        samples_error(open_s, "%s", strerror(-res.rc_open));
                else if (!res.entered)
                        samples_error(open_s, "joined but not in another namespace");
                else
                        samples_add(open_s, res.open_ns);
                if (res.rc_open >= 0) {
                        if (res.rc_close < 0)
                                samples_error(close_s, "%s", strerror(-res.rc_close));
                        else
                                samples_add(close_s, res.close_ns);
                }
        } else {
                if (res.rc_start != PAM_SUCCESS)
                        samples_error(open_s, "pam_start_confdir: %s",
                                      pam_strerror(NULL, res.rc_start));
                else if (res.rc_open != PAM_SUCCESS)
                        samples_error(open_s, "pam_open_session: %s",
                                      pam_strerror(NULL, res.rc_open));
                else if (!res.entered)
                        samples_error(open_s, "PAM_SUCCESS but not in another namespace");
                else
                        samples_add(open_s, res.open_ns);
                if (res.rc_start == PAM_SUCCESS && res.rc_open == PAM_SUCCESS) {
                        if (res.rc_close != PAM_SUCCESS)
                                samples_error(close_s, "pam_close_session: %s",
                                              pam_strerror(NULL, res.rc_close));
                        else
                                samples_add(close_s, res.close_ns);
                }
        }
        if (total_s && res.rc_open == 0)
                samples_add(total_s, now_ns() - t0);
}

/* ---- 1000 concurrent logins ------------------------------------------------------------ */

static void burst(unsigned round) {
        unsigned n = arg_burst_logins;
        int go1[2], go2[2], ready[2], opened[2], results[2];
        struct samples open_s = { 0 }, close_s = { 0 };
        uint64_t cpu0, cpu1, cpu_open, t_fork, t_rel, t_open, t_closed;
        long fds0, rss0, fds_peak, rss_peak, fds1, rss1;
        struct nsc_status st0, st_peak, st1;
        unsigned entered = 0, got = 0;
        pid_t *pids = calloc(n, sizeof(*pids));
        char la0[64], la1[64], key[64];
        char c;

        snprintf(key, sizeof(key), "burst%u", round);
        progress("%s: %u concurrent PAM logins of %u users", key, n, arg_users);
        if (pipe2(go1, O_CLOEXEC) < 0 || pipe2(go2, O_CLOEXEC) < 0 || pipe2(ready, O_CLOEXEC) < 0 ||
            pipe2(opened, O_CLOEXEC) < 0 || pipe2(results, O_CLOEXEC) < 0)
                die("pipe", errno);
        wait_nsd_quiet(0, 1, 10);
        if (root_status(&st0) < 0)
                die("STATUS", -EIO);
        fds0 = count_fds(nsd_pid);
        rss0 = proc_status_kb(nsd_pid, "VmRSS");
        loadavg(la0);

        t_fork = now_ns();
        for (unsigned i = 0; i < n; i++) {
                pid_t pid = fork();
                if (pid < 0)
                        die("fork", errno);
                if (pid == 0) {
                        struct pam_conv conv = { .conv = conv_none };
                        struct login_result res = { .idx = (int) i, .rc_open = -1, .rc_close = -1 };
                        uid_t uid = arg_uid_base + i % arg_users;
                        pam_handle_t *h = NULL;
                        char user[32];
                        uint64_t t0, t1;

                        close(go1[1]);
                        close(go2[1]);
                        close(ready[0]);
                        close(opened[0]);
                        close(results[0]);
                        snprintf(user, sizeof(user), "nb%u", (unsigned) uid);
                        res.rc_start = pam_start_confdir(SERVICE_ROOT, user, &conv, arg_pam_dir,
                                                         &h);
                        write_all(ready[1], "r", 1);
                        (void) read(go1[0], &c, 1); /* EOF: go */
                        if (res.rc_start == PAM_SUCCESS) {
                                t0 = now_ns();
                                res.rc_open = pam_open_session(h, 0);
                                t1 = now_ns();
                                res.open_ns = t1 - t0;
                                res.entered = mntns_ino() != own_mntns_ino;
                        }
                        write_all(opened[1], "o", 1);
                        (void) read(go2[0], &c, 1);
                        if (res.rc_start == PAM_SUCCESS && res.rc_open == PAM_SUCCESS) {
                                t0 = now_ns();
                                res.rc_close = pam_close_session(h, 0);
                                res.close_ns = now_ns() - t0;
                        }
                        if (h)
                                pam_end(h, res.rc_close);
                        write_all(results[1], &res, sizeof(res));
                        _exit(0);
                }
                pids[i] = pid;
        }
        close(go1[0]);
        close(go2[0]);
        close(ready[1]);
        close(opened[1]);
        close(results[1]);
        if (read_tokens(ready[0], n, 120) < n)
                die("a login child died or hung before it was ready", EPIPE);
        result_line("%s.fork_ms %.1f", key, (now_ns() - t_fork) / 1e6);

        cpu0 = proc_cpu_ticks(nsd_pid, NULL);
        t_rel = now_ns();
        close(go1[1]); /* go */
        /* each open is bounded by pam_nsjoin's timeout=; a child missing after far more
         * than that is counted by its missing result below */
        got = read_tokens(opened[0], n, strtod(arg_timeout, NULL) * 4 + 60);
        if (got < n)
                progress("%s: only %u of %u logins came back from pam_open_session", key, got, n);
        result_line("%s.opened %u", key, got);
        got = 0;
        t_open = now_ns();
        cpu_open = proc_cpu_ticks(nsd_pid, NULL);
        (void) root_status(&st_peak);
        fds_peak = count_fds(nsd_pid);
        rss_peak = proc_status_kb(nsd_pid, "VmRSS");
        close(go2[1]); /* close them */
        for (;;) {
                struct login_result res;
                if (!read_all(results[0], &res, sizeof(res)))
                        break;
                got++;
                if (res.rc_start != PAM_SUCCESS)
                        samples_error(&open_s, "pam_start_confdir: %s",
                                      pam_strerror(NULL, res.rc_start));
                else if (res.rc_open != PAM_SUCCESS)
                        samples_error(&open_s, "pam_open_session: %s",
                                      pam_strerror(NULL, res.rc_open));
                else if (!res.entered)
                        samples_error(&open_s, "PAM_SUCCESS but not in another namespace");
                else {
                        entered++;
                        samples_add(&open_s, res.open_ns);
                        if (res.rc_close != PAM_SUCCESS)
                                samples_error(&close_s, "pam_close_session: %s",
                                              pam_strerror(NULL, res.rc_close));
                        else
                                samples_add(&close_s, res.close_ns);
                }
        }
        for (unsigned i = got; i < n; i++)
                samples_error(&open_s, "a login child died without a result");
        for (unsigned i = 0; i < n; i++)
                while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR)
                        ;
        t_closed = now_ns();
        close(ready[0]);
        close(opened[0]);
        close(results[0]);
        free(pids);
        wait_nsd_quiet(0, 1, 10);
        cpu1 = proc_cpu_ticks(nsd_pid, NULL);
        (void) root_status(&st1);
        fds1 = count_fds(nsd_pid);
        rss1 = proc_status_kb(nsd_pid, "VmRSS");
        loadavg(la1);

        result_line("%s.logins %u", key, n);
        result_line("%s.reported %u", key, got);
        result_line("%s.entered %u", key, entered);
        samples_report(strcat(strcpy((char[80]) { 0 }, key), ".open"), &open_s);
        samples_report(strcat(strcpy((char[80]) { 0 }, key), ".close"), &close_s);
        result_line("%s.all_open_ms %.1f", key, (t_open - t_rel) / 1e6);
        result_line("%s.all_closed_ms %.1f", key, (t_closed - t_rel) / 1e6);
        result_line("%s.nsd_cpu_open_ms %.1f", key, ticks_ms(cpu_open - cpu0));
        result_line("%s.nsd_cpu_ms %.1f", key, ticks_ms(cpu1 - cpu0));
        result_line("%s.before.namespaces %u", key, st0.namespaces);
        result_line("%s.before.sessions %u", key, st0.sessions);
        result_line("%s.before.nsd_fds %ld", key, fds0);
        result_line("%s.before.nsd_rss_kb %ld", key, rss0);
        result_line("%s.peak.sessions %u", key, st_peak.sessions);
        result_line("%s.peak.connections %u", key, st_peak.connections);
        result_line("%s.peak.nsd_fds %ld", key, fds_peak);
        result_line("%s.peak.nsd_rss_kb %ld", key, rss_peak);
        result_line("%s.after.namespaces %u", key, st1.namespaces);
        result_line("%s.after.sessions %u", key, st1.sessions);
        result_line("%s.after.connections %u", key, st1.connections);
        result_line("%s.after.nsd_fds %ld", key, fds1);
        result_line("%s.after.nsd_rss_kb %ld", key, rss1);
        result_line("%s.load %s %s", key, la0, la1);
        samples_free(&open_s);
        samples_free(&close_s);
}

/* ---- attackers ------------------------------------------------------------------------- */

enum attack_kind { ATTACK_IDLE, ATTACK_SLOW, ATTACK_FLOOD, _ATTACK_MAX };
static const char *const attack_name[_ATTACK_MAX] = { "idle", "slow", "flood" };

/* Counters the attackers share with us (MAP_SHARED). */
struct attack_stats {
        uint64_t connects, connect_errors, refused, dropped, sent, replies;
};

struct shared {
        struct attack_stats a[_ATTACK_MAX];
        /* the victim's samples */
        uint64_t victim_n, victim_errors, victim_stop;
        int victim_first_error;
        uint64_t victim[VICTIM_MAX];
};

static struct shared *shm;

/* In a forked child: drop to uid, and die with the bench. PR_SET_PDEATHSIG only after
 * setresuid(): a change of credentials clears it. */
static void become(uid_t uid) {
        if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
            setresuid(uid, uid, uid) < 0) {
                fprintf(stderr, "nsd-login: cannot become uid %u: %m\n", (unsigned) uid);
                _exit(1);
        }
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != main_pid)
                _exit(0);
}

static int raw_connect(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = 2 };
        int fd;

        strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

/* One attacker process: uid, conns connections, forever (until killed). */
static void attacker(enum attack_kind kind, uid_t uid, unsigned conns) __attribute__((noreturn));
static void attacker(enum attack_kind kind, uid_t uid, unsigned conns) {
        struct attack_stats *as = &shm->a[kind];
        struct pollfd *pfd = calloc(conns, sizeof(*pfd));
        uint64_t *since = calloc(conns, sizeof(*since)), *retry = calloc(conns, sizeof(*retry));
        unsigned *inflight = calloc(conns, sizeof(*inflight));
        uint32_t seq = 1;

        become(uid);
        for (unsigned i = 0; i < conns; i++)
                pfd[i].fd = -1;
        for (;;) {
                uint64_t now = now_ns();

                for (unsigned i = 0; i < conns; i++) {
                        int fd;
                        if (pfd[i].fd >= 0 || now < retry[i])
                                continue;
                        fd = raw_connect(arg_socket);
                        if (fd < 0) {
                                __atomic_fetch_add(&as->connect_errors, 1, __ATOMIC_RELAXED);
                                retry[i] = now + 20 * 1000000u;
                                continue;
                        }
                        __atomic_fetch_add(&as->connects, 1, __ATOMIC_RELAXED);
                        if (kind != ATTACK_IDLE)
                                (void) fcntl(fd, F_SETFL, O_NONBLOCK);
                        pfd[i] = (struct pollfd) { .fd = fd };
                        since[i] = now;
                        inflight[i] = 0;
                }
                for (unsigned i = 0; i < conns; i++) {
                        if (pfd[i].fd < 0)
                                continue;
                        pfd[i].events = kind == ATTACK_IDLE ? POLLIN
                                        : kind == ATTACK_SLOW
                                                ? POLLOUT
                                                : POLLIN | (inflight[i] < FLOOD_INFLIGHT ? POLLOUT
                                                                                         : 0);
                }
                (void) poll(pfd, conns, 50);
                now = now_ns();
                for (unsigned i = 0; i < conns; i++) {
                        bool gone = false;
                        if (pfd[i].fd < 0 || !pfd[i].revents)
                                continue;
                        if (kind == ATTACK_FLOOD && (pfd[i].revents & POLLIN)) {
                                char buf[NSD_MSG_SIZE_MAX], cbuf[CMSG_SPACE(sizeof(int) * 8)];
                                struct iovec iov = { buf, sizeof(buf) };
                                struct msghdr mh = { .msg_iov = &iov,
                                                     .msg_iovlen = 1,
                                                     .msg_control = cbuf,
                                                     .msg_controllen = sizeof(cbuf) };
                                ssize_t k = recvmsg(pfd[i].fd, &mh,
                                                    MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
                                if (k > 0) {
                                        (void) cmsg_take_fds(&mh, NULL, 0);
                                        __atomic_fetch_add(&as->replies, 1, __ATOMIC_RELAXED);
                                        if (inflight[i] > 0)
                                                inflight[i]--;
                                } else if (k == 0 || (errno != EAGAIN && errno != EINTR))
                                        gone = true;
                        } else if (kind == ATTACK_IDLE &&
                                   (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                gone = true;
                        if (!gone && kind != ATTACK_IDLE && (pfd[i].revents & POLLOUT)) {
                                for (;;) {
                                        struct nsd_req_join req;
                                        if (kind == ATTACK_FLOOD && inflight[i] >= FLOOD_INFLIGHT)
                                                break;
                                        nsd_msg_init(&req.hdr, NSD_REQ_JOIN, sizeof(req), seq++);
                                        req.uid = uid;
                                        req.flags = 0;
                                        if (send(pfd[i].fd, &req, sizeof(req),
                                                 MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
                                                if (errno != EAGAIN && errno != EINTR)
                                                        gone = true;
                                                break;
                                        }
                                        __atomic_fetch_add(&as->sent, 1, __ATOMIC_RELAXED);
                                        inflight[i]++;
                                }
                        }
                        if (!gone && (pfd[i].revents & (POLLHUP | POLLERR)))
                                gone = true;
                        if (gone) {
                                close(pfd[i].fd);
                                pfd[i].fd = -1;
                                if (now - since[i] < 200 * 1000000u) {
                                        /* refused (a limit) or dropped at once: not a spin */
                                        __atomic_fetch_add(&as->refused, 1, __ATOMIC_RELAXED);
                                        retry[i] = now + 50 * 1000000u;
                                } else {
                                        __atomic_fetch_add(&as->dropped, 1, __ATOMIC_RELAXED);
                                        retry[i] = now;
                                }
                        }
                }
        }
}

struct attack_group {
        enum attack_kind kind;
        uid_t base;
        unsigned uids, conns;
};

static pid_t *attack_pids;
static size_t n_attack_pids;

static void attackers_start(const struct attack_group *g) {
        attack_pids = realloc(attack_pids, (n_attack_pids + g->uids) * sizeof(*attack_pids));
        for (unsigned i = 0; i < g->uids; i++) {
                pid_t pid = fork();
                if (pid < 0)
                        die("fork", errno);
                if (pid == 0)
                        attacker(g->kind, g->base + i, g->conns);
                attack_pids[n_attack_pids++] = pid;
        }
}

static void attackers_stop(void) {
        for (size_t i = 0; i < n_attack_pids; i++)
                kill(attack_pids[i], SIGKILL);
        for (size_t i = 0; i < n_attack_pids; i++)
                while (waitpid(attack_pids[i], NULL, 0) < 0 && errno == EINTR)
                        ;
        n_attack_pids = 0;
}

/* The victim: an unprivileged uid asking STATUS on the user socket every 100 ms, until told
 * to stop; samples into shm. */
static pid_t victim_start(void) {
        pid_t pid = fork();

        if (pid < 0)
                die("fork", errno);
        if (pid > 0)
                return pid;
        become(arg_victim_uid);
        while (!__atomic_load_n(&shm->victim_stop, __ATOMIC_RELAXED)) {
                struct nsc_status st;
                uint64_t t0 = now_ns();
                nsc_conn *c;
                int r = nsc_connect_timeout(arg_socket, 5000000, &c);

                if (r >= 0) {
                        r = nsc_status(c, &st);
                        nsc_disconnect(c);
                }
                if (r < 0) {
                        if (shm->victim_errors++ == 0)
                                shm->victim_first_error = -r;
                } else if (shm->victim_n < VICTIM_MAX)
                        shm->victim[shm->victim_n++] = now_ns() - t0;
                sleep_ns(100 * 1000000u);
        }
        _exit(0);
}

/* ---- phases ------------------------------------------------------------------------------ */

static void phase(const char *name, unsigned idx) {
        struct attack_group groups[3];
        size_t n_groups = 0;
        struct samples pam_open = { 0 }, pam_close = { 0 }, pam_total = { 0 }, nsc_open = { 0 },
                       nsc_close = { 0 }, status = { 0 }, pu_open = { 0 }, pu_close = { 0 },
                       victim = { 0 };
        unsigned conns_min = ~0u, conns_max = 0, rounds = 0, user = 0;
        long fds_max = 0, rss_max = 0;
        uint64_t cpu0, cpu1, t0, t1, end, ex0, ex1, wait0, wait1;
        long nv0, nv1;
        struct attack_stats a0[_ATTACK_MAX], a1[_ATTACK_MAX];
        char key[64], la0[64], la1[64];
        pid_t vpid;

        snprintf(key, sizeof(key), "phase%u", idx);
        if (strcmp(name, "idle") == 0)
                ;
        else if (strcmp(name, "exhaust") == 0)
                groups[n_groups++] = (struct attack_group) { ATTACK_IDLE, UID_IDLE_BASE,
                                                             arg_exhaust_uids, arg_exhaust_conns };
        else if (strcmp(name, "slow") == 0)
                groups[n_groups++] = (struct attack_group) { ATTACK_SLOW, UID_SLOW_BASE,
                                                             arg_slow_uids, arg_slow_conns };
        else if (strcmp(name, "both") == 0) {
                unsigned k = arg_exhaust_uids > arg_slow_uids ? arg_exhaust_uids - arg_slow_uids
                                                              : 0;
                groups[n_groups++] = (struct attack_group) { ATTACK_IDLE, UID_IDLE_BASE, k,
                                                             arg_exhaust_conns };
                groups[n_groups++] = (struct attack_group) { ATTACK_SLOW, UID_SLOW_BASE,
                                                             arg_slow_uids, arg_slow_conns };
        } else if (strcmp(name, "flood") == 0)
                groups[n_groups++] = (struct attack_group) { ATTACK_FLOOD, UID_FLOOD_BASE,
                                                             arg_flood_uids, 1 };
        else
                die("unknown phase in --phases", EINVAL);

        result_line("%s.name %s", key, name);
        for (size_t g = 0; g < n_groups; g++)
                result_line("%s.attack%zu %s %u uids x %u connections from uid %u", key, g,
                            attack_name[groups[g].kind], groups[g].uids, groups[g].conns,
                            (unsigned) groups[g].base);
        progress("%s: %s (%g s)", key, name, arg_phase_seconds);

        memcpy(a0, shm->a, sizeof(a0));
        for (size_t g = 0; g < n_groups; g++)
                attackers_start(&groups[g]);
        sleep_ns((uint64_t) (arg_settle_seconds * 1e9));

        shm->victim_n = shm->victim_errors = shm->victim_stop = 0;
        shm->victim_first_error = 0;
        vpid = victim_start();
        loadavg(la0);
        cpu0 = proc_cpu_ticks(nsd_pid, NULL);
        proc_sched(nsd_pid, &ex0, &wait0, &nv0);
        t0 = now_ns();
        end = t0 + (uint64_t) (arg_phase_seconds * 1e9);
        while (now_ns() < end) {
                struct nsc_status st;
                uint64_t s0;
                int r;

                one_login(LOGIN_PAM_ROOT, user, &pam_open, &pam_close, &pam_total);
                one_login(LOGIN_NSC, user, &nsc_open, &nsc_close, NULL);
                s0 = now_ns();
                r = root_status(&st);
                if (r < 0)
                        samples_error(&status, "%s", strerror(-r));
                else {
                        samples_add(&status, now_ns() - s0);
                        if (st.connections < conns_min)
                                conns_min = st.connections;
                        if (st.connections > conns_max)
                                conns_max = st.connections;
                }
                one_login(LOGIN_PAM_USER, user, &pu_open, &pu_close, NULL);
                if (rounds % 20 == 0) {
                        long f = count_fds(nsd_pid), m = proc_status_kb(nsd_pid, "VmRSS");
                        if (f > fds_max)
                                fds_max = f;
                        if (m > rss_max)
                                rss_max = m;
                }
                rounds++;
                user++;
                sleep_ns(arg_gap_ms * 1000000u);
        }
        t1 = now_ns();
        cpu1 = proc_cpu_ticks(nsd_pid, NULL);
        proc_sched(nsd_pid, &ex1, &wait1, &nv1);
        loadavg(la1);
        __atomic_store_n(&shm->victim_stop, 1, __ATOMIC_RELAXED);
        while (waitpid(vpid, NULL, 0) < 0 && errno == EINTR)
                ;
        memcpy(a1, shm->a, sizeof(a1));
        attackers_stop();

        for (uint64_t i = 0; i < shm->victim_n; i++)
                samples_add(&victim, shm->victim[i]);
        victim.errors = (unsigned) shm->victim_errors;
        if (victim.errors)
                snprintf(victim.first_error, sizeof(victim.first_error), "%s",
                         strerror(shm->victim_first_error));

        result_line("%s.seconds %.1f", key, (t1 - t0) / 1e9);
        result_line("%s.rounds %u", key, rounds);
        result_line("%s.load %s %s", key, la0, la1);
        result_line("%s.nsd_cpu_pct %.1f", key, ticks_ms(cpu1 - cpu0) / ((t1 - t0) / 1e6) * 100);
        result_line("%s.nsd_main_cpu_pct %.1f", key, (ex1 - ex0) / (double) (t1 - t0) * 100);
        result_line("%s.nsd_main_runq_wait_pct %.1f", key,
                    (wait1 - wait0) / (double) (t1 - t0) * 100);
        result_line("%s.nsd_main_involuntary_switches_per_s %.0f", key,
                    (nv1 - nv0) / ((t1 - t0) / 1e9));
        result_line("%s.nsd_fds_max %ld", key, fds_max);
        result_line("%s.nsd_rss_max_kb %ld", key, rss_max);
        result_line("%s.connections %u %u", key, conns_min == ~0u ? 0 : conns_min, conns_max);
#define REP(s, n) samples_report(strcat(strcpy((char[96]) { 0 }, key), n), &s)
        REP(pam_open, ".pam_root.open");
        REP(pam_close, ".pam_root.close");
        REP(pam_total, ".pam_root.total");
        REP(nsc_open, ".nsc_root.open");
        REP(nsc_close, ".nsc_root.close");
        REP(status, ".status_root");
        REP(pu_open, ".pam_user_socket.open");
        REP(pu_close, ".pam_user_socket.close");
        REP(victim, ".victim_status");
#undef REP
        for (size_t g = 0; g < n_groups; g++) {
                enum attack_kind k = groups[g].kind;
                double secs = (t1 - t0) / 1e9 + arg_settle_seconds;
                /* groups of one kind share counters: report each kind once */
                bool seen = false;
                for (size_t h = 0; h < g; h++)
                        seen |= groups[h].kind == k;
                if (seen)
                        continue;
                result_line("%s.%s.connects %" PRIu64, key, attack_name[k],
                            a1[k].connects - a0[k].connects);
                result_line("%s.%s.connect_errors %" PRIu64, key, attack_name[k],
                            a1[k].connect_errors - a0[k].connect_errors);
                result_line("%s.%s.refused %" PRIu64, key, attack_name[k],
                            a1[k].refused - a0[k].refused);
                result_line("%s.%s.dropped %" PRIu64, key, attack_name[k],
                            a1[k].dropped - a0[k].dropped);
                result_line("%s.%s.sent %" PRIu64, key, attack_name[k], a1[k].sent - a0[k].sent);
                result_line("%s.%s.replies %" PRIu64, key, attack_name[k],
                            a1[k].replies - a0[k].replies);
                result_line("%s.%s.seconds %.1f", key, attack_name[k], secs);
        }
        struct samples *all[] = { &pam_open, &pam_close, &pam_total, &nsc_open, &nsc_close,
                                  &status,   &pu_open,   &pu_close,  &victim };
        for (size_t i = 0; i < ELEMENTSOF(all); i++)
                samples_free(all[i]);
        /* the attackers' connections are gone before the next phase */
        wait_nsd_quiet(0, 1, 10);
}

/* ---- main ------------------------------------------------------------------------------- */

static void usage(FILE *f, int code) __attribute__((noreturn));
static void usage(FILE *f, int code) {
        fprintf(f,
                "usage: nsd-login [OPTIONS] -- NSD-COMMAND [ARG...]\n"
                "Starts NSD-COMMAND, times --bursts rounds of --burst-logins concurrent PAM "
                "logins\n"
                "through pam_nsjoin.so, then root's logins during each phase of --phases while\n"
                "unprivileged uids attack nsd. Prints \"key value\" lines (bench/login/table "
                "draws\n"
                "them). Needs root, nss_wrapper users nb<uid>, and a mount namespace of its own:\n"
                "run it through bench/login/run.\n"
                "Phases: idle (no attacker), exhaust (idle connections fill MaxConnections=),\n"
                "slow (clients that never read their replies), both, flood (512 uids sending\n"
                "as fast as nsd lets them, reading the replies).\n"
                "  --socket PATH --root-socket PATH   nsd's sockets (default /run/nsd/socket, "
                "/run/nsd/root.socket)\n"
                "  --pam-module PATH                  pam_nsjoin.so (required)\n"
                "  --pam-dir DIR                      where the PAM service files go (required)\n"
                "  --timeout SEC                      pam_nsjoin timeout= (default 5)\n"
                "  --uid-base UID --users N           login users nb<uid> (default 100000, 100)\n"
                "  --bursts N --burst-logins N        concurrent-login rounds (default 3 x 1000)\n"
                "  --phases LIST                      default idle,exhaust,slow,both,flood,idle\n"
                "  --phase-seconds S --settle-seconds S   (default 20, 3)\n"
                "  --exhaust-uids N --exhaust-conns N (default 64 x 8, idle, from uid 200000)\n"
                "  --slow-uids N --slow-conns N       (default 16 x 8, from uid 150000)\n"
                "  --flood-uids N                     (default 512, one connection each, from uid "
                "160000)\n"
                "  --victim-uid UID                   unprivileged STATUS every 100 ms (default "
                "170000)\n"
                "  --nsd-nice N                       nsd's nice value (default 0, as "
                "nsd.service)\n"
                "  --nsd-log FILE                     nsd's stdout and stderr\n"
                "  -h, --help\n");
        exit(code);
}

static void help(void) {
        usage(stdout, 0);
}

int main(int argc, char **argv) {
        static const struct bench_option options[] = {
                { "root-socket", BENCH_STRING, &arg_root_socket },
                { "pam-module", BENCH_STRING, &arg_pam_module },
                { "pam-dir", BENCH_STRING, &arg_pam_dir },
                { "timeout", BENCH_STRING, &arg_timeout },
                /* their uids from --uid-base end below the slow attackers' (checked below) */
                { "users", BENCH_UNSIGNED, &arg_users, .lo = 1, .hi = UID_SLOW_BASE },
                /* 0: none */
                { "bursts", BENCH_UNSIGNED, &arg_bursts, .lo = 0, .hi = 1000 },
                /* processes at once, a session each; 1000000: nsd's ceiling of its limits */
                { "burst-logins", BENCH_UNSIGNED, &arg_burst_logins, .lo = 1, .hi = 1000000 },
                { "phases", BENCH_STRING, &arg_phases },
                { "phase-seconds", BENCH_DOUBLE, &arg_phase_seconds },
                { "settle-seconds", BENCH_DOUBLE, &arg_settle_seconds },
                /* a process each, 0: none; at most ATTACKER_UIDS, so that the slow uids
                 * stay below the flood uids and those below the victim's */
                { "exhaust-uids", BENCH_UNSIGNED, &arg_exhaust_uids, .lo = 0, .hi = ATTACKER_UIDS },
                /* an attacker's connections; 1000000: nsd's ceiling of MaxConnections= */
                { "exhaust-conns", BENCH_UNSIGNED, &arg_exhaust_conns, .lo = 1, .hi = 1000000 },
                { "slow-uids", BENCH_UNSIGNED, &arg_slow_uids, .lo = 0, .hi = ATTACKER_UIDS },
                { "slow-conns", BENCH_UNSIGNED, &arg_slow_conns, .lo = 1, .hi = 1000000 },
                { "flood-uids", BENCH_UNSIGNED, &arg_flood_uids, .lo = 0, .hi = ATTACKER_UIDS },
                { "victim-uid", BENCH_UNSIGNED, &arg_victim_uid, .lo = LIST_UID_MIN,
                  .hi = LIST_UID_MAX },
                { "nsd-nice", BENCH_INT, &arg_nsd_nice },
        };
        char *phases, *tok, *save = NULL, la[64];
        unsigned idx = 0;

        optind = bench_parse_options(argc, argv, options, ELEMENTSOF(options), true, help);
        if (optind >= argc || !arg_pam_module || !arg_pam_dir || arg_uid_base > UID_SLOW_BASE ||
            arg_users > UID_SLOW_BASE - arg_uid_base)
                usage(stderr, 2);
        if (geteuid() != 0)
                die("needs root (setns, setuid attackers)", EPERM);
        if (!getenv("NSS_WRAPPER_PASSWD"))
                progress("warning: NSS_WRAPPER_PASSWD is not set: the login users nb%u.. must "
                         "exist",
                         (unsigned) arg_uid_base);

        main_pid = getpid();
        bench_on_die(stop_nsd);
        signal(SIGPIPE, SIG_IGN);
        shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (shm == MAP_FAILED)
                die("mmap", errno);
        own_mntns_ino = mntns_ino();
        /* keep the module mapped: each login child's pam_start() finds it loaded */
        if (!dlopen(arg_pam_module, RTLD_NOW | RTLD_LOCAL))
                die("dlopen of --pam-module failed", ENOENT);
        write_pam_config();

        {
                struct utsname u;
                if (uname(&u) == 0)
                        result_line("host.kernel %s", u.release);
        }
        loadavg(la);
        result_line("host.nproc %ld", sysconf(_SC_NPROCESSORS_ONLN));
        result_line("burst_users %u", arg_users);
        result_line("host.load_start %s", la);
        start_nsd(argv + optind);
        result_line("start.nsd_fds %ld", count_fds(nsd_pid));
        result_line("start.nsd_rss_kb %ld", proc_status_kb(nsd_pid, "VmRSS"));

        for (unsigned b = 1; b <= arg_bursts; b++)
                burst(b);

        phases = strdup(arg_phases);
        for (tok = strtok_r(phases, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                phase(tok, ++idx);
        free(phases);
        result_line("phases %u", idx);

        loadavg(la);
        result_line("host.load_end %s", la);
        result_line("end.nsd_fds %ld", count_fds(nsd_pid));
        result_line("end.nsd_rss_kb %ld", proc_status_kb(nsd_pid, "VmRSS"));
        if (waitpid(nsd_pid, NULL, WNOHANG) == nsd_pid) {
                nsd_pid = -1;
                die("nsd died during the run", ECHILD);
        }
        stop_nsd();
        return 0;
}
