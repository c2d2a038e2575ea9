/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * handlers.c: what nsd answers, one handler per request type (api_handlers[]), bound to the
 * transport by server.c. See transport/request.h for the life of a request, handlers.h for
 * the rules that hold in every handler.
 */
#include "api/handlers.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/access.h"
#include "base/errno-util.h"
#include "base/log.h"
#include "base/metrics.h"
#include "config.h" /* generated: PACKAGE_VERSION */
#include "domain/private.h"
#include "domain/session.h"
#include "domain/user.h"
#include "domain/users.h"
#include "policy/conf-files.h"
#include "policy/conf.h"
#include "policy/policy.h"
#include "policy/setup-conf.h"
#include "store/fdstore.h"
#include "store/mounts.h"
#include "store/pinstore.h"
#include "store/userns.h"
#include "time-util.h"
#include "transport/request.h"

/* LIST computes each entry's mount count (a fork per namespace) only up to this many
 * entries; past it, mounts = -1 ("unknown"), so one LIST costs at most 256 forks. */
#define LIST_MOUNTS_MAX_ENTRIES 256
/* Parts a streaming reply makes per turn of the loop (then everyone else's turn): entries
 * of LIST with mount counts (a fork each), without, and SHOW parts. */
#define LIST_COUNTED_PER_TURN 4
#define LIST_ENTRIES_PER_TURN 64
#define SHOW_PARTS_PER_TURN 16
/* SHARES: parts per turn (entries and member parts), and shares whose members are looked up
 * (a walk over every namespace) per turn. */
#define SHARES_PARTS_PER_TURN 64
#define SHARES_SCANS_PER_TURN 4
/* VOLUMES: entries per turn */
#define VOLUMES_ENTRIES_PER_TURN 64
/* SHOW text held by all unprivileged SHOWs being sent; past it they get -EBUSY. */
#define SHOW_BYTES_MAX (32u << 20)

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
        m = policy_uid_managed(api_of(r)->policy, uid, r->uid, &why, on_managed, request_ref(r));
        if (m == -EINPROGRESS)
                return REQUEST_PENDING;
        request_unref(r); /* the callback's reference: it will not be called */
        if (m == 1)
                return next(r);
        g_free(r->why);
        r->why = g_steal_pointer(&why);
        return m == 0 ? -NSD_ERRNO_NOT_MANAGED : m;
}

/* ---- JOIN ----------------------------------------------------------------------------- */

/* A JOIN or JOIN_SESSION answered (error 0 or -errno): METRICS' joins and their latency,
 * from the moment the request was read. */
static void count_join(const Request *r, int error) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        metrics_count_join(error, now > r->received_usec ? now - r->received_usec : 0);
}

/* generation: the setup generation in force (users_setup_generation()) */
static uint32_t ns_flags_of(const Users *users, const User *u, bool created,
                            const char *generation) {
        return (created ? NSD_NS_CREATED : 0) | (u->ns->pinned ? NSD_NS_PINNED : 0) |
               (u->ns->adopted ? NSD_NS_ADOPTED : 0) |
               (users_is_stale(users, u, generation) ? NSD_NS_STALE : 0) |
               (u->orphaned ? NSD_NS_ORPHANED : 0);
}

/* JOIN_SESSION's reply begins with the fields of JOIN's (uid, ns_flags, ns_inode,
 * created_usec: same types, same order): join_reply_init() fills them for both, through the
 * members' common initial sequence. */
typedef union JoinReply {
        struct nsd_rep_join join;
        struct nsd_rep_join_session session;
} JoinReply;
_Static_assert(offsetof(struct nsd_rep_join_session, created_usec) ==
                       offsetof(struct nsd_rep_join, created_usec),
               "JOIN_SESSION's reply begins with JOIN's");

/* The reply of type (size bytes, the rest zero) that hands u's namespace to the caller. */
static void join_reply_init(const Request *r, JoinReply *rep, uint16_t type, uint32_t size,
                            const User *u, bool created) {
        Users *users = api_of(r)->users;
        char generation[17];

        nsd_msg_init(&rep->join.hdr, type, size, r->seq);
        rep->join.uid = u->uid;
        rep->join.ns_flags = ns_flags_of(users, u, created,
                                         users_setup_generation(users, generation));
        rep->join.ns_inode = u->ns->ns_inode;
        rep->join.created_usec = u->ns->created_usec;
}

/* ---- the namespace to join: made, and set up, when there is none yet ------------------ */

/* A JOIN's (or JOIN_SESSION's) state while its namespace is being made. */
typedef struct JoinState {
        uid_t uid;
        bool created; /* the setup this request waited for made it */
        bool asked;   /* who the user is was looked up */
        SetupUser who;
        char *name, *home, *group;
        gid_t *groups;
        char **group_names; /* NULL-terminated after n_groups entries, an entry "" for none */
        /* the owner check (users.h "Recycled uids"): uid's name now */
        bool owner_looked; /* looked up (or failed, for a namespace made now) */
        bool owner_found;  /* owner_now is its name; false: no passwd entry (or failed) */
        char *owner_now;
} JoinState;

static void join_state_free(void *p) {
        JoinState *st = p;

        g_free(st->name);
        g_free(st->home);
        g_free(st->group);
        g_free(st->groups);
        g_strfreev(st->group_names);
        g_free(st->owner_now);
        g_free(st);
}

static JoinState *join_state(Request *r) {
        if (!r->data) {
                r->data = g_new0(JoinState, 1);
                r->data_free = join_state_free;
        }
        return r->data;
}

/* who the user is (id), kept for the setup plan: st->who */
static void join_state_fill(JoinState *st, const PolicyIdentity *id) {
        st->asked = true;
        st->name = g_strdup(id->name ? id->name : "");
        st->home = g_strdup(id->home);
        st->group = g_strdup(id->group);
        st->groups = g_memdup2(id->gids, id->n_gids * sizeof(gid_t));
        if (id->group_names) {
                st->group_names = g_new0(char *, id->n_gids + 1);
                for (size_t i = 0; i < id->n_gids; i++)
                        st->group_names[i] = g_strdup(id->group_names[i] ? id->group_names[i] : "");
        }
        st->who = (SetupUser) { .uid = id->uid,
                                .gid = id->gid,
                                .name = st->name,
                                .group = st->group,
                                .home = st->home,
                                .groups = st->groups,
                                .group_names = (const char *const *) st->group_names,
                                .n_groups = id->n_gids };
}

static void on_join_identity(int rv, const PolicyIdentity *id, const char *why, void *userdata) {
        Request *r = userdata;
        JoinState *st;

        if (!r->conn || r->finished) { /* the client left meanwhile: do nothing for it */
                request_unref(r);
                return;
        }
        st = join_state(r);
        if (rv == -ENOENT) {
                /* no passwd entry: what needs no name is set up, the rest refused */
                st->asked = true;
                st->who = (SetupUser) { .uid = st->uid, .gid = (gid_t) -1 };
                request_continue(r, r->next(r));
                request_unref(r);
                return;
        }
        if (rv < 0) {
                rv = why_set(&r->why, rv,
                             "the setup of the namespace needs to know who uid %u is: %s",
                             (unsigned) st->uid, why);
                request_continue(r, rv);
                request_unref(r);
                return;
        }
        join_state_fill(st, id);
        request_continue(r, r->next(r));
        request_unref(r);
}

static void on_join_made(int rv, const char *why, void *userdata) {
        Request *r = userdata;

        if (!r->conn || r->finished) {
                request_unref(r);
                return;
        }
        if (rv < 0) {
                why_set(&r->why, rv, "%s", why ? why : g_strerror(-rv));
                request_continue(r, rv);
        } else {
                join_state(r)->created = true;
                request_continue(r, r->next(r));
        }
        request_unref(r);
}

/* uid's name now (rv 0), no entry (-ENOENT), or a failure: into st, or -errno with r->why.
 * A namespace made by this request goes on without a recorded owner when the lookup failed
 * (it is made already; its next JOINs are not checked then); an existing one is refused. */
static int join_owner_answer(Request *r, JoinState *st, int rv, const char *name, const char *why) {
        if (rv < 0 && rv != -ENOENT && !st->created)
                return why_set(&r->why, rv,
                               "nsd cannot tell who uid %u is now, which it checks before it "
                               "hands out that uid's namespace: %s",
                               (unsigned) st->uid, why ? why : g_strerror(-rv));
        if (rv < 0 && rv != -ENOENT)
                log_event(LOG_WARNING, rv, st->uid, "owner-unknown",
                          "The new namespace of uid %u records no owner name (recycled uids "
                          "are not told apart for it): %s",
                          (unsigned) st->uid, why ? why : g_strerror(-rv));
        st->owner_looked = true;
        st->owner_found = rv == 0;
        g_free(st->owner_now);
        st->owner_now = g_strdup(rv == 0 ? name : NULL);
        return 0;
}

static void on_join_owner(int rv, const char *name, const char *why, void *userdata) {
        Request *r = userdata;

        if (!r->conn || r->finished) { /* the client left meanwhile: do nothing for it */
                request_unref(r);
                return;
        }
        rv = join_owner_answer(r, join_state(r), rv, name, why);
        request_continue(r, rv < 0 ? rv : r->next(r));
        request_unref(r);
}

/* Recycled uids (users.h): record whose a namespace made by this request is, or check that
 * the uid of an existing one is still its owner's. 0, REQUEST_PENDING (next(r) runs again
 * once the name is known), or -errno with r->why (-EOWNERDEAD: another person's). */
