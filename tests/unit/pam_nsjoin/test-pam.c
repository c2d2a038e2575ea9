/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-pam: pam_nsjoin, TAP.
 *
 *  - the pure parts (argument parser, uid and timeout values, list matching, errno -> PAM);
 *  - dlopen: the module exports pam_sm_open_session/pam_sm_close_session and nothing of ours;
 *  - return codes and log lines through pam_start_confdir() with a service file in a temp
 *    dir, against the shared fake nsd (fake-nsd.h, served by this process) on a socket in
 *    that dir. PAM runs in a forked, single-threaded child, which captures the module's
 *    pam_syslog() lines through openlog(LOG_PERROR) into a file. The fake nsd hands out the
 *    child's OWN mount namespace, so entering it changes nothing: as root the session
 *    succeeds, as another user setns()/chroot() fail with EPERM and the session is refused.
 *  - as root, in a private mount namespace of the child: which socket the module picks
 *    without socket= (root's, else the user socket), and the managed range from
 *    /etc/login.defs (a file of ours bind-mounted there).
 *
 * The users are nss_wrapper's (meson sets LD_PRELOAD and NSS_WRAPPER_*; the files are
 * written here into argv[1]), so the host's accounts play no part. Runs as root and as any
 * other user; leaves nothing behind but argv[1]'s two files.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_appl.h>

#include "cleanup.h"
#include "fake-nsd.h"
#include "nsd-protocol.h"
#include "nsjoin-util.h"
#include "tap.h"

#ifndef PAM_NSJOIN_MODULE
#error "PAM_NSJOIN_MODULE must name the built module"
#endif
#ifndef PAM_NSJOIN_PROFILE
#error "PAM_NSJOIN_PROFILE must name debian/pam-configs/nsjoin"
#endif

#define SERVICE "nsjoin-test"

/* nss_wrapper's users: managed by the module's defaults (1000..60000) or not */
#define ALICE_UID 1500 /* managed */
#define BOB_UID 1600   /* managed, member of group fuse */
#define SYS_UID 500    /* below the range */
#define HIGH_UID 70000 /* above the range */
#define MID_UID 2500   /* inside a narrower login.defs range */

static char tmpdir[] = "/tmp/test-pam.XXXXXX";
static char sock_path[100], log_path[100], service_path[100], defs_path[100], dead_path[100],
        stopped_path[100], made_path[100], chroot_path[100];
static bool is_root;

/* ---- the pure parts ----------------------------------------------------------------------- */

/* The name of a PAM return code the tests expect (for the TAP lines). */
static const char *pam_code_name(int code) {
#define PAM_CODE(c) \
        { c, #c }
        static const struct {
                int code;
                const char *name;
        } names[] = { PAM_CODE(PAM_SUCCESS), PAM_CODE(PAM_SESSION_ERR), PAM_CODE(PAM_PERM_DENIED),
                      PAM_CODE(PAM_IGNORE), PAM_CODE(PAM_BUF_ERR) };
#undef PAM_CODE

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (names[i].code == code)
                        return names[i].name;
        return "another code";
}

/* Does arg parse as a good argument into *a? */
static bool parse_ok(struct nsjoin_args *a, const char *arg) {
        return nsjoin_args_parse_one(a, arg, NULL) == NSJOIN_ARG_OK;
}

static void test_args(void) {
        static const struct {
                const char *arg;
                uint64_t usec;
        } timeouts[] = {
                { "timeout=2", 2000000 },
                { "timeout=0.25", 250000 },
                { "timeout=300", 300000000 }, /* the most */
        };
        static const struct {
                const char *arg, *hint; /* hint: a part of the hint it must give, or NULL */
        } bad[] = {
                { "mode=bogus", "mode=setns or mode=chroot" },
                { "mode=", NULL },
                { "socket=", NULL },
                { "socket=relative/sock", NULL },
                { "only_group=", NULL },
                { "min_uid=0", "uid" },         /* uid 0 is never managed */
                { "max_uid=4294967295", NULL }, /* (uid_t) -1 */
                /* min_uid/max_uid take plain decimals only */
                { "max_uid=1e3", NULL },
                { "min_uid= 1000", NULL },
                { "min_uid=-1", NULL },
                { "timeout=0", "seconds" }, /* it would mean forever */
                /* beyond 300 s, not a number, a decimal comma, a bare dot */
                { "timeout=300.5", NULL },
                { "timeout=abc", NULL },
                { "timeout=1,5", NULL },
                { "timeout=.5", NULL },
                { "timeout=5.", NULL },
                { "timeout=", NULL },
                { "unmanaged=yes", "unmanaged=leave or unmanaged=stay" },
        };
        /* modex= is not mode=, debug takes no value */
        static const char *const unknown[] = { "frobnicate", "modex=setns", "debug=1",
                                               "min_uidx=1" };
        struct nsjoin_args a;
        uint64_t usec = 0;
        uid_t uid = 0;

        nsjoin_args_init(&a);
        ok(a.mode == NSJOIN_MODE_SETNS && !a.socket && !a.debug && !a.skip_users && !a.only_group &&
                   !a.min_uid_set && !a.max_uid_set &&
                   a.timeout_usec == NSJOIN_TIMEOUT_DEFAULT_USEC,
           "defaults: mode setns, default socket, no debug, nobody skipped, no group, range from "
           "login.defs, timeout 5 s");

        ok(parse_ok(&a, "mode=chroot") && a.mode == NSJOIN_MODE_CHROOT, "mode=chroot");
        ok(parse_ok(&a, "mode=setns") && a.mode == NSJOIN_MODE_SETNS,
           "mode=setns (a later argument wins)");
        ok(parse_ok(&a, "socket=/run/x/sock") && a.socket && strcmp(a.socket, "/run/x/sock") == 0,
           "socket=/run/x/sock");
        ok(parse_ok(&a, "debug") && a.debug, "debug");
        ok(parse_ok(&a, "skip_users=a,b") && a.skip_users && strcmp(a.skip_users, "a,b") == 0,
           "skip_users=a,b");
        ok(parse_ok(&a, "skip_users=") && !a.skip_users, "empty skip_users= skips nobody");
        ok(parse_ok(&a, "only_group=fuse") && a.only_group && strcmp(a.only_group, "fuse") == 0,
           "only_group=fuse");
        ok(parse_ok(&a, "min_uid=2000") && a.min_uid_set && a.min_uid == 2000, "min_uid=2000");
        ok(parse_ok(&a, "max_uid=3000") && a.max_uid_set && a.max_uid == 3000, "max_uid=3000");
        for (size_t i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++)
                ok(parse_ok(&a, timeouts[i].arg) && a.timeout_usec == timeouts[i].usec, "%s",
                   timeouts[i].arg);
        ok(a.unmanaged == NSJOIN_UNMANAGED_LEAVE, "unmanaged=leave is the default");
        ok(parse_ok(&a, "unmanaged=stay") && a.unmanaged == NSJOIN_UNMANAGED_STAY,
           "unmanaged=stay");
        ok(parse_ok(&a, "unmanaged=leave") && a.unmanaged == NSJOIN_UNMANAGED_LEAVE,
           "unmanaged=leave");
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                const char *hint = NULL;

                ok(nsjoin_args_parse_one(&a, bad[i].arg, &hint) == NSJOIN_ARG_BAD_VALUE &&
                           (!bad[i].hint || (hint && strstr(hint, bad[i].hint))),
                   "'%s' is a bad value%s%s", bad[i].arg, bad[i].hint ? ", the hint says " : "",
                   bad[i].hint ?: "");
        }
        for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
                ok(nsjoin_args_parse_one(&a, unknown[i], NULL) == NSJOIN_ARG_UNKNOWN,
                   "'%s' is unknown", unknown[i]);

        is_int(nsjoin_parse_uid("1000", &uid), 0, "parse_uid 1000");
        is_int(uid, 1000, "is 1000");
        is_int(nsjoin_parse_uid("4294967294", &uid), 0, "parse_uid 4294967294 (the largest)");
        is_int(nsjoin_parse_uid("99999999999999999999", &uid), -ERANGE,
               "parse_uid of 20 digits: ERANGE");
        is_int(nsjoin_parse_timeout("1.000001", &usec), 0, "parse_timeout to the microsecond");
        is_int(usec, 1000001, "is 1000001 us");
        is_int(nsjoin_parse_timeout("1.0000001", &usec), -EINVAL,
               "parse_timeout finer than a microsecond: EINVAL");

        ok(nsjoin_name_in_list("alice,bob,carol", "bob"), "bob in alice,bob,carol");
        ok(nsjoin_name_in_list("alice,bob,carol", "alice") &&
                   nsjoin_name_in_list("alice,bob,carol", "carol"),
           "first and last entries match");
        ok(!nsjoin_name_in_list("alice,bob,carol", "bo") &&
                   !nsjoin_name_in_list("alice,bob", "bobby"),
           "prefixes and longer names do not match");
        ok(!nsjoin_name_in_list("alice,,bob", "") && !nsjoin_name_in_list(NULL, "bob"),
           "empty names and lists match nothing");
        ok(nsjoin_name_in_list("alice,,bob,", "bob"), "empty entries are skipped");
}

