/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tests/unit/lib/fake-nsd.c: see fake-nsd.h. */
#include "fake-nsd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "socket-util.h"

int fake_nsd_bind(const char *src, const char *dst) {
        int fd = open(dst, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

        if (fd < 0)
                return -1;
        close(fd);
        return mount(src, dst, NULL, MS_BIND, NULL);
}

int fake_nsd_listen(const char *path, int backlog) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        (void) unlink(path);
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, backlog) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        return fd;
}

int fake_nsd_recv(int cfd, struct fake_req *r) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int) * FAKE_NSD_FDS_MAX)];
        } control;
        struct iovec iov = { .iov_base = r->bytes, .iov_len = sizeof(r->bytes) };
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = control.buf,
                .msg_controllen = sizeof(control.buf),
        };
        ssize_t n;

        memset(r, 0, sizeof(*r));
        do
                n = recvmsg(cfd, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        r->nfds = cmsg_take_fds(&mh, r->fds, FAKE_NSD_FDS_MAX);
        if (r->nfds > FAKE_NSD_FDS_MAX)
                r->nfds = FAKE_NSD_FDS_MAX;
        if (n == 0 && r->nfds == 0)
                return 0;
        r->n = (size_t) n;
        r->check = nsd_msg_check(r->bytes, r->n, 1, &r->why);
        return 1;
}

void fake_req_close_fds(struct fake_req *r) {
        for (size_t i = 0; i < r->nfds; i++)
                close(r->fds[i]);
        r->nfds = 0;
}

int fake_nsd_send(int cfd, const void *msg, size_t len, const int *fds, size_t n_fds) {
        ssize_t n;

        if (n_fds > FAKE_NSD_FDS_MAX)
                return -EINVAL;
        n = send_with_fds(cfd, msg, len, fds, n_fds, MSG_NOSIGNAL);
        return n < 0 ? (int) n : (size_t) n == len ? 0 : -EIO;
}

void *fake_nsd_reply_init(void *buf, uint16_t type, size_t size, const struct fake_req *r) {
        nsd_msg_init(buf, type, (uint32_t) size, r ? r->hdr.seq : 0);
        return buf;
}

int fake_nsd_send_error(int cfd, const struct fake_req *r, int error, const char *message) {
        struct nsd_rep_error e;

        fake_nsd_reply_init(&e, NSD_REP_ERROR, sizeof(e), r);
        e.hdr.error = error;
        e.request_type = r ? r->hdr.type : 0;
        snprintf(e.message, sizeof(e.message), "%s", message ?: "");
        return fake_nsd_send(cfd, &e, sizeof(e), NULL, 0);
}

uint64_t fake_nsd_metrics_counters(struct nsd_rep_metrics *m, uint64_t v) {
        for (size_t i = 0; i < NSD_METRICS_JOINS; i++)
                m->joins[i] = v++;
        for (size_t i = 0; i < NSD_METRICS_LATENCY_BUCKETS; i++)
                m->join_latency[i] = v++;
        m->created = v++;
        m->setup_failures = v++;
        for (size_t i = 0; i < NSD_METRICS_RELEASES; i++)
                m->releases[i] = v++;
        for (size_t i = 0; i < NSD_METRICS_LOOKUPS; i++)
                m->lookups[i] = v++;
        m->path_walk_timeouts = v++;
        for (size_t i = 0; i < NSD_METRICS_THROTTLES; i++)
                m->throttled[i] = v++;
        for (size_t i = 0; i < NSD_METRICS_LOOKUP_TIMEOUTS; i++)
                m->lookup_timeouts[i] = v++;
        return v;
}

bool fake_fd_is_pidfd_of(int fd, pid_t pid) {
        char p[64], line[256], want[64];
        bool found = false;
        FILE *f;

        snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", fd);
        snprintf(want, sizeof(want), "Pid:\t%d\n", (int) pid);
        f = fopen(p, "re");
        if (!f)
                return false;
        while (fgets(line, sizeof(line), f))
                if (strcmp(line, want) == 0)
                        found = true;
        fclose(f);
        return found;
}

