/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pam_nsjoin: put every login of a user into that user's one persistent mount namespace,
 * which nsd keeps. Session module only. See pam_nsjoin(8).
 *
 * Order in open_session, so that a failure never leaves the process half-entered:
 *   1. JOIN: get both descriptors of the namespace from nsd. Any failure: nothing changed.
 *   2. enter (setns, or chroot mode). A failure: the process is where it was.
 *   3. SESSION_OPEN. A failure here is logged at LOG_WARNING and the session still succeeds:
 *      the login already is in the right namespace, only nsd's session count is off (and nsd
 *      has no pidfd to watch; it forgets nothing the user cares about).
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "cleanup.h"
#include "nsclient.h"
#include "nsd-protocol.h"
#include "nsjoin-util.h"

#define SESSION_DATA_KEY "pam_nsjoin.session"
#define LOOKUP_BUF_MAX (1024 * 1024)

/* What open_session registered, for close_session. */
struct nsjoin_session {
        uid_t uid;
        pid_t pid;
        uint64_t id;
};

#define _cleanup_nsc_disconnect_ _nsc_cleanup_disconnect_

static void session_data_free(pam_handle_t *pamh, void *data, int error_status) {
        free(data);
}

static const char *socket_path(const struct nsjoin_args *a) {
        /* Deliberately not libnsclient's $NSD_SOCKET: su and other setuid callers run this
         * module with their user's environment, and no user may pick the nsd we trust. */
        return a->socket ?: NSD_SOCKET_PATH_DEFAULT;
}

static const char *bad_value_hint(const char *arg) {
        if (strncmp(arg, "mode=", 5) == 0)
                return "expected mode=setns or mode=chroot";
        if (strncmp(arg, "socket=", 7) == 0)
                return "expected an absolute path";
        if (strncmp(arg, "only_group=", 11) == 0)
                return "expected a group name";
        return "bad value";
}

/* Parse argv, logging each unknown argument (ignored) and each bad value (fatal). */
static int args_parse(pam_handle_t *pamh, int argc, const char **argv, struct nsjoin_args *ret) {
        struct nsjoin_args a;
        int r = 0;

        nsjoin_args_init(&a);
        for (int i = 0; i < argc; i++)
                switch (nsjoin_args_parse_one(&a, argv[i])) {
                case NSJOIN_ARG_OK:
                        break;
                case NSJOIN_ARG_UNKNOWN:
                        pam_syslog(pamh, LOG_WARNING, "unknown argument '%s', ignoring", argv[i]);
                        break;
                case NSJOIN_ARG_BAD_VALUE:
                        pam_syslog(pamh, LOG_ERR, "bad argument '%s' (%s), refusing the session",
                                   argv[i], bad_value_hint(argv[i]));
                        r = -EINVAL;
                        break;
                }
        if (r < 0)
                return r;
        *ret = a;
        return 0;
}

static int user_lookup(const char *name, uid_t *ret_uid, gid_t *ret_gid) {
        long n = sysconf(_SC_GETPW_R_SIZE_MAX);
        size_t size = n > 0 ? (size_t) n : 4096;

        for (;;) {
                _cleanup_free_ char *buf = malloc(size);
                struct passwd pw, *res = NULL;
                int r;

                if (!buf)
                        return -ENOMEM;
                r = getpwnam_r(name, &pw, buf, size, &res);
                if (r == ERANGE && size < LOOKUP_BUF_MAX) {
                        size *= 2;
                        continue;
                }
                if (r != 0)
                        return -r;
                if (!res)
                        return -ENOENT;
                *ret_uid = pw.pw_uid;
                *ret_gid = pw.pw_gid;
                return 0;
        }
}

static int group_lookup(const char *name, gid_t *ret_gid) {
        long n = sysconf(_SC_GETGR_R_SIZE_MAX);
        size_t size = n > 0 ? (size_t) n : 4096;

        for (;;) {
                _cleanup_free_ char *buf = malloc(size);
                struct group gr, *res = NULL;
                int r;

                if (!buf)
                        return -ENOMEM;
                r = getgrnam_r(name, &gr, buf, size, &res);
                if (r == ERANGE && size < LOOKUP_BUF_MAX) {
                        size *= 2;
                        continue;
                }
                if (r != 0)
                        return -r;
                if (!res)
                        return -ENOENT;
                *ret_gid = gr.gr_gid;
                return 0;
        }
}

/* 1 when user (primary group user_gid) is a member of gid, else 0; or -errno. */
static int user_in_group(const char *user, gid_t user_gid, gid_t gid) {
        int ngroups = 64;

        if (user_gid == gid)
                return 1;
        for (;;) {
                _cleanup_free_ gid_t *groups = calloc((size_t) ngroups, sizeof(gid_t));
                int n = ngroups;

                if (!groups)
                        return -ENOMEM;
                if (getgrouplist(user, user_gid, groups, &n) < 0) {
                        if (n <= ngroups || n > 65536)
                                return -EIO;
                        ngroups = n;
                        continue;
                }
                for (int i = 0; i < n; i++)
                        if (groups[i] == gid)
                                return 1;
                return 0;
        }
}

