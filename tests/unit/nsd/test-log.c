/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-log: base/log.c's table of MESSAGE_IDs against the catalog (systemd/nsd.catalog) that
 * explains them in `journalctl -x`: every id well formed (32 lowercase hex digits) and
 * unique, every event once, each with one catalog entry (Subject:, Defined-By: nsd,
 * Documentation:, a text), no catalog entry for an id the table lacks, every event one that
 * nsd's sources log; and, where journalctl is installed, `journalctl --root=TMP
 * --update-catalog` on a copy of the catalog in a folder of the test's own accepts it and
 * lists every id (never this machine's own catalog). TAP, no root.
 *
 *   test-log CATALOG NSD-SOURCE-DIR
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "base/log.h"
#include "tap.h"

typedef struct Entry {
        char id[33];
        char *subject;
        bool defined_by_nsd, documentation;
        size_t text_lines;
} Entry;

static bool id_well_formed(const char *id) {
        if (strlen(id) != 32)
                return false;
        for (const char *p = id; *p; p++)
                if (!g_ascii_isdigit(*p) && !(*p >= 'a' && *p <= 'f'))
                        return false;
        return true;
}

/* catalog(7): "-- ID" starts an entry, header lines up to the first empty line, then the
 * text up to the next "-- ". Lines starting with '#' outside an entry are comments. */
static GArray *catalog_parse(const char *path) {
        g_autofree char *text = NULL;
        g_autoptr(GError) error = NULL;
        g_auto(GStrv) lines = NULL;
        GArray *entries = g_array_new(false, true, sizeof(Entry));
        Entry *e = NULL;
        bool header = false;

        if (!g_file_get_contents(path, &text, NULL, &error)) {
                printf("Bail out! cannot read %s: %s\n", path, error->message);
                exit(1);
        }
        lines = g_strsplit(text, "\n", -1);
        for (char **l = lines; *l; l++) {
                if (g_str_has_prefix(*l, "-- ")) {
                        Entry n = { 0 };
                        g_strlcpy(n.id, *l + 3, sizeof n.id);
                        if (strlen(*l + 3) != 32)
                                n.id[0] = '?'; /* not 32 characters: not well formed */
                        g_array_append_val(entries, n);
                        e = &g_array_index(entries, Entry, entries->len - 1);
                        header = true;
                        continue;
                }
                if (!e)
                        continue; /* comments and blank lines before the first entry */
                if (header) {
                        if (**l == '\0')
                                header = false;
                        else if (g_str_has_prefix(*l, "Subject: "))
                                e->subject = g_strdup(*l + 9);
                        else if (strcmp(*l, "Defined-By: nsd") == 0)
                                e->defined_by_nsd = true;
                        else if (g_str_has_prefix(*l, "Documentation: man:"))
                                e->documentation = true;
                } else if (**l != '\0')
                        e->text_lines++;
        }
        return entries;
}

static const Entry *catalog_find(GArray *entries, const char *id) {
        for (guint i = 0; i < entries->len; i++)
                if (strcmp(g_array_index(entries, Entry, i).id, id) == 0)
                        return &g_array_index(entries, Entry, i);
        return NULL;
}

/* Every .c file under dir, read into one string. */
static void read_sources(const char *dir, GString *out) {
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        const char *name;

        if (!d)
                return;
        while ((name = g_dir_read_name(d))) {
                g_autofree char *path = g_build_filename(dir, name, NULL);
                g_autofree char *text = NULL;

                if (g_file_test(path, G_FILE_TEST_IS_DIR))
                        read_sources(path, out);
                else if (g_str_has_suffix(name, ".c") &&
                         g_file_get_contents(path, &text, NULL, NULL))
                        g_string_append(out, text);
        }
}

static void test_table(GArray *entries, const char *srcdir) {
        size_t n;
        const LogEventId *ids = log_event_ids(&n);
        g_autoptr(GString) sources = g_string_new(NULL);
        bool all_formed = true, all_unique = true, all_in_catalog = true, all_logged = true;

        read_sources(srcdir, sources);
        ok(n >= 10, "the table has an id for each event type that explains itself (%zu)", n);
        for (size_t i = 0; i < n; i++) {
                g_autofree char *literal = g_strdup_printf("\"%s\"", ids[i].event);
                const Entry *e = catalog_find(entries, ids[i].message_id);

                if (!id_well_formed(ids[i].message_id)) {
                        all_formed = false;
                        tap_diag("'%s': '%s' is not 32 lowercase hex digits", ids[i].event,
                                 ids[i].message_id);
                }
                for (size_t j = 0; j < i; j++)
                        if (strcmp(ids[i].message_id, ids[j].message_id) == 0 ||
                            strcmp(ids[i].event, ids[j].event) == 0) {
                                all_unique = false;
                                tap_diag("'%s' and '%s' share an id or a name", ids[i].event,
                                         ids[j].event);
                        }
                if (!e || !e->subject || !e->defined_by_nsd || !e->documentation ||
                    e->text_lines == 0) {
                        all_in_catalog = false;
                        tap_diag("'%s' (%s): %s", ids[i].event, ids[i].message_id,
                                 !e ? "no catalog entry"
                                    : "its entry lacks Subject:, Defined-By: nsd, "
                                      "Documentation: or a text");
                }
                if (!strstr(sources->str, literal)) {
                        all_logged = false;
                        tap_diag("'%s': no line of nsd logs this event", ids[i].event);
                }
                is_str(log_event_message_id(ids[i].event), ids[i].message_id,
                       "log_event_message_id('%s')", ids[i].event);
        }
        ok(all_formed, "every id is 32 lowercase hex digits");
        ok(all_unique, "every id and every event name is in the table once");
        ok(all_in_catalog, "every id has a catalog entry with Subject:, Defined-By: nsd, "
                           "Documentation: and a text");
        ok(all_logged, "every event of the table is one nsd logs");
        ok(!log_event_message_id("join"), "an event without an id carries none ('join')");
        ok(!log_event_message_id(NULL), "no event, no id");

        bool known = true, once = true;
        for (guint i = 0; i < entries->len; i++) {
                const Entry *e = &g_array_index(entries, Entry, i);
                bool found = false;

                for (size_t j = 0; j < n; j++)
                        found = found || strcmp(ids[j].message_id, e->id) == 0;
                if (!found) {
                        known = false;
                        tap_diag("catalog entry %s ('%s') names no id of the table", e->id,
                                 e->subject ? e->subject : "");
                }
                if (catalog_find(entries, e->id) != e) {
                        once = false;
                        tap_diag("catalog entry %s appears twice", e->id);
                }
        }
        ok(known, "every catalog entry names an id the table has");
        ok(once, "every catalog entry appears once");
        is_int(entries->len, n, "as many catalog entries as ids");
}

static int remove_tree(const char *path) {
        g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
        const char *name;

        if (d)
                while ((name = g_dir_read_name(d))) {
                        g_autofree char *p = g_build_filename(path, name, NULL);
                        if (g_file_test(p, G_FILE_TEST_IS_DIR) &&
                            !g_file_test(p, G_FILE_TEST_IS_SYMLINK))
                                remove_tree(p);
                        else
                                (void) g_unlink(p);
                }
        return g_rmdir(path);
}

/* systemd's own parser, on a root of the test's own: --root= makes journalctl read
 * ROOT/usr/lib/systemd/catalog and write ROOT/var/lib/systemd/catalog/database. */
static void test_journalctl(const char *catalog) {
        g_autofree char *journalctl = g_find_program_in_path("journalctl");
        g_autoptr(GError) error = NULL;
        g_autofree char *root = NULL, *dir = NULL, *copy = NULL, *text = NULL, *db = NULL;
        g_autofree char *out = NULL, *err = NULL;
        size_t n;
        const LogEventId *ids = log_event_ids(&n);
        int status = -1;
        bool listed = true;

        if (!journalctl) {
                tap_skip("journalctl is not installed: systemd's own parser of the catalog");
                return;
        }
        root = g_dir_make_tmp("nsd-catalog-XXXXXX", &error);
        if (!root) {
                printf("Bail out! cannot make a temporary folder: %s\n", error->message);
                exit(1);
        }
        dir = g_build_filename(root, "usr", "lib", "systemd", "catalog", NULL);
        copy = g_build_filename(dir, "nsd.catalog", NULL);
        db = g_build_filename(root, "var", "lib", "systemd", "catalog", "database", NULL);
        if (g_mkdir_with_parents(dir, 0755) < 0 ||
            !g_file_get_contents(catalog, &text, NULL, NULL) ||
            !g_file_set_contents(copy, text, -1, NULL)) {
                printf("Bail out! cannot copy the catalog to %s\n", dir);
                exit(1);
        }

        g_autofree char *root_arg = g_strdup_printf("--root=%s", root);
        char *update[] = { journalctl, root_arg, "--update-catalog", NULL };
        char *list[] = { journalctl, root_arg, "--list-catalog", NULL };

        if (!g_spawn_sync(NULL, update, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, &err, &status,
                          &error))
                tap_diag("cannot run journalctl: %s", error->message);
        ok(status == 0 && err && !strstr(err, "nsd.catalog"),
           "journalctl --update-catalog accepts the catalog");
        if (err && *err)
                tap_diag("journalctl says: %s", err);
        ok(g_file_test(db, G_FILE_TEST_IS_REGULAR), "... and writes the database under --root=");
        g_clear_pointer(&err, g_free);
        if (!g_spawn_sync(NULL, list, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, NULL))
                out = g_strdup("");
        for (size_t i = 0; i < n; i++) {
                g_autofree char *line = g_strdup_printf("%s nsd: ", ids[i].message_id);
                if (!strstr(out, line)) {
                        listed = false;
                        tap_diag("--list-catalog lacks %s (%s)", ids[i].message_id, ids[i].event);
                }
        }
        ok(status == 0 && listed, "journalctl --list-catalog lists every id as nsd's");
        ok(remove_tree(root) == 0, "the temporary root is removed");
}

int main(int argc, char **argv) {
        GArray *entries;

        if (argc != 3) {
                printf("Bail out! usage: test-log CATALOG NSD-SOURCE-DIR\n");
                return 1;
        }
        entries = catalog_parse(argv[1]);
        test_table(entries, argv[2]);
        test_journalctl(argv[1]);
        for (guint i = 0; i < entries->len; i++)
                g_free(g_array_index(entries, Entry, i).subject);
        g_array_free(entries, true);
        return tap_done();
}