/* ---- a behaving nsd ------------------------------------------------------------------- */

/* The peer's own namespace (or pid's, when not 0): [0] its root directory (O_PATH), [1] its
 * nsfs file. */
static int peer_namespace(int cfd, pid_t pid, int fds[2], uint64_t *ret_ino) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        char p[64];
        struct stat st;

        fds[0] = fds[1] = -1;
        if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                return -errno;
        if (pid > 0)
                cred.pid = pid;
        snprintf(p, sizeof(p), "/proc/%d/root", (int) cred.pid);
        fds[0] = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
        snprintf(p, sizeof(p), "/proc/%d/ns/mnt", (int) cred.pid);
        fds[1] = open(p, O_RDONLY | O_CLOEXEC);
        if (fds[0] < 0 || fds[1] < 0 || fstat(fds[1], &st) < 0) {
                int r = -errno;

                if (fds[0] >= 0)
                        close(fds[0]);
                if (fds[1] >= 0)
                        close(fds[1]);
                fds[0] = fds[1] = -1;
                return r;
        }
        *ret_ino = st.st_ino;
        return 0;
}

static void record_bad(struct fake_nsd_record *rec, const char *why) {
        if (rec->bad++ == 0)
                snprintf(rec->bad_why, sizeof(rec->bad_why), "%s", why);
}

/* What is wrong with the session part of a SESSION_OPEN or a JOIN_SESSION (type, with its
 * pidfd_flag): flags beyond known, the reserved field set, no service name, no pid, or
 * descriptors other than the one pidfd the flag announces; in buf, or NULL when sound. */
static const char *session_problem(const char *type, uint32_t flags, uint32_t known,
                                   uint32_t pidfd_flag, const char *pidfd_flag_name,
                                   uint32_t reserved, const char service[NSD_SERVICE_MAX],
                                   uint32_t pid, size_t nfds, char *buf, size_t size) {
        if (flags & ~known)
                snprintf(buf, size, "unknown %s flags", type);
        else if (reserved || !nsd_field_is_string(service, NSD_SERVICE_MAX) || pid == 0)
                snprintf(buf, size, "bad %s fields", type);
        else if (nfds != ((flags & pidfd_flag) ? 1u : 0u))
                snprintf(buf, size, "descriptors do not match %s", pidfd_flag_name);
        else
                return NULL;
        return buf;
}

/* The checks nsd makes beyond nsd_msg_check() for the requests a client of ours sends;
 * NULL when sound, else the problem (perhaps in buf). */
static const char *request_problem(const struct fake_req *r, char *buf, size_t size) {
        const struct nsd_req_session_open *so = &r->session_open;
        const struct nsd_req_join_session *js = &r->join_session;

        if (r->hdr.flags != 0)
                return "flags set in the header";
        switch (r->hdr.type) {
        case NSD_REQ_JOIN:
                if (r->join.flags & ~NSD_JOIN_NO_CREATE)
                        return "unknown JOIN flags";
                return r->nfds == 0 ? NULL : "descriptors with a JOIN";
        case NSD_REQ_SESSION_OPEN:
                return session_problem("SESSION_OPEN", so->flags, NSD_SESSION_PIDFD,
                                       NSD_SESSION_PIDFD, "NSD_SESSION_PIDFD", so->reserved,
                                       so->service, so->pid, r->nfds, buf, size);
        case NSD_REQ_JOIN_SESSION:
                return session_problem("JOIN_SESSION", js->flags,
                                       NSD_JOIN_NO_CREATE | NSD_JOIN_SESSION_PIDFD,
                                       NSD_JOIN_SESSION_PIDFD, "NSD_JOIN_SESSION_PIDFD",
                                       js->reserved, js->service, js->pid, r->nfds, buf, size);
        case NSD_REQ_CREDENTIAL_GIVE:
                return r->nfds == 1 && r->credential_give.flags == NSD_CREDENTIAL_FD
                               ? NULL
                               : "CREDENTIAL_GIVE without its descriptor";
        case NSD_REQ_CREDENTIAL_UNLOCK:
                return r->nfds == 1 && r->credential_unlock.flags == NSD_CREDENTIAL_FD
                               ? NULL
                               : "CREDENTIAL_UNLOCK without its descriptor";
        case NSD_REQ_SESSION_CLOSE:
                return r->session_close.session_id == 0 && r->session_close.pid == 0
                               ? "neither a session id nor a pid"
                               : NULL;
        case NSD_REQ_VOLUME_START:
        case NSD_REQ_VOLUME_STOP:
                if (r->nfds != 0)
                        return "descriptors with a request that takes none";
                return r->volume_ctl.reserved == 0 &&
                                       nsd_field_is_string(r->volume_ctl.volume,
                                                           sizeof(r->volume_ctl.volume)) &&
                                       r->volume_ctl.volume[0]
                               ? NULL
                               : "bad VOLUME_START or VOLUME_STOP fields";
        default:
                return r->nfds == 0 ? NULL : "descriptors with a request that takes none";
        }
}

