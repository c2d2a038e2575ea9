/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* session.c: one session and its leader's pidfd, kept across restarts; see session.h. */
#include "domain/session.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errno-util.h"
#include "base/log.h"
#include "cleanup.h"
#include "pidfd-util.h"
#include "store/fdstore.h"
#include "store/state.h"

/* ---- pidfds ---------------------------------------------------------------------------- */

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

uint64_t session_leader_start_time(pid_t pid, int pidfd) {
        uint64_t start_time = proc_start_time(pid);

        /* the start time read above is the leader's if it is still alive now */
        if (pidfd >= 0 && pidfd_exited(pidfd) > 0)
                return 0;
        return start_time;
}

int session_leader_pidfd(pid_t pid, int *pidfd_io, int *ret_pidfd, char **ret_why) {
        int pidfd = -1;

        if (*pidfd_io >= 0) {
                pid_t p = 0;
                int r = pidfd_get_pid(*pidfd_io, &p);
                if (r == -EBADF)
                        return why_set(ret_why, -EBADF, "the descriptor sent is not a pidfd");
                if (r < 0)
                        return why_set(ret_why, errno_own_failure(r),
                                       "nsd could not check the pidfd sent (%s)%s", g_strerror(-r),
                                       errno_retry_hint(r));
                if (p <= 0)
                        return why_set(ret_why, -ESRCH, "pid %d has already exited", (int) pid);
                if (p != pid)
                        return why_set(ret_why, -EINVAL,
                                       "the pidfd sent is of pid %d, not of pid %d", (int) p,
                                       (int) pid);
                pidfd = *pidfd_io;
                *pidfd_io = -1; /* taken */
        } else {
                pidfd = pidfd_open_cloexec(pid);
                if (pidfd < 0 && errno != ENOSYS) {
                        int e = errno;
                        if (e == ESRCH)
                                return why_set(ret_why, -ESRCH, "pid %d has already exited",
                                               (int) pid);
                        return why_set(ret_why, errno_own_failure(e),
                                       "nsd could not watch pid %d: %s%s", (int) pid, g_strerror(e),
                                       errno_retry_hint(e));
                }
        }
        if (pidfd >= 0 && pidfd_exited(pidfd) > 0) {
                close(pidfd);
                return why_set(ret_why, ESRCH, "pid %d has already exited", (int) pid);
        }
        *ret_pidfd = pidfd;
        return 0;
}

/* ---- the state file and the fd store ---------------------------------------------------- */

static void state_session_name(char buf[static FDSTORE_NAME_MAX], uint64_t id) {
        snprintf(buf, FDSTORE_NAME_MAX, STATE_SESSION_PREFIX "%016" PRIx64, id);
}

void session_persist(Session *sess) {
        g_autoptr(GKeyFile) kf = NULL;
        char name[FDSTORE_NAME_MAX];

        if (sess->state) {
                kf = g_key_file_new();
                g_key_file_set_uint64(kf, "Session", "Uid", sess->uid);
                g_key_file_set_int64(kf, "Session", "Pid", sess->pid);
                g_key_file_set_uint64(kf, "Session", "StartTime", sess->start_time);
                g_key_file_set_string(kf, "Session", "Service", sess->service);
                g_key_file_set_boolean(kf, "Session", "ByUser", sess->by_user);
                state_session_name(name, sess->id);
                (void) state_write(sess->state, name, kf);
        }
        if (sess->pidfd >= 0)
                (void) fdstore_put(sess->fdstore, sess->pidfd,
                                   fdstore_session_name(name, (unsigned long long) sess->id),
                                   FDSTORE_CLASS_SESSION);
}

void session_unpersist(Session *sess) {
        char name[FDSTORE_NAME_MAX];

        state_session_name(name, sess->id);
        state_remove(sess->state, name);
        if (sess->pidfd >= 0)
                (void) fdstore_remove(sess->fdstore,
                                      fdstore_session_name(name, (unsigned long long) sess->id));
}

/* ---- a session --------------------------------------------------------------------------- */

void session_free(Session *sess) {
        if (!sess)
                return;
        g_clear_handle_id(&sess->watch, g_source_remove);
        if (sess->pidfd >= 0)
                close(sess->pidfd);
        g_free(sess);
}

static gboolean on_session_leader_exit(int fd, GIOCondition cond, gpointer userdata) {
        Session *sess = userdata;

        log_event(LOG_INFO, 0, sess->uid, "session-ended",
                  "Session %" G_GUINT64_FORMAT " of uid %u (pid %u, '%s') ended without close",
                  sess->id, (unsigned) sess->uid, (unsigned) sess->pid, sess->service);
        sess->watch = 0;
        sess->on_exit(sess, sess->userdata); /* the owner ends it: sess may be gone */
        return G_SOURCE_REMOVE;
}

static gboolean on_session_poll(gpointer userdata) {
        Session *sess = userdata;

        if (kill(sess->pid, 0) == 0 || errno != ESRCH)
                return G_SOURCE_CONTINUE;
        return on_session_leader_exit(-1, 0, sess);
}

