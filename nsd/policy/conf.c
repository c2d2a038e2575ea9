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
#include "policy/conf.h"

#include <errno.h>
#include <glib.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nss-util.h"
#include "policy/conf-files.h"
#include "policy/conf-value.h"

#define GROUP_NAMESPACES "Namespaces"
#define GROUP_LIMITS "Limits"
#define GROUP_PRIVATE "Private"

/* uid 65534 (nobody / overflow uid) never gets a namespace, whatever the config says. */
#define UID_NOBODY ((uid_t) 65534)

static const char *const namespaces_keys[] = {
        "Users",      "Groups", "MinUid",          "MaxUid", "Propagation",
        "PrivateTmp", "Linger", "OnLookupTimeout", NULL,
};
static const char *const private_keys[] = {
        "Enable",
        "BornPrivate",
        NULL,
};
/* [Limits]: every key is a count or a time, so one table says name, range and field. */
typedef enum LimitKind { LIMIT_COUNT, LIMIT_USEC } LimitKind;
typedef struct LimitKey {
        const char *name;
        LimitKind kind;
        unsigned long long min, max; /* counts; times in microseconds */
        size_t offset;               /* of the unsigned or uint64_t in Config */
} LimitKey;

#define USEC_PER_SEC 1000000ull
#define COUNT(n, lo, hi, field) \
        { n, LIMIT_COUNT, lo, hi, offsetof(Config, field) }
#define TIME(n, lo, hi, field) \
        { n, LIMIT_USEC, lo, hi, offsetof(Config, field) }
static const LimitKey limit_keys[] = {
        COUNT("MaxNamespaces", 1, 1000000, max_namespaces),
        COUNT("MaxSessionsPerUser", 1, 1000000, max_sessions_per_user),
        COUNT("MaxConnectionsPerUser", 1, 1000000, max_connections_per_user),
        COUNT("MaxConnections", 1, 1000000, max_connections),
        COUNT("ReservedConnections", 0, 1000000, reserved_connections),
        COUNT("MaxRootConnections", 1, 1000000, max_root_connections),
        COUNT("MaxSetuidConnectionsPerUser", 1, 1000000, max_setuid_connections_per_user),
        COUNT("RequestRatePerUser", 1, 1000000, request_rate_per_user),
        COUNT("RequestBurstPerUser", 1, 1000000, request_burst_per_user),
        COUNT("MaxQueuedReplies", 1, 1024, max_queued_replies),
        COUNT("MaxLookupThreads", 1, 64, max_lookup_threads),
        COUNT("MaxPathWalks", 1, 1024, max_path_walks),
        TIME("IdleTimeoutSec", 1000, 86400 * USEC_PER_SEC, idle_timeout_usec),
        TIME("ReplyTimeoutSec", 1000, 86400 * USEC_PER_SEC, reply_timeout_usec),
        TIME("LookupTimeoutSec", 1000, 3600 * USEC_PER_SEC, lookup_timeout_usec),
        TIME("LookupCacheSec", 0, 86400 * USEC_PER_SEC, lookup_cache_usec),
        TIME("PathWalkTimeoutSec", 1000, 3600 * USEC_PER_SEC, path_walk_timeout_usec),
        TIME("SetuidRequestTimeoutSec", 1000, 3600 * USEC_PER_SEC, setuid_request_timeout_usec),
};
#undef COUNT
#undef TIME

static const char *const limits_keys[] = {
        "MaxNamespaces",
        "MaxSessionsPerUser",
        "MaxConnectionsPerUser",
        "MaxConnections",
        "ReservedConnections",
        "MaxRootConnections",
        "MaxSetuidConnectionsPerUser",
        "RequestRatePerUser",
        "RequestBurstPerUser",
        "MaxQueuedReplies",
        "MaxLookupThreads",
        "MaxPathWalks",
        "IdleTimeoutSec",
        "ReplyTimeoutSec",
        "LookupTimeoutSec",
        "LookupCacheSec",
        "PathWalkTimeoutSec",
        "SetuidRequestTimeoutSec",
        NULL,
};
_Static_assert(G_N_ELEMENTS(limits_keys) == G_N_ELEMENTS(limit_keys) + 1, "limits_keys");

