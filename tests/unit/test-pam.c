/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-pam: pam_nsjoin, TAP.
 *
 *  - the pure parts (argument parser, list matching, errno -> PAM mapping);
 *  - dlopen: the module exports pam_sm_open_session/pam_sm_close_session and nothing of ours;
 *  - return codes and log lines through pam_start_confdir() with a service file in a temp dir,
 *    against a fake nsd (this process) speaking nsd-protocol.h on a SOCK_SEQPACKET socket in
 *    that temp dir. PAM runs in a forked, single-threaded child, which captures the module's
 *    pam_syslog() lines through openlog(LOG_PERROR) into a file. The fake nsd hands out the
 *    CURRENT mount namespace, so entering it changes nothing: as root the session succeeds,
 *    as another user setns()/chroot() fail with EPERM and the session is refused.
 *
 * Runs as root and as any other user; leaves nothing behind.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <dirent.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_appl.h>

#include "nsd-protocol.h"
#include "nsjoin-util.h"

#ifndef PAM_NSJOIN_MODULE
#error "PAM_NSJOIN_MODULE must name the built module"
#endif

#define SERVICE "nsjoin-test"

static unsigned n_tests, n_failed;
static char tmpdir[] = "/tmp/test-pam.XXXXXX";
static char sock_path[100], log_path[100], service_path[100];
static const char *user;
static uid_t my_uid;
static gid_t my_gid;
static bool is_root;
static const char *pam_control = "required"; /* of our line in the service file */

static bool ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool ok(bool cond, const char *fmt, ...) {
        va_list ap;

        n_tests++;
        if (!cond)
                n_failed++;
        printf("%s %u - ", cond ? "ok" : "not ok", n_tests);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
        fflush(stdout);
        return cond;
}

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void diag(const char *fmt, ...) {
        va_list ap;

        printf("# ");
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
        fflush(stdout);
}

/* ---- the pure parts ----------------------------------------------------------------------- */

static void test_args(void) {
        struct nsjoin_args a;

        nsjoin_args_init(&a);
        ok(a.mode == NSJOIN_MODE_SETNS && !a.socket && !a.debug && !a.skip_users && !a.only_group,
           "defaults: mode setns, default socket, no debug, nobody skipped, no group");

        ok(nsjoin_args_parse_one(&a, "mode=chroot") == NSJOIN_ARG_OK && a.mode == NSJOIN_MODE_CHROOT,
           "mode=chroot");
        ok(nsjoin_args_parse_one(&a, "mode=setns") == NSJOIN_ARG_OK && a.mode == NSJOIN_MODE_SETNS,
           "mode=setns (a later argument wins)");
        ok(nsjoin_args_parse_one(&a, "mode=bogus") == NSJOIN_ARG_BAD_VALUE, "mode=bogus is a bad value");
        ok(nsjoin_args_parse_one(&a, "mode=") == NSJOIN_ARG_BAD_VALUE, "mode= is a bad value");
        ok(nsjoin_args_parse_one(&a, "socket=/run/x/sock") == NSJOIN_ARG_OK && a.socket &&
           strcmp(a.socket, "/run/x/sock") == 0, "socket=/run/x/sock");
        ok(nsjoin_args_parse_one(&a, "socket=") == NSJOIN_ARG_BAD_VALUE, "empty socket= is a bad value");
        ok(nsjoin_args_parse_one(&a, "socket=relative/sock") == NSJOIN_ARG_BAD_VALUE,
           "a relative socket= is a bad value");
        ok(nsjoin_args_parse_one(&a, "debug") == NSJOIN_ARG_OK && a.debug, "debug");
        ok(nsjoin_args_parse_one(&a, "skip_users=a,b") == NSJOIN_ARG_OK && a.skip_users &&
           strcmp(a.skip_users, "a,b") == 0, "skip_users=a,b");
        ok(nsjoin_args_parse_one(&a, "skip_users=") == NSJOIN_ARG_OK && !a.skip_users,
           "empty skip_users= skips nobody");
        ok(nsjoin_args_parse_one(&a, "only_group=fuse") == NSJOIN_ARG_OK && a.only_group &&
           strcmp(a.only_group, "fuse") == 0, "only_group=fuse");
        ok(nsjoin_args_parse_one(&a, "only_group=") == NSJOIN_ARG_BAD_VALUE, "empty only_group= is a bad value");
        ok(nsjoin_args_parse_one(&a, "frobnicate") == NSJOIN_ARG_UNKNOWN, "frobnicate is unknown");
        ok(nsjoin_args_parse_one(&a, "modex=setns") == NSJOIN_ARG_UNKNOWN, "modex=setns is unknown, not mode=");
        ok(nsjoin_args_parse_one(&a, "debug=1") == NSJOIN_ARG_UNKNOWN, "debug=1 is unknown");

        ok(nsjoin_name_in_list("alice,bob,carol", "bob"), "bob in alice,bob,carol");
        ok(nsjoin_name_in_list("alice,bob,carol", "alice") && nsjoin_name_in_list("alice,bob,carol", "carol"),
           "first and last entries match");
        ok(!nsjoin_name_in_list("alice,bob,carol", "bo") && !nsjoin_name_in_list("alice,bob", "bobby"),
           "prefixes and longer names do not match");
        ok(!nsjoin_name_in_list("alice,,bob", "") && !nsjoin_name_in_list(NULL, "bob"),
           "empty names and lists match nothing");
        ok(nsjoin_name_in_list("alice,,bob,", "bob"), "empty entries are skipped");
}

