/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * test-nsctl-cli: nsctl as a user meets it, run as a program against the shared fake nsd
 * (fake-nsd.h, served by a thread of this process on a socket in a temp folder):
 *  - --help, --version, usage errors, options that exclude each other, connection errors;
 *  - write errors on stdout (/dev/full) found at exit, for --help, list, show, status;
 *  - every --json is valid JSON (python3's json module), also for bytes that are not UTF-8;
 *  - the tables of list and show, user names through nss_wrapper's files (written here), so
 *    the host's accounts play no part;
 *  - enter: what a user without privilege is told when nsd (or the kernel) refuses, the
 *    command run when the caller already is in the namespace, and, as root, a command run in
 *    another mount namespace (a sandbox child's: unshare(CLONE_NEWNS), private) in both modes;
 *  - release and hide: what reaches nsd and what nsd's refusals look like;
 *  - start and stop of a kernel volume (VOLUME_START, VOLUME_STOP: the uid and name sent, the
 *    line printed, nsd's refusal, an nsd older than 1.11 not asked), start-volumes (only the
 *    caller's AT_LOGIN volumes not mounted, one refusal not stopping the others), the state
 *    "stopped" in volumes' table and JSON;
 *  - metrics: the same series for 1 namespace or 100000, gauges that agree with status
 *    --json, --textfile written atomically (replaced, 0644, no temp file left), refusals, an
 *    nsd older than 1.4 not asked;
 *  - every form of output (help, usage errors, tables, JSON, refusals) byte for byte against
 *    the files in tests/unit/nsctl/golden/ (argument 2; NSCTL_GOLDEN_RECORD=1 in the
 *    environment writes them anew, for a change of output that is meant).
 * As root, the "user" cases run nsctl as uid 1500 (alice of the passwd file here).
 * Argument 1: the nsctl binary; 2: the folder of golden files. Nothing is left behind.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "fake-nsd.h"
#include "nsd-protocol.h"
#include "tap.h"

#define ALICE 1500u
#define BOB 1600u
#define NO_NAME 4242u

static const char *nsctl;
static char tmpdir[] = "/tmp/test-nsctl.XXXXXX";
static char sock_path[128], nss_passwd[128], nss_group[128], json_path[128];
static bool is_root, have_nss_wrapper;
/* As root: can uid 1500 run nsctl at all? Not when the build folder lies under a folder
 * only root may search (a clone in a 0700 home, dpkg-buildpackage's temp folder). */
static bool alice_can_run;
static int lfd = -1;

struct run {
        int status; /* exit status, or -1 */
        char out[65536];
        char err[4096];
};

struct run_opts {
        uid_t uid;               /* as root: run nsctl as this uid (and gid); 0: as we are */
        const char *stdout_path; /* stdout to this file (/dev/full) instead of captured */
        const char *stdin_path;  /* stdin from this file instead of the test's */
};

static void write_file(const char *path, const char *text) {
        FILE *f = fopen(path, "we");

        if (!f || fputs(text, f) < 0 || fclose(f) != 0)
                tap_bail_errno(path);
        (void) chmod(path, 0644);
}

/* read stdout and stderr of the child to their ends, whichever has data */
static void capture(int fds[2], struct run *r) {
        struct pollfd p[2] = { { .fd = fds[0], .events = POLLIN },
                               { .fd = fds[1], .events = POLLIN } };
        char *buf[2] = { r->out, r->err };
        size_t size[2] = { sizeof(r->out), sizeof(r->err) }, len[2] = { 0, 0 };

        while (p[0].fd >= 0 || p[1].fd >= 0) {
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        tap_bail_errno("poll");
                }
                for (int i = 0; i < 2; i++) {
                        char discard[4096];
                        ssize_t n;

                        if (p[i].fd < 0 || !p[i].revents)
                                continue;
                        if (len[i] + 1 < size[i])
                                n = read(p[i].fd, buf[i] + len[i], size[i] - 1 - len[i]);
                        else
                                n = read(p[i].fd, discard, sizeof(discard));
                        if (n <= 0) {
                                close(p[i].fd);
                                p[i].fd = -1;
                        } else if (len[i] + 1 < size[i])
                                len[i] += (size_t) n;
                }
        }
        r->out[len[0]] = '\0';
        r->err[len[1]] = '\0';
}

#define RUN_ARGS_MAX 30

/* run nsctl with the arguments (a NULL-terminated array) */
static void run_argv(struct run *r, const struct run_opts *o, const char *const *args) {
        const char *argv[RUN_ARGS_MAX + 2] = { nsctl };
        int out[2], err[2], st;
        size_t n = 1;
        pid_t pid;

        while (n <= RUN_ARGS_MAX && args[n - 1]) {
                argv[n] = args[n - 1];
                n++;
        }
        argv[n] = NULL;

        memset(r, 0, sizeof(*r));
        r->status = -1;
        if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
                tap_bail_errno("pipe2");
        pid = tap_fork();
        if (pid == 0) {
                int fd = out[1];

                if (o && o->stdout_path && (fd = open(o->stdout_path, O_WRONLY | O_CLOEXEC)) < 0)
                        _exit(98);
                if (o && o->stdin_path) {
                        int in = open(o->stdin_path, O_RDONLY | O_CLOEXEC);

                        if (in < 0 || dup2(in, STDIN_FILENO) < 0)
                                _exit(98);
                }
                if (dup2(fd, STDOUT_FILENO) < 0 || dup2(err[1], STDERR_FILENO) < 0)
                        _exit(98);
                if (o && o->uid != 0 &&
                    (setgroups(0, NULL) < 0 || setresgid(o->uid, o->uid, o->uid) < 0 ||
                     setresuid(o->uid, o->uid, o->uid) < 0))
                        _exit(97);
                execv(nsctl, (char **) argv);
                _exit(99);
        }
        close(out[1]);
        close(err[1]);
        capture((int[2]) { out[0], err[0] }, r);
        if (waitpid(pid, &st, 0) == pid && WIFEXITED(st))
                r->status = WEXITSTATUS(st);
}

/* run nsctl with the arguments (NULL-terminated) */
static void run(struct run *r, const struct run_opts *o, ...) {
        const char *args[RUN_ARGS_MAX + 1];
        size_t n = 0;
        va_list ap;

        va_start(ap, o);
        while (n < RUN_ARGS_MAX && (args[n] = va_arg(ap, const char *)))
                n++;
        va_end(ap);
        args[n] = NULL;
        run_argv(r, o, args);
}

static const struct run_opts as_alice = { .uid = ALICE };
static const struct run_opts to_full = { .stdout_path = "/dev/full" };

static bool ends_with(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);

        return a >= b && strcmp(s + a - b, suffix) == 0;
}

static bool starts_with(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* the file at path into buf (NUL-terminated, cut at size - 1); false with errno */
static bool read_text(const char *path, char *buf, size_t size) {
        FILE *f = fopen(path, "re");
        size_t len;

        if (!f)
                return false;
        len = fread(buf, 1, size - 1, f);
        buf[len] = '\0';
        fclose(f);
        return true;
}

/* the first line of s, for messages */
static const char *line1(const char *s) {
        static char buf[512];

        snprintf(buf, sizeof(buf), "%.*s", (int) strcspn(s, "\n"), s);
        return buf;
}

static const char try_help[] = "Try 'nsctl --help' for more information.\n";

/* ---- the fake nsd ---------------------------------------------------------------------- */

static struct fake_nsd_thread served;

static void serve(const struct fake_nsd_config *cfg) {
        if (fake_nsd_thread_start(&served, lfd, cfg) < 0)
                tap_bail_errno("start the fake nsd");
}

/* stop serving; the record of what nsd saw */
static const struct fake_nsd_record *served_stop(void) {
        if (fake_nsd_thread_stop(&served) < 0)
                tap_diag("the fake nsd: %s", strerror(-served.result));
        return &served.rec;
}

/* nsd, served with cfg, refuses what nsctl args (NULL-terminated, as o says) asks: nsctl says
 * want on stderr (what: the case), exits 1 and writes nothing on stdout. Returns the record
 * of what nsd saw. */
static const struct fake_nsd_record *refused(const struct fake_nsd_config *cfg,
                                             const struct run_opts *o, const char *const *args,
                                             const char *want, const char *what) {
        struct run r;

        serve(cfg);
        run_argv(&r, o, args);
        is_str(r.err, want, "%s", what);
        ok(r.status == 1 && r.out[0] == '\0', "... exit 1 (%d), nothing on stdout", r.status);
        return served_stop();
}

/* ---- JSON through python3 -------------------------------------------------------------- */

#define JSON_CHECKS_MAX 12

static const char *python = "python3"; /* $NSCTL_TEST_PYTHON: one with jsonschema */
static const char *schema_path;        /* argument 3: nsctl.schema.json; NULL: not checked */

/* The python3 program of check_json(): exit 2 for JSON that does not parse, 3 for a schema
 * violation (its first line: what and where), else one line per expression. */
static const char json_prog[] =
        "import json, sys\n"
        "try: d = json.load(open(sys.argv[1], encoding='utf-8'))\n"
        "except ValueError as x: print(x); sys.exit(2)\n"
        "if sys.argv[2]:\n"
        "    import jsonschema\n"
        "    v = jsonschema.Draft202012Validator(json.load(open(sys.argv[2])))\n"
        "    for x in sorted(v.iter_errors(d), key=lambda x: list(x.absolute_path)):\n"
        "        print('%s at %s' % (x.message, list(x.absolute_path))); sys.exit(3)\n"
        "for e in sys.argv[3:]:\n"
        "    try: print(eval(e))\n"
        "    except Exception as x: print('(%s)' % type(x).__name__)\n";

/* Run json_prog on text with the schema (or none) and the expressions; its exit status (99:
 * no python), its stdout in out. */
static int run_json_prog(const char *text, const char *schema, const char *const *exprs,
                         size_t n_exprs, char *out, size_t size) {
        const char *argv[5 + JSON_CHECKS_MAX + 1] = { python, "-c", json_prog, json_path,
                                                      schema ?: "" };
        char chunk[4096];
        size_t len = 0;
        int fds[2], st = 0;
        ssize_t n;
        pid_t pid;

        for (size_t i = 0; i < n_exprs && i < JSON_CHECKS_MAX; i++)
                argv[5 + i] = exprs[i];
        write_file(json_path, text);
        if (pipe2(fds, O_CLOEXEC) < 0)
                tap_bail_errno("pipe2");
        pid = tap_fork();
        if (pid == 0) {
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

                dup2(fds[1], STDOUT_FILENO);
                if (null >= 0)
                        dup2(null, STDERR_FILENO);
                execvp(python, (char **) argv);
                _exit(99);
        }
        close(fds[1]);
        /* to the end, keeping what fits: python3 must not die of a full pipe */
        while ((n = read(fds[0], chunk, sizeof(chunk))) > 0) {
                size_t k = (size_t) n < size - 1 - len ? (size_t) n : size - 1 - len;

                memcpy(out + len, chunk, k);
                len += k;
        }
        close(fds[0]);
        out[len] = '\0';
        unlink(json_path);
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
                return -1;
        return WEXITSTATUS(st);
}

/*
 * Is text valid JSON for python3's json module (UTF-8 and all), does it match nsctl's JSON
 * schema (when there is one to check against), and is each expression of checks (pairs of a
 * Python expression over the document d and the str() it should have, NULL-terminated) what
 * it should be? One python3 run, a test point for each. Skipped when there is no python3.
 */
static void check_json(const char *what, const char *text, const char *const *checks) {
        const char *exprs[JSON_CHECKS_MAX];
        char result[8192], *line;
        size_t n_checks = 0;
        int st;

        while (checks && checks[2 * n_checks] && n_checks < JSON_CHECKS_MAX) {
                exprs[n_checks] = checks[2 * n_checks];
                n_checks++;
        }
        st = run_json_prog(text, schema_path, exprs, n_checks, result, sizeof(result));
        if (st == 99) {
                tap_skip("%s: no python3 to check the JSON", what);
                return;
        }
        if (!ok(st != 2 && st >= 0, "%s: valid JSON (python3's json module)", what)) {
                printf("#   %s", result);
                return;
        }
        if (schema_path) {
                if (!ok(st == 0, "%s: matches nsctl.schema.json", what)) {
                        printf("#   %s", result);
                        return;
                }
        } else
                tap_skip("%s: no schema validator (python3-jsonschema) to check it with", what);
        line = result;
        for (size_t i = 0; i < n_checks; i++) {
                char *end = strchr(line, '\n');

                if (end)
                        *end = '\0';
                is_str(line, checks[2 * i + 1], "%s: %s", what, checks[2 * i]);
                line = end ? end + 1 : line + strlen(line);
        }
}

/* ---- without nsd ----------------------------------------------------------------------- */

static void test_help_version(void) {
        static const char *verbs[] = { "status",  "list", "show",   "enter",
                                       "release", "hide", "metrics" };
        char want[256];
        struct run r;

        run(&r, NULL, "--help", NULL);
        ok(r.status == 0 && ends_with(r.out, "See nsctl(1).\n") && r.err[0] == '\0',
           "--help: exit 0, stdout ends with 'See nsctl(1).'");
        ok(starts_with(r.out, "Usage:\n nsctl "), "--help: starts with a usage line");
        for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
                ok(strstr(r.out, verbs[i]) != NULL, "--help names '%s'", verbs[i]);

        for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
                run(&r, NULL, verbs[i], "--help", NULL);
                ok(r.status == 0 && ends_with(r.out, "See nsctl(1).\n") && r.err[0] == '\0',
                   "%s --help: exit 0, ends with 'See nsctl(1).'", verbs[i]);
        }
        run(&r, NULL, "list", "--help", NULL);
        ok(strstr(r.out, "PINNED") && strstr(r.out, "ADOPTED"), "list --help lists the columns");
        run(&r, NULL, "enter", "--help", NULL);
        ok(strstr(r.out, "nsctl show <user>") != NULL,
           "enter --help names what a user can do instead");

        run(&r, NULL, "--version", NULL);
        snprintf(want, sizeof(want), "nsctl %s (nsd protocol %d.%d)\n", PACKAGE_VERSION,
                 NSD_PROTO_MAJOR, NSD_PROTO_MINOR);
        is_str(r.out, want, "--version");
        is_int(r.status, 0, "--version: exit 0");
        run(&r, NULL, "-V", NULL);
        ok(r.status == 0 && strcmp(r.out, want) == 0, "-V is --version");
}

static void test_usage_errors(void) {
        struct run r;

        /* one line, the hint, exit 1, nothing on stdout */
        run(&r, NULL, NULL);
        is_str(r.err, "nsctl: no command given\nTry 'nsctl --help' for more information.\n",
               "no command: the message and the hint");
        ok(r.status == 1 && r.out[0] == '\0', "no command: exit 1, nothing on stdout");
        run(&r, NULL, "frobnicate", NULL);
        ok(r.status == 1 && starts_with(r.err, "nsctl: unknown command 'frobnicate'\n") &&
                   ends_with(r.err, try_help),
           "unknown command: exit 1 with a hint");
        run(&r, NULL, "--bogus", "status", NULL);
        ok(r.status == 1 && starts_with(r.err, "nsctl: unrecognized option '--bogus'\n"),
           "unknown global option: '%s'", line1(r.err));
        run(&r, NULL, "list", "-x", NULL);
        ok(r.status == 1 && starts_with(r.err, "nsctl: invalid option -- 'x'\n") &&
                   ends_with(r.err, try_help),
           "unknown short option: '%s'", line1(r.err));
        run(&r, NULL, "list", "--output", NULL);
        ok(r.status == 1 && starts_with(r.err, "nsctl: option '--output' requires an argument\n"),
           "missing option argument: '%s'", line1(r.err));
        run(&r, NULL, "list", "-o", "USER,BOGUS", NULL);
        ok(r.status == 1 && starts_with(r.err, "nsctl: unknown column: BOGUS\n"),
           "unknown column: '%s'", line1(r.err));
        run(&r, NULL, "show", "-o", "TARGET,NOPE", "root", NULL);
        ok(r.status == 1 && starts_with(r.err, "nsctl: unknown column: NOPE\n"),
           "show: unknown column");
        run(&r, NULL, "list", "extra", NULL);
        ok(r.status == 1 && starts_with(r.err, "nsctl: list: unexpected argument 'extra'\n"),
           "list: extra argument refused");
        run(&r, NULL, "show", NULL);
        ok(r.status == 1 && starts_with(r.err, "nsctl: show: missing user\n") &&
                   ends_with(r.err, try_help),
           "show: missing user");
        run(&r, NULL, "release", NULL);
        ok(r.status == 1 && starts_with(r.err, "nsctl: release: missing user\n"),
           "release: missing user");
        run(&r, NULL, "enter", NULL);
        ok(r.status == 1 && starts_with(r.err, "nsctl: enter: missing user\n"),
           "enter: missing user");
        run(&r, NULL, "hide", NULL);
        ok(r.status == 1 && starts_with(r.err, "nsctl: hide: missing path\n"),
           "hide: missing path");
        run(&r, NULL, "show", "nsctl-test-no-such-user", NULL);
        if (have_nss_wrapper)
                ok(r.status == 1 &&
                           starts_with(r.err, "nsctl: unknown user 'nsctl-test-no-such-user'\n") &&
                           ends_with(r.err, try_help),
                   "unknown user name: '%s'", line1(r.err));
        else
                tap_skip("unknown user names need nss_wrapper");
        run(&r, NULL, "show", "4294967295", NULL);
        ok(r.status == 1 && starts_with(r.err, "nsctl: invalid user '4294967295'\n"),
           "uid -1 refused");
        run(&r, NULL, "show", "root", "extra", NULL);
        ok(r.status == 1 && strstr(r.err, "unexpected argument 'extra'"),
           "show: extra argument refused");
        run(&r, NULL, "enter", "--mode", "teleport", "root", NULL);
        ok(r.status == 1 && starts_with(r.err, "nsctl: unknown mode 'teleport'"),
           "enter: unknown mode");
}

/* -J and -r together, as lsns and findmnt refuse them; nsd is not asked */
static void test_exclusive(void) {
        static const char want[] = "nsctl: mutually exclusive arguments: --json --raw\n"
                                   "Try 'nsctl --help' for more information.\n";
        struct run r;

        serve(&(struct fake_nsd_config) {});
        run(&r, NULL, "--socket", sock_path, "list", "-J", "-r", NULL);
        is_str(r.err, want, "list -J -r: the message");
        ok(r.status == 1 && r.out[0] == '\0', "list -J -r: exit 1, nothing on stdout");
        run(&r, NULL, "--socket", sock_path, "list", "--raw", "--json", NULL);
        ok(r.status == 1 && strcmp(r.err, want) == 0,
           "list --raw --json: the same, in either order");
        run(&r, NULL, "--socket", sock_path, "show", "-rJ", "0", NULL);
        ok(r.status == 1 && strcmp(r.err, want) == 0, "show -rJ: refused");
        run(&r, NULL, "--socket", sock_path, "list", "-J", "-J", "-n", NULL);
        ok(r.status == 0, "list -J -J -n: one option twice is no conflict (exit %d)", r.status);
        check_json("list --json of no namespace", r.out,
                   (const char *[]) { "d", "{'schema_version': 7, 'namespaces': []}", NULL });
        is_int(served_stop()->lists, 1, "nsd was asked only by the list without a conflict");
}

static void test_no_nsd(void) {
        char want[256];
        struct run r;

        /* nothing listens at these paths */
        run(&r, NULL, "--socket", "/nonexistent/nsctl-test/socket", "status", NULL);
        ok(r.status == 1 &&
                   starts_with(r.err, "nsctl: cannot connect to nsd at "
                                      "/nonexistent/nsctl-test/socket: ") &&
                   r.out[0] == '\0',
           "status, no nsd: '%s'", line1(r.err));
        run(&r, NULL, "list", "--socket", "/nonexistent/nsctl-test/socket2", NULL);
        ok(r.status == 1 &&
                   starts_with(r.err,
                               "nsctl: cannot connect to nsd at /nonexistent/nsctl-test/socket2: "),
           "--socket after the command");
        /* meson sets NSD_SOCKET for this test */
        if (getenv("NSD_SOCKET")) {
                snprintf(want, sizeof(want),
                         "nsctl: cannot connect to nsd at %s: ", getenv("NSD_SOCKET"));
                run(&r, NULL, "show", "0", NULL);
                ok(r.status == 1 && starts_with(r.err, want), "$NSD_SOCKET is used: '%s'",
                   line1(r.err));
        } else
                tap_skip("NSD_SOCKET is not set (run through meson)");
        run(&r, NULL, "release", "--force", "0", "--socket", "/nonexistent/nsctl-test/socket",
            NULL);
        ok(r.status == 1 &&
                   strstr(r.err, "cannot connect to nsd at /nonexistent/nsctl-test/socket:"),
           "release: connection error");
        run(&r, NULL, "enter", "--socket", "/nonexistent/nsctl-test/socket", "0", "--", "true",
            NULL);
        ok(r.status == 1 &&
                   strstr(r.err, "cannot connect to nsd at /nonexistent/nsctl-test/socket:"),
           "enter: connection error, command not run");
}

/* ---- with the fake nsd ----------------------------------------------------------------- */

static const struct fake_ns namespaces[] = {
        { .uid = BOB,
          .ns_flags = NSD_NS_PINNED | NSD_NS_STALE,
          .sessions = 0,
          .mounts = 27,
          .ns_inode = 4026532305,
          .created_usec = 1700000000000000ull,
          .pin = "pins/1600" },
        { .uid = ALICE,
          .ns_flags = NSD_NS_PINNED | NSD_NS_ADOPTED,
          .sessions = 2,
          .mounts = 31,
          .ns_inode = 4026532291,
          .created_usec = 1700000000000000ull,
          .pin = "pins/\xff\x01" },
        /* a uid without a name now: its namespace was made for another (a recycled uid) */
        { .uid = NO_NAME,
          .ns_flags = NSD_NS_ORPHANED,
          .sessions = 1,
          .mounts = -1,
          .ns_inode = 4026532999 },
};

/* a mount at a name that is not UTF-8, one with a tab, and enough of them to be more than
 * one buffer of stdout */
static char *big_mountinfo(void) {
        static char text[64 * 1024];
        size_t off = 0;

        off += (size_t) snprintf(text + off, sizeof(text) - off,
                                 "25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
                                 "26 25 0:50 / /home/alice/\xff\xfe rw - fuse.sshfs alice@h:/ "
                                 "rw,user_id=1500\n"
                                 "27 25 0:51 / /mnt/a\\011tab rw - tmpfs tmpfs rw\n");
        for (int i = 0; i < 200; i++)
                off += (size_t) snprintf(text + off, sizeof(text) - off,
                                         "%d 25 0:%d / /srv/mount-number-%03d rw,relatime - tmpfs "
                                         "tmpfs rw,size=1024k\n",
                                         100 + i, 100 + i, i);
        return text;
}

static void test_list(void) {
        const struct fake_nsd_config cfg = { .list = namespaces, .n_list = 3 };
        struct run r;

        serve(&cfg);
        run(&r, NULL, "--socket", sock_path, "list", NULL);
        ok(r.status == 0 && r.err[0] == '\0', "list: exit 0, nothing on stderr");
        if (have_nss_wrapper) {
                ok(starts_with(r.out, "USER ") && strstr(r.out, "\nalice ") &&
                           strstr(r.out, "\nbob "),
                   "list: user names from the passwd file (nss_wrapper)");
                ok(strstr(r.out, "\n4242 ") != NULL,
                   "list: a uid without a name is shown as the number");
        } else {
                tap_skip("list: user names need nss_wrapper");
                tap_skip("list: user names need nss_wrapper");
        }

        run(&r, NULL, "--socket", sock_path, "list", "--raw", "--noheadings", "-o",
            "UID,SESSIONS,MOUNTS,PINNED", NULL);
        is_str(r.out, "1500 2 31 pins/\\xff\\x01\n1600 0 27 pins/1600\n4242 1 - fd\\x20only\n",
               "list --raw: sorted by uid, the values, unsafe bytes escaped");

        run(&r, NULL, "--socket", sock_path, "list", "--json", NULL);
        is_int(r.status, 0, "list --json: exit 0");
        check_json("list --json, a pin that is not UTF-8", r.out,
                   (const char *[]) {
                           "ascii(d['namespaces'][0]['pinned'])", "'pins/\\ufffd\\x01'",
                           "d['namespaces'][2]['mounts']", "None", "d['namespaces'][0]['adopted']",
                           "True", "d['namespaces'][1]['ns']", "4026532305",
                           /* last: without nss_wrapper the list ends here */
                           have_nss_wrapper ? "d['namespaces'][0]['user']" : NULL, "alice", NULL });

        run(&r, &to_full, "--socket", sock_path, "list", NULL);
        is_str(r.err, "nsctl: write error: No space left on device\n",
               "list > /dev/full: the message");
        is_int(r.status, 1, "list > /dev/full: exit 1");
        is_int(served_stop()->lists, 4, "nsd was asked four times");
}

/* show's note on a namespace made with an older setup (LIST's NSD_NS_STALE): on stderr,
 * the table as it is */
static void test_show_stale(void) {
        const struct fake_nsd_config cfg = { .show_text = "25 1 8:1 / / rw - ext4 /dev/sda1 rw\n",
                                             .list = namespaces,
                                             .n_list = 3 };
        struct run r;

        serve(&cfg);
        run(&r, NULL, "--socket", sock_path, "show", "-r", "-n", "-o", "TARGET", "1600", NULL);
        ok(r.status == 0 && strcmp(r.out, "/\n") == 0 &&
                   strstr(r.err, "was made with an older setup than nsd.conf's (stale)"),
           "show of a stale namespace: the table, and a note on stderr ('%s')", line1(r.err));
        run(&r, NULL, "--socket", sock_path, "show", "-r", "-n", "-o", "TARGET", "1500", NULL);
        ok(r.status == 0 && r.err[0] == '\0', "show of a current one: no note");
        served_stop();
}

static void test_show(void) {
        const struct fake_nsd_config cfg = { .show_text = big_mountinfo() };
        struct run r;

        serve(&cfg);
        run(&r, NULL, "--socket", sock_path, "show", "--json", "1500", NULL);
        is_int(r.status, 0, "show --json: exit 0");
        check_json("show --json, a mount point that is not UTF-8", r.out,
                   (const char *[]) { "ascii(d['filesystems'][0]['children'][0]['target'])",
                                      "'/home/alice/\\ufffd\\ufffd'",
                                      "ascii(d['filesystems'][0]['children'][1]['target'])",
                                      "'/mnt/a\\ttab'", "len(d['filesystems'][0]['children'])",
                                      "202", NULL });

        run(&r, NULL, "--socket", sock_path, "show", "--list", "--json", "-o", "ID,PARENT,TARGET",
            "1500", NULL);
        check_json("show --list --json", r.out,
                   (const char *[]) { "d['filesystems'][1]['parent']", "25",
                                      "d['filesystems'][1]['id']", "26", NULL });

        run(&r, NULL, "--socket", sock_path, "show", "-r", "-n", "-o", "TARGET", "1500", NULL);
        ok(r.status == 0 && starts_with(r.out, "/\n/home/alice/\\xff\\xfe\n/mnt/a\\x09tab\n"),
           "show --raw: escaped, flat: '%s'", line1(r.out));

        /* more than one buffer of stdout: the reason of the first failed write may be gone */
        run(&r, &to_full, "--socket", sock_path, "show", "1500", NULL);
        ok(r.status == 1 && starts_with(r.err, "nsctl: write error"),
           "show > /dev/full, 200 lines: exit 1 (%d), '%s'", r.status, line1(r.err));
        if (have_nss_wrapper) {
                run(&r, NULL, "--socket", sock_path, "show", "-o", "TARGET", "bob", NULL);
                is_int(r.status, 0, "show bob: exit 0");
                is_int(served_stop()->show_uid, BOB,
                       "show bob asked for uid 1600 (nss_wrapper's bob)");
        } else {
                tap_skip("user names need nss_wrapper");
                (void) served_stop();
        }

        refused(&(struct fake_nsd_config) { .show_error = -EPERM,
                                            .error_message =
                                                    "only root may see another user's namespace" },
                NULL, (const char *[]) { "--socket", sock_path, "show", "1600", NULL },
                "nsctl: cannot show 1600: Operation not permitted (only root may see another "
                "user's namespace)\n",
                "show refused: nsctl: cannot ...: <strerror> (<nsd's reason>)");

        serve(&(struct fake_nsd_config) {
                .show_text = "25 1 8:1 / / rw - ext4 /dev/sda1 rw\nno mountinfo\n" });
        run(&r, NULL, "--socket", sock_path, "show", "1500", NULL);
        is_str(r.err, "nsctl: cannot parse the mount table of 1500: line 2 is not mountinfo\n",
               "show: a bad table named by its line");
        (void) served_stop();
}

static void test_status(void) {
        const struct fake_nsd_config cfg = {
                .status_version = "1.2 \"q\" \\ \n\xff",
                .status_features = NSD_FEATURE_SETNS_DIRFD | NSD_FEATURE_OWNER_PRIVATE |
                                   NSD_FEATURE_PRIVATE_UNAVAILABLE,
        };
        struct run r;

        serve(&cfg);
        run(&r, NULL, "--socket", sock_path, "status", "--json", NULL);
        is_int(r.status, 0, "status --json: exit 0");
        check_json("status --json, a version with quotes, a backslash, a newline, a byte not UTF-8",
                   r.out,
                   (const char *[]) {
                           "ascii(d['status']['version'])", "'1.2 \"q\" \\\\ \\n\\ufffd'",
                           "d['status']['features']['setns-dirfd']", "True",
                           "d['status']['features']['proc-mounts-root']", "False",
                           "d['status']['features']['owner-private']", "True",
                           "d['status']['private_mode']", "unavailable", "d['status']['pid'] > 0",
                           "True", "sorted(d['status']['limits'])",
                           "['connections_per_user', 'namespaces', 'sessions_per_user']", NULL });
        ok(strstr(r.out, "\"private_mode\": \"unavailable\"") != NULL,
           "status --json: \"key\": value, as libsmartcols writes it");

        run(&r, NULL, "--socket", sock_path, "status", NULL);
        ok(r.status == 0 && starts_with(r.out, "nsd version:     1.2 ") &&
                   strstr(r.out, "\n  setns-dirfd       yes ") &&
                   strstr(r.out, "\nprivate mode:    unavailable (nsd cannot"),
           "status: the human form");

        run(&r, &to_full, "--socket", sock_path, "status", "--json", NULL);
        ok(r.status == 1 && strcmp(r.err, "nsctl: write error: No space left on device\n") == 0,
           "status --json > /dev/full: exit 1, the message");
        is_int(served_stop()->statuses, 3, "nsd was asked three times");
}

static void test_write_errors(void) {
        struct run r;

        run(&r, &to_full, "--help", NULL);
        is_str(r.err, "nsctl: write error: No space left on device\n",
               "--help > /dev/full: the message");
        is_int(r.status, 1, "--help > /dev/full: exit 1");
        run(&r, &to_full, "list", "--help", NULL);
        ok(r.status == 1 && strcmp(r.err, "nsctl: write error: No space left on device\n") == 0,
           "list --help > /dev/full: exit 1, the message");
        run(&r, &to_full, "--version", NULL);
        ok(r.status == 1 && strcmp(r.err, "nsctl: write error: No space left on device\n") == 0,
           "--version > /dev/full: exit 1, the message");
}

static void test_release_hide(void) {
        const struct fake_nsd_config busy = { .release_error = -EBUSY,
                                              .list = namespaces,
                                              .n_list = 3 };
        const struct fake_nsd_record *rec;
        char cwd[4096], want[4200];
        struct run r;

        rec = refused(&busy, NULL,
                      (const char *[]) { "--socket", sock_path, "release", "1500", NULL },
                      "nsctl: cannot release 1500: 2 live sessions (use --force)\n",
                      "release while logged in: the number of sessions, and --force");
        ok(rec->releases == 1 && rec->release_uid == ALICE && rec->release_flags == 0,
           "release: one request for uid 1500, no flags");

        serve(&busy);
        run(&r, NULL, "--socket", sock_path, "release", "--dry-run", "1500", NULL);
        ok(r.status == 0 && r.err[0] == '\0' && strstr(r.out, "\nuid:        1500\n") &&
                   strstr(r.out, "\nsessions:   2 live"),
           "release --dry-run: exit 0, the uid and its sessions");
        rec = served_stop();
        ok(rec->releases == 0 && rec->lists == 1 && rec->shows == 1 && rec->show_uid == ALICE,
           "release --dry-run: LIST and SHOW of uid 1500, no RELEASE");

        serve(&(struct fake_nsd_config) { .list = namespaces, .n_list = 3 });
        run(&r, NULL, "--socket", sock_path, "release", "4242", NULL);
        is_str(r.err,
               "nsctl: releasing the orphaned namespace of uid 4242: it was made for a user name "
               "the uid no longer has (nsd does not say which; its namespace-orphaned event in "
               "the journal does)\n",
               "release of an orphaned namespace: one line on whose it was");
        rec = served_stop();
        ok(r.status == 0 && rec->releases == 1 && rec->release_uid == NO_NAME,
           "and it is released");

        serve(&(struct fake_nsd_config) {});
        run(&r, NULL, "--socket", sock_path, "release", "--force", "1600", NULL);
        ok(r.status == 0 && r.err[0] == '\0' && r.out[0] == '\0',
           "release --force: exit 0, silent");
        rec = served_stop();
        ok(rec->release_uid == BOB && rec->release_flags == NSD_RELEASE_FORCE,
           "release --force: the flag reached nsd");

        if (!getcwd(cwd, sizeof(cwd)))
                tap_bail_errno("getcwd");
        snprintf(want, sizeof(want),
                 "nsctl: cannot hide %s/sub/dir for %s: Operation not permitted (not a FUSE mount "
                 "of yours)\n",
                 strcmp(cwd, "/") == 0 ? "" : cwd, have_nss_wrapper ? "alice" : "1500");
        rec = refused(&(struct fake_nsd_config) { .hide_error = -EPERM,
                                                  .error_message = "not a FUSE mount of yours" },
                      NULL,
                      (const char *[]) { "--socket", sock_path, "hide", "--user", "1500", "sub/dir",
                                         NULL },
                      want, "hide refused: the absolute path, the owner, nsd's reason");
        snprintf(want, sizeof(want), "%s/sub/dir", strcmp(cwd, "/") == 0 ? "" : cwd);
        ok(rec->hide_uid == ALICE && strcmp(rec->hide_path, want) == 0 && rec->hide_flags == 0,
           "hide: a relative path reaches nsd made absolute: '%s'", rec->hide_path);

        run(&r, NULL, "--socket", sock_path, "hide", "--user", "nsctl-test-no-such-user", "/x",
            NULL);
        if (have_nss_wrapper)
                ok(r.status == 1 &&
                           starts_with(r.err, "nsctl: unknown user 'nsctl-test-no-such-user'\n"),
                   "hide --user: unknown user: '%s'", line1(r.err));
        else
                tap_skip("unknown user names need nss_wrapper");
}

/* ---- golden outputs: every form nsctl prints, byte for byte ------------------------------ */

static const char *golden_dir; /* argument 2; NSCTL_GOLDEN_RECORD=1 writes the files anew */

/* Replace the number after each needle in s by "<mask>" (in place; s has room). */
static void mask_number_after(char *s, size_t size, const char *needle) {
        for (char *p = strstr(s, needle); p; p = strstr(p, needle)) {
                char *num = p + strlen(needle), *end = num + strspn(num, "0123456789");
                size_t tail = strlen(end) + 1;

                if (end == num || (size_t) (num - s) + 6 + tail > size)
                        return;
                memmove(num + 6, end, tail);
                memcpy(num, "<mask>", 6);
                p = num + 6;
        }
}

/* What changes from run to run in status: the fake nsd's pid (ours) and the uptime (it
 * answers started_usec 0, so the uptime is the time since 1970). */
static void mask_status(char *s, size_t size) {
        char *up = strstr(s, "(up ");

        if (up) {
                char *end = strchr(up, ')');
                size_t tail = end ? strlen(end) + 1 : 0;

                if (end && (size_t) (up - s) + 10 + tail <= size) {
                        memmove(up + 10, end, tail);
                        memcpy(up, "(up <mask>", 10);
                }
        }
        mask_number_after(s, size, "pid:             ");
        mask_number_after(s, size, "\"pid\": ");
        mask_number_after(s, size, "\"uptime_sec\": ");
}

/* libsmartcols spells an empty JSON array [null] before util-linux 2.41 (Debian 12) and []
 * from 2.41 on (Debian 13): both spellings are read as [] on both sides, so that the golden
 * files hold on either (the schema allows both). In place; s only shrinks. */
static void mask_empty_array(char *s) {
        for (char *p = strstr(s, "[\n"); p; p = strstr(p + 1, "[\n")) {
                char *q = p + 2;

                q += strspn(q, " ");
                if (strncmp(q, "null\n", 5) != 0)
                        continue;
                q += 5;
                q += strspn(q, " ");
                if (*q != ']')
                        continue;
                memmove(p + 2, q + 1, strlen(q + 1) + 1);
                p[1] = ']';
        }
}

/* The exit status, stdout and stderr of r against the file golden_dir/name. */
static void check_golden(const char *name, struct run *r) {
        static char text[sizeof(r->out) + sizeof(r->err) + 64], want[sizeof(text)];
        char path[512];

        snprintf(text, sizeof(text), "exit %d\n--- stdout\n%s--- stderr\n%s", r->status, r->out,
                 r->err);
        if (strncmp(name, "status", 6) == 0)
                mask_status(text, sizeof(text));
        snprintf(path, sizeof(path), "%s/%s", golden_dir, name);
        if (getenv("NSCTL_GOLDEN_RECORD")) {
                write_file(path, text);
                tap_skip("%s: recorded", name);
                return;
        }
        if (!read_text(path, want, sizeof(want))) {
                ok(false, "%s: %s: %s", name, path, strerror(errno));
                return;
        }
        mask_empty_array(text);
        mask_empty_array(want);
        if (!ok(strcmp(text, want) == 0, "nsctl %s: the output as in %s/", name,
                "tests/unit/nsctl/golden"))
                printf("#   got:\n%s#   expected:\n%s", text, want);
}

#define GOLDEN_ARGS_MAX 12

/* nsctl's answers against a fake nsd with fixed figures, each compared with its file */
/* unlock: the password from standard input (not a terminal) to nsd in a sealed memfd, for
 * the volume named; what nsd said of it; nothing sent when nothing was given */
static void test_unlock(void) {
        char in_path[512], empty_path[512];
        const struct fake_nsd_record *rec;
        struct run r;

        snprintf(in_path, sizeof in_path, "%s/unlock-in", tmpdir);
        snprintf(empty_path, sizeof empty_path, "%s/unlock-empty", tmpdir);
        write_file(in_path, "correct horse\nnot this line\n");
        write_file(empty_path, "");

        serve(&(struct fake_nsd_config) { .unlock_waiting = 1 });
        run(&r, &(struct run_opts) { .stdin_path = in_path }, "--socket", sock_path, "unlock",
            "vault", NULL);
        ok(r.status == 0 && strstr(r.out, "Handed to nsd-volume@vault.service, which was waiting"),
           "unlock: exit 0, handed to the waiting unit ('%s')", line1(r.out));
        rec = served_stop();
        ok(rec->credential_unlocks == 1 && strcmp(rec->credential_volume, "vault") == 0 &&
                   strcmp(rec->credential_text, "correct horse") == 0 &&
                   rec->credential_seals ==
                           (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL),
           "one UNLOCK for 'vault': the first line without its end, in a memfd sealed four "
           "ways");

        serve(&(struct fake_nsd_config) { 0 });
        run(&r, &(struct run_opts) { .stdin_path = in_path }, "--socket", sock_path, "unlock",
            "vault", NULL);
        ok(r.status == 0 && strstr(r.out, "Held by nsd for 120 s for the next start of "
                                          "nsd-volume@vault.service (nsctl start vault)"),
           "nobody waiting: held for the next start, said so ('%s')", line1(r.out));
        served_stop();

        serve(&(struct fake_nsd_config) {
                .unlock_error = -ENOENT,
                .error_message = "your namespace has no volume 'vaul' that takes a password" });
        run(&r, &(struct run_opts) { .stdin_path = in_path }, "--socket", sock_path, "unlock",
            "vaul", NULL);
        ok(r.status == 1 && strstr(r.err, "nsctl: cannot unlock vaul: ") &&
                   strstr(r.err, "no volume 'vaul'"),
           "refused: exit 1, nsd's reason ('%s')", line1(r.err));
        served_stop();

        serve(&(struct fake_nsd_config) { 0 });
        run(&r, &(struct run_opts) { .stdin_path = empty_path }, "--socket", sock_path, "unlock",
            "vault", NULL);
        is_str(r.err, "nsctl: unlock vault: no password was given\n",
               "nothing on standard input: one line saying so");
        rec = served_stop();
        ok(r.status == 1 && rec->credential_unlocks == 0, "exit 1, and nothing was sent");

        run(&r, NULL, "--socket", sock_path, "unlock", NULL);
        ok(r.status == 1 && strstr(r.err, "unlock: missing volume name"),
           "unlock without a volume: a usage error ('%s')", line1(r.err));
        unlink(in_path);
        unlink(empty_path);
}

/* ---- start, stop and start-volumes of kernel volumes (protocol 1.11) --------------------- */

/* whose volumes start and stop act on: the caller's own, or, as root (who must name one),
 * alice's by --user 1500 */
static uid_t ctl_uid(void) {
        return is_root ? ALICE : getuid();
}

#define VOLUME_CTL_ARGS_MAX 7

/* the arguments of nsctl <verb> [--user 1500] <volume>, in args; returns args */
static const char *const *volume_ctl_args(const char *args[VOLUME_CTL_ARGS_MAX], const char *verb,
                                          const char *volume) {
        size_t n = 0;

        args[n++] = "--socket";
        args[n++] = sock_path;
        args[n++] = verb;
        if (is_root) {
                args[n++] = "--user";
                args[n++] = "1500";
        }
        args[n++] = volume;
        args[n] = NULL;
        return args;
}

static void run_volume_ctl(struct run *r, const char *verb, const char *volume) {
        const char *args[VOLUME_CTL_ARGS_MAX];

        run_argv(r, NULL, volume_ctl_args(args, verb, volume));
}

/* start and stop of a kernel volume: VOLUME_START or VOLUME_STOP for the right uid and name,
 * one line on what is so now; nsd's refusal with its reason; an nsd older than 1.11 not
 * asked; a name without a volume not sent */
static void test_volume_ctl(void) {
        const struct nsd_rep_volumes_entry volumes[] = {
                { .uid = ctl_uid(),
                  .state = NSD_VOLUME_STOPPED,
                  .flags = NSD_VOLUME_ON_REQUEST,
                  .name = "vault",
                  .type = "ext4",
                  .source = "/srv/images/alice.img",
                  .where = "/home/alice/vault" },
        };
        struct fake_nsd_config cfg = {
                .volumes = volumes, .n_volumes = 1, .volume_ctl_loop = 4, .volume_ctl_changed = 1
        };
        /* nsd's refusals: the error, as strerror() says it, and nsd's reason */
        static const struct {
                const char *verb;
                int error;
                const char *error_text, *message;
        } refusals[] = {
                { "stop", -EBUSY, "Device or resource busy",
                  "volume 'vault' on /home/alice/vault is in use by pid 4242 (less)" },
                { "start", -ENOENT, "No such file or directory", "no namespace of uid 1500" },
        };
        const struct fake_nsd_record *rec;
        const char *of = is_root ? " of 1500" : "";
        char want[512], what[64];
        struct run r;

        serve(&cfg);
        run_volume_ctl(&r, "start", "vault");
        is_str(r.out, "vault: mounted on /home/alice/vault (/dev/loop3)\n",
               "start of a kernel volume: where and on which loop device");
        ok(r.status == 0 && r.err[0] == '\0', "... exit 0, nothing on stderr ('%s')", line1(r.err));
        rec = served_stop();
        ok(rec->volume_starts == 1 && rec->volume_stops == 0 && rec->volume_ctl_uid == ctl_uid() &&
                   strcmp(rec->volume_ctl_volume, "vault") == 0 && rec->bad == 0,
           "one sound VOLUME_START of uid %u's 'vault'", (unsigned) ctl_uid());

        cfg.volume_ctl_changed = 0;
        serve(&cfg);
        run_volume_ctl(&r, "start", "vault");
        ok(r.status == 0 &&
                   strcmp(r.out, "vault: already mounted on /home/alice/vault (/dev/loop3)\n") == 0,
           "start of a mounted one: already mounted ('%s')", line1(r.out));
        served_stop();

        cfg.volume_ctl_changed = 1;
        cfg.volume_ctl_loop = 0;
        serve(&cfg);
        run_volume_ctl(&r, "stop", "vault");
        is_str(r.out, "vault: unmounted\n", "stop of a kernel volume: unmounted");
        is_int(r.status, 0, "... exit 0");
        rec = served_stop();
        ok(rec->volume_stops == 1 && rec->volume_starts == 0 && rec->volume_ctl_uid == ctl_uid() &&
                   strcmp(rec->volume_ctl_volume, "vault") == 0,
           "one VOLUME_STOP of uid %u's 'vault'", (unsigned) ctl_uid());

        cfg.volume_ctl_changed = 0;
        serve(&cfg);
        run_volume_ctl(&r, "stop", "vault");
        ok(r.status == 0 && strcmp(r.out, "vault: not mounted\n") == 0,
           "stop of one not mounted: not mounted ('%s')", line1(r.out));
        served_stop();

        for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
                const char *args[VOLUME_CTL_ARGS_MAX];

                cfg.volume_ctl_error = refusals[i].error;
                cfg.error_message = refusals[i].message;
                snprintf(want, sizeof want, "nsctl: cannot %s vault%s: %s (%s)\n", refusals[i].verb,
                         of, refusals[i].error_text, refusals[i].message);
                snprintf(what, sizeof what, "%s refused: nsd's reason", refusals[i].verb);
                refused(&cfg, NULL, volume_ctl_args(args, refusals[i].verb, "vault"), want, what);
        }

        cfg.volume_ctl_error = 0;
        cfg.error_message = NULL;
        cfg.minor = 10;
        serve(&cfg);
        run_volume_ctl(&r, "start", "vault");
        is_str(r.err,
               "nsctl: this nsd does not answer VOLUME_START (older than 1.11: it speaks 1.10)\n",
               "an nsd older than 1.11: too old, said so");
        rec = served_stop();
        ok(r.status == 1 && rec->volume_starts == 0 && rec->volumes == 1,
           "... exit 1, and it was not sent VOLUME_START (it would hang up)");

        cfg.minor = 0;
        serve(&cfg);
        run_volume_ctl(&r, "stop", "vaul");
        ok(r.status == 1 && strstr(r.err, "nsctl: stop vaul: ") &&
                   strstr(r.err, "has no volume 'vaul'"),
           "a name without a volume: exit 1, said so ('%s')", line1(r.err));
        rec = served_stop();
        is_int(rec->volume_stops, 0, "... and nothing sent");

        if (is_root) {
                run(&r, NULL, "--socket", sock_path, "start", "vault", NULL);
                ok(r.status == 1 &&
                           starts_with(r.err,
                                       "nsctl: start: root must name the user with --user\n"),
                   "root without --user: a usage error ('%s')", line1(r.err));
        } else
                tap_skip("root without --user: as root only");
        if (is_root && alice_can_run) {
                serve(&cfg);
                run(&r, &as_alice, "--socket", sock_path, "start", "vault", NULL);
                rec = served_stop();
                ok(r.status == 0 && rec->volume_starts == 1 && rec->volume_ctl_uid == ALICE,
                   "alice herself, without --user: her uid ('%s')", line1(r.err));
        } else
                tap_skip("start as uid 1500: as root only");
}

