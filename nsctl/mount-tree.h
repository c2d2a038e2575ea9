/* SPDX-License-Identifier: GPL-2.0-only */
/* nsctl: a namespace's mountinfo text as a findmnt-like table or tree. Private to nsctl. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "output.h"

enum {
        MOUNT_COL_TARGET,
        MOUNT_COL_SOURCE,
        MOUNT_COL_FSTYPE,
        MOUNT_COL_OPTIONS,
        MOUNT_COL_VFS_OPTIONS,
        MOUNT_COL_FS_OPTIONS,
        MOUNT_COL_FSROOT,
        MOUNT_COL_PROPAGATION,
        MOUNT_COL_ID,
        MOUNT_COL_PARENT,
        _MOUNT_COL_MAX,
};

extern const struct column_info mount_columns[_MOUNT_COL_MAX];
extern const struct column_set mount_column_set;

/*
 * Parse mountinfo text (len bytes, need not be NUL-terminated) with libmount and print it to
 * out: as a tree of mounts under their parents (like findmnt) when tree is true and the output
 * is not raw, else one line per mount in the text's order. Mounts whose parent is missing
 * from the text are shown at the top level. Returns 0, -EINVAL when a line is not mountinfo
 * (*ret_bad_line = its number, counted from 1, when ret_bad_line is not NULL), -ENOMEM.
 */
int mount_tree_print(const char *text, size_t len, const size_t *ids, size_t n_ids,
                     const struct table_options *opts, bool tree, FILE *out, int *ret_bad_line);
