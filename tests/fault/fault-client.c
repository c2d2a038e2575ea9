/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fault-client: what a login does, with outcomes a test can read (tests/fault/fault-suite.py).
 * Root only. The socket is $NSD_SOCKET.
 *
 *   fault-client join UID [WAIT_MS]   JOIN; with WAIT_MS, retry a JOIN that answers -EAGAIN
 *                                     ("not yet available") or finds no nsd, as pam_nsjoin
 *                                     does, for up to WAIT_MS. Prints
 *                                       ok INODE pinned|unpinned created|adopted|known TRIES
 *                                       err ERRNO-NAME TRIES
 *   fault-client exec UID WAIT_MS -- CMD...   JOIN as above, setns() into it, run CMD
 *   fault-client session UID          JOIN (waiting as above, 10 s), SESSION_OPEN (leader: this
 *                                     process), SESSION_CLOSE ("ok" or "err ERRNO-NAME STEP")
 *   fault-client open UID PID         JOIN (waiting as above, 10 s), SESSION_OPEN led by PID,
 *                                     left open ("ok ID SESSIONS" or "err ERRNO-NAME STEP")
 *   fault-client close UID ID         SESSION_CLOSE of session ID ("ok SESSIONS-LEFT" or
 *                                     "err ERRNO-NAME")
 *   fault-client release UID          RELEASE --force ("ok" or "err ERRNO-NAME")
 *   fault-client give UID             CREDENTIAL_GIVE of what stdin holds (a password, at most
 *                                     1024 bytes), in a memfd sealed as pam_nsjoin seals it
 *                                     ("ok VOLUMES-WAITING-GOT-IT" or "err ERRNO-NAME MESSAGE")
 *   fault-client take UID VOLUME [wait]   as UID (setuid), from where this process stands:
 *                                     CREDENTIAL_TAKE of VOLUME's password, with
 *                                     NSD_CREDENTIAL_WAIT and no timeout if "wait" ("ok memfd
 *                                     SEALED|unsealed PASSWORD", "ok other PASSWORD" for a
 *                                     descriptor that is no memfd, or "err ERRNO-NAME MESSAGE")
 *   fault-client unlock UID VOLUME    as UID: CREDENTIAL_UNLOCK of what stdin holds for VOLUME
 *                                     (nsctl unlock's request: "ok TAKES-WAITING-GOT-IT" or
 *                                     "err ERRNO-NAME MESSAGE")
 *   fault-client volume UID start|stop VOLUME   as root: VOLUME_START or VOLUME_STOP of UID's
 *                                     VOLUME ("ok STATE CHANGED" with the NSC_VOLUME_* state,
 *                                     or "err ERRNO-NAME MESSAGE")
 * Exit status 0 for ok, 1 for err, 2 for bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fault-util.h"
#include "io-util.h"
#include "nsclient.h"
#include "time-util.h"

/* "EAGAIN" for -EAGAIN or EAGAIN; "E<n>" for a number glibc has no name for */
static const char *err_name(int e) {
        static char buf[16];
        const char *name = strerrorname_np(e < 0 ? -e : e);

        if (name)
                return name;
        snprintf(buf, sizeof buf, "E%d", e < 0 ? -e : e);
        return buf;
}

/* what a login waits for "not yet available" (pam_nsjoin's timeout is of this order) */
#define WAIT_MS_DEFAULT 10000

/* JOIN, retrying what a login retries; r and the number of tries */
static int join_wait(uid_t uid, unsigned wait_ms, struct nsc_join_result *j, unsigned *tries) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) / 1000 + wait_ms;
        int r;

        for (*tries = 1;; (*tries)++) {
                nsc_conn *c = NULL;

                r = nsc_connect(NULL, &c);
                if (r >= 0) {
                        (void) nsc_set_timeout(c, 5 * 1000 * 1000);
                        r = nsc_join(c, uid, 0, j);
                        nsc_disconnect(c);
                }
                if (r >= 0 || wait_ms == 0 || now_usec(CLOCK_MONOTONIC) / 1000 >= deadline)
                        return r;
                if (r != -EAGAIN && r != -ECONNREFUSED && r != -ENOENT && r != -ECONNRESET &&
                    r != -EPIPE)
                        return r;
                usleep(50 * 1000);
        }
}

static void print_join(int r, const struct nsc_join_result *j, unsigned tries) {
        if (r < 0) {
                printf("err %s %u\n", err_name(r), tries);
                return;
        }
        printf("ok %llu %s %s %u\n", (unsigned long long) j->ns_inode,
               (j->ns_flags & NSC_NS_PINNED) ? "pinned" : "unpinned",
               (j->ns_flags & NSC_NS_CREATED)   ? "created"
               : (j->ns_flags & NSC_NS_ADOPTED) ? "adopted"
                                                : "known",
               tries);
}

