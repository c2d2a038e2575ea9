/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-child: helper children the loop watches (nsd/base/child.c), without a Server: results
 * and descriptors handed back, the deadline (SIGKILL, ETIMEDOUT), a child that fails, the
 * bound per uid, the reserve only root's and nsd's own walks take, and the loop running
 * meanwhile. TAP, no root; as root also children stuck after their SIGKILL in a FUSE file
 * system that never answers (fuse-stall.h, in a mount namespace of the test's own): they
 * count against their own uid only, four users with four stuck walks each leave the next
 * user's walk and nsd's own served, and a uid with stuck walks gets no more of its own.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "base/child.h"
#include "fuse-stall.h"
#include "loop-test.h"
#include "tap.h"

static gboolean on_tick(gpointer p) {
        (*(unsigned *) p)++;
        return G_SOURCE_CONTINUE;
}

typedef struct ChildArg {
        int mode; /* 0: hang, 1: hand back a descriptor, 2: fail, 3: look path up */
        int value;
        char path[256];
} ChildArg;

static int test_child_fn(void *p, int *ret_fd) {
        ChildArg *a = p;

        if (a->mode == 0)
                for (;;)
                        pause();
        if (a->mode == 2) {
                a->value = 42;
                return 1;
        }
        if (a->mode == 3) {
                struct stat st;
                return stat(a->path, &st) < 0 ? 3 : 0;
        }
        *ret_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        a->value = 7;
        return 0;
}

typedef struct ChildResult {
        bool done;
        int r, value, fd;
} ChildResult;

static void on_test_child(int r, const void *result, int fd, void *userdata) {
        ChildResult *cr = userdata;

        cr->done = true;
        cr->r = r;
        cr->value = result ? ((const ChildArg *) result)->value : -1;
        cr->fd = fd;
}

static void test_children(void) {
        Children *set = children_new(4);
        unsigned ticks = 0;
        guint tick = g_timeout_add(10, on_tick, &ticks);
        ChildResult hang = { 0 }, good = { 0 }, bad = { 0 }, busy = { 0 };
        struct stat st;

        is_int(child_start(set, 1000, CHILD_USER, test_child_fn, &(ChildArg) { .mode = 0 },
                           sizeof(ChildArg), 300 * MSEC, on_test_child, &hang),
               0, "a helper child that hangs is started");
        is_int(child_start(set, 1000, CHILD_USER, test_child_fn, &(ChildArg) { .mode = 1 },
                           sizeof(ChildArg), 300 * MSEC, on_test_child, &busy),
               -EAGAIN, "a second one for the same uid waits (a quarter of 4 per uid)");
        is_int(child_start(set, 1001, CHILD_USER, test_child_fn, &(ChildArg) { .mode = 1 },
                           sizeof(ChildArg), 5000 * MSEC, on_test_child, &good),
               0, "another uid's child starts");
        ok(RUN_UNTIL(ticks >= 3) && !hang.done, "the loop runs while the children do");
        ok(RUN_UNTIL(good.done), "the good child reports");
        ok(good.r == 0 && good.value == 7 && good.fd >= 0 && fstat(good.fd, &st) == 0 &&
                   S_ISCHR(st.st_mode),
           "with its result and the descriptor it handed back");
        if (good.fd >= 0)
                close(good.fd);
        ok(RUN_UNTIL(hang.done), "the hanging child's deadline comes");
        is_int(hang.r, -ETIMEDOUT, "it reports ETIMEDOUT");
        ok(RUN_UNTIL(children_alive(set) == 0), "the killed child is reaped");

        child_start(set, 1002, CHILD_USER, test_child_fn, &(ChildArg) { .mode = 2 },
                    sizeof(ChildArg), 5000 * MSEC, on_test_child, &bad);
        ok(RUN_UNTIL(bad.done) && bad.r == -EPROTO && bad.value == 42,
           "a child that fails says so, with its result");
        children_free(set);
        g_source_remove(tick);
}

static unsigned n_freed;

static void on_freed(void *userdata) {
        n_freed++;
}

static int start_hang(Children *set, uid_t uid, ChildClass cls, ChildResult *res) {
        return child_start(set, uid, cls, test_child_fn, &(ChildArg) { .mode = 0 },
                           sizeof(ChildArg), 60000 * MSEC, on_test_child, res);
}

/* MaxPathWalks=4: one a uid, and one slot that users' walks leave to root and nsd */
static void test_reserve(void) {
        Children *set = children_new(4);
        ChildResult res[6] = { 0 };

        children_set_on_free(set, on_freed, NULL);
        for (int i = 0; i < 3; i++)
                is_int(start_hang(set, 1000 + i, CHILD_USER, &res[i]), 0, "user %d's walk starts",
                       1000 + i);
        is_int(start_hang(set, 1003, CHILD_USER, &res[3]), -EAGAIN,
               "a fourth user's waits: the last slot is the reserve");
        is_int(start_hang(set, 1003, CHILD_SYSTEM, &res[4]), 0,
               "root's or nsd's own walk for that user takes it");
        is_int(start_hang(set, 1004, CHILD_SYSTEM, &res[5]), -EAGAIN,
               "and then MaxPathWalks= is reached for everyone");
        is_int(children_stuck(set, (uid_t) -1), 0, "none of them is stuck");
        n_freed = 0;
        children_free(set);
        is_int(n_freed, 0u, "freeing the set calls nobody back");
        for (int i = 0; i < 5; i++)
                if (i != 3)
                        ok(res[i].done && res[i].r == -ECANCELED, "walk %d was cancelled", i);
}

/* Four users with four walks each stuck in a FUSE daemon that never answers. */
static void test_stuck(void) {
        enum { USERS = 4, PER_UID = 4, MAX = 16 };
        char dir[] = "/tmp/test-child.XXXXXX";
        ChildResult res[USERS * PER_UID] = { 0 }, next = { 0 }, own = { 0 }, sys = { 0 };
        ChildArg look = { .mode = 3 };
        const char *why = NULL;
        Children *set;
        FuseStall f;
        int r, started = 0, timed_out = 0;

        if (!fuse_stall_sandbox(&why) || !mkdtemp(dir)) {
                for (int i = 0; i < 11; i++)
                        tap_skip("children stuck in FUSE: %s", why ? why : "mkdtemp");
                return;
        }
        r = fuse_stall_mount(&f, dir, 0);
        if (r < 0) {
                for (int i = 0; i < 11; i++)
                        tap_skip("children stuck in FUSE: cannot mount: %s", g_strerror(-r));
                return;
        }
        set = children_new(MAX);
        children_set_on_free(set, on_freed, NULL);
        n_freed = 0;
        /* the first lookup is read (so it is stuck for good), the others wait behind it; 12
         * running slots for users: the fourth user's walks start as the first ones are killed
         * at their deadline */
        for (int round = 0; round < 100 && started < USERS * PER_UID; round++) {
                for (int i = started; i < USERS * PER_UID; i++) {
                        /* a name each: one lookup of a name makes the others wait for it */
                        snprintf(look.path, sizeof look.path, "%s/x%d", dir, i);
                        if (child_start(set, 2000 + (uid_t) (i / PER_UID), CHILD_USER,
                                        test_child_fn, &look, sizeof look, 1000 * MSEC,
                                        on_test_child, &res[i]) < 0)
                                break;
                        if (started++ == 0)
                                RUN_UNTIL(f.lookups > 0);
                }
                if (started < USERS * PER_UID)
                        RUN_UNTIL(n_freed > 0);
                n_freed = 0;
        }
        is_int(started, USERS * PER_UID, "%d users start %d walks each into the FUSE mount", USERS,
               PER_UID);
        ok(f.lookups > 0, "the daemon read a lookup (%u) and answers none", f.lookups);
        for (int i = 0; i < USERS * PER_UID; i++)
                if (RUN_UNTIL(res[i].done) && res[i].r == -ETIMEDOUT)
                        timed_out++;
        is_int(timed_out, USERS * PER_UID, "each got ETIMEDOUT at its deadline");
        is_int(children_stuck(set, (uid_t) -1), USERS * PER_UID,
               "and stays in the kernel after its SIGKILL");
        is_int(children_stuck(set, 2000), PER_UID, "counted against its own uid");
        is_int(child_start(set, 2100, CHILD_USER, test_child_fn, &(ChildArg) { .mode = 1 },
                           sizeof(ChildArg), 5000 * MSEC, on_test_child, &next),
               0, "another user's walk starts (the stuck ones hold no MaxPathWalks= slot)");
        ok(RUN_UNTIL(next.done) && next.r == 0, "and ends well");
        if (next.fd >= 0)
                close(next.fd);
        is_int(child_start(set, 2000, CHILD_USER, test_child_fn, &(ChildArg) { .mode = 1 },
                           sizeof(ChildArg), 5000 * MSEC, on_test_child, &own),
               -EAGAIN, "a uid with stuck walks gets no more of its own");
        is_int(child_start(set, 2000, CHILD_SYSTEM, test_child_fn, &(ChildArg) { .mode = 1 },
                           sizeof(ChildArg), 5000 * MSEC, on_test_child, &sys),
               -EAGAIN,
               "nor root's for it, at its cap of stuck walks (a quarter of MaxPathWalks=)");

        n_freed = 0;
        fuse_stall_end(&f);
        ok(RUN_UNTIL(children_alive(set) == 0), "the daemon goes: the stuck children end");
        ok(n_freed >= USERS * PER_UID, "each end says a slot freed (%u)", n_freed);
        children_free(set);
        (void) rmdir(dir);
}

int main(void) {
        test_children();
        test_reserve();
        test_stuck(); /* last: it leaves this process in a mount namespace of its own */
        return tap_done();
}
