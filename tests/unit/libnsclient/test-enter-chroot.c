/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-enter-chroot: nsc_enter_chroot() enters all or nothing. libnsclient.c is linked into
 * this test with -Wl,--wrap for setns, open64, fchdir, chroot and chdir, so that each step can
 * be made to fail (the Nth call of a function fails with a chosen errno); after every
 * failure the process's root and working directory must be what they were. Each case runs
 * in a forked child (chroot is per process). The "namespace" is a folder of ours in the
 * current namespace, so a successful entry changes nothing outside the child.
 *
 * As root every case runs; as anyone else chroot() fails by itself (EPERM) and the cases
 * that need it to succeed are skipped. TAP.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nsclient.h"
#include "tap.h"

/* ---- the seam -------------------------------------------------------------------------- */

enum fn { FN_SETNS, FN_OPEN, FN_FCHDIR, FN_CHROOT, FN_CHDIR, _FN_MAX };

struct fail {
        enum fn fn;
        unsigned nth; /* which call fails, 1-based; 0: none */
        int error;
};

/* the failures of the case at hand */
#define FAILS_MAX 3
static struct fail fail_spec[FAILS_MAX];
static unsigned calls[_FN_MAX];

static int seam(enum fn f) {
        calls[f]++;
        for (size_t i = 0; i < FAILS_MAX; i++)
                if (fail_spec[i].nth && fail_spec[i].fn == f && fail_spec[i].nth == calls[f]) {
                        errno = fail_spec[i].error;
                        return -1;
                }
        return 0;
}

int __real_setns(int fd, int nstype);
int __real_open64(const char *path, int flags, ...);
int __real_fchdir(int fd);
int __real_chroot(const char *path);
int __real_chdir(const char *path);
int __wrap_setns(int fd, int nstype);
int __wrap_open64(const char *path, int flags, ...);
int __wrap_fchdir(int fd);
int __wrap_chroot(const char *path);
int __wrap_chdir(const char *path);

int __wrap_setns(int fd, int nstype) {
        return seam(FN_SETNS) < 0 ? -1 : __real_setns(fd, nstype);
}
/* with _FILE_OFFSET_BITS=64 (meson's default) glibc's headers call open() open64() */
int __wrap_open64(const char *path, int flags, ...) {
        mode_t mode = 0;

        if (flags & (O_CREAT | O_TMPFILE)) {
                va_list ap;

                va_start(ap, flags);
                mode = va_arg(ap, mode_t);
                va_end(ap);
        }
        return seam(FN_OPEN) < 0 ? -1 : __real_open64(path, flags, mode);
}
int __wrap_fchdir(int fd) {
        return seam(FN_FCHDIR) < 0 ? -1 : __real_fchdir(fd);
}
int __wrap_chroot(const char *path) {
        return seam(FN_CHROOT) < 0 ? -1 : __real_chroot(path);
}
int __wrap_chdir(const char *path) {
        return seam(FN_CHDIR) < 0 ? -1 : __real_chdir(path);
}

/* ---- cases ----------------------------------------------------------------------------- */

static char tmpdir[] = "/tmp/test-enter-chroot.XXXXXX";
static char nsroot[PATH_MAX], cwd_dir[PATH_MAX], marker[PATH_MAX];
static struct stat st_root, st_cwd, st_nsroot;