/* "ok ..." (fmt) or "err ERRNO-NAME[ STEP]" for r; the exit status */
__attribute__((format(printf, 3, 4))) static int outcome(int r, const char *step, const char *fmt,
                                                         ...) {
        va_list ap;

        if (r < 0) {
                printf("err %s%s%s\n", err_name(r), step ? " " : "", step ?: "");
                return 1;
        }
        fputs("ok", stdout);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        return 0;
}

/* JOIN (waiting as a login), then on a connection of its own SESSION_OPEN led by leader,
 * which *ret_c keeps open for the caller; r, and in *ret_step the step that failed */
static int join_session_open(uid_t uid, pid_t leader, nsc_conn **ret_c, uint64_t *ret_id,
                             unsigned *ret_n, const char **ret_step) {
        struct nsc_join_result j = { .root_fd = -1, .ns_fd = -1 };
        unsigned tries = 0;
        int r;

        *ret_step = "join";
        r = join_wait(uid, WAIT_MS_DEFAULT, &j, &tries);
        if (r < 0)
                return r;
        *ret_step = "connect";
        r = nsc_connect(NULL, ret_c);
        if (r < 0)
                return r;
        *ret_step = "open";
        return nsc_session_open(*ret_c, uid, leader, "fault-client", ret_id, ret_n);
}

/* connect, then one request (RELEASE --force, or SESSION_CLOSE of id) */
static int one_request(uid_t uid, bool release, uint64_t id, unsigned *ret_n) {
        nsc_conn *c = NULL;
        int r = nsc_connect(NULL, &c);

        if (r >= 0)
                r = release ? nsc_release(c, uid, NSC_RELEASE_FORCE)
                            : nsc_session_close(c, uid, 0, id, ret_n);
        nsc_disconnect(c);
        return r;
}

#define ALL_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)

/* stdin (at most NSC_CREDENTIAL_MAX + 1 bytes, so that nsd sees a password too long) in a
 * memfd sealed as nsc_credential_memfd() seals it (which refuses the byte too many: so not
 * that one): the descriptor, or -errno */
