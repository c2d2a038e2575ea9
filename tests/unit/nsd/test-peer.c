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
                        uint8_t bytes[NSD_MSG_SIZE_MAX];
                } m;
                memcpy(&m, msg, MIN(len, sizeof m));
                if (m.hdr.type == NSD_REQ_JOIN_SESSION && m.js.pid == 0)
                        m.js.pid = (uint32_t) getpid(); /* its own session leader */
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

static void test_inside(void) {
        Config c = loop_test_config();
        Server *s = core_test_server(&c);
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
        is_int(g_hash_table_size(s->sessions), 1, "with its session");
        close(fd);

        /* a child at the same root in the same namespace is inside too */
        rep = ask_from_child(s, SANDBOX_NONE, false, &q, sizeof q);
        ok(rep.type == NSD_REP_JOIN && rep.n_fds == 2,
           "a child process in the namespace gets them (type %#x, %s)", rep.type, rep.message);
        server_free(s);
}

static void test_sandboxed(enum sandbox how, const char *what) {
        Config c = loop_test_config();
        Server *s = core_test_server(&c);
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
        is_int(g_hash_table_size(s->sessions), 0, "%s: no session was opened", what);

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
        ok(user_get(s, UID) != NULL, "%s: the namespace is still there", what);

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

static void test_shared_connection(void) {
        Config c = loop_test_config();
        Server *s = core_test_server(&c);
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
        Config c = loop_test_config();
        Server *s = core_test_server(&c);
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
        is_int(g_hash_table_size(s->users), 1, "and no namespace was created for it");
        close(fd);
        server_free(s);
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
        Config c = loop_test_config();
        Server *s = core_test_server(&c);
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
        close(root);
        close(a1);
        close(a2);
        close(b);
        close(x);
        server_free(s);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        if (!mkdtemp(tmpdir) || chmod(tmpdir, 0755) < 0)
                abort();
        test_inside();
        test_sandboxed(SANDBOX_MNTNS, "a peer in another mount namespace");
        test_sandboxed(SANDBOX_CHROOT, "a peer chrooted in the namespace");
        test_shared_connection();
        test_root_and_creation();
        test_status_own_figures();
        rmdir(tmpdir);
        return tap_done();
}
