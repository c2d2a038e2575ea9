/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * server.h: nsd's state, the one object every room of the daemon hangs off (like logind's
 * Manager). The rooms, by floor (a file includes only what stands below it):
 *   server.c              start, stop, reload, limits in force, mode private on/off, STATUS=
 *   api/handlers.c        what nsd answers: a handler per request type
 *   transport/request.c   the wire side of a request: table of sizes, flags, checks; replies
 *   api/peer.c            where a client process stands (inside, initial, sandboxed)
 *   domain/user.c         per-user state: the namespace, linger
 *   domain/session.c      sessions and their leaders' pidfds, kept across restarts
 *   domain/private.c      mode private and HIDE (owner-private mounts)
 *   transport/conn.c      listening sockets, connections, queues, limits, timeouts, rate limits
 *   store/userns.c        the kernel work: create, pin, adopt, release namespaces
 *   store/pinstore.c      the pins that keep namespaces across restarts
 *   store/fdstore.c       the service manager's fd store: namespaces and pidfds across restarts
 *   store/state.c         state files under <run_dir>/state: sessions, linger baselines
 *   store/mounts.c        which mounts of a namespace the user made (linger)
 *   store/nsprocs.c       which processes are in which namespace (linger), in a worker thread
 *   store/probe.c         which of our kernel patches the running kernel has
 *   policy/conf.c         nsd.conf
 *   policy/policy.c       "does nsd manage uid?": NSS in worker threads, deadline and cache
 *   base/child.c          helper children the loop watches instead of waiting for (path walks)
 *   base/helper.c         short-lived helper children (enter a namespace, take a fsuid)
 *   base/log.c            the journal or stderr, rate limits per uid
 * main.c (not in the core library): arguments, capabilities, sockets, signals, watchdog.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/nsd-forward.h"
#include "policy/conf.h"
#include "transport/request.h"

struct Server {
        Config config;
        char *config_path;
        char *run_dir;
        PinStore *pins; /* NULL: running without pins */
        uint32_t features;
        PrivateWatch *private_watch; /* mode private on ([Private] Enable=yes) */
        bool private_unavailable;    /* Enable=yes, refused: see server_private_mode_apply() */
        uint64_t started_usec;
        /* MaxNamespaces= capped by what RLIMIT_NOFILE and user.max_mnt_namespaces allow */
        unsigned max_namespaces;

        ConnManager *conns;
        RequestHandlers handlers; /* api/handlers.c's, with this server: bound to conns */
        Policy *policy;
        Children *children;

        FdStore *fdstore;       /* never NULL; does nothing without a service manager */
        StateDir *state;        /* NULL: no state files (no run_dir, or it cannot be used) */
        char *proc_dir;         /* "/proc" */
        uint64_t self_ns_inode; /* nsd's own mount namespace */

        GHashTable *users;    /* GUINT_TO_POINTER(uid) -> User* (owned), user.c */
        GHashTable *sessions; /* uint64_t* id -> Session* (owned), session.c */
        /* sessions restored at start whose uid has no namespace held yet (pending): uid ->
         * GPtrArray of Session* (owned by sessions), attached by user_add() */
        GHashTable *waiting_sessions;
        uint64_t next_session_id;
        /* namespaces from the fd store not adopted yet (entering them failed for a reason
         * that may pass): uid -> nsfs descriptor; retried with backoff, pending meanwhile */
        GHashTable *stored_pending;
        guint stored_retry;
        unsigned stored_retries;
        /* linger checks waiting for the scan of /proc under way (user.c) */
        GArray *linger_queue;
        LingerScan *linger_scan; /* the scan under way, NULL: none */
        bool linger_scan_warned; /* a failed scan was said at warning level */
        size_t stream_bytes;     /* SHOW text held for replies being sent, see api/handlers.c */
        guint notify_timer;      /* a pending STATUS= to the service manager */
        bool starting;           /* in server_new() */
        bool pinns_stored;       /* the pin namespace is in the fd store */
};

/* How to start. Tests leave run_dir NULL (no pin store) and probe_kernel false. */
typedef struct ServerSetup {
        const char *config_path; /* kept for reloads; NULL: reloads keep the config */
        const char *run_dir;     /* pin store; NULL: none */
        bool probe_kernel;       /* probe the kernel's features (forks children) */
        int user_fd;             /* listening sockets, taken over; -1: none */
        int root_fd;
        /* the descriptors the service manager passed back (taken); NULL: none, and no fd
         * store is used */
        FdStore *fdstore;
} ServerSetup;

/* Take over config (moved out of *config) and the listening sockets, open the pin store
 * (a failure is logged and nsd runs without pins), re-adopt every pinned namespace, then
 * what the fd store holds beside (re-pinning namespaces whose pin is gone), restore the
 * sessions from the state files and the fd store, and start serving on the thread-default
 * GLib main context. */
int server_new(Config *config, const ServerSetup *setup, Server **ret);
/* Stop serving and forget everything in memory. Namespaces stay pinned: a restarted nsd
 * re-adopts them. */
void server_free(Server *s);

/* SIGHUP: read the config again; a bad one is logged with FILE:LINE and the old one kept.
 * Returns 0 or -errno. */
int server_reload_config(Server *s);
/* Take a new config (tests; reloads): limits, timeouts, cache and mode private follow. */
void server_apply_config(Server *s, Config *config);

/* Send STATUS= ("N namespaces, M sessions", what is not adopted yet, and how full the fd
 * store is: "; fd store: 70.3 of 96 KiB of names, 7001 of 16384 descriptors", with what is
 * not in it once its budget refused something) to the service manager, soon (coalesced: at
 * most a few a second, however many logins come). */
void server_notify_status(Server *s);
/* ... and now. */
void server_notify_status_now(Server *s);

/* The effective MaxNamespaces: configured, capped by the descriptors (3 per namespace:
 * root, nsfs and a session's pidfd; after the connections and a reserve) and by
 * user.max_mnt_namespaces (minus a reserve). nofile: RLIMIT_NOFILE's soft limit;
 * max_mnt_ns: 0 when unknown. *ret_why (g_malloc()ed, may be NULL) says what capped it, or
 * NULL when nothing did. */
unsigned server_effective_max_namespaces(const Config *c, uint64_t nofile, uint64_t max_mnt_ns,
                                         char **ret_why);
#define SERVER_FD_RESERVE 64u
#define SERVER_MNT_NS_RESERVE 64u
