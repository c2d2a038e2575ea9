/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conf-files.c: reading nsd.conf and its drop-ins, see conf-files.h. Each file is opened
 * once and checked through its descriptor (owner, mode, type, size), then read from that
 * same descriptor: nothing is looked up by name twice.
 */
#include "policy/conf-files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/errno-util.h"
#include "cleanup.h"
#include "io-util.h"
#include "nsd-protocol.h"

char *config_dropin_dir(const char *path) {
        return g_strconcat(path, ".d", NULL);
}

/* Why st is not a trusted file (or directory), or NULL. */
static char *untrusted_why(const struct stat *st, bool directory) {
        uid_t self = geteuid();

        if (directory ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
                return g_strdup(directory ? "not a directory" : "not a regular file");
        if (st->st_uid != 0 && st->st_uid != self)
                return self == 0 ? g_strdup_printf("owned by uid %u, not by root",
                                                   (unsigned) st->st_uid)
                                 : g_strdup_printf("owned by uid %u, neither by root nor by "
                                                   "uid %u that nsd runs as",
                                                   (unsigned) st->st_uid, (unsigned) self);
        if (st->st_mode & (S_IWGRP | S_IWOTH))
                return g_strdup_printf("writable by %s (mode %04o): only its owner may write "
                                       "nsd's configuration; chmod go-w it",
                                       (st->st_mode & S_IWOTH) ? "everyone" : "its group",
                                       (unsigned) (st->st_mode & 07777));
        return NULL;
}

/* fd's stat, once it is a trusted file (or directory): -errno or -EPERM with *ret_error
 * naming it. */
static int stat_trusted(int fd, const char *name, bool directory, struct stat *ret_st,
                        char **ret_error) {
        g_autofree char *why = NULL;

        if (fstat(fd, ret_st) < 0) {
                int e = errno;
                *ret_error = g_strdup_printf("%s: cannot stat: %s", name, g_strerror(e));
                return -e;
        }
        why = untrusted_why(ret_st, directory);
        if (why) {
                *ret_error = g_strdup_printf("%s: refused: %s", name, why);
                return -EPERM;
        }
        return 0;
}

/* ---- KeyFile= --------------------------------------------------------------------------- */

/* The directory of path (absolute), each component opened beneath the last without following
 * a symbolic link and trusted as nsd's configuration is: its descriptor (O_PATH), with *ret_base
 * pointing at the last component of path. -errno with *ret_why. */
static int key_file_dir(const char *path, const char **ret_base, char **ret_why) {
        g_autofree char *copy = g_strdup(path);
        _cleanup_close_ int dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        char *c = copy + 1, *slash;
        struct stat st;
        int r;

        if (path[0] != '/' || !*c || path[strlen(path) - 1] == '/' || strstr(path, "//") ||
            strstr(path, "/./") || strstr(path, "/../") || g_str_has_suffix(path, "/.") ||
            g_str_has_suffix(path, "/.."))
                return why_set(ret_why, EINVAL,
                               "KeyFile %s: not an absolute path of a file (no empty, '.' or "
                               "'..' component)",
                               path);
        if (dfd < 0)
                return why_set(ret_why, errno, "KeyFile %s: cannot open '/': %s", path,
                               g_strerror(errno));
        while ((slash = strchr(c, '/'))) {
                _cleanup_close_ int next = -1;
                g_autofree char *why = NULL;

                *slash = '\0';
                next = openat(dfd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0) {
                        int e = errno;

                        return why_set(ret_why, e, "KeyFile %s: '%s': %s", path, copy,
                                       e == ELOOP || e == ENOTDIR
                                               ? "not a directory (a symbolic link is not "
                                                 "followed)"
                                               : g_strerror(e));
                }
                r = stat_trusted(next, copy, true, &st, &why);
                if (r < 0)
                        return why_set(ret_why, r, "KeyFile %s: %s", path, why);
                CLOSE_FD(dfd);
                dfd = TAKE_FD(next);
                *slash = '/';
                c = slash + 1;
        }
        *ret_base = path + (c - copy);
        return TAKE_FD(dfd);
}

int config_key_file_memfd(const char *path, size_t max, char **ret_why) {
        const int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;
        _cleanup_close_ int dfd = -1, fd = -1, mfd = -1;
        g_autofree char *why = NULL;
        const char *base = NULL;
        struct stat st;
        off_t off = 0;
        int r;

        dfd = key_file_dir(path, &base, ret_why);
        if (dfd < 0)
                return dfd;
        /* O_NONBLOCK: a FIFO put there must not stall nsd (it is refused below) */
        fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
                int e = errno;

                return why_set(ret_why, e, "KeyFile %s: cannot open: %s", path,
                               e == ELOOP ? "a symbolic link, which nsd does not follow"
                                          : g_strerror(e));
        }
        r = stat_trusted(fd, path, false, &st, &why);
        if (r < 0)
                return why_set(ret_why, r, "KeyFile %s", why);
        if (st.st_mode & 077)
                return why_set(ret_why, EPERM,
                               "KeyFile %s: refused: open to %s (mode %04o): a key is for its "
                               "owner alone; chmod 0600 it",
                               path, (st.st_mode & 007) ? "others" : "its group",
                               (unsigned) (st.st_mode & 07777));
        if (st.st_size < 1 || (uint64_t) st.st_size > max)
                return why_set(ret_why, EINVAL, "KeyFile %s: refused: %lld bytes (1 to %zu)", path,
                               (long long) st.st_size, max);
        mfd = memfd_create("nsd-key", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (mfd < 0)
                return why_set(ret_why, errno, "KeyFile %s: cannot make a memfd for it: %s", path,
                               g_strerror(errno));
        /* the kernel copies it: its bytes never pass through nsd's memory */
        while (off < st.st_size) {
                ssize_t n = sendfile(mfd, fd, &off, (size_t) (st.st_size - off));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return why_set(ret_why, n < 0 ? errno : EAGAIN,
                                       "KeyFile %s: cannot copy it: %s", path,
                                       n < 0 ? g_strerror(errno) : "it shrank while read");
        }
        if (fcntl(mfd, F_ADD_SEALS, seals) < 0)
                return why_set(ret_why, errno, "KeyFile %s: cannot seal its copy: %s", path,
                               g_strerror(errno));
        return TAKE_FD(mfd);
}

static int read_fd(int fd, const char *name, char **ret, size_t *ret_len, char **ret_error) {
        g_autofree char *buf = NULL;
        struct stat st;
        size_t len;
        ssize_t n;
        int r;

        r = stat_trusted(fd, name, false, &st, ret_error);
        if (r < 0)
                return r;
        if ((uint64_t) st.st_size > CONFIG_MAX_FILE_SIZE) {
                *ret_error = g_strdup_printf("%s: refused: larger than %u bytes", name,
                                             CONFIG_MAX_FILE_SIZE);
                return -EFBIG;
        }
        buf = g_malloc((size_t) st.st_size + 1);
        /* one byte more than its size: a file that grew meanwhile fills it */
        n = read_full(fd, buf, (size_t) st.st_size + 1);
        if (n < 0) {
                *ret_error = g_strdup_printf("%s: cannot read: %s", name, g_strerror((int) -n));
                return (int) n;
        }
        len = (size_t) n;
        if (len > (size_t) st.st_size) {
                *ret_error = g_strdup_printf("%s: changed while it was read", name);
                return -EAGAIN;
        }
        buf[len] = '\0';
        *ret = g_steal_pointer(&buf);
        *ret_len = len;
        return 0;
}

static void files_add(ConfigFiles *f, GArray *texts, char *name /* taken */, char *text /* taken */,
                      size_t len) {
        ConfigText t = { .text = text, .len = len, .filename = name };

        g_ptr_array_add(f->strings, name);
        g_ptr_array_add(f->strings, text);
        g_array_append_val(texts, t);
}

static int cmp_names(gconstpointer a, gconstpointer b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int read_dropins(const char *dir, ConfigFiles *f, GArray *texts, char **ret_error) {
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
        struct dirent *de;
        struct stat st;
        DIR *d;
        int r;

        if (dfd < 0) {
                int e = errno;
                if (e == ENOENT)
                        return 0;
                *ret_error = g_strdup_printf("%s: cannot open: %s", dir, g_strerror(e));
                return -e;
        }
        r = stat_trusted(dfd, dir, true, &st, ret_error);
        if (r < 0)
                return r;
        d = fdopendir(fcntl(dfd, F_DUPFD_CLOEXEC, 0)); /* fdopendir(-1): EBADF */
        if (!d) {
                int e = errno;
                *ret_error = g_strdup_printf("%s: cannot list: %s", dir, g_strerror(e));
                return -e;
        }
        errno = 0;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.' || !g_str_has_suffix(de->d_name, ".conf"))
                        continue;
                if (names->len >= CONFIG_MAX_DROPINS) {
                        closedir(d);
                        *ret_error = g_strdup_printf("%s: more than %d drop-ins", dir,
                                                     CONFIG_MAX_DROPINS);
                        return -E2BIG;
                }
                g_ptr_array_add(names, g_strdup(de->d_name));
        }
        r = errno ? -errno : 0;
        closedir(d);
        if (r < 0) {
                *ret_error = g_strdup_printf("%s: cannot list: %s", dir, g_strerror(-r));
                return r;
        }
        g_ptr_array_sort(names, cmp_names);

        for (guint i = 0; i < names->len; i++) {
                const char *name = g_ptr_array_index(names, i);
                g_autofree char *full = g_build_filename(dir, name, NULL), *text = NULL;
                _cleanup_close_ int fd = -1;
                size_t len = 0;

                /* a drop-in may be a symbolic link: what counts is the file it names */
                fd = openat(dfd, name, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
                if (fd < 0) {
                        int e = errno;
                        if (e == ENOENT)
                                continue; /* removed meanwhile */
                        *ret_error = g_strdup_printf("%s: cannot open: %s", full, g_strerror(e));
                        return -e;
                }
                r = read_fd(fd, full, &text, &len, ret_error);
                if (r < 0)
                        return r;
                files_add(f, texts, g_steal_pointer(&full), g_steal_pointer(&text), len);
        }
        return 0;
}

int config_files_read(const char *path, ConfigFiles **ret, bool *ret_missing, char **ret_error) {
        g_autoptr(ConfigFiles) f = g_new0(ConfigFiles, 1);
        g_autoptr(GArray) texts = g_array_new(FALSE, TRUE, sizeof(ConfigText));
        g_autofree char *dir = config_dropin_dir(path);
        _cleanup_close_ int fd = -1;
        bool missing = false;
        int r;

        f->strings = g_ptr_array_new_with_free_func(g_free);
        fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
                int e = errno;
                if (e != ENOENT) {
                        *ret_error = g_strdup_printf("%s: cannot open: %s", path, g_strerror(e));
                        return -e;
                }
                missing = true;
        } else {
                g_autofree char *text = NULL;
                size_t len = 0;

                r = read_fd(fd, path, &text, &len, ret_error);
                if (r < 0)
                        return r;
                files_add(f, texts, g_strdup(path), g_steal_pointer(&text), len);
        }
        r = read_dropins(dir, f, texts, ret_error);
        if (r < 0)
                return r;

        f->n = texts->len;
        f->texts = (ConfigText *) (void *) g_array_free(g_steal_pointer(&texts), FALSE);
        if (ret_missing)
                *ret_missing = missing;
        *ret = g_steal_pointer(&f);
        return 0;
}

void config_files_free(ConfigFiles *f) {
        if (!f)
                return;
        g_free(f->texts);
        if (f->strings)
                g_ptr_array_unref(f->strings);
        g_free(f);
}

/* ---- what the setup names ------------------------------------------------------------- */

static void problem(GPtrArray *problems, const char *file, unsigned line, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static void problem(GPtrArray *problems, const char *file, unsigned line, const char *fmt, ...) {
        g_autofree char *what = NULL;
        va_list ap;

        va_start(ap, fmt);
        what = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        g_ptr_array_add(problems, g_strdup_printf("%s:%u: %s", file, line, what));
}

/* stat() of path as the setup resolves it: from /, no symbolic link. -errno. */
static int stat_no_symlinks(const char *path, struct stat *ret) {
        struct open_how how = {
                .flags = O_PATH | O_CLOEXEC,
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        _cleanup_close_ int fd = (int) syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);

        if (fd < 0 || fstat(fd, ret) < 0)
                return -errno;
        return 0;
}

static const char *no_path_why(int r) {
        return r == -ELOOP ? "a symbolic link is on the way, which nsd does not follow"
                           : g_strerror(-r);
}

static void check_script(GPtrArray *problems, const char *file, unsigned line, const char *what,
                         const char *script) {
        struct stat st;

        if (stat(script, &st) < 0) {
                problem(problems, file, line, "%s '%s': %s", what, script, g_strerror(errno));
                return;
        }
        if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) || !(st.st_mode & 0100))
                problem(problems, file, line,
                        "%s '%s' must be a regular file owned by root, executable, and writable "
                        "by nobody else (it is uid %u's, mode %04o); nsd would refuse to run it",
                        what, script, (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777));
}

