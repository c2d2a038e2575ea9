/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conf.c: nsd.conf parsing and the "who gets a namespace" policy.
 *
 * GKeyFile does the parsing proper (escapes, group merging), but it reports neither the line
 * of a syntax error nor the line of a key whose value we reject. So config_parse_text() first
 * scans the text itself: it checks every line's shape, knows the line of every key, and
 * refuses unknown groups, unknown keys and keys set twice. Only then is the text handed to
 * GKeyFile and each known key's value parsed here, with errors at that key's line.
 */
#include "conf.h"

#include <errno.h>
#include <glib.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GROUP_NAMESPACES "Namespaces"
#define GROUP_LIMITS "Limits"
#define GROUP_PRIVATE "Private"

/* uid 65534 (nobody / overflow uid) never gets a namespace, whatever the config says. */
#define UID_NOBODY ((uid_t) 65534)

static const char *const namespaces_keys[] = {
        "Users", "Groups", "MinUid", "MaxUid", "Propagation", "PrivateTmp", "Linger", NULL,
};
static const char *const private_keys[] = {
        "Enable", NULL,
};
static const char *const limits_keys[] = {
        "MaxNamespaces", "MaxSessionsPerUser", "MaxConnectionsPerUser", "MaxConnections", NULL,
};

void config_init_defaults(Config *ret) {
        static const char *const default_users[] = { "@regular", NULL };

        *ret = (Config) {
                .users = g_strdupv((char **) default_users),
                .groups = g_new0(char *, 1),
                .min_uid = 1000,
                .max_uid = 60000,
                .propagation_private = false,
                .private_tmp = false,
                .linger_sec = CONFIG_LINGER_FOREVER,
                .max_namespaces = 10000,
                .max_sessions_per_user = 64,
                .max_connections_per_user = 8,
                .max_connections = 512,
                .private_mode = false,
        };
}

void config_done(Config *c) {
        if (!c)
                return;
        g_strfreev(c->users);
        g_strfreev(c->groups);
        memset(c, 0, sizeof *c);
}

void config_move(Config *dst, Config *src) {
        config_done(dst);
        *dst = *src;
        memset(src, 0, sizeof *src);
}

/* One "Key=Value" line seen by the scan. */
typedef struct KeyLine {
        char *group;
        char *key;
        unsigned line;
} KeyLine;

static void key_line_free(gpointer p) {
        KeyLine *k = p;
        g_free(k->group);
        g_free(k->key);
        g_free(k);
}

static const char *const *group_keys(const char *group) {
        if (strcmp(group, GROUP_NAMESPACES) == 0)
                return namespaces_keys;
        if (strcmp(group, GROUP_LIMITS) == 0)
                return limits_keys;
        if (strcmp(group, GROUP_PRIVATE) == 0)
                return private_keys;
        return NULL;
}

static bool strv_has(const char *const *v, const char *s) {
        for (; v && *v; v++)
                if (strcmp(*v, s) == 0)
                        return true;
        return false;
}

