/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-nsctl-volumes: nsctl/volumes.c on fixed input: the argv of a FUSE volume's program
 * (what nsctl run-volume executes) and what it refuses, and the unit name of a volume, escaped
 * as systemd-escape(1) does, and nsctl unlock's password read from a pipe (a script's way)
 * into a sealed memfd.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "volumes.h"

static struct nsc_volume_info sshfs(void) {
        struct nsc_volume_info v = { .uid = 1000, .state = NSC_VOLUME_USER };

        snprintf(v.name, sizeof v.name, "data");
        snprintf(v.type, sizeof v.type, "sshfs");
        snprintf(v.source, sizeof v.source, "alice@files:/srv/alice");
        snprintf(v.where, sizeof v.where, "/home/alice/data");
        snprintf(v.options, sizeof v.options, "nosuid,nodev,ro,reconnect");
        return v;
}

static char *joined(const char *const *argv) {
        static char buf[2048];
        size_t n = 0;

        buf[0] = '\0';
        for (; *argv; argv++)
                n += (size_t) snprintf(buf + n, sizeof buf - n, "%s%s", n ? " " : "", *argv);
        return buf;
}

/* volume_argv() refuses v (EINVAL) with a reason that holds want */
static void refused(const struct nsc_volume_info *v, const char *want, const char *what) {
        const char *argv[VOLUME_ARGV_MAX], *why = NULL;
        int r = volume_argv(v, argv, &why);

        ok(r == -EINVAL && why && strstr(why, want), "%s: refused (%s)", what, why ? why : "");
}

static void test_argv(void) {
        struct nsc_volume_info v = sshfs();
        const char *argv[VOLUME_ARGV_MAX], *why = NULL;

        is_int(volume_argv(&v, argv, &why), 0, "an sshfs volume gives an argv");
        is_str(joined(argv),
               "/usr/bin/sshfs -f -o nosuid,nodev,ro,reconnect -- alice@files:/srv/alice "
               "/home/alice/data",
               "the program in the foreground, nsd's options, then '--' and the operands");
        v.options[0] = '\0';
        ok(volume_argv(&v, argv, &why) == 0 &&
                   strcmp(joined(argv), "/usr/bin/sshfs -f -- alice@files:/srv/alice "
                                        "/home/alice/data") == 0,
           "no options: no -o");

        /* gocryptfs: the kernel's options by -ko, the password on stdin */
        v = sshfs();
        snprintf(v.type, sizeof v.type, "gocryptfs");
        snprintf(v.source, sizeof v.source, "/home/alice/.vault");
        snprintf(v.where, sizeof v.where, "/home/alice/vault");
        snprintf(v.options, sizeof v.options, "nosuid,nodev");
        v.flags = NSC_VOLUME_PASSWORD;
        ok(volume_argv(&v, argv, &why) == 0 &&
                   strcmp(joined(argv), "/usr/bin/gocryptfs -fg -ko nosuid,nodev -passfile "
                                        "/dev/stdin -- /home/alice/.vault /home/alice/vault") == 0,
           "gocryptfs: -fg, -ko OPTIONS, -passfile /dev/stdin, then the operands (%s)",
           joined(argv));
        v.flags = 0;
        refused(&v, "password", "nsd not saying that it takes the password");
        v.flags = NSC_VOLUME_PASSWORD;
        snprintf(v.source, sizeof v.source, "files:/x");
        refused(&v, "absolute", "gocryptfs: a Source= that is no absolute path");

        /* what it refuses, each with its reason */
        v = sshfs();
        v.state = NSC_VOLUME_MOUNTED;
        refused(&v, "nsd mounts it", "a kernel file system");
        v = sshfs();
        snprintf(v.type, sizeof v.type, "ext4");
        refused(&v, "does not know", "a type without a FUSE program");
        v = sshfs();
        snprintf(v.source, sizeof v.source, "-oProxyCommand=touch /tmp/x");
        refused(&v, "'-'", "a Source= that reads as an option");
        v = sshfs();
        v.source[0] = '\0';
        ok(volume_argv(&v, argv, &why) == -EINVAL, "an empty Source=: refused");
        v = sshfs();
        snprintf(v.where, sizeof v.where, "data");
        refused(&v, "absolute", "a relative Where=");
}

