/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * server.h: the manager (like logind's Manager): it makes the rooms, binds the handler table
 * into the transport and the registry's "changed" to STATUS=, and is the only one that talks
 * to the service manager. It holds no user, session or request: those are the rooms'. The
 * rooms, by floor (a file includes only what stands below it):
 *   server.c              start, stop, reload, limits in force, mode private on/off, STATUS=
 *   api/handlers.c        what nsd answers: a handler per request type (api_handlers[])
 *   api/access.c          who may ask for what
 *   api/peer.c            where a client process stands (inside, initial, sandboxed)
 *   api/api.h             what the handlers work with (their userdata)
 *   domain/users.c        the registry: owns users and sessions, says "changed"
 *   domain/linger.c       the countdowns of Linger= and the emptiness rule
 *   domain/session.c      one session and its leader's pidfd, kept across restarts
 *   domain/user.c         one user's namespace: fd store class, state file, baseline
 *   domain/private.c      mode private and HIDE (owner-private mounts)
 *   transport/request.c   the wire side of a request: table of sizes, flags, checks; replies
 *   transport/conn.c      listening sockets, connections, queues, limits, timeouts, rate limits
 *   store/pending.c       kept namespaces not adopted yet: one adoption path, one backoff
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
 *   base/errno-util.c     which errors may pass; why_set(), the one way to say why
 *   base/nsd-forward.h    the name of every object
 * tools/check-layers keeps it so (a unit test): no include up or sideways, no circle.
 * main.c (not in the core library): arguments, capabilities, sockets, signals, watchdog.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"
#include "base/nsd-forward.h"
#include "policy/conf.h"
#include "transport/request.h"

struct Server {
        Config config; /* the one in force: every room reads it through a const Config * */
        char *config_path;
        char *run_dir;
        uint32_t features;           /* the kernel's, probed */
        PrivateWatch *private_watch; /* mode private on ([Private] Enable=yes) */
        ShareBound *share_bound;     /* [Share] MaxMountsPerUser= */
        bool private_unavailable;    /* Enable=yes, refused: see server_private_mode_apply() */
        bool born_private_set;       /* nsd gave the initial namespace's mounts the F4b policy */
        uint64_t started_usec;

        /* the rooms, bottom up */
        FdStore *fdstore; /* never NULL; does nothing without a service manager */
        StateDir *state;  /* NULL: no state files (no run_dir, or it cannot be used) */
        PinStore *pins;   /* NULL: running without pins */
        Pending *pending; /* kept namespaces not adopted yet */
        Policy *policy;
        Children *children;
        Users *users;             /* the registry: users and sessions */
        Api api;                  /* what the handlers work with */
        RequestHandlers handlers; /* api_handlers with &api: bound to conns */
        ConnManager *conns;

        guint notify_timer; /* a pending STATUS= to the service manager */
        bool pinns_stored;  /* the pin namespace is in the fd store */
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
        /* subordinate id files: a subuid's connections count against its owner (NULL: none) */
        const char *subuid_path;
        const char *subgid_path;
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
