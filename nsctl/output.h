/* SPDX-License-Identifier: GPL-2.0-only */
/* nsctl: shared helpers for tables (libsmartcols) and plain output. Private to nsctl. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <libsmartcols.h>

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

/* One column a table command can show. */
struct column_info {
        const char *name; /* as in -o and in the header */
        double whint;     /* libsmartcols width hint */
        int flags;        /* SCOLS_FL_* */
        int json_type;    /* SCOLS_JSON_* */
        const char *help; /* one line for --help */
};

#define COLUMNS_MAX 32

/* The columns of a table command: all that -o may name, and the ones shown without -o. */
struct column_set {
        const struct column_info *columns;
        size_t n_columns;
        const size_t *defaults;
        size_t n_defaults;
};

/* Parse a comma separated list of column names (case-insensitive) into indexes of infos.
 * -EINVAL with *ret_bad pointing at the unknown name inside list (not terminated: its length
 * is *ret_bad_len); -E2BIG when more than max names. */
int columns_parse(const char *list, const struct column_info *infos, size_t n_infos,
                  size_t *ret_ids, size_t max, size_t *ret_n, const char **ret_bad,
                  size_t *ret_bad_len);

/* Output flags shared by list and show. */
struct table_options {
        bool json;
        bool raw;
        bool noheadings;
};

/* A new table with the chosen columns (ids index infos); NULL on ENOMEM. A column with
 * SCOLS_FL_TREE carries the tree, except in raw output, which is always flat. In JSON, a
 * column of an array type (SCOLS_JSON_ARRAY_*) takes its cell's lines as the elements. */
struct libscols_table *table_new(const char *json_name, const struct column_info *infos,
                                 const size_t *ids, size_t n_ids, const struct table_options *opts);

/* Print tb to out. In JSON, "schema_version" comes first in the top object (libsmartcols
 * writes the rest). 0, or -errno of libsmartcols; a failed write is close_stdout()'s to see. */
int table_print(struct libscols_table *tb, const struct table_options *opts, FILE *out);

/* Print the help lines of every column ("  NAME  help"). */
void columns_help(FILE *out, const struct column_info *infos, size_t n_infos);

/* Put text, a malloc()ed string that the table takes over, into cell col of ln; NULL is an
 * empty cell (null in JSON). In JSON output invalid UTF-8 becomes U+FFFD (libsmartcols
 * would pass it on, and the JSON would be invalid). 0 or -ENOMEM (text freed). */
int table_line_set(struct libscols_line *ln, size_t col, char *text,
                   const struct table_options *opts);

/* One line of tb for each of the n rows (each row_size bytes from rows), its cells (ids, as
 * table_new() was given them) from cell(row, column, json): a malloc()ed string or NULL (an
 * empty cell). 0 or -ENOMEM. */
int table_add_rows(struct libscols_table *tb, const void *rows, size_t n, size_t row_size,
                   char *(*cell)(const void *row, size_t col, bool json), const size_t *ids,
                   size_t n_ids, const struct table_options *opts);

/* A table of the chosen columns (ids index infos), one line for each of the n rows (as
 * table_add_rows()), printed to out (as table_print()). 0 or -errno. */
int table_print_rows(const char *json_name, const struct column_info *infos, const void *rows,
                     size_t n, size_t row_size,
                     char *(*cell)(const void *row, size_t col, bool json), const size_t *ids,
                     size_t n_ids, const struct table_options *opts, FILE *out);

/* A cell of a number that may be unknown: v, or when not known "-" (in JSON an empty cell,
 * null). A malloc()ed string or NULL. */
char *cell_number(long long v, bool known, bool json);

/* CLOCK_REALTIME microseconds as local "YYYY-MM-DD HH:MM:SS"; "-" for 0. */
void format_timestamp(uint64_t usec, char *buf, size_t size);

/* A duration in microseconds as "3d 4h 5min 6s" (largest units, at most three). */
void format_duration(uint64_t usec, char *buf, size_t size);
