/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * handlers.c: what nsd answers, one handler per request type (api_handlers[]), bound to the
 * transport by server.c. See transport/request.h for the life of a request, handlers.h for
 * the rules that hold in every handler.
 */
#include "api/handlers.h"

#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/peer.h"
#include "base/log.h"
#include "config.h" /* generated: PACKAGE_VERSION */
#include "domain/private.h"
#include "domain/session.h"
#include "domain/user.h"
#include "policy/policy.h"
#include "server.h"
#include "store/userns.h"
#include "transport/request.h"

/* LIST computes each entry's mount count (a fork per namespace) only up to this many
 * entries; past it, mounts = -1 ("unknown"), so one LIST costs at most 256 forks. */
#define LIST_MOUNTS_MAX_ENTRIES 256
/* Parts a streaming reply makes per turn of the loop (then everyone else's turn): entries
 * of LIST with mount counts (a fork each), without, and SHOW parts. */
#define LIST_COUNTED_PER_TURN 4
#define LIST_ENTRIES_PER_TURN 64
#define SHOW_PARTS_PER_TURN 16
/* SHOW text held by all unprivileged SHOWs being sent; past it they get -EBUSY. */
#define SHOW_BYTES_MAX (32u << 20)

/* the handlers' userdata (server.c binds them) */
static Server *server_of(const Request *r) {
        return r->userdata;
}

static bool may_ask_for(const Request *r, uid_t uid) {
        return r->uid == 0 || r->uid == uid;
}

#define MSG(r, type) REQUEST_MSG(r, type)

/* ---- the policy, off the loop --------------------------------------------------------- */

static void on_managed(int managed, const char *why, void *userdata) {
        Request *r = userdata;
        int rv;

        if (!r->conn || r->finished) { /* the client left meanwhile: do nothing for it */
                request_unref(r);
                return;
        }
        if (managed == 1)
                rv = r->next(r);
        else {
                g_free(r->why);
                r->why = g_strdup(why);
                rv = managed == 0 ? -NSD_ERRNO_NOT_MANAGED : managed;
        }
        request_continue(r, rv);
        request_unref(r);
}

/* Continue with next(r) once the policy says uid is managed (at once when no NSS lookup is
 * needed or the answer is cached); -ENXIO (not managed, with the reason), -ETIMEDOUT or the
 * lookup's error otherwise. Returns what next() returned, or REQUEST_PENDING. */
static int request_need_managed(Request *r, uid_t uid, RequestHandler next) {
        g_autofree char *why = NULL;
        int m;

        r->next = next;
        m = policy_uid_managed(server_of(r)->policy, uid, &why, on_managed, request_ref(r));
        if (m == -EINPROGRESS)
                return REQUEST_PENDING;
        request_unref(r); /* the callback's reference: it will not be called */
        if (m == 1)
                return next(r);
        g_free(r->why);
        r->why = g_steal_pointer(&why);
        return m == 0 ? -NSD_ERRNO_NOT_MANAGED : m;
}

/* ---- who gets what (nsd-protocol.h) --------------------------------------------------- */

#define WHY_DESCRIPTORS                                                       \
        "descriptors of a namespace go only to root or to a process already " \
        "inside it; see nsctl show"

/* Where the caller stands (peer.h): 0, or -EPERM with *ret_why when nsd cannot tell. */
static int caller_view(Request *r, const User *u, PeerView *ret, char **ret_why) {
        int rv = peer_view(r->pid, r->conn ? conn_pidfd(r->conn) : -1, &r->sender, u ? u->ns : NULL,
                           ret, ret_why);
        if (rv < 0)
                log_debug("%s from uid %u pid %u: %s", r->type->name, (unsigned) r->uid,
                          (unsigned) r->pid, *ret_why);
        return rv;
}

/* JOIN, JOIN_SESSION: descriptors go only where they give nothing new. */
static int check_descriptors(Request *r, uid_t uid) {
        g_autofree char *why = NULL;
        PeerView v;
        User *u;

        if (r->uid == 0)
                return 0;
        u = user_get(server_of(r), uid);
        if (!u) /* nobody is inside a namespace that does not exist */
                return request_refuse(r, EPERM, WHY_DESCRIPTORS);
        if (caller_view(r, u, &v, &why) < 0)
                return request_refuse(r, EPERM, WHY_DESCRIPTORS " (%s)", why);
        if (!v.inside)
                return request_refuse(r, EPERM, WHY_DESCRIPTORS);
        return 0;
}

