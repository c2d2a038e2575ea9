/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsclient.h: talk to nsd, the per-user mount namespace daemon.
 *
 * Every function returns >= 0 on success and a negative errno value on failure; nothing
 * here logs or exits. Output parameters (ret_*) are written only on success. Every
 * descriptor the library creates or receives is O_CLOEXEC. One connection may be used from
 * several threads (calls on it are serialised); connections share no state. A call that
 * fails because nsd's answer was malformed or the connection broke (-EBADMSG, -EMSGSIZE,
 * -ECONNRESET, ...) leaves the connection unusable: later calls on it return -ENOTCONN;
 * an error that nsd itself sends (-EPERM, -ENXIO, ...) does not.
 * See libnsclient(3).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nsc_conn nsc_conn;

/* Connect to nsd. socket_path NULL means $NSD_SOCKET if set (ignored in setuid programs),
 * else, for euid 0, root's own socket /run/nsd/root.socket when it exists (nsd >= 1.2),
 * else /run/nsd/socket. */
int nsc_connect(const char *socket_path, nsc_conn **ret_conn);
/* The same with a timeout other than NSC_TIMEOUT_DEFAULT_USEC, for the connect itself (also
 * to an nsd whose listen backlog is full because it is stopped or stuck) and as the
 * connection's timeout afterwards (see nsc_set_timeout()). Since NSCLIENT_1.2. */
int nsc_connect_timeout(const char *socket_path, uint64_t usec, nsc_conn **ret_conn);
/* Close the connection and free it; NULL is fine. */
void nsc_disconnect(nsc_conn *conn);
/* For __attribute__((cleanup)), as sd-bus.h's sd_bus_unrefp():
 *     _nsc_cleanup_disconnect_ nsc_conn *conn = NULL; */
static inline void nsc_disconnectp(nsc_conn **conn) {
        if (conn)
                nsc_disconnect(*conn);
}
#define _nsc_cleanup_disconnect_ __attribute__((cleanup(nsc_disconnectp)))

/* How long one call on the connection may take in all: sending the request and receiving
 * every part of the answer (and, for nsc_join_session() with an nsd older than 1.2, the
 * reconnect and both requests of the fallback); 0 waits forever. Default
 * NSC_TIMEOUT_DEFAULT_USEC. A call that runs out of time fails with -ETIMEDOUT and leaves
 * the connection unusable. */
#define NSC_TIMEOUT_DEFAULT_USEC (25ull * 1000 * 1000)
int nsc_set_timeout(nsc_conn *conn, uint64_t usec);

/* When the last call failed because nsd refused it, nsd's reason ("only root may ...");
 * otherwise NULL. Valid until the next call on this connection. */
const char *nsc_last_error_message(nsc_conn *conn);

/* ---- JOIN -------------------------------------------------------------------------- */

#define NSC_JOIN_NO_CREATE 0x1u /* fail with -ENOENT instead of creating the namespace */

#define NSC_NS_CREATED 0x1u   /* created by this request */
#define NSC_NS_PINNED 0x2u    /* pinned: survives nsd restarts */
#define NSC_NS_ADOPTED 0x4u   /* re-adopted from a pin when nsd started */
#define NSC_NS_ORPHANED 0x10u /* made for a user name the uid no longer has (nsd 1.6) */
#define NSC_NS_CREDENTIAL_WANTED \
        0x20u             /* JOIN_SESSION: a volume waits for the login password (nsd 1.7) */
#define NSC_NS_STALE 0x8u /* made with another setup than nsd's configuration in force */

struct nsc_join_result {
        int root_fd; /* O_PATH directory: the namespace's root (fchdir + chroot) */
        int ns_fd;   /* nsfs descriptor (setns(ns_fd, CLONE_NEWNS)) */
        uid_t uid;
        uint32_t ns_flags;     /* NSC_NS_* */
        uint64_t ns_inode;     /* as in stat(/proc/PID/ns/mnt).st_ino */
        uint64_t created_usec; /* CLOCK_REALTIME */
};

