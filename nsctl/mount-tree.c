/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include <libmount.h>

#include "mount-tree.h"
#include "nsctl-cleanup.h"

const struct column_info mount_columns[_MOUNT_COL_MAX] = {
        [MOUNT_COL_TARGET] = { "TARGET", 0.3, SCOLS_FL_TREE | SCOLS_FL_NOEXTREMES,
                               SCOLS_JSON_STRING, "mount point" },
        [MOUNT_COL_SOURCE] = { "SOURCE", 0.25, SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING,
                               "mounted device or source, [subdirectory] for a bind mount" },
        [MOUNT_COL_FSTYPE] = { "FSTYPE", 0.1, SCOLS_FL_TRUNC, SCOLS_JSON_STRING,
                               "filesystem type" },
        [MOUNT_COL_OPTIONS] = { "OPTIONS", 0.1, SCOLS_FL_TRUNC, SCOLS_JSON_STRING,
                                "all mount options" },
        [MOUNT_COL_VFS_OPTIONS] = { "VFS-OPTIONS", 0.2, SCOLS_FL_TRUNC, SCOLS_JSON_STRING,
                                    "VFS (per mount) options" },
        [MOUNT_COL_FS_OPTIONS] = { "FS-OPTIONS", 0.1, SCOLS_FL_TRUNC, SCOLS_JSON_STRING,
                                   "filesystem (superblock) options" },
        [MOUNT_COL_FSROOT] = { "FSROOT", 0.25, SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING,
                               "root of the mount inside its filesystem" },
        [MOUNT_COL_PROPAGATION] = { "PROPAGATION", 0.1, 0, SCOLS_JSON_STRING,
                                    "shared, slave, private, unbindable" },
        [MOUNT_COL_ID] = { "ID", 2, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER, "mount id" },
        [MOUNT_COL_PARENT] = { "PARENT", 2, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER, "parent mount id" },
};

static const size_t mount_columns_default[] = {
        MOUNT_COL_TARGET,
        MOUNT_COL_SOURCE,
        MOUNT_COL_FSTYPE,
        MOUNT_COL_OPTIONS,
};
const struct column_set mount_column_set = {
        .columns = mount_columns,
        .n_columns = _MOUNT_COL_MAX,
        .defaults = mount_columns_default,
        .n_defaults = ELEMENTSOF(mount_columns_default),
};

struct parse_state {
        int bad_line;
};

static int parser_error(struct libmnt_table *mt, const char *filename, int line) {
        struct parse_state *st = mnt_table_get_userdata(mt);

        if (st && st->bad_line == 0)
                st->bad_line = line;
        return -EINVAL; /* stop: a namespace's mount table is either right or useless */
}

static char *propagation_text(struct libmnt_fs *fs) {
        unsigned long fl = 0;
        char buf[64] = "";

        if (mnt_fs_get_propagation(fs, &fl) < 0)
                return NULL;
        if (fl & MS_SHARED)
                strcat(buf, "shared");
        if (fl & MS_SLAVE)
                strcat(buf, buf[0] ? ",slave" : "slave");
        if (fl & MS_UNBINDABLE)
                strcat(buf, buf[0] ? ",unbindable" : "unbindable");
        if (!buf[0])
                strcat(buf, "private");
        return strdup(buf);
}

/* the columns that are one of libmount's strings as it is */
static const char *(*const fs_string[_MOUNT_COL_MAX])(struct libmnt_fs *fs) = {
        [MOUNT_COL_TARGET] = mnt_fs_get_target,
        [MOUNT_COL_FSTYPE] = mnt_fs_get_fstype,
        [MOUNT_COL_OPTIONS] = mnt_fs_get_options,
        [MOUNT_COL_VFS_OPTIONS] = mnt_fs_get_vfs_options,
        [MOUNT_COL_FS_OPTIONS] = mnt_fs_get_fs_options,
        [MOUNT_COL_FSROOT] = mnt_fs_get_root,
};

static char *cell_text(struct libmnt_fs *fs, size_t col) {
        char *r = NULL;

        if (col < ELEMENTSOF(fs_string) && fs_string[col]) {
                const char *s = fs_string[col](fs);

                return s ? strdup(s) : NULL;
        }
        switch (col) {
        case MOUNT_COL_SOURCE: {
                const char *root = mnt_fs_get_root(fs);
                const char *src = mnt_fs_get_srcpath(fs) ?: mnt_fs_get_source(fs);

                if (src && root && strcmp(root, "/") != 0) {
                        if (asprintf(&r, "%s[%s]", src, root) < 0)
                                return NULL;
                        return r;
                }
                return src ? strdup(src) : NULL;
        }
        case MOUNT_COL_PROPAGATION:
                return propagation_text(fs);
        case MOUNT_COL_ID:
        case MOUNT_COL_PARENT:
                if (asprintf(&r, "%d",
                             col == MOUNT_COL_ID ? mnt_fs_get_id(fs) : mnt_fs_get_parent_id(fs)) <
                    0)
                        return NULL;
                return r;
        }
        return NULL;
}

