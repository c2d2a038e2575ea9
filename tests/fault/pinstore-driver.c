/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pinstore-driver: nsd's pin store without the server, for tests/fault/fault-suite.py. It
 * links nsd/store/pinstore.c and nsd/store/userns.c and does what the server does at start (open,
 * adopt), plus one operation, printing what a test checks. Root only, in a private mount
 * namespace.
 *
 *   pinstore-driver RUN_DIR state
 *       open and adopt once; print "ready yes|no", "adopted UID INODE", "pending UID"
 *   pinstore-driver RUN_DIR wait UID WAIT_MS
 *       open and adopt; while UID is pending, try userns_create(UID) (it must answer
 *       -EAGAIN: "create-while-pending EAGAIN", anything else is printed as it is) and retry
 *       with pinstore_retry_pending() at the delays it gives, for up to WAIT_MS; print
 *       "adopted UID INODE", "absent UID" (no pin) or "still-pending UID"
 *   pinstore-driver RUN_DIR create UID
 *       open, adopt, userns_create(UID): "created UID INODE pinned|unpinned" or
 *       "create-error ERRNO"
 *   pinstore-driver RUN_DIR release UID WAIT_MS
 *       open, adopt (waiting for UID as above), userns_release(): "released UID" or
 *       "release-error ERRNO", then "pending yes|no" for UID
 *   pinstore-driver RUN_DIR exec UID WAIT_MS -- CMD...
 *       open, adopt (waiting for UID), setns() into UID's namespace, run CMD
 *   pinstore-driver RUN_DIR pinns -- CMD...
 *       open, setns() into the pin namespace, chdir to RUN_DIR (its pin tmpfs), run CMD
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "fault-util.h"
#include "store/pinstore-internal.h"
#include "store/userns.h"
#include "time-util.h"

#define UIDS_MAX 64

static struct {
        uid_t uid;
        UserNs *ns;
} adopted[UIDS_MAX];
static size_t n_adopted;

static void on_adopt(UserNs *ns, void *userdata) {
        if (n_adopted == UIDS_MAX) {
                userns_free(ns);
                return;
        }
        adopted[n_adopted].uid = ns->uid;
        adopted[n_adopted++].ns = ns;
}

static UserNs *adopted_ns(uid_t uid) {
        for (size_t i = 0; i < n_adopted; i++)
                if (adopted[i].uid == uid && adopted[i].ns)
                        return adopted[i].ns;
        return NULL;
}

/* Wait until uid is adopted (or has no pin); NULL when it is not adopted in time. */
static UserNs *wait_adopted(PinStore *ps, uid_t uid, unsigned wait_ms, bool try_create) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + (uint64_t) wait_ms * 1000;
        bool said = false;

        for (;;) {
                UserNs *ns = adopted_ns(uid), *fresh = NULL;
                uint64_t delay = 0;
                int r;

                if (ns)
                        return ns;
                if (!pinstore_is_pending(ps, uid))
                        return NULL; /* no pin */
                if (try_create && !said) {
                        /* the rule under test: a pending uid never gets a fresh namespace */
                        r = userns_create(ps, uid, NULL, &fresh);
                        if (r == -EAGAIN)
                                printf("create-while-pending EAGAIN\n");
                        else if (r >= 0) {
                                printf("create-while-pending CREATED %llu\n",
                                       (unsigned long long) fresh->ns_inode);
                                userns_free(fresh);
                        } else
                                printf("create-while-pending %s\n", strerror(-r));
                        said = true;
                }
                (void) pinstore_retry_pending(ps, on_adopt, NULL, &delay);
                if (adopted_ns(uid))
                        continue;
                if (now_usec(CLOCK_MONOTONIC) >= deadline)
                        return NULL;
                if (delay == 0)
                        delay = 1000;
                if (now_usec(CLOCK_MONOTONIC) + delay > deadline)
                        delay = deadline - now_usec(CLOCK_MONOTONIC) + 1;
                usleep((useconds_t) delay);
        }
}

static int usage(void) {
        fprintf(stderr,
                "usage: pinstore-driver RUN_DIR state|wait|create|release|exec|pinns ...\n");
        return 2;
}

