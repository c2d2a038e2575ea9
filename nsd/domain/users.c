/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* users.c: the registry of users and sessions, see users.h. */
#include "domain/users.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/errno-util.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/table.h"
#include "cleanup.h"
#include "domain/linger.h"
#include "domain/session.h"
#include "domain/user.h"
#include "domain/volume-release.h"
#include "nsd-protocol.h"
#include "policy/conf.h"
#include "store/fdstore.h"
#include "store/mounts.h"
#include "store/nsprocs.h"
#include "store/pending.h"
#include "store/pinstore.h"
#include "store/state.h"
#include "store/userns.h"
#include "volume-options.h"

struct Users {
        const Config *config;
        PinStore *pins;
        FdStore *fdstore;
        StateDir *state;
        Pending *pending;
        Linger *linger;
        GHashTable *users;    /* GUINT_TO_POINTER(uid) -> User* (owned) */
        GHashTable *sessions; /* uint64_t* id -> Session* (owned) */
        /* sessions restored at start whose uid has no namespace held yet (pending): uid ->
         * GPtrArray of Session* (owned by sessions), attached by users_add() */
        GHashTable *waiting;
        uint64_t next_session_id;
        unsigned max_namespaces;
        void (*changed)(void *userdata);
        void *changed_userdata;
        bool starting; /* in users_start() */
        Children *children;
        GHashTable *creating;   /* uid -> Creation*: namespaces being set up (not owned) */
        GHashTable *refused;    /* uid -> Refusal*: a setup that failed, for a while */
        GHashTable *releasing;  /* uid -> Releasing*: block volumes being unmounted (the
                                * child's callback frees it) */
        GHashTable *volume_ops; /* uid -> VolumeOp*: one volume being started or stopped (the
                                 * child's callback frees it) */
        /* Release=last-session: uid -> IdleCheck* (owned): a user without sessions whose such
         * volumes are mounted, looked at until no process is left in its namespace */
        GHashTable *idle;
        char *proc_dir;         /* where the look for processes looks ("/proc") */
        uint64_t self_ns_inode; /* nsd's own mount namespace: not looked at */
};

/* A look at a user's namespace for Release=last-session volumes (volumes_idle_arm()). */
typedef struct IdleCheck {
        Users *reg; /* NULL: the registry is gone (a scan under way reports to nobody) */
        uid_t uid;
        guint timer;
        bool busy; /* a scan or a stop under way */
} IdleCheck;

/* A VOLUME_START or VOLUME_STOP under way (users_volume_start(), users_volume_stop()). */
typedef struct VolumeOp {
        Users *reg; /* NULL: the registry is gone */
        uid_t uid;
        char *name;
        char *why; /* who asked, for the log */
        UsersVolumeDone done;
        void *userdata;
} VolumeOp;

static void volume_op_free(VolumeOp *op) {
        g_free(op->name);
        g_free(op->why);
        g_free(op);
}

/* A release waiting for its namespace's block volumes to be unmounted (volume-release.h). */
typedef struct Releasing {
        Users *reg; /* NULL: the registry is gone */
        uid_t uid;
        char *why;
        UsersReleaseDone done;
        void *userdata;
} Releasing;

static void releasing_free(Releasing *rl) {
        g_free(rl->why);
        g_free(rl);
}

/* A namespace being set up (users_join_start()), and who waits for it. */
typedef struct Waiter {
        UsersJoinDone done;
        void *userdata;
} Waiter;

typedef struct Creation {
        Users *reg; /* NULL: the registry is gone, throw the namespace away */
        uid_t uid;
        UserNs *ns;
        int out_fd; /* the init scripts' output */
        char generation[17];
        char **shares;   /* the shares it is given (NULL-terminated): members while it is made */
        GArray *waiters; /* Waiter */
} Creation;

typedef struct Refusal {
        int r;
        char *why;
        int64_t until_usec; /* CLOCK_MONOTONIC */
        char generation[17];
} Refusal;

static void refusal_free(gpointer p) {
        Refusal *f = p;
        g_free(f->why);
        g_free(f);
}

static void users_changed(Users *reg) {
        if (reg->changed)
                reg->changed(reg->changed_userdata);
}

/* An IdleCheck leaves the table: its timer goes; one busy (a scan or a stop under way) is
 * freed by that callback, which finds reg NULL. */
static void idle_check_drop(gpointer p) {
        IdleCheck *ic = p;

        g_clear_handle_id(&ic->timer, g_source_remove);
        ic->reg = NULL;
        if (!ic->busy)
                g_free(ic);
}

/* ---- linger reports here ----------------------------------------------------------------- */

static User *linger_lookup(uid_t uid, void *userdata) {
        return users_get(userdata, uid);
}

/* A linger release that waited for its volumes (users_release() looks at a failed one
 * again later). */
static void linger_released(int r, const char *why, void *userdata) {
        (void) why;
        (void) userdata;
        if (r == 0)
                metrics_count_release(NSD_METRICS_RELEASE_LINGER);
}

static int linger_release(User *u, const char *why, void *userdata) {
        int r = users_release(userdata, u, why, false, linger_released, userdata, NULL);

        if (r == 0)
                metrics_count_release(NSD_METRICS_RELEASE_LINGER);
        return r > 0 ? 0 : r;
}

static const LingerOps linger_ops = {
        .lookup = linger_lookup,
        .release = linger_release,
};

/* ---- the registry ------------------------------------------------------------------------ */

static void user_free_p(gpointer p) {
        user_free(p);
}

static void session_free_p(gpointer p) {
        session_free(p);
}

Users *users_new(const UsersSetup *setup) {
        Users *reg = g_new0(Users, 1);

        reg->config = setup->config;
        reg->pins = setup->pins;
        reg->fdstore = setup->fdstore;
        reg->state = setup->state;
        reg->pending = setup->pending;
        reg->linger = linger_new(setup->config, setup->proc_dir, &linger_ops, reg);
        reg->users = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, user_free_p);
        reg->sessions = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, session_free_p);
        reg->waiting = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                             (GDestroyNotify) g_ptr_array_unref);
        reg->next_session_id = ((uint64_t) g_random_int() << 32 | g_random_int()) | 1;
        reg->max_namespaces = setup->config->max_namespaces;
        reg->children = setup->children;
        reg->creating = g_hash_table_new(g_direct_hash, g_direct_equal);
        reg->refused = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, refusal_free);
        reg->releasing = g_hash_table_new(g_direct_hash, g_direct_equal);
        reg->volume_ops = g_hash_table_new(g_direct_hash, g_direct_equal);
        reg->idle = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, idle_check_drop);
        reg->proc_dir = g_strdup(setup->proc_dir ? setup->proc_dir : "/proc");
        {
                struct stat st;

                if (stat("/proc/self/ns/mnt", &st) >= 0)
                        reg->self_ns_inode = (uint64_t) st.st_ino;
        }
        return reg;
}

void users_free(Users *reg) {
        GHashTableIter it;
        gpointer v;

        if (!reg)
                return;
        /* the namespaces nothing keeps after nsd (no pin, not in the fd store) leave
         * pam_nsjoin's record: they may end with nsd, and their inode be reused */
        g_hash_table_iter_init(&it, reg->users);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const User *u = v;
                if (!u->ns->pinned && !user_is_stored(u))
                        state_made_remove(reg->state, u->ns->ns_inode, u->ns->root_fd);
        }
        /* setups under way: their children (base/child.c's, freed by the owner of children)
         * report to nobody; their namespaces are thrown away then */
        TABLE_DESTROY_ORPHANING(reg->creating, Creation, reg);
        g_hash_table_destroy(reg->refused);
        /* releases waiting for their volumes: the namespaces stay as they are */
        TABLE_DESTROY_ORPHANING(reg->releasing, Releasing, reg);
        TABLE_DESTROY_ORPHANING(reg->volume_ops, VolumeOp, reg);
        g_hash_table_destroy(reg->idle);
        g_free(reg->proc_dir);
        linger_free(reg->linger);
        /* sessions first (they point into users) */
        g_hash_table_destroy(reg->waiting);
        g_hash_table_iter_init(&it, reg->users);
        while (g_hash_table_iter_next(&it, NULL, &v))
                g_ptr_array_set_size(((User *) v)->sessions, 0);
        g_hash_table_destroy(reg->sessions);
        g_hash_table_destroy(reg->users);
        g_free(reg);
}

void users_set_changed(Users *reg, void (*fn)(void *userdata), void *userdata) {
        reg->changed = fn;
        reg->changed_userdata = userdata;
}

void users_set_max_namespaces(Users *reg, unsigned max) {
        reg->max_namespaces = max;
}

unsigned users_max_namespaces(const Users *reg) {
        return reg->max_namespaces;
}

/* ---- users ------------------------------------------------------------------------------- */

User *users_get(const Users *reg, uid_t uid) {
        return g_hash_table_lookup(reg->users, GUINT_TO_POINTER(uid));
}

unsigned users_count(const Users *reg) {
        return g_hash_table_size(reg->users);
}

bool users_is_pending(const Users *reg, uid_t uid) {
        return pending_contains(reg->pending, uid);
}

static void session_attach(Users *reg, Session *sess, User *u) {
        sess->user = u;
        g_ptr_array_add(u->sessions, sess);
        linger_cancel(reg->linger, u->uid);
}

/* u's namespace is held now: the restored sessions that waited for it join it. */
static void attach_waiting(Users *reg, User *u) {
        GPtrArray *w = g_hash_table_lookup(reg->waiting, GUINT_TO_POINTER(u->uid));

        if (!w)
                return;
        for (guint i = 0; i < w->len; i++)
                session_attach(reg, g_ptr_array_index(w, i), u);
        log_info("%u restored session%s of uid %u joined its namespace", w->len,
                 w->len == 1 ? "" : "s", (unsigned) u->uid);
        g_hash_table_remove(reg->waiting, GUINT_TO_POINTER(u->uid));
}

