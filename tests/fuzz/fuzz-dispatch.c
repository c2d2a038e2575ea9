/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-dispatch: libFuzzer harness of nsd's request validation and dispatch (issue 10,
 * item 5), through the real path a datagram takes: a connection of an unprivileged uid
 * (conn.c reads it, nsd_msg_check and the table's checks in transport/request.c validate it, the
 * handler answers, conn.c sends or queues the replies), over a socketpair, against nsd's core
 * library with a Server that has no sockets, pins or probes (tests/unit/nsd/core-test.h). No
 * privilege needed and none used: the peer is uid 1000 on everyone's socket, whose
 * "namespace" is the one the fuzzer runs in, so JOIN, SHOW, RELEASE, HIDE, SESSION_* and
 * STATUS/LIST all reach their handlers (HIDE stops at "owner-private mounts need a kernel
 * with..." since the Server probed no features; METRICS at "root only"; SHARES answers its
 * end alone: the config has no share; VOLUMES its end alone: the namespace has none;
 * VOLUME_START and VOLUME_STOP at "no volume": VOLUME_START after asking the user database
 * who uid 1000 is, in one of nsd's worker threads).
 *
 * Input, two formats, told apart by bit 7 of byte 0.
 *
 * Single datagram (byte 0 < 0x80; bits 4-6 are ignored): byte 0 says what rides along and
 * what the harness fills in:
 *   bits 0-1  how many descriptors come by SCM_RIGHTS (0..2; 3 counts as 2);
 *   bit 2     they are pidfds of this process (else /dev/null), as NSD_SESSION_PIDFD and
 *             NSD_JOIN_SESSION_PIDFD send;
 *   bit 3     the pid field of a SESSION_OPEN, SESSION_CLOSE or JOIN_SESSION is set to this
 *             process's pid (a client names itself; an input cannot know the fuzzer's pid);
 * the rest is one datagram as a client would send it (up to 8 KiB, so nsd's oversize check
 * is reached too), sent, nsd's loop run and every reply read.
 *
 * Script (byte 0 >= 0x80): several datagrams on one connection. Byte 0 sets up the input:
 *   bit 0     nsd's end of the socketpair gets the smallest SO_SNDBUF, so that replies the
 *             client does not read soon wait in nsd's queue (MaxQueuedReplies=) and a flood of
 *             unread requests overflows it;
 *   bit 1     RequestBurstPerUser=3 and RequestRatePerUser=10000 (a token each 100 us): a
 *             fourth request read at once is throttled (the harness spins for its token, up
 *             to 1 ms in all per input; then the connection stays throttled until it closes);
 *   bit 2     MaxQueuedReplies=2;
 *   bit 3     the client closes right after the last record, reading nothing, before nsd's
 *             loop runs again (requests served for a client that left);
 *   bit 4     IdleTimeoutSec= and ReplyTimeoutSec= 1 ms (the least nsd.conf allows), and the
 *             wait below: idle and slow-reader drops;
 *   bits 5-6  ignored.
 * Then records, at most 32, each a control byte, and unless its bit 7 is set a datagram:
 *   bits 0-3  as byte 0 of the single format, for this datagram;
 *   bit 4     the datagram's seq is set to 0x5e000000 + its record's index (replies can be
 *             told apart even when the fuzzer made every seq equal);
 *   bit 5     run nsd's loop after sending, until nothing is pending (else the next datagram
 *             is sent first and nsd reads them back to back);
 *   bit 6     then read the replies that came so far;
 *   bit 7     no datagram; with bit 4 of byte 0, bit 0 then means: run nsd's loop for 1 ms
 *             of real time (once per input), so that its timeouts fire;
 *   with a datagram: its length (2 bytes, little-endian; at most 8 KiB, cut at the end of the
 *   input), then its bytes. A record whose length is cut off ends the script.
 * After the last record (unless bit 3 of byte 0) the client reads and runs nsd's loop in turn
 * until nothing more comes, as a client waiting for its answers does, then closes.
 *
 * Each input gets a fresh connection, which is closed and gone again before the next one (and
 * so are the user database lookups it started), the sessions it opened are dropped, the user's
 * namespace is put back whenever a RELEASE took it (after every turn of nsd's loop, so that no
 * JOIN ever asks the core to create one, which would unshare, with privilege), the config is
 * put back, and the input after one with bit 1 starts only once the user's token bucket is full
 * again (up to 300 us later): an input does the same alone as in a campaign, but for timing
 * (bit 4's timeouts on a loaded machine).
 * Seeds: corpus/dispatch/, written by gen-dispatch-corpus.
 *
 * Properties besides the sanitizers' (any failure aborts):
 *   - every reply is one nsd_msg_check() takes as a reply, an error exactly when it is
 *     NSD_REP_ERROR, and carries descriptors exactly when it is a JOIN or JOIN_SESSION reply
 *     (two);
 *   - replies come in the order of the requests, each request's complete before the next
 *     one's (nsd has one request in flight per connection and a FIFO queue): every reply
 *     belongs to the request being answered or the next one sent, and carries its seq (0
 *     when nsd could not read the header); its type answers that request's type (an error
 *     names the type refused, 0 when unreadable); one reply ends a request (LIST: at most one
 *     entry, uid 1000's own, then the end, whose count is the entries sent; SHOW: data parts
 *     of at most NSD_SHOW_TEXT_MAX bytes in all, then the end); nothing follows an empty
 *     datagram or the error of a message that nsd_msg_check(), the table's types or the
 *     header's flags refuse (they end the connection);
 *   - EOF, or a reset, only when nsd dropped the connection, and never a reply after EOF; a
 *     connection nsd dropped (malformed message, overflow, timeout) gives EOF once its
 *     replies are read; a connection still open once the client read everything and nsd is
 *     idle (nothing to do on its loop, no user database lookup in a thread) has answered
 *     every request sent;
 *   - the connection is gone once its peer closed (no request outlives it);
 *   - no descriptor leaked: as many are open after the input as before (what the datagrams
 *     carried, the connection's, queued replies' duplicates, pidfds of sessions and of a
 *     session leader checked).
 *
 * Built by tests/fuzz/meson.build with the core's sources compiled in (so that libFuzzer's
 * coverage sees them): fuzz-dispatch (-Dfuzz=enabled), fuzz-dispatch-standalone (suite unit).
 */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"