/* Who but root may write into the directory fd (st its stat): "" for nobody, else a
 * g_malloc()ed "uid N", "group N", "everyone" or "uid N (an ACL entry)". The access ACL's
 * named entries count as far as its mask lets them (the mask is the group's bits then). */
static char *writers_but_root(int fd, const struct stat *st) {
        /* the on-disk form of system.posix_acl_access: a version, then {tag, perm, id} */
        struct {
                uint16_t tag, perm;
                uint32_t id;
        } e[64];
        uint32_t buf[1 + 2 * 64];
        g_autofree char *proc = g_strdup_printf("/proc/self/fd/%d", fd);
        ssize_t n;
        size_t count;

        if (st->st_uid != 0)
                return g_strdup_printf("uid %u (its owner)", (unsigned) st->st_uid);
        if (st->st_mode & S_IWOTH)
                return g_strdup("everyone");
        if (!(st->st_mode & S_IWGRP)) /* no group write, no ACL entry with write */
                return g_strdup("");
        n = getxattr(proc, "system.posix_acl_access", buf, sizeof buf);
        if (n < (ssize_t) sizeof(uint32_t)) /* no ACL: the group's bits are the group's */
                return st->st_gid == 0 ? g_strdup("")
                                       : g_strdup_printf("group %u", (unsigned) st->st_gid);
        count = MIN(((size_t) n - sizeof(uint32_t)) / sizeof e[0], G_N_ELEMENTS(e));
        memcpy(e, buf + 1, count * sizeof e[0]);
        for (size_t i = 0; i < count; i++) {
                /* ACL_USER 0x02, ACL_GROUP_OBJ 0x04, ACL_GROUP 0x08 (the mask allows write) */
                if (!(e[i].perm & 02))
                        continue;
                if (e[i].tag == 0x02 && e[i].id != 0)
                        return g_strdup_printf("uid %u (an ACL entry)", (unsigned) e[i].id);
                if (e[i].tag == 0x08 && e[i].id != 0)
                        return g_strdup_printf("group %u (an ACL entry)", (unsigned) e[i].id);
                if (e[i].tag == 0x04 && st->st_gid != 0)
                        return g_strdup_printf("group %u", (unsigned) st->st_gid);
        }
        return g_strdup("");
}

