/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * helper.c: helper children, see helper.h.
 *
 * Every operation that must happen inside another mount namespace or with another fsuid runs
 * in a short-lived child made with clone(CLONE_VM | CLONE_VFORK | CLONE_FILES), the way
 * glibc's posix_spawn() makes its children:
 *   - CLONE_FILES: the child shares nsd's descriptor table, so a descriptor it opens inside a
 *     namespace (/proc/self/ns/mnt, "/") is nsd's at once: no SCM_RIGHTS round trip, no
 *     /proc/<pid> lookups, nothing to leak when the child dies (the arguments record every
 *     descriptor it opened).
 *   - CLONE_VM | CLONE_VFORK: no copy of nsd's page tables (fork cost grows with nsd's size,
 *     10,000 namespaces make it big); the calling thread sleeps until the child exits, and the
 *     child reports through the argument struct.
 *   - no CLONE_FS: the child has its own root, cwd and fs_struct, so setns()/unshare()/chroot()
 *     there change nothing in nsd (setns(CLONE_NEWNS) requires an unshared fs_struct anyway).
 *   - its own credentials: setfsuid() there changes nothing in nsd.
 *   - exit signal 0: GLib's SIGCHLD handling never sees these children; we reap them with
 *     __WCLONE.
 * The child runs on a stack in the caller's frame, with every signal blocked, and calls only
 * plain system calls (no malloc, no stdio, no logging): it stores the failing step and errno,
 * and the parent logs them.
 */
#include "helper.h"

#include <sched.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

#define CHILD_STACK_SIZE (64 * 1024)

int helper_run(int (*fn)(void *), void *arg, struct helper_status *status) {
        /* The child's stack: the caller sleeps (CLONE_VFORK) while the child uses it. */
        _Alignas(16) char stack[CHILD_STACK_SIZE];
        sigset_t all, saved;
        int wstatus, r;
        pid_t pid;

        status->step = 0;
        status->err = 0;

        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        pid = clone(fn, stack + sizeof stack, CLONE_VM | CLONE_VFORK | CLONE_FILES, arg);
        r = pid < 0 ? -errno : 0;
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (r < 0) {
                status->err = -r;
                return r;
        }

        while (waitpid(pid, &wstatus, __WCLONE) < 0)
                if (errno != EINTR) {
                        status->err = errno;
                        return -status->err;
                }
        if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
                return 0;
        if (status->err == 0) {
                status->step = 0;
                status->err = EPROTO;
        }
        return -status->err;
}
