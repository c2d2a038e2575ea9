/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fdstore.c: the service manager's file descriptor store, see fdstore.h. */
#include "store/fdstore.h"

#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "base/log.h"
#include "config.h" /* NSD_FDSTORE_MAX */

/* A crossing into "no room" is said at warning level at most this often per class. */
#define FDSTORE_LOG_INTERVAL_USEC (10 * 60 * 1000000LL)
#define LISTEN_FDNAMES_PREFIX "LISTEN_FDNAMES="

typedef struct Passed {
        int fd; /* -1 once taken */
        char *name;
} Passed;

/* One name in the store: what the service manager holds under it, as far as nsd knows. */
typedef struct Entry {
        char *name;
        FdStoreClass cls;
        unsigned n_fds; /* descriptors of this name (2: a duplicate passed back) */
        GList link;     /* in its class's entries, the oldest first */
} Entry;

typedef struct ClassState {
        GQueue entries;   /* Entry, by its link: the oldest first, the first removed for room */
        size_t bytes;     /* its names in LISTEN_FDNAMES: (strlen + 1) per descriptor */
        unsigned n_fds;   /* its descriptors */
        unsigned refused; /* puts refused since start */
        unsigned evicted; /* entries removed to make room for a class before it */
        bool full;        /* the last put was refused, or an entry removed; none fitted since */
        bool full_logged; /* ... and that crossing was said at warning level */
        RateLimit log_rl; /* crossings said at warning level */
} ClassState;

/* Facts about each class, in the order of FdStoreClass (a put takes the room of the classes
 * after its own). */
static const struct {
        const char *plural; /* in log lines: "No room for sessions", "has room for ... again" */
        const char *alone;  /* what a put of it cannot take the room of: its class and those
                             * before */
} class_table[_FDSTORE_CLASS_MAX] = {
        [FDSTORE_CLASS_NAMESPACE] = { "namespaces without a pin",
                                      "namespaces without a pin alone" },
        [FDSTORE_CLASS_PINNED] = { "pinned namespaces", "namespaces alone" },
        [FDSTORE_CLASS_SESSION] = { "sessions", "everything in it" },
};

struct FdStore {
        bool enabled;
        GArray *passed;    /* Passed, in the order the manager passed them */
        GHashTable *taken; /* names taken (owned strings) */

        GHashTable *entries; /* name -> Entry* (owned; the key is the entry's name) */
        ClassState cls[_FDSTORE_CLASS_MAX];
        size_t foreign_bytes; /* names passed that are not ours (sockets): strlen + 1 each */
        size_t budget;
        size_t sessions_max;
        unsigned max_fds;
        unsigned warnings;
};

static void entry_free(gpointer p) {
        Entry *e = p;

        g_free(e->name);
        g_free(e);
}

FdStore *fdstore_new(bool enabled) {
        FdStore *fs = g_new0(FdStore, 1);

        fs->enabled = enabled;
        fs->passed = g_array_new(FALSE, FALSE, sizeof(Passed));
        fs->taken = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        fs->entries = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, entry_free);
        for (int c = 0; c < _FDSTORE_CLASS_MAX; c++)
                g_queue_init(&fs->cls[c].entries);
        fs->budget = FDSTORE_NAMES_BUDGET;
        fs->sessions_max = FDSTORE_SESSIONS_SHARE;
        fs->max_fds = NSD_FDSTORE_MAX;
        return fs;
}

void fdstore_set_limits(FdStore *fs, size_t budget_bytes, size_t sessions_max_bytes,
                        unsigned max_fds) {
        if (budget_bytes > 0)
                fs->budget = budget_bytes;
        if (sessions_max_bytes > 0)
                fs->sessions_max = sessions_max_bytes;
        if (max_fds > 0)
                fs->max_fds = max_fds;
}

