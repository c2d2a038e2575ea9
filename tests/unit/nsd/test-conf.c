/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-conf: nsd.conf parsing (nsd/policy/conf.c) and the "who gets a namespace" policy.
 * TAP; no root, no files written. Argument 1: the shipped nsd/nsd.conf, which must parse
 * to exactly the defaults.
 */
#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/conf-value.h"
#include "policy/conf.h"
#include "tap.h"

static int parse(const char *text, Config *c, char **err) {
        return config_parse_text(text, strlen(text), "test.conf", c, err);
}

static bool same_as_defaults(const Config *c) {
        Config d;
        bool same;

        config_init_defaults(&d);
        same = g_strv_equal((const char *const *) c->users, (const char *const *) d.users) &&
               g_strv_length(c->groups) == 0 && c->min_uid == d.min_uid &&
               c->max_uid == d.max_uid && c->propagation_private == d.propagation_private &&
               c->private_tmp == d.private_tmp && c->linger_sec == d.linger_sec &&
               c->private_mode == d.private_mode && c->born_private == d.born_private &&
               c->lookup_timeout_unmanaged == d.lookup_timeout_unmanaged &&
               c->max_namespaces == d.max_namespaces &&
               c->max_sessions_per_user == d.max_sessions_per_user &&
               c->max_connections_per_user == d.max_connections_per_user &&
               c->max_connections == d.max_connections &&
               c->max_root_connections == d.max_root_connections &&
               c->reserved_connections == d.reserved_connections &&
               c->max_setuid_connections_per_user == d.max_setuid_connections_per_user &&
               c->setuid_request_timeout_usec == d.setuid_request_timeout_usec &&
               c->request_rate_per_user == d.request_rate_per_user &&
               c->request_burst_per_user == d.request_burst_per_user &&
               c->max_queued_replies == d.max_queued_replies &&
               c->max_lookup_threads == d.max_lookup_threads &&
               c->max_path_walks == d.max_path_walks &&
               c->idle_timeout_usec == d.idle_timeout_usec &&
               c->reply_timeout_usec == d.reply_timeout_usec &&
               c->lookup_timeout_usec == d.lookup_timeout_usec &&
               c->lookup_cache_usec == d.lookup_cache_usec &&
               c->path_walk_timeout_usec == d.path_walk_timeout_usec && c->setup.n_polydirs == 0 &&
               c->setup.n_binds == 0 && !c->setup.init_script &&
               c->setup.timeout_usec == d.setup.timeout_usec && !c->setup.on_failure_continue;
        config_done(&d);
        return same;
}

static void test_defaults(const char *shipped) {
        Config c = { 0 };
        g_autofree char *err = NULL;
        bool missing = false;

        ok(parse("", &c, &err) == 0 && same_as_defaults(&c), "empty text gives the defaults");
        config_done(&c);
        ok(parse("# only a comment\n\n   \n[Namespaces]\n[Limits]\n", &c, &err) == 0 &&
                   same_as_defaults(&c),
           "comments, blank lines and empty groups give the defaults");
        config_done(&c);
        ok(c.users == NULL && c.groups == NULL, "config_done() leaves the struct empty");

        config_init_defaults(&c);
        ok(c.min_uid == 1000 && c.max_uid == 60000 && c.linger_sec == CONFIG_LINGER_FOREVER &&
                   !c.propagation_private && !c.private_tmp && c.max_namespaces == 10000 &&
                   c.max_sessions_per_user == 64 && c.max_connections_per_user == 8 &&
                   c.max_connections == 512 && g_strv_length(c.users) == 1 &&
                   strcmp(c.users[0], "@regular") == 0,
           "defaults: @regular, MinUid=1000, Linger=forever, slave, limits 10000/64/8/512");
        ok(!c.private_mode && c.born_private, "defaults: [Private] Enable=no, BornPrivate=yes");
        config_done(&c);

        if (shipped) {
                /* its text: who owns the source tree (config_load()'s check) is not the
                 * point here, test-setup-conf covers that */
                g_autofree char *text = NULL;
                gsize len = 0;
                g_clear_pointer(&err, g_free);
                int r = g_file_get_contents(shipped, &text, &len, NULL)
                                ? config_parse_text(text, len, shipped, &c, &err)
                                : -EIO;
                ok(r == 0 && same_as_defaults(&c),
                   "the shipped nsd.conf parses to exactly the defaults%s%s", err ? ": " : "",
                   err ? err : "");
                config_done(&c);
        }

        g_clear_pointer(&err, g_free);
        ok(config_load("/nonexistent-nsd-test-dir/nsd.conf", &c, &missing, &err) == 0 && missing &&
                   same_as_defaults(&c),
           "a missing file gives the defaults and says so");
        config_done(&c);
}

