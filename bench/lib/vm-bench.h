/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/lib/vm-bench: what the benchmarks that run as root inside the test VM share (pathwalk,
 * mntinfo): one way to die, a clock, the mount steps they take in a namespace of their own,
 * and MOUNT_ATTR_OWNER_PRIVATE set with a given owner, the options they both have. Plain C on
 * libc only (no libnsclient: these programs talk to the kernel, not to nsd).
 */
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "kernel-abi.h"
#include "options.h"

struct mount_attr_v0 {
        uint64_t attr_set, attr_clr, propagation, userns_fd;
};

/* The program's name for vb_die() and the tmpfs mounts' source; call first. */
void vb_init(const char *prog);

/* The largest --reps of the programs. */
#define VB_MAX_REPS 101
/* The largest --rep-ms of the programs: a minute per repetition. */
#define VB_MAX_REP_MS 60000

/* The options both programs have; a program sets its own defaults of vb_reps and vb_rep_ms
 * (else 7 and 200) before vb_parse_options(). */
extern unsigned vb_reps;   /* --reps: the repetitions of every cell, 1..VB_MAX_REPS */
extern unsigned vb_rep_ms; /* --rep-ms: about how long one repetition lasts, 1..VB_MAX_REP_MS */
extern uid_t vb_other_uid; /* --other-uid: whose owner-private mounts are in the way (2000) */
extern int vb_cpu;         /* --cpu: the CPU vb_start() pins to; -1 (default): the last one */

/* The options of argv: those above, -h/--help (help(), exit 0) and the program's own (n_own
 * of them, options.h); an unknown option or a bad value exits 2 with a message, an operand
 * vb_die()s. */
void vb_parse_options(int argc, char *argv[], const struct bench_option *own, size_t n_own,
                      void (*help)(void));

/* "<prog>: <message>[: <errno text>]" on stderr, exit 1; a message ending in '\n' gets no errno
 * text (for failures errno does not describe). */
__attribute__((format(printf, 1, 2), noreturn)) void vb_die(const char *fmt, ...);

/* CLOCK_MONOTONIC in ns. */
double vb_now_ns(void);

/* qsort() order of doubles. */
int vb_cmp_double(const void *a, const void *b);

/* mkdir (an existing folder is fine), a tmpfs with @opts, an O_PATH descriptor: or vb_die(). */
void vb_mkdir(const char *p);
void vb_tmpfs(const char *p, const char *opts);
int vb_open_path(const char *p);

/* mount_setattr(fd, "", AT_EMPTY_PATH, OWNER_PRIVATE) with fsuid @owner, who then owns the
 * mount; fsuid 0 again after it. 0, or -1 with errno. */
int vb_set_owner_private(int fd, uid_t owner);

/* A tmpfs with @opts on @p, made owner-private for @owner before anything walks into it; or
 * vb_die(). */
void vb_private_tmpfs(const char *p, const char *opts, uid_t owner);

/* Iterations of @timed(@arg, iters) (which returns the ns they took) that last about @rep_ms:
 * doubled from @start until a run takes 20 ms, then scaled; at least @floor. */
long vb_calibrate(double (*timed)(void *arg, long iters), void *arg, long start, long floor,
                  long rep_ms);

/* As nsd's start-up probe: in a child, in a mount namespace of its own, a tmpfs on @base/probe
 * made owner-private for @owner. On the patched kernel this sets "owner-private ever used" for
 * good. 0 (supported) or the errno of mount_setattr() (EINVAL: a kernel without it). */
int vb_probe_owner_private(const char *base, uid_t owner);

/* The start of a run, after the options: root, or vb_die(); this process pinned to CPU vb_cpu
 * (the last one when it is -1; vb_cpu is -1 when that failed: vb_print_machine() says so, not
 * fatal); a mount namespace of its own (/ made private: this machine's, or the VM's, mounts
 * never change), and in it a tmpfs with @opts on @base, a mkdtemp() template, mode 0755. */
void vb_start(char *base, const char *opts);

/* "<prog>.kernel", ".cpus" and ".pinned_cpu" lines on stdout. */
void vb_print_machine(void);

/* The parent's ends of the pipes of the children vb_spawn() made so far. Zero-initialise it. */
#define VB_MAX_CHILDREN 16
struct vb_children {
        int fds[2 * VB_MAX_CHILDREN];
        size_t n_fds;
};

/* One child of vb_spawn(), as the parent sees it. */
struct vb_child {
        char name[48]; /* for messages: "the <name> child died" ("N=10", "hidden/user") */
        pid_t pid;
        int to_child, from_child; /* the parent's ends of its pipes */
};

/* A child that runs @run(@arg, rfd, wfd) and exits 0: the parent writes requests to
 * @child->to_child and reads answers from @child->from_child (@child's name is the caller's).
 * The parent's ends for the earlier children in @kids are closed in the child, or a sibling
 * would never see its end of file; the new ones are added to @kids. */
void vb_spawn(struct vb_child *child, void (*run)(void *arg, int rfd, int wfd), void *arg,
              struct vb_children *kids);

/* The parent's side: the first message of @child, what it set up (@size bytes into @buf); or
 * vb_die(). */
void vb_setup(const struct vb_child *child, void *buf, size_t size);

/* A spawned child's loop: reads requests (ints 0..@n_req-1) from @rfd and answers each on @wfd
 * with @rep(@arg, request), one repetition (a double, the ns it took); returns at end of file
 * or at a request out of range. */
void vb_serve(int rfd, int wfd, int n_req, double (*rep)(void *arg, int req), void *arg);

/* The parent's side: request @req of @child, one repetition of @iterations operations; the ns
 * of one operation, or vb_die() when the child is gone. */
double vb_ask(const struct vb_child *child, int req, long iterations);

/* The end of @child: end of file on its requests, then wait for it to exit. */
void vb_reap(struct vb_child *child);

/* The repetitions of one cell, v[0..reps) (reps at most VB_MAX_REPS): "<key>.samples a,b,...",
 * then the median, the minimum and the maximum under the names given, "<key>.spread_pct"
 * ((max - min) / median) and "<key>.iterations" (those of one repetition). */
void vb_print_reps(const char *key, const double *v, unsigned reps, long iterations,
                   const char *p50_name, const char *min_name, const char *max_name);
