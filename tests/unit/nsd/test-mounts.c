/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-mounts: what linger looks at to decide that a namespace is empty (issue 9): which
 * mounts the user made (nsd/store/mounts.c), told apart by what they are and not by counting, and
 * which processes are in which namespace (nsd/store/nsprocs.c, on a fake /proc).
 *
 *   test-mounts SCRATCH_DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/mounts.h"
#include "store/nsprocs.h"
#include "tap.h"

/* a user's namespace right after creation: / and /home received from the host's peer groups
 * (slave), /tmp copied from a private host mount */
#define ROOT "100 99 8:1 / / rw,relatime master:1 - ext4 /dev/sda1 rw\n"
#define HOME "101 100 8:2 / /home rw,relatime master:2 - ext4 /dev/sda2 rw\n"
#define TMP "102 100 0:30 / /tmp rw,relatime - tmpfs tmpfs rw\n"
#define USB "103 100 8:17 / /media/usb rw,relatime master:7 - vfat /dev/sdb1 rw\n"

static void test_mounts(void) {
        g_autoptr(GArray) b = NULL, back = NULL;
        g_autofree char *text = NULL, *first = NULL;
        int r;

        r = mounts_baseline(ROOT HOME TMP USB, &b);
        is_int(r, 0, "baseline of a new namespace");
        is_int((int) b->len, 1, "... holds only the mount not received from a peer group");
        is_int(mounts_user_made(ROOT HOME TMP USB, b, NULL), 0,
               "right after creation: no mount of the user's");

        /* issue 9: the host unmounts the USB stick and the user mounts a tmpfs: a count of
         * mounts balances out, this does not */
        r = mounts_user_made(ROOT HOME TMP "140 101 0:45 / /home/alice/vault rw - tmpfs vault rw\n",
                             b, &first);
        is_int(r, 1, "host unmount + user mount: one mount of the user's");
        ok(first && strstr(first, "tmpfs on /home/alice/vault"), "... described: %s",
           first ? first : "(null)");
        g_clear_pointer(&first, g_free);

        r = mounts_user_made(ROOT HOME TMP USB
                             "141 101 0:46 / /home/alice/mnt rw,nosuid,nodev - fuse.sshfs "
                             "alice@h: rw,user_id=1001,group_id=1001\n",
                             b, &first);
        is_int(r, 1, "a FUSE mount under a received mount is the user's");
        ok(first && strstr(first, "FUSE of uid 1001"), "... named with its owner: %s",
           first ? first : "(null)");
        g_clear_pointer(&first, g_free);

        is_int(mounts_user_made(ROOT HOME TMP USB
                                "142 100 8:33 / /media/nfs rw master:9 - nfs4 srv:/x rw\n",
                                b, NULL),
               0, "a new host mount received later is not the user's");
        is_int(mounts_user_made(ROOT HOME USB, b, NULL), 0,
               "the baseline's own mount gone: nothing of the user's");
        /* the kernel reuses mount id 102 for a mount the user made on /tmp */
        is_int(mounts_user_made(ROOT HOME USB "102 100 0:51 / /tmp rw - tmpfs mine rw\n", b, NULL),
               1, "a reused mount id with another mount is the user's");

        text = mounts_baseline_to_string(b);
        is_int(mounts_baseline_from_string(text, &back), 0, "baseline back from its text");
        ok(back->len == b->len && g_array_index(back, guint64, 0) == g_array_index(b, guint64, 0),
           "... the same set");
        g_clear_pointer(&back, g_array_unref);
        is_int(mounts_baseline_from_string("", &back), 0, "the empty text is the empty set");
        is_int((int) back->len, 0, "... of no fingerprint");
        g_clear_pointer(&back, g_array_unref);
        is_int(mounts_baseline_from_string("xyz", &back), -EINVAL, "a bad text is refused");
        is_int(mounts_baseline_from_string("0123456789abcdef,12", &back), -EINVAL,
               "a short fingerprint is refused");
}

static void fake_proc(const char *dir, const char *pid, const char *ns_file, int ppid) {
        g_autofree char *nsdir = g_strdup_printf("%s/%s/ns", dir, pid);
        g_autofree char *link = g_strdup_printf("%s/mnt", nsdir);
        g_autofree char *stat = g_strdup_printf("%s/%s/stat", dir, pid);
        g_autofree char *text = g_strdup_printf("%s (sleep x) S %d 1 1 0 -1\n", pid, ppid);

        g_mkdir_with_parents(nsdir, 0755);
        if (symlink(ns_file, link) < 0)
                perror("symlink");
        g_file_set_contents(stat, text, -1, NULL);
}

static uint64_t ino_of(const char *path) {
        struct stat st;
        return stat(path, &st) == 0 ? (uint64_t) st.st_ino : 0;
}

static void test_nsprocs(const char *scratch) {
        g_autofree char *proc = g_build_filename(scratch, "proc", NULL);
        g_autofree char *a = g_build_filename(scratch, "ns-a", NULL);
        g_autofree char *b = g_build_filename(scratch, "ns-b", NULL);
        g_autofree char *self = g_build_filename(scratch, "ns-self", NULL);
        NsProcs *p = NULL;
        pid_t first = 0;
        int r;

        g_mkdir_with_parents(proc, 0755);
        g_file_set_contents(a, "", 0, NULL);
        g_file_set_contents(b, "", 0, NULL);
        g_file_set_contents(self, "", 0, NULL);
        fake_proc(proc, "1", self, 0);
        fake_proc(proc, "200", a, 1); /* a tmux server left in alice's namespace */
        fake_proc(proc, "201", a, 200);
        fake_proc(proc, "300", b, 42); /* nsd's own helper child (parent 42) */
        g_autofree char *proc_self = g_build_filename(proc, "self", NULL);
        g_mkdir_with_parents(proc_self, 0755);

        r = nsprocs_scan(proc, 42, ino_of(self), &p);
        is_int(r, 0, "scan of a fake /proc");
        is_int((int) nsprocs_count(p, ino_of(a), &first), 2, "two processes left in A's namespace");
        ok(first == 200 || first == 201, "... the first one named (pid %d)", (int) first);
        is_int((int) nsprocs_count(p, ino_of(b), NULL), 0,
               "nsd's own helper children are not counted");
        is_int((int) nsprocs_count(p, ino_of(self), NULL), 0,
               "the scanner's namespace is not counted");
        nsprocs_free(p);

        is_int(nsprocs_scan("/nonexistent-proc", 0, 0, &p), -ENOENT, "no /proc: an error, not 0");
}

int main(int argc, char **argv) {
        g_autofree char *scratch = NULL;

        if (argc < 2) {
                fprintf(stderr, "usage: test-mounts SCRATCH_DIR\n");
                return 2;
        }
        scratch = g_strdup_printf("%s/run.%d", argv[1], (int) getpid());
        g_mkdir_with_parents(scratch, 0755);
        test_mounts();
        test_nsprocs(scratch);
        {
                g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", scratch);
                if (system(cmd) != 0)
                        fprintf(stderr, "# cannot remove %s\n", scratch);
        }
        return tap_done();
}
