/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * setup.c: a new namespace's contents, see setup.h.
 *
 * The plan (in nsd) holds every string the child needs, so the child allocates nothing: it
 * runs in a forked copy of nsd (child.c), which has other threads' locks in whatever state
 * they were, so it calls only plain system calls and reports through its argument struct,
 * which child.c sends back. The parent turns the report into log lines and the client's
 * reason.
 */
#include "domain/setup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/loop.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/helper.h"
#include "base/log.h"
#include "cleanup.h"
#include "kernel-abi.h"
#include "store/mounts.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* 32-bit ids: where the plain call takes 16-bit ones (i386, arm) the *32 call is libc's */
#ifdef SYS_setgroups32
#define NR_SETGROUPS SYS_setgroups32
#else
#define NR_SETGROUPS SYS_setgroups
#endif

/* The init scripts' environment. */
#define SETUP_SCRIPT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* ---- the plan --------------------------------------------------------------------------- */

/* A path to resolve: relative to / (as root) or to the home directory (as the user). */
typedef struct Walk {
        char *path;      /* absolute, for messages and the scripts */
        bool user;       /* beneath the home directory, with the user's identity */
        const char *rel; /* into path: what to resolve from the base ("." for the base) */
} Walk;

typedef struct PlanPolydir {
        const Polydir *conf; /* into the plan's copy of the configuration */
        Walk dir;
        /* Method=user */
        Walk iparent;             /* the instance's parent */
        Walk iparent_dir;         /* the parent's parent, to make the parent when missing */
        const char *iparent_name; /* its last component; NULL: cannot be made (the base) */
        char *iname;              /* the instance's name in iparent */
        char *instance;           /* iparent/iname, for the script */
        /* tmpfs: fsconfig() */
        bool options_mode, options_uid, options_gid;
        const char *script; /* NULL: none */
} PlanPolydir;

typedef struct PlanShare {
        const Share *conf; /* into the plan's copy of the configuration */
        Walk dir;          /* Path=, resolved as root in the host's and the user's namespace */
        char *anchor;      /* its anchor's name (share_anchor_name()) */
        char *staging;     /* ".new-" + anchor: where its anchor is made before it is in place */
        bool left_out;     /* setup_plan_leave_out_share() */
} PlanShare;

typedef struct PlanVolume {
        const Volume *conf; /* into the plan's copy of the configuration */
        Walk where;         /* Where=, as a polydir's Path= */
        char *source;       /* Source=, expanded */
        char *key_file;     /* KeyFile=, expanded; NULL: none */
        /* what the run did (on_setup_done()) */
        VolumeOutcome outcome;
        int err;
        char *why;
        uint32_t loop; /* loop device number + 1; 0: none */
        bool already;  /* a run of this volume alone found it mounted on Where= already */
} PlanVolume;

struct SetupPlan {
        SetupConf conf; /* a copy: the plan lives as long as its run */
        uid_t uid;
        gid_t gid;
        char *user_name;
        char *home;     /* normalised: no trailing '/' (but "/") */
        char *home_rel; /* home + 1, "." for "/", "" for a home that is not absolute */
        gid_t *groups;
        size_t n_groups;
        PlanPolydir *polydirs;
        size_t n_polydirs;
        PlanShare *shares; /* the shares the user is a member of */
        size_t n_shares;
        PlanVolume *volumes; /* the volumes the user is a member of */
        size_t n_volumes;
        int pinns_fd, pin_dir_fd; /* setup_plan_set_pin_namespace(), the caller's; -1: none */
        ssize_t only_volume;      /* setup_plan_only_volume(): its index; -1: the whole setup */
        ChildClass child_class;   /* CHILD_SYSTEM, or CHILD_USER for a user's own request */
};

/* What a specifier stands for, or NULL (then *ret_why). */
static char *specifier(char c, const SetupUser *u) {
        switch (c) {
        case 'u':
                return g_strdup(u->name);
        case 'U':
                return g_strdup_printf("%u", (unsigned) u->uid);
        case 'g':
                return u->group ? g_strdup(u->group) : g_strdup_printf("%u", (unsigned) u->gid);
        case '%':
                return g_strdup("%");
        default:
                g_assert_not_reached();
        }
}

/* t with its specifiers; %h (only at the start, setup-conf.c) is the home. The result must
 * be a clean absolute path (or, with prefix, a clean path once a name is appended). */
static int expand(const char *t, const SetupPlan *plan, const SetupUser *u, char **ret,
                  char **ret_why) {
        g_autoptr(GString) s = g_string_new(NULL);
        const char *p = t;

        if (g_str_has_prefix(t, "%h")) {
                g_string_append(s, strcmp(plan->home, "/") == 0 ? "" : plan->home);
                p += 2;
        }
        for (; *p; p++) {
                g_autofree char *v = NULL;

                if (*p != '%') {
                        g_string_append_c(s, *p);
                        continue;
                }
                p++;
                v = specifier(*p, u);
                if (*p != '%' && (strchr(v, '/') || v[0] == '\0' || strcmp(v, ".") == 0 ||
                                  strcmp(v, "..") == 0)) {
                        *ret_why = g_strdup_printf("'%s': %%%c stands for '%s', which cannot be "
                                                   "part of a path",
                                                   t, *p, v);
                        return -EINVAL;
                }
                g_string_append(s, v);
        }
        if (s->len == 0)
                g_string_append_c(s, '/');
        if (s->len >= PATH_MAX) {
                *ret_why = g_strdup_printf("'%s' is longer than %d bytes for uid %u", t,
                                           PATH_MAX - 1, (unsigned) u->uid);
                return -EINVAL;
        }
        *ret = g_string_free(g_steal_pointer(&s), FALSE);
        return 0;
}

/* A walk to path (absolute); user: beneath the home directory. */
static void walk_init(Walk *w, char *path /* taken */, bool user, const SetupPlan *plan) {
        size_t h = strcmp(plan->home, "/") == 0 ? 0 : strlen(plan->home);

        w->path = path;
        w->user = user;
        if (user) {
                g_assert(strncmp(path, plan->home, h) == 0);
                w->rel = path[h] == '\0' ? "." : path + h + 1;
        } else
                w->rel = path[1] == '\0' ? "." : path + 1;
}

/* The parent of w as a walk of the same base, or false when w is its base. */
static bool walk_parent(const Walk *w, Walk *ret, const char **ret_name, const SetupPlan *plan) {
        const char *slash = strrchr(w->path, '/');
        char *parent;

        if (strcmp(w->rel, ".") == 0)
                return false;
        parent = slash == w->path ? g_strdup("/") : g_strndup(w->path, slash - w->path);
        *ret_name = slash + 1;
        walk_init(ret, parent, w->user, plan);
        return true;
}

static bool valid_home(const char *h) {
        if (!h || h[0] != '/')
                return false;
        for (const char *p = h; *p; p++)
                if (p[0] == '/' && (p[1] == '/' || (p[1] == '.' && (p[2] == '/' || p[2] == '\0')) ||
                                    (p[1] == '.' && p[2] == '.' && (p[3] == '/' || p[3] == '\0'))))
                        return false;
        return true;
}

/* What an object of the plan needs of the user's identity, checked once for polydirs and
 * volumes alike: the name (a specifier, an instance or a script naming the user) and a home
 * that can be walked (%h). -EINVAL with *ret_why naming object. */
static int plan_identity_check(const SetupPlan *plan, const SetupUser *user, const char *object,
                               bool needs_name, bool needs_home, char **ret_why) {
        if (needs_name && !user->name) {
                *ret_why = g_strdup_printf("%s needs the name of uid %u, which has no entry in "
                                           "the user database",
                                           object, (unsigned) user->uid);
                return -EINVAL;
        }
        if (needs_home && !valid_home(plan->home)) {
                *ret_why = g_strdup_printf("%s: the home directory of uid %u ('%s') is not a "
                                           "clean absolute path, so %%h cannot be used",
                                           object, (unsigned) user->uid, plan->home);
                return -EINVAL;
        }
        return 0;
}

/* A polydir's instance or a volume mounted on, under or above the path of a share the user
 * is a member of would travel to the share's other members. The configuration's check
 * compares the paths without a specifier; these, once expanded for this user, are compared
 * here. -EINVAL with *ret_why naming both: desc's key=tmpl, expanded to path. */
static int share_overlap(const SetupPlan *plan, const char *desc, const char *key, const char *tmpl,
                         const char *path, const char *what, char **ret_why) {
        for (size_t i = 0; i < plan->n_shares; i++) {
                const Share *sh = plan->shares[i].conf;
                const char *rel = setup_path_overlap(path, sh->path);
                char sdesc[256];

                if (!rel)
                        continue;
                *ret_why = g_strdup_printf("%s: %s=%s is %s for uid %u, which %s the path of %s: "
                                           "%s would travel to the share's other members",
                                           desc, key, tmpl, path, (unsigned) plan->uid, rel,
                                           share_describe(sh, sdesc, sizeof sdesc), what);
                return -EINVAL;
        }
        return 0;
}

static int plan_share_overlap_check(const SetupPlan *plan, char **ret_why) {
        char desc[256];
        int r;

        for (size_t i = 0; i < plan->n_polydirs; i++) {
                const PlanPolydir *d = &plan->polydirs[i];

                r = share_overlap(plan, polydir_describe(d->conf, desc, sizeof desc), "Path",
                                  d->conf->path, d->dir.path, "its instance", ret_why);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < plan->n_volumes; i++) {
                const PlanVolume *v = &plan->volumes[i];

                r = share_overlap(plan, volume_describe(v->conf, desc, sizeof desc), "Where",
                                  v->conf->where, v->where.path, "its mount", ret_why);
                if (r < 0)
                        return r;
        }
        return 0;
}

