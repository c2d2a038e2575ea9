/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-fdstore: the fd store's budget (nsd/store/fdstore.c, and its users user.c, session.c,
 * server.c), against a fake service manager on $NOTIFY_SOCKET (fake-manager.h) that keeps
 * what nsd puts as systemd does and measures the LISTEN_FDNAMES= the next start would get:
 *   - that string never passes the budget (96 KiB; the kernel refuses 128 KiB at exec), with
 *     thousands of namespaces of 10-digit uids and sessions, nor the store its descriptor
 *     limit (systemd would drop the rest unseen);
 *   - sessions get at most their share, and namespaces still get in when sessions have
 *     used it: sessions make room for them, never the other way round;
 *   - a namespace without a pin gets in when pinned ones fill the store: the oldest pinned
 *     one's descriptor is removed for it (after sessions), said with what happened, and it
 *     is what the next start is passed; a pinned one takes no namespace's room;
 *   - what was passed back at start counts as much as what is put; a store passed back over
 *     the budget loses sessions until it is not;
 *   - a refused put says so once per crossing, at warning level, with what it means; the
 *     next refusals do not; a removal gives room back;
 *   - through the server: a namespace that found no room is put when a release makes room,
 *     and STATUS= tells how full the store is; one without a pin takes a pinned one's place,
 *     and what was removed is put back when its pin goes or room comes back.
 * nsd's log goes to a file here (stderr), to count its lines. No root needed.
 */
#include <fcntl.h>
#include <sys/syscall.h>

#include "base/log.h"
#include "core-test.h"
#include "domain/session.h"
#include "fake-manager.h"
#include "store/fdstore.h"
#include "tap.h"

#define UID_BASE 4000000000u /* 10 digits: "ns-4000000000" takes 14 bytes with its ':' */
#define NS_BYTES (sizeof "ns-4000000000")
#define SESSION_BYTES (sizeof "session-0123456789abcdef")

static char *tmpdir;
static char *log_path;
static FakeManager *mgr;
static int null_fd = -1;

/* ---- nsd's log ------------------------------------------------------------------------- */

static size_t log_mark(void) {
        struct stat st;

        return stat(log_path, &st) == 0 ? (size_t) st.st_size : 0;
}

/* Lines of nsd's log since mark at level (the "<N>" prefix) that contain text. */
static unsigned log_count(size_t mark, int level, const char *text) {
        g_autofree char *all = NULL;
        g_auto(GStrv) lines = NULL;
        char prefix[8];
        gsize len = 0;
        unsigned n = 0;

        if (!g_file_get_contents(log_path, &all, &len, NULL) || mark > len)
                return 0;
        snprintf(prefix, sizeof prefix, "<%d>", level);
        lines = g_strsplit(all + mark, "\n", -1);
        for (char **l = lines; *l; l++)
                if (g_str_has_prefix(*l, prefix) && strstr(*l, text))
                        n++;
        return n;
}

static void log_show(size_t mark, const char *text) {
        g_autofree char *all = NULL;
        g_auto(GStrv) lines = NULL;
        gsize len = 0;

        if (!g_file_get_contents(log_path, &all, &len, NULL) || mark > len)
                return;
        lines = g_strsplit(all + mark, "\n", -1);
        for (char **l = lines; *l; l++)
                if (strstr(*l, text))
                        tap_diag("log: %s", *l);
}

/* ---- helpers --------------------------------------------------------------------------- */

static int put_ns_as(FdStore *fs, unsigned uid, FdStoreClass c) {
        char name[FDSTORE_NAME_MAX];
        int r = fdstore_put(fs, null_fd, fdstore_ns_name(name, uid), c);

        fake_manager_drain(mgr);
        return r;
}

/* a pinned namespace: the store is its second line */
static int put_ns(FdStore *fs, unsigned uid) {
        return put_ns_as(fs, uid, FDSTORE_CLASS_PINNED);
}

static int remove_ns(FdStore *fs, unsigned uid) {
        char name[FDSTORE_NAME_MAX];
        int r = fdstore_remove(fs, fdstore_ns_name(name, uid));

        fake_manager_drain(mgr);
        return r;
}