static void test_valid(void) {
        const char *text = "# full\n"
                           "[Namespaces]\n"
                           "Users = @regular alice, bob;2001\n"
                           "Groups=fuse 1500\n"
                           "MinUid=2000\n"
                           "MaxUid=3000\n"
                           "Propagation=private\n"
                           "PrivateTmp=yes\n"
                           "Linger=30\n"
                           "\n"
                           "[Limits]\n"
                           "MaxNamespaces=5\n"
                           "MaxSessionsPerUser=6\n"
                           "MaxConnectionsPerUser=7\n"
                           "MaxConnections=8\n"
                           "MaxRootConnections=9\n"
                           "ReservedConnections=2\n"
                           "MaxSetuidConnectionsPerUser=3\n"
                           "SetuidRequestTimeoutSec=0.5\n"
                           "RequestRatePerUser=10\n"
                           "RequestBurstPerUser=11\n"
                           "MaxQueuedReplies=12\n"
                           "MaxLookupThreads=13\n"
                           "MaxPathWalks=14\n"
                           "IdleTimeoutSec=1.5\n"
                           "ReplyTimeoutSec=0.25\n"
                           "LookupTimeoutSec=3\n"
                           "LookupCacheSec=0\n"
                           "PathWalkTimeoutSec=0.001\n";
        const char *users[] = { "@regular", "alice", "bob", "2001", NULL };
        const char *groups[] = { "fuse", "1500", NULL };
        Config c = { 0 };
        g_autofree char *err = NULL;
        int r = parse(text, &c, &err);

        ok(r == 0, "a config setting every key parses%s%s", err ? ": " : "", err ? err : "");
        if (r < 0)
                return;
        ok(g_strv_equal((const char *const *) c.users, users),
           "Users= splits on spaces, commas and semicolons");
        ok(g_strv_equal((const char *const *) c.groups, groups), "Groups= names and gids");
        ok(c.min_uid == 2000 && c.max_uid == 3000, "MinUid=, MaxUid=");
        ok(c.propagation_private && c.private_tmp, "Propagation=private, PrivateTmp=yes");
        ok(c.linger_sec == 30, "Linger=30");
        ok(c.max_namespaces == 5 && c.max_sessions_per_user == 6 &&
                   c.max_connections_per_user == 7 && c.max_connections == 8,
           "the four first limits");
        ok(c.max_root_connections == 9 && c.request_rate_per_user == 10 &&
                   c.request_burst_per_user == 11 && c.max_queued_replies == 12 &&
                   c.max_lookup_threads == 13 && c.max_path_walks == 14,
           "MaxRootConnections=, the rate limit, the queue, threads, path walks");
        ok(c.reserved_connections == 2 && config_reserved_connections(&c) == 2 &&
                   c.max_setuid_connections_per_user == 3 &&
                   c.setuid_request_timeout_usec == 500000,
           "ReservedConnections=, MaxSetuidConnectionsPerUser=, SetuidRequestTimeoutSec=");
        ok(c.idle_timeout_usec == 1500000 && c.reply_timeout_usec == 250000 &&
                   c.lookup_timeout_usec == 3000000 && c.lookup_cache_usec == 0 &&
                   c.path_walk_timeout_usec == 1000,
           "times in seconds with decimals: 1.5, 0.25, 3, 0, 0.001");
        config_done(&c);

        ok(parse("[Namespaces]\nLinger=0\n", &c, &err) == 0 && c.linger_sec == 0, "Linger=0");
        config_done(&c);
        ok(parse("[Namespaces]\nLinger=forever\n", &c, &err) == 0 &&
                   c.linger_sec == CONFIG_LINGER_FOREVER,
           "Linger=forever");
        config_done(&c);
        ok(parse("[Namespaces]\nUsers=\n", &c, &err) == 0 && g_strv_length(c.users) == 0,
           "an empty Users= names nobody");
        config_done(&c);
        ok(parse("[Namespaces]\nOnLookupTimeout=unmanaged\n", &c, &err) == 0 &&
                   c.lookup_timeout_unmanaged,
           "OnLookupTimeout=unmanaged");
        config_done(&c);
        ok(parse("[Namespaces]\nOnLookupTimeout=refuse\n", &c, &err) == 0 &&
                   !c.lookup_timeout_unmanaged,
           "OnLookupTimeout=refuse (the default)");
        config_done(&c);
        ok(parse("[Namespaces]\nPrivateTmp=off\nPropagation=slave\n", &c, &err) == 0 &&
                   !c.private_tmp && !c.propagation_private,
           "PrivateTmp=off, Propagation=slave");
        config_done(&c);
        ok(parse("[Private]\nEnable=yes\nBornPrivate=no\n", &c, &err) == 0 && c.private_mode &&
                   !c.born_private,
           "[Private] Enable=yes, BornPrivate=no");
        config_done(&c);
        ok(parse("[Namespaces]\r\nMinUid=1001\r\n", &c, &err) == 0 && c.min_uid == 1001,
           "CRLF line ends");
        config_done(&c);

        /* not NUL-terminated: the length is what counts */
        const char buf[] = { '[', 'L', 'i', 'm', 'i', 't', 's', ']', '\n', 'M', 'a', 'x', 'N',
                             'a', 'm', 'e', 's', 'p', 'a', 'c', 'e', 's',  '=', '4', '2', 'X' };
        ok(config_parse_text(buf, sizeof buf - 1, "t", &c, &err) == 0 && c.max_namespaces == 42,
           "text that is not NUL-terminated is read up to its length");
        config_done(&c);
}