/* Get descriptors of uid's namespace (created on first use unless NSC_JOIN_NO_CREATE).
 * The caller owns both descriptors in *ret. -EPERM: not root and not one's own uid.
 * -EAGAIN (nsd >= 1.2): not yet available (nsd is still adopting the namespace after a
 * restart); ask again shortly, it is no reason to give up on the namespace. */
int nsc_join(nsc_conn *conn, uid_t uid, unsigned flags, struct nsc_join_result *ret);

/* Enter a joined namespace: setns(ns_fd) (mode setns), or on a kernel that supports it
 * setns(root_fd), else fchdir(root_fd) + chroot(".") (mode chroot). These do not talk to
 * nsd; they are here so that the PAM module and nsctl enter the same way. Both enter all or
 * nothing: on failure the caller's root, working directory and namespace are as before
 * (nsc_enter_chroot() saves root and cwd as descriptors and puts them back; should even
 * that fail, it returns -ENOTRECOVERABLE). */
int nsc_enter_setns(const struct nsc_join_result *j);
int nsc_enter_chroot(const struct nsc_join_result *j, int *ret_used_setns);

/* ---- sessions ---------------------------------------------------------------------- */

/* Register a session of uid led by pid (a pidfd of it is sent when the kernel has
 * pidfd_open, so nsd notices when it dies without a close). service: PAM service name or
 * NULL. */
int nsc_session_open(nsc_conn *conn, uid_t uid, pid_t pid, const char *service,
                     uint64_t *ret_session_id, unsigned *ret_sessions);
/* session_id 0 means "the session of uid led by pid". */
int nsc_session_close(nsc_conn *conn, uid_t uid, pid_t pid, uint64_t session_id,
                      unsigned *ret_sessions_left);

/* JOIN and SESSION_OPEN in one round trip (since NSCLIENT_1.2, nsd protocol 1.2): the
 * descriptors of uid's namespace in *ret_join, and a session of uid led by pid registered
 * (pidfd and service as for nsc_session_open()). Nothing is left open on failure: a
 * refused session refuses the whole call. With an nsd older than 1.2 (which refuses the
 * request with -EOPNOTSUPP and closes the connection) the library reconnects to the same
 * socket and sends JOIN, then SESSION_OPEN, within the same timeout; later calls on the
 * connection go that way at once. Returns 0 when one request did it, 1 after the fallback. */
int nsc_join_session(nsc_conn *conn, uid_t uid, unsigned flags, pid_t pid, const char *service,
                     struct nsc_join_result *ret_join, uint64_t *ret_session_id,
                     unsigned *ret_sessions);

/* ---- status and inspection --------------------------------------------------------- */

#define NSC_FEATURE_SETNS_DIRFD 0x1u
#define NSC_FEATURE_PROC_MOUNTS_ROOT 0x2u
#define NSC_FEATURE_FSPICK_CHECK 0x4u
#define NSC_FEATURE_OWNER_PRIVATE 0x8u
/* protocol 1.9: mounts can be born owner-private (kernel F4b) */
#define NSC_FEATURE_OWNER_PRIVATE_NEW 0x10u
#define NSC_FEATURE_PIN_NAMESPACE 0x100u
/* nsd >= 1.1: mode private is on (nsd.conf [Private] Enable=yes) ... */
#define NSC_FEATURE_PRIVATE_MODE 0x200u
/* ... or was asked for and refused: the kernel lacks owner-private mounts */
#define NSC_FEATURE_PRIVATE_UNAVAILABLE 0x400u

struct nsc_status {
        char version[32];
        uint64_t started_usec;
        uint32_t features; /* NSC_FEATURE_* */
        uint32_t namespaces;
        uint32_t pinned;
        uint32_t sessions;
        uint32_t connections;
        uint32_t max_namespaces;
        uint32_t max_sessions_per_uid;
        uint32_t max_connections_per_uid;
        pid_t pid;
        unsigned proto_major, proto_minor; /* nsd's protocol version */
};

int nsc_status(nsc_conn *conn, struct nsc_status *ret);

