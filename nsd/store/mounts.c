/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mounts.c: which mounts of a user's namespace the user made, see mounts.h. */
#include "store/mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libmount.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/helper.h"
#include "io-util.h"
#include "libmount-cleanup.h"

/* mountinfo text into a libmount table */
static int table_parse(const char *text, struct libmnt_table **ret) {
        struct libmnt_table *tb;
        FILE *f;
        int r;

        tb = mnt_new_table();
        if (!tb)
                return -ENOMEM;
        f = fmemopen((void *) text, strlen(text), "r");
        if (!f) {
                r = -errno;
                mnt_unref_table(tb);
                return r;
        }
        r = mnt_table_parse_stream(tb, f, "mountinfo");
        fclose(f);
        if (r < 0) {
                mnt_unref_table(tb);
                return r;
        }
        *ret = tb;
        return 0;
}

/* Received by propagation: a slave of a peer group ("master:N"). */
static bool fs_is_received(struct libmnt_fs *fs) {
        const char *o = mnt_fs_get_optional_fields(fs);

        for (const char *p = o; p && (p = strstr(p, "master:")); p++)
                if (p == o || p[-1] == ' ')
                        return true;
        return false;
}

static uint64_t fnv1a(uint64_t h, const char *s) {
        for (; s && *s; s++) {
                h ^= (unsigned char) *s;
                h *= 0x100000001b3ULL;
        }
        h ^= 0xff; /* field separator */
        h *= 0x100000001b3ULL;
        return h;
}

static uint64_t fs_fingerprint(struct libmnt_fs *fs) {
        char num[64];
        dev_t dev = mnt_fs_get_devno(fs);
        uint64_t h = 0xcbf29ce484222325ULL;

        snprintf(num, sizeof num, "%d %u:%u", mnt_fs_get_id(fs), major(dev), minor(dev));
        h = fnv1a(h, num);
        h = fnv1a(h, mnt_fs_get_root(fs));
        h = fnv1a(h, mnt_fs_get_target(fs));
        h = fnv1a(h, mnt_fs_get_fstype(fs));
        h = fnv1a(h, mnt_fs_get_source(fs));
        return h;
}

