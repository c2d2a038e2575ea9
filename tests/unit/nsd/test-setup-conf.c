/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-setup-conf: what a namespace is made of, as nsd.conf says it (nsd/policy/setup-conf.c):
 * [Setup], [Polydir NAME], [BindReadOnly NAME], [Share NAME] and its membership, [Volume NAME]
 * (types, their options, what is refused), PrivateTmp='s polydir, the setup generation;
 * and the files it is read from (nsd/policy/conf-files.c): drop-ins in lexical order, a key or an
 * object in two files, files that are not the administrator's. TAP; no root needed (the
 * owner checks that need another uid run as root only); files only in a temp folder.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/conf-files.h"
#include "policy/conf.h"
#include "policy/setup-conf.h"
#include "run-tmpfs.h"
#include "tap.h"

static int parse(const char *text, Config *c, char **err) {
        return config_parse_text(text, strlen(text), "test.conf", c, err);
}

/* A bad config: refused at test.conf:LINE with a message holding want. */
static void bad(const char *text, unsigned line, const char *want, const char *what) {
        Config c = { 0 };
        g_autofree char *err = NULL, *where = g_strdup_printf("test.conf:%u:", line);
        int r = parse(text, &c, &err);

        ok(r == -EINVAL && err && g_str_has_prefix(err, where) && (!want || strstr(err, want)),
           "%s: refused at %s naming '%s' (got: %s)", what, where, want ? want : "",
           err ? err : "(accepted)");
        if (r == 0)
                config_done(&c);
}

/* One point, what: text parses (else the error says why); false when it does not. */
static bool parses(const char *text, Config *c, const char *what) {
        g_autofree char *err = NULL;
        int r = parse(text, c, &err);

        ok(r == 0, "%s (%s)", what, err ? err : "");
        return r == 0;
}

/* Do a and b's setups have the same generation (propagation shared)? */
static bool same_generation(const Config *a, const Config *b) {
        char ga[17], gb[17];

        return strcmp(setup_conf_generation(&a->setup, false, ga, sizeof ga),
                      setup_conf_generation(&b->setup, false, gb, sizeof gb)) == 0;
}

static const Polydir *polydir(const Config *c, const char *name) {
        for (size_t i = 0; i < c->setup.n_polydirs; i++)
                if (strcmp(c->setup.polydirs[i].name, name) == 0)
                        return &c->setup.polydirs[i];
        return NULL;
}

static void test_polydirs(void) {
        const char *text = "[Setup]\n"
                           "InitScript=/etc/security/namespace.init\n"
                           "TimeoutSec=2.5\n"
                           "OnFailure=continue\n"
                           "\n"
                           "[Polydir tmp]\n"
                           "Path=/tmp\n"
                           "Method=tmpfs\n"
                           "MountOptions=size=64m,nr_inodes=4k,noexec,inode64\n"
                           "Mode=1777\n"
                           "ExcludeUsers=root adm,1500\n"
                           "\n"
                           "[Polydir cache]\n"
                           "Path=%h/.cache\n"
                           "Method=user\n"
                           "InstancePrefix=%h/.cache-inst/\n"
                           "OnlyUsers=alice;1001\n"
                           "InitScript=/etc/nsd/cache.init\n"
                           "\n"
                           "[Polydir var-tmp]\n"
                           "Path=/var/tmp\n"
                           "Method=user\n"
                           "InstancePrefix=/var/tmp/tmp-inst/%U-\n"
                           "MountOptions=ro,nosymfollow\n"
                           "NoInit=yes\n"
                           "\n"
                           "[BindReadOnly cpuinfo]\n"
                           "Source=/var/lib/lxcfs/proc/cpuinfo\n"
                           "Target=/proc/cpuinfo\n";
        Config c = { 0 };
        g_autofree char *err = NULL;
        const Polydir *p;

        if (!parses(text, &c, "three polydirs, a bind and [Setup] parse"))
                return;
        ok(c.setup.n_polydirs == 3 && strcmp(c.setup.polydirs[0].name, "tmp") == 0 &&
                   strcmp(c.setup.polydirs[1].name, "cache") == 0 &&
                   strcmp(c.setup.polydirs[2].name, "var-tmp") == 0,
           "polydirs are kept in the order they were read");
        ok(strcmp(c.setup.init_script, "/etc/security/namespace.init") == 0 &&
                   c.setup.timeout_usec == 2500000 && c.setup.on_failure_continue,
           "[Setup] InitScript=, TimeoutSec=2.5, OnFailure=continue");

        p = polydir(&c, "tmp");
        ok(p && strcmp(p->path, "/tmp") == 0 && p->method == POLYDIR_METHOD_TMPFS &&
                   p->mode == 01777 && !p->instance_prefix && strcmp(p->file, "test.conf") == 0 &&
                   p->line == 6,
           "[Polydir tmp]: Path=/tmp, Method=tmpfs, Mode=1777, defined at test.conf:6");
        ok(p && p->n_options == 3 && strcmp(p->options[0].key, "size") == 0 &&
                   strcmp(p->options[0].value, "64m") == 0 &&
                   strcmp(p->options[1].key, "nr_inodes") == 0 &&
                   strcmp(p->options[2].key, "inode64") == 0 && !p->options[2].value &&
                   p->mount_attr == MOUNT_ATTR_NOEXEC,
           "MountOptions=: size=64m, nr_inodes=4k and inode64 for tmpfs; noexec an attribute");
        ok(p && g_strv_length(p->exclude_users) == 3 && !p->only_users,
           "ExcludeUsers=root adm,1500: three entries");
        ok(p && !polydir_applies(p, "root", 0) && !polydir_applies(p, "adm", 4) &&
                   !polydir_applies(p, "carol", 1500) && polydir_applies(p, "alice", 1000),
           "ExcludeUsers= excludes by name and by uid, nobody else");

        p = polydir(&c, "cache");
        ok(p && strcmp(p->path, "%h/.cache") == 0 && p->method == POLYDIR_METHOD_USER &&
                   strcmp(p->instance_prefix, "%h/.cache-inst/") == 0 && p->mode == -1 &&
                   strcmp(p->init_script, "/etc/nsd/cache.init") == 0 && !p->no_init,
           "[Polydir cache]: %%h/.cache, Method=user, InstancePrefix=, its own InitScript=, the "
           "polydir's mode");
        ok(p && polydir_applies(p, "alice", 1000) && polydir_applies(p, "bob", 1001) &&
                   !polydir_applies(p, "carol", 1002),
           "OnlyUsers=alice;1001: alice by name, uid 1001 by number, nobody else");

        p = polydir(&c, "var-tmp");
        ok(p && p->no_init && p->n_options == 0 &&
                   p->mount_attr == (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSYMFOLLOW) &&
                   strcmp(p->instance_prefix, "/var/tmp/tmp-inst/%U-") == 0,
           "Method=user takes attributes (ro, nosymfollow), NoInit=yes, a prefix ending in %%U-");

        ok(c.setup.n_binds == 1 &&
                   strcmp(c.setup.binds[0].source, "/var/lib/lxcfs/proc/cpuinfo") == 0 &&
                   strcmp(c.setup.binds[0].target, "/proc/cpuinfo") == 0,
           "[BindReadOnly cpuinfo]: Source=, Target=");

        Config copy;
        config_copy(&copy, &c);
        ok(copy.setup.n_polydirs == 3 && copy.setup.polydirs[1].path != c.setup.polydirs[1].path &&
                   same_generation(&copy, &c),
           "config_copy() copies the setup deeply, with the same generation");
        config_done(&copy);
        ok(copy.setup.polydirs == NULL && copy.setup.n_polydirs == 0,
           "config_done() frees the setup");
        config_done(&c);

        /* the escapes of the key file reach the template */
        ok(parse("[Polydir sp]\nPath=/srv/with\\sspace\nMethod=tmpfs\n", &c, &err) == 0 &&
                   strcmp(c.setup.polydirs[0].path, "/srv/with space") == 0,
           "a path with \\s (a space)");
        config_done(&c);
        ok(parse("[Polydir pct]\nPath=/srv/100%%/%u\nMethod=tmpfs\n", &c, &err) == 0,
           "%%%% is a '%%'");
        config_done(&c);
        ok(parse("[Polydir home]\nPath=%h\nMethod=user\nInstancePrefix=%h/%u.inst/\n", &c, &err) ==
                   0,
           "the home directory itself (Path=%%h) with instances inside it");
        config_done(&c);
}

