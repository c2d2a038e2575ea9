/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-state: nsd's record of the namespaces it made, for pam_nsjoin (state.h, NSD_MADE_* in
 * nsd-protocol.h), TAP. In a temporary run directory: the folder's mode, both names of a
 * namespace written and removed, a second namespace kept while the first goes, pruning what
 * nsd no longer keeps. The "namespace" is this process's own (its nsfs inode, "/"), as in
 * core-test.h. No root needed; leaves nothing behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsd-protocol.h"
#include "store/state.h"
#include "tap.h"

static char run_dir[] = "/tmp/test-made.XXXXXX";

static bool recorded(const char *name) {
        char path[PATH_MAX];
        struct stat st;

        snprintf(path, sizeof(path), "%s/%s/%s", run_dir, NSD_MADE_DIR_NAME, name);
        return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int main(void) {
        g_autoptr(GHashTable) keep = g_hash_table_new(g_str_hash, g_str_equal);
        char ns_name[NSD_MADE_NAME_MAX], root_name[NSD_MADE_NAME_MAX], path[PATH_MAX];
        StateDir *sd = NULL;
        struct stat st;
        int root_fd;

        if (!mkdtemp(run_dir))
                tap_bail_errno("mkdtemp");
        root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0 || stat("/proc/self/ns/mnt", &st) < 0)
                tap_bail_errno("/ and /proc/self/ns/mnt");

        is_int(state_open(run_dir, &sd), 0, "state_open");
        snprintf(path, sizeof(path), "%s/%s", run_dir, NSD_MADE_DIR_NAME);
        {
                struct stat d;

                ok(stat(path, &d) == 0 && S_ISDIR(d.st_mode) && (d.st_mode & 07777) == 0755 &&
                           d.st_uid == geteuid(),
                   "the record is a folder of nsd's, mode 0755 (pam_nsjoin trusts nothing else)");
        }

        is_int(state_made_names(st.st_ino, root_fd, ns_name, root_name), 0, "the names");
        ok(strncmp(ns_name, "mnt-", 4) == 0 && strtoull(ns_name + 4, NULL, 10) == st.st_ino,
           "the nsfs inode's name: %s", ns_name);
        ok(strncmp(root_name, "root-", 5) == 0 && strtoull(root_name + 5, NULL, 10) > 0,
           "the root mount's name: %s", root_name);

        state_made_add(sd, st.st_ino, root_fd);
        ok(recorded(ns_name) && recorded(root_name), "added: both names are there");
        state_made_add(sd, 424242, -1); /* another namespace, root unknown */
        ok(recorded("mnt-424242"), "a second namespace (root unknown): its inode's name");

        state_made_remove(sd, st.st_ino, root_fd);
        ok(!recorded(ns_name) && !recorded(root_name), "removed: both names are gone");
        ok(recorded("mnt-424242"), "the second one stays");

        /* at start: only what nsd keeps stays */
        state_made_add(sd, st.st_ino, root_fd);
        g_hash_table_add(keep, ns_name);
        g_hash_table_add(keep, root_name);
        state_made_prune(sd, keep);
        ok(recorded(ns_name) && recorded(root_name), "pruned: what nsd keeps stays");
        ok(!recorded("mnt-424242"), "pruned: what nsd no longer keeps is gone");

        /* a folder others may write to is made nsd's again */
        state_free(sd);
        sd = NULL;
        if (chmod(path, 0777) < 0)
                tap_bail_errno("chmod");
        is_int(state_open(run_dir, &sd), 0, "state_open again");
        ok(stat(path, &st) == 0 && (st.st_mode & 07777) == 0755,
           "a mode 0777 record is 0755 again");

        state_made_remove(sd, 0, -1);
        g_hash_table_remove_all(keep);
        state_made_prune(sd, keep);
        state_free(sd);
        close(root_fd);
        rmdir(path);
        snprintf(path, sizeof(path), "%s/state", run_dir);
        rmdir(path);
        if (rmdir(run_dir) < 0)
                tap_diag("cannot remove %s: %s", run_dir, strerror(errno));
        return tap_done();
}
