/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-mounts: which mounts of a namespace the user made (nsd/store/mounts.c), what linger
 * looks at to decide that a namespace is empty (issue 9): told apart from the host's by what
 * they are (peer group, baseline), not by counting.
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

/* the anchors of shares in nsd's pin namespace (nsd/domain/setup.c): the mounts under one
 * and its peer group */
static void test_under(void) {
        const char *text = ROOT
                "200 100 0:40 / /run/nsd rw - tmpfs nsd-pins rw\n"
                "201 200 8:1 /srv/lab /run/nsd/shares/lab rw shared:12 - ext4 /dev/sda1 rw\n"
                "202 201 0:50 / /run/nsd/shares/lab/alice rw shared:12 - fuse.bindfs "
                "bindfs rw,user_id=1001\n"
                "203 201 0:51 / /run/nsd/shares/lab/bob/data rw shared:12 - fuse.sshfs "
                "sshfs rw,user_id=1002\n"
                "204 200 8:1 /srv/lab2 /run/nsd/shares/lab2 rw shared:13 - ext4 /dev/sda1 rw\n"
                "205 200 8:1 /srv/q /run/nsd/shares/quiet rw - ext4 /dev/sda1 rw\n";
        unsigned group = 99;
        int count = 99;

        is_int(mounts_under(text, "/run/nsd/shares/lab", &count, &group), 0, "lab's anchor");
        is_int(count, 2, "two mounts under lab (a bindfs, an sshfs deeper down), none of lab2");
        is_int((int) group, 12, "lab's peer group");
        is_int(mounts_under(text, "/run/nsd/shares/lab2", &count, &group), 0, "lab2's anchor");
        is_int(count, 0, "nothing under lab2 (lab's mounts are not lab2's)");
        is_int((int) group, 13, "lab2's peer group");
        is_int(mounts_under(text, "/run/nsd/shares/quiet", &count, &group), 0, "a private one");
        is_int((int) group, 0, "no peer group: 0");
        is_int(mounts_under(text, "/run/nsd/shares/none", &count, &group), -ENOENT,
               "no anchor: -ENOENT");
}

int main(void) {
        test_mounts();
        test_under();
        return tap_done();
}
