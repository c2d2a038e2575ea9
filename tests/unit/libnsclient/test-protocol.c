/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-protocol: nsd-protocol.h's shared checks, and libnsclient against a fake nsd.
 *
 * Part 1 feeds nsd_msg_check() every request and reply type at its exact size and at
 * every kind of wrong one. Part 2 binds a fake nsd on a socket in a mkdtemp() folder; a
 * thread plays a scripted conversation per case and records what it received, and the
 * library's answers (return values, descriptors, messages, no leaked descriptors) are
 * checked. Runs as root and as any other user; removes its folder at the end. TAP output.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake-nsd.h"
#include "nsclient.h"
#include "nsd-protocol.h"
#include "tap.h"
#include "time-util.h"

static char tmpdir[PATH_MAX];
static char sock_path[PATH_MAX + 16];

/* Leave nothing behind, also when bailing out. */
static void remove_tmpdir(void) {
        char marker[PATH_MAX + 16];

        if (!tmpdir[0])
                return;
        snprintf(marker, sizeof(marker), "%s/marker", tmpdir);
        (void) unlink(marker);
        (void) unlink(sock_path);
        (void) rmdir(tmpdir);
        tmpdir[0] = 0;
}

/* ---- part 1: nsd_msg_check ------------------------------------------------------------------ */

static uint8_t msgbuf[NSD_MSG_SIZE_MAX + 64] __attribute__((aligned(8)));

/* A sound message of this type and size in msgbuf. */
static void *msg(uint16_t type, size_t size) {
        memset(msgbuf, 0, sizeof(msgbuf));
        nsd_msg_init((struct nsd_msg_header *) msgbuf, type,
                     size < sizeof(struct nsd_msg_header) ? sizeof(struct nsd_msg_header) : size,
                     1);
        ((struct nsd_msg_header *) msgbuf)->length = (uint32_t) size;
        return msgbuf;
}

static int check(size_t n, int is_request) {
        const char *why = "unset";
        int r = nsd_msg_check(msgbuf, n, is_request, &why);

        if ((r == 0) != (why == NULL))
                tap_diag("why is %s for r=%d", why ? why : "NULL", r);
        return r;
}

/* A fixed-size message of type t and size sz, a request or a reply: it passes at its size, fails
 * a byte short or long and in the other direction; an error set fails a request, not a reply. */
static void check_fixed(uint16_t t, size_t sz, int is_request) {
        char what[32];

        snprintf(what, sizeof(what), is_request ? "request %u" : "reply 0x%x", t);
        msg(t, sz);
        is_int(check(sz, is_request), 0, "%s at its size %zu passes", what, sz);
        msg(t, sz - 1);
        is_int(check(sz - 1, is_request), -EBADMSG, "%s one byte short fails", what);
        msg(t, sz + 1);
        is_int(check(sz + 1, is_request), -EBADMSG, "%s one byte long fails", what);
        msg(t, sz);
        is_int(check(sz, !is_request), -EOPNOTSUPP, "%s is not a %s", what,
               is_request ? "reply" : "request");
        msg(t, sz);
        ((struct nsd_msg_header *) msgbuf)->error = is_request ? -EPERM : -ENOENT;
        is_int(check(sz, is_request), is_request ? -EBADMSG : 0, "%s with an error set %s", what,
               is_request ? "fails" : "passes");
}

static void test_msg_check(void) {
        static const uint16_t requests[] = {
                NSD_REQ_JOIN,
                NSD_REQ_SESSION_OPEN,
                NSD_REQ_SESSION_CLOSE,
                NSD_REQ_STATUS,
                NSD_REQ_LIST,
                NSD_REQ_SHOW,
                NSD_REQ_RELEASE,
                NSD_REQ_HIDE,
                NSD_REQ_JOIN_SESSION,
                NSD_REQ_METRICS,
                NSD_REQ_SHARES,
                NSD_REQ_VOLUMES,
                NSD_REQ_CREDENTIAL_GIVE,
                NSD_REQ_CREDENTIAL_TAKE,
                NSD_REQ_CREDENTIAL_UNLOCK,
                NSD_REQ_VOLUME_START,
                NSD_REQ_VOLUME_STOP,
        };
        static const uint16_t replies[] = {
                NSD_REP_JOIN,
                NSD_REP_SESSION_OPEN,
                NSD_REP_SESSION_CLOSE,
                NSD_REP_STATUS,
                NSD_REP_LIST_ENTRY,
                NSD_REP_LIST_END,
                NSD_REP_SHOW_END,
                NSD_REP_RELEASE,
                NSD_REP_HIDE,
                NSD_REP_JOIN_SESSION,
                NSD_REP_METRICS,
                NSD_REP_SHARES_ENTRY,
                NSD_REP_SHARES_MEMBERS,
                NSD_REP_SHARES_END,
                NSD_REP_VOLUMES_ENTRY,
                NSD_REP_VOLUMES_END,
                NSD_REP_CREDENTIAL_GIVE,
                NSD_REP_CREDENTIAL_TAKE,
                NSD_REP_CREDENTIAL_UNLOCK,
                NSD_REP_VOLUME_START,
                NSD_REP_VOLUME_STOP,
                NSD_REP_ERROR,
        };
        const struct nsd_msg_header *h = (const struct nsd_msg_header *) msgbuf;
        const char *why;

        for (size_t i = 0; i < sizeof(requests) / sizeof(requests[0]); i++) {
                uint16_t t = requests[i];
                size_t sz = nsd_request_size(t);

                check_fixed(t, sz, 1);
                msg(t, sz);
                ((struct nsd_msg_header *) msgbuf)->version_minor = 99;
                is_int(check(sz, 1), 0, "request %u of another minor version passes", t);
        }
        for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++)
                check_fixed(replies[i], nsd_reply_size(replies[i]), 0);

        /* SHOW_DATA: any size from header + 1 up to the maximum */
        msg(NSD_REP_SHOW_DATA, sizeof(*h));
        is_int(check(sizeof(*h), 0), -EBADMSG, "SHOW_DATA without text fails");
        msg(NSD_REP_SHOW_DATA, sizeof(*h) + 1);
        is_int(check(sizeof(*h) + 1, 0), 0, "SHOW_DATA with 1 byte passes");
        msg(NSD_REP_SHOW_DATA, 1000);
        is_int(check(1000, 0), 0, "SHOW_DATA with 976 bytes passes");
        msg(NSD_REP_SHOW_DATA, NSD_MSG_SIZE_MAX);
        is_int(check(NSD_MSG_SIZE_MAX, 0), 0, "SHOW_DATA of NSD_MSG_SIZE_MAX passes");
        msg(NSD_REP_SHOW_DATA, NSD_MSG_SIZE_MAX + 1);
        is_int(check(NSD_MSG_SIZE_MAX + 1, 0), -EMSGSIZE, "SHOW_DATA beyond the maximum: EMSGSIZE");
        msg(NSD_REQ_JOIN, sizeof(struct nsd_req_join));
        is_int(check(NSD_MSG_SIZE_MAX + 1, 1), -EMSGSIZE,
               "any datagram beyond NSD_MSG_SIZE_MAX: EMSGSIZE (before anything else)");

        /* shorter than a header */
        msg(NSD_REQ_STATUS, sizeof(*h));
        is_int(check(0, 1), -EBADMSG, "empty datagram fails");
        is_int(check(1, 1), -EBADMSG, "1-byte datagram fails");
        is_int(check(sizeof(*h) - 1, 0), -EBADMSG, "datagram one byte shorter than a header fails");
        msg(NSD_REP_RELEASE, sizeof(*h));
        is_int(check(sizeof(*h), 0), 0, "header-only RELEASE reply passes");

        /* header fields */
        msg(NSD_REQ_JOIN, sizeof(struct nsd_req_join));
        ((struct nsd_msg_header *) msgbuf)->magic = 0x3044534fu;
        is_int(check(sizeof(struct nsd_req_join), 1), -EBADMSG, "bad magic fails");
        msg(NSD_REQ_JOIN, sizeof(struct nsd_req_join));
        ((struct nsd_msg_header *) msgbuf)->version_major = NSD_PROTO_MAJOR + 1;
        is_int(check(sizeof(struct nsd_req_join), 1), -EPROTONOSUPPORT,
               "another major version: EPROTONOSUPPORT");
        msg(NSD_REP_STATUS, sizeof(struct nsd_rep_status));
        ((struct nsd_msg_header *) msgbuf)->version_major = 0;
        is_int(check(sizeof(struct nsd_rep_status), 0), -EPROTONOSUPPORT,
               "major version 0 reply: EPROTONOSUPPORT");
        msg(NSD_REQ_JOIN, sizeof(struct nsd_req_join));
        ((struct nsd_msg_header *) msgbuf)->length = sizeof(struct nsd_req_join) + 8;
        is_int(check(sizeof(struct nsd_req_join), 1), -EBADMSG,
               "length field larger than the datagram fails");
        msg(NSD_REQ_JOIN, sizeof(struct nsd_req_join));
        ((struct nsd_msg_header *) msgbuf)->length = sizeof(struct nsd_req_join);
        is_int(check(sizeof(struct nsd_req_join) + 8, 1), -EBADMSG,
               "datagram larger than its length field fails");

        /* every request type has a size and a reply, and the tables above cover them all */
        _Static_assert(sizeof(requests) / sizeof(requests[0]) == _NSD_REQ_MAX - 1,
                       "every request type is in the table");
        for (uint16_t t = 1; t < _NSD_REQ_MAX; t++) {
                bool listed = false;

                for (size_t i = 0; i < sizeof(requests) / sizeof(requests[0]); i++)
                        listed = listed || requests[i] == t;
                ok(listed && nsd_request_size(t) > 0 &&
                           (t == NSD_REQ_LIST || t == NSD_REQ_SHOW ||
                            nsd_reply_size(t | NSD_REPLY_BIT) > 0),
                   "request type %u is tested, has a size and a reply", t);
        }
        ok(nsd_request_size(NSD_REQ_HIDE) <= NSD_MSG_SIZE_MAX, "a HIDE request fits in a datagram");
        ok(nsd_reply_size(NSD_REP_SHARES_ENTRY) <= NSD_MSG_SIZE_MAX &&
                   nsd_reply_size(NSD_REP_SHARES_MEMBERS) <= NSD_MSG_SIZE_MAX,
           "a SHARES entry and a members part fit in a datagram");
        ok(nsd_reply_size(NSD_REP_VOLUMES_ENTRY) <= NSD_MSG_SIZE_MAX,
           "a VOLUMES entry fits in a datagram");

        /* types */
        msg(NSD_REQ_HIDE, 32);
        is_int(check(32, 1), -EBADMSG, "HIDE of the size of a JOIN: EBADMSG");
        msg(0, 24);
        is_int(check(24, 1), -EOPNOTSUPP, "request type 0: EOPNOTSUPP");
        msg(_NSD_REQ_MAX + 5, 24);
        is_int(check(24, 1), -EOPNOTSUPP, "unknown request type: EOPNOTSUPP");
        msg(0x81ff, 24);
        is_int(check(24, 0), -EOPNOTSUPP, "unknown reply type: EOPNOTSUPP");
        msg(NSD_REP_HIDE, 32);
        is_int(check(32, 0), -EBADMSG, "HIDE reply with a body: EBADMSG");

        why = NULL;
        msg(NSD_REQ_STATUS, 24);
        ((struct nsd_msg_header *) msgbuf)->magic = 0;
        nsd_msg_check(msgbuf, 24, 1, &why);
        ok(why && *why, "a refusal names its reason ('%s')", why ? why : "");

        /* the string helper */
        {
                char f[4] = { 'a', 'b', 'c', 'd' };

                ok(!nsd_field_is_string(f, sizeof(f)), "field without NUL is no string");
                f[3] = 0;
                ok(nsd_field_is_string(f, sizeof(f)), "field with NUL at its end is a string");
        }
}