/* nsjoin_login_defs_uid_range() of text[0..size), from a memfd. */
static int login_defs(const char *text, size_t size, char **ret_min, char **ret_max) {
        int fd = memfd_create("login.defs", MFD_CLOEXEC), r;

        if (fd < 0 || write(fd, text, size) != (ssize_t) size || lseek(fd, 0, SEEK_SET) != 0)
                tap_bail_errno("memfd");
        r = nsjoin_login_defs_uid_range(fd, ret_min, ret_max);
        close(fd);
        return r;
}

static void test_login_defs(void) {
        static const char text[] = "# UID_MIN 1\n"
                                   "UMASK 022\n"
                                   "  uid_max\t= 3000  # lower case, '=', a comment\n"
                                   "UID_MINX 7\n"
                                   "UID_MIN 2000\n"
                                   "UID_MIN 9999\n";
        static const char last[] = "MAIL_DIR /var/mail\n\t UID_MAX 5000";
        static const char nul[] = "UID_MIN 12\0"
                                  "34\nUID_MAX\n";
        char *min = NULL, *max = NULL, *big;
        size_t n = 0, size = 4 * NSJOIN_LOGIN_DEFS_LINE_MAX;
        int r;

        is_int(login_defs(text, sizeof(text) - 1, &min, &max), 0, "login.defs: read in one pass");
        ok(min && strcmp(min, "2000") == 0, "login.defs: UID_MIN is the first line's (%s)",
           min ?: "none");
        ok(max && strcmp(max, "3000  ") == 0,
           "login.defs: uid_max matches without case, '=' skipped, the comment cut (as "
           "pam_modutil_search_key())");
        free(min);
        free(max);

        ok(login_defs("MAIL_DIR /var/mail\n", 19, &min, &max) == 0 && !min && !max,
           "login.defs without UID_MIN and UID_MAX: neither");
        ok(login_defs("", 0, &min, &max) == 0 && !min && !max, "an empty login.defs: neither");

        r = login_defs(last, sizeof(last) - 1, &min, &max);
        ok(r == 0 && !min && max && strcmp(max, "5000") == 0,
           "login.defs: the last line counts without a newline (%s)", max ?: "none");
        free(max);

        ok(login_defs(nul, sizeof(nul) - 1, &min, &max) == 0 && min && strcmp(min, "12") == 0 &&
                   max && strcmp(max, "") == 0,
           "login.defs: a NUL byte ends its line's text, a key alone gives an empty value");
        free(min);
        free(max);

        /* lines across the reads' boundaries, and a line longer than the buffer whose rest
         * looks like a key */
        big = malloc(size);
        if (!big)
                tap_bail_errno("malloc");
        while (n < NSJOIN_LOGIN_DEFS_LINE_MAX + 100)
                n += (size_t) snprintf(big + n, size - n, "# comment %zu\n", n);
        memset(big + n, 'x', NSJOIN_LOGIN_DEFS_LINE_MAX + 10);
        n += NSJOIN_LOGIN_DEFS_LINE_MAX + 10;
        n += (size_t) snprintf(big + n, size - n, " UID_MIN 1\nUID_MIN 1234\nUID_MAX 4321\n");
        r = login_defs(big, n, &min, &max);
        ok(r == 0 && min && strcmp(min, "1234") == 0 && max && strcmp(max, "4321") == 0,
           "login.defs of %zu bytes: lines across reads, the rest of an over-long line passed "
           "over (%s, %s)",
           n, min ?: "none", max ?: "none");
        free(min);
        free(max);
        free(big);
}

static void test_leave_decide(void) {
        static const struct {
                struct nsjoin_place p;
                enum nsjoin_leave want;
                const char *name;
        } cases[] = {
                { { .ns_error = -EACCES }, NSJOIN_STAY_UNKNOWN, "PID 1's namespace unreadable" },
                { { .ns = 5, .init_ns = 5, .root_mnt = 1, .init_root_mnt = 1 },
                  NSJOIN_STAY_INITIAL,
                  "initial namespace, initial root" },
                { { .ns = 6, .init_ns = 5, .ns_made = true }, NSJOIN_LEAVE_NS, "nsd's namespace" },
                { { .ns = 6, .init_ns = 5 }, NSJOIN_STAY_FOREIGN, "a container's namespace" },
                { { .ns = 6, .init_ns = 5, .made_error = -EPERM, .ns_made = true },
                  NSJOIN_STAY_UNKNOWN,
                  "a record others may write to" },
                { { .ns = 5, .init_ns = 5, .root_error = -EOPNOTSUPP, .root_made = true },
                  NSJOIN_STAY_UNKNOWN,
                  "mount ids unknown (before 5.8)" },
                { { .ns = 5, .init_ns = 5, .root_mnt = 90, .init_root_mnt = 1, .root_made = true },
                  NSJOIN_LEAVE_ROOT,
                  "chrooted into nsd's namespace root (mode=chroot)" },
                { { .ns = 5, .init_ns = 5, .root_mnt = 90, .init_root_mnt = 1 },
                  NSJOIN_STAY_FOREIGN,
                  "chrooted elsewhere (a jail, sshd's ChrootDirectory)" },
                { { .ns = 5, .init_ns = 5, .root_mnt = 90, .init_root_mnt = 1, .made_error = -EIO },
                  NSJOIN_STAY_UNKNOWN,
                  "chrooted, record unreadable" },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const char *why = NULL;

                is_int(nsjoin_leave_decide(&cases[i].p, &why), cases[i].want, "leave: %s",
                       cases[i].name);
                ok(why && *why, "leave: %s: says why (%s)", cases[i].name, why ?: "");
        }
}

static void test_errno_map(void) {
        static const char *const steps[] = {
                [NSJOIN_STEP_CONNECT] = "connect",
                [NSJOIN_STEP_JOIN] = "JOIN",
                [NSJOIN_STEP_ENTER_SETNS] = "setns",
        };
        static const struct {
                enum nsjoin_step step;
                int r, want;
                /* parts of the explanation (NULL: none asked for); exact: all of it */
                const char *has, *has_too;
                bool exact;
        } cases[] = {
                { NSJOIN_STEP_JOIN, -ENXIO, PAM_IGNORE, "" }, /* not managed */
                { NSJOIN_STEP_JOIN, -EPERM, PAM_SESSION_ERR, "refused" },
                { NSJOIN_STEP_JOIN, -EUSERS, PAM_SESSION_ERR, "limit" },
                { NSJOIN_STEP_JOIN, -EAGAIN, PAM_SESSION_ERR, "not yet" }, /* after the retries */
                { NSJOIN_STEP_JOIN, -ETIMEDOUT, PAM_SESSION_ERR, "in time" },
                { NSJOIN_STEP_CONNECT, -ECONNREFUSED, PAM_SESSION_ERR, "is not running",
                  .exact = true },
                /* a full backlog: 'did not accept the connection in time' */
                { NSJOIN_STEP_CONNECT, -ETIMEDOUT, PAM_SESSION_ERR, "in time" },
                /* -ENXIO means 'not managed' only at JOIN */
                { NSJOIN_STEP_CONNECT, -ENXIO, PAM_SESSION_ERR },
                /* explains multi-threaded callers and suggests mode=chroot */
                { NSJOIN_STEP_ENTER_SETNS, -EINVAL, PAM_SESSION_ERR, "multi-threaded",
                  "mode=chroot" },
                { NSJOIN_STEP_JOIN, -ENOMEM, PAM_BUF_ERR },
        };
        const char *e = "x";

        ok(nsjoin_errno_to_pam(NSJOIN_STEP_JOIN, 0, &e) == PAM_SUCCESS && e == NULL,
           "0 -> PAM_SUCCESS");
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char name[128];
                bool said;

                snprintf(name, sizeof(name), "%s -%s -> %s", steps[cases[i].step],
                         strerrorname_np(-cases[i].r), pam_code_name(cases[i].want));
                e = NULL;
                is_int(nsjoin_errno_to_pam(cases[i].step, cases[i].r, &e), cases[i].want, "%s",
                       name);
                said = !cases[i].has || (e &&
                                         (cases[i].exact ? strcmp(e, cases[i].has) == 0
                                                         : strstr(e, cases[i].has) != NULL) &&
                                         (!cases[i].has_too || strstr(e, cases[i].has_too)));
                ok(said, "%s: the explanation '%s' says '%s'%s%s", name, e ?: "(none)",
                   cases[i].has ?: "", cases[i].has_too ? " and " : "", cases[i].has_too ?: "");
        }
}

/* ---- dlopen ------------------------------------------------------------------------------- */

