/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gen-nsclient-corpus: write the seed corpus of fuzz-nsclient (tests/fuzz/corpus/nsclient/)
 * from the protocol's own structs, so the seeds follow nsd-protocol.h. The input format is
 * described at the top of fuzz-nsclient.c.
 *
 *   gen-nsclient-corpus FOLDER
 */
#include "fuzz-nsclient.h"
#include "gen-corpus.h"

#define FIX_ALL (FIX_HDR | FIX_LEN | FIX_SEQ | FIX_ERR | FIX_BODY)
#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define VOLUME_CTL_SIZE sizeof(struct nsd_rep_volume_ctl)

/* head: ncalls 1..4 and flags, then (op, arg) pairs */
static void begin_flags(unsigned ncalls, unsigned flags, const unsigned char *ops_args) {
        out_n = 0;
        put8((ncalls - 1) | flags);
        put(ops_args, 2 * ncalls);
}
static void begin(unsigned ncalls, const unsigned char *ops_args) {
        begin_flags(ncalls, 0, ops_args);
}

static void datagram(unsigned ctl, unsigned type_index, unsigned fds, unsigned owner,
                     const void *msg, size_t size) {
        put8(ctl);
        put8(type_index);
        put8(fds);
        put8(owner);
        put8(size & 0xff);
        put8(size >> 8);
        put(msg, size);
}

static void error_reply(uint32_t seq, int err, uint16_t req, const char *why, unsigned ctl) {
        struct nsd_rep_error *e = proto_msg(NSD_REP_ERROR, sizeof *e, seq);
        e->hdr.error = -err;
        e->request_type = req;
        snprintf(e->message, sizeof e->message, "%s", why);
        datagram(ctl, T_ERROR, 0, 0, e, sizeof *e);
}

/* a reply that is the header alone (RELEASE, HIDE, SHOW_END; CREDENTIAL_TAKE with fds) */
static void header_reply_fds(unsigned type_index, unsigned fds, unsigned owner, uint16_t type,
                             uint32_t seq) {
        datagram(0, type_index, fds, owner, proto_msg(type, sizeof(struct nsd_msg_header), seq),
                 sizeof(struct nsd_msg_header));
}
static void header_reply(unsigned type_index, unsigned owner, uint16_t type, uint32_t seq) {
        header_reply_fds(type_index, 0, owner, type, seq);
}

/* fds of a datagram: n descriptors of /dev/null (kind 3, see fuzz-nsclient.c) */
#define DEVNULL_FDS(n) ((n) | (3 << 5))

/* one call, refused by nsd with err and why */
static void refusal(const unsigned char *ops_args, int err, uint16_t req, const char *why,
                    const char *name) {
        begin(1, ops_args);
        error_reply(1, err, req, why, 0);
        finish(name);
}

/* one call answered by msg: the seed NAME-ok, and NAME-with-fd where the answer carries a
 * descriptor it should not (of /dev/null, see DEVNULL_FDS) */
static void answer_and_with_fd(const unsigned char *ops_args, unsigned type_index, const void *msg,
                               size_t size, const char *name) {
        char seed[64];

        begin(1, ops_args);
        datagram(0, type_index, 0, 0, msg, size);
        snprintf(seed, sizeof seed, "%s-ok", name);
        finish(seed);
        begin(1, ops_args);
        datagram(0, type_index, DEVNULL_FDS(1), 0, msg, size);
        snprintf(seed, sizeof seed, "%s-with-fd", name);
        finish(seed);
}

/* the end of a LIST, VOLUMES or SHARES stream (seq 1) that counts n entries */
static void stream_end(unsigned type_index, uint16_t type, uint32_t n) {
        struct nsd_rep_stream_end *e = proto_msg(type, sizeof *e, 1);
        e->count = n;
        datagram(0, type_index, 0, 0, e, sizeof *e);
}

/* one call answered by a stream without entries: its end alone */
static void empty_stream(const unsigned char *ops_args, unsigned end_index, uint16_t end_type,
                         const char *name) {
        begin(1, ops_args);
        stream_end(end_index, end_type, 0);
        finish(name);
}

/* a seed of raw mode: head (HEAD_RAW, HEAD_RAW_REQUEST), then one message for
 * nsd_msg_check() */
static void raw(unsigned head, const void *msg, size_t size, const char *name) {
        out_n = 0;
        put8(head);
        put(msg, size);
        finish(name);
}

/* the second nsd's answers to the fallback of JOIN_SESSION, for uid 1001 */
static void fallback_join(uint32_t seq) {
        struct nsd_rep_join *j = proto_msg(NSD_REP_JOIN, sizeof *j, seq);
        j->uid = 1001;
        datagram(FIX_BODY, T_JOIN, 2, OWNER_SECOND_NSD << 2, j, sizeof *j);
}
static void fallback_open(uint32_t seq) {
        struct nsd_rep_session_open *o = proto_msg(NSD_REP_SESSION_OPEN, sizeof *o, seq);
        o->session_id = 5;
        o->sessions = 1;
        datagram(0, T_SESSION_OPEN, 0, OWNER_SECOND_NSD << 2, o, sizeof *o);
}

/* a SHARES entry (seq 1) announcing n_uids members */
static struct nsd_rep_shares_entry *share_entry(const char *name, const char *path,
                                                uint32_t propagation, uint32_t n_uids) {
        struct nsd_rep_shares_entry *e = proto_msg(NSD_REP_SHARES_ENTRY, sizeof *e, 1);
        e->propagation = propagation;
        e->max_members = 8;
        e->members = n_uids;
        e->n_uids = n_uids;
        e->mounts = -1;
        snprintf(e->name, sizeof e->name, "%s", name);
        snprintf(e->path, sizeof e->path, "%s", path);
        return e;
}
static void share(const char *name, const char *path, uint32_t propagation, uint32_t n_uids) {
        datagram(0, T_SHARES_ENTRY, 0, 0, share_entry(name, path, propagation, n_uids),
                 sizeof(struct nsd_rep_shares_entry));
}

/* a SHARES_MEMBERS part (seq 1) of n members, uids first, first + 1, ...; with fds */
static void share_members_fds(uint32_t first, uint32_t n, unsigned fds) {
        struct nsd_rep_shares_members *m = proto_msg(NSD_REP_SHARES_MEMBERS, sizeof *m, 1);
        m->n = n;
        for (uint32_t i = 0; i < n && i < NSD_SHARES_MEMBERS_PER_PART; i++)
                m->members[i].uid = first + i;
        datagram(0, T_SHARES_MEMBERS, fds, 0, m, sizeof *m);
}
static void share_members(uint32_t first, uint32_t n) {
        share_members_fds(first, n, 0);
}

