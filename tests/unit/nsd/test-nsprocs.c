/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-nsprocs: which processes are in which mount namespace (nsd/store/nsprocs.c), on a fake
 * /proc: what keeps a namespace from linger's release (a tmux server left inside); nsd's own
 * helper children and the scanner's namespace are not counted; no /proc is an error.
 *
 *   test-nsprocs SCRATCH_DIR
 */
#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake-proc.h"
#include "store/nsprocs.h"
#include "tap.h"

static uint64_t ino_of(const char *path) {
        struct stat st;
        return stat(path, &st) == 0 ? (uint64_t) st.st_ino : 0;
}

static void test_nsprocs(const char *scratch) {
        g_autofree char *proc = g_build_filename(scratch, "proc", NULL);
        g_autofree char *a = g_build_filename(scratch, "ns-a", NULL);
        g_autofree char *b = g_build_filename(scratch, "ns-b", NULL);
        g_autofree char *self = g_build_filename(scratch, "ns-self", NULL);
        NsProcs *p = NULL;
        pid_t first = 0;
        int r;

        g_mkdir_with_parents(proc, 0755);
        g_file_set_contents(a, "", 0, NULL);
        g_file_set_contents(b, "", 0, NULL);
        g_file_set_contents(self, "", 0, NULL);
        fake_proc_add(proc, "1", self, 0);
        fake_proc_add(proc, "200", a, 1); /* a tmux server left in alice's namespace */
        fake_proc_add(proc, "201", a, 200);
        fake_proc_add(proc, "300", b, 42); /* nsd's own helper child (parent 42) */
        g_autofree char *proc_self = g_build_filename(proc, "self", NULL);
        g_mkdir_with_parents(proc_self, 0755);

        r = nsprocs_scan(proc, 42, ino_of(self), &p);
        is_int(r, 0, "scan of a fake /proc");
        is_int((int) nsprocs_count(p, ino_of(a), &first), 2, "two processes left in A's namespace");
        ok(first == 200 || first == 201, "... the first one named (pid %d)", (int) first);
        is_int((int) nsprocs_count(p, ino_of(b), NULL), 0,
               "nsd's own helper children are not counted");
        is_int((int) nsprocs_count(p, ino_of(self), NULL), 0,
               "the scanner's namespace is not counted");
        nsprocs_free(p);

        is_int(nsprocs_scan("/nonexistent-proc", 0, 0, &p), -ENOENT, "no /proc: an error, not 0");
}

int main(int argc, char **argv) {
        g_autofree char *scratch = NULL, *cmd = NULL;

        if (argc < 2) {
                fprintf(stderr, "usage: test-nsprocs SCRATCH_DIR\n");
                return 2;
        }
        scratch = g_strdup_printf("%s/run.%d", argv[1], (int) getpid());
        g_mkdir_with_parents(scratch, 0755);
        test_nsprocs(scratch);
        cmd = g_strdup_printf("rm -rf '%s'", scratch);
        if (system(cmd) != 0)
                fprintf(stderr, "# cannot remove %s\n", scratch);
        return tap_done();
}