/* volume_unit_name() of name into size bytes: r, and when 0, the unit */
static void test_unit_name(void) {
        char buf[64];
        static const struct {
                const char *name;
                size_t size;
                int r;
                const char *unit;
        } cases[] = {
                /* as systemd-escape(1) writes them */
                { "data", sizeof buf, 0, "nsd-volume@data.service" },
                { "a.b_c:d", sizeof buf, 0, "nsd-volume@a.b_c:d.service" },
                { "my-vault@x", sizeof buf, 0, "nsd-volume@my\\x2dvault\\x40x.service" },
                { ".hidden", sizeof buf, 0, "nsd-volume@\\x2ehidden.service" },
                /* a unit name that does not fit; one that just fits (23 bytes and the NUL) */
                { "data", 20, -ENAMETOOLONG, NULL },
                { "data", 24, 0, "nsd-volume@data.service" },
        };

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                int r = volume_unit_name(cases[i].name, buf, cases[i].size);

                ok(r == cases[i].r && (r != 0 || strcmp(buf, cases[i].unit) == 0),
                   "'%s' in %zu bytes: %s", cases[i].name, cases[i].size,
                   r == 0 ? buf : strerror(-r));
        }
}

/* volume_read_password() of what a pipe holds: the memfd's bytes, or the error */
static int read_from_pipe(const char *input, size_t len, char *got, size_t size,
                          const char **ret_why) {
        int p[2], fd, seals;
        ssize_t n;

        if (pipe(p) < 0 || write(p[1], input, len) != (ssize_t) len)
                tap_bail_errno("pipe");
        close(p[1]);
        fd = volume_read_password(p[0], "prompt: ", ret_why);
        close(p[0]);
        if (fd < 0)
                return fd;
        seals = fcntl(fd, F_GET_SEALS);
        n = pread(fd, got, size - 1, 0);
        got[n > 0 ? n : 0] = '\0';
        close(fd);
        return seals == (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) ? (int) n
                                                                                   : -EPERM;
}

static void test_read_password(void) {
        char got[2048];
        const char *why = NULL;
        char *big;
        int r;

        r = read_from_pipe("s3cret pw\nsecond line\n", 22, got, sizeof got, &why);
        ok(r == 9 && strcmp(got, "s3cret pw") == 0,
           "the first line of a pipe, without its line end, in a memfd sealed four ways (%d)", r);
        r = read_from_pipe("dos\r\n", 5, got, sizeof got, &why);
        ok(r == 3 && strcmp(got, "dos") == 0, "a CR before the line end is dropped");
        r = read_from_pipe("no line end", 11, got, sizeof got, &why);
        ok(r == 11 && strcmp(got, "no line end") == 0, "a last line without its end counts");
        r = read_from_pipe("\nlater\n", 7, got, sizeof got, &why);
        ok(r == -ENODATA && why && strstr(why, "no password"),
           "an empty first line: ENODATA, said (%s)", why ? why : "");
        r = read_from_pipe("", 0, got, sizeof got, &why);
        is_int(r, -ENODATA, "nothing at all: ENODATA");
        big = malloc(NSC_CREDENTIAL_MAX + 2);
        memset(big, 'x', NSC_CREDENTIAL_MAX + 1);
        big[NSC_CREDENTIAL_MAX + 1] = '\n';
        r = read_from_pipe(big, NSC_CREDENTIAL_MAX + 2, got, sizeof got, &why);
        ok(r == -EMSGSIZE && why && strstr(why, "1024 bytes"),
           "one byte more than nsd takes: EMSGSIZE, said (%s)", why ? why : "");
        r = read_from_pipe(big, NSC_CREDENTIAL_MAX, got, sizeof got, &why);
        is_int(r, NSC_CREDENTIAL_MAX, "exactly what nsd takes: taken");
        free(big);
}

static void test_wait_why(void) {
        char buf[300];
        const char *w;

        ok(!volume_wait_why(0, NULL, false, "v", buf, sizeof buf) &&
                   !volume_wait_why(-EPERM, "not yours", false, "v", buf, sizeof buf),
           "taken, or refused: no reason to wait");
        w = volume_wait_why(-EAGAIN, "no password is held for volume 'v'", false, "v", buf,
                            sizeof buf);
        ok(w && strstr(w, "waiting for your login password") && strstr(w, "nsctl unlock v"),
           "nothing held: waiting for the login password (%s)", w ? w : "");
        w = volume_wait_why(-EALREADY, NULL, false, "v", buf, sizeof buf);
        ok(w && strstr(w, "did not unlock it"), "handed on already: the login password failed");
        w = volume_wait_why(-EALREADY, NULL, true, "v", buf, sizeof buf);
        ok(w && strstr(w, "waiting for its password (nsctl unlock v)"),
           "Key=ask: waiting for nsctl unlock");
        w = volume_wait_why(-EAGAIN,
                            "nsd could not check where pid 7 is right now (run helper "
                            "process: Resource temporarily unavailable); retry",
                            true, "v", buf, sizeof buf);
        ok(w && strncmp(w, "nsd could not check where pid 7", 31) == 0 &&
                   strstr(w, "asking again") && !strstr(w, "locked"),
           "nsd short of resources: said as nsd's, not as a locked volume (%s)", w ? w : "");
}

int main(void) {
        test_argv();
        test_wait_why();
        test_unit_name();
        test_read_password();
        return tap_done();
}
