/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * user.h: nsd's per-user state: the user's namespace, its sessions, its linger timer.
 *
 * Where a namespace is kept: its pin (pinstore.h), the service manager's fd store
 * ("ns-<uid>", fdstore.h) and nsd's state file ns-<uid> (state.h: its linger baseline). A
 * JOIN for a uid nsd does not hold a namespace of, while that uid is pending (its pin is not
 * adopted yet, the pin store is not available yet, or its namespace from the fd store could
 * not be entered yet), answers -NSD_ERRNO_NOT_YET with a reason and tries the adoption
 * again: never a fresh namespace in place of a kept one.
 *
 * Linger (Linger= not forever): when a uid's last session ends, the countdown of Linger=
 * starts; when it is over, the namespace is released only if it is EMPTY:
 *   - no session (a JOIN or a SESSION_OPEN meanwhile stops the countdown),
 *   - no process inside it (nsprocs.h: a tmux server, a nohup job, systemd --user), and
 *   - no mount in it that the user made (mounts.h: told apart from the host's by what each
 *     mount is, against the baseline taken at creation; a namespace without a known baseline
 *     is kept).
 * A namespace that is not empty is looked at again after Linger= (at least
 * USER_LINGER_RECHECK_SEC); "Keeping the namespace of uid N: ..." says why, at info level
 * the first time. The release unpins first: a pin that cannot be removed keeps everything
 * as it is, and the release is tried again after USER_RELEASE_RETRY_SEC.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <sys/types.h>

#include "server.h"
#include "store/userns.h"

/* A JOIN of a namespace that has no session keeps it at least this long, so the
 * SESSION_OPEN that follows a JOIN finds it even with Linger=0. Also the least time an
 * adopted namespace without sessions is kept after nsd starts. */
#define USER_JOIN_GRACE_SEC 30
/* A namespace linger kept (a process, a mount) is looked at again after at least this. */
#define USER_LINGER_RECHECK_SEC 10
/* A release (linger's) that could not unpin is tried again after this. */
#define USER_RELEASE_RETRY_SEC 5
/* The most mountinfo text linger reads of one namespace. */
#define USER_MOUNTINFO_MAX (8u << 20)

struct User {
        Server *server;
        uid_t uid;
        UserNs *ns;
        GPtrArray *sessions; /* Session*, owned by server->sessions */
        guint linger_timer;
        unsigned linger_gen; /* changes with every arm and cancel: a check under way for an
                               * older generation decides nothing */
        char *linger_kept;   /* why linger kept it last time (said at info once) */
        GArray *baseline;    /* mounts.h fingerprints; NULL: unknown (kept by linger) */
        bool pin_refused;    /* the kernel refused to pin it: not tried again */
        bool store_warned;   /* not pinned and no room in the fd store: said once */
};

typedef enum UserAddFlags {
        USER_ADD_CREATED = 1 << 0,   /* made now: write its state file (baseline given) */
        USER_ADD_FD_STORED = 1 << 1, /* its nsfs descriptor came from the fd store */
} UserAddFlags;

User *user_get(Server *s, uid_t uid);
/* Add a user for ns (taken), baseline (taken; NULL: unknown, or read from the state file when
 * not USER_ADD_CREATED). Puts ns into the fd store, or gives it there the class its pin says
 * (user_store(); not for a descriptor passed back at start that server.c looks at first),
 * attaches sessions restored at start that waited for this uid (session.h). */
User *user_add(Server *s, UserNs *ns, GArray *baseline, UserAddFlags flags);
/* Put u's namespace into the service manager's fd store, of the class its pin says
 * (fdstore.h: one without a pin may take the room of pinned ones), or, when the store holds
 * it, tell the store that class: call it whenever u->ns->pinned changes. 1 in the store, 0
 * no store, -ENOSPC no room in the budget, another -errno; one without a pin that finds no
 * room is logged at warning level, as it does not survive a restart of nsd then. */
int user_store(User *u);
/* Does the service manager's fd store hold u's namespace (fdstore_contains(): put, or passed
 * back at start; not when it found no room, or was removed to make room)? */
bool user_is_stored(const User *u);
/* The free function of server->users: memory and descriptors only (the pin, the fd store
 * and the state file stay: what survives a restart). */
void user_free(gpointer p);

/* Is uid pending: a namespace of it is kept (pinned, or in the fd store) that nsd does not
 * hold yet? Then a JOIN must wait. */
bool user_is_pending(Server *s, uid_t uid);

/* uid's user, creating its namespace when it has none (and create is true). Checks the
 * effective MaxNamespaces. *ret_created tells whether this call created it. Returns 0, or
 * -errno with *ret_why (g_malloc()ed) for the client; -NSD_ERRNO_NOT_YET while uid is
 * pending (user_is_pending(), after one more try to adopt it). */
int user_join(Server *s, uid_t uid, bool create, User **ret, bool *ret_created, char **ret_why);

/* Release uid's namespace: unpin it, then drop its sessions and forget it (u is freed).
 * When the unpin fails nothing changes (u stays, with its sessions): -errno and *ret_why
 * (g_malloc()ed, may be NULL) for the asker. */
int user_release(User *u, const char *why, char **ret_why);

/* Linger: start (or restart) the countdown of Linger=, at least min_sec; cancel it. */
void user_arm_linger(User *u, int64_t min_sec);
void user_cancel_linger(User *u);

/* server_new(): the linger queue. */
void users_init(Server *s);
/* server_free(): a scan of /proc under way reports to nobody. */
void users_cancel_linger_scan(Server *s);
/* Try to pin again what is kept by descriptor only (the pin store became available, or the
 * namespace came from the fd store without a pin). */
void users_repin(Server *s);
/* At start: remove the state files ns-<uid> of uids nsd neither holds nor waits for, and
 * the names in pam_nsjoin's record (state.h) of namespaces nsd does not hold. */
void users_prune_state(Server *s);
/* server_free(): take the namespaces nothing keeps after nsd (no pin, not in the fd store)
 * out of pam_nsjoin's record: they may end with nsd, and their inode be reused. */
void users_unrecord_unkept(Server *s);
unsigned users_count_pinned(Server *s);
/* Namespaces that are not in the fd store (it found no room, or there is no store), and of
 * them those without a pin (lost at a restart of nsd). */
unsigned users_count_not_stored(Server *s, unsigned *ret_unpinned);
/* Room in the fd store for namespaces again (a release, a pin that makes one's room free to
 * take, the start's drop of what nobody claimed): when some found none or were removed for
 * room, put them, those without a pin first (taking the room of pinned ones), until one finds
 * none. */
void users_store_more(Server *s);
/* Sessions ended, sessions dropped: for server_free(). */
void users_forget_sessions(Server *s);