static void test_dlopen(void) {
        void *h = dlopen(PAM_NSJOIN_MODULE, RTLD_NOW | RTLD_LOCAL);
        static const char *const hidden[] = {
                "nsjoin_args_parse_one", "nsjoin_args_init", "nsjoin_name_in_list",
                "nsjoin_errno_to_pam",   "nsjoin_parse_uid", "nss_user_by_name",
                "pam_sm_acct_mgmt",      "pam_sm_chauthtok",
        };

        if (!ok(h != NULL, "dlopen %s", PAM_NSJOIN_MODULE)) {
                tap_diag("%s", dlerror());
                return;
        }
        ok(dlsym(h, "pam_sm_open_session") && dlsym(h, "pam_sm_close_session") &&
                   dlsym(h, "pam_sm_authenticate") && dlsym(h, "pam_sm_setcred"),
           "pam_sm_open_session, pam_sm_close_session, pam_sm_authenticate (a volume's "
           "password) and pam_sm_setcred resolve");
        /* the client code is linked in: a login maps one object, not two (issue 19) */
        ok(dlopen("libnsclient.so.1", RTLD_NOW | RTLD_NOLOAD) == NULL,
           "loading the module loads no libnsclient.so.1");
        for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++) {
                void *p = dlsym(h, hidden[i]);
                Dl_info info;

                /* a symbol of the same name in a dependency is no export of ours */
                if (p && dladdr(p, &info) && info.dli_fname &&
                    !strstr(info.dli_fname, "pam_nsjoin"))
                        p = NULL;
                ok(p == NULL, "%s is not exported", hidden[i]);
        }
        dlclose(h);
}

/* ---- one PAM conversation in a child ------------------------------------------------------ */

/* How the child's private mount namespace (root only) is set up before PAM starts. */
enum sandbox {
        SANDBOX_NONE,
        SANDBOX_DEFS,      /* /etc/login.defs := defs_path */
        SANDBOX_ROOT_SOCK, /* /run/nsd/root.socket := the fake, /run/nsd/socket := a dead one */
        SANDBOX_USER_SOCK, /* no root.socket, /run/nsd/socket := the fake */
        SANDBOX_ROOT_DEAD, /* /run/nsd/root.socket := a dead one, /run/nsd/socket := the fake */
        /* crossing users: nsd's record (NSD_MADE_*) is tmpdir/made, beside socket= */
        SANDBOX_NS_MADE,      /* the child's namespace is in nsd's record */
        SANDBOX_NS_FOREIGN,   /* the record exists, without the child's namespace */
        SANDBOX_NS_UNTRUSTED, /* the child's namespace is in a record others may write to */
        /* in the "initial" namespace, chrooted (after pam_start) into a mount whose id is
         * in the record, as a mode=chroot login is */
        SANDBOX_CHROOT_MADE,
};

struct pam_case {
        const char *name; /* for the TAP lines */
        const char *user;
        const char *args;    /* @SOCKET@ becomes the fake's socket */
        const char *control; /* of our line; NULL: required */
        const char *module;  /* NULL: the module just built */
        const char *extra;   /* more lines of the service file, or NULL */
        struct fake_nsd_config cfg;
        bool threaded;            /* a second thread in the PAM process */
        const char *password;     /* pam_authenticate first: pam-authtok-test.so, then pam_nsjoin's
                               * auth, get it from the conversation */
        const char *session_user; /* then PAM_USER becomes this one, as sudo -u does */
        enum sandbox sandbox;
};

/* what the PAM child reports */
struct child_result {
        int start_rc, auth_rc, open_rc, close_rc;
        int nsfs_left_open; /* descriptors of a mount namespace still open after open_session */
        int sandbox_rc;     /* 0, or the step of the sandbox setup that failed */
        /* mount namespaces (nsfs inodes): the PAM process's before pam_open_session and
         * after it, and PID 1's; 0 where unreadable */
        uint64_t ns_before, ns_after, init_ns;
        /* is the PAM process's root PID 1's (its mount), before and after pam_open_session */
        bool root_was_init, root_is_init;
};

static struct fake_nsd_record rec;
static struct child_result res;
static bool child_killed;
static char log_text[16384];

static int conv_none(int n, const struct pam_message **msg, struct pam_response **resp,
                     void *data) {
        return PAM_CONV_ERR;
}

