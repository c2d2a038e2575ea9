/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * state.h: nsd's state files, what neither the pins nor the fd store can hold, under
 * <run_dir>/state (mode 0700, on the host's /run: they go with a reboot, like the
 * namespaces themselves):
 *   ns-<uid>        [Namespace] Inode=, CreatedUsec=, Baseline= (the mounts a new namespace
 *                   got from the host that were not received from a peer group, for linger:
 *                   domain/linger.h, mounts.h)
 *   session-<id>    [Session] Uid=, Pid=, StartTime=, Service= (sessions, session.h; id in 16
 *                   hex digits)
 * Each is a small GKeyFile, written to a temporary file and renamed over it (atomic: a
 * reader sees the old file or the new one), removed when what it describes ends. A file
 * that cannot be read or parsed is logged and ignored: it costs a namespace its linger
 * baseline (kept, then) or a session its close (its pidfd still ends it).
 */
#pragma once

#include <glib.h>

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