static unsigned long long session_id(unsigned i) {
        return 0x9e3779b97f4a7c15ull + i; /* 16 hex digits, as nsd's random ids */
}

static int put_session(FdStore *fs, unsigned i) {
        char name[FDSTORE_NAME_MAX];
        int r = fdstore_put(fs, null_fd, fdstore_session_name(name, session_id(i)),
                            FDSTORE_CLASS_SESSION);

        fake_manager_drain(mgr);
        return r;
}

static FdStore *store_new(void) {
        FdStore *fs = fdstore_new(true);

        fdstore_add_foreign(fs, "user"); /* nsd.socket, nsd-root.socket */
        fdstore_add_foreign(fs, "root");
        return fs;
}

/* The budget as the fake service manager saw it, at any message since the last mark: the
 * names it held and nsd's fixed allowance for the rest within budget (the real rest, the
 * variable's and the sockets' names, is smaller), and below the kernel's limit anyway. */
static void check_listen(const char *when, size_t budget) {
        size_t rest = strlen("LISTEN_FDNAMES=") + mgr->sockets_bytes;
        size_t names = mgr->max_listen - rest;

        ok(names + FDSTORE_NAMES_FIXED <= budget && mgr->max_listen < FDSTORE_ENV_STRING_MAX,
           "%s: LISTEN_FDNAMES= never past the budget (at most %zu bytes of names + %u for the "
           "rest <= %zu; really %zu in all, the kernel refuses %u)",
           when, names, FDSTORE_NAMES_FIXED, budget, mgr->max_listen, FDSTORE_ENV_STRING_MAX);
        ok(mgr->dropped == 0 && mgr->max_n_fds <= mgr->max_fds,
           "%s: nothing put past FileDescriptorStoreMax=%u (at most %u held, %u dropped)", when,
           mgr->max_fds, mgr->max_n_fds, mgr->dropped);
}

/* ---- the budget: sessions their share, namespaces first ---------------------------------- */

