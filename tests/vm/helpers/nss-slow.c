/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libnss_nsdslow.so.2: an NSS module for tests/vm/scenarios/nsd-slow-nss.sh that makes the user
 * database slow for ONE user. Named first in the VM's /etc/nsswitch.conf ("passwd: nsdslow
 * files"), it answers NOTFOUND for everyone (so files answers), but a lookup of the user
 * named in /run/nsd-slow/name or the uid in /run/nsd-slow/uid first waits while the file
 * /run/nsd-slow/block exists, after creating /run/nsd-slow/asked (so the test knows the
 * lookup came). Only processes whose library path finds it load it (the scenario gives nsd
 * LD_LIBRARY_PATH), so sshd and su are not slowed.
 *
 * And slow for a range of uids: /run/nsd-slow/range "FIRST COUNT MSEC" makes each lookup
 * of a uid from FIRST to FIRST+COUNT-1 take MSEC ms (then NOTFOUND), as a directory service
 * would for the uids of a subuid range it does not know; /run/nsd-slow/range-asked is
 * created at the first such lookup.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <nss.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DIR "/run/nsd-slow"

enum nss_status _nss_nsdslow_getpwuid_r(uid_t uid, struct passwd *pw, char *buf, size_t len,
                                        int *errnop);
enum nss_status _nss_nsdslow_getpwnam_r(const char *name, struct passwd *pw, char *buf, size_t len,
                                        int *errnop);
enum nss_status _nss_nsdslow_initgroups_dyn(const char *user, gid_t group, long *start, long *size,
                                            gid_t **groups, long limit, int *errnop);

static int read_line(const char *path, char *buf, size_t size) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -1;
        n = read(fd, buf, size - 1);
        close(fd);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        return 0;
}

static void wait_while_blocked(void) {
        struct timespec ts = { .tv_nsec = 50 * 1000 * 1000 };
        int fd = open(DIR "/asked", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

        if (fd >= 0)
                close(fd);
        while (access(DIR "/block", F_OK) == 0)
                nanosleep(&ts, NULL);
}

static int is_slow_uid(uid_t uid) {
        char buf[32];
        return read_line(DIR "/uid", buf, sizeof buf) == 0 && strtoul(buf, NULL, 10) == uid;
}

static int is_slow_name(const char *name) {
        char buf[64];
        return read_line(DIR "/name", buf, sizeof buf) == 0 && strcmp(buf, name) == 0;
}

/* the range mode: sleep for a uid of the range */
static void slow_range(uid_t uid) {
        unsigned long first, count, msec;
        char buf[96];

        if (read_line(DIR "/range", buf, sizeof buf) < 0 ||
            sscanf(buf, "%lu %lu %lu", &first, &count, &msec) != 3 || uid < first ||
            uid - first >= count)
                return;
        int fd = open(DIR "/range-asked", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0)
                close(fd);
        struct timespec ts = { .tv_sec = (time_t) (msec / 1000),
                               .tv_nsec = (long) (msec % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

enum nss_status _nss_nsdslow_getpwuid_r(uid_t uid, struct passwd *pw, char *buf, size_t len,
                                        int *errnop) {
        if (is_slow_uid(uid))
                wait_while_blocked();
        slow_range(uid);
        *errnop = ENOENT;
        return NSS_STATUS_NOTFOUND;
}

enum nss_status _nss_nsdslow_getpwnam_r(const char *name, struct passwd *pw, char *buf, size_t len,
                                        int *errnop) {
        if (is_slow_name(name))
                wait_while_blocked();
        *errnop = ENOENT;
        return NSS_STATUS_NOTFOUND;
}

enum nss_status _nss_nsdslow_initgroups_dyn(const char *user, gid_t group, long *start, long *size,
                                            gid_t **groups, long limit, int *errnop) {
        if (is_slow_name(user))
                wait_while_blocked();
        *errnop = ENOENT;
        return NSS_STATUS_NOTFOUND;
}
