/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pure parts of pam_nsjoin; see nsjoin-util.h. */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <security/_pam_types.h>

#include "nsd-protocol.h"
#include "nsjoin-util.h"

void nsjoin_args_init(struct nsjoin_args *a) {
        assert(a);
        *a = (struct nsjoin_args) {
                .mode = NSJOIN_MODE_SETNS,
                .timeout_usec = NSJOIN_TIMEOUT_DEFAULT_USEC,
                .unmanaged = NSJOIN_UNMANAGED_LEAVE,
        };
}

/* If arg is "key=value", return value; else NULL. */
static const char *arg_value(const char *arg, const char *key) {
        size_t n = strlen(key);

        if (strncmp(arg, key, n) != 0 || arg[n] != '=')
                return NULL;
        return arg + n + 1;
}

int nsjoin_parse_uid(const char *s, uid_t *ret) {
        uint64_t v = 0;

        assert(s);
        if (!*s)
                return -EINVAL;
        for (const char *p = s; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                v = v * 10 + (uint64_t) (*p - '0');
                if (v > 4294967294u) /* (uid_t) -1 is no uid */
                        return -ERANGE;
        }
        if (v == 0)
                return -ERANGE;
        *ret = (uid_t) v;
        return 0;
}

int nsjoin_parse_timeout(const char *s, uint64_t *ret_usec) {
        uint64_t sec = 0, frac = 0, scale = 1000000;
        const char *p = s;

        assert(s);
        /* by hand: strtod() would follow the caller's locale (a decimal comma) */
        if (*p < '0' || *p > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                sec = sec * 10 + (uint64_t) (*p - '0');
                if (sec > NSJOIN_TIMEOUT_MAX_USEC / 1000000)
                        return -ERANGE;
        }
        if (*p == '.') {
                p++;
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                for (; *p >= '0' && *p <= '9'; p++) {
                        if (scale == 1)
                                return -EINVAL; /* finer than a microsecond */
                        scale /= 10;
                        frac += (uint64_t) (*p - '0') * scale;
                }
        }
        if (*p)
                return -EINVAL;
        sec = sec * 1000000 + frac;
        if (sec == 0 || sec > NSJOIN_TIMEOUT_MAX_USEC)
                return -ERANGE;
        *ret_usec = sec;
        return 0;
}

static void set_mode(struct nsjoin_args *a, int value) {
        a->mode = (enum nsjoin_mode) value;
}

static void set_unmanaged(struct nsjoin_args *a, int value) {
        a->unmanaged = (enum nsjoin_unmanaged) value;
}

/* The arguments whose value is one of two words; words[] is indexed by the enum's values. */
static const struct word_arg {
        const char *key, *hint;
        const char *words[2];
        void (*set)(struct nsjoin_args *a, int value);
} word_args[] = {
        { "mode",
          "expected mode=setns or mode=chroot",
          { [NSJOIN_MODE_SETNS] = "setns", [NSJOIN_MODE_CHROOT] = "chroot" },
          set_mode },
        { "unmanaged",
          "expected unmanaged=leave or unmanaged=stay",
          { [NSJOIN_UNMANAGED_LEAVE] = "leave", [NSJOIN_UNMANAGED_STAY] = "stay" },
          set_unmanaged },
};

enum nsjoin_arg_result nsjoin_args_parse_one(struct nsjoin_args *a, const char *arg,
                                             const char **ret_hint) {
        const char *v, *hint_dummy;

        assert(a);
        assert(arg);
        if (!ret_hint)
                ret_hint = &hint_dummy;

        if (strcmp(arg, "debug") == 0) {
                a->debug = true;
                return NSJOIN_ARG_OK;
        }
        for (size_t k = 0; k < sizeof(word_args) / sizeof(word_args[0]); k++) {
                const struct word_arg *w = &word_args[k];

                if (!(v = arg_value(arg, w->key)))
                        continue;
                *ret_hint = w->hint;
                for (int i = 0; i < 2; i++)
                        if (strcmp(v, w->words[i]) == 0) {
                                w->set(a, i);
                                return NSJOIN_ARG_OK;
                        }
                return NSJOIN_ARG_BAD_VALUE;
        }
        if ((v = arg_value(arg, "socket"))) {
                /* a relative path would depend on the caller's cwd */
                *ret_hint = "expected an absolute path";
                if (v[0] != '/')
                        return NSJOIN_ARG_BAD_VALUE;
                a->socket = v;
                return NSJOIN_ARG_OK;
        }
        if ((v = arg_value(arg, "skip_users"))) {
                /* empty is fine: nobody is skipped */
                a->skip_users = v[0] ? v : NULL;
                return NSJOIN_ARG_OK;
        }
        if ((v = arg_value(arg, "only_group"))) {
                *ret_hint = "expected a group name";
                if (v[0] == 0)
                        return NSJOIN_ARG_BAD_VALUE;
                a->only_group = v;
                return NSJOIN_ARG_OK;
        }
        if ((v = arg_value(arg, "min_uid")) || (v = arg_value(arg, "max_uid"))) {
                bool min = strncmp(arg, "min_uid=", 8) == 0;
                uid_t uid;

                *ret_hint = "expected a uid from 1 to 4294967294";
                if (nsjoin_parse_uid(v, &uid) < 0)
                        return NSJOIN_ARG_BAD_VALUE;
                if (min) {
                        a->min_uid = uid;
                        a->min_uid_set = true;
                } else {
                        a->max_uid = uid;
                        a->max_uid_set = true;
                }
                return NSJOIN_ARG_OK;
        }
        if ((v = arg_value(arg, "timeout"))) {
                *ret_hint = "expected seconds, more than 0 and at most 300, e.g. timeout=5 or "
                            "timeout=0.5";
                if (nsjoin_parse_timeout(v, &a->timeout_usec) < 0)
                        return NSJOIN_ARG_BAD_VALUE;
                return NSJOIN_ARG_OK;
        }
        return NSJOIN_ARG_UNKNOWN;
}