static bool same(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* exit codes of a case's child */
enum {
        CHILD_OK,
        CHILD_WRONG_RESULT,
        CHILD_ROOT_MOVED,
        CHILD_CWD_MOVED,
        CHILD_NOT_ENTERED,
        CHILD_SETUP
};

/* Run nsc_enter_chroot() in a child with these failures; want: its result (0 = entered). */
static void run_case(const char *what, int want, struct fail f1, struct fail f2, struct fail f3) {
        static const char *const why[] = {
                [CHILD_WRONG_RESULT] = "wrong result", [CHILD_ROOT_MOVED] = "root moved",
                [CHILD_CWD_MOVED] = "cwd moved",       [CHILD_NOT_ENTERED] = "not entered",
                [CHILD_SETUP] = "setup failed",
        };
        int status;
        pid_t pid;

        pid = tap_fork();
        if (pid == 0) {
                struct nsc_join_result j = { .root_fd = -1, .ns_fd = -1 };
                struct stat a, b;
                int used = -1, r;

                if (chdir(cwd_dir) < 0)
                        _exit(CHILD_SETUP);
                j.root_fd = open(nsroot, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (j.root_fd < 0)
                        _exit(CHILD_SETUP);
                memset(calls, 0, sizeof(calls));
                fail_spec[0] = f1;
                fail_spec[1] = f2;
                fail_spec[2] = f3;

                r = nsc_enter_chroot(&j, &used);
                memset(fail_spec, 0, sizeof(fail_spec));
                if (r != want) {
                        fprintf(stderr, "got %d (%s)\n", r, strerror(-r));
                        _exit(CHILD_WRONG_RESULT);
                }
                if (want == -ENOTRECOVERABLE)
                        _exit(CHILD_OK); /* the caller knows it is in no defined place */
                if (stat("/", &a) < 0 || stat(".", &b) < 0)
                        _exit(CHILD_SETUP);
                if (want == 0) {
                        /* entered: / is the namespace's root, and so is the cwd */
                        if (!same(&a, &st_nsroot) || !same(&b, &st_nsroot) ||
                            access("/marker", F_OK) < 0 || used != 0)
                                _exit(CHILD_NOT_ENTERED);
                        _exit(CHILD_OK);
                }
                if (!same(&a, &st_root))
                        _exit(CHILD_ROOT_MOVED);
                if (!same(&b, &st_cwd))
                        _exit(CHILD_CWD_MOVED);
                _exit(CHILD_OK);
        }
        if (waitpid(pid, &status, 0) != pid)
                tap_bail_errno("waitpid");
        if (!ok(WIFEXITED(status) && WEXITSTATUS(status) == CHILD_OK, "%s", what))
                tap_diag("child: %s", WIFEXITED(status) && WEXITSTATUS(status) <= CHILD_SETUP
                                              ? why[WEXITSTATUS(status)]
                                              : "killed");
}

#define NONE ((struct fail) { 0 })
#define FAIL(f, n, e) ((struct fail) { .fn = (f), .nth = (n), .error = (e) })

int main(void) {
        bool root = geteuid() == 0;
        /* a stock kernel refuses setns() on the O_PATH root descriptor with EBADF; make it so
         * on any kernel, so that the chroot steps are what is tested */
        const struct fail no_setns = FAIL(FN_SETNS, 1, EBADF);
        int fd;

        if (!mkdtemp(tmpdir))
                tap_bail_errno("mkdtemp");
        snprintf(nsroot, sizeof(nsroot), "%s/nsroot", tmpdir);
        snprintf(cwd_dir, sizeof(cwd_dir), "%s/cwd", tmpdir);
        snprintf(marker, sizeof(marker), "%s/nsroot/marker", tmpdir);
        if (mkdir(nsroot, 0755) < 0 || mkdir(cwd_dir, 0755) < 0 ||
            (fd = open(marker, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)) < 0)
                tap_bail_errno("setup");
        close(fd);
        if (stat("/", &st_root) < 0 || stat(cwd_dir, &st_cwd) < 0 || stat(nsroot, &st_nsroot) < 0)
                tap_bail_errno("stat");

        run_case("setns() fails otherwise than EINVAL/EBADF: that error, nothing moved", -EPERM,
                 FAIL(FN_SETNS, 1, EPERM), NONE, NONE);
        run_case("saving the root fails (EMFILE): nothing moved", -EMFILE, no_setns,
                 FAIL(FN_OPEN, 1, EMFILE), NONE);
        run_case("saving the cwd fails (EMFILE): nothing moved", -EMFILE, no_setns,
                 FAIL(FN_OPEN, 2, EMFILE), NONE);
        run_case("fchdir() to the namespace root fails: nothing moved", -EACCES, no_setns,
                 FAIL(FN_FCHDIR, 1, EACCES), NONE);
        if (root) {
                run_case("chroot() fails after fchdir(): the cwd is back", -EPERM, no_setns,
                         FAIL(FN_CHROOT, 1, EPERM), NONE);
                run_case("chdir(\"/\") fails after chroot(): root and cwd are back", -EIO, no_setns,
                         FAIL(FN_CHDIR, 1, EIO), NONE);
                run_case("chroot() fails and putting the cwd back fails too: ENOTRECOVERABLE",
                         -ENOTRECOVERABLE, no_setns, FAIL(FN_CHROOT, 1, EPERM),
                         FAIL(FN_FCHDIR, 2, EIO));
                run_case("chdir() fails and putting the root back fails too: ENOTRECOVERABLE",
                         -ENOTRECOVERABLE, no_setns, FAIL(FN_CHDIR, 1, EIO),
                         FAIL(FN_CHROOT, 2, EPERM));
                run_case("nothing fails: root and cwd are the namespace's root", 0, no_setns, NONE,
                         NONE);
        } else {
                /* without CAP_SYS_CHROOT the kernel refuses chroot() after fchdir() succeeded:
                 * exactly the half-entered state this is about */
                run_case("unprivileged: chroot() refused (EPERM) after fchdir(): the cwd is back",
                         -EPERM, no_setns, NONE, NONE);
                tap_skip("the failures after a successful chroot() need root");
        }

        unlink(marker);
        rmdir(nsroot);
        rmdir(cwd_dir);
        rmdir(tmpdir);
        return tap_done();
}
