/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * server.c: start, stop and reload nsd; the limits in force; mode private on or off; what
 * the service manager is told. The rooms that do the work are listed in server.h.
 */
#include "server.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "api/handlers.h"
#include "base/child.h"
#include "base/errno-util.h"
#include "base/log.h"
#include "cleanup.h"
#include "domain/private.h"
#include "domain/session.h"
#include "domain/user.h"
#include "nsd-protocol.h"
#include "policy/policy.h"
#include "store/fdstore.h"
#include "store/state.h"
#include "store/userns.h"
#include "time-util.h"
#include "transport/conn.h"

/* STATUS= to the service manager at most this often (every login changes it). */
#define NOTIFY_MSEC 250
#define MAX_MNT_NS_PATH "/proc/sys/user/max_mnt_namespaces"
/* Namespaces from the fd store that could not be entered: retried after 100 ms, doubling up
 * to 5 s. */
#define STORED_RETRY_MIN_MSEC 100u
#define STORED_RETRY_MAX_MSEC 5000u

/* ---- STATUS= ---------------------------------------------------------------------------- */

/* "; fd store: 70.3 of 96 KiB of names, 7001 of 16384 descriptors", and what is not in it
 * when the budget refused something; "" without a store. */
static char *server_fdstore_status(Server *s) {
        unsigned ns_out, unpinned = 0, sessions, sess_out;
        g_autoptr(GString) out = g_string_new("");
        FdStoreStats st;

        if (!fdstore_enabled(s->fdstore))
                return g_strdup("");
        fdstore_get_stats(s->fdstore, &st);
        g_string_printf(out, "; fd store: %.1f of %.0f KiB of names, %u of %u descriptors",
                        st.names_bytes / 1024.0, st.budget_bytes / 1024.0, st.n_fds, st.max_fds);
        /* what is not in it, once the budget refused something (sessions without a pidfd, on
         * a kernel without pidfd_open, are never in it: that is no news) */
        if (!st.full[FDSTORE_CLASS_NAMESPACE] && !st.full[FDSTORE_CLASS_PINNED] &&
            !st.full[FDSTORE_CLASS_SESSION])
                return g_string_free(g_steal_pointer(&out), FALSE);
        ns_out = users_count_not_stored(s, &unpinned);
        sessions = g_hash_table_size(s->sessions);
        sess_out = sessions > st.n_fds_class[FDSTORE_CLASS_SESSION]
                           ? sessions - st.n_fds_class[FDSTORE_CLASS_SESSION]
                           : 0;
        g_string_append(out, " (full:");
        if (ns_out > unpinned)
                g_string_append_printf(out, " %u namespaces kept by their pins only,",
                                       ns_out - unpinned);
        if (unpinned > 0)
                g_string_append_printf(out,
                                       " %u namespaces without a pin not in it (lost at a "
                                       "restart),",
                                       unpinned);
        g_string_append_printf(out, " %u sessions kept by their state files only)", sess_out);
        return g_string_free(g_steal_pointer(&out), FALSE);
}

void server_notify_status_now(Server *s) {
        if (s->notify_timer) {
                g_source_remove(s->notify_timer);
                s->notify_timer = 0;
        }
        size_t pending = s->pins ? pinstore_n_pending(s->pins) : 0;
        g_autofree char *extra = NULL, *store = server_fdstore_status(s);

        pending += g_hash_table_size(s->stored_pending);
        if (s->pins && !pinstore_is_ready(s->pins))
                extra = g_strdup(" (the pin store is not available yet, retrying)");
        else if (pending > 0)
                extra = g_strdup_printf(" (%zu kept namespaces not adopted yet, retrying)",
                                        pending);
        sd_notifyf(0, "STATUS=%u namespaces, %u sessions%s%s", g_hash_table_size(s->users),
                   g_hash_table_size(s->sessions),
                   extra     ? extra
                   : s->pins ? ""
                             : " (no pin store: namespaces do not survive nsd)",
                   store);
}