/* The volumes of plan as the run left them, for the User (user.h). */
static UserVolume *volumes_of(const SetupPlan *plan, size_t *ret_n) {
        size_t n = setup_plan_n_volumes(plan);
        UserVolume *vols = n > 0 ? g_new0(UserVolume, n) : NULL;
        int64_t now = g_get_real_time();

        for (size_t i = 0; i < n; i++) {
                const Volume *c = setup_plan_volume(plan, i);
                const char *why;

                vols[i].name = g_strdup(c->name);
                vols[i].type = g_strdup(c->type);
                vols[i].source = g_strdup(setup_plan_volume_source(plan, i));
                vols[i].where = g_strdup(setup_plan_volume_where(plan, i));
                vols[i].outcome = (int) setup_plan_volume_outcome(plan, i, &vols[i].err, &why,
                                                                  &vols[i].loop);
                vols[i].why = g_strdup(why);
                if (c->kind == VOLUME_KIND_FUSE) {
                        const VolumeTypeOptions *t = volume_type_options_find(c->type);

                        vols[i].options = volume_options_text(c);
                        vols[i].password = t && t->takes_password;
                        vols[i].ask = vols[i].password && c->key == VOLUME_KEY_ASK;
                        if (vols[i].password)
                                vols[i].key_file = g_strdup(setup_plan_volume_key_file(plan, i));
                }
                vols[i].on_request = c->start == VOLUME_START_REQUEST;
                vols[i].at_login = c->kind != VOLUME_KIND_FUSE && c->start == VOLUME_START_LOGIN;
                vols[i].release_last = c->release == VOLUME_RELEASE_AT_LAST_SESSION;
                vols[i].at_usec = now > 0 ? (uint64_t) now : 0;
        }
        *ret_n = n;
        return vols;
}

/* users_add(), for a namespace made with the setup of generation (NULL: none known) and
 * plan (its volumes; NULL: none). */
static User *users_add_made(Users *reg, UserNs *ns, GArray *baseline, const char *generation,
                            char **shares /* taken */, const SetupPlan *plan, UserAddFlags flags) {
        User *u = user_new(ns, baseline, reg->fdstore, reg->state);

        g_hash_table_replace(reg->users, GUINT_TO_POINTER(u->uid), u);
        /* before the namespace is handed out: pam_nsjoin's record (state.h) */
        state_made_add(reg->state, ns->ns_inode, ns->root_fd);
        u->setup_generation = g_strdup(generation);
        u->shares = shares;
        if (plan)
                u->volumes = volumes_of(plan, &u->n_volumes);
        if (flags & USER_ADD_CREATED)
                user_state_write(u);
        else {
                if (!u->baseline)
                        u->baseline = user_state_baseline(reg->state, ns);
                u->setup_generation = user_state_generation(reg->state, ns);
                u->shares = user_state_shares(reg->state, ns);
                u->owner = user_state_owner(reg->state, ns);
                u->n_volumes = user_state_volumes(reg->state, ns, &u->volumes);
        }
        /* at start, a descriptor the store passed back is looked at by its adoption first */
        if ((flags & USER_ADD_FD_STORED) || !user_store_passed(u))
                user_store(u);
        attach_waiting(reg, u);
        return u;
}

User *users_add(Users *reg, UserNs *ns, GArray *baseline, UserAddFlags flags) {
        return users_add_made(reg, ns, baseline, NULL, NULL, NULL, flags);
}

static NsSetup config_ns_setup(const Config *cfg) {
        return (NsSetup) {
                .propagation_private = cfg->propagation_private,
        };
}

/* -NSD_ERRNO_NOT_YET for a pending uid, with why. */
static int why_pending(const Users *reg, uid_t uid, char **ret_why) {
        if (pending_store_ready(reg->pending))
                return why_set(ret_why, NSD_ERRNO_NOT_YET,
                               "the namespace of uid %u is pinned but not adopted yet; retry",
                               (unsigned) uid);
        return why_set(ret_why, NSD_ERRNO_NOT_YET,
                       "nsd's pin store is not available yet, so the namespace of uid %u is not "
                       "known; retry",
                       (unsigned) uid);
}

/* What users_join() and users_join_start() check before making a namespace: 0 and *ret when
 * uid has one, 1 when one may be made, -errno with why otherwise. */
static int join_check(Users *reg, uid_t uid, bool create, User **ret, char **ret_why) {
        User *u;

        u = users_get(reg, uid);
        if (u) {
                *ret = u;
                return 0;
        }
        if (users_is_pending(reg, uid)) {
                /* one more try now (nothing happens before the next retry is due); what it
                 * adopts arrives through on_adopt() */
                (void) pending_retry_due(reg->pending, NULL);
                u = users_get(reg, uid);
                if (u) {
                        *ret = u;
                        return 0;
                }
        }
        if (users_is_pending(reg, uid)) {
                /* a login retries this every 50 ms to 1 s: debug, the store logs its own
                 * progress */
                log_debug("JOIN for uid %u: not yet available (%s)", (unsigned) uid,
                          pending_store_ready(reg->pending)
                                  ? "its kept namespace is not adopted yet"
                                  : "the pin store is not available yet");
                return why_pending(reg, uid, ret_why);
        }
        if (!create)
                return why_set(ret_why, ENOENT, "uid %u has no namespace yet", (unsigned) uid);
        if (users_count(reg) + g_hash_table_size(reg->creating) >= reg->max_namespaces) {
                if (reg->max_namespaces < reg->config->max_namespaces)
                        return why_set(ret_why, EUSERS,
                                       "nsd keeps at most %u namespaces (MaxNamespaces=%u, "
                                       "capped by what this host allows, see nsd's log)",
                                       reg->max_namespaces, reg->config->max_namespaces);
                return why_set(ret_why, EUSERS, "nsd keeps at most %u namespaces (MaxNamespaces=)",
                               reg->max_namespaces);
        }
        return 1;
}

/* userns_create*()'s -EAGAIN as the client's answer. */
static int why_not_now(const Users *reg, uid_t uid, char **ret_why) {
        /* userns_create() logged what failed; a login retries */
        if (users_is_pending(reg, uid))
                return why_pending(reg, uid, ret_why);
        return why_set(ret_why, NSD_ERRNO_NOT_YET,
                       "cannot create the namespace of uid %u now (a passing shortage); retry",
                       (unsigned) uid);
}

static User *users_created(Users *reg, UserNs *ns, const char *generation, char **shares,
                           const SetupPlan *plan, const char *setup) {
        User *u = users_add_made(reg, ns, user_take_baseline(ns), generation, shares, plan,
                                 USER_ADD_CREATED);

        metrics_count_created();

        log_event(LOG_INFO, 0, ns->uid, "namespace-created",
                  "Created the namespace of uid %u (mnt:[%" G_GUINT64_FORMAT "], %s, %u mounts "
                  "of the host's not received by propagation%s)",
                  (unsigned) ns->uid, ns->ns_inode,
                  ns->pinned ? "pinned" : "NOT pinned, alive by descriptor only",
                  u->baseline ? u->baseline->len : 0, setup);
        if (!ns->pinned)
                u->pin_refused = true;
        users_changed(reg);
        return u;
}

/* A namespace made and pinned at once (nothing to set up). */
static int create_now(Users *reg, uid_t uid, User **ret, char **ret_why) {
        NsSetup setup = config_ns_setup(reg->config);
        char generation[17];
        UserNs *ns = NULL;
        int r;

        r = userns_create(reg->pins, uid, &setup, &ns);
        if (r == -EAGAIN)
                return why_not_now(reg, uid, ret_why);
        if (r < 0) {
                log_error_errno(r, "Failed to create the namespace of uid %u: %m", (unsigned) uid);
                return why_set(ret_why, r, "cannot create the namespace of uid %u: %s",
                               (unsigned) uid, g_strerror(-r));
        }
        *ret = users_created(reg, ns, users_setup_generation(reg, generation), NULL, NULL, "");
        return 0;
}

int users_join(Users *reg, uid_t uid, bool create, User **ret, bool *ret_created, char **ret_why) {
        return users_join_start(reg, uid, create, NULL, NULL, NULL, ret, ret_created, ret_why);
}

/* ---- a new namespace's setup -------------------------------------------------------------- */

const char *users_setup_generation(const Users *reg, char buf[static 17]) {
        return setup_conf_generation(&reg->config->setup, reg->config->propagation_private, buf,
                                     17);
}

bool users_is_stale(const Users *reg, const User *u, const char *generation) {
        if (u->setup_generation)
                return strcmp(u->setup_generation, generation) != 0;
        return !setup_conf_is_empty(&reg->config->setup);
}

int users_setup_error(int r) {
        switch (r < 0 ? -r : r) {
        case ENOENT:
        case ETIMEDOUT:
        case EAGAIN:
        case ENXIO:
        case EUSERS:
                return -EIO;
        default:
                return r < 0 ? r : -r;
        }
}

bool users_join_needs_identity(const Users *reg, uid_t uid, bool create) {
        return create && !users_get(reg, uid) && !users_is_pending(reg, uid) &&
               !g_hash_table_contains(reg->creating, GUINT_TO_POINTER(uid)) &&
               setup_conf_needs_identity(&reg->config->setup);
}

static void creation_wait(Creation *c, UsersJoinDone done, void *userdata) {
        Waiter w = { .done = done, .userdata = userdata };

        g_array_append_val(c->waiters, w);
}

/* Everyone waiting for c gets r and why; c is freed. */
static void creation_end(Creation *c, int r, const char *why) {
        g_autoptr(GArray) waiters = g_steal_pointer(&c->waiters);

        if (c->out_fd >= 0)
                close(c->out_fd);
        g_strfreev(c->shares);
        g_free(c);
        for (guint i = 0; i < waiters->len; i++) {
                const Waiter *w = &g_array_index(waiters, Waiter, i);
                w->done(r, why, w->userdata);
        }
}

/* shares without the ones plan left out when it ran (setup.h: a refused route's directory),
 * NULL-terminated; shares (may be NULL) is taken. */
static char **shares_given(char **shares, const SetupPlan *plan) {
        g_autoptr(GPtrArray) kept = g_ptr_array_new();

        if (!shares)
                return NULL;
        for (char **s = shares; *s; s++) {
                bool out = false;

                for (size_t i = 0; i < setup_plan_n_shares(plan) && !out; i++)
                        out = setup_plan_share_left_out(plan, i) &&
                              strcmp(setup_plan_share(plan, i)->name, *s) == 0;
                if (out)
                        g_free(*s);
                else
                        g_ptr_array_add(kept, *s);
        }
        g_free(shares); /* the strings are kept's now, or freed */
        g_ptr_array_add(kept, NULL);
        return (char **) g_ptr_array_free(g_steal_pointer(&kept), FALSE);
}

