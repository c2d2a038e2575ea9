/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy.h: "does nsd manage uid?" without ever blocking the main loop.
 *
 * What needs no user database (uid 0 and nobody, @regular's MinUid..MaxUid, numeric uids
 * in Users=) is answered at once. The rest (user names in Users=, Groups=) runs
 * config_uid_managed_lookup() in a worker thread (at most MaxLookupThreads= of them, so at
 * most that many threads can hang in a stuck NSS module); its answer comes back to the loop.
 * Requests for a uid whose lookup is under way wait for that same lookup (one slow uid
 * occupies one thread, however often it asks). Each waiter has its own deadline
 * (LookupTimeoutSec=) and then gets -ETIMEDOUT; a lookup that answers late still fills
 * the cache. Answers (managed or not, not failures) are cached per uid for
 * LookupCacheSec=; a reload empties the cache.
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
} PolicyIdentity;
/* r: 0 and id (valid during the call only), or -errno and why: -ENOENT (no passwd entry),
 * -E2BIG (more than NGROUPS_MAX groups), -ETIMEDOUT, -ECANCELED, a failed lookup. */
typedef void (*PolicyIdentityCallback)(int r, const PolicyIdentity *id, const char *why,
                                       void *userdata);
/* What a worker thread runs for it: NSS (nss_user_by_uid(), nss_user_groups()) unless a test
 * says otherwise. 0 with *ret_gid and *ret_gids (malloc()ed, *ret_n of them), or -errno. */
typedef int (*PolicyIdentityFn)(uid_t uid, gid_t *ret_gid, gid_t **ret_gids, size_t *ret_n);

typedef struct PolicyStats {
        unsigned answered_inline;
        unsigned cache_hits;
        unsigned lookups;          /* started in a thread, of either kind */
        unsigned identity_lookups; /* of which "who is uid U?" */
        unsigned running;          /* in a thread right now (some may be stuck) */
        unsigned timeouts;         /* waiters that got -ETIMEDOUT */
} PolicyStats;

/* config: the one in force, read at every lookup (a reload refills the same struct, then
 * calls policy_reconfigure()). */
Policy *policy_new(const Config *config);
/* Waiters get -ECANCELED; threads stuck in NSS are left to finish on their own. */
void policy_free(Policy *p);
/* The config changed: empty the cache, apply MaxLookupThreads=. */
void policy_reconfigure(Policy *p);

/* 1 or 0 now (with *ret_why for 0, g_malloc()ed), -EINPROGRESS when cb(userdata) will be
 * called later on the main loop (exactly once), or -errno. */
int policy_uid_managed(Policy *p, uid_t uid, char **ret_why, PolicyCallback cb, void *userdata);

/* Who is uid? -EINPROGRESS: cb(userdata) will be called later on the main loop (exactly
 * once, never before this returns), or -errno now (no thread could be started). */
int policy_uid_identity(Policy *p, uid_t uid, PolicyIdentityCallback cb, void *userdata);

const PolicyStats *policy_stats(const Policy *p);
/* Tests: replace the lookups the threads run (NULL: the real ones). */
void policy_set_lookup_fn(Policy *p, PolicyLookupFn fn);
void policy_set_identity_fn(Policy *p, PolicyIdentityFn fn);
