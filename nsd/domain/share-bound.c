/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* share-bound.c: [Share] MaxMountsPerUser=, see share-bound.h. */
#include "domain/share-bound.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <glib.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/child.h"
#include "base/helper.h"
#include "base/log.h"
#include "base/table.h"
#include "cleanup.h"
#include "domain/user.h"
#include "policy/conf.h"
#include "policy/setup-conf.h"
#include "store/mounts.h"
#include "store/pinstore.h"
#include "store/userns.h"

struct ShareBound {
        const Config *config;
        PinStore *pins;
        Children *children;
        int fd; /* the pin namespace's /proc/self/mountinfo; -1: not watching */
        guint watch;
        guint timer;         /* a scan after a change (debounce) or a failed detach */
        unsigned retry_msec; /* the wait after the last failed detach; 0: none failed */
        GHashTable *running; /* mount id (uint64_t*) -> Detach*: a detach under way */
        unsigned detached;
};

/* ---- the child ---------------------------------------------------------------------------- */

struct detach_args {
        struct helper_status s;
        /* in (pointers into nsd's memory, which the forked child has a copy of) */
        int pinns_fd;
        const char *anchor;   /* absolute, in the pin namespace */
        const char *relative; /* the mount point below it ("." for the anchor's path) */
        uint64_t mnt_id;
        unsigned major, minor;
        /* out */
        uint64_t found_id;
        unsigned found_major, found_minor;
        bool found_root;
        bool detached;
};

/* Runs in a watched child: see share-bound.h. Exit 0 with detached false: the path leads to
 * another mount now (found_*). */
