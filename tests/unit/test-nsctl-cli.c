/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * test-nsctl-cli: nsctl's command line without nsd: --help, --version, usage errors and
 * connection errors. Argument 1: the nsctl binary. No root needed, nothing left behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "nsd-protocol.h"
#include "tap.h"

static const char *nsctl;
struct run {
        int status; /* exit status, or -1 */
        char out[16384];
        char err[4096];
};

static void read_all(int fd, char *buf, size_t size) {
        size_t off = 0;
        ssize_t n;

        while (off + 1 < size && (n = read(fd, buf + off, size - 1 - off)) > 0)
                off += (size_t) n;
        buf[off] = '\0';
}

/* run nsctl with the given arguments (NULL-terminated) */
static void run(struct run *r, ...) {
        const char *argv[32] = { nsctl };
        int out[2], err[2], st;
        size_t n = 1;
        va_list ap;
        pid_t pid;

        va_start(ap, r);
        while (n < 31 && (argv[n] = va_arg(ap, const char *)))
                n++;
        va_end(ap);
        argv[n] = NULL;

        memset(r, 0, sizeof(*r));
        r->status = -1;
        if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
                return;
        pid = fork();
        if (pid < 0)
                return;
        if (pid == 0) {
                dup2(out[1], STDOUT_FILENO);
                dup2(err[1], STDERR_FILENO);
                execv(nsctl, (char **) argv);
                _exit(99);
        }
        close(out[1]);
        close(err[1]);
        /* outputs are small: stderr is at most a few lines, so reading stdout first is safe */
        read_all(out[0], r->out, sizeof(r->out));
        read_all(err[0], r->err, sizeof(r->err));
        close(out[0]);
        close(err[0]);
        if (waitpid(pid, &st, 0) == pid && WIFEXITED(st))
                r->status = WEXITSTATUS(st);
}

static int ends_with(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);

        return a >= b && strcmp(s + a - b, suffix) == 0;
}

static const char try_help[] = "Try 'nsctl --help' for more information.\n";