static void record_session(struct fake_nsd_record *rec, uint32_t uid, uint32_t pid,
                           const char *service, const struct fake_req *r) {
        rec->so_uid = uid;
        rec->so_pid = pid;
        rec->so_pidfd = r->nfds == 1 && fake_fd_is_pidfd_of(r->fds[0], (pid_t) pid);
        memcpy(rec->so_service, service, sizeof(rec->so_service));
        rec->so_service[sizeof(rec->so_service) - 1] = 0;
}

static const char *refused(const struct fake_nsd_config *cfg) {
        return cfg->error_message ?: "fake nsd: refused";
}

/* error, when there is one, as the answer (in cfg's words): true then */
static bool refuse(int cfd, const struct fake_req *r, int error,
                   const struct fake_nsd_config *cfg) {
        if (error)
                (void) fake_nsd_send_error(cfd, r, error, refused(cfg));
        return error != 0;
}

/* What an nsd of minor version minor does with a request type that came later (with minor
 * version since): refuses it as unknown; true then, the request counted in *count. */
static bool too_new(int cfd, const struct fake_req *r, unsigned minor, uint16_t type,
                    unsigned since, unsigned *count) {
        char why[40];

        if (r->hdr.type != type || minor >= since)
                return false;
        snprintf(why, sizeof(why), "unknown request type (%u)", (unsigned) type);
        (void) fake_nsd_send_error(cfd, r, -EOPNOTSUPP, why);
        (*count)++;
        return true;
}

/* The last part of a stream: its END reply with the count of entries sent. */
static void answer_end(int cfd, const struct fake_req *r, uint16_t type, size_t count) {
        struct nsd_rep_stream_end end;

        fake_nsd_reply_init(&end, type, sizeof(end), r);
        end.count = (uint32_t) count;
        (void) fake_nsd_send(cfd, &end, sizeof(end), NULL, 0);
}

static void answer_list(int cfd, const struct fake_req *r, const struct fake_nsd_config *cfg) {
        for (size_t i = 0; i < cfg->n_list; i++) {
                const struct fake_ns *ns = &cfg->list[i];
                struct nsd_rep_list_entry e;

                fake_nsd_reply_init(&e, NSD_REP_LIST_ENTRY, sizeof(e), r);
                e.uid = ns->uid;
                e.ns_flags = ns->ns_flags;
                e.sessions = ns->sessions;
                e.mounts = ns->mounts;
                e.ns_inode = ns->ns_inode;
                e.created_usec = ns->created_usec;
                snprintf(e.pin, sizeof(e.pin), "%s", ns->pin ?: "");
                if (fake_nsd_send(cfd, &e, sizeof(e), NULL, 0) < 0)
                        return;
        }
        answer_end(cfd, r, NSD_REP_LIST_END, cfg->n_list);
}