/* A route's Path= (Propagation=per-user) that anyone but root may write to: a warning. */
static void check_route_dir(GPtrArray *warnings, const Share *sh) {
        struct open_how how = {
                .flags = O_PATH | O_CLOEXEC,
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        _cleanup_close_ int fd = (int) syscall(SYS_openat2, AT_FDCWD, sh->path, &how, sizeof how);
        g_autofree char *who = NULL;
        struct stat st;

        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))
                return; /* a problem said already */
        who = writers_but_root(fd, &st);
        if (who[0])
                problem(warnings, sh->file, sh->line,
                        "[Share %s] Path=%s (Propagation=per-user) is writable by %s (owner uid "
                        "%u, gid %u, mode %04o): another user can make a member's directory "
                        "there first, and nsd then makes that member's namespace without the "
                        "route. Make it root's and writable by root only (chown root:root; chmod "
                        "0755; setfacl -b for an ACL)",
                        sh->name, sh->path, who, (unsigned) st.st_uid, (unsigned) st.st_gid,
                        (unsigned) (st.st_mode & 07777));
}

/* [GROUP NAME] KEY=path, a directory that must exist (polydir Path=, volume Where=): looked
 * at here only without a specifier (what %h and the like give is known per user). */
static void check_dir(GPtrArray *problems, const char *file, unsigned line, const char *group,
                      const char *name, const char *key, const char *path) {
        struct stat st;
        int r;

        if (strchr(path, '%'))
                return;
        r = stat_no_symlinks(path, &st);
        if (r < 0)
                problem(problems, file, line, "[%s %s] %s=%s: %s", group, name, key, path,
                        no_path_why(r));
        else if (!S_ISDIR(st.st_mode))
                problem(problems, file, line, "[%s %s] %s=%s: not a directory", group, name, key,
                        path);
}