void fdstore_free(FdStore *fs) {
        if (!fs)
                return;
        for (guint i = 0; i < fs->passed->len; i++) {
                Passed *p = &g_array_index(fs->passed, Passed, i);
                if (p->fd >= 0)
                        close(p->fd);
                g_free(p->name);
        }
        g_array_unref(fs->passed);
        g_hash_table_unref(fs->taken);
        for (int c = 0; c < _FDSTORE_CLASS_MAX; c++)
                g_queue_init(&fs->cls[c].entries); /* forgotten: the links are the entries' own */
        g_hash_table_unref(fs->entries);
        g_free(fs);
}

/* ---- what the store holds, counted ------------------------------------------------------ */

/* The class of a name passed back at start, until nsd says another (fdstore_set_class()): a
 * namespace counts as one without a pin, whose room nothing takes. */
static FdStoreClass class_passed(const char *name) {
        return g_str_has_prefix(name, FDSTORE_SESSION_PREFIX) ? FDSTORE_CLASS_SESSION
                                                              : FDSTORE_CLASS_NAMESPACE;
}

/* "LISTEN_FDNAMES=", the NUL and the names that are not ours: at least FDSTORE_NAMES_FIXED. */
static size_t fixed_bytes(const FdStore *fs) {
        return MAX((size_t) FDSTORE_NAMES_FIXED, strlen(LISTEN_FDNAMES_PREFIX) + fs->foreign_bytes);
}

/* The names of the classes up to and including last in LISTEN_FDNAMES, and the fixed part:
 * with last the final class, all of it. */
static size_t names_bytes_upto(const FdStore *fs, FdStoreClass last) {
        size_t n = fixed_bytes(fs);

        for (int c = 0; c <= (int) last; c++)
                n += fs->cls[c].bytes;
        return n;
}

static unsigned n_fds_upto(const FdStore *fs, FdStoreClass last) {
        unsigned n = 0;

        for (int c = 0; c <= (int) last; c++)
                n += fs->cls[c].n_fds;
        return n;
}

static size_t names_bytes(const FdStore *fs) {
        return names_bytes_upto(fs, _FDSTORE_CLASS_MAX - 1);
}

static unsigned n_fds(const FdStore *fs) {
        return n_fds_upto(fs, _FDSTORE_CLASS_MAX - 1);
}

/* e's descriptors count in class c now, as its newest entry. */
static void entry_link(FdStore *fs, Entry *e, FdStoreClass c) {
        e->cls = c;
        fs->cls[c].n_fds += e->n_fds;
        fs->cls[c].bytes += e->n_fds * (strlen(e->name) + 1);
        g_queue_push_tail_link(&fs->cls[c].entries, &e->link);
}

static void entry_unlink(FdStore *fs, Entry *e) {
        ClassState *c = &fs->cls[e->cls];

        c->n_fds -= e->n_fds;
        c->bytes -= e->n_fds * (strlen(e->name) + 1);
        g_queue_unlink(&c->entries, &e->link);
}

/* One more descriptor of name in the store, of class c (a name held already keeps its own). */
static void entry_add(FdStore *fs, const char *name, FdStoreClass c) {
        Entry *e = g_hash_table_lookup(fs->entries, name);

        if (!e) {
                e = g_new0(Entry, 1);
                e->name = g_strdup(name);
                e->link.data = e;
                g_hash_table_insert(fs->entries, e->name, e);
                entry_link(fs, e, c);
        }
        e->n_fds++;
        fs->cls[e->cls].n_fds++;
        fs->cls[e->cls].bytes += strlen(name) + 1;
}

/* Every descriptor of e's name is out of the store; frees e. */
static void entry_drop(FdStore *fs, Entry *e) {
        entry_unlink(fs, e);
        g_hash_table_remove(fs->entries, e->name);
}

bool fdstore_contains(const FdStore *fs, const char *name) {
        return fs && g_hash_table_contains(fs->entries, name);
}

bool fdstore_full(const FdStore *fs, FdStoreClass c) {
        return fs && fs->cls[c].full;
}

