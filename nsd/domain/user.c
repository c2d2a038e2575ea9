/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* user.c: per-user state and linger, see user.h. */
#include "domain/user.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "domain/session.h"
#include "nsd-protocol.h"
#include "store/fdstore.h"
#include "store/mounts.h"
#include "store/nsprocs.h"
#include "store/state.h"

User *user_get(Server *s, uid_t uid) {
        return g_hash_table_lookup(s->users, GUINT_TO_POINTER(uid));
}

/* ---- the state file ns-<uid> ----------------------------------------------------------- */

static void state_ns_name(char buf[static 32], uid_t uid) {
        snprintf(buf, 32, STATE_NS_PREFIX "%u", (unsigned) uid);
}

static void user_state_write(User *u) {
        g_autoptr(GKeyFile) kf = g_key_file_new();
        g_autofree char *b = NULL;
        char name[32];

        if (!u->server->state)
                return;
        g_key_file_set_uint64(kf, "Namespace", "Inode", u->ns->ns_inode);
        g_key_file_set_uint64(kf, "Namespace", "CreatedUsec", u->ns->created_usec);
        if (u->baseline) {
                b = mounts_baseline_to_string(u->baseline);
                g_key_file_set_string(kf, "Namespace", "Baseline", b);
        }
        state_ns_name(name, u->uid);
        (void) state_write(u->server->state, name, kf);
}

/* The baseline of an adopted namespace from its state file, if that file describes this
 * very namespace. */
static GArray *user_state_baseline(Server *s, const UserNs *ns) {
        g_autoptr(GKeyFile) kf = NULL;
        g_autofree char *b = NULL;
        GArray *baseline = NULL;
        char name[32];

        state_ns_name(name, ns->uid);
        if (state_read(s->state, name, &kf) < 0)
                return NULL;
        if (g_key_file_get_uint64(kf, "Namespace", "Inode", NULL) != ns->ns_inode) {
                log_info("'%s/%s' describes another namespace than mnt:[%" PRIu64 "], ignoring "
                         "it",
                         state_path(s->state), name, ns->ns_inode);
                return NULL;
        }
        b = g_key_file_get_string(kf, "Namespace", "Baseline", NULL);
        if (b && mounts_baseline_from_string(b, &baseline) < 0) {
                log_warning("'%s/%s' has a bad Baseline=, ignoring it", state_path(s->state), name);
                return NULL;
        }
        return baseline;
}

/* ---- users ----------------------------------------------------------------------------- */

User *user_add(Server *s, UserNs *ns, GArray *baseline, UserAddFlags flags) {
        User *u = g_new0(User, 1);
        char name[FDSTORE_NAME_MAX];

        u->server = s;
        u->uid = ns->uid;
        u->ns = ns;
        u->sessions = g_ptr_array_new();
        u->baseline = baseline;
        g_hash_table_replace(s->users, GUINT_TO_POINTER(u->uid), u);

        /* before the namespace is handed out: pam_nsjoin's record (state.h) */
        state_made_add(s->state, ns->ns_inode, ns->root_fd);
        if (flags & USER_ADD_CREATED)
                user_state_write(u);
        else if (!u->baseline && s->state)
                u->baseline = user_state_baseline(s, ns);
        /* at start, a descriptor the store passed back is looked at by server.c first */
        fdstore_ns_name(name, u->uid);
        if ((flags & USER_ADD_FD_STORED) || !fdstore_is_passed(s->fdstore, name))
                user_store(u);
        session_attach_waiting(s, u);
        return u;
}

bool user_is_stored(const User *u) {
        char name[FDSTORE_NAME_MAX];

        return fdstore_contains(u->server->fdstore, fdstore_ns_name(name, u->uid));
}