/* SHOW, HIDE, RELEASE: a path walk, a mount table or the end of a namespace answer only a
 * full view of the user's, never a sandbox: the namespace itself or the initial one. u may
 * be NULL (no namespace yet: only the initial view counts). */
static int check_full_view(Request *r, const User *u) {
        g_autofree char *why = NULL;
        PeerView v;

        if (r->uid == 0)
                return 0;
        if (caller_view(r, u, &v, &why) < 0)
                return request_refuse(r, EPERM,
                                      "%s answers only root and processes in the user's "
                                      "namespace or the initial one (%s)",
                                      r->type->name, why);
        if (!v.inside && !v.initial)
                return request_refuse(r, EPERM,
                                      "%s answers only root and processes in the user's "
                                      "namespace or the initial one, not a sandboxed process",
                                      r->type->name);
        return 0;
}

/* ---- JOIN ----------------------------------------------------------------------------- */

static uint32_t ns_flags_of(const User *u, bool created) {
        return (created ? NSD_NS_CREATED : 0) | (u->ns->pinned ? NSD_NS_PINNED : 0) |
               (u->ns->adopted ? NSD_NS_ADOPTED : 0);
}

static int join_continue(Request *r) {
        const struct nsd_req_join *req = MSG(r, struct nsd_req_join);
        struct nsd_rep_join rep;
        bool created = false;
        User *u;
        int rv;

        rv = check_descriptors(r, req->uid);
        if (rv < 0)
                return rv;
        log_event_by(r->uid, LOG_INFO, 0, req->uid, "join", "JOIN for uid %u by pid %u (uid %u)",
                     (unsigned) req->uid, (unsigned) r->pid, (unsigned) r->uid);
        rv = user_join(server_of(r), req->uid, !(req->flags & NSD_JOIN_NO_CREATE), &u, &created,
                       &r->why);
        if (rv < 0)
                return rv;
        /* a JOIN without a session restarts the linger countdown, with a grace period so
         * the SESSION_OPEN that follows finds the namespace */
        if (u->sessions->len == 0)
                user_arm_linger(u, USER_JOIN_GRACE_SEC);

        nsd_msg_init(&rep.hdr, NSD_REP_JOIN, sizeof rep, r->seq);
        rep.uid = u->uid;
        rep.ns_flags = ns_flags_of(u, created);
        rep.ns_inode = u->ns->ns_inode;
        rep.created_usec = u->ns->created_usec;
        (void) request_reply(r, &rep, sizeof rep, (int[]) { u->ns->root_fd, u->ns->ns_fd }, 2);
        return 0;
}

static int handle_join(Request *r) {
        const struct nsd_req_join *req = MSG(r, struct nsd_req_join);

        if (!may_ask_for(r, req->uid))
                return request_refuse(r, EPERM, "only root may ask for another user's namespace");
        return request_need_managed(r, req->uid, join_continue);
}

/* ---- SESSION_OPEN / SESSION_CLOSE ------------------------------------------------------ */

static int check_leader(const Request *r, uint32_t pid, char **why) {
        if (r->uid != 0 && (pid_t) pid != r->pid) {
                *why = g_strdup_printf("only root may name a session leader other than itself "
                                       "(pid %u)",
                                       (unsigned) r->pid);
                return -EPERM;
        }
        return 0;
}

static int check_sessions_limit(const Request *r, uid_t uid, char **why) {
        const Config *c = &server_of(r)->config;
        unsigned n = sessions_of_uid(server_of(r), uid);

        if (n >= c->max_sessions_per_user) {
                *why = g_strdup_printf("uid %u has %u sessions, the most allowed "
                                       "(MaxSessionsPerUser=)",
                                       (unsigned) uid, n);
                return -EUSERS;
        }
        return 0;
}

