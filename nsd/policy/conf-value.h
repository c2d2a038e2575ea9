/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conf-value.h: nsd.conf's value syntax, shared by the parser of nsd.conf (conf.c) and of
 * what a namespace is made of (setup-conf.c), below both.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A decimal number within min..max: 0, -EINVAL (not one), -ERANGE. */
int config_parse_uint(const char *s, unsigned long long min, unsigned long long max,
                      unsigned long long *ret);
/* yes/no/true/false/on/off/1/0 */
int config_parse_bool(const char *s, bool *ret);
/* Seconds with up to six decimals ("5", "0.25"), to microseconds, within min..max. */
int config_parse_usec(const char *s, unsigned long long min, unsigned long long max,
                      unsigned long long *ret);
/* One of the n words (NULL entries are holes, for tables indexed by an enum): its index, or
 * -EINVAL. The caller names what it expected in its own error. */
int config_parse_word(const char *value, const char *const *words, size_t n);
/* User (or group) names and numbers separated by spaces, commas or semicolons (@regular when
 * users): a NULL-terminated list (g_strfreev()), or -EINVAL with *ret_bad naming a bad word. */
int config_parse_names(const char *value, bool users, char ***ret, char **ret_bad);