int user_store(User *u) {
        Server *s = u->server;
        FdStoreClass c = u->ns->pinned ? FDSTORE_CLASS_PINNED : FDSTORE_CLASS_NAMESPACE;
        char name[FDSTORE_NAME_MAX];
        FdStoreStats before, after;
        int r;

        fdstore_ns_name(name, u->uid);
        if (fdstore_contains(s->fdstore, name)) {
                fdstore_set_class(s->fdstore, name, c);
                return 1;
        }
        fdstore_get_stats(s->fdstore, &before);
        r = fdstore_put(s->fdstore, u->ns->ns_fd, name, c);
        fdstore_get_stats(s->fdstore, &after);
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

void user_free(gpointer p) {
        User *u = p;

        if (u->linger_timer)
                g_source_remove(u->linger_timer);
        g_assert(u->sessions->len == 0);
        g_ptr_array_unref(u->sessions);
        if (u->ns)
                userns_free(u->ns); /* closes descriptors; the pin stays */
        if (u->baseline)
                g_array_unref(u->baseline);
        g_free(u->linger_kept);
        g_free(u);
}

bool user_is_pending(Server *s, uid_t uid) {
        return (s->pins && pinstore_is_pending(s->pins, uid)) ||
               g_hash_table_contains(s->stored_pending, GUINT_TO_POINTER(uid));
}

static NsSetup config_ns_setup(const Config *cfg) {
        return (NsSetup) {
                .propagation_private = cfg->propagation_private,
                .private_tmp = cfg->private_tmp,
        };
}

/* What a new namespace got from the host that was not received from a peer group. */
static GArray *user_take_baseline(const UserNs *ns) {
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
        if (user_is_pending(s, uid)) {
                /* one more try now (nothing happens before the next retry is due); what it
                 * adopts arrives through server.c's callback */
                if (s->pins && pinstore_is_pending(s->pins, uid))
                        (void) pinstore_retry_pending(s->pins, NULL, NULL, NULL);
                u = user_get(s, uid);
                if (u) {
                        *ret = u;
                        return 0;
                }
        }
        if (user_is_pending(s, uid)) {
                bool ready = !s->pins || pinstore_is_ready(s->pins);
                /* a login retries this every 50 ms to 1 s: debug, the store logs its own
                 * progress */
                log_debug("JOIN for uid %u: not yet available (%s)", (unsigned) uid,
                          ready ? "its kept namespace is not adopted yet"
                                : "the pin store is not available yet");
                *ret_why = ready ? g_strdup_printf("the namespace of uid %u is pinned but not "
                                                   "adopted yet; retry",
                                                   (unsigned) uid)
                                 : g_strdup_printf("nsd's pin store is not available yet, so "
                                                   "the namespace of uid %u is not known; "
                                                   "retry",
                                                   (unsigned) uid);
                return -NSD_ERRNO_NOT_YET;
        }
        if (!create) {
                *ret_why = g_strdup_printf("uid %u has no namespace yet", (unsigned) uid);
                return -ENOENT;
        }
        if (g_hash_table_size(s->users) >= s->max_namespaces) {
                *ret_why = s->max_namespaces < s->config.max_namespaces
                                   ? g_strdup_printf(
                                             "nsd keeps at most %u namespaces (MaxNamespaces=%u, "
                                             "capped by what this host allows, see nsd's log)",
                                             s->max_namespaces, s->config.max_namespaces)
                                   : g_strdup_printf("nsd keeps at most %u namespaces "
                                                     "(MaxNamespaces=)",
                                                     s->max_namespaces);
                return -EUSERS;
        }
        r = userns_create(s->pins, uid, &setup, &ns);
        if (r == -EAGAIN) {
                /* userns_create() logged what failed; a login retries */
                *ret_why = user_is_pending(s, uid)
                                   ? g_strdup_printf("the namespace of uid %u is pinned but not "
                                                     "adopted yet; retry",
                                                     (unsigned) uid)
                                   : g_strdup_printf("cannot create the namespace of uid %u now "
                                                     "(a passing shortage); retry",
                                                     (unsigned) uid);
                return -NSD_ERRNO_NOT_YET;
        }
        if (r < 0) {
                log_error_errno(r, "Failed to create the namespace of uid %u: %m", (unsigned) uid);
                *ret_why = g_strdup_printf("cannot create the namespace of uid %u: %s",
                                           (unsigned) uid, g_strerror(-r));
                return r;
        }
        u = user_add(s, ns, user_take_baseline(ns), USER_ADD_CREATED);
        log_event(LOG_INFO, 0, uid, "namespace-created",
                  "Created the namespace of uid %u (mnt:[%" G_GUINT64_FORMAT "], %s, %u mounts "
                  "of the host's not received by propagation)",
                  (unsigned) uid, ns->ns_inode,
                  ns->pinned ? "pinned" : "NOT pinned, alive by descriptor only",
                  u->baseline ? u->baseline->len : 0);
        if (!ns->pinned)
                u->pin_refused = true;
        server_notify_status(s);
        *ret_created = true;
        *ret = u;
        return 0;
}

int user_release(User *u, const char *why, char **ret_why) {
        Server *s = u->server;
        uid_t uid = u->uid;
        char name[FDSTORE_NAME_MAX], sname[32];
        int r;

        /* unpin first: a pin that stays keeps everything as it is */
        r = userns_unpin(s->pins, u->ns);
        if (r < 0) {
                log_event(LOG_WARNING, r, uid, "release-failed",
                          "Cannot release the namespace of uid %u (%s): its pin cannot be "
                          "removed: %m; it is kept as it is",
                          (unsigned) uid, why);
                if (ret_why)
                        *ret_why = g_strdup_printf("cannot remove the pin of uid %u's namespace "
                                                   "(%s); it is kept, try again",
                                                   (unsigned) uid, g_strerror(-r));
                return r;
        }
        while (u->sessions->len > 0)
                session_discard(g_ptr_array_index(u->sessions, u->sessions->len - 1));
        /* out of pam_nsjoin's record while the namespace is still alive (nsd holds it) */
        state_made_remove(s->state, u->ns->ns_inode, u->ns->root_fd);
        (void) fdstore_remove(s->fdstore, fdstore_ns_name(name, uid));
        state_ns_name(sname, uid);
        state_remove(s->state, sname);
        log_event(LOG_INFO, 0, uid, "namespace-released", "Released the namespace of uid %u (%s)",
                  (unsigned) uid, why);
        g_hash_table_remove(s->users, GUINT_TO_POINTER(uid)); /* frees u and its ns */
        /* its room in the fd store goes to a namespace that found none */
        users_store_more(s);
        server_notify_status(s);
        return 0;
}

/* ---- linger ---------------------------------------------------------------------------- */

struct LingerScan {
        Server *server; /* NULL: the server is gone, drop the result */
};

typedef struct LingerCheck {
        uid_t uid;
        unsigned gen;
} LingerCheck;

static gboolean on_linger(gpointer userdata);

static void user_arm_linger_sec(User *u, int64_t sec) {
        user_cancel_linger(u);
        /* g_timeout_add_seconds() may fire up to a second late (it batches wakeups): fine
         * for a linger time, but 0 means at once */
        u->linger_timer = sec == 0 ? g_idle_add(on_linger, u)
                                   : g_timeout_add_seconds((guint) sec, on_linger, u);
}

/* Not empty now: look again later. */
static void user_linger_recheck(User *u) {
        int64_t sec = u->server->config.linger_sec;

        if (sec == CONFIG_LINGER_FOREVER)
                return;
        user_arm_linger_sec(u, MAX(sec, USER_LINGER_RECHECK_SEC));
}

/* Said at info the first time, at debug while it stays the same. */
static void user_linger_keep(User *u, char *why /* taken */) {
        bool same = u->linger_kept && g_str_equal(u->linger_kept, why);

        log_event(same ? LOG_DEBUG : LOG_INFO, 0, u->uid, "linger-kept",
                  "Keeping the namespace of uid %u: %s", (unsigned) u->uid, why);
        g_free(u->linger_kept);
        u->linger_kept = why;
}

/* The linger rule (user.h), with the scan of /proc done. */
static void user_linger_decide(User *u, const NsProcs *procs) {
        g_autofree char *text = NULL, *first = NULL;
        pid_t pid = 0;
        unsigned n;
        int r;

        if (u->sessions->len > 0)
                return;
        n = nsprocs_count(procs, u->ns->ns_inode, &pid);
        if (n > 0) {
                user_linger_keep(u, g_strdup_printf("%u process%s still in it (pid %d%s)", n,
                                                    n == 1 ? "" : "es", (int) pid,
                                                    n > 1 ? " and more" : ""));
                user_linger_recheck(u);
                return;
        }
        if (!u->baseline) {
                user_linger_keep(u, g_strdup("which of its mounts are the user's is not known "
                                             "(no baseline: it was made by an older nsd); "
                                             "only nsctl release removes it"));
                return;
        }
        r = userns_read_mountinfo(u->ns, USER_MOUNTINFO_MAX, &text, NULL);
        if (r >= 0)
                r = mounts_user_made(text, u->baseline, &first);
        if (r < 0) {
                user_linger_keep(u, g_strdup_printf("its mount table cannot be read (%s)",
                                                    g_strerror(-r)));
                user_linger_recheck(u);
                return;
        }
        if (r > 0) {
                user_linger_keep(u,
                                 g_strdup_printf("it holds %d mount%s of its own (%s%s)", r,
                                                 r == 1 ? "" : "s", first, r > 1 ? ", ..." : ""));
                user_linger_recheck(u);
                return;
        }
        r = user_release(u,
                         "linger time over: no session, no process and no mount of its own "
                         "in it",
                         NULL);
        if (r < 0) /* logged; u stays */
                user_arm_linger_sec(u, USER_RELEASE_RETRY_SEC);
}

static void linger_scan_start(Server *s);

static void on_linger_scanned(NsProcs *procs, int err, void *userdata) {
        LingerScan *ls = userdata;
        Server *s = ls->server;
        g_autoptr(GArray) queue = NULL;

        g_free(ls);
        if (!s) {
                nsprocs_free(procs);
                return;
        }
        s->linger_scan = NULL;
        queue = s->linger_queue;
        s->linger_queue = g_array_new(FALSE, FALSE, sizeof(LingerCheck));
        if (err < 0) {
                /* said at warning once (it stays so without CAP_SYS_PTRACE), then at debug */
                log_full_errno(s->linger_scan_warned ? LOG_DEBUG : LOG_WARNING, err,
                               "Cannot look for processes in namespaces (%s%s), linger keeps "
                               "every namespace meanwhile: %m",
                               s->proc_dir,
                               err == -EACCES ? ": some process's ns/mnt cannot be read, "
                                                "nsd needs CAP_SYS_PTRACE"
                                              : "");
                s->linger_scan_warned = true;
        } else
                log_debug("Looked at %u processes for linger in %" PRIu64 " us",
                          nsprocs_scanned(procs), nsprocs_usec(procs));
        for (guint i = 0; i < queue->len; i++) {
                const LingerCheck *c = &g_array_index(queue, LingerCheck, i);
                User *u = user_get(s, c->uid);

                if (!u || u->linger_gen != c->gen || u->linger_timer)
                        continue; /* gone, or a JOIN or a session meanwhile */
                if (err < 0)
                        user_linger_recheck(u);
                else
                        user_linger_decide(u, procs); /* may free u */
        }
        nsprocs_free(procs);
        if (s->linger_queue->len > 0)
                linger_scan_start(s);
}

static void linger_scan_start(Server *s) {
        LingerScan *ls;

        if (s->linger_scan)
                return;
        ls = g_new0(LingerScan, 1);
        ls->server = s;
        s->linger_scan = ls;
        nsprocs_scan_async(s->proc_dir, getpid(), s->self_ns_inode, on_linger_scanned, ls);
}

void users_init(Server *s) {
        s->linger_queue = g_array_new(FALSE, FALSE, sizeof(LingerCheck));
}

void users_cancel_linger_scan(Server *s) {
        if (s->linger_scan)
                s->linger_scan->server = NULL; /* freed by on_linger_scanned() */
        s->linger_scan = NULL;
}

static gboolean on_linger(gpointer userdata) {
        User *u = userdata;
        Server *s = u->server;
        LingerCheck c = { .uid = u->uid, .gen = u->linger_gen };

        u->linger_timer = 0;
        if (u->sessions->len > 0)
                return G_SOURCE_REMOVE;
        g_array_append_val(s->linger_queue, c);
        linger_scan_start(s);
        return G_SOURCE_REMOVE;
}

void user_cancel_linger(User *u) {
        u->linger_gen++;
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
        g_clear_pointer(&u->linger_kept, g_free);
        user_arm_linger_sec(u, MAX(sec, min_sec));
}

/* ---- all users ------------------------------------------------------------------------- */

void users_repin(Server *s) {
        GHashTableIter it;
        gpointer v;
        unsigned n = 0;

        if (!s->pins || !pinstore_is_ready(s->pins))
                return;
        g_hash_table_iter_init(&it, s->users);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                User *u = v;
                int r;

                if (u->ns->pinned || u->pin_refused || pinstore_is_pending(s->pins, u->uid))
                        continue;
                r = userns_repin(s->pins, u->ns);
                if (r == -EAGAIN)
                        continue; /* logged; tried again when something changes */
                if (r < 0 || !u->ns->pinned) {
                        u->pin_refused = true;
                        continue;
                }
                n++;
                log_event(LOG_NOTICE, 0, u->uid, "namespace-repinned",
                          "Pinned the namespace of uid %u (mnt:[%" PRIu64 "]) again: it was "
                          "kept by descriptor only",
                          (unsigned) u->uid, u->ns->ns_inode);
                (void) user_store(u); /* pinned now: its room in the store may be taken */
        }
        if (n == 0)
                return;
        /* ... by one without a pin that found none (at start: after the drop of what nobody
         * claimed, server_new()) */
        if (!s->starting)
                users_store_more(s);
        server_notify_status(s);
}

