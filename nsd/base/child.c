/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * child.c: see child.h.
 *
 * The child is made with the raw clone system call: no CLONE_VM (its own copy of memory,
 * so it may write its argument and stack freely), no CLONE_FILES (its own descriptor table,
 * which it empties), CLONE_PIDFD for the watch, and exit signal 0 so that neither GLib nor
 * anyone else reaps it: waitid(P_PIDFD, __WALL) does, once the pidfd says it exited.
 * (clone3 would do too, but systemd's RestrictNamespaces= turns clone3 into ENOSYS.) Every
 * signal is blocked across the clone, so no handler of nsd's ever runs in the child.
 *
 * The child's report travels over a SOCK_SEQPACKET socketpair: one datagram with its copy
 * of the argument and, by SCM_RIGHTS, the descriptor it hands back.
 */
#include "base/child.h"

#include <errno.h>
#include <glib-unix.h>
#include <glib.h>
#include <linux/sched.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "socket-util.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

typedef struct Child {
        Children *set;
        uid_t uid;
        pid_t pid;
        int pidfd;
        int sock; /* our end of the report socket */
        size_t arg_size;
        guint watch; /* pidfd readable: exited */
        guint deadline;
        ChildDone done; /* NULL once called */
        void *userdata;
        bool killed; /* past its deadline: stuck until it ends */
} Child;

/* What one uid holds. */
typedef struct UidCount {
        unsigned running;
        unsigned stuck;
} UidCount;

struct Children {
        unsigned max;
        unsigned running;   /* not killed yet */
        unsigned stuck;     /* killed, not ended yet */
        GHashTable *all;    /* Child* set */
        GHashTable *by_uid; /* uid -> UidCount* */
        void (*on_free)(void *userdata);
        void *on_free_userdata;
};

static UidCount *uid_count(const Children *set, uid_t uid) {
        return g_hash_table_lookup(set->by_uid, GUINT_TO_POINTER(uid));
}

static UidCount *uid_count_get(Children *set, uid_t uid) {
        UidCount *n = uid_count(set, uid);

        if (!n) {
                n = g_new0(UidCount, 1);
                g_hash_table_insert(set->by_uid, GUINT_TO_POINTER(uid), n);
        }
        return n;
}

static void uid_count_drop_empty(Children *set, uid_t uid) {
        UidCount *n = uid_count(set, uid);

        if (n && n->running == 0 && n->stuck == 0)
                g_hash_table_remove(set->by_uid, GUINT_TO_POINTER(uid));
}

static unsigned per_uid_max(const Children *set) {
        return MAX(set->max / 4, 1u);
}

/* Running slots only CHILD_SYSTEM walks take. */
static unsigned reserve(const Children *set) {
        return set->max >= 4 ? set->max / 4 : set->max >= 2 ? 1 : 0;
}

static bool may_start(const Children *set, uid_t uid, ChildClass cls) {
        const UidCount *n = uid_count(set, uid);
        unsigned running = n ? n->running : 0, stuck = n ? n->stuck : 0;

        if (running >= per_uid_max(set) || stuck >= per_uid_max(set))
                return false;
        if (cls == CHILD_SYSTEM)
                return set->running < set->max;
        return stuck == 0 && set->running + reserve(set) < set->max;
}

static void notify_free(Children *set) {
        if (set->on_free)
                set->on_free(set->on_free_userdata);
}

/* ---- in the child ------------------------------------------------------------------------ */

/* Close every descriptor from 3 on but sock and keep[] (at most CHILD_MAX_KEEP). */
static void child_close_all_but(int sock, const int *keep, size_t n_keep) {
        int fds[CHILD_MAX_KEEP + 1];
        size_t n = 0;
        unsigned lo = 3;

        fds[n++] = sock;
        for (size_t i = 0; i < n_keep && i < CHILD_MAX_KEEP; i++)
                fds[n++] = keep[i];
        /* insertion sort: a handful */
        for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && fds[j - 1] > fds[j]; j--) {
                        int t = fds[j];
                        fds[j] = fds[j - 1];
                        fds[j - 1] = t;
                }
        for (size_t i = 0; i < n; i++) {
                if (fds[i] < (int) lo)
                        continue;
                if ((unsigned) fds[i] > lo)
                        (void) syscall(SYS_close_range, lo, (unsigned) fds[i] - 1, 0u);
                lo = (unsigned) fds[i] + 1;
        }
        (void) syscall(SYS_close_range, lo, ~0u, 0u);
}

