/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * volume-options.c: the volume types nsd mounts and their options, see volume-options.h.
 */
#include "volume-options.h"

#include <string.h>

static const char *const ext4_values[] = {
        "commit", "data",   "stripe", "max_batch_time", "min_batch_time", "inode_readahead_blks",
        "resuid", "resgid", NULL
};
static const char *const ext4_flags[] = { "discard",
                                          "nodiscard",
                                          "barrier",
                                          "nobarrier",
                                          "acl",
                                          "noacl",
                                          "user_xattr",
                                          "nouser_xattr",
                                          "delalloc",
                                          "nodelalloc",
                                          "auto_da_alloc",
                                          "noauto_da_alloc",
                                          "journal_checksum",
                                          "nojournal_checksum",
                                          "noload",
                                          "lazytime",
                                          "nolazytime",
                                          NULL };
static const char *const xfs_values[] = { "logbufs", "logbsize", "allocsize",
                                          "swidth",  "sunit",    NULL };
static const char *const xfs_flags[] = { "discard",    "nodiscard", "inode32",    "inode64",
                                         "largeio",    "nolargeio", "noquota",    "wsync",
                                         "norecovery", "lazytime",  "nolazytime", NULL };
static const char *const btrfs_values[] = { "subvol",         "subvolid", "compress",
                                            "compress-force", "commit",   NULL };
static const char *const btrfs_flags[] = { "discard",    "nodiscard",    "ssd",      "nossd",
                                           "autodefrag", "noautodefrag", "datacow",  "nodatacow",
                                           "datasum",    "nodatasum",    "lazytime", "nolazytime",
                                           NULL };
static const char *const fat_values[] = { "uid",         "gid",      "umask",     "dmask",
                                          "fmask",       "codepage", "iocharset", "shortname",
                                          "time_offset", NULL };
static const char *const fat_flags[] = { "utf8", "flush", "quiet", "showexec", "discard", NULL };
static const char *const exfat_values[] = { "uid",   "gid",       "umask",       "dmask",
                                            "fmask", "iocharset", "time_offset", NULL };
static const char *const exfat_flags[] = { "discard", "keep_last_dots", "sys_tz", NULL };
static const char *const cifs_values[] = { "username",  "domain",  "vers",      "sec",
                                           "uid",       "gid",     "file_mode", "dir_mode",
                                           "cache",     "actimeo", "port",      "ip",
                                           "iocharset", "rsize",   "wsize",     "echo_interval",
                                           NULL };
static const char *const cifs_flags[] = { "seal", "noserverino", "serverino", "nosharesock", "hard",
                                          "soft", "nounix",      "noperm",    "guest",       NULL };
static const char *const nfs_values[] = { "vers",     "nfsvers",   "proto",      "port",
                                          "timeo",    "retrans",   "rsize",      "wsize",
                                          "sec",      "addr",      "clientaddr", "actimeo",
                                          "nconnect", "mountport", "mountproto", NULL };
static const char *const nfs_flags[] = { "hard",     "soft",       "lock",       "nolock",
                                         "ac",       "noac",       "sharecache", "nosharecache",
                                         "resvport", "noresvport", NULL };

/* sshfs(1)'s own options (ssh's are not passed: a volume names no file and no command) */
static const char *const sshfs_values[] = {
        "port",      "ServerAliveInterval", "ServerAliveCountMax", "idmap",
        "max_conns", "dir_cache",           "compression",         NULL
};
static const char *const sshfs_flags[] = { "reconnect",          "follow_symlinks",
                                           "transform_symlinks", "delay_connect",
                                           "kernel_cache",       "auto_cache",
                                           "disable_hardlink",   NULL };

static const char *const no_options[] = { NULL };

const char *const volume_password_args[] = { "-passfile", "/dev/stdin", NULL };

const VolumeTypeOptions volume_type_options[] = {
        { "ext4", false, ext4_values, ext4_flags },
        { "xfs", false, xfs_values, xfs_flags },
        { "btrfs", false, btrfs_values, btrfs_flags },
        { "vfat", false, fat_values, fat_flags },
        { "exfat", false, exfat_values, exfat_flags },
        { "cifs", true, cifs_values, cifs_flags },
        { "nfs", true, nfs_values, nfs_flags },
        { "nfs4", true, nfs_values, nfs_flags },
        { "sshfs", true, sshfs_values, sshfs_flags, true, "/usr/bin/sshfs", "-f", "-o", false,
          false },
        /* gocryptfs(1): -ko passes mount options to the kernel; none of its own options */
        { "gocryptfs", false, no_options, no_options, true, "/usr/bin/gocryptfs", "-fg", "-ko",
          true, true },
};

const size_t n_volume_type_options = sizeof volume_type_options / sizeof volume_type_options[0];

/* Types issue 25 plans, which this version names as not supported yet. */
const char *const volume_types_later_fuse[] = { "encfs",    "cryfs", "rclone",  "bindfs",
                                                "securefs", "fuse",  "fuseblk", NULL };
const char *const volume_types_later_luks[] = { "luks",  "luks1",    "luks2", "crypto_LUKS",
                                                "crypt", "dm-crypt", NULL };

const VolumeTypeOptions *volume_type_options_find(const char *name) {
        for (size_t i = 0; i < n_volume_type_options; i++)
                if (strcmp(volume_type_options[i].name, name) == 0)
                        return &volume_type_options[i];
        return NULL;
}
