/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gen-dispatch-corpus: write the seed corpus of fuzz-dispatch (tests/fuzz/corpus/dispatch/)
 * from the protocol's own structs, so the seeds follow nsd-protocol.h: a sound request of
 * every type (as uid 1000 sends it for itself, and where it may not), then the ways
 * nsd_msg_check() and the table of nsd/requests.c refuse one. The input format (byte 0, then
 * the datagram) is described at the top of fuzz-dispatch.c.
 *
 *   gen-dispatch-corpus FOLDER
 */
#include "gen-corpus.h"

/* byte 0 (fuzz-dispatch.c) */
#define FDS(n) (n)
#define FDS_PIDFD 0x4u
#define OWN_PID 0x8u

#define UID 1000u  /* the harness's peer */
#define OTHER 1001 /* another user's */

static void seed(const char *name, unsigned ctl, const void *msg, size_t size) {
        out_n = 0;
        put8(ctl);
        put(msg, size);
        finish(name);
}

/* a sound request of this type (its exact size) with seq */
#define REQ(var, type, st, seq) struct st *var = proto_msg(type, sizeof(struct st), seq)

static void join(void) {
        REQ(j, NSD_REQ_JOIN, nsd_req_join, 1);
        j->uid = UID;
        seed("join", 0, j, sizeof *j);
        j->flags = NSD_JOIN_NO_CREATE;
        seed("join-no-create", 0, j, sizeof *j);
        j->flags = 0;
        j->uid = OTHER;
        seed("join-other-uid", 0, j, sizeof *j);
        j->uid = 0;
        seed("join-root", 0, j, sizeof *j);
        j->uid = UID;
        j->flags = 0x80;
        seed("join-unknown-flag", 0, j, sizeof *j);
        j->flags = 0;
        seed("join-with-fd", FDS(1), j, sizeof *j);
}

static void session_open(void) {
        REQ(o, NSD_REQ_SESSION_OPEN, nsd_req_session_open, 2);
        o->uid = UID;
        snprintf(o->service, sizeof o->service, "sshd");
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
        c->session_id = 1;
        seed("session-close-by-id", 0, c, sizeof *c);
        c->session_id = 0;
        seed("session-close-neither", 0, c, sizeof *c);
}

static void join_session(void) {
        REQ(js, NSD_REQ_JOIN_SESSION, nsd_req_join_session, 4);
        js->uid = UID;
        snprintf(js->service, sizeof js->service, "login");
        seed("join-session", OWN_PID, js, sizeof *js);
        js->flags = NSD_JOIN_SESSION_PIDFD | NSD_JOIN_NO_CREATE;
        seed("join-session-pidfd-no-create", OWN_PID | FDS_PIDFD | FDS(1), js, sizeof *js);
        seed("join-session-pidfd-two-fds", OWN_PID | FDS_PIDFD | FDS(2), js, sizeof *js);
        js->flags = 0;
        js->uid = OTHER;
        seed("join-session-other-uid", OWN_PID, js, sizeof *js);
        js->uid = UID;
        js->pid = 0x80000000u;
        seed("join-session-bad-pid", 0, js, sizeof *js);
}

static void status_list_show(void) {
        REQ(st, NSD_REQ_STATUS, nsd_req_status, 5);
        seed("status", 0, st, sizeof *st);
        REQ(l, NSD_REQ_LIST, nsd_req_list, 6);
        seed("list", 0, l, sizeof *l);
        REQ(sh, NSD_REQ_SHOW, nsd_req_show, 7);
        sh->uid = UID;
        seed("show", 0, sh, sizeof *sh);
        sh->uid = OTHER;
        seed("show-other-uid", 0, sh, sizeof *sh);
        sh->uid = UID;
        sh->reserved = 2;
        seed("show-reserved", 0, sh, sizeof *sh);
}

static void release_hide(void) {
        REQ(r, NSD_REQ_RELEASE, nsd_req_release, 8);
        r->uid = UID;
        seed("release", 0, r, sizeof *r);
        r->flags = NSD_RELEASE_FORCE;
        seed("release-force", 0, r, sizeof *r);
        REQ(h, NSD_REQ_HIDE, nsd_req_hide, 9);
        h->uid = UID;
        snprintf(h->path, sizeof h->path, "/tmp");
        seed("hide", 0, h, sizeof *h);
        h->flags = NSD_HIDE_UNHIDE;
        seed("hide-unhide", 0, h, sizeof *h);
        h->flags = 0;
        snprintf(h->path, sizeof h->path, "tmp");
        seed("hide-relative", 0, h, sizeof *h);
        memset(h->path, '/', sizeof h->path);
        seed("hide-path-unterminated", 0, h, sizeof *h);
}

/* what nsd_msg_check() and the header checks refuse, on a STATUS */
static void broken(void) {
        struct nsd_msg_header *h = proto_msg(NSD_REQ_STATUS, sizeof *h, 10);
        h->magic = 0x12345678;
        seed("bad-magic", 0, h, sizeof *h);
        h = proto_msg(NSD_REQ_STATUS, sizeof *h, 10);
        h->version_major = 2;
        seed("major-2", 0, h, sizeof *h);
        h = proto_msg(NSD_REQ_STATUS, sizeof *h, 10);
        h->length = 32;
        seed("length-not-size", 0, h, sizeof *h);
        h = proto_msg(NSD_REQ_STATUS, sizeof *h, 10);
        h->error = -EIO;
        seed("error-in-request", 0, h, sizeof *h);
        h = proto_msg(NSD_REQ_STATUS, sizeof *h, 10);
        h->flags = 1;
        seed("header-flags", 0, h, sizeof *h);
        seed("status-with-fds", FDS(2), proto_msg(NSD_REQ_STATUS, sizeof *h, 10), sizeof *h);
        seed("unknown-type", 0, proto_msg(_NSD_REQ_MAX, sizeof *h, 10), sizeof *h);
        seed("reply-type", 0, proto_msg(NSD_REP_STATUS, sizeof *h, 10), sizeof *h);
        seed("join-too-short", 0, proto_msg(NSD_REQ_JOIN, sizeof *h, 10), sizeof *h);
        seed("short-header", 0, proto_msg(NSD_REQ_STATUS, 12, 10), 12);
        seed("empty-datagram", 0, "", 0);
        seed("oversized", 0, proto_msg(NSD_REQ_STATUS, NSD_MSG_SIZE_MAX + 1, 10),
             NSD_MSG_SIZE_MAX + 1);
}

int main(int argc, char **argv) {
        gen_corpus_folder(argc, argv, "gen-dispatch-corpus");
        join();
        session_open();
        session_close();
        join_session();
        status_list_show();
        release_hide();
        broken();
        return 0;
}