struct nsc_ns_info {
        uid_t uid;
        uint32_t ns_flags; /* NSC_NS_* */
        uint32_t sessions;
        int32_t mounts; /* -1 when unknown */
        uint64_t ns_inode;
        uint64_t created_usec;
        char pin[64];
};

/* All namespaces the caller may see (root: all; others: their own). *ret_entries is one
 * malloc()ed array; free() it. */
int nsc_list(nsc_conn *conn, struct nsc_ns_info **ret_entries, size_t *ret_n);

/* The namespace's mountinfo text (as /proc/self/mountinfo inside it); free() it. */
int nsc_show(nsc_conn *conn, uid_t uid, char **ret_text, size_t *ret_len);

#define NSC_RELEASE_FORCE 0x1u

/* Unpin and forget uid's namespace. -EBUSY: it has live sessions and no FORCE. */
int nsc_release(nsc_conn *conn, uid_t uid, unsigned flags);

/* ---- owner-private mounts (since NSCLIENT_1.1, nsd protocol 1.1) -------------------- */

#define NSC_HIDE_UNHIDE 0x1u /* clear the attribute instead of setting it */

/* Make the mount whose root is path (absolute, in the initial mount namespace, no symbolic
 * links) owner-private for uid: only processes with that fsuid see it or walk into it
 * (kernel patch F4). A user may ask for its own FUSE mounts; root for any mount and any uid
 * nsd manages. -ENOENT no such path, -EINVAL not a mount root, -EPERM not yours,
 * -EOPNOTSUPP the kernel (or an nsd older than 1.1) cannot. */
int nsc_hide(nsc_conn *conn, uid_t uid, const char *path, unsigned flags);

/* ---- metrics (since NSCLIENT_1.3, nsd protocol 1.4) --------------------------------- */

/* The labels: indices into the arrays of struct nsc_metrics. A slot no label names is 0. */
#define NSC_METRICS_JOIN_OK 0          /* the descriptors went out */
#define NSC_METRICS_JOIN_REFUSED 1     /* permission, policy or a limit */
#define NSC_METRICS_JOIN_NOT_MANAGED 2 /* nsd does not manage that uid */
#define NSC_METRICS_JOIN_NOT_YET 3     /* not yet available; the client retries */
#define NSC_METRICS_JOIN_TIMEOUT 4     /* the user database or the setup took too long */
#define NSC_METRICS_JOIN_ERROR 5       /* anything else */
#define NSC_METRICS_JOINS 8

/* join_latency[i]: JOINs answered within NSC_METRICS_LATENCY_BOUNDS_USEC[i] microseconds
 * (and not within the bound before); the last slot: slower than every bound. Not
 * cumulative. */
#define NSC_METRICS_LATENCY_BOUNDS_USEC                                                       \
        {                                                                                     \
                100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, \
                        1000000, 2500000, 5000000                                             \
        }
#define NSC_METRICS_LATENCY_BUCKETS 16

#define NSC_METRICS_RELEASE_ASKED 0  /* nsctl release */
#define NSC_METRICS_RELEASE_FORCED 1 /* nsctl release --force, with live sessions */
#define NSC_METRICS_RELEASE_LINGER 2 /* the linger time was over */
#define NSC_METRICS_RELEASES 4

#define NSC_METRICS_LOOKUP_OK 0
#define NSC_METRICS_LOOKUP_NOT_FOUND 1
#define NSC_METRICS_LOOKUP_TIMEOUT 2
#define NSC_METRICS_LOOKUP_ERROR 3
#define NSC_METRICS_LOOKUPS 4

/* lookup_timeouts[] (since NSCLIENT_1.5, nsd protocol 1.6): "does nsd manage uid?" past
 * LookupTimeoutSec=, by what nsd.conf's OnLookupTimeout= made of it */
#define NSC_METRICS_LOOKUP_TIMEOUT_REFUSED 0   /* the request was refused (ETIMEDOUT) */
#define NSC_METRICS_LOOKUP_TIMEOUT_UNMANAGED 1 /* the uid was treated as not managed */
#define NSC_METRICS_LOOKUP_TIMEOUTS 2