static void test_errno_map(void) {
        const char *e = "x";

        ok(nsjoin_errno_to_pam(NSJOIN_STEP_JOIN, 0, &e) == PAM_SUCCESS && e == NULL, "0 -> PAM_SUCCESS");
        ok(nsjoin_errno_to_pam(NSJOIN_STEP_JOIN, -ENXIO, &e) == PAM_IGNORE && e,
           "JOIN -ENXIO (not managed) -> PAM_IGNORE");
        ok(nsjoin_errno_to_pam(NSJOIN_STEP_JOIN, -EPERM, &e) == PAM_SESSION_ERR && strstr(e, "refused"),
           "JOIN -EPERM -> PAM_SESSION_ERR, 'refused'");
        ok(nsjoin_errno_to_pam(NSJOIN_STEP_JOIN, -EUSERS, &e) == PAM_SESSION_ERR && strstr(e, "limit"),
           "JOIN -EUSERS -> PAM_SESSION_ERR, 'limit'");
        ok(nsjoin_errno_to_pam(NSJOIN_STEP_CONNECT, -ECONNREFUSED, &e) == PAM_SESSION_ERR &&
           strcmp(e, "is not running") == 0, "connect -ECONNREFUSED -> 'is not running'");
        ok(nsjoin_errno_to_pam(NSJOIN_STEP_CONNECT, -ENXIO, &e) == PAM_SESSION_ERR,
           "-ENXIO means 'not managed' only at JOIN");
        ok(nsjoin_errno_to_pam(NSJOIN_STEP_ENTER_SETNS, -EINVAL, &e) == PAM_SESSION_ERR &&
           strstr(e, "multi-threaded") && strstr(e, "mode=chroot"),
           "setns -EINVAL explains multi-threaded callers and suggests mode=chroot");
        ok(nsjoin_errno_to_pam(NSJOIN_STEP_SESSION_OPEN, -ENOMEM, &e) == PAM_BUF_ERR, "-ENOMEM -> PAM_BUF_ERR");
}

/* ---- dlopen ------------------------------------------------------------------------------- */

static void test_dlopen(void) {
        void *h = dlopen(PAM_NSJOIN_MODULE, RTLD_NOW | RTLD_LOCAL);
        static const char *const hidden[] = {
                "nsjoin_args_parse_one", "nsjoin_args_init", "nsjoin_name_in_list",
                "nsjoin_errno_to_pam", "pam_sm_authenticate", "pam_sm_setcred",
                "pam_sm_acct_mgmt", "pam_sm_chauthtok",
        };

        if (!ok(h != NULL, "dlopen %s", PAM_NSJOIN_MODULE)) {
                diag("%s", dlerror());
                return;
        }
        ok(dlsym(h, "pam_sm_open_session") && dlsym(h, "pam_sm_close_session"),
           "pam_sm_open_session and pam_sm_close_session resolve");
        for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++) {
                void *p = dlsym(h, hidden[i]);
                Dl_info info;

                /* a symbol of the same name in a dependency is no export of ours */
                if (p && dladdr(p, &info) && info.dli_fname && !strstr(info.dli_fname, "pam_nsjoin"))
                        p = NULL;
                ok(p == NULL, "%s is not exported", hidden[i]);
        }
        dlclose(h);
}