/* ---- part 2: a fake nsd -------------------------------------------------------------------- */

static int listen_fd = -1;

/* What the fake nsd saw, for the main thread to check after the conversation. */
static struct {
        unsigned requests;
        unsigned bad_requests; /* failed nsd_msg_check */
        struct fake_req last;  /* the last request (its fds closed) */
        bool pidfd_matches;    /* SESSION_OPEN: the fd is a pidfd of the request's pid */
        bool send_failed;
} seen;

typedef void (*script_fn)(int cfd);
static pthread_t srv_thread;
static script_fn srv_script;

/* Read one request; 0 at EOF. The caller closes r->fds. */
static int srv_read(int cfd, struct fake_req *r) {
        int n = fake_nsd_recv(cfd, r);

        if (n <= 0)
                return n;
        seen.requests++;
        if (r->check < 0)
                seen.bad_requests++;
        return n;
}

/* Read one request, remember it in seen.last, close its fds. */
static bool srv_next(int cfd, struct fake_req *r) {
        if (srv_read(cfd, r) <= 0)
                return false;
        fake_req_close_fds(r);
        seen.last = *r;
        return true;
}

static void srv_send(int cfd, const void *buf, size_t len, const int *fds, size_t nfds) {
        if (fake_nsd_send(cfd, buf, len, fds, nfds) < 0)
                seen.send_failed = true;
}

/* Initialise a reply of this type and size answering r. */
#define rep fake_nsd_reply_init