void fdstore_set_class(FdStore *fs, const char *name, FdStoreClass c) {
        Entry *e;

        if (!fs)
                return;
        e = g_hash_table_lookup(fs->entries, name);
        if (!e || e->cls == c)
                return;
        g_assert((c == FDSTORE_CLASS_SESSION) == (e->cls == FDSTORE_CLASS_SESSION));
        entry_unlink(fs, e);
        entry_link(fs, e, c);
}

void fdstore_get_stats(const FdStore *fs, FdStoreStats *ret) {
        *ret = (FdStoreStats) {
                .names_bytes = names_bytes(fs),
                .budget_bytes = fs->budget,
                .sessions_bytes = fs->cls[FDSTORE_CLASS_SESSION].bytes,
                .sessions_max_bytes = fs->sessions_max,
                .n_fds = n_fds(fs),
                .max_fds = fs->max_fds,
                .warnings = fs->warnings,
        };
        for (int c = 0; c < _FDSTORE_CLASS_MAX; c++) {
                ret->n_fds_class[c] = fs->cls[c].n_fds;
                ret->refused[c] = fs->cls[c].refused;
                ret->evicted[c] = fs->cls[c].evicted;
                ret->full[c] = fs->cls[c].full;
        }
}

bool fdstore_enabled(const FdStore *fs) {
        return fs && fs->enabled;
}

bool fdstore_name_is_ours(const char *name) {
        return name &&
               (strcmp(name, FDSTORE_PINNS) == 0 || g_str_has_prefix(name, FDSTORE_NS_PREFIX) ||
                g_str_has_prefix(name, FDSTORE_SESSION_PREFIX));
}

void fdstore_add_passed(FdStore *fs, int fd, const char *name) {
        Passed p = { .fd = fd, .name = g_strdup(name) };

        g_array_append_val(fs->passed, p);
        entry_add(fs, name, class_passed(name)); /* in the store until removed, taken or not */
}

void fdstore_add_foreign(FdStore *fs, const char *name) {
        fs->foreign_bytes += strlen(name) + 1;
}

size_t fdstore_n_passed(const FdStore *fs) {
        return fs ? fs->passed->len : 0;
}

bool fdstore_is_passed(const FdStore *fs, const char *name) {
        for (guint i = 0; fs && i < fs->passed->len; i++) {
                const Passed *p = &g_array_index(fs->passed, Passed, i);
                if (p->fd >= 0 && strcmp(p->name, name) == 0)
                        return true;
        }
        return false;
}

int fdstore_take(FdStore *fs, const char *name) {
        if (!fs)
                return -1;
        for (guint i = 0; i < fs->passed->len; i++) {
                Passed *p = &g_array_index(fs->passed, Passed, i);
                if (p->fd >= 0 && strcmp(p->name, name) == 0) {
                        int fd = p->fd;
                        p->fd = -1;
                        g_hash_table_add(fs->taken, g_strdup(name));
                        return fd;
                }
        }
        return -1;
}

char **fdstore_passed_names(const FdStore *fs, const char *prefix) {
        GPtrArray *a = g_ptr_array_new();

        for (guint i = 0; fs && i < fs->passed->len; i++) {
                const Passed *p = &g_array_index(fs->passed, Passed, i);
                if (p->fd >= 0 && g_str_has_prefix(p->name, prefix))
                        g_ptr_array_add(a, g_strdup(p->name));
        }
        g_ptr_array_add(a, NULL);
        return (char **) g_ptr_array_free(a, FALSE);
}

/* ---- the budget ------------------------------------------------------------------------ */

/* What no room means for what name (of class c; NULL: several of c) is of. */
static char *no_room_means(FdStoreClass c, const char *name, uid_t *ret_uid) {
        unsigned uid;
        char end;

        *ret_uid = (uid_t) -1;
        if (c == FDSTORE_CLASS_SESSION)
                return g_strdup("Sessions are kept by their state files only (after a restart "
                                "nsd checks their leaders by pid and start time)");
        if (name && sscanf(name, FDSTORE_NS_PREFIX "%u%c", &uid, &end) == 1) {
                *ret_uid = (uid_t) uid;
                if (c == FDSTORE_CLASS_PINNED)
                        return g_strdup_printf("The namespace of uid %u is kept by its pin only",
                                               uid);
                return g_strdup_printf("The namespace of uid %u is not pinned either: only nsd's "
                                       "descriptor keeps it, it does not survive a restart of "
                                       "nsd",
                                       uid);
        }
        if (!name)
                return g_strdup(c == FDSTORE_CLASS_PINNED
                                        ? "Those namespaces are kept by their pins only"
                                        : "Those namespaces do not survive a restart of nsd");
        return g_strdup("The pin namespace is kept by its own pin only");
}

