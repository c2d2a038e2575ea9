/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsd-protocol.h: the wire protocol between nsd and its clients.
 *
 * This is the ONE place where the protocol is defined; nsd and libnsclient both include it.
 * It is private: not installed. Applications use libnsclient's nsclient.h.
 *
 * Transport: AF_UNIX SOCK_SEQPACKET, one message per datagram (no framing), descriptors only
 * by SCM_RIGHTS. Every message starts with struct nsd_msg_header. All integers are host
 * endian (the socket never leaves the machine). Structs are fixed-width with explicit padding,
 * and their sizes are checked below, so 32- and 64-bit builds agree.
 *
 * Identity: nsd takes the caller's uid and pid from SO_PEERCRED, never from a message. A uid
 * inside a request names the namespace asked for; only root may name another user's.
 *
 * Who gets what (the policy; nsd/api/access.c enforces it, nsd(8) and SECURITY.md explain it).
 * Root gets everything. A caller that is not root:
 *   - JOIN, JOIN_SESSION (descriptors): only when the process that connected is the one
 *     that sent the request (SCM_CREDENTIALS) and its mount namespace and root directory
 *     are that namespace and its root: the descriptors then give it nothing it has not got.
 *     Anyone else, a sandboxed process of the user above all (ProtectHome=, ReadOnlyPaths=,
 *     a chroot, firejail), gets -EPERM ("descriptors of a namespace go only to root or to a
 *     process already inside it; see nsctl show") and no namespace is created for it.
 *   - SHOW, RELEASE, HIDE: only a process in the user's namespace or in the initial one (at
 *     its root), never a sandboxed one (-EPERM). SHOW is how a user sees its namespace's
 *     mounts without descriptors.
 *   - HIDE (and NSD_HIDE_UNHIDE): only a mount the caller owns (a FUSE mount with user_id=
 *     its uid, or one owner-private for it already); the path is walked with the caller's
 *     whole identity (uid, gid, groups), so errors say what stat(2) would say to it. The
 *     groups are looked up first (nsd.conf LookupTimeoutSec=), then the path is walked
 *     (PathWalkTimeoutSec=): a HIDE is answered within the sum of the two.
 *   - STATUS: its own figures (namespaces, pinned, sessions, connections of its uid); the
 *     limits, version, features and pid are the same for everyone. LIST: its own entry.
 *   - METRICS (1.4): never (-EPERM); the machine's counters are root's.
 *   - SHARES (1.5): only the shares its own namespace was given, and of their members only
 *     its own uid (the count of members is not hidden); nothing when it has no namespace.
 *   - VOLUMES (1.7): the volumes of its own namespace only; nothing when it has none.
 *   - CREDENTIAL_GIVE (1.7): never (-EPERM): pam_nsjoin's, as root. CREDENTIAL_TAKE: its own
 *     volume's, only from inside its namespace or the initial one (-EPERM for a sandboxed
 *     process, as SHOW).
 *   - CREDENTIAL_UNLOCK (1.8): its own volume's password, from the same places as TAKE.
 *   When nsd cannot check where the caller is for a reason of its own (no process, descriptor
 *   or memory to spare for the helper that opens /proc/PID/ns/mnt and /proc/PID/root, a look
 *   at descriptors it holds failing), the request is refused all the same, but not with a
 *   -EPERM that blames the caller: -EAGAIN when the failure may pass (the call's own errno
 *   otherwise), "nsd could not check where pid N is right now (STEP: ERROR); retry". Ask
 *   again. (A CREDENTIAL_TAKE's -EAGAIN then does not mean "locked": its message tells.)
 *
 * Validation (nsd side): magic, major version, type, and `length` equal to the datagram size
 * AND to the exact size of that request type; strings must be NUL-terminated inside their
 * field; reserved fields must be zero. Anything else gets an NSD_REP_ERROR with a reason and
 * the connection is closed.
 *
 * Changelog
 *   1.0  first version: JOIN, SESSION_OPEN, SESSION_CLOSE, STATUS, LIST, SHOW, RELEASE.
 *        Type 8 (HIDE, owner-private mounts) is reserved for the kernel-patch work.
 *   1.1  HIDE (type 8): give a mount the owner-private attribute (kernel patch F4) for a user,
 *        or take it away (NSD_HIDE_UNHIDE). STATUS features gain NSD_FEATURE_PRIVATE_MODE and
 *        NSD_FEATURE_PRIVATE_UNAVAILABLE (nsd.conf [Private] Enable=). A 1.0 nsd answers HIDE
 *        with -EOPNOTSUPP ("unknown request type").
 *   1.2  A second socket for root only (NSD_ROOT_SOCKET_PATH_DEFAULT, mode 0600; nsd also
 *        refuses any peer but uid 0 there), so no number of unprivileged clients can take
 *        root's connection slots or time. JOIN_SESSION (type 9): JOIN and SESSION_OPEN in one
 *        round trip, the pidfd riding along; a 1.1 nsd answers it with -EOPNOTSUPP and a
 *        client falls back to JOIN + SESSION_OPEN. JOIN and JOIN_SESSION may answer -EAGAIN
 *        ("not yet available": the uid's pinned namespace is not adopted yet; retry, never
 *        a fresh namespace in its place). STATUS: `max_namespaces` is the effective limit
 *        (MaxNamespaces= capped by what RLIMIT_NOFILE and user.max_mnt_namespaces allow) and
 *        the former reserved field is `max_namespaces_config`; an unprivileged caller gets
 *        its own figures only (namespaces, pinned, sessions and connections of its uid).
 *   1.3  ns_flags (JOIN, JOIN_SESSION, LIST) may carry NSD_NS_STALE: the namespace was made
 *        with another setup than the configuration in force ([Polydir], [BindReadOnly],
 *        init scripts; nsd.conf(5)), which it gets when it is next created. A JOIN or
 *        JOIN_SESSION that creates a namespace may take as long as its setup (TimeoutSec=,
 *        3 s by default) before it answers; its refusal says which step failed. Older
 *        clients ignore the flag.
 *   1.4  METRICS (type 10): nsd's counters since it started (joins by result, a histogram of
 *        their latency, namespaces created, releases by reason, user-database lookups by
 *        result, path-walk timeouts, throttled requests, setup failures) and its gauges
 *        (namespaces, pinned, sessions: the figures root's STATUS gives; connections per
 *        socket, fd-store entries), for `nsctl metrics` (OpenMetrics text). Root only
 *        (-EPERM for anyone else). Every label is an index into a fixed array: nothing in
 *        the reply grows with the number of users. A 1.3 nsd answers METRICS with
 *        -EOPNOTSUPP ("unknown request type") and closes the connection.
 *   1.5  SHARES (type 11): the [Share NAME]s of the configuration in force (nsd.conf(5)),
 *        one NSD_REP_SHARES_ENTRY each (name, path, propagation, MaxMembers=, members), each
 *        followed by the uids of its live members in NSD_REP_SHARES_MEMBERS parts, then one
 *        NSD_REP_SHARES_END; for `nsctl shares`. Root sees every share and member; anyone
 *        else the shares of its own namespace and its own uid only. A 1.4 nsd answers
 *        SHARES with -EOPNOTSUPP ("unknown request type") and closes the connection.
 *   1.6  Identity churn. METRICS: lookup_timeouts[] (in two of the reserved slots, so the
 *        size is unchanged; a 1.5 nsd sends 0 there): managed-lookups past LookupTimeoutSec=
 *        by what nsd.conf's OnLookupTimeout= made of them (refused, or unmanaged: ENXIO).
 *        JOIN and JOIN_SESSION may answer -EOWNERDEAD: the namespace was made for a user
 *        name the uid no longer has (a recycled uid); LIST's ns_flags may carry
 *        NSD_NS_ORPHANED for such a namespace. Older clients treat the errno as any
 *        refusal and ignore the flag.
 *   1.7  VOLUMES (type 12): the [Volume NAME]s each namespace was set up with (nsd.conf(5))
 *        and what its setup did with each (mounted, on which loop device; failed, and why;
 *        not tried), one NSD_REP_VOLUMES_ENTRY each, then one NSD_REP_VOLUMES_END; for
 *        `nsctl volumes`. Root sees every namespace's, anyone else its own. A 1.6 nsd
 *        answers VOLUMES with -EOPNOTSUPP ("unknown request type") and closes the
 *        connection. CREDENTIAL_GIVE (13) and CREDENTIAL_TAKE (14): a volume's login
 *        password from pam_nsjoin to the user's nsctl run-volume (below); JOIN_SESSION's
 *        ns_flags may carry NSD_NS_CREDENTIAL_WANTED.
 *   1.8  CREDENTIAL_UNLOCK (type 15): the user's own password for one of its volumes, typed
 *        into `nsctl unlock NAME` (a volume keyed Key=ask, or one the login password did not
 *        reach: an ssh key login, a wrong password). VOLUMES entries' flags may carry
 *        NSD_VOLUME_ASK (Key=ask: the login password is never handed to it) and
 *        NSD_VOLUME_ON_REQUEST (Start=request: `nsctl start NAME` starts it, not the login),
 *        and what is so now: NSD_VOLUME_NOW_KNOWN with NSD_VOLUME_NOW_MOUNTED (nsd read the
 *        namespace's mount table: is something mounted on `where`), NSD_VOLUME_WAITING (its
 *        run-volume waits for a password: locked).
 *        A TAKE with NSD_CREDENTIAL_WAIT now also waits when the password held was handed to
 *        that volume already (a wrong one: the volume's unit runs it again), instead of
 *        answering -EALREADY. A 1.7 nsd answers UNLOCK with -EOPNOTSUPP ("unknown request
 *        type") and closes the connection; older clients ignore the new flags.
 *   1.9  STATUS features may carry NSD_FEATURE_OWNER_PRIVATE_NEW: the kernel makes mounts
 *        born owner-private (F4b), and in mode private nsd gives the initial namespace's
 *        mounts that policy ([Private] BornPrivate=). Older clients ignore the bit.
 *   1.10 VOLUMES entries' flags may carry NSD_VOLUME_HELD: the last release of the namespace
 *        was refused because something held that (mounted) volume; `why` says what (pid and
 *        command). RELEASE may answer -EBUSY for a volume in use, with that reason. Older
 *        clients ignore the bit.
 *   1.11 VOLUME_START (type 16) and VOLUME_STOP (type 17): mount one kernel volume of a
 *        namespace that exists, or unmount one (a block volume: refused with -EBUSY while
 *        anything holds it, naming who), for `nsctl start NAME` and `nsctl stop NAME`.
 *        VOLUMES entries may have the state NSD_VOLUME_STOPPED (a kernel volume not mounted
 *        now: Start=login or Start=request and not started yet, or stopped) and the flag
 *        NSD_VOLUME_AT_LOGIN (a kernel volume with Start=login: nsd starts it when the
 *        user's first session opens, and `nsctl start-volumes`, run by the user's service
 *        manager at login, asks too) and NSD_VOLUME_RELEASE_LAST (Release=last-session). A 1.10 nsd answers the two
 *        requests with -EOPNOTSUPP ("unknown request type") and closes the connection; an
 *        older client shows the new state as unknown and ignores the flag.
 *   1.12 VOLUMES entries' flags may carry NSD_VOLUME_KEY_FILE (KeyFile=: the password is a
 *        key file of root's, read for each CREDENTIAL_TAKE); CREDENTIAL_UNLOCK of such a
 *        volume is refused with -EINVAL. Older clients ignore the bit.
 */
#pragma once

#include <inttypes.h>
#include <stdint.h>

#define NSD_SOCKET_PATH_DEFAULT "/run/nsd/socket"
/* 1.2: root's own door, mode 0600; pam_nsjoin (which runs as root) uses it */
#define NSD_ROOT_SOCKET_PATH_DEFAULT "/run/nsd/root.socket"

/*
 * Where nsd records, without any request, which mount namespaces it made, so that a PAM
 * session of root (or of a user nsd does not manage) opened inside one of them can leave it
 * for the initial namespace without asking nsd (pam_nsjoin(8), "Crossing users"). A folder
 * of nsd's run directory (default /run/nsd), owned by root, not group- or world-writable,
 * holding one empty regular file per live namespace under each of two names:
 *   NSD_MADE_NS_FMT    the namespace's nsfs inode (stat(/proc/PID/ns/mnt).st_ino), for a
 *                      process in it (mode setns);
 *   NSD_MADE_ROOT_FMT  the mount id (statx STATX_MNT_ID) of the namespace's root mount, for
 *                      a process chrooted into it from the initial namespace (mode chroot).
 * nsd writes both before it first hands the namespace out (or when it adopts it again after
 * a restart), removes them before the namespace can go away (release), and at start removes
 * those of namespaces it no longer keeps, so a name never outlives its namespace (inode
 * numbers and mount ids are reused). Not part of the wire protocol; since nsd 0.3.
 */
#define NSD_MADE_DIR_NAME "made"
#define NSD_MADE_DIR_DEFAULT "/run/nsd/" NSD_MADE_DIR_NAME
#define NSD_MADE_NS_FMT "mnt-%" PRIu64
#define NSD_MADE_ROOT_FMT "root-%" PRIu64
#define NSD_MADE_NAME_MAX 32 /* with the NUL */

#define NSD_PROTO_MAGIC 0x3044534eu /* "NSD0" in memory on little endian */
#define NSD_PROTO_MAJOR 1
#define NSD_PROTO_MINOR 12

/* The largest datagram either side ever sends. Receivers use a buffer one byte larger and
 * MSG_TRUNC, so an oversized datagram is detected, never silently cut. */
#define NSD_MSG_SIZE_MAX 4096u

/* The most descriptors one message carries (JOIN reply: root + nsfs). */
#define NSD_MSG_FDS_MAX 2

enum nsd_msg_type {
        /* requests: client -> nsd */
        NSD_REQ_JOIN = 1,
        NSD_REQ_SESSION_OPEN = 2,
        NSD_REQ_SESSION_CLOSE = 3,
        NSD_REQ_STATUS = 4,
        NSD_REQ_LIST = 5,
        NSD_REQ_SHOW = 6,
        NSD_REQ_RELEASE = 7,
        NSD_REQ_HIDE = 8,
        NSD_REQ_JOIN_SESSION = 9,       /* 1.2 */
        NSD_REQ_METRICS = 10,           /* 1.4 */
        NSD_REQ_SHARES = 11,            /* 1.5 */
        NSD_REQ_VOLUMES = 12,           /* 1.7 */
        NSD_REQ_CREDENTIAL_GIVE = 13,   /* 1.7 */
        NSD_REQ_CREDENTIAL_TAKE = 14,   /* 1.7 */
        NSD_REQ_CREDENTIAL_UNLOCK = 15, /* 1.8 */
        NSD_REQ_VOLUME_START = 16,      /* 1.11 */
        NSD_REQ_VOLUME_STOP = 17,       /* 1.11 */
        _NSD_REQ_MAX,

        /* replies: nsd -> client. A reply to request T has type T | NSD_REPLY_BIT, except
         * NSD_REP_ERROR which may answer any request, and the streamed LIST/SHOW/SHARES
         * parts. */
        NSD_REPLY_BIT = 0x8000,
        NSD_REP_JOIN = NSD_REQ_JOIN | NSD_REPLY_BIT,
        NSD_REP_SESSION_OPEN = NSD_REQ_SESSION_OPEN | NSD_REPLY_BIT,
        NSD_REP_SESSION_CLOSE = NSD_REQ_SESSION_CLOSE | NSD_REPLY_BIT,
        NSD_REP_STATUS = NSD_REQ_STATUS | NSD_REPLY_BIT,
        NSD_REP_LIST_ENTRY = NSD_REQ_LIST | NSD_REPLY_BIT, /* zero or more ... */
        NSD_REP_LIST_END = 0x8100,                         /* ... then exactly one end */
        NSD_REP_SHOW_DATA = NSD_REQ_SHOW | NSD_REPLY_BIT,  /* zero or more ... */
        NSD_REP_SHOW_END = 0x8101,                         /* ... then exactly one end */
        NSD_REP_RELEASE = NSD_REQ_RELEASE | NSD_REPLY_BIT,
        NSD_REP_HIDE = NSD_REQ_HIDE | NSD_REPLY_BIT,
        NSD_REP_JOIN_SESSION = NSD_REQ_JOIN_SESSION | NSD_REPLY_BIT,
        NSD_REP_METRICS = NSD_REQ_METRICS | NSD_REPLY_BIT,
        NSD_REP_SHARES_ENTRY = NSD_REQ_SHARES | NSD_REPLY_BIT, /* per share: one entry ... */
        NSD_REP_SHARES_MEMBERS = 0x8102, /* ... then its members, in zero or more parts */
        NSD_REP_SHARES_END = 0x8103,     /* after every share, exactly one end */
        NSD_REP_VOLUMES_ENTRY = NSD_REQ_VOLUMES | NSD_REPLY_BIT, /* zero or more ... */
        NSD_REP_VOLUMES_END = 0x8104,                            /* ... then exactly one end */
        NSD_REP_CREDENTIAL_GIVE = NSD_REQ_CREDENTIAL_GIVE | NSD_REPLY_BIT,
        NSD_REP_CREDENTIAL_TAKE = NSD_REQ_CREDENTIAL_TAKE | NSD_REPLY_BIT,
        NSD_REP_CREDENTIAL_UNLOCK = NSD_REQ_CREDENTIAL_UNLOCK | NSD_REPLY_BIT,
        NSD_REP_VOLUME_START = NSD_REQ_VOLUME_START | NSD_REPLY_BIT,
        NSD_REP_VOLUME_STOP = NSD_REQ_VOLUME_STOP | NSD_REPLY_BIT,
        NSD_REP_ERROR = 0xffff,
};

struct nsd_msg_header {
        uint32_t magic;         /* NSD_PROTO_MAGIC */
        uint16_t version_major; /* NSD_PROTO_MAJOR; a different major is refused */
        uint16_t version_minor; /* NSD_PROTO_MINOR; informational */
        uint16_t type;          /* enum nsd_msg_type */
        uint16_t flags;         /* per type; 0 where none are defined */
        uint32_t length;        /* whole datagram in bytes, header included */
        uint32_t seq;           /* chosen by the client, echoed in every reply part */
        int32_t error;          /* replies: 0 or -errno; requests: 0 */
};
_Static_assert(sizeof(struct nsd_msg_header) == 24, "nsd_msg_header layout");

/* ---- JOIN: get descriptors of a user's namespace, creating it on first use ----------- */

#define NSD_JOIN_NO_CREATE 0x1u /* request flag: -ENOENT instead of creating */

struct nsd_req_join {
        struct nsd_msg_header hdr;
        uint32_t uid;
        uint32_t flags; /* NSD_JOIN_* */
};
_Static_assert(sizeof(struct nsd_req_join) == 32, "nsd_req_join layout");

/* namespace state flags, used in JOIN replies and LIST entries */
#define NSD_NS_CREATED 0x1u /* created by this very request */
#define NSD_NS_PINNED 0x2u  /* pinned by a bind mount: survives nsd restarts */
#define NSD_NS_ADOPTED 0x4u /* re-adopted from a pin when nsd started */
#define NSD_NS_STALE 0x8u   /* 1.3: made with another setup than the one in force */
/* 1.6: made for a user name the uid no longer has (a JOIN found it so, see -EOWNERDEAD) */
#define NSD_NS_ORPHANED 0x10u
/* 1.7, JOIN_SESSION only: a volume of this namespace takes the login password and is not
 * mounted; pam_nsjoin hands the password over with CREDENTIAL_GIVE when it has one */
#define NSD_NS_CREDENTIAL_WANTED 0x20u

/* Carries two descriptors by SCM_RIGHTS, in this order: [0] the namespace's root directory
 * (O_PATH|O_DIRECTORY; Lokier's /proc/PID/root), [1] the nsfs descriptor (for setns). */
struct nsd_rep_join {
        struct nsd_msg_header hdr;
        uint32_t uid;
        uint32_t ns_flags;     /* NSD_NS_* */
        uint64_t ns_inode;     /* inode number of the nsfs file, as in /proc/PID/ns/mnt */
        uint64_t created_usec; /* CLOCK_REALTIME, microseconds */
};
_Static_assert(sizeof(struct nsd_rep_join) == 48, "nsd_rep_join layout");

/* Errors a JOIN may carry besides the usual ones:
 *   -EPERM    the caller may not have that uid's namespace (not root, not itself)
 *   -ENXIO    nsd's policy does not manage that uid (e.g. a system user): no namespace; a PAM
 *             module should leave such a login alone
 *   -ENOENT   NSD_JOIN_NO_CREATE and there is no namespace yet
 *   -EUSERS   the limit on namespaces in all is reached
 *   -EAGAIN   (1.2) not yet available: the uid's pinned namespace is not adopted yet (nsd
 *             retries with backoff); ask again shortly, never treat it as "no namespace"
 *   -EOWNERDEAD (1.6) the uid's namespace was made for a user name the uid no longer has
 *             (a recycled uid, or no passwd entry now): it is handed to nobody else; root
 *             releases it (RELEASE). A login must fail, not go on without its namespace. */
#define NSD_ERRNO_NOT_MANAGED ENXIO
#define NSD_ERRNO_NOT_YET EAGAIN

/* ---- SESSION_OPEN / SESSION_CLOSE: count a login's lifetime ------------------------- */

#define NSD_SERVICE_MAX 32 /* PAM service name, NUL-terminated inside the field */

#define NSD_SESSION_PIDFD 0x1u /* request flag: a pidfd of `pid` comes by SCM_RIGHTS */

struct nsd_req_session_open {
        struct nsd_msg_header hdr;
        uint32_t uid;
        uint32_t pid;      /* session leader; must be the caller's own pid unless caller is root */
        uint32_t flags;    /* NSD_SESSION_* */
        uint32_t reserved; /* 0 */
        char service[NSD_SERVICE_MAX];
};
_Static_assert(sizeof(struct nsd_req_session_open) == 72, "nsd_req_session_open layout");

struct nsd_rep_session_open {
        struct nsd_msg_header hdr;
        uint64_t session_id; /* nsd's handle for SESSION_CLOSE; never 0 */
        uint32_t sessions;   /* live sessions of this uid, this one included */
        uint32_t reserved;
};
_Static_assert(sizeof(struct nsd_rep_session_open) == 40, "nsd_rep_session_open layout");

struct nsd_req_session_close {
        struct nsd_msg_header hdr;
        uint64_t session_id; /* from SESSION_OPEN; 0 = find by uid+pid */
        uint32_t uid;
        uint32_t pid;
};
_Static_assert(sizeof(struct nsd_req_session_close) == 40, "nsd_req_session_close layout");

struct nsd_rep_session_close {
        struct nsd_msg_header hdr;
        uint32_t sessions; /* live sessions of this uid left */
        uint32_t reserved;
};
_Static_assert(sizeof(struct nsd_rep_session_close) == 32, "nsd_rep_session_close layout");

/* ---- STATUS -------------------------------------------------------------------------- */

struct nsd_req_status {
        struct nsd_msg_header hdr;
};
_Static_assert(sizeof(struct nsd_req_status) == 24, "nsd_req_status layout");

/* kernel features, found by probing at nsd start (never by version number) */
#define NSD_FEATURE_SETNS_DIRFD 0x1u      /* F1: setns() takes a directory descriptor */
#define NSD_FEATURE_PROC_MOUNTS_ROOT 0x2u /* F2: /proc/PID/mount* follow the task's root */
#define NSD_FEATURE_FSPICK_CHECK 0x4u     /* F3: fspick honours check_mnt */
#define NSD_FEATURE_OWNER_PRIVATE 0x8u    /* F4: owner-private mount attribute */
/* 1.9: F4b, mounts born owner-private below a mount with MOUNT_ATTR_OWNER_PRIVATE_NEW */
#define NSD_FEATURE_OWNER_PRIVATE_NEW 0x10u
#define NSD_FEATURE_PIN_NAMESPACE 0x100u /* pins held in nsd's own pin namespace */
/* 1.1: mode private (nsd.conf [Private] Enable=yes) is on: user FUSE mounts in the initial
 * namespace get the owner-private attribute as they appear */
#define NSD_FEATURE_PRIVATE_MODE 0x200u
/* 1.1: Enable=yes, but refused: the kernel lacks F4 (or nsd cannot take a user's fsuid) */
#define NSD_FEATURE_PRIVATE_UNAVAILABLE 0x400u

#define NSD_VERSION_MAX 32

struct nsd_rep_status {
        struct nsd_msg_header hdr;
        char version[NSD_VERSION_MAX]; /* nsd's package version, NUL-terminated */
        uint64_t started_usec;         /* CLOCK_REALTIME when this nsd process started */
        uint32_t features;             /* NSD_FEATURE_* */
        /* root: the machine's figures; anyone else: its own uid's (0 or 1 namespace) */
        uint32_t namespaces;     /* live user namespaces */
        uint32_t pinned;         /* of which pinned */
        uint32_t sessions;       /* live sessions */
        uint32_t connections;    /* open client connections */
        uint32_t max_namespaces; /* limits in force */
        uint32_t max_sessions_per_uid;
        uint32_t max_connections_per_uid;
        uint32_t pid;                   /* nsd's pid */
        uint32_t max_namespaces_config; /* 1.2: MaxNamespaces= as configured (1.1: 0) */
};
_Static_assert(sizeof(struct nsd_rep_status) == 104, "nsd_rep_status layout");

/* ---- LIST: one NSD_REP_LIST_ENTRY per visible namespace, then NSD_REP_LIST_END -------- */

struct nsd_req_list {
        struct nsd_msg_header hdr;
};
_Static_assert(sizeof(struct nsd_req_list) == 24, "nsd_req_list layout");

#define NSD_PIN_PATH_MAX 64

struct nsd_rep_list_entry {
        struct nsd_msg_header hdr;
        uint32_t uid;
        uint32_t ns_flags; /* NSD_NS_* */
        uint32_t sessions; /* live sessions */
        int32_t mounts;    /* mounts in the namespace, -1 when unknown */
        uint64_t ns_inode;
        uint64_t created_usec;
        char pin[NSD_PIN_PATH_MAX]; /* where the pin is, human readable, or "" */
};
_Static_assert(sizeof(struct nsd_rep_list_entry) == 120, "nsd_rep_list_entry layout");

/* The end of a stream of entries: NSD_REP_LIST_END, NSD_REP_SHARES_END (1.5) and
 * NSD_REP_VOLUMES_END (1.7). */
struct nsd_rep_stream_end {
        struct nsd_msg_header hdr;
        uint32_t count; /* entries sent */
        uint32_t reserved;
};
_Static_assert(sizeof(struct nsd_rep_stream_end) == 32, "nsd_rep_stream_end layout");

/* ---- SHOW: the namespace's /proc/self/mountinfo text in NSD_REP_SHOW_DATA parts -------- */

#define NSD_SHOW_TEXT_MAX (1u << 20) /* nsd sends at most this much mountinfo text */

struct nsd_req_show {
        struct nsd_msg_header hdr;
        uint32_t uid;
        uint32_t reserved;
};
_Static_assert(sizeof(struct nsd_req_show) == 32, "nsd_req_show layout");

/* NSD_REP_SHOW_DATA: the header followed by (length - header) bytes of text, no NUL.
 * NSD_REP_SHOW_END: the header alone. */

/* ---- RELEASE: unpin and forget a namespace --------------------------------------------- */

#define NSD_RELEASE_FORCE 0x1u /* even with live sessions (root only) */

struct nsd_req_release {
        struct nsd_msg_header hdr;
        uint32_t uid;
        uint32_t flags; /* NSD_RELEASE_* */
};
_Static_assert(sizeof(struct nsd_req_release) == 32, "nsd_req_release layout");

/* NSD_REP_RELEASE: the header alone. */

/* ---- HIDE (1.1): owner-private mounts, kernel patch F4 ------------------------------------ */

#define NSD_HIDE_UNHIDE 0x1u   /* request flag: clear the attribute instead of setting it */
#define NSD_HIDE_PATH_MAX 1024 /* absolute path, NUL-terminated inside the field */

/* Give the mount whose root is `path` (in the initial mount namespace, symlinks refused) the
 * owner-private attribute with owner `uid`: only processes with that fsuid see it or walk
 * into it. Anyone may ask for their own uid and a FUSE mount of theirs (user_id=uid); root
 * for any uid nsd manages and any mount. Errors besides the usual ones:
 *   -ENOENT      no such path (or a component the caller may not search: -EACCES)
 *   -ELOOP       a symbolic link in the path
 *   -EINVAL      the path is not the root of a mount
 *   -EPERM       not root and not a FUSE mount of the caller's; or (UNHIDE) not the owner
 *   -ENXIO       nsd's policy does not manage uid
 *   -ETIMEDOUT   the user database did not tell the caller's groups within
 *                LookupTimeoutSec=, or the walk took longer than PathWalkTimeoutSec=
 *   -E2BIG       the caller is in more than NGROUPS_MAX groups
 *   -EBUSY       too many path walks at once (MaxPathWalks=)
 *   -EOPNOTSUPP  the kernel lacks owner-private mounts (or nsd cannot take a user's fsuid) */
struct nsd_req_hide {
        struct nsd_msg_header hdr;
        uint32_t uid;
        uint32_t flags; /* NSD_HIDE_* */
        char path[NSD_HIDE_PATH_MAX];
};
_Static_assert(sizeof(struct nsd_req_hide) == 1056, "nsd_req_hide layout");

/* NSD_REP_HIDE: the header alone. */

/* ---- JOIN_SESSION (1.2): JOIN + SESSION_OPEN in one round trip -------------------------- */

/* Flags: NSD_JOIN_NO_CREATE as for JOIN, and NSD_JOIN_SESSION_PIDFD when a pidfd of `pid`
 * comes by SCM_RIGHTS (the only descriptor the request carries). The rules of JOIN (who may
 * ask for which uid, policy, limits) and of SESSION_OPEN (pid must be the caller's own
 * unless root, MaxSessionsPerUser=) both apply; the session is opened only if the JOIN part
 * succeeds, and a refused session refuses the whole request (nothing is left open). */
#define NSD_JOIN_SESSION_PIDFD 0x2u

struct nsd_req_join_session {
        struct nsd_msg_header hdr;
        uint32_t uid;
        uint32_t flags;    /* NSD_JOIN_NO_CREATE | NSD_JOIN_SESSION_PIDFD */
        uint32_t pid;      /* session leader */
        uint32_t reserved; /* 0 */
        char service[NSD_SERVICE_MAX];
};
_Static_assert(sizeof(struct nsd_req_join_session) == 72, "nsd_req_join_session layout");

/* Carries the descriptors of a JOIN reply (same order and rules). */
struct nsd_rep_join_session {
        struct nsd_msg_header hdr;
        uint32_t uid;
        uint32_t ns_flags; /* NSD_NS_* */
        uint64_t ns_inode;
        uint64_t created_usec;
        uint64_t session_id; /* never 0 */
        uint32_t sessions;   /* live sessions of this uid, this one included */
        uint32_t reserved;
};
_Static_assert(sizeof(struct nsd_rep_join_session) == 64, "nsd_rep_join_session layout");

/* ---- METRICS (1.4): nsd's counters and gauges, root only ------------------------------- */

struct nsd_req_metrics {
        struct nsd_msg_header hdr;
};
_Static_assert(sizeof(struct nsd_req_metrics) == 24, "nsd_req_metrics layout");

/* The labels: each is an index into its array of struct nsd_rep_metrics. The arrays have
 * room for more; a slot no label names yet is 0, and a client ignores slots it does not
 * know. */

/* joins[]: JOIN and JOIN_SESSION requests answered (refusals included), by the errno class
 * of the answer */
enum nsd_metrics_join {
        NSD_METRICS_JOIN_OK = 0,          /* the descriptors went out */
        NSD_METRICS_JOIN_REFUSED = 1,     /* permission, policy or a limit: EPERM, EACCES,
                                           * ENOENT (NO_CREATE), EUSERS, EBUSY, E2BIG */
        NSD_METRICS_JOIN_NOT_MANAGED = 2, /* ENXIO: nsd does not manage that uid */
        NSD_METRICS_JOIN_NOT_YET = 3,     /* EAGAIN: not yet available, or a passing shortage */
        NSD_METRICS_JOIN_TIMEOUT = 4,     /* ETIMEDOUT: the user database or the setup */
        NSD_METRICS_JOIN_ERROR = 5,       /* anything else (the setup failed, EIO, ENOMEM...) */
        _NSD_METRICS_JOIN_MAX,
};
#define NSD_METRICS_JOINS 8

/* join_latency[]: the same requests by how long they took, from the moment nsd read the
 * request to its answer (CLOCK_MONOTONIC), in buckets of their own (not cumulative): bucket
 * i holds those that took at most NSD_METRICS_LATENCY_BOUNDS_USEC[i] and more than the
 * bound before; the last bucket those that took longer than every bound. */
#define NSD_METRICS_LATENCY_BOUNDS_USEC                                                       \
        {                                                                                     \
                100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, \
                        1000000, 2500000, 5000000                                             \
        }
#define NSD_METRICS_LATENCY_BUCKETS 16 /* the 15 bounds, and one past the last */

/* releases[]: namespaces released, by what released them */
enum nsd_metrics_release {
        NSD_METRICS_RELEASE_ASKED = 0,  /* RELEASE (nsctl release) */
        NSD_METRICS_RELEASE_FORCED = 1, /* RELEASE with NSD_RELEASE_FORCE and live sessions */
        NSD_METRICS_RELEASE_LINGER = 2, /* the linger time was over (nsd.conf, nsd(8)) */
        _NSD_METRICS_RELEASE_MAX,
};
#define NSD_METRICS_RELEASES 4

/* lookups[]: answers of the user database (NSS) to nsd's lookups, by result */
enum nsd_metrics_lookup {
        NSD_METRICS_LOOKUP_OK = 0,        /* it answered */
        NSD_METRICS_LOOKUP_NOT_FOUND = 1, /* no such uid */
        NSD_METRICS_LOOKUP_TIMEOUT = 2,   /* a request gave up waiting (LookupTimeoutSec=) */
        NSD_METRICS_LOOKUP_ERROR = 3,     /* it failed */
        _NSD_METRICS_LOOKUP_MAX,
};
#define NSD_METRICS_LOOKUPS 4

/* lookup_timeouts[] (1.6): "does nsd manage uid?" past LookupTimeoutSec=, by what
 * OnLookupTimeout= (nsd.conf) made of it; each is also a lookups[NSD_METRICS_LOOKUP_TIMEOUT] */
enum nsd_metrics_lookup_timeout {
        NSD_METRICS_LOOKUP_TIMEOUT_REFUSED = 0,   /* the request got -ETIMEDOUT */
        NSD_METRICS_LOOKUP_TIMEOUT_UNMANAGED = 1, /* the uid was not managed for it (ENXIO) */
        _NSD_METRICS_LOOKUP_TIMEOUT_MAX,
};
#define NSD_METRICS_LOOKUP_TIMEOUTS 2

/* throttled[]: requests and connections slowed down or refused by a limit */
enum nsd_metrics_throttle {
        NSD_METRICS_THROTTLE_RATE = 0,         /* RequestRatePerUser=: read more slowly */
        NSD_METRICS_THROTTLE_CONNECTIONS = 1,  /* a connection refused by a limit
                                                * (MaxConnections*=, not root on root's socket) */
        NSD_METRICS_THROTTLE_LOOKUP_QUEUE = 2, /* -EAGAIN: too many lookups wait */
        _NSD_METRICS_THROTTLE_MAX,
};
#define NSD_METRICS_THROTTLES 4

/* connections[]: by socket */
#define NSD_METRICS_SOCKET_USER 0 /* NSD_SOCKET_PATH_DEFAULT */
#define NSD_METRICS_SOCKET_ROOT 1 /* NSD_ROOT_SOCKET_PATH_DEFAULT */
#define NSD_METRICS_SOCKETS 2

/* Counters count from nsd's start (STATUS's started_usec) and never go down; gauges are
 * now. */
struct nsd_rep_metrics {
        struct nsd_msg_header hdr;
        /* gauges; namespaces, pinned and sessions are root's STATUS figures */
        uint32_t namespaces;
        uint32_t pinned;
        uint32_t sessions;
        uint32_t connections[NSD_METRICS_SOCKETS];
        uint32_t fdstore_entries; /* descriptors in systemd's fd store (0: none) */
        /* counters */
        uint64_t joins[NSD_METRICS_JOINS];
        uint64_t join_latency[NSD_METRICS_LATENCY_BUCKETS];
        uint64_t join_latency_sum_usec;
        uint64_t created;        /* namespaces made (and set up) */
        uint64_t setup_failures; /* namespaces refused because their setup failed */
        uint64_t releases[NSD_METRICS_RELEASES];
        uint64_t lookups[NSD_METRICS_LOOKUPS];
        uint64_t path_walk_timeouts; /* path walks past PathWalkTimeoutSec= (HIDE, mode private) */
        uint64_t throttled[NSD_METRICS_THROTTLES];
        uint64_t lookup_timeouts[NSD_METRICS_LOOKUP_TIMEOUTS]; /* 1.6 */
        uint64_t reserved[2];                                  /* 0 */
};
_Static_assert(sizeof(struct nsd_rep_metrics) == 400, "nsd_rep_metrics layout");

/* ---- SHARES (1.5): the [Share NAME]s of nsd.conf and who is in them --------------------- */

struct nsd_req_shares {
        struct nsd_msg_header hdr;
};
_Static_assert(sizeof(struct nsd_req_shares) == 24, "nsd_req_shares layout");

/* Room for nsd.conf's longest [Share NAME] (64 bytes) and Path= (1024 bytes), each with its
 * NUL, rounded up to 8 bytes */
#define NSD_SHARE_NAME_MAX 72
#define NSD_SHARE_PATH_MAX 1032

/* propagation: nsd.conf's Propagation= */
#define NSD_SHARE_PROPAGATION_MEMBERS 0  /* members to members only */
#define NSD_SHARE_PROPAGATION_HOST 1     /* and the host's mounts under Path= come in */
#define NSD_SHARE_PROPAGATION_BOTH 2     /* members and the initial namespace one peer group */
#define NSD_SHARE_PROPAGATION_PER_USER 3 /* the host's mounts under Path=/<member>: to him only */

/* entry flags */
#define NSD_SHARE_OWN_ONLY 0x1u /* the caller is not root: of the members, its own uid only */

struct nsd_rep_shares_entry {
        struct nsd_msg_header hdr;
        uint32_t propagation; /* NSD_SHARE_PROPAGATION_* */
        uint32_t max_members; /* MaxMembers= */
        uint32_t members;     /* namespaces given the share: live ones and those being made */
        uint32_t flags;       /* NSD_SHARE_* */
        uint32_t n_uids;      /* member uids in the NSD_REP_SHARES_MEMBERS parts that follow */
        /* To root: the mounts under the share's anchor in nsd's pin namespace (each a copy in
         * every member's namespace) and the anchor's peer group id ("shared:N" in
         * mountinfo); -1 and 0 when unknown (no anchor yet, Propagation=per-user has none)
         * and to anyone else. */
        int32_t mounts;
        uint32_t peer_group;
        uint32_t reserved;             /* 0 */
        char name[NSD_SHARE_NAME_MAX]; /* NUL-terminated */
        char path[NSD_SHARE_PATH_MAX]; /* NUL-terminated */
};
_Static_assert(sizeof(struct nsd_rep_shares_entry) == 1160, "nsd_rep_shares_entry layout");

/* One member: its uid, and the peer group of its namespace's clone of the anchor (1.5
 * always 0, "unknown": see mounts above). */
struct nsd_share_member {
        uint32_t uid;
        uint32_t peer_group;
};
_Static_assert(sizeof(struct nsd_share_member) == 8, "nsd_share_member layout");

#define NSD_SHARES_MEMBERS_PER_PART 128

/* The entry's n_uids members in order of uid, NSD_SHARES_MEMBERS_PER_PART a part (the last
 * may have fewer: n says how many; the rest of the array is 0); none when n_uids is 0. */
struct nsd_rep_shares_members {
        struct nsd_msg_header hdr;
        uint32_t n;
        uint32_t reserved; /* 0 */
        struct nsd_share_member members[NSD_SHARES_MEMBERS_PER_PART];
};
_Static_assert(sizeof(struct nsd_rep_shares_members) == 1056, "nsd_rep_shares_members layout");

/* NSD_REP_SHARES_END: struct nsd_rep_stream_end, as LIST's end. */

/* ---- VOLUMES (1.7): the volumes each namespace was set up with -------------------------- */

struct nsd_req_volumes {
        struct nsd_msg_header hdr;
};
_Static_assert(sizeof(struct nsd_req_volumes) == 24, "nsd_req_volumes layout");

/* state: what the namespace's setup did with the volume */
#define NSD_VOLUME_UNKNOWN 0   /* the setup ended without a report, or it predates nsd 1.7 */
#define NSD_VOLUME_MOUNTED 1   /* mounted on `where` */
#define NSD_VOLUME_FAILED 2    /* a step failed or was refused: error and why */
#define NSD_VOLUME_NOT_TRIED 3 /* an earlier failure stopped the setup before it */
#define NSD_VOLUME_USER \
        4 /* a FUSE volume: the user's service manager runs it at login
                                * (nsd-volume@NAME.service, nsctl run-volume), not nsd */
/* 1.11: a kernel volume not mounted now: Start=login or Start=request and not started yet
 * (VOLUME_START), or stopped (VOLUME_STOP) */
#define NSD_VOLUME_STOPPED 5

#define NSD_VOLUME_TYPE_MAX 16
#define NSD_VOLUME_WHY_MAX 512
#define NSD_VOLUME_OPTIONS_MAX 512
/* flags: its program takes a password (CREDENTIAL_TAKE): the login password unless
 * NSD_VOLUME_ASK */
#define NSD_VOLUME_PASSWORD 0x1u
/* 1.8: Key=ask: only the password the user gives with CREDENTIAL_UNLOCK (nsctl unlock) */
#define NSD_VOLUME_ASK 0x2u
/* 1.8: Start=request: started by `nsctl start NAME`, not at login */
#define NSD_VOLUME_ON_REQUEST 0x4u
/* 1.8: nsd read the namespace's mount table for this entry: NSD_VOLUME_NOW_MOUNTED says
 * whether something is mounted on `where` now (without it: not known) */
#define NSD_VOLUME_NOW_KNOWN 0x8u
#define NSD_VOLUME_NOW_MOUNTED 0x10u
/* 1.8: its run-volume waits for a password now (CREDENTIAL_TAKE with NSD_CREDENTIAL_WAIT) */
#define NSD_VOLUME_WAITING 0x20u
/* 1.10: the last release of its namespace was refused for this volume (in use: `why` names
 * the processes that held it then, pid and command; or a step of its unmount failed) */
#define NSD_VOLUME_HELD 0x40u
/* 1.11: a kernel volume with Start=login: nsd starts it when the user's first session
 * opens; the user's service manager asks for it too (`nsctl start-volumes`, VOLUME_START) */
#define NSD_VOLUME_AT_LOGIN 0x80u
/* 1.11: a kernel volume with Release=last-session: nsd unmounts it when the user's last
 * session has ended and no process of the user is left in the namespace */
#define NSD_VOLUME_RELEASE_LAST 0x100u
/* 1.12: KeyFile=: its password is a key file of root's, read by nsd for each CREDENTIAL_TAKE
 * (which never waits); never the login password, and CREDENTIAL_UNLOCK of it is refused */
#define NSD_VOLUME_KEY_FILE 0x200u

/* One volume of one namespace ([Volume NAME] of nsd.conf(5), as the namespace was made: a
 * reload changes no entry until the namespace is made again), in order of uid, then of
 * nsd.conf. */
struct nsd_rep_volumes_entry {
        struct nsd_msg_header hdr;
        uint32_t uid;
        uint32_t state;                 /* NSD_VOLUME_* */
        int32_t error;                  /* -errno of the failure; 0 */
        uint32_t loop;                  /* its image is on /dev/loop<loop - 1>; 0: no loop device */
        uint64_t at_usec;               /* CLOCK_REALTIME when the setup reported; 0: unknown */
        uint32_t flags;                 /* NSD_VOLUME_* flags above */
        uint32_t reserved;              /* 0 */
        char name[NSD_SHARE_NAME_MAX];  /* NUL-terminated, as every string below */
        char type[NSD_VOLUME_TYPE_MAX]; /* Type= */
        char source[NSD_SHARE_PATH_MAX]; /* Source=, expanded for the user */
        char where[NSD_SHARE_PATH_MAX];  /* Where=, expanded */
        char why[NSD_VOLUME_WHY_MAX];    /* state FAILED: which step, which path, what */
        /* state USER: the options its FUSE program takes ("nosuid,nodev,..."); "" else */
        char options[NSD_VOLUME_OPTIONS_MAX];
};
_Static_assert(sizeof(struct nsd_rep_volumes_entry) == 3232, "nsd_rep_volumes_entry layout");

/* NSD_REP_VOLUMES_END: struct nsd_rep_stream_end, as LIST's end. */

/* ---- CREDENTIAL_GIVE, CREDENTIAL_TAKE (1.7): the login password of a volume -------------
 *
 * A volume whose FUSE program takes the user's login password (NSD_VOLUME_PASSWORD: gocryptfs)
 * gets it once per login that has one: pam_nsjoin keeps the PAM token for the transaction only
 * and, when JOIN_SESSION said NSD_NS_CREDENTIAL_WANTED, puts it into a sealed memfd
 * (F_SEAL_WRITE, F_SEAL_GROW, F_SEAL_SHRINK, F_SEAL_SEAL; at most NSD_CREDENTIAL_MAX bytes, no
 * terminator) and gives it to nsd on the root socket (root only). nsd never reads it: it holds
 * the descriptor, in memory only (no state file, no fd store), until each such volume of the
 * user took it or NSD_CREDENTIAL_HOLD_SEC passed, and hands it to the user's own `nsctl
 * run-volume` (CREDENTIAL_TAKE: the user itself, from inside its namespace or the initial one,
 * never a sandboxed process), which makes it the program's stdin.
 * A GIVE or UNLOCK whose descriptor is not such a memfd gets -EINVAL ("the password must come
 * as a memfd sealed ...", "... must have 1 to 1024 bytes"); one nsd could not check (fcntl()
 * or fstat() failing for a reason not the descriptor's) -EAGAIN when that may pass, the call's
 * own errno otherwise (-EIO), "nsd could not check the password's descriptor (CALL: ERROR)".
 * Nothing is held then; give it again. */

#define NSD_CREDENTIAL_MAX 1024
#define NSD_CREDENTIAL_HOLD_SEC 120
#define NSD_CREDENTIAL_FD 0x1u /* GIVE's flag: the memfd comes by SCM_RIGHTS (required) */

struct nsd_req_credential_give {
        struct nsd_msg_header hdr;
        uint32_t uid;   /* whose password */
        uint32_t flags; /* NSD_CREDENTIAL_FD */
};
_Static_assert(sizeof(struct nsd_req_credential_give) == 32, "nsd_req_credential_give layout");

/* NSD_REP_CREDENTIAL_GIVE */
struct nsd_rep_credential_give {
        struct nsd_msg_header hdr;
        uint32_t volumes; /* the user's volumes that take it */
        uint32_t waiting; /* TAKEs that were waiting for it and got it now */
};
_Static_assert(sizeof(struct nsd_rep_credential_give) == 32, "nsd_rep_credential_give layout");

#define NSD_CREDENTIAL_WAIT 0x1u /* TAKE's flag: none yet? wait for the next GIVE */

struct nsd_req_credential_take {
        struct nsd_msg_header hdr;
        uint32_t flags;                  /* NSD_CREDENTIAL_WAIT */
        uint32_t reserved;               /* 0 */
        char volume[NSD_SHARE_NAME_MAX]; /* the caller's volume, NUL-terminated */
};
_Static_assert(sizeof(struct nsd_req_credential_take) == 104, "nsd_req_credential_take layout");

/* NSD_REP_CREDENTIAL_TAKE: the header, and the memfd by SCM_RIGHTS (read it from offset 0). */

/* CREDENTIAL_UNLOCK (1.8): the caller's own password for its volume `volume` (one that takes a
 * password), in a memfd sealed as GIVE's, by SCM_RIGHTS. nsd holds it as GIVE's, for that
 * volume only, and hands it to the next TAKE of that volume (the one waiting, if any): that
 * volume's TAKEs prefer it to a login password. */
struct nsd_req_credential_unlock {
        struct nsd_msg_header hdr;
        uint32_t flags;                  /* NSD_CREDENTIAL_FD */
        uint32_t reserved;               /* 0 */
        char volume[NSD_SHARE_NAME_MAX]; /* NUL-terminated */
};
_Static_assert(sizeof(struct nsd_req_credential_unlock) == 104, "nsd_req_credential_unlock layout");

/* NSD_REP_CREDENTIAL_UNLOCK */
struct nsd_rep_credential_unlock {
        struct nsd_msg_header hdr;
        uint32_t waiting;  /* TAKEs that were waiting and got a password now */
        uint32_t reserved; /* 0 */
};
_Static_assert(sizeof(struct nsd_rep_credential_unlock) == 32, "nsd_rep_credential_unlock layout");

/* ---- VOLUME_START, VOLUME_STOP (1.11): one kernel volume of a namespace that exists -------
 *
 * START mounts the volume `volume` of uid's namespace as the namespace's setup would (Where=
 * resolved as the user without following a symbolic link, Source= as root; nsd.conf(5)), in
 * a watched helper within the setup's TimeoutSec=. STOP unmounts a block volume as a release
 * does (nsd.8: found by its device, refused with -EBUSY while a process holds it, the reason
 * naming up to four "pid N (comm)", never lazily; the loop device then goes). Both answer
 * when done: the reply's state is the volume's now (MOUNTED after a START; STOPPED after a
 * STOP that unmounted it, else the state it had: FAILED for one whose mount failed, which is
 * not mounted). A START of a volume mounted already, or a STOP of one that is not, changes
 * nothing and answers so. Who: the user
 * itself, from inside its namespace or the initial one (never a sandboxed process: -EPERM), or
 * root for any uid. -ENOENT: no namespace, or no volume of that name in it; -EOPNOTSUPP: a
 * FUSE volume (its unit in the user's service manager starts it) or, for STOP, a network
 * volume (it goes with the namespace); -EAGAIN: the namespace is being made or released, or
 * another START or STOP of the uid runs; retry. */
struct nsd_req_volume_ctl {
        struct nsd_msg_header hdr;
        uint32_t uid;                    /* whose namespace */
        uint32_t reserved;               /* 0 */
        char volume[NSD_SHARE_NAME_MAX]; /* [Volume NAME], NUL-terminated */
};
_Static_assert(sizeof(struct nsd_req_volume_ctl) == 104, "nsd_req_volume_ctl layout");

/* NSD_REP_VOLUME_START, NSD_REP_VOLUME_STOP */
struct nsd_rep_volume_ctl {
        struct nsd_msg_header hdr;
        uint32_t state;    /* NSD_VOLUME_*: the volume's now (see above) */
        uint32_t loop;     /* /dev/loop<loop - 1> its image is on now; 0: none */
        uint32_t changed;  /* 1: this request mounted or unmounted it; 0: it was so already */
        uint32_t reserved; /* 0 */
};
_Static_assert(sizeof(struct nsd_rep_volume_ctl) == 40, "nsd_rep_volume_ctl layout");

/* ---- ERROR: the answer to a refused request ------------------------------------------ */

#define NSD_ERROR_MESSAGE_MAX 200

struct nsd_rep_error {
        struct nsd_msg_header hdr; /* hdr.error < 0 */
        uint16_t request_type;     /* what was refused (0 when it could not be read) */
        uint16_t reserved;
        char message[NSD_ERROR_MESSAGE_MAX]; /* why, NUL-terminated, for humans */
        uint32_t reserved2;
};
_Static_assert(sizeof(struct nsd_rep_error) == 232, "nsd_rep_error layout");

/* ---- helpers shared by both sides ------------------------------------------------------ */

#include <errno.h>
#include <stddef.h>
#include <string.h>

static inline void nsd_msg_init(struct nsd_msg_header *h, uint16_t type, uint32_t length,
                                uint32_t seq) {
        memset(h, 0, length);
        h->magic = NSD_PROTO_MAGIC;
        h->version_major = NSD_PROTO_MAJOR;
        h->version_minor = NSD_PROTO_MINOR;
        h->type = type;
        h->length = length;
        h->seq = seq;
}

/* The size of a message of this type: exact for fixed messages; for NSD_REP_SHOW_DATA the
 * smallest (header + 1 byte). 0 for a type the protocol does not have. */
static inline size_t nsd_msg_size(uint16_t type) {
        static const struct {
                uint16_t type;
                size_t size;
        } sizes[] = {
                { NSD_REQ_JOIN, sizeof(struct nsd_req_join) },
                { NSD_REQ_SESSION_OPEN, sizeof(struct nsd_req_session_open) },
                { NSD_REQ_SESSION_CLOSE, sizeof(struct nsd_req_session_close) },
                { NSD_REQ_STATUS, sizeof(struct nsd_req_status) },
                { NSD_REQ_LIST, sizeof(struct nsd_req_list) },
                { NSD_REQ_SHOW, sizeof(struct nsd_req_show) },
                { NSD_REQ_RELEASE, sizeof(struct nsd_req_release) },
                { NSD_REQ_HIDE, sizeof(struct nsd_req_hide) },
                { NSD_REQ_JOIN_SESSION, sizeof(struct nsd_req_join_session) },
                { NSD_REQ_METRICS, sizeof(struct nsd_req_metrics) },
                { NSD_REQ_SHARES, sizeof(struct nsd_req_shares) },
                { NSD_REQ_VOLUMES, sizeof(struct nsd_req_volumes) },
                { NSD_REQ_CREDENTIAL_GIVE, sizeof(struct nsd_req_credential_give) },
                { NSD_REQ_CREDENTIAL_TAKE, sizeof(struct nsd_req_credential_take) },
                { NSD_REQ_CREDENTIAL_UNLOCK, sizeof(struct nsd_req_credential_unlock) },
                { NSD_REQ_VOLUME_START, sizeof(struct nsd_req_volume_ctl) },
                { NSD_REQ_VOLUME_STOP, sizeof(struct nsd_req_volume_ctl) },
                { NSD_REP_JOIN, sizeof(struct nsd_rep_join) },
                { NSD_REP_SESSION_OPEN, sizeof(struct nsd_rep_session_open) },
                { NSD_REP_SESSION_CLOSE, sizeof(struct nsd_rep_session_close) },
                { NSD_REP_STATUS, sizeof(struct nsd_rep_status) },
                { NSD_REP_LIST_ENTRY, sizeof(struct nsd_rep_list_entry) },
                { NSD_REP_LIST_END, sizeof(struct nsd_rep_stream_end) },
                { NSD_REP_SHOW_DATA, sizeof(struct nsd_msg_header) + 1 },
                { NSD_REP_SHOW_END, sizeof(struct nsd_msg_header) },
                { NSD_REP_RELEASE, sizeof(struct nsd_msg_header) },
                { NSD_REP_HIDE, sizeof(struct nsd_msg_header) },
                { NSD_REP_JOIN_SESSION, sizeof(struct nsd_rep_join_session) },
                { NSD_REP_METRICS, sizeof(struct nsd_rep_metrics) },
                { NSD_REP_SHARES_ENTRY, sizeof(struct nsd_rep_shares_entry) },
                { NSD_REP_SHARES_MEMBERS, sizeof(struct nsd_rep_shares_members) },
                { NSD_REP_SHARES_END, sizeof(struct nsd_rep_stream_end) },
                { NSD_REP_VOLUMES_ENTRY, sizeof(struct nsd_rep_volumes_entry) },
                { NSD_REP_VOLUMES_END, sizeof(struct nsd_rep_stream_end) },
                { NSD_REP_CREDENTIAL_GIVE, sizeof(struct nsd_rep_credential_give) },
                { NSD_REP_CREDENTIAL_TAKE, sizeof(struct nsd_msg_header) },
                { NSD_REP_CREDENTIAL_UNLOCK, sizeof(struct nsd_rep_credential_unlock) },
                { NSD_REP_VOLUME_START, sizeof(struct nsd_rep_volume_ctl) },
                { NSD_REP_VOLUME_STOP, sizeof(struct nsd_rep_volume_ctl) },
                { NSD_REP_ERROR, sizeof(struct nsd_rep_error) },
        };

        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
                if (sizes[i].type == type)
                        return sizes[i].size;
        return 0;
}

/* The exact size of a request of this type, or 0 for a type that is not a request. */
static inline size_t nsd_request_size(uint16_t type) {
        return type & NSD_REPLY_BIT ? 0 : nsd_msg_size(type);
}

/* The size of a reply of this type (as nsd_msg_size()), or 0 for a type that is not a
 * reply. */
static inline size_t nsd_reply_size(uint16_t type) {
        return type & NSD_REPLY_BIT ? nsd_msg_size(type) : 0;
}

/* Is a NUL inside the field? */
static inline int nsd_field_is_string(const char *field, size_t size) {
        return memchr(field, 0, size) != NULL;
}

/*
 * Check a received datagram of n bytes (n may exceed NSD_MSG_SIZE_MAX when the receiver saw
 * MSG_TRUNC). is_request selects which side's types are valid. Returns 0 when the header is
 * sound and the size is right for the type, else -errno with *ret_why naming what was
 * wrong (a static string):
 *   -EMSGSIZE        longer than NSD_MSG_SIZE_MAX
 *   -EBADMSG         shorter than a header, bad magic, length field != datagram size,
 *                    wrong size for the type, error set in a request
 *   -EPROTONOSUPPORT another major version
 *   -EOPNOTSUPP      unknown or reserved type
 */
static inline int nsd_msg_check(const void *buf, size_t n, int is_request, const char **ret_why) {
        const struct nsd_msg_header *h = buf;
        size_t want;

        if (n > NSD_MSG_SIZE_MAX)
                return *ret_why = "message larger than the protocol allows", -EMSGSIZE;
        if (n < sizeof(*h))
                return *ret_why = "message shorter than a header", -EBADMSG;
        if (h->magic != NSD_PROTO_MAGIC)
                return *ret_why = "bad magic (not an nsd protocol message)", -EBADMSG;
        if (h->version_major != NSD_PROTO_MAJOR)
                return *ret_why = "unsupported protocol major version", -EPROTONOSUPPORT;
        if (h->length != n)
                return *ret_why = "length field does not match the message size", -EBADMSG;
        if (is_request) {
                if (h->error != 0)
                        return *ret_why = "error field set in a request", -EBADMSG;
                want = nsd_request_size(h->type);
                if (want == 0)
                        return *ret_why = "unknown request type", -EOPNOTSUPP;
                if (n != want)
                        return *ret_why = "wrong size for the request type", -EBADMSG;
        } else {
                want = nsd_reply_size(h->type);
                if (want == 0)
                        return *ret_why = "unknown reply type", -EOPNOTSUPP;
                if (h->type == NSD_REP_SHOW_DATA ? n < want : n != want)
                        return *ret_why = "wrong size for the reply type", -EBADMSG;
        }
        *ret_why = NULL;
        return 0;
}
