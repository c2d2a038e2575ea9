/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-private: the identity a user's HIDE walks with (nsd/domain/private.c, policy.c's
 * policy_uid_identity()). The user's groups are looked up in policy's threads before the walk,
 * never in the walk's child (a clone of the multi-threaded nsd):
 *   - a user's supplementary group reaches the child: a folder only that group may search is
 *     walked, a 0750 root:root one is not;
 *   - a uid without a passwd entry walks with the caller's gid alone (none: EPERM);
 *   - more than NGROUPS_MAX groups: E2BIG, before any child;
 *   - a lookup that hangs: that HIDE gets ETIMEDOUT (LookupTimeoutSec=) while STATUS is served;
 *   - 1000 HIDEs of one uid share one lookup, and each gets the answer.
 * Runs under nss_wrapper (meson sets LD_PRELOAD and NSS_WRAPPER_*; the files are written into
 * the temp folder of argument 1). The walks need root (the child takes the user's uid and
 * groups): without it those points are skipped; the lookups need nothing. The "mount" walked
 * to is a plain folder, so a walk that got through ends in "is not a mount point" (EINVAL),
 * one that did not in EACCES. Nothing here mounts anything.
 */
#include <errno.h>
#include <glib.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core-test.h"
#include "domain/private.h"
#include "nss-wrapper.h"
#include "policy/policy.h"
#include "tap.h"

#define WALKER 1500     /* in passwd, primary group 1500, member of WALKERS */
#define NOBODY_UID 1600 /* no passwd entry */
#define WALKERS 5000

static char tmpdir[] = "/tmp/test-private.XXXXXX";
static bool is_root;

static void write_file(const char *dir, const char *name, const char *text) {
        g_autofree char *path = g_build_filename(dir, name, NULL);
        GError *error = NULL;

        if (!g_file_set_contents(path, text, -1, &error)) {
                printf("Bail out! %s: %s\n", path, error->message);
                exit(1);
        }
}

static void write_nss_files(const char *dir) {
        write_file(dir, "passwd",
                   "root:x:0:0:root:/root:/bin/sh\n"
                   "walker:x:1500:1500::/:/bin/sh\n");
        write_file(dir, "group",
                   "root:x:0:\n"
                   "walker:x:1500:\n"
                   "walkers:x:5000:walker\n");
}

/* tmpdir/NAME (mode, root:gid) with a folder "sub" in it */
static void make_dir(const char *name, mode_t mode, gid_t gid) {
        g_autofree char *path = g_build_filename(tmpdir, name, NULL);
        g_autofree char *sub = g_build_filename(path, "sub", NULL);

        if (mkdir(path, 0700) < 0 || mkdir(sub, 0755) < 0)
                tap_bail_errno(path);
        if ((is_root && chown(path, 0, gid) < 0) || chmod(path, mode) < 0)
                tap_bail_errno(path);
}

static void remove_dirs(void) {
        const char *names[] = { "walkers", "closed" };

        for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
                g_autofree char *path = g_build_filename(tmpdir, names[i], NULL);
                g_autofree char *sub = g_build_filename(path, "sub", NULL);
                (void) rmdir(sub);
                (void) rmdir(path);
        }
        (void) rmdir(tmpdir);
}

/* ---- HIDE without the request layer ------------------------------------------------------ */

typedef struct Hidden {
        bool done;
        int r;
        char *why;
} Hidden;

static unsigned n_done;

static void on_hidden(int r, uint64_t mnt_id, const char *why, void *userdata) {
        Hidden *h = userdata;

        h->done = true;
        h->r = r;
        h->why = g_strdup(why);
        n_done++;
}

/* HIDE of tmpdir/name for caller (with caller_gid from its credentials), until done */
static Hidden hide(Server *s, uid_t caller, gid_t caller_gid, const char *name) {
        g_autofree char *path = g_build_filename(tmpdir, name, NULL);
        g_autofree char *why = NULL;
        Hidden h = { 0 };

        h.r = private_hide_start(s->policy, s->children, s->config.path_walk_timeout_usec, caller,
                                 caller_gid, caller, path, false, on_hidden, &h, &why);
        if (h.r < 0) {
                h.why = g_steal_pointer(&why);
                return h;
        }
        if (!RUN_UNTIL(h.done))
                h.r = -ETIME;
        return h;
}

static bool walked(const Hidden *h) {
        return h->r == -EINVAL && h->why && strstr(h->why, "is not a mount point");
}