static int join_owner(Request *r, User *u, bool created, RequestHandler next) {
        Api *a = api_of(r);
        JoinState *st = join_state(r);
        g_autofree char *name = NULL;
        int rv;

        if (created && st->asked && st->name && *st->name) { /* its setup looked it up */
                users_set_owner(a->users, u, st->name);
                return 0;
        }
        if (!created && !u->owner)
                return 0; /* made by an nsd that did not record it, or without a name */
        if (!st->owner_looked) {
                st->uid = u->uid;
                r->next = next;
                rv = policy_uid_name(a->policy, u->uid, r->uid, &name, on_join_owner,
                                     request_ref(r));
                if (rv == -EINPROGRESS)
                        return REQUEST_PENDING;
                request_unref(r); /* the callback's: it will not be called */
                rv = join_owner_answer(r, st, rv, name, NULL);
                if (rv < 0)
                        return rv;
        }
        if (created) {
                users_set_owner(a->users, u, st->owner_found ? st->owner_now : NULL);
                return 0;
        }
        return users_check_owner(a->users, u, st->owner_found ? st->owner_now : NULL, &r->why);
}

/* users_join(), but when uid's namespace must be made and set up (issue 22): the user
 * database first, when the setup needs to know who uid is, then the setup; meanwhile
 * REQUEST_PENDING, and next(r) runs again once the namespace is there (or the request ends
 * with the refusal). 0 with *ret, or -errno with r->why. The uid is the first field of both
 * JOIN and JOIN_SESSION. */
static int join_namespace(Request *r, uid_t uid, bool create, RequestHandler next, User **ret,
                          bool *ret_created) {
        Api *a = api_of(r);
        JoinState *st = r->data;
        int rv;

        if (!(st && st->asked) && users_join_needs_identity(a->users, uid, create)) {
                join_state(r)->uid = uid;
                r->next = next;
                rv = policy_uid_identity(a->policy, uid, r->uid, on_join_identity, request_ref(r));
                if (rv == -EINPROGRESS)
                        return REQUEST_PENDING;
                request_unref(r); /* the callback's: it will not be called */
                return why_set(&r->why, rv, "cannot look up who uid %u is: %s", (unsigned) uid,
                               g_strerror(-rv));
        }
        rv = users_join_start(a->users, uid, create, st && st->asked ? &st->who : NULL,
                              on_join_made, request_ref(r), ret, ret_created, &r->why);
        if (rv == -EINPROGRESS) {
                r->next = next;
                return REQUEST_PENDING;
        }
        request_unref(r); /* the callback's: it will not be called */
        if (rv != 0)
                return rv;
        st = join_state(r);
        if (*ret_created)
                st->created = true; /* also when next() runs again after the owner lookup */
        *ret_created = st->created;
        return join_owner(r, *ret, st->created, next);
}

static int join_continue(Request *r) {
        const struct nsd_req_join *req = MSG(r, struct nsd_req_join);
        bool created = false;
        JoinReply rep;
        User *u;
        int rv;

        rv = access_check_descriptors(r, req->uid);
        if (rv < 0)
                return rv;
        if (!r->data) /* not again when it continues after the setup */
                log_event_by(r->uid, LOG_INFO, 0, req->uid, "join",
                             "JOIN for uid %u by pid %u (uid %u)", (unsigned) req->uid,
                             (unsigned) r->pid, (unsigned) r->uid);
        rv = join_namespace(r, req->uid, !(req->flags & NSD_JOIN_NO_CREATE), join_continue, &u,
                            &created);
        if (rv != 0)
                return rv;
        /* without a session: the countdown restarts, with a grace for the SESSION_OPEN */
        users_joined(api_of(r)->users, u);

        join_reply_init(r, &rep, NSD_REP_JOIN, sizeof rep.join, u, created);
        (void) request_reply(r, &rep.join, sizeof rep.join,
                             (int[]) { u->ns->root_fd, u->ns->ns_fd }, 2);
        count_join(r, 0);
        return 0;
}

static int handle_join(Request *r) {
        const struct nsd_req_join *req = MSG(r, struct nsd_req_join);

        if (!access_may_ask_for(r, req->uid))
                return request_refuse(r, EPERM, "only root may ask for another user's namespace");
        return request_need_managed(r, req->uid, join_continue);
}

/* ---- SESSION_OPEN / SESSION_CLOSE ------------------------------------------------------ */

/* Sessions belong to logins: root's (a login's PAM module) and those the user's own
 * processes open count apart, each against MaxSessionsPerUser=, so nothing a user runs can
 * make root's JOIN_SESSION for that user fail. */
static int check_sessions_limit(Request *r, uid_t uid) {
        Api *a = api_of(r);
        bool by_user = r->uid != 0;
        unsigned n = users_sessions_by(a->users, uid, by_user);

        if (n >= a->config->max_sessions_per_user)
                return by_user ? request_refuse(r, EUSERS,
                                                "uid %u has %u sessions its own processes "
                                                "opened, the most allowed "
                                                "(MaxSessionsPerUser=; logins opened by root "
                                                "have a budget of their own)",
                                                (unsigned) uid, n)
                               : request_refuse(r, EUSERS,
                                                "uid %u has %u sessions of logins, the most "
                                                "allowed (MaxSessionsPerUser=)",
                                                (unsigned) uid, n);
        return 0;
}

/* The session of u whose leader is pid, opened for the caller; the leader's pidfd came as the
 * request's first descriptor when with_pidfd, else it is taken here. */
/* ---- Start=login kernel volumes, at a user's first session ----------------------------- */

/* The kernel volumes with Start=login of a user's namespace that are not mounted, started
 * when a session opens and the user has no other (any login through pam_nsjoin: ssh, su,
 * cron, the user's service manager; none of them waits for it), one after another (one start
 * or stop per uid at a time), each as the user's own (CHILD_USER). What became of each is
 * logged where it ends (volume-mounted, setup-failed). Owned by its pending callback; the
 * Api's autostarts table lists the uids that have one, so a second first session meanwhile
 * adds nothing. */
typedef struct AutoStart {
        Api *a;
        uid_t uid;
        uint64_t ns_inode; /* the namespace whose session it was (a new one is not this one) */
        size_t next;       /* the next volume to look at */
        unsigned tries;    /* "not yet" answers for volumes[next - 1] so far */
        guint timer;       /* waiting to ask again after "not yet" (the Api's then) */
        char *why;         /* NSD_REASON= of the starts */
        JoinState *st;     /* who the user is */
} AutoStart;

/* A start that answers "not yet" (no helper child free now, another start or stop of the
 * user's runs) is asked again a second later, 10 times at most. */
#define AUTOSTART_RETRIES 10

static void autostart_free(AutoStart *as) {
        if (!as->a->stopping && as->a->autostarts)
                g_hash_table_remove(as->a->autostarts, GUINT_TO_POINTER(as->uid));
        g_clear_handle_id(&as->timer, g_source_remove);
        join_state_free(as->st);
        g_free(as->why);
        g_free(as);
}

static void autostart_next(AutoStart *as);

static gboolean on_autostart_retry(void *userdata) {
        AutoStart *as = userdata;

        as->timer = 0;
        autostart_next(as);
        return G_SOURCE_REMOVE;
}

static bool starts_at_login(const UserVolume *v) {
        return v->at_login && v->outcome != VOLUME_OUTCOME_MOUNTED;
}

static void on_autostart_done(int r, const char *why, const UserVolume *v, bool changed,
                              void *userdata);

static void autostart_next(AutoStart *as) {
        Api *a = as->a;
        User *u;

        while ((u = users_get(a->users, as->uid)) && u->ns->ns_inode == as->ns_inode &&
               as->next < u->n_volumes) {
                const UserVolume *v = &u->volumes[as->next++];
                g_autofree char *why = NULL;
                int r;

                if (!starts_at_login(v))
                        continue;
                r = users_volume_start(a->users, u, v->name, &as->st->who, true, as->why,
                                       on_autostart_done, as, &why);
                if (r > 0) {
                        as->tries = 0;
                        return; /* on_autostart_done() goes on */
                }
                if (r == -NSD_ERRNO_NOT_YET && as->tries++ < AUTOSTART_RETRIES) {
                        as->next--; /* this one again */
                        as->timer = g_timeout_add_seconds(1, on_autostart_retry, as);
                        return;
                }
                as->tries = 0;
                if (r < 0)
                        log_event(r == -NSD_ERRNO_NOT_YET ? LOG_INFO : LOG_WARNING, -r, as->uid,
                                  "volume-start-failed",
                                  "Volume '%s' of uid %u was not started at its first session: %s",
                                  v->name, (unsigned) as->uid, why ? why : g_strerror(-r));
        }
        autostart_free(as);
}

static void on_autostart_done(int r, const char *why, const UserVolume *v, bool changed,
                              void *userdata) {
        AutoStart *as = userdata;

        (void) why; /* logged by the start itself */
        (void) v;
        (void) changed;
        if (r == -ECANCELED || as->a->stopping) { /* nsd stops */
                autostart_free(as);
                return;
        }
        autostart_next(as);
}

static void on_autostart_identity(int rv, const PolicyIdentity *id, const char *why,
                                  void *userdata) {
        AutoStart *as = userdata;

        if (rv == -ECANCELED || as->a->stopping) {
                autostart_free(as);
                return;
        }
        if (rv < 0) {
                log_event(LOG_WARNING, -rv, as->uid, "volume-start-failed",
                          "The Start=login volumes of uid %u were not started at its first "
                          "session: who uid %u is could not be looked up: %s",
                          (unsigned) as->uid, (unsigned) as->uid, why ? why : g_strerror(-rv));
                autostart_free(as);
                return;
        }
        join_state_fill(as->st, id);
        autostart_next(as);
}