/* Class c found no room for name (a put refused, or name removed to make room for a class
 * before c; NULL: several of c removed): said at warning level when c had room before (at
 * most once each FDSTORE_LOG_INTERVAL_USEC), else at debug level. */
static void no_room(FdStore *fs, FdStoreClass c, const char *name, const char *why) {
        g_autofree char *what = name ? g_strdup_printf("'%s'", name)
                                     : g_strdup(class_table[c].plural);
        ClassState *cs = &fs->cls[c];
        g_autofree char *means = NULL, *held = NULL;
        unsigned suppressed = 0;
        uid_t uid;

        if (cs->full || !ratelimit_below(&cs->log_rl, FDSTORE_LOG_INTERVAL_USEC, 1, &suppressed)) {
                if (!cs->full)
                        cs->full_logged = false;
                cs->full = true;
                log_debug("No room for %s in the service manager's fd store: %s (%zu of %zu "
                          "bytes of LISTEN_FDNAMES, %u of %u descriptors)",
                          what, why, names_bytes(fs), fs->budget, n_fds(fs), fs->max_fds);
                return;
        }
        cs->full = true;
        cs->full_logged = true;
        fs->warnings++;
        means = no_room_means(c, name, &uid);
        if (suppressed > 0)
                held = g_strdup_printf(" (%u more time%s since the last such line)", suppressed,
                                       suppressed == 1 ? "" : "s");
        log_event(LOG_WARNING, 0, uid, "fdstore-full",
                  "No room for %s in the service manager's fd store: %s (%zu of %zu bytes of "
                  "LISTEN_FDNAMES, %u of %u descriptors). %s; further %s that find no room are "
                  "logged at debug level only%s",
                  what, why, names_bytes(fs), fs->budget, n_fds(fs), fs->max_fds, means,
                  class_table[c].plural, held ? held : "");
}

/* A put of class c fitted. */
static void room_again(FdStore *fs, FdStoreClass c) {
        ClassState *cs = &fs->cls[c];

        if (!cs->full)
                return;
        cs->full = false;
        if (cs->full_logged)
                log_info("The service manager's fd store has room for %s again (%zu of %zu bytes "
                         "of LISTEN_FDNAMES, %u of %u descriptors; %u refused since nsd started)",
                         class_table[c].plural, names_bytes(fs), fs->budget, n_fds(fs), fs->max_fds,
                         cs->refused);
        cs->full_logged = false;
}

/* Tell the service manager to drop name from its fd store (FDSTOREREMOVE=1): 1 when told;
 * none when there is no service manager (0, or an -errno the caller fails with); -errno when
 * sd_notify() failed. Failures are logged. */
static int notify_remove(const char *name, int none) {
        int r = sd_notifyf(0, "FDSTOREREMOVE=1\nFDNAME=%s", name);

        if (r < 0 || (r == 0 && none < 0))
                return log_debug_errno(r < 0 ? r : none,
                                       "Failed to remove '%s' from the service manager's fd "
                                       "store: %m",
                                       name);
        return r > 0 ? 1 : 0;
}

/* Remove the oldest entry of class c from the store, for room that for_name needs (NULL: to
 * bring the store within the budget): 0 (its name in *ret_name, if not NULL), or -errno (it
 * stays). */