static void test_budget(void) {
        FdStore *fs = store_new();
        FdStoreStats st;
        size_t mark = log_mark();
        unsigned sessions = 0, namespaces = 0, first_refused = 0, want_sessions, want_ns;
        int r;

        fake_manager_reset(mgr, 16384);
        is_int(fdstore_put(fs, null_fd, FDSTORE_PINNS, FDSTORE_CLASS_NAMESPACE), 1,
               "the pin namespace goes in");
        fake_manager_drain(mgr);

        /* sessions until their share is used, and beyond */
        for (unsigned i = 0; i < 1500; i++) {
                r = put_session(fs, i);
                if (r == 1)
                        sessions++;
                else if (r != -ENOSPC)
                        break;
        }
        want_sessions = FDSTORE_SESSIONS_SHARE / SESSION_BYTES;
        is_int(sessions, want_sessions,
               "sessions get their share (%u bytes: %u names of %zu bytes)", FDSTORE_SESSIONS_SHARE,
               want_sessions, SESSION_BYTES);
        is_int(fake_manager_count(mgr, FDSTORE_SESSION_PREFIX), want_sessions,
               "... and the service manager holds as many");
        fdstore_get_stats(fs, &st);
        ok(st.sessions_bytes <= FDSTORE_SESSIONS_SHARE && st.full[FDSTORE_CLASS_SESSION] &&
                   st.refused[FDSTORE_CLASS_SESSION] == 1500 - want_sessions,
           "... the rest refused (%u), the sessions full", st.refused[FDSTORE_CLASS_SESSION]);
        is_int(log_count(mark, LOG_WARNING,
                         "Sessions are kept by their state files only (after a restart"),
               1, "%u refused sessions: one warning, saying they are kept by their state files",
               1500 - want_sessions);
        ok(log_count(mark, LOG_WARNING, "session names would take") == 1,
           "... and why, with the figures");
        log_show(mark, "No room for 'session-");

        /* namespaces of 10-digit uids: they get in while sessions hold their share */
        mark = log_mark();
        for (unsigned i = 0; i < 8000; i++) {
                r = put_ns(fs, UID_BASE + i);
                if (r == 1 && first_refused == 0)
                        namespaces++;
                else if (r == -ENOSPC && first_refused == 0)
                        first_refused = UID_BASE + i;
        }
        /* the budget less the fixed part and "pinns" */
        want_ns = (FDSTORE_NAMES_BUDGET - FDSTORE_NAMES_FIXED - (unsigned) sizeof "pinns") /
                  NS_BYTES;
        is_int(namespaces, want_ns,
               "namespaces of 10-digit uids fill the whole budget (%u), none refused before",
               want_ns);
        is_int(fake_manager_count(mgr, FDSTORE_NS_PREFIX), want_ns,
               "... and the service manager holds them all");
        fdstore_get_stats(fs, &st);
        is_int(fake_manager_count(mgr, FDSTORE_SESSION_PREFIX), 0,
               "sessions made room for them (%u removed from the store)",
               st.evicted[FDSTORE_CLASS_SESSION]);
        is_int(st.evicted[FDSTORE_CLASS_SESSION], want_sessions, "... counted");
        check_listen("sessions, then namespaces", FDSTORE_NAMES_BUDGET);
        ok(st.names_bytes == mgr->names_bytes + FDSTORE_NAMES_FIXED,
           "nsd counts the names the service manager holds, and its fixed allowance for the "
           "rest (%zu bytes; the real rest: %zu)",
           st.names_bytes, fake_manager_listen_fdnames_len(mgr) - mgr->names_bytes);
        {
                g_autofree char *want = g_strdup_printf("The namespace of uid %u is kept by its "
                                                        "pin only",
                                                        first_refused);
                is_int(log_count(mark, LOG_WARNING, want), 1,
                       "the first namespace refused: a warning naming its uid %u", first_refused);
        }
        is_int(log_count(mark, LOG_WARNING, "No room for"), 1,
               "%u refused namespaces: that one warning only", 8000 - want_ns);
        log_show(mark, "No room for 'ns-");

        /* removal gives room back */
        mark = log_mark();
        r = 0;
        for (unsigned i = 0; i < 10; i++)
                r += remove_ns(fs, UID_BASE + i) == 1;
        is_int(r, 10, "10 namespaces removed");
        is_int(fake_manager_count(mgr, FDSTORE_NS_PREFIX), want_ns - 10,
               "... out of the service manager's store");
        r = 0;
        for (unsigned i = 0; i < 10; i++)
                r += put_ns(fs, UID_BASE + 10000 + i) == 1;
        is_int(r, 10, "... and 10 others take their room");
        is_int(log_count(mark, LOG_INFO, "has room for pinned namespaces again"), 1,
               "room again: said once, at info level");
        is_int(put_ns(fs, UID_BASE + 10010), -ENOSPC, "the 11th finds none");
        is_int(log_count(mark, LOG_WARNING, "No room for"), 0,
               "... and a crossing again within 10 minutes is not logged at warning level");
        is_int(remove_ns(fs, UID_BASE + 20000), 0,
               "removing a name never put sends nothing and frees nothing");
        check_listen("after removals", FDSTORE_NAMES_BUDGET);

        /* sessions get room back once namespaces leave it */
        is_int(put_session(fs, 5000), -ENOSPC, "a session now: no room (namespaces use it all)");
        for (unsigned i = 10; i < 20; i++)
                (void) remove_ns(fs, UID_BASE + i);
        is_int(put_session(fs, 5001), 1, "10 namespaces fewer: a session fits again");
        is_int(log_count(mark, LOG_INFO, "has room for sessions again"), 1,
               "... said once at info level");
        check_listen("sessions again", FDSTORE_NAMES_BUDGET);

        fdstore_get_stats(fs, &st);
        is_int(st.warnings, 2, "two warnings in all: one for sessions, one for namespaces");
        fdstore_free(fs);
}

/* ---- namespaces without a pin before pinned ones ------------------------------------------ */

