/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-nsclient: libnsclient's handling of what nsd answers, driven through the real
 * library over a real SOCK_SEQPACKET connection to a fake nsd that is this harness.
 *
 * libnsclient.c is compiled into this program (#include below), so the checks can look
 * at the connection's state; the calls go through the public API (nsc_connect() to a
 * socket in a temp folder, nsc_join(), nsc_list(), ...).
 *
 * Input (a reader that yields zeros past the end, see fuzz.h):
 *   u8 head        bit 7 set: "raw" mode, the rest is one datagram for nsd_msg_check()
 *                  (bit 0: as a request); else bits 0-1: number of calls - 1 (1..4),
 *                  bit 2: connect through $NSD_SOCKET (nsc_connect(NULL)), bit 3: the fake
 *                  nsd closes its end after queuing (sends fail), bit 4: the connection's
 *                  sequence numbers start just before they wrap around, bit 5: connect with
 *                  nsc_connect_timeout()
 *   per call:      u8 op (JOIN, SESSION_OPEN, SESSION_CLOSE, STATUS, LIST, SHOW, RELEASE,
 *                  HIDE, JOIN_SESSION, VOLUMES, CREDENTIAL_GIVE, CREDENTIAL_TAKE,
 *                  CREDENTIAL_UNLOCK, METRICS, SHARES, VOLUME_START, VOLUME_STOP; bit 7:
 *                  with bad arguments instead, which must give -EINVAL or -ENAMETOOLONG and
 *                  send nothing), u8 arg (uid 1000 + arg / 16, flags and variants from the low
 *                  bits; METRICS: arg % 3 nsc_metrics(), nsc_metrics_sized() of the struct, of
 *                  a larger one; VOLUME_START and VOLUME_STOP: bit 0 no result wanted (NULL),
 *                  bit 1 a volume name of the longest length taken, 71 bytes)
 *   then up to 64 reply datagrams, queued on the connection before the first call:
 *                  u8 ctl, u8 type, u8 fds, u8 owner, u16 size, size bytes of datagram;
 *                  owner bits 0-1: the call whose seq FIX_SEQ uses; bits 2-7 all set: the
 *                  datagram is queued REPEAT_LONG times, 111110: REPEAT_SHORT times, else
 *                  once (long LIST and SHOW streams, rare for random bytes: they are slow);
 *                  111101: the datagram is for the "second nsd" instead (below).
 *                  ctl bits fix up the datagram so that the fuzzer gets past the header
 *                  checks: FIX_HDR magic and version, FIX_LEN length = size, FIX_SEQ the seq
 *                  of call `owner`, SEQ_ZERO seq 0, FIX_ERR a sound error field, FIX_BODY
 *                  sound fields for the type (JOIN's uid and nsfs inode, LIST_END's,
 *                  VOLUMES_END's and SHARES_END's count, NUL-terminated strings, a VOLUMES
 *                  entry's error and reserved field, a SHARES entry's n_uids (< 300) and a
 *                  SHARES_MEMBERS part's n (1..128, at most what the entry has left), a
 *                  VOLUME_START or VOLUME_STOP reply's changed (0 or 1) and reserved field;
 *                  with NET_INODE the inode of the net nsfs instead),
 *                  SET_TYPE type from a table of every reply type.
 *                  fds: bits 0-4 how many descriptors ride along (SCM_RIGHTS; over 16
 *                  truncates), bits 5-7 which kinds (directory, mount nsfs, net nsfs,
 *                  /dev/null, in turn).
 *   After the datagrams the fake nsd shuts its sending side, so a call waiting for more
 *   gets an orderly end instead of waiting.
 *   The second nsd: nsc_join_session() answered -EOPNOTSUPP (an nsd older than 1.2)
 *   reconnects and falls back to JOIN + SESSION_OPEN. A thread of this harness accepts that
 *   one connection during the calls, queues the datagrams meant for it (FIX_SEQ: the seq of
 *   the fallback's JOIN, then of its SESSION_OPEN) and shuts its side too. It is woken only
 *   for an input with a JOIN_SESSION call (with sound arguments): no other call connects.
 *
 * Properties besides the sanitizers' (any failure aborts):
 *   - no descriptor is left open after nsc_disconnect() (a received one included);
 *   - every descriptor handed to the caller is O_CLOEXEC; JOIN's are a directory and the
 *     mount nsfs file whose inode the reply names;
 *   - results are 0 or -errno (-1..-4095), nsc_join_session() 1 only after a fallback; no
 *     call runs out of time waiting (nothing blocks; nsd may still answer -ETIMEDOUT);
 *   - outputs (ret_*) are untouched on failure;
 *   - CREDENTIAL_GIVE leaves the caller's memfd open (the library sends it, never closes
 *     it); CREDENTIAL_TAKE hands over exactly one descriptor, O_CLOEXEC, none of the
 *     caller's; VOLUMES entries hold NUL-terminated strings and an error <= 0;
 *   - METRICS: the fields are the reply's; nsc_metrics() writes only NSCLIENT_1.3's part
 *     of the struct, nsc_metrics_sized() exactly size bytes, those past the struct it knows
 *     0;
 *   - SHARES: at most SHARES_MAX shares, NUL-terminated names and paths, every share a
 *     member array (readable to its end, n_members long), all freed by nsc_shares_free();
 *   - VOLUME_START, VOLUME_STOP: succeed only on a reply of their own type, whose fields
 *     (changed 0 or 1) the result holds;
 *   - once a connection is broken every later call returns -ENOTCONN and sends nothing;
 *     a successful call never leaves it broken;
 *   - nsc_last_error_message() is NULL or a string shorter than the protocol's field;
 *   - raw mode: nsd_msg_check() accepts exactly the datagrams whose length field, type
 *     and size agree, and says why for every refusal.
 */
#include "libnsclient.c"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>

#include "fuzz-nsclient.h"
#include "fuzz.h"

#define CALLS_MAX 4
#define DATAGRAMS_MAX 64
#define DATAGRAM_SIZE_MAX 4400  /* past NSD_MSG_SIZE_MAX + 1: the MSG_TRUNC path */
#define FDS_PER_DATAGRAM_MAX 20 /* past libnsclient's RECV_FDS_MAX: the MSG_CTRUNC path */
#define REPEAT_LONG 300         /* 300 full SHOW_DATA parts are past NSD_SHOW_TEXT_MAX */
#define REPEAT_SHORT 20
#define SCRIPT_MAX 8

