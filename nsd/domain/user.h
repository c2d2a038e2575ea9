/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * user.h: one user's namespace as nsd holds it: the namespace (userns.h), the sessions the
 * registry attached to it, the mount baseline linger needs, and where the namespace is kept
 * besides nsd's descriptor: its pin (pinstore.h), the service manager's fd store ("ns-<uid>",
 * fdstore.h) and nsd's state file ns-<uid> (state.h: its linger baseline). A User knows no
 * other user and no session's functions; the registry (users.h) makes, attaches and frees
 * them.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/nsd-forward.h"

/* The most mountinfo text linger reads of one namespace. */
#define USER_MOUNTINFO_MAX (8u << 20)

/* One volume the namespace was set up with ([Volume NAME] of nsd.conf, domain/setup.h): what
 * its setup did, as nsctl volumes shows it. Kept in the state file, so a restart keeps it. */
typedef struct UserVolume {
        char *name, *type;
        char *source, *where; /* expanded */
        int outcome;          /* VolumeOutcome (setup.h) */
        int err;              /* its errno when it failed, else 0 */
        char *why;            /* why it failed; NULL otherwise */
        char *options;        /* a FUSE volume's options (volume_options_text()); else NULL */
        bool password;        /* its program takes a password (gocryptfs) */
        bool ask;             /* Key=ask: never the login password, only nsctl unlock's */
        char *key_file;       /* KeyFile=, expanded: its password is that file's, read for
                               * each TAKE (never the login password nor nsctl unlock's);
                               * NULL: none */
        bool on_request;      /* Start=request: nsctl start, not the login, starts it */
        bool at_login;        /* a kernel volume with Start=login: nsctl start-volumes, run by
                               * the user's service manager at login, asks nsd for it */
        bool release_last;    /* Release=last-session: unmounted once the user has no session
                               * and no process is left in the namespace */
        uint32_t loop;        /* /dev/loop<loop - 1> its image is on; 0: none */
        uint64_t at_usec;     /* CLOCK_REALTIME when the setup reported */
        char *held;        /* why the last release was refused for it (in use by whom); NULL: not */
        char *key_refused; /* why its key file was last refused (user_key_file_refused()) */
} UserVolume;

struct User {
        uid_t uid;
        UserNs *ns;
        GPtrArray *sessions;    /* Session*, attached by the registry (users.h), which owns them */
        GArray *baseline;       /* mounts.h fingerprints; NULL: unknown (kept by linger) */
        char *setup_generation; /* the setup it was made with (setup-conf.h); NULL: unknown */
        char **shares;          /* the [Share NAME]s it was given (NULL-terminated); NULL: none */
        char *owner;            /* the user name it was made for; NULL: unknown (users.h) */
        UserVolume *volumes;    /* the volumes of its setup, in the order of nsd.conf */
        size_t n_volumes;
        /* the login password for the volumes that take it (CREDENTIAL_GIVE): a sealed memfd
         * nsd never reads, in memory only (no state file, no fd store), until each of them took
         * it or USER_CREDENTIAL_HOLD_SEC passed; -1: none */
        int credential_fd;
        guint credential_timer;
        uint64_t credential_taken; /* bit i: volumes[i] took it */
        /* the passwords the user gave for one volume each (CREDENTIAL_UNLOCK): unlock_fd[i]
         * for volumes[i] (NULL until the first; -1: none), until that volume took it or
         * USER_CREDENTIAL_HOLD_SEC after the last one came */
        int *unlock_fd;
        guint unlock_timer;
        char *release_refused; /* why its last release was refused by a volume (volume-busy),
                                * said at warning level once, then at debug while the same */
        bool orphaned;         /* a JOIN found the uid under another name, or none */
        bool orphan_logged;    /* that was logged (once per namespace) */
        bool pin_refused;      /* the kernel refused to pin it: not tried again */
        bool store_warned;     /* not pinned and no room in the fd store: said once */
        FdStore *fdstore;      /* where it is kept besides its pin (never NULL) */
        StateDir *state;       /* NULL: no state files */
};

/* A User for ns (taken) and baseline (taken; NULL: unknown), kept in fdstore and state (both
 * the caller's; state may be NULL). Puts nothing anywhere yet. */
User *user_new(UserNs *ns, GArray *baseline, FdStore *fdstore, StateDir *state);
/* Memory and descriptors only (the pin, the fd store and the state file stay: what survives a
 * restart). Its sessions must have been detached. */
void user_free(User *u);