int setup_plan_new(const SetupConf *conf, const SetupUser *user, SetupPlan **ret, char **ret_why) {
        g_autoptr(SetupPlan) plan = g_new0(SetupPlan, 1);
        g_autoptr(GArray) dirs = g_array_new(FALSE, TRUE, sizeof(PlanPolydir));
        size_t n;
        int r;

        g_return_val_if_fail(conf && user && ret && ret_why, -EINVAL);

        setup_conf_copy(&plan->conf, conf);
        plan->uid = user->uid;
        plan->gid = user->gid;
        plan->user_name = g_strdup(user->name ? user->name : "");
        plan->groups = g_memdup2(user->groups, user->n_groups * sizeof(gid_t));
        plan->n_groups = user->n_groups;

        /* %h: only polydirs that use it need a usable home */
        n = user->home ? strlen(user->home) : 0;
        while (n > 1 && user->home[n - 1] == '/')
                n--;
        plan->home = user->home ? g_strndup(user->home, n) : g_strdup("");
        /* a home that is not absolute is never walked: valid_home() refuses it below */
        plan->home_rel = plan->home[0] != '/'           ? g_strdup("")
                         : strcmp(plan->home, "/") == 0 ? g_strdup(".")
                                                        : g_strdup(plan->home + 1);

        for (size_t i = 0; i < plan->conf.n_polydirs; i++) {
                const Polydir *c = &plan->conf.polydirs[i];
                PlanPolydir d = { .conf = c };
                g_autofree char *path = NULL, *inst = NULL;
                char desc[256];

                if (!polydir_applies(c, user->name, user->uid))
                        continue;
                /* who the user is decided whether it applies; what it is made of may
                 * need the name too: an instance named after the user, %u %h %g, the init
                 * script's arguments */
                r = plan_identity_check(plan, user, polydir_describe(c, desc, sizeof desc),
                                        c->method == POLYDIR_METHOD_USER || strstr(c->path, "%u") ||
                                                strstr(c->path, "%h") || strstr(c->path, "%g") ||
                                                (!c->no_init &&
                                                 (c->init_script || conf->init_script)),
                                        g_str_has_prefix(c->path, "%h") ||
                                                (c->instance_prefix &&
                                                 g_str_has_prefix(c->instance_prefix, "%h")),
                                        ret_why);
                if (r < 0)
                        return r;
                r = expand(c->path, plan, user, &path, ret_why);
                if (r < 0)
                        return r;
                walk_init(&d.dir, g_steal_pointer(&path), g_str_has_prefix(c->path, "%h"), plan);
                if (c->method == POLYDIR_METHOD_USER) {
                        g_autofree char *whole = NULL;
                        const char *slash;

                        r = expand(c->instance_prefix, plan, user, &inst, ret_why);
                        if (r < 0)
                                return r;
                        whole = g_strconcat(inst, user->name, NULL);
                        if (strchr(user->name, '/') || strcmp(user->name, ".") == 0 ||
                            strcmp(user->name, "..") == 0 || whole[strlen(whole) - 1] == '/' ||
                            strlen(whole) >= PATH_MAX) {
                                *ret_why = g_strdup_printf("%s: the instance '%s' is no path",
                                                           polydir_describe(c, desc, sizeof desc),
                                                           whole);
                                return -EINVAL;
                        }
                        slash = strrchr(whole, '/');
                        d.iname = g_strdup(slash + 1);
                        walk_init(&d.iparent,
                                  slash == whole ? g_strdup("/") : g_strndup(whole, slash - whole),
                                  g_str_has_prefix(c->instance_prefix, "%h"), plan);
                        if (!walk_parent(&d.iparent, &d.iparent_dir, &d.iparent_name, plan))
                                d.iparent_name = NULL;
                        d.instance = g_steal_pointer(&whole);
                }
                d.options_mode = polydir_has_option(c, "mode");
                d.options_uid = polydir_has_option(c, "uid");
                d.options_gid = polydir_has_option(c, "gid");
                if (!c->no_init)
                        d.script = c->init_script ? c->init_script : plan->conf.init_script;
                g_array_append_val(dirs, d);
        }
        plan->n_polydirs = dirs->len;
        plan->polydirs = (PlanPolydir *) (void *) g_array_free(g_steal_pointer(&dirs), FALSE);

        plan->pinns_fd = plan->pin_dir_fd = -1;
        plan->only_volume = -1;
        plan->child_class = CHILD_SYSTEM;
        plan->shares = g_new0(PlanShare, plan->conf.n_shares);
        for (size_t i = 0; i < plan->conf.n_shares; i++) {
                const Share *c = &plan->conf.shares[i];
                PlanShare *s = &plan->shares[plan->n_shares];

                /* groups: the primary one first (policy.h), group_names may be NULL */
                if (!share_has_member(c, user->name, user->uid, user->groups, user->group_names,
                                      user->n_groups))
                        continue;
                if (c->propagation == SHARE_PROPAGATION_PER_USER &&
                    (!user->name || !user->name[0] || strchr(user->name, '/') ||
                     strcmp(user->name, ".") == 0 || strcmp(user->name, "..") == 0)) {
                        char desc[256];
                        *ret_why = g_strdup_printf("%s (Propagation=per-user) needs the name of "
                                                   "uid %u for its directory, and it has none "
                                                   "that can be one",
                                                   share_describe(c, desc, sizeof desc),
                                                   (unsigned) user->uid);
                        return -EINVAL;
                }
                s->conf = c;
                walk_init(&s->dir, g_strdup(c->path), false, plan);
                {
                        char anchor[SHARE_ANCHOR_NAME_MAX];
                        s->anchor = g_strdup(share_anchor_name(c, anchor, sizeof anchor));
                }
                s->staging = g_strconcat(".new-", s->anchor, NULL);
                plan->n_shares++;
        }

        plan->volumes = g_new0(PlanVolume, plan->conf.n_volumes);
        for (size_t i = 0; i < plan->conf.n_volumes; i++) {
                const Volume *c = &plan->conf.volumes[i];
                PlanVolume *v = &plan->volumes[plan->n_volumes];
                g_autofree char *where = NULL, *source = NULL, *key_file = NULL;
                char desc[256];

                if (!volume_has_member(c, user->name, user->uid, user->groups, user->group_names,
                                       user->n_groups))
                        continue;
                r = plan_identity_check(plan, user, volume_describe(c, desc, sizeof desc),
                                        strstr(c->where, "%u") || strstr(c->where, "%h") ||
                                                strstr(c->where, "%g") || strstr(c->source, "%u") ||
                                                (c->key_file && strstr(c->key_file, "%u")),
                                        g_str_has_prefix(c->where, "%h"), ret_why);
                if (r < 0)
                        return r;
                r = expand(c->where, plan, user, &where, ret_why);
                if (r < 0)
                        return r;
                /* a network source is no path: only its specifiers are replaced (%u %U) */
                r = expand(c->source, plan, user, &source, ret_why);
                if (r < 0)
                        return r;
                if (c->key_file) {
                        r = expand(c->key_file, plan, user, &key_file, ret_why);
                        if (r < 0)
                                return r;
                }
                v->conf = c;
                walk_init(&v->where, g_steal_pointer(&where), g_str_has_prefix(c->where, "%h"),
                          plan);
                v->source = g_steal_pointer(&source);
                v->key_file = g_steal_pointer(&key_file);
                plan->n_volumes++;
        }
        r = plan_share_overlap_check(plan, ret_why);
        if (r < 0)
                return r;
        *ret = g_steal_pointer(&plan);
        return 0;
}

void setup_plan_free(SetupPlan *p) {
        if (!p)
                return;
        for (size_t i = 0; i < p->n_polydirs; i++) {
                PlanPolydir *d = &p->polydirs[i];

                g_free(d->dir.path);
                g_free(d->iparent.path);
                g_free(d->iparent_dir.path);
                g_free(d->iname);
                g_free(d->instance);
        }
        g_free(p->polydirs);
        for (size_t i = 0; i < p->n_shares; i++) {
                g_free(p->shares[i].dir.path);
                g_free(p->shares[i].staging);
                g_free(p->shares[i].anchor);
        }
        g_free(p->shares);
        for (size_t i = 0; i < p->n_volumes; i++) {
                g_free(p->volumes[i].where.path);
                g_free(p->volumes[i].source);
                g_free(p->volumes[i].key_file);
                g_free(p->volumes[i].why);
        }
        g_free(p->volumes);
        setup_conf_done(&p->conf);
        g_free(p->user_name);
        g_free(p->home);
        g_free(p->home_rel);
        g_free(p->groups);
        g_free(p);
}

bool setup_plan_is_empty(const SetupPlan *p) {
        for (size_t i = 0; i < p->n_shares; i++)
                if (!p->shares[i].left_out)
                        return false;
        return p->n_polydirs == 0 && p->conf.n_binds == 0 && p->n_volumes == 0;
}

size_t setup_plan_n_volumes(const SetupPlan *p) {
        return p->n_volumes;
}

const Volume *setup_plan_volume(const SetupPlan *p, size_t i) {
        return i < p->n_volumes ? p->volumes[i].conf : NULL;
}

VolumeOutcome setup_plan_volume_outcome(const SetupPlan *p, size_t i, int *ret_err,
                                        const char **ret_why, uint32_t *ret_loop) {
        const PlanVolume *v;

        g_return_val_if_fail(i < p->n_volumes, VOLUME_OUTCOME_UNKNOWN);
        v = &p->volumes[i];
        *ret_err = v->outcome == VOLUME_OUTCOME_FAILED ? v->err : 0;
        *ret_why = v->outcome == VOLUME_OUTCOME_FAILED ? v->why : NULL;
        *ret_loop = v->loop;
        return v->outcome;
}

bool setup_plan_volume_already(const SetupPlan *p, size_t i) {
        return i < p->n_volumes && p->volumes[i].already;
}

int setup_plan_only_volume(SetupPlan *p, const char *name, bool by_user) {
        for (size_t i = 0; i < p->n_volumes; i++) {
                if (!g_str_equal(p->volumes[i].conf->name, name))
                        continue;
                if (p->volumes[i].conf->kind == VOLUME_KIND_FUSE)
                        return -EOPNOTSUPP;
                p->only_volume = (ssize_t) i;
                p->child_class = by_user ? CHILD_USER : CHILD_SYSTEM;
                for (size_t j = 0; j < p->n_shares; j++) /* no share, nor its lock */
                        p->shares[j].left_out = true;
                return 0;
        }
        return -ENOENT;
}

ssize_t setup_plan_only(const SetupPlan *p) {
        return p->only_volume;
}

const char *setup_plan_volume_where(const SetupPlan *p, size_t i) {
        return i < p->n_volumes ? p->volumes[i].where.path : NULL;
}

const char *setup_plan_volume_source(const SetupPlan *p, size_t i) {
        return i < p->n_volumes ? p->volumes[i].source : NULL;
}

const char *setup_plan_volume_key_file(const SetupPlan *p, size_t i) {
        return i < p->n_volumes ? p->volumes[i].key_file : NULL;
}

size_t setup_plan_n_shares(const SetupPlan *p) {
        return p->n_shares;
}

const Share *setup_plan_share(const SetupPlan *p, size_t i) {
        return i < p->n_shares ? p->shares[i].conf : NULL;
}

bool setup_plan_share_left_out(const SetupPlan *p, size_t i) {
        return i < p->n_shares && p->shares[i].left_out;
}

void setup_plan_leave_out_share(SetupPlan *p, size_t i) {
        if (i < p->n_shares)
                p->shares[i].left_out = true;
}

void setup_plan_set_pin_namespace(SetupPlan *p, int pinns_fd, int pin_dir_fd) {
        p->pinns_fd = pinns_fd;
        p->pin_dir_fd = pin_dir_fd;
}

size_t setup_plan_n_polydirs(const SetupPlan *p) {
        return p->n_polydirs;
}

const char *setup_plan_polydir_path(const SetupPlan *p, size_t i) {
        return i < p->n_polydirs ? p->polydirs[i].dir.path : NULL;
}

/* ---- the child ------------------------------------------------------------------------- */

/* Why a step was refused (no system call failed: what was found is not allowed). */
enum refusal {
        REFUSAL_NONE,
        REFUSAL_OWNER,         /* a polydir owned by someone else */
        REFUSAL_IPARENT,       /* an instance parent with the wrong owner or mode */
        REFUSAL_INSTANCE,      /* an existing instance owned by someone else */
        REFUSAL_TYPE,          /* a bind of a directory onto a file, or back */
        REFUSAL_SCRIPT,        /* an init script that is not root's, or writable by others */
        REFUSAL_SCRIPT_STATUS, /* it exited non-zero, or was killed */
        REFUSAL_SCRIPT_TIME,   /* it was still running near the deadline */
        REFUSAL_ROUTE_DIR,     /* a route's Path=/USER on the host that is not safe: the
                                * member's namespace is made without the route */
        REFUSAL_VOLUME_SOURCE, /* a volume's image not root's or writable by others, a block
                                * device not root's, or neither */
        REFUSAL_VOLUME_WHERE,  /* a volume started alone: another file system is mounted on
                                * its Where= (nothing is stacked on it) */
};