#define NSC_METRICS_THROTTLE_RATE 0         /* requests read more slowly (rate limit) */
#define NSC_METRICS_THROTTLE_CONNECTIONS 1  /* connections refused by a limit */
#define NSC_METRICS_THROTTLE_LOOKUP_QUEUE 2 /* too many user database lookups waited */
#define NSC_METRICS_THROTTLES 4

#define NSC_METRICS_SOCKET_USER 0
#define NSC_METRICS_SOCKET_ROOT 1
#define NSC_METRICS_SOCKETS 2

/* Counters count from nsd's start (nsc_status()'s started_usec); gauges are now. */
struct nsc_metrics {
        /* gauges: namespaces, pinned and sessions are root's nsc_status() figures */
        uint32_t namespaces;
        uint32_t pinned;
        uint32_t sessions;
        uint32_t connections[NSC_METRICS_SOCKETS];
        uint32_t fdstore_entries;
        /* counters */
        uint64_t joins[NSC_METRICS_JOINS];
        uint64_t join_latency[NSC_METRICS_LATENCY_BUCKETS];
        uint64_t join_latency_sum_usec;
        uint64_t created;
        uint64_t setup_failures;
        uint64_t releases[NSC_METRICS_RELEASES];
        uint64_t lookups[NSC_METRICS_LOOKUPS];
        uint64_t path_walk_timeouts;
        uint64_t throttled[NSC_METRICS_THROTTLES];
        /* since NSCLIENT_1.5: filled by nsc_metrics_sized() only (0 from an nsd older than
         * 1.6) */
        uint64_t lookup_timeouts[NSC_METRICS_LOOKUP_TIMEOUTS];
};

/* nsd's counters and gauges (root only: -EPERM for anyone else). -EOPNOTSUPP: an nsd older
 * than 1.4, which does not know the request (and closes the connection). Fills the fields
 * of NSCLIENT_1.3's struct nsc_metrics only: everything before lookup_timeouts. */
int nsc_metrics(nsc_conn *conn, struct nsc_metrics *ret);
/* The same, filling the first size bytes of *ret (sizeof(struct nsc_metrics) of the caller's
 * header; at least up to lookup_timeouts, else -EINVAL): bytes past the fields this library
 * knows are set to 0. Since NSCLIENT_1.5. */
int nsc_metrics_sized(nsc_conn *conn, struct nsc_metrics *ret, size_t size);

/* ---- shares (since NSCLIENT_1.4, nsd protocol 1.5) ---------------------------------- */

#define NSC_SHARE_PROPAGATION_MEMBERS 0 /* members to members only */
#define NSC_SHARE_PROPAGATION_HOST 1    /* and the host's mounts under the path come in */
#define NSC_SHARE_PROPAGATION_BOTH 2    /* members and the initial namespace alike */
#define NSC_SHARE_PROPAGATION_PER_USER \
        3 /* the host's mounts under Path=/<member> reach that member */

#define NSC_SHARE_OWN_ONLY 0x1u /* not root: uids holds the caller's own uid only */

struct nsc_share_member {
        uid_t uid;
        uint32_t peer_group; /* of its namespace's clone of the anchor; 0: unknown */
};

struct nsc_share_info {
        char name[72];        /* [Share NAME] */
        char path[1032];      /* Path= */
        uint32_t propagation; /* NSC_SHARE_PROPAGATION_* */
        uint32_t max_members; /* MaxMembers= */
        uint32_t members;     /* namespaces given the share (those being made included) */
        uint32_t flags;       /* NSC_SHARE_* */
        int32_t mounts;       /* mounts under the share's anchor; -1: unknown */
        uint32_t peer_group;  /* the anchor's peer group id; 0: unknown */
        size_t n_members;
        struct nsc_share_member *member; /* n_members, in order of uid */
};

/* The shares of nsd.conf's configuration in force the caller may see (root: all, with every
 * member; anyone else: those its own namespace was given, with its own uid only), in the
 * order of nsd.conf. Free *ret_shares with nsc_shares_free(). -EOPNOTSUPP: an nsd older
 * than 1.5 (which closes the connection). */