static int detach_child(void *p, int *ret_fd) {
        struct detach_args *a = p;
        struct open_how dir_how = {
                .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        struct open_how how = {
                .flags = O_PATH | O_CLOEXEC | O_NOFOLLOW,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        struct statx stx;
        char name[24];
        int proc_fd, anchor_fd, fd;

        (void) ret_fd;
        /* this child's descriptors, from nsd's /proc: the pin namespace's may be any */
        proc_fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0)
                return helper_fail(&a->s, HELPER_STEP_OPEN_DIR);
        if (setns(a->pinns_fd, CLONE_NEWNS) < 0)
                return helper_fail(&a->s, HELPER_STEP_SETNS);
        anchor_fd = (int) syscall(SYS_openat2, AT_FDCWD, a->anchor, &dir_how, sizeof dir_how);
        if (anchor_fd < 0)
                return helper_fail(&a->s, HELPER_STEP_OPEN_ANCHOR);
        fd = (int) syscall(SYS_openat2, anchor_fd, a->relative, &how, sizeof how);
        if (fd < 0)
                return helper_fail(&a->s, HELPER_STEP_OPEN_MOUNT_POINT);
        /* nothing asked for: FUSE answers no GETATTR to root, and no request is sent */
        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, 0, &stx) < 0)
                return helper_fail(&a->s, HELPER_STEP_STATX);
        a->found_id = stx.stx_mnt_id;
        a->found_major = stx.stx_dev_major;
        a->found_minor = stx.stx_dev_minor;
        a->found_root = (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
                        (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
        if (a->found_id != a->mnt_id || !a->found_root || a->found_major != a->major ||
            a->found_minor != a->minor)
                return 0;
        /* the descriptor's own mount: "/proc/<this child>/fd/N" relative to proc_fd */
        if (fchdir(proc_fd) < 0)
                return helper_fail(&a->s, HELPER_STEP_CHDIR);
        helper_fd_name(name, fd);
        if (umount2(name, MNT_DETACH) < 0)
                return helper_fail(&a->s, HELPER_STEP_DETACH);
        a->detached = true;
        return 0;
}

/* ---- detaching one mount ------------------------------------------------------------------ */

typedef struct Detach {
        ShareBound *b; /* NULL once it is gone */
        uint64_t id;   /* the mount to detach (the running key) */
        MountsExcess *e;
        char *share;
        char *shown;      /* the mount point as members see it (Path= + below), escaped */
        char *shown_over; /* the excess mount's, when another one is detached for it */
        unsigned limit;
        char *anchor;
        char *relative;
} Detach;

static void detach_free(Detach *d) {
        if (d->b)
                g_hash_table_remove(d->b->running, &d->id);
        mounts_excess_free(d->e);
        g_free(d->share);
        g_free(d->shown);
        g_free(d->shown_over);
        g_free(d->anchor);
        g_free(d->relative);
        g_free(d);
}

static void scan_soon(ShareBound *b, unsigned msec);

/* A detach that failed or found another mount there: the table read again after a while,
 * doubling while they keep failing. */
static void retry_later(ShareBound *b) {
        b->retry_msec = b->retry_msec ? MIN(b->retry_msec * 2, SHARE_BOUND_RETRY_MAX_MSEC)
                                      : SHARE_BOUND_RETRY_MSEC;
        scan_soon(b, b->retry_msec);
}

static unsigned next_retry_sec(const ShareBound *b) {
        return (b->retry_msec + 999) / 1000;
}

static void on_detached(int r, const void *result, int fd, void *userdata) {
        Detach *d = userdata;
        struct detach_args a = { 0 };
        g_autofree char *over = NULL;
        char t[32];

        if (fd >= 0)
                close(fd);
        if (result)
                memcpy(&a, result, sizeof a);
        if (r == -EPROTO && result)
                r = -(a.s.err > 0 ? a.s.err : EIO);
        if (!d->b || r == -ECANCELED) {
                detach_free(d);
                return;
        }
        if (r < 0 || !a.detached)
                retry_later(d->b);
        else
                d->b->retry_msec = 0;
        if (d->shown_over)
                over = g_strdup_printf(" (for its mount %" G_GUINT64_FORMAT " on '%s' inside it)",
                                       d->e->mnt_id, d->shown_over);
        if (r == -ETIMEDOUT)
                log_event_by(d->e->uid, LOG_WARNING, r, d->e->uid, "share-mount-detach-failed",
                             "Share '%s': cannot detach mount %" G_GUINT64_FORMAT " of uid %u on "
                             "'%s'%s beyond MaxMountsPerUser=%u: the walk took longer than %s s "
                             "(PathWalkTimeoutSec=; a FUSE daemon that does not answer?), "
                             "trying again in %u s",
                             d->share, d->id, (unsigned) d->e->uid, d->shown, over ? over : "",
                             d->limit,
                             config_usec_to_string(d->b->config->path_walk_timeout_usec, t,
                                                   sizeof t),
                             next_retry_sec(d->b));
        else if (r < 0)
                log_event_by(d->e->uid, LOG_WARNING, r, d->e->uid, "share-mount-detach-failed",
                             "Share '%s': cannot detach mount %" G_GUINT64_FORMAT " of uid %u on "
                             "'%s'%s beyond MaxMountsPerUser=%u: %s: %s%s, trying again in "
                             "%u s",
                             d->share, d->id, (unsigned) d->e->uid, d->shown, over ? over : "",
                             d->limit, helper_status_step(&a.s), g_strerror(-r),
                             r == -ELOOP ? " (symbolic links are not followed)" : "",
                             next_retry_sec(d->b));
        else if (!a.detached)
                log_debug("Share '%s': mount %" G_GUINT64_FORMAT " of uid %u on '%s' is not "
                          "there any more (the path leads to mount %" G_GUINT64_FORMAT
                          " %u:%u%s), not detaching",
                          d->share, d->id, (unsigned) d->e->uid, d->shown, a.found_id,
                          a.found_major, a.found_minor, a.found_root ? "" : ", not its root");
        else {
                d->b->detached++;
                log_event_by(d->e->uid, LOG_WARNING, 0, d->e->uid, "share-mount-detached",
                             "Share '%s': uid %u has more FUSE mounts under it than "
                             "MaxMountsPerUser=%u, detached its mount %" G_GUINT64_FORMAT
                             " on '%s'%s from every member",
                             d->share, (unsigned) d->e->uid, d->limit, d->id, d->shown,
                             over ? over : "");
        }
        detach_free(d);
}

/* The mount point as members see it: Path= and what is below the anchor, escaped. */
static char *shown_path(const Share *sh, const char *anchor, const char *target) {
        g_autofree char *p = g_strconcat(sh->path, target + strlen(anchor), NULL);

        return g_strescape(p, NULL);
}

static void scan_soon(ShareBound *b, unsigned msec);

static void detach_start(ShareBound *b, const Share *sh, const char *anchor, MountsExcess *e) {
        Detach *d = g_new0(Detach, 1);
        struct detach_args a = { .pinns_fd = pinstore_pinns_fd(b->pins, NULL) };
        const char *below = e->detach_target + strlen(anchor);
        int r;

        d->b = b;
        d->id = e->detach_id;
        d->e = e;
        d->share = g_strdup(sh->name);
        d->limit = sh->max_mounts_per_user;
        d->anchor = g_strdup(anchor);
        d->relative = g_strdup(*below == '/' ? below + 1 : ".");
        d->shown = shown_path(sh, anchor, e->detach_target);
        if (e->detach_id != e->mnt_id)
                d->shown_over = shown_path(sh, anchor, e->target);
        a.anchor = d->anchor;
        a.relative = d->relative;
        a.mnt_id = e->detach_id;
        a.major = e->detach_major;
        a.minor = e->detach_minor;
        if (a.pinns_fd < 0) {
                detach_free(d);
                return;
        }
        g_hash_table_insert(b->running, &d->id, d);
        /* counted against the mount's owner: a walk may hang in that user's FUSE daemon */
        r = child_start_keep(b->children, e->uid, CHILD_SYSTEM, detach_child, &a, sizeof a,
                             &a.pinns_fd, 1, b->config->path_walk_timeout_usec, on_detached, d);
        if (r < 0) {
                if (r == -EAGAIN) /* no change may come: look again in a while */
                        scan_soon(b, SHARE_BOUND_RETRY_MSEC);
                if (r == -EAGAIN)
                        log_debug("Share '%s': no helper process free to detach mount "
                                  "%" G_GUINT64_FORMAT
                                  " of uid %u now (MaxPathWalks=, or its walks stuck), "
                                  "trying again soon",
                                  d->share, d->id, (unsigned) e->uid);
                else
                        log_warning_errno(r,
                                          "Share '%s': cannot start a helper process to "
                                          "detach mount %" G_GUINT64_FORMAT ": %m, ignoring",
                                          d->share, d->id);
                detach_free(d);
        }
}

/* ---- the watch ---------------------------------------------------------------------------- */

static void scan(ShareBound *b) {
        const SetupConf *conf = &b->config->setup;
        const char *run_dir = pinstore_run_dir(b->pins);
        g_autofree char *text = NULL;
        int r;

        if (b->fd < 0 || !run_dir)
                return;
        r = ns_read_mountinfo_fd(b->fd, USER_MOUNTINFO_MAX, &text, NULL);
        if (r < 0) {
                log_warning_errno(r, "Cannot read the mount table of nsd's pin namespace, "
                                     "ignoring this change: %m");
                return;
        }
        for (size_t i = 0; i < conf->n_shares; i++) {
                const Share *sh = &conf->shares[i];
                g_autoptr(GPtrArray) excess = NULL;
                g_autofree char *anchor = NULL;
                char name[SHARE_ANCHOR_NAME_MAX];

                if (sh->propagation == SHARE_PROPAGATION_PER_USER)
                        continue;
                anchor = g_strdup_printf("%s/shares/%s", run_dir,
                                         share_anchor_name(sh, name, sizeof name));
                if (mounts_share_use(text, anchor, sh->max_mounts_per_user, NULL, &excess) < 0)
                        continue; /* no anchor yet: no member yet */
                for (guint j = 0; j < excess->len; j++) {
                        MountsExcess *e = excess->pdata[j];

                        if (g_hash_table_contains(b->running, &e->detach_id))
                                continue;
                        excess->pdata[j] = NULL; /* taken */
                        detach_start(b, sh, anchor, e);
                }
        }
}

static gboolean on_timer(gpointer userdata) {
        ShareBound *b = userdata;

        b->timer = 0;
        scan(b);
        return G_SOURCE_REMOVE;
}

static void scan_soon(ShareBound *b, unsigned msec) {
        if (!b->timer)
                b->timer = g_timeout_add(msec, on_timer, b);
}

static gboolean on_change(int fd, GIOCondition cond, gpointer userdata) {
        scan_soon(userdata, SHARE_BOUND_DEBOUNCE_MSEC);
        return G_SOURCE_CONTINUE;
}

static void stop(ShareBound *b) {
        g_clear_handle_id(&b->watch, g_source_remove);
        g_clear_handle_id(&b->timer, g_source_remove);
        CLOSE_FD(b->fd);
}

static bool has_anchored_share(const SetupConf *conf) {
        for (size_t i = 0; i < conf->n_shares; i++)
                if (conf->shares[i].propagation != SHARE_PROPAGATION_PER_USER)
                        return true;
        return false;
}

void share_bound_apply(ShareBound *b) {
        int pinns_fd;

        if (!b)
                return;
        if (!has_anchored_share(&b->config->setup) || !b->pins) {
                if (b->fd >= 0)
                        log_info("No share with an anchor: no longer watching the mount table "
                                 "of nsd's pin namespace");
                stop(b);
                return;
        }
        if (b->fd < 0) {
                pinns_fd = pinstore_pinns_fd(b->pins, NULL);
                if (pinns_fd < 0)
                        return; /* not yet: again when the pin store is ready */
                b->fd = ns_open_mountinfo(pinns_fd, "nsd's pin namespace");
                if (b->fd < 0) {
                        log_warning_errno(b->fd, "Cannot watch the mount table of nsd's pin "
                                                 "namespace: MaxMountsPerUser= of shares is not "
                                                 "enforced: %m");
                        b->fd = -1;
                        return;
                }
                /* POLLPRI (and POLLERR) when the table changed; POLLIN always */
                b->watch = g_unix_fd_add(b->fd, G_IO_PRI | G_IO_ERR, on_change, b);
                log_debug("Watching the mount table of nsd's pin namespace for "
                          "MaxMountsPerUser= of shares");
        }
        scan_soon(b, 0); /* what is there now, under the limits in force */
}

ShareBound *share_bound_new(const Config *config, PinStore *pins, Children *set) {
        ShareBound *b = g_new0(ShareBound, 1);

        b->config = config;
        b->pins = pins;
        b->children = set;
        b->fd = -1;
        b->running = g_hash_table_new(g_int64_hash, g_int64_equal);
        return b;
}

void share_bound_free(ShareBound *b) {
        if (!b)
                return;
        stop(b);
        /* detaches under way end on their own, without it */
        TABLE_DESTROY_ORPHANING(b->running, Detach, b);
        g_free(b);
}

unsigned share_bound_detached(const ShareBound *b) {
        return b ? b->detached : 0;
}
