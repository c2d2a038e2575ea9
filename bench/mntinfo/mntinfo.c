/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mntinfo: what the nsfs ioctl NS_MNT_GET_INFO costs once owner-private mounts are in use
 * (issue 23 item 5).
 *
 *   mntinfo [--mounts 10,1000,10000] [--reps R] [--rep-ms MS] [--hidden | --no-hidden]
 *           [--user-uid U] [--other-uid O] [--cpu C]
 *
 * Series v3's "fs: add MOUNT_ATTR_OWNER_PRIVATE" (kernel-patches/6.12/0009) as first written
 * made NS_MNT_GET_INFO count only the mounts the caller may see: once the attribute was ever
 * set on the system (nsd's start-up probe sets it in a throwaway namespace) every call walked
 * the whole namespace under namespace_sem. The patch now reports ->nr_mounts again (O(1),
 * owner-private mounts counted). This program times the call against namespaces of about N
 * mounts, on whatever kernel it runs on (bench/mntinfo/run: several images side by side).
 *
 * Runs as root; works in a private mount namespace of its own (unshare(CLONE_NEWNS) +
 * MS_REC|MS_PRIVATE), so nobody else's mounts change. First it flips the kernel's
 * "owner-private ever used" state the way nsd's probe does (a tmpfs in a throwaway child
 * namespace made owner-private with fsuid 65533); EINVAL there is a stock kernel: it says
 * "owner_private unsupported" and goes on. Then, for each N, a child process unshares its own
 * namespace and fills it: one tmpfs, N bind mounts of a directory of it (the count NS_MNT_GET_INFO
 * gives root must grow by exactly N), and with --hidden (the default where the attribute is
 * supported) one more tmpfs, owner-private for --other-uid. The children stay alive; the parent
 * hands out one repetition at a time, round robin over every cell (N x caller), so slow drifts
 * of the machine spread over all cells alike. A repetition is ioctl(NS_MNT_GET_INFO) on the
 * child's /proc/self/ns/mnt in a tight loop for about --rep-ms ms.
 * Callers: root (fsuid 0) and "user" (setfsuid(--user-uid) around the loop: the count is what
 * that fsuid may see).
 *
 * Output: "key value" lines on stdout (mntinfo.n<N>.<caller>.<what>). A benchmark, not a test:
 * nothing fails because something was slow; a wrong setup (the count did not grow by N) is an
 * error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel-abi.h"
#include "list.h"
#include "vm-bench.h"

/* nsfs (include/uapi/linux/nsfs.h), Linux 6.12; as kernel-patches/6.12/0010 defines it */
struct mnt_ns_info_v0 {
        uint32_t size;
        uint32_t nr_mounts;
        uint64_t mnt_ns_id;
};
_Static_assert(sizeof(struct mnt_ns_info_v0) == 16, "MNT_NS_INFO_SIZE_VER0 is 16");
#define OP_NS_MNT_GET_INFO _IOR(0xb7, 10, struct mnt_ns_info_v0)

#define MAX_NS 8
#define MAX_MOUNTS 200000
#define PROBE_UID 65533 /* the fsuid of nsd's start-up probe */

enum caller { C_ROOT, C_USER, NCALLERS };
static const char *const caller_name[] = { "root", "user" };

struct ns_set { /* one child: one namespace of about N mounts, both callers */
        int n;
        struct vb_child child;
        uint32_t nr_mounts[NCALLERS]; /* what NS_MNT_GET_INFO said to each caller */
        uint32_t nr_base;             /* root's count before the N bind mounts */
        long iterations[NCALLERS];
        double ns[NCALLERS][VB_MAX_REPS];
};

/* the options of this program; vm-bench.h has --reps, --rep-ms, --other-uid, --cpu */
static unsigned counts[MAX_NS] = { 10, 1000, 10000 };
static size_t ncounts = 3;
static bool arg_hidden, arg_no_hidden;
static uid_t user_uid = 1000;

/* NS_MNT_GET_INFO's count (the namespace's root mount not counted) with the current fsuid */
static uint32_t nr_mounts(int nsfd) {
        struct mnt_ns_info_v0 info = { .size = sizeof(info) };

        if (ioctl(nsfd, OP_NS_MNT_GET_INFO, &info) < 0)
                vb_die("ioctl(NS_MNT_GET_INFO) on /proc/self/ns/mnt%s",
                       errno == ENOTTY || errno == EINVAL ? " (the kernel has none before 6.12)"
                                                          : "");
        return info.nr_mounts;
}