static void test_shares(void) {
        const char *text = "[Share lab]\n"
                           "Path=/srv/lab\n"
                           "Users=alice 1001\n"
                           "Groups=lab,2000\n"
                           "Propagation=host\n"
                           "MaxMembers=8\n"
                           "MaxMountsPerUser=2\n"
                           "\n"
                           "[Share team.b-2_x]\n"
                           "Path=/srv/team\n"
                           "Groups=team\n";
        Config c = { 0 };
        g_autofree char *err = NULL;
        const Share *sh;
        char buf[128];

        if (!parses(text, &c, "two shares parse"))
                return;
        sh = c.setup.n_shares == 2 ? &c.setup.shares[0] : NULL;
        ok(sh && strcmp(sh->name, "lab") == 0 && strcmp(sh->path, "/srv/lab") == 0 &&
                   g_strv_length(sh->users) == 2 && strcmp(sh->users[1], "1001") == 0 &&
                   g_strv_length(sh->groups) == 2 && strcmp(sh->groups[0], "lab") == 0 &&
                   sh->propagation == SHARE_PROPAGATION_HOST && sh->max_members == 8 &&
                   sh->max_mounts_per_user == 2 && strcmp(sh->file, "test.conf") == 0 &&
                   sh->line == 1,
           "[Share lab]: Path=, Users= and Groups= of two each, Propagation=host, MaxMembers=8, "
           "MaxMountsPerUser=2, at test.conf:1");
        ok(sh && strcmp(share_describe(sh, buf, sizeof buf), "share 'lab' (test.conf:1)") == 0,
           "share_describe(): %s", sh ? buf : "");

        /* membership: carol (uid 1500) in groups 100 (users) and 2000 (lab) */
        const gid_t gids[] = { 100, 2000 };
        const char *const names[] = { "users", NULL };
        const gid_t gids_team[] = { 100, 3000 };
        const char *const names_team[] = { "users", "team" };

        ok(sh && share_has_member(sh, "alice", 1000, NULL, NULL, 0),
           "Users=: alice is a member by name");
        ok(sh && share_has_member(sh, "bob", 1001, NULL, NULL, 0),
           "Users=: uid 1001 is a member by number");
        ok(sh && share_has_member(sh, "carol", 1500, gids, names, 2),
           "Groups=: gid 2000 makes a member by number (its group has no name)");
        ok(sh && !share_has_member(sh, "carol", 1500, gids, names, 1),
           "only the n groups given count");
        sh = c.setup.n_shares == 2 ? &c.setup.shares[1] : NULL;
        ok(sh && strcmp(sh->name, "team.b-2_x") == 0 && !sh->users &&
                   sh->propagation == SHARE_PROPAGATION_MEMBERS &&
                   sh->max_members == SHARE_MAX_MEMBERS_DEFAULT &&
                   sh->max_mounts_per_user == SHARE_MAX_MOUNTS_PER_USER_DEFAULT &&
                   SHARE_MAX_MOUNTS_PER_USER_DEFAULT == 16,
           "defaults: Propagation=members, MaxMembers=%u, MaxMountsPerUser=16; Groups= alone is "
           "enough",
           SHARE_MAX_MEMBERS_DEFAULT);
        ok(sh && share_has_member(sh, "dave", 1600, gids_team, names_team, 2),
           "Groups=team: a member by the group's name");
        ok(sh && !share_has_member(sh, "team", 3000, gids, names, 2) &&
                   !share_has_member(sh, "dave", 1600, NULL, NULL, 0),
           "not a member: a user named like the group, with its number as uid, nor anyone "
           "without the group");

        Config copy;
        config_copy(&copy, &c);
        ok(copy.setup.n_shares == 2 && copy.setup.shares[0].path != c.setup.shares[0].path &&
                   strcmp(copy.setup.shares[0].groups[1], "2000") == 0 &&
                   copy.setup.shares[0].max_mounts_per_user == 2 && same_generation(&copy, &c),
           "config_copy() copies the shares deeply, with the same generation");
        config_done(&copy);
        config_copy(&copy, &c);
        copy.setup.shares[0].max_mounts_per_user = 3;
        ok(same_generation(&copy, &c),
           "MaxMountsPerUser= is not part of the setup generation (it bounds the share, it does "
           "not make a namespace)");
        config_done(&copy);
        ok(!setup_conf_is_empty(&c.setup) && setup_conf_needs_identity(&c.setup),
           "a share is something to set up, and needs the user's name and groups");
        config_done(&c);

        ok(strcmp(share_propagation_to_string(SHARE_PROPAGATION_MEMBERS), "members") == 0 &&
                   strcmp(share_propagation_to_string(SHARE_PROPAGATION_HOST), "host") == 0 &&
                   strcmp(share_propagation_to_string(SHARE_PROPAGATION_BOTH), "both") == 0 &&
                   strcmp(share_propagation_to_string(SHARE_PROPAGATION_PER_USER), "per-user") == 0,
           "share_propagation_to_string(): members, host, both, per-user");
        ok(parse("[Share media]\nPath=/media\nGroups=plugdev\nPropagation=per-user\n", &c, &err) ==
                           0 &&
                   c.setup.shares[0].propagation == SHARE_PROPAGATION_PER_USER,
           "Propagation=per-user");
        {
                char a1[SHARE_ANCHOR_NAME_MAX], a2[SHARE_ANCHOR_NAME_MAX],
                        a3[SHARE_ANCHOR_NAME_MAX];
                Share one = c.setup.shares[0];

                share_anchor_name(&one, a1, sizeof a1);
                one.propagation = SHARE_PROPAGATION_MEMBERS;
                share_anchor_name(&one, a2, sizeof a2);
                one.path = (char *) "/media2";
                share_anchor_name(&one, a3, sizeof a3);
                ok(g_str_has_prefix(a1, "media@") && strlen(a1) == strlen("media@") + 12 &&
                           strcmp(a1, a2) != 0 && strcmp(a2, a3) != 0,
                   "the anchor's name: NAME@ and 12 digits, another for another Propagation= "
                   "or Path=");
                one.path = (char *) "/media";
                one.propagation = SHARE_PROPAGATION_PER_USER;
                share_anchor_name(&one, a2, sizeof a2);
                ok(strcmp(a1, a2) == 0, "the same for the same share");
        }
        config_done(&c);
        ok(parse("[Share s]\nPath=/s\nUsers=0\nPropagation=both\nMaxMembers=65536\n", &c, &err) ==
                           0 &&
                   c.setup.shares[0].propagation == SHARE_PROPAGATION_BOTH &&
                   c.setup.shares[0].max_members == SHARE_MAX_MEMBERS_LIMIT,
           "Propagation=both, MaxMembers= at its limit");
        config_done(&c);
        ok(parse("[Share a]\nPath=/srv/a\nUsers=x\n[Share b]\nPath=/srv/ab\nUsers=x\n"
                 "[Polydir t]\nPath=/srv/a%%\nMethod=tmpfs\n[Polydir h]\nPath=%h/x\n"
                 "Method=tmpfs\n[BindReadOnly c]\nSource=/x\nTarget=/srv/abc\n",
                 &c, &err) == 0,
           "/srv/a and /srv/ab do not overlap, /srv/abc neither; %%h/... is not compared (%s)",
           err ? err : "");
        config_done(&c);
}

static void test_private_tmp(void) {
        Config c = { 0 };
        g_autofree char *err = NULL;
        const Polydir *p;

        ok(parse("[Namespaces]\nPrivateTmp=yes\n[Polydir cache]\nPath=%h/.cache\nMethod=tmpfs\n",
                 &c, &err) == 0,
           "PrivateTmp=yes with another polydir (%s)", err ? err : "");
        p = c.setup.n_polydirs == 2 ? &c.setup.polydirs[0] : NULL;
        ok(p && strcmp(p->name, "PrivateTmp") == 0 && strcmp(p->path, "/tmp") == 0 &&
                   p->method == POLYDIR_METHOD_TMPFS && p->mode == 01777 && p->no_init &&
                   p->line == 2 && strcmp(c.setup.polydirs[1].name, "cache") == 0,
           "PrivateTmp=yes is a tmpfs polydir on /tmp (mode 1777, no init script), first, "
           "from test.conf:2");
        config_done(&c);
        ok(parse("[Namespaces]\nPrivateTmp=no\n", &c, &err) == 0 && c.setup.n_polydirs == 0,
           "PrivateTmp=no adds nothing");
        config_done(&c);
        bad("[Namespaces]\nPrivateTmp=yes\n[Polydir tmp]\nPath=/tmp\nMethod=user\n"
            "InstancePrefix=/tmp-inst/\n",
            2, "[Polydir tmp] (test.conf:3)", "PrivateTmp=yes and a polydir on /tmp");
}