static const uint16_t types[_T_MAX] = {
        [T_JOIN] = NSD_REP_JOIN,
        [T_SESSION_OPEN] = NSD_REP_SESSION_OPEN,
        [T_SESSION_CLOSE] = NSD_REP_SESSION_CLOSE,
        [T_STATUS] = NSD_REP_STATUS,
        [T_LIST_ENTRY] = NSD_REP_LIST_ENTRY,
        [T_LIST_END] = NSD_REP_LIST_END,
        [T_SHOW_DATA] = NSD_REP_SHOW_DATA,
        [T_SHOW_END] = NSD_REP_SHOW_END,
        [T_RELEASE] = NSD_REP_RELEASE,
        [T_HIDE] = NSD_REP_HIDE,
        [T_JOIN_SESSION] = NSD_REP_JOIN_SESSION,
        [T_ERROR] = NSD_REP_ERROR,
        [T_ZERO] = 0,
        [T_REQ_JOIN] = NSD_REQ_JOIN,
        [T_REQ_LIST] = NSD_REQ_LIST,
        [T_REPLY_BIT] = NSD_REPLY_BIT,
        [T_UNKNOWN] = 0x81ff, /* 0x8102 was unknown before 1.5 (SHARES_MEMBERS now) */
        [T_VOLUMES_ENTRY] = NSD_REP_VOLUMES_ENTRY,
        [T_VOLUMES_END] = NSD_REP_VOLUMES_END,
        [T_CREDENTIAL_GIVE] = NSD_REP_CREDENTIAL_GIVE,
        [T_CREDENTIAL_TAKE] = NSD_REP_CREDENTIAL_TAKE,
        [T_CREDENTIAL_UNLOCK] = NSD_REP_CREDENTIAL_UNLOCK,
        [T_METRICS] = NSD_REP_METRICS,
        [T_SHARES_ENTRY] = NSD_REP_SHARES_ENTRY,
        [T_SHARES_MEMBERS] = NSD_REP_SHARES_MEMBERS,
        [T_SHARES_END] = NSD_REP_SHARES_END,
        [T_VOLUME_START] = NSD_REP_VOLUME_START,
        [T_VOLUME_STOP] = NSD_REP_VOLUME_STOP,
};

static char tmp_dir[64];
static char sock_path[100];
static int listen_fd = -1;
static int kind_fd[4] = { -1, -1, -1, -1 }; /* "/" O_PATH, mount nsfs, net nsfs, /dev/null */
static uint64_t mnt_inode, net_inode;
static int credential_fd = -1; /* a sealed memfd: what pam_nsjoin gives */
static bool trace;       /* $FUZZ_TRACE: one line per call on stderr, to check what seeds reach */
static int wake_fd = -1; /* an eventfd: the second nsd is disarmed, stop waiting */
static void *second_nsd(void *unused);

static void cleanup(void) {
        if (sock_path[0])
                (void) unlink(sock_path);
        if (tmp_dir[0])
                (void) rmdir(tmp_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        const char *tmp = getenv("TMPDIR");
        struct stat st;

        snprintf(tmp_dir, sizeof tmp_dir, "%s/fuzz-nsclient.XXXXXX",
                 tmp && *tmp && strlen(tmp) < 32 ? tmp : "/tmp");
        fuzz_assert(mkdtemp(tmp_dir), "mkdtemp: %m");
        atexit(cleanup);
        snprintf(sock_path, sizeof sock_path, "%s/socket", tmp_dir);
        memcpy(sa.sun_path, sock_path, sizeof sock_path);
        /* non-blocking: the second nsd may see it readable and find the connection gone
         * (the main thread's); a connect() returns only once it is queued, so the main
         * thread's accept never waits */
        listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        fuzz_assert(listen_fd >= 0, "socket: %m");
        fuzz_assert(bind(listen_fd, (struct sockaddr *) &sa, sizeof sa) == 0, "bind: %m");
        fuzz_assert(listen(listen_fd, 16) == 0, "listen: %m");

        kind_fd[0] = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        kind_fd[1] = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        kind_fd[2] = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        kind_fd[3] = open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int i = 0; i < 4; i++)
                fuzz_assert(kind_fd[i] >= 0, "open descriptor kind %d: %m", i);
        fuzz_assert(fstat(kind_fd[1], &st) == 0, "fstat: %m");
        mnt_inode = st.st_ino;
        fuzz_assert(fstat(kind_fd[2], &st) == 0, "fstat: %m");
        net_inode = st.st_ino;
        credential_fd = memfd_create("fuzz-credential", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        fuzz_assert(credential_fd >= 0 && write(credential_fd, "hunter2", 7) == 7 &&
                            fcntl(credential_fd, F_ADD_SEALS,
                                  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0,
                    "memfd: %m");
        /* for nsc_connect(NULL) */
        setenv("NSD_SOCKET", sock_path, 1);

        pthread_t t;
        wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        fuzz_assert(wake_fd >= 0, "eventfd: %m");
        fuzz_assert(pthread_create(&t, NULL, second_nsd, NULL) == 0, "pthread_create");
        pthread_detach(t);
        trace = getenv("FUZZ_TRACE") != NULL;
        return 0;
}

/* The lowest free descriptor number: grows when anything leaks. */
static int lowest_free_fd(void) {
        int fd = fcntl(listen_fd, F_DUPFD_CLOEXEC, 0);

        fuzz_assert(fd >= 0, "F_DUPFD: %m");
        close(fd);
        return fd;
}

static bool is_cloexec(int fd) {
        int fl = fcntl(fd, F_GETFD);
        return fl >= 0 && (fl & FD_CLOEXEC);
}

struct call {
        uint8_t op, arg;
};

static uid_t call_uid(const struct call *c) {
        return 1000 + c->arg / 16;
}

/* The seq of the k-th request (k >= 1) on a connection whose counter starts at start:
 * libnsclient skips 0, which only nsd's "could not read the request" errors carry. */
static uint32_t nth_seq(uint32_t start, unsigned k) {
        uint32_t s = start;
        while (k-- > 0)
                if (++s == 0)
                        s = 1;
        return s;
}

/* One reply datagram of the fake nsd: bytes, descriptors to pass, how often. */
struct datagram {
        uint8_t *buf;
        size_t size;
        uint8_t fdspec;
        unsigned copies;
};

/* Send d (copies times) with its descriptors; false when the socket is full. */
static bool send_datagram(int fd, const struct datagram *d) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int) * FDS_PER_DATAGRAM_MAX)];
        } control;
        struct iovec iov = { .iov_base = d->buf, .iov_len = d->size };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        size_t nfds = d->fdspec & 0x1f;

        int fds[FDS_PER_DATAGRAM_MAX];

        if (nfds > FDS_PER_DATAGRAM_MAX)
                nfds = FDS_PER_DATAGRAM_MAX;
        for (size_t i = 0; i < nfds; i++)
                fds[i] = kind_fd[((d->fdspec >> 5) + i) % 4];
        if (nfds > 0)
                cmsg_put_fds(&mh, control.buf, fds, nfds);
        for (unsigned i = 0; i < d->copies; i++)
                if (sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
                        return false;
        return true;
}