static gboolean on_notify(gpointer userdata) {
        Server *s = userdata;

        s->notify_timer = 0;
        server_notify_status_now(s);
        return G_SOURCE_REMOVE;
}

void server_notify_status(Server *s) {
        if (!s->notify_timer)
                s->notify_timer = g_timeout_add(NOTIFY_MSEC, on_notify, s);
}

/* ---- limits ----------------------------------------------------------------------------- */

unsigned server_effective_max_namespaces(const Config *c, uint64_t nofile, uint64_t max_mnt_ns,
                                         char **ret_why) {
        uint64_t want = c->max_namespaces, fds, conns, by_fds, by_mnt = UINT64_MAX;
        g_autofree char *why = NULL;

        /* descriptors: 3 per namespace (root, nsfs, a session's pidfd), after the reserve and
         * the connections; connections take at most half of what is left, whatever they are
         * configured to (beyond that, accept() meets EMFILE and backs off) */
        fds = nofile > SERVER_FD_RESERVE ? nofile - SERVER_FD_RESERVE : 0;
        conns = (uint64_t) c->max_connections + c->max_root_connections;
        conns = MIN(conns, fds / 2);
        by_fds = (fds - conns) / 3;
        if (max_mnt_ns > 0)
                by_mnt = max_mnt_ns > SERVER_MNT_NS_RESERVE ? max_mnt_ns - SERVER_MNT_NS_RESERVE
                                                            : 0;
        if (by_fds < want && by_fds <= by_mnt)
                why = g_strdup_printf("RLIMIT_NOFILE=%llu leaves room for %llu (3 descriptors "
                                      "each, after %llu for connections and %u in reserve)",
                                      (unsigned long long) nofile, (unsigned long long) by_fds,
                                      (unsigned long long) conns, SERVER_FD_RESERVE);
        else if (by_mnt < want)
                why = g_strdup_printf("user.max_mnt_namespaces=%llu leaves room for %llu (%u "
                                      "kept for the pin namespace, helpers and the rest of the "
                                      "system)",
                                      (unsigned long long) max_mnt_ns, (unsigned long long) by_mnt,
                                      SERVER_MNT_NS_RESERVE);
        want = MIN(want, MIN(by_fds, by_mnt));
        if (ret_why)
                *ret_why = g_steal_pointer(&why);
        return (unsigned) want;
}

static void server_compute_limits(Server *s) {
        g_autofree char *why = NULL, *text = NULL;
        uint64_t nofile = 1024, max_mnt_ns = 0;
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
                nofile = rl.rlim_cur == RLIM_INFINITY ? UINT32_MAX : rl.rlim_cur;
        if (g_file_get_contents(MAX_MNT_NS_PATH, &text, NULL, NULL))
                max_mnt_ns = g_ascii_strtoull(text, NULL, 10);
        s->max_namespaces = server_effective_max_namespaces(&s->config, nofile, max_mnt_ns, &why);
        if (why)
                log_warning("MaxNamespaces=%u cannot be kept: %s. nsd serves at most %u "
                            "namespaces (nsctl status shows both)",
                            s->config.max_namespaces, why, s->max_namespaces);
        else
                log_info("Serving at most %u namespaces (MaxNamespaces=; RLIMIT_NOFILE=%llu, "
                         "user.max_mnt_namespaces=%s)",
                         s->max_namespaces, (unsigned long long) nofile,
                         max_mnt_ns ? g_strchomp(text) : "unknown");
}

/* ---- mode private ----------------------------------------------------------------------- */

/* Start or stop mode private as [Private] Enable= says (at start and after a reload). On a
 * kernel without F4 the mode is refused with an error in the log and in `nsctl status`;
 * nsd goes on serving namespaces: refusing to start would refuse every PAM login. */
