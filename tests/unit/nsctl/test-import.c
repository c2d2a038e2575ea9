/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-nsctl-import: nsctl import-namespace-conf's converter (nsctl/import-namespace-conf.c),
 * one namespace.conf construct at a time: what it becomes in nsd.conf(5)'s words, what is
 * named as not carried over (with its line), and that every drop-in it prints is one nsd's
 * own parser (nsd/policy/conf.c) reads. TAP; nothing touches a file.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import-namespace-conf.h"
#include "import-test.h"

static Out import(const char *text, const char *init_script) {
        const char *sources[] = { "ns.conf" };
        NsImport im;
        Out o = { 0 };

        if (ns_import_init(&im) < 0 || ns_import_text(&im, text, strlen(text), "ns.conf") < 0)
                tap_bail_errno("import");
        out_read(&o, &im.out, ns_import_finish(&im, sources, 1, init_script));
        ns_import_done(&im);
        return o;
}

/* The drop-in holds each of the NULL-terminated lines, and nsd reads it. */
static void carried(const char *what, const char *input, ...) {
        Out o = import(input, NULL);
        va_list ap;

        va_start(ap, input);
        out_point(&o, o.parsed == 0 && !o.lost, what, ap);
        va_end(ap);
}

/* Constructs named as not carried over, each on its own: named() */
static const struct named_case {
        const char *what;
        const char *input;
        unsigned line;     /* ns.conf:LINE in the note */
        const char *want;  /* in the note and in the drop-in */
        unsigned polydirs; /* what nsd reads of the rest */
} named_cases[] = {
        { "method level", "# x\n/tmp /tmp-inst/ level root,adm\n", 2,
          "method 'level' makes an instance per SELinux MLS level", 0 },
        { "method context", "$HOME $HOME/$USER.inst/inst- context\n", 1,
          "method 'context' makes an instance per SELinux security context", 0 },
        { "an unknown method", "/tmp /i/ bogus\n", 1, "unknown method 'bogus'", 0 },
        { "create=: the polydir is carried, create= is not",
          "/tmp /tmp-inst/ user:create=0700,root,root\n", 1,
          "create=0700,root,root is not carried over", 1 },
        { "shared", "/tmp /tmp-inst/ user:shared\n", 1, "'shared' is not carried over", 1 },
        { "mntopts= on method user", "/tmp /i/ user:mntopts=size=1m\n", 1,
          "mntopts= is not carried over: it is for the tmpfs method", 1 },
        { "a mount option nsd has no word for", "/tmp t tmpfs:mntopts=size=1m,lazytime\n", 1,
          "mount option 'lazytime' is not carried over", 1 },
        { "suid in mntopts=", "/tmp t tmpfs:mntopts=suid\n", 1,
          "mount option 'suid' is not carried over", 1 },
        { "an unknown flag", "/tmp /i/ user:frobnicate\n", 1,
          "unknown flag 'frobnicate' is not carried over", 1 },
        { "a line with two fields", "/tmp /tmp-inst/\n", 1, "a line needs a polydir", 0 },
        { "$HOME in the middle", "/srv/$HOME /i/ user\n", 1, "$HOME is not at its start", 0 },
        { "a relative polydir", "tmp /i/ user\n", 1, "not an absolute path", 0 },
        { "'..' in a path", "/tmp/../etc /i/ user\n", 1, "contains '..'", 0 },
        { "'/' as polydir", "/ /i/ user\n", 1, "'/' cannot be a polydir", 0 },
        { "a relative instance prefix", "/tmp inst/ user\n", 1, "instance prefix 'inst/'", 0 },
        { "the same polydir twice", "/tmp /i/ user\n/tmp/ /j/ user\n", 2,
          "polydir /tmp/ is set up by ns.conf:1 already", 1 },
        { "a user name nsd cannot take", "/tmp /i/ user root,bad!name\n", 1,
          "user 'bad!name' is not carried over", 1 },
        { "a path that is not UTF-8", "/tmp/\xff /i/ user\n", 1, "not valid UTF-8", 0 },
        { "a control character", "/tmp/a\\bb /i/ user\n", 1, "control character", 0 },
};

/* Named as not carried over at ns.conf:LINE with a note holding want; nsd reads the rest. */
static void named(const struct named_case *c) {
        Out o = import(c->input, NULL);
        char where[32];

        snprintf(where, sizeof where, "ns.conf:%u: ", c->line);
        if (!ok(o.lost && has(o.notes, where) && has(o.notes, c->want) && o.parsed == 0 &&
                        o.config.setup.n_polydirs == c->polydirs && has(o.text, c->want),
                "%s: named at line %u, also in the drop-in, which nsd reads (%zu polydirs)",
                c->what, c->line, o.parsed == 0 ? o.config.setup.n_polydirs : 0))
                printf("# notes: %s# parse: %s\n", o.notes, o.parse_error ? o.parse_error : "ok");
        out_done(&o);
}