static gint cmp_u64(gconstpointer a, gconstpointer b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

/* fn(fs, userdata) for each mount of mountinfo, in order (all: every one; else those not
 * received from a peer group). 0, or -errno when the text does not parse. */
static int foreach_fs(const char *mountinfo, bool all, void (*fn)(struct libmnt_fs *fs, void *u),
                      void *userdata) {
        _cleanup_mnt_table_ struct libmnt_table *tb = NULL;
        _cleanup_mnt_iter_ struct libmnt_iter *it = NULL;
        struct libmnt_fs *fs;
        int r;

        r = table_parse(mountinfo, &tb);
        if (r < 0)
                return r;
        it = mnt_new_iter(MNT_ITER_FORWARD);
        if (!it)
                return -ENOMEM;
        while (mnt_table_next_fs(tb, it, &fs) == 0)
                if (all || !fs_is_received(fs))
                        fn(fs, userdata);
        return 0;
}

static int foreach_not_received(const char *mountinfo, void (*fn)(struct libmnt_fs *fs, void *u),
                                void *userdata) {
        return foreach_fs(mountinfo, false, fn, userdata);
}

static void add_fingerprint(struct libmnt_fs *fs, void *userdata) {
        uint64_t h = fs_fingerprint(fs);

        g_array_append_val((GArray *) userdata, h);
}

int mounts_baseline(const char *mountinfo, GArray **ret) {
        GArray *a = g_array_new(FALSE, FALSE, sizeof(uint64_t));
        int r;

        r = foreach_not_received(mountinfo, add_fingerprint, a);
        if (r < 0) {
                g_array_unref(a);
                return r;
        }
        if (a->len > MOUNTS_BASELINE_MAX) {
                g_array_unref(a);
                return -E2BIG;
        }
        g_array_sort(a, cmp_u64);
        *ret = a;
        return 0;
}

char *mounts_baseline_to_string(const GArray *baseline) {
        GString *s = g_string_sized_new(baseline->len * 17);

        for (guint i = 0; i < baseline->len; i++)
                g_string_append_printf(s, "%s%016" PRIx64, i ? "," : "",
                                       g_array_index(baseline, uint64_t, i));
        return g_string_free(s, FALSE);
}

int mounts_baseline_from_string(const char *s, GArray **ret) {
        g_auto(GStrv) parts = NULL;
        GArray *a;

        if (!s)
                return -EINVAL;
        a = g_array_new(FALSE, FALSE, sizeof(uint64_t));
        parts = g_strsplit(s, ",", -1);
        for (char **p = parts; *s && *p; p++) {
                char *end;
                uint64_t v;

                if (strlen(*p) != 16 || !g_ascii_isxdigit((*p)[0])) {
                        g_array_unref(a);
                        return -EINVAL;
                }
                v = g_ascii_strtoull(*p, &end, 16);
                if (*end) {
                        g_array_unref(a);
                        return -EINVAL;
                }
                g_array_append_val(a, v);
        }
        if (a->len > MOUNTS_BASELINE_MAX) {
                g_array_unref(a);
                return -EINVAL;
        }
        g_array_sort(a, cmp_u64);
        *ret = a;
        return 0;
}

static bool baseline_has(const GArray *b, uint64_t h) {
        guint lo = 0, hi = b->len;

        while (lo < hi) {
                guint mid = lo + (hi - lo) / 2;
                uint64_t v = g_array_index(b, uint64_t, mid);
                if (v == h)
                        return true;
                if (v < h)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return false;
}

static char *fs_describe(struct libmnt_fs *fs) {
        const char *type = mnt_fs_get_fstype(fs);
        char *value = NULL, owner[32] = "";
        size_t size = 0;

        if (type && (strcmp(type, "fuse") == 0 || strncmp(type, "fuse.", 5) == 0) &&
            mnt_fs_get_option(fs, "user_id", &value, &size) == 0 && value && size > 0 && size < 16)
                snprintf(owner, sizeof owner, " (FUSE of uid %.*s)", (int) size, value);
        return g_strdup_printf("%s on %s%s", type ? type : "?", mnt_fs_get_target(fs) ?: "?",
                               owner);
}

typedef struct UserMade {
        const GArray *baseline;
        int n;
        char **ret_first;
} UserMade;

static void count_user_made(struct libmnt_fs *fs, void *userdata) {
        UserMade *m = userdata;

        if (baseline_has(m->baseline, fs_fingerprint(fs)))
                return;
        if (m->n++ == 0 && m->ret_first)
                *m->ret_first = fs_describe(fs);
}

int mounts_user_made(const char *mountinfo, const GArray *baseline, char **ret_first) {
        UserMade m = { .baseline = baseline, .ret_first = ret_first };
        int r = foreach_not_received(mountinfo, count_user_made, &m);

        return r < 0 ? r : m.n;
}

struct under {
        const char *path;
        size_t n;
        int count; /* -1 until the mount on path is seen */
        unsigned group;
};

static void count_under(struct libmnt_fs *fs, void *userdata) {
        struct under *u = userdata;
        const char *t = mnt_fs_get_target(fs), *o = mnt_fs_get_optional_fields(fs), *p;

        if (!t)
                return;
        if (strcmp(t, u->path) == 0) { /* the last one on path: the one seen there */
                u->count = 0;
                u->group = 0;
                for (p = o; p && (p = strstr(p, "shared:")); p++)
                        if (p == o || p[-1] == ' ') {
                                u->group = (unsigned) strtoul(p + 7, NULL, 10);
                                break;
                        }
        } else if (u->count >= 0 && strncmp(t, u->path, u->n) == 0 && t[u->n] == '/')
                u->count++;
}

int mounts_under(const char *mountinfo, const char *path, int *ret_count,
                 unsigned *ret_peer_group) {
        struct under u = { .path = path, .n = strlen(path), .count = -1 };
        int r = foreach_fs(mountinfo, true, count_under, &u);

        if (r < 0)
                return r;
        *ret_count = u.count;
        *ret_peer_group = u.group;
        return u.count >= 0 ? 0 : -ENOENT;
}

struct on_path {
        const char *path;
        bool found;
        MountOn on;
};

static void top_on(struct libmnt_fs *fs, void *userdata) {
        struct on_path *o = userdata;
        const char *t = mnt_fs_get_target(fs), *type = mnt_fs_get_fstype(fs);

        if (t && strcmp(t, o->path) == 0) { /* the last one there: the one on top */
                o->found = true;
                o->on.fingerprint = fs_fingerprint(fs);
                o->on.dev = mnt_fs_get_devno(fs);
                /* a type longer than the buffer cannot be a volume's Type=: left empty */
                if (!type ||
                    g_strlcpy(o->on.fstype, type, sizeof o->on.fstype) >= sizeof o->on.fstype)
                        o->on.fstype[0] = '\0';
        }
}

int mounts_on(const char *mountinfo, const char *path, MountOn *ret) {
        struct on_path o = { .path = path };
        int r = foreach_fs(mountinfo, true, top_on, &o);

        if (r < 0)
                return r;
        if (!o.found)
                return -ENOENT;
        *ret = o.on;
        return 0;
}

int mounts_fingerprint_on(const char *mountinfo, const char *path, uint64_t *ret) {
        MountOn on;
        int r = mounts_on(mountinfo, path, &on);

        if (r < 0)
                return r;
        *ret = on.fingerprint;
        return 0;
}

/* "/sys/dev/block/MAJOR:MINOR" followed by TAIL ("" or "/loop/backing_file"), in PATH of
 * SYS_DEV_PATH_MAX bytes. Async-signal-safe (no stdio, no allocation): the setup child calls
 * mounts_loop_index(). */
#define SYS_DEV_PATH_MAX 64
static const char *sys_dev_block_path(char path[static SYS_DEV_PATH_MAX], dev_t dev,
                                      const char *tail) {
        char maj[24], min[24];
        const char *parts[] = { "/sys/dev/block/", helper_fmt_uint(maj, major(dev), 10), ":",
                                helper_fmt_uint(min, minor(dev), 10), tail };
        size_t len = 0;

        path[0] = '\0';
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
                const char *p = parts[i];
                size_t n = strlen(p);

                if (len + n >= SYS_DEV_PATH_MAX) /* cannot happen: 15 + 10 + 1 + 10 + 18 bytes */
                        break;
                memcpy(path + len, p, n + 1);
                len += n;
        }
        return path;
}

int mounts_loop_backs(dev_t dev, const char *source) {
        char path[SYS_DEV_PATH_MAX], backing[PATH_MAX + 16];
        ssize_t n;
        int fd;

        if (major(dev) != MOUNTS_LOOP_MAJOR || !source || source[0] != '/')
                return 0;
        fd = open(sys_dev_block_path(path, dev, "/loop/backing_file"), O_RDONLY | O_CLOEXEC);
        if (fd < 0) /* ENOENT: no such device, or cleared meanwhile */
                return errno == ENOENT ? 0 : -errno;
        n = read_full(fd, backing, sizeof backing - 1);
        close(fd);
        if (n < 0)
                return (int) n;
        backing[n] = '\0';
        if (n > 0 && backing[n - 1] == '\n')
                backing[--n] = '\0';
        return strcmp(backing, source) == 0;
}

int mounts_device_is(dev_t dev, const char *source) {
        struct stat st;
        int r;

        if (!source || source[0] != '/')
                return 0;
        /* the loop device's backing file, as the kernel names it from this process's root:
         * compared as a string, so that nsd never walks the image's path (a directory on the
         * way could be anyone's mount) */
        r = mounts_loop_backs(dev, source);
        if (r != 0)
                return r;
        /* a block device Source=: its number, under /dev only */
        if (strncmp(source, "/dev/", 5) != 0)
                return 0;
        if (stat(source, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        return S_ISBLK(st.st_mode) && st.st_rdev == dev;
}

int mounts_loop_index(dev_t dev) {
        char path[SYS_DEV_PATH_MAX], link[PATH_MAX];
        const char *name;
        ssize_t n;
        long idx = 0;

        if (major(dev) != MOUNTS_LOOP_MAJOR)
                return -ENODEV;
        n = readlink(sys_dev_block_path(path, dev, ""), link, sizeof link - 1);
        if (n < 0)
                return errno == ENOENT ? -ENODEV : -errno;
        link[n] = '\0';
        /* ../../devices/virtual/block/loop3 (a partition: .../loop3/loop3p1) */
        name = strrchr(link, '/');
        name = name ? name + 1 : link;
        if (strncmp(name, "loop", 4) != 0 || !name[4])
                return -ENODEV;
        for (const char *c = name + 4; *c; c++) {
                if (*c < '0' || *c > '9' || idx > INT_MAX / 10)
                        return -ENODEV;
                idx = idx * 10 + (*c - '0');
        }
        return (int) idx;
}

/* ---- FUSE mounts and their owners ---------------------------------------------------------- */

bool mounts_fstype_is_fuse(const char *t) {
        return t &&
               (strcmp(t, "fuse") == 0 || strcmp(t, "fuseblk") == 0 || strncmp(t, "fuse.", 5) == 0);
}

bool mounts_fuse_owner(struct libmnt_fs *fs, uid_t *ret) {
        char *value = NULL, buf[16], *end;
        size_t size = 0;
        unsigned long v;

        if (!mounts_fstype_is_fuse(mnt_fs_get_fstype(fs)))
                return false;
        /* the super options only: a mount option cannot say user_id= */
        if (mnt_optstr_get_option(mnt_fs_get_fs_options(fs), "user_id", &value, &size) != 0 ||
            !value || size == 0 || size >= sizeof buf)
                return false;
        memcpy(buf, value, size);
        buf[size] = '\0';
        if (!g_ascii_isdigit(buf[0]))
                return false;
        errno = 0;
        v = strtoul(buf, &end, 10);
        if (errno != 0 || *end != '\0' || v >= (uid_t) -1)
                return false;
        *ret = (uid_t) v;
        return true;
}

/* ---- FUSE mounts per uid under a share's anchor ------------------------------------------ */

/* A FUSE mount under the anchor. */
typedef struct UseMount {
        uint64_t id, parent;
        size_t order; /* its place in mountinfo: the order mounts were made (mount ids are
                       * reused, the smallest free first, so they are no age) */
        uid_t uid;    /* 0: root's (counted nowhere, but a FUSE mount on the way) */
        char *target;
        dev_t dev;
} UseMount;

static void use_mount_free(gpointer p) {
        UseMount *m = p;

        g_free(m->target);
        g_free(m);
}

typedef struct Use {
        const char *anchor;
        size_t n;
        bool anchor_seen;
        GHashTable *fuse; /* id -> UseMount*: the FUSE mounts under the anchor */
        size_t seen;      /* mounts read so far */
} Use;

static void use_collect(struct libmnt_fs *fs, void *userdata) {
        Use *u = userdata;
        const char *t = mnt_fs_get_target(fs);
        UseMount *m;
        uid_t uid;

        u->seen++;
        if (!t || strncmp(t, u->anchor, u->n) != 0 || (t[u->n] != '\0' && t[u->n] != '/'))
                return;
        if (t[u->n] == '\0' && !u->anchor_seen) { /* the anchor itself */
                u->anchor_seen = true;
                return;
        }
        if (!mounts_fstype_is_fuse(mnt_fs_get_fstype(fs)))
                return;
        if (!mounts_fuse_owner(fs, &uid))
                uid = 0;
        m = g_new0(UseMount, 1);
        m->id = (uint64_t) mnt_fs_get_id(fs);
        m->order = u->seen;
        m->parent = (uint64_t) mnt_fs_get_parent_id(fs);
        m->uid = uid;
        m->target = g_strdup(t);
        m->dev = mnt_fs_get_devno(fs);
        g_hash_table_replace(u->fuse, &m->id, m);
}

static gint cmp_use_newest(gconstpointer a, gconstpointer b) {
        const UseMount *x = *(UseMount *const *) a, *y = *(UseMount *const *) b;

        if (x->uid != y->uid)
                return x->uid < y->uid ? -1 : 1;
        return x->order > y->order ? -1 : x->order < y->order;
}

void mounts_excess_free(MountsExcess *e) {
        if (!e)
                return;
        g_free(e->target);
        g_free(e->detach_target);
        g_free(e);
}

/* What to detach for m: the outermost FUSE mount of m's uid in the chain of FUSE mounts
 * around it (bounded: a chain cannot be longer than the mounts there are). */
static const UseMount *use_detach_of(GHashTable *fuse, const UseMount *m) {
        const UseMount *d = m, *p = m;

        for (guint i = 0; i < g_hash_table_size(fuse); i++) {
                p = g_hash_table_lookup(fuse, &p->parent);
                if (!p)
                        break;
                if (p->uid == m->uid)
                        d = p;
        }
        return d;
}

int mounts_share_use(const char *mountinfo, const char *anchor, unsigned limit, GArray **ret_counts,
                     GPtrArray **ret_excess) {
        Use u = { .anchor = anchor, .n = anchor ? strlen(anchor) : 0 };
        g_autoptr(GPtrArray) sorted = NULL;
        g_autoptr(GArray) counts = NULL;
        g_autoptr(GPtrArray) excess = NULL;
        GHashTableIter it;
        gpointer v;
        int r;

        if (!mountinfo || !anchor || anchor[0] != '/' || (u.n > 1 && anchor[u.n - 1] == '/'))
                return -EINVAL;
        u.fuse = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, use_mount_free);
        r = foreach_fs(mountinfo, true, use_collect, &u);
        if (r < 0 || !u.anchor_seen) {
                g_hash_table_destroy(u.fuse);
                return r < 0 ? r : -ENOENT;
        }

        sorted = g_ptr_array_new();
        g_hash_table_iter_init(&it, u.fuse);
        while (g_hash_table_iter_next(&it, NULL, &v))
                if (((UseMount *) v)->uid != 0)
                        g_ptr_array_add(sorted, v);
        g_ptr_array_sort(sorted, cmp_use_newest);

        counts = g_array_new(FALSE, FALSE, sizeof(MountsUidCount));
        excess = g_ptr_array_new_with_free_func((GDestroyNotify) mounts_excess_free);
        for (guint i = 0, j; i < sorted->len; i = j) {
                const UseMount *first = sorted->pdata[i];
                MountsUidCount c = { .uid = first->uid };

                for (j = i; j < sorted->len && ((UseMount *) sorted->pdata[j])->uid == c.uid; j++)
                        c.count++;
                g_array_append_val(counts, c);
                for (guint k = 0; c.count > limit && k < c.count - limit; k++) {
                        const UseMount *m = sorted->pdata[i + k], *d = use_detach_of(u.fuse, m);
                        MountsExcess *e = g_new0(MountsExcess, 1);

                        e->uid = m->uid;
                        e->mnt_id = m->id;
                        e->target = g_strdup(m->target);
                        e->detach_id = d->id;
                        e->detach_target = g_strdup(d->target);
                        e->detach_major = major(d->dev);
                        e->detach_minor = minor(d->dev);
                        g_ptr_array_add(excess, e);
                }
        }
        g_hash_table_destroy(u.fuse);
        if (ret_counts)
                *ret_counts = g_steal_pointer(&counts);
        if (ret_excess)
                *ret_excess = g_steal_pointer(&excess);
        return 0;
}