static void on_setup_done(int r, const char *why, unsigned n_failed, bool refuse,
                          const SetupPlan *plan, void *userdata) {
        Creation *c = userdata;
        Users *reg = c->reg;
        g_autofree char *answer = NULL, *note = NULL;
        UserNs *ns = g_steal_pointer(&c->ns);
        int pr;

        if (!reg) { /* nsd stops: nothing of it was pinned; the namespace goes with nsd */
                userns_free(ns);
                creation_end(c, -ECANCELED, "nsd stops");
                return;
        }
        g_hash_table_remove(reg->creating, GUINT_TO_POINTER(c->uid));
        if (r < 0 && (refuse || r == -ECANCELED)) {
                /* never pinned, never handed out */
                userns_abandon_created(reg->pins, ns);
                if (r == -ECANCELED) {
                        creation_end(c, -NSD_ERRNO_NOT_YET, "nsd stops; retry");
                        return;
                }
                if (errno_may_pass(r) && r != -ETIMEDOUT) {
                        log_event(LOG_WARNING, r, c->uid, "setup-retry",
                                  "The namespace of uid %u was not handed out, its setup met a "
                                  "passing shortage (%s); the next JOIN tries again",
                                  (unsigned) c->uid, why);
                        answer = g_strdup_printf("the setup of the namespace of uid %u met a "
                                                 "passing shortage (%s); retry",
                                                 (unsigned) c->uid, why);
                        creation_end(c, -NSD_ERRNO_NOT_YET, answer);
                        return;
                }
                metrics_count_setup_failure();
                log_event_reason(LOG_ERR, r, c->uid, "setup-refused", why,
                                 "Refused the namespace of uid %u: %u step%s of its setup failed, "
                                 "the "
                                 "first: %s",
                                 (unsigned) c->uid, n_failed, n_failed == 1 ? "" : "s", why);
                answer = g_strdup_printf("the namespace of uid %u cannot be set up: %s",
                                         (unsigned) c->uid, why);
                Refusal *f = g_new0(Refusal, 1);
                f->r = users_setup_error(r);
                f->why = g_strdup(answer);
                f->until_usec = g_get_monotonic_time() + SETUP_REFUSED_SEC * G_USEC_PER_SEC;
                memcpy(f->generation, c->generation, sizeof f->generation);
                g_hash_table_replace(reg->refused, GUINT_TO_POINTER(c->uid), f);
                creation_end(c, users_setup_error(r), answer);
                return;
        }
        if (r < 0)
                note = g_strdup_printf(", set up WITHOUT %u failed step%s (OnFailure=continue), "
                                       "the first: %s",
                                       n_failed, n_failed == 1 ? "" : "s", why);
        pr = userns_pin_created(reg->pins, ns);
        if (pr < 0) { /* a passing failure: nothing pinned, nothing handed out */
                userns_abandon_created(reg->pins, ns);
                answer = g_strdup_printf("cannot pin the namespace of uid %u now (%s); retry",
                                         (unsigned) c->uid, g_strerror(-pr));
                creation_end(c, -NSD_ERRNO_NOT_YET, answer);
                return;
        }
        (void) users_created(reg, ns, c->generation,
                             shares_given(g_steal_pointer(&c->shares), plan), plan,
                             note ? note : ", set up");
        creation_end(c, 0, NULL);
}

/* Is share among shares (a User's or a Creation's, NULL-terminated; NULL: none)? */
static bool has_share(char **shares, const char *share) {
        return shares && g_strv_contains((const char *const *) shares, share);
}

unsigned users_share_members(const Users *reg, const char *share) {
        GHashTableIter it;
        gpointer v;
        unsigned n = 0;

        g_hash_table_iter_init(&it, reg->users);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const User *u = v;
                if (has_share(u->shares, share))
                        n++;
        }
        g_hash_table_iter_init(&it, reg->creating);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const Creation *c = v;
                if (has_share(c->shares, share))
                        n++;
        }
        return n;
}

void users_share_anchors(Users *reg, const Share *const *shares, size_t n, int32_t *ret_mounts,
                         uint32_t *ret_groups) {
        g_autofree char *text = NULL;
        int pinns_fd = reg->pins ? pinstore_pinns_fd(reg->pins, NULL) : -1;
        const char *run_dir = pinstore_run_dir(reg->pins);

        for (size_t i = 0; i < n; i++) {
                ret_mounts[i] = -1;
                ret_groups[i] = 0;
        }
        if (n == 0 || pinns_fd < 0 || !run_dir ||
            ns_read_mountinfo(pinns_fd, "nsd's pin namespace", USER_MOUNTINFO_MAX, &text, NULL) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                g_autofree char *path = NULL;
                char anchor[SHARE_ANCHOR_NAME_MAX];
                unsigned group;
                int count;

                if (!shares[i])
                        continue;
                path = g_strdup_printf("%s/shares/%s", run_dir,
                                       share_anchor_name(shares[i], anchor, sizeof anchor));
                if (mounts_under(text, path, &count, &group) == 0) {
                        ret_mounts[i] = count;
                        ret_groups[i] = group;
                }
        }
}

/* Which of the plan's shares the namespace of uid gets: not those whose MaxMembers= is
 * reached, nor any without a pin namespace (where the anchors are); each one left out is
 * logged, and the login goes on without it. The names of the ones given. */
static char **plan_shares(Users *reg, SetupPlan *plan, uid_t uid) {
        g_autoptr(GPtrArray) names = g_ptr_array_new();
        int pinns_fd = reg->pins ? pinstore_pinns_fd(reg->pins, NULL) : -1;
        int dir_fd = reg->pins && pinstore_is_ready(reg->pins) ? pinstore_dir_fd(reg->pins) : -1;
        char desc[256];

        setup_plan_set_pin_namespace(plan, pinns_fd, dir_fd);
        for (size_t i = 0; i < setup_plan_n_shares(plan); i++) {
                const Share *s = setup_plan_share(plan, i);
                unsigned n = users_share_members(reg, s->name);

                share_describe(s, desc, sizeof desc);
                if (pinns_fd < 0 || dir_fd < 0) {
                        setup_plan_leave_out_share(plan, i);
                        log_event(LOG_WARNING, -ENOENT, uid, "share-left-out",
                                  "The namespace of uid %u is made without %s: nsd has no pin "
                                  "namespace now, where the anchors of shares are",
                                  (unsigned) uid, desc);
                        continue;
                }
                /* a route's mounts are copied to one namespace only: no member bound */
                if (n >= s->max_members && s->propagation != SHARE_PROPAGATION_PER_USER) {
                        setup_plan_leave_out_share(plan, i);
                        log_event(LOG_WARNING, -EUSERS, uid, "share-full",
                                  "The namespace of uid %u is made without %s: it has "
                                  "MaxMembers=%u members already; the login goes on without it",
                                  (unsigned) uid, desc, s->max_members);
                        continue;
                }
                g_ptr_array_add(names, g_strdup(s->name));
        }
        g_ptr_array_add(names, NULL);
        return (char **) g_ptr_array_free(g_steal_pointer(&names), FALSE);
}

int users_join_start(Users *reg, uid_t uid, bool create, const SetupUser *who, UsersJoinDone done,
                     void *userdata, User **ret, bool *ret_created, char **ret_why) {
        g_autoptr(SetupPlan) plan = NULL;
        g_autofree char *why = NULL;
        char uid_name[16];
        SetupUser anyone;
        Creation *c;
        Refusal *f;
        UserNs *ns = NULL;
        int r;

        *ret_created = false;
        if (users_is_releasing(reg, uid))
                /* its volumes are being unmounted: the next login gets a new namespace */
                return why_set(ret_why, NSD_ERRNO_NOT_YET,
                               "the namespace of uid %u is being released; retry", (unsigned) uid);
        r = join_check(reg, uid, create, ret, ret_why);
        if (r <= 0)
                return r;
        c = g_hash_table_lookup(reg->creating, GUINT_TO_POINTER(uid));
        if (c) {
                if (!done)
                        return why_set(ret_why, NSD_ERRNO_NOT_YET,
                                       "the namespace of uid %u is being set up; retry",
                                       (unsigned) uid);
                creation_wait(c, done, userdata);
                return -EINPROGRESS;
        }
        if (setup_conf_is_empty(&reg->config->setup)) {
                r = create_now(reg, uid, ret, ret_why);
                *ret_created = r == 0;
                return r;
        }

        /* a setup that failed a moment ago fails again: not at every retry of a login */
        f = g_hash_table_lookup(reg->refused, GUINT_TO_POINTER(uid));
        if (f) {
                char generation[17];
                if (g_get_monotonic_time() < f->until_usec &&
                    strcmp(f->generation, users_setup_generation(reg, generation)) == 0)
                        return why_set(ret_why, -f->r, "%s", f->why);
                g_hash_table_remove(reg->refused, GUINT_TO_POINTER(uid));
        }

        if (!who && setup_conf_needs_identity(&reg->config->setup))
                return why_set(ret_why, EINVAL,
                               "the setup of the namespace of uid %u needs to know who the user "
                               "is, and nobody looked it up",
                               (unsigned) uid);
        if (!who) {
                /* the setup needs no more than the uid (users_join_needs_identity()) */
                snprintf(uid_name, sizeof uid_name, "%u", (unsigned) uid);
                anyone = (SetupUser) { .uid = uid, .gid = (gid_t) -1, .name = uid_name };
                who = &anyone;
        }
        r = setup_plan_new(&reg->config->setup, who, &plan, &why);
        if (r < 0) {
                metrics_count_setup_failure();
                log_event_reason(LOG_ERR, r, uid, "setup-refused", why,
                                 "Refused the namespace of uid %u: its setup cannot be planned: %s",
                                 (unsigned) uid, why);
                return why_set(ret_why, users_setup_error(r),
                               "the namespace of uid %u cannot be set up: %s", (unsigned) uid, why);
        }
        if (setup_plan_is_empty(plan)) { /* nothing applies to this user */
                r = create_now(reg, uid, ret, ret_why);
                *ret_created = r == 0;
                return r;
        }
        if (!done)
                return why_set(ret_why, NSD_ERRNO_NOT_YET,
                               "the namespace of uid %u needs its setup, which this caller "
                               "cannot wait for",
                               (unsigned) uid);
        if (!reg->children)
                return why_set(ret_why, EOPNOTSUPP,
                               "this nsd cannot set up the namespace of uid %u (no helper "
                               "children)",
                               (unsigned) uid);

        g_auto(GStrv) shares = plan_shares(reg, plan, uid);
        if (setup_plan_is_empty(plan)) { /* every share left out, nothing else to do */
                r = create_now(reg, uid, ret, ret_why);
                *ret_created = r == 0;
                return r;
        }

        NsSetup ns_setup = config_ns_setup(reg->config);
        r = userns_create_unpinned(reg->pins, uid, &ns_setup, &ns);
        if (r == -EAGAIN)
                return why_not_now(reg, uid, ret_why);
        if (r < 0)
                return why_set(ret_why, r, "cannot create the namespace of uid %u: %s",
                               (unsigned) uid, g_strerror(-r));

        c = g_new0(Creation, 1);
        c->reg = reg;
        c->uid = uid;
        c->ns = ns;
        c->waiters = g_array_new(FALSE, FALSE, sizeof(Waiter));
        c->shares = g_steal_pointer(&shares);
        users_setup_generation(reg, c->generation);
        c->out_fd = log_stream_fd("nsd-init-script");
        if (c->out_fd < 0)
                c->out_fd = -1; /* the scripts write to /dev/null then */
        r = setup_run(reg->children, plan, ns->ns_fd, c->out_fd, on_setup_done, c);
        if (r < 0) {
                userns_abandon_created(reg->pins, g_steal_pointer(&c->ns));
                creation_end(c, 0, NULL); /* nobody waits yet */
                if (r == -EAGAIN)
                        return why_set(ret_why, NSD_ERRNO_NOT_YET,
                                       "too many namespaces are being set up or walked at once "
                                       "(MaxPathWalks=); retry");
                if (errno_may_pass(r))
                        return why_set(ret_why, NSD_ERRNO_NOT_YET,
                                       "cannot start the setup of the namespace of uid %u now "
                                       "(%s); retry",
                                       (unsigned) uid, g_strerror(-r));
                return why_set(ret_why, r, "cannot set up the namespace of uid %u: %s",
                               (unsigned) uid, g_strerror(-r));
        }
        g_steal_pointer(&plan); /* setup_run() took it */
        g_hash_table_insert(reg->creating, GUINT_TO_POINTER(uid), c);
        creation_wait(c, done, userdata);
        log_debug("Setting up the namespace of uid %u (mnt:[%" G_GUINT64_FORMAT "])",
                  (unsigned) uid, ns->ns_inode);
        return -EINPROGRESS;
}

