/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy.c: see policy.h.
 *
 * Threads never touch nsd's state: a Lookup carries its own copy of the config and its
 * result, and the thread hands it back to the main context (an idle source attached to it).
 * A lookup can outlive its waiters (deadline) and even the Policy (nsd stopping while NSS
 * hangs): it holds a reference to the Policy's core, which is freed by whoever comes last.
 *
 * Two kinds of lookup share all of that: "does nsd manage uid?" (cached) and "who is uid?"
 * (not cached); each kind has its own table of lookups under way.
 */
#include "policy/policy.h"

#include <errno.h>
#include <glib.h>
#include <limits.h>
#include <stdlib.h>

#include "base/log.h"
#include "nss-util.h"

/* The cache never grows past this many uids (a user's subuids are 65536 uids). */
#define CACHE_MAX 8192

typedef struct Lookup Lookup;

typedef enum LookupKind {
        LOOKUP_MANAGED,
        LOOKUP_IDENTITY,
        _LOOKUP_KIND_MAX,
} LookupKind;

typedef struct Core {
        gint n_ref;
        GMainContext *context;
        bool closed; /* the Policy is gone */
        Policy *policy;
} Core;

struct Policy {
        const Config *config;
        Core *core;
        GThreadPool *pool;
        PolicyLookupFn fn;
        PolicyIdentityFn identity_fn;
        unsigned generation; /* bumped by reloads: older answers are not cached */
        /* per kind: uid -> Lookup* of this generation (not owned) */
        GHashTable *inflight[_LOOKUP_KIND_MAX];
        GHashTable *live;  /* every Lookup* not yet handed back (not owned) */
        GHashTable *cache; /* uid -> CacheEntry* */
        PolicyStats stats;
        RateLimit log_rl;
};

typedef struct Waiter {
        Lookup *lookup;
        PolicyCallback cb;                  /* LOOKUP_MANAGED */
        PolicyIdentityCallback identity_cb; /* LOOKUP_IDENTITY */
        void *userdata;
        GSource *timer;
} Waiter;

struct Lookup {
        Core *core;
        LookupKind kind;
        uid_t uid;
        unsigned generation;
        Config config;                /* LOOKUP_MANAGED */
        PolicyLookupFn fn;            /* LOOKUP_MANAGED */
        PolicyIdentityFn identity_fn; /* LOOKUP_IDENTITY */
        int64_t started_usec;
        /* written by the thread, read after it handed the lookup back */
        int result;
        char *why;
        gid_t gid;   /* LOOKUP_IDENTITY */
        gid_t *gids; /* malloc()ed */
        size_t n_gids;
        /* main loop only */
        GList *waiters; /* Waiter* */
        bool in_table;
};

typedef struct CacheEntry {
        int managed;
        char *why;
        int64_t expires_usec;
} CacheEntry;

static void cache_entry_free(gpointer p) {
        CacheEntry *e = p;
        g_free(e->why);
        g_free(e);
}

static Core *core_ref(Core *c) {
        g_atomic_int_inc(&c->n_ref);
        return c;
}

static void core_unref(Core *c) {
        if (g_atomic_int_dec_and_test(&c->n_ref)) {
                g_main_context_unref(c->context);
                g_free(c);
        }
}

static void lookup_free(Lookup *l) {
        g_assert(!l->waiters);
        config_done(&l->config);
        g_free(l->why);
        free(l->gids);
        core_unref(l->core);
        g_free(l);
}

/* The one place a waiter gets its answer (id: for LOOKUP_IDENTITY with r == 0). */
static void waiter_answer(Waiter *w, int r, const char *why, const PolicyIdentity *id) {
        if (w->identity_cb)
                w->identity_cb(r, r == 0 ? id : NULL, r == 0 ? NULL : why, w->userdata);
        else
                w->cb(r, why, w->userdata);
}

static void waiter_free(Waiter *w) {
        if (w->timer) {
                g_source_destroy(w->timer);
                g_source_unref(w->timer);
        }
        g_free(w);
}

