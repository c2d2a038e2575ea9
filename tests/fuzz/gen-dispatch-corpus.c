/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gen-dispatch-corpus: write the seed corpus of fuzz-dispatch (tests/fuzz/corpus/dispatch/)
 * from the protocol's own structs, so the seeds follow nsd-protocol.h: a sound request of
 * every type (as uid 1000 sends it for itself, and where it may not), then the ways
 * nsd_msg_check() and the table of nsd/transport/request.c refuse one; then scripts of several
 * datagrams on one connection (sound requests in a row, read at once, later or never; floods
 * that overflow nsd's reply queue; bursts that get throttled; LIST and SHOW streams; timeouts).
 * The input formats (byte 0, then the datagram; or byte 0 >= 0x80, then records) are
 * described at the top of fuzz-dispatch.c.
 *
 *   gen-dispatch-corpus FOLDER
 */
#include "gen-corpus.h"

/* byte 0 (fuzz-dispatch.c) */
#define FDS(n) (n)
#define FDS_PIDFD 0x4u
#define OWN_PID 0x8u

/* byte 0 of a script, and its records' control bytes (fuzz-dispatch.c) */
#define SCRIPT 0x80u
#define SMALL_SNDBUF 0x1u
#define BURST 0x2u
#define SMALL_QUEUE 0x4u
#define ABANDON 0x8u
#define SHORT_TIMEOUTS 0x10u
#define SET_SEQ 0x10u
#define LOOP 0x20u
#define READ 0x40u
#define NO_DATAGRAM 0x80u
#define WAIT 0x1u

#define UID 1000u  /* the harness's peer */
#define OTHER 1001 /* another user's */

static void seed(const char *name, unsigned ctl, const void *msg, size_t size) {
        out_n = 0;
        put8(ctl);
        put(msg, size);
        finish(name);
}

static void script(unsigned head) {
        out_n = 0;
        put8(SCRIPT | head);
}

/* a record with a datagram (its length in 2 bytes, little-endian) */
static void record(unsigned ctl, const void *msg, size_t size) {
        put8(ctl);
        put8(size & 0xff);
        put8(size >> 8);
        put(msg, size);
}

/* a record without one: only LOOP, READ or WAIT */
static void step(unsigned ctl) {
        put8(NO_DATAGRAM | ctl);
}

/* a sound request of this type (its exact size) with seq */
#define REQ(var, type, st, seq) struct st *var = proto_msg(type, sizeof(struct st), seq)

/* the seed name (ctl) of the request *var with its field set to value, for this seed alone */
#define SEED_WITH(name, ctl, var, field, value)                 \
        do {                                                    \
                __typeof__((var)->field) saved_ = (var)->field; \
                (var)->field = (value);                         \
                seed(name, ctl, var, sizeof *(var));            \
                (var)->field = saved_;                          \
        } while (0)

/* the sound requests that name a service or a path, as uid 1000 sends them for itself: a
 * SESSION_OPEN for sshd, a JOIN_SESSION for login, a HIDE of /tmp */
static struct nsd_req_session_open *sound_session_open(uint32_t seq) {
        REQ(o, NSD_REQ_SESSION_OPEN, nsd_req_session_open, seq);
        o->uid = UID;
        snprintf(o->service, sizeof o->service, "sshd");
        return o;
}

static struct nsd_req_join_session *sound_join_session(uint32_t seq) {
        REQ(js, NSD_REQ_JOIN_SESSION, nsd_req_join_session, seq);
        js->uid = UID;
        snprintf(js->service, sizeof js->service, "login");
        return js;
}

static struct nsd_req_hide *sound_hide(uint32_t seq) {
        REQ(h, NSD_REQ_HIDE, nsd_req_hide, seq);
        h->uid = UID;
        snprintf(h->path, sizeof h->path, "/tmp");
        return h;
}

static void join(void) {
        REQ(j, NSD_REQ_JOIN, nsd_req_join, 1);
        j->uid = UID;
        seed("join", 0, j, sizeof *j);
        SEED_WITH("join-no-create", 0, j, flags, NSD_JOIN_NO_CREATE);
        SEED_WITH("join-other-uid", 0, j, uid, OTHER);
        SEED_WITH("join-root", 0, j, uid, 0);
        SEED_WITH("join-unknown-flag", 0, j, flags, 0x80);
        seed("join-with-fd", FDS(1), j, sizeof *j);
}

static void session_open(void) {
        struct nsd_req_session_open *o = sound_session_open(2);
        seed("session-open", OWN_PID, o, sizeof *o);
        o->flags = NSD_SESSION_PIDFD;
        seed("session-open-pidfd", OWN_PID | FDS_PIDFD | FDS(1), o, sizeof *o);
        seed("session-open-pidfd-not-pidfd", OWN_PID | FDS(1), o, sizeof *o);
        seed("session-open-pidfd-missing", OWN_PID, o, sizeof *o);
        o->flags = 0;
        o->pid = 1;
        seed("session-open-other-pid", 0, o, sizeof *o);
        o->uid = OTHER;
        seed("session-open-other-uid", OWN_PID, o, sizeof *o);
        o->uid = UID;
        o->reserved = 1;
        seed("session-open-reserved", OWN_PID, o, sizeof *o);
        o->reserved = 0;
        memset(o->service, 'x', sizeof o->service);
        seed("session-open-service-unterminated", OWN_PID, o, sizeof *o);
}

static void session_close(void) {
        REQ(c, NSD_REQ_SESSION_CLOSE, nsd_req_session_close, 3);
        c->uid = UID;
        seed("session-close-by-pid", OWN_PID, c, sizeof *c);
        SEED_WITH("session-close-by-id", 0, c, session_id, 1);
        seed("session-close-neither", 0, c, sizeof *c);
}

static void join_session(void) {
        struct nsd_req_join_session *js = sound_join_session(4);
        seed("join-session", OWN_PID, js, sizeof *js);
        js->flags = NSD_JOIN_SESSION_PIDFD | NSD_JOIN_NO_CREATE;
        seed("join-session-pidfd-no-create", OWN_PID | FDS_PIDFD | FDS(1), js, sizeof *js);
        seed("join-session-pidfd-two-fds", OWN_PID | FDS_PIDFD | FDS(2), js, sizeof *js);
        js->flags = 0;
        SEED_WITH("join-session-other-uid", OWN_PID, js, uid, OTHER);
        SEED_WITH("join-session-bad-pid", 0, js, pid, 0x80000000u);
}

static void status_list_show(void) {
        REQ(st, NSD_REQ_STATUS, nsd_req_status, 5);
        seed("status", 0, st, sizeof *st);
        REQ(l, NSD_REQ_LIST, nsd_req_list, 6);
        seed("list", 0, l, sizeof *l);
        REQ(sh, NSD_REQ_SHOW, nsd_req_show, 7);
        sh->uid = UID;
        seed("show", 0, sh, sizeof *sh);
        SEED_WITH("show-other-uid", 0, sh, uid, OTHER);
        SEED_WITH("show-reserved", 0, sh, reserved, 2);
}

/* A header-only request (type, size) with seq: the seeds <name> and <name>-with-fd, and the
 * script script_name: it, then another header-only request (next_type, next_size) with
 * seq + 1, both in a loop that reads the replies. */
static void header_only_then(const char *name, uint16_t type, size_t size, uint32_t seq,
                             uint16_t next_type, size_t next_size, const char *script_name) {
        char with_fd[64];

        snprintf(with_fd, sizeof with_fd, "%s-with-fd", name);
        seed(name, 0, proto_msg(type, size, seq), size);
        seed(with_fd, FDS(1), proto_msg(type, size, seq), size);
        script(0);
        record(LOOP | READ, proto_msg(type, size, seq), size);
        record(LOOP | READ, proto_msg(next_type, next_size, seq + 1), next_size);
        finish(script_name);
}

/* 1.4: root only, so uid 1000 gets EPERM and keeps its connection */
static void metrics(void) {
        header_only_then("metrics", NSD_REQ_METRICS, sizeof(struct nsd_req_metrics), 11,
                         NSD_REQ_STATUS, sizeof(struct nsd_req_status),
                         "script-metrics-refused-then-status");
}

/* 1.5: a stream like LIST's (entries, member parts, an end); a user sees its own shares */
static void shares(void) {
        header_only_then("shares", NSD_REQ_SHARES, sizeof(struct nsd_req_shares), 13, NSD_REQ_LIST,
                         sizeof(struct nsd_req_list), "script-shares-then-list");
}

/* 1.7: a stream like LIST's; a user sees its own namespace's volumes */
static void volumes(void) {
        header_only_then("volumes", NSD_REQ_VOLUMES, sizeof(struct nsd_req_volumes), 14,
                         NSD_REQ_LIST, sizeof(struct nsd_req_list), "script-volumes-then-list");
}

/* 1.7: a volume's password: GIVE is root's (uid 1000 gets EPERM, also with the memfd a
 * descriptor stands for), TAKE names a volume of its own (none here: ENOENT; unterminated and
 * empty names are malformed) */
static void credentials(void) {
        REQ(g, NSD_REQ_CREDENTIAL_GIVE, nsd_req_credential_give, 15);
        g->uid = UID;
        g->flags = NSD_CREDENTIAL_FD;
        seed("credential-give", FDS(1), g, sizeof *g);
        SEED_WITH("credential-give-no-fd-flag", 0, g, flags, 0);
        REQ(t, NSD_REQ_CREDENTIAL_TAKE, nsd_req_credential_take, 16);
        snprintf(t->volume, sizeof t->volume, "vault");
        seed("credential-take", 0, t, sizeof *t);
        t->flags = NSD_CREDENTIAL_WAIT;
        seed("credential-take-wait", 0, t, sizeof *t);
        memset(t->volume, 'v', sizeof t->volume);
        seed("credential-take-unterminated", 0, t, sizeof *t);
        memset(t->volume, 0, sizeof t->volume);
        seed("credential-take-empty", 0, t, sizeof *t);
        /* 1.8: UNLOCK, the user's own password for its volume (none here: ENOENT) */
        REQ(u, NSD_REQ_CREDENTIAL_UNLOCK, nsd_req_credential_unlock, 17);
        u->flags = NSD_CREDENTIAL_FD;
        snprintf(u->volume, sizeof u->volume, "vault");
        seed("credential-unlock", FDS(1), u, sizeof *u);
        SEED_WITH("credential-unlock-no-fd-flag", 0, u, flags, 0);
}

/* 1.11: VOLUME_START and VOLUME_STOP of a volume of its own (its namespace has none: ENOENT)
 * and of another user's (EPERM); a reserved field set, an unterminated or empty name are
 * malformed */
static void volume_ctl(void) {
        REQ(v, NSD_REQ_VOLUME_START, nsd_req_volume_ctl, 18);
        v->uid = UID;
        snprintf(v->volume, sizeof v->volume, "vault");
        seed("volume-start", 0, v, sizeof *v);
        SEED_WITH("volume-start-other-uid", 0, v, uid, OTHER);
        SEED_WITH("volume-start-reserved", 0, v, reserved, 1);
        memset(v->volume, 'v', sizeof v->volume);
        seed("volume-start-unterminated", 0, v, sizeof *v);
        REQ(t, NSD_REQ_VOLUME_STOP, nsd_req_volume_ctl, 19);
        t->uid = UID;
        snprintf(t->volume, sizeof t->volume, "vault");
        seed("volume-stop", 0, t, sizeof *t);
        seed("volume-stop-with-fd", FDS(1), t, sizeof *t);
        memset(t->volume, 0, sizeof t->volume);
        seed("volume-stop-empty", 0, t, sizeof *t);
}

static void release_hide(void) {
        REQ(r, NSD_REQ_RELEASE, nsd_req_release, 8);
        r->uid = UID;
        seed("release", 0, r, sizeof *r);
        SEED_WITH("release-force", 0, r, flags, NSD_RELEASE_FORCE);
        struct nsd_req_hide *h = sound_hide(9);
        seed("hide", 0, h, sizeof *h);
        SEED_WITH("hide-unhide", 0, h, flags, NSD_HIDE_UNHIDE);
        snprintf(h->path, sizeof h->path, "tmp");
        seed("hide-relative", 0, h, sizeof *h);
        memset(h->path, '/', sizeof h->path);
        seed("hide-path-unterminated", 0, h, sizeof *h);
}

/* what nsd_msg_check() and the header checks refuse, on a STATUS */
static void broken(void) {
        struct nsd_msg_header *h = proto_msg(NSD_REQ_STATUS, sizeof *h, 10);
        SEED_WITH("bad-magic", 0, h, magic, 0x12345678);
        SEED_WITH("major-2", 0, h, version_major, 2);
        SEED_WITH("length-not-size", 0, h, length, 32);
        SEED_WITH("error-in-request", 0, h, error, -EIO);
        SEED_WITH("header-flags", 0, h, flags, 1);
        seed("status-with-fds", FDS(2), proto_msg(NSD_REQ_STATUS, sizeof *h, 10), sizeof *h);
        seed("unknown-type", 0, proto_msg(_NSD_REQ_MAX, sizeof *h, 10), sizeof *h);
        seed("reply-type", 0, proto_msg(NSD_REP_STATUS, sizeof *h, 10), sizeof *h);
        seed("join-too-short", 0, proto_msg(NSD_REQ_JOIN, sizeof *h, 10), sizeof *h);
        seed("short-header", 0, proto_msg(NSD_REQ_STATUS, 12, 10), 12);
        seed("empty-datagram", 0, "", 0);
        seed("oversized", 0, proto_msg(NSD_REQ_STATUS, NSD_MSG_SIZE_MAX + 1, 10),
             NSD_MSG_SIZE_MAX + 1);
}

/* a sound request of every type uid 1000 may send for itself, in a row: JOIN, SESSION_OPEN,
 * SESSION_CLOSE, JOIN_SESSION, STATUS, LIST, SHOW, HIDE, RELEASE (refused: a session is
 * open), then its session closed and RELEASE again */
static void sound_requests(unsigned ctl) {
        REQ(j, NSD_REQ_JOIN, nsd_req_join, 1);
        j->uid = UID;
        record(ctl, j, sizeof *j);
        record(ctl | OWN_PID, sound_session_open(2), sizeof(struct nsd_req_session_open));
        REQ(c, NSD_REQ_SESSION_CLOSE, nsd_req_session_close, 3);
        c->uid = UID;
        record(ctl | OWN_PID, c, sizeof *c);
        record(ctl | OWN_PID, sound_join_session(4), sizeof(struct nsd_req_join_session));
        record(ctl, proto_msg(NSD_REQ_STATUS, sizeof(struct nsd_req_status), 5),
               sizeof(struct nsd_req_status));
        record(ctl, proto_msg(NSD_REQ_LIST, sizeof(struct nsd_req_list), 6),
               sizeof(struct nsd_req_list));
        REQ(sh, NSD_REQ_SHOW, nsd_req_show, 7);
        sh->uid = UID;
        record(ctl, sh, sizeof *sh);
        record(ctl, sound_hide(8), sizeof(struct nsd_req_hide));
        REQ(r, NSD_REQ_RELEASE, nsd_req_release, 9);
        r->uid = UID;
        record(ctl, r, sizeof *r);
        c = proto_msg(NSD_REQ_SESSION_CLOSE, sizeof *c, 10);
        c->uid = UID;
        record(ctl | OWN_PID, c, sizeof *c);
        r = proto_msg(NSD_REQ_RELEASE, sizeof *r, 11);
        r->uid = UID;
        record(ctl, r, sizeof *r);
}

/* n requests (a sound one of type, with seq 100 + i) */
static void requests(unsigned ctl, uint16_t type, size_t size, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                struct nsd_req_show *sh = proto_msg(type, size, 100 + i);
                if (type == NSD_REQ_SHOW)
                        sh->uid = UID;
                record(ctl, sh, size);
        }
}

