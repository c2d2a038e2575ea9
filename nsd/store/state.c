/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* state.c: nsd's state files, see state.h. */
#include "store/state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "cleanup.h"
#include "io-util.h"
#include "nsd-protocol.h"

#define STATE_FILE_MAX (256u << 10)
#define TMP_PREFIX ".tmp."

struct StateDir {
        char *path;
        int fd;      /* O_DIRECTORY */
        char *made;  /* <run_dir>/made */
        int made_fd; /* O_DIRECTORY, -1: no record */
};

/* <run_dir>/made, root's, mode 0755 (pam_nsjoin trusts it only so); -1 when it cannot be
 * had (logged: root's sessions then stay where they are). */
static int made_open(const char *path) {
        struct stat st;
        int fd;

        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                return log_warning_errno(errno,
                                         "Failed to create '%s', pam_nsjoin will not know the "
                                         "namespaces nsd made: %m",
                                         path),
                       -1;
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return log_warning_errno(errno,
                                         "Failed to open '%s', pam_nsjoin will not know the "
                                         "namespaces nsd made: %m",
                                         path),
                       -1;
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
            ((st.st_mode & 07777) != 0755 && fchmod(fd, 0755) < 0)) {
                close(fd);
                return log_warning_errno(EPERM,
                                         "'%s' is not nsd's own folder (owner, mode 0755), not "
                                         "using it",
                                         path),
                       -1;
        }
        return fd;
}

int state_open(const char *run_dir, StateDir **ret) {
        g_autofree char *path = g_build_filename(run_dir, "state", NULL);
        struct stat st;
        StateDir *sd;
        int fd;

        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return log_warning_errno(errno, "Failed to create '%s': %m", path);
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return log_warning_errno(errno, "Failed to open '%s': %m", path);
        /* someone else's folder, or one others may write to, is not ours to trust */
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
            ((st.st_mode & 0077) && fchmod(fd, 0700) < 0)) {
                close(fd);
                return log_warning_errno(EPERM,
                                         "'%s' is not nsd's own folder (owner, mode 0700), not "
                                         "using it",
                                         path);
        }
        sd = g_new0(StateDir, 1);
        sd->path = g_steal_pointer(&path);
        sd->fd = fd;
        sd->made = g_build_filename(run_dir, NSD_MADE_DIR_NAME, NULL);
        sd->made_fd = made_open(sd->made);
        *ret = sd;
        return 0;
}

void state_free(StateDir *sd) {
        if (!sd)
                return;
        close(sd->fd);
        if (sd->made_fd >= 0)
                close(sd->made_fd);
        g_free(sd->made);
        g_free(sd->path);
        g_free(sd);
}

const char *state_path(const StateDir *sd) {
        return sd ? sd->path : "";
}

