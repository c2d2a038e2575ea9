/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fault-shim.c: an LD_PRELOAD library for tests that makes chosen calls fail, to show that
 * nsd survives what a loaded machine does to it (a pids cgroup limit, memory pressure, a full
 * descriptor table). Test-only: built by meson, never installed.
 *
 *   NSD_FAULT=SPEC[,SPEC...]   SPEC is CALL:N:ERRNO[:COUNT]: the Nth call of CALL (counted
 *                              from the start of the process, 1 = the first) and the COUNT-1
 *                              calls after it fail with ERRNO (a name such as EAGAIN, or a
 *                              number) instead of being made. COUNT defaults to 1; 0 means
 *                              every call from the Nth on.
 *   NSD_FAULT_TRACE=FILE       append one line per intercepted call to FILE:
 *                                  CALL N OBJECT+0xOFFSET ok|FAIL ERRNO [ARG]
 *                              OBJECT+OFFSET is the return address of the call (the call
 *                              site: `addr2line -e OBJECT OFFSET-1`), ARG the path or target
 *                              where the call has one, for clone "fn=OBJECT+0xOFFSET" of the
 *                              child's function (which helper child it makes). A forked
 *                              child of nsd's (child.c) that closed the trace's descriptor
 *                              opens the file again: its calls are traced too.
 *
 * CALL is one of: clone unshare setns mount umount2 open_tree move_mount mount_setattr fspick
 * open openat openat2 accept accept4 sendmsg recvmsg pidfd_open fsopen fsconfig fsmount
 * mkdirat execveat fcntl fstat. open, openat, fcntl and fstat count the 64-bit variants too
 * (open64, __open_2, fcntl64, fstat64, ...); fcntl's ARG in the trace is its command
 * (F_DUPFD_CLOEXEC, F_GET_SEALS, ... or the number);
 * openat2, pidfd_open and execveat are reached through syscall(2), which glibc has no
 * wrapper for (or nsd does not use it), and so is every other CALL when made with
 * syscall(SYS_...).
 *
 * nsd's helper children run in nsd's address space (CLONE_VM | CLONE_VFORK), and its watched
 * children (child.c) are forked: the counters are shared with both (a MAP_SHARED page), and
 * everything here that runs per call is async-signal-safe (no malloc, no stdio, no locks):
 * the real functions and the map of loaded objects are looked up once, at load time.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/* open and open64 (and so on) are interposed apiece: no redirection of one to the other */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The calls: X(NAME, "name") is C_NAME, called name in NSD_FAULT and in the trace. */
#define CALLS(X)                          \
        X(CLONE, "clone")                 \
        X(UNSHARE, "unshare")             \
        X(SETNS, "setns")                 \
        X(MOUNT, "mount")                 \
        X(UMOUNT2, "umount2")             \
        X(OPEN_TREE, "open_tree")         \
        X(MOVE_MOUNT, "move_mount")       \
        X(MOUNT_SETATTR, "mount_setattr") \
        X(FSPICK, "fspick")               \
        X(OPEN, "open")                   \
        X(OPENAT, "openat")               \
        X(OPENAT2, "openat2")             \
        X(ACCEPT, "accept")               \
        X(ACCEPT4, "accept4")             \
        X(SENDMSG, "sendmsg")             \
        X(RECVMSG, "recvmsg")             \
        X(PIDFD_OPEN, "pidfd_open")       \
        X(FSOPEN, "fsopen")               \
        X(FSCONFIG, "fsconfig")           \
        X(FSMOUNT, "fsmount")             \
        X(MKDIRAT, "mkdirat")             \
        X(EXECVEAT, "execveat")           \
        X(FCNTL, "fcntl")                 \
        X(FSTAT, "fstat")
#define CALL_ENUM(c, name) C_##c,
#define CALL_NAME(c, name) [C_##c] = name,

enum call { CALLS(CALL_ENUM) _C_MAX };

static const char *const call_name[_C_MAX] = { CALLS(CALL_NAME) };

static const struct {
        const char *name;
        int value;
} errno_names[] = {
        { "EAGAIN", EAGAIN }, { "ENOMEM", ENOMEM },   { "EMFILE", EMFILE },
        { "ENFILE", ENFILE }, { "EINTR", EINTR },     { "ETIMEDOUT", ETIMEDOUT },
        { "EBUSY", EBUSY },   { "ENOSPC", ENOSPC },   { "EIO", EIO },
        { "EPERM", EPERM },   { "EACCES", EACCES },   { "EINVAL", EINVAL },
        { "ENOENT", ENOENT }, { "ENOBUFS", ENOBUFS }, { "ECONNABORTED", ECONNABORTED },
        { "EPIPE", EPIPE },   { "ENOSYS", ENOSYS },
};

