/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * peer.h: where a client process stands, for api/handlers.c's policy of who gets what
 * (nsd-protocol.h, "Who gets what"). A process's "view" is its mount namespace and its root
 * directory; nsd compares it with a user's namespace (the namespace and its root: the
 * process is INSIDE) and with nsd's own (the initial namespace and its root: INITIAL). A
 * process in a sandbox (a mount namespace of its own: systemd's ProtectHome=, firejail,
 * bubblewrap; or a chroot) is neither.
 *
 * Which process: the one that connected (its pid from SO_PEERCRED, its pidfd opened when nsd
 * accepted the connection, conn.h), and only when it also sent the request being served
 * (SCM_CREDENTIALS), so that a process that inherited or was handed the connection (a
 * sandboxed child) is not mistaken for it. Race-free against pid reuse from accept() on:
 * /proc/PID/ns/mnt and /proc/PID/root are opened, then the pidfd must still say "running",
 * so the files belong to the process the pidfd names. Not covered: a pid that came round
 * between the client's connect() and nsd's accept() (a whole cycle of pid_max pids in that
 * moment; Linux 6.5's SO_PEERPIDFD would close it, 6.1 has none).
 *
 * The /proc files are opened by a helper child that took the client's file system uid and
 * gid (from SCM_CREDENTIALS), so the kernel's ptrace access check (PTRACE_MODE_READ_FSCREDS)
 * passes as it would for the client itself, without CAP_SYS_PTRACE; a client that is not
 * dumpable (prctl(PR_SET_DUMPABLE, 0), a set-id program) cannot be looked at then and is
 * refused. Nothing here asks a file system anything (statx with an empty mask and
 * AT_STATX_DONT_SYNC), so a client whose root is on a hung FUSE mount cannot stall nsd.
 */
#pragma once

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "store/userns.h"

typedef struct PeerView {
        bool inside;  /* its mount namespace is the user's and its root that namespace's root */
        bool initial; /* its mount namespace and root are nsd's own (the initial ones) */
        /* < 0: nsd could not look at the user's namespace (inside_err) or at its own
         * (initial_err) to compare: -errno, and the flag is false (not known to be so) */
        int inside_err;
        int initial_err;
} PeerView;

/* pid, pidfd: the process that connected (conn_pid(), conn_pidfd()); sender: who sent the
 * request (conn_sender()). ns: the user's namespace, or NULL (then only `initial`). Returns 0
 * with *ret, or -errno with *ret_why (g_malloc()ed, for the client) when nsd cannot tell:
 * -EPERM (another process sent the request, no pidfd, the process is gone or cannot be
 * looked at), or nsd's own failure (errno_own_failure(): -EAGAIN when nsd was short of
 * processes, descriptors or memory, "nsd could not check ... right now"). Callers refuse in
 * every case; only the errno and the message tell the client whether to retry. */
int peer_view(pid_t pid, int pidfd, const struct ucred *sender, const UserNs *ns, PeerView *ret,
              char **ret_why);