static _Noreturn void child_main(int sock, const int *keep, size_t n_keep, ChildFn fn, void *arg,
                                 size_t arg_size) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } control;
        struct iovec iov = { .iov_base = arg, .iov_len = arg_size };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        int fd = -1, rc;

        /* nothing of nsd's stays open in a child that may hang in the kernel, but what it was
         * given */
        child_close_all_but(sock, keep, n_keep);

        rc = fn(arg, &fd);
        if (fd >= 0)
                cmsg_put_fds(&mh, control.buf, &fd, 1);
        /* its own sendmsg(), not send_with_fds(): the fault suite tells call sites apart */
        (void) sendmsg(sock, &mh, MSG_NOSIGNAL);
        _exit(rc & 0x7f);
}

/* ---- in nsd ------------------------------------------------------------------------------ */

static void child_forget(Child *ch) {
        Children *set = ch->set;

        g_clear_handle_id(&ch->watch, g_source_remove);
        g_clear_handle_id(&ch->deadline, g_source_remove);
        if (ch->sock >= 0)
                close(ch->sock);
        close(ch->pidfd);
        UidCount *n = uid_count_get(set, ch->uid);
        if (ch->killed) {
                n->stuck--;
                set->stuck--;
        } else {
                n->running--;
                set->running--;
        }
        uid_count_drop_empty(set, ch->uid);
        g_hash_table_remove(set->all, ch);
        g_free(ch);
}

static void child_report(Child *ch, int r, const void *result, int fd) {
        ChildDone done = ch->done;

        ch->done = NULL;
        if (done)
                done(r, result, fd, ch->userdata);
        else if (fd >= 0)
                close(fd);
}

static gboolean on_child_exit(int pidfd, GIOCondition cond, gpointer userdata) {
        Child *ch = userdata;
        siginfo_t si = { 0 };
        g_autofree void *result = g_malloc0(ch->arg_size);
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int) * 2)];
        } control;
        struct iovec iov = { .iov_base = result, .iov_len = ch->arg_size };
        struct msghdr mh = { .msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = &control,
                             .msg_controllen = sizeof control };
        int fd = -1, r;
        ssize_t n;

        ch->watch = 0;
        if (waitid((idtype_t) P_PIDFD, (id_t) pidfd, &si, WEXITED | __WALL) < 0)
                log_warning_errno(errno, "Cannot reap helper process %d: %m", (int) ch->pid);

        n = recvmsg(ch->sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n >= 0) /* the descriptor the child handed back; any more are closed */
                (void) cmsg_take_fds(&mh, &fd, 1);
        if (ch->killed)
                log_debug("Helper process %d (for uid %u) ended after it was killed", (int) ch->pid,
                          (unsigned) ch->uid);

        if (si.si_code == CLD_EXITED && si.si_status == 0)
                r = 0;
        else if (si.si_code == CLD_EXITED)
                r = -EPROTO;
        else
                r = ch->killed ? -ETIMEDOUT : -ECHILD;
        child_report(ch, r, (size_t) n == ch->arg_size ? result : NULL, fd);
        Children *set = ch->set;
        child_forget(ch);
        notify_free(set);
        return G_SOURCE_REMOVE;
}

static gboolean on_child_deadline(gpointer userdata) {
        Child *ch = userdata;

        Children *set = ch->set;
        UidCount *n = uid_count_get(set, ch->uid);

        ch->deadline = 0;
        ch->killed = true;
        /* from now on it counts against its uid only (stuck until it ends) */
        n->running--;
        set->running--;
        n->stuck++;
        set->stuck++;
        if (syscall(SYS_pidfd_send_signal, ch->pidfd, SIGKILL, NULL, 0) < 0)
                log_warning_errno(errno, "Cannot kill helper process %d: %m", (int) ch->pid);
        log_debug("Helper process %d (for uid %u) passed its deadline, killed; it may linger "
                  "in the kernel until its file system answers",
                  (int) ch->pid, (unsigned) ch->uid);
        child_report(ch, -ETIMEDOUT, NULL, -1);
        notify_free(set);
        return G_SOURCE_REMOVE;
}

