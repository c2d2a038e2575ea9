/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-users: the registry of users and sessions (nsd/domain/users.c) without a Server, on a
 * state directory of its own, an fd store without a service manager and no pin store: its
 * users, JOIN's answers (held, not yet, limits), sessions opened, found, closed and ended by
 * their leader's exit, sessions restored at the next start (waiting for their namespace,
 * then joining it; ended while nsd was not running; bad state files), a release that drops
 * sessions and state files, and "changed" said for each. The "namespaces" are the one the
 * test runs in (ns-here.h): nothing is created or pinned. TAP, no root.
 *
 *   test-users SCRATCH_DIR
 */
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "domain/session.h"
#include "domain/user.h"
#include "domain/users.h"
#include "loop-test.h"
#include "ns-here.h"
#include "tap.h"
#include "users-test.h"

static char *scratch, *proc;
static unsigned changed;

static void on_changed(void *userdata) {
        changed++;
}

static Users *registry_new(void) {
        Users *reg = users_test_registry((UsersSetup) { .proc_dir = proc });

        users_set_changed(reg, on_changed, NULL);
        users_start(reg);
        return reg;
}

static int pidfd_of(pid_t pid) {
        return (int) syscall(SYS_pidfd_open, pid, 0);
}

static bool state_file_exists(const char *name) {
        g_autofree char *path = g_build_filename(state_path(state), name, NULL);
        return g_file_test(path, G_FILE_TEST_EXISTS);
}

static void test_users(void) {
        Users *reg = registry_new();
        g_autoptr(GArray) uids = NULL;
        g_autofree char *why = NULL;
        bool created = true;
        User *u = NULL;

        users_add(reg, test_ns_here(3000, false), NULL, 0);
        users_add(reg, test_ns_here(1000, true), NULL, 0);
        users_add(reg, test_ns_here(2000, false), NULL, 0);
        is_int(users_count(reg), 3, "three users held");
        is_int(users_count_pinned(reg), 1, "one of them pinned");
        uids = users_uids(reg);
        ok(uids->len == 3 && g_array_index(uids, uid_t, 0) == 1000 &&
                   g_array_index(uids, uid_t, 2) == 3000,
           "their uids, sorted");
        ok(!users_get(reg, 4000) && users_get(reg, 2000)->uid == 2000, "found by uid");

        is_int(users_join(reg, 2000, true, &u, &created, &why), 0, "JOIN of a held uid");
        ok(u == users_get(reg, 2000) && !created, "... gets its user, not created");
        is_int(users_join(reg, 4000, false, &u, &created, &why), -ENOENT,
               "JOIN without creating, of a uid without a namespace: ENOENT");
        ok(why && strstr(why, "uid 4000 has no namespace yet"), "... saying so (%s)", why);
        g_clear_pointer(&why, g_free);
        users_set_max_namespaces(reg, 3);
        is_int(users_join(reg, 4000, true, &u, &created, &why), -EUSERS,
               "a fourth namespace past the effective MaxNamespaces=3: EUSERS");
        ok(why && strstr(why, "at most 3 namespaces") && strstr(why, "capped by what this host"),
           "... naming the limit and that the host capped it (%s)", why);
        ok(!users_is_pending(reg, 4000), "nothing is pending without a pin store or fd store");
        users_free(reg);
}

static void test_sessions(void) {
        Users *reg = registry_new();
        User *u = users_add(reg, test_ns_here(1000, false), NULL, 0);
        char name[FDSTORE_NAME_MAX];
        unsigned before = changed;
        Session *sess;
        int pidfd = pidfd_of(getpid());

        sess = users_open_session(reg, u, getpid(), "sshd", pidfd, 0);
        ok(changed == before + 1, "a session opened: changed");
        ok(users_sessions_of(reg, 1000) == 1 && users_count_sessions(reg) == 1 &&
                   u->sessions->len == 1 && sess->user == u,
           "counted, and attached to its user");
        snprintf(name, sizeof name, "session-%016" G_GINT64_MODIFIER "x", sess->id);
        ok(state_file_exists(name), "its state file is written (%s)", name);
        ok(users_find_session(reg, 1000, sess->id, 0) == sess &&
                   users_find_session(reg, 1000, 0, getpid()) == sess,
           "found by id and by leader pid");
        ok(!users_find_session(reg, 1001, sess->id, 0) &&
                   !users_find_session(reg, 1000, sess->id, getpid() + 1),
           "not for another uid, nor another leader");
        users_end_session(reg, sess);
        ok(users_sessions_of(reg, 1000) == 0 && u->sessions->len == 0 && changed == before + 2,
           "closed: gone, changed");
        ok(!state_file_exists(name), "its state file is removed");

        /* a leader that dies ends its session (Session.on_exit reports to the registry) */
        pid_t child = fork();
        if (child == 0) {
                pause();
                _exit(0);
        }
        pidfd = pidfd_of(child);
        users_open_session(reg, u, child, "login", pidfd, 0);
        kill(child, SIGKILL);
        ok(RUN_UNTIL(users_sessions_of(reg, 1000) == 0), "its leader killed, the session ends");
        waitpid(child, NULL, 0);
        users_free(reg);
}

