/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "json.h"
#include "nsctl-cleanup.h"
#include "output.h"

int columns_parse(const char *list, const struct column_info *infos, size_t n_infos,
                  size_t *ret_ids, size_t max, size_t *ret_n, const char **ret_bad,
                  size_t *ret_bad_len) {
        size_t ids[COLUMNS_MAX];
        size_t n = 0;
        const char *p = list;

        if (!list || !infos || !ret_ids || !ret_n || max > COLUMNS_MAX)
                return -EINVAL;

        for (;;) {
                size_t len = strcspn(p, ",");
                size_t i;

                if (len > 0) {
                        for (i = 0; i < n_infos; i++)
                                if (strlen(infos[i].name) == len &&
                                    strncasecmp(infos[i].name, p, len) == 0)
                                        break;
                        if (i == n_infos) {
                                if (ret_bad)
                                        *ret_bad = p;
                                if (ret_bad_len)
                                        *ret_bad_len = len;
                                return -EINVAL;
                        }
                        if (n >= max)
                                return -E2BIG;
                        ids[n++] = i;
                }
                if (p[len] == '\0')
                        break;
                p += len + 1;
        }
        if (n == 0) {
                if (ret_bad)
                        *ret_bad = list;
                if (ret_bad_len)
                        *ret_bad_len = 0;
                return -EINVAL;
        }

        memcpy(ret_ids, ids, n * sizeof(ids[0]));
        *ret_n = n;
        return 0;
}

struct libscols_table *table_new(const char *json_name, const struct column_info *infos,
                                 const size_t *ids, size_t n_ids,
                                 const struct table_options *opts) {
        _cleanup_scols_table_ struct libscols_table *tb = scols_new_table();

        if (!tb)
                return NULL;

        scols_table_set_name(tb, json_name);
        scols_table_enable_json(tb, opts->json);
        scols_table_enable_raw(tb, opts->raw);
        scols_table_enable_noheadings(tb, opts->noheadings);

        for (size_t i = 0; i < n_ids; i++) {
                const struct column_info *ci = &infos[ids[i]];
                int flags = ci->flags;
                struct libscols_column *cl;

                /* a tree only makes sense in the human and JSON forms */
                if (opts->raw)
                        flags &= ~SCOLS_FL_TREE;
                cl = scols_table_new_column(tb, ci->name, ci->whint, flags);
                if (!cl)
                        return NULL;
                if (!opts->json)
                        continue;
                scols_column_set_json_type(cl, ci->json_type);
                /* an array's elements: the cell's lines */
                if (ci->json_type == SCOLS_JSON_ARRAY_STRING ||
                    ci->json_type == SCOLS_JSON_ARRAY_NUMBER)
                        (void) scols_column_set_wrapfunc(cl, scols_wrapnl_chunksize,
                                                         scols_wrapnl_nextchunk, NULL);
        }
        return TAKE_PTR(tb);
}

int table_print(struct libscols_table *tb, const struct table_options *opts, FILE *out) {
        _cleanup_free_ char *data = NULL;
        int r;

        if (!opts->json) {
                scols_table_set_stream(tb, out);
                r = scols_print_table(tb);
                return r < 0 ? r : 0;
        }
        /* libsmartcols has no member of its own to add: its JSON is "{\n" and the table's
         * array, in which the version goes first, indented as libsmartcols indents */
        r = scols_print_table_to_string(tb, &data);
        if (r < 0)
                return r;
        if (strncmp(data, "{\n", 2) != 0)
                return -EBADMSG; /* not the layout this code knows: no JSON without its version */
        fprintf(out, "{\n   \"schema_version\": %d,\n%s", NSCTL_JSON_SCHEMA_VERSION, data + 2);
        return 0;
}

void columns_help(FILE *out, const struct column_info *infos, size_t n_infos) {
        for (size_t i = 0; i < n_infos; i++)
                fprintf(out, " %12s  %s\n", infos[i].name, infos[i].help);
}

int table_line_set(struct libscols_line *ln, size_t col, char *text,
                   const struct table_options *opts) {
        if (!text)
                return 0; /* an empty cell, null in JSON */
        if (opts->json) {
                /* libsmartcols would pass invalid UTF-8 on, and the JSON with it */
                char *valid = utf8_escape_invalid(text);

                free(text);
                if (!valid)
                        return -ENOMEM;
                text = valid;
        }
        if (scols_line_refer_data(ln, col, text) < 0) {
                free(text);
                return -ENOMEM;
        }
        return 0;
}

int table_add_rows(struct libscols_table *tb, const void *rows, size_t n, size_t row_size,
                   char *(*cell)(const void *row, size_t col, bool json), const size_t *ids,
                   size_t n_ids, const struct table_options *opts) {
        for (size_t i = 0; i < n; i++) {
                const void *row = (const char *) rows + i * row_size;
                struct libscols_line *ln = scols_table_new_line(tb, NULL);
                int r;

                if (!ln)
                        return -ENOMEM;
                for (size_t k = 0; k < n_ids; k++) {
                        r = table_line_set(ln, k, cell(row, ids[k], opts->json), opts);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int table_print_rows(const char *json_name, const struct column_info *infos, const void *rows,
                     size_t n, size_t row_size,
                     char *(*cell)(const void *row, size_t col, bool json), const size_t *ids,
                     size_t n_ids, const struct table_options *opts, FILE *out) {
        _cleanup_scols_table_ struct libscols_table *tb = table_new(json_name, infos, ids, n_ids,
                                                                    opts);
        int r;

        if (!tb)
                return -ENOMEM;
        r = table_add_rows(tb, rows, n, row_size, cell, ids, n_ids, opts);
        if (r < 0)
                return r;
        return table_print(tb, opts, out);
}

char *cell_number(long long v, bool known, bool json) {
        char buf[32];

        if (!known)
                return json ? NULL : strdup("-");
        snprintf(buf, sizeof(buf), "%lld", v);
        return strdup(buf);
}

void format_timestamp(uint64_t usec, char *buf, size_t size) {
        time_t t = (time_t) (usec / 1000000u);
        struct tm tm;

        if (usec == 0 || !localtime_r(&t, &tm) ||
            strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm) == 0)
                snprintf(buf, size, "-");
}

void format_duration(uint64_t usec, char *buf, size_t size) {
        static const struct {
                const char *suffix;
                uint64_t usec;
        } units[] = {
                { "d", 86400ull * 1000000 },
                { "h", 3600ull * 1000000 },
                { "min", 60ull * 1000000 },
                { "s", 1000000ull },
        };
        size_t off = 0;
        int shown = 0;

        if (size == 0)
                return;
        buf[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(units) && shown < 3; i++) {
                uint64_t n = usec / units[i].usec;
                int w;

                if (n == 0 && !(shown > 0))
                        continue;
                usec -= n * units[i].usec;
                w = snprintf(buf + off, size - off, "%s%llu%s", shown ? " " : "",
                             (unsigned long long) n, units[i].suffix);
                if (w < 0 || (size_t) w >= size - off)
                        return;
                off += (size_t) w;
                shown++;
        }
        if (shown == 0)
                snprintf(buf, size, "0s");
}