int nsc_shares(nsc_conn *conn, struct nsc_share_info **ret_shares, size_t *ret_n);
void nsc_shares_free(struct nsc_share_info *shares, size_t n);

/* ---- volumes (since NSCLIENT_1.6, nsd protocol 1.7; flags ASK, ON_REQUEST: 1.8) ---- */

#define NSC_VOLUME_UNKNOWN 0   /* the setup ended without a report (or nsd < 1.7 made it) */
#define NSC_VOLUME_MOUNTED 1   /* mounted on where */
#define NSC_VOLUME_FAILED 2    /* failed: error and why */
#define NSC_VOLUME_NOT_TRIED 3 /* an earlier failure stopped the setup before it */
#define NSC_VOLUME_USER 4      /* a FUSE volume: the user's service manager runs it at login */

#define NSC_VOLUME_PASSWORD 0x1u /* flags: its program takes a password (the login one) */
/* flags (nsd 1.8): Key=ask: never the login password, only nsc_credential_unlock()'s */
#define NSC_VOLUME_ASK 0x2u
/* flags (nsd 1.8): Start=request: started by `nsctl start NAME`, not at login */
#define NSC_VOLUME_ON_REQUEST 0x4u
/* flags (nsd 1.8): nsd read the namespace's mount table for the entry; then NOW_MOUNTED says
 * whether something is mounted on where now */
#define NSC_VOLUME_NOW_KNOWN 0x8u
#define NSC_VOLUME_NOW_MOUNTED 0x10u
/* flags (nsd 1.8): its run-volume waits for a password now (locked) */
#define NSC_VOLUME_WAITING 0x20u
/* flags (nsd 1.10): the last release of its namespace was refused for this volume: why says
 * who held it then (pid and command), or which step failed */
#define NSC_VOLUME_HELD 0x40u
/* state (nsd 1.11, NSCLIENT_1.8): a kernel volume not mounted now: Start=login or
 * Start=request and not started yet, or stopped (nsc_volume_stop()) */
#define NSC_VOLUME_STOPPED 5
/* flags (nsd 1.11, NSCLIENT_1.8): a kernel volume with Start=login: nsd starts it at the
 * user's first session; the user's service manager asks too (`nsctl start-volumes`,
 * nsc_volume_start()) */
#define NSC_VOLUME_AT_LOGIN 0x80u
/* flags (nsd 1.11, NSCLIENT_1.8): a kernel volume with Release=last-session: unmounted when
 * the user's last session has ended and no process of the user is left in the namespace */
#define NSC_VOLUME_RELEASE_LAST 0x100u
/* flags (nsd 1.12): KeyFile=: its password is a key file of root's, which nsd reads for each
 * nsc_credential_take(); never the login password, and nsc_credential_unlock() is refused */
#define NSC_VOLUME_KEY_FILE 0x200u

struct nsc_volume_info {
        uid_t uid;         /* whose namespace */
        uint32_t state;    /* NSC_VOLUME_* */
        int error;         /* -errno of the failure; 0 */
        uint32_t loop;     /* the image is on /dev/loop<loop - 1>; 0: no loop device */
        uint64_t at_usec;  /* CLOCK_REALTIME when the setup reported; 0: unknown */
        uint32_t flags;    /* NSC_VOLUME_* flags above */
        char name[72];     /* [Volume NAME] */
        char type[16];     /* Type= */
        char source[1032]; /* Source=, expanded */
        char where[1032];  /* Where=, expanded */
        char why[512];     /* state FAILED: which step, which path, what happened */
        char options[512]; /* state USER: the -o argument of its FUSE program */
};

/* The volumes of the namespaces the caller may see (root: all; anyone else: its own), as
 * each namespace's setup left them, in order of uid, then of nsd.conf. free() *ret (a valid
 * pointer also when *ret_n is 0). -EOPNOTSUPP: an nsd older than 1.7 (which closes the
 * connection). */