static void test_bad(void) {
        Config c = { 0 };
        static const struct {
                const char *group, *line, *want;
        } cases[] = {
                /* group names */
                { "Polydir ", NULL, "a name is" },
                { "Polydir a/b", NULL, "a name is" },
                { "Polydir .hidden", NULL, "a name is" },
                { "Polydir x y", NULL, "a name is" },
                { "BindReadOnly ", NULL, "a name is" },
                { "Polydirs x", NULL, "unknown group" },
                /* keys */
                { "Polydir x", "Paht=/tmp", "unknown key Paht=" },
                { "Polydir x", "Source=/tmp", "unknown key Source=" },
                { "BindReadOnly x", "Path=/tmp", "unknown key Path=" },
                { "Setup", "Path=/tmp", "unknown key Path=" },
                /* values */
                { "Polydir x", "Method=tmpdir", "expected 'user'" },
                { "Polydir x", "Method=", "expected 'user'" },
                { "Polydir x", "Path=tmp", "not an absolute path" },
                { "Polydir x", "Path=", "empty path" },
                { "Polydir x", "Path=/", "'/' itself" },
                { "Polydir x", "Path=/tmp/", "ends in '/'" },
                { "Polydir x", "Path=/var//tmp", "contains '//'" },
                { "Polydir x", "Path=/var/../etc", "'.' or '..'" },
                { "Polydir x", "Path=%h/./x", "'.' or '..'" },
                { "Polydir x", "Path=/home/%h", "may only start" },
                { "Polydir x", "Path=%hx", "not an absolute path" },
                { "Polydir x", "Path=/tmp/%x", "unknown specifier '%x'" },
                { "Polydir x", "Path=/tmp/%", "lone '%'" },
                { "Polydir x", "Path=/tmp/a\\tb", "control character" },
                { "Polydir x", "InstancePrefix=inst/", "not an absolute path" },
                { "Polydir x", "InstancePrefix=/inst//", "contains '//'" },
                { "Polydir x", "MountOptions=suid", "nosuid,nodev" },
                { "Polydir x", "MountOptions=size=1m,dev", "nosuid,nodev" },
                { "Polydir x", "MountOptions=size", "needs a value" },
                { "Polydir x", "MountOptions=size=", "needs a value" },
                { "Polydir x", "MountOptions=inode64=1", "takes no value" },
                { "Polydir x", "MountOptions=noexec=1", "takes no value" },
                { "Polydir x", "MountOptions=bogus", "unknown option 'bogus'" },
                { "Polydir x",
                  "MountOptions=noswap,noswap,noswap,noswap,noswap,noswap,noswap,noswap,noswap,"
                  "noswap,noswap,noswap,noswap,noswap,noswap,noswap,noswap",
                  "more than 16 options" },
                { "Polydir x", "Mode=8", "octal mode" },
                { "Polydir x", "Mode=17777", "octal mode" },
                { "Polydir x", "Mode=u+rwx", "octal mode" },
                { "Polydir x", "Mode=", "octal mode" },
                { "Polydir x", "OnlyUsers=al ice!", "'ice!' is not a user name" },
                { "Polydir x", "ExcludeUsers=@regular", "'@regular' is not a user name" },
                { "Polydir x", "NoInit=perhaps", "expected yes or no" },
                { "Polydir x", "InitScript=namespace.init", "not an absolute path" },
                { "Polydir x", "InitScript=/etc/%u.init", "takes no specifiers" },
                { "BindReadOnly x", "Source=/srv/%u", "takes no specifiers" },
                { "BindReadOnly x", "Target=proc/cpuinfo", "not an absolute path" },
                { "Setup", "TimeoutSec=0", "between 0.001 and 3600" },
                { "Setup", "TimeoutSec=3601", "between 0.001 and 3600" },
                { "Setup", "TimeoutSec=1s", "between 0.001 and 3600" },
                { "Setup", "OnFailure=degrade", "'refuse' or 'continue'" },
                { "Setup", "InitScript=", "empty path" },
                /* [Share NAME] */
                { "Share ", NULL, "a share's name is" },
                { "Share a@b", NULL, "a share's name is" },
                { "Share .lab", NULL, "a share's name is" },
                { "Share a/b", NULL, "a share's name is" },
                { "Share x", "Source=/x", "unknown key Source=" },
                { "Share x", "OnlyUsers=a", "unknown key OnlyUsers=" },
                { "Share x", "Path=srv", "not an absolute path" },
                { "Share x", "Path=/", "'/' itself" },
                { "Share x", "Path=/srv/", "ends in '/'" },
                { "Share x", "Path=/srv//lab", "contains '//'" },
                { "Share x", "Path=/srv/./lab", "'.' or '..'" },
                { "Share x", "Path=/srv/../lab", "'.' or '..'" },
                { "Share x", "Path=/srv/%u", "takes no specifiers" },
                { "Share x", "Path=%h/lab", "not an absolute path" },
                { "Share x", "Users=al ice!", "'ice!' is not a user name or uid" },
                { "Share x", "Users=@regular", "'@regular' is not a user name" },
                { "Share x", "Groups=lab 4294967295", "'4294967295' is not a group name or gid" },
                { "Share x", "Propagation=shared",
                  "expected 'members', 'host', 'both' or 'per-user'" },
                { "Share x", "Propagation=", "expected 'members'" },
                { "Share x", "MaxMembers=0", "from 1 to 65536" },
                { "Share x", "MaxMembers=65537", "from 1 to 65536" },
                { "Share x", "MaxMembers=-1", "from 1 to 65536" },
                { "Share x", "MaxMembers=many", "from 1 to 65536" },
                { "Share x", "MaxMountsPerUser=0",
                  "MaxMountsPerUser=0: expected a number from 1 to 4096" },
                { "Share x", "MaxMountsPerUser=4097", "from 1 to 4096" },
                { "Share x", "MaxMountsPerUser=-3", "from 1 to 4096" },
                { "Share x", "MaxMountsPerUser=2x", "from 1 to 4096" },
                { "Share x", "MaxMountsPerUser=", "from 1 to 4096" },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *text = NULL, *what = NULL;

                if (cases[i].line) {
                        text = g_strdup_printf("# test\n[%s]\n%s\n", cases[i].group, cases[i].line);
                        what = g_strdup_printf("[%s] %s", cases[i].group, cases[i].line);
                        bad(text, 3, cases[i].want, what);
                } else {
                        text = g_strdup_printf("# test\n[%s]\n", cases[i].group);
                        what = g_strdup_printf("[%s]", cases[i].group);
                        bad(text, 2, cases[i].want, what);
                }
        }

        /* the whole, at the group's line */
        bad("[Polydir x]\nMethod=tmpfs\n", 1,
            "[Polydir x] has no Path=", "a polydir without Path=");
        bad("\n[Polydir x]\nPath=/tmp\n", 2, "has no Method=", "a polydir without Method=");
        bad("[Polydir x]\nPath=/tmp\nMethod=user\n", 1,
            "needs InstancePrefix=", "Method=user without InstancePrefix=");
        bad("[Polydir x]\nPath=/tmp\nMethod=tmpfs\nInstancePrefix=/i/\n", 1,
            "InstancePrefix= is for Method=user", "Method=tmpfs with InstancePrefix=");
        bad("[Polydir x]\nPath=/tmp\nMethod=user\nInstancePrefix=/i/\nMountOptions=size=1m\n", 1,
            "a bind mount", "Method=user with a tmpfs option");
        bad("[Polydir x]\nPath=/tmp\nMethod=tmpfs\nMode=700\nMountOptions=mode=700\n", 1,
            "both Mode= and MountOptions=mode=", "Mode= and mode=");
        bad("[Polydir x]\nPath=/tmp\nMethod=tmpfs\nOnlyUsers=a\nExcludeUsers=b\n", 1,
            "both OnlyUsers= and ExcludeUsers=", "OnlyUsers= and ExcludeUsers=");
        bad("[Polydir a]\nPath=/tmp\nMethod=tmpfs\n\n[Polydir b]\nPath=/tmp\nMethod=tmpfs\n", 5,
            "is the path of [Polydir a] (test.conf:1) too", "two polydirs on one path");
        bad("[BindReadOnly a]\nSource=/x\n", 1, "has no Target=", "a bind without Target=");
        bad("[BindReadOnly a]\nTarget=/x\n", 1, "has no Source=", "a bind without Source=");
        bad("[BindReadOnly a]\nSource=/x\nTarget=/t\n[BindReadOnly b]\nSource=/y\nTarget=/t\n", 4,
            "is the target of [BindReadOnly a] (test.conf:1) too", "two binds on one target");
        bad("[Polydir a]\nPath=/tmp\n\n[Polydir a]\nMethod=tmpfs\n", 4,
            "[Polydir a] is defined twice: at test.conf:1 too", "one polydir defined twice");
        bad("[Polydir a]\nPath=/tmp\nPath=/var/tmp\n", 3, "set twice", "Path= twice");

        /* shares, at the share's line, naming the other */
        bad("[Share lab]\nUsers=alice\n", 1, "[Share lab] has no Path=", "a share without Path=");
        bad("\n[Share lab]\nPath=/srv/lab\n", 2,
            "[Share lab] has neither Users= nor Groups=: a share has no default membership",
            "a share without members");
        bad("[Share lab]\nPath=/srv/lab\nUsers=\nGroups= ,\n", 1, "no default membership",
            "a share with empty Users= and Groups=");
        bad("[Share a]\nPath=/srv/lab\nUsers=x\n\n[Share b]\nPath=/srv/lab\nGroups=y\n", 5,
            "[Share b] Path=/srv/lab is the path of [Share a] (test.conf:1), Path=/srv/lab: "
            "overlapping shares",
            "two shares on one path");
        bad("[Share a]\nPath=/srv/lab\nUsers=x\n[Share b]\nPath=/srv/lab/sub\nUsers=x\n", 4,
            "[Share b] Path=/srv/lab/sub is under the path of [Share a] (test.conf:1)",
            "a share under another");
        bad("[Share a]\nPath=/srv/lab/sub\nUsers=x\n[Share b]\nPath=/srv\nUsers=x\n", 4,
            "[Share b] Path=/srv is above the path of [Share a] (test.conf:1), "
            "Path=/srv/lab/sub: overlapping shares",
            "a share above another");
        bad("[Polydir tmp]\nPath=/tmp\nMethod=tmpfs\n[Share a]\nPath=/tmp\nUsers=x\n", 4,
            "[Share a] Path=/tmp is the path of [Polydir tmp] (test.conf:1), Path=/tmp: a share "
            "cannot overlap a polydir",
            "a share on a polydir");
        bad("[Share a]\nPath=/var/tmp/lab\nUsers=x\n[Polydir vt]\nPath=/var/tmp\n"
            "Method=tmpfs\n",
            1, "is under the path of [Polydir vt] (test.conf:4)", "a share under a polydir");
        ok(parse("[Share a]\nPath=/srv\nUsers=x\n[Polydir s]\nPath=/srv/%u\nMethod=tmpfs\n", &c,
                 NULL) == 0,
           "a polydir with a specifier (/srv/%%u) is not compared with the shares");
        config_done(&c);
        bad("[Namespaces]\nPrivateTmp=yes\n[Share a]\nPath=/tmp/lab\nUsers=x\n", 3,
            "[Share a] Path=/tmp/lab is under /tmp, the polydir of PrivateTmp=yes (test.conf:2)",
            "a share under PrivateTmp=yes's /tmp");
        bad("[BindReadOnly c]\nSource=/x\nTarget=/srv/lab/cpuinfo\n[Share a]\nPath=/srv/lab\n"
            "Groups=y\n",
            4,
            "[Share a] Path=/srv/lab is above the target of [BindReadOnly c] (test.conf:1), "
            "Target=/srv/lab/cpuinfo: a share cannot overlap a read-only bind",
            "a share above a bind's target");
        bad("[BindReadOnly c]\nSource=/x\nTarget=/srv\n[Share a]\nPath=/srv/lab\nGroups=y\n", 4,
            "is under the target of [BindReadOnly c] (test.conf:1)",
            "a share under a bind's target");
        bad("[Share a]\nPath=/srv/a\nUsers=x\n\n[Share a]\nUsers=y\n", 5,
            "[Share a] is defined twice: at test.conf:1 too", "one share defined twice");

        GString *many = g_string_new("");
        for (int i = 0; i <= SETUP_MAX_SHARES; i++)
                g_string_append_printf(many, "[Share s%d]\nPath=/s%d\nUsers=x\n", i, i);
        bad(many->str, 3 * SETUP_MAX_SHARES + 1, "more than 32 [Share] groups", "33 shares");
        g_string_free(many, TRUE);

        many = g_string_new("");
        for (int i = 0; i <= SETUP_MAX_POLYDIRS; i++)
                g_string_append_printf(many, "[Polydir p%d]\nPath=/p%d\nMethod=tmpfs\n", i, i);
        bad(many->str, 3 * SETUP_MAX_POLYDIRS + 1, "more than 32", "33 polydirs");
        g_string_free(many, TRUE);
}