int main(int argc, char **argv) {
        static const char *verbs[] = { "status", "list", "show", "enter", "release" };
        char want[256];
        struct run r;

        if (argc != 2) {
                tap_skip("usage: test-nsctl-cli PATH-TO-NSCTL");
                return tap_done();
        }
        nsctl = argv[1];

        run(&r, "--help", NULL);
        ok(r.status == 0 && ends_with(r.out, "See nsctl(1).\n") && r.err[0] == '\0',
           "--help: exit 0, stdout ends with 'See nsctl(1).'");
        ok(strstr(r.out, "Usage:\n nsctl ") != NULL, "--help: starts with a usage line");
        for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
                ok(strstr(r.out, verbs[i]) != NULL, "--help names '%s'", verbs[i]);

        for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
                run(&r, verbs[i], "--help", NULL);
                ok(r.status == 0 && ends_with(r.out, "See nsctl(1).\n"),
                   "%s --help: exit 0, ends with 'See nsctl(1).'", verbs[i]);
        }
        run(&r, "list", "--help", NULL);
        ok(strstr(r.out, "PINNED") && strstr(r.out, "ADOPTED"), "list --help lists the columns");

        run(&r, "--version", NULL);
        snprintf(want, sizeof(want), "nsctl %s (nsd protocol %d.%d)\n", PACKAGE_VERSION,
                 NSD_PROTO_MAJOR, NSD_PROTO_MINOR);
        ok(r.status == 0 && strcmp(r.out, want) == 0, "--version: '%.*s'", (int) strcspn(r.out, "\n"), r.out);
        run(&r, "-V", NULL);
        ok(r.status == 0 && strcmp(r.out, want) == 0, "-V is --version");

        /* usage errors: one line, the hint, exit 1, nothing on stdout */
        run(&r, NULL);
        ok(r.status == 1 && strcmp(r.err, "nsctl: no command given\nTry 'nsctl --help' for more information.\n") == 0 &&
           r.out[0] == '\0', "no command: exit 1 with a hint");
        run(&r, "frobnicate", NULL);
        ok(r.status == 1 && strncmp(r.err, "nsctl: unknown command 'frobnicate'\n", 36) == 0 &&
           ends_with(r.err, try_help), "unknown command: exit 1 with a hint");
        run(&r, "--bogus", "status", NULL);
        ok(r.status == 1 && strncmp(r.err, "nsctl: unrecognized option '--bogus'\n", 37) == 0,
           "unknown global option: '%.*s'", (int) strcspn(r.err, "\n"), r.err);
        run(&r, "list", "-x", NULL);
        ok(r.status == 1 && strncmp(r.err, "nsctl: invalid option -- 'x'\n", 29) == 0 && ends_with(r.err, try_help),
           "unknown short option: '%.*s'", (int) strcspn(r.err, "\n"), r.err);
        run(&r, "list", "--output", NULL);
        ok(r.status == 1 && strncmp(r.err, "nsctl: option '--output' requires an argument\n", 46) == 0,
           "missing option argument: '%.*s'", (int) strcspn(r.err, "\n"), r.err);
        run(&r, "list", "-o", "USER,BOGUS", NULL);
        ok(r.status == 1 && strncmp(r.err, "nsctl: unknown column: BOGUS\n", 29) == 0,
           "unknown column: '%.*s'", (int) strcspn(r.err, "\n"), r.err);
        run(&r, "show", "-o", "TARGET,NOPE", "root", NULL);
        ok(r.status == 1 && strncmp(r.err, "nsctl: unknown column: NOPE\n", 28) == 0,
           "show: unknown column");
        run(&r, "list", "extra", NULL);
        ok(r.status == 1 && strncmp(r.err, "nsctl: list: unexpected argument 'extra'\n", 41) == 0,
           "list: extra argument refused");
        run(&r, "show", NULL);
        ok(r.status == 1 && strncmp(r.err, "nsctl: show: missing user\n", 26) == 0 && ends_with(r.err, try_help),
           "show: missing user");
        run(&r, "release", NULL);
        ok(r.status == 1 && strncmp(r.err, "nsctl: release: missing user\n", 29) == 0, "release: missing user");
        run(&r, "enter", NULL);
        ok(r.status == 1 && strncmp(r.err, "nsctl: enter: missing user\n", 27) == 0, "enter: missing user");
        run(&r, "show", "nsctl-test-no-such-user", NULL);
        ok(r.status == 1 && strncmp(r.err, "nsctl: unknown user 'nsctl-test-no-such-user'\n", 46) == 0,
           "unknown user name: '%.*s'", (int) strcspn(r.err, "\n"), r.err);
        run(&r, "show", "4294967295", NULL);
        ok(r.status == 1 && strncmp(r.err, "nsctl: invalid user '4294967295'\n", 33) == 0,
           "uid -1 refused");
        run(&r, "show", "root", "extra", NULL);
        ok(r.status == 1 && strstr(r.err, "unexpected argument 'extra'"), "show: extra argument refused");
        run(&r, "enter", "--mode", "teleport", "root", NULL);
        ok(r.status == 1 && strncmp(r.err, "nsctl: unknown mode 'teleport'", 30) == 0, "enter: unknown mode");

        /* connection errors: nothing listens at these paths */
        run(&r, "--socket", "/nonexistent/nsctl-test/socket", "status", NULL);
        ok(r.status == 1 && strncmp(r.err, "nsctl: cannot connect to nsd at /nonexistent/nsctl-test/socket: ", 64) == 0 &&
           r.out[0] == '\0', "status, no nsd: '%.*s'", (int) strcspn(r.err, "\n"), r.err);
        run(&r, "list", "--socket", "/nonexistent/nsctl-test/socket2", NULL);
        ok(r.status == 1 && strncmp(r.err, "nsctl: cannot connect to nsd at /nonexistent/nsctl-test/socket2: ", 65) == 0,
           "--socket after the command");
        /* meson sets NSD_SOCKET for this test */
        if (getenv("NSD_SOCKET")) {
                snprintf(want, sizeof(want), "nsctl: cannot connect to nsd at %s: ", getenv("NSD_SOCKET"));
                run(&r, "show", "0", NULL);
                ok(r.status == 1 && strncmp(r.err, want, strlen(want)) == 0, "$NSD_SOCKET is used: '%.*s'",
                   (int) strcspn(r.err, "\n"), r.err);
        }
        run(&r, "release", "--force", "0", "--socket", "/nonexistent/nsctl-test/socket", NULL);
        ok(r.status == 1 && strstr(r.err, "cannot connect to nsd at /nonexistent/nsctl-test/socket:"),
           "release: connection error");
        if (geteuid() != 0) {
                run(&r, "enter", "0", "--", "true", NULL);
                ok(r.status == 1 && strcmp(r.err, "nsctl: cannot enter: only root may enter another user's namespace\n") == 0,
                   "enter without root refused before talking to nsd");
        } else {
                run(&r, "enter", "--socket", "/nonexistent/nsctl-test/socket", "0", "--", "true", NULL);
                ok(r.status == 1 && strstr(r.err, "cannot connect to nsd at /nonexistent/nsctl-test/socket:"),
                   "enter as root: connection error, command not run");
        }

        return tap_done();
}