/* the script name: head, then n records (ctl) of the same request msg */
static void flood(const char *name, unsigned head, unsigned ctl, const void *msg, size_t size,
                  unsigned n) {
        script(head);
        for (unsigned i = 0; i < n; i++)
                record(ctl, msg, size);
        finish(name);
}

#define STATUS NSD_REQ_STATUS, sizeof(struct nsd_req_status)
#define LIST NSD_REQ_LIST, sizeof(struct nsd_req_list)
#define SHOW NSD_REQ_SHOW, sizeof(struct nsd_req_show)

static void scripts(void) {
        /* sound requests in a row: each read before the next is sent; sent back to back and
         * read at the end; served one by one but read only at the end; the same with
         * the replies waiting in nsd's queue; a RELEASE and a JOIN read back to back */
        script(0);
        sound_requests(SET_SEQ | LOOP | READ);
        finish("script-sound-read");
        script(0);
        sound_requests(SET_SEQ);
        finish("script-sound-back-to-back");
        script(0);
        sound_requests(LOOP);
        finish("script-sound-unread");
        script(SMALL_SNDBUF);
        sound_requests(SET_SEQ | LOOP);
        finish("script-sound-queued");
        script(0);
        REQ(r, NSD_REQ_RELEASE, nsd_req_release, 1);
        r->uid = UID;
        record(SET_SEQ, r, sizeof *r);
        REQ(j, NSD_REQ_JOIN, nsd_req_join, 2);
        j->uid = UID;
        record(SET_SEQ, j, sizeof *j);
        finish("script-release-join");

        /* floods of STATUS never read: nsd's queue overflows (MaxQueuedReplies=16, or 2),
         * served one by one or read back to back */
        script(SMALL_SNDBUF);
        requests(LOOP, STATUS, 32);
        finish("script-status-flood");
        script(SMALL_SNDBUF);
        requests(0, STATUS, 32);
        finish("script-status-flood-back-to-back");
        script(SMALL_SNDBUF | SMALL_QUEUE);
        requests(SET_SEQ | LOOP, STATUS, 12);
        finish("script-status-flood-small-queue");

        /* replies with descriptors queued (duplicates in nsd's queue), then read; floods of
         * SESSION_OPEN and JOIN_SESSION never read: the reply that overflows the queue opens
         * a session nobody learns of (nsd ends it), queued descriptors are closed */
        REQ(jq, NSD_REQ_JOIN, nsd_req_join, 1);
        jq->uid = UID;
        flood("script-join-queued", SMALL_SNDBUF, SET_SEQ | LOOP, jq, sizeof *jq, 8);
        flood("script-session-open-flood", SMALL_SNDBUF | SMALL_QUEUE, SET_SEQ | LOOP | OWN_PID,
              sound_session_open(2), sizeof(struct nsd_req_session_open), 16);
        flood("script-join-session-flood", SMALL_SNDBUF | SMALL_QUEUE, SET_SEQ | LOOP | OWN_PID,
              sound_join_session(3), sizeof(struct nsd_req_join_session), 16);

        /* a burst past RequestBurstPerUser=3: throttled, then read on */
        script(BURST);
        requests(SET_SEQ, STATUS, 8);
        finish("script-burst");
        script(BURST);
        requests(SET_SEQ | LOOP | READ, STATUS, 8);
        finish("script-burst-read");
        script(BURST | SMALL_SNDBUF);
        requests(0, STATUS, 6);
        step(WAIT);
        requests(0, STATUS, 6);
        finish("script-burst-wait");

        /* LIST and SHOW streams unread, with small buffers: the next request waits for the
         * stream; then a SHOW read part by part */
        script(SMALL_SNDBUF);
        requests(LOOP, LIST, 16);
        finish("script-list-unread");
        script(SMALL_SNDBUF);
        requests(LOOP, SHOW, 4);
        finish("script-show-unread");
        script(SMALL_SNDBUF | SMALL_QUEUE);
        requests(0, SHOW, 2);
        requests(0, LIST, 2);
        finish("script-show-list-back-to-back");
        script(SMALL_SNDBUF);
        requests(SET_SEQ | LOOP, SHOW, 1);
        for (int i = 0; i < 8; i++)
                step(READ | LOOP);
        requests(SET_SEQ | LOOP | READ, STATUS, 1);
        finish("script-show-read-slowly");

        /* the client leaves with requests unread and replies queued */
        script(ABANDON | SMALL_SNDBUF);
        sound_requests(0);
        finish("script-abandon");
        script(ABANDON | SMALL_SNDBUF);
        requests(LOOP, SHOW, 2);
        finish("script-abandon-show");

        /* what ends a connection, then requests nsd must not read */
        script(0);
        requests(SET_SEQ | LOOP, STATUS, 1);
        record(LOOP, "", 0);
        requests(SET_SEQ | LOOP | READ, STATUS, 1);
        finish("script-empty-then-status");
        script(0);
        requests(SET_SEQ, STATUS, 1);
        struct nsd_msg_header *h = proto_msg(NSD_REQ_STATUS, sizeof *h, 10);
        h->magic = 0x12345678;
        record(0, h, sizeof *h);
        requests(SET_SEQ, STATUS, 2);
        finish("script-bad-magic-then-status");
        script(SMALL_SNDBUF);
        requests(LOOP, SHOW, 1);
        record(SET_SEQ, proto_msg(NSD_REQ_JOIN, sizeof *h, 10), sizeof *h);
        requests(SET_SEQ, STATUS, 1);
        finish("script-short-join-after-show");

        /* IdleTimeoutSec=, ReplyTimeoutSec= 1 ms: an idle connection and a slow reader */
        script(SHORT_TIMEOUTS);
        requests(SET_SEQ | LOOP | READ, STATUS, 1);
        step(WAIT);
        requests(SET_SEQ | LOOP | READ, STATUS, 1);
        finish("script-idle-timeout");
        script(SHORT_TIMEOUTS | SMALL_SNDBUF);
        requests(LOOP, STATUS, 10);
        step(WAIT);
        finish("script-slow-reader");
}

int main(int argc, char **argv) {
        gen_corpus_folder(argc, argv, "gen-dispatch-corpus");
        join();
        session_open();
        session_close();
        join_session();
        status_list_show();
        metrics();
        shares();
        volumes();
        credentials();
        volume_ctl();
        release_hide();
        broken();
        scripts();
        return 0;
}
