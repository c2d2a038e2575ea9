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
 * (not cached); each kind has its own table of lookups under way. A third, with no waiter,
 * resolves the names of Users= to uids (at start, at each reload, and every LookupCacheSec=).
 *
 * Fairness: the pool has twice MaxLookupThreads= threads. Lookups an unprivileged caller
 * waits for run in at most MaxLookupThreads= of them; more wait in a queue of this file's,
 * one line per person (a uid, or the owner of a subuid range for all of its uids) served in
 * turn (round robin), at most QUEUED_PER_PERSON a person and QUEUED_MAX in all. Root's lookups
 * (and nsd's own) go to the pool at once, so they always find a thread free unless root's
 * own lookups hang; a queued lookup that root starts waiting for goes to the pool at once.
 * The cache forgets its oldest entry when full, not everything.
 */
#include "policy/policy.h"

#include <errno.h>
#include <glib.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/metrics.h"
#include "nss-util.h"

#include <pwd.h>

/* The cache never grows past this many uids (a user's subuids are 65536 uids): the oldest
 * answer goes first. */
#define CACHE_MAX 8192
/* Unprivileged callers' lookups waiting for a thread, in all, and of one person (a uid with
 * every uid of its subuid range). */
#define QUEUED_MAX 256
#define QUEUED_PER_PERSON 64

typedef struct Lookup Lookup;

typedef enum LookupKind {
        LOOKUP_MANAGED,
        LOOKUP_IDENTITY,
        LOOKUP_NAME,
        _LOOKUP_KIND_MAX,
        LOOKUP_NAMES = _LOOKUP_KIND_MAX, /* Users= names to uids: no table, no waiter */
} LookupKind;

/* One line of /etc/subuid or /etc/subgid, its owner resolved to a uid. */
typedef struct SubRange {
        uint32_t start, count;
        uid_t owner;
} SubRange;

/* Users= names resolved to uids: a uid none of them is, with no Groups=, is answered inline.
 * And the subordinate id ranges, sorted by start (who owns a uid of a user namespace). */
typedef struct Names {
        unsigned generation;
        bool resolve_users;        /* Users= names were resolved (not for a test's lookup fn) */
        bool complete;             /* every name answered (found or not): no NSS error */
        GHashTable *uids;          /* GUINT_TO_POINTER(uid) set */
        GArray *subuids, *subgids; /* SubRange, sorted by start */
        unsigned bad_lines;        /* lines of the subid files that were not understood */
} Names;

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
        PolicyNameFn name_fn;
        unsigned generation; /* bumped by reloads: older answers are not cached */
        /* per kind: uid -> Lookup* of this generation (not owned) */
        GHashTable *inflight[_LOOKUP_KIND_MAX];
        GHashTable *live;        /* every Lookup* not yet handed back (not owned) */
        GHashTable *cache;       /* uid -> CacheEntry* */
        GQueue cache_order;      /* CacheEntry*, oldest first */
        GHashTable *names_cache; /* uid -> NameEntry*: "what is uid's name?" answers */
        /* unprivileged callers' lookups: running (pushed to the pool), and waiting */
        unsigned running_user;
        GHashTable *queues; /* caller uid -> GQueue* of Lookup* */
        GQueue turns;       /* caller uids (GUINT_TO_POINTER) with a queue, next first */
        Names *names;       /* NULL: not resolved (yet) */
        bool resolving;
        bool resolve_again; /* the subid files changed while resolving */
        guint refresh_timer;
        char *subid_files[2];
        PolicyStats stats;
        RateLimit log_rl;
};

typedef struct Waiter {
        Lookup *lookup;
        PolicyCallback cb;                  /* LOOKUP_MANAGED */
        PolicyIdentityCallback identity_cb; /* LOOKUP_IDENTITY */
        PolicyNameCallback name_cb;         /* LOOKUP_NAME */
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
        PolicyNameFn name_fn;         /* LOOKUP_NAME */
        int64_t started_usec;
        /* written by the thread, read after it handed the lookup back */
        int result;
        char *why;
        gid_t gid;   /* LOOKUP_IDENTITY */
        gid_t *gids; /* malloc()ed */
        size_t n_gids;
        char *name, *home, *group; /* LOOKUP_IDENTITY through NSS, LOOKUP_NAME (malloc()ed) */
        char **group_names;        /* n_gids of them, an entry NULL: no name (malloc()ed) */
        Names *names;              /* LOOKUP_NAMES: the result */
        bool resolve_users;        /* LOOKUP_NAMES: Users= names too */
        char *subid_files[2];      /* LOOKUP_NAMES: /etc/subuid, /etc/subgid (NULL: none) */
        /* main loop only */
        GList *waiters; /* Waiter* */
        bool in_table;
        bool root;      /* root (or nsd) waits for it: never queued */
        bool user_slot; /* in a thread as an unprivileged caller's (running_user) */
        bool queued;    /* in the queue of caller, not in the pool yet */
        uid_t caller;   /* whose queue */
};

