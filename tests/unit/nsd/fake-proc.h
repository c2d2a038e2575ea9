/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/nsd/fake-proc.h: a fake /proc for the scan of processes per mount namespace
 * (store/nsprocs.c): a process is a folder PID with ns/mnt (a link to a file standing for
 * its namespace) and stat (its parent). Header-only.
 */
#pragma once

#include <glib.h>
#include <stdio.h>
#include <unistd.h>

/* Process pid in proc_dir, its mount namespace ns_file, its parent ppid. */
static inline void fake_proc_add(const char *proc_dir, const char *pid, const char *ns_file,
                                 int ppid) {
        g_autofree char *nsdir = g_strdup_printf("%s/%s/ns", proc_dir, pid);
        g_autofree char *link = g_strdup_printf("%s/mnt", nsdir);
        g_autofree char *stat = g_strdup_printf("%s/%s/stat", proc_dir, pid);
        g_autofree char *text = g_strdup_printf("%s (sleep x) S %d 1 1 0 -1\n", pid, ppid);

        g_mkdir_with_parents(nsdir, 0755);
        if (symlink(ns_file, link) < 0)
                perror("symlink");
        g_file_set_contents(stat, text, -1, NULL);
}