static int fail(char **ret_error, const char *filename, unsigned line, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static int fail(char **ret_error, const char *filename, unsigned line, const char *fmt, ...) {
        va_list ap;
        g_autofree char *what = NULL;

        va_start(ap, fmt);
        what = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        if (ret_error)
                *ret_error = g_strdup_printf("%s:%u: %s", filename, line, what);
        return -EINVAL;
}

/* The shape of every line, as GKeyFile will read it; collects every key with its line. */
static int scan_lines(const char *text, size_t len, const char *filename, GPtrArray *keys,
                      char **ret_error) {
        g_autofree char *group = NULL;
        unsigned lineno = 0;
        size_t pos = 0;

        while (pos < len) {
                const char *start = text + pos, *nl = memchr(start, '\n', len - pos);
                size_t n = nl ? (size_t) (nl - start) : len - pos;
                g_autofree char *line = NULL;
                char *s, *eq;

                pos += n + (nl ? 1 : 0);
                lineno++;

                if (memchr(start, '\0', n))
                        return fail(ret_error, filename, lineno, "line contains a NUL byte");
                if (!g_utf8_validate(start, n, NULL))
                        return fail(ret_error, filename, lineno, "line is not valid UTF-8");

                line = g_strndup(start, n);
                s = g_strstrip(line);
                if (*s == '\0' || *s == '#')
                        continue;

                if (*s == '[') {
                        char *end = strchr(s, ']');
                        if (!end || end[1] != '\0' || end == s + 1 || memchr(s + 1, '[', end - s - 1))
                                return fail(ret_error, filename, lineno,
                                            "'%s' is not a valid [Group] line", s);
                        *end = '\0';
                        if (!group_keys(s + 1))
                                return fail(ret_error, filename, lineno,
                                            "unknown group [%s] (known: [" GROUP_NAMESPACES
                                            "], [" GROUP_LIMITS "], [" GROUP_PRIVATE "])",
                                            s + 1);
                        g_free(group);
                        group = g_strdup(s + 1);
                        continue;
                }

                eq = strchr(s, '=');
                if (!eq)
                        return fail(ret_error, filename, lineno,
                                    "'%s' is neither a [Group], a Key=Value line nor a comment",
                                    s);
                *eq = '\0';
                g_strchomp(s);
                if (*s == '\0')
                        return fail(ret_error, filename, lineno, "assignment without a key");
                if (!group)
                        return fail(ret_error, filename, lineno,
                                    "key %s= outside of any group (start with [" GROUP_NAMESPACES
                                    "] or [" GROUP_LIMITS "])", s);
                if (!strv_has(group_keys(group), s))
                        return fail(ret_error, filename, lineno, "unknown key %s= in [%s]", s,
                                    group);
                for (guint i = 0; i < keys->len; i++) {
                        KeyLine *k = g_ptr_array_index(keys, i);
                        if (strcmp(k->group, group) == 0 && strcmp(k->key, s) == 0)
                                return fail(ret_error, filename, lineno,
                                            "%s= set twice in [%s] (first at line %u)", s,
                                            group, k->line);
                }
                KeyLine *k = g_new0(KeyLine, 1);
                k->group = g_strdup(group);
                k->key = g_strdup(s);
                k->line = lineno;
                g_ptr_array_add(keys, k);
        }
        return 0;
}

static int parse_uint(const char *s, unsigned long long min, unsigned long long max,
                      unsigned long long *ret) {
        char *end;
        unsigned long long v;

        if (!g_ascii_isdigit(*s))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0 || *end != '\0')
                return -EINVAL;
        if (v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

static int parse_bool(const char *s, bool *ret) {
        static const char *const yes[] = { "yes", "true", "on", "1", NULL };
        static const char *const no[] = { "no", "false", "off", "0", NULL };

        for (int i = 0; yes[i]; i++)
                if (g_ascii_strcasecmp(s, yes[i]) == 0)
                        return *ret = true, 0;
        for (int i = 0; no[i]; i++)
                if (g_ascii_strcasecmp(s, no[i]) == 0)
                        return *ret = false, 0;
        return -EINVAL;
}

/* user and group names as useradd(8) accepts them (portable: [a-z_][a-z0-9_.-]*[$]?) */
static bool valid_name(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > 32)
                return false;
        if (!(g_ascii_isalpha(s[0]) || s[0] == '_'))
                return false;
        for (size_t i = 1; i < n; i++) {
                char c = s[i];
                if (g_ascii_isalnum(c) || c == '_' || c == '-' || c == '.')
                        continue;
                if (c == '$' && i == n - 1)
                        continue;
                return false;
        }
        return true;
}

/* Users= and Groups=: words separated by spaces, commas or semicolons. */
static int parse_names(const char *value, bool users, char ***ret, char **ret_bad) {
        g_auto(GStrv) words = g_strsplit_set(value, " \t,;", -1);
        g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(g_free);

        for (char **w = words; *w; w++) {
                unsigned long long v;

                if (**w == '\0')
                        continue;
                if (users && strcmp(*w, "@regular") == 0) {
                } else if (g_ascii_isdigit(**w)) {
                        if (parse_uint(*w, 0, (uid_t) -2, &v) < 0) {
                                *ret_bad = g_strdup(*w);
                                return -EINVAL;
                        }
                } else if (!valid_name(*w)) {
                        *ret_bad = g_strdup(*w);
                        return -EINVAL;
                }
                g_ptr_array_add(out, g_strdup(*w));
        }
        g_ptr_array_add(out, NULL);
        *ret = (char **) g_ptr_array_free(g_steal_pointer(&out), FALSE);
        return 0;
}

static unsigned key_line(GPtrArray *keys, const char *group, const char *key) {
        for (guint i = 0; i < keys->len; i++) {
                KeyLine *k = g_ptr_array_index(keys, i);
                if (strcmp(k->group, group) == 0 && strcmp(k->key, key) == 0)
                        return k->line;
        }
        return 0;
}

int config_parse_text(const char *text, size_t len, const char *filename, Config *ret,
                      char **ret_error) {
        g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(key_line_free);
        g_autoptr(GKeyFile) kf = g_key_file_new();
        g_autoptr(GError) error = NULL;
        Config c;
        int r;

        g_return_val_if_fail(text || len == 0, -EINVAL);
        g_return_val_if_fail(filename, -EINVAL);
        g_return_val_if_fail(ret, -EINVAL);

        r = scan_lines(text ? text : "", len, filename, keys, ret_error);
        if (r < 0)
                return r;

        /* The scan accepted every line; GKeyFile should too. If it does not, there is no line
         * to name: say line 1 rather than nothing. */
        if (len > 0 && !g_key_file_load_from_data(kf, text, len, G_KEY_FILE_NONE, &error))
                return fail(ret_error, filename, 1, "%s", error->message);

        config_init_defaults(&c);

        for (guint i = 0; i < keys->len; i++) {
                KeyLine *k = g_ptr_array_index(keys, i);
                g_autofree char *value = NULL;
                unsigned long long v;
                g_autofree char *bad = NULL;

                g_clear_error(&error);
                value = g_key_file_get_string(kf, k->group, k->key, &error);
                if (!value) {
                        r = fail(ret_error, filename, k->line, "%s=: %s", k->key,
                                 error ? error->message : "cannot read the value");
                        goto fail;
                }

#define KEY(name) (strcmp(k->key, name) == 0)
                if (KEY("Users") || KEY("Groups")) {
                        char **list = NULL;
                        if (parse_names(value, KEY("Users"), &list, &bad) < 0) {
                                r = fail(ret_error, filename, k->line,
                                         "%s=%s: '%s' is not a %s name or number%s", k->key,
                                         value, bad, KEY("Users") ? "user" : "group",
                                         KEY("Users") ? " (or @regular)" : "");
                                goto fail;
                        }
                        if (KEY("Users")) {
                                g_strfreev(c.users);
                                c.users = list;
                        } else {
                                g_strfreev(c.groups);
                                c.groups = list;
                        }
                } else if (KEY("MinUid") || KEY("MaxUid")) {
                        r = parse_uint(value, 1, (uid_t) -2, &v);
                        if (r < 0) {
                                r = fail(ret_error, filename, k->line,
                                         "%s=%s: not a uid between 1 and %u", k->key, value,
                                         (unsigned) (uid_t) -2);
                                goto fail;
                        }
                        if (KEY("MinUid"))
                                c.min_uid = (uid_t) v;
                        else
                                c.max_uid = (uid_t) v;
                } else if (KEY("Propagation")) {
                        if (strcmp(value, "slave") == 0)
                                c.propagation_private = false;
                        else if (strcmp(value, "private") == 0)
                                c.propagation_private = true;
                        else {
                                r = fail(ret_error, filename, k->line,
                                         "Propagation=%s: expected 'slave' or 'private'", value);
                                goto fail;
                        }
                } else if (KEY("PrivateTmp")) {
                        if (parse_bool(value, &c.private_tmp) < 0) {
                                r = fail(ret_error, filename, k->line,
                                         "PrivateTmp=%s: expected yes or no", value);
                                goto fail;
                        }
                } else if (KEY("Enable")) {
                        g_assert(strcmp(k->group, GROUP_PRIVATE) == 0);
                        if (parse_bool(value, &c.private_mode) < 0) {
                                r = fail(ret_error, filename, k->line,
                                         "Enable=%s: expected yes or no", value);
                                goto fail;
                        }
                } else if (KEY("Linger")) {
                        if (strcmp(value, "forever") == 0 || strcmp(value, "infinity") == 0)
                                c.linger_sec = CONFIG_LINGER_FOREVER;
                        else if (parse_uint(value, 0, INT32_MAX, &v) == 0)
                                c.linger_sec = (int64_t) v;
                        else {
                                r = fail(ret_error, filename, k->line,
                                         "Linger=%s: expected 'forever' or seconds (0..%d)",
                                         value, INT32_MAX);
                                goto fail;
                        }
                } else {
                        /* the [Limits]: all counts, at least 1 */
                        unsigned *dst = KEY("MaxNamespaces")           ? &c.max_namespaces
                                        : KEY("MaxSessionsPerUser")    ? &c.max_sessions_per_user
                                        : KEY("MaxConnectionsPerUser") ? &c.max_connections_per_user
                                                                       : &c.max_connections;
                        g_assert(KEY("MaxNamespaces") || KEY("MaxSessionsPerUser") ||
                                 KEY("MaxConnectionsPerUser") || KEY("MaxConnections"));
                        if (parse_uint(value, 1, 1000000, &v) < 0) {
                                r = fail(ret_error, filename, k->line,
                                         "%s=%s: expected a number between 1 and 1000000",
                                         k->key, value);
                                goto fail;
                        }
                        *dst = (unsigned) v;
                }
#undef KEY
        }

        if (c.min_uid > c.max_uid) {
                unsigned line = key_line(keys, GROUP_NAMESPACES, "MinUid");
                if (line == 0)
                        line = key_line(keys, GROUP_NAMESPACES, "MaxUid");
                r = fail(ret_error, filename, line, "MinUid=%u is larger than MaxUid=%u",
                         (unsigned) c.min_uid, (unsigned) c.max_uid);
                goto fail;
        }
        if (c.max_connections_per_user > c.max_connections) {
                unsigned line = key_line(keys, GROUP_LIMITS, "MaxConnectionsPerUser");
                if (line == 0)
                        line = key_line(keys, GROUP_LIMITS, "MaxConnections");
                r = fail(ret_error, filename, line,
                         "MaxConnectionsPerUser=%u is larger than MaxConnections=%u",
                         c.max_connections_per_user, c.max_connections);
                goto fail;
        }

        *ret = c;
        return 0;
fail:
        config_done(&c);
        return r;
}

int config_load(const char *path, Config *ret, bool *ret_missing, char **ret_error) {
        g_autofree char *text = NULL;
        g_autoptr(GError) error = NULL;
        gsize len = 0;
        int r;

        if (!g_file_get_contents(path, &text, &len, &error)) {
                if (g_error_matches(error, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
                        config_init_defaults(ret);
                        if (ret_missing)
                                *ret_missing = true;
                        return 0;
                }
                if (ret_error)
                        *ret_error = g_strdup_printf("%s: cannot read: %s", path,
                                                     error->message);
                return -EIO;
        }
        r = config_parse_text(text, len, path, ret, ret_error);
        if (r < 0)
                return r;
        if (ret_missing)
                *ret_missing = false;
        return 0;
}

static bool lookup_user(const char *name, uid_t *ret_uid) {
        struct passwd pw, *res = NULL;
        char buf[4096];

        if (getpwnam_r(name, &pw, buf, sizeof buf, &res) != 0 || !res)
                return false;
        *ret_uid = res->pw_uid;
        return true;
}

static bool lookup_group(const char *name, gid_t *ret_gid) {
        struct group gr, *res = NULL;
        char buf[16384];

        if (g_ascii_isdigit(*name)) {
                *ret_gid = (gid_t) strtoul(name, NULL, 10);
                return true;
        }
        if (getgrnam_r(name, &gr, buf, sizeof buf, &res) != 0 || !res)
                return false;
        *ret_gid = res->gr_gid;
        return true;
}

static bool uid_in_groups(const Config *c, uid_t uid) {
        struct passwd pw, *res = NULL;
        char buf[4096];
        gid_t groups[256];
        int n = G_N_ELEMENTS(groups);

        if (!c->groups || !c->groups[0])
                return false;
        if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) != 0 || !res)
                return false;
        if (getgrouplist(res->pw_name, res->pw_gid, groups, &n) < 0)
                n = G_N_ELEMENTS(groups); /* more than 256 groups: check the first 256 */
        for (char **g = c->groups; *g; g++) {
                gid_t gid;
                if (!lookup_group(*g, &gid))
                        continue;
                for (int i = 0; i < n; i++)
                        if (groups[i] == gid)
                                return true;
        }
        return false;
}

