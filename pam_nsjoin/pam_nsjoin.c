/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pam_nsjoin: put every login of a user into that user's one persistent mount namespace,
 * which nsd keeps. Session module only. See pam_nsjoin(8).
 *
 * The login path is sacred (DESIGN.md), so open_session goes in this order:
 *   1. Decide locally, without nsd, whether there is anything to do: skip_users, root (by
 *      name before any lookup, then uid 0), uids outside min_uid..max_uid and users outside
 *      only_group are moved into no user's namespace, before any connection is made. Root
 *      and unmanaged users never depend on nsd being up. Such a session, when it was opened
 *      inside a namespace nsd made (sudo -i from alice's login), leaves it for the initial
 *      one; that decision, too, is local (nsd's record under /run/nsd/made, /proc/1): see
 *      session_not_moved().
 *   2. Within ONE deadline (timeout=): connect (root's socket, else the user socket) and
 *      JOIN_SESSION (JOIN + SESSION_OPEN in one round trip; libnsclient falls back to the two
 *      requests with an nsd older than 1.2), retrying nsd's -EAGAIN "not yet available" with
 *      backoff. Any failure: nothing changed, one LOG_ERR line.
 *   3. Enter (setns, or chroot mode). A failure: the process is where it was, and the
 *      session just opened is closed again on the same connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>
#include <security/pam_modutil.h>

#include "cleanup.h"
#include "nsclient.h"
#include "nsd-protocol.h"
#include "nsjoin-util.h"
#include "nss-util.h"
#include "time-util.h"

#define SESSION_DATA_KEY "pam_nsjoin.session"
#define AUTHTOK_DATA_KEY "pam_nsjoin.authtok"
#define LOGIN_DEFS "/etc/login.defs"
/* how much of an only_group= name a debug line quotes */
#define NSJOIN_GROUP_NAME_LOG_MAX 64

/* waits between JOIN attempts answered "not yet available": 50 ms, doubling, at most 1 s */
#define NOT_YET_BACKOFF_FIRST_USEC (50 * 1000)
#define NOT_YET_BACKOFF_MAX_USEC (1000 * 1000)
/* closing a session after a failed enter, when the deadline has already passed */
#define CLOSE_AFTER_FAILURE_MIN_USEC (100 * 1000)

/* What open_session registered, for close_session. */
struct nsjoin_session {
        uid_t uid;
        pid_t pid;
        uint64_t id;
};

/* pam_syslog() with errno set to -r, so the format can say %m (pam_vsyslog keeps errno for
 * it); the one way this module says why something failed. */
__attribute__((format(printf, 4, 5))) static void pam_syslog_errno(pam_handle_t *pamh, int prio,
                                                                   int r, const char *fmt, ...) {
        int saved = errno;
        va_list ap;

        errno = r < 0 ? -r : r;
        va_start(ap, fmt);
        pam_vsyslog(pamh, prio, fmt, ap);
        va_end(ap);
        errno = saved;
}

static void session_data_free(pam_handle_t *pamh, void *data, int error_status) {
        free(data);
}

/* Microseconds left until deadline, 0 when it has passed. */
static uint64_t time_left(uint64_t deadline) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        return now < deadline ? deadline - now : 0;
}

/* "5 s", "0.25 s" */
static const char *format_seconds(uint64_t usec, char buf[static 32]) {
        int n = snprintf(buf, 32, "%" PRIu64 ".%06" PRIu64, usec / 1000000, usec % 1000000);

        while (n > 0 && buf[n - 1] == '0')
                buf[--n] = 0;
        if (n > 0 && buf[n - 1] == '.')
                buf[--n] = 0;
        snprintf(buf + n, (size_t) (32 - n), " s");
        return buf;
}

/* Parse argv. Unknown arguments are logged (and ignored) here; the first bad value is
 * returned in *ret_bad / *ret_hint for the caller, which decides what it means. */
static void args_parse(pam_handle_t *pamh, int argc, const char **argv, struct nsjoin_args *ret,
                       const char **ret_bad, const char **ret_hint) {
        *ret_bad = *ret_hint = NULL;
        nsjoin_args_init(ret);
        for (int i = 0; i < argc; i++) {
                const char *hint = NULL;

                switch (nsjoin_args_parse_one(ret, argv[i], &hint)) {
                case NSJOIN_ARG_OK:
                        break;
                case NSJOIN_ARG_UNKNOWN:
                        pam_syslog(pamh, LOG_WARNING, "unknown argument '%s', ignoring", argv[i]);
                        break;
                case NSJOIN_ARG_BAD_VALUE:
                        if (!*ret_bad) {
                                *ret_bad = argv[i];
                                *ret_hint = hint;
                        }
                        break;
                }
        }
}

/* One bound of the managed range from login.defs' text v (NULL: not set there), else dflt. */
static uid_t login_defs_uid(pam_handle_t *pamh, const char *key, const char *v, uid_t dflt) {
        uid_t uid;

        if (!v)
                return dflt;
        if (nsjoin_parse_uid(v, &uid) < 0) {
                pam_syslog(pamh, LOG_WARNING, "%s of " LOGIN_DEFS " is '%s', not a uid; using %u",
                           key, v, (unsigned) dflt);
                return dflt;
        }
        return uid;
}

/* UID_MIN and UID_MAX of login.defs into *ret_min and *ret_max (NULL where not set, or when
 * the file cannot be read). */
static void login_defs_read(char **ret_min, char **ret_max) {
        _cleanup_close_ int fd = open(LOGIN_DEFS, O_RDONLY | O_CLOEXEC | O_NOCTTY);

        if (fd < 0 || nsjoin_login_defs_uid_range(fd, ret_min, ret_max) < 0)
                *ret_min = *ret_max = NULL;
}

/* The managed range: min_uid= and max_uid=, else UID_MIN and UID_MAX of login.defs (read
 * once, and only when an argument is missing), else the defaults. */
static void managed_range(pam_handle_t *pamh, const struct nsjoin_args *a, uid_t *ret_min,
                          uid_t *ret_max) {
        _cleanup_free_ char *min = NULL, *max = NULL;

        if (!a->min_uid_set || !a->max_uid_set)
                login_defs_read(&min, &max);
        *ret_min = a->min_uid_set ? a->min_uid
                                  : login_defs_uid(pamh, "UID_MIN", min, NSJOIN_MIN_UID_DEFAULT);
        *ret_max = a->max_uid_set ? a->max_uid
                                  : login_defs_uid(pamh, "UID_MAX", max, NSJOIN_MAX_UID_DEFAULT);
}

/* ---- crossing users -------------------------------------------------------------------- */

/* nsd's record of the namespaces it made (nsd-protocol.h, NSD_MADE_*): beside its socket
 * when socket= names one, else the default. */
static void made_dir_path(const struct nsjoin_args *a, char buf[static PATH_MAX]) {
        const char *slash;

        if (!a->socket) {
                snprintf(buf, PATH_MAX, "%s", NSD_MADE_DIR_DEFAULT);
                return;
        }
        slash = strrchr(a->socket, '/'); /* socket= is absolute */
        snprintf(buf, PATH_MAX, "%.*s/%s", (int) (slash - a->socket), a->socket, NSD_MADE_DIR_NAME);
}

/* Does nsd's record in dir hold name? 1 or 0 (also 0 when there is no record at all: nsd
 * made nothing); -EPERM when the folder is not root's alone, another -errno when it cannot
 * be read. */
static int made_has(const char *dir, const char *name) {
        _cleanup_close_ int fd = -1;
        struct stat st;

        fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_uid != 0 || (st.st_mode & 0022))
                return -EPERM; /* written by someone else than root: no record of nsd's */
        if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        return S_ISREG(st.st_mode) && st.st_uid == 0;
}

/* The mount id of path's mount (following a last magic link: /proc/1/root), or -errno. */
static int mount_id_of(const char *path, uint64_t *ret) {
        struct statx stx;

        if (statx(AT_FDCWD, path, AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) < 0)
                return -errno;
        if (!(stx.stx_mask & STATX_MNT_ID))
                return -EOPNOTSUPP; /* before Linux 5.8 */
        *ret = stx.stx_mnt_id;
        return 0;
}

/* Where this process is, in the order nsjoin_leave_decide() reads it; nsd's record and the
 * root directories only where they matter. */
static void place_gather(const char *made_dir, struct nsjoin_place *p) {
        struct stat self, init;
        char name[NSD_MADE_NAME_MAX];
        int r;

        *p = (struct nsjoin_place) {};
        if (stat("/proc/self/ns/mnt", &self) < 0 || stat("/proc/1/ns/mnt", &init) < 0) {
                p->ns_error = -errno;
                return;
        }
        p->ns = self.st_ino;
        p->init_ns = init.st_ino;
        if (p->ns != p->init_ns) {
                snprintf(name, sizeof(name), NSD_MADE_NS_FMT, p->ns);
                r = made_has(made_dir, name);
                p->made_error = r < 0 ? r : 0;
                p->ns_made = r > 0;
                return;
        }
        r = mount_id_of("/", &p->root_mnt);
        if (r >= 0)
                r = mount_id_of("/proc/1/root", &p->init_root_mnt);
        if (r < 0) {
                p->root_error = r;
                return;
        }
        if (p->root_mnt != p->init_root_mnt) {
                snprintf(name, sizeof(name), NSD_MADE_ROOT_FMT, p->root_mnt);
                r = made_has(made_dir, name);
                p->made_error = r < 0 ? r : 0;
                p->root_made = r > 0;
        }
}

/* Into PID 1's mount namespace (setns), or, for NSJOIN_LEAVE_ROOT and for a multi-threaded
 * caller with mode=chroot, to PID 1's root directory (chroot: all or nothing). */
static int leave_to_initial(const struct nsjoin_args *a, enum nsjoin_leave how,
                            enum nsjoin_step *ret_step) {
        _cleanup_close_ int fd = -1;
        int r;

        if (how == NSJOIN_LEAVE_NS) {
                *ret_step = NSJOIN_STEP_ENTER_SETNS;
                fd = open("/proc/1/ns/mnt", O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                r = nsc_enter_setns(&(struct nsc_join_result) { .root_fd = -1, .ns_fd = fd });
                if (r != -EINVAL || a->mode != NSJOIN_MODE_CHROOT)
                        return r;
                cleanup_closep(&fd);
                fd = -1;
        }
        *ret_step = NSJOIN_STEP_ENTER_CHROOT;
        fd = open("/proc/1/root", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return nsc_enter_chroot(&(struct nsc_join_result) { .root_fd = fd, .ns_fd = -1 }, NULL);
}

/*
 * The session of root or of a user the module moves into no namespace (why: for the debug
 * line). With unmanaged=leave, when it was opened inside a namespace nsd made, it leaves it
 * for the initial one: only a namespace nsd made is ever left, and everything here is local
 * (no connection to nsd). Never refuses: whatever cannot be done leaves the session where it
 * was (one warning line). PAM_SUCCESS when it moved, PAM_IGNORE when not.
 */
static int session_not_moved(pam_handle_t *pamh, const struct nsjoin_args *a, const char *user,
                             const char *why) {
        char dir[PATH_MAX];
        struct nsjoin_place p;
        enum nsjoin_leave how;
        enum nsjoin_step step;
        const char *where, *expl;
        int r;

        if (a->debug)
                pam_syslog(pamh, LOG_DEBUG,
                           "user '%s' %s: not moving the session into a user's "
                           "namespace",
                           user, why);
        if (a->unmanaged == NSJOIN_UNMANAGED_STAY)
                return PAM_IGNORE;

        made_dir_path(a, dir);
        place_gather(dir, &p);
        how = nsjoin_leave_decide(&p, &where);
        if (how != NSJOIN_LEAVE_NS && how != NSJOIN_LEAVE_ROOT) {
                if (a->debug)
                        pam_syslog(pamh, LOG_DEBUG,
                                   "the session of user '%s' stays where it is: %s", user, where);
                return PAM_IGNORE;
        }
        r = leave_to_initial(a, how, &step);
        if (r < 0) {
                nsjoin_errno_to_pam(step, r, &expl);
                pam_syslog_errno(pamh, LOG_WARNING, r,
                                 "cannot move the session of user '%s' out of mnt:[%" PRIu64
                                 "], %s, into the initial mount namespace: %s (%m); it stays "
                                 "there",
                                 user, p.ns, where, expl);
                return PAM_IGNORE;
        }
        if (a->debug)
                pam_syslog(pamh, LOG_DEBUG,
                           "moved the session of user '%s' into the initial mount namespace: %s "
                           "(mnt:[%" PRIu64 "]%s)",
                           user, where, p.ns,
                           step == NSJOIN_STEP_ENTER_CHROOT ? ", by chroot to PID 1's root" : "");
        return PAM_SUCCESS;
}

/* Connect within deadline: socket= when given; else, running as root, root's own socket,
 * and the user socket only when that does not exist (an nsd older than 1.2). */
static int nsd_connect(const struct nsjoin_args *a, uint64_t deadline, nsc_conn **ret,
                       const char **ret_path) {
        uint64_t left = time_left(deadline);
        int r;

        *ret_path = a->socket
                            ?: geteuid() == 0 ? NSD_ROOT_SOCKET_PATH_DEFAULT
                                              : NSD_SOCKET_PATH_DEFAULT;
        if (left == 0)
                return -ETIMEDOUT;
        if (a->socket) {
                *ret_path = a->socket;
                return nsc_connect_timeout(a->socket, left, ret);
        }
        if (geteuid() == 0) {
                *ret_path = NSD_ROOT_SOCKET_PATH_DEFAULT;
                r = nsc_connect_timeout(NSD_ROOT_SOCKET_PATH_DEFAULT, left, ret);
                if (r != -ENOENT)
                        return r;
                left = time_left(deadline);
                if (left == 0)
                        return -ETIMEDOUT;
        }
        *ret_path = NSD_SOCKET_PATH_DEFAULT;
        return nsc_connect_timeout(NSD_SOCKET_PATH_DEFAULT, left, ret);
}

/* The one LOG_ERR line of a failed join; returns the PAM code. */
static int log_join_failure(pam_handle_t *pamh, const struct nsjoin_args *a, const char *user,
                            uid_t uid, enum nsjoin_step step, int r, const char *path,
                            nsc_conn *conn, unsigned attempts) {
        const char *expl, *reason = conn ? nsc_last_error_message(conn) : NULL;
        int code = nsjoin_errno_to_pam(step, r, &expl);
        char extra[160] = "", t[32];

        if (r == -ETIMEDOUT && step == NSJOIN_STEP_JOIN && reason)
                /* nsd's own ETIMEDOUT (an error reply, with its reason): nsd did answer, within
                 * timeout=; what it waited for did not (LookupTimeoutSec=) */
                expl = "nsd gave up waiting for what it needed to decide";
        else if (r == -ETIMEDOUT && step == NSJOIN_STEP_JOIN)
                snprintf(extra, sizeof(extra), "; gave up after timeout=%s, socket %s",
                         format_seconds(a->timeout_usec, t), path);
        else if (r == -ETIMEDOUT)
                snprintf(extra, sizeof(extra), "; gave up after timeout=%s",
                         format_seconds(a->timeout_usec, t));
        else if (r == -NSD_ERRNO_NOT_YET)
                snprintf(extra, sizeof(extra), "; asked %u times within timeout=%s", attempts,
                         format_seconds(a->timeout_usec, t));

        if (step == NSJOIN_STEP_CONNECT)
                pam_syslog_errno(pamh, LOG_ERR, r,
                                 "cannot join the mount namespace of user '%s' (uid %u): nsd at %s "
                                 "%s (%m)%s",
                                 user, (unsigned) uid, path, expl, extra);
        else if (step == NSJOIN_STEP_JOIN)
                pam_syslog_errno(pamh, LOG_ERR, r,
                                 "cannot join the mount namespace of user '%s' (uid %u): %s "
                                 "(%m)%s%s%s",
                                 user, (unsigned) uid, expl, reason ? "; nsd says: " : "",
                                 reason ?: "", extra);
        else
                pam_syslog_errno(pamh, LOG_ERR, r,
                                 "cannot join the mount namespace of user '%s' (uid %u): %s (%m)",
                                 user, (unsigned) uid, expl);
        return code;
}

/* Is user (primary group gid) a member of group, by NSS? 1, 0, or -errno with a LOG_ERR line. */
static int user_in_only_group(pam_handle_t *pamh, const char *user, gid_t gid, const char *group) {
        _cleanup_free_ struct group *gr = NULL;
        _cleanup_free_ gid_t *groups = NULL;
        size_t n = 0;
        int r;

        r = nss_group_by_name(group, &gr);
        if (r == -ENOENT) {
                pam_syslog(pamh, LOG_ERR,
                           "bad argument 'only_group=%s' (no such group), refusing the session",
                           group);
                return r;
        }
        if (r < 0) {
                pam_syslog_errno(pamh, LOG_ERR, r, "cannot look up group '%s' (only_group=): %m",
                                 group);
                return r;
        }
        r = nss_user_groups(user, gid, &groups, &n);
        if (r < 0) {
                pam_syslog_errno(pamh, LOG_ERR, r, "cannot list the groups of user '%s': %m", user);
                return r;
        }
        for (size_t i = 0; i < n; i++)
                if (groups[i] == gr->gr_gid)
                        return 1;
        return 0;
}

/* ---- the login password of a volume (nsd.conf(5), FUSE VOLUMES) -------------------------
 *
 * auth keeps the PAM token for this transaction only, in a page of its own that is locked in
 * memory (when the limit allows) and left out of core dumps; open_session hands it to nsd in a
 * sealed memfd when nsd says a volume of the namespace waits for it, and wipes it either way,
 * as does pam_end(). It is never logged, written or put into the environment. */

struct authtok {
        size_t map_size;
        size_t len;
        char user[LOGIN_NAME_MAX]; /* whose it is: PAM_USER when auth ran */
        char text[];
};

static void authtok_free(pam_handle_t *pamh, void *data, int error_status) {
        struct authtok *t = data;
        size_t size;

        if (!t)
                return;
        size = t->map_size;
        explicit_bzero(t, size);
        (void) munmap(t, size);
}

PAM_EXTERN int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
        const char *tok = NULL, *user = NULL;
        struct authtok *t;
        size_t len, size;

        if (pam_get_item(pamh, PAM_AUTHTOK, (const void **) &tok) != PAM_SUCCESS || !tok ||
            pam_get_item(pamh, PAM_USER, (const void **) &user) != PAM_SUCCESS || !user ||
            !user[0] || strlen(user) >= sizeof(t->user))
                return PAM_IGNORE;
        len = strlen(tok);
        if (len == 0 || len > NSC_CREDENTIAL_MAX)
                return PAM_IGNORE;
        size = (sizeof(*t) + len + 4095) & ~(size_t) 4095;
        t = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (t == MAP_FAILED)
                return PAM_IGNORE;
        (void) madvise(t, size, MADV_DONTDUMP);
        (void) mlock(t, size); /* best effort: RLIMIT_MEMLOCK may say no */
        t->map_size = size;
        t->len = len;
        memcpy(t->user, user, strlen(user) + 1);
        memcpy(t->text, tok, len);
        if (pam_set_data(pamh, AUTHTOK_DATA_KEY, t, authtok_free) != PAM_SUCCESS)
                authtok_free(pamh, t, 0);
        return PAM_IGNORE; /* it authenticates nobody */
}

PAM_EXTERN int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
        return PAM_IGNORE;
}

/* After the join: the password to nsd when a volume waits for it (ns_flags), then gone. A
 * failure is logged and costs the login nothing: the volume stays locked. */
static void credential_hand_over(pam_handle_t *pamh, const struct nsjoin_args *a, nsc_conn *conn,
                                 const char *user, uid_t uid, uint32_t ns_flags,
                                 uint64_t deadline) {
        const struct authtok *t = NULL;
        unsigned waiting = 0;
        uint64_t left;
        int fd, r;

        if (pam_get_data(pamh, AUTHTOK_DATA_KEY, (const void **) &t) != PAM_SUCCESS || !t)
                return;
        if (strcmp(t->user, user) != 0) {
                /* sudo -u USER asks the password of the one who runs it, not USER's: never
                 * another user's password for USER's volumes */
                if (a->debug)
                        pam_syslog(pamh, LOG_DEBUG,
                                   "the password of this transaction is user '%s''s, not "
                                   "'%s''s: not handed to nsd",
                                   t->user, user);
        } else if (ns_flags & NSC_NS_CREDENTIAL_WANTED) {
                left = time_left(deadline);
                (void) nsc_set_timeout(conn, left > CLOSE_AFTER_FAILURE_MIN_USEC
                                                     ? left
                                                     : CLOSE_AFTER_FAILURE_MIN_USEC);
                fd = nsc_credential_memfd(t->text, t->len);
                r = fd < 0 ? fd : nsc_credential_give(conn, uid, fd, &waiting);
                if (fd >= 0)
                        (void) close(fd);
                if (r < 0)
                        pam_syslog_errno(pamh, LOG_WARNING, r,
                                         "cannot hand the login password of user '%s' to nsd "
                                         "for the volumes that take it (%m); they stay locked "
                                         "until a login with a password",
                                         user);
                else if (a->debug)
                        pam_syslog(pamh, LOG_DEBUG,
                                   "handed the login password of user '%s' to nsd for the "
                                   "volumes that take it (%u waiting)",
                                   user, waiting);
        }
        /* replaced: authtok_free() wipes it now */
        (void) pam_set_data(pamh, AUTHTOK_DATA_KEY, NULL, NULL);
}

PAM_EXTERN int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
        _nsc_cleanup_disconnect_ nsc_conn *conn = NULL;
        _cleanup_close_ int root_fd = -1, ns_fd = -1;
        _cleanup_free_ struct passwd *pw = NULL;
        struct nsc_join_result j;
        struct nsjoin_args a;
        struct nsjoin_session *s;
        const char *user = NULL, *service = NULL, *bad = NULL, *hint = NULL, *path = NULL;
        char service_buf[NSD_SERVICE_MAX];
        uint64_t session_id = 0, deadline, backoff = NOT_YET_BACKOFF_FIRST_USEC;
        unsigned sessions = 0, attempts = 0;
        uid_t uid, min_uid, max_uid;
        pid_t pid = getpid();
        int r, used_setns = 0, fallback;

        args_parse(pamh, argc, argv, &a, &bad, &hint);

        if (pam_get_item(pamh, PAM_USER, (const void **) &user) != PAM_SUCCESS || !user ||
            !user[0]) {
                pam_syslog(pamh, LOG_ERR, "cannot join a mount namespace: no user name set");
                return PAM_SESSION_ERR;
        }

        /* 1. the local decision */
        if (nsjoin_name_in_list(a.skip_users, user))
                return session_not_moved(pamh, &a, user, "is in skip_users");
        if (strcmp(user, "root") == 0)
                uid = 0; /* no lookup: root's login does not wait on NSS either */
        else {
                r = nss_user_by_name(user, &pw);
                if (r < 0) {
                        if (r == -ENOENT)
                                pam_syslog(pamh, LOG_ERR, "cannot look up user '%s': no such user",
                                           user);
                        else
                                pam_syslog_errno(pamh, LOG_ERR, r, "cannot look up user '%s': %m",
                                                 user);
                        return nsjoin_errno_to_pam(NSJOIN_STEP_USER, r, NULL);
                }
                uid = pw->pw_uid;
        }
        if (uid == 0) {
                /* nsd never gives root a namespace: whatever the arguments say (even a bad
                 * one), root's login does not depend on this module */
                if (bad)
                        pam_syslog(pamh, LOG_ERR,
                                   "bad argument '%s' (%s); root's session is not refused, every "
                                   "other user's is",
                                   bad, hint);
                return session_not_moved(pamh, &a, user, "is root");
        }
        if (bad) {
                /* a typo must not silently weaken isolation */
                pam_syslog(pamh, LOG_ERR, "bad argument '%s' (%s), refusing the session", bad,
                           hint);
                return PAM_SESSION_ERR;
        }
        managed_range(pamh, &a, &min_uid, &max_uid);
        if (min_uid > max_uid) {
                pam_syslog(pamh, LOG_ERR,
                           "bad arguments: min_uid=%u is above max_uid=%u%s, refusing the session",
                           (unsigned) min_uid, (unsigned) max_uid,
                           a.min_uid_set && a.max_uid_set ? ""
                                                          : " (the other one from " LOGIN_DEFS ")");
                return PAM_SESSION_ERR;
        }
        if (uid < min_uid || uid > max_uid) {
                char why[96];

                snprintf(why, sizeof(why), "(uid %u) is outside min_uid=%u..max_uid=%u",
                         (unsigned) uid, (unsigned) min_uid, (unsigned) max_uid);
                return session_not_moved(pamh, &a, user, why);
        }
        if (a.only_group) {
                r = user_in_only_group(pamh, user, pw->pw_gid, a.only_group);
                if (r < 0)
                        return nsjoin_errno_to_pam(NSJOIN_STEP_USER, r, NULL);
                if (r == 0) {
                        char why[64 + NSJOIN_GROUP_NAME_LOG_MAX];

                        snprintf(why, sizeof(why), "is not in group '%.*s' (only_group=)",
                                 NSJOIN_GROUP_NAME_LOG_MAX, a.only_group);
                        return session_not_moved(pamh, &a, user, why);
                }
        }

        if (pam_get_item(pamh, PAM_SERVICE, (const void **) &service) != PAM_SUCCESS)
                service = NULL;
        if (service) {
                snprintf(service_buf, sizeof(service_buf), "%s", service);
                service = service_buf;
        }

        /* 2. nsd, within one deadline: nothing changes in this process until both
         * descriptors are here */
        deadline = now_usec(CLOCK_MONOTONIC) + a.timeout_usec;
        r = nsd_connect(&a, deadline, &conn, &path);
        if (r < 0)
                return log_join_failure(pamh, &a, user, uid, NSJOIN_STEP_CONNECT, r, path, NULL, 0);
        for (;;) {
                uint64_t left = time_left(deadline);

                if (left == 0) {
                        r = attempts > 0 ? r : -ETIMEDOUT;
                        break;
                }
                (void) nsc_set_timeout(conn, left);
                attempts++;
                r = nsc_join_session(conn, uid, 0, pid, service, &j, &session_id, &sessions);
                if (r != -NSD_ERRNO_NOT_YET)
                        break;
                /* not yet available: wait and ask again, if there is time for another try */
                if (time_left(deadline) <= backoff)
                        break;
                if (a.debug)
                        pam_syslog(pamh, LOG_DEBUG,
                                   "nsd: the namespace of user '%s' is not yet available, asking "
                                   "again in %u ms",
                                   user, (unsigned) (backoff / 1000));
                (void) nanosleep(&(struct timespec) { .tv_sec = (time_t) (backoff / 1000000),
                                                      .tv_nsec = (long) (backoff % 1000000) *
                                                                 1000 },
                                 NULL);
                backoff = backoff * 2 > NOT_YET_BACKOFF_MAX_USEC ? NOT_YET_BACKOFF_MAX_USEC
                                                                 : backoff * 2;
        }
        if (r == -NSD_ERRNO_NOT_MANAGED) {
                /* nsd's policy (Users=, Groups=) is narrower than the module's range */
                nsc_disconnect(TAKE_PTR(conn));
                return session_not_moved(pamh, &a, user, "is not managed by nsd's policy");
        }
        if (r < 0)
                return log_join_failure(pamh, &a, user, uid, NSJOIN_STEP_JOIN, r, path, conn,
                                        attempts);
        fallback = r;
        root_fd = j.root_fd;
        ns_fd = j.ns_fd;

        /* 3. enter */
        if (a.mode == NSJOIN_MODE_SETNS)
                r = nsc_enter_setns(&j);
        else
                r = nsc_enter_chroot(&j, &used_setns);
        if (r < 0) {
                uint64_t left = time_left(deadline);
                int q;

                /* the session was opened with the join: close it, on the same connection */
                (void) nsc_set_timeout(conn, left > CLOSE_AFTER_FAILURE_MIN_USEC
                                                     ? left
                                                     : CLOSE_AFTER_FAILURE_MIN_USEC);
                q = nsc_session_close(conn, uid, pid, session_id, NULL);
                if (q < 0)
                        pam_syslog_errno(pamh, LOG_WARNING, q,
                                         "cannot close session %" PRIu64
                                         " of uid %u again after the failure below (%m); nsd will "
                                         "notice when process %d exits",
                                         session_id, (unsigned) uid, (int) pid);
                return log_join_failure(pamh, &a, user, uid,
                                        a.mode == NSJOIN_MODE_SETNS ? NSJOIN_STEP_ENTER_SETNS
                                                                    : NSJOIN_STEP_ENTER_CHROOT,
                                        r, path, NULL, attempts);
        }
        if (a.debug)
                pam_syslog(pamh, LOG_DEBUG,
                           "entered the mount namespace of user '%s' (uid %u, mnt:[%" PRIu64
                           "]%s) by %s; session %" PRIu64 ", %u live, %s",
                           user, (unsigned) uid, j.ns_inode,
                           j.ns_flags & NSC_NS_CREATED ? ", created now" : "",
                           a.mode == NSJOIN_MODE_SETNS ? "setns(nsfs)"
                           : used_setns                ? "setns(root directory)"
                                                       : "fchdir+chroot",
                           session_id, sessions,
                           fallback ? "by JOIN + SESSION_OPEN (nsd < 1.2)" : "by one JOIN_SESSION");
        credential_hand_over(pamh, &a, conn, user, uid, j.ns_flags, deadline);
        /* the descriptors are not needed any more; the login must not inherit them */
        cleanup_closep(&root_fd);
        cleanup_closep(&ns_fd);
        root_fd = ns_fd = -1;

        s = malloc(sizeof(*s));
        if (!s || pam_set_data(pamh, SESSION_DATA_KEY, s, session_data_free) != PAM_SUCCESS) {
                free(s);
                pam_syslog(pamh, LOG_WARNING,
                           "cannot remember session %" PRIu64
                           " of user '%s' for close_session; nsd will notice its end when process "
                           "%d exits, ignoring",
                           session_id, user, (int) pid);
                return PAM_SUCCESS;
        }
        *s = (struct nsjoin_session) { .uid = uid, .pid = pid, .id = session_id };
        return PAM_SUCCESS;
}

