/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsprocs.c: processes per mount namespace, see nsprocs.h.
 *
 * It makes no call that tests/fault/fault-shim.c counts (open, openat, clone, ...: opendir()
 * and fopen() open inside glibc, fstatat() is not counted), so a scan in its worker thread
 * never shifts the numbering of the calls the fault suite fails on nsd's main thread.
 */
#include "store/nsprocs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct NsCount {
        unsigned n;
        pid_t first;
} NsCount;

struct NsProcs {
        GHashTable *by_ns; /* guint64* inode -> NsCount* */
        unsigned scanned;
        unsigned unreadable; /* processes whose ns/mnt could not be followed */
        uint64_t usec;
};

static uint64_t mono_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

/* The parent of pid from /proc/<pid>/stat (after the last ')' of the command name). */
static pid_t proc_ppid(const char *proc_dir, const char *pid) {
        char path[PATH_MAX], buf[512], *p;
        size_t n;
        FILE *f;
        int ppid = 0;

        snprintf(path, sizeof path, "%s/%s/stat", proc_dir, pid);
        f = fopen(path, "re");
        if (!f)
                return 0;
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        p = strrchr(buf, ')');
        if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
                return 0;
        return (pid_t) ppid;
}

int nsprocs_scan(const char *proc_dir, pid_t skip_parent, uint64_t skip_ns, NsProcs **ret) {
        uint64_t t0 = mono_usec();
        struct dirent *de;
        NsProcs *p;
        DIR *d;
        int dfd;

        d = opendir(proc_dir);
        if (!d)
                return -errno;
        dfd = dirfd(d);
        p = g_new0(NsProcs, 1);
        p->by_ns = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
        while ((de = readdir(d))) {
                char path[sizeof de->d_name + 8];
                struct stat st;
                NsCount *c;
                pid_t pid;

                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof path, "%s/ns/mnt", de->d_name);
                p->scanned++;
                /* follows the magic link to the nsfs inode; a process gone meanwhile or a
                 * zombie fails here (ENOENT, ESRCH) and is skipped. One whose link nsd may
                 * not follow (EACCES, EPERM: the ptrace access check, without
                 * CAP_SYS_PTRACE, for another uid's or a non-dumpable process) could be in
                 * any namespace: then the whole scan fails, and linger keeps everything. */
                if (fstatat(dfd, path, &st, 0) < 0) {
                        if (errno == EACCES || errno == EPERM)
                                p->unreadable++;
                        continue;
                }
                if (skip_ns && (uint64_t) st.st_ino == skip_ns)
                        continue;
                if (skip_parent && proc_ppid(proc_dir, de->d_name) == skip_parent)
                        continue;
                pid = (pid_t) strtol(de->d_name, NULL, 10);
                c = g_hash_table_lookup(p->by_ns, &(guint64) { st.st_ino });
                if (!c) {
                        guint64 *k = g_new(guint64, 1);
                        *k = st.st_ino;
                        c = g_new0(NsCount, 1);
                        c->first = pid;
                        g_hash_table_insert(p->by_ns, k, c);
                }
                c->n++;
        }
        closedir(d);
        p->usec = mono_usec() - t0;
        if (p->unreadable > 0) {
                nsprocs_free(p);
                return -EACCES;
        }
        *ret = p;
        return 0;
}

void nsprocs_free(NsProcs *p) {
        if (!p)
                return;
        g_hash_table_unref(p->by_ns);
        g_free(p);
}

unsigned nsprocs_count(const NsProcs *p, uint64_t ns_inode, pid_t *ret_first) {
        const NsCount *c = p ? g_hash_table_lookup(p->by_ns, &(guint64) { ns_inode }) : NULL;

        if (c && ret_first)
                *ret_first = c->first;
        return c ? c->n : 0;
}

unsigned nsprocs_scanned(const NsProcs *p) {
        return p ? p->scanned : 0;
}

uint64_t nsprocs_usec(const NsProcs *p) {
        return p ? p->usec : 0;
}

/* ---- in a worker thread ---------------------------------------------------------------- */

typedef struct ScanJob {
        GMainContext *context;
        char *proc_dir;
        pid_t skip_parent;
        uint64_t skip_ns;
        nsprocs_cb cb;
        void *userdata;
        NsProcs *result;
        int err;
} ScanJob;

static gboolean scan_done(gpointer data) {
        ScanJob *j = data;

        j->cb(j->result, j->err, j->userdata);
        g_main_context_unref(j->context);
        g_free(j->proc_dir);
        g_free(j);
        return G_SOURCE_REMOVE;
}

static gpointer scan_thread(gpointer data) {
        ScanJob *j = data;

        GSource *src;

        j->err = nsprocs_scan(j->proc_dir, j->skip_parent, j->skip_ns, &j->result);
        /* back on the caller's context, always later (also when run there) */
        src = g_idle_source_new();
        g_source_set_priority(src, G_PRIORITY_DEFAULT);
        g_source_set_callback(src, scan_done, j, NULL);
        g_source_attach(src, j->context);
        g_source_unref(src);
        return NULL;
}

void nsprocs_scan_async(const char *proc_dir, pid_t skip_parent, uint64_t skip_ns, nsprocs_cb cb,
                        void *userdata) {
        ScanJob *j = g_new0(ScanJob, 1);
        g_autoptr(GError) error = NULL;
        GThread *t;

        j->context = g_main_context_ref_thread_default();
        j->proc_dir = g_strdup(proc_dir);
        j->skip_parent = skip_parent;
        j->skip_ns = skip_ns;
        j->cb = cb;
        j->userdata = userdata;
        t = g_thread_try_new("nsd-nsprocs", scan_thread, j, &error);
        if (t) {
                g_thread_unref(t);
                return;
        }
        /* no thread now (EAGAIN: a pids limit): scan here, it is bounded */
        scan_thread(j);
}