/* Which path of an item a step was at. */
enum what {
        WHAT_NONE,
        WHAT_HOME,
        WHAT_DIR,
        WHAT_IPARENT,
        WHAT_INSTANCE,
        WHAT_SOURCE,
        WHAT_TARGET,
        WHAT_SCRIPT,
        WHAT_HOST,   /* a share's Path= in the host's namespace */
        WHAT_ANCHOR, /* a share's anchor in the pin namespace */
};

struct item_result {
        int step; /* enum helper_step of the failure; 0: none */
        int err;
        int refusal;
        int what;
        uint32_t found_uid, found_gid, found_mode;
        int status; /* the init script's wait status (si_code << 16 | si_status) */
        bool done;  /* mounted */
        bool made;  /* a share's anchor was made now (it was not there) */
        bool new_instance;
        bool script_ran;
        bool looped; /* a volume's image is on /dev/loop<loop_nr> */
        uint32_t loop_nr;
        bool already; /* a volume run alone found it mounted on Where= already */
};

struct setup_args {
        const SetupPlan *plan; /* nsd's memory, which the child has a copy of */
        int ns_fd, out_fd;
        uint64_t script_deadline_usec; /* CLOCK_MONOTONIC */
        bool keep_going;
        struct helper_status s; /* a failure before any item (entering the namespace) */
        unsigned n_failed;
        struct item_result binds[SETUP_MAX_BINDS];
        struct item_result polydirs[SETUP_MAX_POLYDIRS];
        struct item_result shares[SETUP_MAX_SHARES];
        struct item_result volumes[SETUP_MAX_VOLUMES];
};

static int item_fail(struct item_result *res, int step, int what) {
        res->step = step;
        res->what = what;
        res->err = errno > 0 ? errno : EIO;
        return -1;
}

static int item_refuse(struct item_result *res, int refusal, int what, const struct stat *st) {
        res->step = HELPER_STEP_SETUP_CHECK;
        res->refusal = refusal;
        res->what = what;
        res->err = refusal == REFUSAL_SCRIPT_STATUS  ? EPROTO
                   : refusal == REFUSAL_SCRIPT_TIME  ? ETIMEDOUT
                   : refusal == REFUSAL_VOLUME_WHERE ? EBUSY
                                                     : EPERM;
        if (st) {
                res->found_uid = st->st_uid;
                res->found_gid = st->st_gid;
                res->found_mode = st->st_mode;
        }
        return -1;
}

static void close_fd(int *fd) {
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

/* The file system identity to walk with: the user's (fsuid, fsgid, groups) or root's. */
static int walk_as(const struct setup_args *a, bool user) {
        const SetupPlan *p = a->plan;
        uid_t uid, gid;

        /* root's own setup (a test in a user namespace) is walked as root: nothing to take */
        user = user && p->uid != 0;
        uid = user ? p->uid : 0;
        gid = user ? p->gid : 0;
        if (user && syscall(NR_SETGROUPS, p->n_groups, p->groups) < 0)
                return -1;
        (void) setfsgid(gid);
        (void) setfsuid(uid);
        if ((uid_t) setfsuid((uid_t) -1) != uid || (gid_t) setfsgid((gid_t) -1) != gid) {
                errno = EPERM;
                return -1;
        }
        return 0;
}

struct bases {
        int root; /* "/" of the namespace */
        int home; /* the user's home directory, -1 until needed */
};

/* Resolve w (flags: O_PATH | O_DIRECTORY and such) into *ret, with the identity it needs. */
static int walk(const struct setup_args *a, struct bases *b, const Walk *w, int flags,
                struct item_result *res, int what, int *ret) {
        if (walk_as(a, false) < 0)
                return item_fail(res, HELPER_STEP_FSUID, what);
        if (w->user && b->home < 0) {
                b->home = helper_open_beneath(b->root, a->plan->home_rel, O_PATH | O_DIRECTORY);
                if (b->home < 0)
                        return item_fail(res, HELPER_STEP_SETUP_RESOLVE, WHAT_HOME);
        }
        if (w->user && walk_as(a, true) < 0)
                return item_fail(res, HELPER_STEP_FSUID, what);
        *ret = helper_open_beneath(w->user ? b->home : b->root, w->rel, flags);
        if (*ret < 0)
                return item_fail(res, HELPER_STEP_SETUP_RESOLVE, what);
        return 0;
}

/* A mount point: w walked to as a directory into *ret, refused unless it is root's or the
 * user's; its stat into *ret_st. */
static int walk_mount_point(const struct setup_args *a, struct bases *b, const Walk *w,
                            struct item_result *res, int what, int *ret, struct stat *ret_st) {
        if (walk(a, b, w, O_PATH | O_DIRECTORY, res, what, ret) < 0)
                return -1;
        if (fstat(*ret, ret_st) < 0)
                return item_fail(res, HELPER_STEP_SETUP_CHECK, what);
        if (ret_st->st_uid != 0 && ret_st->st_uid != a->plan->uid)
                return item_refuse(res, REFUSAL_OWNER, what, ret_st);
        return 0;
}

/* A clone of the mount at fd (its submounts too when recursive) with attr applied, or -1. */
static int clone_with_attr(int fd, bool recursive, struct mount_attr *attr, struct item_result *res,
                           int what) {
        unsigned at_recursive = recursive ? AT_RECURSIVE : 0;
        int tree = open_tree(fd, "",
                             OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | at_recursive);

        if (tree < 0)
                return item_fail(res, HELPER_STEP_SETUP_CLONE, what);
        if (mount_setattr(tree, "", AT_EMPTY_PATH | at_recursive, attr, sizeof *attr) < 0) {
                item_fail(res, HELPER_STEP_SETUP_ATTR, what);
                close(tree);
                return -1;
        }
        return tree;
}

/* The item's last step: tree (-1: making it failed, res says why) onto to_fd. */
static int attach_done(int tree, int to_fd, struct item_result *res, int what) {
        if (tree < 0)
                return -1;
        if (move_mount(tree, "", to_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                return item_fail(res, HELPER_STEP_SETUP_ATTACH, what);
        res->done = true;
        return 0;
}

static int do_bind(struct setup_args *a, struct bases *b, const BindReadOnly *bind,
                   struct item_result *res) {
        struct mount_attr attr = {
                .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        };
        Walk src = { .path = bind->source, .rel = bind->source + 1 };
        Walk dst = { .path = bind->target, .rel = bind->target + 1 };
        _cleanup_close_ int sfd = -1, tfd = -1, tree = -1;
        struct stat ss, ts;

        if (walk(a, b, &src, O_PATH, res, WHAT_SOURCE, &sfd) < 0 ||
            walk(a, b, &dst, O_PATH, res, WHAT_TARGET, &tfd) < 0)
                return -1;
        if (fstat(sfd, &ss) < 0 || fstat(tfd, &ts) < 0)
                return item_fail(res, HELPER_STEP_SETUP_CHECK, WHAT_TARGET);
        if (S_ISDIR(ss.st_mode) != S_ISDIR(ts.st_mode))
                return item_refuse(res, REFUSAL_TYPE, WHAT_TARGET, &ts);
        tree = clone_with_attr(sfd, true, &attr, res, WHAT_SOURCE);
        return attach_done(tree, tfd, res, WHAT_TARGET);
}

/* Method=user: the instance directory, made or checked, into *ret_fd. */
static int instance_dir(struct setup_args *a, struct bases *b, const PlanPolydir *d,
                        const struct stat *pst, struct item_result *res, int *ret_fd) {
        const Polydir *c = d->conf;
        _cleanup_close_ int ipfd = -1, dfd = -1, ifd = -1;
        struct stat st;

        if (walk(a, b, &d->iparent, O_PATH | O_DIRECTORY, res, WHAT_IPARENT, &ipfd) < 0) {
                if (res->err != ENOENT || !d->iparent_name)
                        return -1;
                /* make the instance parent: 0000 root's, or 0700 the user's under %h */
                *res = (struct item_result) { 0 };
                if (walk(a, b, &d->iparent_dir, O_PATH | O_DIRECTORY, res, WHAT_IPARENT, &dfd) < 0)
                        return -1;
                if (mkdirat(dfd, d->iparent_name, d->iparent.user ? 0700 : 0000) < 0 &&
                    errno != EEXIST)
                        return item_fail(res, HELPER_STEP_SETUP_MKDIR, WHAT_IPARENT);
                if (walk(a, b, &d->iparent, O_PATH | O_DIRECTORY, res, WHAT_IPARENT, &ipfd) < 0)
                        return -1;
        }
        if (fstat(ipfd, &st) < 0)
                return item_fail(res, HELPER_STEP_SETUP_CHECK, WHAT_IPARENT);
        if (d->iparent.user ? st.st_uid != a->plan->uid || (st.st_mode & 022)
                            : st.st_uid != 0 || (st.st_mode & 077))
                return item_refuse(res, REFUSAL_IPARENT, WHAT_IPARENT, &st);
        /* still with the identity of the parent's walk */
        if (mkdirat(ipfd, d->iname, 0700) >= 0)
                res->new_instance = true;
        else if (errno != EEXIST)
                return item_fail(res, HELPER_STEP_SETUP_MKDIR, WHAT_INSTANCE);
        ifd = helper_open_beneath(ipfd, d->iname, O_RDONLY | O_DIRECTORY);
        if (ifd < 0)
                return item_fail(res, HELPER_STEP_SETUP_RESOLVE, WHAT_INSTANCE);
        if (walk_as(a, false) < 0)
                return item_fail(res, HELPER_STEP_FSUID, WHAT_INSTANCE);
        if (fstat(ifd, &st) < 0)
                return item_fail(res, HELPER_STEP_SETUP_CHECK, WHAT_INSTANCE);
        if (res->new_instance) {
                if ((st.st_uid != pst->st_uid || st.st_gid != pst->st_gid) &&
                    fchown(ifd, pst->st_uid, pst->st_gid) < 0)
                        return item_fail(res, HELPER_STEP_SETUP_OWNER, WHAT_INSTANCE);
                if (fchmod(ifd, c->mode >= 0 ? (mode_t) c->mode : pst->st_mode & 07777) < 0)
                        return item_fail(res, HELPER_STEP_SETUP_OWNER, WHAT_INSTANCE);
        } else if (st.st_uid != pst->st_uid)
                return item_refuse(res, REFUSAL_INSTANCE, WHAT_INSTANCE, &st);
        *ret_fd = TAKE_FD(ifd);
        return 0;
}

static int tmpfs_mount(const PlanPolydir *d, const struct stat *pst, struct item_result *res) {
        const Polydir *c = d->conf;
        char num[24];
        int fs, m;

        fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
        if (fs < 0)
                return item_fail(res, HELPER_STEP_SETUP_TMPFS, WHAT_DIR);
        if ((!d->options_mode &&
             fsconfig(fs, FSCONFIG_SET_STRING, "mode",
                      helper_fmt_uint(num,
                                      c->mode >= 0 ? (unsigned long) c->mode : pst->st_mode & 07777,
                                      8),
                      0) < 0) ||
            (!d->options_uid && fsconfig(fs, FSCONFIG_SET_STRING, "uid",
                                         helper_fmt_uint(num, pst->st_uid, 10), 0) < 0) ||
            (!d->options_gid && fsconfig(fs, FSCONFIG_SET_STRING, "gid",
                                         helper_fmt_uint(num, pst->st_gid, 10), 0) < 0))
                goto fail;
        for (size_t i = 0; i < c->n_options; i++) {
                const MountOption *o = &c->options[i];

                if ((o->value ? fsconfig(fs, FSCONFIG_SET_STRING, o->key, o->value, 0)
                              : fsconfig(fs, FSCONFIG_SET_FLAG, o->key, NULL, 0)) < 0)
                        goto fail;
        }
        if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                goto fail;
        m = fsmount(fs, FSMOUNT_CLOEXEC,
                    (unsigned) (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | c->mount_attr));
        if (m < 0)
                goto fail;
        close(fs);
        return m;
fail:
        item_fail(res, HELPER_STEP_SETUP_TMPFS, WHAT_DIR);
        close(fs);
        return -1;
}

static int do_polydir(struct setup_args *a, struct bases *b, const PlanPolydir *d,
                      struct item_result *res) {
        const Polydir *c = d->conf;
        struct mount_attr attr = {
                .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | c->mount_attr,
                .attr_clr = (c->mount_attr & MOUNT_ATTR__ATIME) ? MOUNT_ATTR__ATIME : 0,
        };
        _cleanup_close_ int pfd = -1, ifd = -1, tree = -1;
        struct stat pst;

        if (walk_mount_point(a, b, &d->dir, res, WHAT_DIR, &pfd, &pst) < 0)
                return -1;
        if (c->method == POLYDIR_METHOD_USER) {
                if (instance_dir(a, b, d, &pst, res, &ifd) < 0)
                        return -1;
                tree = clone_with_attr(ifd, false, &attr, res, WHAT_INSTANCE);
        } else {
                if (walk_as(a, false) < 0)
                        return item_fail(res, HELPER_STEP_FSUID, WHAT_DIR);
                tree = tmpfs_mount(d, &pst, res);
        }
        return attach_done(tree, pfd, res, WHAT_DIR);
}

/* ---- volumes -------------------------------------------------------------------------- */

/* The image fd (checked) on a free loop device, read-only with ro, cleared by the kernel when
 * its last user goes (LO_FLAGS_AUTOCLEAR: the mount, once it is made). The loop device's
 * descriptor into *ret_fd, its name into dev (size >= 32). */
static int loop_attach(const struct setup_args *a, const struct bases *b, int image_fd, bool ro,
                       const char *image, struct item_result *res, char *dev, int *ret_fd) {
        struct loop_config cfg = {
                .fd = (uint32_t) image_fd,
                .info.lo_flags = LO_FLAGS_AUTOCLEAR | (ro ? LO_FLAGS_READ_ONLY : 0),
        };
        int ctl, fd = -1;
        char num[24];

        (void) a;
        strncpy((char *) cfg.info.lo_file_name, image, LO_NAME_SIZE - 1);
        ctl = helper_open_beneath(b->root, "dev/loop-control", O_RDWR);
        if (ctl < 0)
                return item_fail(res, HELPER_STEP_SETUP_LOOP, WHAT_SOURCE);
        /* another process may take the free device first: then the next one */
        for (int i = 0; i < 16; i++) {
                long nr = ioctl(ctl, LOOP_CTL_GET_FREE);

                if (nr < 0)
                        break;
                strcpy(dev, "dev/loop");
                strcat(dev, helper_fmt_uint(num, (unsigned long) nr, 10));
                fd = helper_open_beneath(b->root, dev, O_RDWR);
                if (fd < 0)
                        break;
                if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0) {
                        res->looped = true;
                        res->loop_nr = (uint32_t) nr;
                        break;
                }
                if (errno != EBUSY)
                        break;
                close_fd(&fd);
        }
        if (!res->looped) {
                item_fail(res, HELPER_STEP_SETUP_LOOP, WHAT_SOURCE);
                close_fd(&fd);
                close(ctl);
                return -1;
        }
        close(ctl);
        /* "/dev/loopN", for fsconfig(): /dev is the host's, root's */
        memmove(dev + 1, dev, strlen(dev) + 1);
        dev[0] = '/';
        *ret_fd = fd;
        return 0;
}

/* The volume's source as fsconfig() takes it into src (size >= 32 for a loop device): a
 * block device of root's as it is, an image of root's not writable by others attached to a
 * loop device (*ret_loop_fd), a network type's as it is. */
static int volume_source(const struct setup_args *a, const struct bases *b, const PlanVolume *v,
                         struct item_result *res, const char **ret_src, char *dev,
                         int *ret_loop_fd) {
        bool ro = v->conf->mount_attr & MOUNT_ATTR_RDONLY;
        char proc[32];
        int sfd, ifd;
        struct stat st;

        *ret_src = v->source;
        if (v->conf->kind != VOLUME_KIND_BLOCK)
                return 0;
        /* an administrator's path, resolved as root, no symbolic link on the way */
        sfd = helper_open_beneath(b->root, v->source + 1, O_PATH);
        if (sfd < 0)
                return item_fail(res, HELPER_STEP_SETUP_RESOLVE, WHAT_SOURCE);
        if (fstat(sfd, &st) < 0) {
                close(sfd);
                return item_fail(res, HELPER_STEP_SETUP_CHECK, WHAT_SOURCE);
        }
        if (S_ISBLK(st.st_mode) && st.st_uid == 0) {
                close(sfd);
                return 0;
        }
        /* an image that anyone but root can write is a crafted file system for the kernel */
        if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022)) {
                close(sfd);
                return item_refuse(res, REFUSAL_VOLUME_SOURCE, WHAT_SOURCE, &st);
        }
        /* opened for reading (and writing) through the descriptor that was checked */
        helper_fd_path(proc, sfd);
        ifd = open(proc, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC);
        close(sfd);
        if (ifd < 0)
                return item_fail(res, HELPER_STEP_SETUP_LOOP, WHAT_SOURCE);
        if (loop_attach(a, b, ifd, ro, v->source, res, dev, ret_loop_fd) < 0) {
                close(ifd);
                return -1;
        }
        close(ifd); /* the loop device holds the file */
        *ret_src = dev;
        return 0;
}