PAM_EXTERN int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
        _nsc_cleanup_disconnect_ nsc_conn *conn = NULL;
        const struct nsjoin_session *s = NULL;
        const char *bad, *hint, *path = NULL;
        struct nsjoin_args a;
        unsigned left = 0;
        int r;

        /* a bad argument was reported by open_session, which then registered nothing */
        args_parse(pamh, argc, argv, &a, &bad, &hint);

        if (pam_get_data(pamh, SESSION_DATA_KEY, (const void **) &s) != PAM_SUCCESS || !s) {
                if (a.debug)
                        pam_syslog(pamh, LOG_DEBUG,
                                   "no session registered with nsd, nothing to close");
                return PAM_SUCCESS;
        }

        /* one connection, one SESSION_CLOSE, within the timeout */
        r = nsd_connect(&a, now_usec(CLOCK_MONOTONIC) + a.timeout_usec, &conn, &path);
        if (r >= 0)
                r = nsc_session_close(conn, s->uid, s->pid, s->id, &left);
        if (r < 0) {
                const char *expl, *reason = conn ? nsc_last_error_message(conn) : NULL;

                nsjoin_errno_to_pam(NSJOIN_STEP_SESSION_CLOSE, r, &expl);
                pam_syslog_errno(pamh, LOG_WARNING, r,
                                 "session %" PRIu64 " of uid %u: %s at %s (%m)%s%s, ignoring",
                                 s->id, (unsigned) s->uid, expl, path, reason ? "; nsd says: " : "",
                                 reason ?: "");
        } else if (a.debug)
                pam_syslog(pamh, LOG_DEBUG, "closed session %" PRIu64 " of uid %u, %u left", s->id,
                           (unsigned) s->uid, left);

        /* forget it: a second close_session must not close it again */
        (void) pam_set_data(pamh, SESSION_DATA_KEY, NULL, NULL);
        return PAM_SUCCESS;
}
