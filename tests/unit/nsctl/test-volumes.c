/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-nsctl-volumes: nsctl/volumes.c on fixed input: the argv of a FUSE volume's program
 * (what nsctl run-volume executes) and what it refuses, and the unit name of a volume, escaped
 * as systemd-escape(1) does.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

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

static void test_argv(void) {
        struct nsc_volume_info v = sshfs();
        const char *argv[VOLUME_ARGV_MAX], *why = NULL;
        int r;

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
        why = NULL;
        r = volume_argv(&v, argv, &why);
        ok(r == -EINVAL && why && strstr(why, "password"),
           "nsd not saying that it takes the password: refused (%s)", why ? why : "");
        v.flags = NSC_VOLUME_PASSWORD;
        snprintf(v.source, sizeof v.source, "files:/x");
        why = NULL;
        r = volume_argv(&v, argv, &why);
        ok(r == -EINVAL && why && strstr(why, "absolute"),
           "gocryptfs: a Source= that is no absolute path: refused (%s)", why ? why : "");

        /* what it refuses, each with its reason */
        v = sshfs();
        v.state = NSC_VOLUME_MOUNTED;
        r = volume_argv(&v, argv, &why);
        ok(r == -EINVAL && why && strstr(why, "nsd mounts it"),
           "a kernel file system: refused (%s)", why ? why : "");
        v = sshfs();
        snprintf(v.type, sizeof v.type, "ext4");
        why = NULL;
        r = volume_argv(&v, argv, &why);
        ok(r == -EINVAL && why && strstr(why, "does not know"),
           "a type without a FUSE program: refused (%s)", why ? why : "");
        v = sshfs();
        snprintf(v.source, sizeof v.source, "-oProxyCommand=touch /tmp/x");
        why = NULL;
        r = volume_argv(&v, argv, &why);
        ok(r == -EINVAL && why && strstr(why, "'-'"),
           "a Source= that reads as an option: refused (%s)", why ? why : "");
        v = sshfs();
        v.source[0] = '\0';
        ok(volume_argv(&v, argv, &why) == -EINVAL, "an empty Source=: refused");
        v = sshfs();
        snprintf(v.where, sizeof v.where, "data");
        why = NULL;
        r = volume_argv(&v, argv, &why);
        ok(r == -EINVAL && why && strstr(why, "absolute"), "a relative Where=: refused (%s)",
           why ? why : "");
}

static void test_unit_name(void) {
        static const struct {
                const char *name, *unit;
        } cases[] = {
                /* as systemd-escape(1) writes them */
                { "data", "nsd-volume@data.service" },
                { "a.b_c:d", "nsd-volume@a.b_c:d.service" },
                { "my-vault@x", "nsd-volume@my\\x2dvault\\x40x.service" },
                { ".hidden", "nsd-volume@\\x2ehidden.service" },
        };
        char buf[64];

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                int r = volume_unit_name(cases[i].name, buf, sizeof buf);

                ok(r == 0 && strcmp(buf, cases[i].unit) == 0, "'%s': %s", cases[i].name,
                   r == 0 ? buf : strerror(-r));
        }
        is_int(volume_unit_name("data", buf, 20), -ENAMETOOLONG,
               "a unit name that does not fit: ENAMETOOLONG");
        is_int(volume_unit_name("data", buf, 24), 0, "one that just fits (23 bytes and the NUL)");
}

int main(void) {
        test_argv();
        test_unit_name();
        return tap_done();
}