int main(void) {
        Out o;

        o = import("# only comments\n\n   # and blanks\n", NULL);
        ok(o.parsed == 0 && !o.lost && o.config.setup.n_polydirs == 0 &&
                   has(o.text, "(no polydir: nothing to set up)"),
           "comments and blank lines: an empty drop-in, nothing lost");
        out_done(&o);

        carried("method user with an instance prefix and a list of users not to polyinstantiate",
                "/var/tmp   /var/tmp/tmp-inst/   user   root,adm\n", "[Polydir var-tmp]\n",
                "Path=/var/tmp\n", "Method=user\n", "InstancePrefix=/var/tmp/tmp-inst/\n",
                "ExcludeUsers=root adm\n", NULL);
        carried("'~' makes the list the only users", "/tmp /tmp-inst/ user ~alice,bob\n",
                "OnlyUsers=alice bob\n", NULL);
        carried("$HOME and $USER become %h and %u", "$HOME $HOME/$USER.inst/ user\n",
                "[Polydir home]\n", "Path=%h\n", "InstancePrefix=%h/%u.inst/\n", NULL);
        carried("an instance prefix that is not a directory ends with the name",
                "$HOME/.cache /var/cache/inst/$USER- user\n", "Path=%h/.cache\n",
                "InstancePrefix=/var/cache/inst/%u-\n", NULL);
        carried("tmpfs with mntopts=: MountOptions=, the instance prefix dropped",
                "/tmp tmpfs tmpfs:mntopts=size=5M,nr_inodes=1k,noexec root\n", "Method=tmpfs\n",
                "MountOptions=size=5M,nr_inodes=1k,noexec\n", NULL);
        carried("noinit: NoInit=yes", "/tmp /tmp-inst/ user:noinit\n", "NoInit=yes\n", NULL);
        carried("iscript= relative to /etc/security/namespace.d",
                "/tmp /tmp-inst/ user:iscript=tmp.init\n",
                "InitScript=/etc/security/namespace.d/tmp.init\n", NULL);
        carried("iscript= absolute", "/tmp /tmp-inst/ user:iscript=/usr/sbin/x-init\n",
                "InitScript=/usr/sbin/x-init\n", NULL);
        carried("quotes: paths with spaces", "\"/srv/my dir\" \"/srv/my inst/\" user\n",
                "Path=/srv/my dir\n", "InstancePrefix=/srv/my inst/\n", NULL);
        carried("an escaped backslash is a backslash, written \\\\ in nsd.conf",
                "/srv/a\\\\b /i/ user\n", "Path=/srv/a\\\\b\n", NULL);
        carried("a '%' is written %%", "/srv/100% /srv/inst/ user\n", "Path=/srv/100%%\n", NULL);
        carried("a trailing '/' goes (as pam_namespace strips it), '//' becomes '/'",
                "/var//tmp/ /var/tmp//inst/ user\n", "Path=/var/tmp\n",
                "InstancePrefix=/var/tmp/inst/\n", NULL);
        carried("a comment after the fields", "/tmp /tmp-inst/ user # a comment\n", "Path=/tmp\n",
                "# ns.conf:1: /tmp /tmp-inst/ user\n", NULL);
        carried("two polydirs whose names would be the same get two names",
                "/a-b /i/ user\n/a/b /j/ user\n", "[Polydir a-b]\n", "[Polydir a-b-2]\n", NULL);
        carried("the first polydir's line is named above its group", "\n\n/tmp /tmp-inst/ user\n",
                "# ns.conf:3: /tmp /tmp-inst/ user\n", NULL);

        /* tmpdir: carried, with a note that does not count as lost */
        o = import("/tmp /tmp-inst/ tmpdir\n", NULL);
        ok(o.parsed == 0 && !o.lost && has(o.text, "Method=tmpfs\n") &&
                   has(o.notes, "ns.conf:1: method tmpdir") && !has(o.text, "InstancePrefix"),
           "method tmpdir becomes Method=tmpfs, with a note (not counted as lost)");
        out_done(&o);

        /* [Setup] only when a polydir runs the default script */
        o = import("/tmp /tmp-inst/ user\n/var/tmp /i/ user:noinit\n", "/etc/x.init");
        ok(o.parsed == 0 && o.config.setup.init_script &&
                   strcmp(o.config.setup.init_script, "/etc/x.init") == 0,
           "the default init script becomes [Setup] InitScript= when a polydir runs it");
        out_done(&o);
        o = import("/tmp /tmp-inst/ user:noinit\n/var/tmp /i/ user:iscript=/y\n", "/etc/x.init");
        ok(o.parsed == 0 && !o.config.setup.init_script && !has(o.text, "[Setup]"),
           "... and not when every polydir has NoInit= or its own script");
        out_done(&o);

        for (size_t i = 0; i < sizeof named_cases / sizeof named_cases[0]; i++)
                named(&named_cases[i]);

        /* a NUL byte: named, and the drop-in still one line per line */
        const char with_nul[] = "/tmp /i/ user\n/var/tmp\0x /j/ user\n";
        NsImport im;
        const char *src[] = { "ns.conf" };
        if (ns_import_init(&im) < 0 ||
            ns_import_text(&im, with_nul, sizeof with_nul - 1, "ns.conf") < 0)
                tap_bail_errno("import");
        char *text = ns_import_finish(&im, src, 1, NULL);
        Config c;
        char *err = NULL;
        ok(im.out.lost && im.out.n_notes == 1 && has(im.out.notes[0], "ns.conf:2: ") &&
                   has(im.out.notes[0], "NUL byte") &&
                   config_parse_text(text, strlen(text), "d.conf", &c, &err) == 0 &&
                   c.setup.n_polydirs == 1,
           "a NUL byte: that line is named, the others carried (%s)", err ? err : "");
        if (!err)
                config_done(&c);
        free(err);
        free(text);
        ns_import_done(&im);
        return tap_done();
}