static void server_private_mode_apply(Server *s) {
        const char *why = NULL;
        int r;

        if (!s->config.private_mode) {
                s->private_unavailable = false;
                if (s->private_watch) {
                        private_watch_free(g_steal_pointer(&s->private_watch));
                        log_info("Mode private off: new FUSE mounts of users are no longer "
                                 "hidden (those hidden stay so)");
                }
                return;
        }
        if (s->private_watch)
                return;
        r = private_supported(s->features, &why);
        if (r < 0) {
                s->private_unavailable = true;
                log_error("Mode private ([Private] Enable=yes) is unavailable: %s. nsd serves "
                          "namespaces only; FUSE mounts in the initial namespace stay visible "
                          "to everyone",
                          why);
                return;
        }
        r = private_watch_new(s->policy, s->children, &s->config, &s->private_watch);
        if (r < 0) {
                s->private_unavailable = true;
                log_error_errno(r, "Mode private ([Private] Enable=yes) is unavailable: cannot "
                                   "watch the mount table: %m");
                return;
        }
        s->private_unavailable = false;
        log_info("Mode private on: FUSE mounts of managed users in the initial namespace are "
                 "made owner-private (kernel patch F4)");
}

/* ---- start, stop, reload ---------------------------------------------------------------- */

static void on_adopt(UserNs *ns, void *userdata) {
        Server *s = userdata;
        char name[FDSTORE_NAME_MAX];
        UserAddFlags flags = 0;
        User *u = user_get(s, ns->uid);
        _cleanup_close_ int stored = -1;
        struct stat st;

        if (u) {
                /* held already (from the fd store, while its pin was pending) */
                if (u->ns->ns_inode == ns->ns_inode) {
                        u->ns->pinned = true;
                        log_debug("The pin of uid %u is the namespace nsd holds already",
                                  (unsigned) ns->uid);
                        /* pinned now: its room in the fd store may go to one without a pin */
                        (void) user_store(u);
                        if (!s->starting)
                                users_store_more(s);
                } else
                        log_error("The pin of uid %u (mnt:[%" PRIu64 "]) is another namespace "
                                  "than the one nsd holds from the fd store (mnt:[%" PRIu64 "]); "
                                  "keeping the one held, the pin stays untouched",
                                  (unsigned) ns->uid, ns->ns_inode, u->ns->ns_inode);
                userns_free(ns);
                return;
        }
        ns->adopted = true;
        /* the fd store's copy, cross-checked: the pin wins */
        stored = fdstore_take(s->fdstore, fdstore_ns_name(name, ns->uid));
        if (stored >= 0) {
                if (fstat(stored, &st) >= 0 && (uint64_t) st.st_ino == ns->ns_inode)
                        flags |= USER_ADD_FD_STORED; /* the store holds this very one */
                else {
                        log_error("The fd store's '%s' is another namespace (mnt:[%llu]) than "
                                  "the pinned one (mnt:[%" PRIu64 "]); using the pinned one and "
                                  "storing it instead",
                                  name, (unsigned long long) st.st_ino, ns->ns_inode);
                        (void) fdstore_remove(s->fdstore, name);
                }
        }
        user_add(s, ns, NULL, flags);
        log_event(LOG_DEBUG, 0, ns->uid, "namespace-adopted",
                  "Adopted the namespace of uid %u (mnt:[%" G_GUINT64_FORMAT "])%s",
                  (unsigned) ns->uid, ns->ns_inode,
                  (flags & USER_ADD_FD_STORED) ? ", also in the fd store" : "");
        if (!s->starting) { /* adopted by a retry: as at start, below */
                User *nu = user_get(s, ns->uid);
                if (nu && nu->sessions->len == 0)
                        user_arm_linger(nu, USER_JOIN_GRACE_SEC);
                server_notify_status(s);
        }
}

/* ---- the fd store ----------------------------------------------------------------------- */

static void server_store_pinns(Server *s) {
        bool from_store = false;
        int fd;

        if (s->pinns_stored || !s->pins)
                return;
        fd = pinstore_pinns_fd(s->pins, &from_store);
        if (fd < 0)
                return;
        if (from_store || fdstore_put(s->fdstore, fd, FDSTORE_PINNS, FDSTORE_CLASS_NAMESPACE) > 0)
                s->pinns_stored = true;
}

