/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/nsd/fake-manager.h: the service manager's side of sd_notify, for the unit tests: a
 * SOCK_DGRAM socket on $NOTIFY_SOCKET that keeps what nsd puts into its fd store as systemd
 * does (FDSTORE=1 + FDNAME= keeps the descriptors under that name, FDSTOREREMOVE=1 drops every
 * descriptor of a name, at most FileDescriptorStoreMax= of them: systemd drops one more
 * without telling the sender), remembers the last STATUS=, and measures the LISTEN_FDNAMES=
 * string systemd would hand to the next nsd. Header-only, like tap.h. A thread of its own
 * takes the messages, as systemd does (sd_notify() blocks once the socket's queue is full,
 * and net.unix.max_dgram_qlen is often 10); fake_manager_drain() waits until it has taken
 * every message sent before, after which the test reads the fields. (bench/nsd-start.c and
 * tests/fault/fault-suite.py have their own, which also pass the store back to a real nsd.)
 *
 *   FakeManager *m = fake_manager_new(dir, 16384);  sets $NOTIFY_SOCKET
 *   ... nsd's code puts and removes ...
 *   fake_manager_drain(m);
 *   m->names_bytes, fake_manager_listen_fdnames_len(m), fake_manager_count(m, "ns-")
 *   fake_manager_names(m): what the next start would be passed
 */
#pragma once

#include <errno.h>
#include <glib.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "socket-util.h"

typedef struct FakeManager {
        int fd;
        int sync_fd; /* the test's own sender, for the markers of fake_manager_drain() */
        char *path;
        GThread *thread;
        GMutex lock; /* the fields below, while the thread runs */
        GCond cond;
        unsigned sync_sent, sync_seen;
        bool quit;
        unsigned max_fds;                /* FileDescriptorStoreMax= */
        GHashTable *store;               /* name -> descriptors of it (GUINT_TO_POINTER) */
        unsigned n_fds;                  /* descriptors in the store */
        size_t names_bytes;              /* the store's names in LISTEN_FDNAMES: strlen + 1 each */
        size_t sockets_bytes;            /* the sockets' names ("user", "root"): strlen + 1 each */
        size_t max_listen;               /* the longest LISTEN_FDNAMES= after any message so far */
        unsigned max_n_fds;              /* the most descriptors after any message so far */
        unsigned puts, removes, dropped; /* dropped: put beyond max_fds */
        char *status;                    /* the last STATUS=, or NULL */
} FakeManager;

/* LISTEN_FDNAMES= as systemd makes it at the next start: the variable, the sockets' names and
 * the store's, joined by ':', and the NUL. */
static inline size_t fake_manager_listen_fdnames_len(const FakeManager *m) {
        return strlen("LISTEN_FDNAMES=") + m->sockets_bytes + m->names_bytes;
}

/* The value of field in a notify message ("FDNAME=x\n..."), up to the newline; NULL: none. */
static inline char *fake_manager_field(const char *msg, const char *field) {
        size_t n = strlen(field);

        for (const char *p = msg; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, field, n) == 0 && p[n] == '=')
                        return g_strndup(p + n + 1, strcspn(p + n + 1, "\n"));
        return NULL;
}

