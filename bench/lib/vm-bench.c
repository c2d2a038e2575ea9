/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench/lib/vm-bench: see vm-bench.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "vm-bench.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "list.h"

#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif

static const char *vb_prog = "vm-bench";

void vb_init(const char *prog) {
        vb_prog = prog;
}

unsigned vb_reps = 7, vb_rep_ms = 200;
uid_t vb_other_uid = 2000;
int vb_cpu = -1;

static void cpu_option(const char *arg) {
        /* what vb_start() can put in its cpu_set_t */
        vb_cpu = (int) list_uint("--cpu", arg, 0, CPU_SETSIZE - 1);
}

void vb_parse_options(int argc, char *argv[], const struct bench_option *own, size_t n_own,
                      void (*help)(void)) {
        static const struct bench_option common[] = {
                { "reps", BENCH_UNSIGNED, &vb_reps, .lo = 1, .hi = VB_MAX_REPS },
                { "rep-ms", BENCH_UNSIGNED, &vb_rep_ms, .lo = 1, .hi = VB_MAX_REP_MS },
                { "other-uid", BENCH_UNSIGNED, &vb_other_uid, .lo = LIST_UID_MIN,
                  .hi = LIST_UID_MAX },
                { "cpu", BENCH_CALL, .call = cpu_option },
        };
        int first = options_parse(argc, argv, common, sizeof(common) / sizeof(common[0]), own,
                                  n_own, false, help);

        if (first < argc)
                vb_die("unexpected argument '%s'\n", argv[first]);
}

void vb_die(const char *fmt, ...) {
        va_list ap;
        int e = errno;

        fprintf(stderr, "%s: ", vb_prog);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        if (e && fmt[strlen(fmt) - 1] != '\n')
                fprintf(stderr, ": %s", strerror(e));
        fprintf(stderr, "\n");
        exit(1);
}

double vb_now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e9 + (double) ts.tv_nsec;
}

int vb_cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

void vb_mkdir(const char *p) {
        if (mkdir(p, 0755) && errno != EEXIST)
                vb_die("mkdir %s", p);
}

void vb_tmpfs(const char *p, const char *opts) {
        if (mount(vb_prog, p, "tmpfs", 0, opts))
                vb_die("mount tmpfs on %s", p);
}

int vb_open_path(const char *p) {
        int fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0)
                vb_die("open %s", p);
        return fd;
}

int vb_set_owner_private(int fd, uid_t owner) {
        struct mount_attr_v0 attr = { .attr_set = MOUNT_ATTR_OWNER_PRIVATE };
        int r, e;

        setfsuid(owner);
        r = (int) syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &attr, sizeof(attr));
        e = errno;
        setfsuid(0);
        errno = e;
        return r;
}

void vb_private_tmpfs(const char *p, const char *opts, uid_t owner) {
        int fd;

        vb_tmpfs(p, opts);
        fd = vb_open_path(p);
        if (vb_set_owner_private(fd, owner))
                vb_die("mount_setattr(OWNER_PRIVATE) on %s as fsuid %u", p, owner);
        close(fd);
}

long vb_calibrate(double (*timed)(void *arg, long iters), void *arg, long start, long floor,
                  long rep_ms) {
        long iters = start;
        double t;

        for (;;) {
                t = timed(arg, iters);
                if (t > 20e6 || iters > (1L << 30))
                        break;
                iters *= 2;
        }
        iters = (long) ((double) iters * (double) rep_ms * 1e6 / t);
        return iters < floor ? floor : iters;
}

int vb_probe_owner_private(const char *base, uid_t owner) {
        char p[PATH_MAX];
        int fd, r, status;
        pid_t pid;

        /* in a child, in a namespace of its own: nothing stays behind */
        pid = fork();
        if (pid < 0)
                vb_die("fork");
        if (pid == 0) {
                if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
                        _exit(100);
                snprintf(p, sizeof(p), "%s/probe", base);
                vb_mkdir(p);
                vb_tmpfs(p, "mode=0755");
                fd = vb_open_path(p);
                r = vb_set_owner_private(fd, owner);
                _exit(r == 0 ? 0 : errno > 0 && errno < 100 ? errno : 99);
        }
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
                vb_die("the probe's child failed\n");
        if (WEXITSTATUS(status) == 100)
                vb_die("the probe's child could not make a mount namespace of its own\n");
        return WEXITSTATUS(status);
}

