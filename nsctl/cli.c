/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int usage_error(const char *fmt, ...) {
        va_list ap;

        fputs("nsctl: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputs("\nTry 'nsctl --help' for more information.\n", stderr);
        return EXIT_FAILURE;
}

int option_error(int c, char *const argv[]) {
        const char *arg = argv[optind - 1];

        if (c == ':') {
                if (strncmp(arg, "--", 2) == 0)
                        return usage_error("option '%s' requires an argument", arg);
                return usage_error("option requires an argument -- '%c'", optopt);
        }
        if (optopt > 0 && optopt < 0x100 && strncmp(arg, "--", 2) != 0)
                return usage_error("invalid option -- '%c'", optopt);
        return usage_error("unrecognized option '%s'", arg);
}

static const char *long_name(int c, const struct option *options) {
        for (const struct option *o = options; o->name; o++)
                if (o->val == c && !o->flag)
                        return o->name;
        return NULL;
}

int exclusive_options(int c, const struct option *options, const excl_group_t *groups,
                      size_t n_groups, int *status) {
        for (size_t g = 0; g < n_groups; g++) {
                char names[EXCL_GROUP_MAX * 40] = "";
                bool member = false;

                for (const int *o = groups[g]; *o; o++)
                        member = member || *o == c;
                if (!member)
                        continue;
                if (status[g] == 0 || status[g] == c) {
                        status[g] = c;
                        continue;
                }
                for (const int *o = groups[g]; *o; o++) {
                        const char *n = long_name(*o, options);
                        size_t len = strlen(names);

                        if (n)
                                snprintf(names + len, sizeof(names) - len, " --%s", n);
                        else
                                snprintf(names + len, sizeof(names) - len, " -%c", *o);
                }
                return usage_error("mutually exclusive arguments:%s", names);
        }
        return 0;
}

/* As util-linux's flush_standard_stream(): 0, or EOF with errno (0 when the stream only
 * remembers that a write failed, not why). */
static int flush_standard_stream(FILE *stream) {
        int fd;

        errno = 0;
        if (ferror(stream) || fflush(stream) != 0)
                goto error;
        /* fflush() does not see every error (an unbuffered stream, NFS reporting at close):
         * close a duplicate of the descriptor too */
        fd = fileno(stream);
        if (fd < 0 || (fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0 || close(fd) != 0)
                goto error;
        return 0;
error:
        return errno == EBADF ? 0 : EOF; /* a closed stdout was not written to */
}

void close_stdout(void) {
        if (flush_standard_stream(stdout) != 0 && errno != EPIPE) {
                if (errno)
                        fprintf(stderr, "nsctl: write error: %s\n", strerror(errno));
                else
                        fputs("nsctl: write error\n", stderr);
                _exit(EXIT_FAILURE);
        }
        if (flush_standard_stream(stderr) != 0)
                _exit(EXIT_FAILURE);
}