/* One message, under the lock. */
static inline void fake_manager_handle(FakeManager *m, const char *msg, const int *fds,
                                       size_t n_fds) {
        g_autofree char *store = fake_manager_field(msg, "FDSTORE");
        g_autofree char *remove = fake_manager_field(msg, "FDSTOREREMOVE");
        g_autofree char *name = fake_manager_field(msg, "FDNAME");
        g_autofree char *status = fake_manager_field(msg, "STATUS");
        g_autofree char *sync = fake_manager_field(msg, "X_FAKE_SYNC");

        if (sync) {
                m->sync_seen = (unsigned) strtoul(sync, NULL, 10);
                g_cond_broadcast(&m->cond);
        }
        if (status) {
                g_free(m->status);
                m->status = g_steal_pointer(&status);
        }
        if (store && strcmp(store, "1") == 0 && name) {
                for (size_t i = 0; i < n_fds; i++) {
                        unsigned k = GPOINTER_TO_UINT(g_hash_table_lookup(m->store, name));
                        m->puts++;
                        if (m->n_fds >= m->max_fds) { /* "Hit fd store limit" */
                                m->dropped++;
                                continue;
                        }
                        g_hash_table_replace(m->store, g_strdup(name), GUINT_TO_POINTER(k + 1));
                        m->n_fds++;
                        m->names_bytes += strlen(name) + 1;
                }
        }
        if (remove && strcmp(remove, "1") == 0 && name) {
                unsigned k = GPOINTER_TO_UINT(g_hash_table_lookup(m->store, name));
                m->removes++;
                m->n_fds -= k;
                m->names_bytes -= k * (strlen(name) + 1);
                g_hash_table_remove(m->store, name);
        }
        /* the store holds the descriptors in systemd; here the names are enough */
        for (size_t i = 0; i < n_fds; i++)
                close(fds[i]);
        m->max_listen = MAX(m->max_listen, fake_manager_listen_fdnames_len(m));
        m->max_n_fds = MAX(m->max_n_fds, m->n_fds);
}

static inline gpointer fake_manager_pump(gpointer p) {
        FakeManager *m = p;

        for (;;) {
                char buf[4096];
                union {
                        struct cmsghdr h;
                        char b[CMSG_SPACE(sizeof(int) * 16)];
                } control;
                struct iovec iov = { .iov_base = buf, .iov_len = sizeof buf - 1 };
                struct msghdr mh = { .msg_iov = &iov,
                                     .msg_iovlen = 1,
                                     .msg_control = &control,
                                     .msg_controllen = sizeof control };
                int fds[16];
                size_t n_fds = 0;
                ssize_t n = recvmsg(m->fd, &mh, MSG_CMSG_CLOEXEC);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        abort();
                buf[n] = '\0';
                n_fds = MIN(cmsg_take_fds(&mh, fds, G_N_ELEMENTS(fds)), G_N_ELEMENTS(fds));
                g_mutex_lock(&m->lock);
                fake_manager_handle(m, buf, fds, n_fds);
                if (m->quit) {
                        g_mutex_unlock(&m->lock);
                        return NULL;
                }
                g_mutex_unlock(&m->lock);
        }
}

/* Listen on dir/notify and point $NOTIFY_SOCKET at it; the store keeps at most max_fds
 * descriptors, and the units' sockets are named "user" and "root", as nsd's are. */