static int evict_oldest(FdStore *fs, FdStoreClass c, const char *for_name, char **ret_name) {
        Entry *e = g_queue_peek_head(&fs->cls[c].entries);
        int r;

        if (!e)
                return -ENOENT;
        r = notify_remove(e->name, -ENOTCONN);
        if (r < 0)
                return r;
        if (for_name)
                log_debug("Removed '%s' from the service manager's fd store to make room for '%s'",
                          e->name, for_name);
        else
                log_debug("Removed '%s' from the service manager's fd store to bring it within "
                          "nsd's budget",
                          e->name);
        fs->cls[c].evicted++;
        if (ret_name)
                *ret_name = g_strdup(e->name);
        entry_drop(fs, e);
        return 0;
}

/* Room for one more descriptor of class c whose name takes need bytes: 0, possibly after
 * removing entries of the classes after c (the last class first, in each the oldest first;
 * said as no room for their class), or -ENOSPC with *ret_why. */
static int make_room(FdStore *fs, FdStoreClass c, const char *name, size_t need, char **ret_why) {
        /* what a put of c cannot take the room of: its own class and those before it */
        size_t kept_bytes = names_bytes_upto(fs, c);
        unsigned kept_fds = n_fds_upto(fs, c);
        int r = 0;

        if (c == FDSTORE_CLASS_SESSION && fs->cls[c].bytes + need > fs->sessions_max) {
                *ret_why = g_strdup_printf("session names would take %zu bytes, past their share "
                                           "of %zu (the rest of the budget is kept for "
                                           "namespaces)",
                                           fs->cls[c].bytes + need, fs->sessions_max);
                return -ENOSPC;
        }
        if (kept_bytes + need > fs->budget) {
                *ret_why = g_strdup_printf("the names of %s would take %zu bytes of "
                                           "LISTEN_FDNAMES, past nsd's budget of %zu (the kernel "
                                           "refuses %u at exec)",
                                           class_table[c].alone, kept_bytes + need, fs->budget,
                                           FDSTORE_ENV_STRING_MAX);
                return -ENOSPC;
        }
        if (kept_fds + 1 > fs->max_fds) {
                *ret_why = g_strdup_printf("%s would take %u descriptors, past "
                                           "FileDescriptorStoreMax=%u",
                                           class_table[c].alone, kept_fds + 1, fs->max_fds);
                return -ENOSPC;
        }
        for (int k = _FDSTORE_CLASS_MAX - 1; k > (int) c && r >= 0; k--) {
                g_autofree char *why = NULL, *last = NULL;
                unsigned n = 0;

                /* none of k left: on to the class before (the checks above say it fits then) */
                while ((names_bytes(fs) + need > fs->budget || n_fds(fs) + 1 > fs->max_fds) &&
                       !g_queue_is_empty(&fs->cls[k].entries)) {
                        g_clear_pointer(&last, g_free);
                        r = evict_oldest(fs, k, name, &last);
                        if (r < 0)
                                break;
                        n++;
                }
                if (n == 0)
                        continue;
                if (n == 1)
                        why = g_strdup_printf("removed to make room for '%s' (%s come before %s)",
                                              name, class_table[c].plural, class_table[k].plural);
                else
                        why = g_strdup_printf("%u of them removed to make room for '%s' (%s come "
                                              "before %s)",
                                              n, name, class_table[c].plural,
                                              class_table[k].plural);
                no_room(fs, k, n == 1 ? last : NULL, why);
        }
        if (r < 0) {
                *ret_why = g_strdup_printf("names it may take the room of hold the room it needs, "
                                           "and removing one failed (%s)",
                                           g_strerror(-r));
                return -ENOSPC;
        }
        return 0;
}

