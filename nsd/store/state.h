/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * state.h: nsd's state files, what neither the pins nor the fd store can hold, under
 * <run_dir>/state (mode 0700, on the host's /run: they go with a reboot, like the
 * namespaces themselves):
 *   ns-<uid>        [Namespace] Inode=, CreatedUsec=, Baseline= (the mounts a new namespace
 *                   got from the host that were not received from a peer group, for linger:
 *                   user.h, mounts.h)
 *   session-<id>    [Session] Uid=, Pid=, StartTime=, Service= (sessions, session.h; id in 16
 *                   hex digits)
 * Each is a small GKeyFile, written to a temporary file and renamed over it (atomic: a
 * reader sees the old file or the new one), removed when what it describes ends. A file
 * that cannot be read or parsed is logged and ignored: it costs a namespace its linger
 * baseline (kept, then) or a session its close (its pidfd still ends it).
 *
 * And the record of the namespaces nsd made, for pam_nsjoin (nsd-protocol.h, NSD_MADE_*):
 * <run_dir>/made (mode 0755, root's), two empty files per namespace, named by its nsfs
 * inode and by the mount id of its root. A session of root opened inside one of them leaves
 * it for the initial namespace without asking nsd. A failure to write is logged (such a
 * session then stays where it is, as before); the names never outlive their namespace.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "base/nsd-forward.h"

#define STATE_NS_PREFIX "ns-"
#define STATE_SESSION_PREFIX "session-"

/* Open (create) <run_dir>/state. -errno, logged. */
int state_open(const char *run_dir, StateDir **ret);
void state_free(StateDir *sd);
const char *state_path(const StateDir *sd);

/* Write kf to name atomically. NULL sd: nothing (0). -errno, logged at warning. */
int state_write(StateDir *sd, const char *name, GKeyFile *kf);
/* Read name: 0 and *ret, -ENOENT, or another -errno (logged). */
int state_read(StateDir *sd, const char *name, GKeyFile **ret);
/* Remove name; a missing one is fine. */
void state_remove(StateDir *sd, const char *name);
/* The names with prefix (g_strfreev()); temporary files are removed on the way. */
char **state_list(StateDir *sd, const char *prefix);

/* The record's two names of the namespace whose nsfs inode is ns_inode and whose root
 * directory is root_fd (NSD_MADE_NAME_MAX each). The second is "" (and -errno, logged, when
 * reading failed) when the root's mount id is not known. */
int state_made_names(uint64_t ns_inode, int root_fd, char *ret_ns, char *ret_root);
/* Record a namespace (both names): before it is first handed out, and when it is adopted. */
void state_made_add(StateDir *sd, uint64_t ns_inode, int root_fd);
/* Take it out of the record: before the namespace can go away. */
void state_made_remove(StateDir *sd, uint64_t ns_inode, int root_fd);
/* Remove every name of the record not in keep (a set of names: NSD_MADE_* strings). */
void state_made_prune(StateDir *sd, GHashTable *keep);
