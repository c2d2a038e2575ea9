/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuse-hang: a FUSE file system whose daemon never answers a lookup, for
 * tests/vm/scenarios/nsd-fuse-hang.sh. Its root directory answers getattr (so the mount works and
 * `stat MOUNTPOINT` does); a lookup of any name inside is read and never answered, so the
 * process that asked hangs in the kernel until this daemon exits (SIGTERM: unmount, and
 * every pending request fails with ENOTCONN). Prints "mounted on MOUNTPOINT, pid PID" to
 * stderr once mounted, then "lookup 'NAME'" for each lookup.
 *
 *   fuse-hang MOUNTPOINT [MOUNT-OPTIONS]     (e.g. allow_other)
 */
#define FUSE_USE_VERSION 34
#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void hang_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        struct stat st;

        if (ino != FUSE_ROOT_ID) {
                fuse_reply_err(req, ENOENT);
                return;
        }
        memset(&st, 0, sizeof st);
        st.st_ino = FUSE_ROOT_ID;
        st.st_mode = S_IFDIR | 0755;
        st.st_nlink = 2;
        st.st_uid = getuid();
        st.st_gid = getgid();
        fuse_reply_attr(req, &st, 3600.0);
}

static void hang_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
        /* never answered: req stays pending until the daemon goes */
        fprintf(stderr, "lookup '%s'\n", name);
}

static const struct fuse_lowlevel_ops ops = {
        .getattr = hang_getattr,
        .lookup = hang_lookup,
};

int main(int argc, char *argv[]) {
        char opts[512];
        char *fake_argv[] = { argv[0], "-o", opts, NULL };
        struct fuse_args args = FUSE_ARGS_INIT(3, fake_argv);
        struct fuse_session *se;
        int r;

        if (argc < 2 || argc > 3) {
                fprintf(stderr, "usage: fuse-hang MOUNTPOINT [MOUNT-OPTIONS]\n");
                return 2;
        }
        snprintf(opts, sizeof opts, "fsname=fuse-hang,subtype=hang%s%s", argc > 2 ? "," : "",
                 argc > 2 ? argv[2] : "");
        se = fuse_session_new(&args, &ops, sizeof ops, NULL);
        if (!se)
                return 1;
        if (fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, argv[1]) != 0)
                return 1;
        fprintf(stderr, "mounted on %s, pid %d\n", argv[1], (int) getpid());
        r = fuse_session_loop(se);
        fuse_session_unmount(se);
        fuse_remove_signal_handlers(se);
        fuse_session_destroy(se);
        return r == 0 ? 0 : 1;
}
