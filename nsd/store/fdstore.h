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
 *
 * The budget. systemd names every descriptor it passes in ONE environment string,
 * LISTEN_FDNAMES=name:name:..., and the kernel refuses an exec with a string longer than
 * MAX_ARG_STRLEN (32 pages, 131072 bytes with 4 KiB pages, "LISTEN_FDNAMES=" and the NUL
 * included): past it systemd cannot start nsd again (E2BIG, every restart fails, nothing
 * listens). And systemd drops, without telling nsd, a descriptor put beyond
 * FileDescriptorStoreMax=. So nsd counts what the store holds, by name: the descriptors, and
 * the bytes their names add to LISTEN_FDNAMES (strlen + 1 each, the 1 being a ':' or the
 * NUL), what was passed at start as much as what it put since, plus the variable's name and
 * the sockets' names (at least FDSTORE_NAMES_FIXED). It never puts a descriptor that would
 * take LISTEN_FDNAMES past FDSTORE_NAMES_BUDGET or the store past its descriptor limit:
 *   - 96 KiB of 128: the other 32 KiB are for what nsd cannot foresee (sockets an
 *     administrator adds to the unit with long FileDescriptorName=, names an nsd without
 *     this budget put before an upgrade, a service manager that adds names of its own). At
 *     10 to 14 bytes a namespace ("ns-" and a 6- to 10-digit uid) that is 9700 to 6900
 *     namespaces, however many sessions there are.
 *   - Namespaces come first, and of them those the store alone brings back (a namespace is
 *     kept by its pin first, the store second). Every put says its class (FdStoreClass) and
 *     takes the room it needs from the classes after its own, removing their descriptors
 *     from the store (FDSTOREREMOVE=1; the last class first, in each the oldest first): a
 *     namespace without a pin (and the pin namespace) takes it from sessions, then from
 *     pinned namespaces, whose pins keep them anyway; a pinned namespace from sessions only.
 *     So namespaces may use the whole budget. Sessions may use at most
 *     FDSTORE_SESSIONS_SHARE of it (about 980 pidfds), and only what namespaces leave. A
 *     name passed back at start counts in the first class (a namespace as one without a
 *     pin, whose room nothing takes) until nsd says what keeps it (fdstore_set_class(), as
 *     it adopts it, and whenever its pin comes or goes).
 *   - At most NSD_FDSTORE_MAX descriptors (meson.build, also nsd.service's
 *     FileDescriptorStoreMax=), or $FDSTORE where the service manager says it (systemd >= 254).
 * A put that does not fit returns -ENOSPC and changes nothing: what it was for still works
 * (a pinned namespace is kept by its pin, a session by its state file), it only does not come
 * back from the store after a restart; only a namespace without a pin is lost then, and it
 * finds no room only when namespaces without a pin fill the budget alone. A descriptor
 * removed to make room is as one refused: nothing tells its owner, who asks
 * fdstore_contains(), and puts it again when room comes back (user.c users_store_more()).
 * The first refusal or removal of a class after it had room is logged at warning level with
 * what happened, what it means and the figures, at most once each 10 minutes per class; the
 * next ones at debug level; room again at info level. A removal gives room back.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "base/nsd-forward.h"

/* names: "pinns", "ns-<uid>", "session-<16 hex>" */
#define FDSTORE_PINNS "pinns"
#define FDSTORE_NS_PREFIX "ns-"
#define FDSTORE_SESSION_PREFIX "session-"
#define FDSTORE_NAME_MAX 64

/* The longest environment string the kernel passes to a program (MAX_ARG_STRLEN, 32 pages of
 * 4 KiB: larger pages only raise it). */
#define FDSTORE_ENV_STRING_MAX 131072u
/* The most LISTEN_FDNAMES= may take, "LISTEN_FDNAMES=" and the NUL included (see above). */
#define FDSTORE_NAMES_BUDGET (96u << 10)
/* What is counted at least for "LISTEN_FDNAMES=" (15 bytes) and the sockets' names (two of
 * at most 255 bytes each, with their separators); more when longer names were passed. */
#define FDSTORE_NAMES_FIXED 1024u
/* The most session names may take of the budget. */
#define FDSTORE_SESSIONS_SHARE (24u << 10)

/* What keeps a name's descriptor besides the store, which says whose room it may take: a put
 * of one class takes the room of the classes after it (see above). */