typedef struct CacheEntry {
        int managed;
        char *why;
        int64_t expires_usec;
        uid_t uid;
        GList link; /* in cache_order */
} CacheEntry;

/* uid's name as the user database said it, for LookupCacheSec= (name NULL: no entry) */
typedef struct NameEntry {
        char *name;
        int64_t expires_usec;
} NameEntry;

static void name_entry_free(gpointer p) {
        NameEntry *e = p;
        g_free(e->name);
        g_free(e);
}

static void cache_entry_free(gpointer p) {
        CacheEntry *e = p;
        g_free(e->why);
        g_free(e);
}

static void names_free(Names *n) {
        if (!n)
                return;
        g_hash_table_destroy(n->uids);
        g_array_unref(n->subuids);
        g_array_unref(n->subgids);
        g_free(n);
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
        names_free(l->names);
        g_free(l->subid_files[0]);
        g_free(l->subid_files[1]);
        config_done(&l->config);
        g_free(l->why);
        free(l->gids);
        free(l->name);
        free(l->home);
        free(l->group);
        if (l->group_names)
                for (size_t i = 0; i < l->n_gids; i++)
                        free(l->group_names[i]);
        free(l->group_names);
        core_unref(l->core);
        g_free(l);
}

/* The one place a waiter gets its answer (id: for LOOKUP_IDENTITY with r == 0). */
static void waiter_answer(Waiter *w, int r, const char *why, const PolicyIdentity *id) {
        if (w->identity_cb)
                w->identity_cb(r, r == 0 ? id : NULL, r == 0 ? NULL : why, w->userdata);
        else if (w->name_cb)
                w->name_cb(r, r == 0 && id ? id->name : NULL, r == 0 ? NULL : why, w->userdata);
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

static void cache_remove(Policy *p, uid_t uid) {
        CacheEntry *e = g_hash_table_lookup(p->cache, GUINT_TO_POINTER(uid));

        if (!e)
                return;
        g_queue_unlink(&p->cache_order, &e->link);
        g_hash_table_remove(p->cache, GUINT_TO_POINTER(uid)); /* frees e */
}

static void cache_clear(Policy *p) {
        g_queue_init(&p->cache_order); /* the links live in the entries */
        g_hash_table_remove_all(p->cache);
}

static void cache_put(Policy *p, uid_t uid, int managed, const char *why) {
        uint64_t ttl = p->config->lookup_cache_usec;
        CacheEntry *e;

        if (ttl == 0 || managed < 0)
                return;
        cache_remove(p, uid);
        while (g_hash_table_size(p->cache) >= CACHE_MAX) {
                /* the oldest answer goes (all share one TTL: it expires first, too) */
                CacheEntry *old = p->cache_order.head->data;
                p->stats.cache_evictions++;
                cache_remove(p, old->uid);
        }
        e = g_new0(CacheEntry, 1);
        e->managed = managed;
        e->why = g_strdup(why);
        e->expires_usec = g_get_monotonic_time() + (int64_t) ttl;
        e->uid = uid;
        e->link.data = e;
        g_hash_table_insert(p->cache, GUINT_TO_POINTER(uid), e);
        g_queue_push_tail_link(&p->cache_order, &e->link);
}

/* An answer of "what is uid's name?" (found, or no entry; not a failure), kept
 * LookupCacheSec=; a full cache (CACHE_MAX) is emptied first. */
static void names_cache_put(Policy *p, uid_t uid, int r, const char *name) {
        uint64_t ttl = p->config->lookup_cache_usec;
        NameEntry *e;

        if (ttl == 0 || (r < 0 && r != -ENOENT))
                return;
        if (g_hash_table_size(p->names_cache) >= CACHE_MAX) {
                p->stats.cache_evictions += g_hash_table_size(p->names_cache);
                g_hash_table_remove_all(p->names_cache);
        }
        e = g_new0(NameEntry, 1);
        e->name = r == 0 ? g_strdup(name) : NULL;
        e->expires_usec = g_get_monotonic_time() + (int64_t) ttl;
        g_hash_table_replace(p->names_cache, GUINT_TO_POINTER(uid), e);
}

static void queue_pump(Policy *p);
static void names_done(Policy *p, Lookup *l);

/* The thread's answer is back on the main loop. */
static gboolean on_lookup_done(gpointer userdata) {
        Lookup *l = userdata;
        Policy *p = l->core->closed ? NULL : l->core->policy;
        PolicyIdentity id = { .uid = l->uid,
                              .gid = l->gid,
                              .gids = l->gids,
                              .n_gids = l->n_gids,
                              .name = l->name,
                              .home = l->home,
                              .group = l->group,
                              .group_names = (const char *const *) l->group_names };
        GList *waiters;

        if (!p) {
                lookup_free(l);
                return G_SOURCE_REMOVE;
        }
        p->stats.running--;
        if (l->user_slot)
                p->running_user--;
        g_hash_table_remove(p->live, l);
        if (l->kind == LOOKUP_NAMES) {
                names_done(p, l);
                lookup_free(l);
                queue_pump(p);
                return G_SOURCE_REMOVE;
        }
        metrics_count_lookup(l->result >= 0         ? NSD_METRICS_LOOKUP_OK
                             : l->result == -ENOENT ? NSD_METRICS_LOOKUP_NOT_FOUND
                                                    : NSD_METRICS_LOOKUP_ERROR);
        if (l->in_table) {
                g_hash_table_remove(p->inflight[l->kind], GUINT_TO_POINTER(l->uid));
                l->in_table = false;
        }
        if (l->kind == LOOKUP_MANAGED && l->generation == p->generation)
                cache_put(p, l->uid, l->result, l->why);
        if (l->kind == LOOKUP_NAME && l->generation == p->generation)
                names_cache_put(p, l->uid, l->result, l->name);
        if (!l->waiters) {
                char t[32];
                log_info("The user database answered for uid %u only after %s s, past its "
                         "deadline; %s",
                         (unsigned) l->uid,
                         config_usec_to_string((uint64_t) (g_get_monotonic_time() -
                                                           l->started_usec),
                                               t, sizeof t),
                         l->kind != LOOKUP_IDENTITY ? "the answer is cached"
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
        queue_pump(p);
        return G_SOURCE_REMOVE;
}

/* "Who is uid?" through NSS; with l, its names too (the user's, home, primary group's). */
static int identity_nss(uid_t uid, gid_t *ret_gid, gid_t **ret_gids, size_t *ret_n, Lookup *l) {
        struct passwd *pw = NULL;
        struct group *gr = NULL;
        gid_t gid;
        int r;

        r = nss_user_by_uid(uid, &pw);
        if (r < 0)
                return r;
        gid = pw->pw_gid;
        r = nss_user_groups(pw->pw_name, gid, ret_gids, ret_n);
        if (r >= 0 && l) {
                l->name = strdup(pw->pw_name);
                l->home = strdup(pw->pw_dir ? pw->pw_dir : "");
                if (nss_group_by_gid(gid, &gr) >= 0) /* a gid without a name is no error */
                        l->group = strdup(gr->gr_name);
                free(gr);
                if (!l->name || !l->home) {
                        free(*ret_gids);
                        *ret_gids = NULL;
                        r = -ENOMEM;
                }
        }
        free(pw);
        if (r < 0)
                return r;
        *ret_gid = gid;
        return 0;
}

/* the thread's default for "what is uid's name?" */
static int name_lookup_nss(uid_t uid, char **ret_name) {
        struct passwd *pw = NULL;
        char *name;
        int r;

        r = nss_user_by_uid(uid, &pw);
        if (r < 0)
                return r;
        name = strdup(pw->pw_name);
        free(pw);
        if (!name)
                return -ENOMEM;
        *ret_name = name;
        return 0;
}

/* the thread's default */
static int identity_lookup_nss(uid_t uid, gid_t *ret_gid, gid_t **ret_gids, size_t *ret_n) {
        return identity_nss(uid, ret_gid, ret_gids, ret_n, NULL);
}

/* In the thread: the names of gids, for [Share NAME]'s Groups= (a gid without a name, or one
 * the database cannot say now, has none: only its number can match then). NULL when out of
 * memory (then no group matches by name: the share is left out, never given by mistake). */
static char **group_names_nss(const gid_t *gids, size_t n) {
        char **names = calloc(n ? n : 1, sizeof *names);

        if (!names)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                struct group *gr = NULL;

                if (nss_group_by_gid(gids[i], &gr) >= 0)
                        names[i] = strdup(gr->gr_name);
                free(gr);
        }
        return names;
}

/* In the thread: the identity, checked, or -errno with l->why. */
static void identity_lookup(Lookup *l) {
        gid_t *gids = NULL;
        size_t n = 0;
        int r;

        r = l->identity_fn == identity_lookup_nss ? identity_nss(l->uid, &l->gid, &gids, &n, l)
                                                  : l->identity_fn(l->uid, &l->gid, &gids, &n);
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
        if (l->identity_fn == identity_lookup_nss)
                l->group_names = group_names_nss(gids, n);
}

static gint subrange_cmp(gconstpointer a, gconstpointer b) {
        const SubRange *x = a, *y = b;
        return x->start < y->start ? -1 : x->start > y->start;
}

/* In the thread: a subid file ("owner:start:count" lines, the owner a name or a uid, as
 * shadow's newuidmap reads them) into ranges. A missing file is no range. */
static GArray *subids_read(const char *path, unsigned *bad_lines) {
        GArray *a = g_array_new(FALSE, FALSE, sizeof(SubRange));
        g_autofree char *text = NULL;
        g_auto(GStrv) lines = NULL;

        if (!path || !g_file_get_contents(path, &text, NULL, NULL))
                return a;
        lines = g_strsplit(text, "\n", -1);
        for (char **line = lines; *line; line++) {
                g_auto(GStrv) f = NULL;
                guint64 start, count;
                SubRange r;

                g_strstrip(*line);
                if (!**line || **line == '#')
                        continue;
                f = g_strsplit(*line, ":", -1);
                if (g_strv_length(f) != 3 || !*f[0] ||
                    !g_ascii_string_to_unsigned(f[1], 10, 0, UINT32_MAX, &start, NULL) ||
                    !g_ascii_string_to_unsigned(f[2], 10, 1, UINT32_MAX, &count, NULL) ||
                    start + count - 1 > UINT32_MAX - 1) {
                        (*bad_lines)++;
                        continue;
                }
                if (g_ascii_isdigit(*f[0])) {
                        guint64 owner;
                        if (!g_ascii_string_to_unsigned(f[0], 10, 0, UINT32_MAX - 1, &owner,
                                                        NULL)) {
                                (*bad_lines)++;
                                continue;
                        }
                        r.owner = (uid_t) owner;
                } else {
                        g_autofree struct passwd *pw = NULL;
                        if (nss_user_by_name(f[0], &pw) < 0)
                                continue; /* an owner without an entry: no person to count */
                        r.owner = pw->pw_uid;
                }
                r.start = (uint32_t) start;
                r.count = (uint32_t) count;
                g_array_append_val(a, r);
        }
        g_array_sort(a, subrange_cmp);
        return a;
}

/* The owner of the range holding id, or (uid_t) -1. Ranges may overlap (then the one that
 * starts last before id and holds it, looking back 8 ranges at most). */
static uid_t subids_owner(const GArray *a, uint32_t id) {
        size_t lo = 0, hi = a ? a->len : 0;

        while (lo < hi) { /* the first range starting after id */
                size_t mid = (lo + hi) / 2;
                if (g_array_index(a, SubRange, mid).start <= id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        for (size_t i = lo; i > 0 && lo - i < 8; i--) {
                const SubRange *r = &g_array_index(a, SubRange, i - 1);
                if (id - r->start < r->count)
                        return r->owner;
        }
        return (uid_t) -1;
}

/* In the thread: Users= names to uids, and the subid files. */
static void names_lookup(Lookup *l) {
        Names *n = g_new0(Names, 1);

        n->generation = l->generation;
        n->resolve_users = l->resolve_users;
        n->complete = true;
        n->uids = g_hash_table_new(g_direct_hash, g_direct_equal);
        n->subuids = subids_read(l->subid_files[0], &n->bad_lines);
        n->subgids = subids_read(l->subid_files[1], &n->bad_lines);
        for (char **u = l->config.users; l->resolve_users && u && *u; u++) {
                g_autofree struct passwd *pw = NULL;
                int r;

                if (strcmp(*u, "@regular") == 0 || g_ascii_isdigit(**u))
                        continue;
                r = nss_user_by_name(*u, &pw);
                if (r == 0)
                        g_hash_table_add(n->uids, GUINT_TO_POINTER(pw->pw_uid));
                else if (r != -ENOENT)
                        n->complete = false; /* that name may be any uid: ask per uid */
        }
        l->names = n;
}

static void lookup_thread(gpointer data, gpointer pool_data) {
        Lookup *l = data;
        char *why = NULL;

        if (l->kind == LOOKUP_IDENTITY)
                identity_lookup(l);
        else if (l->kind == LOOKUP_NAME) {
                l->result = l->name_fn(l->uid, &l->name);
                if (l->result == -ENOENT)
                        l->why = g_strdup_printf("uid %u has no entry in the user database",
                                                 (unsigned) l->uid);
                else if (l->result < 0)
                        l->why = g_strdup_printf("the user database failed for uid %u: %s",
                                                 (unsigned) l->uid, g_strerror(-l->result));
        } else if (l->kind == LOOKUP_NAMES)
                names_lookup(l);
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

/* ---- the queue of unprivileged callers' lookups ------------------------------------------ */

static void queue_add(Policy *p, Lookup *l) {
        GQueue *q = g_hash_table_lookup(p->queues, GUINT_TO_POINTER(l->caller));

        if (!q) {
                q = g_queue_new();
                g_hash_table_insert(p->queues, GUINT_TO_POINTER(l->caller), q);
                g_queue_push_tail(&p->turns, GUINT_TO_POINTER(l->caller));
        }
        g_queue_push_tail(q, l);
        l->queued = true;
        p->stats.queued++;
}

/* Take l out of its caller's line (the line goes when empty). */
static void queue_unlink(Policy *p, Lookup *l) {
        GQueue *q = g_hash_table_lookup(p->queues, GUINT_TO_POINTER(l->caller));

        g_assert(l->queued && q);
        g_queue_remove(q, l);
        l->queued = false;
        p->stats.queued--;
        if (g_queue_is_empty(q)) {
                g_hash_table_remove(p->queues, GUINT_TO_POINTER(l->caller)); /* frees q */
                g_queue_remove(&p->turns, GUINT_TO_POINTER(l->caller));
        }
}

/* Forget a lookup that never reached a thread: its waiters get r and why. */
static void lookup_abandon(Policy *p, Lookup *l, int r, const char *why) {
        GList *waiters = g_steal_pointer(&l->waiters);

        if (l->in_table)
                g_hash_table_remove(p->inflight[l->kind], GUINT_TO_POINTER(l->uid));
        g_hash_table_remove(p->live, l);
        for (GList *i = waiters; i; i = i->next) {
                Waiter *w = i->data;
                waiter_answer(w, r, why, NULL);
                waiter_free(w);
        }
        g_list_free(waiters);
        lookup_free(l);
}

/* Hand l to a thread: 0, or -EAGAIN (logged) when none could be started. */
static int lookup_push(Policy *p, Lookup *l) {
        GError *error = NULL;

        if (!g_thread_pool_push(p->pool, l, &error)) {
                int r = log_error_errno(-EAGAIN, "Cannot start a user database lookup: %s",
                                        error->message);
                g_error_free(error);
                return r;
        }
        l->started_usec = g_get_monotonic_time();
        p->stats.running++;
        l->user_slot = !l->root;
        if (l->user_slot)
                p->running_user++;
        log_debug("Asking the user database %s uid %u (%s waits for it)",
                  l->kind == LOOKUP_MANAGED ? "about"
                  : l->kind == LOOKUP_NAME  ? "for the name of"
                                            : "for the groups of",
                  (unsigned) l->uid, l->root ? "root" : "a user");
        return 0;
}

/* Threads free for unprivileged callers: the next callers in turn get them. */
static void queue_pump(Policy *p) {
        while (p->running_user < p->config->max_lookup_threads && p->turns.head) {
                uid_t caller = GPOINTER_TO_UINT(p->turns.head->data);
                GQueue *q = g_hash_table_lookup(p->queues, GUINT_TO_POINTER(caller));
                Lookup *l = g_queue_peek_head(q);

                queue_unlink(p, l);
                if (p->turns.head && GPOINTER_TO_UINT(p->turns.head->data) == caller) {
                        /* still there (more of this caller's): to the back of the line */
                        g_queue_push_tail(&p->turns, g_queue_pop_head(&p->turns));
                }
                if (lookup_push(p, l) < 0)
                        lookup_abandon(p, l, -EAGAIN,
                                       "nsd cannot start a thread to ask the user database");
        }
}

/* Root waits for l now: out of the line, into a thread. 0, or -EAGAIN when no thread could
 * take it (then l is gone: its waiters were told). */
static int lookup_promote(Policy *p, Lookup *l) {
        l->root = true;
        if (!l->queued)
                return 0; /* in a thread already (it counts as a user's until it ends) */
        queue_unlink(p, l);
        p->stats.promoted++;
        if (lookup_push(p, l) < 0) {
                lookup_abandon(p, l, -EAGAIN, "nsd cannot start a thread to ask the user database");
                return -EAGAIN;
        }
        return 0;
}

static gboolean on_waiter_deadline(gpointer userdata) {
        Waiter *w = userdata;
        Lookup *l = w->lookup;
        Policy *p = l->core->policy;
        const Config *c = p->config;
        g_autofree char *why = NULL;
        unsigned held = 0;
        bool unmanaged;
        char t[32];

        config_usec_to_string(c->lookup_timeout_usec, t, sizeof t);
        why = g_strdup_printf("the user database (NSS) did not answer for uid %u within "
                              "%s s (LookupTimeoutSec=)%s",
                              (unsigned) l->uid, t,
                              l->queued ? "; the lookup still waited for a thread, behind "
                                          "other users' (MaxLookupThreads=)"
                                        : "");
        /* "does nsd manage uid?" past its deadline: OnLookupTimeout= decides (the other
         * kinds are refused: nothing can be done without their answer) */
        unmanaged = l->kind == LOOKUP_MANAGED && c->lookup_timeout_unmanaged;
        p->stats.timeouts++;
        metrics_count_lookup(NSD_METRICS_LOOKUP_TIMEOUT);
        if (l->kind == LOOKUP_MANAGED) {
                metrics_count_lookup_timeout(unmanaged ? NSD_METRICS_LOOKUP_TIMEOUT_UNMANAGED
                                                       : NSD_METRICS_LOOKUP_TIMEOUT_REFUSED);
                if (unmanaged)
                        p->stats.timeouts_unmanaged++;
        }
        if (unmanaged) {
                char *unmanaged_why =
                        g_strdup_printf("%s; uid %u is treated as not managed for this request "
                                        "(OnLookupTimeout=unmanaged)",
                                        why, (unsigned) l->uid);
                g_free(why);
                why = unmanaged_why;
        }
        if (ratelimit_below(&p->log_rl, 10 * G_USEC_PER_SEC, 5, &held)) {
                if (unmanaged)
                        log_event_reason(LOG_WARNING, -ETIMEDOUT, l->uid, "lookup-timeout", why,
                                         "A request waited for the user database too long, "
                                         "going on without nsd: %s%s",
                                         why, held ? " (and more like it)" : "");
                else
                        log_event_reason(LOG_WARNING, -ETIMEDOUT, l->uid, "lookup-timeout", why,
                                         "A request waited for the user database too long, "
                                         "refusing it: %s%s",
                                         why, held ? " (and more like it)" : "");
        }
        l->waiters = g_list_remove(l->waiters, w);
        g_source_unref(w->timer);
        w->timer = NULL; /* this very source: destroyed by returning G_SOURCE_REMOVE */
        waiter_answer(w, unmanaged ? 0 : -ETIMEDOUT, why, NULL);
        waiter_free(w);
        if (l->queued && !l->waiters) { /* nobody waits for it: it need not run at all */
                queue_unlink(p, l);
                lookup_abandon(p, l, 0, NULL);
        }
        return G_SOURCE_REMOVE;
}

static Lookup *lookup_new(Policy *p, LookupKind kind, uid_t uid, uid_t caller) {
        Lookup *l = g_new0(Lookup, 1);

        l->core = core_ref(p->core);
        l->kind = kind;
        l->uid = uid;
        l->caller = caller;
        l->root = caller == 0;
        l->generation = p->generation;
        if (kind == LOOKUP_MANAGED || kind == LOOKUP_NAMES) {
                config_copy(&l->config, p->config);
                l->fn = p->fn;
        } else {
                l->identity_fn = p->identity_fn;
                l->name_fn = p->name_fn;
        }
        l->started_usec = g_get_monotonic_time();
        return l;
}

/* The lookup of this kind for uid under way (root waiting for it now moves it ahead), or a
 * new one: in a thread, or in caller's line. NULL and -errno (with *ret_why) when none can
 * be started: no thread, or QUEUED_MAX reached. */
static Lookup *lookup_get(Policy *p, LookupKind kind, uid_t uid, uid_t caller, int *ret_r,
                          char **ret_why) {
        GQueue *q;
        uid_t person;
        Lookup *l;

        l = g_hash_table_lookup(p->inflight[kind], GUINT_TO_POINTER(uid));
        if (l) {
                if (caller == 0 && !l->root && lookup_promote(p, l) < 0) {
                        *ret_r = -EAGAIN;
                        if (ret_why)
                                *ret_why = g_strdup("nsd cannot start a thread to ask the user "
                                                    "database");
                        return NULL;
                }
                return l;
        }
        if (caller != 0 && p->running_user >= p->config->max_lookup_threads &&
            p->stats.queued >= QUEUED_MAX) {
                p->stats.refused++;
                metrics_count_throttled(NSD_METRICS_THROTTLE_LOOKUP_QUEUE);
                *ret_r = -EAGAIN;
                if (ret_why)
                        *ret_why = g_strdup_printf("%u user database lookups of unprivileged "
                                                   "callers wait already (MaxLookupThreads=%u "
                                                   "run); try again later",
                                                   p->stats.queued, p->config->max_lookup_threads);
                return NULL;
        }
        person = caller == 0 ? 0 : policy_person(p, caller, (gid_t) -1); /* whose line */
        q = caller != 0 ? g_hash_table_lookup(p->queues, GUINT_TO_POINTER(person)) : NULL;
        if (q && g_queue_get_length(q) >= QUEUED_PER_PERSON) {
                p->stats.refused++;
                metrics_count_throttled(NSD_METRICS_THROTTLE_LOOKUP_QUEUE);
                *ret_r = -EAGAIN;
                if (ret_why)
                        *ret_why = g_strdup_printf(
                                "%u user database lookups of uid %u wait already (with those of "
                                "every uid of its subordinate id range, if it owns one); try "
                                "again later",
                                g_queue_get_length(q), (unsigned) person);
                return NULL;
        }
        l = lookup_new(p, kind, uid, caller);
        l->caller = person;
        if (caller != 0 && p->running_user >= p->config->max_lookup_threads)
                queue_add(p, l);
        else {
                *ret_r = lookup_push(p, l);
                if (*ret_r < 0) {
                        lookup_free(l);
                        if (ret_why)
                                *ret_why = g_strdup("nsd cannot start a thread to ask the user "
                                                    "database");
                        return NULL;
                }
        }
        l->in_table = true;
        g_hash_table_insert(p->inflight[kind], GUINT_TO_POINTER(uid), l);
        g_hash_table_add(p->live, l);
        p->stats.lookups++;
        if (kind == LOOKUP_IDENTITY)
                p->stats.identity_lookups++;
        return l;
}

/* One more request waits for l, until its own deadline. */
static void waiter_add(Policy *p, Lookup *l, PolicyCallback cb, PolicyIdentityCallback identity_cb,
                       PolicyNameCallback name_cb, void *userdata) {
        const Config *c = p->config;
        Waiter *w = g_new0(Waiter, 1);

        w->lookup = l;
        w->cb = cb;
        w->identity_cb = identity_cb;
        w->name_cb = name_cb;
        w->userdata = userdata;
        w->timer = g_timeout_source_new((guint) MAX(c->lookup_timeout_usec / 1000, 1));
        g_source_set_priority(w->timer, G_PRIORITY_HIGH);
        g_source_set_callback(w->timer, on_waiter_deadline, w, NULL);
        g_source_attach(w->timer, p->core->context);
        l->waiters = g_list_append(l->waiters, w);
}

/* ---- Users= names ------------------------------------------------------------------------ */

static bool config_has_user_names(const Config *c) {
        for (char **u = c->users; u && *u; u++)
                if (strcmp(*u, "@regular") != 0 && !g_ascii_isdigit(**u))
                        return true;
        return false;
}

static gboolean on_names_refresh(gpointer userdata);

/* Resolve Users= names (unless a test decides every uid: policy_set_lookup_fn()) and read
 * the subid files in a thread (root's: never behind users' lookups), unless a resolution
 * is under way (then again after it). */
static void names_resolve(Policy *p) {
        bool users = p->fn == config_uid_managed_lookup && config_has_user_names(p->config);
        Lookup *l;

        if (p->resolving) {
                p->resolve_again = true;
                return;
        }
        if (!users && !p->subid_files[0] && !p->subid_files[1])
                return;
        l = lookup_new(p, LOOKUP_NAMES, (uid_t) -1, 0);
        l->resolve_users = users;
        l->subid_files[0] = g_strdup(p->subid_files[0]);
        l->subid_files[1] = g_strdup(p->subid_files[1]);
        if (lookup_push(p, l) < 0) {
                lookup_free(l);
                return; /* uids are looked up one by one meanwhile; the next reload retries */
        }
        g_hash_table_add(p->live, l);
        p->resolving = true;
}

static void names_done(Policy *p, Lookup *l) {
        uint64_t every = p->config->lookup_cache_usec ?: 15 * G_USEC_PER_SEC;
        p->resolving = false;
        if (l->generation != p->generation || p->resolve_again) {
                p->resolve_again = false;
                names_resolve(p); /* a reload (or new subid files) came meanwhile */
                return;
        }
        names_free(p->names);
        p->names = g_steal_pointer(&l->names);
        p->stats.names_resolved++;
        if (p->names->bad_lines > 0)
                log_warning("%u line%s of %s and %s not understood (expected OWNER:START:COUNT), "
                            "ignoring %s",
                            p->names->bad_lines, p->names->bad_lines == 1 ? "" : "s",
                            p->subid_files[0] ?: "(none)", p->subid_files[1] ?: "(none)",
                            p->names->bad_lines == 1 ? "it" : "them");
        log_debug("Users= names resolved: %u uid%s%s", g_hash_table_size(p->names->uids),
                  g_hash_table_size(p->names->uids) == 1 ? "" : "s",
                  p->names->complete ? ""
                                     : " (the user database failed for some: those uids "
                                       "are still looked up one by one)");
        /* a user added later is managed within this much time, as a cached "no" expires */
        if (!p->refresh_timer)
                p->refresh_timer = g_timeout_add_full(G_PRIORITY_LOW,
                                                      (guint) MAX(every / 1000, 1000),
                                                      on_names_refresh, p, NULL);
}

static gboolean on_names_refresh(gpointer userdata) {
        Policy *p = userdata;

        p->refresh_timer = 0;
        names_resolve(p);
        return G_SOURCE_REMOVE;
}

/* With Users= names resolved and no Groups=, every uid is decided here: 1, 0 (with why), or
 * CONFIG_NEEDS_LOOKUP. */
static int names_answer(Policy *p, uid_t uid, char **ret_why) {
        const Config *c = p->config;
        if (!p->names || !p->names->resolve_users || !p->names->complete ||
            p->names->generation != p->generation)
                return CONFIG_NEEDS_LOOKUP;
        if (g_hash_table_contains(p->names->uids, GUINT_TO_POINTER(uid)))
                return 1;
        if (c->groups && c->groups[0])
                return CONFIG_NEEDS_LOOKUP; /* its groups may still be listed */
        if (ret_why)
                *ret_why = config_not_managed_why(c, uid);
        return 0;
}

int policy_uid_managed(Policy *p, uid_t uid, uid_t caller, char **ret_why, PolicyCallback cb,
                       void *userdata) {
        const Config *c = p->config;
        CacheEntry *e;
        Lookup *l;
        int r;

        r = config_uid_managed_inline(c, uid, ret_why);
        if (r == CONFIG_NEEDS_LOOKUP)
                r = names_answer(p, uid, ret_why);
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
                cache_remove(p, uid);

        l = lookup_get(p, LOOKUP_MANAGED, uid, caller, &r, ret_why);
        if (!l)
                return r;
        waiter_add(p, l, cb, NULL, NULL, userdata);
        return -EINPROGRESS;
}

int policy_uid_identity(Policy *p, uid_t uid, uid_t caller, PolicyIdentityCallback cb,
                        void *userdata) {
        Lookup *l;
        int r;

        g_assert(cb);
        l = lookup_get(p, LOOKUP_IDENTITY, uid, caller, &r, NULL);
        if (!l)
                return r;
        waiter_add(p, l, NULL, cb, NULL, userdata);
        return -EINPROGRESS;
}

int policy_uid_name(Policy *p, uid_t uid, uid_t caller, char **ret_name, PolicyNameCallback cb,
                    void *userdata) {
        NameEntry *e;
        Lookup *l;
        int r;

        g_assert(cb);
        e = g_hash_table_lookup(p->names_cache, GUINT_TO_POINTER(uid));
        if (e && e->expires_usec > g_get_monotonic_time()) {
                p->stats.cache_hits++;
                if (!e->name)
                        return -ENOENT;
                *ret_name = g_strdup(e->name);
                return 0;
        }
        if (e)
                g_hash_table_remove(p->names_cache, GUINT_TO_POINTER(uid));
        l = lookup_get(p, LOOKUP_NAME, uid, caller, &r, NULL);
        if (!l)
                return r;
        waiter_add(p, l, NULL, NULL, cb, userdata);
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
        p->name_fn = name_lookup_nss;
        p->names_cache = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                               name_entry_free);
        for (LookupKind k = 0; k < _LOOKUP_KIND_MAX; k++)
                p->inflight[k] = g_hash_table_new(g_direct_hash, g_direct_equal);
        p->live = g_hash_table_new(g_direct_hash, g_direct_equal);
        p->cache = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, cache_entry_free);
        g_queue_init(&p->cache_order);
        p->queues = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                          (GDestroyNotify) g_queue_free);
        /* MaxLookupThreads= for unprivileged callers, as many again for root's */
        p->pool = g_thread_pool_new(lookup_thread, p, (gint) config->max_lookup_threads * 2, FALSE,
                                    &error);
        g_assert_no_error(error); /* non-exclusive pools never fail */
        /* on the loop's first turn: the subid files may be set before */
        p->refresh_timer = g_idle_add(on_names_refresh, p);
        return p;
}

void policy_free(Policy *p) {
        if (!p)
                return;
        cancel_waiters(p);
        forget_inflight(p);
        /* lookups still in a caller's line never reached a thread: they go here */
        while (p->turns.head) {
                GQueue *q = g_hash_table_lookup(p->queues, p->turns.head->data);
                Lookup *l = g_queue_peek_head(q);
                queue_unlink(p, l);
                g_hash_table_remove(p->live, l);
                lookup_free(l);
        }
        g_clear_handle_id(&p->refresh_timer, g_source_remove);
        names_free(p->names);
        g_free(p->subid_files[0]);
        g_free(p->subid_files[1]);
        p->core->closed = true;
        /* threads stuck in NSS finish on their own, then free their lookup */
        g_thread_pool_free(p->pool, TRUE, FALSE);
        core_unref(p->core);
        for (LookupKind k = 0; k < _LOOKUP_KIND_MAX; k++)
                g_hash_table_destroy(p->inflight[k]);
        g_hash_table_destroy(p->live);
        g_hash_table_destroy(p->cache);
        g_hash_table_destroy(p->names_cache);
        g_hash_table_destroy(p->queues);
        g_free(p);
}

void policy_reconfigure(Policy *p) {
        GError *error = NULL;

        p->generation++;
        cache_clear(p);
        g_hash_table_remove_all(p->names_cache);
        forget_inflight(p);
        if (!g_thread_pool_set_max_threads(p->pool, (gint) p->config->max_lookup_threads * 2,
                                           &error)) {
                log_warning("Cannot change the number of lookup threads, ignoring: %s",
                            error->message);
                g_error_free(error);
        }
        names_resolve(p); /* the names may differ: uids are looked up one by one meanwhile */
        queue_pump(p);
}

void policy_set_subid_files(Policy *p, const char *subuid, const char *subgid) {
        g_free(p->subid_files[0]);
        g_free(p->subid_files[1]);
        p->subid_files[0] = g_strdup(subuid);
        p->subid_files[1] = g_strdup(subgid);
        if (!p->refresh_timer) /* not at start (the first turn of the loop reads them) */
                names_resolve(p);
}

uid_t policy_person(const Policy *p, uid_t uid, gid_t gid) {
        const Config *c = p->config;
        uid_t owner;

        if (!p->names || uid == 0)
                return uid;
        owner = subids_owner(p->names->subuids, uid);
        if (owner == (uid_t) -1 && gid != (gid_t) -1 && (uid < c->min_uid || uid > c->max_uid))
                owner = subids_owner(p->names->subgids, gid);
        return owner == (uid_t) -1 ? uid : owner;
}

const PolicyStats *policy_stats(const Policy *p) {
        return &p->stats;
}

void policy_set_lookup_fn(Policy *p, PolicyLookupFn fn) {
        p->fn = fn ? fn : config_uid_managed_lookup;
        if (p->fn != config_uid_managed_lookup && p->names)
                p->names->resolve_users = false; /* the test's fn decides every uid */
        else
                names_resolve(p);
}

void policy_set_identity_fn(Policy *p, PolicyIdentityFn fn) {
        p->identity_fn = fn ? fn : identity_lookup_nss;
}

void policy_set_name_fn(Policy *p, PolicyNameFn fn) {
        p->name_fn = fn ? fn : name_lookup_nss;
        g_hash_table_remove_all(p->names_cache);
}