/* start-volumes: VOLUME_START of each of the caller's kernel volumes with AT_LOGIN not mounted
 * now, not of a mounted one, one without AT_LOGIN or another user's; a refusal said with
 * nsd's reason and exit 1, the others still started; nothing asked of an nsd older than 1.11 */
static void test_start_volumes(void) {
        const uint32_t me = getuid();
        const struct nsd_rep_volumes_entry volumes[] = {
                { .uid = me,
                  .state = NSD_VOLUME_STOPPED,
                  .flags = NSD_VOLUME_AT_LOGIN,
                  .name = "vault",
                  .type = "ext4",
                  .where = "/home/me/vault" },
                { .uid = me,
                  .state = NSD_VOLUME_MOUNTED,
                  .flags = NSD_VOLUME_AT_LOGIN,
                  .loop = 2,
                  .name = "data",
                  .type = "ext4",
                  .where = "/home/me/data" },
                { .uid = me,
                  .state = NSD_VOLUME_STOPPED,
                  .flags = NSD_VOLUME_ON_REQUEST,
                  .name = "scratch",
                  .type = "xfs",
                  .where = "/home/me/scratch" },
                { .uid = me,
                  .state = NSD_VOLUME_FAILED,
                  .flags = NSD_VOLUME_AT_LOGIN,
                  .name = "backup",
                  .type = "ext4",
                  .where = "/home/me/backup" },
                { .uid = me + 1,
                  .state = NSD_VOLUME_STOPPED,
                  .flags = NSD_VOLUME_AT_LOGIN,
                  .name = "other",
                  .type = "ext4",
                  .where = "/home/other/vault" },
        };
        const struct fake_ns own[] = { { .uid = me, .sessions = 1, .ns_inode = 1 } };
        struct fake_nsd_config cfg = { .volumes = volumes,
                                       .n_volumes = 5,
                                       .list = own,
                                       .n_list = 1,
                                       .volume_ctl_loop = 4,
                                       .volume_ctl_changed = 1 };
        const struct fake_nsd_record *rec;
        struct run r;

        serve(&cfg);
        run(&r, NULL, "--socket", sock_path, "start-volumes", NULL);
        is_str(r.out,
               "vault: mounted on /home/me/vault (/dev/loop3)\n"
               "backup: mounted on /home/me/backup (/dev/loop3)\n",
               "start-volumes: a line for each kernel volume nsd mounted");
        ok(r.status == 0 && r.err[0] == '\0', "... exit 0, nothing on stderr ('%s')", line1(r.err));
        rec = served_stop();
        is_str(rec->volume_ctl_names, "vault backup ",
               "VOLUME_START of the AT_LOGIN ones not mounted: not of a mounted one, one without "
               "AT_LOGIN, another user's");
        ok(rec->volume_starts == 2 && rec->volume_stops == 0 && rec->volume_ctl_uid == me &&
                   rec->bad == 0,
           "... for the caller's uid, sound requests");

        cfg.volume_ctl_error = -EAGAIN;
        cfg.volume_ctl_error_times = 2;
        cfg.error_message = "a volume of uid 1500 is being started or stopped; retry";
        serve(&cfg);
        run(&r, NULL, "--socket", sock_path, "start-volumes", NULL);
        rec = served_stop();
        ok(r.status == 0 && r.err[0] == '\0' && rec->volume_starts == 4,
           "start-volumes: 'not yet' (nsd starts it at the first session) is asked again, then "
           "started (%u starts, '%s')",
           rec->volume_starts, line1(r.err));
        cfg.volume_ctl_error_times = 0;

        cfg.volume_ctl_error = -EIO;
        cfg.volume_ctl_fail = "vault";
        cfg.error_message = "mount: wrong fs type";
        serve(&cfg);
        run(&r, NULL, "--socket", sock_path, "start-volumes", NULL);
        is_str(r.err, "nsctl: cannot start vault: Input/output error (mount: wrong fs type)\n",
               "one refused: nsd's reason");
        is_str(r.out, "backup: mounted on /home/me/backup (/dev/loop3)\n",
               "... the next one still started");
        is_int(r.status, 1, "... exit 1");
        rec = served_stop();
        is_str(rec->volume_ctl_names, "vault backup ", "... both were asked for");

        cfg.volume_ctl_error = 0;
        cfg.volume_ctl_fail = NULL;
        cfg.error_message = NULL;
        cfg.minor = 10;
        serve(&cfg);
        run(&r, NULL, "--socket", sock_path, "start-volumes", NULL);
        rec = served_stop();
        ok(r.status == 0 && r.out[0] == '\0' && r.err[0] == '\0' && rec->volume_starts == 0,
           "an nsd older than 1.11: nothing sent, nothing said, exit 0 ('%s')", line1(r.err));

        cfg.minor = 0;
        cfg.n_list = 0;
        serve(&cfg);
        run(&r, NULL, "--socket", sock_path, "start-volumes", NULL);
        rec = served_stop();
        ok(r.status == 0 && r.out[0] == '\0' && rec->volume_starts == 0,
           "no namespace of the caller's: nothing to start, exit 0");
}

