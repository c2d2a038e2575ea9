/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-conf: nsd's nsd.conf parser, config_parse_texts() (nsd/policy/conf.c,
 * nsd/policy/setup-conf.c), on arbitrary text. A form feed (\f) splits the input into nsd.conf
 * ("fuzz.conf") and one drop-in ("fuzz.conf.d/50.conf"), read as one configuration.
 *
 * Properties besides the sanitizers' (any failure aborts):
 *   - the result is 0, -EINVAL or -ENOMEM; *ret is written only on success;
 *   - a failure always comes with a message "FILE:LINE: what", FILE one of the two and LINE
 *     >= 1 and within that text's lines;
 *   - a success gives a consistent Config: Users= and Groups= lists present, every entry
 *     "@regular", a number or a valid name, MinUid <= MaxUid, limits within 1..1000000,
 *     MaxConnectionsPerUser <= MaxConnections, Linger forever or 0..INT32_MAX;
 *   - parsing is deterministic: the same text parses the same way twice;
 *   - a text whose values GKeyFile itself cannot read (an invalid escape such as a trailing
 *     backslash: g_key_file_get_string() sets an error, yet returns what it could read) is
 *     refused, not accepted with a value cut short;
 *   - config_uid_managed(), where it needs no NSS (no user names in Users=, no Groups=):
 *     root, nobody and (uid_t) -1 are never managed, a listed uid always is, @regular is
 *     exactly MinUid..MaxUid, and a "why" comes with every "no";
 *   - the setup ([Setup], [Polydir NAME], [BindReadOnly NAME]) is whole: every polydir has a
 *     path (absolute or "%h..."), a method, an instance prefix exactly for Method=user, a
 *     mode within -1..07777, attributes nsd knows; no two share a path, nor two binds a
 *     target; at most SETUP_MAX_POLYDIRS; PrivateTmp=yes is the first polydir, on /tmp; its
 *     generation is the same for two parses and for a copy;
 *   - config_move() and config_done() leave nothing behind (LeakSanitizer).
 */
#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mount.h>

#include "fuzz.h"
#include "policy/conf.h"
#include "policy/setup-conf.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        /* GLib's slice allocator would hide leaks from LeakSanitizer (GLib < 2.76) */
        setenv("G_SLICE", "always-malloc", 1);
        return 0;
}

static const char *const file_names[2] = { "fuzz.conf", "fuzz.conf.d/50.conf" };

static unsigned count_lines(const uint8_t *data, size_t size) {
        unsigned n = 0;
        for (size_t i = 0; i < size; i++)
                n += data[i] == '\n';
        return n + 1;
}

static bool word_ok(const char *w, bool users) {
        if (users && strcmp(w, "@regular") == 0)
                return true;
        if (g_ascii_isdigit(w[0])) {
                for (const char *p = w; *p; p++)
                        if (!g_ascii_isdigit(*p))
                                return false;
                return true;
        }
        return g_ascii_isalpha(w[0]) || w[0] == '_';
}

/* Does the policy need NSS for this config? Names in Users= and any Groups= do. */
static bool needs_nss(const Config *c) {
        if (c->groups && c->groups[0])
                return true;
        for (char **u = c->users; *u; u++)
                if (strcmp(*u, "@regular") != 0 && !g_ascii_isdigit(**u))
                        return true;
        return false;
}

static void check_managed(const Config *c, uid_t uid) {
        g_autofree char *why = NULL;
        bool listed = false, regular = false;
        bool managed = config_uid_managed(c, uid, &why);

        fuzz_assert(managed == (why == NULL), "uid %u: managed=%d but why=%s", (unsigned) uid,
                    managed, why ? why : "(null)");
        if (uid == 0 || uid == 65534 || uid == (uid_t) -1) {
                fuzz_assert(!managed, "uid %u must never be managed", (unsigned) uid);
                return;
        }
        for (char **u = c->users; *u; u++) {
                if (strcmp(*u, "@regular") == 0)
                        regular = true;
                else if (strtoull(*u, NULL, 10) == uid)
                        listed = true;
        }
        bool want = listed || (regular && uid >= c->min_uid && uid <= c->max_uid);
        fuzz_assert(managed == want, "uid %u: managed=%d, expected %d (MinUid=%u MaxUid=%u)",
                    (unsigned) uid, managed, want, (unsigned) c->min_uid, (unsigned) c->max_uid);
}

static bool template_ok(const char *t) {
        return t && (t[0] == '/' || (t[0] == '%' && t[1] == 'h')) && !strstr(t, "//");
}