/* The one LOG_ERR line of a failed join; returns the PAM code. */
static int log_join_failure(pam_handle_t *pamh, const struct nsjoin_args *a, const char *user,
                            uid_t uid, enum nsjoin_step step, int r, nsc_conn *conn) {
        const char *expl, *reason = conn ? nsc_last_error_message(conn) : NULL;
        char buf[128];
        const char *err = strerror_r(-r, buf, sizeof(buf));
        int code = nsjoin_errno_to_pam(step, r, &expl);

        if (step == NSJOIN_STEP_CONNECT)
                pam_syslog(pamh, LOG_ERR,
                           "cannot join the mount namespace of user '%s' (uid %u): nsd at %s %s (%s)",
                           user, (unsigned) uid, socket_path(a), expl, err);
        else
                pam_syslog(pamh, LOG_ERR,
                           "cannot join the mount namespace of user '%s' (uid %u): %s (%s)%s%s",
                           user, (unsigned) uid, expl, err, reason ? "; nsd says: " : "",
                           reason ?: "");
        return code;
}

PAM_EXTERN int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
        _cleanup_nsc_disconnect_ nsc_conn *conn = NULL;
        _cleanup_close_ int root_fd = -1, ns_fd = -1;
        struct nsc_join_result j;
        struct nsjoin_args a;
        struct nsjoin_session *s;
        const char *user = NULL, *service = NULL;
        char service_buf[NSD_SERVICE_MAX];
        uint64_t session_id = 0;
        unsigned sessions = 0;
        uid_t uid = (uid_t) -1;
        gid_t gid = (gid_t) -1;
        int r, used_setns = 0;

        if (args_parse(pamh, argc, argv, &a) < 0)
                return PAM_SESSION_ERR;

        if (pam_get_item(pamh, PAM_USER, (const void **) &user) != PAM_SUCCESS || !user || !user[0]) {
                pam_syslog(pamh, LOG_ERR, "cannot join a mount namespace: no user name set");
                return PAM_SESSION_ERR;
        }
        if (pam_get_item(pamh, PAM_SERVICE, (const void **) &service) != PAM_SUCCESS)
                service = NULL;

        r = user_lookup(user, &uid, &gid);
        if (r < 0) {
                char buf[128];

                pam_syslog(pamh, LOG_ERR, "cannot look up user '%s': %s", user,
                           r == -ENOENT ? "no such user" : strerror_r(-r, buf, sizeof(buf)));
                return nsjoin_errno_to_pam(NSJOIN_STEP_USER, r, NULL);
        }

        if (nsjoin_name_in_list(a.skip_users, user)) {
                if (a.debug)
                        pam_syslog(pamh, LOG_DEBUG, "user '%s' is in skip_users, leaving the session alone", user);
                return PAM_IGNORE;
        }
        if (a.only_group) {
                gid_t want = (gid_t) -1;

                r = group_lookup(a.only_group, &want);
                if (r < 0) {
                        char buf[128];

                        pam_syslog(pamh, LOG_ERR, "bad argument 'only_group=%s' (%s), refusing the session",
                                   a.only_group,
                                   r == -ENOENT ? "no such group" : strerror_r(-r, buf, sizeof(buf)));
                        return nsjoin_errno_to_pam(NSJOIN_STEP_USER, r, NULL);
                }
                r = user_in_group(user, gid, want);
                if (r < 0) {
                        char buf[128];

                        pam_syslog(pamh, LOG_ERR, "cannot list the groups of user '%s': %s", user,
                                   strerror_r(-r, buf, sizeof(buf)));
                        return nsjoin_errno_to_pam(NSJOIN_STEP_USER, r, NULL);
                }
                if (r == 0) {
                        if (a.debug)
                                pam_syslog(pamh, LOG_DEBUG, "user '%s' is not in group '%s' (only_group), leaving the session alone",
                                           user, a.only_group);
                        return PAM_IGNORE;
                }
        }

        /* 1. JOIN: nothing changes in this process until both descriptors are here. */
        r = nsc_connect(socket_path(&a), &conn);
        if (r < 0)
                return log_join_failure(pamh, &a, user, uid, NSJOIN_STEP_CONNECT, r, NULL);
        r = nsc_join(conn, uid, 0, &j);
        if (r == -NSD_ERRNO_NOT_MANAGED) {
                if (a.debug)
                        pam_syslog(pamh, LOG_DEBUG, "nsd's policy does not manage user '%s' (uid %u), leaving the session alone",
                                   user, (unsigned) uid);
                return nsjoin_errno_to_pam(NSJOIN_STEP_JOIN, r, NULL);
        }
        if (r < 0)
                return log_join_failure(pamh, &a, user, uid, NSJOIN_STEP_JOIN, r, conn);
        root_fd = j.root_fd;
        ns_fd = j.ns_fd;

        /* 2. enter */
        if (a.mode == NSJOIN_MODE_SETNS) {
                r = nsc_enter_setns(&j);
                if (r < 0)
                        return log_join_failure(pamh, &a, user, uid, NSJOIN_STEP_ENTER_SETNS, r, NULL);
        } else {
                r = nsc_enter_chroot(&j, &used_setns);
                if (r < 0)
                        return log_join_failure(pamh, &a, user, uid, NSJOIN_STEP_ENTER_CHROOT, r, NULL);
        }
        if (a.debug)
                pam_syslog(pamh, LOG_DEBUG, "entered the mount namespace of user '%s' (uid %u, mnt:[%" PRIu64 "]%s) by %s",
                           user, (unsigned) uid, j.ns_inode,
                           j.ns_flags & NSC_NS_CREATED ? ", created now" : "",
                           a.mode == NSJOIN_MODE_SETNS ? "setns(nsfs)"
                           : used_setns                ? "setns(root directory)"
                                                       : "fchdir+chroot");
        /* the descriptors are not needed any more; the login must not inherit them */
        close(TAKE_FD(root_fd));
        close(TAKE_FD(ns_fd));

        /* 3. register the session; see the comment at the top for why failure is a warning */
        if (service) {
                snprintf(service_buf, sizeof(service_buf), "%s", service);
                service = service_buf;
        }
        r = nsc_session_open(conn, uid, getpid(), service, &session_id, &sessions);
        if (r < 0) {
                const char *expl, *reason = nsc_last_error_message(conn);
                char buf[128];

                nsjoin_errno_to_pam(NSJOIN_STEP_SESSION_OPEN, r, &expl);
                pam_syslog(pamh, LOG_WARNING,
                           "joined the mount namespace of user '%s' (uid %u), but %s (%s)%s%s; nsd's session count is off, ignoring",
                           user, (unsigned) uid, expl, strerror_r(-r, buf, sizeof(buf)),
                           reason ? "; nsd says: " : "", reason ?: "");
                return PAM_SUCCESS;
        }

        s = malloc(sizeof(*s));
        if (!s || pam_set_data(pamh, SESSION_DATA_KEY, s, session_data_free) != PAM_SUCCESS) {
                free(s);
                pam_syslog(pamh, LOG_WARNING,
                           "cannot remember session %" PRIu64 " of user '%s' for close_session; nsd will notice its end when process %d exits, ignoring",
                           session_id, user, (int) getpid());
                return PAM_SUCCESS;
        }
        *s = (struct nsjoin_session){ .uid = uid, .pid = getpid(), .id = session_id };
        if (a.debug)
                pam_syslog(pamh, LOG_DEBUG, "registered session %" PRIu64 " of user '%s' (pid %d, service '%s'), %u live",
                           session_id, user, (int) s->pid, service ?: "", sessions);
        return PAM_SUCCESS;
}