/* volumes: the state "stopped" in the table and in JSON (schema_version 6); START and
 * RELEASE from Start= and Release= (the flags) and the state */
static void test_volumes_stopped(void) {
        static const struct nsd_rep_volumes_entry volumes[] = {
                { .uid = ALICE,
                  .state = NSD_VOLUME_STOPPED,
                  .flags = NSD_VOLUME_AT_LOGIN | NSD_VOLUME_RELEASE_LAST | NSD_VOLUME_NOW_KNOWN,
                  .name = "vault",
                  .type = "ext4",
                  .source = "/srv/images/alice.img",
                  .where = "/home/alice/vault" },
                { .uid = ALICE,
                  .state = NSD_VOLUME_MOUNTED,
                  .flags = NSD_VOLUME_ON_REQUEST,
                  .name = "box",
                  .type = "ext4",
                  .source = "/srv/images/box.img",
                  .where = "/home/alice/box" },
                { .uid = ALICE,
                  .state = NSD_VOLUME_MOUNTED,
                  .name = "old",
                  .type = "xfs",
                  .source = "/dev/vdb",
                  .where = "/home/alice/old" },
                { .uid = ALICE,
                  .state = NSD_VOLUME_USER,
                  .name = "remote",
                  .type = "sshfs",
                  .source = "alice@host:",
                  .where = "/home/alice/remote" },
        };
        const struct fake_nsd_config cfg = { .volumes = volumes, .n_volumes = 4 };
        struct run r;

        serve(&cfg);
        run(&r, NULL, "--socket", sock_path, "volumes", "-r", "-n", "-o", "volume,state,now", NULL);
        is_str(r.out,
               "vault stopped not-mounted\nbox mounted -\nold mounted -\nremote user-manager -\n",
               "volumes: a stopped kernel volume");
        run(&r, NULL, "--socket", sock_path, "volumes", "-r", "-n", "-o", "volume,start,release",
            NULL);
        is_str(r.out,
               "vault login last-session\nbox request namespace\nold namespace namespace\n"
               "remote login user-manager\n",
               "volumes: START and RELEASE from the flags (Start=, Release=) and the state");
        run(&r, NULL, "--socket", sock_path, "volumes", "--json", NULL);
        is_int(r.status, 0, "volumes --json: exit 0");
        check_json("volumes --json with a stopped volume", r.out,
                   (const char *[]) { "d['schema_version']", "7", "d['volumes'][0]['state']",
                                      "stopped", NULL });
        run(&r, NULL, "--socket", sock_path, "volumes", "--json", "-o", "volume,start,release",
            NULL);
        check_json("volumes --json -o volume,start,release", r.out,
                   (const char *[]) { "d['volumes'][0]['start']", "login",
                                      "d['volumes'][0]['release']", "last-session",
                                      "d['volumes'][3]['release']", "user-manager", NULL });
        served_stop();
}

