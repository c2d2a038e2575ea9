/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * volume-options.h: the volume types nsd mounts ([Volume NAME] Type= of nsd.conf(5)) and, for
 * each, the file system's own options Options= may hold besides the mount attributes: options
 * that only tune the file system. Not there, on purpose: anything naming another device or
 * file (btrfs device=, xfs logdev=, rtdev=, ext4 journal_path=, cifs credentials=),
 * errors=panic (a crafted or broken image would stop the host), and whatever the kernel type
 * does not parse itself (helpers' options). Plain C, no GLib: nsd checks a volume against
 * it, and nsctl import-pam-mount writes only what nsd takes. Private.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct VolumeTypeOptions {
        const char *name;
        bool network; /* Source= what the kernel type takes, not a block device or image */
        const char *const *value_options; /* key=VALUE; NULL-terminated */
        const char *const *flag_options;  /* no value; NULL-terminated */
        /* A FUSE type: not mounted by nsd but by the user's own service manager, inside the
         * user's namespace, as the user (nsctl run-volume runs program in the foreground:
         * program FOREGROUND OPTIONS-ARG OPTIONS [-passfile /dev/stdin] -- SOURCE WHERE).
         * Source= is what program takes: a local path when local_source, else
         * [user@]host:path. */
        bool fuse;
        const char *program;     /* absolute */
        const char *foreground;  /* "-f" */
        const char *options_arg; /* "-o": the mount options (nosuid,nodev,...) follow */
        bool takes_password;     /* the login password on stdin (-passfile /dev/stdin) */
        bool local_source;
} VolumeTypeOptions;

extern const VolumeTypeOptions volume_type_options[];
extern const size_t n_volume_type_options;

/* The arguments before "--" that make a password-taking program read stdin. */
extern const char *const volume_password_args[];

/* Types issue 25 plans, which this version names as not supported yet (NULL-terminated). */
extern const char *const volume_types_later_fuse[];
extern const char *const volume_types_later_luks[];

/* The row of type name, or NULL. */
const VolumeTypeOptions *volume_type_options_find(const char *name);