static void test_unpinned(void) {
        unsigned want_ns = (FDSTORE_NAMES_BUDGET - FDSTORE_NAMES_FIXED -
                            (unsigned) sizeof "pinns") /
                           NS_BYTES;
        unsigned pinned = 0, unpinned = UID_BASE + 100000;
        char name[FDSTORE_NAME_MAX], oldest[FDSTORE_NAME_MAX], next[FDSTORE_NAME_MAX];
        FdStore *fs = store_new(), *again;
        g_auto(GStrv) names = NULL;
        FdStoreStats st;
        size_t mark;

        /* the budget filled with pinned namespaces, none refused yet */
        fake_manager_reset(mgr, 16384);
        (void) fdstore_put(fs, null_fd, FDSTORE_PINNS, FDSTORE_CLASS_NAMESPACE);
        for (unsigned i = 0; i < want_ns; i++)
                pinned += put_ns(fs, UID_BASE + i) == 1;
        fdstore_get_stats(fs, &st);
        ok(pinned == want_ns && st.names_bytes + NS_BYTES > FDSTORE_NAMES_BUDGET,
           "%u pinned namespaces fill the budget: no room for one more (%zu of %u bytes)", pinned,
           st.names_bytes, FDSTORE_NAMES_BUDGET);

        mark = log_mark();
        fdstore_ns_name(oldest, UID_BASE);
        fdstore_ns_name(next, UID_BASE + 1);
        is_int(put_ns_as(fs, unpinned, FDSTORE_CLASS_NAMESPACE), 1,
               "a namespace without a pin still gets in");
        ok(fake_manager_has(mgr, fdstore_ns_name(name, unpinned)),
           "... the service manager holds it");
        ok(!fake_manager_has(mgr, oldest) && !fdstore_contains(fs, oldest),
           "the oldest pinned namespace's descriptor is removed from the store for it");
        is_int(fake_manager_count(mgr, FDSTORE_NS_PREFIX), want_ns,
               "... that one only: the store holds %u namespaces", want_ns);
        fdstore_get_stats(fs, &st);
        ok(st.evicted[FDSTORE_CLASS_PINNED] == 1 && st.refused[FDSTORE_CLASS_NAMESPACE] == 0 &&
                   st.refused[FDSTORE_CLASS_PINNED] == 0,
           "... counted as removed; nothing refused");
        check_listen("a namespace without a pin in a store full of pinned ones",
                     FDSTORE_NAMES_BUDGET);
        ok(st.names_bytes == mgr->names_bytes + FDSTORE_NAMES_FIXED,
           "nsd's count and the service manager's agree (%zu bytes)", st.names_bytes);
        {
                g_autofree char *what = g_strdup_printf(
                        "No room for '%s' in the service manager's fd store: removed to make room "
                        "for '%s' (namespaces without a pin come before pinned namespaces)",
                        oldest, name);
                g_autofree char *means = g_strdup_printf("The namespace of uid %u is kept by its "
                                                         "pin only",
                                                         UID_BASE);
                is_int(log_count(mark, LOG_WARNING, what), 1,
                       "a warning names what happened: '%s' removed for '%s', and why", oldest,
                       name);
                is_int(log_count(mark, LOG_WARNING, means), 1, "... and what it means");
                is_int(log_count(mark, LOG_WARNING, "No room for"), 1, "... the only warning");
        }
        log_show(mark, "removed to make room");

        is_int(put_ns_as(fs, unpinned + 1, FDSTORE_CLASS_NAMESPACE), 1,
               "a second namespace without a pin gets in");
        ok(!fake_manager_has(mgr, next) && fake_manager_count(mgr, FDSTORE_NS_PREFIX) == want_ns,
           "... in the place of the next oldest pinned one");
        is_int(log_count(mark, LOG_WARNING, "No room for"), 1,
               "... said at debug level only (the same crossing)");
        is_int(put_ns(fs, UID_BASE), -ENOSPC,
               "the pinned namespace removed finds no room again: a pinned one takes no "
               "namespace's room");
        is_int(fake_manager_count(mgr, FDSTORE_NS_PREFIX), want_ns, "... and removes nothing");
        check_listen("two namespaces without a pin", FDSTORE_NAMES_BUDGET);

        /* a restart: the service manager passes back what it holds, counted anew */
        again = store_new();
        names = fake_manager_names(mgr);
        for (char **n = names; *n; n++) {
                int fd = dup(null_fd);
                if (fd < 0)
                        tap_bail_errno("dup");
                fdstore_add_passed(again, fd, *n);
        }
        fdstore_get_stats(again, &st);
        ok(fdstore_contains(again, fdstore_ns_name(name, unpinned)) &&
                   fdstore_contains(again, fdstore_ns_name(name, unpinned + 1)),
           "after a restart, the namespaces without a pin are passed back");
        ok(!fdstore_contains(again, oldest) && !fdstore_contains(again, next),
           "... not the pinned ones removed for them (their pins bring them back)");
        ok(st.names_bytes == mgr->names_bytes + FDSTORE_NAMES_FIXED &&
                   st.names_bytes <= FDSTORE_NAMES_BUDGET,
           "... and counted anew, the store is within the budget (%zu of %u bytes)", st.names_bytes,
           FDSTORE_NAMES_BUDGET);
        is_int(put_ns(again, UID_BASE), -ENOSPC,
               "at that start, a pinned namespace adopted from its pin takes no room from what "
               "was passed back (a namespace counts as one without a pin until adopted)");
        ok(fake_manager_has(mgr, fdstore_ns_name(name, unpinned)) &&
                   fake_manager_count(mgr, FDSTORE_NS_PREFIX) == want_ns,
           "... the namespaces passed back stay in the store");
        fdstore_free(again);

        /* sessions give up their room before pinned namespaces do */
        for (unsigned i = 2; i < 6; i++)
                (void) remove_ns(fs, UID_BASE + i);
        is_int((put_session(fs, 0) == 1) + (put_session(fs, 1) == 1), 2,
               "4 pinned namespaces released: 2 sessions take some of their room");
        is_int(put_ns_as(fs, unpinned + 2, FDSTORE_CLASS_NAMESPACE), 1,
               "a third namespace without a pin gets in");
        fdstore_get_stats(fs, &st);
        ok(fake_manager_count(mgr, FDSTORE_SESSION_PREFIX) == 1 &&
                   st.evicted[FDSTORE_CLASS_SESSION] == 1 && st.evicted[FDSTORE_CLASS_PINNED] == 2,
           "... in the place of a session, not of a pinned namespace");
        check_listen("sessions before pinned namespaces", FDSTORE_NAMES_BUDGET);
        fdstore_free(fs);
}

