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
#include "base/log.h"
#include "domain/private.h"
#include "domain/share-bound.h"
#include "domain/users.h"
#include "nsd-protocol.h"
#include "policy/policy.h"
#include "store/fdstore.h"
#include "store/pending.h"
#include "store/pinstore.h"
#include "store/probe.h"
#include "store/state.h"
#include "time-util.h"

/* STATUS= to the service manager at most this often (every login changes it). */
#define NOTIFY_MSEC 250
#define MAX_MNT_NS_PATH "/proc/sys/user/max_mnt_namespaces"

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
        ns_out = users_count_not_stored(s->users, &unpinned);
        sessions = users_count_sessions(s->users);
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
        g_clear_handle_id(&s->notify_timer, g_source_remove);
        size_t pending = pending_count(s->pending);
        g_autofree char *extra = NULL, *store = server_fdstore_status(s);

        if (!pending_store_ready(s->pending))
                extra = g_strdup(" (the pin store is not available yet, retrying)");
        else if (pending > 0)
                extra = g_strdup_printf(" (%zu kept namespaces not adopted yet, retrying)",
                                        pending);
        sd_notifyf(0, "STATUS=%u namespaces, %u sessions%s%s", users_count(s->users),
                   users_count_sessions(s->users),
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
        unsigned max;

        if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
                nofile = rl.rlim_cur == RLIM_INFINITY ? UINT32_MAX : rl.rlim_cur;
        if (g_file_get_contents(MAX_MNT_NS_PATH, &text, NULL, NULL))
                max_mnt_ns = g_ascii_strtoull(text, NULL, 10);
        max = server_effective_max_namespaces(&s->config, nofile, max_mnt_ns, &why);
        users_set_max_namespaces(s->users, max);
        if (why)
                log_warning("MaxNamespaces=%u cannot be kept: %s. nsd serves at most %u "
                            "namespaces (nsctl status shows both)",
                            s->config.max_namespaces, why, max);
        else
                log_info("Serving at most %u namespaces (MaxNamespaces=; RLIMIT_NOFILE=%llu, "
                         "user.max_mnt_namespaces=%s)",
                         max, (unsigned long long) nofile,
                         max_mnt_ns ? g_strchomp(text) : "unknown");
}

/* The manager's facts the handlers report (api.h), after a change. */
static void server_sync_api(Server *s) {
        s->api.kernel_features = s->features;
        s->api.private_watch = s->private_watch;
        s->api.private_unavailable = s->private_unavailable;
}

/* ---- mode private ----------------------------------------------------------------------- */

/* [Private] BornPrivate= in mode private, on a kernel with F4b: the policy on every mount of
 * the initial namespace (want), or off again when nsd had set it. A failure is logged and
 * leaves the watch to hide users' new mounts as they appear. */
static void server_born_private_apply(Server *s, bool want) {
        g_autofree char *why = NULL;

        if (!(s->features & NSD_FEATURE_OWNER_PRIVATE_NEW)) {
                if (want)
                        log_notice("Mode private: BornPrivate=yes does nothing on this kernel "
                                   "(no MOUNT_ATTR_OWNER_PRIVATE_NEW, kernel F4b): users' new "
                                   "FUSE mounts are hidden as nsd's watch finds them, a moment "
                                   "after they appear");
                return;
        }
        if (want == s->born_private_set)
                return;
        if (private_born_apply(want, &why) < 0) {
                log_error("Mode private: %s; %s", why,
                          want ? "users' new FUSE mounts are hidden as nsd's watch finds them, "
                                 "a moment after they appear"
                               : "mounts made below them by users stay born owner-private");
                return;
        }
        s->born_private_set = want;
        if (want)
                log_info("Mode private: the mounts of the initial namespace carry the "
                         "born-private policy (kernel F4b): a mount a user makes below them is "
                         "owner-private from its first instant");
        else
                log_info("Mode private: the born-private policy is cleared from the mounts of "
                         "the initial namespace; users' new mounts are plain until hidden");
}

/* Start or stop mode private as [Private] Enable= says (at start and after a reload). On a
 * kernel without F4 the mode is refused with an error in the log and in `nsctl status`;
 * nsd goes on serving namespaces: refusing to start would refuse every PAM login. */
static void server_private_mode_apply(Server *s) {
        g_autofree char *why = NULL;
        int r;

        if (!s->config.private_mode) {
                s->private_unavailable = false;
                server_born_private_apply(s, false);
                if (s->private_watch) {
                        private_watch_free(g_steal_pointer(&s->private_watch));
                        log_info("Mode private off: new FUSE mounts of users are no longer "
                                 "hidden (those hidden stay so)");
                }
                return;
        }
        if (s->private_watch) {
                server_born_private_apply(s, s->config.born_private);
                return;
        }
        r = private_supported(s->features, &why);
        if (r < 0) {
                s->private_unavailable = true;
                log_error("Mode private ([Private] Enable=yes) is unavailable: %s. nsd serves "
                          "namespaces only; FUSE mounts in the initial namespace stay visible "
                          "to everyone",
                          why);
                return;
        }
        /* the policy before the watch: a mount made meanwhile is born private or watched */
        server_born_private_apply(s, s->config.born_private);
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
        users_repin(s->users);
        share_bound_apply(s->share_bound);
        server_notify_status(s);
}

