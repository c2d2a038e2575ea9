/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-nss-util: common/nss-util.c looks users and groups up whatever their size, and tells
 * a missing entry from a failed lookup. Runs under nss_wrapper (meson sets LD_PRELOAD and the
 * NSS_WRAPPER_* files, written here into a temp folder), so the host's accounts play no part.
 * Argument 1: a writable temp folder.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nss-util.h"
#include "nss-wrapper.h"
#include "tap.h"

#define BIG_GROUP_MEMBERS 3000

static void write_files(const char *dir) {
        char path[4096];
        FILE *f;

        snprintf(path, sizeof path, "%s/passwd", dir);
        f = fopen(path, "w");
        fprintf(f, "root:x:0:0:root:/root:/bin/sh\n"
                   "alice:x:1001:1001::/home/alice:/bin/sh\n"
                   "bob:x:1002:1002::/home/bob:/bin/sh\n");
        fclose(f);
        snprintf(path, sizeof path, "%s/group", dir);
        f = fopen(path, "w");
        fprintf(f, "root:x:0:\nalice:x:1001:\nbob:x:1002:\nsmall:x:2000:alice\nbig:x:2001:");
        /* one long line: 3000 members, ~30 KiB, more than any first buffer */
        for (int i = 0; i < BIG_GROUP_MEMBERS; i++)
                fprintf(f, "%smember%04d", i ? "," : "", i);
        fprintf(f, ",bob\n");
        fclose(f);
}

int main(int argc, char *argv[]) {
        struct passwd *pw = NULL;
        struct group *gr = NULL;
        gid_t *groups = NULL;
        size_t n = 0;
        bool in_big = false, in_small = false;

        if (!nss_wrapper_dir(argc, argv))
                return tap_done();
        write_files(argv[1]);

        is_int(nss_user_by_name("alice", &pw), 0, "alice is found by name");
        ok(pw && pw->pw_uid == 1001 && strcmp(pw->pw_dir, "/home/alice") == 0,
           "with her uid and home");
        free(pw);
        pw = NULL;
        is_int(nss_user_by_uid(1002, &pw), 0, "uid 1002 is found");
        is_str(pw ? pw->pw_name : NULL, "bob", "and is bob");
        free(pw);
        is_int(nss_user_by_name("nosuchuser", &pw), -ENOENT, "a missing user is -ENOENT");
        is_int(nss_user_by_uid(4242, &pw), -ENOENT, "a missing uid is -ENOENT");

        is_int(nss_group_by_name("big", &gr), 0,
               "a group with 3000 members is found (ERANGE retried)");
        if (gr) {
                size_t members = 0;
                for (char **m = gr->gr_mem; *m; m++)
                        members++;
                is_int(members, BIG_GROUP_MEMBERS + 1, "with every member");
                free(gr);
                gr = NULL;
        }
        is_int(nss_group_by_gid(2001, &gr), 0, "and by gid");
        free(gr);
        is_int(nss_group_by_name("nosuchgroup", &gr), -ENOENT, "a missing group is -ENOENT");

        is_int(nss_user_groups("bob", 1002, &groups, &n), 0, "bob's groups are listed");
        for (size_t i = 0; i < n; i++) {
                in_big = in_big || groups[i] == 2001;
                in_small = in_small || groups[i] == 2000;
        }
        ok(n >= 2 && groups[0] == 1002 && in_big && !in_small,
           "primary group first, the big group in, the small one out");
        free(groups);
        return tap_done();
}