static void test_volumes(void) {
        const char *text = "[Volume vault]\n"
                           "Type=ext4\n"
                           "Source=/srv/vol/%u.img\n"
                           "Where=%h/vault\n"
                           "Options=noexec,noatime,commit=30,nodiscard,ro\n"
                           "Users=alice 1001\n"
                           "Groups=vault\n"
                           "Start=namespace\n"
                           "\n"
                           "[Volume home-nfs]\n"
                           "Options=vers=4.2,hard\n"
                           "Where=/srv/nfs/%U\n"
                           "Source=nfs.example:/export/%u\n"
                           "Type=nfs4\n"
                           "Groups=staff\n";
        Config c = { 0 };
        g_autofree char *err = NULL;
        const Volume *v;
        char buf[128];

        if (!parses(text, &c, "two volumes parse, keys in any order"))
                return;
        v = c.setup.n_volumes == 2 ? &c.setup.volumes[0] : NULL;
        ok(v && strcmp(v->name, "vault") == 0 && strcmp(v->type, "ext4") == 0 &&
                   v->kind == VOLUME_KIND_BLOCK && strcmp(v->source, "/srv/vol/%u.img") == 0 &&
                   strcmp(v->where, "%h/vault") == 0 && v->start == VOLUME_START_NAMESPACE &&
                   g_strv_length(v->users) == 2 && g_strv_length(v->groups) == 1 &&
                   strcmp(v->file, "test.conf") == 0 && v->line == 1,
           "[Volume vault]: Type=ext4, Source= with %%u, Where=%%h/vault, Users=, Groups=, "
           "Start=namespace, at test.conf:1");
        ok(v && v->n_options == 2 && strcmp(v->options[0].key, "commit") == 0 &&
                   strcmp(v->options[0].value, "30") == 0 &&
                   strcmp(v->options[1].key, "nodiscard") == 0 && !v->options[1].value &&
                   v->mount_attr == (MOUNT_ATTR_NOEXEC | MOUNT_ATTR_NOATIME | MOUNT_ATTR_RDONLY),
           "Options=: ext4's commit=30 and nodiscard go to the file system; noexec, noatime "
           "and ro are mount attributes");
        ok(v && strcmp(volume_describe(v, buf, sizeof buf), "volume 'vault' (test.conf:1)") == 0,
           "volume_describe(): %s", v ? buf : "");
        {
                const gid_t gids[] = { 100, 3000 };
                const char *const names[] = { "users", "vault" };

                ok(v && volume_has_member(v, "alice", 1000, NULL, NULL, 0) &&
                           volume_has_member(v, "bob", 1001, NULL, NULL, 0) &&
                           volume_has_member(v, "carol", 1500, gids, names, 2) &&
                           !volume_has_member(v, "dave", 1600, gids, names, 1),
                   "membership as a share's: by name, by uid, by a group's name");
        }
        v = c.setup.n_volumes == 2 ? &c.setup.volumes[1] : NULL;
        ok(v && v->kind == VOLUME_KIND_NETWORK && strcmp(v->type, "nfs4") == 0 &&
                   strcmp(v->source, "nfs.example:/export/%u") == 0 && v->n_options == 2 &&
                   strcmp(v->options[0].key, "vers") == 0 && v->source_line == 13 &&
                   v->options_line == 11,
           "[Volume home-nfs]: a network source, Options= checked against Type= given after "
           "it");
        ok(!setup_conf_is_empty(&c.setup) && setup_conf_needs_identity(&c.setup),
           "a volume is something to set up, and its membership needs the user database");

        Config copy;
        config_copy(&copy, &c);
        ok(copy.setup.n_volumes == 2 && copy.setup.volumes[0].source != c.setup.volumes[0].source &&
                   copy.setup.volumes[0].n_options == 2 &&
                   strcmp(copy.setup.volumes[0].options[1].key, "nodiscard") == 0 &&
                   same_generation(&copy, &c),
           "config_copy() copies the volumes deeply, with the same generation");
        config_done(&copy);
        config_done(&c);

        /* the other block types and kernel network types */
        static const char *const fine[] = {
                "[Volume v]\nType=xfs\nSource=/dev/sdb1\nWhere=/srv/x\nUsers=a\n"
                "Options=inode64,logbufs=8\n",
                "[Volume v]\nType=btrfs\nSource=/srv/%U.img\nWhere=/srv/x\nUsers=a\n"
                "Options=subvol=home,compress=zstd\n",
                "[Volume v]\nType=vfat\nSource=/srv/stick.img\nWhere=%h/stick\nUsers=a\n"
                "Options=uid=1000,utf8,flush\n",
                "[Volume v]\nType=exfat\nSource=/srv/x.img\nWhere=/srv/x\nUsers=a\n"
                "Options=fmask=0133\n",
                "[Volume v]\nType=cifs\nSource=//server/%u\nWhere=%h/smb\nUsers=a\n"
                "Options=vers=3.1.1,seal\n",
                "[Volume v]\nType=nfs\nSource=server:/home/%u\nWhere=%h/nfs\nUsers=a\n",
        };
        bool all = true;
        for (size_t i = 0; i < G_N_ELEMENTS(fine); i++) {
                g_clear_pointer(&err, g_free);
                if (parse(fine[i], &c, &err) < 0) {
                        printf("# refused: %s: %s\n", fine[i], err);
                        all = false;
                        continue;
                }
                config_done(&c);
        }
        ok(all, "xfs, btrfs, vfat, exfat, cifs and nfs volumes with options of their own");
}

/* A FUSE type: run by the user's service manager at login (Start=login, its default and its
 * only one), its options as one -o argument; a kernel type cannot start at login yet. */