#include "core-test.h"
#include "domain/session.h"
#include "fuzz.h"
#include "policy/policy.h"
#include "transport/request.h"

#define FUZZ_UID 1000
#define FUZZ_DATAGRAM_MAX 8192
#define FUZZ_TURNS_MAX 256
/* byte 0 of a single-datagram input; bits 0-3 of a script record's control byte */
#define FUZZ_FDS_MASK 0x3u
#define FUZZ_FDS_PIDFD 0x4u
#define FUZZ_OWN_PID 0x8u
#define FUZZ_SCRIPT 0x80u
/* byte 0 of a script */
#define FUZZ_SMALL_SNDBUF 0x1u
#define FUZZ_BURST 0x2u
#define FUZZ_SMALL_QUEUE 0x4u
#define FUZZ_ABANDON 0x8u
#define FUZZ_SHORT_TIMEOUTS 0x10u
/* a script record's control byte */
#define FUZZ_SET_SEQ 0x10u
#define FUZZ_LOOP 0x20u
#define FUZZ_READ 0x40u
#define FUZZ_NO_DATAGRAM 0x80u
#define FUZZ_WAIT 0x1u /* with FUZZ_NO_DATAGRAM */

#define FUZZ_RECORDS_MAX 32
#define FUZZ_SEQ_BASE 0x5e000000u
#define FUZZ_WAIT_MSEC 1
/* the rate limit of every input: 32 requests never meet it ... */
#define FUZZ_RATE 1000000u
#define FUZZ_BURST_DEPTH 64u
/* ... unless the script asks for a small burst */
#define FUZZ_SMALL_RATE 10000u
#define FUZZ_SMALL_BURST 3u
#define FUZZ_SMALL_QUEUE_LEN 2u
#define FUZZ_SHORT_TIMEOUT_USEC 1000u
/* the longest spin for a throttled connection's token (due in at most 101 us), and for all
 * of an input's together (then the connection stays throttled, the input ends by closing) */
