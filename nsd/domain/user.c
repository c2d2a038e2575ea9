/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* user.c: one user's namespace as nsd holds it, see user.h. */
#include "domain/user.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "store/fdstore.h"
#include "store/mounts.h"
#include "store/state.h"
#include "store/userns.h"

User *user_new(UserNs *ns, GArray *baseline, FdStore *fdstore, StateDir *state) {
        User *u = g_new0(User, 1);

        u->uid = ns->uid;
        u->ns = ns;
        u->sessions = g_ptr_array_new();
        u->baseline = baseline;
        u->fdstore = fdstore;
        u->state = state;
        return u;
}

void user_free(User *u) {
        if (!u)
                return;
        g_assert(u->sessions->len == 0);
        g_ptr_array_unref(u->sessions);
        userns_free(u->ns); /* closes descriptors; the pin stays */
        if (u->baseline)
                g_array_unref(u->baseline);
        g_free(u->setup_generation);
        g_strfreev(u->shares);
        g_free(u->owner);
        g_free(u);
}

/* ---- the fd store ------------------------------------------------------------------------ */

bool user_is_stored(const User *u) {
        char name[FDSTORE_NAME_MAX];

        return fdstore_contains(u->fdstore, fdstore_ns_name(name, u->uid));
}

bool user_store_passed(const User *u) {
        char name[FDSTORE_NAME_MAX];

        return fdstore_is_passed(u->fdstore, fdstore_ns_name(name, u->uid));
}

int user_store(User *u) {
        FdStoreClass c = u->ns->pinned ? FDSTORE_CLASS_PINNED : FDSTORE_CLASS_NAMESPACE;
        char name[FDSTORE_NAME_MAX];
        FdStoreStats before, after;
        int r;

        fdstore_ns_name(name, u->uid);
        if (fdstore_contains(u->fdstore, name)) {
                fdstore_set_class(u->fdstore, name, c);
                return 1;
        }
        fdstore_get_stats(u->fdstore, &before);
        r = fdstore_put(u->fdstore, u->ns->ns_fd, name, c);
        fdstore_get_stats(u->fdstore, &after);
        /* one without a pin is said once each, also past the first refusal of a crossing (which
         * the store says at warning level itself) */
        if (r == -ENOSPC && c == FDSTORE_CLASS_NAMESPACE && !u->store_warned) {
                u->store_warned = true;
                if (after.warnings == before.warnings)
                        log_event(LOG_WARNING, 0, u->uid, "fdstore-full",
                                  "No room in the service manager's fd store for the namespace "
                                  "of uid %u, which is not pinned either: only nsd's descriptor "
                                  "keeps it, it does not survive a restart of nsd",
                                  (unsigned) u->uid);
        }
        return r;
}

void user_unkeep(User *u) {
        char name[FDSTORE_NAME_MAX], sname[32];

        (void) fdstore_remove(u->fdstore, fdstore_ns_name(name, u->uid));
        user_state_name(sname, u->uid);
        state_remove(u->state, sname);
}

/* ---- the state file ns-<uid> ------------------------------------------------------------- */

void user_state_name(char buf[static 32], uid_t uid) {
        snprintf(buf, 32, STATE_NS_PREFIX "%u", (unsigned) uid);
}

void user_state_write(const User *u) {
        g_autoptr(GKeyFile) kf = NULL;
        g_autofree char *b = NULL;
        char name[32];

        if (!u->state)
                return;
        kf = g_key_file_new();
        g_key_file_set_uint64(kf, "Namespace", "Inode", u->ns->ns_inode);
        g_key_file_set_uint64(kf, "Namespace", "CreatedUsec", u->ns->created_usec);
        if (u->baseline) {
                b = mounts_baseline_to_string(u->baseline);
                g_key_file_set_string(kf, "Namespace", "Baseline", b);
        }
        if (u->setup_generation)
                g_key_file_set_string(kf, "Namespace", "SetupGeneration", u->setup_generation);
        if (u->shares && u->shares[0])
                g_key_file_set_string_list(kf, "Namespace", "Shares",
                                           (const char *const *) u->shares,
                                           g_strv_length(u->shares));
        if (u->owner)
                g_key_file_set_string(kf, "Namespace", "Owner", u->owner);
        user_state_name(name, u->uid);
        (void) state_write(u->state, name, kf);
}

/* ns's state file, if it describes this very namespace; NULL otherwise. */
static GKeyFile *state_of(StateDir *state, const UserNs *ns, bool quiet) {
        g_autoptr(GKeyFile) kf = NULL;
        char name[32];

        if (!state)
                return NULL;
        user_state_name(name, ns->uid);
        if (state_read(state, name, &kf) < 0)
                return NULL;
        if (g_key_file_get_uint64(kf, "Namespace", "Inode", NULL) != ns->ns_inode) {
                if (!quiet)
                        log_info("'%s/%s' describes another namespace than mnt:[%" PRIu64 "], "
                                 "ignoring it",
                                 state_path(state), name, ns->ns_inode);
                return NULL;
        }
        return g_steal_pointer(&kf);
}

char *user_state_generation(StateDir *state, const UserNs *ns) {
        g_autoptr(GKeyFile) kf = state_of(state, ns, true);

        return kf ? g_key_file_get_string(kf, "Namespace", "SetupGeneration", NULL) : NULL;
}

char **user_state_shares(StateDir *state, const UserNs *ns) {
        g_autoptr(GKeyFile) kf = state_of(state, ns, true);

        return kf ? g_key_file_get_string_list(kf, "Namespace", "Shares", NULL, NULL) : NULL;
}

char *user_state_owner(StateDir *state, const UserNs *ns) {
        g_autoptr(GKeyFile) kf = state_of(state, ns, true);

        return kf ? g_key_file_get_string(kf, "Namespace", "Owner", NULL) : NULL;
}

GArray *user_state_baseline(StateDir *state, const UserNs *ns) {
        g_autoptr(GKeyFile) kf = state_of(state, ns, false);
        g_autofree char *b = NULL;
        GArray *baseline = NULL;
        char name[32];

        if (!kf)
                return NULL;
        user_state_name(name, ns->uid);
        b = g_key_file_get_string(kf, "Namespace", "Baseline", NULL);
        if (b && mounts_baseline_from_string(b, &baseline) < 0) {
                log_warning("'%s/%s' has a bad Baseline=, ignoring it", state_path(state), name);
                return NULL;
        }
        return baseline;
}

GArray *user_take_baseline(const UserNs *ns) {
        g_autofree char *text = NULL;
        GArray *baseline = NULL;
        int r;

        r = userns_read_mountinfo(ns, USER_MOUNTINFO_MAX, &text, NULL);
        if (r >= 0)
                r = mounts_baseline(text, &baseline);
        if (r < 0) {
                log_warning_errno(r,
                                  "Cannot take the mount baseline of uid %u's new namespace, "
                                  "linger will keep it: %m",
                                  (unsigned) ns->uid);
                return NULL;
        }
        return baseline;
}