static void test_volumes_fuse(void) {
        Config c = { 0 };
        g_autofree char *opts = NULL;
        const Volume *v;

        if (!parses("[Volume data]\nType=sshfs\nSource=%u@files:/srv/%u\nWhere=%h/data\n"
                    "Options=ro,reconnect,ServerAliveInterval=15,noatime\nUsers=alice\n",
                    &c, "an sshfs volume parses"))
                return;
        v = &c.setup.volumes[0];
        opts = volume_options_text(v);
        ok(v->kind == VOLUME_KIND_FUSE && v->start == VOLUME_START_LOGIN && !v->start_set,
           "a FUSE kind, started at login without saying so");
        is_str(opts, "nosuid,nodev,ro,noatime,reconnect,ServerAliveInterval=15",
               "its options for the program: nosuid,nodev first, the attributes, its own");
        config_done(&c);
        if (parses("[Volume data]\nType=sshfs\nSource=h:/x\nWhere=/srv/x\nUsers=a\n"
                   "Start=login\n",
                   &c, "Start=login said"))
                config_done(&c);
        bad("# test\n[Volume v]\nType=sshfs\nSource=h:/x\nWhere=/srv/x\nUsers=a\n"
            "Start=namespace\n",
            2,
            "[Volume v] Start=namespace: a FUSE volume (Type=sshfs) is run by the user's "
            "service manager, which starts at login (Start=login) or when the user asks "
            "(Start=request)",
            "Start=namespace of a FUSE volume");
        if (parses("[Volume data]\nType=sshfs\nSource=h:/x\nWhere=/srv/x\nUsers=a\n"
                   "Start=request\n",
                   &c, "Start=request of a FUSE volume")) {
                ok(c.setup.volumes[0].start == VOLUME_START_REQUEST,
                   "Start=request: started when the user asks");
                config_done(&c);
        }
        if (parses("[Volume vault]\nType=gocryptfs\nSource=%h/.vault-cipher\nWhere=%h/vault\n"
                   "Options=noexec\nUsers=alice\n",
                   &c, "a gocryptfs volume parses, its cipher folder in the home")) {
                g_autofree char *o = volume_options_text(&c.setup.volumes[0]);

                ok(c.setup.volumes[0].kind == VOLUME_KIND_FUSE &&
                           strcmp(o, "nosuid,nodev,noexec") == 0,
                   "a FUSE kind, its options the mount attributes only (%s)", o);
                ok(c.setup.volumes[0].key == VOLUME_KEY_LOGIN && !c.setup.volumes[0].key_set,
                   "its key the login password without saying so");
                config_done(&c);
        }
        if (parses("[Volume vault]\nType=gocryptfs\nSource=%h/.c\nWhere=%h/vault\n"
                   "Key=ask\nUsers=alice\n",
                   &c, "Key=ask parses")) {
                ok(c.setup.volumes[0].key == VOLUME_KEY_ASK, "Key=ask: only nsctl unlock's");
                config_done(&c);
        }
        bad("# test\n[Volume v]\nType=sshfs\nSource=h:/x\nWhere=/srv/x\nUsers=a\nKey=ask\n", 7,
            "[Volume v] Key=: Type=sshfs takes no password (only a type whose program reads "
            "one does: gocryptfs)",
            "Key= of a type that takes no password, at its line");
        bad("# test\n[Volume v]\nKey=/etc/nsd/vault.key\n", 3,
            "Key=/etc/nsd/vault.key: expected 'login' (the login password, or nsctl unlock) or "
            "'ask' (only nsctl unlock); for a key file, KeyFile= instead",
            "Key= a key file: KeyFile= named");
        if (parses("[Volume vault]\nType=gocryptfs\nSource=%h/.c\nWhere=%h/vault\n"
                   "KeyFile=/etc/nsd/keys/%u.vault\nUsers=alice\n",
                   &c, "KeyFile= parses, with %u")) {
                ok(g_strcmp0(c.setup.volumes[0].key_file, "/etc/nsd/keys/%u.vault") == 0 &&
                           !c.setup.volumes[0].key_set && c.setup.volumes[0].key_file_line == 5,
                   "KeyFile= kept as written, at its line");
                config_done(&c);
        }
        static const struct {
                const char *text, *want, *what;
                unsigned line;
        } key_files[] = {
                { "Type=sshfs\nSource=h:/x\nWhere=/srv/x\nUsers=a\nKeyFile=/etc/k",
                  "[Volume v] KeyFile=: Type=sshfs takes no password", "of an sshfs volume", 7 },
                { "Type=gocryptfs\nSource=/c\nWhere=/srv/x\nUsers=a\nKey=ask\nKeyFile=/etc/k",
                  "[Volume v] Key= and KeyFile= both given", "beside Key=, at the later line", 8 },
                { "KeyFile=%h/.vault.key", "KeyFile=%h/.vault.key: not an absolute path",
                  "in the user's home", 3 },
                { "KeyFile=/home/%h/k",
                  "'%h': only %u (user name), %U (uid) and %% may be used here (not %h: what lies "
                  "in the user's home is the user's to craft",
                  "with %h", 3 },
                { "KeyFile=etc/k", "KeyFile=etc/k: not an absolute path", "relative", 3 },
                { "KeyFile=/etc/%g", "'%g': only %u (user name), %U (uid)", "with %g", 3 },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(key_files); i++) {
                g_autofree char *text = g_strdup_printf("# test\n[Volume v]\n%s\n",
                                                        key_files[i].text);
                g_autofree char *what = g_strdup_printf("KeyFile= %s: refused", key_files[i].what);

                bad(text, key_files[i].line, key_files[i].want, what);
        }
        if (parses("[Volume v]\nType=ext4\nSource=/srv/a.img\nWhere=/srv/x\nUsers=a\n"
                   "Start=login\n",
                   &c, "Start=login of a kernel file system parses")) {
                ok(c.setup.volumes[0].start == VOLUME_START_LOGIN, "started at login");
                config_done(&c);
        }
        if (parses("[Volume v]\nType=ext4\nSource=/srv/a.img\nWhere=/srv/x\nUsers=a\n"
                   "Start=request\n",
                   &c, "Start=request of a kernel file system parses")) {
                ok(c.setup.volumes[0].start == VOLUME_START_REQUEST, "started on request");
                config_done(&c);
        }
        if (parses("[Volume v]\nType=ext4\nSource=/srv/a.img\nWhere=/srv/x\nUsers=a\n", &c,
                   "a kernel file system without Start=")) {
                ok(c.setup.volumes[0].start == VOLUME_START_NAMESPACE,
                   "mounted with the namespace by default");
                ok(c.setup.volumes[0].release == VOLUME_RELEASE_AT_NAMESPACE,
                   "and released with it by default");
                config_done(&c);
        }
        if (parses("[Volume v]\nType=ext4\nSource=/srv/a.img\nWhere=/srv/x\nUsers=a\n"
                   "Start=login\nRelease=last-session\n",
                   &c, "Release=last-session of a block volume started at login parses")) {
                ok(c.setup.volumes[0].release == VOLUME_RELEASE_AT_LAST_SESSION,
                   "released at the last session");
                config_done(&c);
        }
        bad("# test\n[Volume v]\nType=ext4\nSource=/srv/a.img\nWhere=/srv/x\nUsers=a\n"
            "Release=last-session\n",
            7,
            "[Volume v] Release=last-session with Start=namespace: once released it would stay "
            "unmounted for the namespace's life",
            "Release=last-session of a volume mounted with the namespace, at its line");
        bad("# test\n[Volume v]\nType=nfs4\nSource=srv:/x\nWhere=/srv/x\nUsers=a\n"
            "Start=login\nRelease=last-session\n",
            8, "Release=last-session: not supported yet for a network volume (Type=nfs4)",
            "Release=last-session of a network volume");
        bad("# test\n[Volume v]\nType=sshfs\nSource=h:/x\nWhere=/srv/x\nUsers=a\n"
            "Release=last-session\n",
            7, "a FUSE volume (Type=sshfs) ends with the user's service manager",
            "Release=last-session of a FUSE volume");
        bad("# test\n[Volume v]\nRelease=never\n", 3,
            "Release=never: expected 'namespace' or 'last-session'", "an unknown Release=");
}