#define RULES_MAX 16
static struct rule {
        enum call call;
        long first; /* 1-based */
        long count; /* 0: forever */
        int err;
} rules[RULES_MAX];
static int n_rules;

/* shared with forked children (child.c's): MAP_SHARED, set up at load time */
static long static_counters[_C_MAX];
static long *counters = static_counters;
static int trace_fd = -1;
static char trace_path[512];

/* the real functions */
static int (*real_clone)(int (*)(void *), void *, int, void *, ...);
static int (*real_unshare)(int);
static int (*real_setns)(int, int);
static int (*real_mount)(const char *, const char *, const char *, unsigned long, const void *);
static int (*real_umount2)(const char *, int);
static int (*real_open_tree)(int, const char *, unsigned);
static int (*real_move_mount)(int, const char *, int, const char *, unsigned);
static int (*real_mount_setattr)(int, const char *, unsigned, struct mount_attr *, size_t);
static int (*real_fspick)(int, const char *, unsigned);
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_open_2)(const char *, int);
static int (*real_open64_2)(const char *, int);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_openat_2)(int, const char *, int);
static int (*real_openat64_2)(int, const char *, int);
static int (*real_accept)(int, struct sockaddr *, socklen_t *);
static int (*real_accept4)(int, struct sockaddr *, socklen_t *, int);
static ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
static ssize_t (*real_recvmsg)(int, struct msghdr *, int);
static long (*real_syscall)(long, ...);
static int (*real_fsopen)(const char *, unsigned);
static int (*real_fsconfig)(int, unsigned, const char *, const void *, int);
static int (*real_fsmount)(int, unsigned, unsigned);
static int (*real_mkdirat)(int, const char *, mode_t);
static int (*real_fcntl)(int, int, ...);
static int (*real_fcntl64)(int, int, ...);
static int (*real_fstat)(int, struct stat *);
static int (*real_fstat64)(int, struct stat64 *);

/* Loaded objects, for call sites as object+offset. */
#define OBJECTS_MAX 64
static struct object {
        uintptr_t base, start, end;
        char name[256];
} objects[OBJECTS_MAX];
static int n_objects;

/* ---- async-signal-safe formatting ------------------------------------------------------ */

struct line {
        char buf[512];
        size_t len;
};

static void put_str(struct line *l, const char *s) {
        while (s && *s && l->len < sizeof l->buf - 1)
                l->buf[l->len++] = *s++;
}

static void put_num(struct line *l, unsigned long v, unsigned base) {
        char d[24];
        int n = 0;

        do {
                d[n++] = "0123456789abcdef"[v % base];
                v /= base;
        } while (v && n < (int) sizeof d);
        if (base == 16)
                put_str(l, "0x");
        while (n > 0 && l->len < sizeof l->buf - 1)
                l->buf[l->len++] = d[--n];
}

static const char *errno_name(int e) {
        for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++)
                if (errno_names[i].value == e)
                        return errno_names[i].name;
        return NULL;
}

static void put_addr(struct line *l, const void *p) {
        uintptr_t a = (uintptr_t) p;

        for (int i = 0; i < n_objects; i++)
                if (a >= objects[i].start && a < objects[i].end) {
                        put_str(l, objects[i].name);
                        put_str(l, "+");
                        put_num(l, a - objects[i].base, 16);
                        return;
                }
        put_num(l, a, 16);
}