void users_prune_state(Server *s) {
        g_auto(GStrv) names = state_list(s->state, STATE_NS_PREFIX);
        g_autoptr(GHashTable) made = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        GHashTableIter it;
        gpointer v;

        /* pam_nsjoin's record: only the namespaces nsd holds (a pending one is recorded
         * again when it is adopted) */
        g_hash_table_iter_init(&it, s->users);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const User *u = v;
                char ns_name[NSD_MADE_NAME_MAX], root_name[NSD_MADE_NAME_MAX];

                (void) state_made_names(u->ns->ns_inode, u->ns->root_fd, ns_name, root_name);
                g_hash_table_add(made, g_strdup(ns_name));
                if (root_name[0])
                        g_hash_table_add(made, g_strdup(root_name));
        }
        state_made_prune(s->state, made);

        for (char **n = names; *n; n++) {
                char *end = NULL;
                unsigned long long uid = g_ascii_strtoull(*n + strlen(STATE_NS_PREFIX), &end, 10);

                if (*end == '\0' && uid < UINT32_MAX &&
                    (user_get(s, (uid_t) uid) || user_is_pending(s, (uid_t) uid)))
                        continue;
                log_debug("Removing '%s/%s': nsd keeps no namespace of that uid any more",
                          state_path(s->state), *n);
                state_remove(s->state, *n);
        }
}

