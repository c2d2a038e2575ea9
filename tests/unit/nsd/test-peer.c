/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-peer: who gets what (nsd-protocol.h "Who gets what", nsd/api/peer.c, api/handlers.c), through
 * the core library over socketpairs. The "user's namespace" of these tests is the one the
 * test runs in, so a peer in this process is inside it, and a child that unshares a mount
 * namespace (or chroots) is a sandbox:
 *   - a peer inside gets JOIN's and JOIN_SESSION's descriptors;
 *   - a peer in another mount namespace, or chrooted in this one, gets EPERM with the rule's
 *     message, no descriptor, no session, for JOIN, JOIN_SESSION, SHOW, RELEASE and HIDE,
 *     and still its STATUS and LIST;
 *   - a process that shares another's connection is not taken for it;
 *   - root gets descriptors from anywhere;
 *   - nobody but root creates a namespace by asking for descriptors;
 *   - STATUS gives a user its own figures only (issue 10, item 4), root everyone's.
 * No root needed: without it the children use a user namespace (skipped where that is off).
 * Nothing here changes a mount.
 */
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "core-test.h"
#include "tap.h"

#define WHY_DESCRIPTORS                                                       \
        "descriptors of a namespace go only to root or to a process already " \
        "inside it; see nsctl show"
#define UID 1000

static char tmpdir[] = "/tmp/test-peer.XXXXXX";

enum sandbox {
        SANDBOX_NONE,   /* a child in this namespace, at its root */
        SANDBOX_MNTNS,  /* a mount namespace of its own */
        SANDBOX_CHROOT, /* this mount namespace, another root */
};

/* In a child: become the sandbox. 0, or -errno. */
static int sandbox_enter(enum sandbox how) {
        bool root = geteuid() == 0;

        switch (how) {
        case SANDBOX_NONE:
                return 0;
        case SANDBOX_MNTNS:
                if (unshare(root ? CLONE_NEWNS : CLONE_NEWUSER | CLONE_NEWNS) < 0)
                        return -errno;
                return 0;
        case SANDBOX_CHROOT:
                if (!root && unshare(CLONE_NEWUSER) < 0)
                        return -errno;
                if (chroot(tmpdir) < 0 || chdir("/") < 0)
                        return -errno;
                return 0;
        }
        return -EINVAL;
}

/* Can this test make such a sandbox at all? */
static bool sandbox_possible(enum sandbox how, char *why, size_t size) {
        int p[2], r = 0;
        pid_t pid;

        if (pipe(p) < 0)
                abort();
        pid = fork();
        if (pid == 0) {
                r = sandbox_enter(how);
                (void) !write(p[1], &r, sizeof r);
                _exit(0);
        }
        close(p[1]);
        if (read(p[0], &r, sizeof r) != sizeof r)
                r = -EIO;
        close(p[0]);
        waitpid(pid, NULL, 0);
        if (r < 0)
                snprintf(why, size, "cannot make the sandbox here: %s", strerror(-r));
        return r == 0;
}

/* A request sent by a child in sandbox `how` over a connection of uid UID whose peer is that
 * child (share: the connection's peer is this process instead, the child only shares it).
 * nsd runs here meanwhile; the child reports the reply. */
static TestReply ask_from_child(Server *s, enum sandbox how, bool share, const void *msg,
                                size_t len) {
        int sv[2], go[2], back[2];
        TestReply rep = { .type = 0xdead };
        pid_t pid;
        char b = 0;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 || pipe(go) < 0 ||
            pipe(back) < 0)
                abort();
        pid = fork();
        if (pid == 0) {
                close(sv[0]);
                close(go[1]);
                close(back[0]);
                union {
                        struct nsd_msg_header hdr;
                        struct nsd_req_join_session js;
                        struct nsd_req_session_open so;
                        uint8_t bytes[NSD_MSG_SIZE_MAX];
                } m;
                memcpy(&m, msg, MIN(len, sizeof m));
                if (m.hdr.type == NSD_REQ_JOIN_SESSION && m.js.pid == 0)
                        m.js.pid = (uint32_t) getpid(); /* its own session leader */
                if (m.hdr.type == NSD_REQ_SESSION_OPEN && m.so.pid == 0)
                        m.so.pid = (uint32_t) getpid();
                if (sandbox_enter(how) < 0 || read(go[0], &b, 1) != 1 ||
                    loop_test_send(sv[1], &m, len, -1) < 0)
                        _exit(1);
                rep = loop_test_recv(sv[1], LOOP_TEST_DEADLINE_MS);
                (void) !write(back[1], &rep, sizeof rep);
                _exit(0);
        }
        close(sv[1]);
        close(go[0]);
        close(back[1]);
        (void) fcntl(sv[0], F_SETFL, O_NONBLOCK);
        (void) conn_manager_add(s->conns, CONN_KIND_USER, sv[0], UID, share ? getpid() : pid);
        (void) !write(go[1], "g", 1);
        if (RUN_UNTIL(loop_test_readable(back[0])) && read(back[0], &rep, sizeof rep) != sizeof rep)
                rep.type = 0xdead;
        close(go[1]);
        close(back[0]);
        waitpid(pid, NULL, 0);
        return rep;
}

