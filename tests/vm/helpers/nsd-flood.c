/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsd-flood: hostile clients of nsd for VM scenarios (tests/vm/scenarios/nsd-flood.sh). One process per
 * uid in [FIRST, LAST] (forked, then setresuid: the uids need no account), each doing MODE
 * until SIGTERM:
 *   hold N   keep N connections open and idle; reconnect whatever nsd closes or refuses
 *   flood    send STATUS requests on one connection as fast as nsd takes them and never read
 *            a reply; reconnect when nsd drops it
 * At SIGTERM each child prints one line to stdout: "uid U MODE: connects=C closed=D".
 *
 *   nsd-flood SOCKET hold|flood FIRST LAST [N]
 */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nsd-protocol.h"

#define HOLD_MAX 64

static volatile sig_atomic_t stop;
static struct sockaddr_un sa = { .sun_family = AF_UNIX };
static unsigned long connects, closed;

static void on_term(int sig) {
        stop = 1;
}

static int dial(void) {
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return -1;
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                close(fd);
                return -1;
        }
        connects++;
        return fd;
}

static void nap(long ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

static void hold(unsigned n) {
        struct pollfd p[HOLD_MAX];

        for (unsigned i = 0; i < n; i++)
                p[i] = (struct pollfd) { .fd = dial(), .events = POLLIN };
        while (!stop) {
                if (poll(p, n, 200) < 0 && errno != EINTR)
                        break;
                for (unsigned i = 0; i < n && !stop; i++) {
                        char buf[NSD_MSG_SIZE_MAX];
                        if (p[i].fd >= 0 && !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        /* an error reply (refused) or EOF (dropped): connect again */
                        if (p[i].fd >= 0) {
                                while (recv(p[i].fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
                                        ;
                                close(p[i].fd);
                                closed++;
                                nap(100);
                        }
                        p[i].fd = dial();
                        p[i].revents = 0;
                }
        }
}

static void flood(void) {
        struct nsd_req_status q;
        uint32_t seq = 0;
        int fd = -1;

        while (!stop) {
                struct pollfd p;
                if (fd < 0) {
                        fd = dial();
                        if (fd < 0) {
                                nap(100);
                                continue;
                        }
                }
                nsd_msg_init(&q.hdr, NSD_REQ_STATUS, sizeof q, ++seq);
                if (send(fd, &q, sizeof q, MSG_DONTWAIT | MSG_NOSIGNAL) == sizeof q)
                        continue;
                if (errno == EAGAIN || errno == EINTR) {
                        p = (struct pollfd) { .fd = fd, .events = POLLOUT };
                        (void) poll(&p, 1, 200);
                        if (!(p.revents & (POLLHUP | POLLERR)))
                                continue;
                }
                close(fd); /* dropped by nsd */
                fd = -1;
                closed++;
                nap(100);
        }
}

int main(int argc, char *argv[]) {
        unsigned long first, last, n = 1;
        pid_t kids[4097];
        size_t n_kids = 0;
        int status = 0;

        if (argc < 5 || (strcmp(argv[2], "hold") != 0 && strcmp(argv[2], "flood") != 0)) {
                fprintf(stderr, "usage: nsd-flood SOCKET hold|flood FIRST LAST [N]\n");
                return 2;
        }
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", argv[1]);
        first = strtoul(argv[3], NULL, 10);
        last = strtoul(argv[4], NULL, 10);
        if (argc > 5)
                n = strtoul(argv[5], NULL, 10);
        if (n < 1 || n > HOLD_MAX || last < first || last - first > 4096) {
                fprintf(stderr, "nsd-flood: bad numbers\n");
                return 2;
        }
        /* no SA_RESTART: the parent's wait() must return to pass SIGTERM on */
        struct sigaction sa_term = { .sa_handler = on_term };
        sigaction(SIGTERM, &sa_term, NULL);
        sigaction(SIGINT, &sa_term, NULL);
        signal(SIGPIPE, SIG_IGN);
        for (unsigned long uid = first; uid <= last; uid++) {
                pid_t pid = fork();
                if (pid < 0) {
                        perror("fork");
                        break;
                }
                if (pid > 0) {
                        kids[n_kids++] = pid;
                        continue;
                }
                if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
                    setresuid(uid, uid, uid) < 0) {
                        perror("setresuid");
                        _exit(1);
                }
                if (strcmp(argv[2], "hold") == 0)
                        hold((unsigned) n);
                else
                        flood();
                printf("uid %lu %s: connects=%lu closed=%lu\n", uid, argv[2], connects, closed);
                _exit(0);
        }
        /* the parent waits; its SIGTERM goes on to every child */
        for (;;) {
                if (wait(&status) > 0)
                        continue;
                if (errno != EINTR)
                        break;
                if (stop) {
                        for (size_t i = 0; i < n_kids; i++)
                                kill(kids[i], SIGTERM);
                        stop = 0;
                }
        }
        return 0;
}
