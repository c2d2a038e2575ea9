/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pathwalk: what F4's check (MOUNT_ATTR_OWNER_PRIVATE, "fs: add MOUNT_ATTR_OWNER_PRIVATE" in kernel-patches/<base>/) costs path walk.
 *
 *   pathwalk [--depths 1,10,40] [--reps R] [--iterations N | --rep-ms MS]
 *            [--walker-uid U] [--other-uid O] [--cpu C] [--cases LIST]
 *
 * Times stat() of a file whose relative path (from the current directory) crosses exactly N
 * mount points, in a tight loop. Runs as root; works in a private mount namespace it creates
 * (unshare(CLONE_NEWNS) + MS_REC|MS_PRIVATE), so nobody else's mounts change. Each case lives
 * in its own child process and its own mount namespace (a copy of the clean one), so the
 * mounts of one case are not in the mount hash of another; the parent hands out one repetition
 * at a time, round robin over every cell (case x walker x N), so slow drifts of the machine
 * (TCG, other load) spread over all cells alike.
 *
 * Cases, for N = each depth; "the path" is n<N>/m/d/d/.../d/f (N-1 times d), crossing N tmpfs
 * mounts A_1 (on n<N>/m) ... A_N (on .../d), f in A_N:
 *   dirs     the same path as plain directories, no mount at all (what the components cost)
 *   none     the N mounts, no attribute anywhere (stock or patched: the unused-attribute cost)
 *   sibling  as none, plus at every level a tmpfs on a sibling directory s (beside d) that is
 *            owner-private for --other-uid: such mounts exist but the walk never meets them
 *   hidden   as none, plus at every level an owner-private tmpfs B_i of --other-uid stacked on
 *            top of A_i: at each crossing the walk enters A_i, finds B_i on A_i's root, runs
 *            the full check (flag set, owner != fsuid) and stays in A_i. N crossings + N
 *            refused checks.
 *   own      every A_i owner-private for --walker-uid, walked by that uid: each crossing runs
 *            the check and passes (fsuid == owner).
 * Walkers: root (fsuid 0) and --walker-uid (setresuid in the case's child, after its setup).
 * Cells: dirs/root, none/root, none/user, sibling/root, hidden/root, hidden/user, own/user.
 * Where mount_setattr(MOUNT_ATTR_OWNER_PRIVATE) gets EINVAL (a stock kernel) only dirs and none
 * run, and the output says so.
 *
 * Output: "key value" lines on stdout (pathwalk.<case>.<walker>.n<N>.<what>). A benchmark, not
 * a test: nothing fails because something was slow; a wrong setup (the walker does not reach
 * the file it should) is an error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel-abi.h"
#include "list.h"
#include "vm-bench.h"

#define MAX_DEPTHS 8
#define MAX_DEPTH 200

enum kase { K_DIRS, K_NONE, K_SIBLING, K_HIDDEN, K_OWN };
static const char *const kase_name[] = { "dirs", "none", "sibling", "hidden", "own" };

struct cell_set { /* one child: one case, one walker, every depth */
        enum kase kase;
        int user; /* walker: 0 root, 1 --walker-uid */
        struct vb_child child;
        long iterations[MAX_DEPTHS];
        double ns[MAX_DEPTHS][VB_MAX_REPS];
};

static const struct {
        enum kase kase;
        int user;
} cells[] = {
        { K_DIRS, 0 },   { K_NONE, 0 },   { K_NONE, 1 }, { K_SIBLING, 0 },
        { K_HIDDEN, 0 }, { K_HIDDEN, 1 }, { K_OWN, 1 },
};
#define NCELLS (sizeof(cells) / sizeof(cells[0]))

/* the options of this program; vm-bench.h has --reps, --rep-ms, --other-uid, --cpu */
static unsigned depths[MAX_DEPTHS] = { 1, 10, 40 };
static size_t ndepths = 3;
static unsigned fixed_iterations; /* 0: calibrate to --rep-ms */
static uid_t walker_uid = 1000;
static unsigned case_mask = 0x1f;

/* The path of level i (1..n) as seen from the case's base: n<N>/m, n<N>/m/d, ... */
static void level_path(char *buf, size_t len, int n, int i) {
        int k, off = snprintf(buf, len, "n%d/m", n);

        for (k = 2; k <= i && off < (int) len; k++)
                off += snprintf(buf + off, len - off, "/d");
}

/* Builds the chain for depth @n in the current directory. Returns the walked file's path in
 * @file and the device the walker must find it on in @dev. */
static void build(enum kase kase, int n, char *file, size_t flen, dev_t *dev) {
        char p[PATH_MAX - 16], q[PATH_MAX];
        int fds[MAX_DEPTH + 1], i, fd;
        struct stat st;

        snprintf(p, sizeof(p), "n%d", n);
        vb_mkdir(p);
        for (i = 1; i <= n; i++) {
                level_path(p, sizeof(p), n, i);
                vb_mkdir(p); /* the mount point in level i-1 */
                fds[i] = -1;
                if (kase != K_DIRS)
                        vb_tmpfs(p, "mode=0755,size=64k"); /* A_i */
                if (kase == K_OWN)
                        fds[i] = vb_open_path(p); /* set at the end, see below */
                if (kase == K_SIBLING) {
                        snprintf(q, sizeof(q), "%s/s", p);
                        vb_mkdir(q);
                        vb_private_tmpfs(q, "mode=0755,size=64k", vb_other_uid);
                }
                if (i < n) {
                        snprintf(q, sizeof(q), "%s/d", p);
                        vb_mkdir(q);
                } else {
                        snprintf(q, sizeof(q), "%s/f", p);
                        fd = open(q, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
                        if (fd < 0)
                                vb_die("create %s", q);
                        close(fd);
                        snprintf(file, flen, "%s", q);
                        if (stat(p, &st))
                                vb_die("stat %s", p);
                        *dev = st.st_dev;
                }
                if (kase == K_HIDDEN) {
                        /* B_i on top of A_i, private for another uid at once: from now on
                         * root's walk of p (and of the next levels) stays in A_i. */
                        vb_private_tmpfs(p, "mode=0755,size=64k", vb_other_uid);
                }
        }
        if (kase == K_OWN) {
                /* only now: once A_i is the walker's, root no longer sees into it */
                for (i = 1; i <= n; i++) {
                        if (vb_set_owner_private(fds[i], walker_uid))
                                vb_die("mount_setattr(OWNER_PRIVATE) of level %d as fsuid %u", i,
                                       walker_uid);
                        close(fds[i]);
                }
                /* root is another fsuid: the file must be out of its reach now */
                if (stat(file, &st) == 0 || errno != ENOENT)
                        vb_die("own, N=%d: root still reaches %s (attribute not in effect?)\n", n,
                               file);
        }
}

/* @iters stat() calls of the file @arg names; the time they took in ns */
static double timed_stats(void *arg, long iters) {
        const char *file = arg;
        struct stat st;
        double t;

        t = vb_now_ns();
        for (long k = 0; k < iters; k++)
                stat(file, &st);
        return vb_now_ns() - t;
}

struct depth_reps {
        char (*files)[PATH_MAX];
        const long *iters;
};

/* One repetition of depth index @req (vb_serve()): a warm-up, then the timed stat() calls;
 * total ns */
static double depth_rep(void *arg, int req) {
        const struct depth_reps *x = arg;

        timed_stats(x->files[req], 1000); /* warm up: caches, branch predictors */
        return timed_stats(x->files[req], x->iters[req]);
}

/* The child of one case x walker: builds every depth in its own mount namespace, becomes the
 * walker, then answers "depth index" requests with one repetition each (iterations, total ns). */
struct child_arg {
        struct cell_set *c;
        const char *base;
};

/* One cell set's child (vb_spawn()): builds its chains, then answers the parent's requests. */
static void child(void *arg, int rfd, int wfd) {
        struct cell_set *c = ((struct child_arg *) arg)->c;
        const char *base = ((struct child_arg *) arg)->base;

        char dir[PATH_MAX], files[MAX_DEPTHS][PATH_MAX];
        dev_t devs[MAX_DEPTHS];
        long iters[MAX_DEPTHS];
        struct stat st;
        size_t j;

        if (unshare(CLONE_NEWNS))
                vb_die("unshare(CLONE_NEWNS)");
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
                vb_die("make / private");
        snprintf(dir, sizeof(dir), "%s/%s-%s", base, kase_name[c->kase], c->user ? "user" : "root");
        vb_mkdir(dir);
        vb_tmpfs(
                dir,
                "mode=0755,size=64k"); /* the case's base: walks start here, below its mount point */
        if (chdir(dir))
                vb_die("chdir %s", dir);
        for (j = 0; j < ndepths; j++)
                build(c->kase, depths[j], files[j], sizeof(files[j]), &devs[j]);

        if (c->user) {
                if (setgroups(0, NULL) || setresgid(walker_uid, walker_uid, walker_uid) ||
                    setresuid(walker_uid, walker_uid, walker_uid))
                        vb_die("become uid %u", walker_uid);
        }
        for (j = 0; j < ndepths; j++) {
                if (stat(files[j], &st))
                        vb_die("%s/%s, N=%u: the walker (uid %u) cannot stat %s",
                               kase_name[c->kase], c->user ? "user" : "root", depths[j], geteuid(),
                               files[j]);
                if (c->kase != K_DIRS && st.st_dev != devs[j])
                        vb_die("%s, N=%u: %s is on the wrong mount\n", kase_name[c->kase],
                               depths[j], files[j]);
                iters[j] = fixed_iterations
                                   ? fixed_iterations
                                   : vb_calibrate(timed_stats, files[j], 64, 100, vb_rep_ms);
        }
        if (write(wfd, iters, sizeof(iters)) != sizeof(iters))
                vb_die("write");
        vb_serve(rfd, wfd, ndepths, depth_rep, &(struct depth_reps) { files, iters });
}

static void help(void) {
        printf("usage: pathwalk [--depths 1,10,40] [--reps R] [--iterations N | --rep-ms MS]\n"
               "                [--walker-uid U] [--other-uid O] [--cpu C]\n"
               "                [--cases dirs,none,sibling,hidden,own]\n");
}

/* --cases: the names of kase_name[], comma separated */
static void cases_option(const char *arg) {
        char *list = strdup(arg), *tok, *save;
        int j;

        if (!list)
                vb_die("strdup");
        case_mask = 0;
        for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                for (j = 0; j <= K_OWN && strcmp(tok, kase_name[j]); j++)
                        ;
                if (j > K_OWN)
                        vb_die("--cases: unknown case '%s'\n", tok);
                case_mask |= 1u << j;
        }
        free(list);
}

int main(int argc, char **argv) {
        static const struct bench_option opts[] = {
                { "depths", BENCH_LIST, depths, MAX_DEPTHS, &ndepths, .lo = 1, .hi = MAX_DEPTH },
                /* 0: calibrated to --rep-ms; at most what a long holds anywhere */
                { "iterations", BENCH_UNSIGNED, &fixed_iterations, .lo = 0, .hi = INT_MAX },
                { "walker-uid", BENCH_UNSIGNED, &walker_uid, .lo = LIST_UID_MIN,
                  .hi = LIST_UID_MAX },
                { "cases", BENCH_CALL, .call = cases_option },
        };
        struct cell_set sets[NCELLS];
        struct vb_children kids = {};
        int nsets = 0, supported, perr = 0, s;
        unsigned r;
        size_t j;
        char base[] = "/tmp/pathwalk.XXXXXX";

        vb_init("pathwalk");
        vb_reps = 7;
        vb_rep_ms = 200;
        vb_parse_options(argc, argv, opts, sizeof(opts) / sizeof(opts[0]), help);
        if (walker_uid == vb_other_uid)
                vb_die("--walker-uid and --other-uid: two different uids\n");

        vb_start(base, "mode=0755,size=64k");
        perr = vb_probe_owner_private(base, vb_other_uid);
        supported = perr == 0;

        vb_print_machine();
        printf("pathwalk.owner_private %s\n", supported ? "supported"
                                              : perr == EINVAL
                                                      ? "unsupported (mount_setattr: EINVAL)"
                                                      : "probe failed");
        if (!supported)
                printf("pathwalk.note only dirs and none run: the kernel lacks "
                       "MOUNT_ATTR_OWNER_PRIVATE"
                       " (mount_setattr gave %s)\n",
                       strerror(perr));
        printf("pathwalk.walker_uid %u\n", walker_uid);
        printf("pathwalk.other_uid %u\n", vb_other_uid);
        printf("pathwalk.reps %u\n", vb_reps);
        if (fixed_iterations)
                printf("pathwalk.iterations %u\n", fixed_iterations);
        else
                printf("pathwalk.rep_ms %u\n", vb_rep_ms);
        fflush(stdout);

        for (size_t k = 0; k < NCELLS; k++) {
                struct cell_set *c = &sets[nsets];
                struct child_arg arg = { c, base };

                if (!(case_mask & (1u << cells[k].kase)))
                        continue;
                if (!supported && cells[k].kase != K_DIRS && cells[k].kase != K_NONE)
                        continue;
                memset(c, 0, sizeof(*c));
                c->kase = cells[k].kase;
                c->user = cells[k].user;
                snprintf(c->child.name, sizeof(c->child.name), "%s/%s", kase_name[c->kase],
                         c->user ? "user" : "root");
                vb_spawn(&c->child, child, &arg, &kids);
                /* one setup at a time: their calibrations do not overlap */
                vb_setup(&c->child, c->iterations, sizeof(c->iterations));
                nsets++;
        }

        /* round robin: repetition r of every cell before repetition r+1 of any */
        for (r = 0; r < vb_reps; r++)
                for (j = 0; j < ndepths; j++)
                        for (s = 0; s < nsets; s++)
                                sets[s].ns[j][r] = vb_ask(&sets[s].child, (int) j,
                                                          sets[s].iterations[j]);

        for (s = 0; s < nsets; s++) {
                struct cell_set *c = &sets[s];

                vb_reap(&c->child);
                for (j = 0; j < ndepths; j++) {
                        char key[128];

                        snprintf(key, sizeof(key), "pathwalk.%s.%s.n%u", kase_name[c->kase],
                                 c->user ? "user" : "root", depths[j]);
                        vb_print_reps(key, c->ns[j], vb_reps, c->iterations[j], "ns_per_op", "min",
                                      "max");
                }
        }
        umount2(base, MNT_DETACH);
        rmdir(base);
        return 0;
}
