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
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "conf.h"
#include "server.h"

/* managed: 1, 0 (not managed, why says why), or -errno (-ETIMEDOUT, a failed lookup). */
typedef void (*PolicyCallback)(int managed, const char *why, void *userdata);
/* What a worker thread runs: config_uid_managed_lookup() unless a test says otherwise. */
typedef int (*PolicyLookupFn)(const Config *c, uid_t uid, char **ret_why);

typedef struct PolicyStats {
        unsigned answered_inline;
        unsigned cache_hits;
        unsigned lookups;  /* started in a thread */
        unsigned running;  /* in a thread right now (some may be stuck) */
        unsigned timeouts; /* waiters that got -ETIMEDOUT */
} PolicyStats;

Policy *policy_new(Server *s);
/* Waiters get -ECANCELED; threads stuck in NSS are left to finish on their own. */
void policy_free(Policy *p);
/* The config changed: empty the cache, apply MaxLookupThreads=. */
void policy_reconfigure(Policy *p);

/* 1 or 0 now (with *ret_why for 0, g_malloc()ed), -EINPROGRESS when cb(userdata) will be
 * called later on the main loop (exactly once), or -errno. */
int policy_uid_managed(Policy *p, uid_t uid, char **ret_why, PolicyCallback cb, void *userdata);

const PolicyStats *policy_stats(const Policy *p);
/* Tests: replace the lookup the threads run. */
void policy_set_lookup_fn(Policy *p, PolicyLookupFn fn);
