/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * user.h: nsd's per-user state: the user's namespace, its sessions, its linger timer.
 *
 * Linger: when a uid's last session ends, the namespace is kept (Linger=forever), or
 * released after Linger= seconds, but only if it then has no sessions AND no more mounts
 * than it had right after creation (the baseline). A namespace adopted after a restart has
 * no known baseline and is never released by linger, only by RELEASE.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <sys/types.h>

#include "server.h"
#include "userns.h"

/* A JOIN of a namespace that has no session keeps it at least this long, so the
 * SESSION_OPEN that follows a JOIN finds it even with Linger=0. */
#define USER_JOIN_GRACE_SEC 30

typedef struct User {
        Server *server;
        uid_t uid;
        UserNs *ns;
        GPtrArray *sessions; /* Session*, owned by server->sessions */
        guint linger_timer;
        int baseline_mounts; /* mounts right after creation; -1 unknown (adopted) */
} User;

User *user_get(Server *s, uid_t uid);
/* Add a user for ns (taken). baseline_mounts: -1 when unknown. */
User *user_add(Server *s, UserNs *ns, int baseline_mounts);
/* The free function of server->users. */
void user_free(gpointer p);

/* uid's user, creating its namespace when it has none (and create is true). Checks the
 * effective MaxNamespaces. *ret_created tells whether this call created it. Returns 0, or
 * -errno with *ret_why (g_malloc()ed) for the client. */
int user_join(Server *s, uid_t uid, bool create, User **ret, bool *ret_created, char **ret_why);

/* Release uid's namespace: unpin it, drop its sessions, forget it (u is freed). */
int user_release(User *u, const char *why);

/* Linger: start (or restart) the countdown of Linger=, at least min_sec; cancel it. */
void user_arm_linger(User *u, int64_t min_sec);
void user_cancel_linger(User *u);

unsigned users_count_pinned(Server *s);
/* Sessions ended, sessions dropped: for server_free(). */
void users_forget_sessions(Server *s);
