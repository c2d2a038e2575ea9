/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsjoin-util.h: the pure parts of pam_nsjoin (argument parsing, list matching, mapping of
 * -errno to PAM codes and messages). Private: compiled into the module (hidden by its version
 * script) and into tests/unit/test-pam.c.
 */
#pragma once

#include <stdbool.h>

enum nsjoin_mode {
        NSJOIN_MODE_SETNS,  /* setns(ns_fd, CLONE_NEWNS): the default */
        NSJOIN_MODE_CHROOT, /* setns(root_fd) where the kernel allows it, else fchdir + chroot */
};

struct nsjoin_args {
        enum nsjoin_mode mode;
        const char *socket;     /* NULL: the default socket path */
        bool debug;
        const char *skip_users; /* comma-separated user names, or NULL */
        const char *only_group; /* group name, or NULL */
};

/* What nsjoin_args_parse_one() made of one argument. */
enum nsjoin_arg_result {
        NSJOIN_ARG_OK,        /* known and stored */
        NSJOIN_ARG_UNKNOWN,   /* not ours: warn and ignore */
        NSJOIN_ARG_BAD_VALUE, /* ours, but its value is wrong: refuse the session */
};

/* Defaults: mode setns, default socket, no debug, nobody skipped, no group required. */
void nsjoin_args_init(struct nsjoin_args *a);

/* Parse one module argument into *a. Pointers stored in *a point into arg, which must live
 * as long as *a (PAM's argv does). Later arguments override earlier ones. */
enum nsjoin_arg_result nsjoin_args_parse_one(struct nsjoin_args *a, const char *arg);

/* Is name one of the entries of the comma-separated list? Empty entries match nothing. */
bool nsjoin_name_in_list(const char *list, const char *name);

/* Where a failure happened: the same errno means different things at different steps. */
enum nsjoin_step {
        NSJOIN_STEP_USER,          /* looking up the user or the group */
        NSJOIN_STEP_CONNECT,       /* connecting to nsd */
        NSJOIN_STEP_JOIN,          /* JOIN request */
        NSJOIN_STEP_ENTER_SETNS,   /* setns(ns_fd) */
        NSJOIN_STEP_ENTER_CHROOT,  /* setns(root_fd) or fchdir + chroot */
        NSJOIN_STEP_SESSION_OPEN,  /* SESSION_OPEN request */
        NSJOIN_STEP_SESSION_CLOSE, /* SESSION_CLOSE request */
};

/*
 * THE mapping of a result r (>= 0 or -errno) at a step to a PAM return code, and to a short
 * static explanation for the log line (for r >= 0: NULL). At NSJOIN_STEP_CONNECT the
 * explanation is a predicate for "nsd at PATH ..." ("is not running"); at the other steps a
 * phrase of its own ("nsd refused the request"). Sessions that nsd's policy does not manage (-ENXIO at JOIN) are PAM_IGNORE;
 * -ENOMEM is PAM_BUF_ERR; any other failure is PAM_SESSION_ERR, so that `session required`
 * refuses the login and `session optional` lets it go on unchanged.
 */
int nsjoin_errno_to_pam(enum nsjoin_step step, int r, const char **ret_explanation);