bool config_uid_managed(const Config *c, uid_t uid, char **ret_why) {
        bool regular = false;

        if (uid == 0 || uid == UID_NOBODY || uid == (uid_t) -1) {
                if (ret_why)
                        *ret_why = g_strdup_printf("uid %u never gets a namespace",
                                                   (unsigned) uid);
                return false;
        }

        for (char **u = c->users; u && *u; u++) {
                uid_t v;
                if (strcmp(*u, "@regular") == 0) {
                        regular = true;
                        if (uid >= c->min_uid && uid <= c->max_uid)
                                return true;
                } else if (g_ascii_isdigit(**u)) {
                        if ((uid_t) strtoul(*u, NULL, 10) == uid)
                                return true;
                } else if (lookup_user(*u, &v) && v == uid)
                        return true;
        }
        if (uid_in_groups(c, uid))
                return true;

        if (ret_why) {
                if (regular)
                        *ret_why = g_strdup_printf(
                                "uid %u is outside MinUid=%u..MaxUid=%u and not listed in "
                                "Users= or Groups= of nsd.conf",
                                (unsigned) uid, (unsigned) c->min_uid, (unsigned) c->max_uid);
                else
                        *ret_why = g_strdup_printf(
                                "uid %u is not listed in Users= or Groups= of nsd.conf",
                                (unsigned) uid);
        }
        return false;
}

const char *config_linger_to_string(const Config *c, char *buf, size_t size) {
        if (c->linger_sec == CONFIG_LINGER_FOREVER)
                snprintf(buf, size, "Linger=forever");
        else
                snprintf(buf, size, "Linger=%lld", (long long) c->linger_sec);
        return buf;
}
