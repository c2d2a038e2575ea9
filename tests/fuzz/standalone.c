/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * standalone.c: main() for a fuzz harness without libFuzzer. Runs LLVMFuzzerTestOneInput()
 * once on every file named on the command line and every regular file in every folder
 * named (not recursive), in name order, and prints one TAP line per input. A harness's
 * property failure or a sanitizer report aborts the program, so the test fails and the
 * last "# input" line names the input. Used for the seed corpora and the regression inputs
 * (tests/fuzz/regressions/) in the unit suite, with gcc and with the sanitizers.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "tap.h"

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

/* the input being run, for the line on stderr when it aborts */
static char current[4096];

static void on_abort(int sig) {
        static const char pre[] = "fuzz: the input that failed: ";
        (void) !write(STDERR_FILENO, pre, sizeof pre - 1);
        (void) !write(STDERR_FILENO, current, strlen(current));
        (void) !write(STDERR_FILENO, "\n", 1);
        signal(sig, SIG_DFL);
        raise(sig);
}

static int run_file(const char *path) {
        FILE *f = fopen(path, "rbe");
        uint8_t *buf = NULL;
        size_t n = 0, cap = 0;

        if (!f)
                return -errno;
        for (;;) {
                if (cap - n < 4096) {
                        uint8_t *b = realloc(buf, cap + 65536);
                        if (!b) {
                                fclose(f);
                                free(buf);
                                return -ENOMEM;
                        }
                        buf = b;
                        cap += 65536;
                }
                size_t k = fread(buf + n, 1, cap - n, f);
                n += k;
                if (k == 0)
                        break;
        }
        fclose(f);
        /* the exact size on the heap, so that ASan sees any read past the input */
        uint8_t *exact = malloc(n ? n : 1);
        if (!exact) {
                free(buf);
                return -ENOMEM;
        }
        memcpy(exact, buf, n);
        free(buf);
        printf("# input %s (%zu bytes)\n", path, n);
        fflush(stdout);
        snprintf(current, sizeof current, "%s", path);
        LLVMFuzzerTestOneInput(exact, n);
        free(exact);
        return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
        return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv) {
        signal(SIGABRT, on_abort);
        if (LLVMFuzzerInitialize)
                LLVMFuzzerInitialize(&argc, &argv);

        for (int i = 1; i < argc; i++) {
                struct stat st;
                struct dirent **names = NULL;
                int n;

                if (stat(argv[i], &st) < 0) {
                        /* a regression folder that has no inputs yet need not exist */
                        ok(errno == ENOENT, "%s: %s", argv[i], strerror(errno));
                        continue;
                }
                if (!S_ISDIR(st.st_mode)) {
                        int r = run_file(argv[i]);
                        ok(r == 0, "%s%s%s", argv[i], r < 0 ? ": " : "", r < 0 ? strerror(-r) : "");
                        continue;
                }
                n = scandir(argv[i], &names, NULL, by_name);
                if (n < 0) {
                        ok(false, "%s: cannot read the folder: %s", argv[i], strerror(errno));
                        continue;
                }
                for (int k = 0; k < n; k++) {
                        char path[4096];
                        struct stat fst;

                        snprintf(path, sizeof path, "%s/%s", argv[i], names[k]->d_name);
                        if (stat(path, &fst) == 0 && S_ISREG(fst.st_mode) &&
                            names[k]->d_name[0] != '.') {
                                int r = run_file(path);
                                ok(r == 0, "%s%s%s", path, r < 0 ? ": " : "",
                                   r < 0 ? strerror(-r) : "");
                        }
                        free(names[k]);
                }
                free(names);
        }
        if (tap_n_test == 0)
                ok(false, "no inputs found");
        return tap_done();
}
