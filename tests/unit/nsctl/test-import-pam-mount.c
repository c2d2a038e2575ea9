/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-nsctl-import-pam-mount: nsctl import-pam-mount's converter (nsctl/import-pam-mount.c),
 * one pam_mount.conf.xml construct at a time: what it becomes in nsd.conf(5)'s words, what is
 * named as not carried over (with its line), that no secret reaches the output, that no
 * entity is expanded and bad XML is an error, and that every drop-in it prints is one nsd's
 * own parser (nsd/policy/conf.c) reads. TAP; nothing touches a file.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import-pam-mount.h"
#include "import-test.h"
#include "volume-options.h"

static Out import(const char *body) {
        const char *sources[] = { "pm.xml" };
        PmImport im;
        Out o = { 0 };

        if (pm_import_init(&im) < 0)
                tap_bail_errno("import");
        o.r = pm_import_text(&im, body, strlen(body), "pm.xml", &o.error);
        out_read(&o, &im.out, pm_import_finish(&im, sources, 1));
        pm_import_done(&im);
        return o;
}

/* body inside <pam_mount>, on line 2 */
static Out import_volumes(const char *volumes) {
        char *doc = NULL;
        Out o;

        if (asprintf(&doc, "<?xml version=\"1.0\"?>\n<pam_mount>%s</pam_mount>\n", volumes) < 0)
                tap_bail_errno("asprintf");
        o = import(doc);
        free(doc);
        return o;
}

static size_t n_volumes(const Out *o) {
        return o->parsed == 0 ? o->config.setup.n_volumes : 0;
}

/* One volume, nothing lost; the drop-in holds each of the NULL-terminated lines, nsd reads it. */
static void carried(const char *what, const char *volumes, ...) {
        Out o = import_volumes(volumes);
        va_list ap;

        va_start(ap, volumes);
        out_point(&o, o.r == 0 && o.parsed == 0 && !o.lost && n_volumes(&o) >= 1, what, ap);
        va_end(ap);
}

/* Named at pm.xml:LINE with a note holding want (also in the drop-in); nsd reads the drop-in,
 * which has volumes volumes. */
static void named(const char *what, const char *volumes, unsigned line, const char *want,
                  size_t volumes_n) {
        Out o = import_volumes(volumes);
        char where[32];

        snprintf(where, sizeof where, "pm.xml:%u: ", line);
        if (!ok(o.r == 0 && o.lost && has(o.notes, where) && has(o.notes, want) && o.parsed == 0 &&
                        n_volumes(&o) == volumes_n && has(o.text, want),
                "%s: named at line %u, also in the drop-in, which nsd reads (%zu volumes)", what,
                line, n_volumes(&o)))
                out_show(&o);
        out_done(&o);
}

/* Not carried over because it is not a type nsd mounts. */
static void type_not_yet(const char *fstype, const char *extra) {
        char *v = NULL, *want = NULL;

        if (asprintf(&v,
                     "<volume user=\"alice\" fstype=\"%s\" path=\"/dev/sdb1\" "
                     "mountpoint=\"~/x\"%s/>",
                     fstype, extra) < 0 ||
            asprintf(&want, "nsd does not mount %s volumes yet (issue 25)", fstype) < 0)
                tap_bail_errno("asprintf");
        named(fstype, v, 2, want, 0);
        free(v);
        free(want);
}

/* An error: no drop-in content, want in the message. */
static void refused(const char *what, const char *doc, const char *want) {
        Out o = import(doc);

        if (!ok(o.r < 0 && has(o.error, want) && !has(o.text, "\n[Volume "), "%s: an error (%s)",
                what, o.error ? o.error : "none"))
                out_show(&o);
        out_done(&o);
}