static int handle_session_open(Request *r) {
        const struct nsd_req_session_open *req = MSG(r, struct nsd_req_session_open);
        struct nsd_rep_session_open rep;
        int none = -1, pidfd = -1, rv;
        Session *sess;
        User *u;

        if (!may_ask_for(r, req->uid))
                return request_refuse(r, EPERM, "only root may open a session of another user");
        rv = check_leader(r, req->pid, &r->why);
        if (rv < 0)
                return rv;
        u = user_get(server_of(r), req->uid);
        if (!u)
                return request_refuse(r, ENOENT, "uid %u has no namespace (JOIN first)",
                                      (unsigned) req->uid);
        rv = check_sessions_limit(r, req->uid, &r->why);
        if (rv < 0)
                return rv;
        rv = session_leader_pidfd((pid_t) req->pid,
                                  (req->flags & NSD_SESSION_PIDFD) ? &r->fds[0] : &none, &pidfd,
                                  &r->why);
        if (rv < 0)
                return rv;
        sess = session_open(u, (pid_t) req->pid, req->service, pidfd);

        nsd_msg_init(&rep.hdr, NSD_REP_SESSION_OPEN, sizeof rep, r->seq);
        rep.session_id = sess->id;
        rep.sessions = sessions_of_uid(server_of(r), u->uid);
        if (request_reply(r, &rep, sizeof rep, NULL, 0) < 0)
                session_end(sess); /* nobody learnt of it: nothing stays open */
        return 0;
}

static int handle_session_close(Request *r) {
        const struct nsd_req_session_close *req = MSG(r, struct nsd_req_session_close);
        struct nsd_rep_session_close rep;
        Session *sess;

        if (!may_ask_for(r, req->uid))
                return request_refuse(r, EPERM, "only root may close a session of another user");
        sess = session_find(server_of(r), req->uid, req->session_id, (pid_t) req->pid);
        if (!sess) {
                /* sessions are kept across restarts: a close that finds none came late (its
                 * leader died and ended it) or names another uid's */
                log_debug("SESSION_CLOSE of unknown session %" G_GUINT64_FORMAT
                          " (uid %u, pid %u) from pid %u",
                          (uint64_t) req->session_id, (unsigned) req->uid, (unsigned) req->pid,
                          (unsigned) r->pid);
                return request_refuse(r, ENOENT, "no such session of uid %u (ended already?)",
                                      (unsigned) req->uid);
        }
        log_event(LOG_INFO, 0, sess->uid, "session-closed",
                  "Session %" G_GUINT64_FORMAT " of uid %u closed (pid %u, '%s')", sess->id,
                  (unsigned) sess->uid, (unsigned) sess->pid, sess->service);
        session_end(sess); /* may arm the linger timer, never frees u synchronously */

        nsd_msg_init(&rep.hdr, NSD_REP_SESSION_CLOSE, sizeof rep, r->seq);
        rep.sessions = sessions_of_uid(server_of(r), req->uid);
        (void) request_reply(r, &rep, sizeof rep, NULL, 0);
        return 0;
}

/* ---- JOIN_SESSION (1.2): JOIN + SESSION_OPEN ------------------------------------------- */

static int join_session_continue(Request *r) {
        const struct nsd_req_join_session *req = MSG(r, struct nsd_req_join_session);
        struct nsd_rep_join_session rep;
        int none = -1, pidfd = -1, rv;
        bool created = false;
        Session *sess;
        User *u;

        rv = check_descriptors(r, req->uid);
        if (rv < 0)
                return rv;
        log_event_by(r->uid, LOG_INFO, 0, req->uid, "join",
                     "JOIN for uid %u by pid %u (uid %u), with a session (pid %u, '%s')",
                     (unsigned) req->uid, (unsigned) r->pid, (unsigned) r->uid, (unsigned) req->pid,
                     req->service);
        /* everything that can refuse the session first, so a refusal leaves nothing open */
        rv = check_sessions_limit(r, req->uid, &r->why);
        if (rv < 0)
                return rv;
        rv = session_leader_pidfd((pid_t) req->pid,
                                  (req->flags & NSD_JOIN_SESSION_PIDFD) ? &r->fds[0] : &none,
                                  &pidfd, &r->why);
        if (rv < 0)
                return rv;
        rv = user_join(server_of(r), req->uid, !(req->flags & NSD_JOIN_NO_CREATE), &u, &created,
                       &r->why);
        if (rv < 0) {
                if (pidfd >= 0)
                        close(pidfd);
                return rv;
        }
        sess = session_open(u, (pid_t) req->pid, req->service, pidfd);

        nsd_msg_init(&rep.hdr, NSD_REP_JOIN_SESSION, sizeof rep, r->seq);
        rep.uid = u->uid;
        rep.ns_flags = ns_flags_of(u, created);
        rep.ns_inode = u->ns->ns_inode;
        rep.created_usec = u->ns->created_usec;
        rep.session_id = sess->id;
        rep.sessions = sessions_of_uid(server_of(r), u->uid);
        if (request_reply(r, &rep, sizeof rep, (int[]) { u->ns->root_fd, u->ns->ns_fd }, 2) < 0)
                session_end(sess); /* nobody learnt of it: nothing stays open */
        return 0;
}

