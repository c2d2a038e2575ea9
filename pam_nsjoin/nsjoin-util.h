/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsjoin-util.h: the pure parts of pam_nsjoin (argument parsing, the local decision whether a
 * user is in the managed range, list matching, mapping of -errno to PAM codes and messages).
 * Private: compiled into the module (hidden by its version script) and into
 * tests/unit/pam_nsjoin/test-pam.c.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

enum nsjoin_mode {
        NSJOIN_MODE_SETNS,  /* setns(ns_fd, CLONE_NEWNS): the default */
        NSJOIN_MODE_CHROOT, /* setns(root_fd) where the kernel allows it, else fchdir + chroot */
};

/* unmanaged=: where the session of root, or of a user the module does not move into a
 * namespace, goes when it is opened inside a namespace that nsd made */
enum nsjoin_unmanaged {
        NSJOIN_UNMANAGED_LEAVE, /* into the initial namespace: the default */
        NSJOIN_UNMANAGED_STAY,  /* where it was opened, as before nsd 0.3 */
};

/* nsd.conf's defaults for MinUid=/MaxUid=, and Debian's login.defs UID_MIN/UID_MAX */
#define NSJOIN_MIN_UID_DEFAULT 1000
#define NSJOIN_MAX_UID_DEFAULT 60000
/* timeout=: default, and the range a value must be in */
#define NSJOIN_TIMEOUT_DEFAULT_USEC (5ull * 1000 * 1000)
#define NSJOIN_TIMEOUT_MAX_USEC (300ull * 1000 * 1000)

struct nsjoin_args {
        enum nsjoin_mode mode;
        const char *socket; /* NULL: root's socket, else the user socket */
        bool debug;
        const char *skip_users; /* comma-separated user names, or NULL */
        const char *only_group; /* group name, or NULL */
        uid_t min_uid, max_uid; /* the managed range, when set by an argument */
        bool min_uid_set, max_uid_set;
        uint64_t timeout_usec; /* connect + request + retries, in all */
        enum nsjoin_unmanaged unmanaged;
};

/* What nsjoin_args_parse_one() made of one argument. */
enum nsjoin_arg_result {
        NSJOIN_ARG_OK,        /* known and stored */
        NSJOIN_ARG_UNKNOWN,   /* not ours: warn and ignore */
        NSJOIN_ARG_BAD_VALUE, /* ours, but its value is wrong: refuse the session */
};

/* Defaults: mode setns, default socket, no debug, nobody skipped, no group required, the
 * range from login.defs (not set here), timeout NSJOIN_TIMEOUT_DEFAULT_USEC, unmanaged=leave. */
void nsjoin_args_init(struct nsjoin_args *a);

/* Parse one module argument into *a. Pointers stored in *a point into arg, which must live
 * as long as *a (PAM's argv does). Later arguments override earlier ones. For a bad value,
 * *ret_hint (when given) says what was expected. */
enum nsjoin_arg_result nsjoin_args_parse_one(struct nsjoin_args *a, const char *arg,
                                             const char **ret_hint);

/* A uid as nsd.conf takes it: decimal, 1 to 4294967294, nothing else around it. */
int nsjoin_parse_uid(const char *s, uid_t *ret);

/* A duration in seconds, with up to six decimals ("5", "0.5", "2.25"), in microseconds;
 * more than 0 and at most NSJOIN_TIMEOUT_MAX_USEC. */
int nsjoin_parse_timeout(const char *s, uint64_t *ret_usec);

/* Is name one of the entries of the comma-separated list? Empty entries match nothing. */
bool nsjoin_name_in_list(const char *list, const char *name);

