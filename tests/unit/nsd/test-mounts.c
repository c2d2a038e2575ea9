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
#include <sys/sysmacros.h>
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

static unsigned count_of(GArray *counts, uid_t uid) {
        for (guint i = 0; counts && i < counts->len; i++)
                if (g_array_index(counts, MountsUidCount, i).uid == uid)
                        return g_array_index(counts, MountsUidCount, i).count;
        return 0;
}

/* MaxMountsPerUser= (domain/share-bound.h): the FUSE mounts per uid under an anchor, and
 * those beyond the limit, newest (last in mountinfo: ids are reused) first */
static void test_share_use(void) {
        const char *text = ROOT
                "200 100 0:40 / /run/nsd rw - tmpfs nsd-pins rw\n"
                /* the anchor, and a pin of bob's namespace beside it (never counted) */
                "201 200 8:1 /srv/lab /run/nsd/shares/lab@0123 rw shared:12 - ext4 /dev/sda1 rw\n"
                "202 200 0:4 mnt:[4026532300] /run/nsd/pins/1002 rw - nsfs nsfs rw\n"
                /* alice (1001): four, one with a space and one with a newline in its name */
                "210 201 0:50 / /run/nsd/shares/lab@0123/a rw,nosuid,nodev shared:20 - "
                "fuse.bindfs bindfs rw,user_id=1001,group_id=1001\n"
                "230 201 0:52 / /run/nsd/shares/lab@0123/my\\040dir rw,nosuid,nodev shared:22 - "
                "fuse.bindfs bindfs rw,user_id=1001,group_id=1001\n"
                "220 201 0:51 / /run/nsd/shares/lab@0123/b rw,nosuid,nodev shared:21 - fuse "
                "/dev/fuse rw,user_id=1001,group_id=1001\n"
                "240 201 0:53 / /run/nsd/shares/lab@0123/x\\012y rw,nosuid,nodev shared:23 - "
                "fuse.sshfs alice@h: rw,user_id=1001,group_id=1001\n"
                /* bob (1002): one, under the limit */
                "250 201 0:54 / /run/nsd/shares/lab@0123/bob rw shared:24 - fuse.sshfs b@h: "
                "rw,user_id=1002,group_id=1002\n"
                /* root's: a FUSE mount of uid 0, a tmpfs, an ext4: none counted */
                "260 201 0:55 / /run/nsd/shares/lab@0123/r rw shared:25 - fuse.sshfs r@h: "
                "rw,user_id=0,group_id=0\n"
                "261 201 0:56 / /run/nsd/shares/lab@0123/t rw shared:26 - tmpfs tmpfs rw\n"
                /* user_id= as a mount option (not a super option) says nothing */
                "262 201 0:57 / /run/nsd/shares/lab@0123/fake rw,user_id=1003 shared:27 - "
                "fuse.x x rw,group_id=5\n"
                /* another share and a look-alike path: not lab's */
                "270 200 8:1 /srv/lab2 /run/nsd/shares/lab@01234 rw shared:13 - ext4 /dev/sda1 "
                "rw\n"
                "271 270 0:58 / /run/nsd/shares/lab@01234/c rw shared:13 - fuse.bindfs bindfs "
                "rw,user_id=1001\n";
        g_autoptr(GArray) counts = NULL;
        g_autoptr(GPtrArray) excess = NULL;
        const MountsExcess *e;

        is_int(mounts_share_use(text, "/run/nsd/shares/lab@0123", 2, &counts, &excess), 0,
               "lab's anchor is there");
        is_int((int) count_of(counts, 1001), 4, "alice has four FUSE mounts under lab");
        is_int((int) count_of(counts, 1002), 1, "bob has one");
        is_int((int) count_of(counts, 0), 0, "root's FUSE mount is not counted");
        is_int((int) count_of(counts, 1003), 0, "user_id= among the mount options is not an owner");
        is_int((int) counts->len, 2, "two uids, nobody else (no pin, no other share's mount)");
        is_int((int) excess->len, 2, "alice is two over MaxMountsPerUser=2, bob is not");
        e = excess->len > 0 ? excess->pdata[0] : NULL;
        ok(e && e->uid == 1001 && e->mnt_id == 240 &&
                   strcmp(e->target, "/run/nsd/shares/lab@0123/x\ny") == 0,
           "the newest first: mount 240, its name unescaped (a real newline)");
        ok(e && e->detach_id == 240 && e->detach_major == 0 && e->detach_minor == 53 &&
                   strcmp(e->detach_target, e->target) == 0,
           "... detached itself, device 0:53");
        e = excess->len > 1 ? excess->pdata[1] : NULL;
        ok(e && e->mnt_id == 220 && strcmp(e->target, "/run/nsd/shares/lab@0123/b") == 0,
           "then mount 220 on 'b', made after 230 ('my dir') with a reused, lower id: the order "
           "in mountinfo is the age, not the id; 210 and 230 stay");
        g_clear_pointer(&counts, g_array_unref);
        g_clear_pointer(&excess, g_ptr_array_unref);

        is_int(mounts_share_use(text, "/run/nsd/shares/lab@0123", 4, &counts, &excess), 0,
               "MaxMountsPerUser=4");
        is_int((int) excess->len, 0, "nobody over it");
        g_clear_pointer(&counts, g_array_unref);
        g_clear_pointer(&excess, g_ptr_array_unref);

        is_int(mounts_share_use(text, "/run/nsd/shares/lab@01234", 1, &counts, NULL), 0,
               "the look-alike anchor is an anchor of its own");
        is_int((int) count_of(counts, 1001), 1, "... with alice's one mount there");
        g_clear_pointer(&counts, g_array_unref);
        is_int(mounts_share_use(text, "/run/nsd/shares/gone", 1, &counts, &excess), -ENOENT,
               "no anchor: -ENOENT");
        is_int(mounts_share_use(text, "run/nsd/shares/lab@0123", 1, &counts, &excess), -EINVAL,
               "a relative anchor: -EINVAL");

        /* nested: alice's mounts inside her own FUSE mount are reached through it; one stacked
         * on the anchor itself counts; root's stacked FUSE is on the way but not counted */
        const char *nested = ROOT
                "201 100 8:1 /srv/lab /s/lab rw shared:12 - ext4 /dev/sda1 rw\n"
                "300 201 0:60 / /s/lab/outer rw shared:30 - fuse.bindfs bindfs rw,user_id=1001\n"
                "301 300 0:61 / /s/lab/outer/in1 rw shared:31 - fuse.bindfs bindfs "
                "rw,user_id=1001\n"
                "302 300 0:62 / /s/lab/outer/in2 rw shared:32 - fuse.bindfs bindfs "
                "rw,user_id=1001\n"
                "310 201 0:63 / /s/lab rw shared:33 - fuse.sshfs s rw,user_id=1002\n"
                "311 310 0:64 / /s/lab/z rw shared:34 - fuse.sshfs s rw,user_id=1002\n";

        is_int(mounts_share_use(nested, "/s/lab", 2, &counts, &excess), 0, "nested mounts");
        is_int((int) count_of(counts, 1001), 3, "alice: the outer one and two inside it");
        is_int((int) count_of(counts, 1002), 2, "bob: one stacked on the anchor, one in it");
        is_int((int) excess->len, 1, "alice is one over");
        e = excess->len > 0 ? excess->pdata[0] : NULL;
        ok(e && e->mnt_id == 302 && e->detach_id == 300 &&
                   strcmp(e->detach_target, "/s/lab/outer") == 0 && e->detach_minor == 60,
           "her newest (302) is inside her own FUSE mount: the outer one (300) is detached for "
           "it, root cannot walk into a FUSE mount");
}

