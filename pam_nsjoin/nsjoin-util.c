/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pure parts of pam_nsjoin; see nsjoin-util.h. */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include <security/_pam_types.h>

#include "nsd-protocol.h"
#include "nsjoin-util.h"

void nsjoin_args_init(struct nsjoin_args *a) {
        assert(a);
        *a = (struct nsjoin_args){
                .mode = NSJOIN_MODE_SETNS,
        };
}

/* If arg is "key=value", return value; else NULL. */
static const char *arg_value(const char *arg, const char *key) {
        size_t n = strlen(key);

        if (strncmp(arg, key, n) != 0 || arg[n] != '=')
                return NULL;
        return arg + n + 1;
}

enum nsjoin_arg_result nsjoin_args_parse_one(struct nsjoin_args *a, const char *arg) {
        const char *v;

        assert(a);
        assert(arg);

        if (strcmp(arg, "debug") == 0) {
                a->debug = true;
                return NSJOIN_ARG_OK;
        }
        if ((v = arg_value(arg, "mode"))) {
                if (strcmp(v, "setns") == 0)
                        a->mode = NSJOIN_MODE_SETNS;
                else if (strcmp(v, "chroot") == 0)
                        a->mode = NSJOIN_MODE_CHROOT;
                else
                        return NSJOIN_ARG_BAD_VALUE;
                return NSJOIN_ARG_OK;
        }
        if ((v = arg_value(arg, "socket"))) {
                /* a relative path would depend on the caller's cwd */
                if (v[0] != '/')
                        return NSJOIN_ARG_BAD_VALUE;
                a->socket = v;
                return NSJOIN_ARG_OK;
        }
        if ((v = arg_value(arg, "skip_users"))) {
                /* empty is fine: nobody is skipped */
                a->skip_users = v[0] ? v : NULL;
                return NSJOIN_ARG_OK;
        }
        if ((v = arg_value(arg, "only_group"))) {
                if (v[0] == 0)
                        return NSJOIN_ARG_BAD_VALUE;
                a->only_group = v;
                return NSJOIN_ARG_OK;
        }
        return NSJOIN_ARG_UNKNOWN;
}

bool nsjoin_name_in_list(const char *list, const char *name) {
        size_t n;

        if (!list || !name || !name[0])
                return false;
        n = strlen(name);
        for (const char *p = list; *p;) {
                const char *comma = strchrnul(p, ',');

                if ((size_t) (comma - p) == n && strncmp(p, name, n) == 0)
                        return true;
                p = *comma ? comma + 1 : comma;
        }
        return false;
}

int nsjoin_errno_to_pam(enum nsjoin_step step, int r, const char **ret_explanation) {
        const char *e;
        int code = PAM_SESSION_ERR;

        if (r >= 0) {
                if (ret_explanation)
                        *ret_explanation = NULL;
                return PAM_SUCCESS;
        }

        switch (step) {
        case NSJOIN_STEP_USER:
                e = r == -ENOENT ? "no such user or group" : "looking up the user failed";
                break;
        case NSJOIN_STEP_CONNECT:
                switch (r) {
                case -ENOENT:
                case -ECONNREFUSED:
                        e = "is not running";
                        break;
                case -EACCES:
                case -EPERM:
                        e = "does not let this process connect";
                        break;
                default:
                        e = "cannot be reached";
                }
                break;
        case NSJOIN_STEP_JOIN:
                switch (r) {
                case -NSD_ERRNO_NOT_MANAGED:
                        e = "nsd's policy does not manage this user";
                        code = PAM_IGNORE;
                        break;
                case -EPERM:
                        e = "nsd refused the request";
                        break;
                case -EUSERS:
                        e = "nsd's limit on namespaces is reached";
                        break;
                case -ENOENT:
                        e = "nsd has no namespace for this user";
                        break;
                default:
                        e = "nsd could not hand out the namespace";
                }
                break;
        case NSJOIN_STEP_ENTER_SETNS:
                switch (r) {
                case -EINVAL:
                        e = "setns() refused: the calling process is multi-threaded or shares its "
                            "filesystem context; mode=chroot works for such callers";
                        break;
                case -EPERM:
                        e = "setns() needs CAP_SYS_ADMIN and CAP_SYS_CHROOT";
                        break;
                default:
                        e = "setns() into the namespace failed";
                }
                break;
        case NSJOIN_STEP_ENTER_CHROOT:
                e = r == -EPERM ? "chroot into the namespace root needs CAP_SYS_CHROOT"
                                : "entering the namespace root failed";
                break;
        case NSJOIN_STEP_SESSION_OPEN:
                e = "registering the session with nsd failed";
                break;
        case NSJOIN_STEP_SESSION_CLOSE:
                e = "unregistering the session with nsd failed";
                break;
        default:
                e = "unexpected failure";
        }

        if (r == -ENOMEM)
                code = PAM_BUF_ERR;
        if (ret_explanation)
                *ret_explanation = e;
        return code;
}
