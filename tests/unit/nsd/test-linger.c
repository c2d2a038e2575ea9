/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-linger: the countdowns of Linger= and the emptiness rule (nsd/domain/linger.c) with a
 * fake owner (LingerOps: its users, its release, the mount tables) and a fake /proc, no
 * Server and no registry: a namespace without session, process or mount of the user's is
 * handed to the release; a process left inside, a mount of the user's or an unknown baseline
 * keeps it (looked at again, or not for an unknown baseline); a session, a cancel or a newer
 * countdown decides nothing; a failed release is tried again; Linger=forever never counts.
 * TAP, no root.
 *
 *   test-linger SCRATCH_DIR
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "domain/linger.h"
#include "domain/user.h"
#include "fake-proc.h"
#include "loop-test.h"
#include "store/fdstore.h"
#include "store/mounts.h"
#include "store/userns.h"
#include "tap.h"

/* a namespace right after creation (/ received from the host, /tmp copied) and the user's own
 * mount in it */
#define ROOT "100 99 8:1 / / rw,relatime master:1 - ext4 /dev/sda1 rw\n"
#define TMP "102 100 0:30 / /tmp rw,relatime - tmpfs tmpfs rw\n"
#define VAULT "140 100 0:45 / /home/alice/vault rw - tmpfs vault rw\n"

#define UID 4000

static struct {
        User *user;            /* the one user the fake owner holds (NULL: none) */
        const char *mountinfo; /* its mount table */
        unsigned releases;     /* release() calls */
        unsigned lookups;      /* lookup() calls: one when a countdown ends, one per scan */
        int release_result;    /* what release() answers */
        char last_why[256];
        Linger *linger;
} owner;

static User *fake_lookup(uid_t uid, void *userdata) {
        owner.lookups++;
        return owner.user && owner.user->uid == uid ? owner.user : NULL;
}

static int fake_release(User *u, const char *why, void *userdata) {
        owner.releases++;
        g_strlcpy(owner.last_why, why, sizeof owner.last_why);
        if (owner.release_result < 0)
                return owner.release_result;
        /* as the registry does: forget it, then free it */
        linger_forget(owner.linger, u->uid);
        g_ptr_array_set_size(u->sessions, 0);
        user_free(u);
        owner.user = NULL;
        return 0;
}

static int fake_mountinfo(const UserNs *ns, size_t max, char **ret, size_t *ret_len) {
        if (!owner.mountinfo)
                return -EIO;
        *ret = g_strdup(owner.mountinfo);
        if (ret_len)
                *ret_len = strlen(*ret);
        return 0;
}

static const LingerOps ops = {
        .lookup = fake_lookup,
        .release = fake_release,
        .read_mountinfo = fake_mountinfo,
};

static FdStore *fdstore;
static char *scratch, *proc;

/* The user, its "namespace" a file of the scratch dir (its inode names it in the fake /proc),
 * with the baseline of ROOT TMP (or none). */
static User *make_user(const char *ns_file, bool with_baseline) {
        UserNs *ns = userns_new(UID);
        GArray *baseline = NULL;
        struct stat st;

        if (stat(ns_file, &st) < 0)
                abort();
        ns->ns_inode = (uint64_t) st.st_ino;
        if (with_baseline && mounts_baseline(ROOT TMP, &baseline) < 0)
                abort();
        return user_new(ns, baseline, fdstore, NULL);
}

static void remove_process(const char *pid) {
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s/%s'", proc, pid);
        if (system(cmd) != 0)
                abort();
}

/* Start the countdown (Linger=0) and wait until it ended and the scan decided. */
static void count_down(Linger *l) {
        unsigned before = owner.lookups;

        linger_arm(l, UID, 0);
        if (!RUN_UNTIL(owner.lookups >= before + 2))
                tap_diag("the countdown did not come to a decision");
}

