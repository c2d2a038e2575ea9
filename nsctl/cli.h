/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * nsctl: command-line plumbing in util-linux's manner (include/optutils.h,
 * include/closestream.h): usage errors, options that exclude each other, and write errors
 * on stdout found at exit. Private to nsctl.
 */
#pragma once

#include <getopt.h>
#include <stddef.h>

/* In every --help (util-linux's USAGE_HELP_OPTIONS and USAGE_MAN_TAIL): the options each
 * command has, their descriptions indented by pad more than the default, and the last line. */
#define USAGE_COMMON_OPTIONS(pad)                     \
        "     --socket <path>  " pad "nsd's socket\n" \
        " -h, --help           " pad "display this help\n"
#define USAGE_MAN_TAIL "\nSee nsctl(1).\n"

/* "nsctl: <message>" and "Try 'nsctl --help' ..." on stderr; returns EXIT_FAILURE. */
__attribute__((format(printf, 1, 2))) int usage_error(const char *fmt, ...);

/* getopt_long() (with opterr = 0) returned '?' or ':': say what was wrong, as getopt
 * would. Returns EXIT_FAILURE. */
int option_error(int c, char *const argv[]);

/*
 * Options that exclude each other, as util-linux's err_exclusive_options(): each group is a
 * 0-terminated list of option values (as getopt_long returns them). Call it for every option
 * parsed, with status[] (one int per group, zeroed) kept across the calls. Returns 0, or
 * EXIT_FAILURE after "nsctl: mutually exclusive arguments: --json --raw" (and the --help
 * hint) when c is the second, different option of one group.
 */
#define EXCL_GROUP_MAX 4
typedef int excl_group_t[EXCL_GROUP_MAX + 1];

int exclusive_options(int c, const struct option *options, const excl_group_t *groups,
                      size_t n_groups, int *status);

/* For atexit(): flush stdout and check that everything written reached it; on a write error
 * (not EPIPE) "nsctl: write error: <strerror>" and _exit(EXIT_FAILURE). Then stderr. */
void close_stdout(void);