#define FUZZ_SPIN_USEC 200
#define FUZZ_SPIN_BUDGET_USEC 1000
/* how long the user's token bucket takes to fill from empty, at each rate */
#define FUZZ_REFILL_USEC(burst, rate) ((int64_t) G_USEC_PER_SEC * (burst) / (rate) + 1)
/* turns of reading and running nsd after the last record */
#define FUZZ_ROUNDS_MAX (4 * FUZZ_TURNS_MAX)

/* A datagram the client sent, as nsd answers it. */
typedef struct Record {
        size_t size;
        bool readable;  /* nsd can read its header: replies carry its seq and type */
        bool malformed; /* refused by nsd_msg_check(), its type or flags: its error ends it */
        uint16_t type;
        uint32_t seq; /* what its replies carry */
        bool ended;   /* its last reply came */
        unsigned entries;
        size_t show_bytes;
} Record;

/* One input's connection. */
typedef struct Script {
        uint8_t head; /* byte 0 of a script, 0 for a single datagram */
        int fd;       /* the client's end */
        int nsd_fd;   /* nsd's end: only looked at (poll) while the connection lives */
        Record rec[FUZZ_RECORDS_MAX];
        unsigned n_rec; /* datagrams sent */
        int cur;        /* the record being answered, -1: none yet */
        bool eof;
        bool waited;
        unsigned throttled_seen;
        int64_t spun_usec;
} Script;

static Server *server;
static Config config;
/* when the last input with a small burst ended (its token bucket may be empty), 0: never */
static int64_t burst_ended_usec;
static int devnull = -1, pidfd = -1;
static uint8_t datagram[FUZZ_DATAGRAM_MAX];
static union {
        struct nsd_msg_header hdr;
        struct nsd_rep_error error;
        struct nsd_rep_list_entry entry;
        struct nsd_rep_stream_end end;
        uint8_t bytes[NSD_MSG_SIZE_MAX];
} reply;

/* The config of every input, and what a script's byte 0 changes from it (nothing reads it
 * between inputs: the connection is gone by then). */
static void input_config(uint8_t head) {
        static unsigned max_queued_replies;
        static uint64_t idle_timeout_usec, reply_timeout_usec;
        Config *c = &server->config;

        if (max_queued_replies == 0) { /* the first call: the defaults */
                max_queued_replies = c->max_queued_replies;
                idle_timeout_usec = c->idle_timeout_usec;
                reply_timeout_usec = c->reply_timeout_usec;
        }
        c->request_rate_per_user = (head & FUZZ_BURST) ? FUZZ_SMALL_RATE : FUZZ_RATE;
        c->request_burst_per_user = (head & FUZZ_BURST) ? FUZZ_SMALL_BURST : FUZZ_BURST_DEPTH;
        c->max_queued_replies = (head & FUZZ_SMALL_QUEUE) ? FUZZ_SMALL_QUEUE_LEN
                                                          : max_queued_replies;
        c->idle_timeout_usec = (head & FUZZ_SHORT_TIMEOUTS) ? FUZZ_SHORT_TIMEOUT_USEC
                                                            : idle_timeout_usec;
        c->reply_timeout_usec = (head & FUZZ_SHORT_TIMEOUTS) ? FUZZ_SHORT_TIMEOUT_USEC
                                                             : reply_timeout_usec;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        /* GLib's slice allocator would hide leaks from LeakSanitizer (GLib < 2.76) */
        setenv("G_SLICE", "always-malloc", 1);
        signal(SIGPIPE, SIG_IGN);
        /* only crashes matter here, not nsd's warnings about bad input */
        log_setup(LOG_TARGET_STDERR, LOG_CRIT);
        config = loop_test_config();
        server = core_test_server(&config);
        input_config(0);
        core_test_user_here(server, FUZZ_UID);
        devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        pidfd = (int) syscall(SYS_pidfd_open, getpid(), 0);
        if (devnull < 0 || pidfd < 0)
                abort();
        return 0;
}

