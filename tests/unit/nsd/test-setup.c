/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-setup: a new namespace's contents (nsd/domain/setup.c), made by the real engine in a child
 * that enters a mount namespace: polydirs (Method=user and tmpfs, under / and under %h),
 * read-only binds, init scripts with pam_namespace's arguments, and every refusal: a
 * symbolic link swapped in for a polydir or on the way to it, a foreign-owned polydir or
 * instance, an instance parent open to others, an untrusted, failing or hanging init script;
 * a volume's refusals before anything is attached (a Where= made a symbolic link, an image
 * someone else can write; mounting one needs a VM: tests/vm/scenarios/volumes.sh).
 *
 * Everything happens in a private mount namespace of the test's own (as root: unshare(2);
 * otherwise a user namespace too, where only uid 0 exists, so the cases that need a second
 * uid are skipped), on a tmpfs mounted there: nothing on the host changes. Each case runs
 * in a fresh copy of a base namespace that holds the tree, so instance directories made by
 * one case are there for the next, as they would be on disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <linux/magic.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/child.h"
#include "domain/setup.h"
#include "policy/conf.h"
#include "tap.h"

static char top[] = "/tmp/nsd-test-setup.XXXXXX";
static bool as_root;
static uid_t U;  /* the user the namespaces are for */
static uid_t U2; /* someone else */
static int base_ns = -1;
static Children *children;
static dev_t base_tmp_dev; /* /tmp's device before any setup */
/* with separate_host (the routes' cases), run() makes the namespace for the user a copy of a
 * fresh "host" namespace, runs the setup from the host (as nsd does from the initial one), and
 * ends in the user's; host_ns is that host's, until the next run() */
static bool separate_host;
static int host_ns = -1, user_ns = -1;

/* ---- the tree ------------------------------------------------------------------------- */

static char *P(const char *rel) {
        return g_build_filename(top, rel, NULL);
}

static void mk(const char *rel, mode_t mode, uid_t uid) {
        g_autofree char *p = P(rel);

        if (mkdir(p, mode) < 0 && errno != EEXIST)
                tap_bail_errno(p);
        if (chmod(p, mode) < 0 || lchown(p, uid, uid) < 0)
                tap_bail_errno(p);
}

static void put(const char *rel, const char *text, mode_t mode, uid_t uid) {
        g_autofree char *p = P(rel);

        if (!g_file_set_contents(p, text, -1, NULL) || chmod(p, mode) < 0 ||
            lchown(p, uid, uid) < 0)
                tap_bail_errno(p);
}

static char *slurp(const char *rel) {
        g_autofree char *p = P(rel);
        char *text = NULL;

        return g_file_get_contents(p, &text, NULL, NULL) ? text : g_strdup("");
}

static bool exists(const char *rel) {
        g_autofree char *p = P(rel);
        struct stat st;

        return lstat(p, &st) == 0;
}

static struct stat st_of(const char *rel) {
        g_autofree char *p = P(rel);
        struct stat st = { 0 };

        (void) stat(p, &st);
        return st;
}

