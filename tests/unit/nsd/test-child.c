/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-child: helper children the loop watches (nsd/base/child.c), without a Server: results
 * and descriptors handed back, the deadline (SIGKILL, ETIMEDOUT), a child that fails, the
 * bound per uid, and the loop running meanwhile. TAP, no root.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "base/child.h"
#include "loop-test.h"
#include "tap.h"

static gboolean on_tick(gpointer p) {
        (*(unsigned *) p)++;
        return G_SOURCE_CONTINUE;
}

typedef struct ChildArg {
        int mode; /* 0: hang, 1: hand back a descriptor, 2: fail */
        int value;
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

        is_int(child_start(set, 1000, test_child_fn, &(ChildArg) { .mode = 0 }, sizeof(ChildArg),
                           300 * MSEC, on_test_child, &hang),
               0, "a helper child that hangs is started");
        is_int(child_start(set, 1000, test_child_fn, &(ChildArg) { .mode = 1 }, sizeof(ChildArg),
                           300 * MSEC, on_test_child, &busy),
               -EAGAIN, "a second one for the same uid waits (a quarter of 4 per uid)");
        is_int(child_start(set, 1001, test_child_fn, &(ChildArg) { .mode = 1 }, sizeof(ChildArg),
                           5000 * MSEC, on_test_child, &good),
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

        child_start(set, 1002, test_child_fn, &(ChildArg) { .mode = 2 }, sizeof(ChildArg),
                    5000 * MSEC, on_test_child, &bad);
        ok(RUN_UNTIL(bad.done) && bad.r == -EPROTO && bad.value == 42,
           "a child that fails says so, with its result");
        children_free(set);
        g_source_remove(tick);
}

int main(void) {
        test_children();
        return tap_done();
}