/* Where= has another file system (device on) mounted on it: refused (found_uid and found_gid
 * carry the device's numbers for the message). */
static int where_taken(struct item_result *res, dev_t on) {
        struct stat st = { .st_uid = major(on), .st_gid = minor(on) };

        return item_refuse(res, REFUSAL_VOLUME_WHERE, WHAT_TARGET, &st);
}

/* Is the descriptor wfd of Where= the root of a mount of this very volume? 1 (res done and
 * already, with its loop device), 0 (no mount there), -1 (another file system is mounted on
 * Where=: refused, nothing is stacked on it; or a call failed). A block volume is told by its
 * device: a block device Source= by its number, an image by the loop device's backing file
 * (LOOP_GET_STATUS64: its device and inode); a network volume cannot be told apart from
 * another mount: refused too. */
static int volume_here(const struct bases *b, const PlanVolume *v, int wfd,
                       struct item_result *res) {
        struct loop_info64 info;
        struct stat src;
        char dev[32], num[24];
        dev_t on;
        int r, sfd, lfd, idx;

        r = helper_mount_root(wfd, &on);
        if (r < 0)
                return item_fail(res, HELPER_STEP_SETUP_CHECK, WHAT_TARGET);
        if (r == 0)
                return 0;
        if (v->conf->kind != VOLUME_KIND_BLOCK)
                return where_taken(res, on);
        sfd = helper_open_beneath(b->root, v->source + 1, O_PATH);
        if (sfd < 0)
                return item_fail(res, HELPER_STEP_SETUP_RESOLVE, WHAT_SOURCE);
        r = fstat(sfd, &src);
        close(sfd);
        if (r < 0)
                return item_fail(res, HELPER_STEP_SETUP_CHECK, WHAT_SOURCE);
        if (S_ISBLK(src.st_mode)) {
                if (src.st_rdev != on)
                        return where_taken(res, on);
                res->done = res->already = true;
                return 1;
        }
        /* the loop device's own name (its minor is its number only while loop.max_part
         * is 0) */
        idx = mounts_loop_index(on);
        if (idx == -ENODEV)
                return where_taken(res, on);
        if (idx < 0)
                return item_fail(res, HELPER_STEP_SETUP_CHECK, WHAT_TARGET);
        strcpy(dev, "dev/loop");
        strcat(dev, helper_fmt_uint(num, (unsigned long) idx, 10));
        lfd = helper_open_beneath(b->root, dev, O_RDONLY);
        if (lfd < 0)
                return item_fail(res, HELPER_STEP_SETUP_CHECK, WHAT_TARGET);
        r = ioctl(lfd, LOOP_GET_STATUS64, &info);
        close(lfd);
        if (r < 0 && errno != ENXIO) /* ENXIO: cleared meanwhile */
                return item_fail(res, HELPER_STEP_SETUP_CHECK, WHAT_TARGET);
        if (r < 0 || info.lo_device != (uint64_t) src.st_dev || info.lo_inode != src.st_ino)
                return where_taken(res, on);
        res->done = res->already = res->looped = true;
        res->loop_nr = (uint32_t) idx;
        return 1;
}

/* A volume: Where= resolved as a polydir's Path= (as the user under %h, no symbolic link),
 * owned by root or the user; the file system made with the type's options and mounted
 * nosuid,nodev (and the attributes of Options=) on that very descriptor. */
static int do_volume(struct setup_args *a, struct bases *b, const PlanVolume *v,
                     struct item_result *res) {
        const Volume *c = v->conf;
        _cleanup_close_ int wfd = -1, loop = -1, fs = -1, m = -1;
        char dev[32];
        const char *src;
        struct stat wst;

        if (walk_mount_point(a, b, &v->where, res, WHAT_TARGET, &wfd, &wst) < 0)
                return -1;
        if (walk_as(a, false) < 0)
                return item_fail(res, HELPER_STEP_FSUID, WHAT_SOURCE);
        /* a volume started alone in a namespace that exists: mounted there already (a start
         * that nsd did not see end: it stopped meanwhile) is not mounted twice */
        if (a->plan->only_volume >= 0) {
                int r = volume_here(b, v, wfd, res);

                if (r != 0)
                        return r < 0 ? -1 : 0;
        }
        if (volume_source(a, b, v, res, &src, dev, &loop) < 0)
                return -1;
        fs = fsopen(c->type, FSOPEN_CLOEXEC);
        if (fs < 0)
                return item_fail(res, HELPER_STEP_SETUP_MOUNT, WHAT_SOURCE);
        if (fsconfig(fs, FSCONFIG_SET_STRING, "source", src, 0) < 0 ||
            ((c->mount_attr & MOUNT_ATTR_RDONLY) &&
             fsconfig(fs, FSCONFIG_SET_FLAG, "ro", NULL, 0) < 0))
                return item_fail(res, HELPER_STEP_SETUP_MOUNT, WHAT_SOURCE);
        for (size_t i = 0; i < c->n_options; i++) {
                const MountOption *o = &c->options[i];

                if ((o->value ? fsconfig(fs, FSCONFIG_SET_STRING, o->key, o->value, 0)
                              : fsconfig(fs, FSCONFIG_SET_FLAG, o->key, NULL, 0)) < 0)
                        return item_fail(res, HELPER_STEP_SETUP_MOUNT, WHAT_SOURCE);
        }
        if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                return item_fail(res, HELPER_STEP_SETUP_MOUNT, WHAT_SOURCE);
        m = fsmount(fs, FSMOUNT_CLOEXEC,
                    (unsigned) (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | c->mount_attr));
        if (m < 0)
                return item_fail(res, HELPER_STEP_SETUP_MOUNT, WHAT_SOURCE);
        /* the loop device stays as long as the mount (its autoclear) */
        if (attach_done(m, wfd, res, WHAT_TARGET) < 0)
                return -1;
        return 0;
}