static void cache_put(Policy *p, uid_t uid, int managed, const char *why) {
        uint64_t ttl = p->config->lookup_cache_usec;
        CacheEntry *e;

        if (ttl == 0 || managed < 0)
                return;
        if (g_hash_table_size(p->cache) >= CACHE_MAX) {
                int64_t now = g_get_monotonic_time();
                GHashTableIter it;
                gpointer v;
                g_hash_table_iter_init(&it, p->cache);
                while (g_hash_table_iter_next(&it, NULL, &v))
                        if (((CacheEntry *) v)->expires_usec <= now)
                                g_hash_table_iter_remove(&it);
                if (g_hash_table_size(p->cache) >= CACHE_MAX)
                        g_hash_table_remove_all(p->cache);
        }
        e = g_new0(CacheEntry, 1);
        e->managed = managed;
        e->why = g_strdup(why);
        e->expires_usec = g_get_monotonic_time() + (int64_t) ttl;
        g_hash_table_replace(p->cache, GUINT_TO_POINTER(uid), e);
}

/* The thread's answer is back on the main loop. */
static gboolean on_lookup_done(gpointer userdata) {
        Lookup *l = userdata;
        Policy *p = l->core->closed ? NULL : l->core->policy;
        PolicyIdentity id = { .uid = l->uid, .gid = l->gid, .gids = l->gids, .n_gids = l->n_gids };
        GList *waiters;

        if (!p) {
                lookup_free(l);
                return G_SOURCE_REMOVE;
        }
        p->stats.running--;
        g_hash_table_remove(p->live, l);
        if (l->in_table) {
                g_hash_table_remove(p->inflight[l->kind], GUINT_TO_POINTER(l->uid));
                l->in_table = false;
        }
        if (l->kind == LOOKUP_MANAGED && l->generation == p->generation)
                cache_put(p, l->uid, l->result, l->why);
        if (!l->waiters) {
                char t[32];
                log_info("The user database answered for uid %u only after %s s, past its "
                         "deadline; %s",
                         (unsigned) l->uid,
                         config_usec_to_string((uint64_t) (g_get_monotonic_time() -
                                                           l->started_usec),
                                               t, sizeof t),
                         l->kind == LOOKUP_MANAGED ? "the answer is cached"
                                                   : "nobody waits for it any more");
        }
        waiters = g_steal_pointer(&l->waiters);
        for (GList *i = waiters; i; i = i->next) {
                Waiter *w = i->data;
                waiter_answer(w, l->result, l->why, &id);
                waiter_free(w);
        }
        g_list_free(waiters);
        lookup_free(l);
        return G_SOURCE_REMOVE;
}

/* "Who is uid?" through NSS: the thread's default. */
static int identity_lookup_nss(uid_t uid, gid_t *ret_gid, gid_t **ret_gids, size_t *ret_n) {
        struct passwd *pw = NULL;
        gid_t gid;
        int r;

        r = nss_user_by_uid(uid, &pw);
        if (r < 0)
                return r;
        gid = pw->pw_gid;
        r = nss_user_groups(pw->pw_name, gid, ret_gids, ret_n);
        free(pw);
        if (r < 0)
                return r;
        *ret_gid = gid;
        return 0;
}

/* In the thread: the identity, checked, or -errno with l->why. */
static void identity_lookup(Lookup *l) {
        gid_t *gids = NULL;
        size_t n = 0;
        int r;

        r = l->identity_fn(l->uid, &l->gid, &gids, &n);
        if (r == 0 && n > NGROUPS_MAX)
                r = -E2BIG;
        if (r == 0 && n == 0) { /* no group at all: the primary one alone */
                gids = malloc(sizeof *gids);
                if (gids) {
                        gids[0] = l->gid;
                        n = 1;
                } else
                        r = -ENOMEM;
        }
        if (r < 0) {
                free(gids);
                l->result = r;
                if (r == -ENOENT)
                        l->why = g_strdup_printf("uid %u has no entry in the user database",
                                                 (unsigned) l->uid);
                else if (r == -E2BIG && n > NGROUPS_MAX)
                        l->why = g_strdup_printf("uid %u is in %zu groups, more than the "
                                                 "kernel's NGROUPS_MAX (%d)",
                                                 (unsigned) l->uid, n, NGROUPS_MAX);
                else
                        l->why = g_strdup_printf("the user database failed for uid %u: %s",
                                                 (unsigned) l->uid, g_strerror(-r));
                return;
        }
        l->result = 0;
        l->gids = gids;
        l->n_gids = n;
}