void users_set_owner(Users *reg, User *u, const char *name) {
        if (u->owner || !name || !*name)
                return;
        u->owner = g_strdup(name);
        user_state_write(u);
}

int users_check_owner(Users *reg, User *u, const char *name, char **ret_why) {
        g_autofree char *now = NULL;

        if (!u->owner || (name && strcmp(name, u->owner) == 0))
                return 0;
        now = name ? g_strdup_printf("is now '%s'", name) : g_strdup("has no entry now");
        if (!u->orphaned)
                users_changed(reg); /* LIST's flag */
        u->orphaned = true;
        if (!u->orphan_logged) {
                u->orphan_logged = true;
                log_event(LOG_WARNING, -EOWNERDEAD, u->uid, "namespace-orphaned",
                          "The namespace of uid %u (mnt:[%" G_GUINT64_FORMAT "]) was made for "
                          "'%s'; uid %u %s in the user database: it is not handed to another "
                          "person; refusing its JOINs until root releases it (nsctl release)",
                          (unsigned) u->uid, u->ns->ns_inode, u->owner, (unsigned) u->uid, now);
        }
        return why_set(ret_why, EOWNERDEAD,
                       "the namespace of uid %u was made for '%s'; uid %u %s: it is not handed "
                       "to another person; see nsctl list (orphaned) and nsctl release",
                       (unsigned) u->uid, u->owner, (unsigned) u->uid, now);
}

void users_joined(Users *reg, User *u) {
        if (u->sessions->len == 0)
                linger_arm(reg->linger, u->uid, LINGER_JOIN_GRACE_SEC);
}

/* Out of every table, without linger (a forced release drops them); frees sess. */
static void session_remove(Users *reg, Session *sess) {
        session_unpersist(sess);
        if (sess->user)
                g_ptr_array_remove(sess->user->sessions, sess);
        else {
                GPtrArray *w = g_hash_table_lookup(reg->waiting, GUINT_TO_POINTER(sess->uid));
                if (w) {
                        g_ptr_array_remove(w, sess);
                        if (w->len == 0)
                                g_hash_table_remove(reg->waiting, GUINT_TO_POINTER(sess->uid));
                }
        }
        g_hash_table_remove(reg->sessions, &sess->id); /* frees sess */
}

/* A kernel file system on a block device or an image (not FUSE, not a network type). */
static bool volume_is_block(const UserVolume *v) {
        const VolumeTypeOptions *t = volume_type_options_find(v->type);

        return t && !t->fuse && !t->network;
}

/* Is the volume of type mounted on where in u's namespace now? Only root mounts a kernel
 * file system there (the user's own mounts are FUSE). With source, for what a record does
 * not know (a start whose report was lost, a state file that missed a start): a mount of
 * that type on top of where whose device is source's (mounts_device_is()). Without, for a
 * record that says mounted: a file system on top of where that is not FUSE. true and its
 * loop device (*ret_loop: number + 1, 0 none), or false (not so, or the table could not be
 * read). */
static bool volume_mounted_in(const char *mountinfo, const char *type, const char *where,
                              const char *source, uint32_t *ret_loop) {
        MountOn on;

        if (!where || !type || mounts_on(mountinfo, where, &on) < 0 || !on.fstype[0] ||
            mounts_fstype_is_fuse(on.fstype))
                return false;
        if (source && (!g_str_equal(on.fstype, type) || mounts_device_is(on.dev, source) != 1))
                return false;
        if (ret_loop)
                *ret_loop = (uint32_t) MAX(mounts_loop_index(on.dev) + 1, 0);
        return true;
}

static bool volume_mounted_now(const User *u, const char *type, const char *where,
                               const char *source, uint32_t *ret_loop) {
        g_autofree char *text = NULL;

        return userns_read_mountinfo(u->ns, USER_MOUNTINFO_MAX, &text, NULL) >= 0 &&
               volume_mounted_in(text, type, where, source, ret_loop);
}

/* Does v's record need the mount table to be believed: a block volume it does not say is
 * mounted (a start whose report was lost, a state file that missed a start)? */
static bool volume_record_unsure(const UserVolume *v) {
        return v->outcome != VOLUME_OUTCOME_MOUNTED && volume_is_block(v);
}

/* v's record unsure, yet its own mount is on Where= in mountinfo (u's mount table): the record
 * follows the mount table (volume-found, written to the state file at once, so also if what
 * comes next is refused). True when it was found. */
static bool volume_found(User *u, UserVolume *v, const char *then, const char *mountinfo) {
        uint32_t loop = 0;

        if (!volume_record_unsure(v) ||
            !volume_mounted_in(mountinfo, v->type, v->where, v->source, &loop))
                return false;
        log_event(LOG_NOTICE, 0, u->uid, "volume-found",
                  "Volume '%s' of uid %u is mounted on %s although its record says it is not: "
                  "recorded mounted, then %s",
                  v->name, (unsigned) u->uid, v->where, then);
        v->outcome = VOLUME_OUTCOME_MOUNTED;
        v->loop = loop;
        v->err = 0;
        g_clear_pointer(&v->why, g_free);
        user_state_write(u);
        return true;
}

/* Is volumes[i] of u one that nsd unmounts before a release: a block volume its setup
 * mounted (on a loop device, or a block device of root's)? */
static bool volume_unmounted_first(const UserVolume *v) {
        return v->outcome == VOLUME_OUTCOME_MOUNTED && volume_is_block(v);
}

/* The release child's item for v: what it unmounts and the loop device it looks at after. */
static void release_item_fill(VolumeReleaseItem *it, const UserVolume *v) {
        g_strlcpy(it->name, v->name, sizeof it->name);
        g_strlcpy(it->where, v->where, sizeof it->where);
        g_strlcpy(it->source, v->source, sizeof it->source);
        it->loop = v->loop;
        it->loop_cleared = -1;
}

/* Where the release child stages what it unmounts: nsd's run directory. */
static void release_run_dir(const Users *reg, VolumeRelease *rel) {
        const char *dir = pinstore_run_dir(reg->pins);

        g_strlcpy(rel->run_dir, dir ? dir : "/run/nsd", sizeof rel->run_dir);
}

/* The release's steps for the kernel volumes nsd mounted in u's namespace, one event each,
 * before the namespace goes: what the kernel does with them then. */
static void users_log_volumes_released(const User *u, const char *why, bool unmounted) {
        for (size_t i = 0; i < u->n_volumes; i++) {
                const UserVolume *v = &u->volumes[i];
                char loop[32] = "";

                /* unmounted: the block volumes were unmounted before (volume-unmounted) */
                if (v->outcome != VOLUME_OUTCOME_MOUNTED ||
                    (unmounted && volume_unmounted_first(v)))
                        continue;
                if (v->loop)
                        snprintf(loop, sizeof loop, " on /dev/loop%u", (unsigned) (v->loop - 1));
                log_event_reason(LOG_INFO, 0, u->uid, "volume-released", why,
                                 "Volume '%s' of uid %u (%s, %s%s, mounted on %s) goes with the "
                                 "namespace (%s): the kernel unmounts it once nothing holds the "
                                 "namespace%s",
                                 v->name, (unsigned) u->uid, v->type, v->source, loop, v->where,
                                 why, v->loop ? ", then clears the loop device (auto-clear)" : "");
        }
}

/* A release's first step: a pin that stays keeps everything as it is. */
static int release_unpin(Users *reg, User *u, const char *why, char **ret_why) {
        uid_t uid = u->uid;
        int r;

        r = userns_unpin(reg->pins, u->ns);
        if (r < 0) {
                log_event_reason(LOG_WARNING, r, uid, "release-failed", why,
                                 "Cannot release the namespace of uid %u (%s): its pin cannot be "
                                 "removed: %m; it is kept as it is",
                                 (unsigned) uid, why);
                return why_set(ret_why, r,
                               "cannot remove the pin of uid %u's namespace (%s); it is kept, "
                               "try again",
                               (unsigned) uid, g_strerror(-r));
        }
        return 0;
}

/* The rest of a release, once unpinned (unmounted: its block volumes were unmounted). */
static void release_finish(Users *reg, User *u, const char *why, bool unmounted) {
        uid_t uid = u->uid;

        while (u->sessions->len > 0)
                session_remove(reg, g_ptr_array_index(u->sessions, u->sessions->len - 1));
        /* out of pam_nsjoin's record while the namespace is still alive (nsd holds it) */
        state_made_remove(reg->state, u->ns->ns_inode, u->ns->root_fd);
        user_unkeep(u);
        users_log_volumes_released(u, why, unmounted);
        log_event_reason(LOG_INFO, 0, uid, "namespace-released", why,
                         "Released the namespace of uid %u (%s)", (unsigned) uid, why);
        linger_forget(reg->linger, uid);
        g_hash_table_remove(reg->users, GUINT_TO_POINTER(uid)); /* frees u and its ns */
        /* its room in the fd store goes to a namespace that found none */
        users_store_more(reg);
        users_changed(reg);
}

static int release_now(Users *reg, User *u, const char *why, char **ret_why) {
        int r = release_unpin(reg, u, why, ret_why);

        if (r < 0)
                return r;
        release_finish(reg, u, why, false);
        return 0;
}

/* u's volume called name, or NULL. */
static UserVolume *user_volume_named(User *u, const char *name) {
        for (size_t i = 0; i < u->n_volumes; i++)
                if (g_str_equal(u->volumes[i].name, name))
                        return &u->volumes[i];
        return NULL;
}