/* volumes -o KEY (nsd 1.12, schema_version 7): where each volume's password comes from, from
 * the flags: the login password, Key=ask, KeyFile=, or none */
static void test_volumes_key(void) {
        static const struct nsd_rep_volumes_entry volumes[] = {
                { .uid = ALICE,
                  .state = NSD_VOLUME_USER,
                  .flags = NSD_VOLUME_PASSWORD,
                  .name = "vault",
                  .type = "gocryptfs" },
                { .uid = ALICE,
                  .state = NSD_VOLUME_USER,
                  .flags = NSD_VOLUME_PASSWORD | NSD_VOLUME_ASK,
                  .name = "safe",
                  .type = "gocryptfs" },
                { .uid = ALICE,
                  .state = NSD_VOLUME_USER,
                  .flags = NSD_VOLUME_PASSWORD | NSD_VOLUME_KEY_FILE,
                  .name = "kv",
                  .type = "gocryptfs" },
                { .uid = ALICE, .state = NSD_VOLUME_MOUNTED, .name = "box", .type = "ext4" },
        };
        const struct fake_nsd_config cfg = { .volumes = volumes, .n_volumes = 4 };
        struct run r;

        serve(&cfg);
        run(&r, NULL, "--socket", sock_path, "volumes", "-r", "-n", "-o", "volume,key", NULL);
        is_str(r.out, "vault login\nsafe ask\nkv file\nbox -\n",
               "volumes -o KEY: login, ask (Key=ask), file (KeyFile=), '-' for none");
        run(&r, NULL, "--socket", sock_path, "volumes", "--json", "-o", "volume,key", NULL);
        check_json("volumes --json -o volume,key", r.out,
                   (const char *[]) { "d['schema_version']", "7", "d['volumes'][2]['key']", "file",
                                      "d['volumes'][3]['key']", "None", NULL });
        served_stop();
}