static void test_volumes_bad(void) {
        static const struct {
                const char *line, *want;
        } cases[] = {
                /* Type= */
                { "Type=fuse.bindfs", "FUSE volumes ('fuse.bindfs') are not supported yet" },
                { "Type=luks", "Type=luks: LUKS volumes ('luks') are not supported yet" },
                { "Type=crypto_LUKS", "LUKS volumes ('crypto_LUKS') are not supported yet" },
                { "Type=ext3", "Type=ext3: unknown type (known: ext4, xfs, btrfs, vfat, exfat, "
                               "cifs, nfs, nfs4, sshfs, gocryptfs)" },
                { "Type=", "unknown type" },
                /* Source=, Where= */
                { "Source=", "Source=: empty" },
                { "Source=//srv/a\tb", "contains a control character" },
                { "Where=vault", "Where=vault: not an absolute path" },
                { "Where=/home/%h/x", "may only start" },
                { "Where=%h/../etc", "'.' or '..'" },
                { "Where=%h/x/", "ends in '/'" },
                { "Where=/srv/%x", "unknown specifier '%x'" },
                /* members, Start= */
                { "Users=al ice!", "'ice!' is not a user name or uid" },
                { "Groups=@wheel", "'@wheel' is not a group name or gid" },
                { "Start=boot", "Start=boot: expected 'namespace', 'login' or 'request'" },
                { "Start=", "expected 'namespace', 'login' or 'request'" },
                { "Key=", "Key=: expected 'login'" },
                /* keys */
                { "Path=/srv", "unknown key Path=" },
                { "OnlyUsers=alice", "unknown key OnlyUsers=" },
                { "MountOptions=ro", "unknown key MountOptions=" },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *text = g_strdup_printf("# test\n[Volume v]\n%s\n", cases[i].line);
                g_autofree char *what = g_strdup_printf("[Volume v] %s", cases[i].line);

                bad(text, 3, cases[i].want, what);
        }
        bad("[Volume a/b]\n", 1, "a name is", "[Volume a/b]");

        /* checked once the whole group is read, at the key's line */
        static const struct {
                const char *type, *source, *options;
                unsigned line;
                const char *want;
        } whole[] = {
                { "ext4", "/srv/vol/%h.img", NULL, 3, "Source=/srv/vol/%h.img: %h is not allowed" },
                { "ext4", "%h/vault.img", NULL, 3, "Source=%h/vault.img: %h is not allowed" },
                { "ext4", "/srv/%g.img", NULL, 3, "'%g': only %u (user name), %U (uid)" },
                { "ext4", "srv/a.img", NULL, 3, "Source=srv/a.img: not an absolute path" },
                { "ext4", "//server/share", NULL, 3, "contains '//'" },
                { "xfs", "/srv/a/../b.img", NULL, 3, "'.' or '..'" },
                { "cifs", "//server/%h", NULL, 3, "only %u (user name), %U (uid) and %%" },
                { "cifs", "//server/a b", NULL, 3, "white space or a control character" },
                { "ext4", "/srv/a.img", "nosuid,nodev,suid", 5, "'suid' is refused" },
                { "ext4", "/srv/a.img", "suid", 5,
                  "Options=suid: 'suid' is refused: every mount "
                  "nsd makes is nosuid,nodev (Type=ext4)" },
                { "ext4", "/srv/a.img", "noexec,dev", 5, "'dev' is refused" },
                { "ext4", "/srv/a.img", "errors=panic", 5,
                  "Options=errors=panic: unknown option 'errors' (known: commit=, data=" },
                { "btrfs", "/srv/a.img", "device=/dev/sda", 5, "unknown option 'device'" },
                { "xfs", "/srv/a.img", "logdev=/dev/sdb", 5, "unknown option 'logdev'" },
                { "ext4", "/srv/a.img", "subvol=x", 5,
                  "unknown option 'subvol'" }, /* btrfs's, not ext4's */
                { "vfat", "/srv/a.img", "uid", 5, "'uid' needs a value" },
                { "ext4", "/srv/a.img", "nodiscard=1", 5, "'nodiscard' takes no value" },
                { "ext4", "/srv/a.img", "noexec=1", 5, "'noexec' takes no value" },
                { "nfs4", "srv:/x", "size=1m", 5, "unknown option 'size'" },
                /* a FUSE type: the program's operand, and its own options only */
                { "sshfs", "-oProxyCommand=x", NULL, 3, "must not start with '-'" },
                { "sshfs", "host:/a b", NULL, 3, "white space or a control character" },
                { "sshfs", "host:/x", "ProxyCommand=sh", 5, "unknown option 'ProxyCommand'" },
                { "sshfs", "host:/x", "IdentityFile=/root/.ssh/id", 5,
                  "unknown option 'IdentityFile'" },
                { "sshfs", "host:/x", "allow_other", 5, "unknown option 'allow_other'" },
                { "sshfs", "host:/x", "suid", 5, "'suid' is refused" },
                { "gocryptfs", "files:/x", NULL, 3, "Source=files:/x: not an absolute path" },
                { "gocryptfs", "/srv/c", "reconnect", 5, "unknown option 'reconnect'" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(whole); i++) {
                g_autofree char *text = g_strdup_printf(
                        "# test\n[Volume v]\nSource=%s\nType=%s\n%s%s%sWhere=/srv/x\nUsers=a\n",
                        whole[i].source, whole[i].type, whole[i].options ? "Options=" : "",
                        whole[i].options ? whole[i].options : "", whole[i].options ? "\n" : "");
                g_autofree char *what = g_strdup_printf("Type=%s Source=%s Options=%s",
                                                        whole[i].type, whole[i].source,
                                                        whole[i].options ? whole[i].options : "");

                bad(text, whole[i].line, whole[i].want, what);
        }

        /* OnFailure=: its own, else [Setup]'s */
        bad("[Volume v]\nType=ext4\nSource=/a.img\nWhere=/x\nUsers=a\nOnFailure=maybe\n", 6,
            "OnFailure=maybe: expected 'refuse' or 'continue'", "a volume's OnFailure=maybe");
        {
                static const struct {
                        const char *setup, *volume; /* [Setup]'s, the volume's */
                        bool refuses;
                } of[] = {
                        { "", "", true },
                        { "continue", "", false },
                        { "", "continue", false },
                        { "continue", "refuse", true },
                };
                for (size_t i = 0; i < G_N_ELEMENTS(of); i++) {
                        Config c = { 0 };
                        g_autofree char *err = NULL;
                        g_autofree char *text = g_strdup_printf(
                                "[Setup]\n%s%s\n[Volume v]\nType=ext4\nSource=/a.img\n"
                                "Where=/x\nUsers=a\n%s%s\n",
                                *of[i].setup ? "OnFailure=" : "", of[i].setup,
                                *of[i].volume ? "OnFailure=" : "", of[i].volume);
                        int r = parse(text, &c, &err);

                        ok(r == 0 && c.setup.n_volumes == 1 &&
                                   volume_failure_refuses(&c.setup, &c.setup.volumes[0]) ==
                                           of[i].refuses,
                           "[Setup] OnFailure=%s, the volume's OnFailure=%s: a failure %s",
                           *of[i].setup ? of[i].setup : "(unset)",
                           *of[i].volume ? of[i].volume : "(unset)",
                           of[i].refuses ? "refuses" : "does not refuse");
                        if (r == 0)
                                config_done(&c);
                }
        }

        /* "%%h" is a '%' and an 'h', not the home */
        {
                Config c = { 0 };
                g_autofree char *err = NULL;
                int r = parse("[Volume v]\nType=ext4\nSource=/srv/100%%home.img\nWhere=/x\n"
                              "Users=a\n",
                              &c, &err);

                ok(r == 0 && c.setup.n_volumes == 1,
                   "Source=/srv/100%%%%home.img: a '%%' and an 'h', accepted (%s)", err ? err : "");
                if (r == 0)
                        config_done(&c);
        }

        /* the group as a whole, at its line */
        bad("[Volume v]\nSource=/a.img\nWhere=/x\nUsers=a\n", 1,
            "[Volume v] has no Type=", "a volume without Type=");
        bad("[Volume v]\nType=ext4\nWhere=/x\nUsers=a\n", 1,
            "[Volume v] has no Source=", "a volume without Source=");
        bad("\n[Volume v]\nType=ext4\nSource=/a.img\nUsers=a\n", 2,
            "[Volume v] has no Where=", "a volume without Where=");
        bad("[Volume v]\nType=ext4\nSource=/a.img\nWhere=/x\nUsers=\n", 1,
            "[Volume v] has neither Users= nor Groups=: a volume has no default membership",
            "a volume without members");
        bad("[Volume a]\nType=ext4\nSource=/a.img\nWhere=%h/v\nUsers=a\n"
            "[Volume b]\nType=ext4\nSource=/b.img\nWhere=%h/v\nUsers=b\n",
            6, "[Volume b] Where=%h/v is the mount point of [Volume a] (test.conf:1) too",
            "two volumes on one Where=");
        bad("[Share lab]\nPath=/srv/lab\nGroups=lab\n"
            "[Volume v]\nType=ext4\nSource=/a.img\nWhere=/srv/lab/v\nUsers=a\n",
            4,
            "[Volume v] Where=/srv/lab/v is under the path of [Share lab] (test.conf:1), "
            "Path=/srv/lab: a volume's mount would travel to the share's other members",
            "a volume under a share");
        bad("[Volume a]\nType=ext4\nSource=/a.img\nWhere=/x\nUsers=a\n\n[Volume a]\nUsers=b\n", 7,
            "[Volume a] is defined twice: at test.conf:1 too", "one volume defined twice");
        bad("[Volume a]\nType=ext4\nType=xfs\n", 3, "set twice", "Type= twice");

        GString *many = g_string_new("");
        for (int i = 0; i <= SETUP_MAX_VOLUMES; i++)
                g_string_append_printf(many, "[Volume v%d]\n", i);
        bad(many->str, SETUP_MAX_VOLUMES + 1, "more than 32 [Volume] groups", "33 volumes");
        g_string_free(many, TRUE);
}

static void test_generation(void) {
        const char *base = "[Polydir tmp]\nPath=/tmp\nMethod=tmpfs\nMountOptions=size=1m\n";
        static const char *const other[] = {
                "[Polydir tmp]\nPath=/var/tmp\nMethod=tmpfs\nMountOptions=size=1m\n",
                "[Polydir tmp]\nPath=/tmp\nMethod=tmpfs\nMountOptions=size=2m\n",
                "[Polydir tmp]\nPath=/tmp\nMethod=tmpfs\nMountOptions=size=1m,noexec\n",
                "[Polydir tmp]\nPath=/tmp\nMethod=tmpfs\nMountOptions=size=1m\nMode=700\n",
                "[Polydir tmp]\nPath=/tmp\nMethod=tmpfs\nMountOptions=size=1m\nNoInit=yes\n",
                "[Polydir tmp]\nPath=/tmp\nMethod=tmpfs\nMountOptions=size=1m\nOnlyUsers=a\n",
                "[Polydir tmq]\nPath=/tmp\nMethod=tmpfs\nMountOptions=size=1m\n",
                "[Setup]\nInitScript=/x\n[Polydir tmp]\nPath=/tmp\nMethod=tmpfs\n"
                "MountOptions=size=1m\n",
                "[BindReadOnly b]\nSource=/a\nTarget=/b\n[Polydir tmp]\nPath=/tmp\n"
                "Method=tmpfs\nMountOptions=size=1m\n",
                "[Namespaces]\nPropagation=private\n[Polydir tmp]\nPath=/tmp\nMethod=tmpfs\n"
                "MountOptions=size=1m\n",
                "[Share lab]\nPath=/srv/lab\nGroups=lab\n[Polydir tmp]\nPath=/tmp\n"
                "Method=tmpfs\nMountOptions=size=1m\n",
        };
        static const char *const shares[] = {
                "[Share lab]\nPath=/srv/lab\nGroups=lab\n",
                "[Share lab]\nPath=/srv/lab2\nGroups=lab\n",
                "[Share lab]\nPath=/srv/lab\nGroups=lab2\n",
                "[Share lab]\nPath=/srv/lab\nGroups=lab\nUsers=alice\n",
                "[Share lab]\nPath=/srv/lab\nUsers=lab\n",
                "[Share lab]\nPath=/srv/lab\nGroups=lab\nPropagation=host\n",
                "[Share lab]\nPath=/srv/lab\nGroups=lab\nPropagation=both\n",
                "[Share lab2]\nPath=/srv/lab\nGroups=lab\n",
        };
        Config a = { 0 }, b = { 0 };
        char ga[17], gb[17];
        bool differ = true;

        ok(parse(base, &a, NULL) == 0, "the base setup parses");
        setup_conf_generation(&a.setup, a.propagation_private, ga, sizeof ga);
        ok(strlen(ga) == 16 && strspn(ga, "0123456789abcdef") == 16,
           "a generation is 16 hex digits (%s)", ga);
        for (size_t i = 0; i < G_N_ELEMENTS(other); i++) {
                if (parse(other[i], &b, NULL) < 0) {
                        differ = false;
                        continue;
                }
                setup_conf_generation(&b.setup, b.propagation_private, gb, sizeof gb);
                if (strcmp(ga, gb) == 0) {
                        printf("# same generation for: %s\n", other[i]);
                        differ = false;
                }
                config_done(&b);
        }
        ok(differ, "every change of what a namespace is made of changes the generation");

        /* a share: its name, path, members and propagation; not MaxMembers= */
        char gs[G_N_ELEMENTS(shares)][17];
        bool all_differ = true;
        for (size_t i = 0; i < G_N_ELEMENTS(shares); i++) {
                if (parse(shares[i], &b, NULL) < 0) {
                        printf("# refused: %s\n", shares[i]);
                        all_differ = false;
                        gs[i][0] = '\0';
                        continue;
                }
                setup_conf_generation(&b.setup, false, gs[i], sizeof gs[i]);
                config_done(&b);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(gs[i], gs[j]) == 0) {
                                printf("# same generation for: %s and %s\n", shares[i], shares[j]);
                                all_differ = false;
                        }
        }
        ok(all_differ, "a share's name, path, Users=, Groups= and Propagation= each change the "
                       "generation");

        /* a volume: each of its keys */
        static const char *const volumes[] = {
                "[Volume v]\nType=ext4\nSource=/a.img\nWhere=%h/v\nUsers=alice\n",
                "[Volume w]\nType=ext4\nSource=/a.img\nWhere=%h/v\nUsers=alice\n",
                "[Volume v]\nType=xfs\nSource=/a.img\nWhere=%h/v\nUsers=alice\n",
                "[Volume v]\nType=ext4\nSource=/b.img\nWhere=%h/v\nUsers=alice\n",
                "[Volume v]\nType=ext4\nSource=/a.img\nWhere=%h/w\nUsers=alice\n",
                "[Volume v]\nType=ext4\nSource=/a.img\nWhere=%h/v\nUsers=bob\n",
                "[Volume v]\nType=ext4\nSource=/a.img\nWhere=%h/v\nGroups=alice\n",
                "[Volume v]\nType=ext4\nSource=/a.img\nWhere=%h/v\nUsers=alice\nOptions=ro\n",
                "[Volume v]\nType=ext4\nSource=/a.img\nWhere=%h/v\nUsers=alice\n"
                "Options=commit=5\n",
                "[Volume v]\nType=ext4\nSource=/a.img\nWhere=%h/v\nUsers=alice\n"
                "Options=commit=6\n",
                "",
        };
        char gv[G_N_ELEMENTS(volumes)][17];
        all_differ = true;
        for (size_t i = 0; i < G_N_ELEMENTS(volumes); i++) {
                gv[i][0] = '\0';
                if (parse(volumes[i], &b, NULL) < 0) {
                        printf("# refused: %s\n", volumes[i]);
                        all_differ = false;
                        continue;
                }
                setup_conf_generation(&b.setup, false, gv[i], sizeof gv[i]);
                config_done(&b);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(gv[i], gv[j]) == 0) {
                                printf("# same generation for: %s and %s\n", volumes[i],
                                       volumes[j]);
                                all_differ = false;
                        }
        }
        ok(all_differ, "a volume, and its name, Type=, Source=, Where=, Users=, Groups= and "
                       "Options= each change the generation");
        ok(parse("[Volume v]\nUsers=alice\nWhere=%h/v\nSource=/a.img\nType=ext4\n", &b, NULL) ==
                           0 &&
                   strcmp(gv[0], setup_conf_generation(&b.setup, false, gb, sizeof gb)) == 0,
           "the same volume written in another order: the same generation");
        config_done(&b);
        ok(parse("[Share lab]\nPath=/srv/lab\nGroups=lab\nMaxMembers=3\n", &b, NULL) == 0 &&
                   strcmp(gs[0], setup_conf_generation(&b.setup, false, gb, sizeof gb)) == 0,
           "MaxMembers= does not change it");
        config_done(&b);
        ok(parse("", &b, NULL) == 0 &&
                   strcmp(gs[0], setup_conf_generation(&b.setup, false, gb, sizeof gb)) != 0,
           "adding a share to an empty setup changes it");
        config_done(&b);
        ok(parse("[Setup]\nTimeoutSec=9\nOnFailure=continue\n[Limits]\nMaxNamespaces=3\n"
                 "[Polydir tmp]\nPath=/tmp\nMethod=tmpfs\nMountOptions=size=1m\n",
                 &b, NULL) == 0 &&
                   strcmp(ga, setup_conf_generation(&b.setup, b.propagation_private, gb,
                                                    sizeof gb)) == 0,
           "timeouts, OnFailure= and limits do not change it");
        config_done(&b);
        config_done(&a);
}