static void *server_main(void *arg) {
        struct timeval tv = { .tv_sec = 10 };
        int cfd;

        cfd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (cfd < 0)
                return NULL;
        (void) setsockopt(cfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        (void) setsockopt(cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        srv_script(cfd);
        close(cfd);
        return NULL;
}

/* Start the fake nsd with a script and connect to it. */
static nsc_conn *start(script_fn script) {
        nsc_conn *c = NULL;
        int r;

        memset(&seen, 0, sizeof(seen));
        srv_script = script;
        if (pthread_create(&srv_thread, NULL, server_main, NULL) != 0)
                tap_bail_errno("pthread_create");
        r = nsc_connect(sock_path, &c);
        if (r < 0) {
                errno = -r;
                tap_bail_errno("nsc_connect to the fake nsd");
        }
        return c;
}

static void finish(nsc_conn *c) {
        nsc_disconnect(c);
        pthread_join(srv_thread, NULL);
}

static int count_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        int n = 0;

        if (!d)
                tap_bail_errno("opendir /proc/self/fd");
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        closedir(d);
        return n;
}

static bool fd_is_cloexec(int fd) {
        int f = fcntl(fd, F_GETFD);

        return f >= 0 && (f & FD_CLOEXEC);
}

static bool pidfd_open_works(void) {
        int fd = (int) syscall(SYS_pidfd_open, getpid(), 0);

        if (fd < 0)
                return false;
        close(fd);
        return true;
}

/* ---- scripts ---- */

static uint64_t own_ns_inode(void) {
        struct stat st;

        if (stat("/proc/self/ns/mnt", &st) < 0)
                tap_bail_errno("stat /proc/self/ns/mnt");
        return st.st_ino;
}

enum join_variant {
        JOIN_GOOD,
        JOIN_ONE_FD,
        JOIN_THREE_FDS,
        JOIN_SWAPPED, /* nsfs first, directory second */
        JOIN_WRONG_INODE,
        JOIN_WRONG_UID,
        JOIN_SHORT, /* reply 8 bytes short, with both fds */
};
static enum join_variant join_variant;

static void script_join(int cfd) {
        struct fake_req r;
        struct nsd_rep_join j;
        int fds[3];

        if (!srv_next(cfd, &r))
                return;
        fds[0] = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        fds[1] = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        fds[2] = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        rep(&j, NSD_REP_JOIN, sizeof(j), &r);
        j.uid = r.join.uid;
        j.ns_flags = NSD_NS_CREATED | NSD_NS_PINNED;
        j.ns_inode = own_ns_inode();
        j.created_usec = 1234567;
        switch (join_variant) {
        case JOIN_GOOD:
                srv_send(cfd, &j, sizeof(j), fds, 2);
                break;
        case JOIN_ONE_FD:
                srv_send(cfd, &j, sizeof(j), fds, 1);
                break;
        case JOIN_THREE_FDS:
                srv_send(cfd, &j, sizeof(j), fds, 3);
                break;
        case JOIN_SWAPPED: {
                int sw[2] = { fds[1], fds[0] };
                srv_send(cfd, &j, sizeof(j), sw, 2);
                break;
        }
        case JOIN_WRONG_INODE:
                j.ns_inode++;
                srv_send(cfd, &j, sizeof(j), fds, 2);
                break;
        case JOIN_WRONG_UID:
                j.uid++;
                srv_send(cfd, &j, sizeof(j), fds, 2);
                break;
        case JOIN_SHORT:
                j.hdr.length = sizeof(j) - 8;
                srv_send(cfd, &j, sizeof(j) - 8, fds, 2);
                break;
        }
        for (int i = 0; i < 3; i++)
                close(fds[i]);
}

/* an error reply, then a STATUS answered normally */
static int32_t error_value;
static uint32_t error_seq_delta; /* 0: echo seq; 1: answer with seq 0 */
static void script_error_then_status(int cfd) {
        struct fake_req r;
        struct nsd_rep_error e;
        struct nsd_rep_status s;

        if (!srv_next(cfd, &r))
                return;
        rep(&e, NSD_REP_ERROR, sizeof(e), &r);
        e.hdr.error = error_value;
        if (error_seq_delta)
                e.hdr.seq = 0;
        e.request_type = r.hdr.type;
        snprintf(e.message, sizeof(e.message), "only root may join another user's namespace");
        srv_send(cfd, &e, sizeof(e), NULL, 0);

        if (!srv_next(cfd, &r))
                return;
        rep(&s, NSD_REP_STATUS, sizeof(s), &r);
        strcpy(s.version, "0.1.0");
        srv_send(cfd, &s, sizeof(s), NULL, 0);
}

/* one bad answer to whatever comes, then answer everything else well */
enum bad_variant {
        BAD_SEQ,
        BAD_TYPE,
        BAD_OVERSIZED,
        BAD_CLOSE,
        BAD_MAJOR,
        BAD_FD_ON_STATUS,
        BAD_ERROR_IN_REPLY,
        BAD_VERSION_STRING
};
static enum bad_variant bad_variant;
static void script_bad_status(int cfd) {
        static uint8_t big[NSD_MSG_SIZE_MAX + 100] __attribute__((aligned(8)));
        struct fake_req r;
        struct nsd_rep_status s;
        struct nsd_msg_header h;
        int fd;

        if (!srv_next(cfd, &r))
                return;
        rep(&s, NSD_REP_STATUS, sizeof(s), &r);
        strcpy(s.version, "0.1.0");
        switch (bad_variant) {
        case BAD_SEQ:
                s.hdr.seq++;
                srv_send(cfd, &s, sizeof(s), NULL, 0);
                break;
        case BAD_TYPE:
                rep(&h, NSD_REP_RELEASE, sizeof(h), &r);
                srv_send(cfd, &h, sizeof(h), NULL, 0);
                break;
        case BAD_OVERSIZED:
                rep(big, NSD_REP_STATUS, sizeof(big), &r);
                srv_send(cfd, big, sizeof(big), NULL, 0);
                break;
        case BAD_CLOSE:
                return;
        case BAD_MAJOR:
                s.hdr.version_major = NSD_PROTO_MAJOR + 1;
                srv_send(cfd, &s, sizeof(s), NULL, 0);
                break;
        case BAD_FD_ON_STATUS:
                fd = open("/", O_PATH | O_CLOEXEC);
                srv_send(cfd, &s, sizeof(s), &fd, 1);
                close(fd);
                break;
        case BAD_ERROR_IN_REPLY:
                s.hdr.error = -EPERM;
                srv_send(cfd, &s, sizeof(s), NULL, 0);
                break;
        case BAD_VERSION_STRING:
                memset(s.version, 'x', sizeof(s.version));
                srv_send(cfd, &s, sizeof(s), NULL, 0);
                break;
        }
        /* a second request must not arrive: the library marks the connection broken */
        while (srv_next(cfd, &r)) {
        }
}

static void script_status(int cfd) {
        struct fake_req r;
        struct nsd_rep_status s;

        while (srv_next(cfd, &r)) {
                rep(&s, NSD_REP_STATUS, sizeof(s), &r);
                s.hdr.version_minor = 3;
                strcpy(s.version, "0.1.0-test");
                s.started_usec = 1700000000000000ull;
                s.features = NSD_FEATURE_SETNS_DIRFD | NSD_FEATURE_PIN_NAMESPACE;
                s.namespaces = 5;
                s.pinned = 4;
                s.sessions = 9;
                s.connections = 2;
                s.max_namespaces = 10000;
                s.max_sessions_per_uid = 256;
                s.max_connections_per_uid = 16;
                s.pid = 4242;
                srv_send(cfd, &s, sizeof(s), NULL, 0);
        }
}

static uint32_t list_entries, list_end_count;
static bool list_close_early;
static void script_list(int cfd) {
        struct fake_req r;
        struct nsd_rep_list_entry e;
        struct nsd_rep_stream_end end;

        if (!srv_next(cfd, &r))
                return;
        for (uint32_t i = 0; i < list_entries; i++) {
                rep(&e, NSD_REP_LIST_ENTRY, sizeof(e), &r);
                e.uid = 1000 + i;
                e.ns_flags = NSD_NS_PINNED;
                e.sessions = i;
                e.mounts = i == 1 ? -1 : (int32_t) (30 + i);
                e.ns_inode = 4026530000ull + i;
                e.created_usec = 1000 * i;
                snprintf(e.pin, sizeof(e.pin), "/run/nsd/pins/%u", 1000 + i);
                srv_send(cfd, &e, sizeof(e), NULL, 0);
                if (list_close_early && i == 1)
                        return;
        }
        rep(&end, NSD_REP_LIST_END, sizeof(end), &r);
        end.count = list_end_count;
        srv_send(cfd, &end, sizeof(end), NULL, 0);
        while (srv_next(cfd, &r)) {
        }
}

/* SHARES: "lab" with shares_lab_members members in parts, "empty" with none, the end;
 * shares_lie: the first part has one member more than the entry announced */
static uint32_t shares_lab_members;
static bool shares_lie;
static void script_shares(int cfd) {
        struct fake_req r;
        struct nsd_rep_shares_entry e;
        struct nsd_rep_shares_members m;
        struct nsd_rep_stream_end end;
        uint32_t sent = 0;

        if (!srv_next(cfd, &r))
                return;
        rep(&e, NSD_REP_SHARES_ENTRY, sizeof(e), &r);
        snprintf(e.name, sizeof(e.name), "lab");
        snprintf(e.path, sizeof(e.path), "/srv/lab");
        e.propagation = NSD_SHARE_PROPAGATION_BOTH;
        e.max_members = 256;
        e.members = shares_lab_members + 1;
        e.n_uids = shares_lab_members;
        e.mounts = -1;
        srv_send(cfd, &e, sizeof(e), NULL, 0);
        while (sent < shares_lab_members) {
                rep(&m, NSD_REP_SHARES_MEMBERS, sizeof(m), &r);
                while (m.n < NSD_SHARES_MEMBERS_PER_PART && sent < shares_lab_members)
                        m.members[m.n++].uid = 2000 + sent++;
                if (shares_lie)
                        m.members[m.n++].uid = 1;
                srv_send(cfd, &m, sizeof(m), NULL, 0);
                if (shares_lie)
                        break;
        }
        rep(&e, NSD_REP_SHARES_ENTRY, sizeof(e), &r);
        snprintf(e.name, sizeof(e.name), "empty");
        snprintf(e.path, sizeof(e.path), "/srv/empty");
        e.max_members = 4;
        e.flags = NSD_SHARE_OWN_ONLY;
        srv_send(cfd, &e, sizeof(e), NULL, 0);
        rep(&end, NSD_REP_SHARES_END, sizeof(end), &r);
        end.count = 2;
        srv_send(cfd, &end, sizeof(end), NULL, 0);
        while (srv_next(cfd, &r)) {
        }
}

/* what a 1.4 nsd does with a type it does not know */
static void script_shares_unknown(int cfd) {
        struct fake_req r;

        if (srv_next(cfd, &r))
                (void) fake_nsd_send_error(cfd, &r, -EOPNOTSUPP, "unknown request type (11)");
}

/* SHOW: text in parts of these sizes, then END */
static const size_t *show_parts;
static size_t show_nparts;
static char show_byte(size_t i) {
        return (char) ('!' + (i * 7 + i / 93) % 90);
}
static void script_show(int cfd) {
        static uint8_t buf[NSD_MSG_SIZE_MAX] __attribute__((aligned(8)));
        struct nsd_msg_header *h = (struct nsd_msg_header *) buf;
        struct fake_req r;
        size_t pos = 0;

        if (!srv_next(cfd, &r))
                return;
        for (size_t p = 0; p < show_nparts; p++) {
                size_t part = show_parts[p];

                rep(buf, NSD_REP_SHOW_DATA, sizeof(*h) + part, &r);
                for (size_t i = 0; i < part; i++)
                        buf[sizeof(*h) + i] = (uint8_t) show_byte(pos + i);
                pos += part;
                srv_send(cfd, buf, sizeof(*h) + part, NULL, 0);
                if (seen.send_failed)
                        return; /* the client gave up */
        }
        rep(buf, NSD_REP_SHOW_END, sizeof(*h), &r);
        srv_send(cfd, buf, sizeof(*h), NULL, 0);
}

static uint64_t session_reply_id;
static void script_sessions(int cfd) {
        struct fake_req r;

        while (srv_read(cfd, &r) > 0) {
                seen.last = r;
                if (r.hdr.type == NSD_REQ_SESSION_OPEN) {
                        struct nsd_rep_session_open o;

                        if (r.nfds == 1 &&
                            fake_fd_is_pidfd_of(r.fds[0], (pid_t) r.session_open.pid))
                                seen.pidfd_matches = true;
                        rep(&o, NSD_REP_SESSION_OPEN, sizeof(o), &r);
                        o.session_id = session_reply_id;
                        o.sessions = 2;
                        srv_send(cfd, &o, sizeof(o), NULL, 0);
                } else if (r.hdr.type == NSD_REQ_SESSION_CLOSE) {
                        struct nsd_rep_session_close cl;

                        rep(&cl, NSD_REP_SESSION_CLOSE, sizeof(cl), &r);
                        cl.sessions = 1;
                        srv_send(cfd, &cl, sizeof(cl), NULL, 0);
                } else if (r.hdr.type == NSD_REQ_RELEASE) {
                        struct nsd_msg_header h;

                        rep(&h, NSD_REP_RELEASE, sizeof(h), &r);
                        srv_send(cfd, &h, sizeof(h), NULL, 0);
                } else if (r.hdr.type == NSD_REQ_HIDE) {
                        struct nsd_msg_header h;

                        rep(&h, NSD_REP_HIDE, sizeof(h), &r);
                        srv_send(cfd, &h, sizeof(h), NULL, 0);
                }
                fake_req_close_fds(&r);
        }
}

/* VOLUME_START and VOLUME_STOP (1.11): each request answered in turn by the next of
 * volume_ctl_answers (an error, or a reply with these fields); the requests in
 * volume_ctl_seen */
static struct volume_ctl_answer {
        int error; /* -errno: an NSD_REP_ERROR with message "in use by pid 4242 (less)" */
        uint32_t state, loop, changed, reserved;
} volume_ctl_answers[4];
static struct fake_req volume_ctl_seen[4];
static void script_volume_ctl(int cfd) {
        struct fake_req r;

        for (size_t i = 0; i < 4 && srv_next(cfd, &r); i++) {
                const struct volume_ctl_answer *a = &volume_ctl_answers[i];
                struct nsd_rep_volume_ctl v;

                volume_ctl_seen[i] = r;
                if (a->error) {
                        (void) fake_nsd_send_error(cfd, &r, a->error,
                                                   "volume 'vault' on /home/alice/vault is in use "
                                                   "by pid 4242 (less)");
                        continue;
                }
                rep(&v, r.hdr.type | NSD_REPLY_BIT, sizeof(v), &r);
                v.state = a->state;
                v.loop = a->loop;
                v.changed = a->changed;
                v.reserved = a->reserved;
                srv_send(cfd, &v, sizeof(v), NULL, 0);
        }
        while (srv_next(cfd, &r)) {
        }
}

/* ---- cases ---- */

static void test_join(void) {
        struct nsc_join_result j = { .root_fd = -7, .ns_fd = -7 };
        struct stat st_root, st_got;
        nsc_conn *c;
        int before, r;

        before = count_fds();
        join_variant = JOIN_GOOD;
        c = start(script_join);
        r = nsc_join(c, 1000, NSC_JOIN_NO_CREATE, &j);
        is_int(r, 0, "JOIN with 2 descriptors succeeds");
        is_int(seen.last.check, 0, "the JOIN request passes nsd's check");
        is_int(seen.last.hdr.type, NSD_REQ_JOIN, "it is a JOIN");
        is_int(seen.last.join.uid, 1000, "it names uid 1000");
        is_int(seen.last.join.flags, NSD_JOIN_NO_CREATE, "it carries NO_CREATE");
        ok(seen.last.hdr.seq != 0, "it carries a sequence number");
        if (r == 0) {
                ok(fd_is_cloexec(j.root_fd) && fd_is_cloexec(j.ns_fd),
                   "both descriptors are close-on-exec");
                ok(fstat(j.root_fd, &st_got) == 0 && stat("/", &st_root) == 0 &&
                           st_got.st_ino == st_root.st_ino && st_got.st_dev == st_root.st_dev,
                   "root_fd is the directory that was sent");
                is_int(j.ns_inode, own_ns_inode(), "ns_inode is the nsfs inode");
                ok(fstat(j.ns_fd, &st_got) == 0 && st_got.st_ino == j.ns_inode,
                   "ns_fd is the nsfs file");
                is_int(j.uid, 1000, "uid");
                is_int(j.ns_flags, NSC_NS_CREATED | NSC_NS_PINNED, "ns_flags");
                is_int(j.created_usec, 1234567, "created_usec");
                close(j.root_fd);
                close(j.ns_fd);
        }
        finish(c);
        is_int(count_fds(), before, "no descriptor left behind after a good JOIN");
}

static void test_error_reply(void) {
        struct nsc_join_result j;
        struct nsc_status st;
        nsc_conn *c;
        const char *m;

        error_value = -EPERM;
        error_seq_delta = 0;
        c = start(script_error_then_status);
        is_int(nsc_join(c, 0, 0, &j), -EPERM, "error reply: its errno is returned");
        m = nsc_last_error_message(c);
        ok(m && strcmp(m, "only root may join another user's namespace") == 0,
           "error reply: nsc_last_error_message gives nsd's reason");
        is_int(nsc_status(c, &st), 0, "the connection stays usable after an error reply");
        ok(nsc_last_error_message(c) == NULL, "the message is cleared by the next call");
        finish(c);

        error_value = -EUSERS;
        error_seq_delta = 1;
        c = start(script_error_then_status);
        is_int(nsc_join(c, 1000, 0, &j), -EUSERS,
               "error reply with seq 0 (request not read) is accepted");
        finish(c);

        error_seq_delta = 0;
        error_value = 5;
        c = start(script_error_then_status);
        is_int(nsc_join(c, 1000, 0, &j), -EBADMSG, "error reply with a positive error: EBADMSG");
        ok(nsc_last_error_message(c) == NULL, "and no message");
        finish(c);

        error_value = 0;
        c = start(script_error_then_status);
        is_int(nsc_join(c, 1000, 0, &j), -EBADMSG, "error reply with error 0: EBADMSG");
        finish(c);
}

/* The request of a broken reply's case, JOIN or STATUS, its result set to a pattern first:
 * what the call returned; *ret_untouched whether the result still holds the pattern. */
static int broken_call(bool join, nsc_conn *c, bool *ret_untouched) {
        struct nsc_join_result j = { .root_fd = -7, .ns_fd = -7 };
        struct nsc_status st;
        int r;

        if (join) {
                r = nsc_join(c, 1000, 0, &j);
                *ret_untouched = j.root_fd == -7 && j.ns_fd == -7;
        } else {
                memset(&st, 0x5a, sizeof(st));
                r = nsc_status(c, &st);
                *ret_untouched = st.namespaces == 0x5a5a5a5a;
        }
        return r;
}

/* A broken reply, to JOIN (join_variant) or to STATUS (bad_variant): refused with want, the
 * result untouched, the connection unusable after, and nothing leaked. */
static void test_bad_replies(void) {
        static const struct {
                bool join;
                int v, want;
                const char *what;
        } cases[] = {
                { true, JOIN_ONE_FD, -EBADMSG, "JOIN reply with 1 descriptor" },
                { true, JOIN_THREE_FDS, -EBADMSG, "JOIN reply with 3 descriptors" },
                { true, JOIN_SWAPPED, -EBADMSG, "JOIN reply with the descriptors swapped" },
                { true, JOIN_WRONG_INODE, -EBADMSG, "JOIN reply naming another nsfs inode" },
                { true, JOIN_WRONG_UID, -EBADMSG, "JOIN reply for another uid" },
                { true, JOIN_SHORT, -EBADMSG,
                  "truncated JOIN reply (8 bytes short) with descriptors" },
                { false, BAD_SEQ, -EBADMSG, "reply with a wrong seq" },
                { false, BAD_TYPE, -EBADMSG, "reply of the wrong type" },
                { false, BAD_OVERSIZED, -EMSGSIZE, "reply larger than NSD_MSG_SIZE_MAX" },
                { false, BAD_CLOSE, -ECONNRESET, "nsd closing the connection" },
                { false, BAD_MAJOR, -EPROTONOSUPPORT, "reply of another major version" },
                { false, BAD_FD_ON_STATUS, -EBADMSG, "STATUS reply carrying a descriptor" },
                { false, BAD_ERROR_IN_REPLY, -EBADMSG, "STATUS reply with its error field set" },
                { false, BAD_VERSION_STRING, -EBADMSG,
                  "STATUS reply with an unterminated version" },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                int before = count_fds();
                bool untouched;
                nsc_conn *c;

                if (cases[i].join)
                        join_variant = (enum join_variant) cases[i].v;
                else
                        bad_variant = (enum bad_variant) cases[i].v;
                c = start(cases[i].join ? script_join : script_bad_status);
                is_int(broken_call(cases[i].join, c, &untouched), cases[i].want, "%s is refused",
                       cases[i].what);
                ok(untouched, "%s: result untouched", cases[i].what);
                is_int(broken_call(cases[i].join, c, &untouched), -ENOTCONN,
                       "%s: later calls fail with ENOTCONN", cases[i].what);
                finish(c);
                is_int(seen.requests, 1, "%s: no request sent on a broken connection",
                       cases[i].what);
                is_int(count_fds(), before, "%s: no descriptor leaked", cases[i].what);
        }
}

/* read requests, answer none */
static void script_silent(int cfd) {
        struct fake_req r;

        while (srv_next(cfd, &r)) {
        }
}

/* SHOW data, one part every 50 ms, never an end: each part comes well within any timeout,
 * the answer as a whole never does */
static void script_trickle(int cfd) {
        static uint8_t buf[sizeof(struct nsd_msg_header) + 16] __attribute__((aligned(8)));
        struct fake_req r;

        if (!srv_next(cfd, &r))
                return;
        while (!seen.send_failed) {
                rep(buf, NSD_REP_SHOW_DATA, sizeof(buf), &r);
                memset(buf + sizeof(struct nsd_msg_header), 'x', 16);
                srv_send(cfd, buf, sizeof(buf), NULL, 0);
                usleep(50 * 1000); /* the pace of the trickle, not a synchronisation */
        }
}

static void test_timeout(void) {
        struct nsc_status st;
        uint64_t t0;
        char *text = NULL;
        nsc_conn *c;

        is_int(nsc_set_timeout(NULL, 1000), -EINVAL, "nsc_set_timeout(NULL): EINVAL");
        c = start(script_silent);
        is_int(nsc_set_timeout(c, 200 * 1000), 0, "timeout set to 200 ms");
        t0 = now_usec(CLOCK_MONOTONIC);
        is_int(nsc_status(c, &st), -ETIMEDOUT, "a silent nsd: ETIMEDOUT");
        tap_diag("after %llu ms", (unsigned long long) (now_usec(CLOCK_MONOTONIC) - t0) / 1000);
        is_int(nsc_status(c, &st), -ENOTCONN, "the connection is unusable after a timeout");
        finish(c);

        /* the timeout bounds the whole call, not each datagram of the answer */
        c = start(script_trickle);
        is_int(nsc_set_timeout(c, 300 * 1000), 0, "timeout set to 300 ms");
        is_int(nsc_show(c, 1000, &text, NULL), -ETIMEDOUT,
               "an nsd trickling SHOW parts forever: the call returns, ETIMEDOUT");
        ok(text == NULL, "result untouched");
        finish(c);
}

/* ---- JOIN_SESSION, connect timeouts, the default socket: against the behaving fake ---- */

struct served {
        int lfd, stop[2];
        struct fake_nsd_config cfg;
        struct fake_nsd_record rec;
        pthread_t thread;
};

static void *serve_main(void *arg) {
        struct served *v = arg;

        (void) fake_nsd_serve(v->lfd, v->stop[0], 20000, &v->cfg, &v->rec);
        return NULL;
}

/* Serve lfd with cfg in a thread until served_stop(). */
static void served_start(struct served *v, int lfd, const struct fake_nsd_config *cfg) {
        memset(v, 0, sizeof(*v));
        v->lfd = lfd;
        v->cfg = *cfg;
        if (pipe2(v->stop, O_CLOEXEC) < 0 || pthread_create(&v->thread, NULL, serve_main, v) != 0)
                tap_bail_errno("start the fake nsd");
}

static void served_stop(struct served *v) {
        if (write(v->stop[1], "x", 1) != 1)
                tap_bail_errno("stop the fake nsd");
        pthread_join(v->thread, NULL);
        close(v->stop[0]);
        close(v->stop[1]);
}

static bool is_own_namespace(const struct nsc_join_result *j) {
        struct stat a, b;

        return fstat(j->ns_fd, &a) == 0 && stat("/proc/self/ns/mnt", &b) == 0 &&
               a.st_ino == b.st_ino && fstat(j->root_fd, &a) == 0 && stat("/", &b) == 0 &&
               a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

static void test_join_session(void) {
        const struct fake_nsd_config v12 = { .session_id = 99 },
                                     v11 = { .minor = 1, .session_id = 98 };
        struct nsc_join_result j = { .root_fd = -7, .ns_fd = -7 };
        bool have_pidfd = pidfd_open_works();
        uint64_t id = 0;
        unsigned n = 0;
        struct served v;
        nsc_conn *c = NULL;
        int before = count_fds(), r;

        /* 1.2: one request */
        served_start(&v, listen_fd, &v12);
        is_int(nsc_connect(sock_path, &c), 0, "connect to a 1.2 fake nsd");
        r = nsc_join_session(c, 1000, 0, getpid(), "sshd", &j, &id, &n);
        is_int(r, 0, "1.2: nsc_join_session returns 0 (one request)");
        if (r >= 0) {
                ok(is_own_namespace(&j), "the descriptors are the namespace the fake handed out");
                ok(fd_is_cloexec(j.root_fd) && fd_is_cloexec(j.ns_fd), "both close-on-exec");
                ok(id == 99 && n == 1, "session id %llu, %u live", (unsigned long long) id, n);
                close(j.root_fd);
                close(j.ns_fd);
        }
        nsc_disconnect(c);
        served_stop(&v);
        is_int(v.rec.join_sessions, 1, "1.2: nsd saw one JOIN_SESSION");
        ok(v.rec.joins == 0 && v.rec.session_opens == 0, "and no JOIN, no SESSION_OPEN");
        is_int(v.rec.bad, 0, "the request passes nsd's checks (%s)", v.rec.bad_why);
        ok(v.rec.so_uid == 1000 && v.rec.so_pid == (uint32_t) getpid() &&
                   strcmp(v.rec.so_service, "sshd") == 0,
           "uid, pid and service arrive");
        if (have_pidfd)
                ok(v.rec.so_pidfd && (v.rec.join_flags & NSD_JOIN_SESSION_PIDFD),
                   "a pidfd of the leader rides along, flagged NSD_JOIN_SESSION_PIDFD");
        else
                ok(!(v.rec.join_flags & NSD_JOIN_SESSION_PIDFD), "no pidfd without pidfd_open");
        is_int(v.rec.connections, 1, "one connection");

        /* 1.1: refused with EOPNOTSUPP and the connection closed; the library falls back */
        served_start(&v, listen_fd, &v11);
        c = NULL;
        is_int(nsc_connect(sock_path, &c), 0, "connect to a 1.1 fake nsd");
        j = (struct nsc_join_result) { .root_fd = -7, .ns_fd = -7 };
        r = nsc_join_session(c, 1000, NSC_JOIN_NO_CREATE, getpid(), "login", &j, &id, &n);
        is_int(r, 1, "1.1: nsc_join_session returns 1 (the fallback)");
        if (r >= 0) {
                ok(is_own_namespace(&j), "fallback: the descriptors of the JOIN");
                ok(id == 98, "fallback: the session id of the SESSION_OPEN");
                close(j.root_fd);
                close(j.ns_fd);
        }
        r = nsc_join_session(c, 1000, 0, getpid(), "login", &j, &id, &n);
        is_int(r, 1, "a second call on the same connection: the fallback at once");
        if (r >= 0) {
                close(j.root_fd);
                close(j.ns_fd);
        }
        nsc_disconnect(c);
        served_stop(&v);
        is_int(v.rec.join_sessions, 1, "1.1: JOIN_SESSION was tried once");
        ok(v.rec.joins == 2 && v.rec.session_opens == 2, "then JOIN + SESSION_OPEN, twice");
        ok(v.rec.join_flags == NSD_JOIN_NO_CREATE || v.rec.join_flags == 0, "JOIN flags passed on");
        is_int(v.rec.connections, 2, "the fallback reconnected once");
        is_int(v.rec.bad, 0, "every request passes nsd's checks (%s)", v.rec.bad_why);
        if (have_pidfd)
                ok(v.rec.so_pidfd, "fallback: the pidfd rides with the SESSION_OPEN");

        /* not yet available: -EAGAIN to the caller, the connection still usable */
        {
                const struct fake_nsd_config cfg = { .not_yet = 1 };

                served_start(&v, listen_fd, &cfg);
                c = NULL;
                (void) nsc_connect(sock_path, &c);
                is_int(nsc_join_session(c, 1000, 0, getpid(), NULL, &j, NULL, NULL), -EAGAIN,
                       "not yet available: -EAGAIN");
                r = nsc_join_session(c, 1000, 0, getpid(), NULL, &j, NULL, NULL);
                is_int(r, 0, "asked again on the same connection: success");
                if (r >= 0) {
                        close(j.root_fd);
                        close(j.ns_fd);
                }
                nsc_disconnect(c);
                served_stop(&v);
        }

        /* a refused session refuses the whole call, with both protocols */
        for (unsigned minor = 1; minor <= 2; minor++) {
                const struct fake_nsd_config cfg = { .minor = minor,
                                                     .session_open_error = -EUSERS };

                served_start(&v, listen_fd, &cfg);
                c = NULL;
                (void) nsc_connect(sock_path, &c);
                j = (struct nsc_join_result) { .root_fd = -7, .ns_fd = -7 };
                is_int(nsc_join_session(c, 1000, 0, getpid(), NULL, &j, &id, NULL), -EUSERS,
                       "1.%u: a refused session: -EUSERS", minor);
                ok(j.root_fd == -7 && j.ns_fd == -7, "1.%u: result untouched", minor);
                nsc_disconnect(c);
                served_stop(&v);
        }

        /* arguments */
        c = NULL;
        is_int(nsc_join_session(NULL, 1000, 0, getpid(), NULL, &j, NULL, NULL), -EINVAL,
               "NULL conn: EINVAL");
        served_start(&v, listen_fd, &v12);
        (void) nsc_connect(sock_path, &c);
        is_int(nsc_join_session(c, 1000, 0, getpid(), NULL, NULL, NULL, NULL), -EINVAL,
               "NULL ret_join: EINVAL");
        is_int(nsc_join_session(c, 1000, 0x2, getpid(), NULL, &j, NULL, NULL), -EINVAL,
               "unknown flags (the protocol's PIDFD bit is the library's business): EINVAL");
        is_int(nsc_join_session(c, (uid_t) -1, 0, getpid(), NULL, &j, NULL, NULL), -EINVAL,
               "uid -1: EINVAL");
        is_int(nsc_join_session(c, 1000, 0, 0, NULL, &j, NULL, NULL), -EINVAL, "pid 0: EINVAL");
        {
                char longservice[NSD_SERVICE_MAX + 1];

                memset(longservice, 's', sizeof(longservice) - 1);
                longservice[sizeof(longservice) - 1] = 0;
                is_int(nsc_join_session(c, 1000, 0, getpid(), longservice, &j, NULL, NULL), -EINVAL,
                       "service of NSD_SERVICE_MAX bytes: EINVAL");
        }
        nsc_disconnect(c);
        served_stop(&v);
        is_int(v.rec.requests, 0, "no invalid call reached nsd");
        is_int(count_fds(), before, "no descriptor left behind by JOIN_SESSION");
}

static void test_connect_timeout(void) {
        char path[PATH_MAX + 32];
        int lfd, filler[8], n_fill = 0;
        struct nsc_join_result j;
        struct served v;
        nsc_conn *c = (void *) 0x1;
        int r;

        /* an nsd that is stopped: its backlog fills and connect() would wait forever */
        snprintf(path, sizeof(path), "%s/stopped.socket", tmpdir);
        lfd = fake_nsd_listen(path, 0);
        if (lfd < 0) {
                errno = -lfd;
                tap_bail_errno("listen");
        }
        for (; n_fill < 8; n_fill++) {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };

                strcpy(sa.sun_path, path);
                filler[n_fill] = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (connect(filler[n_fill], (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                        close(filler[n_fill]);
                        break;
                }
        }
        ok(n_fill < 8, "the backlog of a listener that never accepts is full after %d connections",
           n_fill);
        is_int(nsc_connect_timeout(path, 200 * 1000, &c), -ETIMEDOUT,
               "nsc_connect_timeout to it returns: ETIMEDOUT");
        ok(c == (void *) 0x1, "ret_conn untouched");
        for (int i = 0; i < n_fill; i++)
                close(filler[i]);
        close(lfd);
        unlink(path);

        is_int(nsc_connect_timeout(sock_path, (uint64_t) INT_MAX * 1000000 + 1000000, &c), -EINVAL,
               "a timeout beyond INT_MAX seconds: EINVAL");

        /* an nsd that accepts and never answers: the connection's timeout is the connect's */
        {
                const struct fake_nsd_config cfg = { .stuck = true };

                served_start(&v, listen_fd, &cfg);
                c = NULL;
                is_int(nsc_connect_timeout(sock_path, 200 * 1000, &c), 0, "connect to a stuck nsd");
                r = nsc_join_session(c, 1000, 0, getpid(), NULL, &j, NULL, NULL);
                is_int(r, -ETIMEDOUT,
                       "JOIN_SESSION to it returns within the connection's timeout: ETIMEDOUT");
                nsc_disconnect(c);
                served_stop(&v);
                is_int(v.rec.requests, 1, "the stuck nsd got the request");
        }
}

/* Which socket nsc_connect(NULL) picks, in a private mount namespace (root only) whose
 * /run/nsd holds bind mounts of fake sockets: the root socket for euid 0 when it exists,
 * else the user socket; the user socket for anyone else; $NSD_SOCKET above both. */
enum { PICK_ROOT_ONLY_USER, PICK_BOTH_ROOT, PICK_BOTH_USER, PICK_ENV };

static void test_default_socket(void) {
        char a_path[PATH_MAX + 32], b_path[PATH_MAX + 32];
        static const char *const what[] = {
                [PICK_ROOT_ONLY_USER] = "euid 0, no root socket: the user socket",
                [PICK_BOTH_ROOT] = "euid 0, both sockets: the root socket",
                [PICK_BOTH_USER] = "euid 65534, both sockets: the user socket",
                [PICK_ENV] = "euid 0, $NSD_SOCKET set: that one",
        };
        const struct fake_nsd_config cfg = { 0 };

        if (geteuid() != 0) {
                tap_skip("nsc_connect(NULL)'s choice of socket: needs root for a private /run/nsd");
                return;
        }
        snprintf(a_path, sizeof(a_path), "%s/a.socket", tmpdir);
        snprintf(b_path, sizeof(b_path), "%s/b.socket", tmpdir);
        for (int k = PICK_ROOT_ONLY_USER; k <= PICK_ENV; k++) {
                struct served a, b;
                int la = fake_nsd_listen(a_path, 8), lb = fake_nsd_listen(b_path, 8), status;
                pid_t pid;

                if (la < 0 || lb < 0)
                        tap_bail_errno("listen");
                chmod(a_path, 0666);
                chmod(b_path, 0666);
                pid = fork();
                if (pid < 0)
                        tap_bail_errno("fork");
                if (pid == 0) {
                        struct nsc_status st;
                        nsc_conn *c = NULL;

                        /* A is the root socket, B the user socket */
                        if (unshare(CLONE_NEWNS) < 0 ||
                            mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
                            mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") < 0 ||
                            mkdir("/run/nsd", 0755) < 0)
                                _exit(77);
                        if (k != PICK_ROOT_ONLY_USER &&
                            fake_nsd_bind(a_path, NSD_ROOT_SOCKET_PATH_DEFAULT) < 0)
                                _exit(78);
                        if (fake_nsd_bind(b_path, NSD_SOCKET_PATH_DEFAULT) < 0)
                                _exit(78);
                        if (k == PICK_ENV)
                                setenv("NSD_SOCKET", a_path, 1);
                        else
                                unsetenv("NSD_SOCKET");
                        if (k == PICK_BOTH_USER && seteuid(65534) < 0)
                                _exit(79);
                        if (nsc_connect(NULL, &c) < 0 || nsc_status(c, &st) < 0)
                                _exit(1);
                        nsc_disconnect(c);
                        _exit(0);
                }
                served_start(&a, la, &cfg);
                served_start(&b, lb, &cfg);
                if (waitpid(pid, &status, 0) != pid)
                        tap_bail_errno("waitpid");
                served_stop(&a);
                served_stop(&b);
                close(la);
                close(lb);
                unlink(a_path);
                unlink(b_path);
                if (WIFEXITED(status) && WEXITSTATUS(status) >= 77) {
                        tap_skip("%s: no private mount namespace here (step %d)", what[k],
                                 WEXITSTATUS(status));
                        continue;
                }
                is_int(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0,
                       "%s: connected, STATUS answered", what[k]);
                if (k == PICK_BOTH_USER || k == PICK_ROOT_ONLY_USER)
                        ok(a.rec.connections == 0 && b.rec.connections == 1, "%s (%u, %u)", what[k],
                           a.rec.connections, b.rec.connections);
                else
                        ok(a.rec.connections == 1 && b.rec.connections == 0, "%s (%u, %u)", what[k],
                           a.rec.connections, b.rec.connections);
        }
}

static void test_status(void) {
        struct nsc_status st;
        nsc_conn *c;

        c = start(script_status);
        is_int(nsc_status(c, &st), 0, "STATUS succeeds");
        is_int(seen.last.check, 0, "the STATUS request passes nsd's check");
        ok(strcmp(st.version, "0.1.0-test") == 0, "version string");
        is_int(st.proto_major, NSD_PROTO_MAJOR, "proto_major from the reply header");
        is_int(st.proto_minor, 3, "proto_minor from the reply header");
        ok(st.started_usec == 1700000000000000ull, "started_usec");
        is_int(st.features, NSC_FEATURE_SETNS_DIRFD | NSC_FEATURE_PIN_NAMESPACE, "features");
        ok(st.namespaces == 5 && st.pinned == 4 && st.sessions == 9 && st.connections == 2,
           "counters");
        ok(st.max_namespaces == 10000 && st.max_sessions_per_uid == 256 &&
                   st.max_connections_per_uid == 16,
           "limits");
        is_int(st.pid, 4242, "nsd's pid");
        finish(c);
}

struct hammer {
        nsc_conn *c;
        int failures;
};
static void *hammer_main(void *arg) {
        struct hammer *h = arg;

        for (int i = 0; i < 200; i++) {
                struct nsc_status st;

                if (nsc_status(h->c, &st) != 0 || st.pid != 4242)
                        h->failures++;
        }
        return NULL;
}

static void test_threads(void) {
        struct hammer h[3];
        pthread_t t[3];
        nsc_conn *c;
        int failures = 0;

        c = start(script_status);
        for (int i = 0; i < 3; i++) {
                h[i] = (struct hammer) { .c = c };
                pthread_create(&t[i], NULL, hammer_main, &h[i]);
        }
        for (int i = 0; i < 3; i++) {
                pthread_join(t[i], NULL);
                failures += h[i].failures;
        }
        finish(c);
        is_int(failures, 0, "3 threads x 200 STATUS calls on one connection all succeed");
        is_int(seen.requests, 600, "nsd saw 600 requests");
        is_int(seen.bad_requests, 0, "none of them malformed");
}

static void test_list(void) {
        struct nsc_ns_info *v = (void *) 0x1;
        size_t n = 77;
        nsc_conn *c;
        int r;

        list_entries = 3;
        list_end_count = 3;
        list_close_early = false;
        c = start(script_list);
        r = nsc_list(c, &v, &n);
        is_int(r, 0, "LIST of 3 entries succeeds");
        is_int(seen.last.check, 0, "the LIST request passes nsd's check");
        if (r == 0) {
                is_int(n, 3, "3 entries");
                ok(v[0].uid == 1000 && v[1].uid == 1001 && v[2].uid == 1002, "uids in order");
                ok(v[1].mounts == -1 && v[2].mounts == 32 && v[2].sessions == 2,
                   "mounts and sessions");
                ok(v[2].ns_inode == 4026530002ull && v[2].created_usec == 2000 &&
                           v[2].ns_flags == NSC_NS_PINNED,
                   "inode, time, flags");
                ok(strcmp(v[2].pin, "/run/nsd/pins/1002") == 0, "pin path");
                free(v);
        }
        finish(c);

        list_entries = 0;
        list_end_count = 0;
        c = start(script_list);
        v = NULL;
        r = nsc_list(c, &v, &n);
        ok(r == 0 && n == 0 && v != NULL, "empty LIST: 0 entries, a pointer to free()");
        free(v);
        finish(c);

        list_entries = 3;
        list_end_count = 2;
        v = (void *) 0x1;
        n = 77;
        c = start(script_list);
        is_int(nsc_list(c, &v, &n), -EBADMSG, "LIST with 3 entries and an END counting 2: EBADMSG");
        ok(v == (void *) 0x1 && n == 77, "results untouched");
        finish(c);

        list_end_count = 4;
        c = start(script_list);
        is_int(nsc_list(c, &v, &n), -EBADMSG, "LIST with 3 entries and an END counting 4: EBADMSG");
        finish(c);

        list_end_count = 3;
        list_close_early = true;
        c = start(script_list);
        is_int(nsc_list(c, &v, &n), -ECONNRESET,
               "nsd closing the connection in the middle of a LIST");
        finish(c);
        list_close_early = false;
}

static void test_show(void) {
        static const size_t parts[] = { 1, 100,  NSD_MSG_SIZE_MAX - sizeof(struct nsd_msg_header),
                                        3, 4000, 17 };
        /* 262 parts of 4000 bytes and one of the 576 left */
        static size_t big[NSD_SHOW_TEXT_MAX / 4000 + 1];
        char *text = (void *) 0x1;
        size_t len = 0, total = 0;
        bool same = true;
        nsc_conn *c;
        int r;

        show_parts = parts;
        show_nparts = sizeof(parts) / sizeof(parts[0]);
        for (size_t i = 0; i < show_nparts; i++)
                total += parts[i];
        c = start(script_show);
        r = nsc_show(c, 1000, &text, &len);
        is_int(r, 0, "SHOW in 6 parts succeeds");
        is_int(seen.last.check, 0, "the SHOW request passes nsd's check");
        is_int(seen.last.show.uid, 1000, "it names uid 1000");
        if (r == 0) {
                is_int(len, total, "length is the sum of the parts");
                for (size_t i = 0; i < total; i++)
                        if (text[i] != show_byte(i))
                                same = false;
                ok(same, "the text is reassembled byte for byte");
                is_int(text[len], 0, "and NUL-terminated");
                free(text);
        }
        finish(c);

        show_nparts = 0;
        c = start(script_show);
        text = NULL;
        r = nsc_show(c, 1000, &text, &len);
        ok(r == 0 && len == 0 && text && text[0] == 0, "empty SHOW: an empty string");
        free(text);
        finish(c);

        /* exactly NSD_SHOW_TEXT_MAX passes, one byte more fails */
        _Static_assert(NSD_SHOW_TEXT_MAX % 4000 != 0, "the last part is a short one");
        for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++)
                big[i] = 4000;
        big[sizeof(big) / sizeof(big[0]) - 1] = NSD_SHOW_TEXT_MAX % 4000;
        show_parts = big;
        show_nparts = sizeof(big) / sizeof(big[0]);
        c = start(script_show);
        r = nsc_show(c, 1000, &text, &len);
        is_int(r, 0, "SHOW of exactly NSD_SHOW_TEXT_MAX bytes succeeds");
        if (r == 0) {
                is_int(len, NSD_SHOW_TEXT_MAX, "all of it");
                free(text);
        }
        finish(c);

        big[sizeof(big) / sizeof(big[0]) - 1]++;
        text = (void *) 0x1;
        c = start(script_show);
        is_int(nsc_show(c, 1000, &text, &len), -EFBIG,
               "SHOW of NSD_SHOW_TEXT_MAX + 1 bytes: EFBIG");
        ok(text == (void *) 0x1, "result untouched");
        finish(c);
}

static void test_sessions(void) {
        uint64_t id = 0;
        unsigned n = 0;
        bool have_pidfd = pidfd_open_works();
        nsc_conn *c;
        int before = count_fds();

        session_reply_id = 77;
        c = start(script_sessions);
        is_int(nsc_session_open(c, 1000, getpid(), "sshd", &id, &n), 0, "SESSION_OPEN succeeds");
        is_int(seen.last.check, 0, "the SESSION_OPEN request passes nsd's check");
        ok(id == 77 && n == 2, "session id and count");
        ok(strcmp(seen.last.session_open.service, "sshd") == 0, "the service name arrives");
        ok(seen.last.session_open.uid == 1000 && seen.last.session_open.pid == (uint32_t) getpid(),
           "uid and pid arrive");
        if (have_pidfd) {
                is_int(seen.last.nfds, 1, "a pidfd comes with it (the kernel has pidfd_open)");
                is_int(seen.last.session_open.flags, NSD_SESSION_PIDFD,
                       "and NSD_SESSION_PIDFD is set");
                ok(seen.pidfd_matches, "the pidfd is one of the session leader");
        } else {
                is_int(seen.last.nfds, 0, "no pidfd without pidfd_open");
                is_int(seen.last.session_open.flags, 0, "and no flag");
        }

        is_int(nsc_session_open(c, 1000, getpid(), NULL, NULL, NULL), 0,
               "SESSION_OPEN without service and results");
        is_int(seen.last.session_open.service[0], 0, "service is empty");

        is_int(nsc_session_close(c, 1000, 0, 77, &n), 0, "SESSION_CLOSE by id succeeds");
        ok(seen.last.hdr.type == NSD_REQ_SESSION_CLOSE &&
                   seen.last.session_close.session_id == 77 &&
                   seen.last.session_close.uid == 1000 && seen.last.check == 0,
           "it names session 77");
        is_int(n, 1, "sessions left");
        is_int(nsc_session_close(c, 1000, 1234, 0, NULL), 0, "SESSION_CLOSE by uid+pid succeeds");
        ok(seen.last.session_close.session_id == 0 && seen.last.session_close.pid == 1234,
           "it names pid 1234");

        is_int(nsc_release(c, 1001, NSC_RELEASE_FORCE), 0, "RELEASE succeeds");
        ok(seen.last.hdr.type == NSD_REQ_RELEASE && seen.last.release.uid == 1001 &&
                   seen.last.release.flags == NSD_RELEASE_FORCE && seen.last.check == 0,
           "it names uid 1001 and FORCE");

        is_int(nsc_hide(c, 1001, "/home/alice/mnt", NSC_HIDE_UNHIDE), 0, "HIDE succeeds");
        ok(seen.last.hdr.type == NSD_REQ_HIDE && seen.last.hide.uid == 1001 &&
                   seen.last.hide.flags == NSD_HIDE_UNHIDE && seen.last.check == 0 &&
                   strcmp(seen.last.hide.path, "/home/alice/mnt") == 0 &&
                   seen.last.hide.hdr.version_minor == NSD_PROTO_MINOR,
           "it names uid 1001, the path and UNHIDE, the current protocol minor");
        finish(c);
        is_int(count_fds(), before, "no descriptor left behind by sessions");

        session_reply_id = 0;
        c = start(script_sessions);
        is_int(nsc_session_open(c, 1000, getpid(), "login", &id, &n), -EBADMSG,
               "session id 0 in a reply: EBADMSG");
        finish(c);
}

/* METRICS (1.4): every field a value of its own, so a field copied into another shows */
static void script_metrics(int cfd) {
        struct fake_req r;
        struct nsd_rep_metrics m;

        while (srv_next(cfd, &r)) {
                rep(&m, NSD_REP_METRICS, sizeof(m), &r);
                m.namespaces = 5;
                m.pinned = 4;
                m.sessions = 9;
                m.connections[NSD_METRICS_SOCKET_USER] = 2;
                m.connections[NSD_METRICS_SOCKET_ROOT] = 1;
                m.fdstore_entries = 7;
                m.join_latency_sum_usec = 99;
                (void) fake_nsd_metrics_counters(&m, 100); /* lookup_timeouts: 1.6 */
                srv_send(cfd, &m, sizeof(m), NULL, 0);
        }
}

/* what a 1.3 nsd does with a type it does not know: the error, then the connection closed */
static void script_metrics_unknown(int cfd) {
        struct fake_req r;

        if (srv_next(cfd, &r))
                (void) fake_nsd_send_error(cfd, &r, -EOPNOTSUPP, "unknown request type (10)");
}

static void test_metrics(void) {
        static const uint64_t bounds[] = NSC_METRICS_LATENCY_BOUNDS_USEC,
                              wire_bounds[] = NSD_METRICS_LATENCY_BOUNDS_USEC;
        struct nsc_metrics m, untouched;
        bool counters = true;
        uint64_t v = 100;
        nsc_conn *c;

        ok(sizeof(bounds) == sizeof(wire_bounds) &&
                   memcmp(bounds, wire_bounds, sizeof(bounds)) == 0 &&
                   sizeof(bounds) / sizeof(bounds[0]) + 1 == NSC_METRICS_LATENCY_BUCKETS,
           "nsclient.h's latency bounds are the protocol's, one bucket each and one past them");

        c = start(script_metrics);
        is_int(nsc_metrics(c, &m), 0, "METRICS succeeds");
        is_int(seen.last.check, 0, "the METRICS request passes nsd's check");
        is_int(seen.last.hdr.type, NSD_REQ_METRICS, "it is a METRICS request");
        ok(m.namespaces == 5 && m.pinned == 4 && m.sessions == 9 &&
                   m.connections[NSC_METRICS_SOCKET_USER] == 2 &&
                   m.connections[NSC_METRICS_SOCKET_ROOT] == 1 && m.fdstore_entries == 7,
           "the gauges");
        for (size_t i = 0; i < NSC_METRICS_JOINS; i++)
                counters = counters && m.joins[i] == v++;
        for (size_t i = 0; i < NSC_METRICS_LATENCY_BUCKETS; i++)
                counters = counters && m.join_latency[i] == v++;
        counters = counters && m.created == v++ && m.setup_failures == v++ &&
                   m.join_latency_sum_usec == 99;
        for (size_t i = 0; i < NSC_METRICS_RELEASES; i++)
                counters = counters && m.releases[i] == v++;
        for (size_t i = 0; i < NSC_METRICS_LOOKUPS; i++)
                counters = counters && m.lookups[i] == v++;
        counters = counters && m.path_walk_timeouts == v++;
        for (size_t i = 0; i < NSC_METRICS_THROTTLES; i++)
                counters = counters && m.throttled[i] == v++;
        ok(counters, "every counter in its place");
        is_int(nsc_metrics(c, NULL), -EINVAL, "nsc_metrics(NULL ret): EINVAL");
        is_int(nsc_metrics(NULL, &m), -EINVAL, "nsc_metrics(NULL conn): EINVAL");
        finish(c);

        c = start(script_metrics_unknown);
        memset(&untouched, 0xa5, sizeof(untouched));
        m = untouched;
        is_int(nsc_metrics(c, &m), -EOPNOTSUPP, "an nsd older than 1.4: EOPNOTSUPP");
        ok(memcmp(&m, &untouched, sizeof(m)) == 0, "... and *ret untouched");
        finish(c);
}

/* Are the n bytes at p all CANARY? */
#define CANARY 0xa5
static bool canary_intact(const void *p, size_t n) {
        const unsigned char *b = p;

        for (size_t i = 0; i < n; i++)
                if (b[i] != CANARY)
                        return false;
        return true;
}

/* nsc_metrics_sized() (NSCLIENT_1.5): it writes the first size bytes of *ret and nothing past
 * them; a size without lookup_timeouts (NSCLIENT_1.3's struct) is refused, before any request */
static void test_metrics_sized(void) {
        static const size_t old_size = offsetof(struct nsc_metrics, lookup_timeouts);
        union {
                struct nsc_metrics m;
                unsigned char bytes[sizeof(struct nsc_metrics) + 64];
        } buf;
        /* script_metrics' values: 100 onwards, the two lookup_timeouts last */
        const uint64_t lt0 = 100 + NSC_METRICS_JOINS + NSC_METRICS_LATENCY_BUCKETS + 2 +
                             NSC_METRICS_RELEASES + NSC_METRICS_LOOKUPS + 1 + NSC_METRICS_THROTTLES;
        const size_t sizes[] = { 0, old_size, old_size + 8, sizeof(struct nsc_metrics) - 1 };
        bool refused = true;
        nsc_conn *c;

        c = start(script_metrics);
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                memset(&buf, CANARY, sizeof(buf));
                refused = refused && nsc_metrics_sized(c, &buf.m, sizes[i]) == -EINVAL &&
                          canary_intact(&buf, sizeof(buf));
        }
        ok(refused,
           "sizes without the whole of lookup_timeouts (0, NSCLIENT_1.3's %zu, %zu, "
           "%zu): EINVAL, *ret untouched",
           old_size, old_size + 8, sizeof(struct nsc_metrics) - 1);
        is_int(seen.requests, 0, "... and nothing was asked of nsd");
        is_int(nsc_metrics_sized(NULL, &buf.m, sizeof(buf.m)), -EINVAL, "NULL conn: EINVAL");
        is_int(nsc_metrics_sized(c, NULL, sizeof(buf.m)), -EINVAL, "NULL ret: EINVAL");

        memset(&buf, CANARY, sizeof(buf));
        is_int(nsc_metrics_sized(c, &buf.m, sizeof(buf.m)), 0, "the current size: 0");
        ok(buf.m.namespaces == 5 && buf.m.fdstore_entries == 7 && buf.m.joins[0] == 100 &&
                   buf.m.throttled[NSC_METRICS_THROTTLES - 1] == lt0 - 1,
           "the fields of NSCLIENT_1.3, as nsc_metrics() gives them");
        ok(buf.m.lookup_timeouts[NSC_METRICS_LOOKUP_TIMEOUT_REFUSED] == lt0 &&
                   buf.m.lookup_timeouts[NSC_METRICS_LOOKUP_TIMEOUT_UNMANAGED] == lt0 + 1,
           "and lookup_timeouts (1.6): %" PRIu64 ", %" PRIu64,
           buf.m.lookup_timeouts[NSC_METRICS_LOOKUP_TIMEOUT_REFUSED],
           buf.m.lookup_timeouts[NSC_METRICS_LOOKUP_TIMEOUT_UNMANAGED]);
        ok(canary_intact(buf.bytes + sizeof(buf.m), sizeof(buf) - sizeof(buf.m)),
           "nothing written past the struct");

        /* an old caller's struct (NSCLIENT_1.3, nsc_metrics()): its fields, nothing past them */
        memset(&buf, CANARY, sizeof(buf));
        is_int(nsc_metrics(c, &buf.m), 0, "nsc_metrics(): 0");
        ok(buf.m.namespaces == 5 && buf.m.throttled[NSC_METRICS_THROTTLES - 1] == lt0 - 1,
           "an NSCLIENT_1.3 caller gets its fields");
        ok(canary_intact(buf.bytes + old_size, sizeof(buf) - old_size),
           "and nothing past its %zu bytes (lookup_timeouts untouched)", old_size);

        /* a newer caller's larger struct: the fields this library knows, nothing past size */
        memset(&buf, CANARY, sizeof(buf));
        is_int(nsc_metrics_sized(c, &buf.m, sizeof(buf.m) + 16), 0, "a larger size: 0");
        ok(buf.m.lookup_timeouts[NSC_METRICS_LOOKUP_TIMEOUT_UNMANAGED] == lt0 + 1 &&
                   canary_intact(buf.bytes + sizeof(buf.m) + 16, sizeof(buf) - sizeof(buf.m) - 16),
           "its known fields, nothing past the size it gave");
        {
                bool zero = true;

                for (size_t i = sizeof(buf.m); i < sizeof(buf.m) + 16; i++)
                        zero = zero && buf.bytes[i] == 0;
                ok(zero, "the 16 bytes it does not know are 0, not the caller's old bytes");
        }
        finish(c);
}

static void test_shares(void) {
        struct nsc_share_info *v = NULL;
        size_t n = 0;
        bool in_order = true;
        nsc_conn *c;
        int r;

        shares_lab_members = 200;
        shares_lie = false;
        c = start(script_shares);
        r = nsc_shares(c, &v, &n);
        is_int(r, 0, "SHARES succeeds");
        is_int(seen.last.check, 0, "the SHARES request passes nsd's check");
        is_int(seen.last.hdr.type, NSD_REQ_SHARES, "it is a SHARES request");
        if (r == 0) {
                is_int(n, 2, "2 shares");
                ok(strcmp(v[0].name, "lab") == 0 && strcmp(v[0].path, "/srv/lab") == 0 &&
                           v[0].propagation == NSC_SHARE_PROPAGATION_BOTH &&
                           v[0].max_members == 256 && v[0].members == 201 && v[0].mounts == -1,
                   "lab: name, path, propagation, MaxMembers=, members");
                is_int(v[0].n_members, 200, "lab's 200 uids from two parts");
                for (size_t i = 0; i < v[0].n_members; i++)
                        in_order = in_order && v[0].member[i].uid == 2000 + i;
                ok(in_order, "in the order sent");
                ok(strcmp(v[1].name, "empty") == 0 && v[1].n_members == 0 && v[1].member &&
                           v[1].flags == NSC_SHARE_OWN_ONLY,
                   "empty: no members, flagged");
                nsc_shares_free(v, n);
        }
        finish(c);

        shares_lie = true;
        shares_lab_members = 3;
        c = start(script_shares);
        v = NULL;
        is_int(nsc_shares(c, &v, &n), -EBADMSG, "a part with more members than announced: EBADMSG");
        ok(v == NULL, "... and nothing returned");
        finish(c);

        c = start(script_shares_unknown);
        is_int(nsc_shares(c, &v, &n), -EOPNOTSUPP, "an nsd older than 1.5: EOPNOTSUPP");
        is_int(nsc_shares(c, NULL, &n), -EINVAL, "nsc_shares(NULL ret): EINVAL");
        finish(c);
        nsc_shares_free(NULL, 0);
}

static void test_volume_ctl(void) {
        char name[NSD_SHARE_NAME_MAX + 1];
        struct nsc_volume_ctl v = { .state = 99 };
        const char *m;
        nsc_conn *c;

        memset(volume_ctl_seen, 0, sizeof volume_ctl_seen);
        volume_ctl_answers[0] = (struct volume_ctl_answer) { .state = NSD_VOLUME_MOUNTED,
                                                             .loop = 4,
                                                             .changed = 1 };
        volume_ctl_answers[1] = (struct volume_ctl_answer) { .error = -EBUSY };
        volume_ctl_answers[2] = (struct volume_ctl_answer) { .state = NSD_VOLUME_STOPPED };
        volume_ctl_answers[3] = (struct volume_ctl_answer) { .state = NSD_VOLUME_STOPPED,
                                                             .changed = 2 };
        c = start(script_volume_ctl);
        is_int(nsc_volume_start(c, 1500, "vault", &v), 0, "VOLUME_START succeeds");
        ok(volume_ctl_seen[0].check == 0 && volume_ctl_seen[0].hdr.type == NSD_REQ_VOLUME_START &&
                   volume_ctl_seen[0].n == sizeof(struct nsd_req_volume_ctl),
           "a sound VOLUME_START reached nsd");
        ok(volume_ctl_seen[0].volume_ctl.uid == 1500 &&
                   strcmp(volume_ctl_seen[0].volume_ctl.volume, "vault") == 0 &&
                   volume_ctl_seen[0].volume_ctl.reserved == 0,
           "... for uid 1500's 'vault', reserved 0");
        ok(v.state == NSC_VOLUME_MOUNTED && v.loop == 4 && v.changed == 1,
           "the answer: mounted, on /dev/loop3, by this call");

        v = (struct nsc_volume_ctl) { .state = 99 };
        is_int(nsc_volume_stop(c, 1500, "vault", &v), -EBUSY, "VOLUME_STOP refused: EBUSY");
        m = nsc_last_error_message(c);
        ok(m && strstr(m, "pid 4242 (less)"), "... with nsd's reason naming who holds it");
        ok(v.state == 99, "... and *ret untouched");
        ok(volume_ctl_seen[1].hdr.type == NSD_REQ_VOLUME_STOP &&
                   volume_ctl_seen[1].volume_ctl.uid == 1500,
           "it was a VOLUME_STOP for uid 1500");

        is_int(nsc_volume_stop(c, 1500, "vault", NULL), 0,
               "the connection stays usable after the refusal; ret may be NULL");
        is_int(nsc_volume_stop(c, 1500, "vault", &v), -EBADMSG,
               "an answer with changed 2: EBADMSG");
        is_int(nsc_volume_start(c, 1500, "vault", &v), -ENOTCONN,
               "... and the connection is broken");
        finish(c);
        is_int(seen.requests, 4, "four requests reached nsd");

        /* nothing reaches nsd for a name nsd could not take */
        memset(name, 'n', sizeof name - 1);
        name[sizeof name - 1] = 0;
        c = start(script_status);
        is_int(nsc_volume_start(c, 1500, NULL, &v), -EINVAL,
               "nsc_volume_start(NULL volume): EINVAL");
        is_int(nsc_volume_stop(c, 1500, "", &v), -EINVAL,
               "nsc_volume_stop of an empty name: EINVAL");
        is_int(nsc_volume_start(c, 1500, name, &v), -EINVAL,
               "a name of NSD_SHARE_NAME_MAX bytes: EINVAL");
        name[NSD_SHARE_NAME_MAX - 1] = 0;
        is_int(nsc_volume_stop(c, (uid_t) -1, "vault", &v), -EINVAL, "uid -1: EINVAL");
        is_int(nsc_volume_start(NULL, 1500, "vault", &v), -EINVAL, "NULL conn: EINVAL");
        finish(c);
        is_int(seen.requests, 0, "none of them reached nsd");

        /* the longest name nsd takes goes out whole */
        memset(volume_ctl_seen, 0, sizeof volume_ctl_seen);
        volume_ctl_answers[0] = (struct volume_ctl_answer) { .state = NSD_VOLUME_MOUNTED };
        c = start(script_volume_ctl);
        is_int(nsc_volume_start(c, 0, name, &v), 0,
               "a name of NSD_SHARE_NAME_MAX - 1 bytes, for uid 0: sent");
        ok(volume_ctl_seen[0].check == 0 && strcmp(volume_ctl_seen[0].volume_ctl.volume, name) == 0,
           "... whole and NUL-terminated");
        ok(v.state == NSC_VOLUME_MOUNTED && v.changed == 0 && v.loop == 0,
           "already mounted, no loop device");
        finish(c);

        /* what an nsd older than 1.11 does */
        c = start(script_shares_unknown);
        is_int(nsc_volume_start(c, 1500, "vault", &v), -EOPNOTSUPP,
               "an nsd older than 1.11: EOPNOTSUPP");
        finish(c);
}

static void test_arguments(void) {
        char longpath[200], longservice[NSD_SERVICE_MAX + 1];
        struct nsc_join_result j;
        struct nsc_status st;
        struct nsc_ns_info *v;
        size_t n;
        char *t;
        nsc_conn *c = (void *) 0x1;

        memset(longpath, 'a', sizeof(longpath) - 1);
        longpath[0] = '/';
        longpath[sizeof(longpath) - 1] = 0;
        is_int(nsc_connect(longpath, &c), -ENAMETOOLONG, "socket path too long: ENAMETOOLONG");
        longpath[sizeof(((struct sockaddr_un *) 0)->sun_path)] = 0;
        is_int(nsc_connect(longpath, &c), -ENAMETOOLONG,
               "socket path of sizeof(sun_path) bytes: ENAMETOOLONG");
        is_int(nsc_connect("", &c), -EINVAL, "empty socket path: EINVAL");
        is_int(nsc_connect(sock_path, NULL), -EINVAL, "NULL ret_conn: EINVAL");
        ok(c == (void *) 0x1, "ret_conn untouched on failure");
        {
                char missing[PATH_MAX + 16];

                snprintf(missing, sizeof(missing), "%s/missing", tmpdir);
                is_int(nsc_connect(missing, &c), -ENOENT, "nobody at the path: ENOENT");
        }

        is_int(nsc_join(NULL, 1000, 0, &j), -EINVAL, "nsc_join(NULL conn): EINVAL");
        is_int(nsc_status(NULL, &st), -EINVAL, "nsc_status(NULL conn): EINVAL");
        is_int(nsc_list(NULL, &v, &n), -EINVAL, "nsc_list(NULL conn): EINVAL");
        is_int(nsc_show(NULL, 1000, &t, &n), -EINVAL, "nsc_show(NULL conn): EINVAL");
        is_int(nsc_release(NULL, 1000, 0), -EINVAL, "nsc_release(NULL conn): EINVAL");
        is_int(nsc_hide(NULL, 1000, "/mnt", 0), -EINVAL, "nsc_hide(NULL conn): EINVAL");
        is_int(nsc_session_open(NULL, 1000, 1, NULL, NULL, NULL), -EINVAL,
               "nsc_session_open(NULL conn): EINVAL");
        is_int(nsc_session_close(NULL, 1000, 1, 0, NULL), -EINVAL,
               "nsc_session_close(NULL conn): EINVAL");
        ok(nsc_last_error_message(NULL) == NULL, "nsc_last_error_message(NULL) is NULL");
        nsc_disconnect(NULL);
        is_int(nsc_enter_setns(NULL), -EINVAL, "nsc_enter_setns(NULL): EINVAL");
        is_int(nsc_enter_chroot(NULL, NULL), -EINVAL, "nsc_enter_chroot(NULL): EINVAL");

        /* with a real connection: nothing may reach nsd */
        c = start(script_status);
        is_int(nsc_join(c, 1000, 0, NULL), -EINVAL, "nsc_join(NULL ret): EINVAL");
        is_int(nsc_join(c, 1000, 0x100, &j), -EINVAL, "nsc_join with unknown flags: EINVAL");
        is_int(nsc_join(c, (uid_t) -1, 0, &j), -EINVAL, "nsc_join of uid -1: EINVAL");
        memset(longservice, 's', sizeof(longservice) - 1);
        longservice[sizeof(longservice) - 1] = 0;
        is_int(nsc_session_open(c, 1000, getpid(), longservice, NULL, NULL), -EINVAL,
               "service of NSD_SERVICE_MAX bytes: EINVAL");
        longservice[NSD_SERVICE_MAX - 1] = 0;
        is_int(nsc_session_open(c, 1000, 0, longservice, NULL, NULL), -EINVAL,
               "session pid 0: EINVAL");
        is_int(nsc_session_close(c, 1000, 0, 0, NULL), -EINVAL,
               "session close without id and pid: EINVAL");
        is_int(nsc_release(c, 1000, 0x2), -EINVAL, "nsc_release with unknown flags: EINVAL");
        is_int(nsc_hide(c, 1000, "/mnt", 0x2), -EINVAL, "nsc_hide with unknown flags: EINVAL");
        is_int(nsc_hide(c, 1000, "mnt", 0), -EINVAL, "nsc_hide of a relative path: EINVAL");
        is_int(nsc_hide(c, 1000, NULL, 0), -EINVAL, "nsc_hide of NULL: EINVAL");
        {
                char longhide[NSD_HIDE_PATH_MAX + 1];

                memset(longhide, 'h', sizeof(longhide) - 1);
                longhide[0] = '/';
                longhide[sizeof(longhide) - 1] = 0;
                is_int(nsc_hide(c, 1000, longhide, 0), -ENAMETOOLONG,
                       "nsc_hide of a path of NSD_HIDE_PATH_MAX bytes: ENAMETOOLONG");
        }
        is_int(nsc_list(c, NULL, &n), -EINVAL, "nsc_list(NULL ret): EINVAL");
        is_int(nsc_show(c, 1000, NULL, &n), -EINVAL, "nsc_show(NULL ret): EINVAL");
        is_int(nsc_status(c, NULL), -EINVAL, "nsc_status(NULL ret): EINVAL");
        is_int(nsc_status(c, &st), 0, "the connection still works");
        finish(c);
        is_int(seen.requests, 1, "only the one good request reached nsd");
}

static void test_env(void) {
        struct nsc_status st;
        nsc_conn *c = NULL;

        memset(&seen, 0, sizeof(seen));
        srv_script = script_status;
        pthread_create(&srv_thread, NULL, server_main, NULL);
        setenv("NSD_SOCKET", sock_path, 1);
        is_int(nsc_connect(NULL, &c), 0, "nsc_connect(NULL) uses $NSD_SOCKET");
        unsetenv("NSD_SOCKET");
        if (c)
                is_int(nsc_status(c, &st), 0, "and talks to the server there");
        else {
                /* release the server */
                nsc_connect(sock_path, &c);
        }
        finish(c);
}

/* In a child: enter a "namespace" whose root is a folder of ours (the own namespace, so
 * nothing outside the child changes). Root gets in; anyone else gets EPERM. */
static void test_enter(void) {
        char marker[PATH_MAX + 16];
        bool root = geteuid() == 0;
        pid_t pid;
        int status, fd;

        snprintf(marker, sizeof(marker), "%s/marker", tmpdir);
        fd = open(marker, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0)
                tap_bail_errno("create marker");
        close(fd);

        pid = fork();
        if (pid < 0)
                tap_bail_errno("fork");
        if (pid == 0) {
                struct nsc_join_result j = {
                        .root_fd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC),
                        .ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC),
                };
                int used = -1, r;

                r = nsc_enter_setns(&j);
                if (r != (root ? 0 : -EPERM))
                        _exit(10);
                r = nsc_enter_chroot(&j, &used);
                if (!root)
                        _exit(r == -EPERM && used == -1 ? 0 : 11);
                if (r != 0 || (used != 0 && used != 1))
                        _exit(12);
                if (access("/marker", F_OK) != 0)
                        _exit(13);
                {
                        char cwd[8];

                        if (!getcwd(cwd, sizeof(cwd)) || strcmp(cwd, "/") != 0)
                                _exit(14);
                }
                _exit(used ? 1 : 0);
        }
        if (waitpid(pid, &status, 0) != pid)
                tap_bail_errno("waitpid");
        if (root) {
                ok(WIFEXITED(status) && WEXITSTATUS(status) <= 1,
                   "as root: nsc_enter_setns enters, nsc_enter_chroot puts / at the joined root "
                   "(exit %d)",
                   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
                if (WIFEXITED(status) && WEXITSTATUS(status) <= 1)
                        tap_diag("nsc_enter_chroot used %s",
                                 WEXITSTATUS(status) ? "setns (F1 kernel)" : "fchdir+chroot");
        } else
                ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                   "unprivileged: both enter functions fail with EPERM (exit %d)",
                   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        unlink(marker);
}

