/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * server.c: start, stop and reload nsd; the limits in force; mode private on or off; what
 * the service manager is told. The rooms that do the work are listed in server.h.
 */
#include "server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "child.h"
#include "conn.h"
#include "log.h"
#include "nsd-protocol.h"
#include "policy.h"
#include "private.h"
#include "session.h"
#include "user.h"
#include "userns.h"

/* STATUS= to the service manager at most this often (every login changes it). */
#define NOTIFY_MSEC 250
#define MAX_MNT_NS_PATH "/proc/sys/user/max_mnt_namespaces"

uint64_t now_realtime_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

/* ---- STATUS= ---------------------------------------------------------------------------- */

void server_notify_status_now(Server *s) {
        if (s->notify_timer) {
                g_source_remove(s->notify_timer);
                s->notify_timer = 0;
        }
        sd_notifyf(0, "STATUS=%u namespaces, %u sessions%s", g_hash_table_size(s->users),
                   g_hash_table_size(s->sessions),
                   s->pins ? "" : " (no pin store: namespaces do not survive nsd)");
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
                                      "system)", (unsigned long long) max_mnt_ns,
                                      (unsigned long long) by_mnt, SERVER_MNT_NS_RESERVE);
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
                            "namespaces (nsctl status shows both)", s->config.max_namespaces,
                            why, s->max_namespaces);
        else
                log_info("Serving at most %u namespaces (MaxNamespaces=; RLIMIT_NOFILE=%llu, "
                         "user.max_mnt_namespaces=%s)", s->max_namespaces,
                         (unsigned long long) nofile, max_mnt_ns ? g_strchomp(text) : "unknown");
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
                          "to everyone", why);
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

        if (user_get(s, ns->uid)) {
                log_warning("Two pins for uid %u, keeping the first", (unsigned) ns->uid);
                userns_free(ns);
                return;
        }
        ns->adopted = true;
        user_add(s, ns, -1);
        log_event(LOG_DEBUG, 0, ns->uid, "namespace-adopted",
                  "Adopted the namespace of uid %u (mnt:[%" G_GUINT64_FORMAT "])",
                  (unsigned) ns->uid, ns->ns_inode);
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
        s->started_usec = now_realtime_usec();
        s->next_session_id = ((uint64_t) g_random_int() << 32 | g_random_int()) | 1;
        s->users = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, user_free);
        s->sessions = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, session_free);
        s->conns = conn_manager_new(s);
        s->policy = policy_new(s);
        s->children = children_new(s->config.max_path_walks);

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
                r = pinstore_open(setup->run_dir, &s->pins);
                if (r < 0) {
                        s->pins = NULL;
                        log_warning_errno(r, "Cannot open the pin store in '%s', running without "
                                          "pins (namespaces will not survive an nsd restart): %m",
                                          setup->run_dir);
                } else {
                        r = pinstore_adopt_all(s->pins, on_adopt, s);
                        if (r < 0)
                                log_warning_errno(r, "Failed to adopt pinned namespaces, "
                                                     "ignoring: %m");
                }
                log_info("Adopted %u namespaces", g_hash_table_size(s->users));
        }

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
        /* sessions first (they point into users); namespaces stay pinned */
        users_forget_sessions(s);
        g_hash_table_destroy(s->sessions);
        g_hash_table_destroy(s->users);
        if (s->pins)
                pinstore_free(s->pins);
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
                return log_error_errno(r, "Failed to reload the configuration, keeping the "
                                          "old one: %s", error ? error : g_strerror(-r));
        if (missing)
                log_info("Reloaded the configuration: no '%s', using defaults", s->config_path);
        else
                log_info("Reloaded the configuration from '%s'", s->config_path);
        server_apply_config(s, &c);
        return 0;
}