static int handle_join_session(Request *r) {
        const struct nsd_req_join_session *req = MSG(r, struct nsd_req_join_session);
        int rv;

        if (!may_ask_for(r, req->uid))
                return request_refuse(r, EPERM, "only root may ask for another user's namespace");
        rv = check_leader(r, req->pid, &r->why);
        if (rv < 0)
                return rv;
        return request_need_managed(r, req->uid, join_session_continue);
}

/* ---- STATUS, LIST, SHOW ---------------------------------------------------------------- */

static int handle_status(Request *r) {
        Server *s = server_of(r);
        struct nsd_rep_status rep;

        nsd_msg_init(&rep.hdr, NSD_REP_STATUS, sizeof rep, r->seq);
        g_strlcpy(rep.version, PACKAGE_VERSION, sizeof rep.version);
        rep.started_usec = s->started_usec;
        rep.features = s->features | (s->pins ? NSD_FEATURE_PIN_NAMESPACE : 0) |
                       (s->private_watch ? NSD_FEATURE_PRIVATE_MODE : 0) |
                       (s->private_unavailable ? NSD_FEATURE_PRIVATE_UNAVAILABLE : 0);
        if (r->uid == 0) {
                rep.namespaces = g_hash_table_size(s->users);
                rep.pinned = users_count_pinned(s);
                rep.sessions = g_hash_table_size(s->sessions);
                rep.connections = conn_manager_count(s->conns);
        } else { /* 1.2: a user sees its own figures only */
                User *u = user_get(s, r->uid);
                rep.namespaces = u ? 1 : 0;
                rep.pinned = u && u->ns->pinned ? 1 : 0;
                rep.sessions = u ? u->sessions->len : 0;
                rep.connections = conn_manager_count_uid(s->conns, r->uid);
        }
        rep.max_namespaces = s->max_namespaces;
        rep.max_namespaces_config = s->config.max_namespaces;
        rep.max_sessions_per_uid = s->config.max_sessions_per_user;
        rep.max_connections_per_uid = s->config.max_connections_per_user;
        rep.pid = (uint32_t) getpid();
        (void) request_reply(r, &rep, sizeof rep, NULL, 0);
        return 0;
}

typedef struct ListState {
        GArray *uids; /* uid_t, sorted */
        guint next;
        uint32_t sent;
        bool with_mounts;
} ListState;

static void list_state_free(void *p) {
        ListState *ls = p;
        g_array_unref(ls->uids);
        g_free(ls);
}

static gint compare_uid(gconstpointer a, gconstpointer b) {
        uid_t x = *(const uid_t *) a, y = *(const uid_t *) b;
        return x < y ? -1 : x > y;
}

/* One turn's worth of entries, then the end. */
static bool list_produce(Request *r) {
        ListState *ls = r->data;
        Server *s = server_of(r);
        unsigned budget = ls->with_mounts ? LIST_COUNTED_PER_TURN : LIST_ENTRIES_PER_TURN;
        struct nsd_rep_list_end end;

        while (budget > 0 && ls->next < ls->uids->len && request_can_send(r)) {
                uid_t uid = g_array_index(ls->uids, uid_t, ls->next++);
                User *u = user_get(s, uid);
                struct nsd_rep_list_entry e;

                if (!u) /* released meanwhile */
                        continue;
                budget--;
                nsd_msg_init(&e.hdr, NSD_REP_LIST_ENTRY, sizeof e, r->seq);
                e.uid = u->uid;
                e.ns_flags = ns_flags_of(u, false);
                e.sessions = u->sessions->len;
                e.mounts = ls->with_mounts ? userns_count_mounts(u->ns) : -1;
                if (e.mounts < 0)
                        e.mounts = -1;
                e.ns_inode = u->ns->ns_inode;
                e.created_usec = u->ns->created_usec;
                if (s->pins && u->ns->pinned)
                        pinstore_pin_name(s->pins, u->uid, e.pin, sizeof e.pin);
                e.pin[sizeof e.pin - 1] = '\0';
                if (request_reply(r, &e, sizeof e, NULL, 0) == 0)
                        ls->sent++;
        }
        if (ls->next < ls->uids->len || !request_can_send(r))
                return false;
        nsd_msg_init(&end.hdr, NSD_REP_LIST_END, sizeof end, r->seq);
        end.count = ls->sent;
        (void) request_reply(r, &end, sizeof end, NULL, 0);
        return true;
}

