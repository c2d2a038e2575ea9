/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fdstore.h: the service manager's file descriptor store (sd_notify FDSTORE=1), nsd's second
 * line behind the pins (DESIGN.md "Never lose", issue 9). What nsd keeps there, by FDNAME=:
 *   pinns          the pin namespace (nsfs)
 *   ns-<uid>       every user namespace (nsfs), pinned or not
 *   session-<id>   every session leader's pidfd (id in 16 hex digits, as in the state files)
 * systemd hands them back at the next start of nsd (systemctl restart, a crash, the
 * watchdog) in LISTEN_FDS/LISTEN_FDNAMES, beside the sockets; main.c gives them to the
 * server (fdstore_add_passed()), which takes what it re-adopts (fdstore_take()) and drops
 * the rest (fdstore_drop_unclaimed()).
 *
 * The store is in use when $NOTIFY_SOCKET was set at start (a service manager listens); it
 * also needs FileDescriptorStoreMax= in the unit (nsd.service sets it). Without one every
 * call here does nothing and nsd relies on its pins and state files alone.
 *
 * A descriptor passed at start stays in the store: it is not put again (systemd keeps every
 * descriptor put, also a second copy of the same namespace opened anew), so whoever takes one
 * keeps using that very descriptor, and fdstore_put() is for descriptors the store does not
 * hold yet. FDSTOREREMOVE=1 removes every descriptor of a name.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct FdStore FdStore;

/* names: "pinns", "ns-<uid>", "session-<16 hex>" */
#define FDSTORE_PINNS "pinns"
#define FDSTORE_NS_PREFIX "ns-"
#define FDSTORE_SESSION_PREFIX "session-"
#define FDSTORE_NAME_MAX 64

/* enabled: $NOTIFY_SOCKET was set (or a test says so) */
FdStore *fdstore_new(bool enabled);
/* Closes what was passed and not taken (nothing is removed from the store). NULL is fine. */
void fdstore_free(FdStore *fs);
bool fdstore_enabled(const FdStore *fs);
/* Is name one of ours (a name main.c should hand to the server rather than to the sockets)? */
bool fdstore_name_is_ours(const char *name);

/* At start: a descriptor the service manager passed under name (taken). */
void fdstore_add_passed(FdStore *fs, int fd, const char *name);
size_t fdstore_n_passed(const FdStore *fs);
/* Was a descriptor of name passed and not taken yet? */
bool fdstore_is_passed(const FdStore *fs, const char *name);
/* The descriptor passed under name, now the caller's (it stays in the store); -1: none. A
 * second one of the same name stays passed (dropped by fdstore_drop_unclaimed()). */
int fdstore_take(FdStore *fs, const char *name);
/* The names passed with prefix and not taken yet, in the order passed (g_strfreev()). */
char **fdstore_passed_names(const FdStore *fs, const char *prefix);
/* After start: every passed descriptor not taken is closed and its name removed from the
 * store (FDSTOREREMOVE=1), unless a descriptor of the same name was taken (a duplicate: only
 * closed). Logged. */
void fdstore_drop_unclaimed(FdStore *fs);

/* Put fd into the store under name (FDSTORE=1, FDNAME=, FDPOLL=0: nsd itself removes what
 * ends). The caller keeps fd. 0 (no store), 1 (sent), or -errno (logged at debug: the pins and
 * state files still hold what matters). */
int fdstore_put(FdStore *fs, int fd, const char *name);
/* Remove every descriptor of name from the store (FDSTOREREMOVE=1). */
int fdstore_remove(FdStore *fs, const char *name);

/* "ns-<uid>", "session-<id>" into buf[FDSTORE_NAME_MAX] */
const char *fdstore_ns_name(char buf[static FDSTORE_NAME_MAX], unsigned uid);
const char *fdstore_session_name(char buf[static FDSTORE_NAME_MAX], unsigned long long id);