static const LimitKey *limit_key(const char *name) {
        for (size_t i = 0; i < G_N_ELEMENTS(limit_keys); i++)
                if (strcmp(limit_keys[i].name, name) == 0)
                        return &limit_keys[i];
        return NULL;
}

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
                .reserved_connections = CONFIG_RESERVED_AUTO,
                .max_root_connections = 1024,
                .max_setuid_connections_per_user = 4,
                .request_rate_per_user = 20,
                .request_burst_per_user = 50,
                .max_queued_replies = 16,
                .max_lookup_threads = 4,
                .max_path_walks = 16,
                .idle_timeout_usec = 15 * USEC_PER_SEC,
                .reply_timeout_usec = 5 * USEC_PER_SEC,
                .lookup_timeout_usec = 5 * USEC_PER_SEC,
                .lookup_cache_usec = 15 * USEC_PER_SEC,
                .path_walk_timeout_usec = 5 * USEC_PER_SEC,
                .setuid_request_timeout_usec = 1 * USEC_PER_SEC,
                .private_mode = false,
                .born_private = true,
        };
        setup_conf_init(&ret->setup);
}

void config_copy(Config *dst, const Config *src) {
        *dst = *src;
        dst->users = g_strdupv(src->users);
        dst->groups = g_strdupv(src->groups);
        setup_conf_copy(&dst->setup, &src->setup);
}

void config_done(Config *c) {
        if (!c)
                return;
        g_strfreev(c->users);
        g_strfreev(c->groups);
        setup_conf_done(&c->setup);
        memset(c, 0, sizeof *c);
}

void config_move(Config *dst, Config *src) {
        config_done(dst);
        *dst = *src;
        memset(src, 0, sizeof *src);
}

/* One "Key=Value" line seen by the scan, or (key NULL) a group line of a setup group. */
typedef struct KeyLine {
        char *group;
        char *key;
        unsigned line;
        size_t file; /* index into the texts */
} KeyLine;

static void key_line_free(gpointer p) {
        KeyLine *k = p;
        g_free(k->group);
        g_free(k->key);
        g_free(k);
}

static const char *const *group_keys(const char *group, const char **ret_why) {
        if (strcmp(group, GROUP_NAMESPACES) == 0)
                return namespaces_keys;
        if (strcmp(group, GROUP_LIMITS) == 0)
                return limits_keys;
        if (strcmp(group, GROUP_PRIVATE) == 0)
                return private_keys;
        return setup_conf_group_keys(group, ret_why);
}

static bool strv_has(const char *const *v, const char *s) {
        for (; v && *v; v++)
                if (strcmp(*v, s) == 0)
                        return true;
        return false;
}

/* Keys that take one of two words: the second sets the bool. */
static const char *const propagation_words[] = { "slave", "private" };
static const char *const lookup_timeout_words[] = { "refuse", "unmanaged" };

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

/* A key, or an object group (key NULL), that an earlier line or file has already. */
static const KeyLine *key_seen(GPtrArray *keys, const char *group, const char *key) {
        for (guint i = 0; i < keys->len; i++) {
                const KeyLine *k = g_ptr_array_index(keys, i);
                if (strcmp(k->group, group) == 0 && g_strcmp0(k->key, key) == 0)
                        return k;
        }
        return NULL;
}

static void key_add(GPtrArray *keys, const char *group, const char *key, unsigned line,
                    size_t file) {
        KeyLine *k = g_new0(KeyLine, 1);

        k->group = g_strdup(group);
        k->key = g_strdup(key);
        k->line = line;
        k->file = file;
        g_ptr_array_add(keys, k);
}

