/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench/lib/list: see list.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "list.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value p[0..len) (not empty) into *v: 0, or -1 with what is wrong in err. */
static int parse_value(const char *p, size_t len, unsigned lo, unsigned hi, unsigned *v, char *err,
                       size_t err_size) {
        unsigned long long x = 0;
        size_t i;

        /* x stops growing past hi: no overflow, and it stays out of range */
        for (i = 0; i < len && p[i] >= '0' && p[i] <= '9'; i++)
                if (x <= hi)
                        x = x * 10 + (unsigned) (p[i] - '0');
        if (i < len) {
                snprintf(err, err_size, "'%.*s' is not a number", (int) len, p);
                return -1;
        }
        if (x < lo || x > hi) {
                snprintf(err, err_size, "%.*s is out of range %u..%u", (int) len, p, lo, hi);
                return -1;
        }
        *v = (unsigned) x;
        return 0;
}

int list_parse(const char *s, unsigned lo, unsigned hi, unsigned *v, size_t max, char *err,
               size_t err_size) {
        size_t n = 0;

        if (!*s) {
                snprintf(err, err_size, "an empty list");
                return -1;
        }
        for (const char *p = s;; p++) {
                size_t len = strcspn(p, ",");

                if (n == max) {
                        snprintf(err, err_size, "more than %zu values", max);
                        return -1;
                }
                if (len == 0) {
                        snprintf(err, err_size, "an empty value in '%s'", s);
                        return -1;
                }
                if (parse_value(p, len, lo, hi, &v[n], err, err_size) < 0)
                        return -1;
                n++;
                p += len;
                if (!*p)
                        return (int) n;
        }
}

size_t list_option(const char *option, const char *s, unsigned lo, unsigned hi, unsigned *v,
                   size_t max) {
        char err[160];
        int n = list_parse(s, lo, hi, v, max, err, sizeof(err));

        if (n < 0) {
                fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, option, err);
                exit(2);
        }
        return (size_t) n;
}

int list_parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *v, char *err,
                    size_t err_size) {
        if (!*s) {
                snprintf(err, err_size, "an empty value");
                return -1;
        }
        return parse_value(s, strlen(s), lo, hi, v, err, err_size);
}

unsigned list_uint(const char *option, const char *s, unsigned lo, unsigned hi) {
        char err[160];
        unsigned v;

        if (list_parse_uint(s, lo, hi, &v, err, sizeof(err)) < 0) {
                fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, option, err);
                exit(2);
        }
        return v;
}