static bool refused_walk(const Hidden *h) {
        return h->r == -EACCES && h->why && strstr(h->why, "cannot resolve");
}

static void test_groups_reach_the_walk(Server *s) {
        Hidden h;

        if (!is_root) {
                for (int i = 0; i < 5; i++)
                        tap_skip("walking as a user needs root (setgroups, setresuid)");
                return;
        }
        h = hide(s, WALKER, WALKER, "walkers/sub");
        ok(walked(&h), "uid %u walks through a 0750 folder of its supplementary group %u (%s)",
           WALKER, WALKERS, h.why);
        g_free(h.why);
        h = hide(s, WALKER, WALKER, "closed/sub");
        ok(refused_walk(&h), "but not through a 0750 root:root one (%s)", h.why);
        g_free(h.why);

        h = hide(s, NOBODY_UID, WALKERS, "walkers/sub");
        ok(walked(&h), "uid %u, not in passwd, walks with the caller's gid %u (%s)", NOBODY_UID,
           WALKERS, h.why);
        g_free(h.why);
        h = hide(s, NOBODY_UID, 6000, "walkers/sub");
        ok(refused_walk(&h), "and with that gid alone: gid 6000 does not get through (%s)", h.why);
        g_free(h.why);
        h = hide(s, NOBODY_UID, (gid_t) -1, "walkers/sub");
        ok(h.r == -EPERM && h.why && strstr(h.why, "identity"),
           "no entry and no gid from the caller: EPERM (%s)", h.why);
        g_free(h.why);
}

/* ---- fake user databases ---------------------------------------------------------------- */

static int too_many_groups(uid_t uid, gid_t *ret_gid, gid_t **ret_gids, size_t *ret_n) {
        size_t n = (size_t) NGROUPS_MAX + 1;
        gid_t *gids = malloc(n * sizeof *gids);

        if (!gids)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                gids[i] = (gid_t) (100000 + i);
        *ret_gid = gids[0];
        *ret_gids = gids;
        *ret_n = n;
        return 0;
}

static GMutex lookup_lock;
static GCond lookup_cond;
static bool lookup_release;
static int lookup_running, lookup_calls;

/* a user database that hangs until released, then has no entry */
static int blocking_identity(uid_t uid, gid_t *ret_gid, gid_t **ret_gids, size_t *ret_n) {
        g_mutex_lock(&lookup_lock);
        lookup_calls++;
        lookup_running++;
        while (!lookup_release)
                g_cond_wait(&lookup_cond, &lookup_lock);
        lookup_running--;
        g_mutex_unlock(&lookup_lock);
        return -ENOENT;
}

static gboolean on_tick(gpointer userdata) {
        return G_SOURCE_CONTINUE;
}

/* How many lookups are in the user database now. A thread's progress does not wake nsd's
 * loop: a tick does, while a test waits for this. */
static int lookups_running(void) {
        static guint tick;
        int n;

        if (!tick)
                tick = g_timeout_add(10, on_tick, NULL);

        g_mutex_lock(&lookup_lock);
        n = lookup_running;
        g_mutex_unlock(&lookup_lock);
        return n;
}

static void release_lookups(bool release) {
        g_mutex_lock(&lookup_lock);
        lookup_release = release;
        g_cond_broadcast(&lookup_cond);
        g_mutex_unlock(&lookup_lock);
}

static void test_too_many_groups(Server *s) {
        Hidden h;

        policy_set_identity_fn(s->policy, too_many_groups);
        h = hide(s, WALKER, WALKER, "walkers/sub");
        ok(h.r == -E2BIG && h.why && strstr(h.why, "NGROUPS_MAX"),
           "a user in more than NGROUPS_MAX groups: E2BIG (%s)", h.why);
        is_int(children_alive(s->children), 0, "no walk was started for it");
        g_free(h.why);
        policy_set_identity_fn(s->policy, NULL);
}