static void on_pins_ready(void *userdata) {
        Server *s = userdata;

        server_store_pinns(s);
        users_repin(s);
        server_notify_status(s);
}

static gboolean on_stored_retry(gpointer userdata);

static void stored_arm_retry(Server *s) {
        unsigned msec = STORED_RETRY_MIN_MSEC;

        if (s->stored_retry || g_hash_table_size(s->stored_pending) == 0)
                return;
        for (unsigned i = 0; i < s->stored_retries && msec < STORED_RETRY_MAX_MSEC; i++)
                msec *= 2;
        s->stored_retry = g_timeout_add(MIN(msec, STORED_RETRY_MAX_MSEC), on_stored_retry, s);
}

/* Enter every namespace of s->stored_pending: those entered become users (repinned when
 * their pin is gone), those refused for a reason that may pass stay pending, the others
 * (not a mount namespace: provably dead) are dropped from the store, logged. */
static void stored_adopt_pending(Server *s) {
        guint n = g_hash_table_size(s->stored_pending);
        g_autofree uid_t *uids = NULL;
        g_autofree int *fds = NULL, *errs = NULL;
        g_autofree UserNs **nss = NULL;
        GHashTableIter it;
        gpointer k, v;
        unsigned adopted = 0;
        User *u;
        guint i = 0;
        int r;

        if (n == 0)
                return;
        uids = g_new(uid_t, n);
        fds = g_new(int, n);
        errs = g_new0(int, n);
        nss = g_new0(UserNs *, n);
        g_hash_table_iter_init(&it, s->stored_pending);
        while (g_hash_table_iter_next(&it, &k, &v)) {
                uids[i] = GPOINTER_TO_UINT(k);
                fds[i] = GPOINTER_TO_INT(v) - 1; /* stored as fd + 1 */
                i++;
        }
        r = userns_adopt_fds(uids, fds, n, nss, errs);
        if (r < 0) {
                log_full_errno(s->stored_retries == 0 ? LOG_WARNING : LOG_DEBUG, r,
                               "Failed to enter %u namespaces from the fd store, retrying: %m", n);
                s->stored_retries++;
                return;
        }
        for (i = 0; i < n; i++) {
                char name[FDSTORE_NAME_MAX];

                fdstore_ns_name(name, uids[i]);
                if (nss[i]) {
                        /* fds[i] now the namespace's: out of the table without closing */
                        g_hash_table_steal(s->stored_pending, GUINT_TO_POINTER(uids[i]));
                        if (user_get(s, uids[i])) { /* its pin was adopted meanwhile */
                                userns_free(nss[i]);
                                continue;
                        }
                        u = user_add(s, nss[i], NULL, USER_ADD_FD_STORED);
                        if (!s->starting && u->sessions->len == 0)
                                user_arm_linger(u, USER_JOIN_GRACE_SEC);
                        log_event(LOG_NOTICE, 0, uids[i], "namespace-adopted",
                                  "Adopted the namespace of uid %u (mnt:[%" PRIu64 "]) from the "
                                  "service manager's fd store",
                                  (unsigned) uids[i], nss[i]->ns_inode);
                        adopted++;
                } else if (errno_may_pass(errs[i])) {
                        log_full_errno(s->stored_retries == 0 ? LOG_WARNING : LOG_DEBUG, errs[i],
                                       "Cannot enter the namespace of uid %u from the "
                                       "fd store now, retrying: %m",
                                       (unsigned) uids[i]);
                } else {
                        log_event(LOG_WARNING, errs[i], uids[i], "fdstore-dropped",
                                  "Dropping '%s' from the service manager's fd store: it cannot "
                                  "be entered (%m), so it is no usable mount namespace",
                                  name);
                        g_hash_table_remove(s->stored_pending, GUINT_TO_POINTER(uids[i]));
                        (void) fdstore_remove(s->fdstore, name);
                }
        }
        s->stored_retries = g_hash_table_size(s->stored_pending) > 0 ? s->stored_retries + 1 : 0;
        if (adopted > 0 && !s->starting) {
                users_repin(s);
                server_notify_status(s);
        }
}