/* ---- the fake nsd ------------------------------------------------------------------------- */

struct fake_config {
        int join_error;           /* 0 or -errno */
        const char *join_message; /* with join_error */
        int session_open_error;   /* 0 or -errno */
        int session_close_error;  /* 0 or -errno */
        uint64_t session_id;
};

struct fake_record {
        unsigned connections, joins, session_opens, session_closes, bad;
        uint32_t join_uid;
        uint32_t so_uid, so_pid;
        bool so_pidfd;
        char so_service[NSD_SERVICE_MAX];
        uint64_t sc_id;
        uint32_t sc_uid, sc_pid;
};

/* what the PAM child reports */
struct child_result {
        int start_rc, open_rc, close_rc;
        int nsfs_left_open; /* descriptors of a mount namespace still open after open_session */
        int thread_rc;
};

union rx_buf {
        struct nsd_msg_header hdr;
        struct nsd_req_join join;
        struct nsd_req_session_open session_open;
        struct nsd_req_session_close session_close;
        char bytes[NSD_MSG_SIZE_MAX + 1];
};

static int send_msg(int fd, const void *msg, size_t len, const int *fds, size_t n_fds) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int) * NSD_MSG_FDS_MAX)];
        } control;
        struct iovec iov = { .iov_base = (void *) msg, .iov_len = len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

        if (n_fds > 0) {
                struct cmsghdr *cm;

                memset(&control, 0, sizeof(control));
                mh.msg_control = control.buf;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                cm = CMSG_FIRSTHDR(&mh);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
        }
        return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t) len ? 0 : -errno;
}

static void send_error(int fd, const struct nsd_msg_header *req, int error, const char *message) {
        struct nsd_rep_error e;

        nsd_msg_init(&e.hdr, NSD_REP_ERROR, sizeof(e), req->seq);
        e.hdr.error = error;
        e.request_type = req->type;
        snprintf(e.message, sizeof(e.message), "%s", message ?: "");
        (void) send_msg(fd, &e, sizeof(e), NULL, 0);
}

/* Answer one request on fd; returns < 0 when the connection is done. */
static int fake_serve_one(int fd, const struct fake_config *cfg, struct fake_record *rec) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int) * 4)];
        } control;
        union rx_buf rx;
        struct iovec iov = { .iov_base = rx.bytes, .iov_len = sizeof(rx.bytes) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                             .msg_controllen = sizeof(control.buf) };
        int passed_fd = -1;
        const char *why;
        ssize_t n;

        n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
        if (n <= 0)
                return -1;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
                        for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                                int x;

                                memcpy(&x, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                                if (passed_fd < 0)
                                        passed_fd = x;
                                else
                                        close(x);
                        }

        if (nsd_msg_check(rx.bytes, (size_t) n, 1, &why) < 0) {
                rec->bad++;
                diag("fake nsd: bad request: %s", why);
                if (passed_fd >= 0)
                        close(passed_fd);
                return -1;
        }

        switch (rx.hdr.type) {
        case NSD_REQ_JOIN: {
                struct nsd_rep_join rep;
                struct stat st;
                int fds[2];

                rec->joins++;
                rec->join_uid = rx.join.uid;
                if (cfg->join_error) {
                        send_error(fd, &rx.hdr, cfg->join_error, cfg->join_message);
                        break;
                }
                fds[0] = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                fds[1] = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
                if (fds[0] < 0 || fds[1] < 0 || fstat(fds[1], &st) < 0) {
                        send_error(fd, &rx.hdr, -EIO, "fake nsd cannot open its namespace");
                } else {
                        nsd_msg_init(&rep.hdr, NSD_REP_JOIN, sizeof(rep), rx.hdr.seq);
                        rep.uid = rx.join.uid;
                        rep.ns_flags = NSD_NS_CREATED;
                        rep.ns_inode = st.st_ino;
                        (void) send_msg(fd, &rep, sizeof(rep), fds, 2);
                }
                if (fds[0] >= 0)
                        close(fds[0]);
                if (fds[1] >= 0)
                        close(fds[1]);
                break;
        }
        case NSD_REQ_SESSION_OPEN: {
                struct nsd_rep_session_open rep;

                rec->session_opens++;
                rec->so_uid = rx.session_open.uid;
                rec->so_pid = rx.session_open.pid;
                rec->so_pidfd = (rx.session_open.flags & NSD_SESSION_PIDFD) && passed_fd >= 0;
                memcpy(rec->so_service, rx.session_open.service, sizeof(rec->so_service));
                rec->so_service[sizeof(rec->so_service) - 1] = 0;
                if (cfg->session_open_error) {
                        send_error(fd, &rx.hdr, cfg->session_open_error, "fake nsd: no more sessions");
                        break;
                }
                nsd_msg_init(&rep.hdr, NSD_REP_SESSION_OPEN, sizeof(rep), rx.hdr.seq);
                rep.session_id = cfg->session_id;
                rep.sessions = 1;
                (void) send_msg(fd, &rep, sizeof(rep), NULL, 0);
                break;
        }
        case NSD_REQ_SESSION_CLOSE: {
                struct nsd_rep_session_close rep;

                rec->session_closes++;
                rec->sc_id = rx.session_close.session_id;
                rec->sc_uid = rx.session_close.uid;
                rec->sc_pid = rx.session_close.pid;
                if (cfg->session_close_error) {
                        send_error(fd, &rx.hdr, cfg->session_close_error, "fake nsd: no such session");
                        break;
                }
                nsd_msg_init(&rep.hdr, NSD_REP_SESSION_CLOSE, sizeof(rep), rx.hdr.seq);
                (void) send_msg(fd, &rep, sizeof(rep), NULL, 0);
                break;
        }
        default:
                send_error(fd, &rx.hdr, -EOPNOTSUPP, "fake nsd: not implemented");
        }
        if (passed_fd >= 0)
                close(passed_fd);
        return 0;
}

