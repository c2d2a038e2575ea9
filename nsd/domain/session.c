/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* session.c: sessions and their leaders' pidfds, kept across restarts; see session.h. */
#include "domain/session.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/errno-util.h"
#include "base/log.h"
#include "cleanup.h"
#include "store/fdstore.h"
#include "store/state.h"

/* ---- pidfds ---------------------------------------------------------------------------- */

/* The pid a pidfd refers to, from /proc/self/fdinfo ("Pid:" exists only for pidfds; -1 once
 * the process is gone). -EBADF: not a pidfd; another -errno: could not be read (may pass). */
static int pidfd_get_pid(int fd, pid_t *ret) {
        char path[64], buf[4096];
        _cleanup_close_ int f = -1;
        size_t len = 0;
        const char *p;

        snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
        f = open(path, O_RDONLY | O_CLOEXEC);
        if (f < 0)
                return errno == ENOENT ? -EBADF : -errno;
        while (len < sizeof buf - 1) {
                ssize_t n = read(f, buf + len, sizeof buf - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        buf[len] = '\0';
        p = strstr(buf, "\nPid:");
        if (!p)
                return -EBADF;
        *ret = (pid_t) strtol(p + 5, NULL, 10);
        return 0;
}

static int pidfd_open_cloexec(pid_t pid) {
        int fd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (fd >= 0)
                (void) fcntl(fd, F_SETFD, FD_CLOEXEC); /* pidfd_open sets it */
        return fd;
}

static bool pidfd_exited(int pidfd) {
        struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
        return poll(&pfd, 1, 0) > 0;
}

/* The start time of pid (field 22 of /proc/PID/stat, clock ticks since boot); 0: unknown. */
static uint64_t proc_start_time(pid_t pid) {
        char path[64];
        g_autofree char *text = NULL;
        unsigned long long v = 0;
        const char *p;

        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        if (!g_file_get_contents(path, &text, NULL, NULL))
                return 0;
        p = strrchr(text, ')');
        /* after the command: state (3) ... starttime (22) */
        if (!p || sscanf(p + 1,
                         " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
                         "%*d %*d %*d %*d %llu",
                         &v) != 1)
                return 0;
        return v;
}

int session_leader_pidfd(pid_t pid, int *pidfd_io, int *ret_pidfd, char **ret_why) {
        int pidfd = -1;

        if (*pidfd_io >= 0) {
                pid_t p = 0;
                int r = pidfd_get_pid(*pidfd_io, &p);
                if (r == -EBADF) {
                        *ret_why = g_strdup("the descriptor sent is not a pidfd");
                        return -EBADF;
                }
                if (r < 0) {
                        *ret_why = g_strdup_printf("cannot check the pidfd sent now (%s); retry",
                                                   g_strerror(-r));
                        return errno_may_pass(r) ? -NSD_ERRNO_NOT_YET : r;
                }
                if (p <= 0) {
                        *ret_why = g_strdup_printf("pid %d has already exited", (int) pid);
                        return -ESRCH;
                }
                if (p != pid) {
                        *ret_why = g_strdup_printf("the pidfd sent is of pid %d, not of pid %d",
                                                   (int) p, (int) pid);
                        return -EINVAL;
                }
                pidfd = *pidfd_io;
                *pidfd_io = -1; /* taken */
        } else {
                pidfd = pidfd_open_cloexec(pid);
                if (pidfd < 0 && errno != ENOSYS) {
                        int e = errno;
                        if (e == ESRCH) {
                                *ret_why = g_strdup_printf("pid %d has already exited", (int) pid);
                                return -ESRCH;
                        }
                        *ret_why = g_strdup_printf("cannot watch pid %d: %s%s", (int) pid,
                                                   g_strerror(e),
                                                   errno_may_pass(e) ? "; retry" : "");
                        return errno_may_pass(e) ? -NSD_ERRNO_NOT_YET : -e;
                }
        }
        if (pidfd >= 0 && pidfd_exited(pidfd)) {
                close(pidfd);
                *ret_why = g_strdup_printf("pid %d has already exited", (int) pid);
                return -ESRCH;
        }
        *ret_pidfd = pidfd;
        return 0;
}

/* ---- the state file and the fd store ---------------------------------------------------- */

static void state_session_name(char buf[static FDSTORE_NAME_MAX], uint64_t id) {
        snprintf(buf, FDSTORE_NAME_MAX, STATE_SESSION_PREFIX "%016" PRIx64, id);
}

static void session_persist(Session *sess) {
        Server *s = sess->server;
        g_autoptr(GKeyFile) kf = NULL;
        char name[FDSTORE_NAME_MAX];

        if (s->state) {
                kf = g_key_file_new();
                g_key_file_set_uint64(kf, "Session", "Uid", sess->uid);
                g_key_file_set_int64(kf, "Session", "Pid", sess->pid);
                g_key_file_set_uint64(kf, "Session", "StartTime", sess->start_time);
                g_key_file_set_string(kf, "Session", "Service", sess->service);
                state_session_name(name, sess->id);
                (void) state_write(s->state, name, kf);
        }
        if (sess->pidfd >= 0)
                (void) fdstore_put(s->fdstore, sess->pidfd,
                                   fdstore_session_name(name, (unsigned long long) sess->id),
                                   FDSTORE_CLASS_SESSION);
}

static void session_unpersist(Session *sess) {
        char name[FDSTORE_NAME_MAX];

        state_session_name(name, sess->id);
        state_remove(sess->server->state, name);
        if (sess->pidfd >= 0)
                (void) fdstore_remove(sess->server->fdstore,
                                      fdstore_session_name(name, (unsigned long long) sess->id));
}

/* ---- sessions --------------------------------------------------------------------------- */

void session_free(gpointer p) {
        Session *sess = p;

        if (sess->watch)
                g_source_remove(sess->watch);
        if (sess->pidfd >= 0)
                close(sess->pidfd);
        g_free(sess);
}

static void session_unwait(Session *sess) {
        GPtrArray *w = g_hash_table_lookup(sess->server->waiting_sessions,
                                           GUINT_TO_POINTER(sess->uid));

        if (!w)
                return;
        g_ptr_array_remove(w, sess);
        if (w->len == 0)
                g_hash_table_remove(sess->server->waiting_sessions, GUINT_TO_POINTER(sess->uid));
}

/* Out of every table; frees sess. */
static void session_remove(Session *sess) {
        Server *s = sess->server;

        session_unpersist(sess);
        if (sess->user)
                g_ptr_array_remove(sess->user->sessions, sess);
        else
                session_unwait(sess);
        g_hash_table_remove(s->sessions, &sess->id); /* frees sess */
}

void session_end(Session *sess) {
        Server *s = sess->server;
        User *u = sess->user;

        session_remove(sess);
        if (u && u->sessions->len == 0) {
                char buf[64];
                log_debug("Last session of uid %u ended, %s", (unsigned) u->uid,
                          config_linger_to_string(&s->config, buf, sizeof buf));
                user_arm_linger(u, 0);
        }
        server_notify_status(s);
}

void session_discard(Session *sess) {
        session_remove(sess);
}

static gboolean on_session_leader_exit(int fd, GIOCondition cond, gpointer userdata) {
        Session *sess = userdata;

        log_event(LOG_INFO, 0, sess->uid, "session-ended",
                  "Session %" G_GUINT64_FORMAT " of uid %u (pid %u, '%s') ended without close",
                  sess->id, (unsigned) sess->uid, (unsigned) sess->pid, sess->service);
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

/* A session object in the tables, watched; not yet any user's. */
static Session *session_new(Server *s, uint64_t id, uid_t uid, pid_t pid, uint64_t start_time,
                            const char *service, int pidfd) {
        Session *sess = g_new0(Session, 1);

        sess->server = s;
        sess->id = id;
        sess->uid = uid;
        sess->pid = pid;
        sess->start_time = start_time;
        g_strlcpy(sess->service, service, sizeof sess->service);
        sess->pidfd = pidfd;
        if (pidfd >= 0)
                sess->watch = g_unix_fd_add(pidfd, G_IO_IN, on_session_leader_exit, sess);
        else /* no pidfd_open (kernel < 5.3): poll the pid; pid reuse may hide an exit */
                sess->watch = g_timeout_add_seconds(SESSION_POLL_SEC, on_session_poll, sess);
        g_hash_table_insert(s->sessions, &sess->id, sess);
        return sess;
}

static void session_attach(Session *sess, User *u) {
        sess->user = u;
        g_ptr_array_add(u->sessions, sess);
        user_cancel_linger(u);
}

static uint64_t session_next_id(Server *s) {
        uint64_t id;

        do
                id = s->next_session_id++;
        while (id == 0 || g_hash_table_contains(s->sessions, &id));
        return id;
}

Session *session_open(User *u, pid_t pid, const char *service, int pidfd) {
        Server *s = u->server;
        uint64_t start_time = proc_start_time(pid);
        Session *sess;

        /* the start time read above is the leader's if it is still alive now */
        if (pidfd >= 0 && pidfd_exited(pidfd))
                start_time = 0;
        sess = session_new(s, session_next_id(s), u->uid, pid, start_time, service, pidfd);
        session_attach(sess, u);
        session_persist(sess);

        log_event(LOG_INFO, 0, u->uid, "session-opened",
                  "Session %" G_GUINT64_FORMAT " of uid %u opened (pid %u, '%s'), %u live",
                  sess->id, (unsigned) u->uid, (unsigned) sess->pid, sess->service,
                  u->sessions->len);
        server_notify_status(s);
        return sess;
}

Session *session_find(Server *s, uid_t uid, uint64_t id, pid_t pid) {
        GHashTableIter it;
        gpointer v;
        Session *sess;

        if (id != 0) {
                sess = g_hash_table_lookup(s->sessions, &id);
                if (sess && (sess->uid != uid || (pid != 0 && pid != sess->pid)))
                        return NULL;
                return sess;
        }
        g_hash_table_iter_init(&it, s->sessions);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                sess = v;
                if (sess->uid == uid && sess->pid == pid)
                        return sess;
        }
        return NULL;
}

unsigned sessions_of_uid(Server *s, uid_t uid) {
        User *u = user_get(s, uid);
        GPtrArray *w = g_hash_table_lookup(s->waiting_sessions, GUINT_TO_POINTER(uid));

        return (u ? u->sessions->len : 0) + (w ? w->len : 0);
}

void session_attach_waiting(Server *s, User *u) {
        GPtrArray *w = g_hash_table_lookup(s->waiting_sessions, GUINT_TO_POINTER(u->uid));

        if (!w)
                return;
        for (guint i = 0; i < w->len; i++)
                session_attach(g_ptr_array_index(w, i), u);
        log_info("%u restored session%s of uid %u joined its namespace", w->len,
                 w->len == 1 ? "" : "s", (unsigned) u->uid);
        g_hash_table_remove(s->waiting_sessions, GUINT_TO_POINTER(u->uid));
}

/* ---- restore ---------------------------------------------------------------------------- */

/* The leader of a restored session, checked: 1 alive (*ret_pidfd, -1 in poll mode), 0 gone
 * (*ret_why), -errno cannot tell now. */
static int restore_leader(Server *s, uint64_t id, pid_t pid, uint64_t start_time, int *ret_pidfd,
                          bool *ret_stored, const char **ret_why) {
        char name[FDSTORE_NAME_MAX];
        _cleanup_close_ int pidfd = -1;
        pid_t p = 0;
        int r;

        *ret_stored = false;
        pidfd = fdstore_take(s->fdstore, fdstore_session_name(name, (unsigned long long) id));
        if (pidfd >= 0) {
                r = pidfd_get_pid(pidfd, &p);
                if (r == -EBADF) {
                        *ret_why = "the fd store held no pidfd for it";
                        CLOSE_FD(pidfd);
                } else if (r < 0)
                        return r;
                else if (p != pid || pidfd_exited(pidfd)) {
                        *ret_why = "its leader is gone";
                        return 0;
                } else {
                        *ret_stored = true;
                        *ret_pidfd = TAKE_FD(pidfd);
                        return 1;
                }
        }
        /* no pidfd kept: the pid, if it is still the same process */
        pidfd = pidfd_open_cloexec(pid);
        if (pidfd < 0 && errno == ESRCH) {
                *ret_why = "its leader is gone";
                return 0;
        }
        if (pidfd < 0 && errno != ENOSYS)
                return -errno;
        if (start_time == 0 || proc_start_time(pid) != start_time ||
            (pidfd >= 0 && pidfd_exited(pidfd))) {
                *ret_why = start_time == 0 ? "its leader's start time is unknown"
                                           : "its leader is gone (the pid is another process's)";
                return 0;
        }
        *ret_pidfd = TAKE_FD(pidfd);
        return 1;
}

void sessions_restore(Server *s) {
        g_auto(GStrv) names = state_list(s->state, STATE_SESSION_PREFIX);
        unsigned restored = 0, ended = 0, waiting = 0;

        for (char **n = names; *n; n++) {
                g_autoptr(GKeyFile) kf = NULL;
                g_autofree char *service = NULL;
                const char *why = "its state file does not parse";
                char fdname[FDSTORE_NAME_MAX], *end;
                uint64_t id, start_time = 0;
                int pidfd = -1, r = 0;
                bool stored = false;
                gint64 pid = 0;
                guint64 uid = 0;
                Session *sess;
                User *u;

                id = g_ascii_strtoull(*n + strlen(STATE_SESSION_PREFIX), &end, 16);
                if (*end || id == 0 || g_hash_table_contains(s->sessions, &id)) {
                        state_remove(s->state, *n);
                        continue;
                }
                if (state_read(s->state, *n, &kf) >= 0) {
                        uid = g_key_file_get_uint64(kf, "Session", "Uid", NULL);
                        pid = g_key_file_get_int64(kf, "Session", "Pid", NULL);
                        start_time = g_key_file_get_uint64(kf, "Session", "StartTime", NULL);
                        service = g_key_file_get_string(kf, "Session", "Service", NULL);
                        if (pid > 0 && pid <= INT32_MAX && uid < UINT32_MAX && service)
                                r = restore_leader(s, id, (pid_t) pid, start_time, &pidfd, &stored,
                                                   &why);
                }
                if (r < 0) {
                        /* cannot tell now: keep the file for the next start, count nothing */
                        log_warning_errno(r,
                                          "Cannot check the leader of session %016" PRIx64
                                          " now, leaving it for later: %m",
                                          id);
                        continue;
                }
                if (r == 0) {
                        log_event(LOG_INFO, 0, kf ? (uid_t) uid : (uid_t) -1, "session-ended",
                                  "Session %" G_GUINT64_FORMAT " of uid %u (pid %d, '%s') ended "
                                  "while nsd was not running: %s",
                                  id, (unsigned) uid, (int) pid, service ? service : "?", why);
                        state_remove(s->state, *n);
                        (void) fdstore_remove(s->fdstore,
                                              fdstore_session_name(fdname,
                                                                   (unsigned long long) id));
                        ended++;
                        continue;
                }
                sess = session_new(s, id, (uid_t) uid, (pid_t) pid, start_time, service, pidfd);
                if (!stored && pidfd >= 0)
                        (void) fdstore_put(s->fdstore, pidfd,
                                           fdstore_session_name(fdname, (unsigned long long) id),
                                           FDSTORE_CLASS_SESSION);
                u = user_get(s, (uid_t) uid);
                if (u)
                        session_attach(sess, u);
                else {
                        GPtrArray *w = g_hash_table_lookup(s->waiting_sessions,
                                                           GUINT_TO_POINTER(sess->uid));
                        if (!w) {
                                w = g_ptr_array_new();
                                g_hash_table_insert(s->waiting_sessions,
                                                    GUINT_TO_POINTER(sess->uid), w);
                        }
                        g_ptr_array_add(w, sess);
                        waiting++;
                }
                restored++;
                log_debug("Restored session %016" PRIx64 " of uid %u (pid %d, '%s'%s)", id,
                          (unsigned) uid, (int) pid, sess->service,
                          stored ? ", pidfd from the fd store" : "");
        }
        if (restored || ended)
                log_info("Restored %u sessions (%u waiting for their namespace); %u ended while "
                         "nsd was not running",
                         restored, waiting, ended);
}
