/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * users.h: the registry. It owns every User (user.h) and every Session (session.h), decides
 * what happens between them, and is the only one that makes, ends and frees them and the only
 * one that says "changed" (to the callback its owner gave, server.c's STATUS=). Users and
 * sessions report to it (a session's leader exited, linger found a namespace empty, pending.c
 * adopted a namespace) and never call each other or anything above (logind's gc-queue
 * discipline: objects report to their owner, which acts). Every verb takes the registry and
 * plain values: a domain verb is unit-tested without a Server.
 *
 * A JOIN for a uid nsd does not hold a namespace of, while that uid is pending (pending.h:
 * its pin is not adopted yet, the pin store is not available yet, or its namespace from the
 * fd store could not be entered yet), answers -NSD_ERRNO_NOT_YET with a reason and tries the
 * adoption again: never a fresh namespace in place of a kept one.
 *
 * Sessions survive restarts (session.h): at start each state file is checked against its
 * leader; a restored session of a uid whose namespace is pending waits for it (counted,
 * closable) and joins it when it is adopted.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/nsd-forward.h"
#include "domain/setup.h"

/* Where the registry keeps what survives a restart, and the rooms it uses. All the caller's;
 * they outlive the registry. */
typedef struct UsersSetup {
        const Config *config; /* the one in force (Linger=, MaxSessionsPerUser=, namespaces) */
        PinStore *pins;       /* NULL: no pin store */
        FdStore *fdstore;     /* never NULL (does nothing without a service manager) */
        StateDir *state;      /* NULL: no state files */
        Pending *pending;     /* what is kept and not adopted yet; never NULL */
        const char *proc_dir; /* linger's scan for processes; NULL: "/proc" */
        Children *children;   /* where a new namespace's setup runs; NULL: nothing is set up
                               * (a setup in the config refuses creation then) */
} UsersSetup;

typedef enum UserAddFlags {
        USER_ADD_CREATED = 1 << 0,   /* made now: write its state file (baseline given) */
        USER_ADD_FD_STORED = 1 << 1, /* its nsfs descriptor came from the fd store */
} UserAddFlags;

Users *users_new(const UsersSetup *setup);
/* Forget everything in memory: sessions are dropped, not ended; namespaces stay pinned,
 * state files and the fd store stay, for the next start. The namespaces nothing keeps after
 * nsd (no pin, not in the fd store) leave pam_nsjoin's record (state.h). */
void users_free(Users *reg);
/* fn(userdata) whenever what STATUS counts changed (coalescing is the callee's). */
void users_set_changed(Users *reg, void (*fn)(void *userdata), void *userdata);
/* The effective MaxNamespaces (server.c works it out from the config and the host). */
void users_set_max_namespaces(Users *reg, unsigned max);
unsigned users_max_namespaces(const Users *reg);

/* At start: adopt every kept namespace (pending.h) and pin again those kept by descriptor
 * only, restore the sessions of the state files, remove the state files (and pam_nsjoin's
 * record) of uids nsd keeps nothing of, start the countdowns (at least the JOIN grace) of namespaces without
 * sessions, drop what the fd store passed and nobody claimed, and put into it what found no
 * room. Logs what it adopted and restored. */
void users_start(Users *reg);

/* ---- users ------------------------------------------------------------------------------- */

User *users_get(const Users *reg, uid_t uid);
unsigned users_count(const Users *reg);
unsigned users_count_pinned(const Users *reg);
/* Namespaces that are not in the fd store (it found no room, or there is no store), and of
 * them those without a pin (lost at a restart of nsd). */
unsigned users_count_not_stored(const Users *reg, unsigned *ret_unpinned);
/* The uids nsd holds a namespace of, sorted (g_array_unref()). */
GArray *users_uids(const Users *reg);

/* Add a user for ns (taken), baseline (taken; NULL: unknown, or read from the state file when
 * not USER_ADD_CREATED). Puts ns into the fd store, or gives it there the class its pin says
 * (not for a descriptor passed back at start, which its adoption looks at first), attaches
 * the restored sessions that waited for this uid. */
User *users_add(Users *reg, UserNs *ns, GArray *baseline, UserAddFlags flags);
/* Is uid pending: a namespace of it is kept (pinned, or in the fd store) that nsd does not
 * hold yet? Then a JOIN must wait. */
bool users_is_pending(const Users *reg, uid_t uid);
/* uid's user, creating its namespace when it has none (and create is true). Checks the
 * effective MaxNamespaces. *ret_created tells whether this call created it. Returns 0, or
 * -errno with *ret_why (g_malloc()ed) for the client; -NSD_ERRNO_NOT_YET while uid is
 * pending (after one more try to adopt it), or while its setup runs (users_join_start()
 * starts one, without a user: then the setup must not need one). */
int users_join(Users *reg, uid_t uid, bool create, User **ret, bool *ret_created, char **ret_why);
/*
 * A new namespace's contents (issue 22, domain/setup.h): when the configuration sets
 * something up ([Polydir], [BindReadOnly], PrivateTmp=) for uid, a new namespace is made
 * unpinned, set up by a child of UsersSetup.children within TimeoutSec=, and only then
 * pinned and added: users_join_start() answers -EINPROGRESS and done(userdata) follows on
 * the loop, exactly once: 0 (users_get() has the user then) or -errno and why. Every caller
 * for one uid meanwhile waits for that same setup; other uids are served. A setup that
 * fails throws its namespace away (never pinned, never handed out): -NSD_ERRNO_NOT_YET for
 * what may pass (a full descriptor table, memory; retried by the next JOIN), else the
 * error, and the same answer for SETUP_REFUSED_SEC to anyone asking again for that uid (a
 * failing init script is not run at every retry of a login). With OnFailure=continue the
 * namespace is handed out without what failed (logged).
 *
 * who: the user, for a setup that needs more than the uid (users_join_needs_identity():
 * %u, %h, %g, user names, init scripts); NULL otherwise. Without a setup, or for a uid that
 * has a namespace or is pending, it is users_join(), done is not called.
 */
#define SETUP_REFUSED_SEC 5
/* The errno a client gets for a setup that failed with r: r itself, but EIO for the errnos
 * that mean something else to a client (ENOENT "no namespace", ETIMEDOUT "nsd did not
 * answer", EAGAIN "not yet", ENXIO "not managed", EUSERS "a limit"); the reason says what
 * happened. */
int users_setup_error(int r);
typedef void (*UsersJoinDone)(int r, const char *why, void *userdata);
bool users_join_needs_identity(const Users *reg, uid_t uid, bool create);
int users_join_start(Users *reg, uid_t uid, bool create, const SetupUser *who, UsersJoinDone done,
                     void *userdata, User **ret, bool *ret_created, char **ret_why);
/* For root's SHARES: the mounts under each share's anchor (NULL: skip) and its peer group, from
 * one read of nsd's pin namespace's mount table (a helper; logged when it fails); -1 and 0
 * where unknown (no pin store, no anchor yet, a share without one: Propagation=per-user). */
void users_share_anchors(Users *reg, const Share *const *shares, size_t n, int32_t *ret_mounts,
                         uint32_t *ret_groups);
/* How many namespaces were given the share (made, or being made now). */
unsigned users_share_members(const Users *reg, const char *share);
/* The uids of the live namespaces given the share (not those being made), sorted
 * (g_array_unref()). */
GArray *users_share_uids(const Users *reg, const char *share);
/* The setup generation of the configuration in force (setup-conf.h), into buf. */
const char *users_setup_generation(const Users *reg, char buf[static 17]);
/* Was u's namespace made with another setup than generation (the one in force)? One whose
 * setup is unknown (made by an nsd before issue 22) is, when the setup in force sets
 * anything up. */
bool users_is_stale(const Users *reg, const User *u, const char *generation);

/*
 * Recycled uids. A namespace records the user name it was made for (its owner, in the state
 * file: Owner=) when nsd knows it; a JOIN of an existing namespace compares it with the name
 * the uid has now, so a uid given to another person never hands that person the namespace
 * (and the mounts) of the one before. Nothing is released automatically: root releases it.
 */
/* Record u's owner name (a namespace just made; not when it has one already). */
void users_set_owner(Users *reg, User *u, const char *name);
/* Is u's owner still who uid is (name: its name now, NULL: no passwd entry)? 0 (also when
 * the owner is unknown), or -EOWNERDEAD with *ret_why: u is marked orphaned (LIST), logged
 * once per namespace. */
int users_check_owner(Users *reg, User *u, const char *name, char **ret_why);

/* A JOIN without a session: its countdown restarts, with the JOIN grace at least, so the
 * SESSION_OPEN that follows finds the namespace. */
void users_joined(Users *reg, User *u);
/* How a release that waited for its volumes ended: r 0 (released) or -errno with why (the
 * first reason: a volume in use and by whom, a step that failed), for the asker. */
typedef void (*UsersReleaseDone)(int r, const char *why, void *userdata);
/* Release u's namespace: unpin it, then drop its sessions and forget it (u is freed).
 * A namespace with block volumes its setup mounted has them unmounted first
 * (volume-release.h: in reverse order, never lazily, refused while anything holds one):
 * then 1, and done(r, why, userdata) runs later, once; meanwhile a JOIN of the uid is "not
 * yet available" and another release is refused (-EBUSY). A release whose volumes stay (in
 * use, a failed step) keeps the namespace, pinned, with its sessions; without sessions
 * linger looks at it again. One whose pin cannot be removed after that keeps it without
 * those volumes (logged). by_user: the user asked for its own release (its child is
 * CHILD_USER: it takes no reserve of child.h's). 0: released now (done is not called). When the unpin fails nothing changes
 * (u stays, with its sessions): -errno and *ret_why (g_malloc()ed, may be NULL) for the
 * asker. */
int users_release(Users *reg, User *u, const char *why, bool by_user, UsersReleaseDone done,
                  void *userdata, char **ret_why);
/* Are uid's volumes being unmounted for a release? */
bool users_is_releasing(const Users *reg, uid_t uid);
/*
 * One kernel volume of a namespace that exists (VOLUME_START, VOLUME_STOP; issue 25): a
 * volume with Start=login or Start=request, or one stopped. One start or stop per uid at a
 * time; meanwhile a release of the uid is refused (-EBUSY), and a start or stop while the
 * namespace is released is "not yet" (-EAGAIN). by_user: the user asked (its child is
 * CHILD_USER). why: who asked, for the log.
 *   start: a plan of that one volume (setup_plan_only_volume(): Where= resolved as the user,
 *   nothing stacked on another mount) run in the namespace; once mounted its mount joins the
 *   namespace's baseline (linger does not count it as the user's) and the release unmounts it
 *   as any block volume. who: the user (the plan needs its home and groups).
 *   stop: a block volume unmounted as a release does (volume-release.h: refused while held,
 *   naming who, never lazily); -EOPNOTSUPP for a network volume (it goes with the namespace).
 * 1: done(r, why, v, changed, userdata) runs later, once (v: the volume as it is now; changed:
 * this request mounted or unmounted it). 0: nothing to do (mounted already; not mounted), done
 * is not called. -errno with *ret_why: refused (-ENOENT no such volume, -EOPNOTSUPP a FUSE
 * one, -EAGAIN; a stop whose block volume's record is unsure and whose namespace's mount
 * table cannot be read: that read's error, nothing changed).
 */
typedef void (*UsersVolumeDone)(int r, const char *why, const UserVolume *v, bool changed,
                                void *userdata);
int users_volume_start(Users *reg, User *u, const char *name, const SetupUser *who, bool by_user,
                       const char *why, UsersVolumeDone done, void *userdata, char **ret_why);
int users_volume_stop(Users *reg, User *u, const char *name, bool by_user, const char *why,
                      UsersVolumeDone done, void *userdata, char **ret_why);
/* Try to pin again what is kept by descriptor only (the pin store became available, or the
 * namespace came from the fd store without a pin). */
void users_repin(Users *reg);
/* Room in the fd store for namespaces again (a release, a pin that makes one's room free to
 * take, the start's drop of what nobody claimed): when some found none or were removed for
 * room, put them, those without a pin first (taking the room of pinned ones), until one finds
 * none. */
void users_store_more(Users *reg);

/* ---- sessions ---------------------------------------------------------------------------- */

unsigned users_count_sessions(const Users *reg);
/* Live sessions of uid (held or waiting). */
unsigned users_sessions_of(const Users *reg, uid_t uid);
/* Of those, the ones the user's own processes opened (by_user), or root's (a login's). */
unsigned users_sessions_by(const Users *reg, uid_t uid, bool by_user);
/* Count a new session of u, leader pid, pidfd (taken; -1: poll the pid). Cannot fail once
 * the limits were checked by the caller (MaxSessionsPerUser=). Logs, writes its state file
 * and puts its pidfd into the fd store. */
/* opener: root (0) or the user itself; the user's sessions have their own budget (the
 * caller's check), only their leader closes them, and their log lines are rate limited per
 * uid (log_event_by()). */
Session *users_open_session(Users *reg, User *u, pid_t pid, const char *service, int pidfd,
                            uid_t opener);
/* The session of uid with id (when not 0) or else by pid; NULL when unknown. */
Session *users_find_session(const Users *reg, uid_t uid, uint64_t id, pid_t pid);
/* A session is over (closed, or its leader died): its state file and fd store entry go;
 * after its user's last one the countdown of Linger= starts, and the user's mounted volumes
 * with Release=last-session are unmounted once no process is left in the namespace (looked
 * at again every 10 s while one is; the namespace itself may stay). */
void users_end_session(Users *reg, Session *sess);