static bool is_tmpfs(const char *rel) {
        g_autofree char *p = P(rel);
        struct statfs sfs;

        return statfs(p, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC;
}

static unsigned long vfs_flags(const char *rel) {
        g_autofree char *p = P(rel);
        struct statvfs sv;

        return statvfs(p, &sv) == 0 ? sv.f_flag : 0;
}

/* a mount point: another device than its parent */
static bool mounted_on(const char *rel) {
        g_autofree char *p = P(rel), *parent = g_path_get_dirname(p);
        struct stat a, b;

        return stat(p, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

/* ---- running the engine --------------------------------------------------------------- */

typedef struct Result {
        bool done;
        int r;
        char *why;
        unsigned n_failed;
        bool refuse;         /* what the failures mean: the namespace refused */
        unsigned n_left_out; /* shares the run left out */
} Result;

static void on_done(int r, const char *why, unsigned n_failed, bool refuse, const SetupPlan *plan,
                    void *userdata) {
        Result *res = userdata;

        res->done = true;
        res->r = r;
        res->why = g_strdup(why);
        res->n_failed = n_failed;
        res->refuse = refuse;
        for (size_t i = 0; i < setup_plan_n_shares(plan); i++)
                res->n_left_out += setup_plan_share_left_out(plan, i);
}

static gboolean on_deadline(gpointer userdata) {
        *(bool *) userdata = true;
        return G_SOURCE_REMOVE;
}

/* A fresh copy of the base namespace, entered. */
static void fresh_namespace(void) {
        if (setns(base_ns, CLONE_NEWNS) < 0 || unshare(CLONE_NEWNS) < 0)
                tap_bail_errno("a fresh mount namespace");
}

/* The configuration text (with @T@ for the top folder) run for U in a fresh namespace. */
static Result run(const char *conf_text, uid_t uid, const char *name, const char *home_rel) {
        g_autofree char *text = NULL, *err = NULL, *home = home_rel ? P(home_rel) : NULL;
        g_auto(GStrv) parts = g_strsplit(conf_text, "@T@", -1);
        g_autoptr(SetupPlan) plan = NULL;
        Result res = { 0 };
        Config c = { 0 };
        gid_t groups[1] = { uid };
        SetupUser user = { .uid = uid,
                           .gid = uid,
                           .name = name,
                           .group = NULL,
                           .home = home,
                           .groups = groups,
                           .n_groups = 1 };
        int ns_fd, out_fd, r;
        bool late = false;
        guint deadline;

        text = g_strjoinv(top, parts);
        if (config_parse_text(text, strlen(text), "test.conf", &c, &err) < 0) {
                res.r = -EINVAL;
                res.why = g_steal_pointer(&err);
                return res;
        }
        r = setup_plan_new(&c.setup, &user, &plan, &err);
        config_done(&c);
        if (r < 0) {
                res.r = r;
                res.why = g_steal_pointer(&err);
                return res;
        }
        fresh_namespace();
        if (host_ns >= 0)
                close(host_ns);
        if (user_ns >= 0)
                close(user_ns);
        host_ns = user_ns = -1;
        if (separate_host) {
                host_ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
                if (host_ns < 0 || unshare(CLONE_NEWNS) < 0)
                        tap_bail_errno("the user's namespace");
        }
        ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (separate_host && setns(host_ns, CLONE_NEWNS) < 0)
                tap_bail_errno("back to the host's namespace");
        /* where nsd's pin namespace would be: the routes take the lock there */
        g_autofree char *pin = P("pin");
        int pin_fd = open(pin, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pin_fd < 0)
                tap_bail_errno(pin);
        setup_plan_set_pin_namespace(plan, base_ns, pin_fd);
        g_autofree char *out = P("out.log");
        out_fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (ns_fd < 0 || out_fd < 0)
                tap_bail_errno("open");
        r = setup_run(children, plan, ns_fd, out_fd, on_done, &res);
        if (r < 0) {
                res.r = r;
                res.why = g_strdup_printf("setup_run: %s", strerror(-r));
        } else {
                g_steal_pointer(&plan);
                deadline = g_timeout_add_seconds(30, on_deadline, &late);
                while (!res.done && !late)
                        g_main_context_iteration(NULL, TRUE);
                if (!late)
                        g_source_remove(deadline);
                if (late)
                        tap_bail_errno("the setup did not report within 30 s");
        }
        if (separate_host && setns(ns_fd, CLONE_NEWNS) < 0)
                tap_bail_errno("into the user's namespace");
        close(pin_fd);
        if (separate_host)
                user_ns = ns_fd;
        else
                close(ns_fd);
        close(out_fd);
        return res;
}

static void result_free(Result *r) {
        g_free(r->why);
}

#define WHY(res) ((res).why ? (res).why : "")

/* TAP comments: what came, what was expected */
static void diag_texts(const char *got, const char *want) {
        g_auto(GStrv) g = g_strsplit(got, "\n", -1), w = g_strsplit(want, "\n", -1);

        for (char **l = g; *l; l++)
                printf("#   got:      %s\n", *l);
        for (char **l = w; *l; l++)
                printf("#   expected: %s\n", *l);
}

/* Without root (one uid only), the n points of a case that needs a second uid, skipped
 * saying why; false then. */
static bool need_root(int n, const char *why) {
        if (!as_root)
                for (int i = 0; i < n; i++)
                        tap_skip("%s", why);
        return as_root;
}

/* One point, what: conf run for U (name, home_rel) fails with err, its reason saying text. */
static bool run_fails(const char *conf, const char *name, const char *home_rel, int err,
                      const char *text, const char *what) {
        Result res = run(conf, U, name, home_rel);
        bool pass = ok(res.r == err && strstr(WHY(res), text), "%s (%s)", what, WHY(res));

        result_free(&res);
        return pass;
}

/* ---- plans ---------------------------------------------------------------------------- */

#define OR_EMPTY(s) ((s) ? (s) : "")

/* A configuration and the last plan made of it for a user (or why none was). */
typedef struct Plans {
        Config c;
        SetupPlan *plan;
        char *why;
} Plans;

static void plans_clear(Plans *p) {
        g_clear_pointer(&p->plan, setup_plan_free);
        g_clear_pointer(&p->why, g_free);
        config_done(&p->c);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Plans, plans_clear)

/* text (file "t") in place of p's configuration, or bail out */
static void plans_parse(Plans *p, const char *text) {
        plans_clear(p);
        if (config_parse_text(text, strlen(text), "t", &p->c, NULL) < 0)
                tap_bail_errno("parse");
}

/* The plan of p's configuration for u in place of the last, its reason in p->why. */
static int plans_make(Plans *p, const SetupUser *u) {
        g_clear_pointer(&p->plan, setup_plan_free);
        g_clear_pointer(&p->why, g_free);
        return setup_plan_new(&p->c.setup, u, &p->plan, &p->why);
}

/* One point, what: no plan of p's configuration for u, its reason saying text. */
static bool plans_refused(Plans *p, const SetupUser *u, const char *text, const char *what) {
        int r = plans_make(p, u);

        return ok(r == -EINVAL && p->why && strstr(p->why, text), "%s (%s)", what,
                  OR_EMPTY(p->why));
}

/* The path of the one polydir in p's plan for u; NULL without a plan, or with another number
 * of polydirs. */
static const char *plans_polydir(Plans *p, const SetupUser *u) {
        if (plans_make(p, u) != 0 || setup_plan_n_polydirs(p->plan) != 1)
                return NULL;
        return setup_plan_polydir_path(p->plan, 0);
}

/* ---- cases ---------------------------------------------------------------------------- */

static const char *const full_conf = "[Setup]\n"
                                     "InitScript=@T@/init.sh\n"
                                     "[Polydir tmp]\n"
                                     "Path=@T@/tmp\n"
                                     "Method=tmpfs\n"
                                     "MountOptions=size=1m,noexec\n"
                                     "[Polydir vartmp]\n"
                                     "Path=@T@/var/tmp\n"
                                     "Method=user\n"
                                     "InstancePrefix=@T@/tmp-inst/\n"
                                     "[Polydir cache]\n"
                                     "Path=%h/.cache\n"
                                     "Method=user\n"
                                     "InstancePrefix=%h/.cache-inst/\n"
                                     "NoInit=yes\n"
                                     "[Polydir skipped]\n"
                                     "Path=@T@/skipped\n"
                                     "Method=tmpfs\n"
                                     "ExcludeUsers=alice 0\n"
                                     "[BindReadOnly motd]\n"
                                     "Source=@T@/src/motd\n"
                                     "Target=@T@/etc/motd\n";

static void test_full(void) {
        Result res = run(full_conf, U, "alice", "home/alice");
        g_autofree char *log = NULL, *out = NULL, *want = NULL, *motd_path = P("etc/motd");
        struct stat inst, vt;

        ok(res.done && res.r == 0 && res.n_failed == 0,
           "two polydirs under /, one under %%h, a "
           "bind: all set up (%s)",
           WHY(res));
        ok(mounted_on("tmp") && is_tmpfs("tmp") && !exists("tmp/host-file") &&
                   (st_of("tmp").st_mode & 07777) == 01777 && st_of("tmp").st_uid == 0,
           "Method=tmpfs: a fresh tmpfs on the polydir, with its owner (root) and mode (1777)");
        ok((vfs_flags("tmp") & (ST_NOSUID | ST_NODEV | ST_NOEXEC)) ==
                   (ST_NOSUID | ST_NODEV | ST_NOEXEC),
           "the tmpfs is nosuid,nodev, and noexec as MountOptions= asks");

        inst = st_of("tmp-inst/alice");
        vt = st_of("var/tmp");
        ok(exists("tmp-inst") && (st_of("tmp-inst").st_mode & 07777) == 0 &&
                   st_of("tmp-inst").st_uid == 0,
           "the missing instance parent was made: root's, mode 0000");
        ok(inst.st_ino != 0 && inst.st_ino == vt.st_ino && inst.st_dev == vt.st_dev &&
                   !exists("var/tmp/host-file"),
           "Method=user: the instance directory is bound on the polydir");
        ok(inst.st_uid == 0 && (inst.st_mode & 07777) == 01777,
           "a new instance takes the polydir's owner (root) and mode (1777), as "
           "pam_namespace's does");
        ok((vfs_flags("var/tmp") & (ST_NOSUID | ST_NODEV)) == (ST_NOSUID | ST_NODEV),
           "the bind is nosuid,nodev");

        if (as_root) {
                struct stat ci = st_of("home/alice/.cache-inst/alice"),
                            cp = st_of("home/alice/.cache-inst");
                ok(ci.st_uid == U && (ci.st_mode & 07777) == 0700 && cp.st_uid == U &&
                           (cp.st_mode & 07777) == 0700,
                   "under %%h: the instance parent and the instance are the user's, 0700");
                ok(ci.st_ino == st_of("home/alice/.cache").st_ino &&
                           !exists("home/alice/.cache/orig"),
                   "~/.cache shows its instance, not what was there");
        } else {
                tap_skip("the user's %%h instance: needs a second uid (root)");
                tap_skip("~/.cache shows its instance: needs a second uid (root)");
        }
        ok(!mounted_on("skipped"), "a polydir with ExcludeUsers=alice is not made for alice");

        g_autofree char *motd = slurp("etc/motd");
        int fd = open(motd_path, O_WRONLY | O_CLOEXEC);
        ok(strcmp(motd, "from the host\n") == 0 && fd < 0 && errno == EROFS &&
                   (vfs_flags("etc/motd") & (ST_RDONLY | ST_NOSUID | ST_NODEV)) ==
                           (ST_RDONLY | ST_NOSUID | ST_NODEV),
           "[BindReadOnly]: the source on the target, read-only, nosuid, nodev");
        if (fd >= 0)
                close(fd);

        log = slurp("init.log");
        want = g_strdup_printf("%s/tmp tmpfs 1 alice 1 1\n%s/var/tmp %s/tmp-inst/alice 1 alice 1 "
                               "1\n",
                               top, top, top);
        if (!ok(strcmp(log, want) == 0, "the init script ran once per polydir (not for "
                                        "NoInit=yes) with polydir, instance, new, user, 1, 1"))
                diag_texts(log, want);
        out = slurp("out.log");
        ok(strstr(out, "init output for ") != NULL, "its output went to the descriptor given");
        ok(strstr(log, "uid=0") == NULL, "(nothing else in its log)");
        result_free(&res);

        /* a second namespace: the persistent instances are there, the tmpfs is new */
        g_autofree char *mark = P("var/tmp/kept");
        if (!g_file_set_contents(mark, "kept\n", -1, NULL))
                tap_bail_errno(mark);
        g_autofree char *tmark = P("tmp/gone");
        (void) g_file_set_contents(tmark, "gone\n", -1, NULL);
        put("init.log", "", 0644, 0);
        res = run(full_conf, U, "alice", "home/alice");
        log = (g_free(log), slurp("init.log"));
        g_free(want);
        want = g_strdup_printf("%s/tmp tmpfs 1 alice 1 1\n%s/var/tmp %s/tmp-inst/alice 0 alice 1 "
                               "1\n",
                               top, top, top);
        ok(res.r == 0 && exists("var/tmp/kept") && !exists("tmp/gone"),
           "the next namespace gets the same instance (a file made there is kept) and a new "
           "tmpfs (%s)",
           WHY(res));
        if (!ok(strcmp(log, want) == 0, "the init script is told the instance is not new (0)"))
                diag_texts(log, want);
        result_free(&res);
}

/* conf run for mallory, with rel under her home made a symbolic link of hers to etc/; in
 * *ret_untouched whether etc/ is as it was: nothing mounted on it, its file still there. */
static Result run_with_link_to_etc(const char *conf, const char *rel, bool *ret_untouched) {
        g_autofree char *etc = P("etc"), *link = P(rel);
        struct stat before = st_of("etc"), after;
        Result res;

        mk("home/mallory", 0755, U);
        if (symlink(etc, link) < 0 || lchown(link, U, U) < 0)
                tap_bail_errno(link);
        res = run(conf, U, "mallory", "home/mallory");
        after = st_of("etc");
        *ret_untouched = !mounted_on("etc") && before.st_dev == after.st_dev &&
                         before.st_ino == after.st_ino && exists("etc/passwd");
        return res;
}

static void test_symlinks(void) {
        g_autofree char *etc = P("etc");
        bool untouched;
        Result res = run_with_link_to_etc("[Polydir cache]\nPath=%h/.cache\nMethod=tmpfs\n"
                                          "[Polydir after]\nPath=@T@/after\nMethod=tmpfs\n",
                                          "home/mallory/.cache", &untouched);

        ok(res.done && res.r == -ELOOP &&
                   strstr(WHY(res), "/home/mallory/.cache' is a symbolic link") &&
                   strstr(WHY(res), "polydir 'cache' (test.conf:1)"),
           "~/.cache replaced by a symbolic link to etc/ is refused, naming the polydir and the "
           "path (%s)",
           WHY(res));
        ok(untouched, "etc/ is untouched: nothing mounted on it, its file still there");
        ok(!mounted_on("after"), "OnFailure=refuse: the polydir after it is not made");
        result_free(&res);

        /* a link on the way */
        g_autofree char *a = P("home/mallory/a");
        if (symlink(etc, a) < 0)
                tap_bail_errno(a);
        run_fails("[Polydir deep]\nPath=%h/a/sub\nMethod=tmpfs\n", "mallory", "home/mallory",
                  -ELOOP, "is a symbolic link, or one is on the way",
                  "a symbolic link on the way to a polydir is refused too");

        /* the home directory itself a link: the administrator's /home, refused all the same */
        g_autofree char *lhome = P("home/linked");
        g_autofree char *mhome = P("home/mallory");
        if (symlink(mhome, lhome) < 0)
                tap_bail_errno(lhome);
        run_fails("[Polydir c]\nPath=%h/x\nMethod=tmpfs\n", "mallory", "home/linked", -ELOOP,
                  "/home/linked'",
                  "a home directory that is a symbolic link is refused, naming it");

        /* OnFailure=continue: the rest is made, the failure still reported */
        res = run("[Setup]\nOnFailure=continue\n[Polydir cache]\nPath=%h/.cache\nMethod=tmpfs\n"
                  "[Polydir after]\nPath=@T@/after\nMethod=tmpfs\n",
                  U, "mallory", "home/mallory");
        ok(res.r == -ELOOP && res.n_failed == 1 && mounted_on("after") && is_tmpfs("after"),
           "OnFailure=continue: the next polydir is made, the refusal still reported (%s)",
           WHY(res));
        result_free(&res);
}

/* A volume's OnFailure= beside [Setup]'s: continue hands the namespace out without it (the
 * init script after it runs); refuse refuses it even under [Setup] OnFailure=continue. */
static void test_volume_on_failure(void) {
        Result res;

        if (!need_root(5, "a volume's OnFailure=: needs root (a tmpfs polydir)"))
                return;
        mk("vf", 0755, 0);
        mk("vf/home", 0755, U);
        mk("vf/home/vault", 0700, U);
        mk("vf/poly", 0755, 0);
        put("vf/vault.img", "no file system\n", 0666, 0); /* writable by all: refused */
        put("vf/init.sh", "#!/bin/sh\ntouch \"$1/.init-done\"\n", 0755, 0);
        res = run("[Setup]\nInitScript=@T@/vf/init.sh\n"
                  "[Polydir p]\nPath=@T@/vf/poly\nMethod=tmpfs\n"
                  "[Volume vault]\nType=ext4\nSource=@T@/vf/vault.img\nWhere=%h/vault\n"
                  "Users=mallory\nOnFailure=continue\n",
                  U, "mallory", "vf/home");
        ok(res.done && res.r == -EPERM && res.n_failed == 1 && !res.refuse &&
                   strstr(WHY(res), "volume 'vault'"),
           "OnFailure=continue on the volume: its failure reported, the namespace not refused "
           "(%s)",
           WHY(res));
        ok(mounted_on("vf/poly") && exists("vf/poly/.init-done"),
           "the polydir made and the init script run after the failed volume");
        result_free(&res);

        res = run("[Setup]\nInitScript=@T@/vf/init.sh\nOnFailure=continue\n"
                  "[Polydir p]\nPath=@T@/vf/poly\nMethod=tmpfs\n"
                  "[Volume vault]\nType=ext4\nSource=@T@/vf/vault.img\nWhere=%h/vault\n"
                  "Users=mallory\nOnFailure=refuse\n",
                  U, "mallory", "vf/home");
        ok(res.done && res.r == -EPERM && res.refuse,
           "OnFailure=refuse on the volume under [Setup] OnFailure=continue: refused (%s)",
           WHY(res));
        ok(mounted_on("vf/poly") && !exists("vf/poly/.init-done"),
           "the run stopped at the volume: no init script after it");
        result_free(&res);

        /* a tolerated failure first, a refusing one after it: the refusal names the second */
        mk("vf/home/vault2", 0700, U);
        res = run("[Volume vault]\nType=ext4\nSource=@T@/vf/vault.img\nWhere=%h/vault\n"
                  "Users=mallory\nOnFailure=continue\n"
                  "[Volume vault2]\nType=ext4\nSource=@T@/vf/none.img\nWhere=%h/vault2\n"
                  "Users=mallory\n",
                  U, "mallory", "vf/home");
        ok(res.done && res.refuse && res.n_failed == 2 && res.r == -ENOENT &&
                   strstr(WHY(res), "volume 'vault2'"),
           "a tolerated failure, then a refusing one: refused, the reason the refusing one's "
           "(%s)",
           WHY(res));
        result_free(&res);
}

static void test_volumes(void) {
        const char *conf = "[Volume vault]\nType=ext4\nSource=@T@/vol/%u.img\nWhere=%h/vault\n"
                           "Users=mallory\n";
        g_autofree char *vault = P("home/mallory/vault");
        bool untouched;
        Result res;

        mk("vol", 0755, 0);
        put("vol/mallory.img", "no file system\n", 0600, 0);
        res = run_with_link_to_etc(conf, "home/mallory/vault", &untouched);
        ok(res.done && res.r == -ELOOP && strstr(WHY(res), "volume 'vault' (test.conf:1): '") &&
                   strstr(WHY(res), "/home/mallory/vault' is a symbolic link, or one is on the "
                                    "way to it: refused"),
           "a volume's Where= (~/vault) made a symbolic link to etc/ is refused, naming the "
           "volume and the path (%s)",
           WHY(res));
        ok(untouched, "etc/ is untouched: nothing mounted on it");
        result_free(&res);

        if (unlink(vault) < 0)
                tap_bail_errno(vault);
        mk("home/mallory/vault", 0700, U);
        put("vol/mallory.img", "no file system\n", 0666, 0);
        run_fails(conf, "mallory", "home/mallory", -EPERM,
                  "/vol/mallory.img' must be owned by root and writable by nobody else (it is "
                  "uid 0's, mode 0666): refused",
                  "an image that everyone may write is refused before it is attached");
        ok(!mounted_on("home/mallory/vault"), "nothing is mounted on ~/vault");

        put("vol/mallory.img", "no file system\n", 0620, 0);
        run_fails(conf, "mallory", "home/mallory", -EPERM, "mode 0620): refused",
                  "so is one that its group may write");

        if (need_root(1, "an image of the user's: needs root (a second uid)")) {
                put("vol/mallory.img", "no file system\n", 0600, U);
                run_fails(conf, "mallory", "home/mallory", -EPERM, "it is uid 4242001's, mode 0600",
                          "and one of the user's own");
        }

        mk("vol/mallory.img.d", 0755, 0);
        run_fails("[Volume vault]\nType=ext4\nSource=@T@/vol/%u.img.d\nWhere=%h/vault\n"
                  "Users=mallory\n",
                  "mallory", "home/mallory", -EPERM,
                  "is neither an image (a regular file) nor a block device: refused",
                  "a directory as Source= is refused");

        /* not a member: nothing to do, nothing refused */
        res = run("[Volume vault]\nType=ext4\nSource=@T@/vol/%u.img\nWhere=%h/vault\n"
                  "Users=alice\n",
                  U, "mallory", "home/mallory");
        ok(res.done && res.r == 0 && res.n_failed == 0 && !mounted_on("home/mallory/vault"),
           "a volume of alice's is not tried for mallory (%s)", WHY(res));
        result_free(&res);
}

static void test_owners(void) {
        if (!need_root(4, "owners: needs a second uid (root)"))
                return;
        /* a polydir someone else owns */
        mk("home/bob", 0755, U);
        mk("home/bob/shared", 0755, U2);
        run_fails("[Polydir s]\nPath=%h/shared\nMethod=tmpfs\n", "bob", "home/bob", -EPERM,
                  "is owned by uid 4242002, neither by root nor by 'bob' (uid 4242001)",
                  "a polydir owned by another user is refused");
        ok(!mounted_on("home/bob/shared"), "nothing is mounted on it");

        /* an instance parent others may enter */
        mk("open-inst", 0755, 0);
        mk("pd", 0755, 0);
        run_fails("[Polydir pd]\nPath=@T@/pd\nMethod=user\nInstancePrefix=@T@/open-inst/\n", "bob",
                  NULL, -EPERM, "open-inst' must be owned by root and closed",
                  "an instance parent open to others is refused");

        /* an instance that someone else owns */
        mk("inst2", 0700, 0);
        mk("inst2/bob", 0700, U2);
        run_fails("[Polydir pd]\nPath=@T@/pd\nMethod=user\nInstancePrefix=@T@/inst2/\n", "bob",
                  NULL, -EPERM, "inst2/bob' is owned by uid 4242002",
                  "an existing instance owned by someone else than the polydir's owner is refused");
}

/* The stderr of fn() (nsd's log, in a test) into the file rel. */
static void capture_stderr(const char *rel, void (*fn)(void *), void *userdata) {
        g_autofree char *p = P(rel);
        int saved = dup(2), fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        if (saved < 0 || fd < 0 || dup2(fd, 2) < 0)
                tap_bail_errno(p);
        fn(userdata);
        fflush(stderr);
        if (dup2(saved, 2) < 0)
                tap_bail_errno("stderr back");
        close(saved);
        close(fd);
}

typedef struct RouteRun {
        const char *name; /* the member's name (and the directory's) */
        Result res;
} RouteRun;

static void route_run(void *userdata) {
        RouteRun *rr = userdata;

        rr->res = run("[Share media]\nPath=@T@/media\nUsers=alice carol dave erin fred gina "
                      "hank\n"
                      "Propagation=per-user\n",
                      U, rr->name, NULL);
}

/* The route of name (in the user's namespace afterwards): what came, the log in log.txt. */
static Result route(const char *name) {
        RouteRun rr = { .name = name };

        capture_stderr("log.txt", route_run, &rr);
        return rr.res;
}

/* In the user's namespace after a route that was refused: Path= is the route's tmpfs, with
 * the member's directory alone in it, empty, and nothing mounted on it. */
static bool route_empty(const char *name) {
        g_autofree char *dir = g_strconcat("media/", name, NULL), *p = P(dir);
        g_autoptr(GDir) d = g_dir_open(p, 0, NULL);
        g_autofree char *media = P("media");
        g_autoptr(GDir) m = g_dir_open(media, 0, NULL);
        const char *first = m ? g_dir_read_name(m) : NULL;

        return is_tmpfs("media") && mounted_on("media") && first && strcmp(first, name) == 0 &&
               !g_dir_read_name(m) && d && !g_dir_read_name(d) && !mounted_on(dir);
}

/* Back in the base namespace: where the tree is made (the user's namespace of a route has
 * its tmpfs on media/). */
static void at_base(void) {
        if (setns(base_ns, CLONE_NEWNS) < 0)
                tap_bail_errno("back to the base namespace");
}

/* Propagation=per-user: the member's directory on the host, Path=/USER, carries the host's
 * mounts only when it is a directory of root's or the member's that nobody else may write
 * to; anything else (what another user made first, a link) is refused with a warning, and
 * the namespace is made without the route. */
static void test_routes(void) {
        g_autofree char *usb = P("media/alice/usb"), *hank = P("media/hank"), *etc = P("etc");
        g_autofree char *log = NULL, *want = NULL;
        struct stat st;
        Result res;

        if (!need_root(10, "routes: need a second uid (root)"))
                return;
        separate_host = true;
        mk("media", 0755, 0);

        /* a missing directory: made, root's, the user's group, 0750 */
        res = route("alice");
        st = st_of("media/alice");
        ok(res.r == 0 && res.n_failed == 0 && res.n_left_out == 0 && mounted_on("media") &&
                   is_tmpfs("media") && mounted_on("media/alice") && st.st_uid == 0 &&
                   st.st_gid == U && (st.st_mode & 07777) == 0750,
           "a route: the member's directory made (root's, the user's group, 0750) and routed "
           "(%s)",
           WHY(res));
        result_free(&res);
        /* the host mounts under it, now that the route is there */
        if (setns(host_ns, CLONE_NEWNS) < 0 || mkdir(usb, 0755) < 0 ||
            mount("stick", usb, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k") < 0 ||
            setns(user_ns, CLONE_NEWNS) < 0)
                tap_bail_errno(usb);
        ok(mounted_on("media/alice/usb") && is_tmpfs("media/alice/usb"),
           "the host's mount at Path=/alice/usb reaches alice's namespace");

        /* made by another user first, with something of theirs in it */
        at_base();
        mk("media/carol", 0755, U2);
        put("media/carol/planted", "mallory's\n", 0644, U2);
        res = route("carol");
        log = slurp("log.txt");
        ok(res.r == 0 && res.n_failed == 0 && res.n_left_out == 1,
           "a directory another user made: the route is left out, the setup does not fail, so "
           "the login works (%s)",
           WHY(res));
        ok(route_empty("carol") && !exists("media/carol/planted"),
           "nothing of it reaches carol's namespace: her own directory alone, empty");
        want = g_strdup_printf("%s/media/carol' on the host is a directory of uid %u (gid %u, "
                               "mode 0755)",
                               top, (unsigned) U2, (unsigned) U2);
        if (!ok(strstr(log, want) && strstr(log, "WITHOUT the route") &&
                        strstr(log, "chown root:root"),
                "the log names the path, its owner and mode, and what to do"))
                diag_texts(log, want);
        result_free(&res);

        /* the member's directory made beforehand: routed, or refused and left out */
        const struct {
                const char *name;
                mode_t mode;
                bool users, group_u2; /* owned by U (else root's), its group U2's */
                bool routed;
                const char *what;
        } dirs[] = {
                /* a group that is neither root's nor the user's */
                { "dave", 0770, false, true, false,
                  "root's, writable by another group: refused, without the route" },
                /* what root chose */
                { "erin", 0770, false, false, true, "root's, writable by root's group: routed" },
                { "fred", 0757, false, false, false, "root's, writable by others: refused" },
                { "gina", 0750, true, false, true,
                  "the member's own directory, closed to others: routed" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(dirs); i++) {
                g_autofree char *rel = g_strconcat("media/", dirs[i].name, NULL), *dir = P(rel);
                uid_t owner = dirs[i].users ? U : 0;

                at_base();
                mk(rel, dirs[i].mode, owner);
                if (lchown(dir, owner, dirs[i].group_u2 ? U2 : owner) < 0)
                        tap_bail_errno(dir);
                res = route(dirs[i].name);
                ok(res.r == 0 &&
                           (dirs[i].routed ? res.n_left_out == 0 && mounted_on(rel)
                                           : res.n_left_out == 1 && route_empty(dirs[i].name)),
                   "%s (%s)", dirs[i].what, WHY(res));
                result_free(&res);
        }

        /* a symbolic link to a directory of root's: not followed */
        at_base();
        if (symlink(etc, hank) < 0)
                tap_bail_errno(hank);
        res = route("hank");
        log = (g_free(log), slurp("log.txt"));
        ok(res.r == 0 && res.n_left_out == 1 && route_empty("hank") && !mounted_on("etc") &&
                   strstr(log, "media/hank' on the host is a symbolic link"),
           "a symbolic link: not followed, refused, without the route (%s)", WHY(res));
        result_free(&res);

        separate_host = false;
}

static void test_scripts(void) {
        Result res;
#define SCRIPT_CONF(script)                                  \
        "[Setup]\nInitScript=@T@/" script "\nTimeoutSec=1\n" \
        "[Polydir p]\nPath=@T@/pd2\nMethod=tmpfs\n"
        const char *c1 = SCRIPT_CONF("fail.sh"), *c2 = SCRIPT_CONF("open.sh"),
                   *c3 = SCRIPT_CONF("hang.sh"), *c4 = SCRIPT_CONF("none.sh"),
                   *c5 = SCRIPT_CONF("badinterp.sh");

        mk("pd2", 0755, 0);
        put("fail.sh", "#!/bin/sh\nexit 3\n", 0755, 0);
        run_fails(c1, "alice", NULL, -EPROTO, "fail.sh' exited with status 3",
                  "an init script that exits 3 fails the setup");

        put("open.sh", "#!/bin/sh\nexit 0\n", 0757, 0);
        res = run(c2, U, "alice", NULL);
        ok(res.r == -EPERM && strstr(WHY(res), "writable by nobody else") &&
                   strstr(WHY(res), "mode 0757"),
           "an init script others may write is not run (%s)", WHY(res));
        result_free(&res);

        put("hang.pid", "", 0644, 0);
        g_autofree char *pidfile = P("hang.pid");
        g_autofree char *hang = g_strdup_printf("#!/bin/sh\necho $$ > %s\nsleep 600 &\n"
                                                "echo $! >> %s\nwait\n",
                                                pidfile, pidfile);
        put("hang.sh", hang, 0755, 0);
        gint64 t0 = g_get_monotonic_time();
        res = run(c3, U, "alice", NULL);
        gint64 took = g_get_monotonic_time() - t0;
        g_autofree char *pids = slurp("hang.pid");
        g_auto(GStrv) pv = g_strsplit(pids, "\n", -1);
        bool gone = pv[0] && pv[1] && *pv[0] && *pv[1];
        for (int i = 0; gone && i < 2; i++) {
                pid_t pid = (pid_t) atoi(pv[i]);
                /* killed with SIGKILL: reaped by whoever is their parent, wait for it */
                for (int n = 0; n < 200 && kill(pid, 0) == 0; n++)
                        g_usleep(10000);
                gone = kill(pid, 0) < 0 && errno == ESRCH;
        }
        ok(res.r == -ETIMEDOUT && strstr(WHY(res), "hang.sh' did not finish within") &&
                   took < 5 * G_USEC_PER_SEC,
           "an init script that hangs is stopped before TimeoutSec=1 and named (%s)", WHY(res));
        ok(gone, "it and what it started in its process group are killed (pids %s, %s)",
           pv[0] ? pv[0] : "?", pv[0] && pv[1] ? pv[1] : "?");
        result_free(&res);

        run_fails(c4, "alice", NULL, -ENOENT, "none.sh'",
                  "a missing init script fails the setup, naming it");

        put("badinterp.sh", "#!/nonexistent/interpreter\nexit 0\n", 0755, 0);
        run_fails(c5, "alice", NULL, -ENOENT,
                  "badinterp.sh': start the init script: No such file or directory",
                  "a script that cannot be started says why, not just an exit status");
}

static void test_plans(void) {
        g_auto(Plans) p = { 0 };
        const char *path;
        gid_t g = 5;
        SetupUser u = { .uid = 1000,
                        .gid = 5,
                        .name = "al/ice",
                        .home = "/home/alice",
                        .groups = &g,
                        .n_groups = 1 };

        plans_parse(&p, "[Polydir a]\nPath=/srv/%u/x\nMethod=tmpfs\n");
        plans_refused(&p, &u, "%u stands for 'al/ice'",
                      "a user name with a '/' cannot make a path");
        u.name = "alice";
        ok(g_strcmp0(plans_polydir(&p, &u), "/srv/alice/x") == 0, "%%u expands to the name");

        plans_parse(&p, "[Polydir a]\nPath=%h/.cache/%U-%g\nMethod=tmpfs\n"
                        "[Polydir b]\nPath=/x\nMethod=tmpfs\nOnlyUsers=bob\n");
        u.home = "/home//alice";
        plans_refused(&p, &u, "not a clean absolute path",
                      "a home with '//' cannot be used for %h");
        u.home = "/home/alice/";
        path = plans_polydir(&p, &u);
        ok(g_strcmp0(path, "/home/alice/.cache/1000-5") == 0,
           "%%h without its trailing '/', %%U, %%g as a number when the group has no name; "
           "OnlyUsers=bob leaves alice out (%s)",
           path ? path : OR_EMPTY(p.why));
        u.home = "/";
        u.group = "staff";
        ok(g_strcmp0(plans_polydir(&p, &u), "/.cache/1000-staff") == 0,
           "a home of / and %%g as the group's name");

        /* a uid without a passwd entry: what needs no name is made, the rest refused */
        SetupUser nobody = { .uid = 4242, .gid = (gid_t) -1 };
        plans_parse(&p, "[Polydir t]\nPath=/tmp\nMethod=tmpfs\nNoInit=yes\n");
        path = plans_polydir(&p, &nobody);
        ok(path != NULL, "a uid without a name gets a tmpfs polydir that needs none (%s)",
           OR_EMPTY(p.why));
        const char *needs_name[] = {
                "[Polydir u]\nPath=/tmp\nMethod=user\nInstancePrefix=/inst/\nNoInit=yes\n",
                "[Polydir h]\nPath=%h/x\nMethod=tmpfs\nNoInit=yes\n",
                "[Setup]\nInitScript=/bin/true\n[Polydir i]\nPath=/tmp\nMethod=tmpfs\n",
        };
        for (size_t i = 0; i < G_N_ELEMENTS(needs_name); i++) {
                plans_parse(&p, needs_name[i]);
                plans_refused(&p, &nobody, "needs the name of uid 4242",
                              "a uid without a name: a polydir that needs one is refused, saying "
                              "so");
        }
}

static void test_volume_plans(void) {
        g_auto(Plans) p = { 0 };
        int r;
        gid_t gids[] = { 5, 300 };
        const char *const names[] = { "staff", "vault" };
        SetupUser u = { .uid = 1000,
                        .gid = 5,
                        .name = "alice",
                        .home = "/home/alice",
                        .groups = gids,
                        .n_groups = 1 };

        plans_parse(&p, "[Volume vault]\nType=ext4\nSource=/srv/vol/%u-%U.img\n"
                        "Where=%h/vault\nGroups=vault\n"
                        "[Volume smb]\nType=cifs\nSource=//server/%u\nWhere=/srv/smb/%U\n"
                        "Users=bob\n");
        r = plans_make(&p, &u);
        ok(r == 0 && setup_plan_n_volumes(p.plan) == 0 && setup_plan_is_empty(p.plan),
           "alice outside group vault and not bob: no volume, nothing to do (%s)", OR_EMPTY(p.why));
        u.n_groups = 2;
        u.group_names = names;
        r = plans_make(&p, &u);
        ok(r == 0 && setup_plan_n_volumes(p.plan) == 1 && !setup_plan_is_empty(p.plan) &&
                   strcmp(setup_plan_volume_where(p.plan, 0), "/home/alice/vault") == 0 &&
                   strcmp(setup_plan_volume_source(p.plan, 0), "/srv/vol/alice-1000.img") == 0,
           "in group vault: the volume, Where= and Source= expanded (%s)", OR_EMPTY(p.why));
        u.name = "bob";
        u.home = "/home/bob";
        u.n_groups = 1;
        r = plans_make(&p, &u);
        ok(r == 0 && setup_plan_n_volumes(p.plan) == 1 &&
                   strcmp(setup_plan_volume_source(p.plan, 0), "//server/bob") == 0 &&
                   strcmp(setup_plan_volume_where(p.plan, 0), "/srv/smb/1000") == 0,
           "bob: the cifs volume, its source with %%u (%s)", OR_EMPTY(p.why));
        SetupUser nobody = { .uid = 1000, .gid = (gid_t) -1 };
        r = plans_make(&p, &nobody);
        ok(r == 0 && setup_plan_n_volumes(p.plan) == 0,
           "uid 1000 without a name is no member by name");
        plans_parse(&p, "[Volume v]\nType=ext4\nSource=/srv/%u.img\nWhere=/srv/v\nUsers=1000\n");
        plans_refused(&p, &nobody, "volume 'v' (t:1) needs the name of uid 1000",
                      "a member by uid without a name, whose Source= needs one, is refused");
}

/* What the configuration cannot compare (a path with a specifier), compared per user: a
 * volume or a polydir on, under or above the path of a share of the user's. */
static void test_share_overlap_plans(void) {
        g_auto(Plans) p = { 0 };
        int r;
        SetupUser u = { .uid = 1000, .gid = 5, .name = "alice", .home = "/srv/lab/alice" };

        plans_parse(&p, "[Share lab]\nPath=/srv/lab\nUsers=alice\n"
                        "[Volume vault]\nType=ext4\nSource=/srv/vol/%u.img\nWhere=%h/vault\n"
                        "Users=alice bob\n");
        plans_refused(&p, &u,
                      "volume 'vault' (t:4): Where=%h/vault is /srv/lab/alice/vault for "
                      "uid 1000, which is under the path of share 'lab' (t:1)",
                      "a volume whose Where= falls under a share of the user's once expanded is "
                      "refused, "
                      "naming both");
        u.name = "bob";
        u.home = "/srv/lab/bob";
        r = plans_make(&p, &u);
        ok(r == 0 && setup_plan_n_volumes(p.plan) == 1 && setup_plan_n_shares(p.plan) == 0,
           "bob, no member of the share: his volume there travels nowhere (%s)", OR_EMPTY(p.why));
        u.name = "alice";
        u.home = "/home/alice";
        r = plans_make(&p, &u);
        ok(r == 0 && setup_plan_n_volumes(p.plan) == 1 && setup_plan_n_shares(p.plan) == 1,
           "alice with her home elsewhere: share and volume side by side (%s)", OR_EMPTY(p.why));

        plans_parse(&p, "[Share lab]\nPath=/srv/lab/alice/tmp\nUsers=alice\n"
                        "[Polydir t]\nPath=/srv/lab/%u\nMethod=tmpfs\n");
        plans_refused(&p, &u,
                      "Path=/srv/lab/%u is /srv/lab/alice for uid 1000, which is above "
                      "the path of share 'lab' (t:1)",
                      "a polydir whose expanded Path= is above a share of the user's is refused");
}

static void test_private_tmp(void) {
        /* the host's /tmp is root's, a uid that does not exist in the user namespace */
        if (!need_root(1, "PrivateTmp=yes on /tmp: needs root"))
                return;
        Result res = run("[Namespaces]\nPrivateTmp=yes\n", U, "alice", NULL);
        struct statfs sfs;
        struct stat st;

        ok(res.r == 0 && statfs("/tmp", &sfs) == 0 && sfs.f_type == TMPFS_MAGIC &&
                   stat("/tmp", &st) == 0 && st.st_dev != base_tmp_dev &&
                   (st.st_mode & 07777) == 01777,
           "PrivateTmp=yes: a tmpfs on /tmp of the namespace (%s)", WHY(res));
        result_free(&res);
}

/* /proc files take one write(2), not a temporary file and a rename */
static bool write_proc(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        bool done = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t) strlen(text);

        if (fd >= 0)
                close(fd);
        return done;
}

int main(void) {
        struct stat st;

        as_root = geteuid() == 0;
        if (!mkdtemp(top))
                tap_bail_errno("mkdtemp");
        if (as_root ? unshare(CLONE_NEWNS) < 0 : unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
                printf("1..0 # SKIP cannot make a mount namespace here: %s\n", strerror(errno));
                rmdir(top);
                return 0;
        }
        if (!as_root) {
                /* only uid 0 exists in here: the test's own uid */
                g_autofree char *map = g_strdup_printf("0 %u 1", (unsigned) getuid());
                g_autofree char *gmap = g_strdup_printf("0 %u 1", (unsigned) getgid());
                if (!write_proc("/proc/self/setgroups", "deny") ||
                    !write_proc("/proc/self/uid_map", map) ||
                    !write_proc("/proc/self/gid_map", gmap))
                        tap_bail_errno("uid_map");
        }
        U = as_root ? 4242001 : 0;
        U2 = as_root ? 4242002 : 0;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("nsd-test-setup", top, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
                tap_bail_errno("the test's own tmpfs");

        mk("tmp", 01777, 0);
        put("tmp/host-file", "host\n", 0644, 0);
        mk("var", 0755, 0);
        mk("var/tmp", 01777, 0);
        put("var/tmp/host-file", "host\n", 0644, 0);
        mk("etc", 0755, 0);
        put("etc/passwd", "root:x:0:0::/root:/bin/sh\n", 0644, 0);
        put("etc/motd", "original\n", 0644, 0);
        mk("src", 0755, 0);
        put("src/motd", "from the host\n", 0644, 0);
        mk("home", 0755, 0);
        mk("home/alice", 0700, U);
        mk("home/alice/.cache", 0700, U);
        put("home/alice/.cache/orig", "orig\n", 0600, U);
        mk("skipped", 0755, 0);
        mk("after", 0755, 0);
        mk("pin", 0700, 0);
        g_autofree char *init_log = P("init.log");
        g_autofree char *init = g_strdup_printf("#!/bin/sh\necho \"$1 $2 $3 $4 $5 $6\" >> %s\n"
                                                "echo \"init output for $1\"\n",
                                                init_log);
        put("init.sh", init, 0755, 0);
        put("init.log", "", 0644, 0);
        if (stat("/tmp", &st) < 0)
                tap_bail_errno("/tmp");
        base_tmp_dev = st.st_dev;

        base_ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (base_ns < 0)
                tap_bail_errno("/proc/self/ns/mnt");
        children = children_new(16);

        test_plans();
        test_volume_plans();
        test_share_overlap_plans();
        test_full();
        test_symlinks();
        test_volumes();
        test_volume_on_failure();
        test_owners();
        test_scripts();
        test_routes();
        test_private_tmp();

        children_free(children);
        /* back to the base, then away with the tmpfs and the folder under it */
        if (setns(base_ns, CLONE_NEWNS) == 0)
                (void) umount2(top, MNT_DETACH);
        (void) rmdir(top);
        return tap_done();
}