static int handle_list(Request *r) {
        Server *s = server_of(r);
        ListState *ls = g_new0(ListState, 1);

        ls->uids = g_array_new(FALSE, FALSE, sizeof(uid_t));
        if (r->uid == 0) {
                GHashTableIter it;
                gpointer k;
                g_hash_table_iter_init(&it, s->users);
                while (g_hash_table_iter_next(&it, &k, NULL)) {
                        uid_t uid = GPOINTER_TO_UINT(k);
                        g_array_append_val(ls->uids, uid);
                }
                g_array_sort(ls->uids, compare_uid);
        } else if (user_get(s, r->uid)) {
                uid_t uid = r->uid;
                g_array_append_val(ls->uids, uid);
        }
        ls->with_mounts = ls->uids->len <= LIST_MOUNTS_MAX_ENTRIES;
        r->data = ls;
        r->data_free = list_state_free;
        r->produce = list_produce;
        if (list_produce(r))
                return 0;
        request_want_produce(r);
        return REQUEST_PENDING;
}

typedef struct ShowState {
        Server *server;
        char *text;
        size_t len, off;
} ShowState;

static void show_state_free(void *p) {
        ShowState *ss = p;
        ss->server->stream_bytes -= ss->len;
        free(ss->text);
        g_free(ss);
}

static bool show_produce(Request *r) {
        ShowState *ss = r->data;
        struct nsd_msg_header end;

        for (unsigned k = 0; k < SHOW_PARTS_PER_TURN && ss->off < ss->len && request_can_send(r);
             k++) {
                struct {
                        struct nsd_msg_header hdr;
                        char data[NSD_MSG_SIZE_MAX - sizeof(struct nsd_msg_header)];
                } part;
                size_t n = MIN(ss->len - ss->off, sizeof part.data);

                nsd_msg_init(&part.hdr, NSD_REP_SHOW_DATA, sizeof part.hdr + n, r->seq);
                memcpy(part.data, ss->text + ss->off, n);
                (void) request_reply(r, &part, sizeof part.hdr + n, NULL, 0);
                ss->off += n;
        }
        if (ss->off < ss->len || !request_can_send(r))
                return false;
        nsd_msg_init(&end, NSD_REP_SHOW_END, sizeof end, r->seq);
        (void) request_reply(r, &end, sizeof end, NULL, 0);
        return true;
}

static int handle_show(Request *r) {
        const struct nsd_req_show *req = MSG(r, struct nsd_req_show);
        Server *s = server_of(r);
        char *text = NULL;
        size_t len = 0;
        ShowState *ss;
        User *u;
        int rv;

        if (!may_ask_for(r, req->uid))
                return request_refuse(r, EPERM, "only root may see another user's namespace");
        u = user_get(s, req->uid);
        if (!u)
                return request_refuse(r, ENOENT, "uid %u has no namespace", (unsigned) req->uid);
        rv = check_full_view(r, u);
        if (rv < 0)
                return rv;
        if (r->uid != 0 && s->stream_bytes > SHOW_BYTES_MAX)
                return request_refuse(r, EBUSY,
                                      "nsd is busy sending other mount tables, try again");
        rv = userns_read_mountinfo(u->ns, NSD_SHOW_TEXT_MAX, &text, &len);
        if (rv < 0)
                return request_refuse(r, -rv,
                                      "cannot read the mount table of uid %u's namespace: %s",
                                      (unsigned) req->uid, g_strerror(-rv));
        ss = g_new0(ShowState, 1);
        ss->server = s;
        ss->text = text;
        ss->len = len;
        s->stream_bytes += len;
        r->data = ss;
        r->data_free = show_state_free;
        r->produce = show_produce;
        if (show_produce(r))
                return 0;
        request_want_produce(r);
        return REQUEST_PENDING;
}

/* ---- RELEASE ---------------------------------------------------------------------------- */

