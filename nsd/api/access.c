/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* access.c: who may ask for what, see access.h. */
#include "api/access.h"

#include <errno.h>
#include <glib.h>
#include <stdlib.h>

#include "api/peer.h"
#include "base/errno-util.h"
#include "base/log.h"
#include "domain/user.h"
#include "domain/users.h"

bool access_may_ask_for(const Request *r, uid_t uid) {
        return r->uid == 0 || r->uid == uid;
}

bool access_may_see_share(const Request *r, const User *own, const char *share) {
        if (r->uid == 0)
                return true;
        return own && own->uid == r->uid && own->shares &&
               g_strv_contains((const char *const *) own->shares, share);
}

bool access_sees_all_members(const Request *r) {
        return r->uid == 0;
}

/* Where the caller stands (peer.h): 0, or -errno with *ret_why when nsd cannot tell (-EPERM,
 * or nsd's own failure). */
static int caller_view(Request *r, const User *u, PeerView *ret, char **ret_why) {
        int rv = peer_view(r->pid, r->conn ? conn_pidfd(r->conn) : -1, &r->sender, u ? u->ns : NULL,
                           ret, ret_why);
        if (rv < 0)
                log_debug("%s from uid %u pid %u: %s", r->type->name, (unsigned) r->uid,
                          (unsigned) r->pid, *ret_why);
        return rv;
}

/* The refusal when nsd could not look at the namespace `which` (err, a PeerView's inside_err
 * or initial_err) to tell whether the caller is in it: nsd's failure, not the caller's. */
static int refuse_unknown_view(Request *r, int err, const char *which) {
        return request_refuse(r, errno_own_failure(err),
                              "nsd could not check whether pid %u is in %s right now (look at "
                              "that namespace: %s)%s",
                              (unsigned) r->pid, which, g_strerror(abs(err)),
                              errno_retry_hint(err));
}

int access_check_descriptors(Request *r, uid_t uid) {
        g_autofree char *why = NULL;
        PeerView v;
        User *u;
        int rv;

        if (r->uid == 0)
                return 0;
        u = users_get(api_of(r)->users, uid);
        if (!u) /* nobody is inside a namespace that does not exist */
                return request_refuse(r, EPERM, ACCESS_WHY_DESCRIPTORS);
        rv = caller_view(r, u, &v, &why);
        if (rv == -EPERM)
                return request_refuse(r, EPERM, ACCESS_WHY_DESCRIPTORS " (%s)", why);
        if (rv < 0) /* nsd's own failure, which says so */
                return request_refuse(r, -rv, "%s", why);
        if (!v.inside && v.inside_err < 0)
                return refuse_unknown_view(r, v.inside_err, "the user's namespace");
        if (!v.inside)
                return request_refuse(r, EPERM, ACCESS_WHY_DESCRIPTORS);
        return 0;
}

int access_check_full_view(Request *r, const User *u) {
        g_autofree char *why = NULL;
        PeerView v;
        int rv;

        if (r->uid == 0)
                return 0;
        rv = caller_view(r, u, &v, &why);
        if (rv == -EPERM)
                return request_refuse(r, EPERM,
                                      "%s answers only root and processes in the user's "
                                      "namespace or the initial one (%s)",
                                      r->type->name, why);
        if (rv < 0) /* nsd's own failure, which says so */
                return request_refuse(r, -rv, "%s", why);
        if (v.inside || v.initial)
                return 0;
        if (v.inside_err < 0)
                return refuse_unknown_view(r, v.inside_err, "the user's namespace");
        if (v.initial_err < 0)
                return refuse_unknown_view(r, v.initial_err, "the initial namespace");
        return request_refuse(r, EPERM,
                              "%s answers only root and processes in the user's namespace or "
                              "the initial one, not a sandboxed process",
                              r->type->name);
}

int access_check_leader(Request *r, uint32_t pid) {
        if (r->uid != 0 && (pid_t) pid != r->pid)
                return request_refuse(r, EPERM,
                                      "only root may name a session leader other than itself "
                                      "(pid %u)",
                                      (unsigned) r->pid);
        return 0;
}