/* Where the request of type has its session leader's pid, or 0. */
static size_t pid_offset(uint16_t type) {
        switch (type) {
        case NSD_REQ_SESSION_OPEN:
                return offsetof(struct nsd_req_session_open, pid);
        case NSD_REQ_SESSION_CLOSE:
                return offsetof(struct nsd_req_session_close, pid);
        case NSD_REQ_JOIN_SESSION:
                return offsetof(struct nsd_req_join_session, pid);
        default:
                return 0;
        }
}

static bool connection_alive(void) {
        return conn_manager_count(server->conns) > 0;
}

/* A user database lookup runs in a worker thread, or waits for one (VOLUME_START asks who
 * uid 1000 is): its answer comes back on nsd's loop later, so nsd is not idle yet. */
static bool lookups_in_flight(void) {
        const PolicyStats *st = policy_stats(server->policy);

        return st->running + st->queued > 0;
}

/* A RELEASE took the user's namespace away: put it back before nsd reads the next request
 * (one per turn of its loop), so that no JOIN ever asks the core to create one. */
static void user_put_back(void) {
        if (!users_get(server->users, FUZZ_UID))
                core_test_user_here(server, FUZZ_UID);
}

static void turn(bool may_block) {
        g_main_context_iteration(NULL, may_block);
        user_put_back();
}

/* The connection was throttled since the last look: spin until its token is due (within
 * 101 us; nsd's loop would sleep a whole millisecond for it), while the input's budget
 * lasts. True when nsd has something to do again. */
static bool throttle_wait(Script *sc) {
        unsigned throttled = conn_manager_stats(server->conns)->throttled;
        int64_t start = g_get_monotonic_time(), now = start;
        bool pending = false;

        if (throttled == sc->throttled_seen || sc->spun_usec >= FUZZ_SPIN_BUDGET_USEC)
                return false;
        sc->throttled_seen = throttled;
        while (!(pending = g_main_context_pending(NULL)) && now - start < FUZZ_SPIN_USEC)
                now = g_get_monotonic_time();
        sc->spun_usec += now - start;
        return pending;
}

/* Run nsd's loop until nothing is pending, a bounded number of turns. Returns how many
 * turns did something. */
static unsigned run_loop(Script *sc) {
        unsigned busy = 0;

        for (unsigned i = 0; i < FUZZ_TURNS_MAX; i++) {
                if (g_main_context_iteration(NULL, FALSE))
                        busy++;
                else if (!throttle_wait(sc))
                        break;
                user_put_back();
        }
        return busy;
}

static gboolean on_wait_over(gpointer p) {
        *(bool *) p = true;
        return G_SOURCE_REMOVE;
}

/* Run nsd's loop for FUZZ_WAIT_MSEC of real time, sleeping when it has nothing to do. */
static void run_loop_waiting(void) {
        bool over = false;
        guint t = g_timeout_add(FUZZ_WAIT_MSEC, on_wait_over, &over);

        for (unsigned i = 0; i < FUZZ_TURNS_MAX && !over; i++)
                turn(true);
        if (!over)
                g_source_remove(t);
}

/* uid 1000's token bucket lives in nsd from input to input: after an input with a small
 * burst, wait until it is full again at the next input's rate (rarely long: an input takes
 * longer than most of that), so that a request is throttled the same alone and in a
 * campaign. */
static void bucket_refill(uint8_t head) {
        int64_t need = (head & FUZZ_BURST) ? FUZZ_REFILL_USEC(FUZZ_SMALL_BURST, FUZZ_SMALL_RATE)
                                           : FUZZ_REFILL_USEC(FUZZ_BURST_DEPTH, FUZZ_RATE);
        int64_t now = g_get_monotonic_time();

        if (burst_ended_usec > 0 && now < burst_ended_usec + need)
                g_usleep((gulong) (burst_ended_usec + need - now));
}

static unsigned count_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        unsigned n = 0;

        if (!d)
                abort();
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