static int handle_release(Request *r) {
        const struct nsd_req_release *req = MSG(r, struct nsd_req_release);
        struct nsd_msg_header rep;
        g_autofree char *reason = NULL;
        User *u;
        int rv;

        if (!may_ask_for(r, req->uid))
                return request_refuse(r, EPERM, "only root may release another user's namespace");
        if (r->uid != 0 && (req->flags & NSD_RELEASE_FORCE))
                return request_refuse(r, EPERM, "only root may force a release");
        u = user_get(server_of(r), req->uid);
        if (!u && user_is_pending(server_of(r), req->uid))
                return request_refuse(r, NSD_ERRNO_NOT_YET,
                                      "the namespace of uid %u is kept but not "
                                      "adopted yet; retry",
                                      (unsigned) req->uid);
        if (!u)
                return request_refuse(r, ENOENT, "uid %u has no namespace", (unsigned) req->uid);
        rv = check_full_view(r, u);
        if (rv < 0)
                return rv;
        if (u->sessions->len > 0 && !(req->flags & NSD_RELEASE_FORCE))
                return request_refuse(r, EBUSY, "%u live session%s; use --force", u->sessions->len,
                                      u->sessions->len == 1 ? "" : "s");

        reason = g_strdup_printf("asked by uid %u pid %u%s%s", (unsigned) r->uid, (unsigned) r->pid,
                                 (req->flags & NSD_RELEASE_FORCE) ? ", forced" : "",
                                 u->sessions->len > 0 ? ", sessions dropped" : "");
        rv = user_release(u, reason, &r->why);
        if (rv < 0)
                return rv; /* nothing changed: the namespace is kept, with its sessions */

        nsd_msg_init(&rep, NSD_REP_RELEASE, sizeof rep, r->seq);
        (void) request_reply(r, &rep, sizeof rep, NULL, 0);
        return 0;
}

/* ---- HIDE (owner-private mounts) ---------------------------------------------------------- */

static void on_hidden(int rv, uint64_t mnt_id, const char *why, void *userdata) {
        Request *r = userdata;
        const struct nsd_req_hide *req = MSG(r, struct nsd_req_hide);

        if (r->conn && !r->finished) {
                if (rv == 0) {
                        struct nsd_msg_header rep;
                        /* the owner wants it visible: the watch must not hide it again */
                        if (req->flags & NSD_HIDE_UNHIDE)
                                private_watch_exempt(server_of(r)->private_watch, mnt_id);
                        nsd_msg_init(&rep, NSD_REP_HIDE, sizeof rep, r->seq);
                        (void) request_reply(r, &rep, sizeof rep, NULL, 0);
                } else {
                        g_free(r->why);
                        r->why = g_strdup(why);
                }
                request_finish(r, rv);
        } else if (rv == 0 && (req->flags & NSD_HIDE_UNHIDE))
                private_watch_exempt(server_of(r)->private_watch, mnt_id);
        request_unref(r);
}

static int hide_continue(Request *r) {
        const struct nsd_req_hide *req = MSG(r, struct nsd_req_hide);
        Server *s = server_of(r);
        const char *reason = NULL;
        int rv;

        rv = check_full_view(r, user_get(s, req->uid));
        if (rv < 0)
                return rv;
        if (private_supported(s->features, &reason) < 0)
                return request_refuse(r, EOPNOTSUPP, "%s", reason);
        rv = private_hide_start(s->policy, s->children, s->config.path_walk_timeout_usec, r->uid,
                                r->sender.gid, req->uid, req->path, req->flags & NSD_HIDE_UNHIDE,
                                on_hidden, request_ref(r), &r->why);
        if (rv < 0) {
                request_unref(r);
                return rv;
        }
        return REQUEST_PENDING;
}

static int handle_hide(Request *r) {
        const struct nsd_req_hide *req = MSG(r, struct nsd_req_hide);

        if (!may_ask_for(r, req->uid))
                return request_refuse(r, EPERM, "only root may %s a mount for another user",
                                      (req->flags & NSD_HIDE_UNHIDE) ? "unhide" : "hide");
        return request_need_managed(r, req->uid, hide_continue);
}

/* ---- the table -------------------------------------------------------------------------- */

const RequestHandler api_handlers[_NSD_REQ_MAX] = {
        [NSD_REQ_JOIN] = handle_join,
        [NSD_REQ_SESSION_OPEN] = handle_session_open,
        [NSD_REQ_SESSION_CLOSE] = handle_session_close,
        [NSD_REQ_STATUS] = handle_status,
        [NSD_REQ_LIST] = handle_list,
        [NSD_REQ_SHOW] = handle_show,
        [NSD_REQ_RELEASE] = handle_release,
        [NSD_REQ_HIDE] = handle_hide,
        [NSD_REQ_JOIN_SESSION] = handle_join_session,
};