static void lookup_thread(gpointer data, gpointer pool_data) {
        Lookup *l = data;
        char *why = NULL;

        if (l->kind == LOOKUP_IDENTITY)
                identity_lookup(l);
        else {
                l->result = l->fn(&l->config, l->uid, &why);
                if (l->result > 1)
                        l->result = 1;
                l->why = why;
        }
        /* Always queued on nsd's context, never run here: g_main_context_invoke() would run
         * on_lookup_done in this thread whenever the main thread does not hold the context
         * at that moment (between iterations, before the loop runs), racing it. */
        GSource *done = g_idle_source_new();
        g_source_set_priority(done, G_PRIORITY_HIGH);
        g_source_set_callback(done, on_lookup_done, l, NULL);
        g_source_attach(done, l->core->context);
        g_source_unref(done);
}

static gboolean on_waiter_deadline(gpointer userdata) {
        Waiter *w = userdata;
        Lookup *l = w->lookup;
        Policy *p = l->core->policy;
        const Config *c = p->config;
        g_autofree char *why = NULL;
        unsigned held = 0;
        char t[32];

        config_usec_to_string(c->lookup_timeout_usec, t, sizeof t);
        why = g_strdup_printf("the user database (NSS) did not answer for uid %u within "
                              "%s s (LookupTimeoutSec=)",
                              (unsigned) l->uid, t);
        p->stats.timeouts++;
        if (ratelimit_below(&p->log_rl, 10 * G_USEC_PER_SEC, 5, &held))
                log_warning("A request waited for the user database too long, refusing it: "
                            "%s%s",
                            why, held ? " (and more like it)" : "");
        l->waiters = g_list_remove(l->waiters, w);
        g_source_unref(w->timer);
        w->timer = NULL; /* this very source: destroyed by returning G_SOURCE_REMOVE */
        waiter_answer(w, -ETIMEDOUT, why, NULL);
        waiter_free(w);
        return G_SOURCE_REMOVE;
}

/* The lookup of this kind for uid under way, or a new one in a thread; NULL and -errno
 * (with *ret_why) when no thread could take it. */
static Lookup *lookup_get(Policy *p, LookupKind kind, uid_t uid, int *ret_r, char **ret_why) {
        GError *error = NULL;
        Lookup *l;

        l = g_hash_table_lookup(p->inflight[kind], GUINT_TO_POINTER(uid));
        if (l)
                return l;
        l = g_new0(Lookup, 1);
        l->core = core_ref(p->core);
        l->kind = kind;
        l->uid = uid;
        l->generation = p->generation;
        if (kind == LOOKUP_MANAGED) {
                config_copy(&l->config, p->config);
                l->fn = p->fn;
        } else
                l->identity_fn = p->identity_fn;
        l->started_usec = g_get_monotonic_time();
        if (!g_thread_pool_push(p->pool, l, &error)) {
                *ret_r = log_error_errno(-EAGAIN, "Cannot start a user database lookup: %s",
                                         error->message);
                g_error_free(error);
                lookup_free(l);
                if (ret_why)
                        *ret_why = g_strdup("nsd cannot start a thread to ask the user database");
                return NULL;
        }
        l->in_table = true;
        g_hash_table_insert(p->inflight[kind], GUINT_TO_POINTER(uid), l);
        g_hash_table_add(p->live, l);
        p->stats.lookups++;
        if (kind == LOOKUP_IDENTITY)
                p->stats.identity_lookups++;
        p->stats.running++;
        log_debug("Asking the user database %s uid %u (a request waits for it)",
                  kind == LOOKUP_MANAGED ? "about" : "for the groups of", (unsigned) uid);
        return l;
}

/* One more request waits for l, until its own deadline. */
static void waiter_add(Policy *p, Lookup *l, PolicyCallback cb, PolicyIdentityCallback identity_cb,
                       void *userdata) {
        const Config *c = p->config;
        Waiter *w = g_new0(Waiter, 1);

        w->lookup = l;
        w->cb = cb;
        w->identity_cb = identity_cb;
        w->userdata = userdata;
        w->timer = g_timeout_source_new((guint) MAX(c->lookup_timeout_usec / 1000, 1));
        g_source_set_priority(w->timer, G_PRIORITY_HIGH);
        g_source_set_callback(w->timer, on_waiter_deadline, w, NULL);
        g_source_attach(w->timer, p->core->context);
        l->waiters = g_list_append(l->waiters, w);
}