/* ---- FileDescriptorStoreMax= ------------------------------------------------------------- */

static void test_max_fds(void) {
        FdStore *fs = store_new();
        unsigned ns = 0, sessions = 0;

        fake_manager_reset(mgr, 100);
        fdstore_set_limits(fs, 0, 0, 100);
        for (unsigned i = 0; i < 60; i++)
                sessions += put_session(fs, i) == 1;
        is_int(sessions, 60, "60 sessions in a store of 100 descriptors");
        (void) fdstore_put(fs, null_fd, FDSTORE_PINNS, FDSTORE_CLASS_NAMESPACE);
        fake_manager_drain(mgr);
        for (unsigned i = 0; i < 150; i++)
                ns += put_ns(fs, 1000 + i) == 1;
        is_int(ns, 99, "namespaces fill it (the pin namespace and 99)");
        is_int(fake_manager_count(mgr, FDSTORE_SESSION_PREFIX), 0, "... sessions made room");
        is_int(put_session(fs, 1000), -ENOSPC, "a session finds no room");
        check_listen("100 descriptors", FDSTORE_NAMES_BUDGET);
        fdstore_free(fs);
}

/* ---- what was passed back at start ------------------------------------------------------- */

static void test_passed(void) {
        FdStore *fs = store_new();
        FdStoreStats st;
        size_t mark = log_mark();
        unsigned n_ns = 6000, n_sess = 900;
        char name[FDSTORE_NAME_MAX];
        int fd;

        /* an nsd without a budget filled it: 6000 namespaces, 900 sessions, 107 KB */
        fake_manager_reset(mgr, 16384);
        for (unsigned i = 0; i < n_ns + n_sess; i++) {
                if (i < n_ns)
                        fdstore_ns_name(name, UID_BASE + i);
                else
                        fdstore_session_name(name, session_id(i));
                fake_manager_seed(mgr, name);
                fd = dup(null_fd);
                if (fd < 0)
                        tap_bail_errno("dup");
                fdstore_add_passed(fs, fd, name);
        }
        fdstore_get_stats(fs, &st);
        ok(st.names_bytes == mgr->names_bytes + FDSTORE_NAMES_FIXED &&
                   st.names_bytes > FDSTORE_NAMES_BUDGET,
           "what was passed back counts: %zu bytes, the service manager's names and the fixed "
           "allowance (over the budget)",
           st.names_bytes);
        /* taken, as adoption and the sessions' restore do: still in the store */
        for (unsigned i = 0; i < n_ns + n_sess; i++) {
                if (i < n_ns)
                        fdstore_ns_name(name, UID_BASE + i);
                else
                        fdstore_session_name(name, session_id(i));
                fd = fdstore_take(fs, name);
                if (fd >= 0)
                        close(fd);
        }
        is_int(put_session(fs, 99999), -ENOSPC, "taken, it still counts: no room for a session");
        fdstore_drop_unclaimed(fs);
        fake_manager_mark(mgr); /* from here on, the budget holds */
        fdstore_get_stats(fs, &st);
        ok(fake_manager_listen_fdnames_len(mgr) <= FDSTORE_NAMES_BUDGET &&
                   st.names_bytes == mgr->names_bytes + FDSTORE_NAMES_FIXED,
           "after the start, sessions removed until it fits: %zu bytes (%u sessions left)",
           fake_manager_listen_fdnames_len(mgr), fake_manager_count(mgr, FDSTORE_SESSION_PREFIX));
        is_int(fake_manager_count(mgr, FDSTORE_NS_PREFIX), n_ns, "... every namespace stays");
        is_int(log_count(mark, LOG_WARNING, "passed back more than nsd's budget"), 1,
               "... said at warning level");
        is_int(put_ns(fs, UID_BASE + n_ns), 1,
               "a new namespace gets in (a session makes room for it)");
        check_listen("passed back", FDSTORE_NAMES_BUDGET);
        fdstore_free(fs);
}