/* u's first session (pid, service) opened: its Start=login volumes that are not mounted */
static void autostart_volumes(Api *a, User *u, pid_t pid, const char *service) {
        AutoStart *as;
        bool any = false;
        int r;

        for (size_t i = 0; i < u->n_volumes && !any; i++)
                any = starts_at_login(&u->volumes[i]);
        if (!any || a->stopping)
                return;
        if (!a->autostarts)
                a->autostarts = g_hash_table_new(NULL, NULL);
        if (g_hash_table_contains(a->autostarts, GUINT_TO_POINTER(u->uid)))
                return;
        as = g_new0(AutoStart, 1);
        as->a = a;
        as->uid = u->uid;
        as->ns_inode = u->ns->ns_inode;
        as->st = g_new0(JoinState, 1);
        as->st->uid = u->uid;
        as->why = g_strdup_printf("the first session of uid %u: pid %u, '%s'", (unsigned) u->uid,
                                  (unsigned) pid, service);
        r = policy_uid_identity(a->policy, u->uid, u->uid, on_autostart_identity, as);
        if (r != -EINPROGRESS) {
                log_event(LOG_WARNING, -r, u->uid, "volume-start-failed",
                          "The Start=login volumes of uid %u were not started at its first "
                          "session: who uid %u is cannot be looked up now: %s",
                          (unsigned) u->uid, (unsigned) u->uid, g_strerror(-r));
                autostart_free(as);
                return;
        }
        g_hash_table_insert(a->autostarts, GUINT_TO_POINTER(u->uid), as);
}

static int open_session(Request *r, User *u, uint32_t pid, bool with_pidfd, const char *service,
                        Session **ret) {
        Api *a = api_of(r);
        int none = -1, pidfd = -1, rv;

        rv = session_leader_pidfd((pid_t) pid, with_pidfd ? &r->fds[0] : &none, &pidfd, &r->why);
        if (rv < 0)
                return rv;
        *ret = users_open_session(a->users, u, (pid_t) pid, service, pidfd, r->uid);
        if (users_sessions_of(a->users, u->uid) == 1)
                autostart_volumes(a, u, (pid_t) pid, service);
        return 0;
}

/* Refuse a leader that open_session() would refuse, before anything is made for it: a JOIN_SESSION
 * makes the namespace first (its setup may wait), and a refused session must leave nothing
 * behind. The pidfd sent stays the request's, for open_session(). */
static int check_leader(Request *r, uint32_t pid, bool with_pidfd) {
        int io = with_pidfd ? r->fds[0] : -1, pidfd = -1, rv;

        rv = session_leader_pidfd((pid_t) pid, &io, &pidfd, &r->why);
        if (with_pidfd && io < 0) {
                /* taken: on success it is still r->fds[0]; on a refusal it was closed */
                if (rv < 0)
                        r->fds[0] = -1;
                return rv;
        }
        if (rv >= 0 && pidfd >= 0)
                close(pidfd);
        return rv;
}

/* The reply that tells of sess; when it cannot be queued, nobody learnt of the session and it
 * ends at once: nothing stays open. */
static void reply_session(Request *r, Session *sess, const void *rep, size_t size, const int *fds,
                          size_t n_fds) {
        if (request_reply(r, rep, size, fds, n_fds) < 0)
                users_end_session(api_of(r)->users, sess);
}

static int handle_session_open(Request *r) {
        const struct nsd_req_session_open *req = MSG(r, struct nsd_req_session_open);
        struct nsd_rep_session_open rep;
        Session *sess;
        int rv;
        User *u;

        if (!access_may_ask_for(r, req->uid))
                return request_refuse(r, EPERM, "only root may open a session of another user");
        rv = access_check_leader(r, req->pid);
        if (rv < 0)
                return rv;
        u = users_get(api_of(r)->users, req->uid);
        if (!u)
                return request_refuse(r, ENOENT, "uid %u has no namespace (JOIN first)",
                                      (unsigned) req->uid);
        if (users_is_releasing(api_of(r)->users, req->uid))
                return request_refuse(r, NSD_ERRNO_NOT_YET,
                                      "the namespace of uid %u is being released; JOIN again",
                                      (unsigned) req->uid);
        /* a session is a login's: never a sandboxed process's (the view rule of SHOW, HIDE) */
        rv = access_check_full_view(r, u);
        if (rv < 0)
                return rv;
        rv = check_sessions_limit(r, req->uid);
        if (rv < 0)
                return rv;
        rv = open_session(r, u, req->pid, req->flags & NSD_SESSION_PIDFD, req->service, &sess);
        if (rv < 0)
                return rv;

        nsd_msg_init(&rep.hdr, NSD_REP_SESSION_OPEN, sizeof rep, r->seq);
        rep.session_id = sess->id;
        rep.sessions = users_sessions_of(api_of(r)->users, u->uid);
        reply_session(r, sess, &rep, sizeof rep, NULL, 0);
        return 0;
}

static int handle_session_close(Request *r) {
        const struct nsd_req_session_close *req = MSG(r, struct nsd_req_session_close);
        struct nsd_rep_session_close rep;
        Session *sess;

        if (!access_may_ask_for(r, req->uid))
                return request_refuse(r, EPERM, "only root may close a session of another user");
        sess = users_find_session(api_of(r)->users, req->uid, req->session_id, (pid_t) req->pid);
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
        /* A user closes only a session it opened, as its leader (ids are not secrets); a
         * login's (root opened it) only once its leader has exited, when it ends anyway:
         * systemd's (sd-pam) closes the user manager's session with the user's uid after the
         * manager exited. */
        if (r->uid != 0 && sess->by_user && sess->pid != r->pid)
                return request_refuse(r, EPERM,
                                      "only root may close a session whose leader is another "
                                      "process than the caller (pid %u)",
                                      (unsigned) r->pid);
        if (r->uid != 0 && !sess->by_user && !session_leader_exited(sess))
                return request_refuse(r, EPERM,
                                      "session %" G_GUINT64_FORMAT " of uid %u is a login's "
                                      "(root opened it) and its leader pid %u lives; only root "
                                      "closes it",
                                      sess->id, (unsigned) sess->uid, (unsigned) sess->pid);
        log_event_by(r->uid, LOG_INFO, 0, sess->uid, "session-closed",
                     "Session %" G_GUINT64_FORMAT " of uid %u closed (pid %u, '%s')", sess->id,
                     (unsigned) sess->uid, (unsigned) sess->pid, sess->service);
        users_end_session(api_of(r)->users, sess); /* may start linger, never frees u at once */

        nsd_msg_init(&rep.hdr, NSD_REP_SESSION_CLOSE, sizeof rep, r->seq);
        rep.sessions = users_sessions_of(api_of(r)->users, req->uid);
        (void) request_reply(r, &rep, sizeof rep, NULL, 0);
        return 0;
}

/* ---- JOIN_SESSION (1.2): JOIN + SESSION_OPEN ------------------------------------------- */

static int join_session_continue(Request *r) {
        const struct nsd_req_join_session *req = MSG(r, struct nsd_req_join_session);
        JoinReply rep;
        int rv;
        bool created = false;
        Session *sess;
        User *u;

        rv = access_check_descriptors(r, req->uid);
        if (rv < 0)
                return rv;
        if (!r->data) /* not again when it continues after the setup */
                log_event_by(r->uid, LOG_INFO, 0, req->uid, "join",
                             "JOIN for uid %u by pid %u (uid %u), with a session (pid %u, '%s')",
                             (unsigned) req->uid, (unsigned) r->pid, (unsigned) r->uid,
                             (unsigned) req->pid, req->service);
        /* everything that can refuse the session first, so a refusal leaves nothing open */
        rv = check_sessions_limit(r, req->uid);
        if (rv < 0)
                return rv;
        rv = check_leader(r, req->pid, req->flags & NSD_JOIN_SESSION_PIDFD);
        if (rv < 0)
                return rv;
        /* the namespace, made and set up when it must be (it may wait: this runs again);
         * then the leader, whose pidfd is taken only once the namespace is there */
        rv = join_namespace(r, req->uid, !(req->flags & NSD_JOIN_NO_CREATE), join_session_continue,
                            &u, &created);
        if (rv != 0)
                return rv;
        rv = open_session(r, u, req->pid, req->flags & NSD_JOIN_SESSION_PIDFD, req->service, &sess);
        if (rv < 0)
                return rv;

        join_reply_init(r, &rep, NSD_REP_JOIN_SESSION, sizeof rep.session, u, created);
        /* to pam_nsjoin (root) only: its login's password is wanted by a volume */
        if (r->uid == 0 && user_credential_wanted(u))
                rep.session.ns_flags |= NSD_NS_CREDENTIAL_WANTED;
        rep.session.session_id = sess->id;
        rep.session.sessions = users_sessions_of(api_of(r)->users, u->uid);
        reply_session(r, sess, &rep.session, sizeof rep.session,
                      (int[]) { u->ns->root_fd, u->ns->ns_fd }, 2);
        count_join(r, 0);
        return 0;
}

static int handle_join_session(Request *r) {
        const struct nsd_req_join_session *req = MSG(r, struct nsd_req_join_session);
        int rv;

        if (!access_may_ask_for(r, req->uid))
                return request_refuse(r, EPERM, "only root may ask for another user's namespace");
        rv = access_check_leader(r, req->pid);
        if (rv < 0)
                return rv;
        return request_need_managed(r, req->uid, join_session_continue);
}

/* ---- STATUS, METRICS, LIST, SHOW -------------------------------------------------------- */

/* The machine's namespaces, pinned and sessions: root's STATUS and METRICS both. */
static void machine_figures(const Api *a, uint32_t *ret_namespaces, uint32_t *ret_pinned,
                            uint32_t *ret_sessions) {
        *ret_namespaces = users_count(a->users);
        *ret_pinned = users_count_pinned(a->users);
        *ret_sessions = users_count_sessions(a->users);
}