static uint64_t mono_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

/* In the script's process: descriptors 0 1 2 and the script at 3, nothing else (but
 * err_fd, close-on-exec, which gets the errno when the script cannot be started); default
 * signals; its own process group; killed with its parent. Then execveat(). */
static _Noreturn void script_exec(const struct setup_args *a, int script_fd, int err_fd,
                                  char *const argv[]) {
        static char *const envp[] = { (char *) SETUP_SCRIPT_PATH, NULL };
        sigset_t none;
        int nul, out, sfd, efd, ef = err_fd, e;

        (void) setpgid(0, 0);
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        sigemptyset(&none);
        for (int sig = 1; sig < _NSIG; sig++)
                (void) signal(sig, SIG_DFL);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
        nul = open("/dev/null", O_RDWR | O_CLOEXEC);
        out = a->out_fd >= 0 ? a->out_fd : nul;
        /* out of the way of 0..3 first */
        sfd = fcntl(script_fd, F_DUPFD_CLOEXEC, 10);
        out = fcntl(out, F_DUPFD_CLOEXEC, 10);
        efd = fcntl(err_fd, F_DUPFD_CLOEXEC, 10);
        if (efd >= 0)
                ef = efd; /* err_fd itself may be overwritten below */
        if (nul < 0 || sfd < 0 || out < 0 || efd < 0 || dup2(nul, 0) < 0 || dup2(out, 1) < 0 ||
            dup2(out, 2) < 0 || dup2(sfd, 3) < 0 || dup2(efd, 4) < 0 ||
            fcntl(4, F_SETFD, FD_CLOEXEC) < 0)
                goto fail;
        (void) syscall(SYS_close_range, 5u, ~0u, 0u);
        ef = 4;
        (void) umask(022);
        (void) chdir("/");
        syscall(SYS_execveat, 3, "", argv, envp, AT_EMPTY_PATH);
fail:
        e = errno > 0 ? errno : EIO;
        (void) !write(ef, &e, sizeof e);
        _exit(127);
}

static int run_script(struct setup_args *a, struct bases *b, const PlanPolydir *d,
                      struct item_result *res) {
        char *argv[] = {
                (char *) d->script,
                d->dir.path,
                d->instance ? d->instance : (char *) "tmpfs",
                (char *) (d->conf->method == POLYDIR_METHOD_TMPFS || res->new_instance ? "1" : "0"),
                a->plan->user_name,
                (char *) "1",
                (char *) "1",
                NULL
        };
        int fd, pidfd = -1, err_pipe[2], exec_err = 0;
        siginfo_t si = { 0 };
        struct stat st;
        long pid;

        if (walk_as(a, false) < 0)
                return item_fail(res, HELPER_STEP_FSUID, WHAT_SCRIPT);
        /* an administrator's path: a symbolic link is fine, the file itself is checked */
        fd = openat(b->root, d->script + 1, O_PATH | O_CLOEXEC);
        if (fd < 0)
                return item_fail(res, HELPER_STEP_SETUP_SPAWN, WHAT_SCRIPT);
        if (fstat(fd, &st) < 0) {
                close(fd);
                return item_fail(res, HELPER_STEP_SETUP_CHECK, WHAT_SCRIPT);
        }
        if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) || !(st.st_mode & 0100)) {
                close(fd);
                return item_refuse(res, REFUSAL_SCRIPT, WHAT_SCRIPT, &st);
        }
        if (pipe2(err_pipe, O_CLOEXEC) < 0) {
                close(fd);
                return item_fail(res, HELPER_STEP_SETUP_SPAWN, WHAT_SCRIPT);
        }
        pid = syscall(SYS_clone, (unsigned long) (CLONE_PIDFD | SIGCHLD), NULL, &pidfd, NULL, 0);
        if (pid == 0) {
                close(err_pipe[0]);
                script_exec(a, fd, err_pipe[1], argv);
        }
        close(fd);
        close(err_pipe[1]);
        if (pid < 0) {
                close(err_pipe[0]);
                return item_fail(res, HELPER_STEP_SETUP_SPAWN, WHAT_SCRIPT);
        }
        /* the errno of a script that could not be started, or nothing once it runs */
        while (read(err_pipe[0], &exec_err, sizeof exec_err) < 0 && errno == EINTR)
                ;
        close(err_pipe[0]);
        if (exec_err > 0) {
                (void) waitid((idtype_t) P_PIDFD, (id_t) pidfd, &si, WEXITED);
                close(pidfd);
                errno = exec_err;
                return item_fail(res, HELPER_STEP_SETUP_SPAWN, WHAT_SCRIPT);
        }
        res->script_ran = true;

        for (;;) {
                struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
                uint64_t now = mono_usec();
                int ms = now >= a->script_deadline_usec
                                 ? 0
                                 : (int) ((a->script_deadline_usec - now + 999) / 1000);
                int n = poll(&pfd, 1, ms);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n > 0)
                        break;
                /* past the deadline: the whole process group */
                (void) kill(-(pid_t) pid, SIGKILL);
                (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                (void) waitid((idtype_t) P_PIDFD, (id_t) pidfd, &si, WEXITED);
                close(pidfd);
                return item_refuse(res, REFUSAL_SCRIPT_TIME, WHAT_SCRIPT, NULL);
        }
        while (waitid((idtype_t) P_PIDFD, (id_t) pidfd, &si, WEXITED) < 0 && errno == EINTR)
                ;
        close(pidfd);
        /* what it started and left running stays, as with pam_namespace */
        res->status = (si.si_code << 16) | (si.si_status & 0xffff);
        if (si.si_code != CLD_EXITED || si.si_status != 0)
                return item_refuse(res, REFUSAL_SCRIPT_STATUS, WHAT_SCRIPT, NULL);
        return 0;
}

/* ---- shares --------------------------------------------------------------------------- */

static int set_propagation(int fd, uint64_t propagation, bool recursive) {
        struct mount_attr attr = { .propagation = propagation };

        return mount_setattr(fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr,
                             sizeof attr);
}