typedef enum FdStoreClass {
        FDSTORE_CLASS_NAMESPACE, /* pinns, ns-<uid> without a pin: the store alone brings it
                                  * back; nothing takes its room */
        FDSTORE_CLASS_PINNED,    /* ns-<uid> with a pin: the store is its second line */
        FDSTORE_CLASS_SESSION,   /* session-<id> (the state file brings it back): what
                                  * namespaces leave, up to its share */
        _FDSTORE_CLASS_MAX,
} FdStoreClass;

typedef struct FdStoreStats {
        size_t names_bytes;        /* LISTEN_FDNAMES= as systemd would make it now, at most */
        size_t budget_bytes;       /* FDSTORE_NAMES_BUDGET, unless a test set another */
        size_t sessions_bytes;     /* of names_bytes, the sessions' */
        size_t sessions_max_bytes; /* FDSTORE_SESSIONS_SHARE, unless a test set another */
        unsigned n_fds;            /* descriptors in the store (a duplicate passed counts) */
        unsigned max_fds;
        unsigned n_fds_class[_FDSTORE_CLASS_MAX];
        unsigned refused[_FDSTORE_CLASS_MAX]; /* puts refused since start */
        unsigned evicted[_FDSTORE_CLASS_MAX]; /* removed to make room for a class before it */
        bool full[_FDSTORE_CLASS_MAX]; /* refused or removed since the last put that fitted */
        unsigned warnings;             /* crossings said at warning level */
} FdStoreStats;

/* enabled: $NOTIFY_SOCKET was set (or a test says so) */
FdStore *fdstore_new(bool enabled);
/* Other limits than the defaults (0: keep that one): main.c gives $FDSTORE as max_fds, tests
 * small ones. */
void fdstore_set_limits(FdStore *fs, size_t budget_bytes, size_t sessions_max_bytes,
                        unsigned max_fds);
/* Closes what was passed and not taken (nothing is removed from the store). NULL is fine. */
void fdstore_free(FdStore *fs);
bool fdstore_enabled(const FdStore *fs);
/* Is name one of ours (a name main.c should hand to the server rather than to the sockets)? */
bool fdstore_name_is_ours(const char *name);

/* At start: a descriptor the service manager passed under name (taken; counted as in the
 * store). */
void fdstore_add_passed(FdStore *fs, int fd, const char *name);
/* At start: a name passed that is not ours (a socket's): it is in LISTEN_FDNAMES too. */
void fdstore_add_foreign(FdStore *fs, const char *name);
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
 * closed). Logged. Then, when what was passed is over the budget (filled by an nsd without
 * one), session descriptors are removed until it is not. */
void fdstore_drop_unclaimed(FdStore *fs);

/* Put fd into the store under name, of class c (FDSTORE_CLASS_SESSION for a session-<id>,
 * one of the others for the rest: asserted), with FDSTORE=1, FDNAME=, FDPOLL=0 (nsd itself
 * removes what ends), if it fits the budget (above; it may remove descriptors of the classes
 * after c to make room). The caller keeps fd. 0 (no store), 1 (sent), -ENOSPC (no room:
 * logged once per crossing, see above), or another -errno (logged at debug: the pins and
 * state files still hold what matters). */
int fdstore_put(FdStore *fs, int fd, const char *name, FdStoreClass c);
/* What keeps name changed (a namespace got its pin, or lost it): from now on it is of class c,
 * and gives its room to, or takes it from, the classes that says. Sends nothing, changes no
 * budget; a name the store does not hold: nothing. */
void fdstore_set_class(FdStore *fs, const char *name, FdStoreClass c);
/* Remove every descriptor of name from the store (FDSTOREREMOVE=1), giving its room back. A
 * name the store does not hold (never put, refused, removed to make room) sends nothing: 0. */
int fdstore_remove(FdStore *fs, const char *name);
/* Does the store hold a descriptor of name (passed or put, taken or not)? */
bool fdstore_contains(const FdStore *fs, const char *name);
/* Was the last put of class c refused, or one of c removed for room (and none fitted since)? */
bool fdstore_full(const FdStore *fs, FdStoreClass c);
void fdstore_get_stats(const FdStore *fs, FdStoreStats *ret);

/* "ns-<uid>", "session-<id>" into buf[FDSTORE_NAME_MAX] */
const char *fdstore_ns_name(char buf[static FDSTORE_NAME_MAX], unsigned uid);
const char *fdstore_session_name(char buf[static FDSTORE_NAME_MAX], unsigned long long id);