int nsc_volumes(nsc_conn *conn, struct nsc_volume_info **ret, size_t *ret_n);

/* ---- one kernel volume, started or stopped (since NSCLIENT_1.8, nsd protocol 1.11) ------ */

struct nsc_volume_ctl {
        uint32_t state;   /* the volume's state now: NSC_VOLUME_MOUNTED after a start,
                           * NSC_VOLUME_STOPPED after a stop that unmounted it, else as it was
                           * (NSC_VOLUME_FAILED: its mount failed, it is not mounted) */
        uint32_t loop;    /* its image is on /dev/loop<loop - 1> now; 0: no loop device */
        uint32_t changed; /* 1: this call mounted or unmounted it; 0: it was so already */
};

/* Mount the kernel volume `volume` ([Volume NAME]) of uid's namespace, which exists, as its
 * setup would; or unmount it (a block volume; refused with -EBUSY while a process holds it,
 * nsd's message naming who). nsd answers when it is done, in *ret (may be NULL); a start of a
 * mounted volume or a stop of one that is not changes nothing (changed 0). The user itself
 * (from inside its namespace or the initial one) or root for any uid. -ENOENT: no namespace,
 * or no volume of that name in it; -EOPNOTSUPP: a FUSE volume (its unit in the user's service
 * manager starts it), for stop a network volume, or an nsd older than 1.11 (which closes the
 * connection); -EAGAIN: the namespace is being made or released, or another start or stop of
 * uid runs: ask again. -EINVAL, nsd not asked: volume NULL, empty or longer than 71 bytes. */
int nsc_volume_start(nsc_conn *conn, uid_t uid, const char *volume, struct nsc_volume_ctl *ret);
int nsc_volume_stop(nsc_conn *conn, uid_t uid, const char *volume, struct nsc_volume_ctl *ret);

/* ---- a volume's login password (since NSCLIENT_1.6, nsd protocol 1.7) ----------------- */

#define NSC_CREDENTIAL_MAX 1024     /* bytes of a password nsd takes */
#define NSC_CREDENTIAL_HOLD_SEC 120 /* how long nsd holds one not taken */
#define NSC_CREDENTIAL_WAIT 0x1u

/* Root (pam_nsjoin): give nsd uid's login password for the volumes that take it, as a
 * memfd sealed against writing, growing, shrinking and further seals (at most
 * NSC_CREDENTIAL_MAX bytes); nsd never reads it and keeps it for a short while only. 0 and
 * *ret_waiting (may be NULL): the volumes' programs that were waiting for it. */
int nsc_credential_give(nsc_conn *conn, uid_t uid, int memfd, unsigned *ret_waiting);
/* The caller's own volume's password (nsctl run-volume): a descriptor to read it from
 * (offset 0), in *ret_fd. -EAGAIN when nsd holds none (or, its message says so, when nsd
 * could not check where the caller is right now: ask again); with NSC_CREDENTIAL_WAIT the call
 * waits for the next one given instead (set the connection's timeout to 0 first to wait
 * longer than it). */
int nsc_credential_take(nsc_conn *conn, const char *volume, unsigned flags, int *ret_fd);

/* ---- a volume's password from the user (since NSCLIENT_1.7, nsd protocol 1.8) --------- */

/* The caller's own password for its volume (nsctl unlock): memfd as for
 * nsc_credential_give(); nsd hands it to that volume's next TAKE, the one waiting if any.
 * 0 and *ret_waiting (may be NULL): 1 when a waiting TAKE got it now, else 0 (held for a
 * while for the next). -EOPNOTSUPP: an nsd older than 1.8. */
int nsc_credential_unlock(nsc_conn *conn, const char *volume, int memfd, unsigned *ret_waiting);
/* The one way to make what nsd takes: a memfd holding the n bytes of secret (1 to
 * NSC_CREDENTIAL_MAX, no terminator needed), sealed against writing, growing, shrinking and
 * further seals, close-on-exec. The descriptor, or -errno. The caller wipes its own copy. */
int nsc_credential_memfd(const void *secret, size_t n);

#ifdef __cplusplus
}
#endif