void users_unrecord_unkept(Server *s) {
        GHashTableIter it;
        gpointer v;

        g_hash_table_iter_init(&it, s->users);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const User *u = v;

                if (!u->ns->pinned && !user_is_stored(u))
                        state_made_remove(s->state, u->ns->ns_inode, u->ns->root_fd);
        }
}

void users_store_more(Server *s) {
        GHashTableIter it;
        gpointer v;
        unsigned n = 0;

        if (!fdstore_full(s->fdstore, FDSTORE_CLASS_NAMESPACE) &&
            !fdstore_full(s->fdstore, FDSTORE_CLASS_PINNED))
                return; /* nothing found no room (nor was removed for room) */
        /* those without a pin first: the store is all that keeps them across a restart, and
         * they may take the room of pinned ones */
        for (int pass = 0; pass < 2; pass++) {
                g_hash_table_iter_init(&it, s->users);
                while (g_hash_table_iter_next(&it, NULL, &v)) {
                        User *u = v;
                        int r;

                        if (u->ns->pinned != (pass == 1) || user_is_stored(u))
                                continue;
                        r = user_store(u);
                        if (r == -ENOSPC)
                                goto done;
                        if (r > 0)
                                n++;
                }
        }
done:
        if (n > 0)
                log_info("Put %u namespace%s into the service manager's fd store that found no "
                         "room there before",
                         n, n == 1 ? "" : "s");
}

unsigned users_count_not_stored(Server *s, unsigned *ret_unpinned) {
        GHashTableIter it;
        gpointer v;
        unsigned n = 0, unpinned = 0;

        g_hash_table_iter_init(&it, s->users);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const User *u = v;
                if (user_is_stored(u))
                        continue;
                n++;
                unpinned += !u->ns->pinned;
        }
        *ret_unpinned = unpinned;
        return n;
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