/* fn: for clone, the child's function (which helper it is), else NULL */
static void trace(enum call c, long n, const void *caller, int fail_err, const char *arg,
                  const void *fn) {
        struct line l = { .len = 0 };
        int saved = errno;

        if (trace_fd < 0)
                return;
        put_str(&l, call_name[c]);
        put_str(&l, " ");
        put_num(&l, (unsigned long) n, 10);
        put_str(&l, " ");
        put_addr(&l, caller);
        if (fail_err) {
                const char *en = errno_name(fail_err);
                put_str(&l, " FAIL ");
                if (en)
                        put_str(&l, en);
                else
                        put_num(&l, (unsigned long) fail_err, 10);
        } else
                put_str(&l, " ok");
        if (fn) {
                put_str(&l, " fn=");
                put_addr(&l, fn);
        } else if (arg) {
                put_str(&l, " ");
                put_str(&l, arg);
        }
        put_str(&l, "\n");
        if (write(trace_fd, l.buf, l.len) < 0 && errno == EBADF) {
                /* a child of nsd's (child.c) closed every descriptor it was not given:
                 * open the trace again, before the child enters another namespace (its
                 * first traced call, setns, comes before the call is made) */
                int fd = (int) real_syscall(SYS_openat, AT_FDCWD, trace_path,
                                            O_WRONLY | O_APPEND | O_CLOEXEC, 0);
                if (fd >= 0) {
                        (void) real_fcntl(fd, F_DUPFD_CLOEXEC, trace_fd);
                        close(fd);
                        (void) !write(trace_fd, l.buf, l.len);
                }
        }
        errno = saved;
}

/* Count a call of c; 0: make it, else the errno to fail it with. */
static int fault(enum call c, const void *caller, const char *arg, const void *fn) {
        long n = __atomic_add_fetch(&counters[c], 1, __ATOMIC_SEQ_CST);
        int err = 0;

        for (int i = 0; i < n_rules; i++)
                if (rules[i].call == c && n >= rules[i].first &&
                    (rules[i].count == 0 || n < rules[i].first + rules[i].count)) {
                        err = rules[i].err;
                        break;
                }
        trace(c, n, caller, err, arg, fn);
        return err;
}

#define FAULT_OR_FN(c, arg, fn)                                                \
        do {                                                                   \
                int _e = fault((c), __builtin_return_address(0), (arg), (fn)); \
                if (_e) {                                                      \
                        errno = _e;                                            \
                        return -1;                                             \
                }                                                              \
        } while (0)
#define FAULT_OR(c, arg) FAULT_OR_FN(c, arg, NULL)

/* ---- the interposed calls -------------------------------------------------------------- */

/* glibc declares these only for _FORTIFY_SOURCE or _FILE_OFFSET_BITS=64 */
int open64(const char *path, int flags, ...);
int openat64(int dfd, const char *path, int flags, ...);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dfd, const char *path, int flags);
int __openat64_2(int dfd, const char *path, int flags);

/* The call name: the fault of c (arg: the path or target it names, for the trace, or NULL),
 * or else the real call */
#define INTERPOSE(ret, name, c, arg, params, real, args) \
        ret name params {                                \
                FAULT_OR(c, arg);                        \
                return real args;                        \
        }

int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...) {
        va_list ap;
        void *ptid, *tls, *ctid;

        va_start(ap, arg);
        ptid = va_arg(ap, void *);
        tls = va_arg(ap, void *);
        ctid = va_arg(ap, void *);
        va_end(ap);
        FAULT_OR_FN(C_CLONE, NULL, (const void *) fn);
        return real_clone(fn, stack, flags, arg, ptid, tls, ctid);
}

INTERPOSE(int, unshare, C_UNSHARE, NULL, (int flags), real_unshare, (flags))
INTERPOSE(int, setns, C_SETNS, NULL, (int fd, int nstype), real_setns, (fd, nstype))
INTERPOSE(int, mount, C_MOUNT, target,
          (const char *source, const char *target, const char *type, unsigned long flags,
           const void *data),
          real_mount, (source, target, type, flags, data))
INTERPOSE(int, umount2, C_UMOUNT2, target, (const char *target, int flags), real_umount2,
          (target, flags))
INTERPOSE(int, open_tree, C_OPEN_TREE, path, (int dfd, const char *path, unsigned flags),
          real_open_tree, (dfd, path, flags))
INTERPOSE(int, move_mount, C_MOVE_MOUNT, to,
          (int from_dfd, const char *from, int to_dfd, const char *to, unsigned flags),
          real_move_mount, (from_dfd, from, to_dfd, to, flags))
INTERPOSE(int, mount_setattr, C_MOUNT_SETATTR, path,
          (int dfd, const char *path, unsigned flags, struct mount_attr *attr, size_t size),
          real_mount_setattr, (dfd, path, flags, attr, size))
INTERPOSE(int, fspick, C_FSPICK, path, (int dfd, const char *path, unsigned flags), real_fspick,
          (dfd, path, flags))
INTERPOSE(int, fsopen, C_FSOPEN, fs, (const char *fs, unsigned flags), real_fsopen, (fs, flags))
INTERPOSE(int, fsconfig, C_FSCONFIG, key,
          (int fd, unsigned cmd, const char *key, const void *value, int aux), real_fsconfig,
          (fd, cmd, key, value, aux))