/* A bad config: must fail, and the message must name "test.conf:LINE:" and the key. */
static void bad(const char *text, unsigned line, const char *key, const char *what) {
        Config c = { 0 };
        g_autofree char *err = NULL;
        g_autofree char *where = g_strdup_printf("test.conf:%u:", line);
        int r = config_parse_text(text, strlen(text), "test.conf", &c, &err);

        ok(r < 0 && err && g_str_has_prefix(err, where) && (!key || strstr(err, key)),
           "%s is refused with '%s' and '%s' (got: %s)", what, where, key ? key : "",
           err ? err : "(accepted)");
        if (r == 0)
                config_done(&c);
}

static void test_bad_values(void) {
        static const struct {
                const char *group, *key, *value;
        } cases[] = {
                { "Namespaces", "Users", "al ice!" },
                { "Namespaces", "Users", "@wheel" },
                { "Namespaces", "Users", "12x" },
                { "Namespaces", "Groups", "-fuse" },
                { "Namespaces", "Groups", "4294967296" },
                { "Namespaces", "MinUid", "abc" },
                { "Namespaces", "MinUid", "0" },
                { "Namespaces", "MinUid", "-5" },
                { "Namespaces", "MinUid", "4294967295" },
                { "Namespaces", "MaxUid", "" },
                { "Namespaces", "MaxUid", "1e3" },
                { "Namespaces", "Propagation", "shared" },
                { "Namespaces", "Propagation", "" },
                { "Namespaces", "PrivateTmp", "maybe" },
                { "Private", "BornPrivate", "sometimes" },
                { "Namespaces", "Linger", "never" },
                { "Namespaces", "Linger", "-1" },
                { "Namespaces", "Linger", "10s" },
                { "Namespaces", "Linger", "99999999999" },
                { "Limits", "MaxNamespaces", "0" },
                { "Limits", "MaxNamespaces", "lots" },
                { "Limits", "MaxSessionsPerUser", "0" },
                { "Limits", "MaxSessionsPerUser", "+3" },
                { "Limits", "MaxConnectionsPerUser", "1000001" },
                { "Limits", "MaxConnections", " " },
                { "Limits", "MaxConnections", "18446744073709551617" },
                { "Limits", "MaxRootConnections", "0" },
                { "Limits", "RequestRatePerUser", "0" },
                { "Limits", "MaxQueuedReplies", "1025" },
                { "Limits", "MaxLookupThreads", "65" },
                { "Limits", "MaxPathWalks", "0" },
                { "Limits", "IdleTimeoutSec", "0" },
                { "Limits", "IdleTimeoutSec", "5s" },
                { "Limits", "IdleTimeoutSec", "1." },
                { "Limits", "ReplyTimeoutSec", ".5" },
                { "Limits", "ReplyTimeoutSec", "0.0000001" },
                { "Limits", "LookupTimeoutSec", "3601" },
                { "Limits", "LookupCacheSec", "-1" },
                { "Limits", "PathWalkTimeoutSec", "0.0001" },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *text = g_strdup_printf("# line 1\n\n[%s]\n# line 4\n%s=%s\n",
                                                        cases[i].group, cases[i].key,
                                                        cases[i].value);
                g_autofree char *what = g_strdup_printf("%s=%s", cases[i].key, cases[i].value);
                bad(text, 5, cases[i].key, what);
        }
        /* the line is the key's own, also when other keys come first */
        bad("[Namespaces]\nMinUid=1000\nPrivateTmp=no\n\n[Limits]\nMaxConnections=1\n"
            "MaxNamespaces=x\n",
            7, "MaxNamespaces", "a bad value on line 7 after good ones");
        bad("[Namespaces]\nMinUid=5000\nMaxUid=4000\n", 2, "MinUid", "MinUid= larger than MaxUid=");
        bad("[Limits]\nMaxConnections=4\nMaxConnectionsPerUser=5\n", 3, "MaxConnectionsPerUser",
            "MaxConnectionsPerUser= larger than MaxConnections=");
        bad("[Limits]\nMaxConnections=8\nReservedConnections=8\n", 3, "ReservedConnections",
            "ReservedConnections= as large as MaxConnections=");
}