/* The steps of a volume release for the log, and the first reason it stopped (or NULL). Each
 * volume keeps why it stopped the release (UserVolume.held, for VOLUMES), or nothing. */
static char *log_volume_release(User *u, const VolumeRelease *rel, const char *why, bool stop) {
        char *first = NULL;

        for (size_t i = 0; i < rel->n; i++) {
                const VolumeReleaseItem *it = &rel->items[i];
                g_autofree char *reason = volume_release_why(it);
                UserVolume *v = user_volume_named(u, it->name);

                if (v) {
                        g_free(v->held);
                        v->held = g_strdup(reason);
                }

                if (it->recovered)
                        log_event_reason(LOG_NOTICE, 0, u->uid, "volume-recovered", why,
                                         "Volume '%s' of uid %u was found where an interrupted "
                                         "release had moved it (nsd's run directory, in the "
                                         "namespace) and put back on %s",
                                         it->name, (unsigned) u->uid, it->where);
                switch ((VolumeReleaseStep) it->step) {
                case VOLUME_RELEASE_UNMOUNTED:
                        log_event_reason(LOG_INFO, 0, u->uid, "volume-unmounted", why,
                                         "Unmounted volume '%s' of uid %u from %s (%s)%s", it->name,
                                         (unsigned) u->uid, it->where, why,
                                         it->loop_cleared == 1 ? "; its loop device is cleared"
                                         : it->loop_cleared == 0
                                                 ? "; its loop device stays attached: the file "
                                                   "system is still mounted elsewhere (a copy of "
                                                   "the mount in another namespace)"
                                                 : "");
                        break;
                case VOLUME_RELEASE_NOT_MOUNTED:
                        log_event_reason(LOG_NOTICE, 0, u->uid, "volume-not-mounted", why,
                                         "Volume '%s' of uid %u is not mounted on %s any more: "
                                         "nothing to unmount there",
                                         it->name, (unsigned) u->uid, it->where);
                        break;
                case VOLUME_RELEASE_BUSY:
                case VOLUME_RELEASE_FAILED: {
                        /* linger asks again every LINGER_RECHECK_SEC: the same refusal once */
                        bool same = !why_is_news(&u->release_refused, reason);

                        if (stop)
                                log_event_reason(same ? LOG_DEBUG : LOG_NOTICE, it->err, u->uid,
                                                 "volume-busy", why,
                                                 "Cannot stop volume '%s' of uid %u (%s): %s; "
                                                 "it stays mounted",
                                                 it->name, (unsigned) u->uid, why, reason);
                        else
                                log_event_reason(same ? LOG_DEBUG : LOG_WARNING, it->err, u->uid,
                                                 "volume-busy", why,
                                                 "Cannot release the namespace of uid %u (%s): "
                                                 "%s; the namespace is kept",
                                                 (unsigned) u->uid, why, reason);
                        if (!first)
                                first = g_steal_pointer(&reason);
                        break;
                }
                case VOLUME_RELEASE_NOT_TRIED:
                        break;
                }
        }
        return first;
}

/* The errno a volume release that stopped answers: the child's own failure, else the first
 * volume that stopped it (EBUSY: in use; a failed step's error), else the child's end. */
static int release_errno(int r, const VolumeRelease *rel) {
        if (rel && rel->err)
                return -rel->err;
        for (size_t i = 0; rel && i < rel->n; i++)
                if (rel->items[i].step == VOLUME_RELEASE_BUSY)
                        return -EBUSY;
                else if (rel->items[i].step == VOLUME_RELEASE_FAILED && rel->items[i].err > 0)
                        return -rel->items[i].err;
        return r == -EPROTO ? -EIO : r;
}

static void on_volumes_released(int r, const VolumeRelease *rel, void *userdata) {
        Releasing *rl = userdata;
        Users *reg = rl->reg;
        g_autofree char *reason = NULL;
        User *u;
        int rv = 0;

        if (!reg) { /* nsd stops: the namespace stays as it is */
                releasing_free(rl);
                return;
        }
        g_hash_table_remove(reg->releasing, GUINT_TO_POINTER(rl->uid));
        u = users_get(reg, rl->uid);
        if (!u) { /* cannot happen: nothing else releases it meanwhile */
                rv = -ENOENT;
                reason = g_strdup_printf("uid %u has no namespace any more", (unsigned) rl->uid);
        } else {
                if (rel)
                        reason = log_volume_release(u, rel, rl->why, false);
                if (r == 0) {
                        rv = release_unpin(reg, u, rl->why, &reason);
                        if (rv == 0)
                                release_finish(reg, u, rl->why, true);
                        else
                                log_event(LOG_WARNING, rv, u->uid, "release-failed",
                                          "The namespace of uid %u is kept WITHOUT its block "
                                          "volumes: they were unmounted before its pin could not "
                                          "be removed (%s); release it again",
                                          (unsigned) u->uid, rl->why);
                } else {
                        rv = release_errno(r, rel);
                        if (!reason)
                                reason = g_strdup_printf("the namespace of uid %u is kept: "
                                                         "unmounting its volumes "
                                                         "failed (%s)",
                                                         (unsigned) rl->uid,
                                                         r == -ETIMEDOUT   ? "it took too long"
                                                         : rel && rel->err ? g_strerror(rel->err)
                                                                           : g_strerror(-r));
                        if (!rel || rel->err)
                                log_event_reason(LOG_WARNING, -rv, rl->uid, "release-failed",
                                                 rl->why,
                                                 "Cannot release the namespace of uid "
                                                 "%u (%s): %s",
                                                 (unsigned) rl->uid, rl->why, reason);
                        /* looked at again as any namespace with nothing in it */
                        if (u->sessions->len == 0)
                                linger_arm(reg->linger, rl->uid, LINGER_RECHECK_SEC);
                        users_changed(reg);
                }
        }
        if (rl->done)
                rl->done(rv, reason, rl->userdata);
        releasing_free(rl);
}

/* A release refused because u's mount table could not be read to check the records of its
 * block volumes: logged once per reason (linger asks again every LINGER_RECHECK_SEC), said
 * to the asker. */
static int release_table_unread(User *u, const char *why, int r, char **ret_why) {
        g_autofree char *reason =
                g_strdup_printf("its mount table could not be read to check its volumes (%s)",
                                g_strerror(-r));

        log_event_reason(why_is_news(&u->release_refused, reason) ? LOG_WARNING : LOG_DEBUG, r,
                         u->uid, "release-failed", why,
                         "Cannot release the namespace of uid %u (%s): %s; it is kept",
                         (unsigned) u->uid, why, reason);
        return why_set(ret_why, r,
                       "cannot release the namespace of uid %u: %s; it is kept, try "
                       "again",
                       (unsigned) u->uid, reason);
}

int users_release(Users *reg, User *u, const char *why, bool by_user, UsersReleaseDone done,
                  void *userdata, char **ret_why) {
        g_autofree char *mountinfo = NULL; /* read once, if a volume's record is unsure */
        VolumeRelease *rel;
        Releasing *rl;
        int r;

        if (users_is_releasing(reg, u->uid))
                return why_set(ret_why, EBUSY,
                               "the namespace of uid %u is being released already (its volumes "
                               "are being unmounted)",
                               (unsigned) u->uid);
        if (g_hash_table_contains(reg->volume_ops, GUINT_TO_POINTER(u->uid)))
                return why_set(ret_why, EBUSY,
                               "a volume of uid %u is being started or stopped; retry",
                               (unsigned) u->uid);
        /* the mount table, not only the record: a block volume recorded not mounted that is
         * there is unmounted first too, never left to the namespace's end. A table that cannot
         * be read keeps the namespace (such a volume would go with it, lazily). */
        for (size_t i = 0; i < u->n_volumes; i++)
                if (volume_record_unsure(&u->volumes[i])) {
                        r = userns_read_mountinfo(u->ns, USER_MOUNTINFO_MAX, &mountinfo, NULL);
                        if (r < 0)
                                return release_table_unread(u, why, r, ret_why);
                        break;
                }
        rel = g_new0(VolumeRelease, 1);
        for (size_t i = 0; i < u->n_volumes && rel->n < SETUP_MAX_VOLUMES; i++) {
                UserVolume *v = &u->volumes[i];
                VolumeReleaseItem *it = &rel->items[rel->n];

                if (mountinfo)
                        (void) volume_found(u, v, "unmounted before the namespace is released",
                                            mountinfo);
                if (!volume_unmounted_first(v))
                        continue;
                release_item_fill(it, v);
                rel->n++;
        }
        if (rel->n == 0 || !reg->children) {
                g_free(rel);
                return release_now(reg, u, why, ret_why);
        }
        /* the volumes before the pin: a release that stops keeps the namespace pinned (a
         * pin removed first and not made again would let it end with nsd) */
        release_run_dir(reg, rel);
        rl = g_new0(Releasing, 1);
        rl->reg = reg;
        rl->uid = u->uid;
        rl->why = g_strdup(why);
        rl->done = done;
        rl->userdata = userdata;
        r = volume_release_start(reg->children, u->uid, by_user ? CHILD_USER : CHILD_SYSTEM,
                                 u->ns->ns_fd, rel, on_volumes_released, rl);
        g_free(rel);
        if (r < 0) {
                releasing_free(rl);
                log_event_reason(LOG_WARNING, r, u->uid, "release-failed", why,
                                 "Cannot release the namespace of uid %u (%s): cannot start "
                                 "the child that unmounts its volumes: %m; it is kept",
                                 (unsigned) u->uid, why);
                return why_set(ret_why, r,
                               "cannot unmount the volumes of uid %u's namespace (%s); it is "
                               "kept, try again",
                               (unsigned) u->uid, g_strerror(-r));
        }
        g_hash_table_insert(reg->releasing, GUINT_TO_POINTER(u->uid), rl);
        log_event_reason(LOG_INFO, 0, u->uid, "volumes-unmounting", why,
                         "Unmounting the volumes of uid %u before its namespace is released (%s)",
                         (unsigned) u->uid, why);
        return 1;
}

/* Release=last-session: how long after the last session the first look waits (the user
 * manager's processes end a moment after its session), and how often a namespace that still
 * has a process is looked at again. */
#define VOLUMES_IDLE_FIRST_SEC 1
#define VOLUMES_IDLE_RECHECK_SEC LINGER_RECHECK_SEC

static void volumes_idle_arm(Users *reg, const User *u, unsigned sec);

bool users_is_releasing(const Users *reg, uid_t uid) {
        return g_hash_table_contains(reg->releasing, GUINT_TO_POINTER(uid));
}

/* ---- one volume of a namespace that exists ------------------------------------------------- */

/* u's volume name for a start or a stop: -ENOENT, -EOPNOTSUPP (a FUSE one), or -EAGAIN while
 * the namespace is released or another start or stop of the uid runs; with *ret_why. */