/* The second nsd: a thread that, while armed, accepts one connection and plays its script. */
static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool armed, busy;
        int fd; /* the accepted connection (after the thread is done with it), or -1 */
        struct datagram script[SCRIPT_MAX];
        unsigned n;
} second = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER, .fd = -1 };
static void *second_nsd(void *unused) {
        for (;;) {
                struct pollfd p[2] = { { .fd = listen_fd, .events = POLLIN },
                                       { .fd = wake_fd, .events = POLLIN } };
                int fd;

                pthread_mutex_lock(&second.lock);
                while (!second.armed)
                        pthread_cond_wait(&second.cond, &second.lock);
                pthread_mutex_unlock(&second.lock);

                if (poll(p, 2, -1) < 0)
                        continue;
                if (p[1].revents & POLLIN) {
                        uint64_t v;
                        (void) !read(wake_fd, &v, sizeof v);
                }
                if (!(p[0].revents & POLLIN))
                        continue;
                /* accept only while armed, decided under the lock: the main thread
                 * accepts its own connection while disarmed */
                pthread_mutex_lock(&second.lock);
                fd = second.armed ? accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC) : -1;
                if (fd < 0) {
                        pthread_mutex_unlock(&second.lock);
                        continue;
                }
                second.armed = false;
                second.busy = true;
                pthread_mutex_unlock(&second.lock);

                for (unsigned i = 0; i < second.n; i++)
                        if (!send_datagram(fd, &second.script[i]))
                                break;
                (void) shutdown(fd, SHUT_WR);

                pthread_mutex_lock(&second.lock);
                second.fd = fd;
                second.busy = false;
                pthread_cond_broadcast(&second.cond);
                pthread_mutex_unlock(&second.lock);
        }
        return NULL;
}

/* Wait until the second nsd is not in the middle of playing its script. */
static void second_wait_idle(void) {
        pthread_mutex_lock(&second.lock);
        while (second.busy)
                pthread_cond_wait(&second.cond, &second.lock);
        pthread_mutex_unlock(&second.lock);
}

static void second_arm(void) {
        pthread_mutex_lock(&second.lock);
        second.fd = -1;
        second.armed = true;
        pthread_cond_broadcast(&second.cond);
        pthread_mutex_unlock(&second.lock);
}

/* Disarm (if armed) and take the connection it accepted, if any; its script is freed. */
static int second_disarm(bool armed) {
        uint64_t one = 1;
        int fd;

        if (armed) {
                pthread_mutex_lock(&second.lock);
                second.armed = false;
                pthread_mutex_unlock(&second.lock);
                (void) !write(wake_fd, &one, sizeof one);
                second_wait_idle();
        }
        pthread_mutex_lock(&second.lock);
        fd = second.fd;
        second.fd = -1;
        for (unsigned i = 0; i < second.n; i++)
                free(second.script[i].buf);
        second.n = 0;
        pthread_mutex_unlock(&second.lock);
        return fd;
}

/* What FIX_BODY needs to know of the streams queued so far. */
struct stream {
        unsigned entries;   /* LIST, VOLUMES and SHARES entries since the last end */
        uint32_t uids_left; /* members the last SHARES entry announced and no part carried */
};

/* The last byte of a string field NUL. */
#define TERMINATE(field) ((field)[sizeof(field) - 1] = 0)

/* FIX_BODY of a reply that holds all of its struct: the fields the library checks made what it
 * takes (strings terminated, counts in range, reserved fields 0, the JOIN's uid and namespace,
 * the count at a stream's end). */
static void fix_body(uint8_t *buf, uid_t uid, uint64_t ns_inode, const struct stream *stream) {
        const struct nsd_msg_header *h = (const struct nsd_msg_header *) buf;
        union { /* buf as the reply it is */
                uint8_t *buf;
                struct nsd_rep_join *join; /* JOIN_SESSION's starts the same */
                struct nsd_rep_stream_end *end;
                struct nsd_rep_list_entry *list;
                struct nsd_rep_volumes_entry *volume;
                struct nsd_rep_shares_entry *share;
                struct nsd_rep_shares_members *members;
                struct nsd_rep_volume_ctl *volume_ctl;
                struct nsd_rep_status *status;
                struct nsd_rep_session_open *session;
        } rep = { buf };

        switch (h->type) {
        case NSD_REP_JOIN:
        case NSD_REP_JOIN_SESSION:
                rep.join->uid = uid;
                rep.join->ns_inode = ns_inode;
                break;
        case NSD_REP_LIST_END:
        case NSD_REP_VOLUMES_END:
        case NSD_REP_SHARES_END:
                rep.end->count = stream->entries;
                break;
        case NSD_REP_LIST_ENTRY:
                TERMINATE(rep.list->pin);
                break;
        case NSD_REP_VOLUMES_ENTRY:
                TERMINATE(rep.volume->name);
                TERMINATE(rep.volume->type);
                TERMINATE(rep.volume->source);
                TERMINATE(rep.volume->where);
                TERMINATE(rep.volume->why);
                TERMINATE(rep.volume->options);
                rep.volume->error = -(int32_t) ((uint32_t) rep.volume->error % 134);
                rep.volume->reserved = 0;
                break;
        case NSD_REP_SHARES_ENTRY:
                TERMINATE(rep.share->name);
                TERMINATE(rep.share->path);
                rep.share->n_uids %= 300; /* up to three parts */
                rep.share->reserved = 0;
                break;
        case NSD_REP_SHARES_MEMBERS:
                rep.members->n = 1 + rep.members->n % NSD_SHARES_MEMBERS_PER_PART;
                if (stream->uids_left > 0 && rep.members->n > stream->uids_left)
                        rep.members->n = stream->uids_left;
                rep.members->reserved = 0;
                break;
        case NSD_REP_VOLUME_START:
        case NSD_REP_VOLUME_STOP:
                rep.volume_ctl->changed %= 2;
                rep.volume_ctl->reserved = 0;
                break;
        case NSD_REP_STATUS:
                TERMINATE(rep.status->version);
                break;
        case NSD_REP_SESSION_OPEN:
                if (rep.session->session_id == 0)
                        rep.session->session_id = 1;
                break;
        }
}

/* Fix up one datagram and queue it on the fake nsd's side (or give it to the second nsd);
 * false when the socket is full. */