static void test_golden(void) {
        static const char mountinfo[] =
                "25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
                "26 25 0:50 / /home/alice/remote rw,nosuid,nodev shared:7 - fuse.sshfs "
                "alice@host:/ rw,user_id=1500,group_id=1500\n"
                "27 25 0:51 /sub /srv/bind ro master:3 - tmpfs tmpfs rw,size=1024k\n"
                "28 27 0:52 / /srv/bind/inner rw - proc proc rw\n"
                "40 99 0:53 / /orphan rw - tmpfs none rw\n";
        static const struct {
                const char *name;
                const char *argv[GOLDEN_ARGS_MAX];
                bool as_root; /* what it shows is root's alone */
        } cases[] = {
                { "help", { "--help" } },
                { "status-help", { "status", "--help" } },
                { "list-help", { "list", "--help" } },
                { "show-help", { "show", "--help" } },
                { "enter-help", { "enter", "--help" } },
                { "release-help", { "release", "--help" } },
                { "hide-help", { "hide", "-h" } },
                { "metrics-help", { "metrics", "--help" } },
                { "shares-help", { "shares", "--help" } },
                { "start-help", { "start", "--help" } },
                { "stop-help", { "stop", "--help" } },
                { "start-volumes-help", { "start-volumes", "--help" } },
                { "no-command", { NULL } },
                { "unknown-command", { "frobnicate" } },
                { "list-bad-column", { "list", "-o", "UID,bogus" } },
                { "list-no-columns", { "list", "-o", "," } },
                { "list-too-many-columns",
                  { "list", "-o",
                    "USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,"
                    "USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,"
                    "USER,USER,USER" } },
                { "list-exclusive", { "list", "--raw", "-J" } },
                { "status-extra", { "status", "now" } },
                { "status-raw", { "status", "--raw" } },
                { "release-extra", { "release", "alice", "bob" } },
                { "hide-root-no-user", { "hide", "/x" }, true },
                { "hide-extra", { "hide", "/x", "/y" } },
                { "enter-missing-mode", { "enter", "--mode" } },
                { "show-missing-user", { "show", "-l" } },
                { "status", { "status" } },
                { "status-json", { "status", "--json" } },
                { "list", { "list" } },
                { "list-json", { "list", "-J" } },
                { "list-raw", { "list", "-r" } },
                { "list-noheadings", { "list", "-n", "-o", "uid,user" } },
                { "list-json-columns", { "list", "--json", "--output", "NS,PINNED,MOUNTS" } },
                { "show", { "show", "alice" } },
                { "show-all-columns",
                  { "show", "-o",
                    "TARGET,SOURCE,FSTYPE,OPTIONS,VFS-OPTIONS,FS-OPTIONS,FSROOT,PROPAGATION,ID,"
                    "PARENT",
                    "1500" } },
                { "show-list", { "show", "--list", "alice" } },
                { "show-raw", { "show", "--raw", "alice" } },
                { "show-json", { "show", "--json", "alice" } },
                { "show-json-list", { "show", "-J", "-l", "-o", "id,parent,target", "alice" } },
                { "list-output-equals", { "list", "--output=uid,ns" } },
                { "list-json-output-all", { "list", "--json", "--output-all" } },
                { "show-output-plus", { "show", "-o", "+PROPAGATION,ID", "alice" } },
                { "show-json-output-all", { "show", "--json", "--output-all", "alice" } },
                { "show-output-all-then-plus",
                  { "show", "--raw", "--output-all", "-o", "+id", "alice" } },
                { "list-output-plus-too-many", /* 32 columns, then one more */
                  { "list", "-o",
                    "USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,"
                    "USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,USER,"
                    "USER,USER",
                    "-o", "+UID" } },
                { "shares", { "shares" } },
                { "shares-json", { "shares", "--json" } },
                { "shares-raw", { "shares", "-r", "-o", "share,uids" } },
                { "volumes", { "volumes" } },
                { "volumes-json", { "volumes", "--json", "--output-all" } },
                { "volumes-raw", { "volumes", "-r", "-o", "uid,volume,loop,state" } },
                { "release-busy", { "release", "alice" } },
                { "release-dry-run", { "release", "--dry-run", "alice" } },
                { "release-dry-run-orphaned", { "release", "-n", "4242" } },
                { "release-dry-run-unknown-user", { "release", "--dry-run", "nsctl-no-such" } },
                { "release-dry-run-no-namespace", { "release", "-n", "4243" } },
                { "release-dry-run-bad-option", { "release", "--dry-run=yes", "alice" } },
                { "orphans", { "orphans" } },
                { "orphans-help", { "orphans", "--help" } },
                { "hide-refused", { "hide", "--unhide", "-u", "bob", "/srv/x" } },
        };
        static const struct nsd_rep_volumes_entry volumes[] = {
                { .uid = 1500,
                  .state = NSD_VOLUME_MOUNTED,
                  .loop = 3 /* /dev/loop2 */,
                  .flags = NSD_VOLUME_NOW_KNOWN | NSD_VOLUME_NOW_MOUNTED,
                  .name = "vault",
                  .type = "ext4",
                  .source = "/srv/images/alice.img",
                  .where = "/home/alice/vault" },
                { .uid = 1500,
                  .state = NSD_VOLUME_NOT_TRIED,
                  .flags = NSD_VOLUME_NOW_KNOWN,
                  .name = "scratch",
                  .type = "xfs",
                  .source = "/dev/vdb",
                  .where = "/home/alice/scratch" },
                { .uid = 1500,
                  .state = NSD_VOLUME_USER,
                  .name = "files",
                  .type = "sshfs",
                  .source = "alice@files:/srv/alice",
                  .where = "/home/alice/files",
                  .options = "nosuid,nodev,reconnect" },
                { .uid = 1500,
                  .state = NSD_VOLUME_USER,
                  .flags = NSD_VOLUME_PASSWORD | NSD_VOLUME_ASK | NSD_VOLUME_NOW_KNOWN |
                           NSD_VOLUME_WAITING,
                  .name = "safe",
                  .type = "gocryptfs",
                  .source = "/home/alice/.safe",
                  .where = "/home/alice/safe",
                  .options = "nosuid,nodev" },
                { .uid = 1600,
                  .state = NSD_VOLUME_FAILED,
                  .error = -ELOOP,
                  .name = "vault",
                  .type = "ext4",
                  .source = "/srv/images/bob.img",
                  .where = "/home/bob/vault",
                  .why = "volume 'vault' (/etc/nsd/nsd.conf.d/60-vault.conf:1): Where= "
                         "'/home/bob/vault' is a symbolic link" },
        };
        static const uint32_t lab_uids[] = { 1500, 1600 };
        static const struct fake_share shares[] = {
                { .name = "lab",
                  .path = "/srv/lab",
                  .propagation = NSD_SHARE_PROPAGATION_HOST,
                  .max_members = 256,
                  .members = 2,
                  .uids = lab_uids,
                  .n_uids = 2 },
                { .name = "empty", .path = "/srv/empty", .max_members = 4 },
        };
        const struct fake_nsd_config cfg = {
                .status_version = "1.2.3",
                .status_features = NSD_FEATURE_SETNS_DIRFD | NSD_FEATURE_OWNER_PRIVATE |
                                   NSD_FEATURE_PIN_NAMESPACE | NSD_FEATURE_PRIVATE_MODE,
                .list = namespaces,
                .n_list = 3,
                .shares = shares,
                .n_shares = 2,
                .volumes = volumes,
                .n_volumes = 4,
                .show_text = mountinfo,
                .release_error = -EBUSY,
                .hide_error = -EPERM,
                .error_message = "not a mount of yours",
        };

        if (!golden_dir || !have_nss_wrapper) {
                tap_skip("golden outputs: %s", golden_dir ? "user names need nss_wrapper"
                                                          : "no folder of golden files given");
                return;
        }
        serve(&cfg);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const char *args[GOLDEN_ARGS_MAX + 3] = { "--socket", sock_path };
                struct run r;

                if (cases[i].as_root && !is_root) {
                        tap_skip("nsctl %s: as root only", cases[i].name);
                        continue;
                }
                for (size_t k = 0; k < GOLDEN_ARGS_MAX && cases[i].argv[k]; k++)
                        args[2 + k] = cases[i].argv[k];
                run_argv(&r, NULL, args);
                check_golden(cases[i].name, &r);
                if (strstr(cases[i].name, "json"))
                        check_json(cases[i].name, r.out, NULL);
        }
        (void) served_stop();
}