static struct nsd_req_join join_msg(uid_t uid, uint32_t flags) {
        struct nsd_req_join q;

        nsd_msg_init(&q.hdr, NSD_REQ_JOIN, sizeof q, 7);
        q.uid = uid;
        q.flags = flags;
        return q;
}

static struct nsd_req_join_session join_session_msg(uid_t uid, pid_t leader) {
        struct nsd_req_join_session q;

        nsd_msg_init(&q.hdr, NSD_REQ_JOIN_SESSION, sizeof q, 8);
        q.uid = uid;
        q.pid = (uint32_t) leader;
        g_strlcpy(q.service, "test", sizeof q.service);
        return q;
}

static struct nsd_req_session_open session_open_msg(uid_t uid, pid_t leader) {
        struct nsd_req_session_open q = { 0 };

        nsd_msg_init(&q.hdr, NSD_REQ_SESSION_OPEN, sizeof q, 14);
        q.uid = uid;
        q.pid = (uint32_t) leader;
        g_strlcpy(q.service, "sandbox", sizeof q.service);
        return q;
}

static struct nsd_req_session_close session_close_msg(uid_t uid, uint64_t id, pid_t leader) {
        struct nsd_req_session_close q = { 0 };

        nsd_msg_init(&q.hdr, NSD_REQ_SESSION_CLOSE, sizeof q, 15);
        q.uid = uid;
        q.session_id = id;
        q.pid = (uint32_t) leader;
        return q;
}

static void test_inside(void) {
        Server *s = core_test_loop_server();
        struct nsd_req_join q = join_msg(UID, 0);
        struct nsd_req_join_session js = join_session_msg(UID, getpid());
        TestReply rep;
        int fd;

        core_test_user_here(s, UID);
        fd = core_test_peer(s, CONN_KIND_USER, UID, getpid());
        loop_test_send(fd, &q, sizeof q, -1);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_JOIN && rep.n_fds == 2,
           "a process inside the namespace gets JOIN's two descriptors (type %#x, %u fds, %s)",
           rep.type, rep.n_fds, rep.message);
        loop_test_send(fd, &js, sizeof js, -1);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_JOIN_SESSION && rep.n_fds == 2,
           "and JOIN_SESSION's (type %#x, %u fds, %s)", rep.type, rep.n_fds, rep.message);
        is_int(users_count_sessions(s->users), 1, "with its session");
        close(fd);

        /* a child at the same root in the same namespace is inside too */
        rep = ask_from_child(s, SANDBOX_NONE, false, &q, sizeof q);
        ok(rep.type == NSD_REP_JOIN && rep.n_fds == 2,
           "a child process in the namespace gets them (type %#x, %s)", rep.type, rep.message);
        server_free(s);
}

/* Every descriptor slot of this process (and so of nsd here) taken, up to a soft
 * RLIMIT_NOFILE lowered to a little above the descriptors open now: the descriptors that fill
 * it (closed, and the limit put back, by fd_table_free()). */
typedef struct FdTable {
        struct rlimit saved;
        GArray *fds;
} FdTable;

static FdTable fd_table_fill(void) {
        FdTable t = { .fds = g_array_new(false, false, sizeof(int)) };
        int fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
        struct rlimit rl;

        if (fd < 0 || getrlimit(RLIMIT_NOFILE, &t.saved) < 0)
                abort();
        g_array_append_val(t.fds, fd);
        rl = (struct rlimit) { .rlim_cur = MIN((rlim_t) fd + 32, t.saved.rlim_cur),
                               .rlim_max = t.saved.rlim_max };
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                abort();
        while ((fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0)) >= 0)
                g_array_append_val(t.fds, fd);
        return t;
}

static void fd_table_free(FdTable *t) {
        for (guint i = 0; i < t->fds->len; i++)
                close(g_array_index(t->fds, int, i));
        g_array_free(t->fds, true);
        (void) setrlimit(RLIMIT_NOFILE, &t->saved);
}