static inline FakeManager *fake_manager_new(const char *dir, unsigned max_fds) {
        FakeManager *m = g_new0(FakeManager, 1);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int big = 4 << 20;

        m->path = g_build_filename(dir, "notify", NULL);
        m->max_fds = max_fds;
        m->store = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        m->sockets_bytes = strlen("user") + 1 + strlen("root") + 1;
        g_mutex_init(&m->lock);
        g_cond_init(&m->cond);
        g_strlcpy(sa.sun_path, m->path, sizeof sa.sun_path);
        m->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (m->fd < 0 || bind(m->fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                abort();
        (void) setsockopt(m->fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
        m->sync_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (m->sync_fd < 0 || connect(m->sync_fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                abort();
        m->thread = g_thread_new("fake-manager", fake_manager_pump, m);
        setenv("NOTIFY_SOCKET", m->path, 1);
        return m;
}

/* Wait until the manager has taken every message sent before this call. */
static inline void fake_manager_drain(FakeManager *m) {
        char msg[64];
        unsigned seq;

        g_mutex_lock(&m->lock);
        seq = ++m->sync_sent;
        g_mutex_unlock(&m->lock);
        snprintf(msg, sizeof msg, "X_FAKE_SYNC=%u", seq);
        if (send(m->sync_fd, msg, strlen(msg), MSG_NOSIGNAL) < 0)
                abort();
        g_mutex_lock(&m->lock);
        while (m->sync_seen < seq)
                g_cond_wait(&m->cond, &m->lock);
        g_mutex_unlock(&m->lock);
}

/* Descriptors in the store whose name starts with prefix. */
static inline unsigned fake_manager_count(FakeManager *m, const char *prefix) {
        GHashTableIter it;
        gpointer k, v;
        unsigned n = 0;

        g_mutex_lock(&m->lock);
        g_hash_table_iter_init(&it, m->store);
        while (g_hash_table_iter_next(&it, &k, &v))
                if (g_str_has_prefix(k, prefix))
                        n += GPOINTER_TO_UINT(v);
        g_mutex_unlock(&m->lock);
        return n;
}

static inline bool fake_manager_has(FakeManager *m, const char *name) {
        bool r;

        g_mutex_lock(&m->lock);
        r = g_hash_table_contains(m->store, name);
        g_mutex_unlock(&m->lock);
        return r;
}

/* The store's names, one per descriptor, as LISTEN_FDNAMES= would list them at the next start
 * (g_strfreev()). */
static inline char **fake_manager_names(FakeManager *m) {
        GPtrArray *a = g_ptr_array_new();
        GHashTableIter it;
        gpointer k, v;

        g_mutex_lock(&m->lock);
        g_hash_table_iter_init(&it, m->store);
        while (g_hash_table_iter_next(&it, &k, &v))
                for (unsigned i = 0; i < GPOINTER_TO_UINT(v); i++)
                        g_ptr_array_add(a, g_strdup(k));
        g_mutex_unlock(&m->lock);
        g_ptr_array_add(a, NULL);
        return (char **) g_ptr_array_free(a, FALSE);
}

/* Seed the store with name, as if it had been put before nsd started (to pass it back). */
static inline void fake_manager_seed(FakeManager *m, const char *name) {
        unsigned k;

        g_mutex_lock(&m->lock);
        k = GPOINTER_TO_UINT(g_hash_table_lookup(m->store, name));
        g_hash_table_replace(m->store, g_strdup(name), GUINT_TO_POINTER(k + 1));
        m->n_fds++;
        m->names_bytes += strlen(name) + 1;
        m->max_listen = MAX(m->max_listen, fake_manager_listen_fdnames_len(m));
        m->max_n_fds = MAX(m->max_n_fds, m->n_fds);
        g_mutex_unlock(&m->lock);
}

/* From now on: the longest LISTEN_FDNAMES= and the most descriptors count from what the store
 * holds now (after a start that was passed more, say). */
static inline void fake_manager_mark(FakeManager *m) {
        fake_manager_drain(m);
        g_mutex_lock(&m->lock);
        m->max_listen = fake_manager_listen_fdnames_len(m);
        m->max_n_fds = m->n_fds;
        g_mutex_unlock(&m->lock);
}

/* Empty the store and the marks (a new scenario), keeping the socket. */
static inline void fake_manager_reset(FakeManager *m, unsigned max_fds) {
        fake_manager_drain(m);
        g_mutex_lock(&m->lock);
        g_hash_table_remove_all(m->store);
        m->max_fds = max_fds;
        m->n_fds = 0;
        m->names_bytes = 0;
        m->max_listen = 0;
        m->max_n_fds = 0;
        m->puts = m->removes = m->dropped = 0;
        g_clear_pointer(&m->status, g_free);
        g_mutex_unlock(&m->lock);
}

static inline void fake_manager_free(FakeManager *m) {
        if (!m)
                return;
        g_mutex_lock(&m->lock);
        m->quit = true;
        g_mutex_unlock(&m->lock);
        fake_manager_drain(m); /* wakes the thread, which ends after that message */
        g_thread_join(m->thread);
        close(m->sync_fd);
        close(m->fd);
        unlink(m->path);
        unsetenv("NOTIFY_SOCKET");
        g_hash_table_unref(m->store);
        g_free(m->status);
        g_free(m->path);
        g_mutex_clear(&m->lock);
        g_cond_clear(&m->cond);
        g_free(m);
}