static int handle_status(Request *r) {
        Api *a = api_of(r);
        struct nsd_rep_status rep;

        nsd_msg_init(&rep.hdr, NSD_REP_STATUS, sizeof rep, r->seq);
        g_strlcpy(rep.version, PACKAGE_VERSION, sizeof rep.version);
        rep.started_usec = a->started_usec;
        rep.features = a->kernel_features | (a->pins ? NSD_FEATURE_PIN_NAMESPACE : 0) |
                       (a->private_watch ? NSD_FEATURE_PRIVATE_MODE : 0) |
                       (a->private_unavailable ? NSD_FEATURE_PRIVATE_UNAVAILABLE : 0);
        if (r->uid == 0) {
                machine_figures(a, &rep.namespaces, &rep.pinned, &rep.sessions);
                rep.connections = conn_manager_count(a->conns);
        } else { /* 1.2: a user sees its own figures only */
                User *u = users_get(a->users, r->uid);
                rep.namespaces = u ? 1 : 0;
                rep.pinned = u && u->ns->pinned ? 1 : 0;
                rep.sessions = u ? u->sessions->len : 0;
                rep.connections = conn_manager_count_uid(a->conns, r->uid);
        }
        rep.max_namespaces = users_max_namespaces(a->users);
        rep.max_namespaces_config = a->config->max_namespaces;
        rep.max_sessions_per_uid = a->config->max_sessions_per_user;
        rep.max_connections_per_uid = a->config->max_connections_per_user;
        rep.pid = (uint32_t) getpid();
        (void) request_reply(r, &rep, sizeof rep, NULL, 0);
        return 0;
}

/* 1.4: the counters (base/metrics.h) and the gauges, root only: they are the machine's */
static int handle_metrics(Request *r) {
        const Metrics *m = metrics_get();
        Api *a = api_of(r);
        struct nsd_rep_metrics rep;
        FdStoreStats fs;

        if (r->uid != 0)
                return request_refuse(r, EPERM,
                                      "METRICS answers only root (uid 0): the counters are the "
                                      "whole machine's");
        nsd_msg_init(&rep.hdr, NSD_REP_METRICS, sizeof rep, r->seq);
        machine_figures(a, &rep.namespaces, &rep.pinned, &rep.sessions);
        rep.connections[NSD_METRICS_SOCKET_USER] = conn_manager_count_kind(a->conns,
                                                                           CONN_KIND_USER);
        rep.connections[NSD_METRICS_SOCKET_ROOT] = conn_manager_count_kind(a->conns,
                                                                           CONN_KIND_ROOT);
        if (a->fdstore && fdstore_enabled(a->fdstore)) {
                fdstore_get_stats(a->fdstore, &fs);
                rep.fdstore_entries = fs.n_fds;
        }
        memcpy(rep.joins, m->joins, sizeof rep.joins);
        memcpy(rep.join_latency, m->join_latency, sizeof rep.join_latency);
        rep.join_latency_sum_usec = m->join_latency_sum_usec;
        rep.created = m->created;
        rep.setup_failures = m->setup_failures;
        memcpy(rep.releases, m->releases, sizeof rep.releases);
        memcpy(rep.lookups, m->lookups, sizeof rep.lookups);
        memcpy(rep.lookup_timeouts, m->lookup_timeouts, sizeof rep.lookup_timeouts);
        rep.path_walk_timeouts = m->path_walk_timeouts;
        memcpy(rep.throttled, m->throttled, sizeof rep.throttled);
        (void) request_reply(r, &rep, sizeof rep, NULL, 0);
        return 0;
}

typedef struct ListState {
        GArray *uids; /* uid_t, sorted */
        guint next;
        uint32_t sent;
        bool with_mounts;
        char generation[17]; /* the setup in force, for NSD_NS_STALE */
} ListState;

static void list_state_free(void *p) {
        ListState *ls = p;
        g_array_unref(ls->uids);
        g_free(ls);
}

/* A stream's end (LIST's, SHARES', VOLUMES'), once all was sent (done) and it can go out: true when
 * it went, false to be called again. */
static bool stream_end(Request *r, bool done, uint16_t type, uint32_t count) {
        struct nsd_rep_stream_end end;

        if (!done || !request_can_send(r))
                return false;
        nsd_msg_init(&end.hdr, type, sizeof end, r->seq);
        end.count = count;
        (void) request_reply(r, &end, sizeof end, NULL, 0);
        return true;
}

/* One turn's worth of entries, then the end. */
static bool list_produce(Request *r) {
        ListState *ls = r->data;
        Api *a = api_of(r);
        unsigned budget = ls->with_mounts ? LIST_COUNTED_PER_TURN : LIST_ENTRIES_PER_TURN;

        while (budget > 0 && ls->next < ls->uids->len && request_can_send(r)) {
                uid_t uid = g_array_index(ls->uids, uid_t, ls->next++);
                User *u = users_get(a->users, uid);
                struct nsd_rep_list_entry e;

                if (!u) /* released meanwhile */
                        continue;
                budget--;
                nsd_msg_init(&e.hdr, NSD_REP_LIST_ENTRY, sizeof e, r->seq);
                e.uid = u->uid;
                e.ns_flags = ns_flags_of(a->users, u, false, ls->generation);
                e.sessions = u->sessions->len;
                e.mounts = ls->with_mounts ? userns_count_mounts(u->ns) : -1;
                if (e.mounts < 0)
                        e.mounts = -1;
                e.ns_inode = u->ns->ns_inode;
                e.created_usec = u->ns->created_usec;
                if (a->pins && u->ns->pinned)
                        pinstore_pin_name(a->pins, u->uid, e.pin, sizeof e.pin);
                e.pin[sizeof e.pin - 1] = '\0';
                if (request_reply(r, &e, sizeof e, NULL, 0) == 0)
                        ls->sent++;
        }
        return stream_end(r, ls->next >= ls->uids->len, NSD_REP_LIST_END, ls->sent);
}

/* The uids whose namespaces the caller of LIST or VOLUMES may see, sorted: root every one,
 * anyone else its own (when nsd holds one). */
static GArray *visible_uids(const Request *r) {
        Api *a = api_of(r);
        GArray *uids;

        if (r->uid == 0)
                return users_uids(a->users);
        uids = g_array_new(FALSE, FALSE, sizeof(uid_t));
        if (users_get(a->users, r->uid)) {
                uid_t uid = r->uid;
                g_array_append_val(uids, uid);
        }
        return uids;
}

static int handle_list(Request *r) {
        Api *a = api_of(r);
        ListState *ls = g_new0(ListState, 1);

        users_setup_generation(a->users, ls->generation);
        ls->uids = visible_uids(r);
        ls->with_mounts = ls->uids->len <= LIST_MOUNTS_MAX_ENTRIES;
        return request_stream(r, ls, list_state_free, list_produce);
}

typedef struct ShowState {
        Api *api;
        char *text;
        size_t len, off;
} ShowState;

static void show_state_free(void *p) {
        ShowState *ss = p;
        ss->api->stream_bytes -= ss->len;
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
        Api *a = api_of(r);
        char *text = NULL;
        size_t len = 0;
        ShowState *ss;
        User *u;
        int rv;

        if (!access_may_ask_for(r, req->uid))
                return request_refuse(r, EPERM, "only root may see another user's namespace");
        u = users_get(a->users, req->uid);
        if (!u)
                return request_refuse(r, ENOENT, "uid %u has no namespace", (unsigned) req->uid);
        rv = access_check_full_view(r, u);
        if (rv < 0)
                return rv;
        if (r->uid != 0 && a->stream_bytes > SHOW_BYTES_MAX)
                return request_refuse(r, EBUSY,
                                      "nsd is busy sending other mount tables, try again");
        rv = userns_read_mountinfo(u->ns, NSD_SHOW_TEXT_MAX, &text, &len);
        if (rv < 0)
                return request_refuse(r, -rv,
                                      "cannot read the mount table of uid %u's namespace: %s",
                                      (unsigned) req->uid, g_strerror(-rv));
        ss = g_new0(ShowState, 1);
        ss->api = a;
        ss->text = text;
        ss->len = len;
        a->stream_bytes += len;
        return request_stream(r, ss, show_state_free, show_produce);
}

/* ---- SHARES (1.5) ----------------------------------------------------------------------- */

_Static_assert(NSD_SHARE_NAME_MAX > SETUP_NAME_MAX, "a share's name and its NUL fit");
_Static_assert(NSD_SHARE_PATH_MAX > SETUP_PATH_MAX, "a share's path and its NUL fit");
_Static_assert(NSD_SHARE_PROPAGATION_MEMBERS == SHARE_PROPAGATION_MEMBERS &&
                       NSD_SHARE_PROPAGATION_HOST == SHARE_PROPAGATION_HOST &&
                       NSD_SHARE_PROPAGATION_BOTH == SHARE_PROPAGATION_BOTH &&
                       NSD_SHARE_PROPAGATION_PER_USER == SHARE_PROPAGATION_PER_USER,
               "Propagation= on the wire");

/* What the caller may see of one share, copied when the request came (a reload may replace
 * the configuration while the stream is sent). */
typedef struct SharesItem {
        char *name, *path;
        uint32_t propagation, max_members;
        int32_t mounts;      /* under its anchor; -1: unknown, or not shown to this caller */
        uint32_t peer_group; /* its anchor's; 0: unknown */
} SharesItem;

/* The state of one SHARES stream: at most SETUP_MAX_SHARES items and the member uids of one
 * share at a time (at most every namespace), whatever the caller. */
typedef struct SharesState {
        SharesItem *items;
        size_t n, next; /* the share being sent */
        GArray *uids;   /* its members still to send; NULL: its entry is not sent yet */
        guint next_uid;
        uint32_t sent;
        bool all_members; /* root: every member; anyone else: its own uid only */
} SharesState;