/* answers every prompt with data, the password */
static int conv_password(int n, const struct pam_message **msg, struct pam_response **resp,
                         void *data) {
        struct pam_response *r = calloc((size_t) n, sizeof(*r));

        if (!r)
                return PAM_BUF_ERR;
        for (int i = 0; i < n; i++)
                r[i].resp = strdup(data);
        *resp = r;
        return PAM_SUCCESS;
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

/* Wait for pid; its exit status, or 1. */
static int wait_exit(pid_t pid) {
        int status;

        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
                return 1;
        return WEXITSTATUS(status);
}

/* Go on in a child: the parent waits for it and exits with its status. 0 in the child, or
 * -errno when fork() failed. */
static int fork_on(void) {
        pid_t pid = fork();

        if (pid < 0)
                return -errno;
        if (pid > 0)
                _exit(wait_exit(pid));
        return 0;
}

/*
 * Crossing users, without the host's PID 1 (whose namespace this test must neither depend
 * on nor enter): a PID namespace of our own, whose PID 1 sits in a private copy of our mount
 * namespace with a /proc of its own (the module's "initial" namespace), and the PAM process
 * in a mount namespace unshared from that one. Returns 0 in the PAM process (the processes
 * around it wait for it and exit with its status), or the step that failed.
 */
static int sandbox_crossing(bool own_ns) {
        if (unshare(CLONE_NEWNS | CLONE_NEWPID) < 0)
                return 1;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return 2;
        if (fork_on() < 0)
                return 8;
        /* PID 1 of the new PID namespace */
        if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                return 9;
        if (fork_on() < 0)
                return 8;
        return own_ns && unshare(CLONE_NEWNS) < 0 ? 10 : 0;
}

/* The mount id of path's mount (following /proc/1/root), or 0. */
static uint64_t mount_id(const char *path) {
        struct statx stx;

        if (statx(AT_FDCWD, path, 0, STATX_MNT_ID, &stx) < 0 || !(stx.stx_mask & STATX_MNT_ID))
                return 0;
        return stx.stx_mnt_id;
}

/* Create an empty file at path (an entry of nsd's record); 0 or -errno. */
static int touch(const char *path) {
        int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

        if (fd < 0)
                return -errno;
        close(fd);
        return 0;
}

/* The root a mode=chroot login gets: a tmpfs on chroot_path (in PID 1's namespace of the
 * sandbox) with a /proc and nsd's record (at made_path inside) naming its mount id. */
static int sandbox_chroot_root(void) {
        char path[PATH_MAX], marker[PATH_MAX + NSD_MADE_NAME_MAX];

        if (mount("tmpfs", chroot_path, "tmpfs", 0, "mode=0755") < 0)
                return 11;
        snprintf(path, sizeof(path), "%s/proc", chroot_path);
        if (mkdir(path, 0755) < 0 || mount("proc", path, "proc", MS_NOSUID | MS_NODEV, NULL) < 0)
                return 12;
        /* made_path is tmpdir/made: both levels inside the new root */
        snprintf(path, sizeof(path), "%s/tmp", chroot_path);
        (void) mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s%s", chroot_path, tmpdir);
        (void) mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s%s", chroot_path, made_path);
        if (mkdir(path, 0755) < 0)
                return 13;
        snprintf(marker, sizeof(marker), "%s/" NSD_MADE_ROOT_FMT, path, mount_id(chroot_path));
        return touch(marker) < 0 ? 14 : 0;
}

/* nsd's record, with the PAM process's namespace in it or not */
static int sandbox_record(enum sandbox sb) {
        char marker[PATH_MAX];
        struct stat st;

        /* a record of our own, seen only in this namespace */
        if (mount("tmpfs", made_path, "tmpfs", 0,
                  sb == SANDBOX_NS_UNTRUSTED ? "mode=0777" : "mode=0755") < 0 ||
            stat("/proc/self/ns/mnt", &st) < 0)
                return 6;
        snprintf(marker, sizeof(marker), "%s/" NSD_MADE_NS_FMT, made_path,
                 (uint64_t) (sb == SANDBOX_NS_FOREIGN ? st.st_ino + 1 : st.st_ino));
        return touch(marker) < 0 ? 7 : 0;
}

/* The child's private mount namespace; 0 or the number of the step that failed. */
static int sandbox_setup(enum sandbox sb) {
        if (sb == SANDBOX_NS_MADE || sb == SANDBOX_NS_FOREIGN || sb == SANDBOX_NS_UNTRUSTED) {
                int r = sandbox_crossing(true);

                return r ? r : sandbox_record(sb);
        }
        if (sb == SANDBOX_CHROOT_MADE) {
                int r = sandbox_crossing(false);

                return r ? r : sandbox_chroot_root();
        }
        if (unshare(CLONE_NEWNS) < 0)
                return 1;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return 2;
        if (sb == SANDBOX_DEFS)
                return fake_nsd_bind(defs_path, "/etc/login.defs") < 0 ? 3 : 0;
        if (mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") < 0 || mkdir("/run/nsd", 0755) < 0)
                return 4;
        switch (sb) {
        case SANDBOX_ROOT_SOCK:
                if (fake_nsd_bind(sock_path, NSD_ROOT_SOCKET_PATH_DEFAULT) < 0 ||
                    fake_nsd_bind(dead_path, NSD_SOCKET_PATH_DEFAULT) < 0)
                        return 5;
                return 0;
        case SANDBOX_USER_SOCK:
                return fake_nsd_bind(sock_path, NSD_SOCKET_PATH_DEFAULT) < 0 ? 5 : 0;
        case SANDBOX_ROOT_DEAD:
                if (fake_nsd_bind(dead_path, NSD_ROOT_SOCKET_PATH_DEFAULT) < 0 ||
                    fake_nsd_bind(sock_path, NSD_SOCKET_PATH_DEFAULT) < 0)
                        return 5;
                return 0;
        default:
                return 0;
        }
}

/* The nsfs inode of path (a /proc/PID/ns/mnt), or 0. */
static uint64_t ns_inode(const char *path) {
        struct stat st;

        return stat(path, &st) < 0 ? 0 : (uint64_t) st.st_ino;
}

static void child_run(int result_fd, const struct pam_case *c) {
        struct pam_conv conv = { .conv = c->password ? conv_password : conv_none,
                                 .appdata_ptr = (void *) c->password };
        struct child_result r = { .start_rc = -1, .open_rc = -1, .close_rc = -1 };
        pam_handle_t *pamh = NULL;
        pthread_t t;
        int logfd;

        logfd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (logfd < 0 || dup2(logfd, STDERR_FILENO) < 0)
                _exit(2);
        close(logfd);
        /* pam_syslog() lines also go to stderr, i.e. the log file */
        openlog("test-pam", LOG_PERROR, LOG_AUTHPRIV);

        if (c->sandbox != SANDBOX_NONE)
                r.sandbox_rc = sandbox_setup(c->sandbox);
        if (r.sandbox_rc == 0) {
                if (c->threaded && pthread_create(&t, NULL, idle_thread, NULL) != 0)
                        _exit(4);
                r.start_rc = pam_start_confdir(SERVICE, c->user, &conv, tmpdir, &pamh);
                if (r.start_rc == PAM_SUCCESS && c->sandbox == SANDBOX_CHROOT_MADE &&
                    (chdir(chroot_path) < 0 || chroot(".") < 0 || chdir("/") < 0))
                        r.sandbox_rc = 15;
                if (r.start_rc == PAM_SUCCESS && r.sandbox_rc == 0) {
                        r.root_was_init = mount_id("/") == mount_id("/proc/1/root");
                        r.ns_before = ns_inode("/proc/self/ns/mnt");
                        r.init_ns = ns_inode("/proc/1/ns/mnt");
                        if (c->password)
                                r.auth_rc = pam_authenticate(pamh, 0);
                        if (c->session_user)
                                (void) pam_set_item(pamh, PAM_USER, c->session_user);
                        r.open_rc = pam_open_session(pamh, 0);
                        r.ns_after = ns_inode("/proc/self/ns/mnt");
                        r.root_is_init = mount_id("/") == mount_id("/proc/1/root") &&
                                         mount_id("/") != 0;
                        r.nsfs_left_open = count_nsfs_fds();
                        r.close_rc = pam_close_session(pamh, 0);
                        pam_end(pamh, r.open_rc);
                }
        }
        if (write(result_fd, &r, sizeof(r)) != sizeof(r))
                _exit(3);
        _exit(0);
}

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

/* lines of the module's own (pam_syslog prefixes them "pam_nsjoin(") */
static int log_lines(void) {
        int n = 0;

        for (const char *p = log_text; (p = strstr(p, "pam_nsjoin(")); p++)
                n++;
        return n;
}

static void show_log(void) {
        char copy[sizeof(log_text)], *save = NULL;

        memcpy(copy, log_text, sizeof(copy));
        for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
                tap_diag("log: %s", l);
}

/*
 * Write the service file (`session CONTROL MODULE ARGS` + extra lines), start the fake nsd
 * on sock_path, run PAM in a child, serve until the child reports. Results in rec, res,
 * log_text; child_killed when the child had to be killed (it hung).
 */
static void run_case(const struct pam_case *c) {
        char argbuf[512];
        const char *at;
        int lfd, pfd[2], status;
        FILE *f;
        pid_t pid;

        memset(&rec, 0, sizeof(rec));
        memset(&res, 0, sizeof(res));
        res.open_rc = res.close_rc = res.start_rc = -1;
        log_text[0] = 0;
        child_killed = false;

        at = strstr(c->args, "@SOCKET@");
        if (at)
                snprintf(argbuf, sizeof(argbuf), "%.*s%s%s", (int) (at - c->args), c->args,
                         sock_path, at + 8);
        else
                snprintf(argbuf, sizeof(argbuf), "%s", c->args);

        f = fopen(service_path, "we");
        if (!f)
                tap_bail_errno(service_path);
        if (c->password)
                fprintf(f, "auth required %s\nauth optional %s\n", PAM_AUTHTOK_TEST_MODULE,
                        c->module ?: PAM_NSJOIN_MODULE);
        fprintf(f, "session %s %s %s\n%s", c->control ?: "required", c->module ?: PAM_NSJOIN_MODULE,
                argbuf, c->extra ?: "");
        fclose(f);

        lfd = fake_nsd_listen(sock_path, 8);
        if (lfd < 0 || chmod(sock_path, 0666) < 0 || pipe2(pfd, O_CLOEXEC) < 0) {
                if (lfd < 0)
                        errno = -lfd;
                tap_bail_errno("fake nsd");
        }
        pid = tap_fork();
        if (pid == 0) {
                close(lfd);
                close(pfd[0]);
                child_run(pfd[1], c);
        }
        close(pfd[1]);

        /* no test waits this long: only a hung module gets here */
        if (fake_nsd_serve(lfd, pfd[0], 20000, &c->cfg, &rec) < 0) {
                tap_diag("%s: the PAM child hung; killing it", c->name);
                kill(pid, SIGKILL);
                child_killed = true;
        } else if (read(pfd[0], &res, sizeof(res)) != sizeof(res))
                tap_diag("%s: no result from the PAM child", c->name);
        close(lfd);
        close(pfd[0]);
        unlink(sock_path);
        (void) waitpid(pid, &status, 0);
        log_read();
        if (res.start_rc != PAM_SUCCESS && !res.sandbox_rc)
                tap_diag("%s: pam_start_confdir: %d", c->name, res.start_rc);
}

#define CHECK_RC(c, what, got, want)                                                    \
        (is_int((got), (want), "%s: %s is %s", (c)->name, what, pam_code_name(want)) || \
         (show_log(), false))
#define CHECK_LOG(c, s) (ok(log_has(s), "%s: log says '%s'", (c)->name, s) || (show_log(), false))
#define CHECK_NO_LOG(c, s) \
        (ok(!log_has(s), "%s: log does not say '%s'", (c)->name, s) || (show_log(), false))

/* Run c; is the open's return code want? */
static bool run_open(const struct pam_case *c, int want) {
        run_case(c);
        return CHECK_RC(c, "open", res.open_rc, want);
}

/* a stack line that succeeds, so that our PAM_IGNORE shows as PAM_SUCCESS (libpam fails a
 * stack in which every module ignored: PAM_MUST_FAIL_CODE) */
#define PERMIT "session optional pam_permit.so\n"
/* the range given explicitly, so that the host's login.defs plays no part */
#define RANGE "min_uid=1000 max_uid=60000"

/* After a failed open_session, our close_session finds nothing registered and sends
 * nothing; libpam's frozen session chain still reports the stack's close as failed
 * (PAM_PERM_DENIED), whatever the module returns. */
static void close_after_failed_open(const struct pam_case *c) {
        ok(rec.session_closes == 0, "%s: no SESSION_CLOSE for a session never opened", c->name);
        CHECK_RC(c, "close (libpam's frozen chain)", res.close_rc, PAM_PERM_DENIED);
}

/* ---- the local decision: no nsd needed ---------------------------------------------------- */

static void case_root(void) {
        struct pam_case c = {
                .name = "root", .user = "root", .args = "debug socket=@SOCKET@", .extra = PERMIT
        };

        run_open(&c, PAM_SUCCESS);
        is_int(rec.connections, 0, "root: no connection to nsd was attempted");
        CHECK_LOG(&c, "user 'root' is root: not moving the session into a user's namespace");

        c.name = "root, nsd down";
        c.args = "socket=/nonexistent/nsd.sock";
        c.extra = PERMIT;
        run_open(&c, PAM_SUCCESS);
        is_int(log_lines(), 0, "root, nsd down: not a word in the log");

        /* a typo in the stack must not lock root out */
        c.name = "root, bad argument";
        c.args = "timeout=forever socket=@SOCKET@";
        run_open(&c, PAM_SUCCESS);
        is_int(rec.connections, 0, "root, bad argument: no connection");
        CHECK_LOG(&c, "bad argument 'timeout=forever' (expected seconds");
        CHECK_LOG(&c, "root's session is not refused, every other user's is");
}

static void case_unmanaged(void) {
        struct pam_case c = { .name = "uid 500",
                              .user = "sys",
                              .args = RANGE " debug socket=@SOCKET@",
                              .extra = PERMIT };

        run_open(&c, PAM_SUCCESS);
        is_int(rec.connections, 0, "uid 500: no connection to nsd was attempted");
        CHECK_LOG(&c, "user 'sys' (uid 500) is outside min_uid=1000..max_uid=60000: not moving the "
                      "session into a user's namespace");

        c.name = "uid 70000, nsd down";
        c.user = "high";
        c.args = RANGE " socket=/nonexistent/nsd.sock";
        run_open(&c, PAM_SUCCESS);
        is_int(log_lines(), 0, "uid 70000, nsd down: not a word in the log");

        c.name = "uid 500, min_uid=400";
        c.user = "sys";
        c.args = "min_uid=400 max_uid=60000 socket=@SOCKET@";
        run_case(&c);
        is_int(rec.join_sessions, 1,
               "uid 500 with min_uid=400: the range is widened, nsd is asked");

        /* nsd's policy narrower than the module's range: nsd says ENXIO, PAM_IGNORE */
        c = (struct pam_case) { .name = "JOIN -ENXIO",
                                .user = "alice",
                                .args = RANGE " debug socket=@SOCKET@",
                                .extra = PERMIT,
                                .cfg = { .join_error = -ENXIO, .join_message = "not in Users=" } };
        run_open(&c, PAM_SUCCESS);
        CHECK_LOG(&c, "user 'alice' is not managed by nsd's policy: not moving the session");
        CHECK_NO_LOG(&c, "cannot join");
        ok(rec.session_closes == 0, "JOIN -ENXIO: nothing to close");
}

static void case_skip(void) {
        struct pam_case c = { .name = "skip_users",
                              .user = "alice",
                              .args = RANGE " skip_users=someone,alice,else socket=@SOCKET@",
                              .extra = PERMIT };

        run_open(&c, PAM_SUCCESS);
        is_int(rec.connections, 0, "skip_users: nsd was never asked");
        is_int(log_lines(), 0, "skip_users: silent without debug");

        c.args = RANGE " debug skip_users=alice socket=@SOCKET@";
        run_case(&c);
        CHECK_LOG(&c, "is in skip_users");

        c.name = "only_group=fuse, alice not a member";
        c.args = RANGE " only_group=fuse socket=@SOCKET@";
        run_open(&c, PAM_SUCCESS);
        is_int(rec.connections, 0, "only_group=fuse, alice: nsd was never asked");

        c.name = "only_group=fuse, bob a member";
        c.user = "bob";
        c.extra = NULL;
        run_case(&c);
        is_int(rec.join_sessions, 1, "only_group=fuse, bob (supplementary): the login joins");
        CHECK_RC(&c, "open", res.open_rc, is_root ? PAM_SUCCESS : PAM_SESSION_ERR);

        c.name = "only_group=bob, bob's primary group";
        c.args = RANGE " only_group=bob socket=@SOCKET@";
        run_case(&c);
        is_int(rec.join_sessions, 1, "only_group=bob (primary): the login joins");
}

static void case_bad_values(void) {
        static const struct {
                const char *args, *want;
        } cases[] = {
                { "mode=bogus", "bad argument 'mode=bogus' (expected mode=setns or mode=chroot), "
                                "refusing the session" },
                { "socket=", "bad argument 'socket=' (expected an absolute path)" },
                { "socket=rel/sock", "bad argument 'socket=rel/sock' (expected an absolute path)" },
                { "only_group=", "bad argument 'only_group=' (expected a group name)" },
                { "only_group=no-such-group",
                  "bad argument 'only_group=no-such-group' (no such group)" },
                { "min_uid=abc",
                  "bad argument 'min_uid=abc' (expected a uid from 1 to 4294967294)" },
                { "max_uid=0", "bad argument 'max_uid=0' (expected a uid" },
                { "min_uid=2000 max_uid=1000",
                  "bad arguments: min_uid=2000 is above max_uid=1000, refusing" },
                { "timeout=0",
                  "bad argument 'timeout=0' (expected seconds, more than 0 and at most 300" },
                { "timeout=1,5", "bad argument 'timeout=1,5'" },
                { "timeout=301", "bad argument 'timeout=301'" },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char args[256];
                struct pam_case c = {
                        .name = cases[i].args, .user = "alice", .args = args, .extra = PERMIT
                };

                /* RANGE first: a later min_uid/max_uid overrides it */
                snprintf(args, sizeof(args), RANGE " %s socket=@SOCKET@", cases[i].args);
                run_open(&c, PAM_SESSION_ERR);
                CHECK_LOG(&c, cases[i].want);
                is_int(rec.connections, 0, "%s: nsd was never asked", c.name);
                is_int(log_lines(), 1, "%s: one line", c.name);
        }

        {
                struct pam_case c = { .name = "frobnicate",
                                      .user = "alice",
                                      .args = RANGE " frobnicate socket=@SOCKET@" };

                run_case(&c);
                CHECK_LOG(&c, "unknown argument 'frobnicate', ignoring");
                is_int(rec.join_sessions, 1, "frobnicate: the login goes on to nsd");
        }
}

/* ---- nsd down, stopped, stuck, not yet ready --------------------------------------------- */

static void case_nsd_down(void) {
        struct pam_case c = { .name = "alice, no socket",
                              .user = "alice",
                              .args = RANGE " socket=/nonexistent/nsd.sock" };
        int fd;

        run_open(&c, PAM_SESSION_ERR);
        CHECK_LOG(&c, "cannot join the mount namespace of user 'alice' (uid 1500): nsd at "
                      "/nonexistent/nsd.sock is not running (No such file or directory)");
        is_int(log_lines(), 1, "alice, no socket: ONE line");
        close_after_failed_open(&c);

        /* a socket nobody listens on any more: ECONNREFUSED */
        fd = fake_nsd_listen(dead_path, 1);
        if (fd >= 0)
                close(fd);
        c.name = "alice, dead socket";
        c.args = RANGE " socket=/dead";
        {
                char args[256];

                snprintf(args, sizeof(args), RANGE " socket=%s", dead_path);
                c.args = args;
                run_open(&c, PAM_SESSION_ERR);
                CHECK_LOG(&c, "is not running (Connection refused)");
                is_int(log_lines(), 1, "alice, dead socket: ONE line");
        }

        /* the same with `session optional`: the login goes on, unchanged, the error logged */
        c.name = "optional, nsd down";
        c.args = RANGE " socket=/nonexistent/nsd.sock";
        c.control = "optional";
        c.extra = "session required pam_permit.so\n";
        run_open(&c, PAM_SUCCESS);
        CHECK_LOG(&c, "nsd at /nonexistent/nsd.sock is not running");
        ok(res.nsfs_left_open == 0, "optional, nsd down: no namespace descriptor left open");
        CHECK_RC(&c, "close", res.close_rc, PAM_SUCCESS);
}

static void case_nsd_stuck(void) {
        struct pam_case c = { .name = "nsd stuck",
                              .user = "alice",
                              .args = RANGE " timeout=0.5 socket=@SOCKET@",
                              .cfg = { .stuck = true } };
        int lfd, filler[8], n_fill = 0;

        run_case(&c);
        ok(!child_killed, "nsd stuck: the login returned by itself");
        CHECK_RC(&c, "open", res.open_rc, PAM_SESSION_ERR);
        is_int(rec.requests, 1, "nsd stuck: it got the request");
        CHECK_LOG(&c, "cannot join the mount namespace of user 'alice' (uid 1500): nsd did not "
                      "answer in time (Connection timed out); gave up after timeout=0.5 s, socket "
                      "/tmp/test-pam.");
        is_int(log_lines(), 1, "nsd stuck: ONE line");

        /* stopped with a full backlog: the connect itself would wait */
        lfd = fake_nsd_listen(stopped_path, 0);
        for (; lfd >= 0 && n_fill < 8; n_fill++) {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };

                snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", stopped_path);
                filler[n_fill] = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (connect(filler[n_fill], (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                        close(filler[n_fill]);
                        break;
                }
        }
        {
                char args[256];

                snprintf(args, sizeof(args), RANGE " timeout=0.5 socket=%s", stopped_path);
                c.name = "nsd stopped, backlog full";
                c.args = args;
                run_case(&c);
                ok(!child_killed, "nsd stopped, backlog full: the login returned by itself");
                CHECK_RC(&c, "open", res.open_rc, PAM_SESSION_ERR);
                CHECK_LOG(&c, "did not accept the connection in time (Connection timed out); gave "
                              "up after timeout=0.5 s");
                is_int(log_lines(), 1, "nsd stopped, backlog full: ONE line");
        }
        for (int i = 0; i < n_fill; i++)
                close(filler[i]);
        if (lfd >= 0)
                close(lfd);
        unlink(stopped_path);
}

static void case_not_yet(void) {
        struct pam_case c = { .name = "not yet available twice",
                              .user = "alice",
                              .args = RANGE " debug socket=@SOCKET@",
                              .cfg = { .not_yet = 2 } };

        run_case(&c);
        is_int(rec.not_yet_sent, 2, "not yet twice: nsd said -EAGAIN twice");
        is_int(rec.join_sessions, 3, "and was asked three times");
        is_int(rec.connections, is_root ? 2 : 1,
               "on one connection (and, as root, one for the close)");
        CHECK_LOG(&c, "is not yet available, asking again in 50 ms");
        CHECK_LOG(&c, "asking again in 100 ms");
        CHECK_RC(&c, "open", res.open_rc, is_root ? PAM_SUCCESS : PAM_SESSION_ERR);

        c.name = "never available";
        c.args = RANGE " timeout=0.5 socket=@SOCKET@";
        c.cfg.not_yet = 1000;
        run_case(&c);
        ok(!child_killed, "never available: the login returned by itself");
        CHECK_RC(&c, "open", res.open_rc, PAM_SESSION_ERR);
        CHECK_LOG(&c, "nsd has not yet made this user's namespace available again");
        CHECK_LOG(&c, "within timeout=0.5 s");
        ok(rec.not_yet_sent >= 2, "never available: asked again and again (%u times)",
           rec.not_yet_sent);
        is_int(log_lines(), 1, "never available: ONE line");
}

/* ---- joining ------------------------------------------------------------------------------ */

static void case_join(const char *name, const char *args, unsigned minor, bool chroot_mode) {
        struct pam_case c = { .name = name,
                              .user = "alice",
                              .args = args,
                              .cfg = { .minor = minor, .session_id = 77 } };

        run_case(&c);
        if (minor == 1) {
                ok(rec.join_sessions == 1 && rec.joins == 1, "%s: JOIN_SESSION refused, then JOIN",
                   c.name);
                is_int(rec.bad, 0, "%s: every request passes nsd's checks (%s)", c.name,
                       rec.bad_why);
        } else {
                ok(rec.join_sessions == 1 && rec.joins == 0 && rec.session_opens == 0,
                   "%s: one JOIN_SESSION, no JOIN, no SESSION_OPEN", c.name);
                is_int(rec.bad, 0, "%s: the request passes nsd's checks (%s)", c.name, rec.bad_why);
        }
        is_int(rec.join_uid, ALICE_UID, "%s: for uid 1500", c.name);
        ok(rec.so_uid == ALICE_UID && rec.so_pid > 1 && strcmp(rec.so_service, SERVICE) == 0,
           "%s: session of uid %u pid %u service '%s'", c.name, rec.so_uid, rec.so_pid,
           rec.so_service);
        ok(rec.so_pidfd, "%s: a pidfd of the session leader came along", c.name);
        if (is_root) {
                CHECK_RC(&c, "open as root", res.open_rc, PAM_SUCCESS);
                CHECK_RC(&c, "close", res.close_rc, PAM_SUCCESS);
                ok(rec.session_closes == 1 && rec.sc_id == 77 && rec.sc_uid == ALICE_UID &&
                           rec.sc_pid == rec.so_pid,
                   "%s: SESSION_CLOSE id %llu uid %u pid %u", c.name,
                   (unsigned long long) rec.sc_id, rec.sc_uid, rec.sc_pid);
                is_int(rec.connections, minor == 1 ? 3 : 2,
                       "%s: connections: %s, one for the close", c.name,
                       minor == 1 ? "two for the open" : "one for the open");
                if (chroot_mode)
                        ok(log_has("by fchdir+chroot") || log_has("by setns(root directory)"),
                           "%s: debug line says how it entered", c.name) ||
                                (show_log(), 0);
                else
                        CHECK_LOG(&c, "by setns(nsfs)");
                CHECK_LOG(&c, minor == 1 ? "by JOIN + SESSION_OPEN (nsd < 1.2)"
                                         : "by one JOIN_SESSION");
        } else {
                CHECK_RC(&c, "open as non-root", res.open_rc, PAM_SESSION_ERR);
                CHECK_LOG(&c, chroot_mode ? "chroot into the namespace root needs CAP_SYS_CHROOT "
                                            "(Operation not permitted)"
                                          : "setns() needs CAP_SYS_ADMIN and CAP_SYS_CHROOT "
                                            "(Operation not permitted)");
                ok(rec.session_closes == 1 && rec.sc_id == 77,
                   "%s: the session opened with the join is closed again after the failed enter",
                   c.name);
                is_int(rec.connections, minor == 1 ? 2 : 1, "%s: on the same connection", c.name);
        }
        ok(res.nsfs_left_open == 0, "%s: no namespace descriptor left open in the login", c.name);
}

/* A volume's login password: pam_nsjoin's auth keeps it, and the session hands it to nsd in a
 * sealed memfd when JOIN_SESSION says a volume wants it, and only then; it never reaches the
 * log. */
static void case_password(void) {
        const int all = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;
        struct pam_case c = { .name = "password wanted",
                              .user = "alice",
                              .args = RANGE " debug socket=@SOCKET@",
                              .password = "correct horse",
                              .cfg = { .join_ns_flags = NSD_NS_CREDENTIAL_WANTED } };

        if (!is_root) {
                tap_skip("a volume's password: the session enters the namespace first (root)");
                return;
        }
        run_case(&c);
        CHECK_RC(&c, "open", res.open_rc, PAM_SUCCESS);
        ok(rec.credential_gives == 1 && rec.credential_uid == ALICE_UID &&
                   strcmp(rec.credential_text, "correct horse") == 0 &&
                   (rec.credential_seals & all) == all,
           "%s: one CREDENTIAL_GIVE for uid %u, the password without a terminator, in a memfd "
           "sealed against write, grow, shrink and seals (%u, seals 0x%x)",
           c.name, rec.credential_uid, rec.credential_gives, (unsigned) rec.credential_seals);
        is_int(rec.bad, 0, "%s: the request passes nsd's checks (%s)", c.name, rec.bad_why);
        CHECK_LOG(&c, "handed the login password of user 'alice' to nsd");
        CHECK_NO_LOG(&c, "correct horse");

        c.name = "password not wanted";
        c.cfg.join_ns_flags = 0;
        run_case(&c);
        CHECK_RC(&c, "open", res.open_rc, PAM_SUCCESS);
        is_int(rec.credential_gives, 0, "%s: nothing handed over", c.name);

        c.name = "another user's password (sudo -u alice by bob)";
        c.user = "bob";
        c.session_user = "alice";
        c.password = "bob's own";
        run_case(&c);
        CHECK_RC(&c, "open", res.open_rc, PAM_SUCCESS);
        ok(rec.join_uid == ALICE_UID && rec.credential_gives == 0,
           "%s: alice's session, bob's password never handed over", c.name);
        CHECK_LOG(&c, "user 'bob''s, not 'alice''s: not handed to nsd");
        c.user = "alice";
        c.session_user = NULL;
        c.password = "correct horse";

        c.name = "wanted, no auth stage";
        c.cfg.join_ns_flags = NSD_NS_CREDENTIAL_WANTED;
        c.password = NULL;
        run_case(&c);
        CHECK_RC(&c, "open", res.open_rc, PAM_SUCCESS);
        is_int(rec.credential_gives, 0, "%s: nothing to hand over (a key login)", c.name);
}

static void case_refused(void) {
        struct pam_case c = {
                .name = "JOIN -EPERM",
                .user = "alice",
                .args = RANGE " socket=@SOCKET@",
                .cfg = { .join_error = -EPERM,
                         .join_message = "only root may join another user's namespace" }
        };

        run_open(&c, PAM_SESSION_ERR);
        CHECK_LOG(&c, "cannot join the mount namespace of user 'alice' (uid 1500): nsd refused the "
                      "request (Operation not permitted); nsd says: only root may join another "
                      "user's namespace");
        is_int(log_lines(), 1, "JOIN -EPERM: ONE line");

        /* nsd's own ETIMEDOUT (LookupTimeoutSec=) is an answer: the line says nsd gave up,
         * not that this module's timeout= ran out */
        c = (struct pam_case) {
                .name = "JOIN -ETIMEDOUT from nsd",
                .user = "alice",
                .args = RANGE " timeout=10 socket=@SOCKET@",
                .cfg = { .join_error = -ETIMEDOUT,
                         .join_message = "the user database (NSS) did not answer for uid 1500 "
                                         "within 2 s (LookupTimeoutSec=)" }
        };
        run_open(&c, PAM_SESSION_ERR);
        CHECK_LOG(&c, "cannot join the mount namespace of user 'alice' (uid 1500): nsd gave up "
                      "waiting for what it needed to decide (Connection timed out); nsd says: "
                      "the user database (NSS) did not answer for uid 1500 within 2 s "
                      "(LookupTimeoutSec=)");
        ok(!log_has("did not answer in time") && !log_has("gave up after timeout="),
           "JOIN -ETIMEDOUT from nsd: not blamed on timeout=");
        is_int(log_lines(), 1, "JOIN -ETIMEDOUT from nsd: ONE line");

        /* a refused session refuses the whole request (protocol 1.2), with either protocol */
        for (unsigned minor = 1; minor <= 2; minor++) {
                c = (struct pam_case) { .name = minor == 1 ? "1.1, SESSION_OPEN refused"
                                                           : "1.2, session refused",
                                        .user = "alice",
                                        .args = RANGE " socket=@SOCKET@",
                                        .cfg = { .minor = minor, .session_open_error = -EUSERS } };
                run_open(&c, PAM_SESSION_ERR);
                CHECK_LOG(&c, "a limit of nsd is reached");
                CHECK_LOG(&c, "nsd says: fake nsd: no more sessions");
                ok(res.nsfs_left_open == 0, "%s: no namespace descriptor left open", c.name);
        }

        if (!is_root) {
                tap_skip("SESSION_CLOSE refused: entering needs root");
                return;
        }
        c = (struct pam_case) { .name = "SESSION_CLOSE refused",
                                .user = "alice",
                                .args = RANGE " socket=@SOCKET@",
                                .cfg = { .session_close_error = -ENOENT } };
        run_case(&c);
        CHECK_RC(&c, "close", res.close_rc, PAM_SUCCESS);
        ok(rec.session_closes == 1, "SESSION_CLOSE refused: it was sent");
        CHECK_LOG(&c, "unregistering the session with nsd failed");
        CHECK_LOG(&c, "nsd says: fake nsd: no such session, ignoring");
}

static void case_threaded(void) {
        struct pam_case c = { .name = "multi-threaded, mode=setns",
                              .user = "alice",
                              .args = RANGE " socket=@SOCKET@",
                              .threaded = true };

        if (!is_root) {
                tap_skip("multi-threaded caller: setns needs root");
                return;
        }
        run_open(&c, PAM_SESSION_ERR);
        CHECK_LOG(&c, "multi-threaded");
        CHECK_LOG(&c, "mode=chroot");
        ok(rec.session_closes == 1 && rec.sc_id == 4242,
           "multi-threaded, mode=setns: the session opened with the join is closed again");
        is_int(rec.connections, 1, "multi-threaded, mode=setns: on the same connection");

        c.name = "multi-threaded, mode=chroot";
        c.args = RANGE " mode=chroot socket=@SOCKET@";
        run_open(&c, PAM_SUCCESS);
        ok(rec.join_sessions == 1 && rec.session_closes == 1,
           "multi-threaded, mode=chroot: joined, closed at the end");
}

/* ---- as root, in a private mount namespace: the socket, login.defs ----------------------- */

static bool sandbox_ran(const struct pam_case *c) {
        if (res.sandbox_rc) {
                tap_skip("%s: no private mount namespace here (step %d)", c->name, res.sandbox_rc);
                return false;
        }
        return true;
}

/* Run c in its sandbox and check the open's return code; false (skipped) without the sandbox. */
static bool run_sandboxed(const struct pam_case *c, int want_open) {
        run_case(c);
        if (!sandbox_ran(c))
                return false;
        CHECK_RC(c, "open", res.open_rc, want_open);
        return true;
}

static void write_defs(const char *text) {
        FILE *f = fopen(defs_path, "we");

        if (!f || fputs(text, f) < 0 || fclose(f) != 0)
                tap_bail_errno(defs_path);
}

static void case_sandbox(void) {
        struct pam_case c = { .user = "alice", .args = "debug" };
        int fd;

        if (!is_root) {
                tap_skip("the default socket and login.defs: need root for a private mount "
                         "namespace");
                return;
        }
        /* a socket nobody listens on */
        fd = fake_nsd_listen(dead_path, 1);
        if (fd >= 0)
                close(fd);

        c.name = "no socket=, both sockets";
        c.sandbox = SANDBOX_ROOT_SOCK;
        if (run_sandboxed(&c, PAM_SUCCESS))
                is_int(rec.connections, 2,
                       "no socket=, both sockets: open and close went to root's socket");
        c.name = "no socket=, no root socket (nsd < 1.2)";
        c.sandbox = SANDBOX_USER_SOCK;
        if (run_sandboxed(&c, PAM_SUCCESS))
                is_int(rec.connections, 2,
                       "no root socket: open and close went to the user socket");
        c.name = "no socket=, root socket refused";
        c.sandbox = SANDBOX_ROOT_DEAD;
        if (run_sandboxed(&c, PAM_SESSION_ERR)) {
                CHECK_LOG(&c, "nsd at /run/nsd/root.socket is not running (Connection refused)");
                is_int(rec.connections, 0, "root socket refused: no fallback to the user socket");
        }

        /* the range from login.defs */
        write_defs("# login.defs of test-pam\nUID_MIN\t\t 2000\nUID_MAX   3000\n");
        c = (struct pam_case) { .name = "login.defs 2000..3000, uid 1500",
                                .user = "alice",
                                .args = "debug socket=@SOCKET@",
                                .extra = PERMIT,
                                .sandbox = SANDBOX_DEFS };
        if (run_sandboxed(&c, PAM_SUCCESS)) {
                is_int(rec.connections, 0,
                       "login.defs 2000..3000: uid 1500 is left alone, no connection");
                CHECK_LOG(&c, "outside min_uid=2000..max_uid=3000");
        }
        c.name = "login.defs 2000..3000, uid 2500";
        c.user = "mid";
        c.extra = NULL;
        if (run_sandboxed(&c, PAM_SUCCESS))
                is_int(rec.join_sessions, 1, "login.defs 2000..3000: uid 2500 joins");
        c.name = "login.defs 2000..3000, max_uid=1600";
        c.user = "alice";
        c.args = "max_uid=1600 socket=@SOCKET@";
        c.extra = PERMIT;
        if (run_sandboxed(&c, PAM_SESSION_ERR))
                CHECK_LOG(&c, "bad arguments: min_uid=2000 is above max_uid=1600 (the other one "
                              "from /etc/login.defs)");
        write_defs("UID_MIN lots\n");
        c = (struct pam_case) { .name = "login.defs UID_MIN lots",
                                .user = "alice",
                                .args = "socket=@SOCKET@",
                                .sandbox = SANDBOX_DEFS };
        if (run_sandboxed(&c, PAM_SUCCESS))
                CHECK_LOG(&c, "UID_MIN of /etc/login.defs is 'lots', not a uid; using 1000");
        write_defs("# no UID_MIN, no UID_MAX\n");
        c = (struct pam_case) { .name = "login.defs without UID_*, uid 70000",
                                .user = "high",
                                .args = "debug socket=@SOCKET@",
                                .extra = PERMIT,
                                .sandbox = SANDBOX_DEFS };
        run_case(&c);
        if (sandbox_ran(&c)) {
                is_int(rec.connections, 0,
                       "login.defs without UID_*: the defaults 1000..60000 leave uid 70000 alone");
                CHECK_LOG(&c, "outside min_uid=1000..max_uid=60000");
        }
        unlink(defs_path);
}

/* ---- a missing module ------------------------------------------------------------------------ */

/* The control value of the Session: line of the shipped pam-auth-update profile, or NULL. */
static char *profile_control(void) {
        char line[512], *control = NULL;
        bool in_session = false;
        FILE *f = fopen(PAM_NSJOIN_PROFILE, "re");

        if (!f)
                return NULL;
        while (!control && fgets(line, sizeof(line), f)) {
                char *module;

                if (strncmp(line, "Session:", 8) == 0) {
                        in_session = true;
                        continue;
                }
                module = strstr(line, "pam_nsjoin.so");
                if (!in_session || !module)
                        continue;
                *module = 0;
                control = strndup(line + strspn(line, " \t"),
                                  strcspn(line + strspn(line, " \t"), "\t"));
        }
        fclose(f);
        return control;
}

/* A module that cannot be loaded (its package half removed, another architecture's only):
 * libpam fails every session of a stack whose `required` line names it, root's too, since
 * root's exemption lives in the module. The shipped profile's control value ignores a
 * module that is not there. */
static void case_missing_module(void) {
        _cleanup_free_ char *control = profile_control();
        struct pam_case c = { .name = "a `required` line naming a missing module, root",
                              .user = "root",
                              .args = "",
                              .module = "/nonexistent/pam_nsjoin.so",
                              .extra = PERMIT };

        run_case(&c);
        ok(res.open_rc != PAM_SUCCESS, "%s: libpam refuses the session (%d)", c.name, res.open_rc);

        if (!ok(control && control[0] == '[', "the profile's control value: %s",
                control ?: "(no Session: line with pam_nsjoin.so)"))
                return;
        c.control = control;
        c.name = "the profile's line naming a missing module, root";
        run_open(&c, PAM_SUCCESS);
        c.name = "the profile's line naming a missing module, alice";
        c.user = "alice";
        run_open(&c, PAM_SUCCESS);

        /* the module that is there still refuses a managed login nsd cannot serve */
        c = (struct pam_case) { .name = "the profile's line, nsd down, alice",
                                .user = "alice",
                                .args = RANGE " socket=/nonexistent/nsd.sock",
                                .control = control,
                                .extra = PERMIT };
        run_open(&c, PAM_SESSION_ERR);
}

/* ---- crossing users: root and unmanaged users leave a namespace nsd made -------------------- */

/* Did the session end up in PID 1's mount namespace (true) or stay in the child's own? */
static bool moved_to_init(void) {
        return res.ns_after != 0 && res.ns_after == res.init_ns && res.ns_before != res.init_ns;
}

static void case_crossing(void) {
        struct pam_case c = { .user = "root", .args = "debug socket=@SOCKET@", .extra = PERMIT };

        if (!is_root) {
                tap_skip("crossing users: need root for a mount namespace and setns()");
                return;
        }
        if (mkdir(made_path, 0755) < 0 && errno != EEXIST)
                tap_bail_errno(made_path);

        c.name = "root, in a namespace nsd made";
        c.sandbox = SANDBOX_NS_MADE;
        if (run_sandboxed(&c, PAM_SUCCESS)) {
                ok(moved_to_init(), "%s: the session is in PID 1's mount namespace", c.name) ||
                        (show_log(), 0);
                is_int(rec.connections, 0, "%s: nsd was not asked", c.name);
                CHECK_LOG(&c, "moved the session of user 'root' into the initial mount namespace: "
                              "it is in a mount namespace nsd made");
        }

        c.name = "root, chrooted into the root of a namespace nsd made (mode=chroot)";
        c.sandbox = SANDBOX_CHROOT_MADE;
        if (mkdir(chroot_path, 0755) < 0 && errno != EEXIST)
                tap_bail_errno(chroot_path);
        if (run_sandboxed(&c, PAM_SUCCESS)) {
                ok(!res.root_was_init && res.root_is_init && res.ns_after == res.ns_before &&
                           res.ns_after == res.init_ns,
                   "%s: the session's root is PID 1's again, in the same namespace", c.name) ||
                        (show_log(), 0);
                CHECK_LOG(&c,
                          "its root directory is the root of a namespace nsd made (mode=chroot)");
        }
        c.sandbox = SANDBOX_NS_MADE;

        c.name = "root, nsd down, in a namespace nsd made";
        c.args = "socket=/nonexistent/nsd.sock";
        /* the record is beside socket=: none here, so the session stays */
        if (run_sandboxed(&c, PAM_SUCCESS)) {
                ok(!moved_to_init() && res.ns_after == res.ns_before,
                   "%s, record elsewhere: the session stays", c.name);
                is_int(log_lines(), 0, "%s: not a word in the log", c.name);
        }

        c.name = "root, in a namespace nsd did not make (a container, a sandbox)";
        c.args = "debug socket=@SOCKET@";
        c.sandbox = SANDBOX_NS_FOREIGN;
        if (run_sandboxed(&c, PAM_SUCCESS)) {
                ok(res.ns_after == res.ns_before && res.ns_after != res.init_ns,
                   "%s: the session stays in its namespace", c.name);
                CHECK_LOG(&c, "the session of user 'root' stays where it is: it is in a mount "
                              "namespace nsd did not make");
        }

        c.name = "root, in a namespace named in a record others may write to";
        c.sandbox = SANDBOX_NS_UNTRUSTED;
        if (run_sandboxed(&c, PAM_SUCCESS)) {
                ok(res.ns_after == res.ns_before, "%s: the session stays", c.name);
                CHECK_LOG(&c, "nsd's record of the namespaces it made cannot be trusted");
        }

        c.name = "root, unmanaged=stay, in a namespace nsd made";
        c.args = "debug unmanaged=stay socket=@SOCKET@";
        c.sandbox = SANDBOX_NS_MADE;
        if (run_sandboxed(&c, PAM_SUCCESS)) {
                ok(res.ns_after == res.ns_before, "%s: the session stays, as before", c.name);
                CHECK_NO_LOG(&c, "moved the session");
        }

        c.name = "root, a bad argument, in a namespace nsd made";
        c.args = "timeout=forever socket=@SOCKET@";
        if (run_sandboxed(&c, PAM_SUCCESS))
                ok(moved_to_init(), "%s: not refused, and moved", c.name);

        c = (struct pam_case) { .name = "uid 500 (unmanaged), in a namespace nsd made",
                                .user = "sys",
                                .args = RANGE " debug socket=@SOCKET@",
                                .extra = PERMIT,
                                .sandbox = SANDBOX_NS_MADE };
        if (run_sandboxed(&c, PAM_SUCCESS)) {
                ok(moved_to_init(), "%s: the session is in PID 1's mount namespace", c.name);
                is_int(rec.connections, 0, "%s: nsd was not asked", c.name);
        }

        c.name = "skip_users, in a namespace nsd made";
        c.user = "alice";
        c.args = RANGE " skip_users=alice socket=@SOCKET@";
        run_case(&c);
        if (sandbox_ran(&c))
                ok(moved_to_init(), "%s: the session is in PID 1's mount namespace", c.name);

        c.name = "not managed by nsd's policy (ENXIO), in a namespace nsd made";
        c.args = RANGE " socket=@SOCKET@";
        c.cfg = (struct fake_nsd_config) { .join_error = -ENXIO, .join_message = "not in Users=" };
        if (run_sandboxed(&c, PAM_SUCCESS))
                ok(moved_to_init(), "%s: the session is in PID 1's mount namespace", c.name);

        /* a managed target goes to its own namespace, as before (the fake hands out the
         * child's own namespace: it stays where it is, and is registered) */
        c = (struct pam_case) { .name = "managed alice, in a namespace nsd made",
                                .user = "alice",
                                .args = RANGE " socket=@SOCKET@",
                                .sandbox = SANDBOX_NS_MADE };
        if (run_sandboxed(&c, PAM_SUCCESS))
                ok(rec.join_sessions == 1 && res.ns_after == res.ns_before,
                   "%s: joined the namespace nsd handed out", c.name);
}

/* ---- main ----------------------------------------------------------------------------------- */

static int write_nss_files(const char *dir) {
        char path[PATH_MAX];
        FILE *f;

        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        snprintf(path, sizeof(path), "%s/passwd", dir);
        f = fopen(path, "we");
        if (!f)
                return -errno;
        fprintf(f, "root:x:0:0:root:/root:/bin/sh\n"
                   "alice:x:1500:1500::/home/alice:/bin/sh\n"
                   "bob:x:1600:1600::/home/bob:/bin/sh\n"
                   "sys:x:500:500::/:/bin/false\n"
                   "high:x:70000:70000::/:/bin/sh\n"
                   "mid:x:2500:2500::/:/bin/sh\n");
        fclose(f);
        snprintf(path, sizeof(path), "%s/group", dir);
        f = fopen(path, "we");
        if (!f)
                return -errno;
        fprintf(f, "root:x:0:\nalice:x:1500:\nbob:x:1600:\nsys:x:500:\nhigh:x:70000:\nmid:x:2500:\n"
                   "fuse:x:3000:bob\n");
        fclose(f);
        return 0;
}

int main(int argc, char *argv[]) {
        is_root = geteuid() == 0;

        test_args();
        test_errno_map();
        test_login_defs();
        test_leave_decide();
        test_dlopen();

        if (argc < 2 || !getenv("NSS_WRAPPER_PASSWD")) {
                tap_skip("the return codes need nss_wrapper (run through meson, libnss-wrapper "
                         "installed)");
                return tap_done();
        }
        if (write_nss_files(argv[1]) < 0 || !mkdtemp(tmpdir))
                tap_bail_errno("setup");
        chmod(tmpdir, 0755); /* the sockets must be reachable for the sandbox's bind mounts */
        snprintf(sock_path, sizeof(sock_path), "%s/nsd.sock", tmpdir);
        snprintf(dead_path, sizeof(dead_path), "%s/dead.sock", tmpdir);
        snprintf(stopped_path, sizeof(stopped_path), "%s/stopped.sock", tmpdir);
        snprintf(log_path, sizeof(log_path), "%s/log", tmpdir);
        snprintf(defs_path, sizeof(defs_path), "%s/login.defs", tmpdir);
        snprintf(made_path, sizeof(made_path), "%s/" NSD_MADE_DIR_NAME, tmpdir);
        snprintf(chroot_path, sizeof(chroot_path), "%s/root", tmpdir);
        snprintf(service_path, sizeof(service_path), "%s/%s", tmpdir, SERVICE);
        tap_diag("running as uid %u%s", (unsigned) geteuid(), is_root ? ", root" : "");

        case_root();
        case_unmanaged();
        case_skip();
        case_bad_values();
        case_nsd_down();
        case_nsd_stuck();
        case_not_yet();
        case_join("1.2, mode=setns", RANGE " debug socket=@SOCKET@", 2, false);
        case_join("1.2, mode=chroot", RANGE " debug mode=chroot socket=@SOCKET@", 2, true);
        case_join("1.1 (fallback), mode=setns", RANGE " debug socket=@SOCKET@", 1, false);
        case_refused();
        case_password();
        case_threaded();
        case_sandbox();
        case_crossing();
        case_missing_module();

        unlink(service_path);
        unlink(log_path);
        unlink(sock_path);
        unlink(dead_path);
        rmdir(made_path);
        rmdir(chroot_path);
        if (rmdir(tmpdir) < 0)
                tap_diag("cannot remove %s: %s", tmpdir, strerror(errno));
        return tap_done();
}