static void answer_volumes(int cfd, const struct fake_req *r, const struct fake_nsd_config *cfg) {
        for (size_t i = 0; i < cfg->n_volumes; i++) {
                struct nsd_rep_volumes_entry e = cfg->volumes[i];

                fake_nsd_reply_init(&e.hdr, NSD_REP_VOLUMES_ENTRY, sizeof(e.hdr), r);
                e.hdr.length = sizeof(e);
                if (fake_nsd_send(cfd, &e, sizeof(e), NULL, 0) < 0)
                        return;
        }
        answer_end(cfd, r, NSD_REP_VOLUMES_END, cfg->n_volumes);
}

static void answer_shares(int cfd, const struct fake_req *r, const struct fake_nsd_config *cfg) {
        for (size_t i = 0; i < cfg->n_shares; i++) {
                const struct fake_share *sh = &cfg->shares[i];
                struct nsd_rep_shares_entry e;
                struct nsd_rep_shares_members m;

                fake_nsd_reply_init(&e, NSD_REP_SHARES_ENTRY, sizeof(e), r);
                snprintf(e.name, sizeof(e.name), "%s", sh->name);
                snprintf(e.path, sizeof(e.path), "%s", sh->path);
                e.propagation = sh->propagation;
                e.max_members = sh->max_members;
                e.members = sh->members;
                e.flags = sh->flags;
                e.n_uids = (uint32_t) sh->n_uids;
                e.mounts = -1;
                if (fake_nsd_send(cfd, &e, sizeof(e), NULL, 0) < 0)
                        return;
                for (size_t k = 0; k < sh->n_uids;) {
                        fake_nsd_reply_init(&m, NSD_REP_SHARES_MEMBERS, sizeof(m), r);
                        while (m.n < NSD_SHARES_MEMBERS_PER_PART && k < sh->n_uids)
                                m.members[m.n++].uid = sh->uids[k++];
                        if (fake_nsd_send(cfd, &m, sizeof(m), NULL, 0) < 0)
                                return;
                }
        }
        answer_end(cfd, r, NSD_REP_SHARES_END, cfg->n_shares);
}

/* text in NSD_REP_SHOW_DATA parts as large as a datagram may be, then NSD_REP_SHOW_END */
static void answer_show(int cfd, const struct fake_req *r, const char *text) {
        static uint8_t buf[NSD_MSG_SIZE_MAX];
        const size_t room = NSD_MSG_SIZE_MAX - sizeof(struct nsd_msg_header);
        size_t len = strlen(text);
        struct nsd_msg_header end;

        for (size_t off = 0; off < len; off += room) {
                size_t n = len - off < room ? len - off : room;

                fake_nsd_reply_init(buf, NSD_REP_SHOW_DATA, sizeof(struct nsd_msg_header) + n, r);
                memcpy(buf + sizeof(struct nsd_msg_header), text + off, n);
                if (fake_nsd_send(cfd, buf, sizeof(struct nsd_msg_header) + n, NULL, 0) < 0)
                        return;
        }
        fake_nsd_reply_init(&end, NSD_REP_SHOW_END, sizeof(end), r);
        (void) fake_nsd_send(cfd, &end, sizeof(end), NULL, 0);
}

/* a reply that is the header alone, or the error */
static void answer_empty(int cfd, const struct fake_req *r, uint16_t type, int error,
                         const struct fake_nsd_config *cfg) {
        struct nsd_msg_header h;

        if (refuse(cfd, r, error, cfg))
                return;
        fake_nsd_reply_init(&h, type, sizeof(h), r);
        (void) fake_nsd_send(cfd, &h, sizeof(h), NULL, 0);
}

/* LIST, SHARES and VOLUMES: counted, then refused with cfg's error for that listing or
 * answered with cfg's entries */
