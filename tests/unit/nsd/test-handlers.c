/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-handlers: what nsd answers (nsd/api/handlers.c), through a whole Server (core-test.h)
 * over socketpairs: every request type has a handler, STATUS's figures, root's LIST of many
 * namespaces streamed while others are served, a JOIN waiting for a user database that
 * hangs (policy.c's threads, LookupTimeoutSec=, the cache), JOIN_SESSION's refusals, METRICS
 * (root's only; its counters move with JOINs and releases, its gauges are STATUS's), SHARES
 * (root sees every member, a member its own uid, anyone else nothing), VOLUMES (root sees
 * every namespace's, a user its own), a recycled uid's JOIN
 * refused with EOWNERDEAD (its namespace kept, flagged ORPHANED in LIST). TAP, no
 * root; nothing here creates a mount namespace: the server has no pin store and no probed
 * features, and the requests sent are those that refuse or answer without one.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "api/handlers.h"
#include "base/metrics.h"
#include "core-test.h"
#include "gate-test.h"
#include "policy/policy.h"
#include "run-tmpfs.h"
#include "tap.h"

static const ConnStats *stats(Server *s) {
        return conn_manager_stats(s->conns);
}

static int peer(Server *s, ConnKind kind, uid_t uid) {
        return core_test_peer(s, kind, uid, getpid());
}

static int send_status(int fd, uint32_t seq) {
        return loop_test_send_type(fd, NSD_REQ_STATUS, seq);
}

static int send_join(int fd, uid_t uid, uint32_t flags) {
        struct nsd_req_join q;

        nsd_msg_init(&q.hdr, NSD_REQ_JOIN, sizeof q, 7);
        q.uid = uid;
        q.flags = flags;
        return loop_test_send(fd, &q, sizeof q, -1);
}

/* The next reply's type, its error and message (waiting for it); 0 at EOF. */
static uint16_t next_reply(int fd, int *ret_error, char *ret_message, size_t size) {
        TestReply rep = loop_test_next(fd);

        if (ret_error)
                *ret_error = rep.error;
        if (ret_message && size > 0)
                g_strlcpy(ret_message, rep.message, size);
        return rep.type;
}

static void test_table(void) {
        bool all = true;

        for (uint16_t type = NSD_REQ_JOIN; type < _NSD_REQ_MAX; type++)
                if (request_type_get(type) && !api_handlers[type])
                        all = false;
        ok(all, "every request type of the wire table has a handler");
        ok(!api_handlers[0], "and nothing answers type 0");
}

static void test_status(void) {
        Server *s = core_test_loop_server();
        int fd = peer(s, CONN_KIND_USER, 1000), fd2 = peer(s, CONN_KIND_USER, 1000);
        int root = peer(s, CONN_KIND_ROOT, 0);
        TestReply t;
        const struct nsd_rep_status *rep = (const struct nsd_rep_status *) &t.msg;

        send_status(fd, 42);
        t = loop_test_next(fd);
        ok(t.type == NSD_REP_STATUS && t.seq == 42 && t.len == sizeof *rep,
           "STATUS is answered (seq echoed)");
        is_int(rep->connections, 2, "a user's STATUS counts its own connections only");
        is_int(rep->max_namespaces_config, 10000, "max_namespaces_config: MaxNamespaces=");
        ok(rep->max_namespaces <= rep->max_namespaces_config && rep->max_namespaces > 0,
           "max_namespaces: the effective limit (%u)", rep->max_namespaces);
        send_status(root, 1);
        t = loop_test_next(root);
        ok(t.type == NSD_REP_STATUS && rep->connections == 3,
           "root's STATUS counts every connection (3)");
        close(fd);
        close(fd2);
        close(root);
        ok(RUN_UNTIL(conn_manager_count(s->conns) == 0), "closed connections are gone");
        server_free(s);
}

/* fake users, so root's LIST has many entries (added in descending order); their
 * descriptors are just "/" */
static void add_fake_users(Server *s, unsigned n) {
        for (unsigned i = n; i-- > 0;) {
                UserNs *ns = userns_new(100000 + i);
                ns->ns_fd = open("/", O_PATH | O_CLOEXEC);
                ns->root_fd = open("/", O_PATH | O_CLOEXEC);
                ns->ns_inode = 4026531840u + i;
                users_add(s->users, ns, NULL, 0);
        }
}

/* Read a stream reply (LIST, VOLUMES) up to the first reply that is not an entry: each reply
 * to take_entry() while it takes it as an entry (true). Returns the count of the end (of
 * end_type) that ended it, or UINT32_MAX if another reply did. */
static uint32_t read_stream(int fd, bool (*take_entry)(const TestReply *rep, void *userdata),
                            void *userdata, uint16_t end_type) {
        for (;;) {
                TestReply rep = loop_test_next(fd);

                if (take_entry(&rep, userdata))
                        continue;
                return rep.type == end_type ? ((struct nsd_rep_stream_end *) &rep.msg)->count
                                            : UINT32_MAX;
        }
}

static bool take_list_uid(const TestReply *rep, void *uids) {
        uint32_t uid = ((const struct nsd_rep_list_entry *) &rep->msg)->uid;

        if (rep->type != NSD_REP_LIST_ENTRY)
                return false;
        g_array_append_val((GArray *) uids, uid);
        return true;
}

/* Read a whole LIST reply: its entries' uids in order, and the count its end says. */
static GArray *read_list(int fd, uint32_t *ret_count) {
        GArray *uids = g_array_new(FALSE, FALSE, sizeof(uint32_t));

        *ret_count = read_stream(fd, take_list_uid, uids, NSD_REP_LIST_END);
        return uids;
}

static void test_list(void) {
        Server *s = core_test_loop_server();
        int root = peer(s, CONN_KIND_ROOT, 0), user = peer(s, CONN_KIND_USER, 100007);
        g_autoptr(GArray) all = NULL, own = NULL;
        bool sorted = true;
        uint32_t count;

        add_fake_users(s, 1000);
        loop_test_send_type(root, NSD_REQ_LIST, 5);
        all = read_list(root, &count);
        is_int(all->len, 1000, "root's LIST has every namespace (1000)");
        for (guint i = 1; i < all->len; i++)
                sorted = sorted &&
                         g_array_index(all, uint32_t, i - 1) < g_array_index(all, uint32_t, i);
        ok(sorted, "sorted by uid");
        is_int(count, 1000, "its end counts the entries sent");
        loop_test_send_type(user, NSD_REQ_LIST, 6);
        own = read_list(user, &count);
        ok(own->len == 1 && g_array_index(own, uint32_t, 0) == 100007 && count == 1,
           "a user's LIST has its own namespace only");
        core_test_end(s, root, user);
}

static Gate lookups;

/* a user database whose lookups hang until released; then "not managed" */
static int blocking_lookup(const Config *c, uid_t uid, char **ret_why) {
        gate_pass(&lookups);
        *ret_why = g_strdup_printf("uid %u: test database says no", (unsigned) uid);
        return 0;
}

static void test_slow_lookup(void) {
        Config c = loop_test_config();
        g_strfreev(c.users);
        c.users = g_strsplit("someone", " ", -1); /* names: every check needs NSS */
        c.lookup_timeout_usec = 300 * MSEC;
        c.max_lookup_threads = 2;
        Server *s = core_test_server(&c);
        int a = peer(s, CONN_KIND_USER, 2000), a2 = peer(s, CONN_KIND_USER, 2000);
        int b = peer(s, CONN_KIND_USER, 2001), d = peer(s, CONN_KIND_USER, 2002);
        int e = peer(s, CONN_KIND_USER, 2003), other = peer(s, CONN_KIND_USER, 2004);
        int err = 0;
        char msg[256] = "";

        policy_set_lookup_fn(s->policy, blocking_lookup);
        send_join(a, 2000, NSD_JOIN_NO_CREATE);
        ok(RUN_UNTIL(gate_waiting(&lookups) == 1), "uid 2000's JOIN waits for the user database");
        unsigned reqs = stats(s)->requests;
        send_join(a2, 2000, NSD_JOIN_NO_CREATE);
        RUN_UNTIL(stats(s)->requests > reqs);
        is_int(policy_stats(s->policy)->lookups, 1, "a second JOIN of uid 2000 shares its lookup");
        send_status(other, 1);
        ok(next_reply(other, NULL, NULL, 0) == NSD_REP_STATUS && gate_waiting(&lookups) == 1,
           "another client is served while the lookup hangs");
        /* a STATUS behind the waiting JOIN: if the connection read it meanwhile, its reply
         * would come first */
        send_status(a, 2);
        send_join(b, 2001, NSD_JOIN_NO_CREATE);
        send_join(d, 2002, NSD_JOIN_NO_CREATE);
        send_join(e, 2003, NSD_JOIN_NO_CREATE);
        ok(next_reply(a, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -ETIMEDOUT,
           "past LookupTimeoutSec= the JOIN gets ETIMEDOUT (%s)", msg);
        ok(strstr(msg, "LookupTimeoutSec=") != NULL, "naming LookupTimeoutSec=");
        ok(next_reply(a2, &err, NULL, 0) == NSD_REP_ERROR && err == -ETIMEDOUT,
           "so does the one that shared the lookup");
        is_int(next_reply(a, NULL, NULL, 0), NSD_REP_STATUS,
               "then the connection reads its next request");
        ok(next_reply(b, &err, NULL, 0) == NSD_REP_ERROR && err == -ETIMEDOUT &&
                   next_reply(d, &err, NULL, 0) == NSD_REP_ERROR && err == -ETIMEDOUT &&
                   next_reply(e, &err, NULL, 0) == NSD_REP_ERROR && err == -ETIMEDOUT,
           "three more uids time out too, behind the stuck threads");
        is_int(lookups.waiting_max, 2, "never more than MaxLookupThreads=2 threads in NSS");

        gate_set_open(&lookups, true);
        ok(RUN_UNTIL(policy_stats(s->policy)->running == 0),
           "released, the late lookups come back");
        int calls = lookups.calls;
        send_join(a, 2000, NSD_JOIN_NO_CREATE);
        ok(next_reply(a, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -ENXIO &&
                   strstr(msg, "test database says no"),
           "the late answer was cached: the next JOIN gets ENXIO at once (%s)", msg);
        is_int(lookups.calls, calls, "without asking the database again");

        /* a reload empties the cache */
        Config c2 = loop_test_config();
        g_strfreev(c2.users);
        c2.users = g_strsplit("someone", " ", -1);
        server_apply_config(s, &c2);
        send_join(a, 2000, NSD_JOIN_NO_CREATE);
        ok(next_reply(a, &err, NULL, 0) == NSD_REP_ERROR && err == -ENXIO &&
                   lookups.calls == calls + 1,
           "after a reload the database is asked again");

        core_test_end(s, a, a2, b, d, e, other);
        gate_set_open(&lookups, false);
}

/* the user database of test_owner_dead(): uid 1000 is bob now, 1001 has no entry, 1002 is
 * still alice */
static int churned_name(uid_t uid, char **ret_name) {
        if (uid == 1001)
                return -ENOENT;
        *ret_name = g_strdup(uid == 1000 ? "bob" : "alice");
        return 0;
}

/* the entry entry_flags() looks for: uid's in LIST, the volume name's in VOLUMES; its flags */
typedef struct FlagsOf {
        uint16_t entry_type;
        uid_t uid;
        const char *name;
        uint32_t flags;
} FlagsOf;

static bool take_flags(const TestReply *rep, void *userdata) {
        const struct nsd_rep_list_entry *l = (const void *) &rep->msg;
        const struct nsd_rep_volumes_entry *v = (const void *) &rep->msg;
        FlagsOf *f = userdata;

        if (rep->type != f->entry_type)
                return false;
        if (f->entry_type == NSD_REP_LIST_ENTRY && l->uid == f->uid)
                f->flags = l->ns_flags;
        if (f->entry_type == NSD_REP_VOLUMES_ENTRY && strcmp(v->name, f->name) == 0)
                f->flags = v->flags;
        return true;
}

/* The flags of one entry of the stream fd's user asks for by req (LIST, VOLUMES) with seq:
 * uid's namespace in LIST, the volume name in VOLUMES; UINT32_MAX when it has no entry. */
static uint32_t entry_flags(int fd, uint16_t req, uid_t uid, const char *name, uint32_t seq) {
        bool list = req == NSD_REQ_LIST;
        FlagsOf f = { .entry_type = list ? NSD_REP_LIST_ENTRY : NSD_REP_VOLUMES_ENTRY,
                      .uid = uid,
                      .name = name,
                      .flags = UINT32_MAX };

        loop_test_send_type(fd, req, seq);
        (void) read_stream(fd, take_flags, &f, list ? NSD_REP_LIST_END : NSD_REP_VOLUMES_END);
        return f.flags;
}

/* LIST's flags of uid (root's LIST), or UINT32_MAX when it has no entry */
static uint32_t listed_flags(int fd, uid_t uid, uint32_t seq) {
        return entry_flags(fd, NSD_REQ_LIST, uid, NULL, seq);
}

/* Recycled uids (1.6): a namespace made for alice is refused with EOWNERDEAD once its uid is
 * another name or none, saying why; it stays (never released for it), flagged ORPHANED in
 * LIST; alice's own uid is still handed out */
static void test_owner_dead(void) {
        Server *s = core_test_loop_server();
        int root = peer(s, CONN_KIND_ROOT, 0), err = 0;
        char msg[256] = "";
        TestReply t;

        policy_set_name_fn(s->policy, churned_name);
        for (uid_t uid = 1000; uid <= 1002; uid++)
                users_set_owner(s->users, core_test_user_here(s, uid), "alice");

        send_join(root, 1000, NSD_JOIN_NO_CREATE);
        ok(next_reply(root, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -EOWNERDEAD,
           "uid 1000 made for alice, now bob: JOIN refused with EOWNERDEAD (%s)", msg);
        ok(strstr(msg, "made for 'alice'") && strstr(msg, "is now 'bob'") &&
                   strstr(msg, "nsctl release"),
           "the message names the owner, the name now and nsctl release");
        send_join(root, 1001, 0);
        ok(next_reply(root, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -EOWNERDEAD,
           "uid 1001 made for alice, now no passwd entry: EOWNERDEAD, even without NO_CREATE "
           "(%s)",
           msg);
        ok(strstr(msg, "made for 'alice'") && strstr(msg, "has no entry now"),
           "the message says the uid has no entry now");
        send_join(root, 1002, NSD_JOIN_NO_CREATE);
        t = loop_test_next(root);
        ok(t.type == NSD_REP_JOIN && t.n_fds == 2,
           "uid 1002 still alice: her namespace is handed out");

        ok(users_get(s->users, 1000) && users_get(s->users, 1001) && users_count(s->users) == 3,
           "the refused namespaces are not released (3 namespaces)");
        ok(listed_flags(root, 1000, 20) & NSD_NS_ORPHANED, "LIST: uid 1000 is ORPHANED");
        ok(listed_flags(root, 1001, 21) & NSD_NS_ORPHANED, "LIST: uid 1001 is ORPHANED");
        ok(!(listed_flags(root, 1002, 22) & NSD_NS_ORPHANED), "LIST: uid 1002 is not");
        send_join(root, 1000, NSD_JOIN_NO_CREATE);
        ok(next_reply(root, &err, NULL, 0) == NSD_REP_ERROR && err == -EOWNERDEAD,
           "asked again, uid 1000 is still refused");
        core_test_end(s, root);
}

static TestReply metrics_of(int fd, uint32_t seq) {
        loop_test_send_type(fd, NSD_REQ_METRICS, seq);
        return loop_test_next(fd);
}

static uint64_t sum(const uint64_t *v, size_t n) {
        uint64_t total = 0;

        for (size_t i = 0; i < n; i++)
                total += v[i];
        return total;
}

/* METRICS (1.4): root's only; the counters move where the things happen, and the gauges are
 * STATUS's figures */
static void test_metrics(void) {
        Server *s = core_test_loop_server();
        int user = peer(s, CONN_KIND_USER, 1000), root = peer(s, CONN_KIND_ROOT, 0);
        struct nsd_req_release rel;
        TestReply t, st;
        const struct nsd_rep_metrics *m = (const struct nsd_rep_metrics *) &t.msg;
        const struct nsd_rep_status *status = (const struct nsd_rep_status *) &st.msg;
        int err = 0;
        char msg[256] = "";

        metrics_reset();
        loop_test_send_type(user, NSD_REQ_METRICS, 3);
        ok(next_reply(user, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -EPERM &&
                   strstr(msg, "only root"),
           "a user's METRICS: EPERM, saying why (%s)", msg);
        loop_test_send_type(user, NSD_REQ_STATUS, 33);
        is_int(next_reply(user, NULL, NULL, 0), NSD_REP_STATUS,
               "the user's connection stays: its next request is answered");

        t = metrics_of(root, 4);
        ok(t.type == NSD_REP_METRICS && t.seq == 4 && t.len == sizeof *m && t.n_fds == 0,
           "root's METRICS is answered (seq echoed, %zu bytes, no descriptors)", t.len);
        ok(sum(m->joins, NSD_METRICS_JOINS) == 0 && sum(m->join_latency, 16) == 0 &&
                   m->created == 0 && sum(m->releases, NSD_METRICS_RELEASES) == 0,
           "a fresh nsd has counted nothing");
        ok(m->connections[NSD_METRICS_SOCKET_USER] == 1 &&
                   m->connections[NSD_METRICS_SOCKET_ROOT] == 1,
           "connections by socket: 1 user, 1 root");
        ok(sum(m->reserved, 4) == 0, "reserved fields zero");

        /* a JOIN that gets its descriptors, one refused, one for a uid nsd does not manage */
        core_test_user_here(s, 1000);
        send_join(root, 1000, 0);
        t = loop_test_next(root);
        ok(t.type == NSD_REP_JOIN && t.n_fds == 2, "root's JOIN of uid 1000 gets descriptors");
        t = metrics_of(root, 5);
        ok(m->joins[NSD_METRICS_JOIN_OK] == 1 && sum(m->joins, NSD_METRICS_JOINS) == 1,
           "a JOIN answered: joins ok 1");
        is_int(sum(m->join_latency, NSD_METRICS_LATENCY_BUCKETS), 1,
               "one latency sample, in one bucket");
        send_join(user, 1001, NSD_JOIN_NO_CREATE);
        ok(next_reply(user, &err, NULL, 0) == NSD_REP_ERROR && err == -EPERM,
           "a user's JOIN of another uid: EPERM");
        t = metrics_of(root, 6);
        ok(m->joins[NSD_METRICS_JOIN_REFUSED] == 1 && m->joins[NSD_METRICS_JOIN_OK] == 1,
           "a refused JOIN: joins refused 1 (ok still 1)");
        send_join(root, 999, NSD_JOIN_NO_CREATE);
        ok(next_reply(root, &err, NULL, 0) == NSD_REP_ERROR && err == -ENXIO,
           "root's JOIN of uid 999: ENXIO");
        t = metrics_of(root, 7);
        ok(m->joins[NSD_METRICS_JOIN_NOT_MANAGED] == 1 &&
                   sum(m->join_latency, NSD_METRICS_LATENCY_BUCKETS) == 3,
           "not managed: its own label; three latency samples in all");

        /* the gauges are STATUS's figures */
        loop_test_send_type(root, NSD_REQ_STATUS, 8);
        st = loop_test_next(root);
        t = metrics_of(root, 9);
        ok(st.type == NSD_REP_STATUS && m->namespaces == status->namespaces &&
                   m->pinned == status->pinned && m->sessions == status->sessions &&
                   m->namespaces == 1,
           "namespaces, pinned, sessions as root's STATUS says (%u, %u, %u)", m->namespaces,
           m->pinned, m->sessions);
        add_fake_users(s, 500);
        t = metrics_of(root, 10);
        ok(t.len == sizeof *m && m->namespaces == 501,
           "501 namespaces: the same reply, one figure larger");

        /* a release by RELEASE */
        nsd_msg_init(&rel.hdr, NSD_REQ_RELEASE, sizeof rel, 11);
        rel.uid = 1000;
        rel.flags = 0;
        loop_test_send(root, &rel, sizeof rel, -1);
        is_int(next_reply(root, NULL, NULL, 0), NSD_REP_RELEASE, "root releases uid 1000");
        t = metrics_of(root, 12);
        ok(m->releases[NSD_METRICS_RELEASE_ASKED] == 1 &&
                   sum(m->releases, NSD_METRICS_RELEASES) == 1 && m->namespaces == 500,
           "releases asked 1; 500 namespaces left");
        core_test_end(s, user, root);
        metrics_reset();
}

/* A whole SHARES reply: "name:uid,uid;" per entry, its end's count, entries' flags ORed. */
static char *read_shares(int fd, uint32_t *ret_count, uint32_t *ret_flags, uint32_t *ret_members) {
        GString *out = g_string_new("");
        uint32_t want = 0, got = 0;

        *ret_count = UINT32_MAX;
        *ret_flags = 0;
        *ret_members = 0;
        for (;;) {
                TestReply rep = loop_test_next(fd);
                if (rep.type == NSD_REP_SHARES_ENTRY) {
                        const struct nsd_rep_shares_entry *e = (const void *) &rep.msg;
                        if (want != got)
                                g_string_append(out, "(short)");
                        if (out->len > 0)
                                g_string_append_c(out, ';');
                        g_string_append_printf(out, "%s:", e->name);
                        want = e->n_uids;
                        got = 0;
                        *ret_flags |= e->flags;
                        *ret_members += e->members;
                        if (e->mounts != -1 || e->peer_group != 0)
                                g_string_append(out, "(known?)");
                        continue;
                }
                if (rep.type == NSD_REP_SHARES_MEMBERS) {
                        const struct nsd_rep_shares_members *m = (const void *) &rep.msg;
                        for (uint32_t i = 0; i < m->n && i < NSD_SHARES_MEMBERS_PER_PART; i++)
                                g_string_append_printf(out, "%s%u", got++ ? "," : "",
                                                       m->members[i].uid);
                        continue;
                }
                if (rep.type == NSD_REP_SHARES_END)
                        *ret_count = ((const struct nsd_rep_stream_end *) &rep.msg)->count;
                if (want != got)
                        g_string_append(out, "(short)");
                return g_string_free(out, FALSE);
        }
}

static void give_share(Server *s, uid_t uid, const char *names) {
        User *u = users_get(s->users, uid);
        g_strfreev(u->shares);
        u->shares = g_strsplit(names, " ", -1);
}

/* SHARES: root sees every share and member, a member its shares and its own uid, anyone
 * else nothing; 300 members come in parts */
static void test_shares(void) {
        Server *s = core_test_loop_server();
        Share shares[] = {
                { .name = (char *) "lab",
                  .path = (char *) "/srv/lab",
                  .max_members = 256,
                  .propagation = SHARE_PROPAGATION_HOST },
                { .name = (char *) "empty", .path = (char *) "/srv/empty", .max_members = 8 },
        };
        int root = peer(s, CONN_KIND_ROOT, 0), member = peer(s, CONN_KIND_USER, 100001);
        int outsider = peer(s, CONN_KIND_USER, 100002), nobody = peer(s, CONN_KIND_USER, 5000);
        g_autofree char *all = NULL, *own = NULL, *none = NULL, *none2 = NULL, *many = NULL;
        uint32_t count, flags, members;
        TestReply t;

        /* the test's, not the config's: given back before the server goes */
        s->config.setup.shares = shares;
        s->config.setup.n_shares = G_N_ELEMENTS(shares);
        add_fake_users(s, 3);
        give_share(s, 100000, "lab");
        give_share(s, 100001, "lab");

        loop_test_send_type(root, NSD_REQ_SHARES, 5);
        t = loop_test_next(root);
        {
                const struct nsd_rep_shares_entry *e = (const void *) &t.msg;
                ok(t.type == NSD_REP_SHARES_ENTRY && t.seq == 5 && t.len == sizeof *e &&
                           g_str_equal(e->name, "lab") && g_str_equal(e->path, "/srv/lab") &&
                           e->propagation == NSD_SHARE_PROPAGATION_HOST && e->max_members == 256 &&
                           e->members == 2 && e->n_uids == 2 && e->flags == 0,
                   "root's first entry: lab, /srv/lab, host, 256, 2 members");
        }
        loop_test_send_type(root, NSD_REQ_SHARES, 6);
        /* the rest of the first reply, then the second whole */
        for (;;) {
                TestReply x = loop_test_next(root);
                if (x.type != NSD_REP_SHARES_ENTRY && x.type != NSD_REP_SHARES_MEMBERS)
                        break;
        }
        all = read_shares(root, &count, &flags, &members);
        is_str(all, "lab:100000,100001;empty:", "root sees both shares and both members");
        ok(count == 2 && flags == 0 && members == 2, "its end counts 2 entries; no flag");

        loop_test_send_type(member, NSD_REQ_SHARES, 7);
        own = read_shares(member, &count, &flags, &members);
        is_str(own, "lab:100001", "a member sees its share and only its own uid");
        ok(count == 1 && flags == NSD_SHARE_OWN_ONLY && members == 2,
           "flagged NSD_SHARE_OWN_ONLY; the count of members is not hidden");

        loop_test_send_type(outsider, NSD_REQ_SHARES, 8);
        none = read_shares(outsider, &count, &flags, &members);
        ok(g_str_equal(none, "") && count == 0, "a namespace given no share sees no share");
        loop_test_send_type(nobody, NSD_REQ_SHARES, 9);
        none2 = read_shares(nobody, &count, &flags, &members);
        ok(g_str_equal(none2, "") && count == 0, "a caller without a namespace sees nothing");

        /* members past one part */
        for (uid_t uid = 100003; uid < 100300; uid++) {
                UserNs *ns = userns_new(uid);
                ns->ns_fd = open("/", O_PATH | O_CLOEXEC);
                ns->root_fd = open("/", O_PATH | O_CLOEXEC);
                ns->ns_inode = 4026531840u + uid;
                users_add(s->users, ns, NULL, 0);
        }
        for (uid_t uid = 100000; uid < 100300; uid++)
                give_share(s, uid, "lab");
        loop_test_send_type(root, NSD_REQ_SHARES, 10);
        many = read_shares(root, &count, &flags, &members);
        ok(!strstr(many, "(short)") && g_str_has_prefix(many, "lab:100000,100001,") &&
                   g_str_has_suffix(many, ",100299;empty:") && members == 300,
           "300 members in parts of %u, in order", NSD_SHARES_MEMBERS_PER_PART);

        close(root);
        close(member);
        close(outsider);
        close(nobody);
        s->config.setup.shares = NULL;
        s->config.setup.n_shares = 0;
        server_free(s);
}

static bool take_volume(const TestReply *rep, void *out) {
        const struct nsd_rep_volumes_entry *e = (const void *) &rep->msg;

        if (rep->type != NSD_REP_VOLUMES_ENTRY || rep->len != sizeof *e)
                return false;
        g_string_append_printf(out, "%u:%s:%u:%d:%s;", e->uid, e->name, e->state, e->error, e->why);
        return true;
}

/* A whole VOLUMES reply: "uid:name:state:error:why;" per entry, and its end's count. */
static GString *read_volumes(int fd, uint32_t *ret_count) {
        GString *out = g_string_new("");

        *ret_count = read_stream(fd, take_volume, out, NSD_REP_VOLUMES_END);
        return out;
}

/* VOLUMES: root sees every namespace's volumes, a user those of its own namespace, a user
 * without a namespace none; a volume's failure goes out as -errno and why. */
static void test_volumes(void) {
        Server *s = core_test_loop_server();
        int root = peer(s, CONN_KIND_ROOT, 0), user = peer(s, CONN_KIND_USER, 100001);
        int nobody = peer(s, CONN_KIND_USER, 4242);
        g_autoptr(GString) all = NULL, own = NULL, none = NULL;
        uint32_t count;

        add_fake_users(s, 3);
        for (uid_t uid = 100000; uid < 100003; uid++) {
                User *u = users_get(s->users, uid);

                u->n_volumes = uid == 100002 ? 0 : 2;
                u->volumes = g_new0(UserVolume, 2);
                for (size_t i = 0; i < u->n_volumes; i++)
                        u->volumes[i] = (UserVolume) {
                                .name = g_strdup(i == 0 ? "vault" : "data"),
                                .type = g_strdup("ext4"),
                                .source = g_strdup("/srv/v.img"),
                                .where = g_strdup("/home/x/v"),
                                .outcome = i == 0 ? VOLUME_OUTCOME_MOUNTED : VOLUME_OUTCOME_FAILED,
                                .err = i == 0 ? 0 : ELOOP,
                                .why = i == 0 ? NULL : g_strdup("a symbolic link"),
                        };
        }
        /* 1.10: a refused release left who held the mounted one; a failed one keeps its why */
        users_get(s->users, 100001)->volumes[0].held = g_strdup("in use by pid 7 (less)");
        users_get(s->users, 100001)->volumes[1].held = g_strdup("in use by pid 8 (cat)");
        loop_test_send_type(root, NSD_REQ_VOLUMES, 5);
        all = read_volumes(root, &count);
        is_str(all->str,
               "100000:vault:1:0:;100000:data:2:-40:a symbolic link;100001:vault:1:0:in use by "
               "pid 7 (less);100001:data:2:-40:a symbolic link;",
               "root's VOLUMES: every namespace's volumes in order of uid, then of nsd.conf; a "
               "failure's -errno and why; a mounted one's holders at a refused release");
        is_int(count, 4, "its end counts the entries sent");
        loop_test_send_type(user, NSD_REQ_VOLUMES, 6);
        own = read_volumes(user, &count);
        is_str(own->str,
               "100001:vault:1:0:in use by pid 7 (less);100001:data:2:-40:a symbolic link;",
               "a user's VOLUMES: its own namespace's only");
        loop_test_send_type(nobody, NSD_REQ_VOLUMES, 7);
        none = read_volumes(nobody, &count);
        ok(none->len == 0 && count == 0, "a user without a namespace: none, and the end says 0");
        core_test_end(s, root, user, nobody);
}

/* ---- a volume's login password (CREDENTIAL_GIVE, CREDENTIAL_TAKE) ---- */

/* A memfd with text, sealed as pam_nsjoin seals it (seals: 0 for none). */
static int credential_memfd(const char *text, int seals) {
        int fd = memfd_create("test-credential", MFD_CLOEXEC | MFD_ALLOW_SEALING);

        if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t) strlen(text) ||
            (seals && fcntl(fd, F_ADD_SEALS, seals) < 0))
                tap_bail_errno("memfd");
        return fd;
}

#define ALL_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)

static int send_give(int fd, uid_t uid, int memfd, uint32_t seq) {
        struct nsd_req_credential_give q;

        nsd_msg_init(&q.hdr, NSD_REQ_CREDENTIAL_GIVE, sizeof q, seq);
        q.uid = uid;
        q.flags = NSD_CREDENTIAL_FD;
        return loop_test_send(fd, &q, sizeof q, memfd);
}

/* the answer to a GIVE: its type; of a GIVE reply, how many volumes took the password and how
 * many requests waited for it */
typedef struct Given {
        uint16_t type;
        uint32_t volumes, waiting;
} Given;

/* root GIVEs uid's login password (in a memfd sealed every way) with seq */
static Given give_login(int root, uid_t uid, const char *password, uint32_t seq) {
        int fd = credential_memfd(password, ALL_SEALS);
        const struct nsd_rep_credential_give *g;
        TestReply t;

        send_give(root, uid, fd, seq);
        close(fd);
        t = loop_test_next(root);
        g = (const void *) &t.msg;
        return (Given) { .type = t.type, .volumes = g->volumes, .waiting = g->waiting };
}

/* Is fd's waiting TAKE still unanswered after the loop ran a while? */
static bool still_waiting(int fd) {
        for (int i = 0; i < 10; i++)
                g_main_context_iteration(NULL, FALSE);
        return !loop_test_readable(fd);
}

static int send_take(int fd, const char *volume, uint32_t flags, uint32_t seq) {
        struct nsd_req_credential_take q;

        nsd_msg_init(&q.hdr, NSD_REQ_CREDENTIAL_TAKE, sizeof q, seq);
        q.flags = flags;
        g_strlcpy(q.volume, volume, sizeof q.volume);
        return loop_test_send(fd, &q, sizeof q, -1);
}

/* The next reply: its type, error, and what the descriptor it carried holds (NULL: none). */
static uint16_t next_with_fd(int fd, int *ret_error, char **ret_text) {
        int fds[NSD_MSG_FDS_MAX];
        char buf[64] = "";
        TestReply rep;

        *ret_text = NULL;
        if (!RUN_UNTIL(loop_test_readable(fd)))
                return 0;
        rep = loop_test_recv_fds(fd, 0, fds, NSD_MSG_FDS_MAX);
        if (rep.type == 0)
                return 0;
        if (rep.n_fds >= 1) {
                ssize_t k = pread(fds[0], buf, sizeof buf - 1, 0);

                *ret_text = g_strndup(buf, k > 0 ? (size_t) k : 0);
                for (size_t i = 0; i < MIN(rep.n_fds, NSD_MSG_FDS_MAX); i++)
                        close(fds[i]);
        }
        *ret_error = rep.error;
        return rep.type;
}

/* Users 100000 and 100001, the latter's namespace "inside" (the test's own namespace stands
 * for it) with the FUSE volumes of spec: "NAME:TYPE ..." in order; gocryptfs takes the login
 * password, gocryptfs-ask a password of its own (Key=ask). */
static User *volume_user(Server *s, const char *spec) {
        g_auto(GStrv) names = g_strsplit(spec, " ", -1);
        struct stat here;
        User *u;

        add_fake_users(s, 2);
        u = users_get(s->users, 100001);
        if (stat("/proc/self/ns/mnt", &here) == 0)
                u->ns->ns_inode = here.st_ino;
        /* its mount table is the test's own (read as nsd reads a namespace's: root only) */
        close(u->ns->ns_fd);
        u->ns->ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        u->n_volumes = g_strv_length(names);
        u->volumes = g_new0(UserVolume, u->n_volumes);
        for (size_t i = 0; i < u->n_volumes; i++) {
                g_auto(GStrv) nt = g_strsplit(names[i], ":", 2);
                bool ask = strcmp(nt[1], "gocryptfs-ask") == 0;

                u->volumes[i] = (UserVolume) {
                        .name = g_strdup(nt[0]),
                        .type = g_strdup(ask ? "gocryptfs" : nt[1]),
                        .source = g_strdup_printf("/src/%s", nt[0]),
                        .where = g_strdup_printf("/home/u/%s", nt[0]),
                        .outcome = VOLUME_OUTCOME_USER_MANAGER,
                        .password = g_str_has_prefix(nt[1], "gocryptfs"),
                        .ask = ask,
                };
        }
        return u;
}

/* GIVE is root's, takes only a sealed memfd of a sane size, for a user whose namespace has a
 * volume that takes a password; TAKE is the user's own, for its volume: at once, or waiting
 * for the next GIVE; the password goes once every such volume took it. */
static void test_credentials(void) {
        Server *s = core_test_loop_server();
        int root = peer(s, CONN_KIND_ROOT, 0), user = peer(s, CONN_KIND_USER, 100001);
        int waiter = peer(s, CONN_KIND_USER, 100001), other = peer(s, CONN_KIND_USER, 100000);
        g_autofree char *text = NULL;
        int error = 0, fd;
        uint16_t type;
        User *u;

        u = volume_user(s, "vault:gocryptfs files:sshfs");

        fd = credential_memfd("hunter2", ALL_SEALS);
        send_give(user, 100001, fd, 1);
        next_reply(user, &error, NULL, 0);
        is_int(error, -EPERM, "a user's GIVE: EPERM (pam_nsjoin's, as root)");
        send_give(root, 100000, fd, 2);
        next_reply(root, &error, NULL, 0);
        is_int(error, -ENOENT, "GIVE for a namespace without a volume that takes it: ENOENT");
        close(fd);
        static const struct {
                const char *what, *text;
                int seals;
        } bad[] = {
                { "unsealed", "hunter2", 0 },
                { "sealed against writing only", "hunter2", F_SEAL_WRITE },
                { "empty", "", ALL_SEALS },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                char msg[NSD_ERROR_MESSAGE_MAX];

                fd = credential_memfd(bad[i].text, bad[i].seals);
                send_give(root, 100001, fd, 3);
                next_reply(root, &error, msg, sizeof msg);
                ok(error == -EINVAL && strstr(msg, "password"), "a GIVE of a memfd %s: EINVAL (%s)",
                   bad[i].what, msg);
                close(fd);
        }
        {
                g_autofree char *big = g_strnfill(NSD_CREDENTIAL_MAX + 1, 'x');
                char msg[NSD_ERROR_MESSAGE_MAX];

                fd = credential_memfd(big, ALL_SEALS);
                send_give(root, 100001, fd, 4);
                next_reply(root, &error, msg, sizeof msg);
                ok(error == -EINVAL && strstr(msg, "bytes"),
                   "a password of more than %d bytes: "
                   "EINVAL (%s)",
                   NSD_CREDENTIAL_MAX, msg);
                close(fd);
        }
        ok(u->credential_fd < 0, "nothing refused was kept");

        send_take(user, "vault", 0, 5);
        next_reply(user, &error, NULL, 0);
        is_int(error, -EAGAIN, "TAKE with nothing held and no wait: EAGAIN (locked)");
        send_take(user, "files", 0, 6);
        next_reply(user, &error, NULL, 0);
        is_int(error, -ENOENT, "TAKE for a volume that takes no password: ENOENT");
        send_take(other, "vault", 0, 7);
        next_reply(other, &error, NULL, 0);
        is_int(error, -ENOENT,
               "another user's TAKE of that name: ENOENT (its own namespace has none)");

        send_take(waiter, "vault", NSD_CREDENTIAL_WAIT, 8);
        ok(still_waiting(waiter), "a TAKE that waits: no answer yet");
        Given given = give_login(root, 100001, "hunter2", 9);
        ok(given.type == NSD_REP_CREDENTIAL_GIVE && given.volumes == 1 && given.waiting == 1,
           "root's GIVE: one volume takes it, one request waited");
        type = next_with_fd(waiter, &error, &text);
        ok(type == NSD_REP_CREDENTIAL_TAKE && error == 0 && g_strcmp0(text, "hunter2") == 0,
           "the waiting TAKE gets a descriptor of the password (%s)", text ? "read back" : "none");
        ok(u->credential_fd < 0, "every volume that takes it took it: nsd holds it no longer");
        send_take(user, "vault", 0, 10);
        next_reply(user, &error, NULL, 0);
        is_int(error, -EAGAIN, "the next TAKE: EAGAIN");

        /* a second volume that takes it: held until both took it */
        u->volumes[1].password = true;
        (void) give_login(root, 100001, "hunter2", 11);
        g_clear_pointer(&text, g_free);
        send_take(user, "vault", 0, 12);
        type = next_with_fd(user, &error, &text);
        ok(type == NSD_REP_CREDENTIAL_TAKE && g_strcmp0(text, "hunter2") == 0 &&
                   u->credential_fd >= 0,
           "one of two volumes took it: still held for the other");
        send_take(waiter, "vault", 0, 14);
        next_reply(waiter, &error, NULL, 0);
        is_int(error, -EALREADY, "a second TAKE for the volume that took it: EALREADY (once each)");
        g_clear_pointer(&text, g_free);
        send_take(user, "files", 0, 13);
        type = next_with_fd(user, &error, &text);
        ok(type == NSD_REP_CREDENTIAL_TAKE && u->credential_fd < 0, "the second took it: gone");
        core_test_end(s, root, user, waiter, other);
}

static int send_unlock(int fd, const char *volume, int memfd, uint32_t seq) {
        struct nsd_req_credential_unlock q;

        nsd_msg_init(&q.hdr, NSD_REQ_CREDENTIAL_UNLOCK, sizeof q, seq);
        q.flags = NSD_CREDENTIAL_FD;
        g_strlcpy(q.volume, volume, sizeof q.volume);
        return loop_test_send(fd, &q, sizeof q, memfd);
}

/* UNLOCK (1.8) of text for volume by fd's user: the reply's error, and its waiting count */
static int unlock(int fd, const char *volume, const char *text, uint32_t seq,
                  uint32_t *ret_waiting) {
        int memfd = credential_memfd(text, ALL_SEALS);
        TestReply t;

        send_unlock(fd, volume, memfd, seq);
        close(memfd);
        t = loop_test_next(fd);
        *ret_waiting = t.type == NSD_REP_CREDENTIAL_UNLOCK
                               ? ((const struct nsd_rep_credential_unlock *) &t.msg)->waiting
                               : UINT32_MAX;
        return t.error;
}

/* VOLUMES as fd's user: the flags of its volume name (UINT32_MAX: none came) */
static uint32_t volume_flags(int fd, const char *name, uint32_t seq) {
        return entry_flags(fd, NSD_REQ_VOLUMES, 0, name, seq);
}

/* VOLUME_START or VOLUME_STOP (1.11) of uid's volume by fd's user: the reply's error; its
 * state and changed into *ret_state, *ret_changed (UINT32_MAX: an error came). */
static int volume_ctl(int fd, uint16_t type, uid_t uid, const char *volume, uint32_t seq,
                      uint32_t *ret_state, uint32_t *ret_changed, char *why, size_t size) {
        struct nsd_req_volume_ctl q;
        TestReply t;

        nsd_msg_init(&q.hdr, type, sizeof q, seq);
        q.uid = uid;
        g_strlcpy(q.volume, volume, sizeof q.volume);
        loop_test_send(fd, &q, sizeof q, -1);
        t = loop_test_next(fd);
        *ret_state = *ret_changed = UINT32_MAX;
        if (t.type == (uint16_t) (type | NSD_REPLY_BIT)) {
                const struct nsd_rep_volume_ctl *rep = (const void *) &t.msg;

                *ret_state = rep->state;
                *ret_changed = rep->changed;
        }
        g_strlcpy(why, t.message, size);
        return t.error;
}

static gint identity_asks;

/* "who is uid?" for the autostart test: counted, a user of no groups */
static int counted_identity(uid_t uid, gid_t *ret_gid, gid_t **ret_gids, size_t *ret_n) {
        g_atomic_int_inc(&identity_asks);
        *ret_gid = (gid_t) uid;
        *ret_gids = NULL;
        *ret_n = 0;
        return 0;
}

/* SESSION_OPEN (root, leader: this process) of uid, or SESSION_CLOSE of session id: the
 * reply's type */
static uint16_t session_msg(int fd, bool open, uid_t uid, uint64_t id, uint64_t *ret_id) {
        TestReply t;

        if (open) {
                struct nsd_req_session_open q = { 0 };

                nsd_msg_init(&q.hdr, NSD_REQ_SESSION_OPEN, sizeof q, 21);
                q.uid = uid;
                q.pid = (uint32_t) getpid();
                g_strlcpy(q.service, "cron", sizeof q.service);
                loop_test_send(fd, &q, sizeof q, -1);
        } else {
                struct nsd_req_session_close q = { 0 };

                nsd_msg_init(&q.hdr, NSD_REQ_SESSION_CLOSE, sizeof q, 22);
                q.uid = uid;
                q.session_id = id;
                q.pid = (uint32_t) getpid();
                loop_test_send(fd, &q, sizeof q, -1);
        }
        t = loop_test_next(fd);
        if (ret_id && t.type == NSD_REP_SESSION_OPEN)
                *ret_id = ((const struct nsd_rep_session_open *) &t.msg)->session_id;
        return t.type;
}

static guint autostarts_running(Server *s) {
        return s->api.autostarts ? g_hash_table_size(s->api.autostarts) : 0;
}

/* A server of uids up to 200000 (@regular: SESSION_OPEN and VOLUME_START ask whether the uid
 * is managed), user 100001 in *ret_user with the volumes of spec (volume_user()). */
static Server *managed_volume_server(const char *spec, User **ret_user) {
        Config c = loop_test_config();
        Server *s;

        c.max_uid = 200000;
        s = core_test_server(&c);
        *ret_user = volume_user(s, spec);
        return s;
}

/* A user's first session (any: here a cron job's, no service manager) makes nsd start its
 * Start=login kernel volumes that are not mounted, after the answer: it asks who the user
 * is, once; a second session adds nothing; a first session again does it again; none when
 * every such volume is mounted, nor for a Start=request one. (What the start mounts: vm
 * volumes, fault suite login-d.) */
static void test_volume_autostart(void) {
        uint64_t id1 = 0, id2 = 0;
        User *u;
        Server *s = managed_volume_server("desk:ext4 box:ext4", &u);
        int root;

        u->volumes[0].outcome = VOLUME_OUTCOME_STOPPED;
        u->volumes[0].at_login = true;
        u->volumes[1].outcome = VOLUME_OUTCOME_STOPPED;
        u->volumes[1].on_request = true;
        policy_set_identity_fn(s->policy, counted_identity);
        root = peer(s, CONN_KIND_ROOT, 0);

        is_int(session_msg(root, true, 100001, 0, &id1), NSD_REP_SESSION_OPEN,
               "the user's first session is opened");
        ok(RUN_UNTIL(g_atomic_int_get(&identity_asks) == 1 && autostarts_running(s) == 0),
           "... then nsd looks up who the user is, once, to start its Start=login volume");
        is_int(session_msg(root, true, 100001, 0, &id2), NSD_REP_SESSION_OPEN,
               "a second session is opened");
        ok(autostarts_running(s) == 0 && g_atomic_int_get(&identity_asks) == 1,
           "... and starts nothing more");
        (void) session_msg(root, false, 100001, id1, NULL);
        (void) session_msg(root, false, 100001, id2, NULL);
        is_int(session_msg(root, true, 100001, 0, &id1), NSD_REP_SESSION_OPEN,
               "after the last one closed, a first session again");
        ok(RUN_UNTIL(g_atomic_int_get(&identity_asks) == 2 && autostarts_running(s) == 0),
           "... starts the volume again");
        (void) session_msg(root, false, 100001, id1, NULL);
        u->volumes[0].outcome = VOLUME_OUTCOME_MOUNTED;
        is_int(session_msg(root, true, 100001, 0, &id1), NSD_REP_SESSION_OPEN,
               "a first session with the Start=login volume mounted");
        ok(autostarts_running(s) == 0 && g_atomic_int_get(&identity_asks) == 2,
           "... starts nothing (nor the Start=request one)");
        core_test_end(s, root);
}

/* VOLUME_START and VOLUME_STOP: a start of a mounted volume and a stop of a stopped one answer
 * with the state and change nothing; a FUSE volume, a network volume's stop, an unknown
 * name, another user's volume and a uid without a namespace are refused with the reason. */
static void test_volume_ctl(void) {
        User *u;
        Server *s = managed_volume_server("vault:ext4 later:ext4 share:nfs4 fuse:sshfs", &u);
        int user, other, nobody, root;
        uint32_t state, changed;
        char why[NSD_ERROR_MESSAGE_MAX];
        int e;

        u->volumes[0].outcome = VOLUME_OUTCOME_MOUNTED;
        g_free(u->volumes[0].where); /* mounted in the test's namespace (which stands for u's) */
        u->volumes[0].where = g_strdup("/proc");
        u->volumes[1].outcome = VOLUME_OUTCOME_STOPPED;
        u->volumes[1].at_login = true;
        u->volumes[1].release_last = true;
        u->volumes[2].outcome = VOLUME_OUTCOME_MOUNTED;
        user = peer(s, CONN_KIND_USER, 100001);
        other = peer(s, CONN_KIND_USER, 100000);
        nobody = peer(s, CONN_KIND_USER, 4242);
        root = peer(s, CONN_KIND_ROOT, 0);

        e = volume_ctl(user, NSD_REQ_VOLUME_START, 100001, "vault", 1, &state, &changed, why,
                       sizeof why);
        ok(e == 0 && state == NSD_VOLUME_MOUNTED && changed == 0,
           "START of a mounted volume: mounted, nothing changed (%d %u %u)", e, state, changed);
        e = volume_ctl(user, NSD_REQ_VOLUME_STOP, 100001, "later", 2, &state, &changed, why,
                       sizeof why);
        ok(e == 0 && state == NSD_VOLUME_STOPPED && changed == 0,
           "STOP of a stopped volume: stopped, nothing changed (%d %u %u)", e, state, changed);
        e = volume_ctl(root, NSD_REQ_VOLUME_STOP, 100001, "later", 3, &state, &changed, why,
                       sizeof why);
        ok(e == 0 && state == NSD_VOLUME_STOPPED, "root may stop a user's volume (%d)", e);
        ok((volume_flags(user, "later", 4) & (NSD_VOLUME_AT_LOGIN | NSD_VOLUME_RELEASE_LAST)) ==
                   (NSD_VOLUME_AT_LOGIN | NSD_VOLUME_RELEASE_LAST),
           "VOLUMES: a kernel volume with Start=login and Release=last-session carries "
           "NSD_VOLUME_AT_LOGIN and NSD_VOLUME_RELEASE_LAST");
        ok(!(volume_flags(user, "vault", 4) & (NSD_VOLUME_AT_LOGIN | NSD_VOLUME_RELEASE_LAST)),
           "... one with neither carries neither");
        e = volume_ctl(user, NSD_REQ_VOLUME_START, 100001, "fuse", 5, &state, &changed, why,
                       sizeof why);
        ok(e == -EOPNOTSUPP && strstr(why, "nsd-volume@fuse.service"),
           "START of a FUSE volume: refused, naming its unit (%d: %s)", e, why);
        e = volume_ctl(user, NSD_REQ_VOLUME_STOP, 100001, "share", 6, &state, &changed, why,
                       sizeof why);
        ok(e == -EOPNOTSUPP && strstr(why, "not a block volume"),
           "STOP of a network volume: refused, it goes with the namespace (%d: %s)", e, why);
        e = volume_ctl(user, NSD_REQ_VOLUME_START, 100001, "nope", 7, &state, &changed, why,
                       sizeof why);
        ok(e == -ENOENT && strstr(why, "no volume 'nope'"), "an unknown volume: ENOENT (%s)", why);
        e = volume_ctl(other, NSD_REQ_VOLUME_STOP, 100001, "vault", 8, &state, &changed, why,
                       sizeof why);
        ok(e == -EPERM && strstr(why, "only root"), "another user's volume: EPERM (%s)", why);
        ok(u->volumes[0].outcome == VOLUME_OUTCOME_MOUNTED, "and it stays mounted");
        e = volume_ctl(nobody, NSD_REQ_VOLUME_START, 4242, "vault", 9, &state, &changed, why,
                       sizeof why);
        ok(e == -ENOENT && strstr(why, "has no namespace"), "a uid without a namespace (%s)", why);
        core_test_end(s, user, other, nobody, root);
}

/* UNLOCK is the user's own password for one of its volumes that takes one: held for that
 * volume only, handed to its waiting TAKE; Key=ask never gets the login password; a TAKE
 * that waits after its volume took the login password (a wrong one) waits for an UNLOCK. */
static void test_credential_unlock(void) {
        Server *s = core_test_loop_server();
        int root = peer(s, CONN_KIND_ROOT, 0), user = peer(s, CONN_KIND_USER, 100001);
        int waiter = peer(s, CONN_KIND_USER, 100001), other = peer(s, CONN_KIND_USER, 100000);
        g_autofree char *text = NULL;
        uint32_t waiting = 0;
        int error = 0, fd;
        uint16_t type;
        User *u;

        u = volume_user(s, "vault:gocryptfs secret:gocryptfs-ask files:sshfs");

        is_int(unlock(user, "files", "x", 1, &waiting), -ENOENT,
               "UNLOCK of a volume that takes no password: ENOENT");
        is_int(unlock(user, "nosuch", "x", 2, &waiting), -ENOENT, "of no volume: ENOENT");
        is_int(unlock(other, "vault", "x", 3, &waiting), -ENOENT,
               "another user's UNLOCK of that name: ENOENT (its namespace has none)");
        is_int(unlock(root, "vault", "x", 4, &waiting), -ENOENT,
               "root's own UNLOCK: ENOENT (root has no namespace; a user's password is the "
               "user's to give)");
        fd = credential_memfd("x", 0);
        send_unlock(user, "vault", fd, 5);
        close(fd);
        next_reply(user, &error, NULL, 0);
        is_int(error, -EINVAL, "an unsealed memfd: EINVAL");
        ok(!u->unlock_fd || (u->unlock_fd[0] < 0 && u->unlock_fd[1] < 0),
           "nothing refused was kept");

        /* Key=ask: the login password is not for it */
        send_take(waiter, "secret", NSD_CREDENTIAL_WAIT, 6);
        ok(still_waiting(waiter), "a TAKE of the Key=ask volume waits");
        Given given = give_login(root, 100001, "login-pw", 7);
        ok(given.type == NSD_REP_CREDENTIAL_GIVE && given.volumes == 1 && given.waiting == 0,
           "root's GIVE: one volume takes the login password (not the Key=ask one), "
           "nobody got it");
        ok(still_waiting(waiter), "the Key=ask volume's TAKE still waits");
        {
                uint32_t f = volume_flags(user, "secret", 20), g = volume_flags(user, "vault", 21);

                ok(f != UINT32_MAX && (f & NSD_VOLUME_WAITING) && (f & NSD_VOLUME_ASK) &&
                           (f & NSD_VOLUME_PASSWORD),
                   "VOLUMES: the Key=ask volume waits for a password now (flags 0x%x)", f);
                ok(g != UINT32_MAX && !(g & NSD_VOLUME_WAITING) && !(g & NSD_VOLUME_ASK),
                   "the other one does not (flags 0x%x)", g);
                if (geteuid() == 0) {
                        uint32_t p;

                        ok((f & NSD_VOLUME_NOW_KNOWN) && !(f & NSD_VOLUME_NOW_MOUNTED),
                           "its mount table read: nothing is mounted on its Where= (flags 0x%x)",
                           f);
                        g_free(u->volumes[2].where);
                        u->volumes[2].where = g_strdup("/proc");
                        p = volume_flags(user, "files", 22);
                        ok(p != UINT32_MAX && (p & NSD_VOLUME_NOW_KNOWN) &&
                                   (p & NSD_VOLUME_NOW_MOUNTED),
                           "one whose Where= is a mount point (/proc): mounted now (0x%x)", p);
                } else {
                        tap_skip("reading a namespace's mount table needs root");
                        tap_skip("reading a namespace's mount table needs root");
                }
        }
        is_int(unlock(user, "secret", "s3cret", 8, &waiting), 0, "the user's UNLOCK of it");
        is_int(waiting, 1, "its reply: one waiting TAKE got it");
        type = next_with_fd(waiter, &error, &text);
        ok(type == NSD_REP_CREDENTIAL_TAKE && g_strcmp0(text, "s3cret") == 0,
           "the waiting TAKE gets the password the user gave (%s)", text ? text : "none");
        ok(u->unlock_fd[1] < 0, "handed once: nsd holds it no longer");

        /* a login password that was wrong: the volume's next TAKE waits for an UNLOCK (with a
         * second volume that takes it, nsd still holds it once vault took it) */
        g_clear_pointer(&text, g_free);
        send_take(user, "vault", 0, 9);
        type = next_with_fd(user, &error, &text);
        ok(type == NSD_REP_CREDENTIAL_TAKE && g_strcmp0(text, "login-pw") == 0,
           "the login volume takes the login password");
        send_take(user, "vault", 0, 10);
        next_reply(user, &error, NULL, 0);
        is_int(error, -EAGAIN, "its next TAKE without WAIT: EAGAIN (it took the only one held)");
        u->volumes[2].password = true; /* files takes the login password too now */
        (void) give_login(root, 100001, "login-pw", 11); /* another login */
        send_take(user, "vault", 0, 12);
        g_clear_pointer(&text, g_free);
        type = next_with_fd(user, &error, &text);
        ok(type == NSD_REP_CREDENTIAL_TAKE && text && u->credential_fd >= 0,
           "vault takes the new login's password; held on for files");
        send_take(user, "vault", 0, 12);
        next_reply(user, &error, NULL, 0);
        is_int(error, -EALREADY, "vault's TAKE without WAIT after it: EALREADY, as in 1.7");
        send_take(waiter, "vault", NSD_CREDENTIAL_WAIT, 13);
        ok(still_waiting(waiter), "with WAIT: it waits (for an UNLOCK or the next login)");
        is_int(unlock(user, "vault", "right", 14, &waiting), 0, "the user unlocks it");
        is_int(waiting, 1, "one waiting TAKE got it");
        g_clear_pointer(&text, g_free);
        type = next_with_fd(waiter, &error, &text);
        ok(type == NSD_REP_CREDENTIAL_TAKE && g_strcmp0(text, "right") == 0,
           "and it is the password the user gave, not the login one (%s)", text ? text : "none");

        /* nobody waits: held for the volume's next TAKE, once */
        is_int(unlock(user, "vault", "later", 15, &waiting), 0, "an UNLOCK nobody waits for");
        is_int(waiting, 0, "its reply: nobody got it yet");
        g_clear_pointer(&text, g_free);
        send_take(user, "vault", 0, 16);
        type = next_with_fd(user, &error, &text);
        ok(type == NSD_REP_CREDENTIAL_TAKE && g_strcmp0(text, "later") == 0,
           "the next TAKE gets it, before a login password held");
        is_int(unlock(user, "vault", "again", 17, &waiting), 0, "one more UNLOCK");
        is_int(unlock(user, "vault", "newest", 18, &waiting), 0, "and another: it replaces it");
        g_clear_pointer(&text, g_free);
        send_take(user, "vault", 0, 19);
        type = next_with_fd(user, &error, &text);
        ok(type == NSD_REP_CREDENTIAL_TAKE && g_strcmp0(text, "newest") == 0,
           "the TAKE gets the newest (%s)", text ? text : "none");
        core_test_end(s, root, user, waiter, other);
}

static void test_join_session_refusals(void) {
        Server *s = core_test_loop_server();
        struct nsd_req_join_session q;
        int fd = peer(s, CONN_KIND_USER, 1000), err = 0;
        char msg[256] = "";

        nsd_msg_init(&q.hdr, NSD_REQ_JOIN_SESSION, sizeof q, 11);
        q.uid = 1000;
        q.pid = (uint32_t) getpid() + 1;
        g_strlcpy(q.service, "test", sizeof q.service);
        loop_test_send(fd, &q, sizeof q, -1);
        ok(next_reply(fd, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -EPERM,
           "JOIN_SESSION naming another pid as leader: EPERM (%s)", msg);
        q.pid = (uint32_t) getpid();
        q.uid = 999;
        loop_test_send(fd, &q, sizeof q, -1);
        ok(next_reply(fd, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -EPERM,
           "for another uid: EPERM");
        close(fd);

        fd = peer(s, CONN_KIND_ROOT, 0);
        loop_test_send(fd, &q, sizeof q, -1);
        ok(next_reply(fd, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -ENXIO,
           "root, for unmanaged uid 999: ENXIO (%s)", msg);
        q.uid = 1000;
        q.flags = NSD_JOIN_SESSION_PIDFD;
        loop_test_send(fd, &q, sizeof q, -1);
        ok(next_reply(fd, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -EBADMSG &&
                   strstr(msg, "0 descriptors sent with JOIN_SESSION, expected 1"),
           "the pidfd flag without a descriptor: EBADMSG (%s)", msg);
        ok(loop_test_at_eof(fd), "and closed");
        is_int(users_count(s->users) + users_count_sessions(s->users), 0, "nothing was opened");
        close(fd);

        /* a leader that has exited: refused before the namespace is made, so nothing stays */
        pid_t gone = fork();
        if (gone == 0)
                _exit(0);
        waitpid(gone, NULL, 0);
        fd = peer(s, CONN_KIND_ROOT, 0);
        q.flags = 0;
        q.pid = (uint32_t) gone;
        loop_test_send(fd, &q, sizeof q, -1);
        ok(next_reply(fd, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -ESRCH,
           "root, with a leader that has exited: ESRCH (%s)", msg);
        is_int(users_count(s->users), 0, "and no namespace was made for it");
        core_test_end(s, fd);
}

/* A volume with KeyFile= (as root, in a private mount namespace with /run the test's own,
 * the last test): each TAKE gets the file's bytes, read then; the login password is never
 * its, nor an UNLOCK; a key file nsd does not trust refuses the TAKE, naming what is wrong. */
static void test_key_file_take(void) {
        Server *s;
        int root, user, error = 0;
        g_autofree char *text = NULL;
        char msg[NSD_ERROR_MESSAGE_MAX];
        uint32_t waiting;
        uint16_t type;
        User *u;

        if (!test_private_run("KeyFile= TAKE"))
                return;
        if (mkdir("/run/keys", 0755) < 0 ||
            !g_file_set_contents("/run/keys/vault", "from-the-file", -1, NULL) ||
            chmod("/run/keys/vault", 0600) < 0)
                tap_bail_errno("/run/keys/vault");
        s = core_test_loop_server();
        root = peer(s, CONN_KIND_ROOT, 0);
        user = peer(s, CONN_KIND_USER, 100001);
        u = volume_user(s, "vault:gocryptfs other:gocryptfs");
        u->volumes[0].key_file = g_strdup("/run/keys/vault");

        for (int i = 0; i < 2; i++) {
                g_clear_pointer(&text, g_free);
                send_take(user, "vault", 0, 1 + i);
                type = next_with_fd(user, &error, &text);
                ok(type == NSD_REP_CREDENTIAL_TAKE && error == 0 &&
                           g_strcmp0(text, "from-the-file") == 0,
                   "TAKE %d of a KeyFile= volume: the key file's bytes, with nothing held (%d)",
                   i + 1, error);
        }
        Given given = give_login(root, 100001, "login-pw", 3);
        ok(given.type == NSD_REP_CREDENTIAL_GIVE && given.volumes == 1,
           "root's GIVE: only the other volume takes the login password (%u)", given.volumes);
        ok((volume_flags(user, "vault", 20) & (NSD_VOLUME_PASSWORD | NSD_VOLUME_KEY_FILE)) ==
                           (NSD_VOLUME_PASSWORD | NSD_VOLUME_KEY_FILE) &&
                   !(volume_flags(user, "other", 21) & NSD_VOLUME_KEY_FILE),
           "VOLUMES (1.12): NSD_VOLUME_KEY_FILE on the KeyFile= volume only");
        g_clear_pointer(&text, g_free);
        send_take(user, "vault", 0, 4);
        type = next_with_fd(user, &error, &text);
        ok(type == NSD_REP_CREDENTIAL_TAKE && g_strcmp0(text, "from-the-file") == 0,
           "with a login password held: still the key file's");
        error = unlock(user, "vault", "typed", 5, &waiting);
        is_int(error, -EINVAL, "UNLOCK of a KeyFile= volume: EINVAL (its key is the file)");
        if (chmod("/run/keys/vault", 0644) < 0)
                tap_bail_errno("/run/keys/vault");
        send_take(user, "vault", 0, 6);
        next_reply(user, &error, msg, sizeof msg);
        ok(error == -EPERM && strstr(msg, "KeyFile /run/keys/vault: refused: open to others"),
           "a key file others may read: the TAKE refused, naming it (%s)", msg);
        ok(u->volumes[0].key_refused && !user_key_file_refused(u, 0, u->volumes[0].key_refused),
           "the refusal is remembered: the same reason again is no news (logged once, at "
           "warning; then at debug)");
        (void) unlink("/run/keys/vault");
        send_take(user, "vault", 0, 7);
        next_reply(user, &error, msg, sizeof msg);
        ok(error == -ENOENT && strstr(msg, "cannot open"),
           "a missing key file: ENOENT, naming it (%s)", msg);
        ok(u->volumes[0].key_refused && strstr(u->volumes[0].key_refused, "cannot open"),
           "another reason is news (at warning again)");
        if (!g_file_set_contents("/run/keys/vault", "again", -1, NULL) ||
            chmod("/run/keys/vault", 0600) < 0)
                tap_bail_errno("/run/keys/vault");
        g_clear_pointer(&text, g_free);
        send_take(user, "vault", 0, 8);
        type = next_with_fd(user, &error, &text);
        ok(type == NSD_REP_CREDENTIAL_TAKE && g_strcmp0(text, "again") == 0 &&
                   !u->volumes[0].key_refused,
           "mended: the TAKE gets the key, the refusal forgotten (the next one is news)");
        core_test_end(s, root, user);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        test_table();
        test_status();
        test_list();
        test_slow_lookup();
        test_join_session_refusals();
        test_owner_dead();
        test_metrics();
        test_shares();
        test_volumes();
        test_credentials();
        test_credential_unlock();
        test_volume_ctl();
        test_volume_autostart();
        test_key_file_take(); /* the last: it leaves the host's mount namespace */
        return tap_done();
}