/* The shape of every line of texts[file], as GKeyFile will read it; collects every key (and
 * every setup group line) with its line. */
static int scan_lines(const ConfigText *texts, size_t file, GPtrArray *keys, char **ret_error) {
        const char *text = texts[file].text ? texts[file].text : "",
                   *filename = texts[file].filename;
        size_t len = texts[file].len;
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
                        if (!end || end[1] != '\0' || end == s + 1 ||
                            memchr(s + 1, '[', end - s - 1))
                                return fail(ret_error, filename, lineno,
                                            "'%s' is not a valid [Group] line", s);
                        *end = '\0';
                        const char *why = NULL;
                        if (!group_keys(s + 1, &why))
                                return why ? fail(ret_error, filename, lineno, "[%s]: %s", s + 1,
                                                  why)
                                           : fail(ret_error, filename, lineno,
                                                  "unknown group [%s] (known: [" GROUP_NAMESPACES
                                                  "], [" GROUP_LIMITS "], [" GROUP_PRIVATE
                                                  "], [Setup], [Polydir NAME], [BindReadOnly "
                                                  "NAME], [Share NAME])",
                                                  s + 1);
                        g_free(group);
                        group = g_strdup(s + 1);
                        if (!setup_conf_group_keys(group, NULL))
                                continue;
                        const KeyLine *seen = setup_conf_group_is_object(group)
                                                      ? key_seen(keys, group, NULL)
                                                      : NULL;
                        if (seen)
                                return fail(ret_error, filename, lineno,
                                            "[%s] is defined twice: at %s:%u too", group,
                                            texts[seen->file].filename, seen->line);
                        key_add(keys, group, NULL, lineno, file);
                        continue;
                }

                eq = strchr(s, '=');
                if (!eq)
                        return fail(ret_error, filename, lineno,
                                    "'%s' is neither a [Group], a Key=Value line nor a comment", s);
                *eq = '\0';
                g_strchomp(s);
                if (*s == '\0')
                        return fail(ret_error, filename, lineno, "assignment without a key");
                if (!group)
                        return fail(ret_error, filename, lineno,
                                    "key %s= outside of any group (start with [" GROUP_NAMESPACES
                                    "] or [" GROUP_LIMITS "])",
                                    s);
                if (!strv_has(group_keys(group, NULL), s))
                        return fail(ret_error, filename, lineno, "unknown key %s= in [%s]", s,
                                    group);
                const KeyLine *k = key_seen(keys, group, s);
                if (k && k->file == file)
                        return fail(ret_error, filename, lineno,
                                    "%s= set twice in [%s] (first at line %u)", s, group, k->line);
                if (k)
                        return fail(ret_error, filename, lineno,
                                    "[%s] %s= is set in %s:%u already (a key is set in one file "
                                    "only)",
                                    group, s, texts[k->file].filename, k->line);
                key_add(keys, group, s, lineno, file);
        }
        return 0;
}

/* Where a key was set: its line, and its file in *ret_file (0: not set). */
static unsigned key_line_in(GPtrArray *keys, const ConfigText *texts, const char *group,
                            const char *key, const char **ret_file) {
        const KeyLine *k = key_seen(keys, group, key);

        if (!k)
                return 0;
        *ret_file = texts[k->file].filename;
        return k->line;
}

/* GKeyFile's escapes in a string value: \s \n \t \r \\. What is wrong with the first
 * other backslash of the raw value, or NULL if there is none. */
static char *bad_escape(const char *raw) {
        for (const char *p = raw; *p; p++) {
                if (*p != '\\')
                        continue;
                p++;
                if (*p == '\0')
                        return g_strdup("the value ends in a backslash, which escapes nothing "
                                        "(write \\\\ for a backslash)");
                if (!strchr("sntr\\", *p)) {
                        int n = g_utf8_skip[*(const guchar *) p];
                        return g_strdup_printf("'\\%.*s' is not an escape (known: \\s \\n "
                                               "\\t \\r \\\\; write \\\\ for a backslash)",
                                               n, p);
                }
        }
        return NULL;
}