/* nsd short of descriptors when it looks where a client is (issue 25, "misleading refusals
 * under load"): a refusal still, but one that says nsd could not check, with EAGAIN for the
 * client to retry; not the EPERM of a sandboxed process. Once nsd has room, the same client
 * is served. */
static void test_nsd_short_of_descriptors(void) {
        Server *s = core_test_loop_server();
        struct nsd_req_join q = join_msg(UID, 0);
        struct nsd_req_show show = { 0 };
        TestReply rep;
        FdTable t;
        int fd;

        core_test_user_here(s, UID);
        nsd_msg_init(&show.hdr, NSD_REQ_SHOW, sizeof show, 9);
        show.uid = UID;
        fd = core_test_peer(s, CONN_KIND_USER, UID, getpid());

        t = fd_table_fill();
        ok(t.fds->len > 1, "the descriptor table is full (%u more taken)", t.fds->len);
        loop_test_send(fd, &q, sizeof q, -1);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EAGAIN && rep.n_fds == 0,
           "nsd without a free descriptor: JOIN is refused with EAGAIN, no descriptor (type "
           "%#x, %d, %u fds)",
           rep.type, rep.error, rep.n_fds);
        ok(strstr(rep.message, "nsd could not check where pid") &&
                   strstr(rep.message, g_strerror(EMFILE)) && strstr(rep.message, "retry") &&
                   !strstr(rep.message, "inside it"),
           "saying nsd could not check where the client is, and why (%s)", rep.message);
        loop_test_send(fd, &show, sizeof show, -1);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EAGAIN &&
                   strstr(rep.message, "nsd could not check where pid") &&
                   !strstr(rep.message, "answers only root"),
           "and SHOW likewise (%d, %s)", rep.error, rep.message);
        fd_table_free(&t);

        loop_test_send(fd, &q, sizeof q, -1);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_JOIN && rep.n_fds == 2,
           "with room again, the same client gets JOIN's descriptors (type %#x, %s)", rep.type,
           rep.message);
        core_test_end(s, fd);
}

static void test_sandboxed(enum sandbox how, const char *what) {
        Server *s = core_test_loop_server();
        struct nsd_req_join q = join_msg(UID, 0);
        struct nsd_req_status st;
        struct nsd_req_show show = { 0 };
        struct nsd_req_release rel = { 0 };
        struct nsd_req_hide hide = { 0 };
        struct nsd_req_list list;
        char why[256];
        TestReply rep;

        if (!sandbox_possible(how, why, sizeof why)) {
                tap_skip("%s: %s", what, why);
                server_free(s);
                return;
        }
        core_test_user_here(s, UID);

        rep = ask_from_child(s, how, false, &q, sizeof q);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EPERM && rep.n_fds == 0,
           "%s: JOIN is refused with EPERM and no descriptor (type %#x, %d, %u fds)", what,
           rep.type, rep.error, rep.n_fds);
        is_str(rep.message, WHY_DESCRIPTORS, "%s: saying the rule", what);

        /* leader 0: the child names itself, so the session part alone would pass */
        struct nsd_req_join_session js = join_session_msg(UID, 0);
        rep = ask_from_child(s, how, false, &js, sizeof js);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EPERM && rep.n_fds == 0,
           "%s: JOIN_SESSION is refused with EPERM (%s)", what, rep.message);
        is_int(users_count_sessions(s->users), 0, "%s: no session was opened", what);

        /* the flood of issue 19: a sandboxed process of the user opening sessions until the
         * user's budget is full, so that root's JOIN_SESSION of the user's next login fails */
        struct nsd_req_session_open so = session_open_msg(UID, 0);
        int refused = 0;
        s->config.max_sessions_per_user = 4; /* a full budget, quickly */
        for (unsigned i = 0; i < s->config.max_sessions_per_user; i++) {
                rep = ask_from_child(s, how, false, &so, sizeof so);
                refused += rep.type == NSD_REP_ERROR && rep.error == -EPERM;
        }
        is_int(refused, (int) s->config.max_sessions_per_user,
               "%s: %u SESSION_OPENs (MaxSessionsPerUser=), each refused with EPERM (%s)", what,
               s->config.max_sessions_per_user, rep.message);
        is_int(users_count_sessions(s->users), 0, "%s: none was opened", what);
        {
                struct nsd_req_join_session rjs = join_session_msg(UID, getpid());
                int root = core_test_peer(s, CONN_KIND_ROOT, 0, getpid());
                loop_test_send(root, &rjs, sizeof rjs, -1);
                rep = loop_test_next(root);
                ok(rep.type == NSD_REP_JOIN_SESSION,
                   "%s: root's JOIN_SESSION for the user's login still succeeds (type %#x, %s)",
                   what, rep.type, rep.message);
                close(root);
        }

        nsd_msg_init(&show.hdr, NSD_REQ_SHOW, sizeof show, 9);
        show.uid = UID;
        rep = ask_from_child(s, how, false, &show, sizeof show);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EPERM &&
                   strstr(rep.message, "SHOW answers only root and processes in the user's "
                                       "namespace or the initial one"),
           "%s: SHOW is refused with EPERM (%s)", what, rep.message);

        nsd_msg_init(&rel.hdr, NSD_REQ_RELEASE, sizeof rel, 10);
        rel.uid = UID;
        rep = ask_from_child(s, how, false, &rel, sizeof rel);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EPERM && strstr(rep.message, "RELEASE"),
           "%s: RELEASE is refused with EPERM (%s)", what, rep.message);
        ok(users_get(s->users, UID) != NULL, "%s: the namespace is still there", what);

        nsd_msg_init(&hide.hdr, NSD_REQ_HIDE, sizeof hide, 11);
        hide.uid = UID;
        g_strlcpy(hide.path, "/home", sizeof hide.path);
        rep = ask_from_child(s, how, false, &hide, sizeof hide);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EPERM && strstr(rep.message, "HIDE"),
           "%s: HIDE is refused with EPERM before any walk (%s)", what, rep.message);

        nsd_msg_init(&st.hdr, NSD_REQ_STATUS, sizeof st, 12);
        rep = ask_from_child(s, how, false, &st, sizeof st);
        ok(rep.type == NSD_REP_STATUS && rep.n_fds == 0, "%s: STATUS is answered", what);
        nsd_msg_init(&list.hdr, NSD_REQ_LIST, sizeof list, 13);
        rep = ask_from_child(s, how, false, &list, sizeof list);
        ok(rep.type == NSD_REP_LIST_ENTRY && rep.n_fds == 0,
           "%s: LIST is answered (its own entry first)", what);
        server_free(s);
}