/* ---- through the server ----------------------------------------------------------------- */

static int pidfd_self(void) {
        return (int) syscall(SYS_pidfd_open, getpid(), 0);
}

static void test_server(void) {
        /* room for the fixed part, "pinns" (not here: no pin store), 17 namespaces of 10
         * digits, and 4 sessions of their own */
        size_t budget = FDSTORE_NAMES_FIXED + 17 * NS_BYTES + 10;
        FdStore *fs = store_new();
        Config c = loop_test_config();
        Session *sess[6] = { 0 };
        size_t mark = log_mark();
        Server *s = NULL;
        User *u[20];
        unsigned stored = 0, n_sess = 0;
        FdStoreStats st;
        int pidfd;

        fake_manager_reset(mgr, 16384);
        fdstore_set_limits(fs, budget, 4 * SESSION_BYTES, 0);
        if (server_new(&c, &(ServerSetup) { .user_fd = -1, .root_fd = -1, .fdstore = fs }, &s) < 0)
                abort();
        for (unsigned i = 0; i < 2; i++)
                u[i] = core_test_user_here(s, UID_BASE + i);
        fake_manager_drain(mgr);
        pidfd = pidfd_self();
        if (pidfd < 0) {
                tap_skip("no pidfd_open here: sessions through the server");
        } else {
                close(pidfd);
                for (unsigned i = 0; i < 6; i++) {
                        sess[i] = users_open_session(s->users, u[i % 2], getpid(), "test",
                                                     pidfd_self(), 0);
                        fake_manager_drain(mgr);
                }
                n_sess = fake_manager_count(mgr, FDSTORE_SESSION_PREFIX);
                is_int(n_sess, 4, "6 sessions opened: 4 in the store (their share)");
        }
        for (unsigned i = 2; i < 20; i++) {
                u[i] = core_test_user_here(s, UID_BASE + i);
                fake_manager_drain(mgr);
        }
        for (unsigned i = 0; i < 20; i++)
                stored += user_is_stored(u[i]);
        is_int(stored, 17, "20 namespaces: 17 in the store, the budget's");
        ok(!user_is_stored(u[17]) && !user_is_stored(u[18]) && !user_is_stored(u[19]),
           "... the last 3 not, and their users know it");
        is_int(fake_manager_count(mgr, FDSTORE_SESSION_PREFIX), 0,
               "sessions made room for namespaces");
        is_int(log_count(mark, LOG_WARNING, "not pinned either: only nsd's descriptor keeps it"), 3,
               "a namespace without a pin (as here) and without room: a warning each, it would "
               "not survive a restart");
        check_listen("server", budget);
        log_show(mark, "fd store");

        server_notify_status_now(s);
        fake_manager_drain(mgr);
        {
                g_autofree char *want = g_strdup_printf("full: 3 namespaces without a pin not in "
                                                        "it (lost at a restart), %u "
                                                        "sessions kept by their state files only",
                                                        users_count_sessions(s->users));
                ok(mgr->status && g_str_has_prefix(mgr->status, "20 namespaces, ") &&
                           strstr(mgr->status, "; fd store: ") && strstr(mgr->status, want),
                   "STATUS= says how full the store is and what is not in it: '%s'",
                   mgr->status ? mgr->status : "(none)");
        }

        /* a release makes room: one of those without gets in */
        for (unsigned i = 0; i < G_N_ELEMENTS(sess); i++)
                if (sess[i] && sess[i]->user == u[0])
                        users_end_session(s->users, g_steal_pointer(&sess[i]));
        is_int(users_release(s->users, u[0], "test", false, NULL, NULL, NULL), 0, "uid %u released",
               UID_BASE);
        fake_manager_drain(mgr);
        ok(!fake_manager_has(mgr, "ns-4000000000"), "... out of the store");
        stored = 0;
        for (unsigned i = 17; i < 20; i++)
                stored += user_is_stored(u[i]);
        is_int(stored, 1, "... and one namespace that found no room is put in its place");
        is_int(fake_manager_count(mgr, FDSTORE_NS_PREFIX), 17, "the store holds 17 again");
        check_listen("after a release", budget);
        fdstore_get_stats(fs, &st);
        ok(st.n_fds == mgr->n_fds && st.names_bytes == mgr->names_bytes + FDSTORE_NAMES_FIXED,
           "nsd's count and the service manager's agree (%u descriptors, %zu bytes)", st.n_fds,
           st.names_bytes);

        for (unsigned i = 0; i < G_N_ELEMENTS(sess); i++)
                if (sess[i])
                        users_end_session(s->users, sess[i]);
        server_free(s);
        fake_manager_drain(mgr);
}

