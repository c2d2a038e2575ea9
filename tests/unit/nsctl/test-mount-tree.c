/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * test-nsctl-mount-tree: nsctl's output pieces, in process, on fixed input: mountinfo text
 * as a findmnt-like tree, list, raw table and JSON (libmount + libsmartcols); the column
 * list of -o; durations; the JSON writer of status and its UTF-8 repair.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "mount-tree.h"
#include "tap.h"

static const char mountinfo[] =
        "25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
        "26 25 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
        "27 25 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw\n"
        "28 27 0:24 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:3 - cgroup2 cgroup2 "
        "rw\n"
        "29 25 8:2 / /home rw,relatime master:4 - ext4 /dev/sda2 rw\n"
        "30 25 8:1 /srv/data /data rw,relatime - ext4 /dev/sda1 rw\n"
        "31 29 0:50 / /home/alice/mnt rw,nosuid,nodev,relatime - fuse.sshfs alice@host:/ "
        "rw,user_id=1000,group_id=1000\n"
        "32 25 0:51 / /mnt/with\\040space rw,relatime unbindable - tmpfs tmpfs rw,size=1024k\n"
        /* parent 99 is not in the table: must still be shown, at the top level */
        "40 99 0:60 / /orphan rw,relatime - tmpfs none rw\n";

/* run mount_tree_print into a string; returns its result, *ret_out malloc()ed */
static int render(const char *text, const size_t *ids, size_t n_ids, struct table_options o,
                  int tree, char **ret_out, int *ret_bad_line) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        int r;

        if (!f)
                return -errno;
        r = mount_tree_print(text, strlen(text), ids, n_ids, &o, tree, f, ret_bad_line);
        fclose(f);
        *ret_out = buf;
        return r;
}

/* the n-th line (0-based) of s, in a static buffer */
static const char *line(const char *s, int n) {
        static char buf[512];
        const char *p = s;

        for (int i = 0; i < n && p; i++) {
                p = strchr(p, '\n');
                if (p)
                        p++;
        }
        if (!p || !*p)
                return "";
        snprintf(buf, sizeof(buf), "%.*s", (int) strcspn(p, "\n"), p);
        return buf;
}

static int count_lines(const char *s) {
        int n = 0;

        for (; *s; s++)
                n += *s == '\n';
        return n;
}

static int starts_with(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void test_json_writer(void) {
        struct json_writer w;
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f) {
                tap_skip("open_memstream: %s", strerror(errno));
                return;
        }
        json_open(&w, f);
        json_object_open(&w, "status");
        json_string(&w, "s", "a\"b\\c\n\x01\xff");
        json_string(&w, "null", NULL);
        json_object_open(&w, "o");
        json_bool(&w, "t", true);
        json_bool(&w, "f", false);
        json_object_close(&w);
        json_object_open(&w, "empty");
        json_object_close(&w);
        json_uint(&w, "big", UINT64_MAX);
        json_object_close(&w);
        json_close(&w);
        fclose(f);
        is_str(buf,
               "{\n"
               "   \"status\": {\n"
               "      \"s\": \"a\\\"b\\\\c\\n\\u0001\xef\xbf\xbd\",\n"
               "      \"null\": null,\n"
               "      \"o\": {\n"
               "         \"t\": true,\n"
               "         \"f\": false\n"
               "      },\n"
               "      \"empty\": {\n"
               "      },\n"
               "      \"big\": 18446744073709551615\n"
               "   }\n"
               "}\n",
               "JSON writer: libsmartcols' layout, escapes, U+FFFD, nesting, null, bool, u64");
        free(buf);
}

