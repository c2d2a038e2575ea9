/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * glitch-rows: the chroot "glitches" of DESIGN.md (rows 1-14), one TAP test per row.
 *
 *   glitch-rows --expect glitch|fixed --user USER --dir DIR
 *
 * Runs as root inside a tests/vm/run VM with nsd running. DIR must be a tmpfs mounted (source
 * "glitchfs") inside USER's namespace and absent from the initial one (tests/vm/scenarios/glitch-rows.sh
 * does that with `nsctl enter USER -- mount ...`). The program gets USER's descriptors from nsd
 * (nsc_join), makes the per-row fixture mounts inside USER's namespace through the nsfs
 * descriptor (setns(ns_fd), which works on every kernel), then tests each row in a forked child
 * that enters through the ROOT descriptor with nsc_enter_chroot(): on a stock kernel that is
 * fchdir(root_fd) + chroot("."), on a kernel with F1 setns(root_fd). Every row checks what the
 * kernel did (errno, the namespace's mountinfo as seen through ns_fd, statfs, namespace inodes,
 * the euid of an exec'd setuid binary), not only return values.
 *
 *   --expect glitch  every row shows the glitch as DESIGN.md measured it (stock kernel)
 *   --expect fixed   rows 1-8, 10, 11, 13 work, row 12 (setuid) works, row 9 is consistent
 *                    (patched kernel: F1, F2, F3); row 14 (listmount/statmount after a plain
 *                    chroot) lists the user's namespace
 *
 * Row 14 needs listmount() and statmount() (Linux 6.8; the 6.12 images): on a kernel without
 * them it is a TAP skip.
 *
 * Exit status: 0 when every row is as expected, 1 otherwise, 2 on a usage or setup error
 * ("Bail out!").
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nsclient.h"

#define SETUID_BIN "/usr/bin/fusermount3"
#define BASE_SOURCE "glitchfs"
#define MSG_MAX 2048

static bool g_fixed;      /* --expect fixed */
static const char *g_dir; /* DIR, a tmpfs in the user's namespace */
static uid_t g_uid;
static gid_t g_gid;
static struct nsc_join_result g_join;
static int g_init_ns_fd = -1; /* the initial mount namespace (to leave a joined one) */
static ino_t g_init_ns_ino;
static char *g_init_mountinfo; /* the initial namespace's mountinfo, read at start */

/* ---- small helpers -------------------------------------------------------------------- */

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...) {
        va_list ap;
        char *s;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                abort();
        va_end(ap);
        return s;
}

/* DIR/NAME */
static char *P(const char *name) {
        return xasprintf("%s/%s", g_dir, name);
}

/* "0 (ok)" or "-1 EINVAL" */
static const char *res(int r, int e) {
        static char buf[8][64];
        static int i;
        char *b = buf[i++ % 8];

        if (r >= 0)
                snprintf(b, 64, "ok");
        else
                snprintf(b, 64, "%s", strerrorname_np(e) ? strerrorname_np(e) : "E?");
        return b;
}

