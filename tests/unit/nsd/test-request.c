/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-request: the wire side of a request (nsd/transport/request.c) bound to the transport
 * with a handler table of the test's own, no Server: the table of types, malformed messages
 * refused and their connection closed, a type without a handler refused as unknown, a refusal
 * that keeps the connection and is told to the table's refused(), a request that answers later, one whose client leaves meanwhile,
 * and a streaming reply. TAP, no root.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include "loop-test.h"
#include "tap.h"
#include "transport/request.h"

/* ---- the test's handlers ----------------------------------------------------------------- */

static struct {
        unsigned calls;
        Request *held; /* a request left pending (a reference of the test's) */
        unsigned stream_left;
        /* RequestHandlers.refused: the last refusal it heard of */
        unsigned refusals;
        uint16_t refused_type;
        int refused_error;
        char refused_why[128];
} t;

/* STATUS: answered at once, with its header only as a STATUS reply */
static int handle_status(Request *r) {
        struct nsd_rep_status rep = { 0 };

        t.calls++;
        nsd_msg_init(&rep.hdr, NSD_REP_STATUS, sizeof rep, r->seq);
        (void) request_reply(r, &rep, sizeof rep, NULL, 0);
        return 0;
}

/* JOIN: refused with a reason; RELEASE: refused with none (strerror) */
static int handle_join(Request *r) {
        t.calls++;
        return request_refuse(r, EPERM, "the test says no to uid %u",
                              (unsigned) REQUEST_MSG(r, struct nsd_req_join)->uid);
}

static int handle_release(Request *r) {
        t.calls++;
        return -EBUSY;
}

/* SESSION_OPEN: pending, held by the test, with the descriptor it carried */
static int handle_pending(Request *r) {
        t.calls++;
        t.held = request_ref(r);
        return REQUEST_PENDING;
}

/* LIST: t.stream_left entries as the socket drains, then the end */
static bool produce(Request *r) {
        while (t.stream_left > 0 && request_can_send(r)) {
                struct nsd_rep_list_entry e = { 0 };

                nsd_msg_init(&e.hdr, NSD_REP_LIST_ENTRY, sizeof e, r->seq);
                (void) request_reply(r, &e, sizeof e, NULL, 0);
                t.stream_left--;
        }
        if (t.stream_left > 0 || !request_can_send(r))
                return false;
        struct nsd_rep_stream_end end = { 0 };
        nsd_msg_init(&end.hdr, NSD_REP_LIST_END, sizeof end, r->seq);
        (void) request_reply(r, &end, sizeof end, NULL, 0);
        return true;
}

static int handle_list(Request *r) {
        t.calls++;
        return request_stream(r, NULL, NULL, produce);
}

/* no handler for JOIN_SESSION and SESSION_CLOSE: unknown to this table */
static const RequestHandler table[_NSD_REQ_MAX] = {
        [NSD_REQ_STATUS] = handle_status,   [NSD_REQ_SHOW] = handle_status,
        [NSD_REQ_HIDE] = handle_status,     [NSD_REQ_JOIN] = handle_join,
        [NSD_REQ_RELEASE] = handle_release, [NSD_REQ_SESSION_OPEN] = handle_pending,
        [NSD_REQ_LIST] = handle_list,
};
static void on_refused(Request *r, int error) {
        t.refusals++;
        t.refused_type = r->type->type;
        t.refused_error = error;
        snprintf(t.refused_why, sizeof t.refused_why, "%s", r->why ? r->why : "");
}

static const RequestHandlers handlers = { .table = table, .userdata = &t, .refused = on_refused };

static Config config;

static uint16_t next_type_after(int fd) {
        return loop_test_next(fd).type;
}

static ConnManager *manager_new(void) {
        return conn_manager_new(&config, &request_conn_handler, (void *) &handlers);
}

static int peer(ConnManager *m) {
        return loop_test_peer(m, CONN_KIND_USER, 1000, getpid(), 0, NULL);
}

/* ---- the table ----------------------------------------------------------------------------- */

static void test_table(void) {
        size_t n;
        bool sizes = true, all = true;

        (void) request_types(&n);
        for (uint16_t type = NSD_REQ_JOIN; type < _NSD_REQ_MAX; type++) {
                const RequestType *row = request_type_get(type);
                if (!row) {
                        all = false;
                        continue;
                }
                if (row->type != type || row->size != nsd_request_size(type) || !row->name)
                        sizes = false;
        }
        ok(all, "every request type of nsd-protocol.h (1..%d) has a row", _NSD_REQ_MAX - 1);
        ok(sizes, "every row's size is nsd_request_size() of its type");
        ok(n == _NSD_REQ_MAX && !request_type_get(0) && !request_type_get(_NSD_REQ_MAX) &&
                   !request_type_get(NSD_REP_JOIN),
           "no row for type 0, past the last request or for a reply type");
        is_str(request_type_name(NSD_REQ_JOIN_SESSION), "JOIN_SESSION", "JOIN_SESSION's name");
        is_str(request_type_name(0), "unknown", "type 0 is 'unknown'");
        is_int(request_type_get(NSD_REQ_JOIN_SESSION)->fd_flag, NSD_JOIN_SESSION_PIDFD,
               "JOIN_SESSION's pidfd rides on NSD_JOIN_SESSION_PIDFD");
}