/* Is dir_fd/name (name "": dir_fd itself) the root of a mount (statx, Linux 5.8)? */
static bool is_mount_root(int dir_fd, const char *name) {
        struct statx stx;
        int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (name[0] ? 0 : AT_EMPTY_PATH);

        if (statx(dir_fd, name, flags, STATX_TYPE, &stx) < 0)
                return false;
        return (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
               (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) && S_ISDIR(stx.stx_mode);
}

static bool is_per_user(const PlanShare *s) {
        return s->conf->propagation == SHARE_PROPAGATION_PER_USER;
}

/* May the host's Path=/USER (st, not followed) carry the host's mounts to USER's namespace?
 * Only a directory of root's or of USER's that nobody else may write to: not others, the
 * group only when it is root's or USER's primary group. What udisks makes (root:root 0750
 * with an ACL entry giving USER r-x: the group's bits are the ACL's mask, r-x) and what nsd
 * makes (root's, USER's group, 0750) pass. An ACL entry that lets someone else write shows
 * in the group's bits (the mask), and only the owner (root or USER) can have put it there.
 * Anything else may be what another user made before USER's first login (a Path= others
 * may write to), with that user's FUSE mounts inside, or a symbolic link to elsewhere. */
static bool route_dir_safe(const SetupPlan *plan, const struct stat *st) {
        if (!S_ISDIR(st->st_mode) || (st->st_uid != 0 && st->st_uid != plan->uid) ||
            (st->st_mode & S_IWOTH))
                return false;
        return !(st->st_mode & S_IWGRP) || st->st_gid == 0 || st->st_gid == plan->gid;
}

/* A route (Propagation=per-user), in the host's namespace with the lock held: Path= made a
 * mount of its own in a peer group of its own when it is not a mount (so that the host's
 * mounts under it reach only what is a slave of it, not every copy of the host's root), the
 * member's directory Path=/NAME made when missing (root's, the user's group, 0750, as udisks
 * would) or refused when it is not safe (route_dir_safe(): REFUSAL_ROUTE_DIR, the member
 * goes without the route), and a clone of that directory with its submounts, made a slave:
 * the host's mounts under it come in, nothing goes out. */
static int route_clone(const struct setup_args *a, int root, const PlanShare *s,
                       struct item_result *res, int *ret) {
        const SetupPlan *plan = a->plan;
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
        _cleanup_close_ int pfd = -1, tree = -1, ufd = -1;
        bool made = false;
        struct stat st;

        if (plan->user_name[0] == '\0') {
                errno = ENOENT; /* the plan refuses a nameless member: cannot be */
                return item_fail(res, HELPER_STEP_SETUP_RESOLVE, WHAT_HOST);
        }
        pfd = helper_open_beneath(root, s->dir.rel, O_PATH | O_DIRECTORY);
        if (pfd < 0)
                return item_fail(res, HELPER_STEP_SETUP_RESOLVE, WHAT_HOST);
        if (!is_mount_root(pfd, "")) {
                tree = open_tree(pfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
                if (tree < 0)
                        return item_fail(res, HELPER_STEP_SETUP_CLONE, WHAT_HOST);
                if (set_propagation(tree, MS_PRIVATE, false) < 0 ||
                    set_propagation(tree, MS_SHARED, false) < 0)
                        return item_fail(res, HELPER_STEP_SETUP_PROPAGATION, WHAT_HOST);
                if (attach_done(tree, pfd, res, WHAT_HOST) < 0)
                        return -1;
                close_fd(&tree);
                close_fd(&pfd);
                res->made = true;
                pfd = helper_open_beneath(root, s->dir.rel,
                                          O_PATH | O_DIRECTORY); /* the new mount */
                if (pfd < 0)
                        return item_fail(res, HELPER_STEP_SETUP_RESOLVE, WHAT_HOST);
        }
        /* whatever is there, a symbolic link too (O_PATH | O_NOFOLLOW: the link itself),
         * so that route_dir_safe() judges it */
        ufd = helper_open_beneath(pfd, plan->user_name, O_PATH | O_NOFOLLOW);
        if (ufd < 0 && errno == ENOENT) {
                if (mkdirat(pfd, plan->user_name, 0750) >= 0)
                        made = true;
                else if (errno != EEXIST)
                        return item_fail(res, HELPER_STEP_SETUP_MKDIR, WHAT_HOST);
                ufd = helper_open_beneath(pfd, plan->user_name, O_PATH | O_NOFOLLOW);
        }
        if (ufd < 0)
                return item_fail(res, HELPER_STEP_SETUP_RESOLVE, WHAT_HOST);
        if (fstat(ufd, &st) < 0)
                return item_fail(res, HELPER_STEP_SETUP_CHECK, WHAT_HOST);
        /* the one made now, through its descriptor: what was made is what gets the group
         * (when something else took its name meanwhile, it is judged as found) */
        if (made && S_ISDIR(st.st_mode) && st.st_uid == 0 && st.st_gid != plan->gid) {
                if (fchownat(ufd, "", 0, plan->gid, AT_EMPTY_PATH) < 0)
                        return item_fail(res, HELPER_STEP_SETUP_MKDIR, WHAT_HOST);
                st.st_gid = plan->gid;
        }
        if (!route_dir_safe(plan, &st))
                return item_refuse(res, REFUSAL_ROUTE_DIR, WHAT_HOST, &st);
        *ret = open_tree(ufd, "",
                         OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
        if (*ret < 0)
                return item_fail(res, HELPER_STEP_SETUP_CLONE, WHAT_HOST);
        if (set_propagation(*ret, MS_SLAVE, true) < 0) {
                item_fail(res, HELPER_STEP_SETUP_PROPAGATION, WHAT_HOST);
                close_fd(ret);
                return -1;
        }
        if (mount_setattr(*ret, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
                item_fail(res, HELPER_STEP_SETUP_ATTR, WHAT_HOST);
                close_fd(ret);
                return -1;
        }
        return 0;
}

/* In the pin namespace, with <run_dir>/shares locked (sd, also the working directory): the
 * anchor of s, made from host_tree when it is not there, and a clone of it into *ret. */
static int anchor_clone(const PlanShare *s, int sd, int host_tree, struct item_result *res,
                        int *ret) {
        const char *name = s->anchor;
        _cleanup_close_ int stage = -1, afd = -1;

        if (is_mount_root(sd, name))
                *res = (struct item_result) { 0 }; /* whatever the host's Path= was: not needed */
        else {
                struct mount_attr attr = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
                bool rec = s->conf->propagation != SHARE_PROPAGATION_MEMBERS;

                if (host_tree < 0) { /* the host's Path= could not be cloned: said already */
                        errno = res->err;
                        return -1;
                }
                /* what a make that stopped half way left: nobody's peer yet (never moved) */
                for (int i = 0; i < 16 && umount2(s->staging, MNT_DETACH | UMOUNT_NOFOLLOW) == 0;
                     i++)
                        ;
                if ((mkdirat(sd, s->staging, 0700) < 0 && errno != EEXIST) ||
                    (mkdirat(sd, name, 0700) < 0 && errno != EEXIST))
                        return item_fail(res, HELPER_STEP_SETUP_MKDIR, WHAT_ANCHOR);
                /* out of the host's peer group before it is attached anywhere, so that no
                 * mount of the host's comes in meanwhile (tests/kernel/progs/share-peers: all
                 * four images allow it on a detached mount; where a kernel does not, it is
                 * done below, once attached) */
                if (s->conf->propagation == SHARE_PROPAGATION_MEMBERS)
                        (void) set_propagation(host_tree, MS_PRIVATE, false);
                if (move_mount(host_tree, "", sd, s->staging, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                        return item_fail(res, HELPER_STEP_SETUP_ATTACH, WHAT_ANCHOR);
                stage = openat(sd, s->staging, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (stage < 0)
                        return item_fail(res, HELPER_STEP_SETUP_RESOLVE, WHAT_ANCHOR);
                if (mount_setattr(stage, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
                        return item_fail(res, HELPER_STEP_SETUP_ATTR, WHAT_ANCHOR);
                /* members: out of the host's peer group, into one of its own; host: a slave
                 * of the host's mount that is shared with the members; both: stays the
                 * host's peer */
                if ((s->conf->propagation == SHARE_PROPAGATION_MEMBERS &&
                     set_propagation(stage, MS_PRIVATE, false) < 0) ||
                    (s->conf->propagation == SHARE_PROPAGATION_HOST &&
                     set_propagation(stage, MS_SLAVE, true) < 0) ||
                    set_propagation(stage, MS_SHARED, rec) < 0)
                        return item_fail(res, HELPER_STEP_SETUP_PROPAGATION, WHAT_ANCHOR);
                if (move_mount(stage, "", sd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                        return item_fail(res, HELPER_STEP_SETUP_ATTACH, WHAT_ANCHOR);
                (void) unlinkat(sd, s->staging, AT_REMOVEDIR);
                res->made = true;
        }
        afd = openat(sd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (afd < 0)
                return item_fail(res, HELPER_STEP_SETUP_RESOLVE, WHAT_ANCHOR);
        /* a clone of a shared mount joins its peer group */
        *ret = open_tree(afd, "",
                         OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
        if (*ret < 0)
                return item_fail(res, HELPER_STEP_SETUP_CLONE, WHAT_ANCHOR);
        return 0;
}

/* Still in nsd's namespace (the host's): a clone of each share's anchor into trees[], made
 * in the pin namespace, and of each route's directory, made here. The child is in the pin
 * namespace afterwards. */
static void shares_clone(struct setup_args *a, int *trees) {
        const SetupPlan *plan = a->plan;
        int host_trees[SETUP_MAX_SHARES];
        int root = -1, sd = -1;
        bool anchored = false;

        for (size_t i = 0; i < plan->n_shares; i++) {
                trees[i] = host_trees[i] = -1;
                anchored = anchored || !plan->shares[i].left_out;
        }
        if (!anchored) /* no share for this user: no lock to take */
                return;
        anchored = false;
        /* one setup child at a time makes or looks at the anchors and the routes' mounts:
         * never two of one share (the lock is <run_dir>/shares of the pin namespace, reached
         * through the pin tmpfs's descriptor) */
        if (plan->pin_dir_fd >= 0 &&
            (mkdirat(plan->pin_dir_fd, "shares", 0700) == 0 || errno == EEXIST))
                sd = openat(plan->pin_dir_fd, "shares",
                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sd < 0 || flock(sd, LOCK_EX) < 0) {
                for (size_t i = 0; i < plan->n_shares; i++)
                        if (!plan->shares[i].left_out)
                                item_fail(&a->shares[i], HELPER_STEP_OPEN_DIR, WHAT_ANCHOR);
                goto out;
        }
        root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        for (size_t i = 0; i < plan->n_shares; i++) {
                const PlanShare *s = &plan->shares[i];
                struct item_result *res = &a->shares[i];
                int fd;

                if (s->left_out)
                        continue;
                if (root < 0) {
                        item_fail(res, HELPER_STEP_OPEN_ROOT, WHAT_HOST);
                        continue;
                }
                if (is_per_user(s)) {
                        (void) route_clone(a, root, s, res, &trees[i]);
                        continue;
                }
                anchored = true;
                fd = helper_open_beneath(root, s->dir.rel, O_PATH | O_DIRECTORY);
                if (fd < 0) {
                        item_fail(res, HELPER_STEP_SETUP_RESOLVE, WHAT_HOST);
                        continue;
                }
                host_trees[i] = open_tree(fd, "",
                                          OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
                                                  (s->conf->propagation == SHARE_PROPAGATION_MEMBERS
                                                           ? 0
                                                           : AT_RECURSIVE));
                if (host_trees[i] < 0)
                        item_fail(res, HELPER_STEP_SETUP_CLONE, WHAT_HOST);
                close(fd);
        }
        if (!anchored)
                goto out;

        if (plan->pinns_fd < 0 || setns(plan->pinns_fd, CLONE_NEWNS) < 0 || fchdir(sd) < 0) {
                if (plan->pinns_fd < 0)
                        errno = ENOENT;
                for (size_t i = 0; i < plan->n_shares; i++)
                        if (!plan->shares[i].left_out && !is_per_user(&plan->shares[i]) &&
                            a->shares[i].step == 0)
                                item_fail(&a->shares[i], HELPER_STEP_SETNS, WHAT_ANCHOR);
                goto out;
        }
        for (size_t i = 0; i < plan->n_shares; i++) {
                if (plan->shares[i].left_out || is_per_user(&plan->shares[i]))
                        continue;
                if (anchor_clone(&plan->shares[i], sd, host_trees[i], &a->shares[i], &trees[i]) < 0)
                        trees[i] = -1;
        }
out:
        for (size_t i = 0; i < plan->n_shares; i++) {
                close_fd(&host_trees[i]);
                /* a refused route's directory: the member goes without the route */
                if (!plan->shares[i].left_out && trees[i] < 0 &&
                    a->shares[i].refusal != REFUSAL_ROUTE_DIR)
                        a->n_failed++;
        }
        close_fd(&root);
        close_fd(&sd); /* the lock goes with it */
}

/* A route in the user's namespace: its copy of the host's Path= mount (with every member's
 * mounts under it) detached, so that nothing of the host's reaches Path= there but through
 * the member's own clone; then a small tmpfs on Path= with the member's directory alone in
 * it (0750, root's, the user's group): the other members' directories are not there, nor
 * the names of their mount points. */
static int route_target(struct setup_args *a, struct bases *b, const PlanShare *s,
                        struct item_result *res, int *ret) {
        const SetupPlan *plan = a->plan;
        _cleanup_close_ int pfd = -1, fs = -1, m = -1;

        for (int n = 0;; n++) {
                if (walk(a, b, &s->dir, O_PATH | O_DIRECTORY, res, WHAT_TARGET, &pfd) < 0)
                        return -1;
                if (n == 16 || !is_mount_root(pfd, ""))
                        break;
                close_fd(&pfd);
                if (umount2(s->dir.path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
                        return item_fail(res, HELPER_STEP_SETUP_ATTACH, WHAT_TARGET);
        }
        fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
        if (fs < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) < 0 ||
            fsconfig(fs, FSCONFIG_SET_STRING, "size", "64k", 0) < 0 ||
            fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", "16", 0) < 0 ||
            fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
            (m = fsmount(fs, FSMOUNT_CLOEXEC,
                         MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)) < 0)
                return item_fail(res, HELPER_STEP_SETUP_TMPFS, WHAT_TARGET);
        if (mkdirat(m, plan->user_name, 0750) < 0 ||
            fchownat(m, plan->user_name, 0, plan->gid, AT_SYMLINK_NOFOLLOW) < 0)
                return item_fail(res, HELPER_STEP_SETUP_MKDIR, WHAT_TARGET);
        if (attach_done(m, pfd, res, WHAT_TARGET) < 0)
                return -1;
        *ret = helper_open_beneath(m, plan->user_name, O_PATH | O_DIRECTORY);
        if (*ret < 0)
                return item_fail(res, HELPER_STEP_SETUP_RESOLVE, WHAT_TARGET);
        return 0;
}

/* In the user's namespace: the clones on Path=. */
static int shares_attach(struct setup_args *a, struct bases *b, int *trees, bool *stop) {
        const SetupPlan *plan = a->plan;

        for (size_t i = 0; i < plan->n_shares && !*stop; i++) {
                struct item_result *res = &a->shares[i];
                int tfd = -1;

                if (plan->shares[i].left_out)
                        continue;
                if (trees[i] < 0 && res->refusal == REFUSAL_ROUTE_DIR) {
                        /* without the route, but not with the host's view of Path=: the
                         * tmpfs with the member's directory empty, so that nothing of the
                         * refused directory, nor of the other members', is there */
                        struct item_result t = { .made = res->made };

                        if (route_target(a, b, &plan->shares[i], &t, &tfd) < 0) {
                                *res = t;
                                a->n_failed++;
                                *stop = !a->keep_going;
                        }
                        close_fd(&tfd);
                        continue;
                }
                if (trees[i] < 0) { /* counted in n_failed by shares_clone() */
                        *stop = !a->keep_going;
                        continue;
                }
                if ((is_per_user(&plan->shares[i])
                             ? route_target(a, b, &plan->shares[i], res, &tfd)
                             : walk(a, b, &plan->shares[i].dir, O_PATH | O_DIRECTORY, res,
                                    WHAT_TARGET, &tfd)) < 0 ||
                    attach_done(trees[i], tfd, res, WHAT_TARGET) < 0) {
                        a->n_failed++;
                        *stop = !a->keep_going;
                }
                close_fd(&tfd);
                close_fd(&trees[i]);
        }
        return 0;
}

/* Is the volume mounted by the namespace's setup? Not a FUSE one (the user's service manager
 * runs it), nor a kernel one started later (Start=login, Start=request: VOLUME_START). */
static bool volume_with_namespace(const Volume *c) {
        return c->kind != VOLUME_KIND_FUSE && c->start == VOLUME_START_NAMESPACE;
}

static int setup_child(void *p, int *ret_fd) {
        struct setup_args *a = p;
        const SetupPlan *plan = a->plan;
        struct bases b = { .root = -1, .home = -1 };
        int trees[SETUP_MAX_SHARES];
        bool stop = false;

        (void) ret_fd;
        shares_clone(a, trees);
        if (setns(a->ns_fd, CLONE_NEWNS) < 0)
                return helper_fail(&a->s, HELPER_STEP_SETNS);
        b.root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (b.root < 0)
                return helper_fail(&a->s, HELPER_STEP_OPEN_ROOT);

        (void) shares_attach(a, &b, trees, &stop);
        if (plan->only_volume >= 0) { /* one volume started in a namespace that exists */
                size_t i = (size_t) plan->only_volume;

                if (do_volume(a, &b, &plan->volumes[i], &a->volumes[i]) < 0)
                        a->n_failed++;
                return a->n_failed > 0 ? 1 : 0;
        }

        for (size_t i = 0; i < plan->conf.n_binds && !stop; i++)
                if (do_bind(a, &b, &plan->conf.binds[i], &a->binds[i]) < 0) {
                        a->n_failed++;
                        stop = !a->keep_going;
                }
        for (size_t i = 0; i < plan->n_polydirs && !stop; i++)
                if (do_polydir(a, &b, &plan->polydirs[i], &a->polydirs[i]) < 0) {
                        a->n_failed++;
                        stop = !a->keep_going;
                }
        for (size_t i = 0; i < plan->n_volumes && !stop; i++)
                if (volume_with_namespace(plan->volumes[i].conf) &&
                    do_volume(a, &b, &plan->volumes[i], &a->volumes[i]) < 0) {
                        a->n_failed++;
                        /* its own OnFailure=: one that refuses ends the run */
                        stop = volume_failure_refuses(&plan->conf, plan->volumes[i].conf);
                }
        for (size_t i = 0; i < plan->n_polydirs && !stop; i++) {
                const PlanPolydir *d = &plan->polydirs[i];

                if (!d->script || !a->polydirs[i].done)
                        continue;
                if (run_script(a, &b, d, &a->polydirs[i]) < 0) {
                        a->n_failed++;
                        stop = !a->keep_going;
                }
        }
        return a->n_failed > 0 ? 1 : 0;
}

/* ---- in nsd ---------------------------------------------------------------------------- */

typedef struct SetupRun {
        SetupPlan *plan;
        SetupDone done;
        void *userdata;
} SetupRun;

static const char *what_path(const SetupPlan *plan, const char *item_path, const PlanPolydir *d,
                             int what) {
        switch (what) {
        case WHAT_HOME:
                return plan->home;
        case WHAT_IPARENT:
                return d ? d->iparent.path : "?";
        case WHAT_INSTANCE:
                return d ? d->instance : "?";
        case WHAT_SCRIPT:
                return d ? d->script : "?";
        default:
                return item_path;
        }
}

/* The reason for one failed item, or NULL when it did not fail. */
static char *item_why(const SetupPlan *plan, const char *object, const char *item_path,
                      const PlanPolydir *d, const struct item_result *res) {
        const char *path = what_path(plan, item_path, d, res->what);
        unsigned mode = res->found_mode & 07777;

        if (res->step == 0)
                return NULL;
        switch (res->refusal) {
        case REFUSAL_OWNER:
                return g_strdup_printf("%s: '%s' is owned by uid %u, neither by root nor by "
                                       "'%s' (uid %u): refused, nothing is mounted there",
                                       object, path, (unsigned) res->found_uid, plan->user_name,
                                       (unsigned) plan->uid);
        case REFUSAL_IPARENT:
                return d->iparent.user
                               ? g_strdup_printf("%s: the instance parent '%s' must be owned "
                                                 "by '%s' and not writable by others (it is "
                                                 "uid %u's, mode %04o): refused",
                                                 object, path, plan->user_name,
                                                 (unsigned) res->found_uid, mode)
                               : g_strdup_printf("%s: the instance parent '%s' must be owned "
                                                 "by root and closed to group and others "
                                                 "(mode 0700 or stricter; it is uid %u's, "
                                                 "mode %04o): refused",
                                                 object, path, (unsigned) res->found_uid, mode);
        case REFUSAL_INSTANCE:
                return g_strdup_printf("%s: the instance '%s' is owned by uid %u, not by the "
                                       "polydir's owner: refused",
                                       object, path, (unsigned) res->found_uid);
        case REFUSAL_TYPE:
                return g_strdup_printf("%s: cannot bind a directory onto a file or a file "
                                       "onto a directory ('%s'): refused",
                                       object, path);
        case REFUSAL_SCRIPT:
                return g_strdup_printf("%s: the init script '%s' must be a regular file owned "
                                       "by root, executable, and writable by nobody else (it "
                                       "is uid %u's, mode %04o): refused",
                                       object, path, (unsigned) res->found_uid, mode);
        case REFUSAL_SCRIPT_STATUS: {
                int code = res->status >> 16, st = res->status & 0xffff;
                return code == CLD_EXITED
                               ? g_strdup_printf("%s: the init script '%s' exited with status "
                                                 "%d",
                                                 object, path, st)
                               : g_strdup_printf("%s: the init script '%s' was killed by "
                                                 "signal %d (%s)",
                                                 object, path, st, strsignal(st));
        }
        case REFUSAL_VOLUME_SOURCE:
                if (S_ISBLK(res->found_mode))
                        return g_strdup_printf("%s: the block device '%s' must be owned by root "
                                               "(it is uid %u's): refused",
                                               object, path, (unsigned) res->found_uid);
                if (!S_ISREG(res->found_mode))
                        return g_strdup_printf("%s: '%s' is neither an image (a regular file) "
                                               "nor a block device: refused",
                                               object, path);
                return g_strdup_printf("%s: the image '%s' must be owned by root and writable "
                                       "by nobody else (it is uid %u's, mode %04o): refused, "
                                       "the kernel reads no file system that someone else can "
                                       "craft",
                                       object, path, (unsigned) res->found_uid, mode);
        case REFUSAL_VOLUME_WHERE:
                return g_strdup_printf("%s: another file system is mounted on '%s' (device "
                                       "%u:%u): refused, nothing is mounted over it",
                                       object, path, (unsigned) res->found_uid,
                                       (unsigned) res->found_gid);
        case REFUSAL_SCRIPT_TIME:
                return g_strdup_printf("%s: the init script '%s' did not finish within the "
                                       "setup's TimeoutSec= (%.3g s); its process group was "
                                       "killed",
                                       object, path, (double) plan->conf.timeout_usec / 1e6);
        default:
                break;
        }
        if (res->step == HELPER_STEP_SETUP_RESOLVE && res->err == ELOOP)
                return g_strdup_printf("%s: '%s' is a symbolic link, or one is on the way to "
                                       "it: refused, nothing is followed there",
                                       object, path);
        if (res->step == HELPER_STEP_SETUP_RESOLVE && res->err == ENOTDIR)
                return g_strdup_printf("%s: '%s' is not a directory, or something on the way "
                                       "to it is not: refused",
                                       object, path);
        if (res->step == HELPER_STEP_SETUP_RESOLVE && res->err == EXDEV)
                return g_strdup_printf("%s: '%s' leads out of its base: refused", object, path);
        return g_strdup_printf("%s: '%s': %s: %s", object, path, helper_step_text(res->step),
                               g_strerror(res->err));
}

/* A route whose directory on the host was refused (REFUSAL_ROUTE_DIR): the member's namespace
 * is made without it; a warning that says what was found and what to do. */
static void route_refused(const SetupPlan *plan, const char *object, const PlanShare *s,
                          const struct item_result *res) {
        mode_t m = (mode_t) res->found_mode;
        const char *what = S_ISLNK(m)   ? "a symbolic link"
                           : S_ISDIR(m) ? "a directory"
                                        : "something else than a directory";

        log_event(LOG_WARNING, -EPERM, plan->uid, "share-route-refused",
                  "%s: '%s/%s' on the host is %s of uid %u (gid %u, mode %04o), which may hold "
                  "what another user put there: only a directory owned by root or by '%s' (uid "
                  "%u), writable by nobody else (by its group only when that is root's or the "
                  "user's), carries the host's mounts to the user. The namespace of uid %u is "
                  "made WITHOUT the route: its '%s' holds an empty '%s', and nothing the host "
                  "mounts under '%s/%s' reaches it. The administrator: remove '%s/%s' (nsd or "
                  "udisks makes it again) or make it root's and closed to others (chown "
                  "root:root, chmod 0750), keep '%s' writable by root only, then 'nsctl "
                  "release %u' for the user to get the route",
                  object, s->dir.path, plan->user_name, what, (unsigned) res->found_uid,
                  (unsigned) res->found_gid, (unsigned) (m & 07777), plan->user_name,
                  (unsigned) plan->uid, (unsigned) plan->uid, s->dir.path, plan->user_name,
                  s->dir.path, plan->user_name, s->dir.path, plan->user_name, s->dir.path,
                  (unsigned) plan->uid);
}

static int refusal_errno(const struct item_result *res) {
        return res->err > 0 ? -res->err : -EIO;
}

/* An item that failed (why): counted, logged, and the first of them kept (why taken), the
 * first that refuses ahead of any that does not; refuses: whether its failure refuses the
 * namespace (OnFailure=), added to *refuse. */
static void item_failed(const SetupPlan *plan, const struct item_result *res, char **why,
                        bool refuses, unsigned *n_failed, bool *refuse, char **first,
                        int *first_r) {
        bool refused_before = *refuse;

        (*n_failed)++;
        *refuse = refused_before || refuses;
        log_event(LOG_ERR, refusal_errno(res), plan->uid, "setup-failed",
                  "Setup of uid %u's namespace: %s", (unsigned) plan->uid, *why);
        if (!*first || (refuses && !refused_before)) {
                g_free(*first);
                *first = g_steal_pointer(why);
                *first_r = refusal_errno(res);
        }
}

static void on_setup_done(int r, const void *result, int fd, void *userdata) {
        SetupRun *run = userdata;
        const SetupPlan *plan = run->plan;
        const struct setup_args *a = result;
        g_autofree char *first = NULL;
        int first_r = 0;
        unsigned n_failed = 0;
        /* a failure refuses the namespace unless its OnFailure= (a volume's own, else
         * [Setup]'s) says continue; one of the whole run, as [Setup]'s */
        const bool global_refuse = !plan->conf.on_failure_continue;
        bool refuse = false;
        char desc[256];
        /* what ran, for the messages: the whole setup, or one volume started later */
        g_autofree char *what =
                plan->only_volume >= 0
                        ? g_strdup_printf("mounting volume '%s' in uid %u's namespace",
                                          plan->volumes[plan->only_volume].conf->name,
                                          (unsigned) plan->uid)
                        : g_strdup_printf("the setup of uid %u's namespace", (unsigned) plan->uid);

        if (fd >= 0)
                close(fd);
        if (r == -ECANCELED) { /* nsd stops */
                first_r = r;
                first = g_strdup_printf("nsd stops; %s was stopped", what);
                n_failed = 1;
                refuse = global_refuse;
                log_debug("%s", first);
                goto done;
        }
        if (!a && r != -ETIMEDOUT) {
                /* no report (the child could not send it, or nsd could not read it): what it
                 * did is unknown, so nothing of it is used; that may pass */
                first_r = -EAGAIN;
                first = g_strdup_printf("%s ended without a report (%s); retry", what,
                                        r < 0 ? g_strerror(-r) : "no message from its helper");
                n_failed = 1;
                refuse = global_refuse;
                log_event(LOG_WARNING, first_r, plan->uid, "setup-failed", "%s", first);
                goto done;
        }
        if (r == -ETIMEDOUT || !a) {
                first_r = r < 0 ? r : -EPROTO;
                first = r == -ETIMEDOUT
                                ? g_strdup_printf("%s did not finish within TimeoutSec=%.3g s "
                                                  "(a file system on the way does not "
                                                  "answer?); killed",
                                                  what, (double) plan->conf.timeout_usec / 1e6)
                                : g_strdup_printf("%s ended without a report (%s)", what,
                                                  g_strerror(-first_r));
                n_failed = 1;
                refuse = global_refuse;
                log_event(LOG_ERR, first_r, plan->uid, "setup-failed", "%s", first);
                goto done;
        }
        if (a->s.step != 0) {
                first_r = -(a->s.err > 0 ? a->s.err : EIO);
                first = g_strdup_printf("%s failed: %s: %s", what, helper_status_step(&a->s),
                                        g_strerror(a->s.err));
                n_failed = 1;
                refuse = global_refuse;
                log_event(LOG_ERR, first_r, plan->uid, "setup-failed", "%s", first);
                goto done;
        }
        for (size_t i = 0; i < plan->n_shares; i++) {
                const PlanShare *s = &plan->shares[i];
                const struct item_result *res = &a->shares[i];
                g_autofree char *anchor = g_strdup_printf("the anchor shares/%s in nsd's pin "
                                                          "namespace",
                                                          s->anchor);
                g_autofree char *why = NULL;

                if (s->left_out)
                        continue;
                share_describe(s->conf, desc, sizeof desc);
                if (res->made && is_per_user(s)) /* done on the host, whatever came after */
                        log_event(LOG_INFO, 0, plan->uid, "share-anchor",
                                  "Made '%s' a mount of its own in the initial namespace, "
                                  "with a peer group of its own, for %s "
                                  "(Propagation=per-user): the host's mounts under "
                                  "'%s/USER' reach USER's namespace only from now on",
                                  s->dir.path, desc, s->dir.path);
                if (res->refusal == REFUSAL_ROUTE_DIR) { /* not a failure: without the route */
                        route_refused(plan, desc, s, res);
                        setup_plan_leave_out_share(run->plan, i);
                        continue;
                }
                why = item_why(plan, desc, res->what == WHAT_ANCHOR ? anchor : s->dir.path, NULL,
                               res);
                if (!why) {
                        if (res->made && !is_per_user(s))
                                log_event(LOG_INFO, 0, plan->uid, "share-anchor",
                                          "Made the anchor of %s (Propagation=%s): the namespaces "
                                          "of its members share mounts under '%s' from now on",
                                          desc, share_propagation_to_string(s->conf->propagation),
                                          s->dir.path);
                        if (res->done)
                                log_debug("Setup of uid %u: %s on '%s'", (unsigned) plan->uid, desc,
                                          s->dir.path);
                        continue;
                }
                item_failed(plan, res, &why, global_refuse, &n_failed, &refuse, &first, &first_r);
        }
        for (size_t i = 0; i < plan->conf.n_binds; i++) {
                const BindReadOnly *bind = &plan->conf.binds[i];
                g_autofree char *object = g_strdup_printf("[BindReadOnly %s] (%s:%u)", bind->name,
                                                          bind->file, bind->line);
                g_autofree char *why = item_why(plan, object, bind->source, NULL, &a->binds[i]);

                if (!why) {
                        if (a->binds[i].done)
                                log_debug("Setup of uid %u: %s: '%s' bound read-only on '%s'",
                                          (unsigned) plan->uid, object, bind->source, bind->target);
                        continue;
                }
                if (a->binds[i].what == WHAT_TARGET) {
                        g_free(why);
                        why = item_why(plan, object, bind->target, NULL, &a->binds[i]);
                }
                item_failed(plan, &a->binds[i], &why, global_refuse, &n_failed, &refuse, &first,
                            &first_r);
        }
        for (size_t i = 0; i < plan->n_polydirs; i++) {
                const PlanPolydir *d = &plan->polydirs[i];
                const struct item_result *res = &a->polydirs[i];
                g_autofree char *why = item_why(plan, polydir_describe(d->conf, desc, sizeof desc),
                                                d->dir.path, d, res);

                if (!why) {
                        if (res->done)
                                log_debug("Setup of uid %u: %s: %s on '%s'%s", (unsigned) plan->uid,
                                          desc,
                                          d->conf->method == POLYDIR_METHOD_TMPFS ? "a tmpfs"
                                          : res->new_instance                     ? "a new instance"
                                                                                  : "its instance",
                                          d->dir.path, res->script_ran ? ", init script done" : "");
                        continue;
                }
                item_failed(plan, res, &why, global_refuse, &n_failed, &refuse, &first, &first_r);
        }
        for (size_t i = 0; i < plan->n_volumes; i++) {
                PlanVolume *v = &run->plan->volumes[i];
                const struct item_result *res = &a->volumes[i];
                g_autofree char *why = NULL;

                if (v->conf->kind == VOLUME_KIND_FUSE) { /* run by the user's manager */
                        v->outcome = VOLUME_OUTCOME_USER_MANAGER;
                        continue;
                }
                if (plan->only_volume >= 0 ? (ssize_t) i != plan->only_volume
                                           : !volume_with_namespace(v->conf)) {
                        /* started later (VOLUME_START); or, in a run of one volume, another */
                        v->outcome = VOLUME_OUTCOME_STOPPED;
                        continue;
                }
                volume_describe(v->conf, desc, sizeof desc);
                why = item_why(plan, desc, res->what == WHAT_SOURCE ? v->source : v->where.path,
                               NULL, res);
                v->loop = res->looped ? res->loop_nr + 1 : 0;
                v->already = res->already;
                if (!why) {
                        v->outcome = res->done ? VOLUME_OUTCOME_MOUNTED : VOLUME_OUTCOME_NOT_TRIED;
                        if (res->already)
                                log_event(LOG_NOTICE, 0, plan->uid, "volume-mounted",
                                          "%s of uid %u is mounted on '%s' already (an earlier "
                                          "start ended while nsd was stopped); not mounted again",
                                          desc, (unsigned) plan->uid, v->where.path);
                        else if (res->done) {
                                g_autofree char *loop = res->looped
                                                                ? g_strdup_printf(" on /dev/loop%u",
                                                                                  res->loop_nr)
                                                                : g_strdup("");

                                log_event(LOG_INFO, 0, plan->uid, "volume-mounted",
                                          "Setup of uid %u: %s: '%s' (%s%s) mounted on '%s'",
                                          (unsigned) plan->uid, desc, v->source, v->conf->type,
                                          loop, v->where.path);
                        }
                        continue;
                }
                v->outcome = VOLUME_OUTCOME_FAILED;
                v->err = -refusal_errno(res);
                v->why = g_strdup(why);
                item_failed(plan, res, &why, volume_failure_refuses(&plan->conf, v->conf),
                            &n_failed, &refuse, &first, &first_r);
        }
        if (r < 0 && !first) {
                /* exited non-zero without saying what: cannot be */
                first_r = -EPROTO;
                first = g_strdup_printf("%s failed without a reason", what);
                n_failed = 1;
                refuse = global_refuse;
        }
done:
        run->done(first_r, first, n_failed, refuse, run->plan, run->userdata);
        setup_plan_free(run->plan);
        g_free(run);
}

int setup_run(Children *set, SetupPlan *plan, int ns_fd, int out_fd, SetupDone done,
              void *userdata) {
        struct setup_args a = {
                .plan = plan,
                .ns_fd = ns_fd,
                .out_fd = out_fd,
                .keep_going = plan->conf.on_failure_continue,
        };
        uint64_t timeout = plan->conf.timeout_usec;
        /* the scripts stop a little before the child's deadline, so that the child can
         * still say which one hung */
        uint64_t margin = MIN(timeout / 5, 500000u);
        int keep[4], n_keep = 0, r;
        SetupRun *run;

        g_return_val_if_fail(set && plan && ns_fd >= 0 && done, -EINVAL);
        a.script_deadline_usec = mono_usec() + timeout - margin;
        keep[n_keep++] = ns_fd;
        if (out_fd >= 0)
                keep[n_keep++] = out_fd;
        if (plan->pinns_fd >= 0 && plan->pin_dir_fd >= 0) {
                keep[n_keep++] = plan->pinns_fd;
                keep[n_keep++] = plan->pin_dir_fd;
        } else
                plan->pinns_fd = plan->pin_dir_fd = -1;
        run = g_new0(SetupRun, 1);
        run->plan = plan;
        run->done = done;
        run->userdata = userdata;
        r = child_start_keep(set, plan->uid, plan->child_class, setup_child, &a, sizeof a, keep,
                             (size_t) n_keep, timeout, on_setup_done, run);
        if (r < 0) {
                g_free(run);
                return r; /* the plan stays the caller's */
        }
        return 0;
}