/* ---- one PAM conversation in a child ------------------------------------------------------ */

static int conv_none(int n, const struct pam_message **msg, struct pam_response **resp, void *data) {
        return PAM_CONV_ERR;
}

static int count_nsfs_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        int n = 0;

        if (!d)
                return -1;
        while ((de = readdir(d))) {
                char p[300], target[128];
                ssize_t l;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(p, sizeof(p), "/proc/self/fd/%s", de->d_name);
                l = readlink(p, target, sizeof(target) - 1);
                if (l > 0) {
                        target[l] = 0;
                        if (strncmp(target, "mnt:[", 5) == 0)
                                n++;
                }
        }
        closedir(d);
        return n;
}

static void *idle_thread(void *p) {
        pause();
        return NULL;
}

static void child_run(int result_fd, bool threaded) {
        struct pam_conv conv = { .conv = conv_none };
        struct child_result res = { .start_rc = -1, .open_rc = -1, .close_rc = -1 };
        pam_handle_t *pamh = NULL;
        pthread_t t;
        int logfd;

        logfd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (logfd < 0 || dup2(logfd, STDERR_FILENO) < 0)
                _exit(2);
        close(logfd);
        /* pam_syslog() lines also go to stderr, i.e. the log file */
        openlog("test-pam", LOG_PERROR, LOG_AUTHPRIV);

        if (threaded) {
                res.thread_rc = pthread_create(&t, NULL, idle_thread, NULL);
        }

        res.start_rc = pam_start_confdir(SERVICE, user, &conv, tmpdir, &pamh);
        if (res.start_rc == PAM_SUCCESS) {
                res.open_rc = pam_open_session(pamh, 0);
                res.nsfs_left_open = count_nsfs_fds();
                res.close_rc = pam_close_session(pamh, 0);
                pam_end(pamh, res.open_rc);
        }
        if (write(result_fd, &res, sizeof(res)) != sizeof(res))
                _exit(3);
        _exit(0);
}

/* The log the child wrote, or "" */
static char log_text[16384];

static void log_read(void) {
        FILE *f = fopen(log_path, "re");
        size_t n = 0;

        if (f) {
                n = fread(log_text, 1, sizeof(log_text) - 1, f);
                fclose(f);
        }
        log_text[n] = 0;
}

static bool log_has(const char *s) {
        return strstr(log_text, s) != NULL;
}

/*
 * Write the service file (`session CONTROL MODULE ARGS` + extra lines), start the fake nsd,
 * run PAM in a child, serve until the child is gone. args may contain @SOCKET@ once, which is
 * replaced by the fake nsd's socket path.
 */