PAM_EXTERN int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
        _cleanup_nsc_disconnect_ nsc_conn *conn = NULL;
        const struct nsjoin_session *s = NULL;
        struct nsjoin_args a;
        unsigned left = 0;
        char buf[128];
        int r;

        if (args_parse(pamh, argc, argv, &a) < 0)
                return PAM_SESSION_ERR;

        if (pam_get_data(pamh, SESSION_DATA_KEY, (const void **) &s) != PAM_SUCCESS || !s) {
                if (a.debug)
                        pam_syslog(pamh, LOG_DEBUG, "no session registered with nsd, nothing to close");
                return PAM_SUCCESS;
        }

        r = nsc_connect(socket_path(&a), &conn);
        if (r >= 0)
                r = nsc_session_close(conn, s->uid, s->pid, s->id, &left);
        if (r < 0) {
                const char *expl, *reason = conn ? nsc_last_error_message(conn) : NULL;

                nsjoin_errno_to_pam(NSJOIN_STEP_SESSION_CLOSE, r, &expl);
                pam_syslog(pamh, LOG_WARNING, "session %" PRIu64 " of uid %u: %s at %s (%s)%s%s, ignoring",
                           s->id, (unsigned) s->uid, expl, socket_path(&a),
                           strerror_r(-r, buf, sizeof(buf)), reason ? "; nsd says: " : "", reason ?: "");
        } else if (a.debug)
                pam_syslog(pamh, LOG_DEBUG, "closed session %" PRIu64 " of uid %u, %u left",
                           s->id, (unsigned) s->uid, left);

        /* forget it: a second close_session must not close it again */
        (void) pam_set_data(pamh, SESSION_DATA_KEY, NULL, NULL);
        return PAM_SUCCESS;
}