/* nr_mounts() as fsuid @uid */
static uint32_t nr_mounts_as(int nsfd, uid_t uid) {
        uint32_t n;

        setfsuid(uid);
        n = nr_mounts(nsfd);
        setfsuid(0);
        return n;
}

/* @iters calls of NS_MNT_GET_INFO as fsuid @uid; the time they took in ns */
static double timed_calls(int nsfd, uid_t uid, long iters) {
        struct mnt_ns_info_v0 info;
        double t;

        setfsuid(uid);
        t = vb_now_ns();
        for (long k = 0; k < iters; k++) {
                info.size = sizeof(info);
                ioctl(nsfd, OP_NS_MNT_GET_INFO, &info);
        }
        t = vb_now_ns() - t;
        setfsuid(0);
        return t;
}

struct calls {
        int nsfd;
        uid_t uid;
};

/* timed_calls() for vb_calibrate() */
static double timed_calls_of(void *arg, long iters) {
        const struct calls *c = arg;

        return timed_calls(c->nsfd, c->uid, iters);
}

struct caller_reps {
        int nsfd;
        const uid_t *uids;
        const long *iterations;
};

/* One repetition of caller @req (vb_serve()): a warm-up, then the timed calls; total ns */
static double caller_rep(void *arg, int req) {
        const struct caller_reps *x = arg;

        timed_calls(x->nsfd, x->uids[req], x->iterations[req] / 20 + 1); /* warm up */
        return timed_calls(x->nsfd, x->uids[req], x->iterations[req]);
}

struct child_arg {
        struct ns_set *c;
        const char *base;
        int with_hidden;
};

/* The child of one N (vb_spawn()): fills its own namespace, then answers "caller" requests
 * with one repetition each (total ns). Its first message: what it built (struct ns_set's
 * counts). */
static void child(void *arg, int rfd, int wfd) {
        struct ns_set *c = ((struct child_arg *) arg)->c;
        const char *base = ((struct child_arg *) arg)->base;
        int with_hidden = ((struct child_arg *) arg)->with_hidden;
        char dir[PATH_MAX - 64], src[PATH_MAX], p[PATH_MAX];
        uid_t uids[NCALLERS] = { 0, user_uid };
        uint32_t before;
        int nsfd, i, k;

        if (unshare(CLONE_NEWNS))
                vb_die("N=%d: unshare(CLONE_NEWNS)", c->n);
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
                vb_die("N=%d: make / private", c->n);
        nsfd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (nsfd < 0)
                vb_die("N=%d: open /proc/self/ns/mnt", c->n);

        snprintf(dir, sizeof(dir), "%s/n%d", base, c->n);
        vb_mkdir(dir);
        vb_tmpfs(dir, "mode=0755"); /* only in this namespace */
        snprintf(src, sizeof(src), "%s/src", dir);
        vb_mkdir(src);
        snprintf(p, sizeof(p), "%s/t", dir);
        vb_mkdir(p);
        before = nr_mounts(nsfd);
        c->nr_base = before;
        for (i = 0; i < c->n; i++) {
                snprintf(p, sizeof(p), "%s/t/%d", dir, i);
                vb_mkdir(p);
                if (mount(src, p, NULL, MS_BIND, NULL))
                        vb_die("N=%d: bind mount %s on %s (mount %d)", c->n, src, p, i + 1);
        }
        if (nr_mounts(nsfd) - before != (uint32_t) c->n)
                vb_die("N=%d: NS_MNT_GET_INFO's count grew by %u after %d bind mounts, not by %d\n",
                       c->n, nr_mounts(nsfd) - before, c->n, c->n);
        if (with_hidden) {
                snprintf(p, sizeof(p), "%s/hidden", dir);
                vb_mkdir(p);
                vb_private_tmpfs(p, "mode=0755", vb_other_uid);
        }
        for (k = 0; k < NCALLERS; k++) {
                c->nr_mounts[k] = nr_mounts_as(nsfd, uids[k]);
                c->iterations[k] = vb_calibrate(timed_calls_of, &(struct calls) { nsfd, uids[k] },
                                                4, 5, vb_rep_ms);
        }
        if (write(wfd, c, sizeof(*c)) != sizeof(*c))
                vb_die("write");
        vb_serve(rfd, wfd, NCALLERS, caller_rep,
                 &(struct caller_reps) { nsfd, uids, c->iterations });
}

static void help(void) {
        printf("usage: mntinfo [--mounts 10,1000,10000] [--reps R] [--rep-ms MS]\n"
               "               [--hidden | --no-hidden] [--user-uid U] [--other-uid O] "
               "[--cpu C]\n");
}

