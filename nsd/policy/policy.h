/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy.h: "does nsd manage uid?" without ever blocking the main loop.
 *
 * What needs no user database (uid 0 and nobody, @regular's MinUid..MaxUid, numeric uids
 * in Users=) is answered at once. So is every uid when Users= names were resolved to uids
 * (at start, at each reload and every LookupCacheSec=, in a thread) and Groups= is empty:
 * a uid none of the names is cannot match. The rest (Groups=, or names before they are
 * resolved) runs config_uid_managed_lookup() in a worker thread; its answer comes back to
 * the loop.
 *
 * Fair lookups: the caller is whose request waits (0: root, or nsd itself). Unprivileged
 * callers' lookups run in at most MaxLookupThreads= threads (so at most that many hang in a
 * stuck NSS module for them); more wait in a line per person (policy_person()), served in
 * turn, at most 64 a person and 256 in all (then -EAGAIN). Root's lookups have
 * MaxLookupThreads= threads of their own and go ahead of every user's: one of the line that root comes to wait for leaves it at once.
 * Requests for a uid whose lookup is under way wait for that same lookup (one slow uid
 * occupies one thread, however often it asks). Each waiter has its own deadline
 * (LookupTimeoutSec=) and then gets -ETIMEDOUT, or with OnLookupTimeout=unmanaged (for "is
 * uid managed?" only) 0, "not managed", with a why that says so; a lookup that answers late still fills
 * the cache. Answers (managed or not, not failures) are cached per uid for
 * LookupCacheSec=, 8192 uids at most (the oldest answer goes first); a reload empties the
 * cache.
 *
 * The same threads answer "who is uid U?" (policy_uid_identity(): its primary gid and its
 * supplementary groups, for HIDE's walk as the user), with the same sharing of one lookup
 * among the requests for a uid and the same deadline. Those answers are not cached: a
 * user removed from a group walks without it at the next HIDE.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/nsd-forward.h"
#include "policy/conf.h"

/* managed: 1, 0 (not managed, why says why), or -errno (-ETIMEDOUT, a failed lookup). */
typedef void (*PolicyCallback)(int managed, const char *why, void *userdata);
/* What a worker thread runs: config_uid_managed_lookup() unless a test says otherwise. */
typedef int (*PolicyLookupFn)(const Config *c, uid_t uid, char **ret_why);

/* Who a uid is, as a login of it would be: its primary gid and its groups (gid first). */
typedef struct PolicyIdentity {
        uid_t uid;
        gid_t gid;
        const gid_t *gids;
        size_t n_gids;
        /* from the passwd and group entries; NULL with a PolicyIdentityFn of a test's */
        const char *name;  /* pw_name */
        const char *home;  /* pw_dir */
        const char *group; /* the primary group's name; NULL also when it has none */
        /* the names of gids (n_gids of them, an entry NULL for a gid without a name), for
         * Groups= of [Share NAME]; NULL with a PolicyIdentityFn of a test's */
        const char *const *group_names;
} PolicyIdentity;
/* r: 0 and id (valid during the call only), or -errno and why: -ENOENT (no passwd entry),
 * -E2BIG (more than NGROUPS_MAX groups), -ETIMEDOUT, -ECANCELED, a failed lookup. */
typedef void (*PolicyIdentityCallback)(int r, const PolicyIdentity *id, const char *why,
                                       void *userdata);
/* What a worker thread runs for it: NSS (nss_user_by_uid(), nss_user_groups()) unless a test
 * says otherwise. 0 with *ret_gid and *ret_gids (malloc()ed, *ret_n of them), or -errno. */
typedef int (*PolicyIdentityFn)(uid_t uid, gid_t *ret_gid, gid_t **ret_gids, size_t *ret_n);

/* r: 0 and name (valid during the call only), or -errno and why: -ENOENT (no passwd entry),
 * -ETIMEDOUT, -ECANCELED, a failed lookup. */
typedef void (*PolicyNameCallback)(int r, const char *name, const char *why, void *userdata);
/* What a worker thread runs for it: NSS unless a test says otherwise. 0 with *ret_name
 * (malloc()ed), -ENOENT (no entry), or -errno. */
typedef int (*PolicyNameFn)(uid_t uid, char **ret_name);

typedef struct PolicyStats {
        unsigned answered_inline;
        unsigned cache_hits;
        unsigned cache_evictions;    /* answers forgotten to make room (CACHE_MAX) */
        unsigned lookups;            /* of either kind, in a thread or waiting for one */
        unsigned identity_lookups;   /* of which "who is uid U?" */
        unsigned running;            /* in a thread right now (some may be stuck) */
        unsigned queued;             /* unprivileged callers' lookups waiting for a thread */
        unsigned promoted;           /* of those, taken ahead because root came to wait */
        unsigned refused;            /* -EAGAIN: the line was full */
        unsigned timeouts;           /* waiters past their deadline */
        unsigned timeouts_unmanaged; /* of which answered "not managed" (OnLookupTimeout=) */
        unsigned names_resolved;     /* times Users= names were resolved to uids */
} PolicyStats;

/* config: the one in force, read at every lookup (a reload refills the same struct, then
 * calls policy_reconfigure()). */
Policy *policy_new(const Config *config);
/* Waiters get -ECANCELED; threads stuck in NSS are left to finish on their own. */
void policy_free(Policy *p);
/* The config changed: empty the cache, apply MaxLookupThreads=. */
void policy_reconfigure(Policy *p);

/* Does nsd manage uid, for caller (0: root or nsd)? 1 or 0 now (with *ret_why for 0,
 * g_malloc()ed), -EINPROGRESS when cb(userdata) will be called later on the main loop
 * (exactly once), or -errno (-EAGAIN: too many lookups wait, with *ret_why). */
int policy_uid_managed(Policy *p, uid_t uid, uid_t caller, char **ret_why, PolicyCallback cb,
                       void *userdata);

/* Who is uid, for caller? -EINPROGRESS: cb(userdata) will be called later on the main loop
 * (exactly once, never before this returns), or -errno now (no thread could be started,
 * too many lookups wait). */
int policy_uid_identity(Policy *p, uid_t uid, uid_t caller, PolicyIdentityCallback cb,
                        void *userdata);

/* What is uid's user name now (the owner check of a namespace, users.h)? 0 with *ret_name
 * (g_malloc()ed) or -ENOENT (no passwd entry) at once from the cache (answers are kept
 * LookupCacheSec=, like "is uid managed?"); -EINPROGRESS: cb(userdata) will be called later
 * on the main loop (exactly once); or -errno now. */
int policy_uid_name(Policy *p, uid_t uid, uid_t caller, char **ret_name, PolicyNameCallback cb,
                    void *userdata);

const PolicyStats *policy_stats(const Policy *p);
/* The subordinate id files (/etc/subuid, /etc/subgid; NULL: none), read with the Users=
 * names (start, reload, every LookupCacheSec=), owners resolved to uids in a thread. */
void policy_set_subid_files(Policy *p, const char *subuid, const char *subgid);
/* Whose is uid (with gid, -1: not known): the owner of the subuid range it lies in (or,
 * outside MinUid..MaxUid, of the subgid range its gid lies in), as newuidmap would have
 * mapped it for that owner; else uid itself. Never blocks (the files as read last). Budgets
 * that count people use it: connections (conn.c) and the line of lookups (this file). */
uid_t policy_person(const Policy *p, uid_t uid, gid_t gid);

/* Tests: replace the lookups the threads run (NULL: the real ones). A lookup fn of a test's
 * decides every uid: Users= names are not resolved then. */
void policy_set_lookup_fn(Policy *p, PolicyLookupFn fn);
void policy_set_identity_fn(Policy *p, PolicyIdentityFn fn);
void policy_set_name_fn(Policy *p, PolicyNameFn fn);