INTERPOSE(int, fsmount, C_FSMOUNT, NULL, (int fd, unsigned flags, unsigned attr), real_fsmount,
          (fd, flags, attr))
INTERPOSE(int, mkdirat, C_MKDIRAT, path, (int dfd, const char *path, mode_t mode), real_mkdirat,
          (dfd, path, mode))

static mode_t open_mode(int flags, va_list ap) {
        return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t) va_arg(ap, int) : 0;
}

/* open(), openat() and their 64 forms: the mode comes only with O_CREAT or O_TMPFILE */
#define INTERPOSE_OPEN(name, c, params, args) \
        int name params {                     \
                va_list ap;                   \
                mode_t mode;                  \
                                              \
                va_start(ap, flags);          \
                mode = open_mode(flags, ap);  \
                va_end(ap);                   \
                FAULT_OR(c, path);            \
                return real_##name args;      \
        }

INTERPOSE_OPEN(open, C_OPEN, (const char *path, int flags, ...), (path, flags, mode))
INTERPOSE_OPEN(open64, C_OPEN, (const char *path, int flags, ...), (path, flags, mode))
INTERPOSE_OPEN(openat, C_OPENAT, (int dfd, const char *path, int flags, ...),
               (dfd, path, flags, mode))
INTERPOSE_OPEN(openat64, C_OPENAT, (int dfd, const char *path, int flags, ...),
               (dfd, path, flags, mode))

INTERPOSE(int, __open_2, C_OPEN, path, (const char *path, int flags), real_open_2, (path, flags))
INTERPOSE(int, __open64_2, C_OPEN, path, (const char *path, int flags), real_open64_2,
          (path, flags))
INTERPOSE(int, __openat_2, C_OPENAT, path, (int dfd, const char *path, int flags), real_openat_2,
          (dfd, path, flags))
INTERPOSE(int, __openat64_2, C_OPENAT, path, (int dfd, const char *path, int flags),
          real_openat64_2, (dfd, path, flags))
INTERPOSE(int, accept, C_ACCEPT, NULL, (int fd, struct sockaddr *addr, socklen_t *len), real_accept,
          (fd, addr, len))
INTERPOSE(int, accept4, C_ACCEPT4, NULL, (int fd, struct sockaddr *addr, socklen_t *len, int flags),
          real_accept4, (fd, addr, len, flags))
INTERPOSE(ssize_t, sendmsg, C_SENDMSG, NULL, (int fd, const struct msghdr *msg, int flags),
          real_sendmsg, (fd, msg, flags))
INTERPOSE(ssize_t, recvmsg, C_RECVMSG, NULL, (int fd, struct msghdr *msg, int flags), real_recvmsg,
          (fd, msg, flags))

/* fcntl's command, for the trace: the ones nsd uses by name */
static const char *fcntl_cmd(int cmd, char buf[static 16]) {
        struct line l = { .len = 0 };

        switch (cmd) {
        case F_DUPFD:
                return "F_DUPFD";
        case F_DUPFD_CLOEXEC:
                return "F_DUPFD_CLOEXEC";
        case F_GETFD:
                return "F_GETFD";
        case F_SETFD:
                return "F_SETFD";
        case F_GETFL:
                return "F_GETFL";
        case F_SETFL:
                return "F_SETFL";
        case F_ADD_SEALS:
                return "F_ADD_SEALS";
        case F_GET_SEALS:
                return "F_GET_SEALS";
        }
        put_str(&l, "cmd=");
        put_num(&l, (unsigned long) cmd, 10);
        memcpy(buf, l.buf, l.len < 15 ? l.len : 15);
        buf[l.len < 15 ? l.len : 15] = '\0';
        return buf;
}

/* fcntl(2) and fcntl64: the third argument, whatever its type, is passed on as glibc's own
 * wrapper reads it (one word) */
#define INTERPOSE_FCNTL(name)                           \
        int name(int fd, int cmd, ...) {                \
                char buf[16];                           \
                va_list ap;                             \
                void *arg;                              \
                                                        \
                va_start(ap, cmd);                      \
                arg = va_arg(ap, void *);               \
                va_end(ap);                             \
                FAULT_OR(C_FCNTL, fcntl_cmd(cmd, buf)); \
                return real_##name(fd, cmd, arg);       \
        }

