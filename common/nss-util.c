/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nss-util.c: see nss-util.h. */
#include "nss-util.h"

#include <errno.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* The first buffer size: what libc suggests, else 4 KiB. */
static size_t first_size(int sc) {
        long n = sysconf(sc);
        return n > 0 && n < (long) NSS_BUFFER_MAX ? (size_t) n : 4096;
}

/* One kind of lookup: `call` fills the struct (of struct_size bytes) at the start of a block,
 * with the strings in the rest of it; sc names libc's suggested buffer size. */
struct lookup_kind {
        int (*call)(const void *key, void *result, char *buf, size_t size, void **res);
        size_t struct_size;
        int sc;
};

static int lookup(const struct lookup_kind *kind, const void *key, void **ret) {
        size_t head = (kind->struct_size + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);

        if (!key || !ret)
                return -EINVAL;
        for (size_t size = first_size(kind->sc);; size *= 2) {
                void *res = NULL, *block;
                int r;

                if (size > NSS_BUFFER_MAX)
                        return -E2BIG;
                block = malloc(head + size);
                if (!block)
                        return -ENOMEM;
                /* getpw*_r/getgr*_r return the error; some NSS shims (nss_wrapper) return -1
                 * with errno set instead. EINTR is worth a retry. */
                do {
                        errno = 0;
                        r = kind->call(key, block, (char *) block + head, size, &res);
                        if (r < 0)
                                r = errno > 0 ? errno : EIO;
                } while (r == EINTR);
                if (r == ERANGE) {
                        free(block);
                        continue;
                }
                if (r != 0 || !res) {
                        free(block);
                        /* "not found" comes as 0 with no result, or as one of these */
                        if (r == 0 || r == ENOENT || r == ESRCH || r == EBADF || r == EPERM)
                                return -ENOENT;
                        return -r;
                }
                *ret = block;
                return 0;
        }
}

static int call_getpwnam(const void *key, void *result, char *buf, size_t size, void **res) {
        return getpwnam_r(key, result, buf, size, (struct passwd **) res);
}
static int call_getpwuid(const void *key, void *result, char *buf, size_t size, void **res) {
        return getpwuid_r(*(const uid_t *) key, result, buf, size, (struct passwd **) res);
}
static int call_getgrnam(const void *key, void *result, char *buf, size_t size, void **res) {
        return getgrnam_r(key, result, buf, size, (struct group **) res);
}
static int call_getgrgid(const void *key, void *result, char *buf, size_t size, void **res) {
        return getgrgid_r(*(const gid_t *) key, result, buf, size, (struct group **) res);
}

static const struct lookup_kind user_by_name = { call_getpwnam, sizeof(struct passwd),
                                                 _SC_GETPW_R_SIZE_MAX };
static const struct lookup_kind user_by_uid = { call_getpwuid, sizeof(struct passwd),
                                                _SC_GETPW_R_SIZE_MAX };
static const struct lookup_kind group_by_name = { call_getgrnam, sizeof(struct group),
                                                  _SC_GETGR_R_SIZE_MAX };
static const struct lookup_kind group_by_gid = { call_getgrgid, sizeof(struct group),
                                                 _SC_GETGR_R_SIZE_MAX };

int nss_user_by_name(const char *name, struct passwd **ret) {
        return lookup(&user_by_name, name, (void **) ret);
}

int nss_user_by_uid(uid_t uid, struct passwd **ret) {
        return lookup(&user_by_uid, &uid, (void **) ret);
}

int nss_group_by_name(const char *name, struct group **ret) {
        return lookup(&group_by_name, name, (void **) ret);
}

int nss_group_by_gid(gid_t gid, struct group **ret) {
        return lookup(&group_by_gid, &gid, (void **) ret);
}

int nss_user_groups(const char *user, gid_t gid, gid_t **ret, size_t *ret_n) {
        int n = 64;

        if (!user || !ret || !ret_n)
                return -EINVAL;
        for (;;) {
                gid_t *groups = calloc((size_t) n, sizeof(gid_t));
                int got = n;

                if (!groups)
                        return -ENOMEM;
                if (getgrouplist(user, gid, groups, &got) >= 0) {
                        *ret = groups;
                        *ret_n = (size_t) got;
                        return 0;
                }
                free(groups);
                /* -1 with got set to the number needed; guard against a libc that does not */
                if (got <= n) {
                        if ((size_t) n * 2 * sizeof(gid_t) > NSS_BUFFER_MAX)
                                return -E2BIG;
                        n *= 2;
                } else if ((size_t) got * sizeof(gid_t) > NSS_BUFFER_MAX)
                        return -E2BIG;
                else
                        n = got;
        }
}
