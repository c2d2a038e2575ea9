/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench/lib/options: see options.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "list.h"

/* what an option of the table does with its argument */
static void option_set(const struct bench_option *o, const char *arg) {
        char name[64];

        snprintf(name, sizeof(name), "--%s", o->name);
        switch (o->type) {
        case BENCH_STRING:
                *(const char **) o->var = arg;
                break;
        case BENCH_UNSIGNED:
                *(unsigned *) o->var = list_uint(name, arg, o->lo, o->hi);
                break;
        case BENCH_INT: {
                char *end = NULL;
                long v;

                errno = 0;
                v = strtol(arg, &end, 10);
                if (errno || !*arg || *end || v < INT_MIN || v > INT_MAX) {
                        fprintf(stderr, "%s: %s wants a number, not '%s'\n",
                                program_invocation_short_name, name, arg);
                        exit(2);
                }
                *(int *) o->var = (int) v;
                break;
        }
        case BENCH_DOUBLE:
                *(double *) o->var = strtod(arg, NULL);
                break;
        case BENCH_FLAG:
                *(bool *) o->var = true;
                break;
        case BENCH_LIST:
                *o->n = list_option(name, arg, o->lo, o->hi, o->var, o->max);
                break;
        case BENCH_CALL:
                o->call(arg);
                break;
        }
}

int options_parse(int argc, char *argv[], const struct bench_option *common, size_t n_common,
                  const struct bench_option *own, size_t n_own, bool in_order, void (*help)(void)) {
        size_t n = n_common + n_own;
        struct option *opts = calloc(n + 2, sizeof(*opts));
        int o;

        if (!opts) {
                fprintf(stderr, "%s: out of memory\n", program_invocation_short_name);
                exit(1);
        }
        /* getopt_long()'s value of option i is 0x100 + i */
        for (size_t i = 0; i < n; i++) {
                const struct bench_option *b = i < n_common ? &common[i] : &own[i - n_common];

                opts[i] = (struct option) { b->name,
                                            b->type == BENCH_FLAG ? no_argument : required_argument,
                                            NULL, 0x100 + (int) i };
        }
        opts[n] = (struct option) { "help", no_argument, NULL, 'h' };
        while ((o = getopt_long(argc, argv, in_order ? "+h" : "h", opts, NULL)) >= 0) {
                if (o == 'h') {
                        help();
                        exit(0);
                }
                if (o < 0x100 || (size_t) (o - 0x100) >= n) {
                        fprintf(stderr, "%s: see --help\n", program_invocation_short_name);
                        exit(2);
                }
                o -= 0x100;
                option_set((size_t) o < n_common ? &common[o] : &own[(size_t) o - n_common],
                           optarg);
        }
        free(opts);
        return optind;
}
