/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-users-setup: a new namespace's setup through the registry (nsd/domain/users.c's
 * users_join_start(), issue 22), without a Server: the namespace is made, set up by the real
 * engine in a helper child, and only then added; every JOIN for that uid meanwhile waits for
 * the same setup; a failed setup adds nothing, and the same refusal comes back for a while
 * without running the setup again; OnFailure=continue; the setup generation in the state file
 * and a namespace made with an older setup marked stale; nsd stopping in the middle.
 *
 * The namespaces are real (the helper unshares a mount namespace): the test runs as root, in
 * a private mount namespace of its own with a tmpfs for its files, and no pin store (nothing
 * is pinned). Without root it skips, saying so.
 *
 *   test-users-setup
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "answer-test.h"
#include "base/child.h"
#include "domain/user.h"
#include "domain/users.h"
#include "domain/volume-release.h"
#include "loop-test.h"
#include "store/userns.h"
#include "tap.h"
#include "users-test.h"

static char top[] = "/tmp/nsd-test-users-setup.XXXXXX";
static Children *children;

/* What a JOIN hands back besides its status: the user, whether it was made now, why not. */
typedef struct Join {
        User *u;
        bool created;
        char *why;
} Join;

static void join_clear(Join *j) {
        g_clear_pointer(&j->why, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Join, join_clear)

/* A JOIN of uid through the registry (who: the user database's answer, if asked), into j; d
 * is told when a setup it waits for is done. */
static int join_start(Users *reg, uid_t uid, const SetupUser *who, Answer *d, Join *j) {
        join_clear(j);
        return users_join_start(reg, uid, true, who, on_answer, d, &j->u, &j->created, &j->why);
}

static void set_config(const char *text) {
        g_auto(GStrv) parts = g_strsplit(text, "@T@", -1);
        g_autofree char *t = g_strjoinv(top, parts), *err = NULL;
        Config c = { 0 };

        if (config_parse_text(t, strlen(t), "test.conf", &c, &err) < 0) {
                printf("Bail out! config: %s\n", err);
                exit(1);
        }
        config_move(&config, &c); /* the registry keeps the pointer: refilled in place */
}

static Users *registry_new(Children *set) {
        Users *reg = users_test_registry((UsersSetup) { .children = set });

        users_start(reg);
        return reg;
}

/* Is there a tmpfs on path (under top) in u's namespace? */
static bool tmpfs_in(const User *u, const char *rel) {
        g_autofree char *text = NULL, *want = g_strdup_printf(" %s/%s ", top, rel);

        if (userns_read_mountinfo(u->ns, 1 << 20, &text, NULL) < 0)
                return false;
        for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"))
                if (strstr(l, want) && strstr(l, " - tmpfs "))
                        return true;
        return false;
}

/* Is anything mounted on path (under top) in u's namespace? */
static bool mount_in(const User *u, const char *rel) {
        g_autofree char *text = NULL, *want = g_strdup_printf(" %s/%s ", top, rel);

        return userns_read_mountinfo(u->ns, 1 << 20, &text, NULL) >= 0 && strstr(text, want);
}

static char *state_generation(uid_t uid) {
        g_autofree char *path = g_strdup_printf("%s/ns-%u", state_path(state), (unsigned) uid);
        g_autoptr(GKeyFile) kf = g_key_file_new();

        if (!g_key_file_load_from_file(kf, path, G_KEY_FILE_NONE, NULL))
                return NULL;
        return g_key_file_get_string(kf, "Namespace", "SetupGeneration", NULL);
}

static void test_made(void) {
        Users *reg;
        g_auto(Answer) a = { 0 }, b = { 0 };
        g_autofree char *gen_file = NULL;
        g_auto(Join) j = { 0 };
        char gen[17];
        User *u = NULL;
        int r;
        struct stat here;

        set_config("[Polydir a]\nPath=@T@/a\nMethod=tmpfs\n");
        reg = registry_new(children);
        ok(!users_join_needs_identity(reg, 5001, true),
           "a tmpfs polydir: the user database is not asked");
        r = join_start(reg, 5001, NULL, &a, &j);
        is_int(r, -EINPROGRESS, "JOIN of a uid without a namespace: its setup runs (%s)",
               j.why ? j.why : "");
        ok(!users_get(reg, 5001), "... and it is not there before the setup is done");
        r = join_start(reg, 5001, NULL, &b, &j);
        is_int(r, -EINPROGRESS, "a second JOIN of that uid waits for the same setup");
        ok(RUN_UNTIL(a.calls && b.calls), "both are told when it is done");
        u = users_get(reg, 5001);
        ok(a.r == 0 && b.r == 0 && a.calls == 1 && b.calls == 1 && u && users_count(reg) == 1,
           "once each, with 0, and the registry holds one namespace for it (%s)",
           a.why ? a.why : "");
        if (!u) {
                users_free(reg);
                return;
        }
        (void) stat("/proc/self/ns/mnt", &here);
        ok(u->ns->ns_inode != (uint64_t) here.st_ino && u->ns->ns_fd >= 0,
           "a namespace of its own, not the test's");
        ok(tmpfs_in(u, "a"), "the polydir is a tmpfs inside it");
        users_setup_generation(reg, gen);
        gen_file = state_generation(5001);
        ok(gen_file && strcmp(gen_file, gen) == 0 && u->setup_generation &&
                   strcmp(u->setup_generation, gen) == 0,
           "its state file and its user record the setup generation (%s)", gen);
        ok(!users_is_stale(reg, u, gen), "it is not stale");
        r = join_start(reg, 5001, NULL, &a, &j);
        ok(r == 0 && !j.created && a.calls == 1, "the next JOIN gets it at once");

        /* a reload that changes the setup: the live namespace is not touched, but stale */
        set_config("[Polydir a]\nPath=@T@/a\nMethod=tmpfs\nMountOptions=size=1m\n");
        users_setup_generation(reg, gen);
        ok(users_is_stale(reg, u, gen) && tmpfs_in(u, "a"),
           "after a change of the setup it is stale, and left as it is");
        users_free(reg);
}

/* PrivateTmp=yes is a polydir like any other: made by the setup, not by the namespace's
 * creation. (On its own here: its tmpfs on /tmp covers this test's files.) */
static void test_private_tmp(void) {
        Users *reg;
        g_auto(Answer) a = { 0 };
        g_autofree char *text = NULL;
        g_auto(Join) j = { 0 };
        User *u = NULL;

        set_config("[Namespaces]\nPrivateTmp=yes\n");
        reg = registry_new(children);
        ok(!users_join_needs_identity(reg, 5008, true), "PrivateTmp=yes: no user database");
        is_int(join_start(reg, 5008, NULL, &a, &j), -EINPROGRESS, "PrivateTmp=yes: a setup");
        ok(RUN_UNTIL(a.calls) && a.r == 0, "done (%s)", a.why ? a.why : "");
        u = users_get(reg, 5008);
        ok(u && userns_read_mountinfo(u->ns, 1 << 20, &text, NULL) == 0 &&
                   strstr(text, " /tmp rw,nosuid,nodev") && strstr(text, " - tmpfs "),
           "a tmpfs on /tmp inside the namespace, nosuid,nodev");
        users_free(reg);
}

static void test_refused(void) {
        Users *reg;
        g_auto(Answer) a = { 0 }, b = { 0 };
        g_auto(Join) j = { 0 };
        int r;

        set_config("[Polydir gone]\nPath=@T@/no-such-dir\nMethod=tmpfs\n"
                   "[Polydir a]\nPath=@T@/a\nMethod=tmpfs\n");
        reg = registry_new(children);
        r = join_start(reg, 5002, NULL, &a, &j);
        is_int(r, -EINPROGRESS, "a setup that will fail starts all the same");
        ok(RUN_UNTIL(a.calls), "and reports");
        ok(a.r == -EIO && a.why && strstr(a.why, "polydir 'gone'") &&
                   strstr(a.why, "no-such-dir") && !users_get(reg, 5002) && users_count(reg) == 0,
           "refused, EIO (not ENOENT, which means 'no namespace' to a client), naming the "
           "polydir; nothing added (%s)",
           a.why ? a.why : "");
        g_autofree char *state_file = g_build_filename(state_path(state), "ns-5002", NULL);
        ok(!g_file_test(state_file, G_FILE_TEST_EXISTS), "no state file for it");
        r = join_start(reg, 5002, NULL, &b, &j);
        ok(r == -EIO && b.calls == 0 && j.why && strstr(j.why, "polydir 'gone'"),
           "the next JOIN gets the same refusal at once, without a setup (%s)", j.why ? j.why : "");

        /* a changed setup is tried again at once */
        set_config("[Polydir a]\nPath=@T@/a\nMethod=tmpfs\n");
        r = join_start(reg, 5002, NULL, &b, &j);
        ok(r == -EINPROGRESS && RUN_UNTIL(b.calls) && b.r == 0 && users_get(reg, 5002),
           "after a change of the setup, the next JOIN runs it again, and gets one (%s)",
           b.why ? b.why : "");
        users_free(reg);
}

static void test_continue(void) {
        Users *reg;
        g_auto(Answer) a = { 0 };
        g_auto(Join) j = { 0 };
        User *u = NULL;

        set_config("[Setup]\nOnFailure=continue\n[Polydir gone]\nPath=@T@/no-such-dir\n"
                   "Method=tmpfs\n[Polydir b]\nPath=@T@/b\nMethod=tmpfs\n");
        reg = registry_new(children);
        (void) join_start(reg, 5003, NULL, &a, &j);
        ok(RUN_UNTIL(a.calls), "OnFailure=continue: the setup reports");
        u = users_get(reg, 5003);
        ok(a.r == 0 && u && tmpfs_in(u, "b"),
           "the namespace is handed out with what could be made (%s)", a.why ? a.why : "");
        users_free(reg);
}

/* What the setup did with each volume is kept with the namespace (nsctl volumes, issue 25) and
 * in its state file, which is what a restarted nsd reads back. */
static void test_volumes(void) {
        Users *reg;
        g_auto(Answer) a = { 0 };
        g_auto(Join) j = { 0 };
        SetupUser who = { .uid = 5010, .gid = 5010, .name = "vol", .home = "/" };
        UserVolume *back = NULL;
        size_t n_back;
        User *u;

        set_config("[Setup]\nOnFailure=continue\n[Volume lost]\nType=ext4\n"
                   "Source=@T@/no-such.img\nWhere=@T@/b\nUsers=5010\n"
                   "[Volume other]\nType=ext4\nSource=@T@/other.img\nWhere=@T@/a\n"
                   "Users=someone-else\n"
                   "[Volume remote]\nType=sshfs\nSource=%u@files:\nWhere=@T@/r\nUsers=5010\n"
                   "Options=reconnect\n"
                   "[Volume safe]\nType=gocryptfs\nSource=@T@/c\nWhere=@T@/s\nUsers=5010\n"
                   "Key=ask\nStart=request\n"
                   "[Volume keyed]\nType=gocryptfs\nSource=@T@/k\nWhere=@T@/k\nUsers=5010\n"
                   "KeyFile=/etc/nsd/keys/%u.key\n");
        reg = registry_new(children);
        (void) join_start(reg, 5010, &who, &a, &j);
        ok(RUN_UNTIL(a.calls) && a.r == 0,
           "a volume that fails under OnFailure=continue: the "
           "namespace is handed out (%s)",
           a.why ? a.why : "");
        u = users_get(reg, 5010);
        if (!u) {
                users_free(reg);
                return;
        }
        ok(u->n_volumes == 4 && strcmp(u->volumes[0].name, "lost") == 0 &&
                   strcmp(u->volumes[0].type, "ext4") == 0 &&
                   strcmp(u->volumes[1].name, "remote") == 0,
           "the user keeps the volumes it is a member of, and only those (%zu)", u->n_volumes);
        ok(u->n_volumes == 4 && u->volumes[1].outcome == VOLUME_OUTCOME_USER_MANAGER &&
                   g_strcmp0(u->volumes[1].options, "nosuid,nodev,reconnect") == 0 &&
                   strcmp(u->volumes[1].source, "vol@files:") == 0 && !u->volumes[1].why &&
                   !mount_in(u, "r"),
           "an sshfs volume is left to the user's service manager: nothing mounted, its "
           "options for the program kept");
        ok(u->n_volumes == 4 && u->volumes[2].password && u->volumes[2].ask &&
                   u->volumes[2].on_request && !u->volumes[1].password && !u->volumes[1].ask &&
                   !u->volumes[1].on_request,
           "a gocryptfs volume with Key=ask and Start=request keeps both; sshfs neither");
        ok(u->n_volumes == 4 && u->volumes[3].password && !u->volumes[3].ask &&
                   g_strcmp0(u->volumes[3].key_file, "/etc/nsd/keys/vol.key") == 0 &&
                   !u->volumes[2].key_file && !user_volume_takes_login(u, 3),
           "a gocryptfs volume with KeyFile=: the path expanded for the user (%%u), never the "
           "login password's (%s)",
           u->n_volumes == 4 && u->volumes[3].key_file ? u->volumes[3].key_file : "");
        ok(u->n_volumes == 4 && u->volumes[0].outcome == VOLUME_OUTCOME_FAILED &&
                   u->volumes[0].err == ENOENT && u->volumes[0].why &&
                   strstr(u->volumes[0].why, "no-such.img") && u->volumes[0].loop == 0 &&
                   u->volumes[0].at_usec > 0,
           "failed, with its errno and why (%s)",
           u->n_volumes == 4 && u->volumes[0].why ? u->volumes[0].why : "");
        n_back = user_state_volumes(state, u->ns, &back);
        ok(n_back == 4 && back[2].password && back[2].ask && back[2].on_request && !back[1].ask &&
                   g_strcmp0(back[3].key_file, "/etc/nsd/keys/vol.key") == 0 && !back[2].key_file &&
                   !back[1].on_request &&
                   g_strcmp0(back[1].options, "nosuid,nodev,reconnect") == 0 &&
                   back[1].outcome == VOLUME_OUTCOME_USER_MANAGER &&
                   strcmp(back[0].name, "lost") == 0 && back[0].outcome == VOLUME_OUTCOME_FAILED &&
                   back[0].err == ENOENT && g_strcmp0(back[0].why, u->volumes[0].why) == 0 &&
                   strcmp(back[0].where, u->volumes[0].where) == 0 &&
                   strcmp(back[0].source, u->volumes[0].source) == 0 &&
                   back[0].at_usec == u->volumes[0].at_usec,
           "the state file gives back the same record (a restart keeps it)");
        user_volumes_free(back, n_back);
        users_free(reg);
}

/* A volume start's or stop's answer (UsersVolumeDone). */
typedef struct VolAnswer {
        unsigned calls;
        int r;
        bool changed;
        int outcome;
} VolAnswer;

static void on_vol(int r, const char *why, const UserVolume *v, bool changed, void *userdata) {
        VolAnswer *a = userdata;

        (void) why;
        a->calls++;
        a->r = r;
        a->changed = changed;
        a->outcome = v ? v->outcome : -1;
}

/* Volume "v" started again with users_volume_start() (va and why cleared first): true when
 * a start ran, answered success and "v" is mounted in u's namespace. */
static bool start_v(Users *reg, User *u, const SetupUser *who, VolAnswer *va, char **why) {
        int r;

        *va = (VolAnswer) { 0 };
        g_clear_pointer(why, g_free);
        r = users_volume_start(reg, u, "v", who, true, "asked by the test", on_vol, va, why);
        return r == 1 && RUN_UNTIL(va->calls) && va->r == 0 && mount_in(u, "v");
}

/* Volume "v" stopped with users_volume_stop() (va and why cleared first): what it returned. */
static int stop_v(Users *reg, User *u, VolAnswer *va, char **why) {
        *va = (VolAnswer) { 0 };
        g_clear_pointer(why, g_free);
        return users_volume_stop(reg, u, "v", true, "asked by the test", on_vol, va, why);
}

/* After stop_v() returned r: a stop ran, answered success with a change, and "v" is not
 * mounted in u's namespace any more. */
static bool stopped_v(User *u, int r, const VolAnswer *va) {
        return r == 1 && RUN_UNTIL(va->calls) && va->r == 0 && va->changed &&
               va->outcome == VOLUME_OUTCOME_STOPPED && !mount_in(u, "v");
}

typedef struct RelAnswer {
        int calls, r;
} RelAnswer;

static void on_rel(int r, const char *why, void *userdata) {
        RelAnswer *a = userdata;

        (void) why;
        a->calls++;
        a->r = r;
}

/* A release whose record says the volume is not mounted while it is (a start whose report
 * was lost, a state file that missed a start): the release looks at the mount table and
 * unmounts it before the namespace goes, never leaving it to the namespace's end. The test
 * keeps the namespace alive with a descriptor of its own: a volume left in it would keep its
 * loop device attached. */
static void test_release_finds_mount(Users *reg, User *u, const SetupUser *who) {
        g_autofree char *why = NULL, *backing = NULL;
        VolAnswer va = { 0 };
        RelAnswer ra = { 0 };
        uint32_t loop;
        int r, keep;

        ok(start_v(reg, u, who, &va, &why) && u->volumes[0].loop > 0,
           "started before the release (%d)", va.r);
        loop = u->volumes[0].loop;
        backing = g_strdup_printf("/sys/block/loop%u/loop/backing_file", loop - 1);
        u->volumes[0].outcome = VOLUME_OUTCOME_FAILED;
        u->volumes[0].loop = 0;
        keep = fcntl(u->ns->ns_fd, F_DUPFD_CLOEXEC, 3);
        if (keep < 0)
                tap_bail_errno("a descriptor of the namespace");
        /* a mount table that cannot be read (here: the namespace's descriptor swapped for
         * one of /dev/null) keeps the namespace: the record cannot be checked */
        {
                int ns_fd = u->ns->ns_fd, null = open("/dev/null", O_RDONLY | O_CLOEXEC);

                u->ns->ns_fd = null;
                r = users_release(reg, u, "asked by the test", false, on_rel, &ra, &why);
                u->ns->ns_fd = ns_fd;
                if (null >= 0)
                        close(null);
                ok(r < 0 && ra.calls == 0 && why && strstr(why, "mount table could not be read") &&
                           users_get(reg, 5011) == u && mount_in(u, "v"),
                   "its mount table unreadable: the release is refused, the namespace and the "
                   "volume kept (%s)",
                   why ? why : "");
                g_clear_pointer(&why, g_free);
        }
        r = users_release(reg, u, "asked by the test", false, on_rel, &ra, &why);
        is_int(r, 1, "recorded failed while mounted: the release unmounts it first (%s)",
               why ? why : "");
        ok(r == 1 && RUN_UNTIL(ra.calls) && ra.r == 0 && !users_get(reg, 5011), "released (%d)",
           ra.r);
        ok(access(backing, F_OK) < 0 && errno == ENOENT,
           "the loop device /dev/loop%u is cleared while the namespace still exists: nsd "
           "unmounted the volume, the namespace's end did not",
           loop - 1);
        close(keep);
}

/* In a child in u's namespace: the mount on Where= moved by descriptor to a staging
 * directory of nsd's run directory, as a release child killed between its move and its
 * unmount leaves it (volume-release.h, step 3). The staging directory's path into staging
 * (size >= 256). 0, or -1. */
static int stage_as_interrupted(const User *u, const char *where, char *staging) {
        pid_t pid;
        int status;

        snprintf(staging, 256, "/run/nsd/" VOLUME_RELEASE_STAGING_PREFIX "%d.1", (int) getpid());
        pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                int fd;

                if (setns(u->ns->ns_fd, CLONE_NEWNS) < 0 || mkdir(staging, 0700) < 0)
                        _exit(1);
                fd = open_tree(AT_FDCWD, where, OPEN_TREE_CLOEXEC);
                if (fd < 0 || move_mount(fd, "", AT_FDCWD, staging, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                        _exit(2);
                _exit(0);
        }
        return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0
                       ? 0
                       : -1;
}

/* Is path a directory in u's namespace? */
static bool dir_in(const User *u, const char *path) {
        pid_t pid = fork();
        int status;

        if (pid == 0) {
                struct stat st;

                _exit(setns(u->ns->ns_fd, CLONE_NEWNS) == 0 && stat(path, &st) == 0 &&
                                      S_ISDIR(st.st_mode)
                              ? 0
                              : 1);
        }
        return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
               WEXITSTATUS(status) == 0;
}

/* A copy of u's namespace (unshare in a child, made private so no unmount reaches it), kept
 * by a descriptor of its own: the volume's file system lives on in it. The descriptor, or -1. */
static int copy_of_namespace(const User *u) {
        int ready[2], go[2], fd = -1;
        char c = 0;
        pid_t pid;

        if (pipe2(ready, O_CLOEXEC) < 0)
                return -1;
        if (pipe2(go, O_CLOEXEC) < 0) {
                close(ready[0]);
                close(ready[1]);
                return -1;
        }
        pid = fork();
        if (pid == 0) {
                close(ready[0]);
                close(go[1]); /* the parent's closing it is the signal to go */
                if (setns(u->ns->ns_fd, CLONE_NEWNS) < 0 || unshare(CLONE_NEWNS) < 0 ||
                    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                        _exit(1);
                (void) !write(ready[1], "r", 1);
                (void) !read(go[0], &c, 1);
                _exit(0);
        }
        close(ready[1]);
        close(go[0]);
        if (pid > 0 && read(ready[0], &c, 1) == 1) {
                g_autofree char *ns = g_strdup_printf("/proc/%d/ns/mnt", (int) pid);

                fd = open(ns, O_RDONLY | O_CLOEXEC);
        }
        close(go[1]); /* the child exits */
        close(ready[0]);
        if (pid > 0)
                (void) waitpid(pid, NULL, 0);
        return fd;
}

/* A stop while a copy of the namespace still has the volume: nsd unmounts its own, and the
 * loop device stays attached (the log says so: the file system lives on in the copy); it is
 * cleared once the copy goes. */
static void test_copy_elsewhere(Users *reg, User *u, const SetupUser *who) {
        g_autofree char *why = NULL, *backing = NULL;
        VolAnswer va = { 0 };
        int r, copy;
        bool cleared = false;

        ok(start_v(reg, u, who, &va, &why) && u->volumes[0].loop > 0,
           "started before a copy of the namespace is made (%d)", va.r);
        backing = g_strdup_printf("/sys/block/loop%u/loop/backing_file", u->volumes[0].loop - 1);
        copy = copy_of_namespace(u);
        ok(copy >= 0, "a copy of the namespace, kept by a descriptor");
        r = stop_v(reg, u, &va, &why);
        ok(r == 1 && RUN_UNTIL(va.calls) && va.r == 0 && va.outcome == VOLUME_OUTCOME_STOPPED &&
                   !mount_in(u, "v") && access(backing, F_OK) == 0,
           "stopped: unmounted from the namespace; the loop device stays attached for the "
           "copy (%d)",
           va.r);
        if (copy >= 0)
                close(copy);
        /* the copy's end is the kernel's to finish (a namespace is freed after an RCU grace
         * period, the loop device cleared by a worker): looked at for up to 30 s */
        for (int i = 0; i < 600 && !(cleared = access(backing, F_OK) < 0); i++)
                g_usleep(50 * 1000);
        ok(cleared, "the loop device is cleared once the copy is gone");
}

/* A stop whose volume an interrupted release left in its staging directory (nsd stopped, the
 * child's deadline): the stop's child finds it there by its device, puts it back on Where=
 * (the staging directory goes) and unmounts it (volume-recovered, then volume-unmounted). */
static void test_staging_recovered(Users *reg, User *u, const SetupUser *who) {
        g_autofree char *why = NULL, *where = g_build_filename(top, "v", NULL), *backing = NULL;
        char staging[256];
        VolAnswer va = { 0 };
        int r;

        ok(start_v(reg, u, who, &va, &why) && u->volumes[0].loop > 0,
           "started before an interrupted release (%d)", va.r);
        backing = g_strdup_printf("/sys/block/loop%u/loop/backing_file", u->volumes[0].loop - 1);
        ok(stage_as_interrupted(u, where, staging) == 0 && !mount_in(u, "v") && dir_in(u, staging),
           "moved to %s as a killed release child leaves it", staging);
        r = stop_v(reg, u, &va, &why);
        is_int(r, 1, "a stop runs (%s)", why ? why : "");
        ok(stopped_v(u, r, &va) && !dir_in(u, staging),
           "found in the staging directory, put back, unmounted; the directory is gone (%d)", va.r);
        ok(access(backing, F_OK) < 0 && errno == ENOENT, "its loop device is cleared");
}

/* A stop whose volume's record is unsure (recorded failed while it is mounted) and whose
 * namespace's mount table cannot be read (here: the namespace's descriptor swapped for one of
 * /dev/null): refused with the reason, nothing run, the volume still mounted; before, it
 * answered "not mounted" and left it. */
static void test_stop_table_unreadable(Users *reg, User *u, const SetupUser *who) {
        g_autofree char *why = NULL;
        VolAnswer va = { 0 };
        int r, ns_fd = u->ns->ns_fd, null;

        ok(start_v(reg, u, who, &va, &why), "started before a stop that cannot look (%d)", va.r);
        u->volumes[0].outcome = VOLUME_OUTCOME_FAILED;
        va = (VolAnswer) { 0 };
        g_clear_pointer(&why, g_free);
        null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        u->ns->ns_fd = null;
        r = users_volume_stop(reg, u, "v", true, "asked by the test", on_vol, &va, &why);
        u->ns->ns_fd = ns_fd;
        if (null >= 0)
                close(null);
        ok(r < 0 && va.calls == 0 && why && strstr(why, "mount table could not be read") &&
                   u->volumes[0].outcome == VOLUME_OUTCOME_FAILED && mount_in(u, "v"),
           "its mount table unreadable: the stop is refused, the volume left mounted (%s)",
           why ? why : "");
        g_clear_pointer(&why, g_free);
        r = users_volume_stop(reg, u, "v", true, "asked by the test", on_vol, &va, &why);
        ok(r == 1 && RUN_UNTIL(va.calls) && va.r == 0 && va.outcome == VOLUME_OUTCOME_STOPPED &&
                   !mount_in(u, "v"),
           "the table readable again: found and stopped (%d %s)", r, why ? why : "");
}

/* A kernel volume with Start=request (issue 25, protocol 1.11): not mounted with the
 * namespace; users_volume_start() mounts it into the namespace that exists (an ext4 image on
 * a loop device), a second start finds it mounted and changes nothing; users_volume_stop()
 * unmounts it; the state file keeps Start= and Release=. Runs mkfs.ext4 and uses a loop
 * device; skipped without them. */
static void test_volume_start_stop(void) {
        g_autofree char *img = g_build_filename(top, "v.img", NULL);
        g_autofree char *where = g_build_filename(top, "v", NULL);
        g_autofree char *mkfs = g_strdup_printf("truncate -s 16M %s && mkfs.ext4 -q -F %s", img,
                                                img);
        SetupUser who = { .uid = 5011, .gid = 5011, .name = "vs", .home = "/" };
        g_auto(Answer) a = { 0 };
        g_auto(Join) j = { 0 };
        g_autofree char *why = NULL;
        VolAnswer va = { 0 };
        UserVolume *back = NULL;
        size_t n_back;
        Users *reg;
        User *u;
        int r;

        if (access("/dev/loop-control", W_OK) < 0 || system(mkfs) != 0) {
                printf("# SKIP volume start and stop: no loop devices or no mkfs.ext4\n");
                return;
        }
        if (chmod(img, 0600) < 0 || mkdir(where, 0755) < 0)
                tap_bail_errno(where);
        /* the release's staging directory goes under /run/nsd of the namespace: a tmpfs of
         * the test's own there, so nothing of it reaches the host's /run */
        if (mount("nsd-test-run", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0 ||
            mkdir("/run/nsd", 0755) < 0)
                tap_bail_errno("a tmpfs on /run, with nsd's run directory");
        set_config("[Volume v]\nType=ext4\nSource=@T@/v.img\nWhere=@T@/v\nUsers=5011\n"
                   "Start=request\nRelease=last-session\n");
        reg = registry_new(children);
        (void) join_start(reg, 5011, &who, &a, &j);
        ok(RUN_UNTIL(a.calls) && a.r == 0, "a namespace with a Start=request volume (%s)",
           a.why ? a.why : "");
        u = users_get(reg, 5011);
        if (!u || u->n_volumes != 1) {
                users_free(reg);
                (void) umount2("/run", MNT_DETACH);
                return;
        }
        ok(u->volumes[0].outcome == VOLUME_OUTCOME_STOPPED && !mount_in(u, "v") &&
                   u->volumes[0].on_request && u->volumes[0].release_last &&
                   !u->volumes[0].at_login,
           "not mounted with the namespace: stopped, Start=request and Release=last-session "
           "kept");
        r = users_volume_start(reg, u, "v", &who, true, "asked by the test", on_vol, &va, &why);
        is_int(r, 1, "a start runs (%s)", why ? why : "");
        ok(r == 1 && RUN_UNTIL(va.calls) && va.r == 0 && va.changed &&
                   va.outcome == VOLUME_OUTCOME_MOUNTED && mount_in(u, "v") &&
                   u->volumes[0].loop > 0,
           "started: mounted on its Where= in the namespace, from a loop device (%d)", va.r);
        va = (VolAnswer) { 0 };
        g_clear_pointer(&why, g_free);
        r = users_volume_start(reg, u, "v", &who, true, "asked by the test", on_vol, &va, &why);
        ok(r == 0 && va.calls == 0 && u->volumes[0].outcome == VOLUME_OUTCOME_MOUNTED,
           "a second start: mounted already, nothing run (%d)", r);
        n_back = user_state_volumes(state, u->ns, &back);
        ok(n_back == 1 && back[0].outcome == VOLUME_OUTCOME_MOUNTED && back[0].release_last &&
                   back[0].on_request && back[0].loop == u->volumes[0].loop,
           "the state file gives it back mounted, with Start= and Release=");
        user_volumes_free(back, n_back);
        /* a record that missed the start (its report lost, a state file not written): the
         * stop finds the volume's own mount on Where= and goes on */
        u->volumes[0].outcome = VOLUME_OUTCOME_FAILED;
        u->volumes[0].loop = 0;
        r = stop_v(reg, u, &va, &why);
        is_int(r, 1, "recorded failed while mounted: a stop runs (%s)", why ? why : "");
        ok(stopped_v(u, r, &va),
           "the mount table, not the record: found by its device and unmounted (%d)", va.r);
        ok(start_v(reg, u, &who, &va, &why) && va.changed, "started again (%d)", va.r);
        /* recorded mounted, but with no loop device (its name could not be read from /sys
         * when it was found mounted): the stop's child takes the loop device on Where= whose
         * backing file is Source= (before: refused as "not a block volume") */
        va = (VolAnswer) { 0 };
        g_clear_pointer(&why, g_free);
        u->volumes[0].loop = 0;
        r = stop_v(reg, u, &va, &why);
        is_int(r, 1, "mounted, its loop device not recorded: a stop runs (%s)", why ? why : "");
        ok(stopped_v(u, r, &va), "found by its loop device's backing file and unmounted (%d)",
           va.r);
        ok(start_v(reg, u, &who, &va, &why) && va.changed, "started a third time (%d)", va.r);
        r = stop_v(reg, u, &va, &why);
        is_int(r, 1, "a stop runs (%s)", why ? why : "");
        ok(stopped_v(u, r, &va) && u->volumes[0].loop == 0, "stopped: unmounted (%d)", va.r);
        r = stop_v(reg, u, &va, &why);
        ok(r == 0 && va.calls == 0, "a second stop: not mounted, nothing run (%d)", r);
        test_staging_recovered(reg, u, &who);
        test_stop_table_unreadable(reg, u, &who);
        test_copy_elsewhere(reg, u, &who);
        test_release_finds_mount(reg, u, &who);
        users_free(reg);
        (void) umount2("/run", MNT_DETACH);
}

static void test_identity_and_bounds(void) {
        Users *reg;
        g_auto(Answer) a = { 0 }, b = { 0 };
        g_auto(Join) j = { 0 };
        int r;

        set_config("[Polydir v]\nPath=@T@/a\nMethod=user\nInstancePrefix=@T@/inst/\n");
        reg = registry_new(children);
        ok(users_join_needs_identity(reg, 5004, true) &&
                   !users_join_needs_identity(reg, 5004, false),
           "Method=user needs to know who the user is (the instance is named after them)");
        r = join_start(reg, 5004, NULL, &a, &j);
        ok(r == -EINVAL && j.why && strstr(j.why, "nobody looked it up") && a.calls == 0,
           "without the user, such a setup is refused, not made with a wrong name (%s)",
           j.why ? j.why : "");
        users_free(reg);

        /* one helper child in all: a second uid's setup cannot start now */
        set_config("[Polydir a]\nPath=@T@/a\nMethod=tmpfs\n");
        children_set_max(children, 1);
        reg = registry_new(children);
        r = join_start(reg, 5005, NULL, &a, &j);
        int r2 = join_start(reg, 5006, NULL, &b, &j);
        ok(r == -EINPROGRESS && r2 == -EAGAIN && j.why && strstr(j.why, "retry"),
           "with no helper child free, another uid's JOIN gets 'not yet' (%s)", j.why ? j.why : "");
        ok(RUN_UNTIL(a.calls) && a.r == 0 && !users_get(reg, 5006),
           "the first is made, the other was not started");
        children_set_max(children, 16);
        users_free(reg);
}

static void test_stop(void) {
        Children *own = children_new(4);
        Users *reg;
        g_auto(Answer) a = { 0 };
        g_auto(Join) j = { 0 };
        int r;

        /* a setup whose init script takes its time; nsd stops meanwhile */
        set_config("[Setup]\nInitScript=@T@/slow.sh\nTimeoutSec=30\n[Polydir a]\nPath=@T@/a\n"
                   "Method=tmpfs\n");
        reg = registry_new(own);
        SetupUser who = { .uid = 5007, .gid = 5007, .name = "slow", .home = "/" };
        r = join_start(reg, 5007, &who, &a, &j);
        is_int(r, -EINPROGRESS, "a slow setup runs (%s)", j.why ? j.why : "");
        users_free(reg);    /* the registry goes first ... */
        children_free(own); /* ... then its children: server.c stops in the other order */
        ok(a.calls == 1 && a.r == -ECANCELED,
           "a setup under way when nsd stops: its waiters "
           "are told, nothing is added (%d, %s)",
           a.r, a.why ? a.why : "");
}

int main(void) {
        g_autofree char *st = NULL;

        if (geteuid() != 0) {
                printf("1..0 # SKIP makes mount namespaces and mounts: needs root\n");
                return 0;
        }
        if (!mkdtemp(top))
                tap_bail_errno("mkdtemp");
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("nsd-test", top, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
                tap_bail_errno("a private mount namespace and a tmpfs");
        for (const char *d = "a\0b\0"; *d; d += strlen(d) + 1) {
                g_autofree char *p = g_build_filename(top, d, NULL);
                if (mkdir(p, 0755) < 0)
                        tap_bail_errno(p);
        }
        g_autofree char *slow = g_build_filename(top, "slow.sh", NULL);
        if (!g_file_set_contents(slow, "#!/bin/sh\nsleep 20\n", -1, NULL) || chmod(slow, 0755) < 0)
                tap_bail_errno(slow);

        config_init_defaults(&config);
        st = g_build_filename(top, "run", NULL);
        if (mkdir(st, 0755) < 0)
                tap_bail_errno(st);
        users_test_open(st);
        children = children_new(16);

        test_made();
        test_private_tmp();
        test_refused();
        test_continue();
        test_volumes();
        test_volume_start_stop();
        test_identity_and_bounds();
        test_stop();

        children_free(children);
        users_test_close();
        (void) umount2(top, MNT_DETACH);
        (void) rmdir(top);
        return tap_done();
}
