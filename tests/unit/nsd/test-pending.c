/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-pending: the one adoption path of kept namespaces (nsd/store/pending.c), here from the
 * fd store alone (no pin store; pins are the fault suite's, which needs root and a private
 * mount namespace): what the service manager passed back as ns-<uid> is taken at start and
 * entered by one helper; a descriptor that is no mount namespace is dropped from the store
 * (not retried); as root, this test's own namespace is adopted, handed to the callback as
 * from the fd store; names that are not ns-<uid> are left to the store; nothing pending
 * means no retry. TAP.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "store/fdstore.h"
#include "store/pending.h"
#include "store/userns.h"
#include "tap.h"

static struct {
        unsigned n;
        uid_t uid;
        PendingSource from;
        bool adopted, pinned;
        uint64_t inode;
} got;

static void on_adopt(UserNs *ns, PendingSource from, void *userdata) {
        got.n++;
        got.uid = ns->uid;
        got.from = from;
        got.adopted = ns->adopted;
        got.pinned = ns->pinned;
        got.inode = ns->ns_inode;
        userns_free(ns);
}

int main(void) {
        bool root = geteuid() == 0;
        FdStore *fs = fdstore_new(false);
        uint64_t delay = 1;
        struct stat st;
        unsigned n;
        Pending *p;

        log_setup(LOG_TARGET_STDERR, LOG_INFO);
        fdstore_add_passed(fs, open("/dev/null", O_RDONLY | O_CLOEXEC), "ns-5000");
        fdstore_add_passed(fs, open("/dev/null", O_RDONLY | O_CLOEXEC), "ns-x");
        if (root) {
                fdstore_add_passed(fs, open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC), "ns-5001");
                fdstore_add_passed(fs, open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC), "ns-5001");
        }
        p = pending_new(NULL, fs);
        ok(pending_store_ready(p), "without a pin store, the store is ready");

        n = pending_start(p, on_adopt, NULL);
        ok(!pending_contains(p, 5000) && pending_count(p) == 0,
           "a descriptor that is no mount namespace is not pending: dropped, not retried");
        ok(fdstore_is_passed(fs, "ns-x"), "a name that is no ns-<uid> is left to the store");
        if (root) {
                is_int(n, 1, "this test's namespace, passed back as ns-5001, is adopted");
                ok(got.n == 1 && got.uid == 5001 && got.from == PENDING_FROM_FDSTORE &&
                           got.adopted && !got.pinned,
                   "... handed to the callback once, from the fd store, adopted, not pinned");
                ok(stat("/proc/self/ns/mnt", &st) == 0 && got.inode == (uint64_t) st.st_ino,
                   "... the very namespace");
                ok(!fdstore_is_passed(fs, "ns-5001"), "... and both of its copies were taken");
        } else {
                is_int(n, 0, "nothing adopted");
                for (int i = 0; i < 3; i++)
                        tap_skip("adopting this test's own namespace needs root (setns)");
        }
        pending_retry_due(p, &delay);
        is_int(delay, 0, "nothing pending: no retry due");

        pending_free(p);
        fdstore_free(fs);
        return tap_done();
}