/* The schema itself: a valid JSON schema, and it refuses what breaks nsctl's JSON rules
 * (nsctl(1), JSON OUTPUT), so that a change of any --json output fails check_json(). */
static void test_json_schema(void) {
        static const struct {
                const char *what, *doc;
                int want; /* run_json_prog()'s exit status: 0 valid, 3 refused */
        } docs[] = {
                { "the smallest list", "{\"schema_version\": 7, \"namespaces\": []}", 0 },
                { "no schema_version", "{\"namespaces\": []}", 3 },
                { "another schema_version", "{\"schema_version\": 1, \"namespaces\": []}", 3 },
                { "a member of a type it does not have",
                  "{\"schema_version\": 3, \"namespaces\": [{\"uid\": \"1500\"}]}", 3 },
                { "a member the schema does not describe",
                  "{\"schema_version\": 3, \"namespaces\": [{\"uid\": 1500, \"color\": 1}]}", 3 },
                { "two outputs in one",
                  "{\"schema_version\": 3, \"namespaces\": [], "
                  "\"filesystems\": []}",
                  3 },
                { "a value of private_mode it does not have",
                  "{\"schema_version\": 2, \"status\": {\"private_mode\": \"maybe\"}}", 3 },
                { "a mount's children of another shape",
                  "{\"schema_version\": 2, \"filesystems\": [{\"target\": \"/\", "
                  "\"children\": [{\"id\": \"25\"}]}]}",
                  3 },
        };
        static char schema[65536];
        char out[4096];

        if (!schema_path) {
                tap_skip("the schema: no validator (python3-jsonschema)");
                return;
        }
        if (!read_text(schema_path, schema, sizeof(schema)))
                tap_bail_errno(schema_path);
        run_json_prog(schema, NULL,
                      (const char *[]) { "__import__('jsonschema').Draft202012Validator."
                                         "check_schema(d) or 'ok'" },
                      1, out, sizeof(out));
        is_str(out, "ok\n", "nsctl.schema.json is a valid JSON schema (draft 2020-12)");
        for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
                int st = run_json_prog(docs[i].doc, schema_path, NULL, 0, out, sizeof(out));

                if (!is_int(st, docs[i].want, "nsctl.schema.json %s: %s",
                            docs[i].want ? "refuses" : "takes", docs[i].what))
                        printf("#   %s", out);
        }
}