bool nsjoin_name_in_list(const char *list, const char *name) {
        size_t n;

        if (!list || !name || !name[0])
                return false;
        n = strlen(name);
        for (const char *p = list; *p;) {
                const char *comma = strchrnul(p, ',');

                if ((size_t) (comma - p) == n && strncmp(p, name, n) == 0)
                        return true;
                p = *comma ? comma + 1 : comma;
        }
        return false;
}

int nsjoin_errno_to_pam(enum nsjoin_step step, int r, const char **ret_explanation) {
        const char *e;
        int code = PAM_SESSION_ERR;

        if (r >= 0) {
                if (ret_explanation)
                        *ret_explanation = NULL;
                return PAM_SUCCESS;
        }

        switch (step) {
        case NSJOIN_STEP_USER:
                e = r == -ENOENT ? "no such user or group" : "looking up the user failed";
                break;
        case NSJOIN_STEP_CONNECT:
                switch (r) {
                case -ENOENT:
                case -ECONNREFUSED:
                        e = "is not running";
                        break;
                case -EACCES:
                case -EPERM:
                        e = "does not let this process connect";
                        break;
                case -ETIMEDOUT:
                        e = "did not accept the connection in time";
                        break;
                default:
                        e = "cannot be reached";
                }
                break;
        case NSJOIN_STEP_JOIN:
                switch (r) {
                case -NSD_ERRNO_NOT_MANAGED:
                        e = "nsd's policy does not manage this user";
                        code = PAM_IGNORE;
                        break;
                case -EPERM:
                        e = "nsd refused the request";
                        break;
                case -EUSERS:
                        e = "a limit of nsd is reached (namespaces in all, or this user's "
                            "sessions)";
                        break;
                case -ENOENT:
                        e = "nsd has no namespace for this user";
                        break;
                case -EOWNERDEAD:
                        e = "the namespace of this uid was made for another user name (a "
                            "recycled uid): nsd hands it to nobody else; root may release it "
                            "(nsctl release)";
                        break;
                case -NSD_ERRNO_NOT_YET:
                        e = "nsd has not yet made this user's namespace available again (it is "
                            "still adopting it after a restart)";
                        break;
                case -ETIMEDOUT:
                        e = "nsd did not answer in time";
                        break;
                case -ECONNRESET:
                        e = "nsd closed the connection";
                        break;
                default:
                        e = "nsd could not hand out the namespace";
                }
                break;
        case NSJOIN_STEP_ENTER_SETNS:
                switch (r) {
                case -EINVAL:
                        e = "setns() refused: the calling process is multi-threaded or shares its "
                            "filesystem context; mode=chroot works for such callers";
                        break;
                case -EPERM:
                        e = "setns() needs CAP_SYS_ADMIN and CAP_SYS_CHROOT";
                        break;
                default:
                        e = "setns() into the namespace failed";
                }
                break;
        case NSJOIN_STEP_ENTER_CHROOT:
                e = r == -EPERM ? "chroot into the namespace root needs CAP_SYS_CHROOT"
                                : "entering the namespace root failed";
                break;
        case NSJOIN_STEP_SESSION_CLOSE:
                e = "unregistering the session with nsd failed";
                break;
        default:
                e = "unexpected failure";
        }

        if (r == -ENOMEM)
                code = PAM_BUF_ERR;
        if (ret_explanation)
                *ret_explanation = e;
        return code;
}