static void answer_listing(int cfd, const struct fake_req *r, const struct fake_nsd_config *cfg,
                           struct fake_nsd_record *rec) {
        const struct {
                uint16_t type;
                unsigned *count;
                int error;
                void (*answer)(int cfd, const struct fake_req *r,
                               const struct fake_nsd_config *cfg);
        } listings[] = {
                { NSD_REQ_LIST, &rec->lists, cfg->list_error, answer_list },
                { NSD_REQ_SHARES, &rec->shares, cfg->shares_error, answer_shares },
                { NSD_REQ_VOLUMES, &rec->volumes, cfg->volumes_error, answer_volumes },
        };

        for (size_t i = 0; i < sizeof(listings) / sizeof(listings[0]); i++) {
                if (listings[i].type != r->hdr.type)
                        continue;
                (*listings[i].count)++;
                if (!refuse(cfd, r, listings[i].error, cfg))
                        listings[i].answer(cfd, r, cfg);
        }
}

int fake_nsd_answer(int cfd, const struct fake_nsd_config *cfg, struct fake_nsd_record *rec) {
        unsigned minor = cfg->minor ? cfg->minor : NSD_PROTO_MINOR;
        uint64_t session_id = cfg->session_id ? cfg->session_id : 4242;
        struct fake_req r;
        const char *problem;
        char problem_buf[64];
        int fds[2] = { -1, -1 }, k, ret = 0;
        uint64_t ino = 0;

        k = fake_nsd_recv(cfd, &r);
        if (k <= 0)
                return -1;
        rec->requests++;
        if (cfg->stuck) {
                fake_req_close_fds(&r);
                return 0;
        }
        if (r.check < 0) {
                record_bad(rec, r.why);
                (void) fake_nsd_send_error(cfd, &r, r.check, r.why);
                fake_req_close_fds(&r);
                return -1;
        }
        if (too_new(cfd, &r, minor, NSD_REQ_JOIN_SESSION, 2, &rec->join_sessions) ||
            too_new(cfd, &r, minor, NSD_REQ_METRICS, 4, &rec->metrics) ||
            too_new(cfd, &r, minor, NSD_REQ_SHARES, 5, &rec->shares) ||
            too_new(cfd, &r, minor, NSD_REQ_VOLUMES, 7, &rec->volumes) ||
            too_new(cfd, &r, minor, NSD_REQ_VOLUME_START, 11, &rec->volume_starts) ||
            too_new(cfd, &r, minor, NSD_REQ_VOLUME_STOP, 11, &rec->volume_stops)) {
                fake_req_close_fds(&r);
                return -1;
        }
        problem = request_problem(&r, problem_buf, sizeof(problem_buf));
        if (problem) {
                record_bad(rec, problem);
                (void) fake_nsd_send_error(cfd, &r, -EBADMSG, problem);
                fake_req_close_fds(&r);
                return -1;
        }

        switch (r.hdr.type) {
        case NSD_REQ_JOIN:
        case NSD_REQ_JOIN_SESSION: {
                bool js = r.hdr.type == NSD_REQ_JOIN_SESSION;
                uint32_t uid = js ? r.join_session.uid : r.join.uid;

                if (js) {
                        rec->join_sessions++;
                        record_session(rec, uid, r.join_session.pid, r.join_session.service, &r);
                } else
                        rec->joins++;
                rec->join_uid = uid;
                rec->join_flags = js ? r.join_session.flags : r.join.flags;
                if (cfg->join_error) {
                        (void) fake_nsd_send_error(cfd, &r, cfg->join_error, cfg->join_message);
                        break;
                }
                if (rec->not_yet_sent < cfg->not_yet) {
                        rec->not_yet_sent++;
                        (void) fake_nsd_send_error(cfd, &r, -NSD_ERRNO_NOT_YET,
                                                   "the namespace of this uid is not adopted yet");
                        break;
                }
                if (js && cfg->session_open_error) {
                        (void) fake_nsd_send_error(cfd, &r, cfg->session_open_error,
                                                   "fake nsd: no more sessions");
                        break;
                }
                if (peer_namespace(cfd, cfg->ns_pid, fds, &ino) < 0) {
                        (void) fake_nsd_send_error(cfd, &r, -EIO,
                                                   "fake nsd cannot open the namespace");
                        break;
                }
                if (js) {
                        struct nsd_rep_join_session rep;

                        fake_nsd_reply_init(&rep, NSD_REP_JOIN_SESSION, sizeof(rep), &r);
                        rep.uid = uid;
                        rep.ns_flags = NSD_NS_CREATED | cfg->join_ns_flags;
                        rep.ns_inode = ino;
                        rep.session_id = session_id;
                        rep.sessions = 1;
                        (void) fake_nsd_send(cfd, &rep, sizeof(rep), fds, 2);
                } else {
                        struct nsd_rep_join rep;

                        fake_nsd_reply_init(&rep, NSD_REP_JOIN, sizeof(rep), &r);
                        rep.uid = uid;
                        rep.ns_flags = NSD_NS_CREATED;
                        rep.ns_inode = ino;
                        (void) fake_nsd_send(cfd, &rep, sizeof(rep), fds, 2);
                }
                close(fds[0]);
                close(fds[1]);
                break;
        }
        case NSD_REQ_SESSION_OPEN: {
                struct nsd_rep_session_open rep;

                rec->session_opens++;
                record_session(rec, r.session_open.uid, r.session_open.pid, r.session_open.service,
                               &r);
                if (cfg->session_open_error) {
                        (void) fake_nsd_send_error(cfd, &r, cfg->session_open_error,
                                                   "fake nsd: no more sessions");
                        break;
                }
                fake_nsd_reply_init(&rep, NSD_REP_SESSION_OPEN, sizeof(rep), &r);
                rep.session_id = session_id;
                rep.sessions = 1;
                (void) fake_nsd_send(cfd, &rep, sizeof(rep), NULL, 0);
                break;
        }
        case NSD_REQ_SESSION_CLOSE: {
                struct nsd_rep_session_close rep;

                rec->session_closes++;
                rec->sc_id = r.session_close.session_id;
                rec->sc_uid = r.session_close.uid;
                rec->sc_pid = r.session_close.pid;
                if (cfg->session_close_error) {
                        (void) fake_nsd_send_error(cfd, &r, cfg->session_close_error,
                                                   "fake nsd: no such session");
                        break;
                }
                fake_nsd_reply_init(&rep, NSD_REP_SESSION_CLOSE, sizeof(rep), &r);
                (void) fake_nsd_send(cfd, &rep, sizeof(rep), NULL, 0);
                break;
        }
        case NSD_REQ_STATUS: {
                struct nsd_rep_status rep;

                rec->statuses++;
                fake_nsd_reply_init(&rep, NSD_REP_STATUS, sizeof(rep), &r);
                rep.hdr.version_minor = (uint16_t) minor;
                if (cfg->status_version)
                        snprintf(rep.version, sizeof(rep.version), "%s", cfg->status_version);
                else
                        snprintf(rep.version, sizeof(rep.version), "fake-1.%u", minor);
                rep.pid = (uint32_t) getpid();
                rep.features = cfg->status_features;
                if (cfg->metrics) { /* root's figures, as nsd's STATUS and METRICS share them */
                        rep.namespaces = cfg->metrics->namespaces;
                        rep.pinned = cfg->metrics->pinned;
                        rep.sessions = cfg->metrics->sessions;
                        rep.connections = cfg->metrics->connections[NSD_METRICS_SOCKET_USER] +
                                          cfg->metrics->connections[NSD_METRICS_SOCKET_ROOT];
                }
                (void) fake_nsd_send(cfd, &rep, sizeof(rep), NULL, 0);
                break;
        }
        case NSD_REQ_LIST:
        case NSD_REQ_SHARES:
        case NSD_REQ_VOLUMES:
                answer_listing(cfd, &r, cfg, rec);
                break;
        case NSD_REQ_SHOW:
                rec->shows++;
                rec->show_uid = r.show.uid;
                if (!refuse(cfd, &r, cfg->show_error, cfg))
                        answer_show(cfd, &r, cfg->show_text ?: "");
                break;
        case NSD_REQ_RELEASE:
                rec->releases++;
                rec->release_uid = r.release.uid;
                rec->release_flags = r.release.flags;
                answer_empty(cfd, &r, NSD_REP_RELEASE, cfg->release_error, cfg);
                break;
        case NSD_REQ_HIDE:
                rec->hides++;
                rec->hide_uid = r.hide.uid;
                rec->hide_flags = r.hide.flags;
                memcpy(rec->hide_path, r.hide.path, sizeof(rec->hide_path));
                rec->hide_path[sizeof(rec->hide_path) - 1] = 0;
                answer_empty(cfd, &r, NSD_REP_HIDE, cfg->hide_error, cfg);
                break;
        case NSD_REQ_CREDENTIAL_UNLOCK: {
                struct nsd_rep_credential_unlock rep;
                ssize_t got;

                rec->credential_unlocks++;
                memcpy(rec->credential_volume, r.credential_unlock.volume,
                       sizeof(rec->credential_volume));
                rec->credential_volume[sizeof(rec->credential_volume) - 1] = '\0';
                rec->credential_seals = fcntl(r.fds[0], F_GET_SEALS);
                got = pread(r.fds[0], rec->credential_text, sizeof(rec->credential_text) - 1, 0);
                rec->credential_text[got > 0 ? got : 0] = '\0';
                if (refuse(cfd, &r, cfg->unlock_error, cfg))
                        break;
                fake_nsd_reply_init(&rep, NSD_REP_CREDENTIAL_UNLOCK, sizeof(rep), &r);
                rep.waiting = cfg->unlock_waiting;
                (void) fake_nsd_send(cfd, &rep, sizeof(rep), NULL, 0);
                break;
        }
        case NSD_REQ_VOLUME_START:
        case NSD_REQ_VOLUME_STOP: {
                bool start = r.hdr.type == NSD_REQ_VOLUME_START;
                struct nsd_rep_volume_ctl rep;
                size_t len = strlen(rec->volume_ctl_names);

                if (start)
                        rec->volume_starts++;
                else
                        rec->volume_stops++;
                rec->volume_ctl_uid = r.volume_ctl.uid;
                memcpy(rec->volume_ctl_volume, r.volume_ctl.volume, sizeof(rec->volume_ctl_volume));
                snprintf(rec->volume_ctl_names + len, sizeof(rec->volume_ctl_names) - len, "%s ",
                         r.volume_ctl.volume);
                if ((!cfg->volume_ctl_fail ||
                     strcmp(cfg->volume_ctl_fail, r.volume_ctl.volume) == 0) &&
                    (!cfg->volume_ctl_error_times ||
                     rec->volume_starts + rec->volume_stops <= cfg->volume_ctl_error_times) &&
                    refuse(cfd, &r, cfg->volume_ctl_error, cfg))
                        break;
                fake_nsd_reply_init(&rep, r.hdr.type | NSD_REPLY_BIT, sizeof(rep), &r);
                rep.state = start ? NSD_VOLUME_MOUNTED : NSD_VOLUME_STOPPED;
                rep.loop = cfg->volume_ctl_loop;
                rep.changed = cfg->volume_ctl_changed;
                (void) fake_nsd_send(cfd, &rep, sizeof(rep), NULL, 0);
                break;
        }
        case NSD_REQ_CREDENTIAL_GIVE: {
                struct nsd_rep_credential_give rep;
                ssize_t got;

                rec->credential_gives++;
                rec->credential_uid = r.credential_give.uid;
                rec->credential_seals = fcntl(r.fds[0], F_GET_SEALS);
                got = pread(r.fds[0], rec->credential_text, sizeof(rec->credential_text) - 1, 0);
                rec->credential_text[got > 0 ? got : 0] = '\0';
                fake_nsd_reply_init(&rep, NSD_REP_CREDENTIAL_GIVE, sizeof(rep), &r);
                rep.volumes = 1;
                (void) fake_nsd_send(cfd, &rep, sizeof(rep), NULL, 0);
                break;
        }
        case NSD_REQ_METRICS: {
                struct nsd_rep_metrics rep = { 0 };

                rec->metrics++;
                if (refuse(cfd, &r, cfg->metrics_error, cfg))
                        break;
                if (cfg->metrics)
                        rep = *cfg->metrics;
                fake_nsd_reply_init(&rep.hdr, NSD_REP_METRICS, sizeof(struct nsd_msg_header), &r);
                rep.hdr.length = sizeof(rep);
                rep.hdr.version_minor = (uint16_t) minor;
                (void) fake_nsd_send(cfd, &rep, sizeof(rep), NULL, 0);
                break;
        }
        default:
                (void) fake_nsd_send_error(cfd, &r, -EOPNOTSUPP, "fake nsd: not implemented");
                ret = -1;
        }
        fake_req_close_fds(&r);
        return ret;
}

