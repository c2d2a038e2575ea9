/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* session.c: sessions and their leaders' pidfds, see session.h. */
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"

/* The pid a pidfd refers to, from /proc/self/fdinfo ("Pid:" exists only for pidfds). */
static int pidfd_get_pid(int fd, pid_t *ret) {
        char path[64];
        g_autofree char *text = NULL;
        const char *p;

        snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
        if (!g_file_get_contents(path, &text, NULL, NULL))
                return -EIO;
        p = strstr(text, "\nPid:");
        if (!p)
                return -EBADF;
        *ret = (pid_t) strtol(p + 5, NULL, 10);
        return 0;
}

int session_leader_pidfd(pid_t pid, int *pidfd_io, int *ret_pidfd, char **ret_why) {
        int pidfd = -1;

        if (*pidfd_io >= 0) {
                pid_t p = 0;
                if (pidfd_get_pid(*pidfd_io, &p) < 0) {
                        *ret_why = g_strdup("the descriptor sent is not a pidfd");
                        return -EBADF;
                }
                if (p != pid) {
                        *ret_why = g_strdup_printf("the pidfd sent is of pid %d, not of pid %d",
                                                   (int) p, (int) pid);
                        return -EINVAL;
                }
                pidfd = *pidfd_io;
                *pidfd_io = -1; /* taken */
        } else {
                pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
                if (pidfd < 0 && errno != ENOSYS) {
                        int e = errno;
                        *ret_why = g_strdup_printf("cannot watch pid %d: %s", (int) pid,
                                                   g_strerror(e));
                        return -e;
                }
                if (pidfd >= 0)
                        (void) fcntl(pidfd, F_SETFD, FD_CLOEXEC); /* pidfd_open sets it */
        }
        if (pidfd >= 0) {
                struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
                if (poll(&pfd, 1, 0) > 0) {
                        close(pidfd);
                        *ret_why = g_strdup_printf("pid %d has already exited", (int) pid);
                        return -ESRCH;
                }
        }
        *ret_pidfd = pidfd;
        return 0;
}

void session_free(gpointer p) {
        Session *sess = p;

        if (sess->watch)
                g_source_remove(sess->watch);
        if (sess->pidfd >= 0)
                close(sess->pidfd);
        g_free(sess);
}

void session_end(Session *sess) {
        Server *s = sess->server;
        User *u = sess->user;

        g_ptr_array_remove(u->sessions, sess);
        g_hash_table_remove(s->sessions, &sess->id); /* frees sess */
        if (u->sessions->len == 0) {
                char buf[64];
                log_debug("Last session of uid %u ended, %s", (unsigned) u->uid,
                          config_linger_to_string(&s->config, buf, sizeof buf));
                user_arm_linger(u, 0);
        }
        server_notify_status(s);
}

static gboolean on_session_leader_exit(int fd, GIOCondition cond, gpointer userdata) {
        Session *sess = userdata;

        log_event(LOG_INFO, 0, sess->user->uid, "session-ended",
                  "Session %" G_GUINT64_FORMAT " of uid %u (pid %u, '%s') ended without close",
                  sess->id, (unsigned) sess->user->uid, (unsigned) sess->pid, sess->service);
        sess->watch = 0;
        session_end(sess);
        return G_SOURCE_REMOVE;
}

static gboolean on_session_poll(gpointer userdata) {
        Session *sess = userdata;

        if (kill(sess->pid, 0) == 0 || errno != ESRCH)
                return G_SOURCE_CONTINUE;
        return on_session_leader_exit(-1, 0, sess);
}

Session *session_open(User *u, pid_t pid, const char *service, int pidfd) {
        Server *s = u->server;
        Session *sess = g_new0(Session, 1);

        sess->server = s;
        sess->id = s->next_session_id++;
        if (sess->id == 0)
                sess->id = s->next_session_id++;
        sess->user = u;
        sess->pid = pid;
        g_strlcpy(sess->service, service, sizeof sess->service);
        sess->pidfd = pidfd;
        if (pidfd >= 0)
                sess->watch = g_unix_fd_add(pidfd, G_IO_IN, on_session_leader_exit, sess);
        else /* no pidfd_open (kernel < 5.3): poll the pid; pid reuse may hide an exit */
                sess->watch = g_timeout_add_seconds(SESSION_POLL_SEC, on_session_poll, sess);
        g_hash_table_insert(s->sessions, &sess->id, sess);
        g_ptr_array_add(u->sessions, sess);
        user_cancel_linger(u);

        log_event(LOG_INFO, 0, u->uid, "session-opened",
                  "Session %" G_GUINT64_FORMAT " of uid %u opened (pid %u, '%s'), %u live",
                  sess->id, (unsigned) u->uid, (unsigned) sess->pid, sess->service,
                  u->sessions->len);
        server_notify_status(s);
        return sess;
}

Session *session_find(Server *s, User *u, uint64_t id, pid_t pid) {
        Session *sess;

        if (id != 0) {
                sess = g_hash_table_lookup(s->sessions, &id);
                if (sess && (sess->user != u || (pid != 0 && pid != sess->pid)))
                        return NULL;
                return sess;
        }
        if (!u)
                return NULL;
        for (guint i = 0; i < u->sessions->len; i++) {
                sess = g_ptr_array_index(u->sessions, i);
                if (sess->pid == pid)
                        return sess;
        }
        return NULL;
}