static void test_bad_syntax(void) {
        bad("[Namespaces]\nOnLookupTimeout=allow\n", 2, "OnLookupTimeout",
            "neither refuse nor unmanaged");
        bad("[Namespaces]\nUser=alice\n", 2, "User", "an unknown key (typo of Users=)");
        bad("[Namespaces]\nMaxNamespaces=3\n", 2, "MaxNamespaces", "a key in the wrong group");
        bad("[Namespace]\nUsers=alice\n", 1, "Namespace", "an unknown group");
        bad("\n[Limits]\n[Other]\n", 3, "Other", "an unknown group after a known one");
        bad("MinUid=1000\n", 1, "MinUid", "a key before any group");
        bad("[Namespaces]\nMinUid 1000\n", 2, "MinUid 1000", "a line without '='");
        bad("[Namespaces]\n=1000\n", 2, NULL, "an assignment without a key");
        bad("[Namespaces\n", 1, "Namespaces", "an unclosed group");
        bad("[Namespaces] x\n", 1, "Namespaces", "text after a group");
        bad("[Namespaces]\nMinUid=1000\n\nMinUid=2000\n", 4, "MinUid", "a key set twice");
        bad("[Namespaces]\nUsers[de]=alice\n", 2, "Users[de]", "a localised key");
        bad("[Namespaces]\nUsers=\xff\xfe\n", 2, NULL, "invalid UTF-8");

        const char with_nul[] = "[Namespaces]\nMinUid=1\0000\n";
        Config c = { 0 };
        g_autofree char *err = NULL;
        int r = config_parse_text(with_nul, sizeof with_nul - 1, "test.conf", &c, &err);
        ok(r < 0 && err && g_str_has_prefix(err, "test.conf:2:"),
           "a NUL byte is refused at its line (got: %s)", err ? err : "(accepted)");
        if (r == 0)
                config_done(&c);
}

/* GKeyFile returns what it could read of a value with a bad escape, and an error: nsd used
 * to take 'Linger=600\' as Linger=600 (found by fuzz-conf, tests/fuzz/regressions/conf/). */
static void test_bad_escapes(void) {
        /* each text must fail at test.conf:2 with a message holding says[] */
        static const struct {
                const char *text, *what;
                const char *says[2]; /* NULL where fewer */
        } bad[] = {
                { "[Namespaces]\nLinger=600\\\n",
                  "Linger=600\\ (a trailing backslash)",
                  { "[Namespaces] Linger=600\\:", "ends in a backslash" } },
                { "[Namespaces]\nLinger=600\\\r\n",
                  "Linger=600\\ before CR LF",
                  { "[Namespaces] Linger=", "ends in a backslash" } },
                { "[Namespaces]\nUsers=alice\\\n[Limits]\nMaxConnections=5\\\n",
                  "Users=alice\\ (the first of two)",
                  { "[Namespaces] Users=alice\\:", "ends in a backslash" } },
                { "[Namespaces]\r\nUsers=\r\rs0A\\\n",
                  "Users= with CRs and a trailing backslash",
                  { "[Namespaces] Users=", "ends in a backslash" } },
                { "[Limits]\nMaxConnections=5\\\n",
                  "MaxConnections=5\\",
                  { "[Limits] MaxConnections=5\\:", "ends in a backslash" } },
                { "[Private]\nEnable=yes\\\n",
                  "Enable=yes\\",
                  { "[Private] Enable=yes\\:", "ends in a backslash" } },
                { "[Limits]\nMaxNamespaces=1\\q0\n",
                  "MaxNamespaces=1\\q0 (an unknown escape)",
                  { "[Limits] MaxNamespaces=1\\q0:", "'\\q' is not an escape" } },
                { "[Namespaces]\nUsers=alice\\;bob\n",
                  "Users=alice\\;bob (\\; is for lists)",
                  { "[Namespaces] Users=alice\\;bob:", "'\\;' is not an escape" } },
                { "[Namespaces]\nUsers=alice\\\xc3\xa9\n",
                  "Users=alice\\é (a UTF-8 escape)",
                  { "'\\\xc3\xa9' is not an escape" } },
                { "[Namespaces]\nUsers=alice\\sbob\\\\\\\n",
                  "a bad escape after good ones",
                  { "ends in a backslash" } },
        };
        Config c;
        g_autofree char *err = NULL;

        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_autofree char *why = NULL;
                int r = parse(bad[i].text, &c, &why);
                bool has_all = r < 0 && why && g_str_has_prefix(why, "test.conf:2:");

                for (size_t j = 0; j < G_N_ELEMENTS(bad[i].says) && bad[i].says[j]; j++)
                        has_all = has_all && strstr(why, bad[i].says[j]);
                ok(has_all,
                   "%s is refused at 'test.conf:2:', naming the group, key and escape (got: %s)",
                   bad[i].what, why ? why : "(accepted)");
                if (r == 0)
                        config_done(&c);
        }

        ok(parse("[Namespaces]\nUsers=alice\\sbob\\t1234\n", &c, &err) == 0 &&
                   g_strv_length(c.users) == 3 && strcmp(c.users[1], "bob") == 0,
           "GKeyFile's own escapes still work: Users=alice\\sbob\\t1234 (%s)", err ? err : "");
        config_done(&c);
        ok(parse("[Namespaces]\n# a comment\\\nLinger=600\n", &c, &err) == 0 && c.linger_sec == 600,
           "a backslash at the end of a comment is no value's (%s)", err ? err : "");
        config_done(&c);
}