int fcntl64(int fd, int cmd, ...);
INTERPOSE_FCNTL(fcntl)
INTERPOSE_FCNTL(fcntl64)

INTERPOSE(int, fstat, C_FSTAT, NULL, (int fd, struct stat *st), real_fstat, (fd, st))
INTERPOSE(int, fstat64, C_FSTAT, NULL, (int fd, struct stat64 *st), real_fstat64, (fd, st))

/* syscall(2): the calls above by number, and those glibc has no wrapper for. */
long syscall(long nr, ...) {
        long a[6];
        va_list ap;
        int c = -1;

        va_start(ap, nr);
        for (int i = 0; i < 6; i++)
                a[i] = va_arg(ap, long);
        va_end(ap);
        switch (nr) {
        case SYS_clone:
#ifdef SYS_clone3
        case SYS_clone3:
#endif
                c = C_CLONE;
                break;
        case SYS_unshare:
                c = C_UNSHARE;
                break;
        case SYS_setns:
                c = C_SETNS;
                break;
        case SYS_mount:
                c = C_MOUNT;
                break;
        case SYS_umount2:
                c = C_UMOUNT2;
                break;
#ifdef SYS_open_tree
        case SYS_open_tree:
                c = C_OPEN_TREE;
                break;
        case SYS_move_mount:
                c = C_MOVE_MOUNT;
                break;
        case SYS_fspick:
                c = C_FSPICK;
                break;
#endif
#ifdef SYS_mount_setattr
        case SYS_mount_setattr:
                c = C_MOUNT_SETATTR;
                break;
#endif
        case SYS_open:
                c = C_OPEN;
                break;
        case SYS_openat:
                c = C_OPENAT;
                break;
#ifdef SYS_openat2
        case SYS_openat2:
                c = C_OPENAT2;
                break;
#endif
        case SYS_accept:
                c = C_ACCEPT;
                break;
        case SYS_accept4:
                c = C_ACCEPT4;
                break;
        case SYS_sendmsg:
                c = C_SENDMSG;
                break;
        case SYS_recvmsg:
                c = C_RECVMSG;
                break;
#ifdef SYS_pidfd_open
        case SYS_pidfd_open:
                c = C_PIDFD_OPEN;
                break;
#endif
#ifdef SYS_fsopen
        case SYS_fsopen:
                c = C_FSOPEN;
                break;
        case SYS_fsconfig:
                c = C_FSCONFIG;
                break;
        case SYS_fsmount:
                c = C_FSMOUNT;
                break;
#endif
        case SYS_mkdirat:
                c = C_MKDIRAT;
                break;
        case SYS_execveat:
                c = C_EXECVEAT;
                break;
        case SYS_fcntl:
                c = C_FCNTL;
                break;
        case SYS_fstat:
                c = C_FSTAT;
                break;
        }
        if (c >= 0)
                FAULT_OR((enum call) c, NULL);
        return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* ---- set up, at load time -------------------------------------------------------------- */

static void die(const char *what, const char *arg) {
        struct line l = { .len = 0 };

        put_str(&l, "fault-shim: ");
        put_str(&l, what);
        put_str(&l, arg ? " '" : "");
        put_str(&l, arg);
        put_str(&l, arg ? "'" : "");
        put_str(&l, "\n");
        (void) !write(STDERR_FILENO, l.buf, l.len);
        _exit(127);
}

static void *lookup(const char *name, bool required) {
        void *p = dlsym(RTLD_NEXT, name);

        if (!p && required)
                die("cannot find the real function", name);
        return p;
}

static int parse_errno(const char *s) {
        char *end;
        long v;

        for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++)
                if (strcmp(errno_names[i].name, s) == 0)
                        return errno_names[i].value;
        v = strtol(s, &end, 10);
        if (*s && !*end && v > 0 && v < 4096)
                return (int) v;
        die("unknown errno", s);
        return 0;
}