static void test_utf8(void) {
        static const struct {
                const char *in, *out, *what;
        } cases[] = {
                { "plain", "plain", "ASCII unchanged" },
                { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                  "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                  "two, three and four byte sequences unchanged" },
                { "a\xff", "a\xef\xbf\xbd", "0xff replaced" },
                { "\x80x", "\xef\xbf\xbdx", "a stray continuation byte replaced" },
                { "\xc3", "\xef\xbf\xbd", "a sequence cut short at the end" },
                { "\xe2\x82x", "\xef\xbf\xbd\xef\xbf\xbdx",
                  "a sequence cut short before ASCII: each byte" },
                { "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd", "an overlong '/' refused" },
                { "\xe0\x80\xaf", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
                  "a three byte overlong refused" },
                { "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", "a surrogate refused" },
                { "\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
                  "beyond U+10FFFF refused" },
                { "", "", "empty" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *got = utf8_escape_invalid(cases[i].in);

                is_str(got, cases[i].out, "utf8_escape_invalid: %s", cases[i].what);
                free(got);
        }
}

int main(void) {
        const size_t all[] = { MOUNT_COL_TARGET, MOUNT_COL_SOURCE, MOUNT_COL_FSTYPE,
                               MOUNT_COL_OPTIONS };
        const size_t prop[] = { MOUNT_COL_ID, MOUNT_COL_PROPAGATION, MOUNT_COL_FSROOT };
        char *out = NULL;
        int bad = 0, r;

        /* tree: ASCII art in the C locale; children under their parents in id order */
        r = render(mountinfo, all, 4, (struct table_options) {}, 1, &out, &bad);
        ok(r == 0, "tree output succeeds (r=%d)", r);
        ok(count_lines(out) == 10, "tree: header + 9 mounts (%d lines)", count_lines(out));
        ok(starts_with(line(out, 0), "TARGET"), "tree: header first: '%s'", line(out, 0));
        ok(starts_with(line(out, 1), "/ "), "tree: root first: '%s'", line(out, 1));
        ok(starts_with(line(out, 2), "|-/proc "), "tree: /proc under /: '%s'", line(out, 2));
        ok(starts_with(line(out, 3), "|-/sys "), "tree: /sys under /: '%s'", line(out, 3));
        ok(starts_with(line(out, 4), "| `-/sys/fs/cgroup "), "tree: cgroup under /sys: '%s'",
           line(out, 4));
        ok(starts_with(line(out, 5), "|-/home "), "tree: /home: '%s'", line(out, 5));
        ok(starts_with(line(out, 6), "| `-/home/alice/mnt "), "tree: FUSE mount under /home: '%s'",
           line(out, 6));
        ok(strstr(line(out, 6), "alice@host:/") && strstr(line(out, 6), "fuse.sshfs") &&
                   strstr(line(out, 6), "user_id=1000"),
           "tree: FUSE source, type and options shown");
        ok(starts_with(line(out, 7), "|-/data ") && strstr(line(out, 7), "/dev/sda1[/srv/data]"),
           "tree: bind mount shows source[root]: '%s'", line(out, 7));
        ok(starts_with(line(out, 8), "`-/mnt/with space "), "tree: \\040 decoded, last child: '%s'",
           line(out, 8));
        ok(starts_with(line(out, 9), "/orphan "),
           "tree: mount with unknown parent at top level: '%s'", line(out, 9));
        free(out);

        /* list: table order, no tree art; raw escapes the space */
        r = render(mountinfo, all, 4, (struct table_options) { .raw = 1, .noheadings = 1 }, 1, &out,
                   &bad);
        ok(r == 0, "raw output succeeds");
        ok(count_lines(out) == 9, "raw: 9 lines without header (%d)", count_lines(out));
        ok(strcmp(line(out, 0), "/ /dev/sda1 ext4 rw,relatime,errors=remount-ro") == 0,
           "raw: root line exact: '%s'", line(out, 0));
        ok(strcmp(line(out, 3), "/sys/fs/cgroup cgroup2 cgroup2 rw,nosuid,nodev,noexec,relatime") ==
                   0,
           "raw: flat, table order: '%s'", line(out, 3));
        ok(starts_with(line(out, 7), "/mnt/with\\x20space "), "raw: space escaped: '%s'",
           line(out, 7));
        free(out);

        r = render(mountinfo, all, 4, (struct table_options) {}, 0, &out, &bad);
        ok(r == 0 && starts_with(line(out, 2), "/proc ") &&
                   starts_with(line(out, 4), "/sys/fs/cgroup "),
           "list (no tree): flat in table order: '%s'", line(out, 4));
        free(out);

        /* JSON tree: nested children, lowercase keys */
        r = render(mountinfo, all, 4, (struct table_options) { .json = 1 }, 1, &out, &bad);
        ok(r == 0 && strstr(out, "\"filesystems\": [") && strstr(out, "\"children\": [") &&
                   strstr(out, "\"target\": \"/mnt/with space\""),
           "json: tree with children and decoded target");
        free(out);

        /* JSON of a mount point that is not UTF-8: U+FFFD, never the raw byte (invalid JSON) */
        r = render("25 1 8:1 / / rw - ext4 /dev/sda1 rw\n26 25 0:50 / /m\xff rw - tmpfs t\xfe rw\n",
                   all, 4, (struct table_options) { .json = 1 }, 1, &out, &bad);
        ok(r == 0 && strstr(out, "\"target\": \"/m\xef\xbf\xbd\"") &&
                   strstr(out, "\"source\": \"t\xef\xbf\xbd\"") && !strchr(out, '\xff') &&
                   !strchr(out, '\xfe'),
           "json: bytes that are not UTF-8 become U+FFFD");
        free(out);
        r = render("25 1 8:1 / / rw - ext4 /dev/sda1 rw\n26 25 0:50 / /m\xff rw - tmpfs t\xfe rw\n",
                   all, 4, (struct table_options) { .raw = 1, .noheadings = 1 }, 1, &out, &bad);
        ok(r == 0 && strstr(out, "/m\\xff t\\xfe tmpfs"),
           "raw: the same bytes hex-escaped by libsmartcols: '%s'", line(out, 1));
        free(out);

        /* other columns: ID as JSON number, propagation, fs root */
        r = render(mountinfo, prop, 3, (struct table_options) { .json = 1 }, 0, &out, &bad);
        ok(r == 0 && strstr(out, "\"id\": 25,") && strstr(out, "\"propagation\": \"shared\"") &&
                   strstr(out, "\"propagation\": \"slave\"") &&
                   strstr(out, "\"propagation\": \"unbindable\"") &&
                   strstr(out, "\"propagation\": \"private\"") &&
                   strstr(out, "\"fsroot\": \"/srv/data\""),
           "json: ID number, PROPAGATION and FSROOT");
        free(out);

        /* empty text: nothing (libsmartcols prints no header for no lines), JSON an empty array */
        r = render("", all, 4, (struct table_options) {}, 1, &out, &bad);
        ok(r == 0 && out[0] == '\0', "empty table: no output");
        free(out);
        r = render("", all, 4, (struct table_options) { .json = 1 }, 1, &out, &bad);
        ok(r == 0 && strstr(out, "\"filesystems\": [") && !strstr(out, "target"),
           "empty table: JSON empty array");
        free(out);

        /* garbage: -EINVAL and the line number */
        bad = 0;
        r = render("25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\nthis is not mountinfo\n",
                   all, 4, (struct table_options) {}, 1, &out, &bad);
        ok(r == -EINVAL && bad == 2, "bad line: -EINVAL at line 2 (r=%d line=%d)", r, bad);
        free(out);

        /* arguments */
        ok(mount_tree_print(NULL, 0, all, 4, &(struct table_options) {}, 1, stdout, NULL) ==
                   -EINVAL,
           "NULL text: -EINVAL");
        ok(mount_tree_print("", 0, all, 0, &(struct table_options) {}, 1, stdout, NULL) == -EINVAL,
           "no columns: -EINVAL");

        /* columns_parse */
        {
                size_t ids[COLUMNS_MAX], n = 0, bad_len = 0;
                const char *badp = NULL;

                r = columns_parse("target,Source,ID", mount_columns, _MOUNT_COL_MAX, ids,
                                  COLUMNS_MAX, &n, &badp, &bad_len);
                ok(r == 0 && n == 3 && ids[0] == MOUNT_COL_TARGET && ids[1] == MOUNT_COL_SOURCE &&
                           ids[2] == MOUNT_COL_ID,
                   "columns: case-insensitive names");
                r = columns_parse("TARGET,BOGUS,ID", mount_columns, _MOUNT_COL_MAX, ids,
                                  COLUMNS_MAX, &n, &badp, &bad_len);
                ok(r == -EINVAL && bad_len == 5 && strncmp(badp, "BOGUS", 5) == 0,
                   "columns: unknown name reported");
                r = columns_parse(",", mount_columns, _MOUNT_COL_MAX, ids, COLUMNS_MAX, &n, &badp,
                                  &bad_len);
                ok(r == -EINVAL && bad_len == 0, "columns: empty list refused");
                r = columns_parse("ID,ID,ID", mount_columns, _MOUNT_COL_MAX, ids, 2, &n, &badp,
                                  &bad_len);
                ok(r == -E2BIG, "columns: too many refused");
        }

        /* durations */
        {
                char buf[64];

                format_duration(0, buf, sizeof(buf));
                ok(strcmp(buf, "0s") == 0, "duration 0: '%s'", buf);
                format_duration((3ull * 86400 + 4 * 3600 + 5 * 60 + 6) * 1000000, buf, sizeof(buf));
                ok(strcmp(buf, "3d 4h 5min") == 0, "duration: three largest units: '%s'", buf);
                format_duration(61ull * 1000000, buf, sizeof(buf));
                ok(strcmp(buf, "1min 1s") == 0, "duration 61s: '%s'", buf);
        }

        test_json_writer();
        test_utf8();
        return tap_done();
}
