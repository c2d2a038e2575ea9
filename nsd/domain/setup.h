/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * setup.h: a new namespace's contents (DESIGN.md "What a namespace is made of"), made once,
 * before the namespace is pinned or handed to anyone: the shares, the read-only binds, the
 * polyinstantiated directories, the volumes, then the init scripts, as setup-conf.h's
 * SetupConf says.
 *
 * Two halves:
 *  - the plan, in nsd: the configuration expanded for one user (%u, %U, %h, %g), the
 *    polydirs that apply to that user (OnlyUsers=, ExcludeUsers=), every path and argument
 *    ready. Pure: no file, no user database (the caller looked the user up, policy.h).
 *  - the run: a watched child (child.h) with a deadline, TimeoutSec=, that enters the
 *    namespace and does the work with plain system calls, then reports each step. Other
 *    users are served meanwhile; a child stuck in a FUSE file system on the way to a
 *    polydir is killed at the deadline.
 *
 * Paths the user controls are never followed (issue 22, DESIGN.md):
 *  - a path that starts with %h is the user's: the home directory is resolved from / as
 *    root, the rest beneath it with the user's file system identity (fsuid, fsgid, groups);
 *    every other path is resolved from / as root. Both with openat2(RESOLVE_NO_SYMLINKS |
 *    RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH): a symbolic link anywhere on the way refuses
 *    the polydir (ELOOP), and ".." cannot leave the base.
 *  - the mount is attached to the descriptor that was resolved (move_mount() with
 *    MOVE_MOUNT_T_EMPTY_PATH): nothing is resolved twice. Instance directories are made
 *    (mkdirat) and checked (fstat of the descriptor opened after) through the descriptor of
 *    their parent.
 *  - a polydir must be a directory owned by root or by the user; an instance parent
 *    (dirname of InstancePrefix= + user name) root's and closed to group and others (mode
 *    0700 or stricter; made 0000 when missing), or, under %h, the user's and not writable by
 *    others (made 0700); an existing instance directory must be owned by the polydir's
 *    owner. Anything else is refused, naming the path and what was found.
 *  - every mount is nosuid,nodev (MountOptions= may add ro, noexec, ...).
 *
 * What each polydir becomes (pam_namespace's semantics, see nsd.conf(5)):
 *  - Method=user: the instance directory InstancePrefix= + user name, made on first use
 *    with the polydir's owner and group and Mode= (or the polydir's mode), bind-mounted on
 *    the polydir;
 *  - Method=tmpfs: a fresh tmpfs on it, its root with the polydir's owner and group and
 *    Mode= (or the polydir's mode), MountOptions= passed to tmpfs.
 * Then, for each polydir set up that has an init script (its InitScript=, else [Setup]'s,
 * not with NoInit=yes), the script runs inside the namespace, as root (with nsd's
 * capabilities), in a process group of its own, stdin /dev/null, stdout and stderr to
 * out_fd, with pam_namespace's namespace.init arguments: polydir, instance ("tmpfs" for a
 * tmpfs), 1 or 0 (the instance directory is new), user name, and 1 1 (both paths are
 * safe). The script file must be a regular file owned by root, executable, writable by
 * nobody else; it is executed through the descriptor that was checked (execveat). A script
 * that cannot be started (the errno comes back through a close-on-exec pipe), exits
 * non-zero, is killed, or is still running shortly before the deadline (then its process
 * group is killed) fails the setup. What a script that exited starts and leaves running
 * stays, as with pam_namespace.
 *
 * Shares ([Share NAME], the ones the user is a member of and the caller did not leave out):
 * each has one ANCHOR in nsd's pin namespace, <run_dir>/shares/NAME@DIGEST (a digest of
 * Path= and Propagation=: share_anchor_name(), so a changed share gets a new anchor and the
 * namespaces made before keep the old one, as with the rest of the setup), a mount whose peer
 * group is the share. The child makes it when it is not there, under a lock (flock of
 * <run_dir>/shares) that every setup child takes: a clone of Path= of the host's namespace
 * (resolved as root without following symbolic links; with its submounts for
 * Propagation=host and both), attached at .new-ANCHOR, made nosuid,nodev, then its
 * propagation set (members: private, then shared, a group of its own; host: slave of the
 * host's mount, then shared; both: kept in the host's peer group, made shared), and only
 * then moved to ANCHOR: an anchor is either whole or not there, also after a kill -9 (a
 * .new-ANCHOR left over is unmounted first). Propagation=per-user has no anchor (see
 * nsd.conf(5)): the child makes the host's Path= a mount of its own (under the same lock),
 * clones Path=/USER as a slave, and in the user's namespace puts a small tmpfs on Path=
 * with USER's directory alone in it, the clone on that. Path=/USER is made when missing
 * (root's, USER's group, 0750) and taken only when it is a directory of root's or of USER's
 * that nobody else may write to (its group only when that is root's or USER's): anything
 * else may be what another user made before USER's first login, with that user's mounts in
 * it, so USER's namespace is made without the route (setup_run() below). Then a clone of
 * the anchor with its submounts
 * (open_tree(OPEN_TREE_CLONE) of a shared mount joins its peer group: tests/kernel proves
 * it on every image) is attached on Path= in the user's namespace, resolved as root
 * without following symbolic links. The anchors stay when nsd stops: they are in the pin
 * namespace, which outlives nsd, and are found again by their path. How many FUSE mounts one
 * uid may have under an anchor ([Share] MaxMountsPerUser=) is watched and enforced in the pin
 * namespace by domain/share-bound.h.
 *
 * Volumes ([Volume NAME], those the user is a member of; issue 25's first part): Where= is
 * resolved as a polydir's Path= (as the user under %h, no symbolic link, a directory of
 * root's or the user's); Source= of a block type (an administrator's path) as root from /
 * without a symbolic link: a block device must be root's, an image a regular file of root's
 * that nobody else may write (REFUSAL_VOLUME_SOURCE otherwise: a file someone else can write
 * is a crafted file system for the kernel), checked through its descriptor, reopened through
 * it and attached to a free loop device (LOOP_CONFIGURE, LO_FLAGS_AUTOCLEAR: the kernel
 * frees it when the mount, and so the namespace, goes; read-only with ro). Then fsopen(Type=),
 * fsconfig(source, ro, Options=), fsmount(nosuid, nodev and Options='s attributes) and
 * move_mount() onto the Where= descriptor. A network type's Source= goes to the kernel as
 * it is. Each mounted volume is logged (event "volume-mounted").
 *
 * Order: shares, binds (their sources are paths of the namespace as it was copied from the
 * host), then polydirs in the order they were read, then volumes (a Where= may be in what a
 * polydir made), then the scripts. With OnFailure=refuse the
 * first failure stops the run; with OnFailure=continue every step is tried and each
 * failure reported.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/child.h"
#include "policy/setup-conf.h"

/* Who the namespace is for, as the user database says (looked up before the plan). */
typedef struct SetupUser {
        uid_t uid;
        gid_t gid;
        const char *name;    /* %u; NULL: the uid has no passwd entry (then only polydirs
                              * that need no name can be made: setup_conf_needs_identity()) */
        const char *group;   /* %g: the primary group's name; NULL: its number */
        const char *home;    /* %h */
        const gid_t *groups; /* supplementary groups, for walks as the user */
        size_t n_groups;
        const char *const *group_names; /* the names of groups ("" for none), or NULL: for
                                         * Groups= of a share (matched by number otherwise) */
} SetupUser;

typedef struct SetupPlan SetupPlan;

/* The plan of conf for user. -EINVAL with *ret_why (g_malloc()ed) when a specifier expands
 * to something that is no path (a home that is not an absolute path, a user or group name
 * with a '/', a result longer than PATH_MAX). */
int setup_plan_new(const SetupConf *conf, const SetupUser *user, SetupPlan **ret, char **ret_why);
void setup_plan_free(SetupPlan *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SetupPlan, setup_plan_free)

/* Nothing to do for this user (no bind, no polydir, share or volume that applies). */
bool setup_plan_is_empty(const SetupPlan *p);
/* The polydirs that apply, in order: their expanded paths. */
size_t setup_plan_n_polydirs(const SetupPlan *p);
const char *setup_plan_polydir_path(const SetupPlan *p, size_t i);
/* The shares the user is a member of, in order (their configuration: the plan's copy). */
size_t setup_plan_n_shares(const SetupPlan *p);
const Share *setup_plan_share(const SetupPlan *p, size_t i);
/* The caller decided share i is not given (its MaxMembers= is reached, no pin namespace);
 * the run decides so too for a route whose directory on the host is refused (below). */
void setup_plan_leave_out_share(SetupPlan *p, size_t i);
bool setup_plan_share_left_out(const SetupPlan *p, size_t i);
/* The volumes the user is a member of, in order: their expanded Where=, Source= and KeyFile=
 * (NULL: none). */
size_t setup_plan_n_volumes(const SetupPlan *p);
const Volume *setup_plan_volume(const SetupPlan *p, size_t i);
const char *setup_plan_volume_where(const SetupPlan *p, size_t i);
const char *setup_plan_volume_source(const SetupPlan *p, size_t i);
const char *setup_plan_volume_key_file(const SetupPlan *p, size_t i);

/* What a run did with one of the plan's volumes (setup_plan_volume_outcome(), in done). The
 * numbers are the protocol's (NSD_VOLUME_* of nsd-protocol.h). */
typedef enum VolumeOutcome {
        VOLUME_OUTCOME_UNKNOWN = 0,      /* the run has not reported (yet), or ended without a
                                       * report: what it did is not known */
        VOLUME_OUTCOME_MOUNTED = 1,      /* mounted on its Where= */
        VOLUME_OUTCOME_FAILED = 2,       /* a step failed or was refused: *ret_why says which */
        VOLUME_OUTCOME_NOT_TRIED = 3,    /* an earlier failure stopped the run before it */
        VOLUME_OUTCOME_USER_MANAGER = 4, /* a FUSE volume: the user's service manager runs
                                          * it (nsd-volume@.service), not the setup */
        VOLUME_OUTCOME_STOPPED = 5,      /* a kernel volume not mounted now: Start=login or
                                          * Start=request, not started yet; or stopped */
} VolumeOutcome;
/* Volume i's outcome; *ret_err its errno when FAILED (else 0), *ret_why why (the plan's
 * string, valid while the plan lives; NULL unless FAILED), *ret_loop the loop device's number
 * + 1 its image was attached to (0: none). */
VolumeOutcome setup_plan_volume_outcome(const SetupPlan *p, size_t i, int *ret_err,
                                        const char **ret_why, uint32_t *ret_loop);
/* A run of volume i alone (setup_plan_only_volume()) found it mounted on its Where= already:
 * nothing was mounted again. */
bool setup_plan_volume_already(const SetupPlan *p, size_t i);
/*
 * A plan that mounts ONE kernel volume, name, into a namespace that exists (VOLUME_START:
 * Start=login, Start=request, or one stopped): no share, bind, polydir or script; its
 * Where= and Source= as the whole setup resolves them; a Where= that is the root of a mount
 * of this volume already counts as mounted (setup_plan_volume_already()), one with another
 * file system on it is refused (EBUSY), nothing is stacked. The other volumes' outcome is
 * STOPPED (not looked at). by_user: the user asked (its child is CHILD_USER). -ENOENT: the
 * user has no volume of that name; -EOPNOTSUPP: a FUSE one.
 */
int setup_plan_only_volume(SetupPlan *p, const char *name, bool by_user);
/* The index of that volume, or -1 for a whole setup. */
ssize_t setup_plan_only(const SetupPlan *p);
/* Where the anchors of shares are: the pin namespace (pinstore.h), its nsfs descriptor and
 * its tmpfs (the caller's; they must stay open until setup_run() returned). Without them
 * every share of the plan fails. */
void setup_plan_set_pin_namespace(SetupPlan *p, int pinns_fd, int pin_dir_fd);

/*
 * Run plan inside the mount namespace ns_fd. out_fd (-1: /dev/null) gets the init scripts'
 * output; ns_fd and out_fd stay the caller's (the child has its own copies). Returns 0 when
 * the child started: the plan is taken, done follows on the main loop, exactly once.
 * -EAGAIN when the bounds of set are reached (retry later), -errno when it could not start:
 * the plan stays the caller's.
 *   done(r, why): r = 0, every step done; else the first failure's -errno (-ELOOP: a
 *   symbolic link; -EPERM: a refused owner or mode; -ETIMEDOUT: past the deadline;
 *   -EPROTO: an init script failed; another: the system call's) and why (for the log and
 *   the client: which object, which path, what happened). Each failure is logged (event
 *   "setup-failed", with USER_ID=). n_failed counts them (more than one only with
 *   OnFailure=continue). plan: the plan as run, until done returns: a share the run left
 *   out is setup_plan_share_left_out() there. That is a route whose directory on the host,
 *   Path=/USER, is not a directory of root's or of the user's closed to everyone else (a
 *   directory another user made first, a symbolic link): not a failure (no other user can
 *   refuse this one's login so), but a warning (event "share-route-refused", naming the
 *   path, its owner and mode, and what to do), and the namespace is made without the route:
 *   its Path= is the route's tmpfs with the user's directory empty in it.
 */
typedef void (*SetupDone)(int r, const char *why, unsigned n_failed, bool refuse,
                          const SetupPlan *plan, void *userdata);
int setup_run(Children *set, SetupPlan *plan, int ns_fd, int out_fd, SetupDone done,
              void *userdata);