void vb_start(char *base, const char *opts) {
        cpu_set_t set;

        if (geteuid() != 0)
                vb_die("needs root (it mounts, in a mount namespace of its own)\n");
        if (vb_cpu < 0)
                vb_cpu = (int) sysconf(_SC_NPROCESSORS_ONLN) - 1;
        CPU_ZERO(&set);
        CPU_SET(vb_cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set))
                vb_cpu = -1;

        if (unshare(CLONE_NEWNS))
                vb_die("unshare(CLONE_NEWNS)");
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
                vb_die("make / private");
        if (!mkdtemp(base))
                vb_die("mkdtemp");
        vb_tmpfs(base, opts);
        if (chmod(base, 0755))
                vb_die("chmod");
}

void vb_print_machine(void) {
        struct utsname u;

        uname(&u);
        printf("%s.kernel %s\n", vb_prog, u.release);
        printf("%s.cpus %ld\n", vb_prog, sysconf(_SC_NPROCESSORS_ONLN));
        printf("%s.pinned_cpu %d\n", vb_prog, vb_cpu);
}

void vb_spawn(struct vb_child *child, void (*run)(void *arg, int rfd, int wfd), void *arg,
              struct vb_children *kids) {
        int down[2], up[2];

        if (kids->n_fds + 2 > 2 * VB_MAX_CHILDREN)
                vb_die("more than %d children\n", VB_MAX_CHILDREN);
        if (pipe2(down, O_CLOEXEC) || pipe2(up, O_CLOEXEC))
                vb_die("pipe");
        child->pid = fork();
        if (child->pid < 0)
                vb_die("fork");
        if (child->pid == 0) {
                close(down[1]);
                close(up[0]);
                for (size_t i = 0; i < kids->n_fds; i++)
                        close(kids->fds[i]);
                run(arg, down[0], up[1]);
                _exit(0);
        }
        close(down[0]);
        close(up[1]);
        child->to_child = kids->fds[kids->n_fds++] = down[1];
        child->from_child = kids->fds[kids->n_fds++] = up[0];
}

void vb_setup(const struct vb_child *child, void *buf, size_t size) {
        if (read(child->from_child, buf, size) != (ssize_t) size)
                vb_die("the %s child failed in its setup\n", child->name);
}

void vb_serve(int rfd, int wfd, int n_req, double (*rep)(void *arg, int req), void *arg) {
        for (;;) {
                int req;
                double t;

                if (read(rfd, &req, sizeof(req)) != sizeof(req) || req < 0 || req >= n_req)
                        return;
                t = rep(arg, req);
                if (write(wfd, &t, sizeof(t)) != sizeof(t))
                        vb_die("write");
        }
}

double vb_ask(const struct vb_child *child, int req, long iterations) {
        double t;

        if (write(child->to_child, &req, sizeof(req)) != sizeof(req) ||
            read(child->from_child, &t, sizeof(t)) != sizeof(t))
                vb_die("the %s child died\n", child->name);
        return t / (double) iterations;
}

void vb_reap(struct vb_child *child) {
        close(child->to_child);
        waitpid(child->pid, NULL, 0);
}

void vb_print_reps(const char *key, const double *v, unsigned reps, long iterations,
                   const char *p50_name, const char *min_name, const char *max_name) {
        double w[VB_MAX_REPS], med;

        printf("%s.samples", key);
        for (unsigned r = 0; r < reps; r++)
                printf("%s%.1f", r ? "," : " ", v[r]);
        printf("\n");
        memcpy(w, v, sizeof(double) * reps);
        qsort(w, reps, sizeof(double), vb_cmp_double);
        med = reps % 2 ? w[reps / 2] : (w[reps / 2 - 1] + w[reps / 2]) / 2;
        printf("%s.%s %.1f\n", key, p50_name, med);
        printf("%s.%s %.1f\n", key, min_name, w[0]);
        printf("%s.%s %.1f\n", key, max_name, w[reps - 1]);
        printf("%s.spread_pct %.1f\n", key, 100.0 * (w[reps - 1] - w[0]) / med);
        printf("%s.iterations %ld\n", key, iterations);
}