static int add_line(struct libscols_table *tb, struct libscols_line *parent, struct libmnt_fs *fs,
                    const size_t *ids, size_t n_ids, const struct table_options *opts,
                    struct libscols_line **ret_line) {
        struct libscols_line *ln = scols_table_new_line(tb, parent);
        int r;

        if (!ln)
                return -ENOMEM;
        for (size_t i = 0; i < n_ids; i++) {
                r = table_line_set(ln, i, cell_text(fs, ids[i]), opts);
                if (r < 0)
                        return r;
        }
        /* userdata marks the mount as placed, so a broken table cannot make us loop */
        mnt_fs_set_userdata(fs, ln);
        *ret_line = ln;
        return 0;
}

static int add_subtree(struct libmnt_table *mt, struct libscols_table *tb,
                       struct libscols_line *parent, struct libmnt_fs *fs, const size_t *ids,
                       size_t n_ids, const struct table_options *opts) {
        _cleanup_mnt_iter_ struct libmnt_iter *itr = NULL;
        struct libscols_line *ln;
        struct libmnt_fs *child;
        int r;

        r = add_line(tb, parent, fs, ids, n_ids, opts, &ln);
        if (r < 0)
                return r;

        itr = mnt_new_iter(MNT_ITER_FORWARD);
        if (!itr)
                return -ENOMEM;
        while (mnt_table_next_child_fs(mt, itr, fs, &child) == 0) {
                if (mnt_fs_get_userdata(child))
                        continue;
                r = add_subtree(mt, tb, ln, child, ids, n_ids, opts);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int fill_table(struct libmnt_table *mt, struct libscols_table *tb, const size_t *ids,
                      size_t n_ids, const struct table_options *opts, bool tree) {
        _cleanup_mnt_iter_ struct libmnt_iter *itr = NULL;
        struct libmnt_fs *fs;
        int r;

        if (tree && mnt_table_get_root_fs(mt, &fs) == 0 && fs) {
                r = add_subtree(mt, tb, NULL, fs, ids, n_ids, opts);
                if (r < 0)
                        return r;
        }

        /* flat output, or what the tree from the root did not reach */
        itr = mnt_new_iter(MNT_ITER_FORWARD);
        if (!itr)
                return -ENOMEM;
        while (mnt_table_next_fs(mt, itr, &fs) == 0) {
                struct libscols_line *ln;

                if (mnt_fs_get_userdata(fs))
                        continue;
                if (tree)
                        r = add_subtree(mt, tb, NULL, fs, ids, n_ids, opts);
                else
                        r = add_line(tb, NULL, fs, ids, n_ids, opts, &ln);
                if (r < 0)
                        return r;
        }
        return 0;
}

int mount_tree_print(const char *text, size_t len, const size_t *ids, size_t n_ids,
                     const struct table_options *opts, bool tree, FILE *out, int *ret_bad_line) {
        struct parse_state st = { 0 };
        _cleanup_mnt_table_ struct libmnt_table *mt = NULL;
        _cleanup_scols_table_ struct libscols_table *tb = NULL;
        int r;

        if (!text || !ids || n_ids == 0 || !opts || !out)
                return -EINVAL;
        if (opts->raw)
                tree = false;

        mt = mnt_new_table();
        if (!mt)
                return -ENOMEM;
        mnt_table_set_userdata(mt, &st);
        mnt_table_set_parser_errcb(mt, parser_error);

        if (len > 0) {
                /* fmemopen() of a zero-length buffer fails; an empty table is fine. A memory
                 * stream has no descriptor, so O_CLOEXEC does not apply. */
                _cleanup_fclose_ FILE *f = fmemopen((void *) text, len, "r");

                if (!f)
                        return NEG_ERRNO();
                r = mnt_table_parse_stream(mt, f, "mountinfo");
                if (r < 0 || st.bad_line > 0) {
                        if (ret_bad_line)
                                *ret_bad_line = st.bad_line;
                        return -EINVAL;
                }
        }

        tb = table_new("filesystems", mount_columns, ids, n_ids, opts);
        if (!tb)
                return -ENOMEM;

        r = fill_table(mt, tb, ids, n_ids, opts, tree);
        if (r < 0)
                return r;
        /* 0 even when writing to out fails: that is for the caller to see (close_stdout) */
        return table_print(tb, opts, out);
}