static char *read_fd_all(int fd) {
        size_t len = 0, cap = 4096;
        char *s = malloc(cap);
        ssize_t n;

        if (!s)
                abort();
        for (;;) {
                if (cap - len < 2048) {
                        cap *= 2;
                        s = realloc(s, cap);
                        if (!s)
                                abort();
                }
                n = read(fd, s + len, cap - len - 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len += (size_t) n;
        }
        s[len] = '\0';
        return s;
}

static char *read_file(const char *path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        char *s;

        if (fd < 0)
                return NULL;
        s = read_fd_all(fd);
        close(fd);
        return s;
}

static int count_lines(const char *s) {
        int n = 0;

        for (; s && *s; s++)
                if (*s == '\n')
                        n++;
        return n;
}

/* Wait for pid; its exit status, or 128+signal. */
static int wait_status(pid_t pid) {
        int st;

        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return -1;
        if (WIFEXITED(st))
                return WEXITSTATUS(st);
        if (WIFSIGNALED(st))
                return 128 + WTERMSIG(st);
        return -1;
}

/* ---- mountinfo ------------------------------------------------------------------------ */

struct mi {
        char mp[512];
        char opt[256]; /* optional fields: "shared:N master:M" */
        char fstype[64];
        char source[256];
        char superopts[512];
};

/* The topmost (last listed) mount on mount point mp in mountinfo text; true if found. */
static bool mi_find(const char *text, const char *mp, struct mi *ret) {
        bool found = false;
        const char *line = text;

        while (line && *line) {
                const char *nl = strchr(line, '\n');
                size_t len = nl ? (size_t) (nl - line) : strlen(line);
                char buf[2048], *f[64], *save = NULL, *t;
                int n = 0, dash = -1, i;

                if (len < sizeof(buf)) {
                        memcpy(buf, line, len);
                        buf[len] = '\0';
                        for (t = strtok_r(buf, " ", &save); t && n < 64;
                             t = strtok_r(NULL, " ", &save)) {
                                if (dash < 0 && strcmp(t, "-") == 0)
                                        dash = n;
                                f[n++] = t;
                        }
                        if (n >= 7 && dash >= 6 && dash + 3 < n + 1 && strcmp(f[4], mp) == 0) {
                                struct mi m = {};

                                snprintf(m.mp, sizeof(m.mp), "%s", f[4]);
                                for (i = 6; i < dash; i++) {
                                        size_t l = strlen(m.opt);
                                        snprintf(m.opt + l, sizeof(m.opt) - l, "%s%s", l ? " " : "",
                                                 f[i]);
                                }
                                snprintf(m.fstype, sizeof(m.fstype), "%s",
                                         dash + 1 < n ? f[dash + 1] : "");
                                snprintf(m.source, sizeof(m.source), "%s",
                                         dash + 2 < n ? f[dash + 2] : "");
                                snprintf(m.superopts, sizeof(m.superopts), "%s",
                                         dash + 3 < n ? f[dash + 3] : "");
                                *ret = m;
                                found = true;
                        }
                }
                line = nl ? nl + 1 : NULL;
        }
        return found;
}

/* Is the topmost mount on mp (DIR/name) the tmpfs with this source? */
static bool mi_has(const char *text, const char *mp, const char *source) {
        struct mi m;

        return mi_find(text, mp, &m) && strcmp(m.source, source) == 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The sorted, newline-joined list of mount points of a mountinfo text. */
static char *mi_mountpoints(const char *text) {
        char **v = NULL, *out, *p;
        size_t n = 0, cap = 0, total = 1, i;
        const char *line = text;

        while (line && *line) {
                const char *nl = strchr(line, '\n');
                const char *s = line;
                int field;

                for (field = 0; field < 4 && s; field++) {
                        s = strchr(s, ' ');
                        if (s)
                                s++;
                }
                if (s && (!nl || s < nl)) {
                        const char *e = strchr(s, ' ');

                        if (e && (!nl || e < nl)) {
                                if (n == cap) {
                                        cap = cap ? cap * 2 : 64;
                                        v = realloc(v, cap * sizeof(*v));
                                        if (!v)
                                                abort();
                                }
                                v[n++] = strndup(s, (size_t) (e - s));
                                total += (size_t) (e - s) + 1;
                        }
                }
                line = nl ? nl + 1 : NULL;
        }
        qsort(v, n, sizeof(*v), cmp_str);
        p = out = malloc(total);
        if (!out)
                abort();
        *p = '\0';
        for (i = 0; i < n; i++) {
                p = stpcpy(p, v[i]);
                p = stpcpy(p, "\n");
                free(v[i]);
        }
        free(v);
        return out;
}

/* Run fn in a child that joined ns_fd's namespace with setns() (root and cwd: its root); the
 * child's stdout goes to a pipe whose contents are returned (NULL if the child failed). */
static char *in_ns(int ns_fd, int (*fn)(void *), void *arg) {
        int p[2];
        pid_t pid;
        char *out;

        if (pipe2(p, O_CLOEXEC) < 0)
                return NULL;
        fflush(stdout);
        pid = fork();
        if (pid < 0)
                return NULL;
        if (pid == 0) {
                close(p[0]);
                if (dup2(p[1], STDOUT_FILENO) < 0)
                        _exit(120);
                if (setns(ns_fd, CLONE_NEWNS) < 0) {
                        fprintf(stderr, "glitch-rows: setns(ns_fd): %m\n");
                        _exit(121);
                }
                _exit(fn(arg));
        }
        close(p[1]);
        out = read_fd_all(p[0]);
        close(p[0]);
        if (wait_status(pid) != 0) {
                free(out);
                return NULL;
        }
        return out;
}

static int cat_mountinfo(void *arg) {
        char *s = read_file("/proc/self/mountinfo");

        if (!s)
                return 1;
        fputs(s, stdout);
        return fflush(stdout) ? 1 : 0;
}

/* The mountinfo of the user's namespace, read through its nsfs descriptor (as root of it). */
static char *user_mountinfo(void) {
        char *s = in_ns(g_join.ns_fd, cat_mountinfo, NULL);

        return s ? s : strdup("");
}

/* ---- entering and the per-row framework ----------------------------------------------- */

static int g_used_setns = -1;

/* Enter the user's namespace through the root descriptor, as pam_nsjoin mode=chroot does. */
static int enter(char *msg) {
        int r = nsc_enter_chroot(&g_join, &g_used_setns);

        if (r < 0) {
                snprintf(msg, MSG_MAX, "nsc_enter_chroot(root_fd) failed: %s", strerrorname_np(-r));
                return -1;
        }
        return 0;
}

/* Leave whatever was entered for plain fchdir(root_fd) + chroot("."), Lokier's way, from the
 * initial namespace: what a process does where setns() is not possible. */
static int plain_chroot(void) {
        if (setns(g_init_ns_fd, CLONE_NEWNS) < 0)
                return -1;
        if (fchdir(g_join.root_fd) < 0 || chroot(".") < 0 || chdir("/") < 0)
                return -1;
        return 0;
}

struct row {
        const char *what;
        bool (*fn)(char *msg); /* true: as expected; msg: what was seen */
};

/* statfs size in KiB of a path, -1 on error */
static long long size_kib(const char *path) {
        struct statfs s;

        if (statfs(path, &s) < 0)
                return -1;
        return (long long) s.f_blocks * s.f_bsize / 1024;
}

static int is_ro(const char *path) {
        struct statvfs s;

        if (statvfs(path, &s) < 0)
                return -1;
        return (s.f_flag & ST_RDONLY) ? 1 : 0;
}

/* What a row's call on mp did: its result r and errno e (read first thing), and whether the
 * tmpfs source is the topmost mount on mp in the user's namespace after it. */
struct outcome {
        int r, e;
        bool in;
};

static struct outcome outcome_on(int r, const char *mp, const char *source) {
        struct outcome o = { r, errno, false };
        char *mi = user_mountinfo();

        o.in = mi_has(mi, mp, source);
        free(mi);
        return o;
}

/* ---- row 1: mount(2) of a new file system ---------------------------------------------- */

static bool row1(char *msg) {
        char *mp = P("r1");
        struct outcome o;

        if (enter(msg) < 0)
                return false;
        o = outcome_on(mount("glitch-r1", mp, "tmpfs", 0, "mode=0755"), mp, "glitch-r1");
        snprintf(msg, MSG_MAX, "mount(tmpfs on %s): %s; in the namespace's mountinfo: %s", mp,
                 res(o.r, o.e), o.in ? "yes" : "no");
        if (g_fixed)
                return o.r == 0 && o.in;
        return o.r < 0 && o.e == EINVAL && !o.in;
}

/* ---- row 2: umount2 -------------------------------------------------------------------- */

static bool row2(char *msg) {
        char *mp = P("r2");
        struct outcome o;

        if (enter(msg) < 0)
                return false;
        o = outcome_on(umount2(mp, 0), mp, "glitch-r2");
        snprintf(msg, MSG_MAX, "umount2(%s): %s; still mounted: %s", mp, res(o.r, o.e),
                 o.in ? "yes" : "no");
        if (g_fixed)
                return o.r == 0 && !o.in;
        return o.r < 0 && o.e == EINVAL && o.in;
}

/* ---- row 3: bind and rbind --------------------------------------------------------------- */

static bool row3(char *msg) {
        char *src = P("r3src"), *b = P("r3b"), *rb = P("r3rb");
        char *bsub = P("r3b/sub"), *rbsub = P("r3rb/sub"), *bfile = P("r3b/r3file");
        char *mi;
        int r1, e1, r2, e2;
        bool b_in, rb_in, rbsub_in, bsub_in, file;
        struct mi m;

        if (enter(msg) < 0)
                return false;
        r1 = mount(src, b, NULL, MS_BIND, NULL);
        e1 = errno;
        r2 = mount(src, rb, NULL, MS_BIND | MS_REC, NULL);
        e2 = errno;
        mi = user_mountinfo();
        b_in = mi_find(mi, b, &m);
        rb_in = mi_find(mi, rb, &m);
        bsub_in = mi_has(mi, bsub, "glitch-r3sub");
        rbsub_in = mi_has(mi, rbsub, "glitch-r3sub");
        file = access(bfile, F_OK) == 0;
        snprintf(msg, MSG_MAX,
                 "MS_BIND: %s, MS_BIND|MS_REC: %s; in mountinfo: bind %s, rbind %s, "
                 "rbind's submount %s, bind's submount %s; file through the bind: %s",
                 res(r1, e1), res(r2, e2), b_in ? "yes" : "no", rb_in ? "yes" : "no",
                 rbsub_in ? "yes" : "no", bsub_in ? "yes" : "no", file ? "yes" : "no");
        if (g_fixed)
                return r1 == 0 && r2 == 0 && b_in && rb_in && rbsub_in && !bsub_in && file;
        return r1 < 0 && e1 == EINVAL && r2 < 0 && e2 == EINVAL && !b_in && !rb_in && !file;
}

/* ---- row 4: MS_MOVE and move_mount --------------------------------------------------------- */

static bool row4(char *msg) {
        char *a = P("r4a"), *b = P("r4b"), *c = P("r4c");
        char *mi;
        int r1, e1, r2, e2;
        bool at_a, at_b, at_c;

        if (enter(msg) < 0)
                return false;
        r1 = mount(a, b, NULL, MS_MOVE, NULL);
        e1 = errno;
        /* then move_mount(2) from wherever it is now */
        r2 = move_mount(AT_FDCWD, r1 == 0 ? b : a, AT_FDCWD, c, 0);
        e2 = errno;
        mi = user_mountinfo();
        at_a = mi_has(mi, a, "glitch-r4");
        at_b = mi_has(mi, b, "glitch-r4");
        at_c = mi_has(mi, c, "glitch-r4");
        snprintf(msg, MSG_MAX,
                 "mount(MS_MOVE) r4a->r4b: %s, move_mount() ->r4c: %s; the mount is at %s",
                 res(r1, e1), res(r2, e2),
                 at_c   ? "r4c"
                 : at_b ? "r4b"
                 : at_a ? "r4a"
                        : "nowhere");
        if (g_fixed)
                return r1 == 0 && r2 == 0 && at_c && !at_a && !at_b;
        return r1 < 0 && e1 == EINVAL && r2 < 0 && e2 == EINVAL && at_a && !at_b && !at_c;
}

/* ---- row 5: remount, bind-remount read-only ------------------------------------------------ */

static bool row5(char *msg) {
        char *a = P("r5a"), *b = P("r5b");
        int r1, e1, r2, e2, ro_a, ro_b;

        if (enter(msg) < 0)
                return false;
        r1 = mount(NULL, a, NULL, MS_REMOUNT | MS_RDONLY, NULL);
        e1 = errno;
        r2 = mount(NULL, b, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL);
        e2 = errno;
        ro_a = is_ro(a);
        ro_b = is_ro(b);
        snprintf(msg, MSG_MAX,
                 "MS_REMOUNT|MS_RDONLY: %s (read-only now: %d), "
                 "MS_REMOUNT|MS_BIND|MS_RDONLY: %s (read-only now: %d)",
                 res(r1, e1), ro_a, res(r2, e2), ro_b);
        if (g_fixed)
                return r1 == 0 && r2 == 0 && ro_a == 1 && ro_b == 1;
        return r1 < 0 && e1 == EINVAL && r2 < 0 && e2 == EINVAL && ro_a == 0 && ro_b == 0;
}

/* ---- row 6: open_tree(OPEN_TREE_CLONE) ------------------------------------------------------ */

static bool row6(char *msg) {
        char *a = P("r6");
        int fd, e;
        bool file = false;

        if (enter(msg) < 0)
                return false;
        fd = open_tree(AT_FDCWD, a, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        e = errno;
        if (fd >= 0)
                file = faccessat(fd, "r6file", F_OK, 0) == 0;
        snprintf(msg, MSG_MAX, "open_tree(%s, OPEN_TREE_CLONE): %s; the clone holds r6file: %s", a,
                 res(fd, e), file ? "yes" : "no");
        if (g_fixed)
                return fd >= 0 && file;
        return fd < 0 && e == EINVAL;
}

/* ---- row 7: mount_setattr ----------------------------------------------------------------- */

static bool row7(char *msg) {
        char *a = P("r7");
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
        int r, e, ro;

        if (enter(msg) < 0)
                return false;
        r = mount_setattr(AT_FDCWD, a, 0, &attr, sizeof(attr));
        e = errno;
        ro = is_ro(a);
        snprintf(msg, MSG_MAX, "mount_setattr(%s, MOUNT_ATTR_RDONLY): %s; read-only now: %d", a,
                 res(r, e), ro);
        if (g_fixed)
                return r == 0 && ro == 1;
        return r < 0 && e == EINVAL && ro == 0;
}

/* ---- row 8: pivot_root ---------------------------------------------------------------------- */

/* Into a subtree of its own (chroot to the r8 mount first) so that pivot_root(), which moves
 * every process rooted at the old root, touches nobody else. */
static bool row8(char *msg) {
        char *r8 = P("r8"), *r8old = P("r8/old");
        char *mi;
        struct stat st_root, st_marker;
        int r, e;
        bool new_at_r8, old_at_old, unchanged, root_is_new;

        if (enter(msg) < 0)
                return false;
        if (chroot(r8) < 0 || chdir("/") < 0) {
                snprintf(msg, MSG_MAX, "chroot(%s): %s", r8, strerrorname_np(errno));
                return false;
        }
        r = (int) syscall(SYS_pivot_root, "/new", "/new/old");
        e = errno;
        root_is_new = stat("/", &st_root) == 0 && stat("/r8new-marker", &st_marker) == 0;
        mi = user_mountinfo();
        new_at_r8 = mi_has(mi, r8, "glitch-r8new");
        old_at_old = mi_has(mi, r8old, "glitch-r8");
        unchanged = mi_has(mi, r8, "glitch-r8") && !old_at_old;
        snprintf(msg, MSG_MAX,
                 "pivot_root(\"/new\", \"/new/old\") rooted at %s: %s; "
                 "in mountinfo: r8new on r8 %s, old root on r8/old %s; root holds r8new's marker: "
                 "%s",
                 r8, res(r, e), new_at_r8 ? "yes" : "no", old_at_old ? "yes" : "no",
                 root_is_new ? "yes" : "no");
        if (g_fixed)
                return r == 0 && new_at_r8 && old_at_old && root_is_new;
        return r < 0 && e == EINVAL && unchanged && !root_is_new;
}

/* ---- row 9: propagation change and fspick() reconfigure --------------------------------- */

struct r9 {
        int shared_r, shared_e, fspick_r, fspick_e, remount_r, remount_e;
        long long kib_after_fspick, kib_after_remount;
        bool shared_in;
};

/* MS_SHARED, fspick(size=3m)+RECONFIGURE, MS_REMOUNT size=2m, on mp. */
static void row9_ops(const char *mp, const char *source, struct r9 *o) {
        char *mi;
        struct mi m;
        int fd;

        o->shared_r = mount(NULL, mp, NULL, MS_SHARED, NULL);
        o->shared_e = errno;
        fd = fspick(AT_FDCWD, mp, FSPICK_CLOEXEC);
        o->fspick_e = errno;
        o->fspick_r = fd;
        if (fd >= 0) {
                o->fspick_r = fsconfig(fd, FSCONFIG_SET_STRING, "size", "3m", 0);
                if (o->fspick_r == 0)
                        o->fspick_r = fsconfig(fd, FSCONFIG_CMD_RECONFIGURE, NULL, NULL, 0);
                o->fspick_e = errno;
                close(fd);
        }
        o->kib_after_fspick = size_kib(mp);
        o->remount_r = mount(NULL, mp, NULL, MS_REMOUNT, "size=2m");
        o->remount_e = errno;
        o->kib_after_remount = size_kib(mp);
        mi = user_mountinfo();
        o->shared_in = mi_find(mi, mp, &m) && strcmp(m.source, source) == 0 &&
                       strstr(m.opt, "shared:") != NULL;
}

static bool row9(char *msg) {
        char *mp = P("r9"), *mpc = P("r9c");
        struct r9 o = {}, c = {};
        int p[2];
        pid_t pid;
        size_t l;

        if (g_fixed) {
                /* plain chroot (no setns) on a kernel with F3: fspick() must now refuse a mount
                 * of another namespace like MS_REMOUNT does; the propagation change keeps its
                 * upstream rule (may_change_propagation(): admin over the mount's namespace) */
                if (pipe2(p, O_CLOEXEC) < 0)
                        return false;
                pid = fork();
                if (pid == 0) {
                        close(p[0]);
                        if (plain_chroot() < 0)
                                _exit(1);
                        row9_ops(mpc, "glitch-r9c", &c);
                        _exit(write(p[1], &c, sizeof(c)) == sizeof(c) ? 0 : 1);
                }
                close(p[1]);
                if (pid < 0 || read(p[0], &c, sizeof(c)) != sizeof(c)) {
                        snprintf(msg, MSG_MAX, "the plain-chroot child failed");
                        return false;
                }
                close(p[0]);
                wait_status(pid);
        }

        if (enter(msg) < 0)
                return false;
        row9_ops(mp, "glitch-r9", &o);
        l = (size_t) snprintf(msg, MSG_MAX,
                              "%s: MS_SHARED: %s (shared in mountinfo: %s), "
                              "fspick+RECONFIGURE size=3m: %s (size %lld KiB), MS_REMOUNT size=2m: "
                              "%s (size %lld KiB)",
                              g_used_setns ? "joined" : "chrooted", res(o.shared_r, o.shared_e),
                              o.shared_in ? "yes" : "no", res(o.fspick_r, o.fspick_e),
                              o.kib_after_fspick, res(o.remount_r, o.remount_e),
                              o.kib_after_remount);
        if (!g_fixed)
                /* the inconsistency: the propagation change and fspick() reconfigure work on a
                 * mount that MS_REMOUNT (row 5) refuses with EINVAL */
                return o.shared_r == 0 && o.shared_in && o.fspick_r == 0 &&
                       o.kib_after_fspick == 3072 && o.remount_r < 0 && o.remount_e == EINVAL &&
                       o.kib_after_remount == 3072;

        if (l < MSG_MAX)
                snprintf(msg + l, MSG_MAX - l,
                         "; plain chroot: MS_SHARED: %s (shared in mountinfo: %s), "
                         "fspick+RECONFIGURE: %s (size %lld KiB), MS_REMOUNT: %s (size %lld KiB)",
                         res(c.shared_r, c.shared_e), c.shared_in ? "yes" : "no",
                         res(c.fspick_r, c.fspick_e), c.kib_after_fspick,
                         res(c.remount_r, c.remount_e), c.kib_after_remount);
        /* joined: all three succeed alike; plain chroot: fspick refused like MS_REMOUNT (F3),
         * the propagation change allowed by upstream's uniform rule */
        return o.shared_r == 0 && o.shared_in && o.fspick_r == 0 && o.kib_after_fspick == 3072 &&
               o.remount_r == 0 && o.kib_after_remount == 2048 && c.fspick_r < 0 &&
               c.fspick_e == EINVAL && c.remount_r < 0 && c.remount_e == EINVAL &&
               c.kib_after_remount == c.kib_after_fspick && c.kib_after_fspick == 1024 &&
               c.shared_r == 0 && c.shared_in;
}

/* ---- row 10: /proc/self/mounts, mountinfo ----------------------------------------------- */

static int cat_mountinfo_chrooted(void *arg) {
        if (plain_chroot() < 0)
                return 1;
        return cat_mountinfo(arg);
}

static bool row10(char *msg) {
        char *mounts, *mi, *want, *chrooted = NULL;
        int nm, nmi;
        bool same, has_dir, chrooted_same = false;
        size_t l;

        if (g_fixed) {
                /* F2: a process that only chrooted (as a multi-threaded one must) sees them too */
                chrooted = in_ns(g_init_ns_fd, cat_mountinfo_chrooted, NULL);
                want = user_mountinfo();
                chrooted_same = chrooted && strcmp(chrooted, want) == 0;
        }
        if (enter(msg) < 0)
                return false;
        mounts = read_file("/proc/self/mounts");
        mi = read_file("/proc/self/mountinfo");
        if (!mounts || !mi) {
                snprintf(msg, MSG_MAX, "cannot read /proc/self/mounts or mountinfo: %s",
                         strerrorname_np(errno));
                return false;
        }
        nm = count_lines(mounts);
        nmi = count_lines(mi);
        want = user_mountinfo();
        same = strcmp(mi, want) == 0;
        has_dir = mi_has(mi, g_dir, BASE_SOURCE);
        l = (size_t)
                snprintf(msg, MSG_MAX,
                         "/proc/self/mounts: %d lines, mountinfo: %d lines (the namespace has %d); "
                         "mountinfo identical to the namespace's: %s; lists %s: %s",
                         nm, nmi, count_lines(want), same ? "yes" : "no", g_dir,
                         has_dir ? "yes" : "no");
        if (g_fixed && l < MSG_MAX)
                snprintf(msg + l, MSG_MAX - l,
                         "; plain chroot (F2): mountinfo %d lines, identical: %s",
                         count_lines(chrooted), chrooted_same ? "yes" : "no");
        if (g_fixed)
                return nm > 0 && nmi > 0 && same && has_dir && strstr(mounts, g_dir) != NULL &&
                       chrooted_same;
        return nm == 0 && nmi == 0;
}

/* ---- row 11: /proc/self/ns/mnt ---------------------------------------------------------- */

static bool row11(char *msg) {
        struct stat st;

        if (enter(msg) < 0)
                return false;
        if (stat("/proc/self/ns/mnt", &st) < 0) {
                snprintf(msg, MSG_MAX, "stat(/proc/self/ns/mnt): %s", strerrorname_np(errno));
                return false;
        }
        snprintf(msg, MSG_MAX,
                 "/proc/self/ns/mnt inode %llu; the user's namespace %llu, the initial one %llu",
                 (unsigned long long) st.st_ino, (unsigned long long) g_join.ns_inode,
                 (unsigned long long) g_init_ns_ino);
        if (g_fixed)
                return st.st_ino == g_join.ns_inode;
        return st.st_ino == g_init_ns_ino && st.st_ino != g_join.ns_inode;
}

/* ---- row 12: setuid programs --------------------------------------------------------------- */

/* Exec SETUID_BIN -V as the user with stdout on a full pipe, so that it blocks in write(2)
 * whatever its privileges; read its effective uid from /proc/PID/status. -1 on failure. */
static long suid_euid(char *why, size_t whylen) {
        int p[2], i;
        pid_t pid;
        long euid = -1;
        char path[64], *s, *u;
        static const char fill[512];

        if (pipe2(p, O_CLOEXEC) < 0)
                return -1;
        (void) fcntl(p[1], F_SETPIPE_SZ, 4096);
        (void) fcntl(p[1], F_SETFL, O_NONBLOCK);
        while (write(p[1], fill, sizeof(fill)) > 0)
                ;
        (void) fcntl(p[1], F_SETFL, 0);

        pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                if (dup2(p[1], STDOUT_FILENO) < 0)
                        _exit(120);
                if (setgroups(0, NULL) < 0 || setresgid(g_gid, g_gid, g_gid) < 0 ||
                    setresuid(g_uid, g_uid, g_uid) < 0)
                        _exit(121);
                execl(SETUID_BIN, "fusermount3", "-V", (char *) NULL);
                _exit(127);
        }
        snprintf(path, sizeof(path), "/proc/%d/syscall", (int) pid);
        for (i = 0; i < 1000; i++) { /* 10 s: until it sits in write(2) on the full pipe */
                s = read_file(path);
                if (s && strncmp(s, "1 ", 2) == 0) {
                        free(s);
                        break;
                }
                free(s);
                usleep(10000);
        }
        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        s = read_file(path);
        if (i == 1000)
                snprintf(why, whylen, "%s never blocked in write(2)", SETUID_BIN);
        else if (!s || !strstr(s, "Name:\tfusermount3\n"))
                snprintf(why, whylen, "the child is not running %s", SETUID_BIN);
        else if ((u = strstr(s, "\nUid:\t")))
                euid = strtol(strchr(u + 6, '\t') + 1, NULL, 10);
        free(s);
        kill(pid, SIGKILL);
        wait_status(pid);
        close(p[0]);
        close(p[1]);
        return euid;
}

static bool row12(char *msg) {
        char why[256] = "";
        long control, euid;

        control = suid_euid(why, sizeof(why));
        if (control != 0) {
                snprintf(msg, MSG_MAX,
                         "control: %s exec'd by uid %u in the initial namespace has euid %ld, "
                         "not 0 (%s): setuid cannot be tested here",
                         SETUID_BIN, g_uid, control, why);
                return false;
        }
        if (enter(msg) < 0)
                return false;
        euid = suid_euid(why, sizeof(why));
        snprintf(msg, MSG_MAX,
                 "setuid-root %s exec'd by uid %u: euid %ld (in the initial namespace: %ld)%s%s",
                 SETUID_BIN, g_uid, euid, control, *why ? "; " : "", why);
        if (g_fixed)
                return euid == 0;
        return euid == (long) g_uid;
}

/* ---- row 13: unshare(CLONE_NEWNS) ---------------------------------------------------------- */

static int unshare_cat_mountinfo(void *arg) {
        if (unshare(CLONE_NEWNS) < 0)
                return 1;
        return cat_mountinfo(arg);
}

/* The reference: mountinfo of a copy made by unshare() in a process that joined nsfd's
 * namespace with setns() (a copy leaves out nsfs bind mounts such as nsd's pin, so it is
 * compared with a copy, not with the namespace itself). */
static char *copy_mountinfo(int nsfd) {
        char *s = in_ns(nsfd, unshare_cat_mountinfo, NULL);

        return s ? s : strdup("");
}

static bool row13(char *msg) {
        struct stat st;
        int r, e, fd;
        char *mi, *want, *mp_copy, *mp_want;
        bool has_dir, same;

        if (enter(msg) < 0)
                return false;
        r = unshare(CLONE_NEWNS);
        e = errno;
        if (r < 0) {
                snprintf(msg, MSG_MAX, "unshare(CLONE_NEWNS): %s", strerrorname_np(e));
                return false;
        }
        fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0) {
                snprintf(msg, MSG_MAX, "open(/proc/self/ns/mnt): %s", strerrorname_np(errno));
                return false;
        }
        mi = in_ns(fd, cat_mountinfo, NULL); /* the copy, seen from its own root */
        if (!mi) {
                snprintf(msg, MSG_MAX, "cannot read the new namespace's mountinfo");
                return false;
        }
        want = copy_mountinfo(g_fixed ? g_join.ns_fd : g_init_ns_fd);
        mp_copy = mi_mountpoints(mi);
        mp_want = mi_mountpoints(want);
        same = strcmp(mp_copy, mp_want) == 0;
        has_dir = mi_has(mi, g_dir, BASE_SOURCE);
        snprintf(msg, MSG_MAX,
                 "unshare(CLONE_NEWNS): ok, new namespace %llu has %d mounts; "
                 "%s (%s) in it: %s; same mount points as a copy of the %s namespace: %s",
                 (unsigned long long) st.st_ino, count_lines(mi), g_dir, BASE_SOURCE,
                 has_dir ? "yes" : "no", g_fixed ? "user's" : "initial", same ? "yes" : "no");
        if (st.st_ino == g_init_ns_ino || st.st_ino == g_join.ns_inode)
                return false;
        if (g_fixed)
                return has_dir && same;
        return !has_dir && same;
}

/* ---- fixtures ------------------------------------------------------------------------------ */

static int mk(const char *name) {
        char *p = P(name);
        int r = mkdir(p, 0755);

        if (r < 0 && errno != EEXIST) {
                fprintf(stderr, "glitch-rows: mkdir %s: %m\n", p);
                return -1;
        }
        return 0;
}

static int mnt(const char *source, const char *name, const char *opts) {
        char *p = P(name);

        if (mk(name) < 0)
                return -1;
        if (mount(source, p, "tmpfs", 0, opts) < 0) {
                fprintf(stderr, "glitch-rows: mount %s on %s: %m\n", source, p);
                return -1;
        }
        return 0;
}

static int touch(const char *name) {
        char *p = P(name);
        int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

        if (fd < 0) {
                fprintf(stderr, "glitch-rows: create %s: %m\n", p);
                return -1;
        }
        close(fd);
        return 0;
}

/* In the user's namespace (setns(ns_fd)): the per-row dirs and mounts. */
static int fixtures(void *arg) {
        struct stat st;
        char *mi = read_file("/proc/self/mountinfo");

        if (!mi || !mi_has(mi, g_dir, BASE_SOURCE) || stat(g_dir, &st) < 0) {
                fprintf(stderr, "glitch-rows: %s is not a tmpfs '%s' in the user's namespace\n",
                        g_dir, BASE_SOURCE);
                return 1;
        }
        if (mk("r1") || mnt("glitch-r2", "r2", NULL) || mk("r3src") || touch("r3src/r3file") ||
            mnt("glitch-r3sub", "r3src/sub", NULL) || mk("r3b") || mk("r3rb") ||
            mnt("glitch-r4", "r4a", NULL) || mk("r4b") || mk("r4c") ||
            mnt("glitch-r5a", "r5a", NULL) || mnt("glitch-r5b", "r5b", NULL) ||
            mnt("glitch-r6", "r6", NULL) || touch("r6/r6file") || mnt("glitch-r7", "r7", NULL) ||
            mnt("glitch-r8", "r8", NULL) || mnt("glitch-r8new", "r8/new", NULL) ||
            touch("r8/new/r8new-marker") || mk("r8/new/old") || mnt("glitch-r9", "r9", "size=1m") ||
            mnt("glitch-r9c", "r9c", "size=1m"))
                return 1;
        printf("ready\n");
        return 0;
}

/* ---- main ------------------------------------------------------------------------------------ */

/* ---- row 14: listmount() and statmount() after a plain chroot (Linux 6.8+) ----------- */

#ifndef __NR_statmount
#define __NR_statmount 457
#endif
#ifndef __NR_listmount
#define __NR_listmount 458
#endif
#define G_LSMT_ROOT 0xffffffffffffffffULL
#define G_STATX_MNT_ID_UNIQUE 0x00004000U

struct g_mnt_id_req {
        uint32_t size;
        uint32_t spare;
        uint64_t mnt_id;
        uint64_t param;
};

static long g_listmount(uint64_t *ids, size_t n) {
        struct g_mnt_id_req req = { .size = sizeof(req), .mnt_id = G_LSMT_ROOT };

        return syscall(__NR_listmount, &req, ids, n, 0);
}

static int g_statmount(uint64_t id) {
        struct g_mnt_id_req req = { .size = sizeof(req),
                                    .mnt_id = id,
                                    .param = 0x2 /* MNT_BASIC */ };
        char buf[1024];

        return (int) syscall(__NR_statmount, &req, buf, sizeof(buf), 0);
}

/* In a child: fchdir(root_fd) + chroot("."), then print "<count> <lists DIR?> <statmount(DIR)>". */
static int listmount_chrooted(void *arg) {
        uint64_t ids[1024], id = 0;
        struct statx sx;
        long n, i;
        int has = 0, r, e;

        if (plain_chroot() < 0)
                return 1;
        if (statx(AT_FDCWD, g_dir, 0, G_STATX_MNT_ID_UNIQUE, &sx) == 0 &&
            (sx.stx_mask & G_STATX_MNT_ID_UNIQUE))
                id = sx.stx_mnt_id;
        n = g_listmount(ids, 1024);
        for (i = 0; i < n; i++)
                if (ids[i] == id)
                        has = 1;
        r = g_statmount(id);
        e = errno;
        printf("%ld %d %s\n", n, has, res(r, e));
        return fflush(stdout) ? 1 : 0;
}

static bool row14(char *msg) {
        uint64_t one[1];
        struct utsname u;
        char *out, *want, st[64] = "";
        long n = -1;
        int has = 0;

        if (g_listmount(one, 1) < 0 && errno == ENOSYS) {
                uname(&u);
                snprintf(msg, MSG_MAX,
                         "SKIP listmount() and statmount() need Linux 6.8 (this is %s)", u.release);
                return true;
        }
        /* a plain chroot, as a multi-threaded process must enter */
        out = in_ns(g_init_ns_fd, listmount_chrooted, NULL);
        if (!out || sscanf(out, "%ld %d %63s", &n, &has, st) != 3) {
                snprintf(msg, MSG_MAX, "the chrooted child failed");
                return false;
        }
        want = user_mountinfo();
        snprintf(msg, MSG_MAX,
                 "after fchdir(root_fd) + chroot(\".\"): listmount() lists %ld mounts "
                 "(the namespace's mountinfo has %d), %s among them: %s; statmount() of it: %s",
                 n, count_lines(want), g_dir, has ? "yes" : "no", st);
        if (g_fixed)
                return n == count_lines(want) && has && strcmp(st, "ok") == 0;
        return n == 0 && !has && strcmp(st, "ENOENT") == 0;
}

static const struct row rows[] = {
        { "mount(2) of a new tmpfs", row1 },
        { "umount2", row2 },
        { "bind and rbind", row3 },
        { "MS_MOVE and move_mount", row4 },
        { "remount and bind-remount read-only", row5 },
        { "open_tree(OPEN_TREE_CLONE)", row6 },
        { "mount_setattr", row7 },
        { "pivot_root", row8 },
        { "propagation change and fspick reconfigure vs MS_REMOUNT", row9 },
        { "/proc/self/mounts and mountinfo", row10 },
        { "/proc/self/ns/mnt", row11 },
        { "setuid programs (" SETUID_BIN ")", row12 },
        { "unshare(CLONE_NEWNS)", row13 },
        { "listmount() and statmount() after a plain chroot", row14 },
};

static const char *const glitch_text[] = {
        "EINVAL",
        "EINVAL",
        "EINVAL",
        "EINVAL",
        "EINVAL",
        "EINVAL",
        "EINVAL",
        "EINVAL",
        "the propagation change and fspick reconfigure succeed where MS_REMOUNT gets EINVAL",
        "0 lines",
        "the old namespace",
        "setuid lost: euid stays the user's",
        "copies the old namespace",
        "list the old namespace: nothing reachable, statmount ENOENT",
};

static const char *const fixed_text[] = {
        "works",
        "works",
        "works",
        "works",
        "works",
        "works",
        "works",
        "works",
        "consistent: all succeed joined; fspick refused like MS_REMOUNT when only chrooted",
        "lists the namespace",
        "the user's namespace",
        "setuid honoured: euid 0",
        "copies the user's namespace",
        "list the user's namespace (as its mountinfo)",
};

static void usage(void) {
        fprintf(stderr, "usage: glitch-rows --expect glitch|fixed --user USER --dir DIR\n");
        exit(2);
}

int main(int argc, char **argv) {
        const char *expect = NULL, *user = NULL;
        struct passwd *pw;
        struct stat st;
        nsc_conn *conn = NULL;
        char *ready;
        unsigned i;
        int r, failed = 0;

        for (i = 1; i < (unsigned) argc; i++) {
                if (strcmp(argv[i], "--expect") == 0 && i + 1 < (unsigned) argc)
                        expect = argv[++i];
                else if (strcmp(argv[i], "--user") == 0 && i + 1 < (unsigned) argc)
                        user = argv[++i];
                else if (strcmp(argv[i], "--dir") == 0 && i + 1 < (unsigned) argc)
                        g_dir = argv[++i];
                else
                        usage();
        }
        if (!expect || !user || !g_dir || (strcmp(expect, "glitch") && strcmp(expect, "fixed")))
                usage();
        g_fixed = strcmp(expect, "fixed") == 0;
        setvbuf(stdout, NULL, _IOLBF, 0);

        printf("1..%zu\n", sizeof(rows) / sizeof(rows[0]));
        if (geteuid() != 0) {
                printf("Bail out! needs root\n");
                return 2;
        }
        pw = getpwnam(user);
        if (!pw) {
                printf("Bail out! no user %s\n", user);
                return 2;
        }
        g_uid = pw->pw_uid;
        g_gid = pw->pw_gid;

        g_init_ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (g_init_ns_fd < 0 || fstat(g_init_ns_fd, &st) < 0) {
                printf("Bail out! /proc/self/ns/mnt: %s\n", strerror(errno));
                return 2;
        }
        g_init_ns_ino = st.st_ino;
        g_init_mountinfo = read_file("/proc/self/mountinfo");

        r = nsc_connect(NULL, &conn);
        if (r >= 0)
                r = nsc_join(conn, g_uid, NSC_JOIN_NO_CREATE, &g_join);
        if (r < 0) {
                printf("Bail out! nsc_join(%s): %s%s%s\n", user, strerror(-r),
                       conn && nsc_last_error_message(conn) ? ": " : "",
                       conn && nsc_last_error_message(conn) ? nsc_last_error_message(conn) : "");
                return 2;
        }
        nsc_disconnect(conn);
        if (fstat(g_join.ns_fd, &st) < 0 || st.st_ino != g_join.ns_inode ||
            st.st_ino == g_init_ns_ino) {
                printf("Bail out! nsfs descriptor's inode %llu, nsd says %llu, initial namespace "
                       "%llu\n",
                       (unsigned long long) st.st_ino, (unsigned long long) g_join.ns_inode,
                       (unsigned long long) g_init_ns_ino);
                return 2;
        }
        if (mi_has(g_init_mountinfo, g_dir, BASE_SOURCE)) {
                printf("Bail out! %s is mounted in the initial namespace too\n", g_dir);
                return 2;
        }
        printf("# %s's namespace: inode %llu (initial namespace %llu)\n", user,
               (unsigned long long) g_join.ns_inode, (unsigned long long) g_init_ns_ino);

        ready = in_ns(g_join.ns_fd, fixtures, NULL);
        if (!ready || strcmp(ready, "ready\n") != 0) {
                printf("Bail out! cannot make the fixture mounts under %s in %s's namespace\n",
                       g_dir, user);
                return 2;
        }

        /* how nsc_enter_chroot() enters on this kernel */
        {
                int p[2], used = -1;
                pid_t pid;
                char m[MSG_MAX];

                if (pipe2(p, O_CLOEXEC) < 0)
                        return 2;
                pid = fork();
                if (pid == 0) {
                        close(p[0]);
                        used = enter(m) < 0 ? -1 : g_used_setns;
                        _exit(write(p[1], &used, sizeof(used)) == sizeof(used) ? 0 : 1);
                }
                close(p[1]);
                if (read(p[0], &used, sizeof(used)) != sizeof(used))
                        used = -1;
                close(p[0]);
                wait_status(pid);
                if (used < 0) {
                        printf("Bail out! nsc_enter_chroot() fails\n");
                        return 2;
                }
                printf("# nsc_enter_chroot(root descriptor) entered with %s\n",
                       used ? "setns(root_fd) (kernel F1)"
                            : "fchdir(root_fd) + chroot(\".\") (no F1)");
                if (used != g_fixed) {
                        /* the rows still run (and show what this kernel does); the run fails */
                        printf("# WRONG KERNEL: --expect %s wants %s; the rows below will not "
                               "match\n",
                               expect, g_fixed ? "setns(root_fd)" : "fchdir+chroot");
                        failed++;
                }
        }

        for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                char msg[MSG_MAX] = "";
                int p[2], st2;
                pid_t pid;
                ssize_t n;
                bool ok = false;
                char *got;

                if (pipe2(p, O_CLOEXEC) < 0)
                        return 2;
                fflush(stdout);
                pid = fork();
                if (pid < 0)
                        return 2;
                if (pid == 0) {
                        close(p[0]);
                        ok = rows[i].fn(msg);
                        msg[MSG_MAX - 1] = '\0';
                        n = write(p[1], msg, strlen(msg));
                        _exit(ok && n >= 0 ? 0 : 1);
                }
                close(p[1]);
                got = read_fd_all(p[0]);
                close(p[0]);
                st2 = wait_status(pid);
                ok = st2 == 0;
                if (!ok)
                        failed++;
                /* a row that cannot run on this kernel says "SKIP why" */
                if (ok && strncmp(got, "SKIP ", 5) == 0) {
                        printf("ok %u - row %u: %s # SKIP %s\n", i + 1, i + 1, rows[i].what,
                               got + 5);
                        free(got);
                        continue;
                }
                /* one line per row: what the mode expects, then what was seen */
                printf("%sok %u - row %u: %s: %s%s -- seen: %s%s\n", ok ? "" : "not ", i + 1, i + 1,
                       rows[i].what, ok ? "" : "expected ",
                       g_fixed ? fixed_text[i] : glitch_text[i],
                       *got ? got : "(no report from the child)",
                       st2 > 1 ? (st2 >= 128 ? " [child killed by a signal]" : " [child failed]")
                               : "");
                free(got);
        }
        return failed ? 1 : 0;
}