#define SERVE_CONNS_MAX 16

int fake_nsd_serve(int lfd, int stop_fd, int timeout_ms, const struct fake_nsd_config *cfg,
                   struct fake_nsd_record *rec) {
        int conns[SERVE_CONNS_MAX], n_conns = 0, ret = 0;

        for (;;) {
                struct pollfd p[2 + SERVE_CONNS_MAX];
                int np = 0, n;

                p[np++] = (struct pollfd) { .fd = stop_fd, .events = POLLIN };
                p[np++] = (struct pollfd) { .fd = lfd, .events = POLLIN };
                for (int i = 0; i < n_conns; i++)
                        p[np++] = (struct pollfd) { .fd = conns[i], .events = POLLIN };
                n = poll(p, (nfds_t) np, timeout_ms);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        ret = -ETIMEDOUT;
                        break;
                }
                if (p[0].revents)
                        break;
                if (p[1].revents & POLLIN) {
                        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

                        if (c >= 0) {
                                rec->connections++;
                                if (n_conns < SERVE_CONNS_MAX)
                                        conns[n_conns++] = c;
                                else
                                        close(c);
                        }
                }
                for (int i = 0; i < n_conns; i++)
                        if (p[2 + i].revents && fake_nsd_answer(conns[i], cfg, rec) < 0) {
                                close(conns[i]);
                                conns[i] = conns[--n_conns];
                                break; /* indices moved; poll again */
                        }
        }
        for (int i = 0; i < n_conns; i++)
                close(conns[i]);
        return ret;
}

static void *serve_thread(void *arg) {
        struct fake_nsd_thread *t = arg;

        t->result = fake_nsd_serve(t->lfd, t->stop[0], 20000, &t->cfg, &t->rec);
        return NULL;
}

int fake_nsd_thread_start(struct fake_nsd_thread *t, int lfd, const struct fake_nsd_config *cfg) {
        int r;

        *t = (struct fake_nsd_thread) { .lfd = lfd, .cfg = *cfg };
        if (pipe2(t->stop, O_CLOEXEC) < 0)
                return -errno;
        r = pthread_create(&t->thread, NULL, serve_thread, t);
        if (r != 0) {
                close(t->stop[0]);
                close(t->stop[1]);
                return -r;
        }
        return 0;
}

int fake_nsd_thread_stop(struct fake_nsd_thread *t) {
        int r = write(t->stop[1], "x", 1) == 1 ? 0 : -errno;

        pthread_join(t->thread, NULL);
        close(t->stop[0]);
        close(t->stop[1]);
        return r < 0 ? r : t->result;
}