/* ---- malformed messages ------------------------------------------------------------------ */

/* Send msg on a fresh connection: the reply must be an error naming what, then EOF. */
static void refused(ConnManager *m, const void *msg, size_t len, int pass_fd, int error,
                    const char *what, const char *name) {
        int fd = peer(m);
        unsigned calls = t.calls, bad = conn_manager_stats(m)->dropped_bad;
        TestReply rep;

        loop_test_send(fd, msg, len, pass_fd);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_ERROR && rep.error == -error && strstr(rep.message, what),
           "%s: %s (%s)", name, strerror(error), rep.message);
        ok(loop_test_at_eof(fd) && conn_manager_stats(m)->dropped_bad == bad + 1 &&
                   t.calls == calls,
           "%s: the connection is closed, no handler ran", name);
        close(fd);
}

static void test_malformed(void) {
        ConnManager *m = manager_new();
        struct nsd_req_join join;
        struct nsd_req_show show;
        struct nsd_req_hide hide;
        struct nsd_req_session_open so;
        struct nsd_req_join_session js = { 0 };
        struct nsd_req_status st;
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

        nsd_msg_init(&join.hdr, NSD_REQ_JOIN, sizeof join, 3);
        join.uid = 1000;
        join.flags = 0x80;
        refused(m, &join, sizeof join, -1, EINVAL, "unknown JOIN flags (0x80)",
                "unknown JOIN flags");
        refused(m, "garbage, not a message", 22, -1, EBADMSG, "", "garbage");
        join.flags = 0;
        join.hdr.flags = 1;
        refused(m, &join, sizeof join, -1, EINVAL, "flags set in the header", "header flags");
        join.hdr.flags = 0;
        refused(m, &join, sizeof join - 1, -1, EBADMSG, "JOIN: 31 bytes, expected 32",
                "a JOIN one byte short");
        refused(m, &join, sizeof join, devnull, EBADMSG, "1 descriptor sent with JOIN, expected 0",
                "a descriptor with JOIN");

        nsd_msg_init(&show.hdr, NSD_REQ_SHOW, sizeof show, 4);
        show.uid = 1000;
        show.reserved = 1;
        refused(m, &show, sizeof show, -1, EINVAL, "reserved field not zero",
                "SHOW's reserved field");
        nsd_msg_init(&hide.hdr, NSD_REQ_HIDE, sizeof hide, 5);
        hide.uid = 1000;
        hide.flags = 0;
        g_strlcpy(hide.path, "relative/path", sizeof hide.path);
        refused(m, &hide, sizeof hide, -1, EINVAL, "path not absolute", "HIDE's relative path");
        nsd_msg_init(&so.hdr, NSD_REQ_SESSION_OPEN, sizeof so, 6);
        so.uid = 1000;
        so.pid = (uint32_t) getpid();
        so.flags = NSD_SESSION_PIDFD;
        so.reserved = 0;
        g_strlcpy(so.service, "test", sizeof so.service);
        refused(m, &so, sizeof so, -1, EBADMSG, "0 descriptors sent with SESSION_OPEN, expected 1",
                "the pidfd flag without a descriptor");
        memset(so.service, 'x', sizeof so.service);
        refused(m, &so, sizeof so, devnull, EINVAL, "service name not NUL-terminated",
                "a service name without its NUL");
        g_strlcpy(so.service, "x\n<0>nsd: FORGED LINE\n", sizeof so.service);
        refused(m, &so, sizeof so, devnull, EINVAL,
                "service name is not printable ASCII (byte 1 is 0x0a",
                "a service name that would forge a log line");
        g_strlcpy(so.service, "su\xc3\xa9", sizeof so.service);
        refused(m, &so, sizeof so, devnull, EINVAL, "byte 2 is 0xc3", "a service name in UTF-8");

        /* a well-formed message of a type this table has no handler for */
        nsd_msg_init(&js.hdr, NSD_REQ_JOIN_SESSION, sizeof js, 7);
        js.uid = 1000;
        js.pid = (uint32_t) getpid();
        g_strlcpy(js.service, "test", sizeof js.service);
        refused(m, &js, sizeof js, -1, EOPNOTSUPP, "unknown request type",
                "a type without a handler");
        nsd_msg_init(&st.hdr, NSD_REQ_STATUS, sizeof st, 8);
        st.hdr.type = 200;
        refused(m, &st, sizeof st, -1, EOPNOTSUPP, "", "a type the protocol does not know");
        close(devnull);
        conn_manager_free(m);
}

/* ---- refusals, answers later, streams ---------------------------------------------------- */