int state_write(StateDir *sd, const char *name, GKeyFile *kf) {
        g_autofree char *data = NULL, *tmp = NULL;
        _cleanup_close_ int fd = -1;
        gsize len = 0;
        ssize_t n;
        int r;

        if (!sd)
                return 0;
        data = g_key_file_to_data(kf, &len, NULL);
        tmp = g_strconcat(TMP_PREFIX, name, NULL);
        fd = openat(sd->fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return log_warning_errno(errno, "Failed to write '%s/%s': %m", sd->path, name);
        n = write(fd, data, len);
        if (n != (ssize_t) len) {
                r = n < 0 ? -errno : -EIO;
                (void) unlinkat(sd->fd, tmp, 0);
                return log_warning_errno(r, "Failed to write '%s/%s': %m", sd->path, name);
        }
        if (renameat(sd->fd, tmp, sd->fd, name) < 0) {
                r = -errno;
                (void) unlinkat(sd->fd, tmp, 0);
                return log_warning_errno(r, "Failed to write '%s/%s': %m", sd->path, name);
        }
        return 0;
}

int state_read(StateDir *sd, const char *name, GKeyFile **ret) {
        g_autoptr(GKeyFile) kf = NULL;
        g_autoptr(GError) error = NULL;
        _cleanup_close_ int fd = -1;
        char *buf;
        size_t len;
        ssize_t n;
        struct stat st;

        if (!sd)
                return -ENOENT;
        fd = openat(sd->fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ENOENT
                                       : log_warning_errno(errno, "Failed to read '%s/%s': %m",
                                                           sd->path, name);
        if (fstat(fd, &st) < 0)
                return log_warning_errno(errno, "Failed to read '%s/%s': %m", sd->path, name);
        if (!S_ISREG(st.st_mode) || st.st_size > STATE_FILE_MAX)
                return log_warning_errno(EBADMSG,
                                         "'%s/%s' is not a state file nsd wrote, "
                                         "ignoring it",
                                         sd->path, name);
        buf = g_malloc((size_t) st.st_size + 1);
        n = read_full(fd, buf, (size_t) st.st_size);
        if (n < (ssize_t) st.st_size) { /* an error, or the end before its size: shrunk */
                int r = n < 0 ? (int) n : -EIO;
                g_free(buf);
                return log_warning_errno(r, "Failed to read '%s/%s': %m", sd->path, name);
        }
        len = (size_t) n;
        buf[len] = '\0';
        kf = g_key_file_new();
        if (!g_key_file_load_from_data(kf, buf, len, G_KEY_FILE_NONE, &error)) {
                g_free(buf);
                return log_warning_errno(EBADMSG, "'%s/%s' does not parse (%s), ignoring it",
                                         sd->path, name, error->message);
        }
        g_free(buf);
        *ret = g_steal_pointer(&kf);
        return 0;
}

void state_remove(StateDir *sd, const char *name) {
        if (!sd)
                return;
        if (unlinkat(sd->fd, name, 0) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Failed to remove '%s/%s', ignoring: %m", sd->path, name);
}

char **state_list(StateDir *sd, const char *prefix) {
        GPtrArray *a = g_ptr_array_new();
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd;

        if (sd && (fd = openat(sd->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
                d = fdopendir(fd);
                if (!d)
                        close(fd);
        }
        while (d && (de = readdir(d))) {
                if (g_str_has_prefix(de->d_name, TMP_PREFIX))
                        (void) unlinkat(sd->fd, de->d_name, 0); /* an interrupted write */
                else if (g_str_has_prefix(de->d_name, prefix))
                        g_ptr_array_add(a, g_strdup(de->d_name));
        }
        g_ptr_array_add(a, NULL);
        return (char **) g_ptr_array_free(a, FALSE);
}

/* ---- the record of the namespaces nsd made ----------------------------------------------- */

int state_made_names(uint64_t ns_inode, int root_fd, char *ret_ns, char *ret_root) {
        struct statx stx;

        snprintf(ret_ns, NSD_MADE_NAME_MAX, NSD_MADE_NS_FMT, ns_inode);
        ret_root[0] = 0;
        if (root_fd < 0)
                return 0;
        if (statx(root_fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) < 0)
                return log_warning_errno(errno,
                                         "Failed to read the mount id of the root of mnt:[%" PRIu64
                                         "], a session of root chrooted into it will stay there: "
                                         "%m",
                                         ns_inode);
        if (stx.stx_mask & STATX_MNT_ID) /* else before Linux 5.8 */
                snprintf(ret_root, NSD_MADE_NAME_MAX, NSD_MADE_ROOT_FMT, (uint64_t) stx.stx_mnt_id);
        return 0;
}

void state_made_add(StateDir *sd, uint64_t ns_inode, int root_fd) {
        char names[2][NSD_MADE_NAME_MAX];

        if (!sd || sd->made_fd < 0)
                return;
        (void) state_made_names(ns_inode, root_fd, names[0], names[1]);
        for (size_t i = 0; i < 2; i++) {
                int fd;

                if (!names[i][0])
                        continue;
                fd = openat(sd->made_fd, names[i], O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
                            0644);
                if (fd < 0) {
                        log_warning_errno(errno,
                                          "Failed to write '%s/%s', a session of root opened in "
                                          "mnt:[%" PRIu64 "] will stay there: %m",
                                          sd->made, names[i], ns_inode);
                        continue;
                }
                close(fd);
        }
}

void state_made_remove(StateDir *sd, uint64_t ns_inode, int root_fd) {
        char names[2][NSD_MADE_NAME_MAX];

        if (!sd || sd->made_fd < 0)
                return;
        (void) state_made_names(ns_inode, root_fd, names[0], names[1]);
        for (size_t i = 0; i < 2; i++)
                if (names[i][0] && unlinkat(sd->made_fd, names[i], 0) < 0 && errno != ENOENT)
                        log_warning_errno(errno, "Failed to remove '%s/%s', ignoring: %m", sd->made,
                                          names[i]);
}

void state_made_prune(StateDir *sd, GHashTable *keep) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd;

        if (!sd || sd->made_fd < 0)
                return;
        fd = openat(sd->made_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || !(d = fdopendir(fd))) {
                if (fd >= 0)
                        close(fd);
                return;
        }
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.' || g_hash_table_contains(keep, de->d_name))
                        continue;
                log_debug("Removing '%s/%s': nsd keeps no such namespace any more", sd->made,
                          de->d_name);
                if (unlinkat(sd->made_fd, de->d_name, 0) < 0 && errno != ENOENT)
                        log_warning_errno(errno, "Failed to remove '%s/%s', ignoring: %m", sd->made,
                                          de->d_name);
        }
}