/* The mount on top of a path (a volume's Where=): its type and device; and whether a device
 * is a volume's Source= (mounts_device_is(): a block device by number, a loop device by its
 * backing file) */
static void test_on(void) {
        const char *text = ROOT HOME
                "300 101 7:3 / /home/alice/vault rw,nosuid,nodev - ext4 /dev/loop3 rw\n"
                "301 101 0:60 / /home/alice/box rw,nosuid,nodev - ext4 /dev/loop4 rw\n"
                "302 301 0:61 / /home/alice/box rw,nosuid,nodev - fuse.sshfs me@host: "
                "rw,user_id=1001\n";
        g_autofree char *file = g_strdup("/tmp/nsd-test-mounts.XXXXXX");
        struct stat st;
        MountOn on;
        int fd;

        is_int(mounts_on(text, "/home/alice/vault", &on), 0, "a mount on the vault's Where=");
        ok(g_str_equal(on.fstype, "ext4") && major(on.dev) == 7 && minor(on.dev) == 3,
           "... ext4 on device 7:3 (%s %u:%u)", on.fstype, major(on.dev), minor(on.dev));
        is_int(mounts_on(text, "/home/alice/box", &on), 0, "two mounts on box's Where=");
        ok(g_str_equal(on.fstype, "fuse.sshfs") && minor(on.dev) == 61,
           "... the one on top counts: the user's sshfs (%s)", on.fstype);
        is_int(mounts_on(text, "/home/alice/none", &on), -ENOENT, "nothing there: -ENOENT");
        ok(mounts_on("garbage\n", "/", &on) < 0, "a line that does not parse: no mount");

        fd = mkstemp(file);
        if (fd < 0 || fstat(fd, &st) < 0)
                tap_bail_errno(file);
        close(fd);
        is_int(mounts_device_is(makedev(8, 1), file), 0,
               "a regular file is not a device that is no loop device");
        is_int(mounts_device_is(makedev(7, 4095), file), 0,
               "nor a loop device that does not exist (or is not attached)");
        is_int(mounts_device_is(makedev(8, 1), "/nonexistent/image"), 0,
               "a Source= that does not exist is no device");
        is_int(mounts_device_is(makedev(8, 1), "relative.img"), 0, "nor a relative path");
        if (stat("/dev/null", &st) == 0)
                is_int(mounts_device_is(st.st_rdev, "/dev/null"), 0,
                       "a character device is never a volume's");
        unlink(file);
}