static void test_needs_identity(void) {
        static const struct {
                const char *text;
                bool needs;
        } cases[] = {
                /* setup_conf_is_empty(): for the first only, of no text at all */
                { "", false },
                { "[Namespaces]\nPrivateTmp=yes\n", false },
                { "[BindReadOnly b]\nSource=/a\nTarget=/b\n", false },
                { "[Polydir a]\nPath=/srv/%U\nMethod=tmpfs\nExcludeUsers=0 1001\n", false },
                { "[Polydir a]\nPath=/srv/100%%\nMethod=tmpfs\n", false },
                { "[Polydir a]\nPath=/srv/%u\nMethod=tmpfs\n", true },
                { "[Polydir a]\nPath=%h/.cache\nMethod=tmpfs\n", true },
                { "[Polydir a]\nPath=/x\nMethod=user\nInstancePrefix=/i/%g-\n", true },
                { "[Polydir a]\nPath=/x\nMethod=user\nInstancePrefix=/i/\n", true },
                { "[Polydir a]\nPath=/x\nMethod=tmpfs\nOnlyUsers=alice\n", true },
                { "[Setup]\nInitScript=/i\n[Polydir a]\nPath=/x\nMethod=tmpfs\n", true },
                { "[Setup]\nInitScript=/i\n[Polydir a]\nPath=/x\nMethod=tmpfs\nNoInit=yes\n",
                  false },
                { "[Share s]\nPath=/s\nUsers=1000\n", true },
        };
        bool all = true;

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                Config c = { 0 };

                if (parse(cases[i].text, &c, NULL) < 0 ||
                    setup_conf_is_empty(&c.setup) != (cases[i].text[0] == '\0') ||
                    setup_conf_needs_identity(&c.setup) != cases[i].needs) {
                        printf("# wrong for: %s\n", cases[i].text);
                        all = false;
                }
                config_done(&c);
        }
        ok(all, "a setup needs the user database only for %%u %%h %%g, Method=user, user names, "
                "init scripts and shares (PrivateTmp=yes, %%U, uids and binds do not)");
}

/* ---- files ------------------------------------------------------------------------------ */

static void write_file(const char *dir, const char *name, const char *text, mode_t mode) {
        g_autofree char *path = g_build_filename(dir, name, NULL);

        if (!g_file_set_contents(path, text, -1, NULL) || chmod(path, mode) < 0)
                tap_bail_errno(path);
}

static int load(const char *dir, Config *c, bool *missing, char **err) {
        g_autofree char *path = g_build_filename(dir, "nsd.conf", NULL);

        return config_load(path, c, missing, err);
}

/* One point, what: the configuration in dir refused with want_r (0: any error), the error
 * starting with path and saying text. */
static bool load_refused(const char *dir, int want_r, const char *path, const char *text,
                         const char *what) {
        g_autofree char *err = NULL;
        Config c = { 0 };
        bool missing;
        int r = load(dir, &c, &missing, &err);
        bool pass = ok((want_r ? r == want_r : r < 0) && err && g_str_has_prefix(err, path) &&
                               strstr(err, text),
                       "%s (%s)", what, err ? err : "(accepted)");

        if (r == 0)
                config_done(&c);
        return pass;
}

#define T(text, name) \
        { text, sizeof(text) - 1, name }

static void test_parse_texts(void) {
        const ConfigText t[] = {
                T("[Namespaces]\nLinger=10\n", "nsd.conf"),
                T("[Namespaces]\nMinUid=2000\n[Polydir a]\nPath=/a\nMethod=tmpfs\n", "d/10-a.conf"),
                T("[Polydir b]\nPath=/b\nMethod=tmpfs\n", "d/20-b.conf"),
        };
        const ConfigText key_twice[] = {
                T("[Namespaces]\n\nLinger=10\n", "nsd.conf"),
                T("# x\n[Namespaces]\nLinger=20\n", "d/10-linger.conf"),
        };
        const ConfigText object_twice[] = {
                T("[Polydir a]\nPath=/a\nMethod=tmpfs\n", "d/10-a.conf"),
                T("\n[Polydir a]\nMethod=tmpfs\n", "d/20-a.conf"),
        };
        const ConfigText later_value[] = {
                T("[Polydir a]\nPath=/a\nMethod=tmpfs\n", "d/10-a.conf"),
                T("[Namespaces]\nLinger=never\n", "d/20-bad.conf"),
        };
        Config c = { 0 };
        g_autofree char *err = NULL;

        ok(config_parse_texts(t, G_N_ELEMENTS(t), &c, &err) == 0 && c.linger_sec == 10 &&
                   c.min_uid == 2000 && c.setup.n_polydirs == 2 &&
                   strcmp(c.setup.polydirs[0].name, "a") == 0 &&
                   strcmp(c.setup.polydirs[1].file, "d/20-b.conf") == 0,
           "three texts make one configuration; [Namespaces] may be in several (%s)",
           err ? err : "");
        config_done(&c);
        ok(config_parse_texts(key_twice, 2, &c, &err) == -EINVAL && err &&
                   g_str_has_prefix(err, "d/10-linger.conf:3:") && strstr(err, "nsd.conf:3"),
           "a key set in two files is refused, naming both places (%s)", err ? err : "");
        g_clear_pointer(&err, g_free);
        ok(config_parse_texts(object_twice, 2, &c, &err) == -EINVAL && err &&
                   g_str_has_prefix(err, "d/20-a.conf:2:") && strstr(err, "d/10-a.conf:1"),
           "an object defined in two files is refused, naming both places (%s)", err ? err : "");
        g_clear_pointer(&err, g_free);
        ok(config_parse_texts(later_value, 2, &c, &err) == -EINVAL && err &&
                   g_str_has_prefix(err, "d/20-bad.conf:2:"),
           "a bad value is named in its own file (%s)", err ? err : "");
}