static void test_empty_is_released(Linger *l, Config *c, const char *ns_file) {
        owner = (typeof(owner)) { .mountinfo = ROOT TMP, .linger = l };
        owner.user = make_user(ns_file, true);
        c->linger_sec = 0;
        linger_arm(l, UID, 0);
        ok(linger_armed(l, UID), "Linger=0: the countdown starts at the last session");
        ok(RUN_UNTIL(owner.releases == 1), "no session, no process, no mount of the user's: "
                                           "released");
        ok(strstr(owner.last_why, "linger time over") != NULL, "saying why (%s)", owner.last_why);
        ok(!owner.user && !linger_armed(l, UID), "the owner forgot it, and so did linger");
}

static void test_kept(Linger *l, Config *c, const char *ns_file) {
        owner = (typeof(owner)) { .mountinfo = ROOT TMP, .linger = l };
        owner.user = make_user(ns_file, true);
        c->linger_sec = 0;

        fake_proc_add(proc, "500", ns_file, 1);
        count_down(l);
        ok(owner.releases == 0 && owner.user, "a process left inside keeps the namespace");
        ok(linger_armed(l, UID), "and it is looked at again later (LINGER_RECHECK_SEC)");
        remove_process("500");

        owner.mountinfo = ROOT TMP VAULT;
        count_down(l);
        ok(owner.releases == 0 && linger_armed(l, UID),
           "a mount the user made keeps it, looked at again later");

        owner.mountinfo = NULL;
        count_down(l);
        ok(owner.releases == 0 && linger_armed(l, UID),
           "a mount table that cannot be read keeps it, looked at again later");

        owner.mountinfo = ROOT TMP;
        g_ptr_array_add(owner.user->sessions, (gpointer) "a session");
        {
                unsigned before = owner.lookups;
                linger_arm(l, UID, 0);
                RUN_UNTIL(owner.lookups > before);
                loop_test_run_for(100);
                ok(owner.releases == 0 && owner.lookups == before + 1 && !linger_armed(l, UID),
                   "a session keeps it: the countdown ends without a scan");
        }
        g_ptr_array_set_size(owner.user->sessions, 0);

        linger_arm(l, UID, 1);
        linger_cancel(l, UID);
        loop_test_run_for(1300);
        ok(owner.releases == 0 && !linger_armed(l, UID), "a cancelled countdown decides nothing");

        owner.release_result = -EBUSY;
        linger_arm(l, UID, 0);
        ok(RUN_UNTIL(owner.releases == 1), "empty again: the release is asked");
        ok(owner.user && linger_armed(l, UID),
           "a release that fails keeps it, and is tried again (LINGER_RELEASE_RETRY_SEC)");
        owner.release_result = 0;

        c->linger_sec = CONFIG_LINGER_FOREVER;
        linger_arm(l, UID, 0);
        ok(!linger_armed(l, UID), "Linger=forever: no countdown");
        linger_forget(l, UID);
        g_ptr_array_set_size(owner.user->sessions, 0);
        user_free(owner.user);
        owner.user = NULL;

        c->linger_sec = 0;
        owner.user = make_user(ns_file, false);
        count_down(l);
        ok(owner.releases == 1 && owner.user && !linger_armed(l, UID),
           "an unknown baseline keeps it for good (only nsctl release removes it)");
        linger_forget(l, UID);
        user_free(owner.user);
        owner.user = NULL;
}

int main(int argc, char **argv) {
        g_autofree char *ns_file = NULL;
        Config c = loop_test_config();
        Linger *l;

        if (argc != 2) {
                fprintf(stderr, "usage: test-linger SCRATCH_DIR\n");
                return 2;
        }
        scratch = argv[1];
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", scratch);
        if (system(cmd) != 0)
                abort();
        proc = g_build_filename(scratch, "proc", NULL);
        ns_file = g_build_filename(scratch, "ns-user", NULL);
        g_mkdir_with_parents(proc, 0755);
        g_file_set_contents(ns_file, "", 0, NULL);
        fdstore = fdstore_new(false);

        l = linger_new(&c, proc, &ops, NULL);
        test_empty_is_released(l, &c, ns_file);
        test_kept(l, &c, ns_file);
        linger_free(l);

        fdstore_free(fdstore);
        config_done(&c);
        if (system(cmd) != 0)
                abort();
        g_free(proc);
        return tap_done();
}