/* A loop device's number from /sys/dev/block's link (mounts_loop_index()), checked against
 * /sys/block/loopN/dev, the other way /sys names it: its minor is N only while
 * loop.max_part is 0 */
static void test_loop_index(void) {
        g_autoptr(GDir) dir = g_dir_open("/sys/block", 0, NULL);
        unsigned maj, mnr, checked = 0, wrong = 0;
        const char *name;

        is_int(mounts_loop_index(makedev(8, 1)), -ENODEV, "a device of another major is no loop");
        is_int(mounts_loop_index(makedev(7, 1048575)), -ENODEV,
               "a loop number /sys does not know: -ENODEV");
        while (dir && (name = g_dir_read_name(dir))) {
                g_autofree char *path = NULL, *text = NULL;
                char *end;
                long n;

                if (!g_str_has_prefix(name, "loop"))
                        continue;
                n = strtol(name + 4, &end, 10);
                path = g_strdup_printf("/sys/block/%s/dev", name);
                if (*end || !g_file_get_contents(path, &text, NULL, NULL) ||
                    sscanf(text, "%u:%u", &maj, &mnr) != 2)
                        continue;
                if (mounts_loop_index(makedev(maj, mnr)) != n) {
                        tap_diag("%s (%u:%u): mounts_loop_index() says %d", name, maj, mnr,
                                 mounts_loop_index(makedev(maj, mnr)));
                        wrong++;
                }
                checked++;
        }
        if (checked)
                ok(wrong == 0, "each of the %u loop devices of /sys/block by its number (%u wrong)",
                   checked, wrong);
        else
                tap_skip("no loop device in /sys/block on this machine");
}

int main(void) {
        test_mounts();
        test_under();
        test_on();
        test_loop_index();
        test_share_use();
        return tap_done();
}