static void test_many_waiters(Server *s) {
        enum { N = 1000 };
        Hidden *h = g_new0(Hidden, N);
        g_autofree char *path = g_build_filename(tmpdir, "walkers/sub", NULL);
        unsigned before = policy_stats(s->policy)->identity_lookups;
        int started = 0;

        s->config.lookup_timeout_usec = 600 * 1000 * MSEC; /* no waiter times out here */
        policy_set_identity_fn(s->policy, blocking_identity);
        release_lookups(false);
        lookup_calls = 0;
        n_done = 0;
        for (int i = 0; i < N; i++) {
                g_autofree char *why = NULL;
                if (private_hide_start(s->policy, s->children, s->config.path_walk_timeout_usec,
                                       NOBODY_UID, (gid_t) -1, NOBODY_UID, path, false, on_hidden,
                                       &h[i], &why) == 0)
                        started++;
        }
        is_int(started, N, "%d HIDEs of uid %u wait for the user database", N, NOBODY_UID);
        ok(RUN_UNTIL(lookups_running() == 1), "its lookup runs in a thread");
        is_int(policy_stats(s->policy)->identity_lookups - before, 1, "one lookup for all of them");
        release_lookups(true);
        ok(RUN_UNTIL(n_done == N), "released, every HIDE gets the answer");
        int eperm = 0;
        for (int i = 0; i < N; i++) {
                eperm += h[i].r == -EPERM;
                g_free(h[i].why);
        }
        is_int(eperm, N, "each of them: no entry and no gid, EPERM");
        is_int(lookup_calls, 1, "the user database was asked once");
        g_free(h);
        policy_set_identity_fn(s->policy, NULL);
}

/* ---- through the request layer ---------------------------------------------------------- */

static void send_hide(int fd, const char *name, uint32_t seq) {
        struct nsd_req_hide req;

        nsd_msg_init(&req.hdr, NSD_REQ_HIDE, sizeof req, seq);
        req.uid = WALKER;
        snprintf(req.path, sizeof req.path, "%s/%s", tmpdir, name);
        if (loop_test_send(fd, &req, sizeof req, -1) < 0)
                abort();
}

static void send_status(int fd, uint32_t seq) {
        struct nsd_req_status req;

        nsd_msg_init(&req.hdr, NSD_REQ_STATUS, sizeof req, seq);
        if (loop_test_send(fd, &req, sizeof req, -1) < 0)
                abort();
}

static void test_requests(Server *s) {
        int walker, other;
        TestReply rep;

        if (!is_root) {
                for (int i = 0; i < 5; i++)
                        tap_skip("HIDE requests need root (nsd's probe of setfsuid)");
                return;
        }
        s->features |= NSD_FEATURE_OWNER_PRIVATE; /* the walk comes before the kernel's part */
        walker = core_test_peer(s, CONN_KIND_USER, WALKER, getpid());
        other = core_test_peer(s, CONN_KIND_USER, 2000, getpid());

        send_hide(walker, "walkers/sub", 1);
        rep = loop_test_next(walker);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EINVAL &&
                   strstr(rep.message, "is not a mount point"),
           "a HIDE request of uid %u walks with its groups from the user database (%s)", WALKER,
           rep.message);

        s->config.lookup_timeout_usec = 300 * MSEC;
        policy_set_identity_fn(s->policy, blocking_identity);
        release_lookups(false);
        send_hide(walker, "walkers/sub", 2);
        ok(RUN_UNTIL(lookups_running() == 1), "a HIDE waits for a user database that hangs");
        send_status(other, 3);
        rep = loop_test_next(other);
        ok(rep.type == NSD_REP_STATUS && lookups_running() == 1,
           "another client's STATUS is served meanwhile");
        rep = loop_test_next(walker);
        ok(rep.type == NSD_REP_ERROR && rep.error == -ETIMEDOUT,
           "past LookupTimeoutSec= the HIDE gets ETIMEDOUT (%s)", rep.message);
        ok(strstr(rep.message, "LookupTimeoutSec=") != NULL, "naming LookupTimeoutSec=");
        release_lookups(true);
        RUN_UNTIL(policy_stats(s->policy)->running == 0);
        policy_set_identity_fn(s->policy, NULL);
        close(walker);
        close(other);
}

int main(int argc, char *argv[]) {
        Config c;
        Server *s;

        if (!nss_wrapper_dir(argc, argv))
                return tap_done();
        write_nss_files(argv[1]);
        is_root = geteuid() == 0;
        tap_diag("running as uid %u", (unsigned) geteuid());
        if (!mkdtemp(tmpdir) || chmod(tmpdir, 0755) < 0)
                tap_bail_errno(tmpdir);
        make_dir("walkers", 0750, WALKERS);
        make_dir("closed", 0750, 0);

        c = loop_test_config();
        g_strfreev(c.users);
        c.users = g_strsplit("1500 1600 2000", " ", -1);
        s = core_test_server(&c); /* takes c */

        test_groups_reach_the_walk(s);
        test_too_many_groups(s);
        test_many_waiters(s);
        test_requests(s);

        server_free(s);
        remove_dirs();
        return tap_done();
}