static gboolean on_stored_retry(gpointer userdata) {
        Server *s = userdata;

        s->stored_retry = 0;
        stored_adopt_pending(s);
        stored_arm_retry(s);
        return G_SOURCE_REMOVE;
}

/* What the fd store holds beside the pins: "ns-<uid>" not taken by on_adopt(). */
static void server_adopt_stored(Server *s) {
        g_auto(GStrv) names = fdstore_passed_names(s->fdstore, FDSTORE_NS_PREFIX);

        for (char **n = names; *n; n++) {
                const char *p = *n + strlen(FDSTORE_NS_PREFIX);
                char *end = NULL;
                unsigned long long uid = g_ascii_strtoull(p, &end, 10);
                int fd;

                if (!*p || *end || uid >= UINT32_MAX || user_get(s, (uid_t) uid))
                        continue; /* dropped by fdstore_drop_unclaimed() */
                fd = fdstore_take(s->fdstore, *n);
                if (fd < 0)
                        continue;
                if (g_hash_table_contains(s->stored_pending, GUINT_TO_POINTER((guint) uid))) {
                        close(fd); /* a duplicate */
                        continue;
                }
                g_hash_table_insert(s->stored_pending, GUINT_TO_POINTER((guint) uid),
                                    GINT_TO_POINTER(fd + 1));
        }
        stored_adopt_pending(s);
        stored_arm_retry(s);
}

static void stored_pending_close(gpointer v) {
        close(GPOINTER_TO_INT(v) - 1);
}

static const char *yes_no(bool b) {
        return b ? "yes" : "no";
}

int server_new(Config *config, const ServerSetup *setup, Server **ret) {
        Server *s = g_new0(Server, 1);
        int r;

        config_move(&s->config, config);
        s->config_path = g_strdup(setup->config_path);
        s->run_dir = g_strdup(setup->run_dir);
        s->started_usec = now_usec(CLOCK_REALTIME);
        s->next_session_id = ((uint64_t) g_random_int() << 32 | g_random_int()) | 1;
        s->users = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, user_free);
        s->sessions = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, session_free);
        s->handlers = (RequestHandlers) { .table = api_handlers, .userdata = s };
        s->conns = conn_manager_new(&s->config, &request_conn_handler, &s->handlers);
        s->policy = policy_new(&s->config);
        s->children = children_new(s->config.max_path_walks);
        s->fdstore = setup->fdstore ? setup->fdstore : fdstore_new(false);
        s->waiting_sessions = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                                    (GDestroyNotify) g_ptr_array_unref);
        s->stored_pending = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                                  stored_pending_close);
        s->proc_dir = g_strdup("/proc");
        {
                struct stat st;
                if (stat("/proc/self/ns/mnt", &st) >= 0)
                        s->self_ns_inode = (uint64_t) st.st_ino;
        }
        users_init(s);
        s->starting = true;

        if (setup->probe_kernel) {
                s->features = kernel_features_probe();
                log_info("Kernel features: setns-dirfd=%s proc-mounts-root=%s fspick-check=%s "
                         "owner-private=%s",
                         yes_no(s->features & NSD_FEATURE_SETNS_DIRFD),
                         yes_no(s->features & NSD_FEATURE_PROC_MOUNTS_ROOT),
                         yes_no(s->features & NSD_FEATURE_FSPICK_CHECK),
                         yes_no(s->features & NSD_FEATURE_OWNER_PRIVATE));
        }

        if (setup->run_dir) {
                if (state_open(setup->run_dir, &s->state) < 0)
                        s->state = NULL; /* logged: no linger baselines, no sessions kept */
                r = pinstore_open_full(setup->run_dir, fdstore_take(s->fdstore, FDSTORE_PINNS),
                                       &s->pins);
                if (r < 0) {
                        s->pins = NULL;
                        log_warning_errno(r,
                                          "Cannot open the pin store in '%s', running without "
                                          "pins (namespaces will not survive an nsd restart): %m",
                                          setup->run_dir);
                } else {
                        pinstore_set_ready_cb(s->pins, on_pins_ready, s);
                        r = pinstore_adopt_all(s->pins, on_adopt, s);
                        if (r < 0)
                                log_warning_errno(r, "Failed to adopt pinned namespaces, "
                                                     "ignoring: %m");
                        server_store_pinns(s);
                }
        }
        /* the fd store's namespaces whose pins are gone (or were refused), then sessions */
        server_adopt_stored(s);
        users_repin(s);
        sessions_restore(s);
        users_prune_state(s);
        /* a countdown under way when nsd stopped starts again, at least the JOIN grace */
        {
                GHashTableIter it;
                gpointer v;

                g_hash_table_iter_init(&it, s->users);
                while (g_hash_table_iter_next(&it, NULL, &v))
                        if (((User *) v)->sessions->len == 0)
                                user_arm_linger(v, USER_JOIN_GRACE_SEC);
        }
        fdstore_drop_unclaimed(s->fdstore);
        /* what nobody claimed is out: room for namespaces the budget refused meanwhile */
        users_store_more(s);
        if (setup->run_dir || fdstore_n_passed(s->fdstore) > 0) {
                g_autofree char *store = server_fdstore_status(s);
                log_info("Adopted %u namespaces, restored %u sessions%s",
                         g_hash_table_size(s->users), g_hash_table_size(s->sessions), store);
        }
        s->starting = false;

        server_compute_limits(s);
        server_private_mode_apply(s);

        if (setup->user_fd >= 0)
                conn_manager_listen(s->conns, CONN_KIND_USER, setup->user_fd);
        if (setup->root_fd >= 0)
                conn_manager_listen(s->conns, CONN_KIND_ROOT, setup->root_fd);
        *ret = s;
        return 0;
}

