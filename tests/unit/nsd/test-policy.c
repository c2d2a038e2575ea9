/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-policy: nsd's "who gets a namespace" through the user database: conf.c's lookups
 * (through common/nss-util.h, so a 3000-member group line works) and policy.c's worker
 * threads and cache: Users= names resolved to uids (then no lookup at all), root's lookups
 * ahead of a flood of unprivileged callers' (a slow user database), the bound on those, the
 * cache forgetting its oldest answer when full; /etc/subuid and /etc/subgid read into who owns
 * a uid (policy_person()). Runs under nss_wrapper (meson sets LD_PRELOAD and NSS_WRAPPER_*; the
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

#include "answer-test.h"
#include "base/metrics.h"
#include "gate-test.h"
#include "nss-wrapper.h"
#include "policy/conf.h"
#include "policy/policy.h"
#include "server.h"
#include "tap.h"

static void write_files(const char *dir) {
        nss_wrapper_write(dir,
                          "root:x:0:0:root:/root:/bin/sh\n"
                          "alice:x:1001:1001::/home/alice:/bin/sh\n"
                          "bob:x:1002:1002::/home/bob:/bin/sh\n"
                          "carol:x:1003:2001::/home/carol:/bin/sh\n"
                          "daemon1:x:500:500::/:/bin/false\n",
                          "root:x:0:\nalice:x:1001:\nbob:x:1002:\ndaemon1:x:500:\n", 3000);
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

static gboolean on_tick(gpointer userdata) {
        return G_SOURCE_CONTINUE;
}

/* Run the loop until expr, at most 20 s (a tick wakes it: threads' progress does not) */
#define WAIT_FOR(expr)                                                       \
        ({                                                                   \
                int64_t _end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC; \
                guint _tick = g_timeout_add(5, on_tick, NULL);               \
                while (!(expr) && g_get_monotonic_time() < _end)             \
                        g_main_context_iteration(NULL, TRUE);                \
                g_source_remove(_tick);                                      \
                (bool) (expr);                                               \
        })

/* Free s once no lookup is in a thread: one still running at exit (the Users= names'
 * resolution starts on the loop's first turn) would be reported as a leak. */
static void server_free_settled(Server *s) {
        WAIT_FOR(policy_stats(s->policy)->running == 0 && policy_stats(s->policy)->queued == 0);
        server_free(s);
}

static void test_policy_threads(void) {
        /* one lookup thread: nss_wrapper's getgrouplist() walks the group file with one cursor
         * for the whole process, so two threads at once can each miss groups (bob not in big:
         * seen once in a package build); glibc's files module has no such cursor */
        Config c = parse("[Namespaces]\nUsers=alice\nGroups=big\n[Limits]\nMaxLookupThreads=1\n");
        Server *s = NULL;
        g_auto(Answer) a = { 0 }, b = { 0 };
        g_autofree char *why = NULL;

        server_new(&c, &(ServerSetup) { .user_fd = -1, .root_fd = -1 }, &s);
        is_int(policy_uid_managed(s->policy, 1002, 0, &why, on_answer, &a), -EINPROGRESS,
               "a lookup runs in a worker thread");
        is_int(policy_uid_managed(s->policy, 500, 0, &why, on_answer, &b), -EINPROGRESS,
               "and another");
        while (!a.calls || !b.calls)
                g_main_context_iteration(NULL, TRUE);
        ok(a.r == 1 && b.r == 0 && b.why, "their answers come back to the loop");
        is_int(policy_uid_managed(s->policy, 1002, 0, &why, on_answer, &a), 1,
               "the next question about bob is answered from the cache");
        is_int(policy_uid_managed(s->policy, 500, 0, &why, on_answer, &b), 0,
               "so is the one about daemon1, with its reason");
        is_int(policy_stats(s->policy)->cache_hits, 2, "two cache hits");
        g_clear_pointer(&why, g_free); /* daemon1's reason; root's comes next */
        is_int(policy_uid_managed(s->policy, 0, 0, &why, on_answer, &b), 0, "root: inline");
        server_free_settled(s);
}

typedef struct Who {
        bool done;
        int r;
        char *name, *home, *group;
        gid_t gid;
} Who;

static void on_identity(int r, const PolicyIdentity *id, const char *why, void *userdata) {
        Who *w = userdata;

        w->done = true;
        w->r = r;
        if (r == 0) {
                w->name = g_strdup(id->name);
                w->home = g_strdup(id->home);
                w->group = g_strdup(id->group);
                w->gid = id->gid;
        }
}

/* "Who is uid?" gives the names a namespace's setup needs (%u, %h, %g): the user's, the
 * home directory, the primary group's (NULL when the gid has no group entry). */
static void test_identity_names(void) {
        Config c = parse("[Namespaces]\n");
        Policy *p = policy_new(&c);
        Who alice = { 0 }, carol = { 0 }, nobody = { 0 };

        is_int(policy_uid_identity(p, 1001, 0, on_identity, &alice), -EINPROGRESS,
               "who is uid 1001: a lookup in a thread");
        (void) policy_uid_identity(p, 1003, 0, on_identity, &carol);
        (void) policy_uid_identity(p, 4242, 0, on_identity, &nobody);
        while (!alice.done || !carol.done || !nobody.done)
                g_main_context_iteration(NULL, TRUE);
        ok(alice.r == 0 && g_strcmp0(alice.name, "alice") == 0 &&
                   g_strcmp0(alice.home, "/home/alice") == 0 &&
                   g_strcmp0(alice.group, "alice") == 0 && alice.gid == 1001,
           "alice: her name, home and primary group's name (%s %s %s)", alice.name, alice.home,
           alice.group);
        ok(carol.r == 0 && g_strcmp0(carol.group, "big") == 0,
           "carol: a primary group of another name (%s)", carol.group);
        is_int(nobody.r, -ENOENT, "a uid without a passwd entry: ENOENT");
        policy_free(p);
        config_done(&c);
        g_free(alice.name), g_free(alice.home), g_free(alice.group);
        g_free(carol.name), g_free(carol.home), g_free(carol.group);
}

static void test_names_resolved(void) {
        Config c = parse("[Namespaces]\nUsers=alice nosuchuser\n");
        g_autofree char *why = NULL;
        Answer a = { 0 };
        Server *s = NULL;
        unsigned before;

        server_new(&c, &(ServerSetup) { .user_fd = -1, .root_fd = -1 }, &s);
        ok(WAIT_FOR(policy_stats(s->policy)->names_resolved > 0),
           "Users= names are resolved to uids in a thread at start");
        before = policy_stats(s->policy)->lookups;
        is_int(policy_uid_managed(s->policy, 1001, 4242, &why, on_answer, &a), 1,
               "alice (1001) is answered at once");
        is_int(policy_uid_managed(s->policy, 100000, 100000, &why, on_answer, &a), 0,
               "a uid no name is (a subuid) is answered at once too");
        ok(why && strstr(why, "not listed in Users="), "saying why (%s)", why);
        is_int(policy_stats(s->policy)->lookups, before, "neither asked the user database");
        server_free_settled(s);
}

/* ---- a slow user database: root's lookups ahead of a flood ------------------------------- */

static Gate slow;

/* uids from 100000 on hang until released (a subuid range flooding nsd); others answer at
 * once: 70001 managed (a member of Groups=, above MaxUid=), the rest not */
static int slow_lookup(const Config *c, uid_t uid, char **ret_why) {
        if (uid >= 100000)
                gate_pass(&slow);
        if (uid == 70001)
                return 1;
        *ret_why = g_strdup("not listed");
        return 0;
}

static void test_fair(void) {
        enum { FLOOD = 300 };
        Config c = parse("[Namespaces]\nGroups=big\n[Limits]\nMaxLookupThreads=2\n"
                         "LookupTimeoutSec=60\n");
        Answer *flood = g_new0(Answer, FLOOD);
        g_auto(Answer) root = { 0 }, promoted = { 0 };
        g_autofree char *why = NULL;
        int waiting = 0, refused = 0;
        Server *s = NULL;

        server_new(&c, &(ServerSetup) { .user_fd = -1, .root_fd = -1 }, &s);
        policy_set_lookup_fn(s->policy, slow_lookup);
        gate_set_open(&slow, false);
        for (int i = 0; i < FLOOD; i++) {
                uid_t uid = 100000 + (uid_t) i; /* each asks for itself */
                g_clear_pointer(&why, g_free);
                int r = policy_uid_managed(s->policy, uid, uid, &why, on_answer, &flood[i]);
                if (r == -EINPROGRESS)
                        waiting++;
                else if (r == -EAGAIN && why && strstr(why, "wait already"))
                        refused++;
        }
        ok(WAIT_FOR(gate_waiting(&slow) == 2),
           "%d uids of a subuid range ask; MaxLookupThreads=2 of their "
           "lookups hang in the user database",
           FLOOD);
        is_int(policy_stats(s->policy)->queued, 256, "256 more wait in line, at most");
        is_int(waiting, 2 + 256, "so many of them wait for an answer");
        is_int(refused, FLOOD - 2 - 256, "the rest are refused at once, saying why (%s)", why);

        is_int(policy_uid_managed(s->policy, 70001, 0, &why, on_answer, &root), -EINPROGRESS,
               "root asks about uid 70001 (a first login)");
        ok(WAIT_FOR(root.calls), "root's answer comes while the flood hangs");
        is_int(root.r, 1, "uid 70001 is managed");
        is_int(gate_waiting(&slow), 2, "the flood's lookups still hang");

        is_int(policy_uid_managed(s->policy, 100100, 0, &why, on_answer, &promoted), -EINPROGRESS,
               "root asks about a uid whose lookup waits in line");
        ok(WAIT_FOR(gate_waiting(&slow) == 3), "it leaves the line for a thread of root's at once");
        is_int(policy_stats(s->policy)->promoted, 1, "(counted as promoted)");

        gate_set_open(&slow, true);
        int answered = 0;
        ok(WAIT_FOR(policy_stats(s->policy)->running == 0 && policy_stats(s->policy)->queued == 0),
           "released: the line drains");
        for (int i = 0; i < FLOOD; i++) {
                answered += flood[i].calls && flood[i].r == 0;
                g_free(flood[i].why);
        }
        is_int(answered, waiting, "every waiting uid of the flood got its answer");
        ok(promoted.calls && promoted.r == 0, "and so did root, for the promoted one");
        g_free(flood);
        server_free_settled(s);
}

static Gate stuck;

static int stuck_lookup(const Config *c, uid_t uid, char **ret_why) {
        gate_pass(&stuck);
        return 1;
}

/* A managed-lookup past LookupTimeoutSec=: refused (OnLookupTimeout=refuse, the default) or
 * not managed for that request (unmanaged), counted by decision either way. */
static void test_timeout_decision(void) {
        static const char *const modes[] = { "", "OnLookupTimeout=refuse\n",
                                             "OnLookupTimeout=unmanaged\n" };

        for (size_t i = 0; i < G_N_ELEMENTS(modes); i++) {
                g_autofree char *text = g_strdup_printf("[Namespaces]\nGroups=big\n%s[Limits]\n"
                                                        "LookupTimeoutSec=0.05\n",
                                                        modes[i]);
                Config c = parse(text);
                bool unmanaged = i == 2;
                g_autofree char *why = NULL;
                const Metrics *m = metrics_get();
                g_auto(Answer) a = { 0 };
                Server *s = NULL;

                metrics_reset();
                server_new(&c, &(ServerSetup) { .user_fd = -1, .root_fd = -1 }, &s);
                policy_set_lookup_fn(s->policy, stuck_lookup);
                gate_set_open(&stuck, false);
                is_int(policy_uid_managed(s->policy, 100500, 100500, &why, on_answer, &a),
                       -EINPROGRESS, "%s: the user database hangs for uid 100500",
                       unmanaged ? "unmanaged" : "refuse");
                ok(WAIT_FOR(a.calls), "the request gets its answer at its deadline");
                if (unmanaged) {
                        is_int(a.r, 0, "OnLookupTimeout=unmanaged: not managed");
                        ok(a.why && strstr(a.why, "OnLookupTimeout=unmanaged") &&
                                   strstr(a.why, "LookupTimeoutSec="),
                           "saying why (%s)", a.why);
                } else {
                        is_int(a.r, -ETIMEDOUT, "%s: refused (ETIMEDOUT)",
                               i == 0 ? "the default" : "OnLookupTimeout=refuse");
                        ok(a.why && strstr(a.why, "LookupTimeoutSec="), "saying why (%s)", a.why);
                }
                is_int(m->lookup_timeouts[NSD_METRICS_LOOKUP_TIMEOUT_REFUSED], unmanaged ? 0 : 1,
                       "counted as refused: %d", unmanaged ? 0 : 1);
                is_int(m->lookup_timeouts[NSD_METRICS_LOOKUP_TIMEOUT_UNMANAGED], unmanaged ? 1 : 0,
                       "counted as unmanaged: %d", unmanaged ? 1 : 0);
                is_int(m->lookups[NSD_METRICS_LOOKUP_TIMEOUT], 1, "and as a lookup timeout");
                gate_set_open(&stuck, true);
                server_free_settled(s);
                config_done(&c);
        }
        metrics_reset();
}

static int quick_lookup(const Config *c, uid_t uid, char **ret_why) {
        *ret_why = g_strdup("not listed");
        return 0;
}

/* The cache forgets its oldest answer when full (8192), not everything. */
static void test_cache_evicts_oldest(void) {
        enum { N = 8192 + 1 };
        Config c = parse("[Namespaces]\nGroups=big\n[Limits]\nLookupCacheSec=3600\n");
        g_auto(Answer) a = { 0 };
        g_autofree char *why = NULL;
        unsigned pending = 0;
        Server *s = NULL;

        server_new(&c, &(ServerSetup) { .user_fd = -1, .root_fd = -1 }, &s);
        policy_set_lookup_fn(s->policy, quick_lookup);
        for (uid_t i = 0; i < N; i++) {
                pending += policy_uid_managed(s->policy, 200000 + i, 0, NULL, on_answer, &a) ==
                           -EINPROGRESS;
                /* the cache's order is the order answers came back in, and threads answer
                 * in any order: the first two alone (the oldest and the second oldest), the
                 * rest a few at a time */
                if (i < 2 || i % 64 == 63)
                        WAIT_FOR(policy_stats(s->policy)->running == 0);
        }
        ok(WAIT_FOR(policy_stats(s->policy)->running == 0), "%u uids looked up and cached",
           pending);
        is_int(policy_stats(s->policy)->cache_evictions, 1, "one answer made room for the last");
        is_int(policy_uid_managed(s->policy, 200000 + N - 1, 0, &why, on_answer, &a), 0,
               "the newest answer is cached");
        g_clear_pointer(&why, g_free);
        is_int(policy_uid_managed(s->policy, 200001, 0, &why, on_answer, &a), 0,
               "so is the second oldest (the cache was not flushed)");
        g_clear_pointer(&why, g_free);
        is_int(policy_uid_managed(s->policy, 200000, 0, &why, on_answer, &a), -EINPROGRESS,
               "the oldest was forgotten: asked again");
        WAIT_FOR(policy_stats(s->policy)->running == 0);
        server_free_settled(s);
}

/* /etc/subuid and /etc/subgid: who owns a uid of a user namespace */
static void test_subids(const char *dir) {
        g_autofree char *subuid = g_build_filename(dir, "subuid", NULL);
        g_autofree char *subgid = g_build_filename(dir, "subgid", NULL);
        Config c = parse("[Namespaces]\nUsers=@regular\n");
        Server *s = NULL;

        g_file_set_contents(subuid,
                            "# comment\n"
                            "alice:100000:65536\n"
                            "1002:165536:65536\n"
                            "nosuchowner:300000:10\n"
                            "bob:bad:line\n"
                            "\n",
                            -1, NULL);
        g_file_set_contents(subgid, "alice:400000:65536\n", -1, NULL);
        server_new(&c,
                   &(ServerSetup) { .user_fd = -1,
                                    .root_fd = -1,
                                    .subuid_path = subuid,
                                    .subgid_path = subgid },
                   &s);
        ok(WAIT_FOR(policy_stats(s->policy)->names_resolved > 0), "the subid files are read");
        is_int(policy_person(s->policy, 100000, (gid_t) -1), 1001,
               "uid 100000 is alice's (owner by name)");
        is_int(policy_person(s->policy, 165535, (gid_t) -1), 1001, "so is 165535, her last");
        is_int(policy_person(s->policy, 165536, (gid_t) -1), 1002,
               "165536 is bob's (owner by number)");
        is_int(policy_person(s->policy, 300001, (gid_t) -1), 300001,
               "an owner without an entry: the uid is its own person");
        is_int(policy_person(s->policy, 500000, 400005), 1001,
               "a uid outside every range with a gid of alice's subgid range: alice's");
        is_int(policy_person(s->policy, 1003, 400005), 1003,
               "but not a uid inside MinUid..MaxUid (its own)");
        is_int(policy_person(s->policy, 0, 400005), 0, "root is root");

        /* alice's subuids flood the user database: her line holds 64 at most */
        {
                Answer *flood = g_new0(Answer, 100);
                g_auto(Answer) other = { 0 };
                g_autofree char *why = NULL;
                int refused = 0;

                s->config.max_lookup_threads = 1;
                s->config.lookup_timeout_usec = 60 * G_USEC_PER_SEC;
                policy_reconfigure(s->policy);
                g_strfreev(s->config.groups);
                s->config.groups = g_strsplit("big", " ", -1); /* so they need lookups */
                policy_set_lookup_fn(s->policy, slow_lookup);
                gate_set_open(&slow, false);
                for (uid_t i = 0; i < 100; i++) {
                        g_clear_pointer(&why, g_free);
                        if (policy_uid_managed(s->policy, 100000 + i, 100000 + i, &why, on_answer,
                                               &flood[i]) == -EAGAIN &&
                            why && strstr(why, "of uid 1001 wait already"))
                                refused++;
                }
                is_int(policy_stats(s->policy)->queued, 64, "alice's subuids: 64 wait in her line");
                is_int(refused, 100 - 1 - 64, "the rest are refused, naming their owner");
                is_int(policy_uid_managed(s->policy, 70001, 70001, &why, on_answer, &other),
                       -EINPROGRESS, "another person's lookup still gets in line");
                gate_set_open(&slow, true);
                ok(WAIT_FOR(other.calls && policy_stats(s->policy)->queued == 0 &&
                            policy_stats(s->policy)->running == 0),
                   "released: answered, the lines drain");
                for (int i = 0; i < 100; i++)
                        g_free(flood[i].why);
                g_free(flood);
        }
        server_free_settled(s);
        unlink(subuid);
        unlink(subgid);
}

int main(int argc, char *argv[]) {
        if (!nss_wrapper_dir(argc, argv))
                return tap_done();
        write_files(argv[1]);
        test_subids(argv[1]);
        test_lookups();
        test_policy_threads();
        test_identity_names();
        test_names_resolved();
        test_fair();
        test_timeout_decision();
        test_cache_evicts_oldest();
        return tap_done();
}