static void check_setup(const Config *c) {
        const SetupConf *s = &c->setup;
        const uint64_t attrs = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOEXEC | MOUNT_ATTR_NOSUID |
                               MOUNT_ATTR_NODEV | MOUNT_ATTR__ATIME | MOUNT_ATTR_NODIRATIME |
                               MOUNT_ATTR_NOSYMFOLLOW;
        Config copy;
        char g1[17], g2[17];

        fuzz_assert(s->n_polydirs <= SETUP_MAX_POLYDIRS && s->n_binds <= SETUP_MAX_BINDS,
                    "%zu polydirs, %zu binds", s->n_polydirs, s->n_binds);
        for (size_t i = 0; i < s->n_polydirs; i++) {
                const Polydir *p = &s->polydirs[i];

                fuzz_assert(p->name && template_ok(p->path), "polydir %zu: path '%s'", i,
                            p->path ? p->path : "(null)");
                fuzz_assert(p->method == POLYDIR_METHOD_USER || p->method == POLYDIR_METHOD_TMPFS,
                            "polydir '%s': method %d", p->name, (int) p->method);
                fuzz_assert((p->method == POLYDIR_METHOD_USER) == (p->instance_prefix != NULL),
                            "polydir '%s': an instance prefix for Method=user only", p->name);
                fuzz_assert(!p->instance_prefix || template_ok(p->instance_prefix),
                            "polydir '%s': prefix '%s'", p->name, p->instance_prefix);
                fuzz_assert(p->mode >= -1 && p->mode <= 07777, "polydir '%s': mode %d", p->name,
                            p->mode);
                fuzz_assert((p->mount_attr & ~attrs) == 0 &&
                                    p->n_options <= SETUP_MAX_MOUNT_OPTIONS,
                            "polydir '%s': attributes %llx", p->name,
                            (unsigned long long) p->mount_attr);
                fuzz_assert(p->method == POLYDIR_METHOD_TMPFS || p->n_options == 0,
                            "polydir '%s': tmpfs options on a bind", p->name);
                fuzz_assert(!(p->only_users && p->exclude_users), "polydir '%s': both lists",
                            p->name);
                fuzz_assert(p->file && p->line >= 1, "polydir '%s': no place", p->name);
                for (size_t j = 0; j < i; j++)
                        fuzz_assert(strcmp(s->polydirs[j].path, p->path) != 0,
                                    "two polydirs on '%s'", p->path);
        }
        fuzz_assert(!c->private_tmp ||
                            (s->n_polydirs > 0 && strcmp(s->polydirs[0].name, "PrivateTmp") == 0 &&
                             strcmp(s->polydirs[0].path, "/tmp") == 0),
                    "PrivateTmp=yes is not the first polydir");
        for (size_t i = 0; i < s->n_binds; i++) {
                fuzz_assert(s->binds[i].source && s->binds[i].source[0] == '/' &&
                                    s->binds[i].target && s->binds[i].target[0] == '/',
                            "bind %zu without an absolute source or target", i);
                for (size_t j = 0; j < i; j++)
                        fuzz_assert(strcmp(s->binds[j].target, s->binds[i].target) != 0,
                                    "two binds on '%s'", s->binds[i].target);
        }
        fuzz_assert(s->timeout_usec >= 1000 && s->timeout_usec <= 3600ULL * 1000000ULL,
                    "TimeoutSec %llu us", (unsigned long long) s->timeout_usec);
        config_copy(&copy, c);
        fuzz_assert(strcmp(setup_conf_generation(s, c->propagation_private, g1, sizeof g1),
                           setup_conf_generation(&copy.setup, copy.propagation_private, g2,
                                                 sizeof g2)) == 0 &&
                            strlen(g1) == 16,
                    "a copy has another generation: %s, %s", g1, g2);
        config_done(&copy);
}

static void check_config(const Config *c) {
        char buf[64];

        fuzz_assert(c->users && c->groups, "Users= or Groups= list missing");
        for (char **u = c->users; *u; u++)
                fuzz_assert(word_ok(*u, true), "bad Users= entry '%s'", *u);
        for (char **g = c->groups; *g; g++)
                fuzz_assert(word_ok(*g, false), "bad Groups= entry '%s'", *g);
        fuzz_assert(c->min_uid >= 1 && c->min_uid <= c->max_uid && c->max_uid <= (uid_t) -2,
                    "MinUid=%u MaxUid=%u", (unsigned) c->min_uid, (unsigned) c->max_uid);
        fuzz_assert(c->max_namespaces >= 1 && c->max_namespaces <= 1000000 &&
                            c->max_sessions_per_user >= 1 && c->max_sessions_per_user <= 1000000 &&
                            c->max_connections_per_user >= 1 &&
                            c->max_connections_per_user <= c->max_connections &&
                            c->max_connections <= 1000000,
                    "limits out of range");
        fuzz_assert(c->linger_sec == CONFIG_LINGER_FOREVER ||
                            (c->linger_sec >= 0 && c->linger_sec <= INT32_MAX),
                    "Linger=%lld", (long long) c->linger_sec);
        fuzz_assert(config_linger_to_string(c, buf, sizeof buf) == buf &&
                            strncmp(buf, "Linger=", 7) == 0,
                    "config_linger_to_string gave '%s'", buf);
        check_setup(c);

        if (needs_nss(c))
                return;
        const uid_t probe[] = { 0,
                                1,
                                999,
                                1000,
                                1001,
                                60000,
                                60001,
                                65534,
                                (uid_t) -2,
                                (uid_t) -1,
                                c->min_uid,
                                c->max_uid,
                                c->min_uid - 1,
                                c->max_uid + 1 };
        for (size_t i = 0; i < G_N_ELEMENTS(probe); i++)
                check_managed(c, probe[i]);
        for (char **u = c->users; *u; u++)
                if (g_ascii_isdigit(**u))
                        check_managed(c, (uid_t) strtoull(*u, NULL, 10));
}