int main(int argc, char **argv) {
        PinStore *ps = NULL;
        const char *cmd;
        uid_t uid = 0;
        int r;

        log_setup(LOG_TARGET_STDERR, LOG_DEBUG);
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (argc < 3)
                return usage();
        cmd = argv[2];
        if (strcmp(cmd, "state") != 0 && strcmp(cmd, "pinns") != 0 &&
            (argc < 4 || parse_uid(argv[3], &uid) < 0))
                return usage();

        r = pinstore_open(argv[1], &ps);
        if (r < 0) {
                printf("open-error %s\n", strerror(-r));
                return 1;
        }
        if (strcmp(cmd, "pinns") == 0) {
                if (argc < 5 || strcmp(argv[3], "--") != 0)
                        return usage();
                if (ps->pinns_fd < 0 || setns(ps->pinns_fd, CLONE_NEWNS) < 0 ||
                    chdir(argv[1]) < 0) {
                        printf("pinns-error %s\n", ps->pinns_fd < 0 ? "not open" : strerror(errno));
                        return 1;
                }
                execvp(argv[4], argv + 4);
                printf("pinns-error %s\n", strerror(errno));
                return 1;
        }
        r = pinstore_adopt_all(ps, on_adopt, NULL);
        if (r < 0) {
                printf("adopt-error %s\n", strerror(-r));
                return 1;
        }

        if (strcmp(cmd, "state") == 0) {
                printf("ready %s\n", pinstore_is_ready(ps) ? "yes" : "no");
                for (size_t i = 0; i < n_adopted; i++)
                        printf("adopted %u %llu\n", (unsigned) adopted[i].uid,
                               (unsigned long long) adopted[i].ns->ns_inode);
                GHashTableIter it;
                gpointer key;

                g_hash_table_iter_init(&it, ps->pending);
                while (g_hash_table_iter_next(&it, &key, NULL))
                        printf("pending %u\n", GPOINTER_TO_UINT(key));
        } else if (strcmp(cmd, "wait") == 0) {
                UserNs *ns;

                if (argc < 5)
                        return usage();
                ns = wait_adopted(ps, uid, (unsigned) atoi(argv[4]), true);
                if (ns)
                        printf("adopted %u %llu\n", (unsigned) uid,
                               (unsigned long long) ns->ns_inode);
                else
                        printf("%s %u\n", pinstore_is_pending(ps, uid) ? "still-pending" : "absent",
                               (unsigned) uid);
        } else if (strcmp(cmd, "create") == 0) {
                UserNs *ns = NULL;

                r = userns_create(ps, uid, NULL, &ns);
                if (r < 0)
                        printf("create-error %s\n", strerror(-r));
                else
                        printf("created %u %llu %s\n", (unsigned) uid,
                               (unsigned long long) ns->ns_inode,
                               ns->pinned ? "pinned" : "unpinned");
                userns_free(ns);
        } else if (strcmp(cmd, "release") == 0) {
                UserNs *ns;

                if (argc < 5)
                        return usage();
                ns = wait_adopted(ps, uid, (unsigned) atoi(argv[4]), false);
                if (!ns) {
                        printf("release-error not adopted\n");
                        return 1;
                }
                for (size_t i = 0; i < n_adopted; i++)
                        if (adopted[i].ns == ns)
                                adopted[i].ns = NULL;
                r = userns_release(ps, ns);
                if (r < 0)
                        printf("release-error %s\n", strerror(-r));
                else
                        printf("released %u\n", (unsigned) uid);
                printf("pending %s\n", pinstore_is_pending(ps, uid) ? "yes" : "no");
        } else if (strcmp(cmd, "exec") == 0) {
                UserNs *ns;

                if (argc < 7 || strcmp(argv[5], "--") != 0)
                        return usage();
                ns = wait_adopted(ps, uid, (unsigned) atoi(argv[4]), false);
                if (!ns || setns(ns->ns_fd, CLONE_NEWNS) < 0) {
                        printf("exec-error %s\n", ns ? strerror(errno) : "not adopted");
                        return 1;
                }
                execvp(argv[6], argv + 6);
                printf("exec-error %s\n", strerror(errno));
                return 1;
        } else
                return usage();

        for (size_t i = 0; i < n_adopted; i++)
                userns_free(adopted[i].ns);
        pinstore_free(ps);
        return 0;
}