/* May a reply of type answer a request of type req (readable, known)? */
static bool answers(uint16_t type, uint16_t req) {
        return type == (req | NSD_REPLY_BIT) || (req == NSD_REQ_LIST && type == NSD_REP_LIST_END) ||
               (req == NSD_REQ_SHOW && type == NSD_REP_SHOW_END) ||
               (req == NSD_REQ_SHARES &&
                (type == NSD_REP_SHARES_MEMBERS || type == NSD_REP_SHARES_END)) ||
               (req == NSD_REQ_VOLUMES && type == NSD_REP_VOLUMES_END);
}

/* One reply of n bytes that carried n_fds descriptors: sound, and in its place (see the
 * top). */
static void check_reply(Script *sc, size_t n, unsigned n_fds) {
        const struct nsd_msg_header *h = &reply.hdr;
        const char *why = NULL;
        unsigned want_fds;
        Record *r;

        fuzz_assert(!sc->eof, "a reply after EOF");
        fuzz_assert(nsd_msg_check(&reply, n, 0, &why) == 0, "reply of %zu bytes: %s", n, why);
        fuzz_assert(h->type == NSD_REP_ERROR ? h->error < 0 : h->error == 0,
                    "reply type 0x%x with error %d", h->type, h->error);
        want_fds = h->type == NSD_REP_JOIN || h->type == NSD_REP_JOIN_SESSION ? 2
                   : h->type == NSD_REP_CREDENTIAL_TAKE                       ? 1
                                                                              : 0;
        fuzz_assert(n_fds == want_fds, "reply type 0x%x carried %u descriptors", h->type, n_fds);

        /* whose: the request being answered, or the next one sent */
        if (sc->cur < 0 || sc->rec[sc->cur].ended) {
                fuzz_assert(sc->cur + 1 < (int) sc->n_rec,
                            "reply type 0x%x seq %u, but all %u requests sent were answered",
                            h->type, (unsigned) h->seq, sc->n_rec);
                fuzz_assert(sc->cur < 0 || !sc->rec[sc->cur].malformed,
                            "reply type 0x%x after the refusal of request %d (malformed)", h->type,
                            sc->cur);
                sc->cur++;
        }
        r = &sc->rec[sc->cur];
        fuzz_assert(r->size > 0, "reply type 0x%x to request %d, an empty datagram", h->type,
                    sc->cur);
        fuzz_assert(h->seq == r->seq, "reply type 0x%x has seq %u, its request %d seq %u", h->type,
                    (unsigned) h->seq, sc->cur, (unsigned) r->seq);

        if (h->type == NSD_REP_ERROR) {
                fuzz_assert(reply.error.request_type == (r->readable ? r->type : 0),
                            "error reply names type 0x%x, request %d is of type 0x%x%s",
                            reply.error.request_type, sc->cur, r->type,
                            r->readable ? "" : " (unreadable)");
                r->ended = true;
                return;
        }
        fuzz_assert(r->readable && !r->malformed && request_type_get(r->type) &&
                            answers(h->type, r->type),
                    "reply type 0x%x to request %d of type 0x%x%s", h->type, sc->cur, r->type,
                    r->malformed ? " (malformed)" : "");
        switch (h->type) {
        case NSD_REP_LIST_ENTRY:
                r->entries++;
                fuzz_assert(r->entries == 1 && reply.entry.uid == FUZZ_UID,
                            "LIST entry %u for uid %u, to uid %u", r->entries,
                            (unsigned) reply.entry.uid, FUZZ_UID);
                break;
        case NSD_REP_LIST_END:
                fuzz_assert(reply.end.count == r->entries, "LIST end counts %u entries, %u came",
                            (unsigned) reply.end.count, r->entries);
                r->ended = true;
                break;
        case NSD_REP_SHOW_DATA:
                r->show_bytes += n - sizeof *h;
                fuzz_assert(r->show_bytes <= NSD_SHOW_TEXT_MAX, "SHOW sent %zu bytes of text",
                            r->show_bytes);
                break;
        default:
                r->ended = true;
                break;
        }
}