/* Does GKeyFile, on its own, read every value of the text without an error? */
static bool keyfile_reads_all(const uint8_t *data, size_t size) {
        g_autoptr(GKeyFile) kf = g_key_file_new();
        g_auto(GStrv) groups = NULL;

        if (size == 0)
                return true;
        if (!g_key_file_load_from_data(kf, (const char *) data, size, G_KEY_FILE_NONE, NULL))
                return false;
        groups = g_key_file_get_groups(kf, NULL);
        for (char **g = groups; *g; g++) {
                g_auto(GStrv) keys = g_key_file_get_keys(kf, *g, NULL, NULL);
                for (char **k = keys; k && *k; k++) {
                        g_autoptr(GError) error = NULL;
                        g_autofree char *v = g_key_file_get_string(kf, *g, *k, &error);
                        if (!v || error)
                                return false;
                }
        }
        return true;
}

static bool same_config(const Config *a, const Config *b) {
        char ga[17], gb[17];

        setup_conf_generation(&a->setup, a->propagation_private, ga, sizeof ga);
        setup_conf_generation(&b->setup, b->propagation_private, gb, sizeof gb);
        return strcmp(ga, gb) == 0 && a->setup.n_polydirs == b->setup.n_polydirs &&
               a->setup.n_binds == b->setup.n_binds &&
               a->setup.timeout_usec == b->setup.timeout_usec &&
               g_strv_equal((const char *const *) a->users, (const char *const *) b->users) &&
               g_strv_equal((const char *const *) a->groups, (const char *const *) b->groups) &&
               a->min_uid == b->min_uid && a->max_uid == b->max_uid &&
               a->propagation_private == b->propagation_private &&
               a->private_tmp == b->private_tmp && a->linger_sec == b->linger_sec &&
               a->max_namespaces == b->max_namespaces &&
               a->max_sessions_per_user == b->max_sessions_per_user &&
               a->max_connections_per_user == b->max_connections_per_user &&
               a->max_connections == b->max_connections && a->private_mode == b->private_mode;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Config c, again, moved = { 0 };
        g_autofree char *err = NULL, *err2 = NULL;
        const uint8_t *ff = size > 0 ? memchr(data, '\f', size) : NULL;
        ConfigText texts[2] = {
                { (const char *) data, ff ? (size_t) (ff - data) : size, file_names[0] },
                { ff ? (const char *) ff + 1 : NULL, ff ? size - (size_t) (ff - data) - 1 : 0,
                  file_names[1] },
        };
        size_t n = ff ? 2 : 1;
        int r, r2;

        memset(&c, 0xa5, sizeof c);
        r = config_parse_texts(texts, n, &c, &err);
        fuzz_assert(r == 0 || r == -EINVAL || r == -ENOMEM, "r=%d", r);

        memset(&again, 0, sizeof again);
        r2 = config_parse_texts(texts, n, &again, &err2);
        fuzz_assert(r2 == r, "second parse gave %d, first %d", r2, r);

        if (r < 0) {
                const uint8_t *p = (const uint8_t *) &c;
                size_t f = n - 1;

                for (size_t i = 0; i < sizeof c; i++)
                        fuzz_assert(p[i] == 0xa5, "Config written on failure (byte %zu)", i);
                fuzz_assert(err != NULL, "no error message for r=%d", r);
                /* the drop-in's name starts with nsd.conf's: try it first */
                while (f > 0 &&
                       !(g_str_has_prefix(err, file_names[f]) && err[strlen(file_names[f])] == ':'))
                        f--;
                size_t prefix = strlen(file_names[f]);
                fuzz_assert(strncmp(err, file_names[f], prefix) == 0 && err[prefix] == ':',
                            "message '%s'", err);
                unsigned long line = strtoul(err + prefix + 1, NULL, 10);
                unsigned lines = count_lines((const uint8_t *) texts[f].text, texts[f].len);
                fuzz_assert(line >= 1 && line <= lines, "message names line %lu of %u: '%s'", line,
                            lines, err);
                fuzz_assert(err2 && strcmp(err, err2) == 0, "messages differ: '%s' / '%s'", err,
                            err2 ? err2 : "(null)");
                return 0;
        }

        fuzz_assert(err == NULL, "error message '%s' on success", err);
        for (size_t f = 0; f < n; f++)
                fuzz_assert(keyfile_reads_all((const uint8_t *) texts[f].text, texts[f].len),
                            "accepted a text with a value GKeyFile cannot read (an invalid "
                            "escape?)");
        check_config(&c);
        fuzz_assert(same_config(&c, &again), "two parses of the same text differ");
        config_move(&moved, &c);
        fuzz_assert(c.users == NULL && c.groups == NULL && c.setup.polydirs == NULL,
                    "config_move left the source");
        check_config(&moved);
        config_done(&moved);
        config_done(&again);
        config_done(&c);
        return 0;
}
