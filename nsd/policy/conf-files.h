/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conf-files.h: the files nsd's configuration is read from: nsd.conf, then its drop-ins
 * nsd.conf.d/ *.conf in lexical order (byte order of the names, as "ls" in the C locale).
 * One file per object is how configuration management writes; conf.c makes a key or an
 * object set in two files an error.
 *
 * Only trusted files count: each one (nsd.conf, every drop-in, and the drop-in directory
 * itself) must be owned by root, or by the user nsd runs as (a test's nsd), and writable by
 * nobody else (no group or world write bit). Anything else is an error naming the file,
 * never silently skipped: a configuration someone else could write is not the
 * administrator's.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>

#include "policy/setup-conf.h"

/* The most drop-ins, and the largest file, read. */
#define CONFIG_MAX_DROPINS 1024
#define CONFIG_MAX_FILE_SIZE (1u << 20)

/* One file's text, as the parser of nsd.conf (conf.h) takes it. */
typedef struct ConfigText {
        const char *text;
        size_t len;
        const char *filename;
} ConfigText;

typedef struct ConfigFiles {
        ConfigText *texts; /* n of them: path first (when it exists), then the drop-ins */
        size_t n;
        GPtrArray *strings; /* the file names and contents the texts point into */
} ConfigFiles;

/* "<path>.d" */
char *config_dropin_dir(const char *path);

/* Read path and its drop-ins. A missing path or drop-in directory is no error (a missing
 * path: *ret_missing = true). -errno with *ret_error ("FILE: what") otherwise. */
int config_files_read(const char *path, ConfigFiles **ret, bool *ret_missing, char **ret_error);
void config_files_free(ConfigFiles *f);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfigFiles, config_files_free)

/* A [Volume]'s KeyFile= (setup-conf.h), expanded: its bytes, copied into a new memfd sealed
 * against writing, growing, shrinking and further seals, as a TAKE hands a password over. Every
 * directory on the way is opened beneath the one before without following a symbolic link and
 * must be trusted as nsd's configuration is (root's, or the user's nsd runs as, writable by
 * nobody else); the file too, and closed to group and others, a regular file of 1 to max
 * bytes. The memfd's descriptor, or -errno with *ret_why ("KeyFile PATH: what"). */
int config_key_file_memfd(const char *path, size_t max, char **ret_why);

/* What nsd --check-config looks at beyond the syntax: the files the setup names, as they
 * are now. Each init script must be a regular file owned by root, executable and writable
 * by nobody else; each [BindReadOnly] Source= and each polydir or instance parent without
 * a specifier must be reachable without a symbolic link (an instance parent may be missing:
 * it is made), and an existing instance parent root's and closed to others; each [Share]
 * Path= a directory reachable without a symbolic link. Appends one
 * "FILE:LINE: what" (g_malloc()ed) to problems for each that is not so. To warnings, the
 * same way, what works but should not be so: a route's Path= (Propagation=per-user) that
 * anyone but root may write to (its owner, its group, others, an ACL entry), where another
 * user can make a member's directory first (nsd refuses that member's route then). A
 * [Volume]'s Source= of a block type and Where=, both without a specifier: an image of root's
 * writable by nobody else or a block device of root's, and a directory, each reachable
 * without a symbolic link. A KeyFile= without a specifier: as config_key_file_memfd() takes
 * it. */
void setup_conf_check_files(const SetupConf *s, GPtrArray *problems, GPtrArray *warnings);