static void on_users_changed(void *userdata) {
        server_notify_status(userdata);
}

static const char *yes_no(bool b) {
        return b ? "yes" : "no";
}

/* The pin store under run_dir (a failure is logged and nsd runs without pins), with the pin
 * namespace the fd store kept. */
static void server_open_pins(Server *s, const char *run_dir) {
        int r;

        r = pinstore_open_full(run_dir, fdstore_take(s->fdstore, FDSTORE_PINNS), &s->pins);
        if (r < 0) {
                s->pins = NULL;
                log_warning_errno(r,
                                  "Cannot open the pin store in '%s', running without pins "
                                  "(namespaces will not survive an nsd restart): %m",
                                  run_dir);
                return;
        }
        pinstore_set_ready_cb(s->pins, on_pins_ready, s);
        server_store_pinns(s);
}

/* Connections count against people: the owner of a subuid range for its uids. */
static uid_t person_of(uid_t uid, gid_t gid, void *userdata) {
        return policy_person(userdata, uid, gid);
}

int server_new(Config *config, const ServerSetup *setup, Server **ret) {
        Server *s = g_new0(Server, 1);

        config_move(&s->config, config);
        s->config_path = g_strdup(setup->config_path);
        s->run_dir = g_strdup(setup->run_dir);
        s->started_usec = now_usec(CLOCK_REALTIME);
        if (setup->probe_kernel) {
                s->features = kernel_features_probe();
                log_info("Kernel features: setns-dirfd=%s proc-mounts-root=%s fspick-check=%s "
                         "owner-private=%s born-private=%s",
                         yes_no(s->features & NSD_FEATURE_SETNS_DIRFD),
                         yes_no(s->features & NSD_FEATURE_PROC_MOUNTS_ROOT),
                         yes_no(s->features & NSD_FEATURE_FSPICK_CHECK),
                         yes_no(s->features & NSD_FEATURE_OWNER_PRIVATE),
                         yes_no(s->features & NSD_FEATURE_OWNER_PRIVATE_NEW));
        }

        /* the rooms, bottom up */
        s->fdstore = setup->fdstore ? setup->fdstore : fdstore_new(false);
        if (setup->run_dir) {
                if (state_open(setup->run_dir, &s->state) < 0)
                        s->state = NULL; /* logged: no linger baselines, no sessions kept */
                server_open_pins(s, setup->run_dir);
        }
        s->pending = pending_new(s->pins, s->fdstore);
        s->policy = policy_new(&s->config);
        policy_set_subid_files(s->policy, setup->subuid_path, setup->subgid_path);
        s->children = children_new(s->config.max_path_walks);
        s->users = users_new(&(UsersSetup) {
                .config = &s->config,
                .pins = s->pins,
                .fdstore = s->fdstore,
                .state = s->state,
                .pending = s->pending,
                .children = s->children,
        });
        users_set_changed(s->users, on_users_changed, s);
        s->api = (Api) {
                .config = &s->config,
                .users = s->users,
                .policy = s->policy,
                .children = s->children,
                .pins = s->pins,
                .fdstore = s->fdstore,
                .started_usec = s->started_usec,
        };
        s->handlers = (RequestHandlers) { .table = api_handlers,
                                          .userdata = &s->api,
                                          .refused = api_refused };
        s->conns = conn_manager_new(&s->config, &request_conn_handler, &s->handlers);
        conn_manager_set_person_fn(s->conns, person_of, s->policy);
        s->api.conns = s->conns;

        /* what survives a restart comes back */
        users_start(s->users);
        if (setup->run_dir || fdstore_n_passed(s->fdstore) > 0) {
                g_autofree char *store = server_fdstore_status(s);
                log_info("Adopted %u namespaces, restored %u sessions%s", users_count(s->users),
                         users_count_sessions(s->users), store);
        }

        server_compute_limits(s);
        server_private_mode_apply(s);
        s->share_bound = share_bound_new(&s->config, s->pins, s->children);
        share_bound_apply(s->share_bound);
        server_sync_api(s);

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
        g_clear_handle_id(&s->notify_timer, g_source_remove);
        /* connections first: their requests become orphans, so nothing answers nobody */
        conn_manager_free(s->conns);
        api_done(&s->api); /* the requests it held, orphans now */
        private_watch_free(s->private_watch);
        share_bound_free(s->share_bound);
        children_free(s->children);
        policy_free(s->policy);
        /* namespaces stay pinned, state files and the fd store stay for the next start */
        users_free(s->users);
        pending_free(s->pending);
        pinstore_free(s->pins);
        state_free(s->state);
        fdstore_free(s->fdstore);
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
        share_bound_apply(s->share_bound);
        server_sync_api(s);
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
