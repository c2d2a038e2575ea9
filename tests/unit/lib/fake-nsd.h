/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/fake-nsd.h: the one fake nsd of the unit tests (test-protocol, test-pam,
 * test-cli of nsctl).
 *
 * Two layers:
 *  - wire primitives, for tests that script a conversation byte by byte (wrong sizes,
 *    wrong seq, extra descriptors): fake_nsd_listen(), fake_nsd_recv(), fake_nsd_send(),
 *    fake_nsd_reply_init(), fake_nsd_send_error();
 *  - a behaving nsd, for tests of what a client does with nsd's answers:
 *    fake_nsd_answer() answers one request the way nsd does (per struct fake_nsd_config:
 *    protocol 1.1 or 1.2, refusals, "not yet available", stuck) and records what it saw in
 *    struct fake_nsd_record; fake_nsd_serve() runs that on a listening socket until told to
 *    stop.
 *
 * The namespace it hands out is the CALLER'S own (by SO_PEERCRED: /proc/<peer>/root and
 * /proc/<peer>/ns/mnt), so entering it changes nothing for the client, wherever it runs;
 * or, with fake_nsd_config.ns_pid, that process's namespace.
 *
 * LIST, SHOW, RELEASE, HIDE, METRICS, SHARES, VOLUMES, CREDENTIAL_UNLOCK, VOLUME_START and
 * VOLUME_STOP (nsctl's tests) answer from the config too.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nsd-protocol.h"

#define FAKE_NSD_FDS_MAX 8

/* One received request. */
struct fake_req {
        union {
                struct nsd_msg_header hdr;
                struct nsd_req_join join;
                struct nsd_req_session_open session_open;
                struct nsd_req_session_close session_close;
                struct nsd_req_show show;
                struct nsd_req_release release;
                struct nsd_req_hide hide;
                struct nsd_req_join_session join_session;
                struct nsd_req_credential_give credential_give;
                struct nsd_req_credential_unlock credential_unlock;
                struct nsd_req_volume_ctl volume_ctl;
                uint8_t bytes[NSD_MSG_SIZE_MAX + 1];
        };
        size_t n;
        int check;       /* nsd_msg_check(is_request=1) */
        const char *why; /* its reason when check < 0 */
        int fds[FAKE_NSD_FDS_MAX];
        size_t nfds;
};

/* A SOCK_SEQPACKET listener at path (unlinked first). Returns the descriptor or -errno. */
int fake_nsd_listen(const char *path, int backlog);

/* In a test's private mount namespace (root only): src bind-mounted onto dst, which is made
 * as an empty file first, to put a fake nsd's socket at nsd's default path (or a test's
 * file at a system path). 0, or -1 with errno. */
int fake_nsd_bind(const char *src, const char *dst);

/* Read one request (and its descriptors, which the caller closes with fake_req_close_fds).
 * Returns 1, 0 at EOF, or -errno. */
int fake_nsd_recv(int cfd, struct fake_req *r);
void fake_req_close_fds(struct fake_req *r);

/* Send one datagram with n_fds descriptors; 0 or -errno. */
int fake_nsd_send(int cfd, const void *msg, size_t len, const int *fds, size_t n_fds);
/* Initialise a reply of type and size answering r (its seq) in buf; returns buf. */
void *fake_nsd_reply_init(void *buf, uint16_t type, size_t size, const struct fake_req *r);
/* An NSD_REP_ERROR answering r (seq 0 when r is NULL). */
int fake_nsd_send_error(int cfd, const struct fake_req *r, int error, const char *message);

/* Every counter of a METRICS reply a value of its own: from v onwards, one each, in the
 * order of struct nsd_rep_metrics (not the gauges, not join_latency_sum_usec); the next. */
uint64_t fake_nsd_metrics_counters(struct nsd_rep_metrics *m, uint64_t v);

/* Does fd refer to a pidfd of pid (its fdinfo says so)? */
bool fake_fd_is_pidfd_of(int fd, pid_t pid);

/* ---- a behaving nsd ------------------------------------------------------------------- */

struct fake_nsd_config {
        unsigned minor; /* protocol minor it speaks; 0 means NSD_PROTO_MINOR. With 1,
                                  * JOIN_SESSION is refused with -EOPNOTSUPP and the connection
                                  * closed, as a 1.1 nsd does; below 4, METRICS;
                                  * below 5, SHARES; below 7, VOLUMES; below 11,
                                  * VOLUME_START and VOLUME_STOP. */
        bool stuck;     /* accept and read, never answer (a SIGSTOPped nsd) */
        int join_error; /* 0 or -errno for JOIN and JOIN_SESSION */
        const char *join_message;
        unsigned not_yet;       /* answer the first N JOIN/JOIN_SESSION with -EAGAIN */
        int session_open_error; /* SESSION_OPEN, or the session part of JOIN_SESSION */
        int session_close_error;
        uint64_t session_id; /* 0 means 4242 */
        /* for nsctl's tests */
        pid_t ns_pid;               /* JOIN hands out this process's namespace; 0: the caller's */
        const char *status_version; /* STATUS's version; NULL means "fake-1.<minor>" */
        uint32_t status_features;   /* STATUS's NSD_FEATURE_* */
        const struct fake_ns *list; /* LIST's entries */
        size_t n_list;
        const char *show_text; /* SHOW's mountinfo text; NULL: none (an empty table) */
        int list_error, show_error, release_error, hide_error; /* 0 or -errno */
        /* METRICS' answer: these figures (the header is filled in; NULL: all 0), or the
         * error; STATUS then gives their namespaces, pinned, sessions and connections */
        const struct nsd_rep_metrics *metrics;
        int metrics_error;
        int unlock_error;        /* CREDENTIAL_UNLOCK: 0 or -errno */
        uint32_t unlock_waiting; /* CREDENTIAL_UNLOCK's answer: TAKEs that got it */
        /* SHARES' entries (1.5; below 5, refused as METRICS is below 4), or the error */
        const struct fake_share *shares;
        size_t n_shares;
        int shares_error;
        /* VOLUMES' entries (1.7; below 7, refused as SHARES is below 5), or the error */
        const struct nsd_rep_volumes_entry *volumes; /* the headers are filled in */
        size_t n_volumes;
        int volumes_error;
        /* VOLUME_START, VOLUME_STOP (1.11): the answer's loop and changed, its state MOUNTED to
         * a START and STOPPED to a STOP; or volume_ctl_error, for every volume or, when
         * volume_ctl_fail is set, for the volume of that name alone */
        uint32_t volume_ctl_loop, volume_ctl_changed;
        int volume_ctl_error;
        const char *volume_ctl_fail;
        unsigned volume_ctl_error_times; /* volume_ctl_error for that many requests only; 0: all */
        uint32_t join_ns_flags; /* ORed into JOIN_SESSION's ns_flags (NSD_NS_CREDENTIAL_WANTED) */
        const char *error_message; /* with those; NULL means "fake nsd: refused" */
};

/* One LIST entry. */
struct fake_ns {
        uint32_t uid, ns_flags, sessions;
        int32_t mounts;
        uint64_t ns_inode, created_usec;
        const char *pin;
};

/* One SHARES entry and its members. */
struct fake_share {
        const char *name, *path;
        uint32_t propagation, max_members, members, flags;
        const uint32_t *uids;
        size_t n_uids;
};

struct fake_nsd_record {
        unsigned connections, requests, bad;
        char bad_why[160]; /* the first bad request's reason */
        unsigned joins, join_sessions, session_opens, session_closes, statuses, not_yet_sent;
        uint32_t join_uid, join_flags;
        /* SESSION_OPEN or the session part of JOIN_SESSION */
        uint32_t so_uid, so_pid;
        bool so_pidfd; /* a pidfd of so_pid came with it */
        char so_service[NSD_SERVICE_MAX];
        uint64_t sc_id;
        uint32_t sc_uid, sc_pid;
        /* LIST, SHOW, RELEASE, HIDE */
        unsigned lists, shows, releases, hides, metrics, shares, volumes;
        /* CREDENTIAL_GIVE: how many, and the last one's uid, text and seals (F_GET_SEALS) */
        unsigned credential_gives;
        uint32_t credential_uid;
        char credential_text[64];
        int credential_seals;
        /* CREDENTIAL_UNLOCK: how many, the last one's volume (its text and seals above) */
        unsigned credential_unlocks;
        char credential_volume[NSD_SHARE_NAME_MAX];
        /* VOLUME_START, VOLUME_STOP: how many; the last one's uid and volume; the volumes of
         * all, in order, each followed by a space */
        unsigned volume_starts, volume_stops;
        uint32_t volume_ctl_uid;
        char volume_ctl_volume[NSD_SHARE_NAME_MAX];
        char volume_ctl_names[256];
        uint32_t show_uid, release_uid, release_flags, hide_uid, hide_flags;
        char hide_path[NSD_HIDE_PATH_MAX];
};

/* Answer one request on cfd. Returns 0 to go on, < 0 when the connection is to be closed
 * (EOF, a bad request, a refused unknown type). */
int fake_nsd_answer(int cfd, const struct fake_nsd_config *cfg, struct fake_nsd_record *rec);

/* Accept and answer on lfd until stop_fd is readable (returns 0; stop_fd is not read) or
 * timeout_ms pass (-ETIMEDOUT). Closes the connections it accepted. */
int fake_nsd_serve(int lfd, int stop_fd, int timeout_ms, const struct fake_nsd_config *cfg,
                   struct fake_nsd_record *rec);

/* fake_nsd_serve() in a thread of its own (timeout 20 s), until fake_nsd_thread_stop(); the
 * record is that thread's until then. Both return 0 or -errno. */
struct fake_nsd_thread {
        int lfd, stop[2], result;
        struct fake_nsd_config cfg;
        struct fake_nsd_record rec;
        pthread_t thread;
};

int fake_nsd_thread_start(struct fake_nsd_thread *t, int lfd, const struct fake_nsd_config *cfg);
int fake_nsd_thread_stop(struct fake_nsd_thread *t); /* fake_nsd_serve()'s result */