/* Sessions belong to logins: the user's own processes have a budget of their own, and close
 * only what they opened, as its leader. */
static void test_session_budgets(void) {
        Config c = loop_test_config();
        c.max_sessions_per_user = 3;
        Server *s = core_test_server(&c);
        struct nsd_req_session_open so = session_open_msg(UID, getpid());
        struct nsd_req_join_session rjs = join_session_msg(UID, getpid());
        uint64_t root_id = 0, own_id = 0;
        int user, root, opened = 0;
        TestReply rep;

        core_test_user_here(s, UID);
        user = core_test_peer(s, CONN_KIND_USER, UID, getpid());
        root = core_test_peer(s, CONN_KIND_ROOT, 0, getpid());
        for (int i = 0; i < 3; i++) {
                loop_test_send(user, &so, sizeof so, -1);
                rep = loop_test_next(user);
                if (rep.type == NSD_REP_SESSION_OPEN) {
                        opened++;
                        own_id = ((struct nsd_rep_session_open *) &rep.msg)->session_id;
                }
        }
        is_int(opened, 3, "the user's own process opens 3 sessions (MaxSessionsPerUser=3)");
        loop_test_send(user, &so, sizeof so, -1);
        rep = loop_test_next(user);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EUSERS &&
                   strstr(rep.message, "its own processes opened"),
           "a fourth is refused, saying whose budget (%s)", rep.message);
        for (int i = 0; i < 3; i++) {
                loop_test_send(root, &rjs, sizeof rjs, -1);
                rep = loop_test_next(root);
                if (rep.type == NSD_REP_JOIN_SESSION)
                        root_id = ((struct nsd_rep_join_session *) &rep.msg)->session_id;
                else
                        break;
        }
        ok(rep.type == NSD_REP_JOIN_SESSION,
           "root's JOIN_SESSION for 3 logins of the user still succeeds (%s)", rep.message);

        struct nsd_req_session_close cl = session_close_msg(UID, root_id, getpid());
        loop_test_send(user, &cl, sizeof cl, -1);
        rep = loop_test_next(user);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EPERM &&
                   strstr(rep.message, "a login's (root opened it)"),
           "the user cannot close a login's session (%s)", rep.message);
        cl = session_close_msg(UID, own_id, getpid() + 1);
        loop_test_send(user, &cl, sizeof cl, -1);
        rep = loop_test_next(user);
        ok(rep.type == NSD_REP_ERROR && (rep.error == -EPERM || rep.error == -ENOENT),
           "nor its own session naming another leader (%s)", rep.message);
        cl = session_close_msg(UID, own_id, getpid());
        loop_test_send(user, &cl, sizeof cl, -1);
        rep = loop_test_next(user);
        ok(rep.type == NSD_REP_SESSION_CLOSE, "it closes one it opened (%s)", rep.message);
        is_int(users_sessions_by(s->users, UID, false), 3, "root's 3 sessions are open");
        core_test_end(s, user, root);
}