int main(void) {
        Out o;

        /* ---- carried over ---- */
        carried("cifs for a named user: Source=//server/path, %(USER) %u, '~' %h, nosuid and "
                "nodev dropped (nsd sets them)",
                "<volume user=\"alice\" fstype=\"cifs\" server=\"srv\" path=\"homes/%(USER)\" "
                "mountpoint=\"~/net\" options=\"vers=3.0,nosuid,nodev,ro\"/>",
                "[Volume net]\n", "Type=cifs\n", "Source=//srv/homes/%u\n", "Where=%h/net\n",
                "Options=vers=3.0,ro\n", "Users=alice\n", "OnFailure=continue\n", NULL);
        carried("nfs for a uid: Source=server:/path, %(USERUID) %U, Users=UID",
                "<volume uid=\"1001\" fstype=\"nfs\" server=\"fs\" path=\"/export/%(USERUID)\" "
                "mountpoint=\"/net/%(USER)\"/>",
                "Type=nfs\n", "Source=fs:/export/%U\n", "Where=/net/%u\n", "Users=1001\n",
                "[Volume net-user]\n", NULL);
        carried("a uid range of one uid is that uid",
                "<volume uid=\"1500-1500\" fstype=\"nfs4\" server=\"fs\" path=\"/h\" "
                "mountpoint=\"/h\"/>",
                "Users=1500\n", NULL);
        carried("sgrp: Groups=",
                "<volume sgrp=\"staff\" fstype=\"ext4\" path=\"/srv/img/%(USER).img\" "
                "mountpoint=\"~/vault\" options=\"noatime,data=ordered\"/>",
                "Type=ext4\n", "Source=/srv/img/%u.img\n", "Groups=staff\n",
                "Options=noatime,data=ordered\n", NULL);
        carried("user=\"*\" beside sgrp adds nothing: Groups=",
                "<volume user=\"*\" sgrp=\"staff\" fstype=\"xfs\" path=\"/dev/vg/x\" "
                "mountpoint=\"/srv/x\"/>",
                "Groups=staff\n", NULL);
        carried("smb3 becomes cifs (a note that loses nothing)",
                "<volume user=\"bob\" fstype=\"smb3\" server=\"s\" path=\"/share\" "
                "mountpoint=\"~\"/>",
                "Type=cifs\n", "Source=//s/share\n", "Where=%h\n", "smb3 carried over", NULL);
        carried("'~' alone is the home, a literal '%' is written %%, '//' and a trailing '/' go",
                "<volume user=\"bob\" fstype=\"vfat\" path=\"/dev/sdz1\" "
                "mountpoint=\"/media//100%/\"/>",
                "Where=/media/100%%\n", NULL);
        carried("exec is carried, with a note that loses nothing",
                "<volume user=\"bob\" fstype=\"btrfs\" path=\"/dev/sdz2\" mountpoint=\"/m\" "
                "options=\"exec,compress=zstd\"/>",
                "Options=exec,compress=zstd\n", "option 'exec' carried over", NULL);
        carried("a volume over several lines is named at the line it starts on",
                "\n\n<volume\n user=\"bob\"\n fstype=\"exfat\"\n path=\"/dev/sdz3\"\n "
                "mountpoint=\"/m\"\n/>",
                "# pm.xml:4: <volume user=\"bob\"", NULL);

        /* ---- variables ---- */
        named("%(DOMAIN_USER)",
              "<volume user=\"a\" fstype=\"cifs\" server=\"s\" path=\"p\" "
              "mountpoint=\"/home/%(DOMAIN_USER)\"/>",
              2, "the variable '%(DOMAIN_USER)' has no nsd specifier", 0);
        named("%(DOMAIN_NAME)",
              "<volume user=\"a\" fstype=\"cifs\" server=\"s\" path=\"%(DOMAIN_NAME)\" "
              "mountpoint=\"/m\"/>",
              2, "the variable '%(DOMAIN_NAME)' has no nsd specifier", 0);
        named("%(USERGID)",
              "<volume user=\"a\" fstype=\"nfs\" server=\"s\" path=\"/g/%(USERGID)\" "
              "mountpoint=\"/m\"/>",
              2, "the variable '%(USERGID)' has no nsd specifier", 0);
        named("%(GROUP)",
              "<volume user=\"a\" fstype=\"nfs\" server=\"s\" path=\"/g\" "
              "mountpoint=\"~/%(GROUP)\"/>",
              2, "the variable '%(GROUP)' has no nsd specifier", 0);
        named("'~' in the source",
              "<volume user=\"a\" fstype=\"ext4\" path=\"~/img\" "
              "mountpoint=\"/m\"/>",
              2, "nsd takes no home here", 0);
        named("a relative mountpoint",
              "<volume user=\"a\" fstype=\"ext4\" path=\"/i\" mountpoint=\"@DOCUMENTS@\"/>", 2,
              "is not an absolute path or '~'", 0);
        named("'..' in the mountpoint",
              "<volume user=\"a\" fstype=\"ext4\" path=\"/i\" mountpoint=\"/srv/../etc\"/>", 2,
              "has a '.' or '..' component", 0);
        named("'..' in a block source",
              "<volume user=\"a\" fstype=\"ext4\" path=\"/srv/../x.img\" mountpoint=\"/m\"/>", 2,
              "path '/srv/../x.img' has a '.' or '..' component", 0);

        /* ---- who ---- */
        named("user=\"*\"",
              "<volume user=\"*\" fstype=\"nfs\" server=\"s\" path=\"/p\" mountpoint=\"/m\"/>", 2,
              "the volume is every user's", 0);
        named("no user condition",
              "<volume fstype=\"nfs\" server=\"s\" path=\"/p\" mountpoint=\"/m\"/>", 2,
              "the volume is every user's", 0);
        named("a uid range",
              "<volume uid=\"1000-2000\" fstype=\"nfs\" server=\"s\" path=\"/p\" "
              "mountpoint=\"/m\"/>",
              2, "uid range 1000-2000: nsd's Users= takes no range", 0);
        named("a uid that is not one",
              "<volume uid=\"12x\" fstype=\"nfs\" server=\"s\" path=\"/p\" mountpoint=\"/m\"/>", 2,
              "is not a uid or a range of them", 0);
        named("pgrp: nsd's Groups= would widen it",
              "<volume pgrp=\"staff\" fstype=\"nfs\" server=\"s\" path=\"/p\" mountpoint=\"/m\"/>",
              2, "pgrp 'staff' admits only users whose primary group it is", 0);
        named("gid: the same",
              "<volume gid=\"100\" fstype=\"nfs\" server=\"s\" path=\"/p\" "
              "mountpoint=\"/m\"/>",
              2, "gid '100' admits only users whose primary group it is", 0);
        named("user and sgrp: pam_mount wants both, nsd either",
              "<volume user=\"a\" sgrp=\"g\" fstype=\"nfs\" server=\"s\" path=\"/p\" "
              "mountpoint=\"/m\"/>",
              2, "pam_mount wants every one of its user conditions", 0);
        named("a user name nsd does not take",
              "<volume user=\"a b\" fstype=\"nfs\" server=\"s\" path=\"/p\" mountpoint=\"/m\"/>", 2,
              "user 'a b' is not a name nsd takes", 0);
        named("conditions as elements",
              "\n<volume fstype=\"nfs\" server=\"s\" path=\"/p\" mountpoint=\"/m\"><and><sgrp>"
              "students</sgrp><not><sgrp>profs</sgrp></not></and></volume>",
              3, "user conditions as elements", 0);

        /* ---- types ---- */
        named("ext2", "<volume user=\"a\" fstype=\"ext2\" path=\"/i\" mountpoint=\"/m\"/>", 2,
              "nsd does not mount ext2 volumes (Type= takes ext4", 0);
        named("ext3", "<volume user=\"a\" fstype=\"ext3\" path=\"/i\" mountpoint=\"/m\"/>", 2,
              "write Type=ext4 yourself", 0);
        type_not_yet("crypt", " cipher=\"aes\" fskeypath=\"/k\" fskeycipher=\"aes-256-cbc\"");
        type_not_yet("fuse", " noroot=\"1\"");
        type_not_yet("fuse.sshfs", " ssh=\"1\"");
        named("gocryptfs",
              "<volume user=\"a\" fstype=\"gocryptfs\" path=\"/c\" mountpoint=\"/m\"/>", 2,
              "a gocryptfs volume is run by the user's service manager", 0);
        type_not_yet("tmpfs", "");
        type_not_yet("ncpfs", "");
        type_not_yet("truecrypt", "");
        named("no fstype: auto",
              "<volume user=\"a\" path=\"/srv/x\" mountpoint=\"/m\" options=\"bind\"/>", 2,
              "nsd does not mount auto volumes yet (issue 25)", 0);
        named("a network type without server=",
              "<volume user=\"a\" fstype=\"nfs\" path=\"/p\" mountpoint=\"/m\"/>", 2,
              "a nfs volume needs server=", 0);
        named("a block type with server=",
              "<volume user=\"a\" fstype=\"ext4\" server=\"s\" path=\"/p\" mountpoint=\"/m\"/>", 2,
              "server= on a ext4 volume", 0);
        named("no path=", "<volume user=\"a\" fstype=\"ext4\" mountpoint=\"/m\"/>", 2,
              "no path=", 0);

        /* ---- options ---- */
        named("suid and dev are not carried, the volume is",
              "<volume user=\"a\" fstype=\"ext4\" path=\"/i\" mountpoint=\"/m\" "
              "options=\"suid,dev,noatime\"/>",
              2, "option 'suid' is not carried over: every mount nsd makes is nosuid,nodev", 1);
        named("a variable in an option value",
              "<volume user=\"a\" fstype=\"cifs\" server=\"s\" path=\"p\" mountpoint=\"/m\" "
              "options=\"uid=%(USERUID),vers=3.0\"/>",
              2,
              "option 'uid=%(USERUID)' is not carried over: nsd's option values take no "
              "variables",
              1);
        named("an option nsd does not take for the type",
              "<volume user=\"a\" fstype=\"cifs\" server=\"s\" path=\"p\" mountpoint=\"/m\" "
              "options=\"nobrl\"/>",
              2, "option 'nobrl' is not carried over: nsd's Options= does not take it for cifs", 1);
        named("a value option without its value",
              "<volume user=\"a\" fstype=\"cifs\" server=\"s\" path=\"p\" mountpoint=\"/m\" "
              "options=\"vers=\"/>",
              2, "option 'vers=' is not carried over", 1);
        carried("a backslash in an option is written \\\\",
                "<volume user=\"a\" fstype=\"cifs\" server=\"s\" path=\"p\" mountpoint=\"/m\" "
                "options=\"domain=A\\1\"/>",
                "Options=domain=A\\\\1\n", NULL);
        named("a control character in an option",
              "<volume user=\"a\" fstype=\"cifs\" server=\"s\" path=\"p\" mountpoint=\"/m\" "
              "options=\"vers=3\x7f\"/>",
              2, "it holds white space, a control character", 1);
        named("an attribute pam_mount does not know",
              "<volume user=\"a\" cruid=\"x\" fstype=\"nfs\" server=\"s\" path=\"/p\" "
              "mountpoint=\"/m\"/>",
              2, "attribute 'cruid' is not carried over", 1);

        /* secrets: neither in the drop-in nor in a note, the rest carried */
        o = import_volumes("<volume user=\"a\" fstype=\"cifs\" server=\"s\" path=\"p\" "
                           "mountpoint=\"/m\" options=\"username=a,password=s3cr3t,"
                           "credentials=/root/.smbcred,vers=3.0\"/>");
        if (!ok(o.r == 0 && o.lost && !has(o.text, "s3cr3t") && !has(o.notes, "s3cr3t") &&
                        !has(o.text, "/root/.smbcred") && !has(o.notes, "/root/.smbcred") &&
                        has(o.text, "password=***") &&
                        has(o.text, "Options=username=a,vers=3.0\n") &&
                        has(o.notes, "option 'password' is not carried over: a secret") &&
                        n_volumes(&o) == 1,
                "password= and credentials=: never copied, not even into the comment"))
                out_show(&o);
        out_done(&o);

        o = import_volumes("<volume user=\"a\" fstype=\"cifs\" server=\"s\" path=\"p\" "
                           "mountpoint=\"/m\" options=\"username=alice%pw0rd,vers=3.0\"/>");
        if (!ok(o.r == 0 && o.lost && !has(o.text, "pw0rd") && !has(o.notes, "pw0rd") &&
                        has(o.text, "username=***") && n_volumes(&o) == 1,
                "cifs username=USER%%PASSWORD: the password is never copied"))
                out_show(&o);
        out_done(&o);

        /* more than nsd's 16 options */
        o = import_volumes("<volume user=\"a\" fstype=\"nfs\" server=\"s\" path=\"/p\" "
                           "mountpoint=\"/m\" options=\"hard,soft,hard,soft,hard,soft,hard,soft,"
                           "hard,soft,hard,soft,hard,soft,hard,soft,nolock\"/>");
        if (!ok(o.lost &&
                        has(o.notes, "option 'nolock' is not carried over: nsd takes at most 16") &&
                        n_volumes(&o) == 1,
                "a 17th option is named, 16 carried"))
                out_show(&o);
        out_done(&o);

        /* every option of nsd's list for every type, as the importer writes it, nsd takes */
        for (size_t i = 0; i < n_volume_type_options; i++) {
                const VolumeTypeOptions *t = &volume_type_options[i];
                size_t n = 0;
                bool all = true;

                if (t->fuse) { /* not carried: below */
                        char *vol = NULL;

                        if (asprintf(&vol,
                                     "<volume user=\"a\" fstype=\"%s\" path=\"h:/p\" "
                                     "mountpoint=\"/m\"/>",
                                     t->name) < 0)
                                tap_bail_errno("asprintf");
                        o = import_volumes(vol);
                        ok(o.lost && n_volumes(&o) == 0 &&
                                   has(o.notes, "is run by the user's service manager"),
                           "%s: a FUSE type is named, not carried", t->name);
                        out_done(&o);
                        free(vol);
                        continue;
                }

                for (const char *const *v = t->value_options; *v; v++, n++)
                        ;
                for (const char *const *f = t->flag_options; *f; f++, n++)
                        ;
                for (size_t k = 0; k < n; k += 16) {
                        char opts[1024] = "", *vol = NULL;
                        size_t m = 0, len = 0;

                        for (const char *const *v = t->value_options; *v; v++, m++)
                                if (m >= k && m < k + 16)
                                        len += (size_t) snprintf(opts + len, sizeof opts - len,
                                                                 "%s%s=1", len ? "," : "", *v);
                        for (const char *const *f = t->flag_options; *f; f++, m++)
                                if (m >= k && m < k + 16)
                                        len += (size_t) snprintf(opts + len, sizeof opts - len,
                                                                 "%s%s", len ? "," : "", *f);
                        if (asprintf(&vol,
                                     "<volume user=\"a\" fstype=\"%s\" %s path=\"/p\" "
                                     "mountpoint=\"/m\" options=\"%s\"/>",
                                     t->name, t->network ? "server=\"s\"" : "", opts) < 0)
                                tap_bail_errno("asprintf");
                        o = import_volumes(vol);
                        if (o.lost || n_volumes(&o) != 1) {
                                all = false;
                                out_show(&o);
                        }
                        out_done(&o);
                        free(vol);
                }
                ok(all, "%s: each of nsd's %zu options is carried and nsd reads it", t->name, n);
        }

        /* ---- names and mount points ---- */
        carried("two volumes whose names would be the same get two names",
                "<volume user=\"a\" fstype=\"nfs\" server=\"s\" path=\"/p\" mountpoint=\"~/a/x\"/>"
                "<volume user=\"a\" fstype=\"nfs\" server=\"s\" path=\"/q\" "
                "mountpoint=\"/srv/x\"/>",
                "[Volume x]\n", "[Volume x-2]\n", NULL);
        named("a second volume on one mount point",
              "<volume user=\"a\" fstype=\"nfs\" server=\"s\" path=\"/p\" mountpoint=\"/m\"/>\n"
              "<volume user=\"b\" fstype=\"nfs\" server=\"s\" path=\"/q\" mountpoint=\"/m/\"/>",
              3, "/m is the mount point of pm.xml:2 already", 1);

        /* ---- global elements ---- */
        named("luserconf", "<luserconf name=\".pam_mount.conf.xml\"/>", 2,
              "<luserconf> is not carried over", 0);
#define VOLUME "<volume user=\"a\" fstype=\"nfs\" server=\"s\" path=\"/p\" mountpoint=\"/m\"/>"
        named("mkmountpoint beside a volume", "<mkmountpoint enable=\"1\" remove=\"true\"/>" VOLUME,
              2, "nsd never makes a Where=", 1);
        named("a command beside a volume",
              "<cifsmount>mount.cifs //%(SERVER)/%(VOLUME) %(MNTPT)</cifsmount>" VOLUME, 2,
              "<cifsmount> is not carried over: nsd mounts with the kernel's API", 1);
        named("logout that signals, beside a volume", "<logout wait=\"1000\" hup=\"yes\"/>" VOLUME,
              2, "nsd signals no process at logout", 1);
        o = import_volumes("<mkmountpoint enable=\"1\"/><lclmount>mount %(VOLUME)</lclmount>"
                           "<logout wait=\"1000\"/>");
        ok(o.r == 0 && !o.lost && has(o.notes, "pm.xml:2: <mkmountpoint>") &&
                   has(o.notes, "<lclmount>") && has(o.notes, "<logout>"),
           "without a volume, mkmountpoint, a command and logout are named but lose nothing");
        out_done(&o);
        named("an element pam_mount does not know", "<frobnicate/>", 2,
              "<frobnicate> is not carried over", 0);
        o = import_volumes("<debug enable=\"1\"/><msg-authpw>pw:</msg-authpw>"
                           "<logout wait=\"0\" hup=\"no\"/><mkmountpoint enable=\"0\"/>"
                           "<mntoptions allow=\"*\"/>");
        ok(o.r == 0 && !o.lost && has(o.notes, "<mntoptions> is not carried over") &&
                   !has(o.notes, "debug") && !has(o.notes, "msg-") && !has(o.notes, "logout") &&
                   !has(o.notes, "mkmountpoint") && has(o.text, "(no volume: nothing to mount)"),
           "debug, msg-*, a logout and mkmountpoint that do nothing: silent; mntoptions: a note "
           "that loses nothing");
        out_done(&o);

        /* ---- errors ---- */
        refused("malformed XML", "<?xml version=\"1.0\"?>\n<pam_mount>\n<volume user=\"a\"\n",
                "pm.xml:");
        refused("malformed XML, named as such", "<pam_mount><volume></pam_mount>", "not XML: ");
        refused("an empty file", "", "pm.xml: empty");
        refused("only white space", " \n\t\n", "empty");
        {
                /* the 16 MiB cap of the verb's read holds for the text too */
                size_t big = IMPORT_READ_MAX + 1;
                char *text = malloc(big + 1);
                PmImport im;
                char *error = NULL;

                if (!text || pm_import_init(&im) < 0)
                        tap_bail_errno("malloc");
                memset(text, ' ', big);
                text[big] = '\0';
                ok(pm_import_text(&im, text, big, "pm.xml", &error) == -EFBIG &&
                           has(error, "larger than"),
                   "more than 16 MiB: refused (%s)", error ? error : "");
                free(error);
                free(text);
                pm_import_done(&im);
        }
        refused("another root element", "<namespace/>", "not a pam_mount configuration");
        o = import("<?xml version=\"1.0\"?>\n<!DOCTYPE pam_mount [\n"
                   "<!ENTITY x SYSTEM \"file:///etc/passwd\">\n]>\n<pam_mount>\n"
                   "<volume user=\"&x;\" fstype=\"nfs\" server=\"s\" path=\"/p\" "
                   "mountpoint=\"/m\"/>\n<volume user=\"a\" fstype=\"nfs\" server=\"s\" "
                   "path=\"/&x;\" mountpoint=\"/n\"/>\n</pam_mount>\n");
        if (!ok(o.r == -EINVAL && has(o.error, "entity 'x'") && !has(o.error, "root:") &&
                        !has(o.text, "root:") && !has(o.notes, "root:") &&
                        !has(o.text, "\n[Volume "),
                "an external entity (file:///etc/passwd): refused, nothing of the file read"))
                out_show(&o);
        out_done(&o);
        o = import("<!DOCTYPE pam_mount [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>\n"
                   "<pam_mount>&x;<luserconf/></pam_mount>\n");
        if (!ok(o.r == -EINVAL && has(o.error, "declares the entity 'x'") &&
                        !has(o.error, "root:") && !has(o.text, "root:") && !has(o.notes, "root:"),
                "an external entity in element content: refused before anything is read"))
                out_show(&o);
        out_done(&o);
        refused("an internal entity (billion laughs)",
                "<!DOCTYPE pam_mount [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;\">]>"
                "<pam_mount><volume user=\"&b;\"/></pam_mount>",
                "declares the entity");

        return tap_done();
}