static void shares_state_free(void *p) {
        SharesState *ss = p;

        for (size_t i = 0; i < ss->n; i++) {
                g_free(ss->items[i].name);
                g_free(ss->items[i].path);
        }
        g_free(ss->items);
        if (ss->uids)
                g_array_unref(ss->uids);
        g_free(ss);
}

/* The members of it the caller may see, now. */
static GArray *shares_visible_uids(Request *r, const SharesState *ss, const SharesItem *it) {
        Api *a = api_of(r);
        GArray *uids;
        User *own;

        if (ss->all_members)
                return users_share_uids(a->users, it->name);
        uids = g_array_new(FALSE, FALSE, sizeof(uid_t));
        own = users_get(a->users, r->uid);
        if (access_may_see_share(r, own, it->name)) /* still: it may have been released */
                g_array_append_val(uids, own->uid);
        return uids;
}

static void shares_send_entry(Request *r, SharesState *ss, const SharesItem *it) {
        struct nsd_rep_shares_entry e;

        nsd_msg_init(&e.hdr, NSD_REP_SHARES_ENTRY, sizeof e, r->seq);
        e.propagation = it->propagation;
        e.max_members = it->max_members;
        e.members = users_share_members(api_of(r)->users, it->name);
        e.flags = ss->all_members ? 0 : NSD_SHARE_OWN_ONLY;
        e.n_uids = ss->uids->len;
        /* root's: read from nsd's pin namespace when the request came (handle_shares()) */
        e.mounts = it->mounts;
        e.peer_group = it->peer_group;
        g_strlcpy(e.name, it->name, sizeof e.name);
        g_strlcpy(e.path, it->path, sizeof e.path);
        if (request_reply(r, &e, sizeof e, NULL, 0) == 0)
                ss->sent++;
}

static void shares_send_members(Request *r, SharesState *ss) {
        struct nsd_rep_shares_members m;

        nsd_msg_init(&m.hdr, NSD_REP_SHARES_MEMBERS, sizeof m, r->seq);
        while (m.n < NSD_SHARES_MEMBERS_PER_PART && ss->next_uid < ss->uids->len) {
                m.members[m.n].uid = g_array_index(ss->uids, uid_t, ss->next_uid++);
                /* a member's clone joined the anchor's group when it was made (setup.h); whether
                 * it is still in it would need a look into its namespace: "unknown" */
                m.members[m.n].peer_group = 0;
                m.n++;
        }
        (void) request_reply(r, &m, sizeof m, NULL, 0);
}

/* One turn's worth of entries and member parts, then the end. */
static bool shares_produce(Request *r) {
        SharesState *ss = r->data;
        unsigned parts = SHARES_PARTS_PER_TURN, scans = SHARES_SCANS_PER_TURN;

        while (parts > 0 && ss->next < ss->n && request_can_send(r)) {
                if (!ss->uids) {
                        if (scans == 0)
                                break;
                        scans--;
                        ss->uids = shares_visible_uids(r, ss, &ss->items[ss->next]);
                        ss->next_uid = 0;
                        shares_send_entry(r, ss, &ss->items[ss->next]);
                } else
                        shares_send_members(r, ss);
                parts--;
                if (ss->next_uid >= ss->uids->len) { /* this share is done */
                        g_clear_pointer(&ss->uids, g_array_unref);
                        ss->next++;
                }
        }
        return stream_end(r, ss->next >= ss->n, NSD_REP_SHARES_END, ss->sent);
}

/* Every share of the configuration in force the caller may see (access.h), in the order of
 * nsd.conf; nothing of a share the caller may not see goes out, not even its name. */
static int handle_shares(Request *r) {
        Api *a = api_of(r);
        const SetupConf *conf = &a->config->setup;
        User *own = r->uid == 0 ? NULL : users_get(a->users, r->uid);
        SharesState *ss = g_new0(SharesState, 1);
        const Share *anchored[SETUP_MAX_SHARES];
        int32_t mounts[SETUP_MAX_SHARES];
        uint32_t groups[SETUP_MAX_SHARES];

        ss->all_members = access_sees_all_members(r);
        ss->items = g_new0(SharesItem, MAX(conf->n_shares, 1));
        for (size_t i = 0; i < conf->n_shares && ss->n < SETUP_MAX_SHARES; i++) {
                const Share *sh = &conf->shares[i];

                if (!access_may_see_share(r, own, sh->name))
                        continue;
                anchored[ss->n] = sh->propagation == SHARE_PROPAGATION_PER_USER ? NULL : sh;
                ss->items[ss->n++] = (SharesItem) { .name = g_strdup(sh->name),
                                                    .path = g_strdup(sh->path),
                                                    .propagation = (uint32_t) sh->propagation,
                                                    .max_members = sh->max_members,
                                                    .mounts = -1 };
        }
        if (ss->all_members && ss->n > 0) { /* root: what is under each anchor, one read */
                users_share_anchors(a->users, anchored, ss->n, mounts, groups);
                for (size_t i = 0; i < ss->n; i++) {
                        ss->items[i].mounts = mounts[i];
                        ss->items[i].peer_group = groups[i];
                }
        }
        return request_stream(r, ss, shares_state_free, shares_produce);
}

/* ---- VOLUMES (1.7) ---------------------------------------------------------------------- */

_Static_assert(NSD_VOLUME_UNKNOWN == VOLUME_OUTCOME_UNKNOWN &&
                       NSD_VOLUME_MOUNTED == VOLUME_OUTCOME_MOUNTED &&
                       NSD_VOLUME_FAILED == VOLUME_OUTCOME_FAILED &&
                       NSD_VOLUME_NOT_TRIED == VOLUME_OUTCOME_NOT_TRIED &&
                       NSD_VOLUME_USER == VOLUME_OUTCOME_USER_MANAGER &&
                       NSD_VOLUME_STOPPED == VOLUME_OUTCOME_STOPPED,
               "a volume's state on the wire");
_Static_assert(NSD_SHARE_NAME_MAX > SETUP_NAME_MAX, "a volume's name and its NUL fit");

/* The state of one VOLUMES stream: the uids whose namespaces the caller may see (at most every
 * namespace), and which volume of the current one is next. */
typedef struct VolumesState {
        GArray *uids; /* uid_t, sorted */
        guint next;   /* the uid being sent */
        size_t next_volume;
        uint32_t sent;
        char *mountinfo; /* the mount table of the uid being sent; NULL: not known */
} VolumesState;

static void volumes_state_free(void *p) {
        VolumesState *vs = p;
        g_array_unref(vs->uids);
        g_free(vs->mountinfo);
        g_free(vs);
}

static bool credential_waits(Api *a, uid_t uid, const char *volume);

static void volumes_send_entry(Request *r, VolumesState *vs, const User *u, const UserVolume *v) {
        struct nsd_rep_volumes_entry e;
        int count;
        unsigned group;

        nsd_msg_init(&e.hdr, NSD_REP_VOLUMES_ENTRY, sizeof e, r->seq);
        e.uid = u->uid;
        e.state = (uint32_t) v->outcome;
        e.error = v->err > 0 ? -v->err : 0;
        e.loop = v->loop;
        e.at_usec = v->at_usec;
        /* longer strings (a state file edited by hand) are cut, never sent unterminated */
        g_strlcpy(e.name, v->name, sizeof e.name);
        g_strlcpy(e.type, v->type, sizeof e.type);
        g_strlcpy(e.source, v->source, sizeof e.source);
        g_strlcpy(e.where, v->where, sizeof e.where);
        g_strlcpy(e.why, v->why ? v->why : "", sizeof e.why);
        g_strlcpy(e.options, v->options ? v->options : "", sizeof e.options);
        e.flags = (v->password ? NSD_VOLUME_PASSWORD : 0) | (v->ask ? NSD_VOLUME_ASK : 0) |
                  (v->on_request ? NSD_VOLUME_ON_REQUEST : 0) |
                  (v->at_login ? NSD_VOLUME_AT_LOGIN : 0) |
                  (v->release_last ? NSD_VOLUME_RELEASE_LAST : 0) |
                  (v->key_file ? NSD_VOLUME_KEY_FILE : 0);
        /* what is so now: a mount on its Where= (-ENOENT: none), a run-volume that waits */
        if (vs->mountinfo)
                e.flags |= NSD_VOLUME_NOW_KNOWN |
                           (mounts_under(vs->mountinfo, v->where, &count, &group) == 0
                                    ? NSD_VOLUME_NOW_MOUNTED
                                    : 0);
        if (v->password && credential_waits(api_of(r), u->uid, v->name))
                e.flags |= NSD_VOLUME_WAITING;
        if (v->held && v->outcome == VOLUME_OUTCOME_MOUNTED) { /* its setup's why is empty */
                e.flags |= NSD_VOLUME_HELD;
                g_strlcpy(e.why, v->held, sizeof e.why);
        }
        if (request_reply(r, &e, sizeof e, NULL, 0) == 0)
                vs->sent++;
}

/* One turn's worth of entries, then the end. */
static bool volumes_produce(Request *r) {
        VolumesState *vs = r->data;
        Api *a = api_of(r);
        unsigned budget = VOLUMES_ENTRIES_PER_TURN;

        while (budget > 0 && vs->next < vs->uids->len && request_can_send(r)) {
                User *u = users_get(a->users, g_array_index(vs->uids, uid_t, vs->next));

                if (!u || vs->next_volume >= u->n_volumes) { /* done, or released meanwhile */
                        vs->next++;
                        vs->next_volume = 0;
                        continue;
                }
                budget--;
                if (vs->next_volume == 0) { /* its mount table, once for all its volumes */
                        g_clear_pointer(&vs->mountinfo, g_free);
                        if (userns_read_mountinfo(u->ns, USER_MOUNTINFO_MAX, &vs->mountinfo, NULL) <
                            0)
                                vs->mountinfo = NULL; /* not known: said by the flags */
                }
                volumes_send_entry(r, vs, u, &u->volumes[vs->next_volume++]);
        }
        return stream_end(r, vs->next >= vs->uids->len, NSD_REP_VOLUMES_END, vs->sent);
}