/* Where a failure happened: the same errno means different things at different steps. */
enum nsjoin_step {
        NSJOIN_STEP_USER,          /* looking up the user or the group */
        NSJOIN_STEP_CONNECT,       /* connecting to nsd */
        NSJOIN_STEP_JOIN,          /* JOIN_SESSION (or JOIN + SESSION_OPEN) request */
        NSJOIN_STEP_ENTER_SETNS,   /* setns(ns_fd) */
        NSJOIN_STEP_ENTER_CHROOT,  /* setns(root_fd) or fchdir + chroot */
        NSJOIN_STEP_SESSION_CLOSE, /* SESSION_CLOSE request */
};

/*
 * THE mapping of a result r (>= 0 or -errno) at a step to a PAM return code, and to a short
 * static explanation for the log line (for r >= 0: NULL). At NSJOIN_STEP_CONNECT the
 * explanation is a predicate for "nsd at PATH ..." ("is not running"); at the other steps a
 * phrase of its own ("nsd refused the request"). Sessions that nsd's policy does not manage
 * (-ENXIO at JOIN) are PAM_IGNORE; -ENOMEM is PAM_BUF_ERR; any other failure is
 * PAM_SESSION_ERR, so that `session required` refuses the login and `session optional` lets
 * it go on unchanged.
 */
int nsjoin_errno_to_pam(enum nsjoin_step step, int r, const char **ret_explanation);

/*
 * UID_MIN and UID_MAX of a login.defs(5) text, in one pass, read the way libpam's
 * pam_modutil_search_key() reads one key: a comment runs from '#' to the end of the line,
 * the key ends at a blank or '=', blanks and '=' before the value are skipped, keys are
 * matched without regard to case, the first line with a key counts. *ret_min and *ret_max
 * are malloc()ed copies of the values, or NULL where the key is missing. Read from fd to
 * its end (or until both are found); a NUL byte ends its line's text, as in libpam; of a
 * line longer than NSJOIN_LOGIN_DEFS_LINE_MAX only the start is looked at. -errno on a read
 * error or -ENOMEM (nothing returned then).
 */
#define NSJOIN_LOGIN_DEFS_LINE_MAX 4096
int nsjoin_login_defs_uid_range(int fd, char **ret_min, char **ret_max);

/* ---- crossing users: the session of root or of an unmanaged user ------------------------ */

/*
 * Where such a session is, as the local checks found it (pam_nsjoin.c gathers it, in the
 * order nsjoin_leave_decide() reads it: the namespaces first; the root directories only when
 * the namespaces are the same; nsd's record only for what differs from PID 1's).
 */
struct nsjoin_place {
        int ns_error;         /* 0, or -errno: /proc/self/ns/mnt or /proc/1/ns/mnt unreadable */
        uint64_t ns, init_ns; /* nsfs inodes: this process's mount namespace, PID 1's */
        int root_error;       /* 0, or -errno: the mount of / or of /proc/1/root unknown */
        uint64_t root_mnt, init_root_mnt; /* mount ids of this process's root, PID 1's */
        int made_error; /* 0, or -errno: nsd's record (NSD_MADE_*) unreadable or untrusted */
        bool ns_made;   /* nsd's record names ns */
        bool root_made; /* nsd's record names root_mnt */
};

/* What to do with the session. */
enum nsjoin_leave {
        NSJOIN_STAY_INITIAL, /* it is in the initial namespace, at its root: nothing to do */
        NSJOIN_STAY_UNKNOWN, /* it cannot be told where it is: stay, as before nsd 0.3 */
        NSJOIN_STAY_FOREIGN, /* in a namespace or a root nsd did not make (a container, a
                              * sandboxed service, pam_namespace): stay */
        NSJOIN_LEAVE_NS,     /* in a namespace nsd made: setns() into PID 1's */
        NSJOIN_LEAVE_ROOT,   /* chrooted (mode=chroot) into the root of a namespace nsd made,
                              * from the initial namespace: chroot to PID 1's root */
};

/* THE decision for a session the module moves into no user's namespace. *ret_why (when
 * given) is a short static phrase for the debug line. */
enum nsjoin_leave nsjoin_leave_decide(const struct nsjoin_place *p, const char **ret_why);