int policy_uid_managed(Policy *p, uid_t uid, char **ret_why, PolicyCallback cb, void *userdata) {
        const Config *c = p->config;
        CacheEntry *e;
        Lookup *l;
        int r;

        r = config_uid_managed_inline(c, uid, ret_why);
        if (r != CONFIG_NEEDS_LOOKUP) {
                p->stats.answered_inline++;
                return r;
        }
        e = g_hash_table_lookup(p->cache, GUINT_TO_POINTER(uid));
        if (e && e->expires_usec > g_get_monotonic_time()) {
                p->stats.cache_hits++;
                if (!e->managed && ret_why)
                        *ret_why = g_strdup(e->why);
                return e->managed;
        }
        if (e)
                g_hash_table_remove(p->cache, GUINT_TO_POINTER(uid));

        l = lookup_get(p, LOOKUP_MANAGED, uid, &r, ret_why);
        if (!l)
                return r;
        waiter_add(p, l, cb, NULL, userdata);
        return -EINPROGRESS;
}

int policy_uid_identity(Policy *p, uid_t uid, PolicyIdentityCallback cb, void *userdata) {
        Lookup *l;
        int r;

        g_assert(cb);
        l = lookup_get(p, LOOKUP_IDENTITY, uid, &r, NULL);
        if (!l)
                return r;
        waiter_add(p, l, NULL, cb, userdata);
        return -EINPROGRESS;
}

/* Nobody waits for them any more (nsd stops): each gets -ECANCELED. */
static void cancel_waiters(Policy *p) {
        GHashTableIter it;
        gpointer k;

        g_hash_table_iter_init(&it, p->live);
        while (g_hash_table_iter_next(&it, &k, NULL)) {
                Lookup *l = k;
                GList *waiters = g_steal_pointer(&l->waiters);
                for (GList *i = waiters; i; i = i->next) {
                        Waiter *w = i->data;
                        waiter_answer(w, -ECANCELED, "nsd is stopping", NULL);
                        waiter_free(w);
                }
                g_list_free(waiters);
        }
}

/* Lookups under way keep their waiters, but the next request asks again. */
static void forget_inflight(Policy *p) {
        for (LookupKind k = 0; k < _LOOKUP_KIND_MAX; k++) {
                GHashTableIter it;
                gpointer v;

                g_hash_table_iter_init(&it, p->inflight[k]);
                while (g_hash_table_iter_next(&it, NULL, &v)) {
                        ((Lookup *) v)->in_table = false;
                        g_hash_table_iter_remove(&it);
                }
        }
}

Policy *policy_new(const Config *config) {
        Policy *p = g_new0(Policy, 1);
        GError *error = NULL;

        p->config = config;
        p->core = g_new0(Core, 1);
        p->core->n_ref = 1;
        p->core->context = g_main_context_ref_thread_default();
        p->core->policy = p;
        p->fn = config_uid_managed_lookup;
        p->identity_fn = identity_lookup_nss;
        for (LookupKind k = 0; k < _LOOKUP_KIND_MAX; k++)
                p->inflight[k] = g_hash_table_new(g_direct_hash, g_direct_equal);
        p->live = g_hash_table_new(g_direct_hash, g_direct_equal);
        p->cache = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, cache_entry_free);
        p->pool = g_thread_pool_new(lookup_thread, p, (gint) config->max_lookup_threads, FALSE,
                                    &error);
        g_assert_no_error(error); /* non-exclusive pools never fail */
        return p;
}

void policy_free(Policy *p) {
        if (!p)
                return;
        cancel_waiters(p);
        forget_inflight(p);
        p->core->closed = true;
        /* threads stuck in NSS finish on their own, then free their lookup */
        g_thread_pool_free(p->pool, TRUE, FALSE);
        core_unref(p->core);
        for (LookupKind k = 0; k < _LOOKUP_KIND_MAX; k++)
                g_hash_table_destroy(p->inflight[k]);
        g_hash_table_destroy(p->live);
        g_hash_table_destroy(p->cache);
        g_free(p);
}

void policy_reconfigure(Policy *p) {
        GError *error = NULL;

        p->generation++;
        g_hash_table_remove_all(p->cache);
        forget_inflight(p);
        if (!g_thread_pool_set_max_threads(p->pool, (gint) p->config->max_lookup_threads, &error)) {
                log_warning("Cannot change the number of lookup threads, ignoring: %s",
                            error->message);
                g_error_free(error);
        }
}

const PolicyStats *policy_stats(const Policy *p) {
        return &p->stats;
}

void policy_set_lookup_fn(Policy *p, PolicyLookupFn fn) {
        p->fn = fn ? fn : config_uid_managed_lookup;
}

void policy_set_identity_fn(Policy *p, PolicyIdentityFn fn) {
        p->identity_fn = fn ? fn : identity_lookup_nss;
}