/* ---- metrics --------------------------------------------------------------------------- */

/* METRICS' figures, every counter a value of its own */
static struct nsd_rep_metrics metrics_figures(uint32_t n_ns, uint64_t base) {
        struct nsd_rep_metrics m = { .namespaces = n_ns,
                                     .pinned = n_ns / 2,
                                     .sessions = n_ns * 3,
                                     .connections = { 7, 2 },
                                     .fdstore_entries = n_ns,
                                     .join_latency_sum_usec = 1234567 * base };

        (void) fake_nsd_metrics_counters(&m, base);
        return m;
}

/* The series of an exposition (each sample line without its value), one per line, in
 * series[]; how many. */
static size_t series_of(const char *text, char *series, size_t size) {
        size_t n = 0, len = 0;

        series[0] = '\0';
        for (const char *p = text; *p;) {
                const char *nl = strchr(p, '\n'), *sp;
                size_t l = nl ? (size_t) (nl - p) : strlen(p);

                if (*p != '#' && l > 0 && (sp = memrchr(p, ' ', l)) != NULL &&
                    len + (size_t) (sp - p) + 2 < size) {
                        memcpy(series + len, p, (size_t) (sp - p));
                        len += (size_t) (sp - p);
                        series[len++] = '\n';
                        series[len] = '\0';
                        n++;
                }
                p += l + (nl ? 1 : 0);
        }
        return n;
}

/* the value of the sample line that starts with prefix (name and labels), or -1 */
static long long sample(const char *text, const char *prefix) {
        char key[128];
        const char *p;

        snprintf(key, sizeof(key), "\n%s ", prefix);
        p = strstr(text, key);
        return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static void test_metrics(void) {
        static char series_a[8192], series_b[8192], out_a[sizeof(((struct run *) 0)->out)];
        struct nsd_rep_metrics few = metrics_figures(1, 100), many = metrics_figures(100000, 9000);
        struct fake_nsd_config cfg = { .status_version = "1.2.3",
                                       .status_features = NSD_FEATURE_OWNER_PRIVATE,
                                       .metrics = &few,
                                       .list = namespaces,
                                       .n_list = 1 };
        char dir[160], path[200], want[512], text[65536];
        size_t n_a, n_b;
        struct stat st;
        struct run r;
        DIR *d;

        /* the text, and its gauges against nsctl status --json */
        serve(&cfg);
        run(&r, NULL, "--socket", sock_path, "metrics", NULL);
        ok(r.status == 0 && r.err[0] == '\0' && ends_with(r.out, "\n# EOF\n"),
           "metrics: exit 0, ends with '# EOF' (%d, '%s')", r.status, line1(r.err));
        if (golden_dir)
                check_golden("metrics", &r);
        memcpy(out_a, r.out, sizeof(out_a));
        n_a = series_of(r.out, series_a, sizeof(series_a));
        {
                char ns[32], pinned[32], sessions[32], conns[32];

                snprintf(ns, sizeof(ns), "%lld",
                         sample(out_a, "nsd_namespaces{state=\"pinned\"}") +
                                 sample(out_a, "nsd_namespaces{state=\"fd_only\"}"));
                snprintf(pinned, sizeof(pinned), "%lld",
                         sample(out_a, "nsd_namespaces{state=\"pinned\"}"));
                snprintf(sessions, sizeof(sessions), "%lld", sample(out_a, "nsd_sessions"));
                snprintf(conns, sizeof(conns), "%lld",
                         sample(out_a, "nsd_connections{socket=\"user\"}") +
                                 sample(out_a, "nsd_connections{socket=\"root\"}"));
                run(&r, NULL, "--socket", sock_path, "status", "--json", NULL);
                check_json("status --json against metrics", r.out,
                           (const char *[]) { "d['status']['namespaces']", ns,
                                              "d['status']['pinned']", pinned,
                                              "d['status']['sessions']", sessions,
                                              "d['status']['connections']", conns, NULL });
        }
        (void) served_stop();

        /* the number of series does not depend on the number of users */
        cfg.metrics = &many;
        cfg.n_list = 3;
        serve(&cfg);
        run(&r, NULL, "--socket", sock_path, "metrics", NULL);
        n_b = series_of(r.out, series_b, sizeof(series_b));
        ok(n_a > 40 && n_a == n_b && strcmp(series_a, series_b) == 0,
           "1 namespace or 100000: the same %zu series (%zu)", n_a, n_b);
        ok(strstr(r.out, "nsd_namespaces{state=\"pinned\"} 50000\n") &&
                   strstr(r.out, "nsd_namespaces{state=\"fd_only\"} 50000\n"),
           "namespaces by state: pinned and fd_only");
        ok(strstr(r.out, "nsd_join_duration_seconds_bucket{le=\"+Inf\"} ") &&
                   sample(r.out, "nsd_join_duration_seconds_count") ==
                           sample(r.out, "nsd_join_duration_seconds_bucket{le=\"+Inf\"}"),
           "the histogram's count is its +Inf bucket");
        ok(strstr(r.out, "nsd_build_info{version=\"1.2.3\"} 1\n") &&
                   strstr(r.out, "nsd_kernel_feature{feature=\"owner_private\"} 1\n") &&
                   strstr(r.out, "nsd_kernel_feature{feature=\"setns_dirfd\"} 0\n"),
           "build info and kernel features from STATUS");
        (void) served_stop();
        cfg.metrics = &few;
        cfg.n_list = 1;
        serve(&cfg);

        /* --textfile: written atomically, the same text, readable by the collector */
        snprintf(dir, sizeof(dir), "%s/textfile", tmpdir);
        snprintf(path, sizeof(path), "%s/nsd.prom", dir);
        if (mkdir(dir, 0755) < 0)
                tap_bail_errno(dir);
        write_file(path, "old\n");
        run(&r, NULL, "--socket", sock_path, "metrics", "--textfile", dir, NULL);
        ok(r.status == 0 && r.out[0] == '\0' && r.err[0] == '\0',
           "metrics --textfile: exit 0, nothing on stdout (%d, '%s')", r.status, line1(r.err));
        ok(read_text(path, text, sizeof(text)) && strcmp(text, out_a) == 0,
           "nsd.prom replaced by what metrics prints");
        ok(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644,
           "nsd.prom is 0644 (the collector runs as another user)");
        d = opendir(dir);
        {
                unsigned entries = 0;
                struct dirent *de;

                while (d && (de = readdir(d)))
                        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                                entries++;
                if (d)
                        closedir(d);
                is_int(entries, 1, "no temp file left beside it");
        }
        unlink(path);
        rmdir(dir);
        run(&r, NULL, "--socket", sock_path, "metrics", "--textfile", dir, NULL);
        snprintf(want, sizeof(want), "nsctl: cannot write %s/nsd.prom: No such file or directory\n",
                 dir);
        ok(r.status == 1 && strcmp(r.err, want) == 0, "a missing folder: exit 1, '%s'",
           line1(r.err));
        (void) served_stop();

        /* refused, and an nsd older than 1.4 (it is not even asked) */
        refused(&(struct fake_nsd_config) { .metrics_error = -EPERM,
                                            .error_message = "METRICS answers only root (uid 0): "
                                                             "the counters are the whole "
                                                             "machine's" },
                NULL, (const char *[]) { "--socket", sock_path, "metrics", NULL },
                "nsctl: cannot get metrics from nsd: Operation not permitted (METRICS answers only "
                "root (uid 0): the counters are the whole machine's)\n",
                "refused: nsd's reason");
        serve(&(struct fake_nsd_config) { .minor = 3 });
        run(&r, NULL, "--socket", sock_path, "metrics", NULL);
        is_str(r.err, "nsctl: this nsd does not answer METRICS (older than 1.4: it speaks 1.3)\n",
               "an nsd of 1.3: said so");
        is_int(r.status, 1, "... exit 1");
        is_int(served_stop()->metrics, 0, "... and it was not sent METRICS (it would hang up)");
}

/* ---- enter ----------------------------------------------------------------------------- */

/* A child in a mount namespace of its own (private, so nothing reaches the host) with a
 * tmpfs on tmpdir/mnt holding a file 'marker'; it lives until *ret_fd is closed. */
static pid_t sandbox_start(int *ret_fd) {
        int ready[2], hold[2];
        char c = 0;
        pid_t pid;

        if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(hold, O_CLOEXEC) < 0)
                tap_bail_errno("pipe2");
        pid = tap_fork();
        if (pid == 0) {
                char path[256];
                FILE *f;

                close(ready[0]);
                close(hold[1]);
                snprintf(path, sizeof(path), "%s/mnt", tmpdir);
                if (unshare(CLONE_NEWNS) < 0 ||
                    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
                    mount("tmpfs", path, "tmpfs", 0, "size=64k") < 0)
                        _exit(1);
                snprintf(path, sizeof(path), "%s/mnt/marker", tmpdir);
                f = fopen(path, "we");
                if (!f || fputs("in the sandbox\n", f) < 0 || fclose(f) != 0)
                        _exit(1);
                if (write(ready[1], "1", 1) != 1)
                        _exit(1);
                (void) read(hold[0], &c, 1); /* until the parent closes its end */
                _exit(0);
        }
        close(ready[1]);
        close(hold[0]);
        if (read(ready[0], &c, 1) != 1) {
                close(ready[0]);
                close(hold[1]);
                (void) waitpid(pid, NULL, 0);
                return -1;
        }
        close(ready[0]);
        *ret_fd = hold[1];
        return pid;
}