static void test_refusal_keeps_connection(void) {
        ConnManager *m = manager_new();
        int fd = peer(m);
        struct nsd_req_join join;
        struct nsd_req_release rel = { 0 };
        TestReply rep;

        nsd_msg_init(&join.hdr, NSD_REQ_JOIN, sizeof join, 21);
        join.uid = 1234;
        join.flags = 0;
        loop_test_send(fd, &join, sizeof join, -1);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EPERM && rep.seq == 21 &&
                   strcmp(rep.message, "the test says no to uid 1234") == 0,
           "a handler's request_refuse(): EPERM with its message and the request's seq (%s)",
           rep.message);
        is_int(((struct nsd_rep_error *) &rep.msg)->request_type, NSD_REQ_JOIN,
               "naming the type refused");
        ok(t.refusals == 1 && t.refused_type == NSD_REQ_JOIN && t.refused_error == -EPERM &&
                   strcmp(t.refused_why, "the test says no to uid 1234") == 0,
           "the table's refused() hears of it, with the request, the error and the reason (the "
           "journal's join-refused)");
        nsd_msg_init(&rel.hdr, NSD_REQ_RELEASE, sizeof rel, 22);
        loop_test_send(fd, &rel, sizeof rel, -1);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EBUSY &&
                   strcmp(rep.message, strerror(EBUSY)) == 0,
           "a refusal without a message says strerror (%s)", rep.message);
        loop_test_send_type(fd, NSD_REQ_STATUS, 23);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_STATUS && rep.seq == 23,
           "the connection stays: its next request is answered");
        ok(t.refusals == 2 && t.refused_type == NSD_REQ_RELEASE && t.refused_error == -EBUSY,
           "refused() hears of each refusal, and of no answer");
        close(fd);
        conn_manager_free(m);
}

static void test_pending(void) {
        ConnManager *m = manager_new();
        int fd = peer(m), pidfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        struct nsd_req_session_open so = { 0 };
        struct stat st;
        TestReply rep;
        Request *r;

        nsd_msg_init(&so.hdr, NSD_REQ_SESSION_OPEN, sizeof so, 31);
        so.uid = 1000;
        so.pid = (uint32_t) getpid();
        so.flags = NSD_SESSION_PIDFD;
        g_strlcpy(so.service, "test", sizeof so.service);
        loop_test_send(fd, &so, sizeof so, pidfd);
        close(pidfd);
        loop_test_send_type(fd, NSD_REQ_STATUS, 32);
        ok(RUN_UNTIL(t.held != NULL), "a handler leaves its request pending");
        r = t.held;
        ok(r->n_fds == 1 && fstat(r->fds[0], &st) == 0 && S_ISCHR(st.st_mode),
           "with the descriptor it carried");
        loop_test_run_for(50);
        ok(!loop_test_readable(fd), "nothing is answered meanwhile, not even the STATUS behind it");
        request_finish(r, 0);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_STATUS && rep.seq == 32,
           "finished (without an error, nothing to send), the next request is read");
        request_unref(g_steal_pointer(&t.held));

        /* the client leaves while its request is pending: the request goes on, orphaned */
        loop_test_send(fd, &so, sizeof so, pidfd = open("/dev/null", O_RDONLY | O_CLOEXEC));
        close(pidfd);
        ok(RUN_UNTIL(t.held != NULL), "another pending request");
        r = t.held;
        close(fd);
        ok(RUN_UNTIL(r->conn == NULL), "its client leaves: the request is orphaned");
        is_int(request_reply(r, &so, sizeof so, NULL, 0), -ECONNRESET,
               "a reply to nobody says ECONNRESET");
        request_finish(r, -EIO);
        ok(r->finished, "and it finishes quietly");
        ok(RUN_UNTIL(conn_manager_count(m) == 0), "the connection is gone");
        request_unref(g_steal_pointer(&t.held));
        conn_manager_free(m);
}

static void test_stream(void) {
        config.max_queued_replies = 2;
        ConnManager *m = conn_manager_new(&config, &request_conn_handler, (void *) &handlers);
        int fd = loop_test_peer(m, CONN_KIND_ROOT, 0, getpid(), 4096, NULL);
        unsigned entries = 0, ends = 0;

        t.stream_left = 500;
        loop_test_send_type(fd, NSD_REQ_LIST, 41);
        loop_test_send_type(fd, NSD_REQ_STATUS, 42);
        ok(RUN_UNTIL(loop_test_drain_stream(fd, &entries, &ends) == 1),
           "a streaming reply, made as the socket drains, is read to its end");
        is_int(entries, 500, "with its 500 parts");
        is_int(next_type_after(fd), NSD_REP_STATUS,
               "then the connection reads the request behind it");
        is_int(conn_manager_stats(m)->dropped_overflow, 0, "a 2-reply queue never overflowed");
        close(fd);
        conn_manager_free(m);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        config = loop_test_config();
        test_table();
        test_malformed();
        test_refusal_keeps_connection();
        test_pending();
        test_stream();
        config_done(&config);
        return tap_done();
}
