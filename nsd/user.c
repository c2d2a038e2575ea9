/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* user.c: per-user state and linger, see user.h. */
#include "user.h"

#include <errno.h>

#include "log.h"
#include "session.h"

User *user_get(Server *s, uid_t uid) {
        return g_hash_table_lookup(s->users, GUINT_TO_POINTER(uid));
}

User *user_add(Server *s, UserNs *ns, int baseline_mounts) {
        User *u = g_new0(User, 1);

        u->server = s;
        u->uid = ns->uid;
        u->ns = ns;
        u->sessions = g_ptr_array_new();
        u->baseline_mounts = baseline_mounts;
        g_hash_table_replace(s->users, GUINT_TO_POINTER(u->uid), u);
        return u;
}

void user_free(gpointer p) {
        User *u = p;

        if (u->linger_timer)
                g_source_remove(u->linger_timer);
        g_assert(u->sessions->len == 0);
        g_ptr_array_unref(u->sessions);
        if (u->ns)
                userns_free(u->ns); /* closes descriptors; the pin stays */
        g_free(u);
}

static NsSetup config_ns_setup(const Config *cfg) {
        return (NsSetup) {
                .propagation_private = cfg->propagation_private,
                .private_tmp = cfg->private_tmp,
        };
}

int user_join(Server *s, uid_t uid, bool create, User **ret, bool *ret_created, char **ret_why) {
        NsSetup setup = config_ns_setup(&s->config);
        UserNs *ns = NULL;
        User *u;
        int r;

        *ret_created = false;
        u = user_get(s, uid);
        if (u) {
                *ret = u;
                return 0;
        }
        if (!create) {
                *ret_why = g_strdup_printf("uid %u has no namespace yet", (unsigned) uid);
                return -ENOENT;
        }
        if (g_hash_table_size(s->users) >= s->max_namespaces) {
                *ret_why = s->max_namespaces < s->config.max_namespaces
                                   ? g_strdup_printf("nsd keeps at most %u namespaces (MaxNamespaces=%u, "
                                                     "capped by what this host allows, see nsd's log)",
                                                     s->max_namespaces, s->config.max_namespaces)
                                   : g_strdup_printf("nsd keeps at most %u namespaces (MaxNamespaces=)",
                                                     s->max_namespaces);
                return -EUSERS;
        }
        r = userns_create(s->pins, uid, &setup, &ns);
        if (r < 0) {
                log_error_errno(r, "Failed to create the namespace of uid %u: %m", (unsigned) uid);
                *ret_why = g_strdup_printf("cannot create the namespace of uid %u: %s",
                                           (unsigned) uid, g_strerror(-r));
                return r;
        }
        u = user_add(s, ns, userns_count_mounts(ns));
        log_event(LOG_INFO, 0, uid, "namespace-created",
                  "Created the namespace of uid %u (mnt:[%" G_GUINT64_FORMAT "], %s, %d mounts)",
                  (unsigned) uid, ns->ns_inode,
                  ns->pinned ? "pinned" : "NOT pinned, alive by descriptor only",
                  u->baseline_mounts);
        server_notify_status(s);
        *ret_created = true;
        *ret = u;
        return 0;
}

int user_release(User *u, const char *why) {
        Server *s = u->server;
        uid_t uid = u->uid;
        int r;

        while (u->sessions->len > 0) {
                Session *sess = g_ptr_array_index(u->sessions, u->sessions->len - 1);
                g_ptr_array_remove_index(u->sessions, u->sessions->len - 1);
                g_hash_table_remove(s->sessions, &sess->id);
        }
        /* userns_release() consumes ns whatever it returns; a failed unpin is logged: such
         * a pin is found again at the next start. */
        r = userns_release(s->pins, g_steal_pointer(&u->ns));
        if (r < 0)
                log_warning_errno(r, "Failed to release the namespace of uid %u cleanly: %m",
                                  (unsigned) uid);
        log_event(LOG_INFO, 0, uid, "namespace-released", "Released the namespace of uid %u (%s)",
                  (unsigned) uid, why);
        g_hash_table_remove(s->users, GUINT_TO_POINTER(uid));
        server_notify_status(s);
        return r;
}

/* The linger rule (see user.h). */
static void user_release_if_idle(User *u) {
        int n;

        if (u->sessions->len > 0)
                return;
        if (u->baseline_mounts < 0) {
                log_info("Keeping the namespace of uid %u: it was adopted after a restart, so "
                         "its own mounts cannot be told apart", (unsigned) u->uid);
                return;
        }
        n = userns_count_mounts(u->ns);
        if (n < 0) {
                log_warning_errno(n, "Cannot count the mounts of uid %u's namespace, keeping it: %m",
                                  (unsigned) u->uid);
                return;
        }
        if (n > u->baseline_mounts) {
                log_info("Keeping the namespace of uid %u: it holds %d mounts of its own",
                         (unsigned) u->uid, n - u->baseline_mounts);
                return;
        }
        user_release(u, "linger time over, no sessions, no mounts of its own");
}

static gboolean on_linger(gpointer userdata) {
        User *u = userdata;

        u->linger_timer = 0;
        user_release_if_idle(u); /* may free u */
        return G_SOURCE_REMOVE;
}

void user_cancel_linger(User *u) {
        if (u->linger_timer) {
                g_source_remove(u->linger_timer);
                u->linger_timer = 0;
        }
}

void user_arm_linger(User *u, int64_t min_sec) {
        int64_t sec = u->server->config.linger_sec;

        user_cancel_linger(u);
        if (sec == CONFIG_LINGER_FOREVER)
                return;
        if (sec < min_sec)
                sec = min_sec;
        /* g_timeout_add_seconds() may fire up to a second late (it batches wakeups): fine
         * for a linger time, but 0 means at once */
        u->linger_timer = sec == 0 ? g_idle_add(on_linger, u)
                                   : g_timeout_add_seconds((guint) sec, on_linger, u);
}

unsigned users_count_pinned(Server *s) {
        GHashTableIter it;
        gpointer v;
        unsigned n = 0;

        g_hash_table_iter_init(&it, s->users);
        while (g_hash_table_iter_next(&it, NULL, &v))
                if (((User *) v)->ns->pinned)
                        n++;
        return n;
}

void users_forget_sessions(Server *s) {
        GHashTableIter it;
        gpointer v;

        g_hash_table_iter_init(&it, s->users);
        while (g_hash_table_iter_next(&it, NULL, &v))
                g_ptr_array_set_size(((User *) v)->sessions, 0);
}
