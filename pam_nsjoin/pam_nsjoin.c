/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pam_nsjoin: put every login of a user into that user's one persistent mount namespace,
 * which nsd keeps. Session module only. See pam_nsjoin(8).
 *
 * The login path is sacred (DESIGN.md), so open_session goes in this order:
 *   1. Decide locally, without nsd, whether there is anything to do: skip_users, uid 0,
 *      uids outside min_uid..max_uid and users outside only_group get PAM_IGNORE before any
 *      connection is made. Root and unmanaged users never depend on nsd being up.
 *   2. Within ONE deadline (timeout=): connect (root's socket, else the user socket) and
 *      JOIN_SESSION (JOIN + SESSION_OPEN in one round trip; libnsclient falls back to the two
 *      requests with an nsd older than 1.2), retrying nsd's -EAGAIN "not yet available" with
 *      backoff. Any failure: nothing changed, one LOG_ERR line.
 *   3. Enter (setns, or chroot mode). A failure: the process is where it was, and the
 *      session just opened is closed again on the same connection.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#define LOGIN_DEFS "/etc/login.defs"

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

/* UID_MIN / UID_MAX of login.defs when set there (and sound), else dflt. */
static uid_t login_defs_uid(pam_handle_t *pamh, const char *key, uid_t dflt) {
        _cleanup_free_ char *v = pam_modutil_search_key(pamh, LOGIN_DEFS, key);
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

        if (r == -ETIMEDOUT && step == NSJOIN_STEP_JOIN)
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
        if (nsjoin_name_in_list(a.skip_users, user)) {
                if (a.debug)
                        pam_syslog(pamh, LOG_DEBUG,
                                   "user '%s' is in skip_users, leaving the session alone", user);
                return PAM_IGNORE;
        }
        r = nss_user_by_name(user, &pw);
        if (r < 0) {
                if (r == -ENOENT)
                        pam_syslog(pamh, LOG_ERR, "cannot look up user '%s': no such user", user);
                else
                        pam_syslog_errno(pamh, LOG_ERR, r, "cannot look up user '%s': %m", user);
                return nsjoin_errno_to_pam(NSJOIN_STEP_USER, r, NULL);
        }
        uid = pw->pw_uid;
        if (uid == 0) {
                /* nsd never gives root a namespace: whatever the arguments say (even a bad
                 * one), root's login does not depend on this module */
                if (bad)
                        pam_syslog(pamh, LOG_ERR,
                                   "bad argument '%s' (%s); root's session is left alone, every "
                                   "other user's is refused",
                                   bad, hint);
                else if (a.debug)
                        pam_syslog(pamh, LOG_DEBUG, "user '%s' is root, leaving the session alone",
                                   user);
                return PAM_IGNORE;
        }
        if (bad) {
                /* a typo must not silently weaken isolation */
                pam_syslog(pamh, LOG_ERR, "bad argument '%s' (%s), refusing the session", bad,
                           hint);
                return PAM_SESSION_ERR;
        }
        min_uid = a.min_uid_set ? a.min_uid
                                : login_defs_uid(pamh, "UID_MIN", NSJOIN_MIN_UID_DEFAULT);
        max_uid = a.max_uid_set ? a.max_uid
                                : login_defs_uid(pamh, "UID_MAX", NSJOIN_MAX_UID_DEFAULT);
        if (min_uid > max_uid) {
                pam_syslog(pamh, LOG_ERR,
                           "bad arguments: min_uid=%u is above max_uid=%u%s, refusing the session",
                           (unsigned) min_uid, (unsigned) max_uid,
                           a.min_uid_set && a.max_uid_set ? ""
                                                          : " (the other one from " LOGIN_DEFS ")");
                return PAM_SESSION_ERR;
        }
        if (uid < min_uid || uid > max_uid) {
                if (a.debug)
                        pam_syslog(pamh, LOG_DEBUG,
                                   "uid %u of user '%s' is outside min_uid=%u..max_uid=%u, leaving "
                                   "the session alone",
                                   (unsigned) uid, user, (unsigned) min_uid, (unsigned) max_uid);
                return PAM_IGNORE;
        }
        if (a.only_group) {
                r = user_in_only_group(pamh, user, pw->pw_gid, a.only_group);
                if (r < 0)
                        return nsjoin_errno_to_pam(NSJOIN_STEP_USER, r, NULL);
                if (r == 0) {
                        if (a.debug)
                                pam_syslog(pamh, LOG_DEBUG,
                                           "user '%s' is not in group '%s' (only_group), leaving "
                                           "the session alone",
                                           user, a.only_group);
                        return PAM_IGNORE;
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
                if (a.debug)
                        pam_syslog(pamh, LOG_DEBUG,
                                   "nsd's policy does not manage user '%s' (uid %u), leaving the "
                                   "session alone",
                                   user, (unsigned) uid);
                return PAM_IGNORE;
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