int main(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = 10 };
        const char *t = getenv("TMPDIR");

        setvbuf(stdout, NULL, _IOLBF, 0);
        test_msg_check();

        snprintf(tmpdir, sizeof(tmpdir), "%s/test-protocol.XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(tmpdir)) {
                tmpdir[0] = 0;
                tap_bail_errno("mkdtemp");
        }
        atexit(remove_tmpdir);
        snprintf(sock_path, sizeof(sock_path), "%s/socket", tmpdir);
        if (strlen(sock_path) >= sizeof(sa.sun_path)) {
                errno = ENAMETOOLONG;
                tap_bail_errno("socket path in $TMPDIR");
        }
        listen_fd = fake_nsd_listen(sock_path, 8);
        if (listen_fd < 0) {
                errno = -listen_fd;
                tap_bail_errno("fake nsd socket");
        }
        (void) setsockopt(listen_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

        test_join();
        test_error_reply();
        test_bad_replies();
        test_status();
        test_metrics();
        test_metrics_sized();
        test_shares();
        test_volume_ctl();
        test_timeout();
        test_threads();
        test_list();
        test_show();
        test_sessions();
        test_arguments();
        test_env();
        test_enter();
        test_join_session();
        test_connect_timeout();
        test_default_socket();

        close(listen_fd);
        unlink(sock_path);
        if (rmdir(tmpdir) < 0)
                ok(false, "remove %s: %s", tmpdir, strerror(errno));
        else
                tmpdir[0] = 0;

        return tap_done();
}