/* Through the server, with room for 3 namespaces: those without a pin take the room of pinned
 * ones, and what was removed is put back when room comes back or its pin goes. */
static void test_server_pinned(void) {
        size_t budget = FDSTORE_NAMES_FIXED + 3 * NS_BYTES + 10;
        FdStore *fs = store_new();
        Config c = loop_test_config();
        size_t mark = log_mark();
        Server *s = NULL;
        User *u[6];

        fake_manager_reset(mgr, 16384);
        fdstore_set_limits(fs, budget, 0, 0);
        if (server_new(&c, &(ServerSetup) { .user_fd = -1, .root_fd = -1, .fdstore = fs }, &s) < 0)
                abort();
        for (unsigned i = 0; i < 3; i++)
                u[i] = core_test_user_here_pinned(s, UID_BASE + i, true);
        u[3] = core_test_user_here_pinned(s, UID_BASE + 3, false);
        fake_manager_drain(mgr);
        ok(user_is_stored(u[3]) && fake_manager_has(mgr, "ns-4000000003"),
           "3 pinned namespaces fill the store: one without a pin gets in");
        ok(!user_is_stored(u[0]) && !fake_manager_has(mgr, "ns-4000000000") &&
                   user_is_stored(u[1]) && user_is_stored(u[2]),
           "... in the place of the oldest pinned one, and its user knows it");
        is_int(log_count(mark, LOG_WARNING,
                         "No room for 'ns-4000000000' in the service "
                         "manager's fd store: removed to make room for "
                         "'ns-4000000003'"),
               1, "a warning names what happened");
        is_int(log_count(mark, LOG_WARNING, "not pinned either"), 0,
               "... and none says a namespace is lost");
        server_notify_status_now(s);
        fake_manager_drain(mgr);
        ok(mgr->status &&
                   strstr(mgr->status, "full: 1 namespaces kept by their pins only, 0 "
                                       "sessions") &&
                   !strstr(mgr->status, "without a pin"),
           "STATUS= counts it as kept by its pin only: '%s'", mgr->status ? mgr->status : "");

        /* the pinned one removed loses its pin: it takes the place of the next pinned one */
        u[0]->ns->pinned = false;
        (void) user_store(u[0]); /* as for every change of a pin */
        fake_manager_drain(mgr);
        ok(user_is_stored(u[0]) && !user_is_stored(u[1]) && !fake_manager_has(mgr, "ns-4000000001"),
           "the namespace removed loses its pin: it is put back, in the place of the next "
           "pinned one");

        /* a release gives room back: the pinned one removed is put back */
        mark = log_mark();
        is_int(users_release(s->users, u[2], "test", false, NULL, NULL, NULL), 0, "uid %u released",
               UID_BASE + 2);
        fake_manager_drain(mgr);
        ok(user_is_stored(u[1]) && fake_manager_has(mgr, "ns-4000000001"),
           "... the pinned namespace removed before is put back in its room");
        is_int(log_count(mark, LOG_INFO, "has room for pinned namespaces again"), 1,
               "... room again, said at info level");

        /* the store holds namespaces without a pin only: the next finds no room, until one
         * of them is pinned again */
        u[4] = core_test_user_here_pinned(s, UID_BASE + 4, false);
        u[5] = core_test_user_here_pinned(s, UID_BASE + 5, false);
        fake_manager_drain(mgr);
        ok(user_is_stored(u[4]) && !user_is_stored(u[1]),
           "another without a pin takes the last pinned one's place");
        ok(!user_is_stored(u[5]) && log_count(mark, LOG_WARNING,
                                              "namespace of uid 4000000005 is not pinned "
                                              "either") == 1,
           "with namespaces without a pin alone in the store, the next finds no room: said");
        u[3]->ns->pinned = true;
        (void) user_store(u[3]); /* as users_repin() does */
        users_store_more(s->users);
        fake_manager_drain(mgr);
        ok(user_is_stored(u[5]) && !user_is_stored(u[3]),
           "one of them pinned again: the one without a pin that found no room takes its place");
        is_int(fake_manager_count(mgr, FDSTORE_NS_PREFIX), 3, "the store holds 3 namespaces");
        check_listen("server, pinned and not", budget);
        {
                FdStoreStats st;
                fdstore_get_stats(fs, &st);
                ok(st.n_fds == mgr->n_fds &&
                           st.names_bytes == mgr->names_bytes + FDSTORE_NAMES_FIXED,
                   "nsd's count and the service manager's agree (%u descriptors, %zu bytes)",
                   st.n_fds, st.names_bytes);
        }
        server_free(s);
        fake_manager_drain(mgr);
}

int main(void) {
        int log_fd;

        tmpdir = g_dir_make_tmp("test-fdstore.XXXXXX", NULL);
        if (!tmpdir)
                tap_bail_errno("mkdtemp");
        log_path = g_build_filename(tmpdir, "log", NULL);
        log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (log_fd < 0 || null_fd < 0 || dup2(log_fd, STDERR_FILENO) < 0)
                tap_bail_errno("setup");
        close(log_fd);
        log_setup(LOG_TARGET_STDERR, LOG_INFO);
        mgr = fake_manager_new(tmpdir, 16384);

        test_budget();
        test_unpinned();
        test_max_fds();
        test_passed();
        test_server();
        test_server_pinned();

        fake_manager_free(mgr);
        close(null_fd);
        unlink(log_path);
        rmdir(tmpdir);
        g_free(log_path);
        g_free(tmpdir);
        return tap_done();
}
