/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* linger.c: the countdowns of Linger= and the emptiness rule, see linger.h. */
#include "domain/linger.h"

#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "domain/user.h"
#include "policy/conf.h"
#include "store/mounts.h"
#include "store/nsprocs.h"
#include "store/userns.h"

/* One uid's countdown. */
typedef struct LingerEntry {
        Linger *linger;
        uid_t uid;
        guint timer;
        unsigned gen; /* changes with every arm and cancel: a check under way for an older
                       * generation decides nothing */
        char *kept;   /* why it was kept last time (said at info once) */
} LingerEntry;

/* A check waiting for the scan of /proc under way. */
typedef struct LingerCheck {
        uid_t uid;
        unsigned gen;
} LingerCheck;

/* The scan under way; linger NULL: linger is gone, drop the result. */
typedef struct LingerScan {
        Linger *linger;
} LingerScan;

struct Linger {
        const Config *config;
        char *proc_dir;
        uint64_t self_ns_inode; /* nsd's own mount namespace: not scanned */
        LingerOps ops;
        void *userdata;
        GHashTable *entries; /* uid -> LingerEntry* (owned) */
        GArray *queue;       /* LingerCheck: waiting for the scan under way */
        LingerScan *scan;    /* the scan under way, NULL: none */
        bool scan_warned;    /* a failed scan was said at warning level */
};

static void entry_free(gpointer p) {
        LingerEntry *e = p;

        g_clear_handle_id(&e->timer, g_source_remove);
        g_free(e->kept);
        g_free(e);
}

Linger *linger_new(const Config *config, const char *proc_dir, const LingerOps *ops,
                   void *userdata) {
        Linger *l = g_new0(Linger, 1);
        struct stat st;

        l->config = config;
        l->proc_dir = g_strdup(proc_dir ? proc_dir : "/proc");
        if (stat("/proc/self/ns/mnt", &st) >= 0)
                l->self_ns_inode = (uint64_t) st.st_ino;
        l->ops = *ops;
        if (!l->ops.read_mountinfo)
                l->ops.read_mountinfo = userns_read_mountinfo;
        l->userdata = userdata;
        l->entries = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, entry_free);
        l->queue = g_array_new(FALSE, FALSE, sizeof(LingerCheck));
        return l;
}

void linger_free(Linger *l) {
        if (!l)
                return;
        if (l->scan)
                l->scan->linger = NULL; /* freed by on_scanned() */
        g_hash_table_destroy(l->entries);
        g_array_unref(l->queue);
        g_free(l->proc_dir);
        g_free(l);
}

static LingerEntry *entry_get(Linger *l, uid_t uid) {
        LingerEntry *e = g_hash_table_lookup(l->entries, GUINT_TO_POINTER(uid));

        if (e)
                return e;
        e = g_new(LingerEntry, 1);
        *e = (LingerEntry) { .linger = l, .uid = uid };
        g_hash_table_insert(l->entries, GUINT_TO_POINTER(uid), e);
        return e;
}

static void entry_cancel(LingerEntry *e) {
        e->gen++;
        g_clear_handle_id(&e->timer, g_source_remove);
}

static gboolean on_timer(gpointer userdata);

static void entry_arm_sec(LingerEntry *e, int64_t sec) {
        entry_cancel(e);
        /* g_timeout_add_seconds() may fire up to a second late (it batches wakeups): fine
         * for a linger time, but 0 means at once */
        e->timer = sec == 0 ? g_idle_add(on_timer, e)
                            : g_timeout_add_seconds((guint) sec, on_timer, e);
}

/* Not empty now: look again later. */
static void entry_recheck(LingerEntry *e) {
        int64_t sec = e->linger->config->linger_sec;

        if (sec == CONFIG_LINGER_FOREVER)
                return;
        entry_arm_sec(e, MAX(sec, LINGER_RECHECK_SEC));
}

/* Said at info the first time, at debug while it stays the same. */
static void entry_keep(LingerEntry *e, char *why /* taken */) {
        bool same = e->kept && g_str_equal(e->kept, why);

        log_event(same ? LOG_DEBUG : LOG_INFO, 0, e->uid, "linger-kept",
                  "Keeping the namespace of uid %u: %s", (unsigned) e->uid, why);
        g_free(e->kept);
        e->kept = why;
}