void setup_conf_check_files(const SetupConf *s, GPtrArray *problems, GPtrArray *warnings) {
        bool setup_script_used = false;
        struct stat st;
        int r;

        for (size_t i = 0; i < s->n_binds; i++) {
                const BindReadOnly *b = &s->binds[i];

                r = stat_no_symlinks(b->source, &st);
                if (r < 0)
                        problem(problems, b->file, b->line, "[BindReadOnly %s] Source=%s: %s",
                                b->name, b->source, no_path_why(r));
        }
        for (size_t i = 0; i < s->n_polydirs; i++) {
                const Polydir *p = &s->polydirs[i];

                if (!p->no_init && p->init_script)
                        check_script(problems, p->file, p->line, "its InitScript=", p->init_script);
                setup_script_used = setup_script_used || (!p->no_init && !p->init_script);
                check_dir(problems, p->file, p->line, "Polydir", p->name, "Path", p->path);
                if (p->instance_prefix && !strchr(p->instance_prefix, '%')) {
                        /* the instance parent: the prefix up to its last '/' */
                        g_autofree char *whole = g_strconcat(p->instance_prefix, "x", NULL);
                        g_autofree char *parent = g_path_get_dirname(whole);

                        r = stat_no_symlinks(parent, &st);
                        if (r < 0 && r != -ENOENT)
                                problem(problems, p->file, p->line,
                                        "[Polydir %s] InstancePrefix=%s: '%s': %s", p->name,
                                        p->instance_prefix, parent, no_path_why(r));
                        else if (r == 0 &&
                                 (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077)))
                                problem(problems, p->file, p->line,
                                        "[Polydir %s] InstancePrefix=%s: the instance parent "
                                        "'%s' must be a directory owned by root and closed to "
                                        "group and others (it is uid %u's, mode %04o); nsd "
                                        "would refuse it",
                                        p->name, p->instance_prefix, parent, (unsigned) st.st_uid,
                                        (unsigned) (st.st_mode & 07777));
                }
        }
        for (size_t i = 0; i < s->n_shares; i++) {
                const Share *sh = &s->shares[i];

                r = stat_no_symlinks(sh->path, &st);
                if (r < 0)
                        problem(problems, sh->file, sh->line, "[Share %s] Path=%s: %s", sh->name,
                                sh->path, no_path_why(r));
                else if (!S_ISDIR(st.st_mode))
                        problem(problems, sh->file, sh->line, "[Share %s] Path=%s: not a directory",
                                sh->name, sh->path);
                else if (sh->propagation == SHARE_PROPAGATION_PER_USER)
                        check_route_dir(warnings, sh);
        }
        for (size_t i = 0; i < s->n_volumes; i++) {
                const Volume *v = &s->volumes[i];

                if (v->kind == VOLUME_KIND_BLOCK && !strchr(v->source, '%')) {
                        r = stat_no_symlinks(v->source, &st);
                        if (r < 0)
                                problem(problems, v->file, v->source_line,
                                        "[Volume %s] Source=%s: %s", v->name, v->source,
                                        no_path_why(r));
                        else if (S_ISREG(st.st_mode) ? st.st_uid != 0 || (st.st_mode & 022)
                                                     : !S_ISBLK(st.st_mode) || st.st_uid != 0)
                                problem(problems, v->file, v->source_line,
                                        "[Volume %s] Source=%s must be an image (a regular file "
                                        "owned by root, writable by nobody else) or a block "
                                        "device owned by root (it is uid %u's, mode %04o, %s); "
                                        "nsd would refuse it",
                                        v->name, v->source, (unsigned) st.st_uid,
                                        (unsigned) (st.st_mode & 07777),
                                        S_ISREG(st.st_mode)   ? "a regular file"
                                        : S_ISBLK(st.st_mode) ? "a block device"
                                                              : "neither a file nor a device");
                }
                check_dir(problems, v->file, v->line, "Volume", v->name, "Where", v->where);
                if (v->key_file && !strchr(v->key_file, '%')) {
                        /* the very check of a TAKE (what it copies is dropped at once) */
                        g_autofree char *why = NULL;
                        int fd = config_key_file_memfd(v->key_file, NSD_CREDENTIAL_MAX, &why);

                        if (fd >= 0)
                                (void) close(fd);
                        else
                                problem(problems, v->file, v->key_file_line,
                                        "[Volume %s] %s; nsd would refuse it", v->name, why);
                }
        }
        if (s->init_script && setup_script_used)
                check_script(problems, s->init_script_file, s->init_script_line,
                             "[Setup] InitScript=", s->init_script);
}