/* a message of size bytes whose body (past the header) is all ones */
static void *garbage_msg(uint16_t type, size_t size) {
        unsigned char *m = proto_msg(type, size, 1);
        memset(m + sizeof(struct nsd_msg_header), 0xff, size - sizeof(struct nsd_msg_header));
        return m;
}

/* replies of all ones (garbage_msg()), each of type (at T_ index type_index), size bytes, for
 * call owner */
struct garbage {
        unsigned type_index;
        uint16_t type;
        size_t size;
        unsigned owner;
};

/* a seed of the calls ops_args answered by the n replies of g, each with ctl */
static void garbage_seed(unsigned ncalls, const unsigned char *ops_args, unsigned ctl,
                         const struct garbage *g, size_t n, const char *name) {
        begin(ncalls, ops_args);
        for (size_t i = 0; i < n; i++)
                datagram(ctl, g[i].type_index, 0, g[i].owner, garbage_msg(g[i].type, g[i].size),
                         g[i].size);
        finish(name);
}

/* the same as it is (NAME) and with FIX_BODY (NAME-fixed-up) */
static void garbage_seeds(unsigned ncalls, const unsigned char *ops_args, const struct garbage *g,
                          size_t n, const char *name) {
        char seed[64];

        garbage_seed(ncalls, ops_args, (FIX_ALL & ~FIX_BODY) | SET_TYPE, g, n, name);
        snprintf(seed, sizeof seed, "%s-fixed-up", name);
        garbage_seed(ncalls, ops_args, FIX_ALL | SET_TYPE, g, n, seed);
}

/* a VOLUME_START or VOLUME_STOP answer of type (its size), seq */
static struct nsd_rep_volume_ctl *volume_ctl_reply(uint16_t type, uint32_t seq, uint32_t state,
                                                   uint32_t loop, uint32_t changed) {
        struct nsd_rep_volume_ctl *v = proto_msg(type, sizeof *v, seq);
        v->state = state;
        v->loop = loop;
        v->changed = changed;
        return v;
}

