/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fdstore.c: the service manager's file descriptor store, see fdstore.h. */
#include "fdstore.h"

#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "log.h"

typedef struct Passed {
        int fd; /* -1 once taken */
        char *name;
} Passed;

struct FdStore {
        bool enabled;
        GArray *passed;    /* Passed, in the order the manager passed them */
        GHashTable *taken; /* names taken (owned strings) */
};

FdStore *fdstore_new(bool enabled) {
        FdStore *fs = g_new0(FdStore, 1);

        fs->enabled = enabled;
        fs->passed = g_array_new(FALSE, FALSE, sizeof(Passed));
        fs->taken = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        return fs;
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
        g_free(fs);
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

void fdstore_drop_unclaimed(FdStore *fs) {
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
}

int fdstore_put(FdStore *fs, int fd, const char *name) {
        g_autofree char *msg = NULL;
        int r;

        if (!fdstore_enabled(fs) || fd < 0)
                return 0;
        msg = g_strdup_printf("FDSTORE=1\nFDNAME=%s\nFDPOLL=0", name);
        r = sd_pid_notify_with_fds(0, 0, msg, &fd, 1);
        if (r < 0)
                return log_debug_errno(r,
                                       "Failed to put '%s' into the service manager's fd "
                                       "store: %m",
                                       name);
        return r > 0 ? 1 : 0;
}

int fdstore_remove(FdStore *fs, const char *name) {
        int r;

        if (!fdstore_enabled(fs))
                return 0;
        r = sd_notifyf(0, "FDSTOREREMOVE=1\nFDNAME=%s", name);
        if (r < 0)
                return log_debug_errno(r,
                                       "Failed to remove '%s' from the service manager's "
                                       "fd store: %m",
                                       name);
        return r > 0 ? 1 : 0;
}

const char *fdstore_ns_name(char buf[static FDSTORE_NAME_MAX], unsigned uid) {
        snprintf(buf, FDSTORE_NAME_MAX, FDSTORE_NS_PREFIX "%u", uid);
        return buf;
}

const char *fdstore_session_name(char buf[static FDSTORE_NAME_MAX], unsigned long long id) {
        snprintf(buf, FDSTORE_NAME_MAX, FDSTORE_SESSION_PREFIX "%016llx", id);
        return buf;
}