static bool queue_datagram(int srv, struct fuzz_input *in, const struct call *calls,
                           unsigned ncalls, uint32_t seq_start, struct stream *stream) {
        uint8_t ctl = fuzz_u8(in), tsel = fuzz_u8(in), fdspec = fuzz_u8(in), o = fuzz_u8(in);
        unsigned owner = (o & 3) % ncalls;
        bool for_second = (o >> 2) == OWNER_SECOND_NSD && second.n < SCRIPT_MAX;
        unsigned copies = (o >> 2) == OWNER_REPEAT_LONG    ? REPEAT_LONG
                          : (o >> 2) == OWNER_REPEAT_SHORT ? REPEAT_SHORT
                                                           : 1;
        size_t size = fuzz_u16(in) % DATAGRAM_SIZE_MAX;
        _cleanup_free_ uint8_t *buf = calloc(1, size ? size : 1);
        struct nsd_msg_header *h = (struct nsd_msg_header *) buf;
        struct datagram d = { .size = size, .fdspec = fdspec, .copies = copies };

        fuzz_assert(buf, "out of memory");
        for (size_t i = 0; i < size && fuzz_left(in) > 0; i++)
                buf[i] = fuzz_u8(in);

        if (size >= sizeof *h) {
                if (ctl & SET_TYPE)
                        h->type = types[tsel % _T_MAX];
                if (ctl & FIX_HDR) {
                        h->magic = NSD_PROTO_MAGIC;
                        h->version_major = NSD_PROTO_MAJOR;
                        h->version_minor = NSD_PROTO_MINOR;
                }
                if (ctl & FIX_LEN)
                        h->length = (uint32_t) size;
                if (ctl & FIX_SEQ)
                        h->seq = nth_seq(seq_start, owner + 1 + (for_second ? 1 + second.n : 0));
                if (ctl & SEQ_ZERO)
                        h->seq = 0;
                if (ctl & FIX_ERR)
                        h->error = h->type == NSD_REP_ERROR
                                           ? -(1 + (int32_t) ((uint32_t) h->error % 133))
                                           : 0;
                /* every reply FIX_BODY knows is as long as nsd_reply_size() says */
                if ((ctl & FIX_BODY) && size >= nsd_reply_size(h->type))
                        fix_body(buf, call_uid(&calls[owner]),
                                 ctl & NET_INODE ? net_inode : mnt_inode, stream);
                if (h->type == NSD_REP_LIST_ENTRY || h->type == NSD_REP_VOLUMES_ENTRY ||
                    h->type == NSD_REP_SHARES_ENTRY)
                        stream->entries += copies;
                else if (h->type == NSD_REP_LIST_END || h->type == NSD_REP_VOLUMES_END ||
                         h->type == NSD_REP_SHARES_END)
                        stream->entries = 0;
                if (h->type == NSD_REP_SHARES_ENTRY && size >= sizeof(struct nsd_rep_shares_entry))
                        stream->uids_left = ((struct nsd_rep_shares_entry *) buf)->n_uids;
                else if (h->type == NSD_REP_SHARES_MEMBERS &&
                         size >= sizeof(struct nsd_rep_shares_members)) {
                        uint64_t took = (uint64_t) ((struct nsd_rep_shares_members *) buf)->n *
                                        copies;
                        stream->uids_left = took < stream->uids_left
                                                    ? stream->uids_left - (uint32_t) took
                                                    : 0;
                }
        }

        d.buf = buf;
        if (for_second) {
                d.buf = TAKE_PTR(buf);
                second.script[second.n++] = d;
                return true;
        }
        return send_datagram(srv, &d);
}