static int stdin_memfd(void) {
        char buf[NSC_CREDENTIAL_MAX + 1];
        ssize_t len = read_full(STDIN_FILENO, buf, sizeof buf);
        int fd;

        if (len < 0)
                return (int) len;
        fd = memfd_create("nsd-credential", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return -errno;
        if (write(fd, buf, (size_t) len) != len || fcntl(fd, F_ADD_SEALS, ALL_SEALS) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        explicit_bzero(buf, sizeof buf);
        return fd;
}

/* give: CREDENTIAL_GIVE of stdin's password for uid */
static int credential_give(uid_t uid) {
        _nsc_cleanup_disconnect_ nsc_conn *c = NULL;
        unsigned waiting = 0;
        int fd = stdin_memfd(), r;

        if (fd < 0)
                return outcome(fd, "memfd", "%s", "");
        r = nsc_connect(NULL, &c);
        if (r >= 0)
                r = nsc_credential_give(c, uid, fd, &waiting);
        close(fd);
        return outcome(r, r < 0 ? nsc_last_error_message(c) : NULL, " %u", waiting);
}

/* take: CREDENTIAL_TAKE of volume as uid; what came, and whether it is a sealed memfd */
static int credential_take(uid_t uid, const char *volume, bool wait) {
        _nsc_cleanup_disconnect_ nsc_conn *c = NULL;
        char buf[NSC_CREDENTIAL_MAX + 1], link[64], target[256] = "";
        ssize_t n, k;
        int fd = -1, r, seals;

        if (setgroups(0, NULL) < 0 || setgid((gid_t) uid) < 0 || setuid(uid) < 0)
                return outcome(-errno, "setuid", "%s", "");
        r = nsc_connect(NULL, &c);
        if (r >= 0 && wait)
                r = nsc_set_timeout(c, 0);
        if (r >= 0)
                r = nsc_credential_take(c, volume, wait ? NSC_CREDENTIAL_WAIT : 0, &fd);
        if (r < 0)
                return outcome(r, nsc_last_error_message(c), "%s", "");
        n = pread(fd, buf, sizeof buf - 1, 0);
        seals = fcntl(fd, F_GET_SEALS);
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        k = readlink(link, target, sizeof target - 1);
        target[k > 0 ? k : 0] = '\0';
        close(fd);
        if (n < 0)
                return outcome(-errno, "read", "%s", "");
        buf[n] = '\0';
        return outcome(0, NULL, " %s %s %s", strncmp(target, "/memfd:", 7) == 0 ? "memfd" : "other",
                       seals >= 0 && (seals & ALL_SEALS) == ALL_SEALS ? "sealed" : "unsealed", buf);
}

/* unlock: CREDENTIAL_UNLOCK of stdin's password for volume, as uid */
static int credential_unlock(uid_t uid, const char *volume) {
        _nsc_cleanup_disconnect_ nsc_conn *c = NULL;
        unsigned waiting = 0;
        int fd = stdin_memfd(), r;

        if (fd < 0)
                return outcome(fd, "memfd", "%s", "");
        if (setgroups(0, NULL) < 0 || setgid((gid_t) uid) < 0 || setuid(uid) < 0) {
                close(fd);
                return outcome(-errno, "setuid", "%s", "");
        }
        r = nsc_connect(NULL, &c);
        if (r >= 0)
                r = nsc_credential_unlock(c, volume, fd, &waiting);
        close(fd);
        return outcome(r, r < 0 ? nsc_last_error_message(c) : NULL, " %u", waiting);
}

/* volume: VOLUME_START or VOLUME_STOP of uid's volume, as root */
static int volume_ctl(uid_t uid, const char *action, const char *volume) {
        _nsc_cleanup_disconnect_ nsc_conn *c = NULL;
        struct nsc_volume_ctl v = { 0 };
        bool start = strcmp(action, "start") == 0;
        int r;

        if (!start && strcmp(action, "stop") != 0) {
                fprintf(stderr, "fault-client: volume: expected start or stop, not '%s'\n", action);
                return 2;
        }
        r = nsc_connect(NULL, &c);
        if (r >= 0)
                r = start ? nsc_volume_start(c, uid, volume, &v)
                          : nsc_volume_stop(c, uid, volume, &v);
        return outcome(r, r < 0 ? nsc_last_error_message(c) : NULL, " %u %u", (unsigned) v.state,
                       (unsigned) v.changed);
}

int main(int argc, char **argv) {
        struct nsc_join_result j = { .root_fd = -1, .ns_fd = -1 };
        const char *step = NULL;
        nsc_conn *c = NULL;
        unsigned tries = 0, n = 0;
        uint64_t id = 0;
        uid_t uid;
        int r;

        if (argc < 3 || parse_uid(argv[2], &uid) < 0) {
                fprintf(stderr,
                        "usage: fault-client join|exec|session|open|close|release|give|take|unlock "
                        "UID ...\n");
                return 2;
        }
        if (strcmp(argv[1], "join") == 0) {
                r = join_wait(uid, argc > 3 ? (unsigned) atoi(argv[3]) : 0, &j, &tries);
                print_join(r, &j, tries);
                return r < 0;
        }
        if (strcmp(argv[1], "exec") == 0) {
                if (argc < 6 || strcmp(argv[4], "--") != 0) {
                        fprintf(stderr, "usage: fault-client exec UID WAIT_MS -- CMD...\n");
                        return 2;
                }
                r = join_wait(uid, (unsigned) atoi(argv[3]), &j, &tries);
                if (r < 0) {
                        print_join(r, &j, tries);
                        return 1;
                }
                r = nsc_enter_setns(&j);
                if (r < 0)
                        return outcome(r, "setns", "%s", "");
                fflush(stdout);
                execvp(argv[5], argv + 5);
                return outcome(-errno, "exec", "%s", "");
        }
        if (strcmp(argv[1], "session") == 0) {
                r = join_session_open(uid, getpid(), &c, &id, &n, &step);
                if (r >= 0) {
                        step = "close";
                        r = nsc_session_close(c, uid, getpid(), id, &n);
                }
                nsc_disconnect(c);
                return outcome(r, step, "%s", "");
        }
        if (strcmp(argv[1], "open") == 0 && argc > 3) {
                r = join_session_open(uid, (pid_t) atoi(argv[3]), &c, &id, &n, &step);
                nsc_disconnect(c);
                return outcome(r, step, " %llu %u", (unsigned long long) id, n);
        }
        if (strcmp(argv[1], "close") == 0 && argc > 3) {
                r = one_request(uid, false, strtoull(argv[3], NULL, 10), &n);
                return outcome(r, NULL, " %u", n);
        }
        if (strcmp(argv[1], "release") == 0)
                return outcome(one_request(uid, true, 0, NULL), NULL, "%s", "");
        if (strcmp(argv[1], "give") == 0)
                return credential_give(uid);
        if (strcmp(argv[1], "take") == 0 && argc > 3)
                return credential_take(uid, argv[3], argc > 4 && strcmp(argv[4], "wait") == 0);
        if (strcmp(argv[1], "unlock") == 0 && argc > 3)
                return credential_unlock(uid, argv[3]);
        if (strcmp(argv[1], "volume") == 0 && argc > 4)
                return volume_ctl(uid, argv[3], argv[4]);
        fprintf(stderr, "fault-client: unknown command '%s'\n", argv[1]);
        return 2;
}
