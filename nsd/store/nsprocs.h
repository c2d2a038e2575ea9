/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsprocs.h: which processes are inside which mount namespace, for linger (user.h): a
 * namespace with a process still in it (a tmux server, a nohup job, a user service of
 * systemd --user) is not released, whatever its sessions say.
 *
 * One scan reads /proc/<pid>/ns/mnt of every process (a stat each, a few microseconds; the
 * figures are in bench/README.md) and counts the processes per namespace inode; nsd's own
 * helper children (short-lived, inside a namespace only while nsd reads its mount table) are
 * not counted. Threads share their process's mount namespace (setns() of a mount namespace
 * refuses a task whose fs_struct is shared), so /proc/<pid>/task is not read. The scan runs
 * in a worker thread (nsprocs_scan_async()), and every linger check due while it runs waits
 * for that one scan.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "base/nsd-forward.h"

/* Scan proc_dir (normally "/proc"), not counting children of skip_parent (0: none) nor
 * processes in skip_ns (the inode of the scanner's own namespace, which holds most of them;
 * 0: none). -EACCES when the namespace of any process could not be read (the caller lacks
 * CAP_SYS_PTRACE: another uid's process, a non-dumpable one): the result would miss it, so
 * there is none, and linger keeps every namespace. */
int nsprocs_scan(const char *proc_dir, pid_t skip_parent, uint64_t skip_ns, NsProcs **ret);
void nsprocs_free(NsProcs *p);
/* Processes in the namespace with that nsfs inode, and the first one found. */
unsigned nsprocs_count(const NsProcs *p, uint64_t ns_inode, pid_t *ret_first);
/* Processes looked at, and how long the scan took. */
unsigned nsprocs_scanned(const NsProcs *p);
uint64_t nsprocs_usec(const NsProcs *p);

/* The scan in a GLib worker thread; cb runs on the calling thread's default main context
 * with the result (the callee's to free; NULL with err < 0 when /proc cannot be read). */
typedef void (*nsprocs_cb)(NsProcs *result, int err, void *userdata);
void nsprocs_scan_async(const char *proc_dir, pid_t skip_parent, uint64_t skip_ns, nsprocs_cb cb,
                        void *userdata);