/* The volumes of every namespace the caller may see (root: all; anyone else: its own), as
 * their setups left them. */
static int handle_volumes(Request *r) {
        VolumesState *vs = g_new0(VolumesState, 1);

        vs->uids = visible_uids(r);
        return request_stream(r, vs, volumes_state_free, volumes_produce);
}

/* ---- CREDENTIAL_GIVE, CREDENTIAL_TAKE (1.7) ---------------------------------------------- */

_Static_assert(NSD_CREDENTIAL_HOLD_SEC == USER_CREDENTIAL_HOLD_SEC, "the hold time");
_Static_assert(SETUP_MAX_VOLUMES <= 64, "User.credential_taken has a bit per volume");

/* TAKEs waiting for a password (NSD_CREDENTIAL_WAIT), per uid: at most this many, and two
 * fewer than the connections a user may have (MaxConnectionsPerUser=), so that the user's
 * nsctl unlock (and any nsctl) still connects while its volumes wait: with every connection
 * held by a waiting run-volume, a Key=ask volume could never be unlocked */
#define CREDENTIAL_WAITERS_MAX 8

static unsigned credential_waiters_max(const Api *a) {
        unsigned c = a->config->max_connections_per_user;

        return c > 2 ? MIN((unsigned) CREDENTIAL_WAITERS_MAX, c - 2) : 1;
}

/* The descriptor pam_nsjoin sends: a memfd sealed against writing, growing, shrinking and
 * more seals, of 1 to NSD_CREDENTIAL_MAX bytes. 0; -EINVAL with *ret_why when it is not; when
 * nsd cannot look at it (fcntl() failing but with EINVAL, which is what a descriptor that is
 * no memfd gives; fstat() failing at all), its own failure (errno_own_failure(): -EAGAIN when
 * it may pass) with *ret_why saying so, not blaming the descriptor. nsd reads none of it. */
static int credential_check(int fd, char **ret_why) {
        const int want = F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL;
        struct stat st;
        int seals = fcntl(fd, F_GET_SEALS), e = errno;

        if (seals < 0 && e != EINVAL)
                return why_set(ret_why, errno_own_failure(e),
                               "nsd could not check the password's descriptor (fcntl "
                               "F_GET_SEALS): %s%s",
                               g_strerror(e), errno_retry_hint(e));
        if (seals < 0 || (seals & want) != want)
                return why_set(ret_why, EINVAL,
                               "the password must come as a memfd sealed against writing, "
                               "growing, shrinking and further seals");
        if (fstat(fd, &st) < 0) {
                e = errno;
                return why_set(ret_why, errno_own_failure(e),
                               "nsd could not check the password's descriptor (fstat): %s%s",
                               g_strerror(e), errno_retry_hint(e));
        }
        if (!S_ISREG(st.st_mode) || st.st_size < 1 || st.st_size > NSD_CREDENTIAL_MAX)
                return why_set(ret_why, EINVAL,
                               "the password must have 1 to " G_STRINGIFY(
                                       NSD_CREDENTIAL_MAX) " bytes");
        return 0;
}

/* The index of u's volume name that takes the password, or -1. */
static ssize_t password_volume(const User *u, const char *name) {
        for (size_t i = 0; i < u->n_volumes; i++)
                if (u->volumes[i].password && strcmp(u->volumes[i].name, name) == 0)
                        return (ssize_t) i;
        return -1;
}

static GPtrArray *credential_waiters(Api *a, uid_t uid, bool create) {
        GPtrArray *w;

        if (!a->credential_waiters) {
                if (!create)
                        return NULL;
                a->credential_waiters = g_hash_table_new_full(NULL, NULL, NULL,
                                                              (GDestroyNotify) g_ptr_array_unref);
        }
        w = g_hash_table_lookup(a->credential_waiters, GUINT_TO_POINTER(uid));
        if (!w && create) {
                w = g_ptr_array_new_with_free_func((GDestroyNotify) request_unref);
                g_hash_table_insert(a->credential_waiters, GUINT_TO_POINTER(uid), w);
        }
        return w;
}

/* Does a TAKE of uid's volume wait (its client still there)? */
static bool credential_waits(Api *a, uid_t uid, const char *volume) {
        GPtrArray *w = credential_waiters(a, uid, false);

        for (guint k = 0; w && k < w->len; k++) {
                Request *t = g_ptr_array_index(w, k);

                if (t->conn && strcmp(MSG(t, struct nsd_req_credential_take)->volume, volume) == 0)
                        return true;
        }
        return false;
}

/* Why TAKE r of u's volume i gets nothing: err is user_credential_peek()'s. */
static int credential_refuse(Request *r, const User *u, size_t i, int err) {
        if (err == -EAGAIN)
                return request_refuse(r, EAGAIN,
                                      "volume '%s' is locked: no password of uid %u is held for "
                                      "it (log in with your password, or nsctl unlock %s)",
                                      u->volumes[i].name, (unsigned) u->uid, u->volumes[i].name);
        if (err == -EALREADY)
                return request_refuse(r, EALREADY,
                                      "the login password of uid %u was handed over for volume "
                                      "'%s' already (each volume gets it once; nsctl unlock %s "
                                      "gives it another)",
                                      (unsigned) u->uid, u->volumes[i].name, u->volumes[i].name);
        return request_refuse(r, errno_own_failure(err),
                              "nsd could not hand the password of volume '%s' over (%s)%s",
                              u->volumes[i].name, g_strerror(-err), errno_retry_hint(err));
}

/* Where the password a TAKE is answered with came from */
typedef enum CredentialFrom {
        CREDENTIAL_FROM_LOGIN,    /* the login password (GIVE) */
        CREDENTIAL_FROM_UNLOCK,   /* the user's own (UNLOCK) */
        CREDENTIAL_FROM_KEY_FILE, /* the volume's KeyFile=, read for this TAKE */
} CredentialFrom;

/* Answer TAKE r of u's volume i with fd (taken; user_credential_peek()'s, the user's own
 * from UNLOCK or the login password, or the key file's copy): did it go out (or is it
 * queued)? Only then is a held password used up; a lost one is left for the taker's next
 * try (a key file is read again). */
static bool credential_pass(Request *r, User *u, size_t i, int fd, CredentialFrom from) {
        static const char *const what[] = {
                [CREDENTIAL_FROM_LOGIN] = "login password",
                [CREDENTIAL_FROM_UNLOCK] = "password from nsctl unlock",
                [CREDENTIAL_FROM_KEY_FILE] = "key file's password",
        };
        struct nsd_msg_header rep;
        int q;

        nsd_msg_init(&rep, NSD_REP_CREDENTIAL_TAKE, sizeof rep, r->seq);
        q = request_reply(r, &rep, sizeof rep, &fd, 1);
        (void) close(fd);
        if (q < 0) {
                log_debug("The password of uid %u for volume '%s' did not reach pid %u (%s): "
                          "kept for its next try",
                          (unsigned) u->uid, u->volumes[i].name, (unsigned) r->pid, g_strerror(-q));
                return false;
        }
        if (from != CREDENTIAL_FROM_KEY_FILE)
                user_credential_handed(u, i, from == CREDENTIAL_FROM_UNLOCK);
        log_event_by(r->uid, LOG_INFO, 0, u->uid, "credential-taken",
                     "Handed uid %u's %s to pid %u for volume '%s'", (unsigned) u->uid, what[from],
                     (unsigned) r->pid, u->volumes[i].name);
        return true;
}

/* After a password came for u: answer the TAKEs of u that wait and now have one (the others
 * wait on; those whose client is gone are dropped). How many got one. */
static uint32_t credential_wake(Api *a, User *u) {
        GPtrArray *w = credential_waiters(a, u->uid, false);
        uint32_t answered = 0;

        for (guint k = 0; w && k < w->len;) {
                Request *t = g_ptr_array_index(w, k);
                const struct nsd_req_credential_take *tq = MSG(t, struct nsd_req_credential_take);
                ssize_t i = t->conn ? password_volume(u, tq->volume) : -1;
                bool unlocked;
                int fd;

                if (i < 0) { /* gone (a volume never goes while its namespace lives) */
                        g_ptr_array_remove_index(w, k);
                        continue;
                }
                fd = user_credential_peek(u, (size_t) i, &unlocked);
                if (fd == -EAGAIN || fd == -EALREADY) { /* nothing for that volume yet */
                        k++;
                        continue;
                }
                if (fd >= 0) {
                        answered += credential_pass(t, u, (size_t) i, fd,
                                                    unlocked ? CREDENTIAL_FROM_UNLOCK
                                                             : CREDENTIAL_FROM_LOGIN);
                        request_finish(t, 0);
                } else /* those that got it count, not a refusal */
                        request_finish(t, credential_refuse(t, u, (size_t) i, fd));
                g_ptr_array_remove_index(w, k);
        }
        if (w && w->len == 0)
                g_hash_table_remove(a->credential_waiters, GUINT_TO_POINTER(u->uid));
        return answered;
}