int main(int argc, char **argv) {
        gen_corpus_folder(argc, argv, "gen-nsclient-corpus");

        /* JOIN: the real answer, two descriptors (directory, mount nsfs); uid 1001 */
        {
                static const unsigned char c[] = { OP_JOIN, 0x10 };
                struct nsd_rep_join *j = proto_msg(NSD_REP_JOIN, sizeof *j, 1);
                j->uid = 1001;
                j->ns_flags = NSD_NS_CREATED | NSD_NS_PINNED;
                j->created_usec = 1700000000000000ull;
                static const struct {
                        unsigned head, ctl, fds;
                        const char *seed;
                } answers[] = {
                        { 0, FIX_BODY, 2, "join-ok" },
                        /* the same without descriptors, with three, with the wrong kinds, with
                         * 17 */
                        { 0, FIX_BODY, 0, "join-no-fds" },
                        { 0, FIX_BODY, 3, "join-three-fds" },
                        { 0, FIX_BODY, 2 | (2 << 5), "join-net-and-file-fds" },
                        { 0, FIX_BODY, 17, "join-17-fds" },
                        /* the inode of a net namespace, a net nsfs descriptor where the mount
                         * one goes */
                        { 0, FIX_BODY | NET_INODE, 2 | (1 << 5), "join-net-ns" },
                        /* nsd closed the connection: the request cannot be sent */
                        { HEAD_CLOSED, FIX_BODY, 2, "join-nsd-closed" },
                };
                for (size_t i = 0; i < ELEMENTSOF(answers); i++) {
                        begin_flags(1, answers[i].head, c);
                        datagram(answers[i].ctl, T_JOIN, answers[i].fds, 0, j, sizeof *j);
                        finish(answers[i].seed);
                }
                /* through $NSD_SOCKET, and with sequence numbers about to wrap: 0xffffffff, 1 */
                static const unsigned char c2[] = { OP_JOIN, 0x10, OP_JOIN, 0x10 };
                begin_flags(2, HEAD_VIA_ENV | HEAD_SEQ_WRAP, c2);
                datagram(FIX_BODY | FIX_SEQ, T_JOIN, 2, 0, j, sizeof *j);
                datagram(FIX_BODY | FIX_SEQ, T_JOIN, 2, 1, j, sizeof *j);
                finish("join-env-seq-wrap");
                /* another uid than asked, and the inode left wrong */
                j->uid = 1002;
                begin(1, c);
                datagram(0, T_JOIN, 2, 0, j, sizeof *j);
                finish("join-wrong-uid");
        }
        /* JOIN refused by nsd; then STATUS on the same connection still works */
        {
                static const unsigned char c[] = { OP_JOIN, 0x20, OP_STATUS, 0 };
                struct nsd_rep_status *s;
                begin(2, c);
                error_reply(1, EPERM, NSD_REQ_JOIN, "only root may join another user's namespace",
                            0);
                s = proto_msg(NSD_REP_STATUS, sizeof *s, 2);
                snprintf(s->version, sizeof s->version, "0.1.0");
                s->features = NSD_FEATURE_PIN_NAMESPACE | NSD_FEATURE_OWNER_PRIVATE;
                s->namespaces = 3;
                s->max_namespaces = 10000;
                s->pid = 42;
                datagram(0, T_STATUS, 0, 0, s, sizeof *s);
                finish("join-eperm-then-status");
        }
        /* an error of seq 0 (nsd could not read the request, or refuses the connection) */
        {
                static const unsigned char c[] = { OP_STATUS, 0 };
                begin(1, c);
                error_reply(0, EUSERS, 0, "too many connections of uid 1000 (limit 8)", 0);
                finish("error-seq0");
                refusal(c, 0, NSD_REQ_STATUS, "error field 0 in an error reply",
                        "error-without-errno");
        }
        /* JOIN_SESSION (1.2): the answer in one; id 0; the fallback of an nsd < 1.2 */
        {
                static const unsigned char c[] = { OP_JOIN_SESSION, 0x12 };
                struct nsd_rep_join_session *js = proto_msg(NSD_REP_JOIN_SESSION, sizeof *js, 1);
                js->uid = 1001;
                js->ns_flags = NSD_NS_PINNED;
                js->session_id = 99;
                js->sessions = 2;
                begin_flags(1, HEAD_CONNECT_TIMEOUT, c);
                datagram(FIX_BODY, T_JOIN_SESSION, 2, 0, js, sizeof *js);
                finish("join-session-ok");
                js->session_id = 0;
                begin(1, c);
                datagram(FIX_BODY, T_JOIN_SESSION, 2, 0, js, sizeof *js);
                finish("join-session-id0");
                /* nsd 1.1: "unknown request type"; the library reconnects (to the second
                 * nsd) and sends JOIN (seq 2) and SESSION_OPEN (seq 3) */
                begin(1, c);
                error_reply(1, EOPNOTSUPP, NSD_REQ_JOIN_SESSION, "unknown request type (9)", 0);
                fallback_join(2);
                fallback_open(3);
                finish("join-session-fallback");
                /* the same, the session refused: the descriptors of the JOIN go back */
                begin(1, c);
                error_reply(1, EOPNOTSUPP, NSD_REQ_JOIN_SESSION, "unknown request type (9)", 0);
                fallback_join(2);
                struct nsd_rep_error *e = proto_msg(NSD_REP_ERROR, sizeof *e, 3);
                e->hdr.error = -EUSERS;
                snprintf(e->message, sizeof e->message, "uid 1001 has 64 sessions");
                datagram(0, T_ERROR, 0, OWNER_SECOND_NSD << 2, e, sizeof *e);
                finish("join-session-fallback-refused");
                /* two JOIN_SESSION calls: the second one uses the fallback at once */
                static const unsigned char c2[] = { OP_JOIN_SESSION, 0x12, OP_JOIN_SESSION, 0x12 };
                begin(2, c2);
                error_reply(1, EOPNOTSUPP, NSD_REQ_JOIN_SESSION, "unknown request type (9)", 0);
                fallback_join(2);
                fallback_open(3);
                fallback_join(4);
                fallback_open(5);
                finish("join-session-fallback-twice");
                /* the fallback's connection ends at once */
                refusal(c, EOPNOTSUPP, NSD_REQ_JOIN_SESSION, "unknown request type (9)",
                        "join-session-fallback-nothing");
        }
        /* SESSION_OPEN and SESSION_CLOSE */
        {
                static const unsigned char c[] = { OP_SESSION_OPEN, 0x11, OP_SESSION_CLOSE, 0x11 };
                struct nsd_rep_session_open *o = proto_msg(NSD_REP_SESSION_OPEN, sizeof *o, 1);
                struct nsd_rep_session_close *cl;
                o->session_id = 7;
                o->sessions = 1;
                begin(2, c);
                datagram(0, T_SESSION_OPEN, 0, 0, o, sizeof *o);
                cl = proto_msg(NSD_REP_SESSION_CLOSE, sizeof *cl, 2);
                datagram(0, T_SESSION_CLOSE, 0, 1, cl, sizeof *cl);
                finish("session-open-close");
                o = proto_msg(NSD_REP_SESSION_OPEN, sizeof *o, 1);
                begin(1, c);
                datagram(0, T_SESSION_OPEN, 0, 0, o, sizeof *o);
                finish("session-open-id0");
        }
        /* LIST: three entries and the end; no entries; a count that does not match */
        {
                static const unsigned char c[] = { OP_LIST, 0 };
                begin(1, c);
                for (unsigned i = 0; i < 3; i++) {
                        struct nsd_rep_list_entry *l = proto_msg(NSD_REP_LIST_ENTRY, sizeof *l, 1);
                        l->uid = 1000 + i;
                        l->ns_flags = NSD_NS_PINNED;
                        l->sessions = i;
                        l->mounts = i == 2 ? -1 : 30;
                        l->ns_inode = 4026532000ull + i;
                        snprintf(l->pin, sizeof l->pin, "/run/nsd/pins/%u", 1000 + i);
                        datagram(0, T_LIST_ENTRY, 0, 0, l, sizeof *l);
                }
                stream_end(T_LIST_END, NSD_REP_LIST_END, 3);
                finish("list-three");
                empty_stream(c, T_LIST_END, NSD_REP_LIST_END, "list-empty");
                begin(1, c);
                stream_end(T_LIST_END, NSD_REP_LIST_END, 5);
                finish("list-count-mismatch");
                /* an entry, then an error in the middle of the stream, then STATUS */
                static const unsigned char c2[] = { OP_LIST, 0, OP_STATUS, 0 };
                struct nsd_rep_list_entry *l;
                begin(2, c2);
                l = proto_msg(NSD_REP_LIST_ENTRY, sizeof *l, 1);
                l->uid = 1000;
                datagram(0, T_LIST_ENTRY, 0, 0, l, sizeof *l);
                error_reply(1, EIO, NSD_REQ_LIST, "cannot read the mount table", 0);
                finish("list-error-midstream");
                /* the stream ends without LIST_END: nsd closed the connection */
                begin(1, c);
                l = proto_msg(NSD_REP_LIST_ENTRY, sizeof *l, 1);
                datagram(0, T_LIST_ENTRY, 0, 0, l, sizeof *l);
                finish("list-no-end");
        }
        /* long streams: 300 LIST entries and their end; SHOW past its 1 MiB limit (owner
         * bits 2-7 all set: the datagram 300 times, see fuzz-nsclient.c) */
        {
                static const unsigned char c[] = { OP_LIST, 0 };
                struct nsd_rep_list_entry *l;
                begin(1, c);
                l = proto_msg(NSD_REP_LIST_ENTRY, sizeof *l, 1);
                l->uid = 1000;
                datagram(0, T_LIST_ENTRY, 0, OWNER_REPEAT_LONG << 2, l, sizeof *l);
                stream_end(T_LIST_END, NSD_REP_LIST_END, 300);
                finish("list-300");
                static const unsigned char c2[] = { OP_SHOW, 0x10 };
                begin(1, c2);
                datagram(0, T_SHOW_DATA, 0, OWNER_REPEAT_LONG << 2,
                         proto_msg(NSD_REP_SHOW_DATA, NSD_MSG_SIZE_MAX, 1), NSD_MSG_SIZE_MAX);
                header_reply(T_SHOW_END, 0, NSD_REP_SHOW_END, 1);
                finish("show-too-long");
        }
        /* every call with bad arguments, then a good one: nothing sent, nothing broken */
        {
                static const unsigned char c[] = { OP_JOIN | OP_BAD,
                                                   0x10,
                                                   OP_SESSION_OPEN | OP_BAD,
                                                   0x11,
                                                   OP_HIDE | OP_BAD,
                                                   0x11,
                                                   OP_STATUS,
                                                   0 };
                static const unsigned char c2[] = { OP_LIST | OP_BAD,          0x1,
                                                    OP_SHOW | OP_BAD,          0x11,
                                                    OP_RELEASE | OP_BAD,       0x10,
                                                    OP_SESSION_CLOSE | OP_BAD, 0 };
                static const unsigned char c3[] = { OP_JOIN_SESSION | OP_BAD, 0x10,
                                                    OP_JOIN_SESSION | OP_BAD, 0x13,
                                                    OP_JOIN_SESSION | OP_BAD, 0x14,
                                                    OP_STATUS | OP_BAD,       0x12 };
                begin(4, c);
                datagram(0, T_STATUS, 0, 0,
                         proto_msg(NSD_REP_STATUS, sizeof(struct nsd_rep_status), 1),
                         sizeof(struct nsd_rep_status));
                finish("bad-arguments-then-status");
                begin(4, c2);
                finish("bad-arguments");
                begin(4, c3);
                finish("bad-arguments-join-session");
        }
        /* SHOW: two parts of mountinfo text and the end; an empty answer */
        {
                static const unsigned char c[] = { OP_SHOW, 0x10 };
                static const char *parts[] = {
                        "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/vda rw\n",
                        "40 22 0:45 / /home/alice/mnt rw,nosuid,nodev master:12 - fuse.bindfs "
                        "bindfs rw,user_id=1001,group_id=1001\n",
                };
                begin(1, c);
                for (unsigned i = 0; i < 2; i++) {
                        size_t n = strlen(parts[i]);
                        unsigned char *m = proto_msg(NSD_REP_SHOW_DATA,
                                                     sizeof(struct nsd_msg_header) + n, 1);
                        memcpy(m + sizeof(struct nsd_msg_header), parts[i], n);
                        datagram(0, T_SHOW_DATA, 0, 0, m, sizeof(struct nsd_msg_header) + n);
                }
                header_reply(T_SHOW_END, 0, NSD_REP_SHOW_END, 1);
                finish("show-two-parts");
                begin(1, c);
                header_reply(T_SHOW_END, 0, NSD_REP_SHOW_END, 1);
                finish("show-empty");
                /* a SHOW_DATA part carrying a descriptor */
                begin(1, c);
                unsigned char *m = proto_msg(NSD_REP_SHOW_DATA, 30, 1);
                datagram(0, T_SHOW_DATA, 1, 0, m, 30);
                finish("show-data-with-fd");
        }
        /* RELEASE and HIDE: the header alone */
        {
                static const unsigned char c[] = { OP_RELEASE, 0x11, OP_HIDE, 0x10 };
                begin(2, c);
                header_reply(T_RELEASE, 0, NSD_REP_RELEASE, 1);
                header_reply(T_HIDE, 1, NSD_REP_HIDE, 2);
                finish("release-hide");
                /* HIDE answered with RELEASE's type: out of step */
                static const unsigned char c2[] = { OP_HIDE, 0x10, OP_STATUS, 0 };
                begin(2, c2);
                header_reply(T_RELEASE, 0, NSD_REP_RELEASE, 1);
                datagram(0, T_STATUS, 0, 0,
                         proto_msg(NSD_REP_STATUS, sizeof(struct nsd_rep_status), 2),
                         sizeof(struct nsd_rep_status));
                finish("hide-wrong-type-then-status");
        }
        /* broken conversations: wrong seq, bad magic, short, oversized, empty datagram */
        {
                static const unsigned char c[] = { OP_RELEASE, 0x10, OP_RELEASE, 0x10 };
                struct nsd_msg_header *h;
                begin(2, c);
                header_reply(T_RELEASE, 0, NSD_REP_RELEASE, 9);
                finish("wrong-seq-then-call");
                begin(2, c);
                h = proto_msg(NSD_REP_RELEASE, 24, 1);
                h->magic = 0x12345678;
                datagram(0, T_RELEASE, 0, 0, h, 24);
                header_reply(T_RELEASE, 1, NSD_REP_RELEASE, 2);
                finish("bad-magic-then-call");
                begin(1, c);
                datagram(0, T_RELEASE, 0, 0, proto_msg(NSD_REP_RELEASE, 24, 1), 10);
                finish("short-datagram");
                begin(1, c);
                h = proto_msg(NSD_REP_RELEASE, 4200, 1);
                datagram(FIX_ALL | SET_TYPE, T_RELEASE, 0, 0, h, 4200);
                finish("oversized-datagram");
                begin(1, c);
                datagram(0, 0, 0, 0, NULL, 0);
                finish("empty-datagram");
                begin(1, c);
                datagram(0, 0, 1, 0, NULL, 0);
                finish("empty-datagram-with-fd");
                h = proto_msg(NSD_REP_RELEASE, 24, 1);
                h->version_major = 2;
                begin(1, c);
                datagram(0, T_RELEASE, 0, 0, h, 24);
                finish("major-2");
        }
        /* VOLUMES (1.7): two entries and the end; none; an entry that is not sound (a string
         * without its NUL, a positive error), then a call on the broken connection */
        {
                static const unsigned char c[] = { OP_VOLUMES, 0 };
                static const unsigned char c2[] = { OP_VOLUMES, 0, OP_STATUS, 0 };
                struct nsd_rep_volumes_entry *v;

                begin(1, c);
                v = proto_msg(NSD_REP_VOLUMES_ENTRY, sizeof *v, 1);
                v->uid = 1001;
                v->state = NSD_VOLUME_MOUNTED;
                v->loop = 8;
                v->at_usec = 1700000000000000ull;
                snprintf(v->name, sizeof v->name, "data");
                snprintf(v->type, sizeof v->type, "ext4");
                snprintf(v->source, sizeof v->source, "/srv/volumes/alice.img");
                snprintf(v->where, sizeof v->where, "/home/alice/data");
                datagram(0, T_VOLUMES_ENTRY, 0, 0, v, sizeof *v);
                v = proto_msg(NSD_REP_VOLUMES_ENTRY, sizeof *v, 1);
                v->uid = 1001;
                v->state = NSD_VOLUME_USER;
                v->flags = NSD_VOLUME_PASSWORD;
                snprintf(v->name, sizeof v->name, "vault");
                snprintf(v->type, sizeof v->type, "gocryptfs");
                snprintf(v->source, sizeof v->source, "/home/alice/.vault-cipher");
                snprintf(v->where, sizeof v->where, "/home/alice/vault");
                snprintf(v->options, sizeof v->options, "nosuid,nodev");
                datagram(0, T_VOLUMES_ENTRY, 0, 0, v, sizeof *v);
                stream_end(T_VOLUMES_END, NSD_REP_VOLUMES_END, 2);
                finish("volumes-two");
                empty_stream(c, T_VOLUMES_END, NSD_REP_VOLUMES_END, "volumes-empty");
                begin(2, c2);
                v = proto_msg(NSD_REP_VOLUMES_ENTRY, sizeof *v, 1);
                v->state = NSD_VOLUME_FAILED;
                v->error = -EIO;
                memset(v->why, 'x', sizeof v->why);
                datagram(0, T_VOLUMES_ENTRY, 0, 0, v, sizeof *v);
                stream_end(T_VOLUMES_END, NSD_REP_VOLUMES_END, 1);
                finish("volumes-unterminated-then-status");
                begin(1, c);
                v = proto_msg(NSD_REP_VOLUMES_ENTRY, sizeof *v, 1);
                v->state = NSD_VOLUME_FAILED;
                v->error = EIO;
                datagram(0, T_VOLUMES_ENTRY, 0, 0, v, sizeof *v);
                stream_end(T_VOLUMES_END, NSD_REP_VOLUMES_END, 1);
                finish("volumes-positive-error");
                /* an nsd older than 1.7: "unknown request type" */
                refusal(c, EOPNOTSUPP, NSD_REQ_VOLUMES, "unknown request type (12)",
                        "volumes-nsd-1.6");
        }
        /* CREDENTIAL_GIVE and CREDENTIAL_TAKE (1.7): the answers, a refusal, a TAKE answered
         * without its descriptor or with two, a GIVE answered with one */
        {
                static const unsigned char give[] = { OP_CREDENTIAL_GIVE, 0x10 };
                static const unsigned char take[] = { OP_CREDENTIAL_TAKE, 0x10 };
                static const unsigned char take_wait[] = { OP_CREDENTIAL_TAKE, 0x10,
                                                           OP_CREDENTIAL_TAKE, 0x12 };
                struct nsd_rep_credential_give *g;
                struct nsd_rep_error *e;

                g = proto_msg(NSD_REP_CREDENTIAL_GIVE, sizeof *g, 1);
                g->volumes = 1;
                g->waiting = 1;
                answer_and_with_fd(give, T_CREDENTIAL_GIVE, g, sizeof *g, "credential-give");
                refusal(give, EINVAL, NSD_REQ_CREDENTIAL_GIVE,
                        "the password must have 1 to 1024 bytes", "credential-give-einval");
                /* the password: a descriptor (here /dev/null) with the header alone; none,
                 * two */
                static const struct {
                        unsigned fds;
                        const char *seed;
                } takes[] = {
                        { DEVNULL_FDS(1), "credential-take-ok" },
                        { 0, "credential-take-no-fd" },
                        { DEVNULL_FDS(2), "credential-take-two-fds" },
                };
                for (size_t i = 0; i < ELEMENTSOF(takes); i++) {
                        begin(1, take);
                        header_reply_fds(T_CREDENTIAL_TAKE, takes[i].fds, 0,
                                         NSD_REP_CREDENTIAL_TAKE, 1);
                        finish(takes[i].seed);
                }
                /* locked (no password held), then the wait for the next one is answered */
                begin(2, take_wait);
                error_reply(1, EAGAIN, NSD_REQ_CREDENTIAL_TAKE,
                            "volume 'vault' is locked: no login password of uid 1001 is held", 0);
                header_reply_fds(T_CREDENTIAL_TAKE, DEVNULL_FDS(1), 1, NSD_REP_CREDENTIAL_TAKE, 2);
                finish("credential-take-locked-then-wait");
                /* too many waiting; an error that carries a descriptor */
                refusal(take, EBUSY, NSD_REQ_CREDENTIAL_TAKE,
                        "8 requests of uid 1001 wait for its login password already",
                        "credential-take-ebusy");
                begin(1, take);
                e = proto_msg(NSD_REP_ERROR, sizeof *e, 1);
                e->hdr.error = -EALREADY;
                e->request_type = NSD_REQ_CREDENTIAL_TAKE;
                snprintf(e->message, sizeof e->message,
                         "the login password of uid 1001 was handed over for volume 'vault' "
                         "already");
                datagram(0, T_ERROR, DEVNULL_FDS(1), 0, e, sizeof *e);
                finish("credential-take-error-with-fd");
        }
        /* CREDENTIAL_UNLOCK (1.8): the answer, one with a descriptor, a refusal, a 1.7 nsd */
        {
                static const unsigned char unlock[] = { OP_CREDENTIAL_UNLOCK, 0x10 };
                static const unsigned char bad[] = { OP_CREDENTIAL_UNLOCK | OP_BAD, 0x10,
                                                     OP_CREDENTIAL_UNLOCK | OP_BAD, 0x13,
                                                     OP_CREDENTIAL_UNLOCK,          0x10 };
                struct nsd_rep_credential_unlock *u;

                u = proto_msg(NSD_REP_CREDENTIAL_UNLOCK, sizeof *u, 1);
                u->waiting = 1;
                answer_and_with_fd(unlock, T_CREDENTIAL_UNLOCK, u, sizeof *u, "credential-unlock");
                refusal(unlock, ENOENT, NSD_REQ_CREDENTIAL_UNLOCK,
                        "your namespace has no volume 'vault' that takes a password",
                        "credential-unlock-enoent");
                refusal(unlock, EOPNOTSUPP, NSD_REQ_CREDENTIAL_UNLOCK, "unknown request type (15)",
                        "credential-unlock-nsd-1.7");
                begin(1, bad);
                datagram(0, T_CREDENTIAL_UNLOCK, 0, 0, u, sizeof *u);
                finish("credential-unlock-bad-then-good");
        }
        /* the 1.7 calls with bad arguments, then a good one */
        {
                static const unsigned char c[] = { OP_VOLUMES | OP_BAD,
                                                   0x10,
                                                   OP_CREDENTIAL_GIVE | OP_BAD,
                                                   0x11,
                                                   OP_CREDENTIAL_TAKE | OP_BAD,
                                                   0x12,
                                                   OP_VOLUMES,
                                                   0 };
                static const unsigned char c2[] = { OP_CREDENTIAL_TAKE | OP_BAD, 0x10,
                                                    OP_CREDENTIAL_TAKE | OP_BAD, 0x13,
                                                    OP_CREDENTIAL_TAKE | OP_BAD, 0x15,
                                                    OP_CREDENTIAL_GIVE | OP_BAD, 0x10 };
                begin(4, c);
                stream_end(T_VOLUMES_END, NSD_REP_VOLUMES_END, 0);
                finish("bad-arguments-volumes-credential");
                begin(4, c2);
                finish("bad-arguments-credential");
        }
        /* METRICS (1.4): the answer (to nsc_metrics(), and to nsc_metrics_sized() of the
         * struct and of a newer caller's larger one); a refusal; an nsd older than 1.4; a
         * truncated answer, one of another type, an oversized one; all ones, fixed up */
        {
                static const unsigned char c[] = { OP_METRICS, 0 };
                static const unsigned char sized[] = { OP_METRICS, 1, OP_METRICS, 2 };
                static const unsigned char then_status[] = { OP_METRICS, 0, OP_STATUS, 0 };
                struct nsd_rep_metrics *m = proto_msg(NSD_REP_METRICS, sizeof *m, 1);

                m->namespaces = 3;
                m->pinned = 3;
                m->sessions = 5;
                m->connections[NSD_METRICS_SOCKET_USER] = 2;
                m->connections[NSD_METRICS_SOCKET_ROOT] = 1;
                m->fdstore_entries = 6;
                m->joins[NSD_METRICS_JOIN_OK] = 40;
                m->joins[NSD_METRICS_JOIN_REFUSED] = 2;
                m->join_latency[3] = 30;
                m->join_latency[7] = 10;
                m->join_latency_sum_usec = 123456;
                m->created = 4;
                m->releases[NSD_METRICS_RELEASE_LINGER] = 1;
                m->lookups[NSD_METRICS_LOOKUP_OK] = 44;
                m->lookups[NSD_METRICS_LOOKUP_TIMEOUT] = 1;
                m->throttled[NSD_METRICS_THROTTLE_RATE] = 7;
                m->lookup_timeouts[NSD_METRICS_LOOKUP_TIMEOUT_UNMANAGED] = 1;
                answer_and_with_fd(c, T_METRICS, m, sizeof *m, "metrics");
                /* bad arguments (each variant), then a good call */
                static const unsigned char bad[] = { OP_METRICS | OP_BAD, 0x10,
                                                     OP_METRICS | OP_BAD, 0x11,
                                                     OP_METRICS | OP_BAD, 0x12,
                                                     OP_METRICS | OP_BAD, 0x13 };
                static const unsigned char bad2[] = { OP_METRICS | OP_BAD, 0x14, OP_METRICS, 1 };
                begin(4, bad);
                finish("bad-arguments-metrics");
                begin(2, bad2);
                datagram(0, T_METRICS, 0, 0, m, sizeof *m);
                finish("bad-arguments-metrics-then-metrics");
                begin(2, sized);
                datagram(0, T_METRICS, 0, 0, m, sizeof *m);
                m->hdr.seq = 2;
                datagram(0, T_METRICS, 0, 1, m, sizeof *m);
                finish("metrics-sized");
                /* the first 200 bytes of the answer (its length field says 400) */
                m->hdr.seq = 1;
                begin(2, then_status);
                datagram(0, T_METRICS, 0, 0, m, 200);
                finish("metrics-truncated-then-status");
                begin(1, c);
                datagram(0, T_STATUS, 0, 0,
                         proto_msg(NSD_REP_STATUS, sizeof(struct nsd_rep_status), 1),
                         sizeof(struct nsd_rep_status));
                finish("metrics-wrong-type");
                refusal(c, EPERM, NSD_REQ_METRICS, "only root may read nsd's metrics",
                        "metrics-eperm");
                refusal(c, EOPNOTSUPP, NSD_REQ_METRICS, "unknown request type (10)",
                        "metrics-nsd-1.3");
                static const struct garbage oversized = { T_METRICS, NSD_REP_METRICS, 4200, 0 };
                garbage_seed(1, c, FIX_ALL | SET_TYPE, &oversized, 1, "metrics-oversized");
                static const unsigned char all[] = { OP_METRICS, 0, OP_METRICS, 1, OP_METRICS, 2 };
                static const struct garbage three[] = {
                        { T_METRICS, NSD_REP_METRICS, sizeof(struct nsd_rep_metrics), 0 },
                        { T_METRICS, NSD_REP_METRICS, sizeof(struct nsd_rep_metrics), 1 },
                        { T_METRICS, NSD_REP_METRICS, sizeof(struct nsd_rep_metrics), 2 },
                };
                garbage_seed(3, all, FIX_ALL | SET_TYPE, three, ELEMENTSOF(three),
                             "metrics-garbage-fixed-up");
        }
        /* SHARES (1.5): two shares (one with members, one without), 300 members in three
         * parts, none, the caller's own only; streams that end too soon or go wrong (members
         * missing, too many, before any entry, an empty part, another type, a name without
         * its NUL, too many uids announced, a wrong count, an error midway, a part with a
         * descriptor); an nsd older than 1.5; an oversized entry; all ones, fixed up or not */
        {
                static const unsigned char c[] = { OP_SHARES, 0 };
                static const unsigned char then_status[] = { OP_SHARES, 0, OP_STATUS, 0 };
                struct nsd_rep_shares_entry *e;

                begin(1, c);
                e = share_entry("projects", "/srv/projects", NSD_SHARE_PROPAGATION_MEMBERS, 3);
                e->mounts = 2;
                e->peer_group = 41;
                datagram(0, T_SHARES_ENTRY, 0, 0, e, sizeof *e);
                share_members(1001, 3);
                share("scratch", "/srv/scratch", NSD_SHARE_PROPAGATION_PER_USER, 0);
                stream_end(T_SHARES_END, NSD_REP_SHARES_END, 2);
                finish("shares-two");
                begin(1, c);
                share("team", "/srv/team", NSD_SHARE_PROPAGATION_BOTH, 300);
                share_members(2000, 128);
                share_members(2128, 128);
                share_members(2256, 44);
                stream_end(T_SHARES_END, NSD_REP_SHARES_END, 1);
                finish("shares-300-members");
                empty_stream(c, T_SHARES_END, NSD_REP_SHARES_END, "shares-empty");
                begin(1, c);
                e = share_entry("projects", "/srv/projects", NSD_SHARE_PROPAGATION_HOST, 1);
                e->members = 3;
                e->flags = NSD_SHARE_OWN_ONLY;
                datagram(0, T_SHARES_ENTRY, 0, 0, e, sizeof *e);
                share_members(1000, 1);
                stream_end(T_SHARES_END, NSD_REP_SHARES_END, 1);
                finish("shares-own-only");

                /* streams that end too soon or go wrong: an entry of the share (NULL: none)
                 * on /srv/<share> that announces n_uids members, a part of members (uids from
                 * 1001; -1: none), the end of the stream, of SHARES' type or else LIST's,
                 * that counts end_count entries (-1: no end) */
                static const struct {
                        const char *seed;
                        unsigned ncalls;
                        const unsigned char *calls;
                        const char *share;
                        uint32_t propagation, n_uids;
                        int members;
                        unsigned member_fds;
                        int end_count;
                        int list_end;
                } streams[] = {
                        { "shares-no-end-then-status", 2, then_status, "projects",
                          NSD_SHARE_PROPAGATION_MEMBERS, 3, 3, 0, -1 },
                        { "shares-members-missing", 1, c, "projects", NSD_SHARE_PROPAGATION_MEMBERS,
                          3, 2, 0, 1 },
                        { "shares-members-too-many", 1, c, "projects",
                          NSD_SHARE_PROPAGATION_MEMBERS, 2, 3, 0, 1 },
                        { "shares-members-first", 1, c, NULL, 0, 0, 3, 0, 0 },
                        { "shares-members-part-empty", 1, c, "projects",
                          NSD_SHARE_PROPAGATION_MEMBERS, 2, 0, 0, -1 },
                        { "shares-members-part-overflow", 1, c, "projects",
                          NSD_SHARE_PROPAGATION_MEMBERS, 2, NSD_SHARES_MEMBERS_PER_PART + 1, 0,
                          -1 },
                        { "shares-wrong-type-then-status", 2, then_status, "scratch",
                          NSD_SHARE_PROPAGATION_PER_USER, 0, -1, 0, 1, 1 },
                        { "shares-too-many-uids", 1, c, "projects", NSD_SHARE_PROPAGATION_MEMBERS,
                          (1u << 20) + 1, 3, 0, -1 },
                        { "shares-count-mismatch", 1, c, "scratch", NSD_SHARE_PROPAGATION_PER_USER,
                          0, -1, 0, 5 },
                        { "shares-members-with-fd", 1, c, "projects", NSD_SHARE_PROPAGATION_MEMBERS,
                          3, 3, DEVNULL_FDS(1), 1 },
                };
                for (size_t i = 0; i < ELEMENTSOF(streams); i++) {
                        char path[64];

                        begin(streams[i].ncalls, streams[i].calls);
                        if (streams[i].share) {
                                snprintf(path, sizeof path, "/srv/%s", streams[i].share);
                                share(streams[i].share, path, streams[i].propagation,
                                      streams[i].n_uids);
                        }
                        if (streams[i].members >= 0)
                                share_members_fds(1001, (uint32_t) streams[i].members,
                                                  streams[i].member_fds);
                        if (streams[i].end_count >= 0)
                                stream_end(streams[i].list_end ? T_LIST_END : T_SHARES_END,
                                           streams[i].list_end ? NSD_REP_LIST_END
                                                               : NSD_REP_SHARES_END,
                                           (uint32_t) streams[i].end_count);
                        finish(streams[i].seed);
                }
                /* an entry with its name, or its path, without the NUL */
                for (unsigned path = 0; path < 2; path++) {
                        begin(1, c);
                        e = share_entry("projects", "/srv/projects", NSD_SHARE_PROPAGATION_MEMBERS,
                                        0);
                        if (path)
                                memset(e->path, '/', sizeof e->path);
                        else
                                memset(e->name, 'x', sizeof e->name);
                        datagram(0, T_SHARES_ENTRY, 0, 0, e, sizeof *e);
                        stream_end(T_SHARES_END, NSD_REP_SHARES_END, 1);
                        finish(path ? "shares-path-unterminated" : "shares-name-unterminated");
                }
                begin(2, then_status);
                share("scratch", "/srv/scratch", NSD_SHARE_PROPAGATION_PER_USER, 0);
                error_reply(1, EIO, NSD_REQ_SHARES, "cannot read the share's anchor", 0);
                finish("shares-error-midstream-then-status");
                refusal(c, EOPNOTSUPP, NSD_REQ_SHARES, "unknown request type (11)",
                        "shares-nsd-1.4");

                static const struct garbage oversized = { T_SHARES_ENTRY, NSD_REP_SHARES_ENTRY,
                                                          4200, 0 };
                garbage_seed(1, c, FIX_ALL | SET_TYPE, &oversized, 1, "shares-oversized");
                /* all ones: with FIX_BODY n_uids becomes 195, the parts 128 and 67 */
                static const struct garbage stream[] = {
                        { T_SHARES_ENTRY, NSD_REP_SHARES_ENTRY, sizeof(struct nsd_rep_shares_entry),
                          0 },
                        { T_SHARES_MEMBERS, NSD_REP_SHARES_MEMBERS,
                          sizeof(struct nsd_rep_shares_members), 0 },
                        { T_SHARES_MEMBERS, NSD_REP_SHARES_MEMBERS,
                          sizeof(struct nsd_rep_shares_members), 0 },
                        { T_SHARES_END, NSD_REP_SHARES_END, sizeof(struct nsd_rep_stream_end), 0 },
                };
                garbage_seeds(1, c, stream, ELEMENTSOF(stream), "shares-garbage");
                /* bad arguments (each variant), then a good call */
                static const unsigned char bad[] = { OP_SHARES | OP_BAD, 0x10,
                                                     OP_SHARES | OP_BAD, 0x11,
                                                     OP_SHARES | OP_BAD, 0x12,
                                                     OP_SHARES,          0 };
                begin(4, bad);
                stream_end(T_SHARES_END, NSD_REP_SHARES_END, 0);
                finish("bad-arguments-shares-then-shares");
        }
        /* VOLUME_START and VOLUME_STOP (1.11): a start that mounted, a stop that unmounted
         * (each also with a descriptor it should not carry); ones that changed nothing, for a
         * caller that wants no result and with the longest name; refusals with nsd's message
         * (a stop of a volume in use, then a start on the same connection; no namespace; a
         * FUSE volume; an nsd older than 1.11); answers that are not sound (too short, too
         * long, changed 2, reserved set, the other call's type), then a call on the broken
         * connection; bad arguments (each variant), then a good call; all ones, fixed up or
         * not */
        {
                static const unsigned char start[] = { OP_VOLUME_START, 0x10 };
                static const unsigned char stop[] = { OP_VOLUME_STOP, 0x10 };
                static const unsigned char start_no_result[] = { OP_VOLUME_START, 0x11 };
                static const unsigned char stop_longest[] = { OP_VOLUME_STOP, 0x12 };
                static const unsigned char stop_then_start[] = { OP_VOLUME_STOP, 0x10,
                                                                 OP_VOLUME_START, 0x10 };
                static const unsigned char start_then_status[] = { OP_VOLUME_START, 0x10, OP_STATUS,
                                                                   0 };
                static const unsigned char stop_then_status[] = { OP_VOLUME_STOP, 0x10, OP_STATUS,
                                                                  0 };
                static const unsigned char bad[] = { OP_VOLUME_START | OP_BAD, 0x10,
                                                     OP_VOLUME_START | OP_BAD, 0x11,
                                                     OP_VOLUME_STOP | OP_BAD,  0x12,
                                                     OP_VOLUME_STOP | OP_BAD,  0x13 };
                static const unsigned char bad2[] = { OP_VOLUME_START | OP_BAD, 0x14,
                                                      OP_VOLUME_STOP, 0x10 };
                static const unsigned char both[] = { OP_VOLUME_START, 0x10, OP_VOLUME_STOP, 0x10 };
                struct nsd_rep_volume_ctl *v;

                v = volume_ctl_reply(NSD_REP_VOLUME_START, 1, NSD_VOLUME_MOUNTED, 8, 1);
                answer_and_with_fd(start, T_VOLUME_START, v, sizeof *v, "volume-start");
                v = volume_ctl_reply(NSD_REP_VOLUME_STOP, 1, NSD_VOLUME_STOPPED, 0, 1);
                answer_and_with_fd(stop, T_VOLUME_STOP, v, sizeof *v, "volume-stop");

                begin(2, stop_then_start);
                error_reply(1, EBUSY, NSD_REQ_VOLUME_STOP,
                            "volume 'data' on /home/alice/data is in use by 4242 (bash): it is "
                            "not unmounted while anything holds it",
                            0);
                v = volume_ctl_reply(NSD_REP_VOLUME_START, 2, NSD_VOLUME_MOUNTED, 8, 0);
                datagram(0, T_VOLUME_START, 0, 1, v, sizeof *v);
                finish("volume-stop-ebusy-then-start");
                refusal(start, ENOENT, NSD_REQ_VOLUME_START,
                        "uid 1001 has no namespace (log in first)", "volume-start-enoent");
                refusal(stop, EOPNOTSUPP, NSD_REQ_VOLUME_STOP,
                        "volume 'vault' is a FUSE volume: the user's service manager runs it",
                        "volume-stop-fuse");
                refusal(start, EOPNOTSUPP, NSD_REQ_VOLUME_START, "unknown request type (16)",
                        "volume-start-nsd-1.10");

                /* one answer (seq 1) to the calls: of type, with state, loop, changed and
                 * reserved, size bytes of it with ctl */
                static const struct {
                        const char *seed;
                        unsigned ncalls;
                        const unsigned char *calls;
                        uint16_t type;
                        uint32_t state, loop, changed, reserved;
                        unsigned ctl;
                        size_t size;
                } answers[] = {
                        /* ones that changed nothing, for a caller that wants no result and with
                         * the longest name */
                        { "volume-start-mounted-already-no-result", 1, start_no_result,
                          NSD_REP_VOLUME_START, NSD_VOLUME_MOUNTED, 3, 0, 0, 0, VOLUME_CTL_SIZE },
                        { "volume-stop-stopped-already-longest-name", 1, stop_longest,
                          NSD_REP_VOLUME_STOP, NSD_VOLUME_STOPPED, 0, 0, 0, 0, VOLUME_CTL_SIZE },
                        /* the first 32 bytes of the answer (its length field says 40); 8 bytes
                         * more than the struct, the length field fixed up */
                        { "volume-start-truncated-then-status", 2, start_then_status,
                          NSD_REP_VOLUME_START, NSD_VOLUME_MOUNTED, 8, 1, 0, 0,
                          sizeof(struct nsd_msg_header) + 8 },
                        { "volume-stop-too-long-then-status", 2, stop_then_status,
                          NSD_REP_VOLUME_STOP, NSD_VOLUME_STOPPED, 0, 1, 0, FIX_LEN,
                          VOLUME_CTL_SIZE + 8 },
                        { "volume-start-changed-2-then-status", 2, start_then_status,
                          NSD_REP_VOLUME_START, NSD_VOLUME_MOUNTED, 8, 2, 0, 0, VOLUME_CTL_SIZE },
                        { "volume-stop-reserved-then-status", 2, stop_then_status,
                          NSD_REP_VOLUME_STOP, NSD_VOLUME_STOPPED, 0, 1, 1, 0, VOLUME_CTL_SIZE },
                        /* START answered with STOP's type */
                        { "volume-start-wrong-type-then-status", 2, start_then_status,
                          NSD_REP_VOLUME_STOP, NSD_VOLUME_STOPPED, 0, 1, 0, 0, VOLUME_CTL_SIZE },
                        /* bad arguments, then a good call */
                        { "bad-arguments-volume-ctl-then-stop", 2, bad2, NSD_REP_VOLUME_STOP,
                          NSD_VOLUME_STOPPED, 0, 1, 0, 0, VOLUME_CTL_SIZE },
                };
                for (size_t i = 0; i < ELEMENTSOF(answers); i++) {
                        begin(answers[i].ncalls, answers[i].calls);
                        v = volume_ctl_reply(answers[i].type, 1, answers[i].state, answers[i].loop,
                                             answers[i].changed);
                        v->reserved = answers[i].reserved;
                        datagram(answers[i].ctl,
                                 answers[i].type == NSD_REP_VOLUME_START ? T_VOLUME_START
                                                                         : T_VOLUME_STOP,
                                 0, 0, v, answers[i].size);
                        finish(answers[i].seed);
                }
                begin(4, bad);
                finish("bad-arguments-volume-ctl");

                /* all ones: with FIX_BODY changed becomes 1, reserved 0 */
                static const struct garbage start_stop[] = {
                        { T_VOLUME_START, NSD_REP_VOLUME_START, VOLUME_CTL_SIZE, 0 },
                        { T_VOLUME_STOP, NSD_REP_VOLUME_STOP, VOLUME_CTL_SIZE, 1 },
                };
                garbage_seeds(2, both, start_stop, ELEMENTSOF(start_stop), "volume-ctl-garbage");
        }
        /* raw mode: nsd_msg_check() on a request and on a reply */
        {
                struct nsd_req_join *j = proto_msg(NSD_REQ_JOIN, sizeof *j, 1);
                raw(HEAD_RAW | HEAD_RAW_REQUEST, j, sizeof *j, "raw-request-join");
                struct nsd_req_hide *hd = proto_msg(NSD_REQ_HIDE, sizeof *hd, 3);
                snprintf(hd->path, sizeof hd->path, "/home/alice/mnt");
                raw(HEAD_RAW | HEAD_RAW_REQUEST, hd, sizeof *hd, "raw-request-hide");
                raw(HEAD_RAW, proto_msg(NSD_REP_SHOW_DATA, 40, 1), 40, "raw-reply-show-data");
                struct nsd_req_credential_take *t = proto_msg(NSD_REQ_CREDENTIAL_TAKE, sizeof *t,
                                                              4);
                t->flags = NSD_CREDENTIAL_WAIT;
                snprintf(t->volume, sizeof t->volume, "vault");
                raw(HEAD_RAW | HEAD_RAW_REQUEST, t, sizeof *t, "raw-request-credential-take");
                raw(HEAD_RAW,
                    proto_msg(NSD_REP_VOLUMES_ENTRY, sizeof(struct nsd_rep_volumes_entry), 5),
                    sizeof(struct nsd_rep_volumes_entry), "raw-reply-volumes-entry");
                raw(HEAD_RAW, proto_msg(NSD_REP_METRICS, sizeof(struct nsd_rep_metrics), 6),
                    sizeof(struct nsd_rep_metrics), "raw-reply-metrics");
                raw(HEAD_RAW,
                    proto_msg(NSD_REP_SHARES_MEMBERS, sizeof(struct nsd_rep_shares_members), 7),
                    sizeof(struct nsd_rep_shares_members), "raw-reply-shares-members");
                struct nsd_req_volume_ctl *vc = proto_msg(NSD_REQ_VOLUME_START, sizeof *vc, 8);
                vc->uid = 1001;
                snprintf(vc->volume, sizeof vc->volume, "data");
                raw(HEAD_RAW | HEAD_RAW_REQUEST, vc, sizeof *vc, "raw-request-volume-start");
                raw(HEAD_RAW, proto_msg(NSD_REP_VOLUME_STOP, sizeof(struct nsd_rep_volume_ctl), 9),
                    sizeof(struct nsd_rep_volume_ctl), "raw-reply-volume-stop");
        }
        return 0;
}