static int volume_op_check(Users *reg, User *u, const char *name, const char *verb,
                           UserVolume **ret, char **ret_why) {
        UserVolume *v = user_volume_named(u, name);
        const VolumeTypeOptions *t;

        if (!v)
                return why_set(ret_why, ENOENT,
                               "the namespace of uid %u has no volume '%s' (nsctl volumes lists "
                               "them)",
                               (unsigned) u->uid, name);
        t = volume_type_options_find(v->type);
        if (!t || t->fuse)
                return why_set(ret_why, EOPNOTSUPP,
                               "volume '%s' is a FUSE volume (Type=%s): the user's service "
                               "manager runs it (systemctl --user %s nsd-volume@%s.service)",
                               name, v->type, verb, name);
        if (users_is_releasing(reg, u->uid))
                return why_set(ret_why, NSD_ERRNO_NOT_YET,
                               "the namespace of uid %u is being released; retry",
                               (unsigned) u->uid);
        if (g_hash_table_contains(reg->volume_ops, GUINT_TO_POINTER(u->uid)))
                return why_set(ret_why, NSD_ERRNO_NOT_YET,
                               "a volume of uid %u is being started or stopped; retry",
                               (unsigned) u->uid);
        if (!reg->children)
                return why_set(ret_why, EOPNOTSUPP,
                               "this nsd cannot %s volumes (no helper children)", verb);
        *ret = v;
        return 0;
}

static VolumeOp *volume_op_new(Users *reg, uid_t uid, const char *name, const char *why,
                               UsersVolumeDone done, void *userdata) {
        VolumeOp *op = g_new0(VolumeOp, 1);

        op->reg = reg;
        op->uid = uid;
        op->name = g_strdup(name);
        op->why = g_strdup(why);
        op->done = done;
        op->userdata = userdata;
        return op;
}

/* The op's end: its entry goes; *ret_v the volume (NULL: the user or the volume is gone,
 * which nothing does meanwhile). NULL when nsd stops (op freed). */
static User *volume_op_end(VolumeOp *op, UserVolume **ret_v) {
        User *u;

        if (!op->reg) {
                volume_op_free(op);
                return NULL;
        }
        g_hash_table_remove(op->reg->volume_ops, GUINT_TO_POINTER(op->uid));
        u = users_get(op->reg, op->uid);
        *ret_v = u ? user_volume_named(u, op->name) : NULL;
        return u;
}

/* A start's (start) or stop's child began (r 0: 1, op in the table, logged; a user's own
 * requests are rate limited in the log, log_event_by_reason()) or did not (-errno with
 * *ret_why; op freed). */
static int volume_op_begun(Users *reg, User *u, const UserVolume *v, VolumeOp *op, int r,
                           bool by_user, bool start, char **ret_why) {
        const char *helper = start ? "mounts" : "unmounts";

        if (r < 0) {
                int rv = r == -EAGAIN || errno_may_pass(r)
                                 ? why_set(ret_why, NSD_ERRNO_NOT_YET,
                                           "cannot start the helper that %s volume '%s' now "
                                           "(%s); retry",
                                           helper, op->name, g_strerror(-r))
                                 : why_set(ret_why, r, "cannot %s volume '%s' of uid %u: %s",
                                           start ? "start" : "stop", op->name, (unsigned) u->uid,
                                           g_strerror(-r));

                volume_op_free(op);
                return rv;
        }
        g_hash_table_insert(reg->volume_ops, GUINT_TO_POINTER(u->uid), op);
        log_event_by_reason(by_user ? u->uid : 0, LOG_INFO, 0, u->uid,
                            start ? "volume-starting" : "volume-stopping", op->why,
                            "%s volume '%s' of uid %u %s %s (%s)",
                            start ? "Mounting" : "Unmounting", op->name, (unsigned) u->uid,
                            start ? "on" : "from", v->where, op->why);
        return 1;
}

static void volume_op_done(VolumeOp *op, int r, const char *why, const UserVolume *v,
                           bool changed) {
        if (op->done)
                op->done(r, why, v, changed, op->userdata);
        volume_op_free(op);
}

static void on_volume_started(int r, const char *why, unsigned n_failed, bool refuse,
                              const SetupPlan *plan, void *userdata) {
        VolumeOp *op = userdata;
        ssize_t i = setup_plan_only(plan);
        UserVolume *v = NULL;
        User *u = volume_op_end(op, &v);
        const char *vwhy = NULL;
        VolumeOutcome outcome;
        bool changed = false;
        int err = 0;

        (void) n_failed;
        (void) refuse;
        if (!u)
                return;
        if (!v || i < 0) {
                volume_op_done(op, -ENOENT, "the volume is gone", NULL, false);
                return;
        }
        outcome = setup_plan_volume_outcome(plan, (size_t) i, &err, &vwhy, &v->loop);
        /* the run ended without a report (its message lost, its helper killed): the mount
         * table says whether the volume is there, not a guess */
        if (r < 0 && r != -ECANCELED && outcome == VOLUME_OUTCOME_UNKNOWN &&
            volume_mounted_now(u, v->type, setup_plan_volume_where(plan, (size_t) i),
                               setup_plan_volume_source(plan, (size_t) i), &v->loop)) {
                log_event(LOG_NOTICE, 0, op->uid, "volume-found",
                          "Volume '%s' of uid %u is mounted on %s although its start did not "
                          "report (%s): recorded mounted",
                          op->name, (unsigned) op->uid, setup_plan_volume_where(plan, (size_t) i),
                          why ? why : "no message");
                outcome = VOLUME_OUTCOME_MOUNTED;
                r = 0;
        }
        if (outcome == VOLUME_OUTCOME_MOUNTED || outcome == VOLUME_OUTCOME_FAILED ||
            r < 0) { /* a run that ended without a report failed too */
                int64_t now = g_get_real_time();

                v->outcome = outcome == VOLUME_OUTCOME_MOUNTED ? outcome : VOLUME_OUTCOME_FAILED;
                v->err = v->outcome == VOLUME_OUTCOME_FAILED ? (err ? err : (r < 0 ? -r : EIO)) : 0;
                g_free(v->why);
                v->why = v->outcome == VOLUME_OUTCOME_FAILED ? g_strdup(vwhy ? vwhy : why) : NULL;
                g_clear_pointer(&v->held, g_free);
                if (v->outcome != VOLUME_OUTCOME_MOUNTED)
                        v->loop = 0;
                else { /* as the configuration in force expands them now */
                        g_free(v->where);
                        v->where = g_strdup(setup_plan_volume_where(plan, (size_t) i));
                        g_free(v->source);
                        v->source = g_strdup(setup_plan_volume_source(plan, (size_t) i));
                }
                v->at_usec = now > 0 ? (uint64_t) now : 0;
                changed = v->outcome == VOLUME_OUTCOME_MOUNTED &&
                          !setup_plan_volume_already(plan, (size_t) i);
                user_state_write(u);
                if (v->outcome == VOLUME_OUTCOME_MOUNTED) /* nsd's, not the user's: linger */
                        user_baseline_add(u, v->where);
        }
        /* started for a user without sessions (root asked): Release=last-session looks */
        volumes_idle_arm(op->reg, u, VOLUMES_IDLE_RECHECK_SEC);
        volume_op_done(op,
                       r < 0                                  ? r
                       : v->outcome == VOLUME_OUTCOME_MOUNTED ? 0
                                                              : -EIO,
                       r < 0 ? why : v->why, v, changed);
}

int users_volume_start(Users *reg, User *u, const char *name, const SetupUser *who, bool by_user,
                       const char *why, UsersVolumeDone done, void *userdata, char **ret_why) {
        g_autoptr(SetupPlan) plan = NULL;
        g_autofree char *pwhy = NULL;
        UserVolume *v;
        VolumeOp *op;
        int r;

        r = volume_op_check(reg, u, name, "start", &v, ret_why);
        if (r < 0)
                return r;
        /* mounted, and a kernel file system is on Where= now (not a FUSE mount of the
         * user's); else the child looks (a state file that missed a stop says mounted: the
         * child mounts it, or finds it there; another file system there is refused) */
        if (v->outcome == VOLUME_OUTCOME_MOUNTED &&
            volume_mounted_now(u, v->type, v->where, NULL, NULL))
                return 0;
        r = setup_plan_new(&reg->config->setup, who, &plan, &pwhy);
        if (r < 0)
                return why_set(ret_why, users_setup_error(r), "volume '%s' of uid %u: %s", name,
                               (unsigned) u->uid, pwhy);
        r = setup_plan_only_volume(plan, name, by_user);
        if (r < 0)
                return why_set(ret_why, -r,
                               "volume '%s' of uid %u is not in nsd.conf for this user now (a "
                               "reload changed it): it is started with the user's next "
                               "namespace",
                               name, (unsigned) u->uid);
        op = volume_op_new(reg, u->uid, name, why, done, userdata);
        r = setup_run(reg->children, plan, u->ns->ns_fd, -1, on_volume_started, op);
        if (r >= 0)
                g_steal_pointer(&plan); /* setup_run() took it */
        return volume_op_begun(reg, u, v, op, r, by_user, true, ret_why);
}

static void on_volume_stopped(int r, const VolumeRelease *rel, void *userdata) {
        VolumeOp *op = userdata;
        UserVolume *v = NULL;
        User *u = volume_op_end(op, &v);
        g_autofree char *reason = NULL;
        bool changed = false;
        int rv = 0;

        if (!u)
                return;
        if (!v) {
                volume_op_done(op, -ENOENT, "the volume is gone", NULL, false);
                return;
        }
        if (rel)
                reason = log_volume_release(u, rel, op->why, true);
        if (r == 0) {
                int64_t now = g_get_real_time();

                changed = rel && rel->n == 1 && rel->items[0].step == VOLUME_RELEASE_UNMOUNTED;
                v->outcome = VOLUME_OUTCOME_STOPPED;
                v->err = 0;
                v->loop = 0;
                g_clear_pointer(&v->why, g_free);
                g_clear_pointer(&v->held, g_free);
                v->at_usec = now > 0 ? (uint64_t) now : 0;
                user_state_write(u);
        } else {
                rv = release_errno(r, rel);
                if (!reason)
                        reason = g_strdup_printf("unmounting volume '%s' of uid %u failed (%s); "
                                                 "it stays mounted",
                                                 op->name, (unsigned) op->uid,
                                                 r == -ETIMEDOUT   ? "it took too long"
                                                 : rel && rel->err ? g_strerror(rel->err)
                                                                   : g_strerror(-r));
                if (!rel || rel->err)
                        log_event_reason(LOG_WARNING, -rv, op->uid, "volume-stop-failed", op->why,
                                         "%s", reason);
        }
        volume_op_done(op, rv, reason, v, changed);
}

