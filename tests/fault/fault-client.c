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
 * Exit status 0 for ok, 1 for err, 2 for bad usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fault-util.h"
#include "nsclient.h"
#include "time-util.h"

static const char *err_name(int e) {
        static char buf[16];

        switch (e < 0 ? -e : e) {
        case EAGAIN:
                return "EAGAIN";
        case ENOENT:
                return "ENOENT";
        case EEXIST:
                return "EEXIST";
        case ENOMEM:
                return "ENOMEM";
        case EMFILE:
                return "EMFILE";
        case ENFILE:
                return "ENFILE";
        case EINTR:
                return "EINTR";
        case ETIMEDOUT:
                return "ETIMEDOUT";
        case EBUSY:
                return "EBUSY";
        case EIO:
                return "EIO";
        case EPERM:
                return "EPERM";
        case EINVAL:
                return "EINVAL";
        case ECONNREFUSED:
                return "ECONNREFUSED";
        case ECONNRESET:
                return "ECONNRESET";
        case EPIPE:
                return "EPIPE";
        case EPROTO:
                return "EPROTO";
        case ENOSPC:
                return "ENOSPC";
        case ENOBUFS:
                return "ENOBUFS";
        case EUSERS:
                return "EUSERS";
        case ESRCH:
                return "ESRCH";
        case EBADF:
                return "EBADF";
        case ENOTCONN:
                return "ENOTCONN";
        default:
                snprintf(buf, sizeof buf, "E%d", e < 0 ? -e : e);
                return buf;
        }
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

int main(int argc, char **argv) {
        struct nsc_join_result j = { .root_fd = -1, .ns_fd = -1 };
        unsigned tries = 0;
        uid_t uid;
        int r;

        if (argc < 3 || parse_uid(argv[2], &uid) < 0) {
                fprintf(stderr, "usage: fault-client join|exec|session|release UID ...\n");
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
                if (r < 0) {
                        printf("err %s setns\n", err_name(r));
                        return 1;
                }
                fflush(stdout);
                execvp(argv[5], argv + 5);
                printf("err %s exec\n", err_name(errno));
                return 1;
        }
        if (strcmp(argv[1], "session") == 0) {
                uint64_t id = 0;
                unsigned n = 0;
                nsc_conn *c = NULL;
                const char *step = "connect";

                step = "join";
                r = join_wait(uid, WAIT_MS_DEFAULT, &j, &tries);
                if (r >= 0) {
                        step = "connect";
                        r = nsc_connect(NULL, &c);
                }
                if (r >= 0) {
                        step = "open";
                        r = nsc_session_open(c, uid, getpid(), "fault-client", &id, &n);
                }
                if (r >= 0) {
                        step = "close";
                        r = nsc_session_close(c, uid, getpid(), id, &n);
                }
                nsc_disconnect(c);
                if (r < 0)
                        printf("err %s %s\n", err_name(r), step);
                else
                        printf("ok\n");
                return r < 0;
        }
        if (strcmp(argv[1], "open") == 0 && argc > 3) {
                pid_t pid = (pid_t) atoi(argv[3]);
                const char *step = "join";
                nsc_conn *c = NULL;
                uint64_t id = 0;
                unsigned n = 0;

                r = join_wait(uid, WAIT_MS_DEFAULT, &j, &tries);
                if (r >= 0) {
                        step = "connect";
                        r = nsc_connect(NULL, &c);
                }
                if (r >= 0) {
                        step = "open";
                        r = nsc_session_open(c, uid, pid, "fault-client", &id, &n);
                }
                nsc_disconnect(c);
                if (r < 0)
                        printf("err %s %s\n", err_name(r), step);
                else
                        printf("ok %llu %u\n", (unsigned long long) id, n);
                return r < 0;
        }
        if (strcmp(argv[1], "close") == 0 && argc > 3) {
                uint64_t id = strtoull(argv[3], NULL, 10);
                nsc_conn *c = NULL;
                unsigned n = 0;

                r = nsc_connect(NULL, &c);
                if (r >= 0)
                        r = nsc_session_close(c, uid, 0, id, &n);
                nsc_disconnect(c);
                if (r < 0)
                        printf("err %s\n", err_name(r));
                else
                        printf("ok %u\n", n);
                return r < 0;
        }
        if (strcmp(argv[1], "release") == 0) {
                nsc_conn *c = NULL;

                r = nsc_connect(NULL, &c);
                if (r >= 0)
                        r = nsc_release(c, uid, NSC_RELEASE_FORCE);
                nsc_disconnect(c);
                if (r < 0)
                        printf("err %s\n", err_name(r));
                else
                        printf("ok\n");
                return r < 0;
        }
        fprintf(stderr, "fault-client: unknown command '%s'\n", argv[1]);
        return 2;
}
