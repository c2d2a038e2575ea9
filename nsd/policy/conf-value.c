/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* conf-value.c: nsd.conf's value syntax, see conf-value.h. */
#include "policy/conf-value.h"

#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "time-util.h"

int config_parse_uint(const char *s, unsigned long long min, unsigned long long max,
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

int config_parse_usec(const char *s, unsigned long long min, unsigned long long max,
                      unsigned long long *ret) {
        unsigned long long sec = 0, frac = 0, scale = USEC_PER_SEC, v;
        const char *p = s;

        if (!g_ascii_isdigit(*p))
                return -EINVAL;
        for (; g_ascii_isdigit(*p); p++) {
                if (sec > 86400ull * 365)
                        return -ERANGE;
                sec = sec * 10 + (unsigned) (*p - '0');
        }
        if (*p == '.') {
                p++;
                if (!g_ascii_isdigit(*p))
                        return -EINVAL;
                for (; g_ascii_isdigit(*p); p++) {
                        if (scale == 1)
                                return -EINVAL; /* finer than a microsecond */
                        scale /= 10;
                        frac += (unsigned) (*p - '0') * scale;
                }
        }
        if (*p != '\0')
                return -EINVAL;
        v = sec * USEC_PER_SEC + frac;
        if (v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int config_parse_bool(const char *s, bool *ret) {
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

int config_parse_word(const char *value, const char *const *words, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (words[i] && strcmp(words[i], value) == 0)
                        return (int) i;
        return -EINVAL;
}

int config_parse_names(const char *value, bool users, char ***ret, char **ret_bad) {
        g_auto(GStrv) words = g_strsplit_set(value, " \t,;", -1);
        g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(g_free);

        for (char **w = words; *w; w++) {
                unsigned long long v;

                if (**w == '\0')
                        continue;
                if (users && strcmp(*w, "@regular") == 0) {
                } else if (g_ascii_isdigit(**w)) {
                        if (config_parse_uint(*w, 0, (uid_t) -2, &v) < 0) {
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