static void parse_rules(const char *spec) {
        char buf[1024], *save = NULL;

        if (strlen(spec) >= sizeof buf)
                die("NSD_FAULT is too long", NULL);
        strcpy(buf, spec);
        for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *f[4] = {}, *s2 = NULL, *end;
                int n = 0, c;
                struct rule *r;

                for (char *p = strtok_r(tok, ":", &s2); p && n < 4; p = strtok_r(NULL, ":", &s2))
                        f[n++] = p;
                if (n < 3)
                        die("a rule is CALL:N:ERRNO[:COUNT], not", tok);
                for (c = 0; c < _C_MAX; c++)
                        if (strcmp(call_name[c], f[0]) == 0)
                                break;
                if (c == _C_MAX)
                        die("unknown call", f[0]);
                if (n_rules == RULES_MAX)
                        die("too many rules", NULL);
                r = &rules[n_rules++];
                r->call = (enum call) c;
                r->first = strtol(f[1], &end, 10);
                if (*end || r->first < 1)
                        die("N must be 1 or more, not", f[1]);
                r->err = parse_errno(f[2]);
                r->count = 1;
                if (n == 4) {
                        r->count = strtol(f[3], &end, 10);
                        if (*end || r->count < 0)
                                die("COUNT must be 0 or more, not", f[3]);
                }
        }
}

static int add_object(struct dl_phdr_info *info, size_t size, void *data) {
        struct object *o;
        const char *name = info->dlpi_name;
        uintptr_t lo = UINTPTR_MAX, hi = 0;

        if (n_objects == OBJECTS_MAX)
                return 1;
        for (int i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                if (ph->p_type != PT_LOAD)
                        continue;
                if (info->dlpi_addr + ph->p_vaddr < lo)
                        lo = info->dlpi_addr + ph->p_vaddr;
                if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
                        hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        }
        if (lo >= hi)
                return 0;
        o = &objects[n_objects++];
        o->base = info->dlpi_addr;
        o->start = lo;
        o->end = hi;
        if (!name || !*name) {
                ssize_t n = readlink("/proc/self/exe", o->name, sizeof o->name - 1);
                o->name[n > 0 ? n : 0] = '\0';
        } else {
                strncpy(o->name, name, sizeof o->name - 1);
        }
        return 0;
}

__attribute__((constructor)) static void fault_shim_init(void) {
        const char *spec = getenv("NSD_FAULT"), *tpath = getenv("NSD_FAULT_TRACE");

        real_clone = lookup("clone", true);
        real_unshare = lookup("unshare", true);
        real_setns = lookup("setns", true);
        real_mount = lookup("mount", true);
        real_umount2 = lookup("umount2", true);
        real_open_tree = lookup("open_tree", true);
        real_move_mount = lookup("move_mount", true);
        real_mount_setattr = lookup("mount_setattr", true);
        real_fspick = lookup("fspick", true);
        real_open = lookup("open", true);
        real_open64 = lookup("open64", true);
        real_open_2 = lookup("__open_2", true);
        real_open64_2 = lookup("__open64_2", true);
        real_openat = lookup("openat", true);
        real_openat64 = lookup("openat64", true);
        real_openat_2 = lookup("__openat_2", true);
        real_openat64_2 = lookup("__openat64_2", true);
        real_accept = lookup("accept", true);
        real_accept4 = lookup("accept4", true);
        real_sendmsg = lookup("sendmsg", true);
        real_recvmsg = lookup("recvmsg", true);
        real_syscall = lookup("syscall", true);
        real_fsopen = lookup("fsopen", true);
        real_fsconfig = lookup("fsconfig", true);
        real_fsmount = lookup("fsmount", true);
        real_mkdirat = lookup("mkdirat", true);
        real_fcntl = lookup("fcntl", true);
        real_fcntl64 = lookup("fcntl64", false) ?: real_fcntl;
        real_fstat = lookup("fstat", true);
        real_fstat64 = lookup("fstat64", false) ?: (int (*)(int, struct stat64 *)) real_fstat;

        /* one count for nsd and its children, forked ones too: a child's Nth call is the
         * Nth of all, and a child forked again after a failure (a retried setup) goes on
         * counting instead of meeting the same Nth call again */
        void *m = mmap(NULL, sizeof static_counters, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED)
                counters = m;
        if (spec && *spec)
                parse_rules(spec);
        if (tpath && *tpath) {
                int fd = (int) real_syscall(SYS_openat, AT_FDCWD, tpath,
                                            O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
                if (fd < 0)
                        die("cannot open NSD_FAULT_TRACE", tpath);
                if (strlen(tpath) >= sizeof trace_path)
                        die("NSD_FAULT_TRACE is too long", tpath);
                strcpy(trace_path, tpath);
                /* out of the way of the descriptors the program counts on */
                trace_fd = real_fcntl(fd, F_DUPFD_CLOEXEC, 700);
                close(fd);
                if (trace_fd < 0)
                        die("cannot move the trace descriptor", NULL);
        }
        dl_iterate_phdr(add_object, NULL);
}