/* Put u's namespace into the service manager's fd store, of the class its pin says
 * (fdstore.h: one without a pin may take the room of pinned ones), or, when the store holds
 * it, tell the store that class: call it whenever u->ns->pinned changes. 1 in the store, 0
 * no store, -ENOSPC no room in the budget, another -errno; one without a pin that finds no
 * room is logged at warning level, as it does not survive a restart of nsd then. */
int user_store(User *u);
/* Does the service manager's fd store hold u's namespace (fdstore_contains(): put, or passed
 * back at start; not when it found no room, or was removed to make room)? */
bool user_is_stored(const User *u);
/* Is a descriptor of u's namespace passed back by the fd store and not taken yet (at start:
 * the one who adopts it looks at it first)? */
bool user_store_passed(const User *u);
/* Released: out of the fd store, its state file removed. */
void user_unkeep(User *u);

/* The state file ns-<uid>: write it (inode, creation time, baseline). */
void user_state_write(const User *u);
/* The baseline of an adopted namespace from its state file, if that file describes this very
 * namespace; NULL: none or unknown. */
GArray *user_state_baseline(StateDir *state, const UserNs *ns);
/* The setup generation it was made with, from the same file; NULL: unknown (made by an nsd
 * before issue 22, or no state file). g_malloc()ed. */
char *user_state_generation(StateDir *state, const UserNs *ns);
/* The shares it was given, from the same file; NULL: none, or unknown. */
char **user_state_shares(StateDir *state, const UserNs *ns);
/* The user name it was made for (Owner=), from the same file; NULL: unknown. */
char *user_state_owner(StateDir *state, const UserNs *ns);
/* Its volumes from the same file into *ret (g_free() with user_volumes_free()); 0 of them
 * when there are none or the file is not this namespace's. A group that does not read is
 * left out (logged). */
/* The mount nsd made on where after u's namespace was made (a volume it started) into u's
 * baseline (mounts.h), so that linger does not count it as the user's; the state file is
 * written. Logged when the mount table cannot be read. */
void user_baseline_add(User *u, const char *where);
size_t user_state_volumes(StateDir *state, const UserNs *ns, UserVolume **ret);
void user_volumes_free(UserVolume *v, size_t n);

/* Does volumes[i] take the login password (a password volume not keyed Key=ask)? */
bool user_volume_takes_login(const User *u, size_t i);
/* How many of u's volumes take the login password. */
size_t user_password_volumes(const User *u);
/* How long nsd holds a login password at most (NSD_CREDENTIAL_HOLD_SEC of the protocol). */
#define USER_CREDENTIAL_HOLD_SEC 120
/* Hold fd (taken) as u's login password for USER_CREDENTIAL_HOLD_SEC at most, in place of
 * one held before. */
void user_credential_hold(User *u, int fd);
/* Hold fd (taken) as the password the user gave for volumes[i] (a password volume), in
 * place of one held for it before, for USER_CREDENTIAL_HOLD_SEC at most. */
void user_credential_unlock(User *u, size_t i, int fd);
/* A descriptor of the password held for volumes[i] (the caller's to close): the one the user
 * gave for it, else the login password unless Key=ask (*ret_unlocked says which); or -errno:
 * -EAGAIN none held, -EALREADY volumes[i] took the login password held already (each volume
 * once). Nothing is handed over yet: user_credential_handed() says it reached its taker (a
 * reply that is lost uses nothing up). */
int user_credential_peek(User *u, size_t i, bool *ret_unlocked);
/* What user_credential_peek(u, i) gave reached its taker: the user's own for volumes[i] is
 * gone; the login password counts as taken by volumes[i], and once every volume that takes it
 * took it, nsd lets it go. */
void user_credential_handed(User *u, size_t i, bool unlocked);
/* volumes[i]'s key file (KeyFile=) was refused for why, or read (why NULL): is why news (not
 * the reason of the refusal before, which the journal has said already)? */
bool user_key_file_refused(User *u, size_t i, const char *why);
/* Forget the login password held (closes it). */
void user_credential_drop(User *u, const char *why);
/* Forget the passwords the user gave (closes them). */
void user_credential_unlock_drop(User *u, const char *why);
/* Does a volume of u wait for the login password: one takes it, none is held, and one of
 * them is not mounted in u's namespace now? */
bool user_credential_wanted(const User *u);
/* What a new namespace got from the host that was not received from a peer group (read from
 * inside it); NULL when it cannot be read (logged: linger keeps it then). */
GArray *user_take_baseline(const UserNs *ns);
/* The name of uid's state file into buf. */
void user_state_name(char buf[static 32], uid_t uid);