/* The descriptor of a GIVE or UNLOCK, checked and kept: >= 0, or the refusal's -errno. */
static int credential_keep(Request *r) {
        int fd, rv;

        if (r->n_fds != 1)
                return request_refuse(r, EINVAL, "no descriptor came");
        rv = credential_check(r->fds[0], &r->why);
        if (rv < 0)
                return rv;
        fd = fcntl(r->fds[0], F_DUPFD_CLOEXEC, 3);
        if (fd < 0) {
                int e = errno;

                return request_refuse(r, errno_own_failure(e),
                                      "nsd could not keep the password's descriptor (%s)%s",
                                      g_strerror(e), errno_retry_hint(e));
        }
        return fd;
}

static int handle_credential_give(Request *r) {
        const struct nsd_req_credential_give *req = MSG(r, struct nsd_req_credential_give);
        struct nsd_rep_credential_give rep;
        Api *a = api_of(r);
        size_t n;
        User *u;
        int fd;

        if (r->uid != 0)
                return request_refuse(r, EPERM,
                                      "only root (pam_nsjoin) gives a login password (nsctl "
                                      "unlock gives a volume's)");
        u = users_get(a->users, req->uid);
        if (!u)
                return request_refuse(r, ENOENT, "nsd holds no namespace of uid %u",
                                      (unsigned) req->uid);
        n = user_password_volumes(u);
        if (n == 0)
                return request_refuse(r, ENOENT,
                                      "no volume of uid %u's namespace takes a login password",
                                      (unsigned) req->uid);
        fd = credential_keep(r);
        if (fd < 0)
                return fd;
        user_credential_hold(u, fd);
        log_event(LOG_INFO, 0, u->uid, "credential-received",
                  "Received uid %u's login password from pid %u for %zu volume%s (held in memory "
                  "for at most %d s, never read or written by nsd)",
                  (unsigned) u->uid, (unsigned) r->pid, n, n == 1 ? "" : "s",
                  NSD_CREDENTIAL_HOLD_SEC);
        nsd_msg_init(&rep.hdr, NSD_REP_CREDENTIAL_GIVE, sizeof rep, r->seq);
        rep.volumes = (uint32_t) n;
        rep.waiting = credential_wake(a, u); /* the run-volume processes that wait for it */
        (void) request_reply(r, &rep, sizeof rep, NULL, 0);
        return 0;
}

/* u's volume `volume` that takes a password, for a request of u itself from a full view:
 * its index, or the refusal's -errno. */
static ssize_t own_password_volume(Request *r, User *u, const char *volume) {
        ssize_t i;
        int rv;

        if (!u)
                return request_refuse(r, ENOENT, "nsd holds no namespace of uid %u",
                                      (unsigned) r->uid);
        rv = access_check_full_view(r, u);
        if (rv < 0)
                return rv;
        i = password_volume(u, volume);
        if (i < 0)
                return request_refuse(r, ENOENT,
                                      "your namespace has no volume '%s' that takes a password "
                                      "(nsctl volumes)",
                                      volume);
        return i;
}

/* TAKE r of u's volume i, which has a KeyFile=: its bytes in a sealed memfd (policy/
 * conf-files.h), read now, as root; a key file that is missing or untrusted refuses the TAKE
 * with what is wrong (and says so in the journal: the administrator's to mend). */
static int credential_from_key_file(Request *r, User *u, size_t i) {
        g_autofree char *why = NULL;
        int fd = config_key_file_memfd(u->volumes[i].key_file, NSD_CREDENTIAL_MAX, &why);

        /* said once per reason: the user's unit asks again every few seconds until the
         * administrator mends it */
        if (fd < 0) {
                log_event(user_key_file_refused(u, i, why) ? LOG_WARNING : LOG_DEBUG, fd, u->uid,
                          "credential-key-file-refused",
                          "Cannot hand volume '%s' of uid %u its key file: %s", u->volumes[i].name,
                          (unsigned) u->uid, why);
                return request_refuse(r, errno_own_failure(fd),
                                      "nsd could not hand volume '%s' its key file: %s%s",
                                      u->volumes[i].name, why, errno_retry_hint(fd));
        }
        (void) user_key_file_refused(u, i, NULL);
        (void) credential_pass(r, u, i, fd, CREDENTIAL_FROM_KEY_FILE);
        return 0;
}

static int handle_credential_take(Request *r) {
        const struct nsd_req_credential_take *req = MSG(r, struct nsd_req_credential_take);
        Api *a = api_of(r);
        User *u = users_get(a->users, r->uid);
        ssize_t i = own_password_volume(r, u, req->volume);
        GPtrArray *w;
        bool unlocked;
        int fd;

        if (i < 0)
                return (int) i;
        if (u->volumes[i].key_file) /* read for each TAKE: nothing held, nothing to wait for */
                return credential_from_key_file(r, u, (size_t) i);
        fd = user_credential_peek(u, (size_t) i, &unlocked);
        if (fd >= 0) {
                (void) credential_pass(r, u, (size_t) i, fd,
                                       unlocked ? CREDENTIAL_FROM_UNLOCK : CREDENTIAL_FROM_LOGIN);
                return 0;
        }
        /* with WAIT, nothing for it yet (or only a login password it had: a wrong one) waits
         * for the next login or nsctl unlock */
        if (!(req->flags & NSD_CREDENTIAL_WAIT) || (fd != -EAGAIN && fd != -EALREADY))
                return credential_refuse(r, u, (size_t) i, fd);
        w = credential_waiters(a, u->uid, true);
        for (guint k = w->len; k-- > 0;) /* those whose client is gone */
                if (!((Request *) g_ptr_array_index(w, k))->conn)
                        g_ptr_array_remove_index(w, k);
        if (w->len >= credential_waiters_max(a))
                return request_refuse(r, EBUSY,
                                      "%u requests of uid %u wait for a password already (at "
                                      "most %u: two connections fewer than MaxConnectionsPerUser= "
                                      "allows)",
                                      w->len, (unsigned) r->uid, credential_waiters_max(a));
        g_ptr_array_add(w, request_ref(r));
        log_debug("Pid %u of uid %u waits for a password for volume '%s'", (unsigned) r->pid,
                  (unsigned) r->uid, req->volume);
        return REQUEST_PENDING;
}

static int handle_credential_unlock(Request *r) {
        const struct nsd_req_credential_unlock *req = MSG(r, struct nsd_req_credential_unlock);
        struct nsd_rep_credential_unlock rep;
        Api *a = api_of(r);
        User *u = users_get(a->users, r->uid);
        ssize_t i = own_password_volume(r, u, req->volume);
        int fd;

        if (i < 0)
                return (int) i;
        if (u->volumes[i].key_file)
                return request_refuse(r, EINVAL,
                                      "volume '%s' takes its password from its key file "
                                      "(KeyFile= of nsd.conf), not from nsctl unlock",
                                      req->volume);
        fd = credential_keep(r);
        if (fd < 0)
                return fd;
        user_credential_unlock(u, (size_t) i, fd);
        log_event_by(r->uid, LOG_INFO, 0, u->uid, "credential-unlocked",
                     "Received a password from pid %u of uid %u for its volume '%s' (held in "
                     "memory for at most %d s, never read or written by nsd)",
                     (unsigned) r->pid, (unsigned) u->uid, req->volume, NSD_CREDENTIAL_HOLD_SEC);
        nsd_msg_init(&rep.hdr, NSD_REP_CREDENTIAL_UNLOCK, sizeof rep, r->seq);
        rep.waiting = credential_wake(a, u);
        (void) request_reply(r, &rep, sizeof rep, NULL, 0);
        return 0;
}

void api_done(Api *a) {
        g_clear_pointer(&a->credential_waiters, g_hash_table_unref);
        /* the Start=login starts under way end with nsd's rooms (-ECANCELED), on their own;
         * those waiting to ask again end here */
        a->stopping = true;
        if (a->autostarts) {
                GHashTableIter it;
                gpointer v;

                g_hash_table_iter_init(&it, a->autostarts);
                while (g_hash_table_iter_next(&it, NULL, &v))
                        if (((AutoStart *) v)->timer) {
                                g_hash_table_iter_remove(&it);
                                autostart_free(v);
                        }
                g_clear_pointer(&a->autostarts, g_hash_table_unref);
        }
}

/* ---- RELEASE ---------------------------------------------------------------------------- */

static void count_release(bool forced) {
        metrics_count_release(forced ? NSD_METRICS_RELEASE_FORCED : NSD_METRICS_RELEASE_ASKED);
}

static void reply_release(Request *r) {
        struct nsd_msg_header rep;

        nsd_msg_init(&rep, NSD_REP_RELEASE, sizeof rep, r->seq);
        (void) request_reply(r, &rep, sizeof rep, NULL, 0);
}

/* A release waiting for the namespace's volumes to be unmounted. */
typedef struct ReleaseWait {
        Request *r;
        bool forced; /* sessions were dropped */
} ReleaseWait;

static void on_released(int rv, const char *why, void *userdata) {
        ReleaseWait *w = userdata;
        Request *r = w->r;

        if (rv == 0)
                count_release(w->forced);
        g_free(w);
        if (r->conn && !r->finished) {
                if (rv == 0)
                        reply_release(r);
                else {
                        g_free(r->why);
                        r->why = g_strdup(why);
                }
                request_finish(r, rv);
        }
        request_unref(r);
}