static int run_case(const char *args, const char *extra, const struct fake_config *cfg,
                    struct fake_record *rec, struct child_result *res, bool threaded) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int lfd, pfd[2], conns[8], n_conns = 0, status;
        char argbuf[512];
        const char *at;
        FILE *f;
        pid_t pid;
        bool got = false;

        memset(rec, 0, sizeof(*rec));
        memset(res, 0, sizeof(*res));
        log_text[0] = 0;

        at = strstr(args, "@SOCKET@");
        if (at)
                snprintf(argbuf, sizeof(argbuf), "%.*s%s%s", (int) (at - args), args, sock_path, at + 8);
        else
                snprintf(argbuf, sizeof(argbuf), "%s", args);

        f = fopen(service_path, "we");
        if (!f)
                return -errno;
        fprintf(f, "session %s %s %s\n%s", pam_control, PAM_NSJOIN_MODULE, argbuf, extra ?: "");
        fclose(f);

        lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (lfd < 0)
                return -errno;
        unlink(sock_path);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
        if (bind(lfd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(lfd, 8) < 0) {
                close(lfd);
                return -errno;
        }
        /* nobody may connect as another user: only this test's own socket in its 0700 dir */
        if (pipe2(pfd, O_CLOEXEC) < 0) {
                close(lfd);
                return -errno;
        }
        fflush(stdout);
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                close(lfd);
                close(pfd[0]);
                child_run(pfd[1], threaded);
        }
        close(pfd[1]);

        for (;;) {
                struct pollfd p[10];
                int np = 0, r;

                p[np++] = (struct pollfd){ .fd = pfd[0], .events = POLLIN };
                p[np++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
                for (int i = 0; i < n_conns; i++)
                        p[np++] = (struct pollfd){ .fd = conns[i], .events = POLLIN };
                r = poll(p, (nfds_t) np, 20000);
                if (r <= 0) {
                        diag("timeout waiting for the PAM child");
                        kill(pid, SIGKILL);
                        break;
                }
                if (p[1].revents & POLLIN) {
                        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

                        if (c >= 0 && n_conns < 8) {
                                conns[n_conns++] = c;
                                rec->connections++;
                        } else if (c >= 0)
                                close(c);
                }
                for (int i = 0; i < n_conns; i++)
                        if (p[2 + i].revents) {
                                if (fake_serve_one(conns[i], cfg, rec) < 0) {
                                        close(conns[i]);
                                        conns[i] = conns[--n_conns];
                                        break; /* indices moved; poll again */
                                }
                        }
                if (p[0].revents) {
                        ssize_t n = read(pfd[0], res, sizeof(*res));

                        if (n == sizeof(*res))
                                got = true;
                        break;
                }
        }
        for (int i = 0; i < n_conns; i++)
                close(conns[i]);
        close(lfd);
        close(pfd[0]);
        unlink(sock_path);
        (void) waitpid(pid, &status, 0);
        log_read();
        if (!got) {
                diag("PAM child died: status 0x%x", (unsigned) status);
                return -EIO;
        }
        if (res->start_rc != PAM_SUCCESS)
                diag("pam_start_confdir: %d", res->start_rc);
        return 0;
}