int main(int argc, char **argv) {
        static const struct bench_option opts[] = {
                { "mounts", BENCH_LIST, counts, MAX_NS, &ncounts, .lo = 1, .hi = MAX_MOUNTS },
                { "hidden", BENCH_FLAG, &arg_hidden },
                { "no-hidden", BENCH_FLAG, &arg_no_hidden },
                { "user-uid", BENCH_UNSIGNED, &user_uid, .lo = LIST_UID_MIN, .hi = LIST_UID_MAX },
        };
        struct ns_set sets[MAX_NS];
        struct vb_children kids = {};
        int nsets = 0, perr, hidden, k, s;
        unsigned r;
        char base[] = "/tmp/mntinfo.XXXXXX";
        double t0;

        vb_init("mntinfo");
        vb_reps = 21;
        vb_rep_ms = 50;
        vb_parse_options(argc, argv, opts, sizeof(opts) / sizeof(opts[0]), help);
        if (arg_hidden && arg_no_hidden)
                vb_die("--hidden or --no-hidden, not both\n");
        hidden = arg_hidden ? 1 : arg_no_hidden ? 0 : -1; /* -1: where supported */
        if (user_uid == vb_other_uid)
                vb_die("--user-uid and --other-uid: two different uids\n");

        vb_start(base, "mode=0755");
        perr = vb_probe_owner_private(base, PROBE_UID);
        if (perr && perr != EINVAL)
                fprintf(stderr,
                        "mntinfo: the owner-private probe failed (%s); going on as if "
                        "the kernel had no MOUNT_ATTR_OWNER_PRIVATE\n",
                        strerror(perr));
        if (hidden < 0)
                hidden = perr == 0;
        else if (hidden && perr)
                vb_die("--hidden: the kernel has no MOUNT_ATTR_OWNER_PRIVATE (mount_setattr: %s)\n",
                       strerror(perr));

        vb_print_machine();
        printf("mntinfo.owner_private %s\n", perr == 0        ? "supported"
                                             : perr == EINVAL ? "unsupported"
                                                              : "probe failed");
        if (perr)
                printf("mntinfo.owner_private_probe %s\n", strerror(perr));
        printf("mntinfo.hidden %s\n", hidden ? "yes" : "no");
        printf("mntinfo.user_uid %u\n", user_uid);
        printf("mntinfo.other_uid %u\n", vb_other_uid);
        printf("mntinfo.reps %u\n", vb_reps);
        printf("mntinfo.rep_ms %u\n", vb_rep_ms);
        fflush(stdout);

        for (size_t j = 0; j < ncounts; j++) {
                struct ns_set *c = &sets[nsets];
                struct child_arg arg = { c, base, hidden };
                struct ns_set built;

                memset(c, 0, sizeof(*c));
                c->n = counts[j];
                t0 = vb_now_ns();
                snprintf(c->child.name, sizeof(c->child.name), "N=%d", c->n);
                vb_spawn(&c->child, child, &arg, &kids);
                /* one setup at a time: their calibrations do not overlap */
                vb_setup(&c->child, &built, sizeof(built));
                memcpy(c->nr_mounts, built.nr_mounts, sizeof(c->nr_mounts));
                memcpy(c->iterations, built.iterations, sizeof(c->iterations));
                c->nr_base = built.nr_base;
                printf("mntinfo.n%d.setup_s %.2f\n", c->n, (vb_now_ns() - t0) / 1e9);
                fflush(stdout);
                nsets++;
        }

        /* round robin: repetition r of every cell before repetition r+1 of any */
        for (r = 0; r < vb_reps; r++)
                for (s = 0; s < nsets; s++)
                        for (k = 0; k < NCALLERS; k++)
                                sets[s].ns[k][r] = vb_ask(&sets[s].child, k, sets[s].iterations[k]);

        for (s = 0; s < nsets; s++) {
                struct ns_set *c = &sets[s];

                vb_reap(&c->child);
                printf("mntinfo.n%d.nr_mounts_base %u\n", c->n, c->nr_base);
                /* what an unfiltered count says: the base, the N bind mounts, the hidden one */
                printf("mntinfo.n%d.nr_mounts_all %u\n", c->n, c->nr_base + c->n + !!hidden);
                for (k = 0; k < NCALLERS; k++) {
                        char key[64];

                        snprintf(key, sizeof(key), "mntinfo.n%d.%s", c->n, caller_name[k]);
                        printf("%s.nr_mounts %u\n", key, c->nr_mounts[k]);
                        vb_print_reps(key, c->ns[k], vb_reps, c->iterations[k], "ns_per_call_p50",
                                      "ns_per_call_min", "ns_per_call_max");
                }
        }
        umount2(base, MNT_DETACH);
        rmdir(base);
        return 0;
}