void server_free(Server *s) {
        if (!s)
                return;
        if (s->notify_timer)
                g_source_remove(s->notify_timer);
        /* connections first: their requests become orphans, so nothing answers nobody */
        conn_manager_free(s->conns);
        private_watch_free(s->private_watch);
        children_free(s->children);
        policy_free(s->policy);
        users_cancel_linger_scan(s);
        if (s->stored_retry)
                g_source_remove(s->stored_retry);
        /* sessions first (they point into users); namespaces stay pinned, state files and
         * the fd store stay for the next start */
        g_hash_table_destroy(s->waiting_sessions);
        users_unrecord_unkept(s);
        users_forget_sessions(s);
        g_hash_table_destroy(s->sessions);
        g_hash_table_destroy(s->users);
        g_hash_table_destroy(s->stored_pending);
        g_array_unref(s->linger_queue);
        if (s->pins)
                pinstore_free(s->pins);
        state_free(s->state);
        fdstore_free(s->fdstore);
        g_free(s->proc_dir);
        config_done(&s->config);
        g_free(s->config_path);
        g_free(s->run_dir);
        g_free(s);
}

void server_apply_config(Server *s, Config *config) {
        config_move(&s->config, config);
        /* a changed Linger= applies to countdowns that start from now on */
        server_compute_limits(s);
        conn_manager_reconfigure(s->conns);
        policy_reconfigure(s->policy);
        children_set_max(s->children, s->config.max_path_walks);
        server_private_mode_apply(s);
}

int server_reload_config(Server *s) {
        Config c = { 0 };
        g_autofree char *error = NULL;
        bool missing = false;
        int r;

        if (!s->config_path)
                return 0;
        r = config_load(s->config_path, &c, &missing, &error);
        if (r < 0)
                return log_error_errno(r,
                                       "Failed to reload the configuration, keeping the "
                                       "old one: %s",
                                       error ? error : g_strerror(-r));
        if (missing)
                log_info("Reloaded the configuration: no '%s', using defaults", s->config_path);
        else
                log_info("Reloaded the configuration from '%s'", s->config_path);
        server_apply_config(s, &c);
        return 0;
}