void fdstore_drop_unclaimed(FdStore *fs) {
        unsigned evicted = 0;

        if (!fs)
                return;
        for (guint i = 0; i < fs->passed->len; i++) {
                Passed *p = &g_array_index(fs->passed, Passed, i);
                if (p->fd < 0)
                        continue;
                close(p->fd);
                p->fd = -1;
                if (g_hash_table_contains(fs->taken, p->name)) {
                        log_debug("Closed a second descriptor named '%s' passed by the service "
                                  "manager",
                                  p->name);
                        continue;
                }
                log_info("Dropping '%s' from the service manager's fd store: nsd has no use "
                         "for it any more",
                         p->name);
                (void) fdstore_remove(fs, p->name);
        }
        if (!fdstore_enabled(fs))
                return;
        /* passed back over the budget (filled by an nsd without one): sessions go first;
         * namespaces stay (the exec that started nsd took them, and nothing is added) */
        while (names_bytes(fs) > fs->budget || n_fds(fs) > fs->max_fds ||
               fs->cls[FDSTORE_CLASS_SESSION].bytes > fs->sessions_max) {
                if (evict_oldest(fs, FDSTORE_CLASS_SESSION, NULL, NULL) < 0)
                        break;
                evicted++;
        }
        if (evicted > 0)
                log_warning("The service manager's fd store passed back more than nsd's budget: "
                            "removed %u session descriptors from it, those sessions are kept by "
                            "their state files only (now %zu of %zu bytes of LISTEN_FDNAMES, %u "
                            "of %u descriptors)",
                            evicted, names_bytes(fs), fs->budget, n_fds(fs), fs->max_fds);
        if (names_bytes(fs) > fs->budget || n_fds(fs) > fs->max_fds) {
                for (int c = FDSTORE_CLASS_NAMESPACE; c <= FDSTORE_CLASS_PINNED; c++) {
                        fs->cls[c].full = true;
                        fs->cls[c].full_logged = true;
                }
                fs->warnings++;
                log_warning("The service manager's fd store passed back more namespaces than "
                            "nsd's budget allows (%zu of %zu bytes of LISTEN_FDNAMES, %u of %u "
                            "descriptors): nsd puts a namespace into it only in the place of a "
                            "pinned one (for one without a pin) until releases make room; those "
                            "not in it are kept by their pins only",
                            names_bytes(fs), fs->budget, n_fds(fs), fs->max_fds);
        }
}

int fdstore_put(FdStore *fs, int fd, const char *name, FdStoreClass c) {
        g_autofree char *msg = NULL, *why = NULL;
        int r;

        g_assert((unsigned) c < _FDSTORE_CLASS_MAX);
        g_assert((c == FDSTORE_CLASS_SESSION) == (class_passed(name) == FDSTORE_CLASS_SESSION));
        if (!fdstore_enabled(fs) || fd < 0)
                return 0;
        /* a second descriptor of a name held: the name's class is the one said now */
        fdstore_set_class(fs, name, c);
        r = make_room(fs, c, name, strlen(name) + 1, &why);
        if (r < 0) {
                fs->cls[c].refused++;
                no_room(fs, c, name, why);
                return r;
        }
        msg = g_strdup_printf("FDSTORE=1\nFDNAME=%s\nFDPOLL=0", name);
        r = sd_pid_notify_with_fds(0, 0, msg, &fd, 1);
        if (r < 0)
                return log_debug_errno(r,
                                       "Failed to put '%s' into the service manager's fd "
                                       "store: %m",
                                       name);
        if (r == 0)
                return 0;
        entry_add(fs, name, c);
        room_again(fs, c);
        return 1;
}

int fdstore_remove(FdStore *fs, const char *name) {
        Entry *e;
        int r;

        if (!fdstore_enabled(fs))
                return 0;
        e = g_hash_table_lookup(fs->entries, name);
        if (!e)
                return 0; /* never put, refused, or removed already */
        r = notify_remove(name, 0);
        if (r <= 0)
                return r;
        entry_drop(fs, e);
        return 1;
}

const char *fdstore_ns_name(char buf[static FDSTORE_NAME_MAX], unsigned uid) {
        snprintf(buf, FDSTORE_NAME_MAX, FDSTORE_NS_PREFIX "%u", uid);
        return buf;
}

const char *fdstore_session_name(char buf[static FDSTORE_NAME_MAX], unsigned long long id) {
        snprintf(buf, FDSTORE_NAME_MAX, FDSTORE_SESSION_PREFIX "%016llx", id);
        return buf;
}