static int handle_release(Request *r) {
        const struct nsd_req_release *req = MSG(r, struct nsd_req_release);
        g_autofree char *reason = NULL;
        ReleaseWait *w;
        bool forced;
        User *u;
        int rv;

        if (!access_may_ask_for(r, req->uid))
                return request_refuse(r, EPERM, "only root may release another user's namespace");
        if (r->uid != 0 && (req->flags & NSD_RELEASE_FORCE))
                return request_refuse(r, EPERM, "only root may force a release");
        u = users_get(api_of(r)->users, req->uid);
        if (!u && users_is_pending(api_of(r)->users, req->uid))
                return request_refuse(r, NSD_ERRNO_NOT_YET,
                                      "the namespace of uid %u is kept but not "
                                      "adopted yet; retry",
                                      (unsigned) req->uid);
        if (!u)
                return request_refuse(r, ENOENT, "uid %u has no namespace", (unsigned) req->uid);
        rv = access_check_full_view(r, u);
        if (rv < 0)
                return rv;
        if (u->sessions->len > 0 && !(req->flags & NSD_RELEASE_FORCE))
                return request_refuse(r, EBUSY, "%u live session%s; use --force", u->sessions->len,
                                      u->sessions->len == 1 ? "" : "s");

        reason = g_strdup_printf("asked by uid %u pid %u%s%s", (unsigned) r->uid, (unsigned) r->pid,
                                 (req->flags & NSD_RELEASE_FORCE) ? ", forced" : "",
                                 u->sessions->len > 0 ? ", sessions dropped" : "");
        forced = u->sessions->len > 0;
        w = g_new0(ReleaseWait, 1);
        w->r = request_ref(r);
        w->forced = forced;
        rv = users_release(api_of(r)->users, u, reason, r->uid != 0, on_released, w, &r->why);
        if (rv > 0)
                return REQUEST_PENDING; /* its volumes are being unmounted: on_released() */
        request_unref(r);               /* the callback's: it will not be called */
        g_free(w);
        if (rv < 0)
                return rv; /* nothing changed: the namespace is kept, with its sessions */
        count_release(forced);
        reply_release(r);
        return 0;
}

/* ---- VOLUME_START, VOLUME_STOP (1.11) ------------------------------------------------------ */

static void reply_volume_ctl(Request *r, const UserVolume *v, bool changed) {
        const struct nsd_msg_header *h = MSG(r, struct nsd_msg_header);
        struct nsd_rep_volume_ctl rep;

        nsd_msg_init(&rep.hdr, (uint16_t) (h->type | NSD_REPLY_BIT), sizeof rep, r->seq);
        rep.state = (uint32_t) v->outcome;
        rep.loop = v->loop;
        rep.changed = changed ? 1 : 0;
        (void) request_reply(r, &rep, sizeof rep, NULL, 0);
}

static void on_volume_ctl_done(int rv, const char *why, const UserVolume *v, bool changed,
                               void *userdata) {
        Request *r = userdata;

        if (r->conn && !r->finished) {
                if (rv == 0 && v)
                        reply_volume_ctl(r, v, changed);
                else {
                        if (rv == 0)
                                rv = -ENOENT;
                        g_free(r->why);
                        r->why = g_strdup(why);
                }
                request_finish(r, rv);
        }
        request_unref(r);
}

/* The namespace a VOLUME_START or VOLUME_STOP is for, checked: the caller's own (from inside
 * it or the initial namespace, never a sandbox) or root's asking for anyone's. */
static int volume_ctl_user(Request *r, const char *verb, User **ret) {
        const struct nsd_req_volume_ctl *req = MSG(r, struct nsd_req_volume_ctl);
        Api *a = api_of(r);
        User *u;

        if (!access_may_ask_for(r, req->uid))
                return request_refuse(r, EPERM, "only root may %s another user's volume", verb);
        u = users_get(a->users, req->uid);
        if (!u && users_is_pending(a->users, req->uid))
                return request_refuse(r, NSD_ERRNO_NOT_YET,
                                      "the namespace of uid %u is kept but not adopted yet; retry",
                                      (unsigned) req->uid);
        if (!u)
                return request_refuse(r, ENOENT, "uid %u has no namespace (log in first)",
                                      (unsigned) req->uid);
        *ret = u;
        return access_check_full_view(r, u);
}

/* A start or stop that had nothing to do (rv 0) answers with the volume as it is. */
static int volume_ctl_end(Request *r, User *u, int rv) {
        const struct nsd_req_volume_ctl *req = MSG(r, struct nsd_req_volume_ctl);

        if (rv > 0)
                return REQUEST_PENDING; /* on_volume_ctl_done() */
        request_unref(r);               /* the callback's: it will not be called */
        if (rv < 0)
                return rv;
        for (size_t i = 0; i < u->n_volumes; i++)
                if (g_str_equal(u->volumes[i].name, req->volume)) {
                        reply_volume_ctl(r, &u->volumes[i], false);
                        return 0;
                }
        return request_refuse(r, ENOENT, "no volume '%s'", req->volume);
}

/* VOLUME_START (once its namespace is managed) and VOLUME_STOP */
static int handle_volume_ctl(Request *r) {
        const struct nsd_req_volume_ctl *req = MSG(r, struct nsd_req_volume_ctl);
        bool start = req->hdr.type == NSD_REQ_VOLUME_START;
        Api *a = api_of(r);
        JoinState *st = r->data;
        g_autofree char *why = NULL;
        User *u = NULL;
        int rv;

        rv = volume_ctl_user(r, start ? "start" : "stop", &u);
        if (rv < 0)
                return rv;
        if (start && !(st && st->asked)) { /* the plan needs the user's home and groups */
                join_state(r)->uid = req->uid;
                r->next = handle_volume_ctl;
                rv = policy_uid_identity(a->policy, req->uid, r->uid, on_join_identity,
                                         request_ref(r));
                if (rv == -EINPROGRESS)
                        return REQUEST_PENDING;
                request_unref(r); /* the callback's: it will not be called */
                return why_set(&r->why, rv, "cannot look up who uid %u is: %s", (unsigned) req->uid,
                               g_strerror(-rv));
        }
        why = g_strdup_printf("asked by uid %u pid %u", (unsigned) r->uid, (unsigned) r->pid);
        if (start)
                rv = users_volume_start(a->users, u, req->volume, &st->who, r->uid != 0, why,
                                        on_volume_ctl_done, request_ref(r), &r->why);
        else
                rv = users_volume_stop(a->users, u, req->volume, r->uid != 0, why,
                                       on_volume_ctl_done, request_ref(r), &r->why);
        return volume_ctl_end(r, u, rv);
}

static int handle_volume_start(Request *r) {
        const struct nsd_req_volume_ctl *req = MSG(r, struct nsd_req_volume_ctl);

        return request_need_managed(r, req->uid, handle_volume_ctl);
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
                                private_watch_exempt(api_of(r)->private_watch, mnt_id);
                        nsd_msg_init(&rep, NSD_REP_HIDE, sizeof rep, r->seq);
                        (void) request_reply(r, &rep, sizeof rep, NULL, 0);
                } else {
                        g_free(r->why);
                        r->why = g_strdup(why);
                }
                request_finish(r, rv);
        } else if (rv == 0 && (req->flags & NSD_HIDE_UNHIDE))
                private_watch_exempt(api_of(r)->private_watch, mnt_id);
        request_unref(r);
}

static int hide_continue(Request *r) {
        const struct nsd_req_hide *req = MSG(r, struct nsd_req_hide);
        Api *a = api_of(r);
        int rv;

        rv = access_check_full_view(r, users_get(a->users, req->uid));
        if (rv < 0)
                return rv;
        rv = private_supported(a->kernel_features, &r->why);
        if (rv < 0)
                return rv;
        rv = private_hide_start(a->policy, a->children, a->config->path_walk_timeout_usec, r->uid,
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

        if (!access_may_ask_for(r, req->uid))
                return request_refuse(r, EPERM, "only root may %s a mount for another user",
                                      (req->flags & NSD_HIDE_UNHIDE) ? "unhide" : "hide");
        return request_need_managed(r, req->uid, hide_continue);
}

/* ---- refusals ----------------------------------------------------------------------------- */

void api_refused(Request *r, int error) {
        const char *why = r->why ? r->why : g_strerror(abs(error));
        /* "not yet available": a login asks again every 50 ms to 1 s, and root's lines are
         * not rate limited (the store logs its own progress); a user nsd does not manage is
         * no fault; anything else kept someone out */
        int level = abs(error) == NSD_ERRNO_NOT_YET       ? LOG_DEBUG
                    : abs(error) == NSD_ERRNO_NOT_MANAGED ? LOG_NOTICE
                                                          : LOG_WARNING;

        if (r->type->type == NSD_REQ_JOIN || r->type->type == NSD_REQ_JOIN_SESSION)
                count_join(r, error);
        if (r->type->type == NSD_REQ_JOIN) {
                const struct nsd_req_join *req = MSG(r, struct nsd_req_join);
                log_event_by_reason(r->uid, level, error, req->uid, "join-refused", why,
                                    "Refused JOIN for uid %u by pid %u (uid %u): %s",
                                    (unsigned) req->uid, (unsigned) r->pid, (unsigned) r->uid, why);
        } else if (r->type->type == NSD_REQ_JOIN_SESSION) {
                const struct nsd_req_join_session *req = MSG(r, struct nsd_req_join_session);
                log_event_by_reason(r->uid, level, error, req->uid, "join-refused", why,
                                    "Refused JOIN for uid %u by pid %u (uid %u), with a session "
                                    "(pid %u, '%s'): %s",
                                    (unsigned) req->uid, (unsigned) r->pid, (unsigned) r->uid,
                                    (unsigned) req->pid, req->service, why);
        }
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
        [NSD_REQ_METRICS] = handle_metrics,
        [NSD_REQ_SHARES] = handle_shares,
        [NSD_REQ_VOLUMES] = handle_volumes,
        [NSD_REQ_CREDENTIAL_GIVE] = handle_credential_give,
        [NSD_REQ_CREDENTIAL_UNLOCK] = handle_credential_unlock,
        [NSD_REQ_CREDENTIAL_TAKE] = handle_credential_take,
        [NSD_REQ_VOLUME_START] = handle_volume_start,
        [NSD_REQ_VOLUME_STOP] = handle_volume_ctl,
};