int users_volume_stop(Users *reg, User *u, const char *name, bool by_user, const char *why,
                      UsersVolumeDone done, void *userdata, char **ret_why) {
        g_autofree VolumeRelease *rel = NULL;
        g_autofree char *mountinfo = NULL;
        UserVolume *v;
        VolumeOp *op;
        int r;

        r = volume_op_check(reg, u, name, "stop", &v, ret_why);
        if (r < 0)
                return r;
        /* recorded not mounted, yet there: found, and the stop goes on; a table that cannot
         * be read is no answer ("not mounted" could be wrong: nothing changed, try again) */
        if (volume_record_unsure(v)) {
                r = userns_read_mountinfo(u->ns, USER_MOUNTINFO_MAX, &mountinfo, NULL);
                if (r < 0)
                        return why_set(ret_why, r,
                                       "volume '%s' of uid %u: its namespace's mount table "
                                       "could not be read to check whether it is mounted (%s); "
                                       "nothing was changed, try again",
                                       name, (unsigned) u->uid, g_strerror(-r));
                if (!volume_found(u, v, "stopped", mountinfo))
                        return 0;
        } else if (v->outcome != VOLUME_OUTCOME_MOUNTED)
                return 0;
        if (!volume_unmounted_first(v))
                return why_set(ret_why, EOPNOTSUPP,
                               "volume '%s' (Type=%s) is not a block volume: this version "
                               "unmounts it only with the namespace",
                               name, v->type);
        rel = g_new0(VolumeRelease, 1);
        release_item_fill(&rel->items[rel->n++], v);
        release_run_dir(reg, rel);
        op = volume_op_new(reg, u->uid, name, why, done, userdata);
        r = volume_release_start(reg->children, u->uid, by_user ? CHILD_USER : CHILD_SYSTEM,
                                 u->ns->ns_fd, rel, on_volume_stopped, op);
        return volume_op_begun(reg, u, v, op, r, by_user, false, ret_why);
}

void users_repin(Users *reg) {
        GHashTableIter it;
        gpointer v;
        unsigned n = 0;

        if (!reg->pins || !pinstore_is_ready(reg->pins))
                return;
        g_hash_table_iter_init(&it, reg->users);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                User *u = v;
                int r;

                if (u->ns->pinned || u->pin_refused || pinstore_is_pending(reg->pins, u->uid))
                        continue;
                r = userns_repin(reg->pins, u->ns);
                if (r == -EAGAIN)
                        continue; /* logged; tried again when something changes */
                if (r < 0 || !u->ns->pinned) {
                        u->pin_refused = true;
                        continue;
                }
                n++;
                log_event(LOG_NOTICE, 0, u->uid, "namespace-repinned",
                          "Pinned the namespace of uid %u (mnt:[%" PRIu64 "]) again: it was "
                          "kept by descriptor only",
                          (unsigned) u->uid, u->ns->ns_inode);
                (void) user_store(u); /* pinned now: its room in the store may be taken */
        }
        if (n == 0)
                return;
        /* ... by one without a pin that found none (at start: after the drop of what nobody
         * claimed, users_start()) */
        if (!reg->starting)
                users_store_more(reg);
        users_changed(reg);
}

/* At start: remove the state files ns-<uid> of uids nsd neither holds nor waits for, and the
 * names in pam_nsjoin's record (state.h) of namespaces nsd does not hold. */
static void users_prune_state(Users *reg) {
        g_auto(GStrv) names = state_list(reg->state, STATE_NS_PREFIX);
        g_autoptr(GHashTable) made = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        GHashTableIter it;
        gpointer v;

        /* pam_nsjoin's record: only the namespaces nsd holds (a pending one is recorded
         * again when it is adopted) */
        g_hash_table_iter_init(&it, reg->users);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const User *u = v;
                char ns_name[NSD_MADE_NAME_MAX], root_name[NSD_MADE_NAME_MAX];

                (void) state_made_names(u->ns->ns_inode, u->ns->root_fd, ns_name, root_name);
                g_hash_table_add(made, g_strdup(ns_name));
                if (root_name[0])
                        g_hash_table_add(made, g_strdup(root_name));
        }
        state_made_prune(reg->state, made);

        for (char **n = names; *n; n++) {
                char *end = NULL;
                unsigned long long uid = g_ascii_strtoull(*n + strlen(STATE_NS_PREFIX), &end, 10);

                if (*end == '\0' && uid < UINT32_MAX &&
                    (users_get(reg, (uid_t) uid) || users_is_pending(reg, (uid_t) uid)))
                        continue;
                log_debug("Removing '%s/%s': nsd keeps no namespace of that uid any more",
                          state_path(reg->state), *n);
                state_remove(reg->state, *n);
        }
}

void users_store_more(Users *reg) {
        GHashTableIter it;
        gpointer v;
        unsigned n = 0;

        if (!fdstore_full(reg->fdstore, FDSTORE_CLASS_NAMESPACE) &&
            !fdstore_full(reg->fdstore, FDSTORE_CLASS_PINNED))
                return; /* nothing found no room (nor was removed for room) */
        /* those without a pin first: the store is all that keeps them across a restart, and
         * they may take the room of pinned ones */
        for (int pass = 0; pass < 2; pass++) {
                g_hash_table_iter_init(&it, reg->users);
                while (g_hash_table_iter_next(&it, NULL, &v)) {
                        User *u = v;
                        int r;

                        if (u->ns->pinned != (pass == 1) || user_is_stored(u))
                                continue;
                        r = user_store(u);
                        if (r == -ENOSPC)
                                goto done;
                        if (r > 0)
                                n++;
                }
        }
done:
        if (n > 0)
                log_info("Put %u namespace%s into the service manager's fd store that found no "
                         "room there before",
                         n, n == 1 ? "" : "s");
}

unsigned users_count_not_stored(const Users *reg, unsigned *ret_unpinned) {
        GHashTableIter it;
        gpointer v;
        unsigned n = 0, unpinned = 0;

        g_hash_table_iter_init(&it, reg->users);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const User *u = v;
                if (user_is_stored(u))
                        continue;
                n++;
                unpinned += !u->ns->pinned;
        }
        *ret_unpinned = unpinned;
        return n;
}

unsigned users_count_pinned(const Users *reg) {
        GHashTableIter it;
        gpointer v;
        unsigned n = 0;

        g_hash_table_iter_init(&it, reg->users);
        while (g_hash_table_iter_next(&it, NULL, &v))
                if (((User *) v)->ns->pinned)
                        n++;
        return n;
}

static gint compare_uid(gconstpointer a, gconstpointer b) {
        uid_t x = *(const uid_t *) a, y = *(const uid_t *) b;
        return x < y ? -1 : x > y;
}

GArray *users_uids(const Users *reg) {
        GArray *uids = g_array_new(FALSE, FALSE, sizeof(uid_t));
        GHashTableIter it;
        gpointer k;

        g_hash_table_iter_init(&it, reg->users);
        while (g_hash_table_iter_next(&it, &k, NULL)) {
                uid_t uid = GPOINTER_TO_UINT(k);
                g_array_append_val(uids, uid);
        }
        g_array_sort(uids, compare_uid);
        return uids;
}

GArray *users_share_uids(const Users *reg, const char *share) {
        GArray *uids = g_array_new(FALSE, FALSE, sizeof(uid_t));
        GHashTableIter it;
        gpointer v;

        g_hash_table_iter_init(&it, reg->users);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const User *u = v;
                if (has_share(u->shares, share))
                        g_array_append_val(uids, u->uid);
        }
        g_array_sort(uids, compare_uid);
        return uids;
}

/* ---- adoption: pending.c reports here ---------------------------------------------------- */

/* A pinned namespace adopted (at start, or by a retry). */
static void adopt_pinned(Users *reg, UserNs *ns) {
        char name[FDSTORE_NAME_MAX];
        UserAddFlags flags = 0;
        User *u = users_get(reg, ns->uid);
        _cleanup_close_ int stored = -1;
        struct stat st;

        if (u) {
                /* held already (from the fd store, while its pin was pending) */
                if (u->ns->ns_inode == ns->ns_inode) {
                        u->ns->pinned = true;
                        log_debug("The pin of uid %u is the namespace nsd holds already",
                                  (unsigned) ns->uid);
                        /* pinned now: its room in the fd store may go to one without a pin */
                        (void) user_store(u);
                        if (!reg->starting)
                                users_store_more(reg);
                } else
                        log_error("The pin of uid %u (mnt:[%" PRIu64 "]) is another namespace "
                                  "than the one nsd holds from the fd store (mnt:[%" PRIu64 "]); "
                                  "keeping the one held, the pin stays untouched",
                                  (unsigned) ns->uid, ns->ns_inode, u->ns->ns_inode);
                userns_free(ns);
                return;
        }
        /* the fd store's copy, cross-checked: the pin wins */
        stored = fdstore_take(reg->fdstore, fdstore_ns_name(name, ns->uid));
        if (stored >= 0) {
                if (fstat(stored, &st) >= 0 && (uint64_t) st.st_ino == ns->ns_inode)
                        flags |= USER_ADD_FD_STORED; /* the store holds this very one */
                else {
                        log_error("The fd store's '%s' is another namespace (mnt:[%llu]) than "
                                  "the pinned one (mnt:[%" PRIu64 "]); using the pinned one and "
                                  "storing it instead",
                                  name, (unsigned long long) st.st_ino, ns->ns_inode);
                        (void) fdstore_remove(reg->fdstore, name);
                }
        }
        u = users_add(reg, ns, NULL, flags);
        log_event(LOG_DEBUG, 0, ns->uid, "namespace-adopted",
                  "Adopted the namespace of uid %u (mnt:[%" G_GUINT64_FORMAT "])%s",
                  (unsigned) ns->uid, ns->ns_inode,
                  (flags & USER_ADD_FD_STORED) ? ", also in the fd store" : "");
        if (!reg->starting) { /* adopted by a retry: as at start, users_start() */
                users_joined(reg, u);
                users_changed(reg);
        }
}

/* A namespace the fd store kept adopted (its pin is gone, or was refused). */
static void adopt_stored(Users *reg, UserNs *ns) {
        User *u;

        if (users_get(reg, ns->uid)) { /* its pin was adopted meanwhile */
                userns_free(ns);
                return;
        }
        u = users_add(reg, ns, NULL, USER_ADD_FD_STORED);
        log_event(LOG_NOTICE, 0, u->uid, "namespace-adopted",
                  "Adopted the namespace of uid %u (mnt:[%" PRIu64 "]) from the service "
                  "manager's fd store",
                  (unsigned) u->uid, u->ns->ns_inode);
        if (!reg->starting) { /* at start users_start() pins, counts down and says so */
                users_joined(reg, u);
                users_repin(reg);
                users_changed(reg);
        }
}