static void test_policy(void) {
        Config c;
        g_autofree char *why = NULL;

        config_init_defaults(&c);
        ok(config_uid_managed(&c, 1000, NULL), "default policy: uid 1000 gets a namespace");
        ok(config_uid_managed(&c, 60000, NULL), "default policy: uid 60000 gets one");
        bool managed = config_uid_managed(&c, 999, &why);
        ok(!managed && why && strstr(why, "MinUid=1000"),
           "default policy: uid 999 does not, and the reason names MinUid (%s)", why ? why : "");
        g_clear_pointer(&why, g_free);
        managed = config_uid_managed(&c, 0, &why);
        ok(!managed && why, "root never gets one (%s)", why ? why : "");
        g_clear_pointer(&why, g_free);
        ok(!config_uid_managed(&c, 65534, NULL), "nobody (65534) never gets one");
        ok(!config_uid_managed(&c, 60001, NULL), "uid above MaxUid does not");
        config_done(&c);

        ok(parse("[Namespaces]\nUsers=1234 0 65534\n", &c, NULL) == 0, "Users=1234 0 65534");
        ok(config_uid_managed(&c, 1234, NULL) && !config_uid_managed(&c, 1000, NULL),
           "only the listed uid gets one when @regular is not listed");
        ok(!config_uid_managed(&c, 0, NULL) && !config_uid_managed(&c, 65534, NULL),
           "listing root or nobody does not give them one");
        config_done(&c);

        managed = parse("[Namespaces]\nUsers=nsd-test-no-such-user\n", &c, NULL) == 0 &&
                  config_uid_managed(&c, 1000, &why);
        ok(!managed && c.users && why && strstr(why, "Users="),
           "an unknown user name matches nobody (%s)", why ? why : "");
        config_done(&c);
}

/* config_parse_word(): the one matcher behind every "one of N words" key of both parsers */
static void test_words(void) {
        static const char *const words[] = { "refuse", NULL, "per-user" };

        ok(config_parse_word("refuse", words, G_N_ELEMENTS(words)) == 0 &&
                   config_parse_word("per-user", words, G_N_ELEMENTS(words)) == 2,
           "a word gives its index, past a hole");
        ok(config_parse_word("refus", words, G_N_ELEMENTS(words)) == -EINVAL &&
                   config_parse_word("refuses", words, G_N_ELEMENTS(words)) == -EINVAL &&
                   config_parse_word("Refuse", words, G_N_ELEMENTS(words)) == -EINVAL &&
                   config_parse_word("", words, G_N_ELEMENTS(words)) == -EINVAL,
           "a prefix, a longer word, another case and the empty value are not words");
        ok(config_parse_word("per-user", words, 2) == -EINVAL, "only the first n entries count");
}

int main(int argc, char *argv[]) {
        test_defaults(argc > 1 ? argv[1] : NULL);
        test_valid();
        test_bad_values();
        test_bad_syntax();
        test_bad_escapes();
        test_policy();
        test_words();
        return tap_done();
}