static void test_shared_connection(void) {
        Server *s = core_test_loop_server();
        struct nsd_req_join q = join_msg(UID, 0);
        TestReply rep;

        core_test_user_here(s, UID);
        /* the connection's peer is this process (inside); a child sends on it */
        rep = ask_from_child(s, SANDBOX_NONE, true, &q, sizeof q);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EPERM && rep.n_fds == 0 &&
                   strstr(rep.message, "the request came from pid") &&
                   strstr(rep.message, "not from the process that connected"),
           "a process that shares another's connection is not taken for it (%s)", rep.message);
        server_free(s);
}

static void test_root_and_creation(void) {
        Server *s = core_test_loop_server();
        struct nsd_req_join q = join_msg(UID, 0), other = join_msg(UID + 1, 0);
        TestReply rep;
        int fd;

        core_test_user_here(s, UID);
        /* root's connection, from a peer that is not even in the namespace (pid 1) */
        fd = core_test_peer(s, CONN_KIND_ROOT, 0, 1);
        loop_test_send(fd, &q, sizeof q, -1);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_JOIN && rep.n_fds == 2, "root gets the descriptors from anywhere");
        close(fd);

        fd = core_test_peer(s, CONN_KIND_USER, UID + 1, getpid());
        loop_test_send(fd, &other, sizeof other, -1);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EPERM,
           "a user asking for descriptors of a namespace it has not got: EPERM (%s)", rep.message);
        is_int(users_count(s->users), 1, "and no namespace was created for it");
        core_test_end(s, fd);
}

static struct nsd_rep_status status_of(int fd) {
        struct nsd_req_status q;
        struct nsd_rep_status st = { 0 };
        TestReply rep;

        nsd_msg_init(&q.hdr, NSD_REQ_STATUS, sizeof q, 21);
        loop_test_send(fd, &q, sizeof q, -1);
        rep = loop_test_next(fd);
        if (rep.type == NSD_REP_STATUS)
                memcpy(&st, &rep.msg, sizeof st);
        return st;
}

static void test_status_own_figures(void) {
        Server *s = core_test_loop_server();
        struct nsd_rep_status st, rst;
        int root, a1, a2, b, x;

        /* two users with a namespace; alice (UID) has two connections, bob one, a third
         * uid none and no namespace */
        core_test_user_here(s, UID);
        core_test_user_here(s, UID + 1);
        root = core_test_peer(s, CONN_KIND_ROOT, 0, getpid());
        a1 = core_test_peer(s, CONN_KIND_USER, UID, getpid());
        a2 = core_test_peer(s, CONN_KIND_USER, UID, getpid());
        b = core_test_peer(s, CONN_KIND_USER, UID + 1, getpid());
        x = core_test_peer(s, CONN_KIND_USER, UID + 2, getpid());

        st = rst = status_of(root);
        is_int(st.namespaces, 2, "root's STATUS: every namespace");
        is_int(st.connections, 5, "root's STATUS: every connection");
        st = status_of(a1);
        is_int(st.namespaces, 1, "a user's STATUS: its own namespace only");
        is_int(st.connections, 2, "a user's STATUS: its own connections only");
        is_int(st.sessions, 0, "a user's STATUS: its own sessions only");
        st = status_of(x);
        is_int(st.namespaces, 0, "a user without a namespace: none");
        is_int(st.connections, 1, "a user without a namespace: its one connection");
        is_int(st.pinned, 0, "a user without a namespace: nothing pinned");
        ok(st.hdr.type == NSD_REP_STATUS && rst.hdr.type == NSD_REP_STATUS &&
                   st.max_connections_per_uid == rst.max_connections_per_uid &&
                   st.max_namespaces == rst.max_namespaces && st.pid == rst.pid,
           "the limits in force and nsd's pid are the same for everyone");
        core_test_end(s, root, a1, a2, b, x);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        if (!mkdtemp(tmpdir) || chmod(tmpdir, 0755) < 0)
                abort();
        test_inside();
        test_nsd_short_of_descriptors();
        test_sandboxed(SANDBOX_MNTNS, "a peer in another mount namespace");
        test_sandboxed(SANDBOX_CHROOT, "a peer chrooted in the namespace");
        test_session_budgets();
        test_shared_connection();
        test_root_and_creation();
        test_status_own_figures();
        rmdir(tmpdir);
        return tap_done();
}