static void test_enter_refused(void) {
        static const char own_hint[] =
                "nsctl: only root may enter a namespace from outside it; 'nsctl show 1500' shows "
                "its\n"
                "nsctl: mounts, and a new login (ssh, su -l, a new session) runs inside it\n";
        const struct run_opts *user = is_root ? &as_alice : NULL;
        const struct fake_nsd_record *rec;
        char want[512], uid[16];
        struct run r;

        if (!is_root && getuid() != ALICE) {
                /* the messages name uid 1500 as "yours": be it, or skip */
                tap_skip("enter as a user: needs root (to run nsctl as uid 1500)");
                return;
        }
        if (is_root && !alice_can_run) {
                tap_skip("enter as a user: uid 1500 cannot reach '%s' (a folder on the way is "
                         "closed to others)",
                         nsctl);
                return;
        }
        snprintf(uid, sizeof(uid), "%u", ALICE);

        /* what nsd answers a user outside its namespace (after the descriptor policy) */
        snprintf(want, sizeof(want),
                 "nsctl: cannot enter the namespace of 1500: Operation not permitted (only root "
                 "and "
                 "processes already in it get a namespace's descriptors)\n%s",
                 own_hint);
        rec = refused(
                &(struct fake_nsd_config) {
                        .join_error = -EPERM,
                        .join_message = "only root and processes already in it get a "
                                        "namespace's descriptors" },
                user,
                (const char *[]) { "--socket", sock_path, "enter", uid, "--", "echo", "ran", NULL },
                want,
                "user outside its namespace, nsd says EPERM: the reason and what to do instead "
                "(the command not run)");
        ok(rec->joins == 1, "... nsd was asked");

        refused(&(struct fake_nsd_config) { .join_error = -EPERM,
                                            .join_message = "only root may ask for another user's "
                                                            "namespace" },
                user, (const char *[]) { "--socket", sock_path, "enter", "1600", NULL },
                "nsctl: cannot enter the namespace of 1600: Operation not permitted (only root may "
                "ask for another user's namespace)\nnsctl: only root may enter another user's "
                "namespace\n",
                "user asking for another user's namespace: refused, said so");

        /* a user already in the namespace (its login session): the command just runs */
        serve(&(struct fake_nsd_config) {});
        run(&r, user, "--socket", sock_path, "enter", uid, "--", "echo", "ran inside", NULL);
        ok(r.status == 0 && strcmp(r.out, "ran inside\n") == 0 && r.err[0] == '\0',
           "user already in the namespace: the command runs (exit %d, '%s')", r.status,
           line1(r.err));
        run(&r, user, "--socket", sock_path, "enter", "--mode", "chroot", uid, "echo", "chroot too",
            NULL);
        ok(r.status == 0 && strcmp(r.out, "chroot too\n") == 0, "... also with --mode chroot");
        (void) served_stop();
}

static void test_enter_sandbox(void) {
        char marker[256], want[512];
        int hold = -1;
        struct run r;
        pid_t pid;

        if (!is_root) {
                tap_skip("enter another mount namespace: needs root");
                return;
        }
        pid = sandbox_start(&hold);
        if (pid < 0) {
                tap_skip("enter another mount namespace: no unshare(CLONE_NEWNS) here");
                return;
        }
        snprintf(marker, sizeof(marker), "%s/mnt/marker", tmpdir);
        ok(access(marker, F_OK) < 0, "the sandbox's tmpfs is not seen outside it");

        serve(&(struct fake_nsd_config) { .ns_pid = pid });
        run(&r, NULL, "--socket", sock_path, "enter", "0", "--", "cat", marker, NULL);
        ok(r.status == 0 && strcmp(r.out, "in the sandbox\n") == 0,
           "root, mode setns: the command sees the namespace's mounts (exit %d, '%s')", r.status,
           line1(r.err));
        run(&r, NULL, "--socket", sock_path, "enter", "--mode", "chroot", "0", "cat", marker, NULL);
        ok(r.status == 0 && strcmp(r.out, "in the sandbox\n") == 0,
           "root, mode chroot: the same (exit %d, '%s')", r.status, line1(r.err));
        run(&r, NULL, "--socket", sock_path, "enter", "0", "--", "/nonexistent/nsctl-test/cmd",
            NULL);
        ok(r.status == 127 &&
                   starts_with(r.err, "nsctl: cannot execute /nonexistent/nsctl-test/cmd: "),
           "a command that is not there: exit 127 (%d)", r.status);

        /* with the descriptors of a namespace it is not in (an nsd before the descriptor
         * policy gives them), a user is stopped by the kernel: the same advice */
        if (!alice_can_run) {
                tap_skip("enter as a user with another namespace's descriptors: uid 1500 cannot "
                         "reach '%s'",
                         nsctl);
                served_stop();
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                close(hold);
                return;
        }
        run(&r, &as_alice, "--socket", sock_path, "enter", "1500", "--", "cat", marker, NULL);
        snprintf(want, sizeof(want),
                 "nsctl: cannot enter the namespace of 1500 (mode setns): Operation not permitted\n"
                 "nsctl: only root may enter a namespace from outside it;");
        ok(r.status == 1 && starts_with(r.err, want) && r.out[0] == '\0',
           "user, descriptors of another namespace, setns: EPERM and the advice: '%s'",
           line1(r.err));
        run(&r, &as_alice, "--socket", sock_path, "enter", "--mode", "chroot", "1500", "cat",
            marker, NULL);
        ok(r.status == 1 &&
                   strstr(r.err,
                          "(mode chroot): Operation not permitted\nnsctl: only root may enter") &&
                   r.out[0] == '\0',
           "user, mode chroot: the same: '%s'", line1(r.err));
        ok(served_stop()->joins == 5, "nsd was asked five times");

        close(hold);
        (void) waitpid(pid, NULL, 0);
}

/* ---- setup ----------------------------------------------------------------------------- */

/* Can uid run the program at path (every folder on the way searchable, the file executable)? */
static bool can_run_as(uid_t uid, const char *path) {
        int status;
        pid_t pid = fork();

        if (pid < 0)
                return false;
        if (pid == 0)
                _exit(setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
                      setresuid(uid, uid, uid) < 0 || access(path, X_OK) < 0);
        return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv) {
        const char *preload = getenv("LD_PRELOAD");
        char mnt[160];

        if (argc < 2 || argc > 4) {
                tap_skip("usage: test-nsctl-cli PATH-TO-NSCTL [GOLDEN-DIR [SCHEMA]]");
                return tap_done();
        }
        nsctl = argv[1];
        golden_dir = argc > 2 ? argv[2] : NULL;
        schema_path = argc > 3 && *argv[3] ? argv[3] : NULL;
        if (getenv("NSCTL_TEST_PYTHON") && *getenv("NSCTL_TEST_PYTHON"))
                python = getenv("NSCTL_TEST_PYTHON");
        /* CREATED and "running since" in one time zone, whatever the host's */
        setenv("TZ", "UTC", 1);
        is_root = geteuid() == 0;
        alice_can_run = is_root && can_run_as(ALICE, nsctl);
        signal(SIGPIPE, SIG_IGN);

        if (!mkdtemp(tmpdir) || chmod(tmpdir, 0755) < 0)
                tap_bail_errno("mkdtemp");
        snprintf(sock_path, sizeof(sock_path), "%s/nsd.sock", tmpdir);
        snprintf(json_path, sizeof(json_path), "%s/out.json", tmpdir);
        snprintf(nss_passwd, sizeof(nss_passwd), "%s/passwd", tmpdir);
        snprintf(nss_group, sizeof(nss_group), "%s/group", tmpdir);
        snprintf(mnt, sizeof(mnt), "%s/mnt", tmpdir);
        if (mkdir(mnt, 0755) < 0)
                tap_bail_errno(mnt);

        /* nsctl's lookups go to these files (meson preloads nss_wrapper) */
        write_file(nss_passwd, "root:x:0:0:root:/root:/bin/sh\n"
                               "alice:x:1500:1500::/home/alice:/bin/sh\n"
                               "bob:x:1600:1600::/home/bob:/bin/sh\n");
        write_file(nss_group, "root:x:0:\nalice:x:1500:\nbob:x:1600:\n");
        setenv("NSS_WRAPPER_PASSWD", nss_passwd, 1);
        setenv("NSS_WRAPPER_GROUP", nss_group, 1);
        have_nss_wrapper = preload && strstr(preload, "nss_wrapper");
        tap_diag("running as uid %u; nss_wrapper %s", (unsigned) geteuid(),
                 have_nss_wrapper ? "yes" : "no");

        lfd = fake_nsd_listen(sock_path, 16);
        if (lfd < 0 || chmod(sock_path, 0666) < 0) {
                errno = lfd < 0 ? -lfd : errno;
                tap_bail_errno("fake nsd");
        }

        test_help_version();
        test_usage_errors();
        test_no_nsd();
        test_exclusive();
        test_write_errors();
        test_status();
        test_list();
        test_show();
        test_show_stale();
        test_release_hide();
        test_unlock();
        test_volume_ctl();
        test_start_volumes();
        test_volumes_stopped();
        test_volumes_key();
        test_golden();
        test_metrics();
        test_json_schema();
        test_enter_refused();
        test_enter_sandbox();

        close(lfd);
        unlink(sock_path);
        unlink(nss_passwd);
        unlink(nss_group);
        if (rmdir(mnt) < 0 || rmdir(tmpdir) < 0)
                tap_diag("cannot remove %s: %s", tmpdir, strerror(errno));
        return tap_done();
}