static void test_files(void) {
        g_autofree char *dir = g_dir_make_tmp("nsd-test-setup-conf-XXXXXX", NULL);
        g_autofree char *d = NULL, *err = NULL;
        Config c = { 0 };
        bool missing = false;
        int r;

        if (!dir)
                tap_bail_errno("g_dir_make_tmp");
        d = g_build_filename(dir, "nsd.conf.d", NULL);
        (void) chmod(dir, 0755);

        ok(load(dir, &c, &missing, &err) == 0 && missing && c.setup.n_polydirs == 0,
           "neither nsd.conf nor drop-ins: the defaults");
        config_done(&c);

        if (mkdir(d, 0755) < 0)
                tap_bail_errno(d);
        write_file(d, "b.conf", "[Polydir b]\nPath=/b\nMethod=tmpfs\n", 0644);
        write_file(d, "10-z.conf", "[Polydir z]\nPath=/z\nMethod=tmpfs\n", 0644);
        write_file(d, "a.conf", "[Polydir a]\nPath=/a\nMethod=tmpfs\n", 0600);
        write_file(d, "A.conf", "[Polydir A]\nPath=/A\nMethod=tmpfs\n", 0400);
        write_file(d, "c.conf.disabled", "this is not read\n", 0644);
        write_file(d, ".hidden.conf", "neither is this\n", 0644);
        write_file(d, "world.conf~", "nor this\n", 0666);
        r = load(dir, &c, &missing, &err);
        ok(r == 0 && missing && c.setup.n_polydirs == 4 &&
                   strcmp(c.setup.polydirs[0].name, "z") == 0 &&
                   strcmp(c.setup.polydirs[1].name, "A") == 0 &&
                   strcmp(c.setup.polydirs[2].name, "a") == 0 &&
                   strcmp(c.setup.polydirs[3].name, "b") == 0,
           "no nsd.conf, four drop-ins in byte order (10-z, A, a, b); other names ignored (%s)",
           err ? err : "");
        ok(c.setup.n_polydirs == 4 && g_str_has_suffix(c.setup.polydirs[0].file, "/10-z.conf"),
           "each polydir knows its file");
        config_done(&c);

        write_file(dir, "nsd.conf",
                   "[Namespaces]\nLinger=5\n[Polydir main]\nPath=/m\n"
                   "Method=tmpfs\n",
                   0644);
        g_autofree char *link = g_build_filename(d, "50-link.conf", NULL);
        g_autofree char *target = g_build_filename(dir, "linked.txt", NULL);
        write_file(dir, "linked.txt", "[Namespaces]\nMinUid=2000\n", 0644);
        if (symlink(target, link) < 0)
                tap_bail_errno(link);
        r = load(dir, &c, &missing, &err);
        ok(r == 0 && !missing && c.linger_sec == 5 && c.min_uid == 2000 &&
                   c.setup.n_polydirs == 5 && strcmp(c.setup.polydirs[0].name, "main") == 0,
           "nsd.conf first, then the drop-ins; a drop-in may be a symbolic link to a trusted file "
           "(%s)",
           err ? err : "");
        config_done(&c);

        /* a key in two files */
        write_file(d, "60-linger.conf", "[Namespaces]\nLinger=7\n", 0644);
        g_clear_pointer(&err, g_free);
        r = load(dir, &c, &missing, &err);
        ok(r == -EINVAL && err && strstr(err, "60-linger.conf:2:") && strstr(err, "nsd.conf:2"),
           "Linger= in nsd.conf and in a drop-in: one error naming both (%s)", err ? err : "");
        g_autofree char *p60 = g_build_filename(d, "60-linger.conf", NULL);
        (void) unlink(p60);

        /* files someone else could write */
        static const struct {
                const char *name;
                mode_t mode;
                const char *want;
        } untrusted[] = {
                { "70-world.conf", 0666, "writable by everyone (mode 0666)" },
                { "70-group.conf", 0664, "writable by its group (mode 0664)" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(untrusted); i++) {
                g_autofree char *path = g_build_filename(d, untrusted[i].name, NULL);
                g_autofree char *what = g_strdup_printf("a drop-in %s is refused, naming it",
                                                        untrusted[i].want);

                write_file(d, untrusted[i].name, "[Namespaces]\nMaxUid=3000\n", untrusted[i].mode);
                load_refused(dir, -EPERM, path, untrusted[i].want, what);
                (void) unlink(path);
        }
        g_autofree char *main_conf = g_build_filename(dir, "nsd.conf", NULL);
        (void) chmod(main_conf, 0646);
        load_refused(dir, -EPERM, main_conf, "everyone", "a world-writable nsd.conf is refused");
        (void) chmod(main_conf, 0644);
        (void) chmod(d, 0777);
        load_refused(dir, -EPERM, d, "everyone", "a world-writable drop-in directory is refused");
        (void) chmod(d, 0755);
        write_file(d, "80-dir.conf.tmp", "", 0644);
        g_autofree char *subdir = g_build_filename(d, "80-dir.conf", NULL);
        (void) mkdir(subdir, 0755);
        load_refused(dir, 0, subdir, "not a regular file", "a directory named *.conf is refused");
        (void) rmdir(subdir);

        if (geteuid() == 0) {
                g_autofree char *path = g_build_filename(d, "90-owner.conf", NULL);

                write_file(d, "90-owner.conf", "[Namespaces]\nMaxUid=3000\n", 0644);
                if (chown(path, 4242, 4242) < 0)
                        tap_bail_errno(path);
                load_refused(dir, -EPERM, path, "owned by uid 4242, not by root",
                             "a drop-in owned by another user is refused");
                (void) unlink(path);
        } else
                tap_skip("a drop-in owned by another user: needs root to chown");

        g_clear_pointer(&err, g_free);
        ok(load(dir, &c, &missing, &err) == 0, "trusted again: it loads (%s)", err ? err : "");
        config_done(&c);

        /* clean up */
        g_autoptr(GDir) gd = g_dir_open(d, 0, NULL);
        for (const char *n; gd && (n = g_dir_read_name(gd));) {
                g_autofree char *p = g_build_filename(d, n, NULL);
                (void) unlink(p);
        }
        (void) rmdir(d);
        (void) unlink(main_conf);
        (void) unlink(target);
        (void) rmdir(dir);
}

/* Writes text into path (mode), owned by uid; the path. */
static void key_at(const char *path, const char *text, mode_t mode, uid_t uid) {
        if (!g_file_set_contents(path, text, -1, NULL) || chmod(path, mode) < 0 ||
            chown(path, uid, 0) < 0)
                tap_bail_errno(path);
}

/* config_key_file_memfd(): a volume's KeyFile= read into a sealed memfd, from a path whose
 * every directory is trusted, never through a symbolic link, never a file others may read or
 * write (as root, in a private mount namespace with /run the test's own: the last test). */
static void test_key_file(void) {
        const int all = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;
        g_autofree char *big = g_strnfill(1025, 'k');
        g_autofree char *why = NULL;
        char buf[64] = "";
        int fd;

        if (!test_private_run("KeyFile= read"))
                return;
        if (mkdir("/run/keys", 0755) < 0 || mkdir("/run/open", 0777) < 0 ||
            chmod("/run/open", 0777) < 0 || symlink("/run/keys", "/run/link") < 0 ||
            symlink("/run/keys/good", "/run/keys/lnk") < 0 || mkfifo("/run/keys/fifo", 0600) < 0)
                tap_bail_errno("/run/keys");
        key_at("/run/keys/good", "s3cret key\n", 0600, 0);
        fd = config_key_file_memfd("/run/keys/good", 1024, &why);
        ok(fd >= 0 && (fcntl(fd, F_GET_SEALS) & all) == all &&
                   pread(fd, buf, sizeof buf - 1, 0) == 11 && strcmp(buf, "s3cret key\n") == 0,
           "a key file of root's, mode 0600, in root's folders: its bytes in a memfd sealed four "
           "ways (%s)",
           why ? why : "");
        if (fd >= 0)
                close(fd);
        key_at("/run/keys/group", "k", 0640, 0);
        key_at("/run/keys/world", "k", 0604, 0);
        key_at("/run/keys/theirs", "k", 0600, 4242);
        key_at("/run/keys/empty", "", 0600, 0);
        key_at("/run/keys/big", big, 0600, 0);
        key_at("/run/open/k", "k", 0600, 0);
        static const struct {
                const char *path, *want;
                int err;
        } refused[] = {
                { "/run/keys/group", "open to its group (mode 0640)", EPERM },
                { "/run/keys/world", "open to others (mode 0604)", EPERM },
                { "/run/keys/theirs", "owned by uid 4242, not by root", EPERM },
                { "/run/keys/lnk", "a symbolic link, which nsd does not follow", ELOOP },
                { "/run/link/good", "'/run/link': not a directory (a symbolic link", ENOTDIR },
                { "/run/open/k", "/run/open: refused: writable by everyone", EPERM },
                { "/run/keys/fifo", "not a regular file", EPERM },
                { "/run/keys/empty", "0 bytes (1 to 1024)", EINVAL },
                { "/run/keys/big", "1025 bytes (1 to 1024)", EINVAL },
                { "/run/keys/missing", "cannot open: No such file", ENOENT },
                { "run/keys/good", "not an absolute path", EINVAL },
                { "/run/keys/", "not an absolute path of a file", EINVAL },
                { "/run/keys/../keys/good", "no empty, '.' or '..' component", EINVAL },
                { "/run//keys/good", "no empty, '.' or '..' component", EINVAL },
                { "/run/keys/.", "no empty, '.' or '..' component", EINVAL },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(refused); i++) {
                g_clear_pointer(&why, g_free);
                fd = config_key_file_memfd(refused[i].path, 1024, &why);
                ok(fd == -refused[i].err && why && g_str_has_prefix(why, "KeyFile ") &&
                           strstr(why, refused[i].want),
                   "KeyFile %s: refused (%s), naming '%s' (%d: %s)", refused[i].path,
                   g_strerror(refused[i].err), refused[i].want, fd, why ? why : "");
                if (fd >= 0)
                        close(fd);
        }
}

int main(void) {
        test_polydirs();
        test_shares();
        test_private_tmp();
        test_bad();
        test_volumes();
        test_volumes_bad();
        test_volumes_fuse();
        test_generation();
        test_needs_identity();
        test_parse_texts();
        test_files();
        test_key_file(); /* the last: it leaves the host's mount namespace */
        return tap_done();
}
