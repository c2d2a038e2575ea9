/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * setup-conf.h: what a new namespace is made of, from nsd.conf (nsd.conf(5), "NAMESPACE
 * SETUP"): the groups [Setup], [Polydir NAME], [BindReadOnly NAME], [Share NAME] and
 * [Volume NAME].
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
/* The most shares one configuration may have. */
#define SETUP_MAX_SHARES 32
/* MaxMembers= when not set, and its largest value: one mount under a share becomes a copy in
 * every member's namespace (the kernel's fs.mount-max is the last line). */
#define SHARE_MAX_MEMBERS_DEFAULT 256u
#define SHARE_MAX_MEMBERS_LIMIT 65536u
/* MaxMountsPerUser= when not set, and its largest value: the FUSE mounts one uid may have
 * under a share (each is copied into every member's namespace and the anchor); nsd detaches
 * the newest beyond it (domain/share-bound.h). */
#define SHARE_MAX_MOUNTS_PER_USER_DEFAULT 16u
#define SHARE_MAX_MOUNTS_PER_USER_LIMIT 4096u
/* The most volumes one configuration may have. */
#define SETUP_MAX_VOLUMES 32
/* Longest object name ([Polydir NAME], [BindReadOnly NAME], [Share NAME], [Volume NAME]). */
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

/* Where a share's mounts travel (Propagation=). Every member's namespace gets a clone of one
 * anchor mount that nsd keeps in its pin namespace (pinstore.h), so all of them are one peer
 * group: a mount made under Path= in any member's namespace appears in every member's. */
typedef enum SharePropagation {
        SHARE_PROPAGATION_MEMBERS,  /* members to members only: the host's mounts under Path=
                                    * do not come in, the members' do not go out (default) */
        SHARE_PROPAGATION_HOST,     /* and the host's mounts under Path= reach the members
                                    * (one way: the anchor is a slave of the host's mount) */
        SHARE_PROPAGATION_BOTH,     /* members and the initial namespace one peer group: a
                                    * member's mount reaches the host too. Only when said. */
        SHARE_PROPAGATION_PER_USER, /* a route: the host's mounts under Path=/<member's name>
                                     * reach that member only (udisks's /media/<user>); no
                                     * anchor, a slave of the host's Path= mount, which nsd
                                     * makes a mount of its own with a peer group of its own */
} SharePropagation;

/* [Share NAME]: a directory whose mounts travel between its members' namespaces only. */
typedef struct Share {
        char *name;
        char *path;                   /* Path=: absolute, normalized, no specifier */
        char **users;                 /* Users=: names and uids, NULL-terminated, or NULL */
        char **groups;                /* Groups=: group names and gids, or NULL (one of the
                                       * two is required: no share has everybody in it) */
        SharePropagation propagation; /* Propagation=members|host|both */
        unsigned max_members;         /* MaxMembers=: live namespaces that get it */
        unsigned max_mounts_per_user; /* MaxMountsPerUser=: FUSE mounts of one uid under it */
        char *file;
        unsigned line;
} Share;

/* What kind of file system a volume's Type= is (its row of setup-conf.c's table). */
typedef enum VolumeKind {
        VOLUME_KIND_BLOCK,   /* ext4, xfs, ...: Source= a block device or a root-owned image,
                              * which nsd attaches to a loop device */
        VOLUME_KIND_NETWORK, /* cifs, nfs, nfs4: Source= what the kernel type takes */
        VOLUME_KIND_FUSE,    /* sshfs: run as the user by the user's service manager inside
                              * the namespace (nsd-volume@.service, nsctl run-volume); nsd
                              * mounts nothing of it */
} VolumeKind;

/* When a volume is mounted (Start=). */
typedef enum VolumeStart {
        VOLUME_START_NAMESPACE, /* when the namespace is made, as the rest of the setup (kernel
                                 * types' default; not for FUSE types) */
        VOLUME_START_LOGIN,     /* when the user's service manager starts, at the first login
                                 * (FUSE types' default; a kernel type: nsctl start-volumes
                                 * asks nsd, VOLUME_START) */
        VOLUME_START_REQUEST,   /* when the user asks (nsctl start NAME) */
} VolumeStart;

/* When a kernel volume is unmounted (Release=). */
typedef enum VolumeReleaseAt {
        VOLUME_RELEASE_AT_NAMESPACE,    /* with the namespace, when it is released (default) */
        VOLUME_RELEASE_AT_LAST_SESSION, /* once the user has no session and no process is left
                                         * in the namespace, which may stay (a block volume
                                         * with Start=login or Start=request) */
} VolumeReleaseAt;

/* Where a password-taking volume's password comes from (Key=). */
typedef enum VolumeKey {
        VOLUME_KEY_LOGIN, /* the login password (pam_nsjoin), or nsctl unlock (the default) */
        VOLUME_KEY_ASK,   /* only nsctl unlock: the login password is never handed to it */
} VolumeKey;

/* [Volume NAME]: a file system nsd mounts inside the namespaces of its members (issue 25's
 * first part: kernel types only, mounted with the namespace). */
typedef enum VolumeOnFailure {
        VOLUME_ON_FAILURE_SETUP,    /* as [Setup] OnFailure= (the default) */
        VOLUME_ON_FAILURE_REFUSE,   /* its failure refuses the namespace */
        VOLUME_ON_FAILURE_CONTINUE, /* the namespace is handed out without it */
} VolumeOnFailure;

typedef struct Volume {
        char *name;
        char *type;           /* Type=: a row of the table ("ext4", "nfs4") */
        VolumeKind kind;      /* the type's */
        char *source;         /* Source=: a template (%u %U): an image, a device, a share */
        char *where;          /* Where=: a template as a polydir's Path= */
        MountOption *options; /* Options= besides the attributes, each in the type's list */
        size_t n_options;
        char *options_text; /* Options= as written: checked against Type= once all is read */
        unsigned source_line, options_line;
        uint64_t mount_attr; /* MOUNT_ATTR_* from Options= (ro, noexec, ...); nosuid,nodev are
                              * added to every mount */
        char **users;        /* Users=, Groups=: as a share's (one of them is required) */
        char **groups;
        VolumeStart start;       /* Start=, or the kind's when not given */
        bool start_set;          /* Start= was given */
        VolumeReleaseAt release; /* Release= */
        unsigned release_line;
        VolumeKey key; /* Key=: only for a type that takes a password */
        bool key_set;  /* Key= was given */
        unsigned key_line;
        /* KeyFile=: a template (%u %U): the file, root's and closed to others, whose bytes are
         * the password, read for each TAKE of the volume (instead of Key=: never the login
         * password nor nsctl unlock's); NULL: none */
        char *key_file;
        unsigned key_file_line;
        VolumeOnFailure on_failure; /* OnFailure= */
        char *file;
        unsigned line;
} Volume;

typedef struct SetupConf {
        Polydir *polydirs; /* in the order they were read */
        size_t n_polydirs;
        BindReadOnly *binds;
        size_t n_binds;
        Share *shares; /* [Share NAME], in the order read */
        size_t n_shares;
        Volume *volumes; /* [Volume NAME], in the order read */
        size_t n_volumes;
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
 * "BindReadOnly NAME", "Share NAME" (a share's NAME names a directory: no '@'), "Volume
 * NAME". For a named
 * group with a bad NAME, *ret_why says why (static). */
const char *const *setup_conf_group_keys(const char *group, const char **ret_why);
/* Named groups are objects: one definition in all the files together. */
bool setup_conf_group_is_object(const char *group);

/* conf.c's parse, for each group line (key NULL) and Key=Value of a setup group, in the
 * order read. -EINVAL with *ret_why (g_malloc()ed, without FILE:LINE) for a bad value. */
int setup_conf_set(SetupConf *s, const char *group, const char *key, const char *value,
                   const char *file, unsigned line, char **ret_why);
/* After every file: missing keys, the same path twice, PrivateTmp= (private_tmp: adds a
 * tmpfs polydir on /tmp, or an error when one exists already, at private_tmp_file:line); a
 * share without Path= or without Users= and Groups=, or whose path is, is under or is above
 * another share's, a polydir's (those without a specifier: %h/... is not compared) or a
 * read-only bind's target; a volume without Type=, Source=, Where= or members, two on one
 * Where=, or one whose Where= (without a specifier) is, is under or is above a share's path
 * (a mount there would travel to the share's other members). -EINVAL with *ret_error
 * "FILE:LINE: what". */
int setup_conf_finish(SetupConf *s, bool private_tmp, const char *private_tmp_file,
                      unsigned private_tmp_line, char **ret_error);

/* The generation of a setup: a digest of everything that makes a namespace's contents
 * (polydirs, binds, init scripts, shares but their MaxMembers=, volumes, and propagation), not of
 * timeouts or OnFailure=. 16 hex
 * digits into buf (size >= 17). Equal setups give equal generations. */
const char *setup_conf_generation(const SetupConf *s, bool propagation_private, char *buf,
                                  size_t size);

/* "polydir 'tmp' (/etc/nsd/nsd.conf:12)" for messages; returns buf. */
const char *polydir_describe(const Polydir *p, char *buf, size_t size);

/* Is there anything to set up at all (a polydir, a bind, a share or a volume)? */
bool setup_conf_is_empty(const SetupConf *s);
/* Does the setup need to know who the user is beyond the uid: a specifier (%u %h %g) in a
 * polydir's path, a Method=user polydir (its instance is named after the user), a user name
 * in OnlyUsers= or ExcludeUsers=, an init script (its arguments name the user), or a share
 * or a volume (its membership needs the user's name and groups)? When not, nsd sets the namespace up
 * without asking the user database. */
bool setup_conf_needs_identity(const SetupConf *s);

/* Is this user a member of the share: the name or uid in Users=, or a group of the user
 * (primary or supplementary, by name or gid) in Groups=? group_names are the names of gids
 * (n of both; an entry NULL when the group has no name). */
bool share_has_member(const Share *s, const char *user_name, uid_t uid, const gid_t *gids,
                      const char *const *group_names, size_t n);
const char *share_propagation_to_string(SharePropagation p);
/* The name of the share's anchor in nsd's pin namespace: NAME@ and 12 hex digits of a digest
 * of Path= and Propagation=, so that a share whose path or propagation changed gets an anchor
 * (a peer group) of its own, and the namespaces made before keep the old one. buf: at least
 * SHARE_ANCHOR_NAME_MAX bytes; returns buf. */
#define SHARE_ANCHOR_NAME_MAX (SETUP_NAME_MAX + 14)
const char *share_anchor_name(const Share *s, char *buf, size_t size);
/* "share 'lab' (/etc/nsd/nsd.conf:12)" for messages; returns buf. */
const char *share_describe(const Share *s, char *buf, size_t size);

/* Is this user a member of the volume: Users= and Groups= as share_has_member(). */
bool volume_has_member(const Volume *v, const char *user_name, uid_t uid, const gid_t *gids,
                       const char *const *group_names, size_t n);
/* Does a failure of this volume refuse the namespace (its OnFailure=, else [Setup]'s)? */
bool volume_failure_refuses(const SetupConf *s, const Volume *v);
/* Options= of a volume as one -o argument of a FUSE program: "nosuid,nodev", the mount
 * attributes by name, then the type's own options (key=value), comma-separated; g_free(). */
char *volume_options_text(const Volume *v);
/* "volume 'vault' (/etc/nsd/nsd.conf.d/60-vault.conf:1)" for messages; returns buf. */
const char *volume_describe(const Volume *v, char *buf, size_t size);

/* How path stands to other (both normalized, without a trailing '/'): "is", "is under" or
 * "is above" for a message, NULL when neither holds the other. */
const char *setup_path_overlap(const char *path, const char *other);

/* Does MountOptions= set the file system option key ("mode", "uid")? */
bool polydir_has_option(const Polydir *p, const char *key);

/* Does a polydir apply to this user (OnlyUsers=, ExcludeUsers=, by name or uid)? */
bool polydir_applies(const Polydir *p, const char *user_name, uid_t uid);
