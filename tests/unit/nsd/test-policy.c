/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-policy: nsd's "who gets a namespace" through the user database: conf.c's lookups
 * (through common/nss-util.h, so a 3000-member group line works) and policy.c's worker
 * threads and cache. Runs under nss_wrapper (meson sets LD_PRELOAD and NSS_WRAPPER_*; the
 * files are written here into the temp folder of argument 1): the host's accounts play no
 * part.
 */
#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nss-wrapper.h"
#include "policy/conf.h"
#include "policy/policy.h"
#include "server.h"
#include "tap.h"

static void write_files(const char *dir) {
        char path[4096];
        FILE *f;

        snprintf(path, sizeof path, "%s/passwd", dir);
        f = fopen(path, "w");
        fprintf(f, "root:x:0:0:root:/root:/bin/sh\n"
                   "alice:x:1001:1001::/home/alice:/bin/sh\n"
                   "bob:x:1002:1002::/home/bob:/bin/sh\n"
                   "carol:x:1003:2001::/home/carol:/bin/sh\n"
                   "daemon1:x:500:500::/:/bin/false\n");
        fclose(f);
        snprintf(path, sizeof path, "%s/group", dir);
        f = fopen(path, "w");
        fprintf(f, "root:x:0:\nalice:x:1001:\nbob:x:1002:\ndaemon1:x:500:\nbig:x:2001:");
        for (int i = 0; i < 3000; i++) /* ~30 KiB: more than any first buffer */
                fprintf(f, "%smember%04d", i ? "," : "", i);
        fprintf(f, ",bob\n");
        fclose(f);
}

static Config parse(const char *text) {
        Config c = { 0 };
        g_autofree char *err = NULL;

        if (config_parse_text(text, strlen(text), "test.conf", &c, &err) < 0) {
                fprintf(stderr, "%s\n", err);
                abort();
        }
        return c;
}

static int lookup(const Config *c, uid_t uid, char **why) {
        g_clear_pointer(why, g_free);
        return config_uid_managed_lookup(c, uid, why);
}

static void test_lookups(void) {
        g_autofree char *why = NULL;
        Config c = parse("[Namespaces]\nUsers=alice\nGroups=big\n");

        is_int(config_uid_managed_inline(&c, 1002, &why), CONFIG_NEEDS_LOOKUP,
               "names in the policy: only the user database can tell");
        is_int(lookup(&c, 1001, &why), 1, "Users=alice: alice (1001) is managed");
        is_int(lookup(&c, 1002, &why), 1,
               "Groups=big: bob, the last of 3001 members of a 30 KiB group line, is managed");
        is_int(lookup(&c, 1003, &why), 1, "carol, whose primary group is big, is managed");
        is_int(lookup(&c, 500, &why), 0, "daemon1 is not");
        ok(why && strstr(why, "not listed in Users= or Groups="), "saying why (%s)", why);
        is_int(lookup(&c, 4242, &why), 0, "a uid without an entry is not managed");
        ok(why && strstr(why, "no entry in the user database"), "saying why (%s)", why);
        is_int(lookup(&c, 0, &why), 0, "root never is");
        config_done(&c);

        c = parse("[Namespaces]\nUsers=@regular\nMinUid=1001\nMaxUid=1001\nGroups=2001\n");
        is_int(config_uid_managed_inline(&c, 1001, &why), 1,
               "@regular is answered without the user database");
        is_int(lookup(&c, 1002, &why), 1, "a numeric gid in Groups= works too");
        config_done(&c);

        c = parse("[Namespaces]\nUsers=@regular 1500\n");
        is_int(config_uid_managed_inline(&c, 1500, &why), 1, "a numeric uid: inline");
        is_int(config_uid_managed_inline(&c, 999, &why), 0,
               "numbers and @regular only: 'no' is inline too");
        config_done(&c);
}

typedef struct Answer {
        bool done;
        int managed;
        char *why;
} Answer;

static void on_answer(int managed, const char *why, void *userdata) {
        Answer *a = userdata;
        a->done = true;
        a->managed = managed;
        a->why = g_strdup(why);
}

static void test_policy_threads(void) {
        Config c = parse("[Namespaces]\nUsers=alice\nGroups=big\n");
        Server *s = NULL;
        Answer a = { 0 }, b = { 0 };
        g_autofree char *why = NULL;

        server_new(&c, &(ServerSetup) { .user_fd = -1, .root_fd = -1 }, &s);
        is_int(policy_uid_managed(s->policy, 1002, &why, on_answer, &a), -EINPROGRESS,
               "a lookup runs in a worker thread");
        is_int(policy_uid_managed(s->policy, 500, &why, on_answer, &b), -EINPROGRESS,
               "and another");
        while (!a.done || !b.done)
                g_main_context_iteration(NULL, TRUE);
        ok(a.managed == 1 && b.managed == 0 && b.why, "their answers come back to the loop");
        is_int(policy_uid_managed(s->policy, 1002, &why, on_answer, &a), 1,
               "the next question about bob is answered from the cache");
        is_int(policy_uid_managed(s->policy, 500, &why, on_answer, &b), 0,
               "so is the one about daemon1, with its reason");
        is_int(policy_stats(s->policy)->cache_hits, 2, "two cache hits");
        g_clear_pointer(&why, g_free); /* daemon1's reason; root's comes next */
        is_int(policy_uid_managed(s->policy, 0, &why, on_answer, &b), 0, "root: inline");
        g_free(a.why);
        g_free(b.why);
        server_free(s);
}

int main(int argc, char *argv[]) {
        if (!nss_wrapper_dir(argc, argv))
                return tap_done();
        write_files(argv[1]);
        test_lookups();
        test_policy_threads();
        return tap_done();
}