static void on_adopt(UserNs *ns, PendingSource from, void *userdata) {
        if (from == PENDING_FROM_PIN)
                adopt_pinned(userdata, ns);
        else
                adopt_stored(userdata, ns);
}

/* ---- sessions ---------------------------------------------------------------------------- */

unsigned users_count_sessions(const Users *reg) {
        return g_hash_table_size(reg->sessions);
}

unsigned users_sessions_of(const Users *reg, uid_t uid) {
        User *u = users_get(reg, uid);
        GPtrArray *w = g_hash_table_lookup(reg->waiting, GUINT_TO_POINTER(uid));

        return (u ? u->sessions->len : 0) + (w ? w->len : 0);
}

static unsigned count_by(GPtrArray *a, bool by_user) {
        unsigned n = 0;

        for (guint i = 0; a && i < a->len; i++)
                n += ((const Session *) g_ptr_array_index(a, i))->by_user == by_user;
        return n;
}

unsigned users_sessions_by(const Users *reg, uid_t uid, bool by_user) {
        User *u = users_get(reg, uid);

        return count_by(u ? u->sessions : NULL, by_user) +
               count_by(g_hash_table_lookup(reg->waiting, GUINT_TO_POINTER(uid)), by_user);
}

/* A session's leader is gone: it ends (Session.on_exit). */
static void on_session_exit(Session *sess, void *userdata) {
        users_end_session(userdata, sess);
}

static uint64_t session_next_id(Users *reg) {
        uint64_t id;

        do
                id = reg->next_session_id++;
        while (id == 0 || g_hash_table_contains(reg->sessions, &id));
        return id;
}

Session *users_open_session(Users *reg, User *u, pid_t pid, const char *service, int pidfd,
                            uid_t opener) {
        Session *sess = session_new(session_next_id(reg), u->uid, pid,
                                    session_leader_start_time(pid, pidfd), service, pidfd,
                                    reg->fdstore, reg->state, on_session_exit, reg);

        sess->by_user = opener != 0;
        g_hash_table_insert(reg->sessions, &sess->id, sess);
        session_attach(reg, sess, u);
        session_persist(sess);
        log_event_by(opener, LOG_INFO, 0, u->uid, "session-opened",
                     "Session %" G_GUINT64_FORMAT " of uid %u opened (pid %u, '%s'%s), %u live",
                     sess->id, (unsigned) u->uid, (unsigned) sess->pid, sess->service,
                     sess->by_user ? ", by the user" : "", u->sessions->len);
        users_changed(reg);
        return sess;
}

Session *users_find_session(const Users *reg, uid_t uid, uint64_t id, pid_t pid) {
        GHashTableIter it;
        gpointer v;
        Session *sess;

        if (id != 0) {
                sess = g_hash_table_lookup(reg->sessions, &id);
                if (sess && (sess->uid != uid || (pid != 0 && pid != sess->pid)))
                        return NULL;
                return sess;
        }
        g_hash_table_iter_init(&it, reg->sessions);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                sess = v;
                if (sess->uid == uid && sess->pid == pid)
                        return sess;
        }
        return NULL;
}

void users_end_session(Users *reg, Session *sess) {
        User *u = sess->user;

        session_remove(reg, sess);
        if (u && u->sessions->len == 0) {
                char buf[64];
                log_debug("Last session of uid %u ended, %s", (unsigned) u->uid,
                          config_linger_to_string(reg->config, buf, sizeof buf));
                linger_arm(reg->linger, u->uid, 0);
                volumes_idle_arm(reg, u, VOLUMES_IDLE_FIRST_SEC);
        }
        users_changed(reg);
}

/* At start, after the namespaces: the sessions of the state files, checked against their
 * leaders (session.h). */
static void users_restore_sessions(Users *reg) {
        g_auto(GStrv) names = state_list(reg->state, STATE_SESSION_PREFIX);
        unsigned restored = 0, ended = 0, waiting = 0;

        for (char **n = names; *n; n++) {
                Session *sess = NULL;
                uint64_t id;
                User *u;
                int r;

                if (!session_id_from_name(*n, &id) || g_hash_table_contains(reg->sessions, &id)) {
                        state_remove(reg->state, *n);
                        continue;
                }
                r = session_restore(*n, id, reg->fdstore, reg->state, on_session_exit, reg, &sess);
                if (r < 0)
                        continue; /* cannot tell now: kept for the next start */
                if (r == 0) {
                        ended++;
                        continue;
                }
                g_hash_table_insert(reg->sessions, &sess->id, sess);
                u = users_get(reg, sess->uid);
                if (u)
                        session_attach(reg, sess, u);
                else {
                        GPtrArray *w = g_hash_table_lookup(reg->waiting,
                                                           GUINT_TO_POINTER(sess->uid));
                        if (!w) {
                                w = g_ptr_array_new();
                                g_hash_table_insert(reg->waiting, GUINT_TO_POINTER(sess->uid), w);
                        }
                        g_ptr_array_add(w, sess);
                        waiting++;
                }
                restored++;
        }
        if (restored || ended)
                log_info("Restored %u sessions (%u waiting for their namespace); %u ended while "
                         "nsd was not running",
                         restored, waiting, ended);
}

/* ---- start ------------------------------------------------------------------------------- */

void users_start(Users *reg) {
        GHashTableIter it;
        gpointer v;

        reg->starting = true;
        /* the pins, then the fd store's namespaces whose pins are gone (or were refused) */
        (void) pending_start(reg->pending, on_adopt, reg);
        users_repin(reg);
        users_restore_sessions(reg);
        users_prune_state(reg);
        /* a countdown under way when nsd stopped starts again, at least the JOIN grace */
        g_hash_table_iter_init(&it, reg->users);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                users_joined(reg, v);
                /* Release=last-session volumes of a user without sessions: looked at */
                volumes_idle_arm(reg, v, LINGER_JOIN_GRACE_SEC);
        }
        fdstore_drop_unclaimed(reg->fdstore);
        /* what nobody claimed is out: room for namespaces the budget refused meanwhile */
        users_store_more(reg);
        reg->starting = false;
}

/* ---- Release=last-session: a user's volumes unmounted once nothing of the user is left ---- */

/* u's mounted volume with Release=last-session to unmount next (the last mounted first), or
 * NULL. */
static const UserVolume *idle_volume(const User *u) {
        for (size_t i = u->n_volumes; i-- > 0;)
                if (u->volumes[i].release_last && u->volumes[i].outcome == VOLUME_OUTCOME_MOUNTED)
                        return &u->volumes[i];
        return NULL;
}

static gboolean on_idle_timer(gpointer userdata);

static void idle_rearm(IdleCheck *ic, unsigned sec) {
        g_clear_handle_id(&ic->timer, g_source_remove);
        ic->timer = sec == 0 ? g_idle_add(on_idle_timer, ic)
                             : g_timeout_add_seconds(sec, on_idle_timer, ic);
}

/* Look at u (no session) for its Release=last-session volumes after sec seconds; nothing
 * when it has none mounted. */
static void volumes_idle_arm(Users *reg, const User *u, unsigned sec) {
        IdleCheck *ic;

        if (!idle_volume(u) || u->sessions->len > 0)
                return;
        ic = g_hash_table_lookup(reg->idle, GUINT_TO_POINTER(u->uid));
        if (!ic) {
                ic = g_new0(IdleCheck, 1);
                ic->reg = reg;
                ic->uid = u->uid;
                g_hash_table_insert(reg->idle, GUINT_TO_POINTER(u->uid), ic);
        }
        if (!ic->busy)
                idle_rearm(ic, sec);
}

/* A callback of ic ended: false when ic is done for (the registry, or its entry, is gone:
 * then freed). */
static bool idle_back(IdleCheck *ic) {
        ic->busy = false;
        if (!ic->reg) {
                g_free(ic);
                return false;
        }
        return true;
}

/* ic's user, when it still has no session and such a volume mounted; else its entry goes. */
static User *idle_user(IdleCheck *ic) {
        User *u = users_get(ic->reg, ic->uid);

        if (u && u->sessions->len == 0 && idle_volume(u))
                return u;
        g_hash_table_remove(ic->reg->idle, GUINT_TO_POINTER(ic->uid)); /* frees ic */
        return NULL;
}

static void on_idle_stopped(int r, const char *why, const UserVolume *v, bool changed,
                            void *userdata) {
        IdleCheck *ic = userdata;

        (void) v;
        (void) changed;
        if (!idle_back(ic) || !idle_user(ic))
                return;
        /* held (volume-busy, said once): looked at again; else the next volume at once */
        if (r < 0)
                log_debug("Volume release at the last session of uid %u waits: %s",
                          (unsigned) ic->uid, why ? why : g_strerror(-r));
        idle_rearm(ic, r < 0 ? VOLUMES_IDLE_RECHECK_SEC : 0);
}

static void on_idle_scanned(NsProcs *procs, int err, void *userdata) {
        IdleCheck *ic = userdata;
        g_autofree char *why = NULL;
        const UserVolume *v;
        pid_t pid = 0;
        User *u;
        int r;

        if (!idle_back(ic) || !(u = idle_user(ic))) {
                nsprocs_free(procs);
                return;
        }
        if (err < 0 || nsprocs_count(procs, u->ns->ns_inode, &pid) > 0) {
                /* a process is left (a tmux server, a nohup job), or nobody can tell */
                if (err >= 0)
                        log_debug("Volumes of uid %u with Release=last-session stay: pid %d is "
                                  "still in its namespace",
                                  (unsigned) ic->uid, (int) pid);
                nsprocs_free(procs);
                idle_rearm(ic, VOLUMES_IDLE_RECHECK_SEC);
                return;
        }
        nsprocs_free(procs);
        v = idle_volume(u);
        ic->busy = true;
        r = users_volume_stop(ic->reg, u, v->name, false,
                              "last session ended, no process left in the namespace "
                              "(Release=last-session)",
                              on_idle_stopped, ic, &why);
        if (r > 0)
                return; /* on_idle_stopped() */
        ic->busy = false;
        if (r < 0) /* another start or stop runs, the namespace is released: later */
                log_debug("Volume '%s' of uid %u not released at the last session yet: %s", v->name,
                          (unsigned) ic->uid, why);
        idle_rearm(ic, r < 0 ? VOLUMES_IDLE_RECHECK_SEC : 0);
}

static gboolean on_idle_timer(gpointer userdata) {
        IdleCheck *ic = userdata;

        ic->timer = 0;
        if (!idle_user(ic))
                return G_SOURCE_REMOVE;
        ic->busy = true;
        nsprocs_scan_async(ic->reg->proc_dir, getpid(), ic->reg->self_ns_inode, on_idle_scanned,
                           ic);
        return G_SOURCE_REMOVE;
}
