/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * child.h: helper children that nsd's loop watches instead of waiting for.
 *
 * helper.h's children are vfork()ed: nsd sleeps until they exit, which is right for work
 * that cannot hang (entering a namespace, reading a mount table). A path walk through a
 * user's mounts can hang for good (a FUSE daemon that never answers a lookup), so those
 * run here: a forked child (its own copy of nsd's memory; it closes every descriptor but
 * its reply socket first, so a child stuck in the kernel holds nothing of nsd's), watched
 * through a pidfd on the loop, with a deadline. At the deadline the child is sent SIGKILL
 * and the caller gets -ETIMEDOUT at once; a child stuck in an uninterruptible FUSE request
 * dies only when the request ends, and counts against the bound until then.
 *
 * Bounds (no user's hung FUSE daemon takes walk capacity from another user):
 *   - running children (not yet past their deadline): at most MaxPathWalks= in all, and a
 *     quarter of that (at least one) per uid. A user's walks (CHILD_USER: a HIDE an
 *     unprivileged caller asked for) leave a reserve of a quarter of MaxPathWalks= (at least
 *     one when MaxPathWalks= is 2 or more) free, which only CHILD_SYSTEM walks take: root's
 *     requests, mode private's watch, a namespace's setup;
 *   - stuck children (killed at their deadline, still in the kernel, e.g. in a LOOKUP a
 *     FUSE daemon read and never answers) no longer count against MaxPathWalks=, only
 *     against their own uid: at most a quarter of MaxPathWalks= (at least one) per uid, and
 *     while a uid has any, its CHILD_USER walks are refused. So the most a user holds is
 *     that many processes of its own, and what it blocks is its own next walk.
 * Everything here runs on the loop.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/nsd-forward.h"

/* Runs in the child: plain system calls only (no malloc, no stdio, no logging, no locks:
 * nsd has other threads). It fills *arg (its own copy) and may set *ret_fd to a descriptor
 * to hand back. Its return value is the child's exit status. */
typedef int (*ChildFn)(void *arg, int *ret_fd);

/* In the loop: r is 0 (the child exited 0), -EPROTO (it exited non-zero: see result), or
 * -ETIMEDOUT, -ECHILD (killed otherwise), -ECANCELED (nsd stops). result: the child's copy
 * of arg (arg_size bytes) when it sent one, else NULL; fd: the descriptor it handed back
 * (the callee owns it) or -1. */
typedef void (*ChildDone)(int r, const void *result, int fd, void *userdata);

/* Whose walk it is. */
typedef enum ChildClass {
        CHILD_USER,   /* an unprivileged caller's request: no reserve, none while stuck */
        CHILD_SYSTEM, /* root's request or nsd's own work: may take the reserve */
} ChildClass;

Children *children_new(unsigned max);
/* Stop watching: running children are killed, callbacks get -ECANCELED. */
void children_free(Children *set);
void children_set_max(Children *set, unsigned max);
unsigned children_alive(const Children *set);
/* Children past their deadline that have not ended yet: of uid, or of every uid for
 * (uid_t) -1. */
unsigned children_stuck(const Children *set, uid_t uid);
/* fn(userdata) runs on the loop whenever a running slot frees (a child ended or was killed
 * at its deadline) or a stuck child ended: for whoever waits to start one (mode private's
 * watch). One callback per set; NULL removes it. */
void children_set_on_free(Children *set, void (*fn)(void *userdata), void *userdata);

/* Start fn(copy of arg) in a child for uid's sake, as cls. Returns 0 (done is called later,
 * on the loop, exactly once), -EAGAIN when the bounds are reached (children_stuck() tells
 * whether uid's stuck children are the reason), -errno when fork failed. */
int child_start(Children *set, uid_t uid, ChildClass cls, ChildFn fn, const void *arg,
                size_t arg_size, uint64_t timeout_usec, ChildDone done, void *userdata);
/* child_start(), and the child keeps these descriptors of nsd's open, at the same numbers
 * (still O_CLOEXEC): at most CHILD_MAX_KEEP. */
#define CHILD_MAX_KEEP 4
int child_start_keep(Children *set, uid_t uid, ChildClass cls, ChildFn fn, const void *arg,
                     size_t arg_size, const int *keep, size_t n_keep, uint64_t timeout_usec,
                     ChildDone done, void *userdata);