Session *session_new(uint64_t id, uid_t uid, pid_t pid, uint64_t start_time, const char *service,
                     int pidfd, FdStore *fdstore, StateDir *state, SessionExitFn on_exit,
                     void *userdata) {
        Session *sess = g_new(Session, 1);

        *sess = (Session) {
                .id = id,
                .uid = uid,
                .pid = pid,
                .start_time = start_time,
                .pidfd = pidfd,
                .fdstore = fdstore,
                .state = state,
                .on_exit = on_exit,
                .userdata = userdata,
        };
        g_strlcpy(sess->service, service, sizeof sess->service);
        /* the wire allows printable ASCII only; a state file of an older nsd may hold more,
         * and the name goes into log lines */
        for (char *p = sess->service; *p; p++)
                if ((unsigned char) *p < 0x20 || (unsigned char) *p > 0x7e)
                        *p = '?';
        if (pidfd >= 0)
                sess->watch = g_unix_fd_add(pidfd, G_IO_IN, on_session_leader_exit, sess);
        else /* no pidfd_open (kernel < 5.3): poll the pid; pid reuse may hide an exit */
                sess->watch = g_timeout_add_seconds(SESSION_POLL_SEC, on_session_poll, sess);
        return sess;
}

bool session_leader_exited(const Session *sess) {
        if (sess->pidfd >= 0)
                return pidfd_exited(sess->pidfd) == 1;
        return kill(sess->pid, 0) < 0 && errno == ESRCH;
}

/* ---- restore ---------------------------------------------------------------------------- */

/* The leader of a restored session, checked: 1 alive (*ret_pidfd, -1 in poll mode), 0 gone
 * (*ret_why), -errno cannot tell now. */
static int restore_leader(FdStore *fdstore, uint64_t id, pid_t pid, uint64_t start_time,
                          int *ret_pidfd, bool *ret_stored, const char **ret_why) {
        char name[FDSTORE_NAME_MAX];
        _cleanup_close_ int pidfd = -1;
        pid_t p = 0;
        int r;

        *ret_stored = false;
        pidfd = fdstore_take(fdstore, fdstore_session_name(name, (unsigned long long) id));
        if (pidfd >= 0) {
                r = pidfd_get_pid(pidfd, &p);
                if (r == -EBADF) {
                        *ret_why = "the fd store held no pidfd for it";
                        CLOSE_FD(pidfd);
                } else if (r < 0)
                        return r;
                else if (p != pid || pidfd_exited(pidfd) > 0) {
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
            (pidfd >= 0 && pidfd_exited(pidfd) > 0)) {
                *ret_why = start_time == 0 ? "its leader's start time is unknown"
                                           : "its leader is gone (the pid is another process's)";
                return 0;
        }
        *ret_pidfd = TAKE_FD(pidfd);
        return 1;
}

bool session_id_from_name(const char *name, uint64_t *ret_id) {
        char *end = NULL;
        uint64_t id;

        if (!g_str_has_prefix(name, STATE_SESSION_PREFIX))
                return false;
        id = g_ascii_strtoull(name + strlen(STATE_SESSION_PREFIX), &end, 16);
        if (*end || id == 0)
                return false;
        *ret_id = id;
        return true;
}

int session_restore(const char *name, uint64_t id, FdStore *fdstore, StateDir *state,
                    SessionExitFn on_exit, void *userdata, Session **ret) {
        g_autoptr(GKeyFile) kf = NULL;
        g_autofree char *service = NULL;
        const char *why = "its state file does not parse";
        char fdname[FDSTORE_NAME_MAX];
        uint64_t start_time = 0;
        int pidfd = -1, r = 0;
        bool stored = false, by_user = false;
        gint64 pid = 0;
        guint64 uid = 0;
        Session *sess;

        if (state_read(state, name, &kf) >= 0) {
                uid = g_key_file_get_uint64(kf, "Session", "Uid", NULL);
                pid = g_key_file_get_int64(kf, "Session", "Pid", NULL);
                start_time = g_key_file_get_uint64(kf, "Session", "StartTime", NULL);
                service = g_key_file_get_string(kf, "Session", "Service", NULL);
                for (char *p = service; p && *p; p++) /* an older nsd's: into log lines */
                        if ((unsigned char) *p < 0x20 || (unsigned char) *p > 0x7e)
                                *p = '?';
                by_user = g_key_file_get_boolean(kf, "Session", "ByUser", NULL);
                if (pid > 0 && pid <= INT32_MAX && uid < UINT32_MAX && service)
                        r = restore_leader(fdstore, id, (pid_t) pid, start_time, &pidfd, &stored,
                                           &why);
        }
        if (r < 0)
                /* cannot tell now: keep the file for the next start, count nothing */
                return log_warning_errno(r,
                                         "Cannot check the leader of session %016" PRIx64
                                         " now, leaving it for later: %m",
                                         id);
        if (r == 0) {
                log_event(LOG_INFO, 0, kf ? (uid_t) uid : (uid_t) -1, "session-ended",
                          "Session %" G_GUINT64_FORMAT " of uid %u (pid %d, '%s') ended while "
                          "nsd was not running: %s",
                          id, (unsigned) uid, (int) pid, service ? service : "?", why);
                state_remove(state, name);
                (void) fdstore_remove(fdstore,
                                      fdstore_session_name(fdname, (unsigned long long) id));
                return 0;
        }
        sess = session_new(id, (uid_t) uid, (pid_t) pid, start_time, service, pidfd, fdstore, state,
                           on_exit, userdata);
        sess->by_user = by_user; /* missing (an older nsd's file): root's */
        if (!stored && pidfd >= 0)
                (void) fdstore_put(fdstore, pidfd,
                                   fdstore_session_name(fdname, (unsigned long long) id),
                                   FDSTORE_CLASS_SESSION);
        log_debug("Restored session %016" PRIx64 " of uid %u (pid %d, '%s'%s)", id, (unsigned) uid,
                  (int) pid, sess->service, stored ? ", pidfd from the fd store" : "");
        *ret = sess;
        return 1;
}