/* Read what the client sent since the last time; close descriptors it passed (pidfds). */
static unsigned drain_requests(int srv) {
        unsigned n = 0;

        for (;;) {
                union {
                        struct cmsghdr align;
                        char buf[CMSG_SPACE(sizeof(int) * 8)];
                } control;
                uint8_t buf[NSD_MSG_SIZE_MAX + 1];
                struct iovec iov = { .iov_base = buf, .iov_len = sizeof buf };
                struct msghdr mh = { .msg_iov = &iov,
                                     .msg_iovlen = 1,
                                     .msg_control = control.buf,
                                     .msg_controllen = sizeof control.buf };
                const char *why;

                ssize_t k = recvmsg(srv, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
                /* a client that closed with replies unread (the fallback's reconnect)
                 * reports ECONNRESET once; what it sent before is still queued */
                if (k < 0 && errno == ECONNRESET)
                        continue;
                if (k <= 0) /* nothing more, or the client closed */
                        break;
                (void) cmsg_take_fds(&mh, NULL, 0);
                if (trace)
                        fprintf(stderr,
                                "fuzz-nsclient: fd %d got a request of %zd bytes, type %u, seq "
                                "%u\n",
                                srv, k, (unsigned) ((struct nsd_msg_header *) buf)->type,
                                (unsigned) ((struct nsd_msg_header *) buf)->seq);
                /* what the library sends must pass nsd's own check */
                fuzz_assert(nsd_msg_check(buf, (size_t) k, 1, &why) == 0,
                            "the library sent a request nsd refuses: %s", why);
                n++;
        }
        return n;
}

#define CANARY 0xa5
static bool untouched(const void *p, size_t n) {
        const uint8_t *b = p;
        for (size_t i = 0; i < n; i++)
                if (b[i] != CANARY)
                        return false;
        return true;
}

/* A call with bad arguments: must be refused before anything is sent. */
static int do_bad_call(nsc_conn *c, const struct call *call) {
        uid_t uid = call_uid(call);
        unsigned v = call->arg & 0xf;
        struct nsc_join_result j;
        struct nsc_status st;
        struct nsc_ns_info *entries;
        struct nsc_volume_info *volumes;
        struct nsc_metrics m;
        struct nsc_share_info *shares;
        struct nsc_volume_ctl vc;
        size_t n;
        char *text;
        char long_path[NSD_HIDE_PATH_MAX + 1];
        char long_name[NSD_SHARE_NAME_MAX + 1];
        int fd;

        switch ((call->op & OP_MASK) % _OP_MAX) {
        case OP_JOIN:
                return v % 4 == 0   ? nsc_join(c, (uid_t) -1, 0, &j)
                       : v % 4 == 1 ? nsc_join(c, uid, 0x80, &j)
                       : v % 4 == 2 ? nsc_join(c, uid, 0, NULL)
                                    : nsc_join(NULL, uid, 0, &j);
        case OP_SESSION_OPEN:
                return v % 4 == 0 ? nsc_session_open(c, uid, 0, NULL, NULL, NULL)
                       : v % 4 == 1
                               ? nsc_session_open(c, uid, getpid(),
                                                  "a-service-name-of-32-characters!", NULL, NULL)
                       : v % 4 == 2 ? nsc_session_open(c, (uid_t) -1, getpid(), NULL, NULL, NULL)
                                    : nsc_session_open(NULL, uid, getpid(), NULL, NULL, NULL);
        case OP_SESSION_CLOSE:
                return v % 4 == 0   ? nsc_session_close(c, uid, 0, 0, NULL)
                       : v % 4 == 1 ? nsc_session_close(c, uid, -1, 1, NULL)
                       : v % 4 == 2 ? nsc_session_close(c, (uid_t) -1, getpid(), 0, NULL)
                                    : nsc_session_close(NULL, uid, getpid(), 0, NULL);
        case OP_STATUS:
                return v % 3 == 0   ? nsc_status(c, NULL)
                       : v % 3 == 1 ? nsc_status(NULL, &st)
                                    : nsc_set_timeout(c, ((uint64_t) INT_MAX + 1) * 1000000);
        case OP_LIST:
                return v % 3 == 0   ? nsc_list(c, NULL, &n)
                       : v % 3 == 1 ? nsc_list(c, &entries, NULL)
                                    : nsc_list(NULL, &entries, &n);
        case OP_SHOW:
                return v % 3 == 0   ? nsc_show(c, uid, NULL, &n)
                       : v % 3 == 1 ? nsc_show(c, (uid_t) -1, &text, &n)
                                    : nsc_show(NULL, uid, &text, &n);
        case OP_RELEASE:
                return v % 3 == 0   ? nsc_release(c, uid, 2)
                       : v % 3 == 1 ? nsc_release(c, (uid_t) -1, 0)
                                    : nsc_release(NULL, uid, 0);
        case OP_JOIN_SESSION:
                return v % 5 == 0
                               ? nsc_join_session(c, (uid_t) -1, 0, getpid(), NULL, &j, NULL, NULL)
                       : v % 5 == 1 ? nsc_join_session(c, uid, 0x80, getpid(), NULL, &j, NULL, NULL)
                       : v % 5 == 2 ? nsc_join_session(c, uid, 0, 0, NULL, &j, NULL, NULL)
                       : v % 5 == 3 ? nsc_join_session(c, uid, 0, getpid(),
                                                       "a-service-name-of-32-characters!", &j, NULL,
                                                       NULL)
                                    : nsc_join_session(c, uid, 0, getpid(), NULL, NULL, NULL, NULL);
        case OP_VOLUMES:
                return v % 3 == 0   ? nsc_volumes(c, NULL, &n)
                       : v % 3 == 1 ? nsc_volumes(c, &volumes, NULL)
                                    : nsc_volumes(NULL, &volumes, &n);
        case OP_CREDENTIAL_GIVE:
                return v % 3 == 0   ? nsc_credential_give(c, (uid_t) -1, credential_fd, NULL)
                       : v % 3 == 1 ? nsc_credential_give(c, uid, -1, NULL)
                                    : nsc_credential_give(NULL, uid, credential_fd, NULL);
        case OP_CREDENTIAL_TAKE:
                memset(long_name, 'v', sizeof long_name);
                long_name[sizeof long_name - 1] = 0;
                return v % 6 == 0   ? nsc_credential_take(c, NULL, 0, &fd)
                       : v % 6 == 1 ? nsc_credential_take(c, "", 0, &fd)
                       : v % 6 == 2 ? nsc_credential_take(c, long_name, 0, &fd)
                       : v % 6 == 3 ? nsc_credential_take(c, "vault", 0x2, &fd)
                       : v % 6 == 4 ? nsc_credential_take(c, "vault", 0, NULL)
                                    : nsc_credential_take(NULL, "vault", 0, &fd);
        case OP_CREDENTIAL_UNLOCK:
                memset(long_name, 'v', sizeof long_name);
                long_name[sizeof long_name - 1] = 0;
                return v % 5 == 0   ? nsc_credential_unlock(c, NULL, credential_fd, NULL)
                       : v % 5 == 1 ? nsc_credential_unlock(c, "", credential_fd, NULL)
                       : v % 5 == 2 ? nsc_credential_unlock(c, long_name, credential_fd, NULL)
                       : v % 5 == 3 ? nsc_credential_unlock(c, "vault", -1, NULL)
                                    : nsc_credential_unlock(NULL, "vault", credential_fd, NULL);
        case OP_METRICS:
                /* a struct too short for nsc_metrics_sized(): NSCLIENT_1.3's, none */
                return v % 5 == 0   ? nsc_metrics(c, NULL)
                       : v % 5 == 1 ? nsc_metrics(NULL, &m)
                       : v % 5 == 2
                               ? nsc_metrics_sized(c, &m,
                                                   offsetof(struct nsc_metrics, lookup_timeouts))
                       : v % 5 == 3 ? nsc_metrics_sized(c, &m, 0)
                                    : nsc_metrics_sized(c, NULL, sizeof m);
        case OP_SHARES:
                return v % 3 == 0   ? nsc_shares(c, NULL, &n)
                       : v % 3 == 1 ? nsc_shares(c, &shares, NULL)
                                    : nsc_shares(NULL, &shares, &n);
        case OP_VOLUME_START:
        case OP_VOLUME_STOP: {
                bool start = (call->op & OP_MASK) % _OP_MAX == OP_VOLUME_START;
                __typeof__(nsc_volume_start) *f = start ? nsc_volume_start : nsc_volume_stop;

                /* a name one byte past the longest: NSD_SHARE_NAME_MAX bytes and its NUL */
                memset(long_name, 'v', sizeof long_name);
                long_name[sizeof long_name - 1] = 0;
                return v % 5 == 0   ? f(c, uid, NULL, &vc)
                       : v % 5 == 1 ? f(c, uid, "", &vc)
                       : v % 5 == 2 ? f(c, uid, long_name, &vc)
                       : v % 5 == 3 ? f(c, (uid_t) -1, "data", &vc)
                                    : f(NULL, uid, "data", &vc);
        }
        default:
                memset(long_path, 'x', sizeof long_path);
                long_path[0] = '/';
                long_path[sizeof long_path - 1] = 0;
                return v % 5 == 0   ? nsc_hide(c, uid, "home/fuzz/mnt", 0)
                       : v % 5 == 1 ? nsc_hide(c, uid, long_path, 0)
                       : v % 5 == 2 ? nsc_hide(c, uid, "/home/fuzz/mnt", 2)
                       : v % 5 == 3 ? nsc_hide(c, uid, NULL, 0)
                                    : nsc_hide(c, (uid_t) -1, "/home/fuzz/mnt", 0);
        }
}

/* A JOIN result handed to the caller: checked, then closed. */
static void check_join_result(const struct nsc_join_result *j, uid_t uid) {
        struct stat st;

        fuzz_assert(j->root_fd >= 0 && j->ns_fd >= 0 && j->root_fd != j->ns_fd,
                    "JOIN descriptors %d %d", j->root_fd, j->ns_fd);
        fuzz_assert(is_cloexec(j->root_fd) && is_cloexec(j->ns_fd),
                    "JOIN descriptors without O_CLOEXEC");
        fuzz_assert(fstat(j->root_fd, &st) == 0 && S_ISDIR(st.st_mode), "root not a directory");
        fuzz_assert(fstat(j->ns_fd, &st) == 0 && st.st_ino == j->ns_inode &&
                            ioctl(j->ns_fd, NS_GET_NSTYPE) == CLONE_NEWNS,
                    "ns_fd is not the mount namespace named");
        fuzz_assert(j->uid == uid, "JOIN for uid %u gave uid %u", (unsigned) uid,
                    (unsigned) j->uid);
        close(j->root_fd);
        close(j->ns_fd);
}

/* A METRICS result of size bytes: every field the reply's (still in c->rx), past the
 * struct this library knows 0; lookup_timeouts only if size has room for it. */
static void check_metrics(const struct nsc_metrics *m, const struct nsd_rep_metrics *rep,
                          size_t size) {
        const uint8_t *tail = (const uint8_t *) m + sizeof *m;

        fuzz_assert(m->namespaces == rep->namespaces && m->pinned == rep->pinned &&
                            m->sessions == rep->sessions &&
                            m->fdstore_entries == rep->fdstore_entries &&
                            memcmp(m->connections, rep->connections, sizeof m->connections) == 0 &&
                            memcmp(m->joins, rep->joins, sizeof m->joins) == 0 &&
                            memcmp(m->join_latency, rep->join_latency, sizeof m->join_latency) ==
                                    0 &&
                            m->join_latency_sum_usec == rep->join_latency_sum_usec &&
                            m->created == rep->created &&
                            m->setup_failures == rep->setup_failures &&
                            memcmp(m->releases, rep->releases, sizeof m->releases) == 0 &&
                            memcmp(m->lookups, rep->lookups, sizeof m->lookups) == 0 &&
                            m->path_walk_timeouts == rep->path_walk_timeouts &&
                            memcmp(m->throttled, rep->throttled, sizeof m->throttled) == 0,
                    "METRICS: a field is not the reply's");
        if (size >= sizeof *m)
                fuzz_assert(memcmp(m->lookup_timeouts, rep->lookup_timeouts,
                                   sizeof m->lookup_timeouts) == 0,
                            "METRICS: lookup_timeouts not the reply's");
        for (size_t i = 0; i + sizeof *m < size; i++)
                fuzz_assert(tail[i] == 0, "METRICS: byte %zu of a newer caller's struct is %u",
                            sizeof *m + i, tail[i]);
}

/* A VOLUMES result: an array, every string of every entry terminated, errors negative;
 * freed. */
static void check_volumes(struct nsc_volume_info *v, size_t n) {
        fuzz_assert(v != NULL, "VOLUMES gave NULL");
        for (size_t i = 0; i < n; i++)
                fuzz_assert(memchr(v[i].name, 0, sizeof v[i].name) &&
                                    memchr(v[i].type, 0, sizeof v[i].type) &&
                                    memchr(v[i].source, 0, sizeof v[i].source) &&
                                    memchr(v[i].where, 0, sizeof v[i].where) &&
                                    memchr(v[i].why, 0, sizeof v[i].why) &&
                                    memchr(v[i].options, 0, sizeof v[i].options) && v[i].error <= 0,
                            "VOLUMES entry %zu: a string not terminated or error %d", i,
                            v[i].error);
        free(v);
}

/* A SHARES result: sound strings, a member array per share that reads to its end; freed. */
static void check_shares(struct nsc_share_info *v, size_t n, const nsc_conn *c) {
        static volatile uint32_t sink; /* the reads of the members stay */

        fuzz_assert(v != NULL && n <= SHARES_MAX, "SHARES gave %zu shares (%p)", n, (void *) v);
        /* the stream's end, still in c->rx, counted them */
        fuzz_assert(c->rx.hdr.type == NSD_REP_SHARES_END && c->rx.stream_end.count == n,
                    "SHARES gave %zu shares, the end of type %#x counted %u", n,
                    (unsigned) c->rx.hdr.type, c->rx.stream_end.count);
        for (size_t i = 0; i < n; i++) {
                fuzz_assert(memchr(v[i].name, 0, sizeof v[i].name) &&
                                    memchr(v[i].path, 0, sizeof v[i].path),
                            "share %zu: name or path not terminated", i);
                fuzz_assert(v[i].member && v[i].n_members <= LIST_ENTRIES_MAX,
                            "share %zu: %zu members at %p", i, v[i].n_members,
                            (void *) v[i].member);
                for (size_t k = 0; k < v[i].n_members; k++)
                        sink += v[i].member[k].uid + v[i].member[k].peer_group;
        }
        (void) sink;
        nsc_shares_free(v, n);
}

/* What the calls of do_call() write through their result pointers, one member a call. All of it
 * is CANARY before the call, and must still be when the call fails: a failing call leaves the
 * caller's results alone. */
#define ARRAY_OF(type)    \
        struct {          \
                type *v;  \
                size_t n; \
        }
union results {
        struct nsc_join_result join;
        struct {
                struct nsc_join_result j;
                uint64_t id;
                unsigned n;
        } join_session;
        struct {
                uint64_t id;
                unsigned n;
        } session_open;
        unsigned left;    /* SESSION_CLOSE */
        unsigned waiting; /* CREDENTIAL_GIVE, CREDENTIAL_UNLOCK */
        int fd;           /* CREDENTIAL_TAKE */
        struct nsc_status status;
        ARRAY_OF(struct nsc_ns_info) list;
        ARRAY_OF(char) show; /* the text and its length */
        ARRAY_OF(struct nsc_volume_info) volumes;
        ARRAY_OF(struct nsc_share_info) shares;
        struct nsc_volume_ctl volume_ctl;
        /* the caller's struct and room past it: NSCLIENT_1.3's part of it (nsc_metrics()), all
         * of it, or a newer caller's larger one */
        union {
                struct nsc_metrics m;
                uint8_t bytes[sizeof(struct nsc_metrics) + 32];
        } metrics;
};

#define FUZZ_OP_NAME(name) [OP_##name] = #name,
static const char *const op_name[_OP_MAX] = { FUZZ_OPS(FUZZ_OP_NAME) };

static int do_call(nsc_conn *c, const struct call *call) {
        unsigned op = (call->op & OP_MASK) % _OP_MAX;
        uid_t uid = call_uid(call);
        union results res;
        int r;

        if (call->op & OP_BAD)
                return do_bad_call(c, call);

        memset(&res, CANARY, sizeof res);
        switch (op) {
        case OP_JOIN:
                r = nsc_join(c, uid, call->arg & NSC_JOIN_NO_CREATE, &res.join);
                if (r < 0)
                        break;
                fuzz_assert(r == 0, "JOIN returned %d", r);
                check_join_result(&res.join, uid);
                break;
        case OP_JOIN_SESSION: {
                bool fallback_before = c->no_join_session;

                r = nsc_join_session(c, uid, call->arg & NSC_JOIN_NO_CREATE, getpid(),
                                     call->arg & 2 ? "sshd" : NULL, &res.join_session.j,
                                     &res.join_session.id, &res.join_session.n);
                if (r < 0)
                        break;
                fuzz_assert(r == (c->no_join_session ? 1 : 0),
                            "JOIN_SESSION returned %d, fallback %d (before: %d)", r,
                            c->no_join_session, fallback_before);
                fuzz_assert(res.join_session.id != 0, "session id 0");
                check_join_result(&res.join_session.j, uid);
                break;
        }
        case OP_SESSION_OPEN:
                r = nsc_session_open(c, uid, getpid(), call->arg & 1 ? "sshd" : NULL,
                                     &res.session_open.id, &res.session_open.n);
                fuzz_assert(r < 0 || res.session_open.id != 0, "session id 0");
                break;
        case OP_SESSION_CLOSE:
                r = nsc_session_close(c, uid, call->arg & 1 ? getpid() : 0,
                                      call->arg & 1 ? 0 : 1 + call->arg, &res.left);
                break;
        case OP_STATUS:
                r = nsc_status(c, &res.status);
                fuzz_assert(r < 0 || memchr(res.status.version, 0, sizeof res.status.version),
                            "version not a string");
                break;
        case OP_LIST:
                r = nsc_list(c, &res.list.v, &res.list.n);
                if (r < 0)
                        break;
                fuzz_assert(res.list.v != NULL, "LIST gave NULL");
                for (size_t i = 0; i < res.list.n; i++)
                        fuzz_assert(memchr(res.list.v[i].pin, 0, sizeof res.list.v[i].pin),
                                    "pin not a string");
                free(res.list.v);
                break;
        case OP_SHOW:
                r = nsc_show(c, uid, &res.show.v, &res.show.n);
                if (r < 0)
                        break;
                fuzz_assert(res.show.v && res.show.n <= NSD_SHOW_TEXT_MAX &&
                                    res.show.v[res.show.n] == 0,
                            "SHOW text of %zu bytes not terminated", res.show.n);
                free(res.show.v);
                break;
        case OP_RELEASE:
                r = nsc_release(c, uid, call->arg & NSC_RELEASE_FORCE);
                break;
        case OP_VOLUMES:
                r = nsc_volumes(c, &res.volumes.v, &res.volumes.n);
                if (r >= 0)
                        check_volumes(res.volumes.v, res.volumes.n);
                break;
        case OP_CREDENTIAL_GIVE:
                r = nsc_credential_give(c, uid, credential_fd, call->arg & 1 ? NULL : &res.waiting);
                fuzz_assert(fcntl(credential_fd, F_GETFD) >= 0,
                            "CREDENTIAL_GIVE closed the caller's memfd");
                break;
        case OP_CREDENTIAL_TAKE:
                r = nsc_credential_take(c, call->arg & 1 ? "files" : "vault",
                                        call->arg & 2 ? NSC_CREDENTIAL_WAIT : 0, &res.fd);
                if (r < 0)
                        break;
                fuzz_assert(r == 0 && res.fd >= 0 && res.fd != credential_fd &&
                                    res.fd != listen_fd && is_cloexec(res.fd),
                            "CREDENTIAL_TAKE handed over descriptor %d (%d)", res.fd, r);
                close(res.fd);
                break;
        case OP_CREDENTIAL_UNLOCK:
                r = nsc_credential_unlock(c, call->arg & 1 ? "files" : "vault", credential_fd,
                                          call->arg & 2 ? NULL : &res.waiting);
                fuzz_assert(fcntl(credential_fd, F_GETFD) >= 0,
                            "CREDENTIAL_UNLOCK closed the caller's memfd");
                break;
        case OP_METRICS: {
                size_t size = call->arg % 3 == 0   ? offsetof(struct nsc_metrics, lookup_timeouts)
                              : call->arg % 3 == 1 ? sizeof res.metrics.m
                                                   : sizeof res.metrics.m + 16;

                r = call->arg % 3 == 0 ? nsc_metrics(c, &res.metrics.m)
                                       : nsc_metrics_sized(c, &res.metrics.m, size);
                if (r < 0)
                        break;
                check_metrics(&res.metrics.m, &c->rx.metrics, size);
                fuzz_assert(untouched(res.metrics.bytes + size, sizeof res.metrics - size),
                            "METRICS wrote past the %zu bytes it was given", size);
                break;
        }
        case OP_SHARES:
                r = nsc_shares(c, &res.shares.v, &res.shares.n);
                if (r >= 0)
                        check_shares(res.shares.v, res.shares.n, c);
                break;
        case OP_VOLUME_START:
        case OP_VOLUME_STOP: {
                bool start = op == OP_VOLUME_START;
                const struct nsd_rep_volume_ctl *rep = &c->rx.volume_ctl;
                struct nsc_volume_ctl *v = &res.volume_ctl;
                char longest[NSD_SHARE_NAME_MAX];
                __typeof__(nsc_volume_start) *f = start ? nsc_volume_start : nsc_volume_stop;

                memset(longest, 'v', sizeof longest - 1);
                longest[sizeof longest - 1] = 0;
                r = f(c, uid, call->arg & 2 ? longest : "data", call->arg & 1 ? NULL : v);
                if (r < 0)
                        break;
                fuzz_assert(rep->hdr.type == (start ? NSD_REP_VOLUME_START : NSD_REP_VOLUME_STOP),
                            "%s succeeded on a reply of type %#x", op_name[op],
                            (unsigned) rep->hdr.type);
                if (call->arg & 1)
                        break;
                fuzz_assert(v->state == rep->state && v->loop == rep->loop &&
                                    v->changed == rep->changed && v->changed <= 1,
                            "%s: result state %u loop %u changed %u, the reply's %u %u %u",
                            op_name[op], v->state, v->loop, v->changed, rep->state, rep->loop,
                            rep->changed);
                break;
        }
        default:
                r = nsc_hide(c, uid, "/home/fuzz/mnt", call->arg & NSC_HIDE_UNHIDE);
                break;
        }
        fuzz_assert(r >= 0 || untouched(&res, sizeof res), "%s wrote its result on failure",
                    op_name[op]);
        return r;
}

/* Raw mode: nsd_msg_check() on one datagram of exactly the input's size. */
static void check_raw(const uint8_t *data, size_t size, int is_request) {
        _cleanup_free_ uint8_t *buf = malloc(size ? size : 1);
        const struct nsd_msg_header *h = (const struct nsd_msg_header *) buf;
        const char *why = "unset";
        int r;

        fuzz_assert(buf, "out of memory");
        memcpy(buf, data, size);
        r = nsd_msg_check(buf, size, is_request, &why);
        fuzz_assert((r == 0) == (why == NULL), "r=%d why=%s", r, why ? why : "(null)");
        fuzz_assert(r == 0 || r == -EMSGSIZE || r == -EBADMSG || r == -EPROTONOSUPPORT ||
                            r == -EOPNOTSUPP,
                    "r=%d", r);
        if (r < 0)
                return;
        size_t want = is_request ? nsd_request_size(h->type) : nsd_reply_size(h->type);
        fuzz_assert(size <= NSD_MSG_SIZE_MAX && h->magic == NSD_PROTO_MAGIC &&
                            h->version_major == NSD_PROTO_MAJOR && h->length == size && want > 0 &&
                            (h->type == NSD_REP_SHOW_DATA && !is_request ? size >= want
                                                                         : size == want) &&
                            (!is_request || h->error == 0),
                    "accepted a datagram of %zu bytes, type %u", size, (unsigned) h->type);
        /* a datagram the receiver saw truncated is refused whatever its header says */
        fuzz_assert(nsd_msg_check(buf, NSD_MSG_SIZE_MAX + 1, is_request, &why) == -EMSGSIZE,
                    "oversized datagram accepted");
}

/* The requests the client sent since the last look, on both connections. */
static unsigned drain_both(int srv) {
        unsigned n = srv >= 0 ? drain_requests(srv) : 0;
        int fd;

        second_wait_idle();
        pthread_mutex_lock(&second.lock);
        fd = second.fd;
        pthread_mutex_unlock(&second.lock);
        return n + (fd >= 0 ? drain_requests(fd) : 0);
}

static bool seq_advanced_by(uint32_t before, uint32_t now, unsigned lo, unsigned hi) {
        for (unsigned k = lo; k <= hi; k++)
                if (now == nth_seq(before, k))
                        return true;
        return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct fuzz_input in = { .data = data, .size = size };
        struct call calls[CALLS_MAX];
        unsigned ncalls;
        struct stream stream = {};
        uint32_t seq_start;
        bool closed, arm_second = false;
        nsc_conn *c = NULL;
        int srv, fd2, before, r;
        uint8_t head = fuzz_u8(&in);

        if (head & HEAD_RAW) {
                check_raw(data + 1, size ? size - 1 : 0, head & HEAD_RAW_REQUEST);
                return 0;
        }

        before = lowest_free_fd();
        ncalls = 1 + (head & HEAD_CALLS_MASK);
        closed = head & HEAD_CLOSED;
        seq_start = head & HEAD_SEQ_WRAP ? UINT32_MAX - 1 : 0;
        for (unsigned i = 0; i < ncalls; i++) {
                calls[i].op = fuzz_u8(&in);
                calls[i].arg = fuzz_u8(&in);
                /* only JOIN_SESSION's fallback connects again: wake the second nsd only
                 * then (two thread switches per input otherwise, half the harness's time) */
                if (!(calls[i].op & OP_BAD) && (calls[i].op & OP_MASK) % _OP_MAX == OP_JOIN_SESSION)
                        arm_second = true;
        }

        /* the default timeout is only a safety net: the fake nsd's shutdown ends every wait */
        if (head & HEAD_CONNECT_TIMEOUT)
                r = nsc_connect_timeout(sock_path, 5 * 1000 * 1000, &c);
        else
                r = nsc_connect(head & HEAD_VIA_ENV ? NULL : sock_path, &c);
        fuzz_assert(r == 0, "nsc_connect: %s", strerror(-r));
        srv = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        fuzz_assert(srv >= 0, "accept: %m");
        if (trace)
                fprintf(stderr, "fuzz-nsclient: client fd %d, fake nsd fd %d\n", c->fd, srv);
        fuzz_assert(nsc_set_timeout(c, 5 * 1000 * 1000) == 0, "nsc_set_timeout");
        c->seq = seq_start;
        /* room for long streams (root only; elsewhere the queue just ends sooner) */
        (void) setsockopt(srv, SOL_SOCKET, SO_SNDBUFFORCE, &(int) { 8 << 20 }, sizeof(int));

        for (unsigned k = 0; k < DATAGRAMS_MAX && fuzz_left(&in) > 0; k++)
                if (!queue_datagram(srv, &in, calls, ncalls, seq_start, &stream))
                        break;
        if (closed) {
                close(srv);
                srv = -1;
        } else
                fuzz_assert(shutdown(srv, SHUT_WR) == 0, "shutdown: %m");
        if (arm_second)
                second_arm();

        for (unsigned i = 0; i < ncalls; i++) {
                int was_broken = c->broken;
                uint32_t seq_before = c->seq;
                bool bad = calls[i].op & OP_BAD;
                unsigned op = (calls[i].op & OP_MASK) % _OP_MAX;
                const char *msg;

                r = do_call(c, &calls[i]);
                if (trace)
                        fprintf(stderr, "fuzz-nsclient: call %u op %u%s: %d (%s)%s%s\n", i, op,
                                bad ? " (bad arguments)" : "", r, r < 0 ? strerror(-r) : "ok",
                                nsc_last_error_message(c) ? ": " : "",
                                nsc_last_error_message(c) ? nsc_last_error_message(c) : "");
                fuzz_assert(r <= (op == OP_JOIN_SESSION && !bad ? 1 : 0) && r >= -4095,
                            "call %u (op %u) returned %d", i, op, r);
                /* a wait that ran out breaks the connection; an ETIMEDOUT that nsd sent
                 * (an error reply) does not */
                fuzz_assert(!(r == -ETIMEDOUT && c->broken == -ETIMEDOUT),
                            "call %u (op %u) waited for nsd", i, op);
                fuzz_assert(r < 0 || !c->broken, "call %u succeeded on a broken connection", i);
                fuzz_assert(c->seq == seq_before || c->seq != 0,
                            "sequence number 0 used for a request");
                unsigned sent = drain_both(srv);
                if (bad) {
                        fuzz_assert(r == -EINVAL || r == -ENAMETOOLONG,
                                    "call %u with bad arguments gave %d", i, r);
                        fuzz_assert(sent == 0 && c->seq == seq_before && c->broken == was_broken,
                                    "call %u with bad arguments touched the connection", i);
                } else if (was_broken) {
                        fuzz_assert(r == -ENOTCONN, "call %u on a broken connection gave %d", i, r);
                        fuzz_assert(sent == 0 && c->seq == seq_before,
                                    "call %u on a broken connection sent %u requests, seq %u after "
                                    "%u",
                                    i, sent, c->seq, seq_before);
                } else {
                        /* JOIN_SESSION's fallback adds JOIN and SESSION_OPEN */
                        unsigned most = op == OP_JOIN_SESSION ? 3 : 1;

                        fuzz_assert(seq_advanced_by(seq_before, c->seq, 1, most),
                                    "call %u: seq %u after %u", i, c->seq, seq_before);
                        fuzz_assert(sent <= most && (srv < 0 || sent >= 1),
                                    "call %u sent %u requests", i, sent);
                }
                msg = nsc_last_error_message(c);
                fuzz_assert(!msg || strnlen(msg, NSD_ERROR_MESSAGE_MAX) < NSD_ERROR_MESSAGE_MAX,
                            "error message not terminated");
        }
        fuzz_assert(nsc_last_error_message(NULL) == NULL, "error message of no connection");

        nsc_disconnect(c);
        nsc_disconnect(NULL);
        if (srv >= 0)
                close(srv);
        fd2 = second_disarm(arm_second);
        if (fd2 >= 0) {
                (void) drain_requests(fd2);
                close(fd2);
        }
        fuzz_assert(lowest_free_fd() == before, "a descriptor leaked (lowest free %d, was %d)",
                    lowest_free_fd(), before);
        return 0;
}