static void show_log(void) {
        char *save = NULL;

        for (char *l = strtok_r(log_text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
                diag("log: %s", l);
}

#define CHECK_RC(what, got, want) \
        ok((got) == (want), "%s: %s is %d (%s)", case_name, what, (got), #want)

static const struct fake_config cfg_ok = { .session_id = 4242 };

/* After a failed open_session, our close_session finds nothing registered, says so (with
 * debug) and returns PAM_SUCCESS; libpam's frozen session chain still reports the stack's
 * close as failed (PAM_MUST_FAIL_CODE = PAM_PERM_DENIED), whatever the module returns. */
static void close_after_failed_open(const char *case_name, const struct fake_record *rec,
                                    const struct child_result *res) {
        ok(log_has("no session registered with nsd, nothing to close"),
           "%s: close_session: nothing registered", case_name) || (show_log(), 0);
        ok(rec->session_closes == 0, "%s: no SESSION_CLOSE for a session never opened", case_name);
        CHECK_RC("close (libpam's frozen chain)", res->close_rc, PAM_PERM_DENIED);
}

static void case_no_nsd(void) {
        const char *case_name = "socket=/nonexistent";
        struct fake_record rec;
        struct child_result res;
        char want[256];

        run_case("debug socket=/nonexistent/nsd.sock", NULL, &cfg_ok, &rec, &res, false);
        CHECK_RC("open", res.open_rc, PAM_SESSION_ERR);
        snprintf(want, sizeof(want),
                 "cannot join the mount namespace of user '%s' (uid %u): nsd at /nonexistent/nsd.sock is not running (No such file or directory)",
                 user, (unsigned) my_uid);
        ok(log_has(want), "%s: one clear error line", case_name) || (diag("want: %s", want), show_log(), 0);
        close_after_failed_open(case_name, &rec, &res);
}

static void case_bad_values(void) {
        static const struct {
                const char *args, *want;
        } cases[] = {
                { "mode=bogus socket=@SOCKET@", "bad argument 'mode=bogus' (expected mode=setns or mode=chroot)" },
                { "socket=", "bad argument 'socket='" },
                { "only_group= socket=@SOCKET@", "bad argument 'only_group='" },
                { "only_group=no-such-group-nsjoin socket=@SOCKET@", "bad argument 'only_group=no-such-group-nsjoin' (no such group)" },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const char *case_name = cases[i].args;
                struct fake_record rec;
                struct child_result res;

                run_case(cases[i].args, NULL, &cfg_ok, &rec, &res, false);
                CHECK_RC("open", res.open_rc, PAM_SESSION_ERR);
                ok(log_has(cases[i].want), "%s: log names the argument", case_name) || (show_log(), 0);
                ok(rec.connections == 0, "%s: nsd was never asked", case_name);
        }
}

static void case_not_managed(void) {
        const struct fake_config cfg = { .join_error = -ENXIO, .join_message = "uid below 1000" };
        const char *case_name = "frobnicate + JOIN -ENXIO";
        struct fake_record rec;
        struct child_result res;

        /* The module alone answers PAM_IGNORE; libpam makes a stack in which every module
         * ignored fail (PAM_MUST_FAIL_CODE = PAM_PERM_DENIED). Real stacks always have other
         * session modules (common-session); the second case shows that. */
        run_case("frobnicate socket=@SOCKET@", NULL, &cfg, &rec, &res, false);
        CHECK_RC("open, module alone", res.open_rc, PAM_PERM_DENIED);
        ok(rec.joins == 1 && rec.join_uid == my_uid, "%s: JOIN asked for uid %u", case_name, (unsigned) my_uid);
        ok(log_has("unknown argument 'frobnicate', ignoring"), "%s: unknown argument warned", case_name) ||
                (show_log(), 0);
        ok(!log_has("does not manage"), "%s: no debug line without debug", case_name) || (show_log(), 0);
        ok(!log_has("cannot join"), "%s: not managed is no error", case_name) || (show_log(), 0);

        run_case("frobnicate debug socket=@SOCKET@", "session optional pam_permit.so\n", &cfg, &rec, &res, false);
        CHECK_RC("open, + pam_permit", res.open_rc, PAM_SUCCESS);
        CHECK_RC("close, + pam_permit", res.close_rc, PAM_SUCCESS);
        ok(log_has("nsd's policy does not manage user"), "%s: debug line with debug", case_name) || (show_log(), 0);
        ok(rec.session_opens == 0 && rec.session_closes == 0, "%s: no session registered", case_name);
}

static void case_refused(void) {
        const struct fake_config cfg = { .join_error = -EPERM,
                                         .join_message = "only root may join another user's namespace" };
        const char *case_name = "JOIN -EPERM";
        struct fake_record rec;
        struct child_result res;
        char want[512];

        run_case("socket=@SOCKET@", "session optional pam_permit.so\n", &cfg, &rec, &res, false);
        CHECK_RC("open", res.open_rc, PAM_SESSION_ERR);
        snprintf(want, sizeof(want),
                 "cannot join the mount namespace of user '%s' (uid %u): nsd refused the request (Operation not permitted); nsd says: only root may join another user's namespace",
                 user, (unsigned) my_uid);
        ok(log_has(want), "%s: error line carries nsd's reason", case_name) || (diag("want: %s", want), show_log(), 0);
        ok(rec.session_opens == 0, "%s: no session registered", case_name);

        /* the same with `session optional`: the login goes on, unchanged, the error logged */
        case_name = "session optional + JOIN -EPERM";
        pam_control = "optional";
        run_case("socket=@SOCKET@", "session required pam_permit.so\n", &cfg, &rec, &res, false);
        pam_control = "required";
        CHECK_RC("open", res.open_rc, PAM_SUCCESS);
        ok(log_has(want), "%s: the error is still logged", case_name) || (show_log(), 0);
        ok(res.nsfs_left_open == 0, "%s: no namespace descriptor left open", case_name);
}

static void case_join(const char *args, bool chroot_mode) {
        const char *case_name = args;
        struct fake_record rec;
        struct child_result res;

        run_case(args, NULL, &cfg_ok, &rec, &res, false);
        ok(rec.joins == 1 && rec.join_uid == my_uid, "%s: JOIN for uid %u", case_name, (unsigned) my_uid);
        if (is_root) {
                CHECK_RC("open as root", res.open_rc, PAM_SUCCESS) || (show_log(), 0);
                ok(rec.session_opens == 1 && rec.so_uid == my_uid && rec.so_pid > 1 &&
                   strcmp(rec.so_service, SERVICE) == 0,
                   "%s: SESSION_OPEN uid %u pid %u service '%s'", case_name, rec.so_uid, rec.so_pid,
                   rec.so_service);
                ok(rec.so_pidfd, "%s: a pidfd came with SESSION_OPEN", case_name);
                CHECK_RC("close", res.close_rc, PAM_SUCCESS);
                ok(rec.session_closes == 1 && rec.sc_id == 4242 && rec.sc_uid == my_uid &&
                   rec.sc_pid == rec.so_pid,
                   "%s: SESSION_CLOSE id %llu uid %u pid %u", case_name,
                   (unsigned long long) rec.sc_id, rec.sc_uid, rec.sc_pid);
                if (chroot_mode)
                        ok(log_has("by fchdir+chroot") || log_has("by setns(root directory)"),
                           "%s: debug line says how it entered", case_name) || (show_log(), 0);
                else
                        ok(log_has("by setns(nsfs)"), "%s: debug line says setns", case_name) || (show_log(), 0);
        } else {
                CHECK_RC("open as non-root", res.open_rc, PAM_SESSION_ERR);
                ok(log_has(chroot_mode ? "chroot into the namespace root needs CAP_SYS_CHROOT (Operation not permitted)"
                                       : "setns() needs CAP_SYS_ADMIN and CAP_SYS_CHROOT (Operation not permitted)"),
                   "%s: error line says why", case_name) || (show_log(), 0);
                ok(rec.session_opens == 0, "%s: no session registered after a failed enter", case_name);
                close_after_failed_open(case_name, &rec, &res);
        }
        ok(res.nsfs_left_open == 0, "%s: no namespace descriptor left open in the login", case_name);
}

static void case_threaded(void) {
        const char *case_name = "multi-threaded caller";
        struct fake_record rec;
        struct child_result res;

        if (!is_root) {
                ok(true, "# SKIP %s: setns needs root", case_name);
                return;
        }
        run_case("socket=@SOCKET@", NULL, &cfg_ok, &rec, &res, true);
        CHECK_RC("open, mode=setns", res.open_rc, PAM_SESSION_ERR);
        ok(log_has("multi-threaded") && log_has("mode=chroot"), "%s: log suggests mode=chroot", case_name) ||
                (show_log(), 0);
        ok(rec.session_opens == 0, "%s: no session registered", case_name);

        run_case("mode=chroot socket=@SOCKET@", NULL, &cfg_ok, &rec, &res, true);
        CHECK_RC("open, mode=chroot", res.open_rc, PAM_SUCCESS) || (show_log(), 0);
        ok(rec.session_opens == 1 && rec.session_closes == 1, "%s: mode=chroot registered and closed", case_name);
}

static void case_session_errors(void) {
        const char *case_name = "SESSION_OPEN refused";
        const struct fake_config cfg = { .session_id = 7, .session_open_error = -EUSERS };
        const struct fake_config cfg2 = { .session_id = 7, .session_close_error = -ENOENT };
        struct fake_record rec;
        struct child_result res;

        if (!is_root) {
                ok(true, "# SKIP session errors: entering needs root");
                return;
        }
        run_case("socket=@SOCKET@", NULL, &cfg, &rec, &res, false);
        CHECK_RC("open", res.open_rc, PAM_SUCCESS);
        ok(log_has("but registering the session with nsd failed") && log_has("fake nsd: no more sessions"),
           "%s: warning with nsd's reason", case_name) || (show_log(), 0);
        ok(rec.session_closes == 0, "%s: close sends nothing", case_name);

        case_name = "SESSION_CLOSE refused";
        run_case("socket=@SOCKET@", NULL, &cfg2, &rec, &res, false);
        CHECK_RC("close", res.close_rc, PAM_SUCCESS);
        ok(rec.session_closes == 1 && log_has("unregistering the session with nsd failed") &&
           log_has("ignoring"), "%s: warning, ignoring", case_name) || (show_log(), 0);
}

static void case_skip(void) {
        char args[256];
        const char *case_name = "skip_users";
        struct fake_record rec;
        struct child_result res;
        struct group *gr;
        const char *other_group = NULL;
        gid_t groups[256];
        int ng = 256;

        snprintf(args, sizeof(args), "skip_users=someone,%s,else socket=@SOCKET@", user);
        run_case(args, "session optional pam_permit.so\n", &cfg_ok, &rec, &res, false);
        CHECK_RC("open", res.open_rc, PAM_SUCCESS);
        ok(rec.connections == 0, "%s: nsd was never asked", case_name);
        ok(!log_has("pam_nsjoin("), "%s: silent without debug", case_name) || (show_log(), 0);

        snprintf(args, sizeof(args), "debug skip_users=%s socket=@SOCKET@", user);
        run_case(args, "session optional pam_permit.so\n", &cfg_ok, &rec, &res, false);
        ok(log_has("is in skip_users"), "%s: debug line with debug", case_name) || (show_log(), 0);

        /* only_group: a group the user is not in, then the user's primary group */
        case_name = "only_group";
        if (getgrouplist(user, my_gid, groups, &ng) < 0)
                ng = 0;
        for (const char *const *c = (const char *const[]){ "root", "nogroup", "daemon", "bin", "sys", NULL }; *c; c++) {
                bool member = false;

                gr = getgrnam(*c);
                if (!gr)
                        continue;
                for (int i = 0; i < ng; i++)
                        if (groups[i] == gr->gr_gid)
                                member = true;
                if (!member && gr->gr_gid != my_gid) {
                        other_group = *c;
                        break;
                }
        }
        if (other_group) {
                snprintf(args, sizeof(args), "only_group=%s socket=@SOCKET@", other_group);
                run_case(args, "session optional pam_permit.so\n", &cfg_ok, &rec, &res, false);
                CHECK_RC("open, not a member", res.open_rc, PAM_SUCCESS);
                ok(rec.connections == 0, "%s=%s: nsd was never asked", case_name, other_group);
        } else
                ok(true, "# SKIP only_group: no group found that '%s' is not in", user);

        gr = getgrgid(my_gid);
        if (gr) {
                snprintf(args, sizeof(args), "only_group=%s socket=@SOCKET@", gr->gr_name);
                run_case(args, NULL, &cfg_ok, &rec, &res, false);
                ok(rec.joins == 1, "%s=%s (primary group): the login joins", case_name, gr->gr_name);
                CHECK_RC("open, a member", res.open_rc, is_root ? PAM_SUCCESS : PAM_SESSION_ERR);
        } else
                ok(true, "# SKIP only_group: no group entry for gid %u", (unsigned) my_gid);
}

int main(void) {
        struct passwd *pw;

        my_uid = geteuid();
        is_root = my_uid == 0;
        pw = getpwuid(my_uid);
        if (!pw) {
                printf("1..0 # SKIP no passwd entry for uid %u\n", (unsigned) my_uid);
                return 0;
        }
        user = strdup(pw->pw_name);
        my_gid = pw->pw_gid;
        diag("running as '%s' (uid %u)%s", user, (unsigned) my_uid, is_root ? ", root" : "");

        if (!mkdtemp(tmpdir)) {
                printf("Bail out! mkdtemp: %s\n", strerror(errno));
                return 1;
        }
        snprintf(sock_path, sizeof(sock_path), "%s/nsd.sock", tmpdir);
        snprintf(log_path, sizeof(log_path), "%s/log", tmpdir);
        snprintf(service_path, sizeof(service_path), "%s/%s", tmpdir, SERVICE);

        test_args();
        test_errno_map();
        test_dlopen();
        case_no_nsd();
        case_bad_values();
        case_not_managed();
        case_refused();
        case_join("debug socket=@SOCKET@", false);
        case_join("debug mode=chroot socket=@SOCKET@", true);
        case_threaded();
        case_session_errors();
        case_skip();

        unlink(service_path);
        unlink(log_path);
        unlink(sock_path);
        if (rmdir(tmpdir) < 0)
                diag("cannot remove %s: %s", tmpdir, strerror(errno));
        printf("1..%u\n", n_tests);
        return n_failed ? 1 : 0;
}
