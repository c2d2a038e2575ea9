/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * setup-conf.h: what a new namespace is made of, from nsd.conf (nsd.conf(5), "NAMESPACE
 * SETUP"): the groups [Setup], [Polydir NAME] and [BindReadOnly NAME].
 *
 * conf.c scans the files and hands every group line and every Key=Value of these groups
 * here; this file says which keys exist, parses their values and checks the whole once all
 * files are read. Nothing here touches a file or the user database: templates keep their
 * specifiers (%u, %U, %h, %g, %%), which setup.c expands per user.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The most polydirs and read-only binds one configuration may have. */
#define SETUP_MAX_POLYDIRS 32
#define SETUP_MAX_BINDS 32
/* Longest template (Path=, InstancePrefix=, Source=, Target=, InitScript=), in bytes. */
#define SETUP_PATH_MAX 1024
/* Longest object name ([Polydir NAME], [BindReadOnly NAME]). */
#define SETUP_NAME_MAX 64
/* Mount options of one polydir (MountOptions=), after splitting. */
#define SETUP_MAX_MOUNT_OPTIONS 16

typedef enum PolydirMethod {
        POLYDIR_METHOD_UNSET,
        POLYDIR_METHOD_USER,  /* a persistent instance directory, bind-mounted */
        POLYDIR_METHOD_TMPFS, /* a fresh tmpfs, as long as the namespace lives */
} PolydirMethod;

/* One entry of MountOptions=: a flag (value NULL) or key=value. Flags that are mount
 * attributes (ro, noexec, ...) are in Polydir.mount_attr instead. */
typedef struct MountOption {
        char *key;
        char *value;
} MountOption;

typedef struct Polydir {
        char *name;            /* [Polydir NAME]; "PrivateTmp" for PrivateTmp=yes's */
        char *path;            /* Path=, a template: "/tmp", "%h/.cache" */
        PolydirMethod method;  /* Method= */
        char *instance_prefix; /* InstancePrefix= (Method=user): instance = prefix + user name */
        MountOption *options;  /* MountOptions= besides the attributes, n_options of them */
        size_t n_options;
        uint64_t mount_attr;  /* MOUNT_ATTR_* from MountOptions= (ro, noexec, ...) */
        int mode;             /* Mode=, or -1: the polydir's own mode */
        char **only_users;    /* OnlyUsers=: NULL-terminated names and uids, or NULL */
        char **exclude_users; /* ExcludeUsers= */
        char *init_script;    /* InitScript= (NULL: [Setup]'s) */
        bool no_init;         /* NoInit= */
        char *file;           /* where the group is, for messages */
        unsigned line;
} Polydir;

typedef struct BindReadOnly {
        char *name;
        char *source; /* Source=: a path of the initial namespace */
        char *target; /* Target=: where it appears in the user's namespace */
        char *file;
        unsigned line;
} BindReadOnly;

typedef struct SetupConf {
        Polydir *polydirs; /* in the order they were read */
        size_t n_polydirs;
        BindReadOnly *binds;
        size_t n_binds;
        /* [Setup] */
        char *init_script;      /* InitScript= (NULL: none) */
        char *init_script_file; /* where InitScript= is set, for messages */
        unsigned init_script_line;
        uint64_t timeout_usec;    /* TimeoutSec=: the whole setup, init scripts included */
        bool on_failure_continue; /* OnFailure=continue (default refuse) */
} SetupConf;

#define SETUP_TIMEOUT_USEC_DEFAULT (3ULL * 1000000ULL)

void setup_conf_init(SetupConf *ret);
void setup_conf_done(SetupConf *s);
void setup_conf_copy(SetupConf *dst, const SetupConf *src);

/* The keys of group (NULL: not a setup group). Group names: "Setup", "Polydir NAME",
 * "BindReadOnly NAME". For a named group with a bad NAME, *ret_why says why (static). */
const char *const *setup_conf_group_keys(const char *group, const char **ret_why);
/* Named groups are objects: one definition in all the files together. */
bool setup_conf_group_is_object(const char *group);

/* conf.c's parse, for each group line (key NULL) and Key=Value of a setup group, in the
 * order read. -EINVAL with *ret_why (g_malloc()ed, without FILE:LINE) for a bad value. */
int setup_conf_set(SetupConf *s, const char *group, const char *key, const char *value,
                   const char *file, unsigned line, char **ret_why);
/* After every file: missing keys, the same path twice, PrivateTmp= (private_tmp: adds a
 * tmpfs polydir on /tmp, or an error when one exists already, at private_tmp_file:line).
 * -EINVAL with *ret_error "FILE:LINE: what". */
int setup_conf_finish(SetupConf *s, bool private_tmp, const char *private_tmp_file,
                      unsigned private_tmp_line, char **ret_error);

/* The generation of a setup: a digest of everything that makes a namespace's contents
 * (polydirs, binds, init scripts, and propagation), not of timeouts or OnFailure=. 16 hex
 * digits into buf (size >= 17). Equal setups give equal generations. */
const char *setup_conf_generation(const SetupConf *s, bool propagation_private, char *buf,
                                  size_t size);

/* "polydir 'tmp' (/etc/nsd/nsd.conf:12)" for messages; returns buf. */
const char *polydir_describe(const Polydir *p, char *buf, size_t size);

/* Does a polydir apply to this user (OnlyUsers=, ExcludeUsers=, by name or uid)? */
bool polydir_applies(const Polydir *p, const char *user_name, uid_t uid);