static int start(Children *set, uid_t uid, ChildClass cls, ChildFn fn, const void *arg,
                 size_t arg_size, const int *keep, size_t n_keep, uint64_t timeout_usec,
                 ChildDone done, void *userdata);

int child_start(Children *set, uid_t uid, ChildClass cls, ChildFn fn, const void *arg,
                size_t arg_size, uint64_t timeout_usec, ChildDone done, void *userdata) {
        return start(set, uid, cls, fn, arg, arg_size, NULL, 0, timeout_usec, done, userdata);
}

int child_start_keep(Children *set, uid_t uid, ChildClass cls, ChildFn fn, const void *arg,
                     size_t arg_size, const int *keep, size_t n_keep, uint64_t timeout_usec,
                     ChildDone done, void *userdata) {
        return start(set, uid, cls, fn, arg, arg_size, keep, n_keep, timeout_usec, done, userdata);
}

static int start(Children *set, uid_t uid, ChildClass cls, ChildFn fn, const void *arg,
                 size_t arg_size, const int *keep, size_t n_keep, uint64_t timeout_usec,
                 ChildDone done, void *userdata) {
        g_autofree void *copy = g_memdup2(arg, arg_size);
        sigset_t all, saved;
        int sv[2], pidfd = -1;
        long pid;
        Child *ch;

        if (n_keep > CHILD_MAX_KEEP)
                return -EINVAL;
        if (!may_start(set, uid, cls))
                return -EAGAIN;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;

        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        pid = syscall(SYS_clone, (unsigned long) CLONE_PIDFD, NULL, &pidfd, NULL, 0);
        if (pid == 0) {
                close(sv[0]);
                child_main(sv[1], keep, n_keep, fn, copy, arg_size);
        }
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        close(sv[1]);
        if (pid < 0) {
                int e = errno;
                close(sv[0]);
                return -e;
        }

        ch = g_new0(Child, 1);
        ch->set = set;
        ch->uid = uid;
        ch->pid = (pid_t) pid;
        ch->pidfd = pidfd;
        ch->sock = sv[0];
        ch->arg_size = arg_size;
        ch->done = done;
        ch->userdata = userdata;
        ch->watch = g_unix_fd_add_full(G_PRIORITY_HIGH, pidfd, G_IO_IN, on_child_exit, ch, NULL);
        ch->deadline = g_timeout_add_full(G_PRIORITY_HIGH, (guint) MAX(timeout_usec / 1000, 1),
                                          on_child_deadline, ch, NULL);
        g_hash_table_add(set->all, ch);
        uid_count_get(set, uid)->running++;
        set->running++;
        return 0;
}

Children *children_new(unsigned max) {
        Children *set = g_new0(Children, 1);

        set->max = MAX(max, 1u);
        set->all = g_hash_table_new(g_direct_hash, g_direct_equal);
        set->by_uid = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        return set;
}

void children_free(Children *set) {
        GList *all;

        if (!set)
                return;
        set->on_free = NULL; /* nobody starts another now */
        all = g_hash_table_get_keys(set->all);
        for (GList *i = all; i; i = i->next) {
                Child *ch = i->data;
                (void) syscall(SYS_pidfd_send_signal, ch->pidfd, SIGKILL, NULL, 0);
                child_report(ch, -ECANCELED, NULL, -1);
                child_forget(ch); /* exit signal 0: an unreaped child of a stopping nsd */
        }
        g_list_free(all);
        g_hash_table_destroy(set->all);
        g_hash_table_destroy(set->by_uid);
        g_free(set);
}

void children_set_max(Children *set, unsigned max) {
        set->max = MAX(max, 1u);
}

unsigned children_alive(const Children *set) {
        return g_hash_table_size(set->all);
}

unsigned children_stuck(const Children *set, uid_t uid) {
        const UidCount *n;

        if (uid == (uid_t) -1)
                return set->stuck;
        n = uid_count(set, uid);
        return n ? n->stuck : 0;
}

void children_set_on_free(Children *set, void (*fn)(void *userdata), void *userdata) {
        set->on_free = fn;
        set->on_free_userdata = userdata;
}