/* The emptiness rule (linger.h), with the scan of /proc done. */
static void entry_decide(LingerEntry *e, User *u, const NsProcs *procs) {
        Linger *l = e->linger;
        g_autofree char *text = NULL, *first = NULL;
        pid_t pid = 0;
        unsigned n;
        int r;

        if (u->sessions->len > 0)
                return;
        n = nsprocs_count(procs, u->ns->ns_inode, &pid);
        if (n > 0) {
                entry_keep(e, g_strdup_printf("%u process%s still in it (pid %d%s)", n,
                                              n == 1 ? "" : "es", (int) pid,
                                              n > 1 ? " and more" : ""));
                entry_recheck(e);
                return;
        }
        if (!u->baseline) {
                entry_keep(e, g_strdup("which of its mounts are the user's is not known (no "
                                       "baseline: it was made by an older nsd); only nsctl "
                                       "release removes it"));
                return;
        }
        r = l->ops.read_mountinfo(u->ns, USER_MOUNTINFO_MAX, &text, NULL);
        if (r >= 0)
                r = mounts_user_made(text, u->baseline, &first);
        if (r < 0) {
                entry_keep(e,
                           g_strdup_printf("its mount table cannot be read (%s)", g_strerror(-r)));
                entry_recheck(e);
                return;
        }
        if (r > 0) {
                entry_keep(e, g_strdup_printf("it holds %d mount%s of its own (%s%s)", r,
                                              r == 1 ? "" : "s", first, r > 1 ? ", ..." : ""));
                entry_recheck(e);
                return;
        }
        /* a release that works forgets e (linger_forget()): e is not touched after it */
        r = l->ops.release(u,
                           "linger time over: no session, no process and no mount of its own in it",
                           l->userdata);
        if (r < 0) /* logged; u stays */
                entry_arm_sec(e, LINGER_RELEASE_RETRY_SEC);
}

static void scan_start(Linger *l);

static void on_scanned(NsProcs *procs, int err, void *userdata) {
        LingerScan *scan = userdata;
        Linger *l = scan->linger;
        g_autoptr(GArray) queue = NULL;

        g_free(scan);
        if (!l) {
                nsprocs_free(procs);
                return;
        }
        l->scan = NULL;
        queue = l->queue;
        l->queue = g_array_new(FALSE, FALSE, sizeof(LingerCheck));
        if (err < 0) {
                /* said at warning once (it stays so without CAP_SYS_PTRACE), then at debug */
                log_full_errno(l->scan_warned ? LOG_DEBUG : LOG_WARNING, err,
                               "Cannot look for processes in namespaces (%s%s), linger keeps "
                               "every namespace meanwhile: %m",
                               l->proc_dir,
                               err == -EACCES ? ": some process's ns/mnt cannot be read, "
                                                "nsd needs CAP_SYS_PTRACE"
                                              : "");
                l->scan_warned = true;
        } else
                log_debug("Looked at %u processes for linger in %" PRIu64 " us",
                          nsprocs_scanned(procs), nsprocs_usec(procs));
        for (guint i = 0; i < queue->len; i++) {
                const LingerCheck *c = &g_array_index(queue, LingerCheck, i);
                LingerEntry *e = g_hash_table_lookup(l->entries, GUINT_TO_POINTER(c->uid));
                User *u = l->ops.lookup(c->uid, l->userdata);

                if (!e || !u || e->gen != c->gen || e->timer)
                        continue; /* gone, or a JOIN or a session meanwhile */
                if (err < 0)
                        entry_recheck(e);
                else
                        entry_decide(e, u, procs); /* may release u */
        }
        nsprocs_free(procs);
        if (l->queue->len > 0)
                scan_start(l);
}

static void scan_start(Linger *l) {
        if (l->scan)
                return;
        l->scan = g_new0(LingerScan, 1);
        l->scan->linger = l;
        nsprocs_scan_async(l->proc_dir, getpid(), l->self_ns_inode, on_scanned, l->scan);
}

static gboolean on_timer(gpointer userdata) {
        LingerEntry *e = userdata;
        Linger *l = e->linger;
        LingerCheck c = { .uid = e->uid, .gen = e->gen };
        User *u = l->ops.lookup(e->uid, l->userdata);

        e->timer = 0;
        if (!u || u->sessions->len > 0)
                return G_SOURCE_REMOVE;
        g_array_append_val(l->queue, c);
        scan_start(l);
        return G_SOURCE_REMOVE;
}

void linger_arm(Linger *l, uid_t uid, int64_t min_sec) {
        int64_t sec = l->config->linger_sec;
        LingerEntry *e = entry_get(l, uid);

        entry_cancel(e);
        if (sec == CONFIG_LINGER_FOREVER)
                return;
        g_clear_pointer(&e->kept, g_free);
        entry_arm_sec(e, MAX(sec, min_sec));
}

void linger_cancel(Linger *l, uid_t uid) {
        LingerEntry *e = g_hash_table_lookup(l->entries, GUINT_TO_POINTER(uid));

        if (e)
                entry_cancel(e);
}

void linger_forget(Linger *l, uid_t uid) {
        g_hash_table_remove(l->entries, GUINT_TO_POINTER(uid));
}

bool linger_armed(const Linger *l, uid_t uid) {
        const LingerEntry *e = g_hash_table_lookup(l->entries, GUINT_TO_POINTER(uid));

        return e && e->timer;
}
