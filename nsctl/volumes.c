/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* volumes.c: a user's FUSE volumes, see volumes.h. */
#include "volumes.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <termios.h>
#include <unistd.h>

#include "volume-options.h"

int volume_argv(const struct nsc_volume_info *v, const char *argv[VOLUME_ARGV_MAX],
                const char **ret_why) {
        const VolumeTypeOptions *t;
        size_t n = 0;

        if (v->state != NSC_VOLUME_USER)
                return *ret_why = "not a volume the user's service manager runs (a kernel "
                                  "file system: nsd mounts it)",
                       -EINVAL;
        t = volume_type_options_find(v->type);
        if (!t || !t->fuse || !t->program)
                return *ret_why = "a FUSE type this nsctl does not know (nsctl older than nsd?)",
                       -EINVAL;
        if (v->source[0] == '\0' || v->source[0] == '-' || (t->local_source && v->source[0] != '/'))
                return *ret_why = t->local_source ? "Source= is not an absolute path"
                                                  : "Source= is empty or starts with '-'",
                       -EINVAL;
        if (v->where[0] != '/')
                return *ret_why = "Where= is not an absolute path", -EINVAL;
        if (t->takes_password != !!(v->flags & NSC_VOLUME_PASSWORD))
                return *ret_why = "nsd and this nsctl disagree on whether it takes a password",
                       -EINVAL;
        argv[n++] = t->program;
        /* the foreground: the unit's main process is the FUSE daemon */
        argv[n++] = t->foreground;
        if (v->options[0]) {
                argv[n++] = t->options_arg;
                argv[n++] = v->options;
        }
        for (const char *const *p = volume_password_args; t->takes_password && *p; p++)
                argv[n++] = *p;
        argv[n++] = "--";
        argv[n++] = v->source;
        argv[n++] = v->where;
        argv[n] = NULL;
        return 0;
}

int volume_unit_name(const char *name, char *buf, size_t size) {
        static const char prefix[] = "nsd-volume@", suffix[] = ".service";
        size_t n = 0;

#define PUT(c)                                \
        do {                                  \
                if (n + 1 >= size)            \
                        return -ENAMETOOLONG; \
                buf[n++] = (c);               \
        } while (0)
        for (const char *p = prefix; *p; p++)
                PUT(*p);
        for (const char *p = name; *p; p++) {
                unsigned char c = (unsigned char) *p;
                bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                             (c >= '0' && c <= '9') || c == '_' || c == ':' ||
                             (c == '.' && p != name);

                if (plain)
                        PUT((char) c);
                else {
                        char hex[5];

                        snprintf(hex, sizeof hex, "\\x%02x", c);
                        for (const char *h = hex; *h; h++)
                                PUT(*h);
                }
        }
        for (const char *p = suffix; *p; p++)
                PUT(*p);
#undef PUT
        buf[n] = '\0';
        return 0;
}

/* The terminal's settings while echo is off, for the signal handler to put back. */
static struct termios saved_tty;
static volatile sig_atomic_t tty_fd = -1;

static void restore_tty_and_die(int sig) {
        if (tty_fd >= 0)
                (void) tcsetattr(tty_fd, TCSAFLUSH, &saved_tty);
        signal(sig, SIG_DFL);
        raise(sig);
}

/* One line from fd into buf (at most size - 1 bytes, then the end of the line is awaited and
 * dropped). The bytes read, or -errno; -EMSGSIZE when the line was longer. */
static ssize_t read_line(int fd, char *buf, size_t size) {
        size_t n = 0;
        bool too_long = false;

        for (;;) {
                char c;
                ssize_t k = read(fd, &c, 1);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0 || c == '\n')
                        break;
                if (n + 1 < size)
                        buf[n++] = c;
                else
                        too_long = true;
        }
        if (n > 0 && buf[n - 1] == '\r')
                n--;
        return too_long ? -EMSGSIZE : (ssize_t) n;
}

_Static_assert(NSC_CREDENTIAL_MAX == 1024, "the limit volume_read_password() names");

int volume_read_password(int fd, const char *prompt, const char **ret_why) {
        const size_t size = 4096; /* a page of its own, out of core dumps, locked if allowed */
        struct sigaction sa = { .sa_handler = restore_tty_and_die }, old[3];
        static const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
        bool tty = isatty(fd);
        char *buf;
        ssize_t n;
        int r;

        buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (buf == MAP_FAILED)
                return *ret_why = "cannot map a page for it", -errno;
        (void) madvise(buf, size, MADV_DONTDUMP);
        (void) mlock(buf, size);
        if (tty) {
                struct termios quiet;

                if (tcgetattr(fd, &saved_tty) < 0) {
                        r = -errno;
                        (void) munmap(buf, size);
                        return *ret_why = "cannot read the terminal's settings", r;
                }
                quiet = saved_tty;
                quiet.c_lflag &= ~(tcflag_t) ECHO;
                quiet.c_lflag |= ECHONL;
                for (size_t i = 0; i < 3; i++)
                        (void) sigaction(sigs[i], &sa, &old[i]);
                tty_fd = fd;
                fprintf(stderr, "%s", prompt);
                fflush(stderr);
                (void) tcsetattr(fd, TCSAFLUSH, &quiet);
        }
        n = read_line(fd, buf, NSC_CREDENTIAL_MAX + 1);
        if (tty) {
                (void) tcsetattr(fd, TCSAFLUSH, &saved_tty);
                tty_fd = -1;
                for (size_t i = 0; i < 3; i++)
                        (void) sigaction(sigs[i], &old[i], NULL);
        }
        if (n == -EMSGSIZE)
                *ret_why = "longer than nsd takes (1024 bytes at most)";
        else if (n == 0)
                *ret_why = "no password was given", n = -ENODATA;
        else if (n < 0)
                *ret_why = "cannot read it";
        r = n > 0 ? nsc_credential_memfd(buf, (size_t) n) : (int) n;
        if (n > 0 && r < 0)
                *ret_why = "cannot put it into a sealed memfd";
        explicit_bzero(buf, size);
        (void) munmap(buf, size);
        return r;
}

const char *volume_wait_why(int r, const char *said, bool ask, const char *name, char *buf,
                            size_t size) {
        if (r != -EAGAIN && r != -EALREADY)
                return NULL;
        if (r == -EAGAIN && said && strncmp(said, "nsd could not", 13) == 0)
                snprintf(buf, size, "%s; asking again", said);
        else if (ask)
                snprintf(buf, size, "locked; waiting for its password (nsctl unlock %s)", name);
        else if (r == -EALREADY)
                snprintf(buf, size,
                         "locked; your login password did not unlock it: waiting for its "
                         "password (nsctl unlock %s)",
                         name);
        else
                snprintf(buf, size,
                         "locked; waiting for your login password (log in with it, or nsctl "
                         "unlock %s)",
                         name);
        return buf;
}