/* One line of login.defs, [line, eol) with a byte to spare at eol: into *min or *max when
 * it sets UID_MIN or UID_MAX for the first time. */
static int login_defs_line(char *line, char *eol, char **min, char **max) {
        char *p = line, *key, *hash;
        char **slot;

        /* most lines are comments or other keys: only one that starts like UID_MIN and
         * UID_MAX is looked at */
        while (p < eol && isspace((unsigned char) *p))
                p++;
        if (p == eol || (*p != 'U' && *p != 'u'))
                return 0;
        *eol = 0;
        hash = strchr(p, '#');
        if (hash)
                *hash = 0;
        key = strsep(&p, " \t=");
        if (strcasecmp(key, "UID_MIN") == 0)
                slot = min;
        else if (strcasecmp(key, "UID_MAX") == 0)
                slot = max;
        else
                return 0;
        if (*slot)
                return 0; /* the first line counts */
        if (p)
                while (isspace((unsigned char) *p) || *p == '=')
                        p++;
        *slot = strdup(p ?: "");
        return *slot ? 0 : -ENOMEM;
}

int nsjoin_login_defs_uid_range(int fd, char **ret_min, char **ret_max) {
        /* on the stack, a page: no stdio, no buffer to allocate (a login pays for every page
         * it touches and every line of Debian's 12 KB of comments: bench/login/cost) */
        char buf[NSJOIN_LOGIN_DEFS_LINE_MAX + 1];
        char *min = NULL, *max = NULL;
        size_t len = 0; /* bytes at the start of buf not looked at yet */
        bool eof = false, rest_of_long_line = false;
        int r = 0;

        while (r == 0 && (!min || !max) && !(eof && len == 0)) {
                char *p = buf, *end;

                if (!eof) {
                        ssize_t n = read(fd, buf + len, NSJOIN_LOGIN_DEFS_LINE_MAX - len);

                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0) {
                                r = -errno;
                                break;
                        }
                        eof = n == 0;
                        len += (size_t) n;
                }
                end = buf + len;
                while (r == 0 && p < end) {
                        char *nl = memchr(p, '\n', (size_t) (end - p)), *eol = nl ?: end;
                        bool full = p == buf && len == NSJOIN_LOGIN_DEFS_LINE_MAX;

                        if (!nl && !eof && !full)
                                break; /* the line goes on in the next read */
                        if (!rest_of_long_line)
                                r = login_defs_line(p, eol, &min, &max);
                        /* a line longer than the buffer: its start was looked at, the rest is
                         * passed over */
                        rest_of_long_line = !nl && !eof;
                        p = nl ? nl + 1 : end;
                }
                len = (size_t) (end - p);
                memmove(buf, p, len);
        }
        if (r < 0) {
                free(min);
                free(max);
                return r;
        }
        *ret_min = min;
        *ret_max = max;
        return 0;
}

static const char *made_error_why(int r) {
        return r == -EPERM ? "nsd's record of the namespaces it made cannot be trusted (it is "
                             "not root's alone)"
                           : "nsd's record of the namespaces it made cannot be read";
}

enum nsjoin_leave nsjoin_leave_decide(const struct nsjoin_place *p, const char **ret_why) {
        const char *why_dummy;

        assert(p);
        if (!ret_why)
                ret_why = &why_dummy;

        if (p->ns_error < 0) {
                *ret_why = "its mount namespace or PID 1's cannot be read";
                return NSJOIN_STAY_UNKNOWN;
        }
        if (p->ns != p->init_ns) {
                if (p->made_error < 0) {
                        *ret_why = made_error_why(p->made_error);
                        return NSJOIN_STAY_UNKNOWN;
                }
                if (!p->ns_made) {
                        *ret_why = "it is in a mount namespace nsd did not make";
                        return NSJOIN_STAY_FOREIGN;
                }
                *ret_why = "it is in a mount namespace nsd made";
                return NSJOIN_LEAVE_NS;
        }
        if (p->root_error < 0) {
                *ret_why = "the mount of its root directory or of PID 1's cannot be read";
                return NSJOIN_STAY_UNKNOWN;
        }
        if (p->root_mnt == p->init_root_mnt) {
                *ret_why = "it is in the initial mount namespace";
                return NSJOIN_STAY_INITIAL;
        }
        if (p->made_error < 0) {
                *ret_why = made_error_why(p->made_error);
                return NSJOIN_STAY_UNKNOWN;
        }
        if (!p->root_made) {
                *ret_why = "its root directory is not the root of a namespace nsd made";
                return NSJOIN_STAY_FOREIGN;
        }
        *ret_why = "its root directory is the root of a namespace nsd made (mode=chroot)";
        return NSJOIN_LEAVE_ROOT;
}