static void test_restore(void) {
        Users *reg = registry_new();
        User *u = users_add(reg, test_ns_here(1000, false), NULL, 0);
        g_autoptr(GKeyFile) kf = g_key_file_new();
        Session *sess;
        pid_t dead;

        sess = users_open_session(reg, u, getpid(), "cron", pidfd_of(getpid()), 0);
        ok(sess != NULL, "a session of uid 1000 (its leader this test)");
        users_free(reg); /* as nsd stops: sessions forgotten, their files stay */

        /* a session whose leader died while nsd was not running, and a bad file */
        dead = fork();
        if (dead == 0)
                _exit(0);
        waitpid(dead, NULL, 0);
        g_key_file_set_uint64(kf, "Session", "Uid", 1000);
        g_key_file_set_int64(kf, "Session", "Pid", dead);
        g_key_file_set_uint64(kf, "Session", "StartTime", 12345);
        g_key_file_set_string(kf, "Session", "Service", "su");
        state_write(state, "session-00000000000000aa", kf);
        {
                g_autofree char *bad = g_build_filename(state_path(state), "session-zz", NULL);
                g_file_set_contents(bad, "x", 1, NULL);
        }

        reg = registry_new();
        is_int(users_count_sessions(reg), 1, "the next start restores the live session");
        is_int(users_sessions_of(reg, 1000), 1,
               "... waiting for its uid's namespace, and counted meanwhile");
        ok(!state_file_exists("session-00000000000000aa"),
           "a session whose leader is gone ended while nsd was not running: its file goes");
        ok(!state_file_exists("session-zz"), "a file that names no session goes too");
        u = users_add(reg, test_ns_here(1000, false), NULL, 0);
        ok(u->sessions->len == 1 && ((Session *) g_ptr_array_index(u->sessions, 0))->user == u,
           "its namespace held again, the waiting session joins it");
        users_end_session(reg, g_ptr_array_index(u->sessions, 0));
        users_free(reg);
}

static void test_release(void) {
        Users *reg = registry_new();
        User *u = users_add(reg, test_ns_here(1000, false), NULL, USER_ADD_CREATED);
        g_auto(GStrv) left = NULL;
        unsigned before;

        users_open_session(reg, u, getpid(), "sshd", pidfd_of(getpid()), 0);
        users_open_session(reg, u, getpid(), "sudo", pidfd_of(getpid()), 0);
        ok(state_file_exists("ns-1000"), "a created namespace has its state file");
        before = changed;
        is_int(users_release(reg, u, "test", false, NULL, NULL, NULL), 0,
               "a release with two live sessions");
        ok(!users_get(reg, 1000) && users_count_sessions(reg) == 0,
           "the user and its sessions are gone");
        left = state_list(state, "session-");
        ok(!state_file_exists("ns-1000") && g_strv_length(left) == 0, "and their state files");
        ok(changed > before, "changed");
        users_free(reg);
}

/* Recycled uids: the owner name is recorded, survives a restart, and a uid under another
 * name (or none) is refused its namespace, which stays (never released for it). */
static void test_owner(void) {
        Users *reg = registry_new();
        User *u = users_add(reg, test_ns_here(1000, false), NULL, USER_ADD_CREATED);
        g_autofree char *why = NULL;

        is_int(users_check_owner(reg, u, "bob", &why), 0, "an unknown owner is not checked");
        users_set_owner(reg, u, "alice");
        users_set_owner(reg, u, "bob");
        is_str(u->owner, "alice", "the owner is recorded once, when the namespace is made");
        is_int(users_check_owner(reg, u, "alice", &why), 0, "alice's JOIN: her namespace");
        ok(!u->orphaned, "not orphaned");
        users_free(reg);

        /* nsd starting again: the namespace adopted (before users_start() would drop the
         * state file of a namespace that nothing here keeps) */
        reg = users_test_registry((UsersSetup) { .proc_dir = proc });
        u = users_add(reg, test_ns_here(1000, false), NULL, 0);
        is_str(u->owner, "alice", "after a restart the owner comes from the state file (Owner=)");
        is_int(users_check_owner(reg, u, "mallory", &why), -EOWNERDEAD,
               "uid 1000 is now 'mallory': EOWNERDEAD");
        ok(why && strstr(why, "made for 'alice'") && strstr(why, "is now 'mallory'") &&
                   strstr(why, "not handed to another person"),
           "saying why (%s)", why);
        ok(u->orphaned && users_get(reg, 1000) == u, "marked orphaned, and kept (not released)");
        g_clear_pointer(&why, g_free);
        is_int(users_check_owner(reg, u, NULL, &why), -EOWNERDEAD, "no passwd entry: EOWNERDEAD");
        ok(why && strstr(why, "has no entry"), "saying why (%s)", why);
        is_int(users_release(reg, u, "test", false, NULL, NULL, NULL), 0, "root releases it");
        users_free(reg);
}

int main(int argc, char **argv) {
        g_autofree char *rm = NULL;

        if (argc != 2) {
                fprintf(stderr, "usage: test-users SCRATCH_DIR\n");
                return 2;
        }
        scratch = argv[1];
        rm = g_strdup_printf("rm -rf '%s'", scratch);
        if (system(rm) != 0 || g_mkdir_with_parents(scratch, 0700) < 0)
                abort();
        proc = g_build_filename(scratch, "proc", NULL);
        g_mkdir_with_parents(proc, 0755);
        config = loop_test_config();
        users_test_open(scratch);

        test_users();
        test_sessions();
        test_restore();
        test_release();
        test_owner();

        users_test_close();
        g_free(proc);
        if (system(rm) != 0)
                abort();
        return tap_done();
}