/* Read the replies that came so far (never waiting); returns how many. */
static unsigned read_replies(Script *sc) {
        unsigned n_read = 0;

        for (;;) {
                union {
                        struct cmsghdr h;
                        char buf[CMSG_SPACE(sizeof(int) * NSD_MSG_FDS_MAX)];
                } control;
                struct iovec iov = { .iov_base = &reply, .iov_len = sizeof reply };
                struct msghdr mh = { .msg_iov = &iov,
                                     .msg_iovlen = 1,
                                     .msg_control = &control,
                                     .msg_controllen = sizeof control };
                unsigned n_fds = 0;
                ssize_t n;

                n = recvmsg(sc->fd, &mh, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return n_read;
                if (n < 0) {
                        /* nsd closed its end with requests unread: said once, before the
                         * replies still waiting */
                        fuzz_assert(errno == ECONNRESET && !connection_alive(),
                                    "reading a reply: %s, while nsd %s the connection",
                                    strerror(errno), connection_alive() ? "has" : "dropped");
                        continue;
                }
                if (n == 0) {
                        fuzz_assert(!connection_alive(), "EOF while nsd has the connection");
                        sc->eof = true;
                        return n_read;
                }
                n_fds += (unsigned) cmsg_take_fds(&mh, NULL, 0);
                fuzz_assert(!(mh.msg_flags & MSG_CTRUNC), "a reply with more than %d descriptors",
                            NSD_MSG_FDS_MAX);
                check_reply(sc, (size_t) n, n_fds);
                n_read++;
        }
}

/* Send datagram[0..n) as record ctl (bits 0-4) says; a datagram the socket does not take
 * (the client's buffer is full, nsd closed) is no request. */
static void send_record(Script *sc, uint8_t ctl, size_t n) {
        struct nsd_msg_header hdr = { 0 };
        unsigned n_fds = ctl & FUZZ_FDS_MASK;
        int sent = (ctl & FUZZ_FDS_PIDFD) ? pidfd : devnull;
        const char *why;
        Record *r;
        size_t at;

        if (n >= sizeof hdr)
                memcpy(&hdr, datagram, sizeof hdr);
        at = pid_offset(hdr.type);
        if ((ctl & FUZZ_OWN_PID) && at > 0 && n >= at + sizeof(uint32_t))
                memcpy(datagram + at, &(uint32_t) { (uint32_t) getpid() }, sizeof(uint32_t));
        if ((ctl & FUZZ_SET_SEQ) && n >= offsetof(struct nsd_msg_header, seq) + sizeof hdr.seq) {
                hdr.seq = FUZZ_SEQ_BASE + sc->n_rec;
                memcpy(datagram + offsetof(struct nsd_msg_header, seq), &hdr.seq, sizeof hdr.seq);
        }
        if (n_fds > 2)
                n_fds = 2;
        if (send_with_fds(sc->fd, datagram, n, (int[]) { sent, sent }, n_fds,
                          MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t) n)
                return;

        r = &sc->rec[sc->n_rec++];
        *r = (Record) { .size = n };
        r->readable = n >= sizeof hdr && hdr.magic == NSD_PROTO_MAGIC;
        r->type = r->readable ? hdr.type : 0;
        r->seq = r->readable ? hdr.seq : 0;
        r->malformed = nsd_msg_check(datagram, n, 1, &why) < 0 || !request_type_get(hdr.type) ||
                       hdr.flags != 0;
}

/* Byte 0 >= 0x80: the records, as the top says. */
static void run_script(Script *sc, struct fuzz_input *in) {
        for (unsigned i = 0; i < FUZZ_RECORDS_MAX && fuzz_left(in) > 0; i++) {
                uint8_t ctl = fuzz_u8(in);
                size_t n;

                if (ctl & FUZZ_NO_DATAGRAM) {
                        if ((ctl & FUZZ_WAIT) && (sc->head & FUZZ_SHORT_TIMEOUTS) && !sc->waited) {
                                sc->waited = true;
                                run_loop_waiting();
                        }
                } else {
                        if (fuzz_left(in) < 2)
                                return;
                        n = fuzz_u16(in);
                        n = MIN(n, MIN(fuzz_left(in), FUZZ_DATAGRAM_MAX));
                        memcpy(datagram, in->data + in->pos, n);
                        in->pos += n;
                        send_record(sc, ctl, n);
                }
                if (ctl & FUZZ_LOOP)
                        run_loop(sc);
                if (ctl & FUZZ_READ)
                        (void) read_replies(sc);
        }
}

/* The client wants its answers: read and run nsd in turn until nothing more comes. Then the
 * end of the connection is as the top says. */
static void finish(Script *sc) {
        bool settled = false;

        for (unsigned i = 0; i < FUZZ_ROUNDS_MAX && !settled; i++) {
                unsigned busy = run_loop(sc);
                settled = read_replies(sc) == 0 && busy == 0 && !lookups_in_flight();
                if (busy == 0 && lookups_in_flight())
                        turn(true); /* sleep until the thread's answer is back */
        }
        if (!connection_alive()) {
                (void) read_replies(sc);
                fuzz_assert(sc->eof, "nsd dropped the connection, its client never saw EOF");
                return;
        }
        if (!settled || loop_test_readable(sc->nsd_fd))
                return; /* requests still unread (a throttle, a turn limit) */
        fuzz_assert(sc->n_rec == 0 || (sc->cur == (int) sc->n_rec - 1 && sc->rec[sc->cur].ended),
                    "the connection is open and nsd idle, but request %d of %u is unanswered",
                    sc->cur < 0 || sc->rec[sc->cur].ended ? sc->cur + 1 : sc->cur, sc->n_rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct fuzz_input in = { .data = data, .size = size };
        Script sc = { .cur = -1 };
        unsigned fds_before;
        Session *sess;
        int sv[2];

        if (size < 1)
                return -1;
        sc.head = (data[0] & FUZZ_SCRIPT) ? data[0] : 0;
        if (!sc.head && size - 1 > FUZZ_DATAGRAM_MAX)
                return -1;

        fds_before = count_fds();
        bucket_refill(sc.head);
        input_config(sc.head);
        sc.throttled_seen = conn_manager_stats(server->conns)->throttled;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
                abort();
        if (sc.head & FUZZ_SMALL_SNDBUF)
                (void) setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &(int) { 1 }, sizeof(int));
        sc.nsd_fd = sv[0];
        sc.fd = sv[1];
        fuzz_assert(conn_manager_add(server->conns, CONN_KIND_USER, sv[0], FUZZ_UID, getpid()) == 0,
                    "nsd refused the input's connection");

        if (!sc.head) {
                memcpy(datagram, data + 1, size - 1);
                send_record(&sc, data[0] & (FUZZ_FDS_MASK | FUZZ_FDS_PIDFD | FUZZ_OWN_PID),
                            size - 1);
                run_loop(&sc);
        } else {
                in.pos = 1;
                run_script(&sc, &in);
        }
        if (!(sc.head & FUZZ_ABANDON))
                finish(&sc);
        close(sc.fd);

        /* the connection is gone before the next input (a request still waiting on a helper
         * or a lookup ends with it) */
        for (unsigned i = 0; i < FUZZ_TURNS_MAX && connection_alive(); i++)
                turn(connection_alive());
        fuzz_assert(!connection_alive(), "a connection outlived its peer");
        /* ... and no lookup it started still runs (a thread in NSS may hold a descriptor of
         * its own, and its answer would come during the next input) */
        for (unsigned i = 0; i < FUZZ_TURNS_MAX && lookups_in_flight(); i++)
                turn(true);
        /* ... and so are the sessions it opened (of this pid: the only leader uid 1000 may
         * name) */
        while ((sess = users_find_session(server->users, FUZZ_UID, 0, getpid())))
                users_end_session(server->users, sess);
        user_put_back();
        input_config(0);
        if (sc.head & FUZZ_BURST)
                burst_ended_usec = g_get_monotonic_time();
        fuzz_assert(count_fds() == fds_before, "%u descriptors open before the input, %u after",
                    fds_before, count_fds());
        return 0;
}