/* A value GKeyFile could not read: name the group, the key, the raw value and what is wrong. */
static int fail_value(char **ret_error, const char *filename, GKeyFile *kf, const KeyLine *k,
                      const char *glib_message) {
        g_autofree char *raw = g_key_file_get_value(kf, k->group, k->key, NULL);
        g_autofree char *why = raw ? bad_escape(raw) : NULL;

        return fail(ret_error, filename, k->line, "[%s] %s=%s: %s", k->group, k->key,
                    raw ? raw : "", why ? why : glib_message);
}

static void key_files_free(GKeyFile **kfs) {
        for (GKeyFile **k = kfs; k && *k; k++)
                g_key_file_unref(*k);
        g_free(kfs);
}

int config_parse_text(const char *text, size_t len, const char *filename, Config *ret,
                      char **ret_error) {
        ConfigText t = { .text = text, .len = len, .filename = filename };

        g_return_val_if_fail(text || len == 0, -EINVAL);
        return config_parse_texts(&t, 1, ret, ret_error);
}

int config_parse_texts(const ConfigText *texts, size_t n, Config *ret, char **ret_error) {
        g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(key_line_free);
        GKeyFile **kfs = NULL;
        g_autoptr(GError) error = NULL;
        const char *filename = NULL;
        Config c;
        int r;

        g_return_val_if_fail(texts || n == 0, -EINVAL);
        g_return_val_if_fail(ret, -EINVAL);
        for (size_t f = 0; f < n; f++) {
                g_return_val_if_fail(texts[f].filename, -EINVAL);
                g_return_val_if_fail(texts[f].text || texts[f].len == 0, -EINVAL);
        }

        for (size_t f = 0; f < n; f++) {
                r = scan_lines(texts, f, keys, ret_error);
                if (r < 0)
                        return r;
        }

        /* The scan accepted every line; GKeyFile should too. If it does not, there is no line
         * to name: say line 1 rather than nothing. */
        kfs = g_new0(GKeyFile *, n + 1);
        for (size_t f = 0; f < n; f++) {
                kfs[f] = g_key_file_new();
                if (texts[f].len > 0 &&
                    !g_key_file_load_from_data(kfs[f], texts[f].text, texts[f].len, G_KEY_FILE_NONE,
                                               &error)) {
                        r = fail(ret_error, texts[f].filename, 1, "%s", error->message);
                        key_files_free(kfs);
                        return r;
                }
        }

        config_init_defaults(&c);

        for (guint i = 0; i < keys->len; i++) {
                KeyLine *k = g_ptr_array_index(keys, i);
                GKeyFile *kf = kfs[k->file];
                g_autofree char *value = NULL;
                unsigned long long v;
                g_autofree char *bad = NULL;

                filename = texts[k->file].filename;
                g_clear_error(&error);
                if (!k->key || setup_conf_group_keys(k->group, NULL)) {
                        g_autofree char *sv = NULL, *why = NULL;

                        if (k->key) {
                                sv = g_key_file_get_string(kf, k->group, k->key, &error);
                                if (!sv || error) {
                                        r = fail_value(ret_error, filename, kf, k,
                                                       error ? error->message
                                                             : "cannot read the value");
                                        goto fail;
                                }
                        }
                        r = setup_conf_set(&c.setup, k->group, k->key, sv, filename, k->line, &why);
                        if (r < 0) {
                                r = fail(ret_error, filename, k->line, "[%s] %s", k->group, why);
                                goto fail;
                        }
                        continue;
                }
                value = g_key_file_get_string(kf, k->group, k->key, &error);
                if (!value || error) {
                        /* With an invalid escape GKeyFile returns what it could read *and*
                         * an error: 'Linger=600\' would be read as 600. Refuse it. */
                        r = fail_value(ret_error, filename, kf, k,
                                       error ? error->message : "cannot read the value");
                        goto fail;
                }

#define KEY(name) (strcmp(k->key, name) == 0)
                if (KEY("Users") || KEY("Groups")) {
                        char **list = NULL;
                        if (config_parse_names(value, KEY("Users"), &list, &bad) < 0) {
                                r = fail(ret_error, filename, k->line,
                                         "%s=%s: '%s' is not a %s name or number%s", k->key, value,
                                         bad, KEY("Users") ? "user" : "group",
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
                        r = config_parse_uint(value, 1, (uid_t) -2, &v);
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
                        r = config_parse_word(value, propagation_words,
                                              G_N_ELEMENTS(propagation_words));
                        if (r < 0) {
                                r = fail(ret_error, filename, k->line,
                                         "Propagation=%s: expected 'slave' or 'private'", value);
                                goto fail;
                        }
                        c.propagation_private = r == 1;
                } else if (KEY("PrivateTmp") || KEY("Enable") || KEY("BornPrivate")) {
                        /* [Namespaces] PrivateTmp=, [Private] Enable= and BornPrivate= */
                        bool *field = KEY("PrivateTmp") ? &c.private_tmp
                                      : KEY("Enable")   ? &c.private_mode
                                                        : &c.born_private;

                        g_assert(KEY("PrivateTmp") || strcmp(k->group, GROUP_PRIVATE) == 0);
                        if (config_parse_bool(value, field) < 0) {
                                r = fail(ret_error, filename, k->line, "%s=%s: expected yes or no",
                                         k->key, value);
                                goto fail;
                        }
                } else if (KEY("OnLookupTimeout")) {
                        r = config_parse_word(value, lookup_timeout_words,
                                              G_N_ELEMENTS(lookup_timeout_words));
                        if (r < 0) {
                                r = fail(ret_error, filename, k->line,
                                         "OnLookupTimeout=%s: expected 'refuse' or 'unmanaged'",
                                         value);
                                goto fail;
                        }
                        c.lookup_timeout_unmanaged = r == 1;
                } else if (KEY("Linger")) {
                        if (strcmp(value, "forever") == 0 || strcmp(value, "infinity") == 0)
                                c.linger_sec = CONFIG_LINGER_FOREVER;
                        else if (config_parse_uint(value, 0, INT32_MAX, &v) == 0)
                                c.linger_sec = (int64_t) v;
                        else {
                                r = fail(ret_error, filename, k->line,
                                         "Linger=%s: expected 'forever' or seconds (0..%d)", value,
                                         INT32_MAX);
                                goto fail;
                        }
                } else {
                        const LimitKey *lk = limit_key(k->key);
                        char a[32], b[32];

                        g_assert(lk && strcmp(k->group, GROUP_LIMITS) == 0);
                        if (lk->kind == LIMIT_COUNT) {
                                if (config_parse_uint(value, lk->min, lk->max, &v) < 0) {
                                        r = fail(ret_error, filename, k->line,
                                                 "%s=%s: expected a number between %llu and %llu",
                                                 k->key, value, lk->min, lk->max);
                                        goto fail;
                                }
                                *(unsigned *) ((char *) &c + lk->offset) = (unsigned) v;
                        } else {
                                if (config_parse_usec(value, lk->min, lk->max, &v) < 0) {
                                        r = fail(ret_error, filename, k->line,
                                                 "%s=%s: expected seconds (decimals allowed) "
                                                 "between %s and %s",
                                                 k->key, value,
                                                 config_usec_to_string(lk->min, a, sizeof a),
                                                 config_usec_to_string(lk->max, b, sizeof b));
                                        goto fail;
                                }
                                *(uint64_t *) ((char *) &c + lk->offset) = v;
                        }
                }
#undef KEY
        }

        if (c.min_uid > c.max_uid) {
                unsigned line = key_line_in(keys, texts, GROUP_NAMESPACES, "MinUid", &filename);
                if (line == 0)
                        line = key_line_in(keys, texts, GROUP_NAMESPACES, "MaxUid", &filename);
                r = fail(ret_error, filename, line, "MinUid=%u is larger than MaxUid=%u",
                         (unsigned) c.min_uid, (unsigned) c.max_uid);
                goto fail;
        }
        if (c.max_connections_per_user > c.max_connections) {
                unsigned line = key_line_in(keys, texts, GROUP_LIMITS, "MaxConnectionsPerUser",
                                            &filename);
                if (line == 0)
                        line = key_line_in(keys, texts, GROUP_LIMITS, "MaxConnections", &filename);
                r = fail(ret_error, filename, line,
                         "MaxConnectionsPerUser=%u is larger than MaxConnections=%u",
                         c.max_connections_per_user, c.max_connections);
                goto fail;
        }
        if (c.reserved_connections != CONFIG_RESERVED_AUTO &&
            c.reserved_connections >= c.max_connections) {
                unsigned line = key_line_in(keys, texts, GROUP_LIMITS, "ReservedConnections",
                                            &filename);
                if (line == 0)
                        line = key_line_in(keys, texts, GROUP_LIMITS, "MaxConnections", &filename);
                r = fail(ret_error, filename, line,
                         "ReservedConnections=%u leaves no connection of MaxConnections=%u to "
                         "uids outside MinUid..MaxUid; it must be smaller",
                         c.reserved_connections, c.max_connections);
                goto fail;
        }
        if (c.private_tmp) {
                unsigned line = key_line_in(keys, texts, GROUP_NAMESPACES, "PrivateTmp", &filename);
                r = setup_conf_finish(&c.setup, true, filename, line, ret_error);
        } else
                r = setup_conf_finish(&c.setup, false, NULL, 0, ret_error);
        if (r < 0)
                goto fail;

        key_files_free(kfs);
        *ret = c;
        return 0;
fail:
        key_files_free(kfs);
        config_done(&c);
        return r;
}

int config_load(const char *path, Config *ret, bool *ret_missing, char **ret_error) {
        g_autoptr(ConfigFiles) files = NULL;
        bool missing = false;
        int r;

        r = config_files_read(path, &files, &missing, ret_error);
        if (r < 0)
                return r;
        r = config_parse_texts(files->texts, files->n, ret, ret_error);
        if (r < 0)
                return r;
        if (ret_missing)
                *ret_missing = missing;
        return 0;
}

/* The reason for "not managed" once every rule was tried. */
char *config_not_managed_why(const Config *c, uid_t uid) {
        if (g_strv_contains((const char *const *) c->users, "@regular"))
                return g_strdup_printf("uid %u is outside MinUid=%u..MaxUid=%u and not listed "
                                       "in Users= or Groups= of nsd.conf",
                                       (unsigned) uid, (unsigned) c->min_uid,
                                       (unsigned) c->max_uid);
        return g_strdup_printf("uid %u is not listed in Users= or Groups= of nsd.conf",
                               (unsigned) uid);
}

int config_uid_managed_inline(const Config *c, uid_t uid, char **ret_why) {
        bool names = false;

        if (uid == 0 || uid == UID_NOBODY || uid == (uid_t) -1) {
                if (ret_why)
                        *ret_why = g_strdup_printf("uid %u never gets a namespace", (unsigned) uid);
                return 0;
        }
        for (char **u = c->users; u && *u; u++) {
                if (strcmp(*u, "@regular") == 0) {
                        if (uid >= c->min_uid && uid <= c->max_uid)
                                return 1;
                } else if (g_ascii_isdigit(**u)) {
                        if ((uid_t) strtoul(*u, NULL, 10) == uid)
                                return 1;
                } else
                        names = true;
        }
        if (names || (c->groups && c->groups[0]))
                return CONFIG_NEEDS_LOOKUP;
        if (ret_why)
                *ret_why = config_not_managed_why(c, uid);
        return 0;
}

int config_uid_managed_lookup(const Config *c, uid_t uid, char **ret_why) {
        g_autofree struct passwd *pw = NULL;
        g_autofree gid_t *gids = NULL;
        size_t n_gids = 0;
        int r;

        r = config_uid_managed_inline(c, uid, ret_why);
        if (r != CONFIG_NEEDS_LOOKUP)
                return r;

        r = nss_user_by_uid(uid, &pw);
        if (r == -ENOENT) {
                if (ret_why)
                        *ret_why = g_strdup_printf("uid %u has no entry in the user database, "
                                                   "so no name in Users= or Groups= of "
                                                   "nsd.conf can match it",
                                                   (unsigned) uid);
                return 0;
        }
        if (r < 0) {
                if (ret_why)
                        *ret_why = g_strdup_printf("cannot look up uid %u in the user "
                                                   "database: %s",
                                                   (unsigned) uid, g_strerror(-r));
                return r;
        }
        for (char **u = c->users; u && *u; u++)
                if (strcmp(*u, pw->pw_name) == 0)
                        return 1;

        if (!c->groups || !c->groups[0]) {
                if (ret_why)
                        *ret_why = config_not_managed_why(c, uid);
                return 0;
        }
        r = nss_user_groups(pw->pw_name, pw->pw_gid, &gids, &n_gids);
        if (r < 0) {
                if (ret_why)
                        *ret_why = g_strdup_printf("cannot look up the groups of '%s' (uid %u): "
                                                   "%s",
                                                   pw->pw_name, (unsigned) uid, g_strerror(-r));
                return r;
        }
        for (char **g = c->groups; *g; g++) {
                gid_t gid;

                if (g_ascii_isdigit(**g))
                        gid = (gid_t) strtoul(*g, NULL, 10);
                else {
                        g_autofree struct group *gr = NULL;

                        r = nss_group_by_name(*g, &gr);
                        if (r == -ENOENT)
                                continue; /* a group that does not exist has no members */
                        if (r < 0) {
                                if (ret_why)
                                        *ret_why = g_strdup_printf("cannot look up group '%s': "
                                                                   "%s",
                                                                   *g, g_strerror(-r));
                                return r;
                        }
                        gid = gr->gr_gid;
                }
                for (size_t i = 0; i < n_gids; i++)
                        if (gids[i] == gid)
                                return 1;
        }
        if (ret_why)
                *ret_why = config_not_managed_why(c, uid);
        return 0;
}

bool config_uid_managed(const Config *c, uid_t uid, char **ret_why) {
        return config_uid_managed_lookup(c, uid, ret_why) == 1;
}

const char *config_usec_to_string(uint64_t usec, char *buf, size_t size) {
        uint64_t ms = (usec + 500) / 1000;

        if (ms % 1000 == 0)
                snprintf(buf, size, "%llu", (unsigned long long) (ms / 1000));
        else {
                snprintf(buf, size, "%llu.%03llu", (unsigned long long) (ms / 1000),
                         (unsigned long long) (ms % 1000));
                /* "0.250" -> "0.25" */
                for (size_t n = strlen(buf); n > 0 && buf[n - 1] == '0'; n--)
                        buf[n - 1] = '\0';
        }
        return buf;
}

unsigned config_reserved_connections(const Config *c) {
        return c->reserved_connections == CONFIG_RESERVED_AUTO ? c->max_connections / 4
                                                               : c->reserved_connections;
}

const char *config_linger_to_string(const Config *c, char *buf, size_t size) {
        if (c->linger_sec == CONFIG_LINGER_FOREVER)
                snprintf(buf, size, "Linger=forever");
        else
                snprintf(buf, size, "Linger=%lld", (long long) c->linger_sec);
        return buf;
}
