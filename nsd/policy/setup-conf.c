/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * setup-conf.c: [Setup], [Polydir NAME], [BindReadOnly NAME], [Share NAME] and [Volume NAME]
 * of nsd.conf, see setup-conf.h. The value syntax (booleans, seconds, user lists) is conf.c's.
 */
#include "policy/setup-conf.h"

#include <errno.h>
#include <glib.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

#include "policy/conf-value.h"
#include "volume-options.h"

#define GROUP_SETUP "Setup"

static const char *const setup_keys[] = { "InitScript", "TimeoutSec", "OnFailure", NULL };
static const char *const polydir_keys[] = {
        "Path",      "Method",       "InstancePrefix", "MountOptions", "Mode",
        "OnlyUsers", "ExcludeUsers", "InitScript",     "NoInit",       NULL,
};
static const char *const bind_keys[] = { "Source", "Target", NULL };
static const char *const share_keys[] = { "Path",        "Users",      "Groups",
                                          "Propagation", "MaxMembers", "MaxMountsPerUser",
                                          NULL };
static const char *const volume_keys[] = { "Type",  "Source",  "Where",   "Options",
                                           "Users", "Groups",  "Start",   "OnFailure",
                                           "Key",   "KeyFile", "Release", NULL };

static const char *const polydir_method_names[] = {
        [POLYDIR_METHOD_USER] = "user",
        [POLYDIR_METHOD_TMPFS] = "tmpfs",
};
static const char *const share_propagation_names[] = {
        [SHARE_PROPAGATION_MEMBERS] = "members",
        [SHARE_PROPAGATION_HOST] = "host",
        [SHARE_PROPAGATION_BOTH] = "both",
        [SHARE_PROPAGATION_PER_USER] = "per-user",
};

static const char *const volume_start_names[] = {
        [VOLUME_START_NAMESPACE] = "namespace",
        [VOLUME_START_LOGIN] = "login",
        [VOLUME_START_REQUEST] = "request",
};
static const char *const volume_release_names[] = {
        [VOLUME_RELEASE_AT_NAMESPACE] = "namespace",
        [VOLUME_RELEASE_AT_LAST_SESSION] = "last-session",
};
static const char *const volume_key_names[] = {
        [VOLUME_KEY_LOGIN] = "login",
        [VOLUME_KEY_ASK] = "ask",
};
/* OnFailure=: 1 continue, 0 refuse */
static const char *const on_failure_names[] = { "refuse", "continue" };

/* A key whose value is one of the n names (NULL ones are holes): its index, or -EINVAL with
 * *ret_why saying what was expected. */
static int parse_name(const char *const *names, size_t n, const char *key, const char *value,
                      const char *expected, char **ret_why) {
        int r = config_parse_word(value, names, n);

        if (r >= 0)
                return r;
        *ret_why = g_strdup_printf("%s=%s: expected %s", key, value, expected);
        return -EINVAL;
}

static int parse_on_failure(const char *value, char **ret_why) {
        return parse_name(on_failure_names, G_N_ELEMENTS(on_failure_names), "OnFailure", value,
                          "'refuse' or 'continue'", ret_why);
}

/* ---- life cycle ------------------------------------------------------------------------ */

void setup_conf_init(SetupConf *ret) {
        *ret = (SetupConf) { .timeout_usec = SETUP_TIMEOUT_USEC_DEFAULT };
}

static void options_free(MountOption *o, size_t n) {
        for (size_t i = 0; i < n; i++) {
                g_free(o[i].key);
                g_free(o[i].value);
        }
        g_free(o);
}

static MountOption *options_copy(const MountOption *o, size_t n) {
        MountOption *c = g_new0(MountOption, n);

        for (size_t i = 0; i < n; i++) {
                c[i].key = g_strdup(o[i].key);
                c[i].value = g_strdup(o[i].value);
        }
        return c;
}

/* What an object owns (its strings, string lists and option arrays), each once: done and copy
 * both walk this, so a field is freed and copied alike. */
typedef enum OwnedType { OWNED_STRING, OWNED_STRV, OWNED_OPTIONS } OwnedType;

typedef struct Owned {
        OwnedType type;
        size_t offset;       /* of the pointer in the object */
        size_t count_offset; /* OWNED_OPTIONS: of how many there are */
} Owned;

#define STRING(t, f) \
        { OWNED_STRING, offsetof(t, f), 0 }
#define STRV(t, f) \
        { OWNED_STRV, offsetof(t, f), 0 }
#define OPTIONS(t, f, n) \
        { OWNED_OPTIONS, offsetof(t, f), offsetof(t, n) }
static const Owned polydir_owned[] = { STRING(Polydir, name),
                                       STRING(Polydir, path),
                                       STRING(Polydir, instance_prefix),
                                       OPTIONS(Polydir, options, n_options),
                                       STRV(Polydir, only_users),
                                       STRV(Polydir, exclude_users),
                                       STRING(Polydir, init_script),
                                       STRING(Polydir, file) };
static const Owned bind_owned[] = { STRING(BindReadOnly, name), STRING(BindReadOnly, source),
                                    STRING(BindReadOnly, target), STRING(BindReadOnly, file) };
static const Owned share_owned[] = { STRING(Share, name), STRING(Share, path), STRV(Share, users),
                                     STRV(Share, groups), STRING(Share, file) };
static const Owned volume_owned[] = { STRING(Volume, name),
                                      STRING(Volume, type),
                                      STRING(Volume, source),
                                      STRING(Volume, where),
                                      OPTIONS(Volume, options, n_options),
                                      STRING(Volume, options_text),
                                      STRING(Volume, key_file),
                                      STRV(Volume, users),
                                      STRV(Volume, groups),
                                      STRING(Volume, file) };
#undef STRING
#undef STRV
#undef OPTIONS

static void *owned_field(void *object, size_t offset) {
        return (char *) object + offset;
}

static void owned_done(const Owned *owned, size_t n, void *object) {
        for (size_t i = 0; i < n; i++) {
                void *f = owned_field(object, owned[i].offset);

                switch (owned[i].type) {
                case OWNED_STRING:
                        g_free(*(char **) f);
                        break;
                case OWNED_STRV:
                        g_strfreev(*(char ***) f);
                        break;
                case OWNED_OPTIONS:
                        options_free(*(MountOption **) f,
                                     *(size_t *) owned_field(object, owned[i].count_offset));
                        break;
                }
        }
}

/* to: a copy of from's bytes; what it owns made its own */
static void owned_copy(const Owned *owned, size_t n, void *to) {
        for (size_t i = 0; i < n; i++) {
                void *f = owned_field(to, owned[i].offset);

                switch (owned[i].type) {
                case OWNED_STRING:
                        *(char **) f = g_strdup(*(char **) f);
                        break;
                case OWNED_STRV:
                        *(char ***) f = g_strdupv(*(char ***) f);
                        break;
                case OWNED_OPTIONS:
                        *(MountOption **) f =
                                options_copy(*(MountOption **) f,
                                             *(size_t *) owned_field(to, owned[i].count_offset));
                        break;
                }
        }
}

static void polydir_init(void *object, const char *name, const char *file, unsigned line) {
        *(Polydir *) object = (Polydir) {
                .name = g_strdup(name), .mode = -1, .file = g_strdup(file), .line = line
        };
}

static void bind_init(void *object, const char *name, const char *file, unsigned line) {
        *(BindReadOnly *) object = (BindReadOnly) { .name = g_strdup(name),
                                                    .file = g_strdup(file),
                                                    .line = line };
}

static void share_init(void *object, const char *name, const char *file, unsigned line) {
        *(Share *) object = (Share) {
                .name = g_strdup(name),
                .propagation = SHARE_PROPAGATION_MEMBERS,
                .max_members = SHARE_MAX_MEMBERS_DEFAULT,
                .max_mounts_per_user = SHARE_MAX_MOUNTS_PER_USER_DEFAULT,
                .file = g_strdup(file),
                .line = line,
        };
}

static void volume_init(void *object, const char *name, const char *file, unsigned line) {
        *(Volume *) object = (Volume) {
                .name = g_strdup(name),
                .start = VOLUME_START_NAMESPACE,
                .file = g_strdup(file),
                .line = line,
        };
}

/* ---- groups ---------------------------------------------------------------------------- */

/* NAME of [Polydir NAME]: letters, digits, '_', '-', '.', '@' (and of [Share NAME], which nsd
 * names a directory after, the same but '@'); not starting with '.'. */
static bool valid_object_name(const char *s, const char *extra) {
        size_t n = strlen(s);

        if (n == 0 || n > SETUP_NAME_MAX || s[0] == '.')
                return false;
        for (const char *p = s; *p; p++)
                if (!g_ascii_isalnum(*p) && !strchr(extra, *p))
                        return false;
        return true;
}

/* ---- values ---------------------------------------------------------------------------- */

enum {
        TEMPLATE_SPECIFIERS = 1 << 0, /* %u %U %g %h(at the start) %% */
        TEMPLATE_PREFIX = 1 << 1,     /* InstancePrefix=: the user name is appended */
        TEMPLATE_USER_IDS = 1 << 2,   /* a volume's Source= and KeyFile=: only %u %U %% (not
                                       * %h: a file in the user's home is the user's to craft) */
};

/* A path template: absolute (or "%h..." with TEMPLATE_SPECIFIERS), no empty, "." or ".."
 * component, no trailing '/' (but see TEMPLATE_PREFIX), no control character. */
static char *template_why(const char *t, unsigned flags) {
        g_autofree char *whole = NULL;
        const char *p;

        if (*t == '\0')
                return g_strdup("empty path");
        if (strlen(t) > SETUP_PATH_MAX)
                return g_strdup_printf("longer than %d bytes", SETUP_PATH_MAX);
        for (p = t; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return g_strdup("contains a control character");
        if ((flags & TEMPLATE_PREFIX)) {
                /* the instance is prefix + user name: check that whole */
                whole = g_strconcat(t, "%u", NULL);
                t = whole;
        }
        if (t[0] != '/' && !((flags & TEMPLATE_SPECIFIERS) && g_str_has_prefix(t, "%h") &&
                             (t[2] == '\0' || t[2] == '/')))
                return g_strdup((flags & TEMPLATE_SPECIFIERS)
                                        ? "not an absolute path (nor one starting with %h/)"
                                        : "not an absolute path");
        for (p = t; *p; p++) {
                if (*p != '%')
                        continue;
                if (!(flags & (TEMPLATE_SPECIFIERS | TEMPLATE_USER_IDS)))
                        return g_strdup("'%' here takes no specifiers (write the path as it is, "
                                        "without '%')");
                p++;
                if ((flags & TEMPLATE_USER_IDS) && *p && !strchr("uU%", *p))
                        return g_strdup_printf(
                                "'%%%c': only %%u (user name), %%U (uid) and %%%% may be used "
                                "here%s",
                                g_ascii_isprint(*p) ? *p : '?',
                                *p == 'h' ? " (not %h: what lies in the user's home is the "
                                            "user's to craft, an image a file system waiting "
                                            "for the kernel, a key file another user's)"
                                          : "");
                if (*p == 'h' && p - 1 != t)
                        return g_strdup("%h (the home directory) may only start the path");
                if (*p == '\0')
                        return g_strdup("ends in a lone '%' (write %% for a '%')");
                if (!strchr("uUgh%", *p))
                        return g_strdup_printf("unknown specifier '%%%c' (known: %%u user name, "
                                               "%%U uid, %%h home, %%g group, %%%% a '%%')",
                                               g_ascii_isprint(*p) ? *p : '?');
        }
        /* components, from after the leading "/" or "%h" */
        p = t[0] == '/' ? t : t + 2;
        if (strcmp(t, "/") == 0)
                return g_strdup("'/' itself cannot be one");
        while (*p == '/') {
                const char *c = p + 1, *end = strchr(c, '/');
                size_t n = end ? (size_t) (end - c) : strlen(c);

                if (n == 0)
                        return g_strdup(end ? "contains '//'" : "ends in '/'");
                if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return g_strdup("contains a '.' or '..' component");
                p = c + n;
        }
        return NULL;
}

static int set_template(char **field, const char *value, unsigned flags, const char *key,
                        char **ret_why) {
        g_autofree char *why = template_why(value, flags);

        if (why) {
                *ret_why = g_strdup_printf("%s=%s: %s", key, value, why);
                return -EINVAL;
        }
        g_free(*field);
        *field = g_strdup(value);
        return 0;
}

/* MountOptions= */
typedef struct AttrOption {
        const char *name;
        uint64_t set;
        uint64_t mask;
} AttrOption;

static const AttrOption attr_options[] = {
        { "ro", MOUNT_ATTR_RDONLY, MOUNT_ATTR_RDONLY },
        { "rw", 0, MOUNT_ATTR_RDONLY },
        { "noexec", MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOEXEC },
        { "exec", 0, MOUNT_ATTR_NOEXEC },
        { "nosuid", MOUNT_ATTR_NOSUID, MOUNT_ATTR_NOSUID },
        { "nodev", MOUNT_ATTR_NODEV, MOUNT_ATTR_NODEV },
        { "noatime", MOUNT_ATTR_NOATIME, MOUNT_ATTR__ATIME },
        { "relatime", MOUNT_ATTR_RELATIME, MOUNT_ATTR__ATIME },
        { "strictatime", MOUNT_ATTR_STRICTATIME, MOUNT_ATTR__ATIME },
        { "nodiratime", MOUNT_ATTR_NODIRATIME, MOUNT_ATTR_NODIRATIME },
        { "nosymfollow", MOUNT_ATTR_NOSYMFOLLOW, MOUNT_ATTR_NOSYMFOLLOW },
};

char *volume_options_text(const Volume *v) {
        GString *s = g_string_new("nosuid,nodev");

        for (size_t i = 0; i < G_N_ELEMENTS(attr_options); i++) {
                const AttrOption *a = &attr_options[i];

                if (a->set != 0 && (v->mount_attr & a->mask) == a->set &&
                    !(a->set & (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)))
                        g_string_append_printf(s, ",%s", a->name);
        }
        for (size_t i = 0; i < v->n_options; i++)
                g_string_append_printf(s, ",%s%s%s", v->options[i].key,
                                       v->options[i].value ? "=" : "",
                                       v->options[i].value ? v->options[i].value : "");
        return g_string_free(s, FALSE);
}

/* tmpfs(5)'s options that take a value, and those that do not */
static const char *const tmpfs_value_options[] = { "size", "nr_blocks", "nr_inodes", "mode", "uid",
                                                   "gid",  "huge",      "mpol",      NULL };
static const char *const tmpfs_flag_options[] = { "inode32", "inode64", "noswap", NULL };

/* Options= of a key (MountOptions=, Options=): the attributes above, and the file system's
 * own options, each by name: value_options take key=VALUE, flag_options no value. suid and
 * dev are refused. The attributes go to *ret_attr, the rest to *ret_options. */
static int parse_options(const char *key_name, const char *value, const char *const *value_options,
                         const char *const *flag_options, MountOption **ret_options, size_t *ret_n,
                         uint64_t *ret_attr, char **ret_why) {
        g_auto(GStrv) words = g_strsplit(value, ",", -1);
        g_autoptr(GArray) opts = g_array_new(FALSE, TRUE, sizeof(MountOption));
        uint64_t attr = 0;

        for (char **w = words; *w; w++) {
                g_autofree char *key = NULL;
                const char *eq = strchr(*w, '='), *v = eq ? eq + 1 : NULL;
                bool done = false;

                if (**w == '\0')
                        continue;
                key = eq ? g_strndup(*w, eq - *w) : g_strdup(*w);
                if (strcmp(key, "suid") == 0 || strcmp(key, "dev") == 0) {
                        *ret_why = g_strdup_printf("%s=%s: '%s' is refused: every "
                                                   "mount nsd makes is nosuid,nodev",
                                                   key_name, value, key);
                        goto fail;
                }
                for (size_t i = 0; i < G_N_ELEMENTS(attr_options) && !done; i++)
                        if (strcmp(key, attr_options[i].name) == 0) {
                                if (v) {
                                        *ret_why = g_strdup_printf("%s=%s: '%s' takes "
                                                                   "no value",
                                                                   key_name, value, key);
                                        goto fail;
                                }
                                attr = (attr & ~attr_options[i].mask) | attr_options[i].set;
                                done = true;
                        }
                if (done)
                        continue;
                if (value_options && g_strv_contains(value_options, key)) {
                        if (!v || *v == '\0') {
                                *ret_why = g_strdup_printf("%s=%s: '%s' needs a value "
                                                           "(%s=...)",
                                                           key_name, value, key, key);
                                goto fail;
                        }
                } else if (flag_options && g_strv_contains(flag_options, key)) {
                        if (v) {
                                *ret_why = g_strdup_printf("%s=%s: '%s' takes no "
                                                           "value",
                                                           key_name, value, key);
                                goto fail;
                        }
                } else {
                        g_autoptr(GString) known = g_string_new(NULL);

                        for (const char *const *o = value_options; o && *o; o++)
                                g_string_append_printf(known, "%s=, ", *o);
                        for (const char *const *o = flag_options; o && *o; o++)
                                g_string_append_printf(known, "%s, ", *o);
                        for (size_t i = 0; i < G_N_ELEMENTS(attr_options); i++)
                                g_string_append_printf(known, "%s%s", attr_options[i].name,
                                                       i + 1 < G_N_ELEMENTS(attr_options) ? ", "
                                                                                          : "");
                        *ret_why = g_strdup_printf("%s=%s: unknown option '%s' (known: %s)",
                                                   key_name, value, key, known->str);
                        goto fail;
                }
                if (opts->len >= SETUP_MAX_MOUNT_OPTIONS) {
                        *ret_why = g_strdup_printf("%s=%s: more than %d options", key_name, value,
                                                   SETUP_MAX_MOUNT_OPTIONS);
                        goto fail;
                }
                MountOption o = { .key = g_steal_pointer(&key), .value = g_strdup(v) };
                g_array_append_val(opts, o);
        }
        options_free(*ret_options, *ret_n);
        *ret_n = opts->len;
        *ret_options = (MountOption *) (void *) g_array_free(g_steal_pointer(&opts), FALSE);
        *ret_attr = attr;
        return 0;
fail:
        for (guint i = 0; i < opts->len; i++) {
                g_free(g_array_index(opts, MountOption, i).key);
                g_free(g_array_index(opts, MountOption, i).value);
        }
        return -EINVAL;
}

static int parse_mount_options(Polydir *p, const char *value, char **ret_why) {
        return parse_options("MountOptions", value, tmpfs_value_options, tmpfs_flag_options,
                             &p->options, &p->n_options, &p->mount_attr, ret_why);
}

/* ---- volume types: common/volume-options.c ----------------------------------------------- */

static VolumeKind volume_kind(const VolumeTypeOptions *t) {
        return t->fuse ? VOLUME_KIND_FUSE : t->network ? VOLUME_KIND_NETWORK : VOLUME_KIND_BLOCK;
}

/* A volume's Source= for a network type: what the kernel type takes ("//server/share",
 * "server:/path"), user ids as specifiers; no white space, no control character. */
static char *network_source_why(const char *t) {
        if (*t == '\0')
                return g_strdup("empty");
        if (strlen(t) > SETUP_PATH_MAX)
                return g_strdup_printf("longer than %d bytes", SETUP_PATH_MAX);
        for (const char *p = t; *p; p++) {
                if ((unsigned char) *p <= 0x20 || *p == 0x7f)
                        return g_strdup("contains white space or a control character");
                if (*p != '%')
                        continue;
                p++;
                if (!*p || !strchr("uU%", *p))
                        return g_strdup("only %u (user name), %U (uid) and %% may be used here");
        }
        return NULL;
}

bool polydir_has_option(const Polydir *p, const char *key) {
        for (size_t i = 0; i < p->n_options; i++)
                if (strcmp(p->options[i].key, key) == 0)
                        return true;
        return false;
}

/* A list of user (or, !users, group) names and numbers, no @regular, in place of *field;
 * empty: an empty list. */
static int set_names(char ***field, const char *key, const char *value, bool users,
                     char **ret_why) {
        char **list = NULL;
        g_autofree char *bad = NULL;

        if (config_parse_names(value, false, &list, &bad) < 0) {
                *ret_why = g_strdup_printf("%s=%s: '%s' is not a %s name or %s", key, value, bad,
                                           users ? "user" : "group", users ? "uid" : "gid");
                return -EINVAL;
        }
        g_strfreev(*field);
        *field = list;
        return 0;
}

/* Users= or Groups= of a share or a volume: Polydir's OnlyUsers= syntax; empty: not set. */
static int set_members(char ***field, const char *key, const char *value, char **ret_why) {
        int r = set_names(field, key, value, strcmp(key, "Users") == 0, ret_why);

        if (r < 0)
                return r;
        if (!(*field)[0])
                g_clear_pointer(field, g_strfreev);
        return 0;
}

/* Type=: a row of the table; what is planned but not in this version is named so. */
static int set_volume_type(Volume *v, const char *value, char **ret_why) {
        const VolumeTypeOptions *t = volume_type_options_find(value);
        g_autoptr(GString) known = g_string_new(NULL);

        if (t) {
                g_free(v->type);
                v->type = g_strdup(t->name);
                v->kind = volume_kind(t);
                return 0;
        }
        for (size_t i = 0; i < n_volume_type_options; i++)
                g_string_append_printf(known, "%s%s", i ? ", " : "", volume_type_options[i].name);
        if (g_strv_contains(volume_types_later_fuse, value) || g_str_has_prefix(value, "fuse."))
                *ret_why = g_strdup_printf("Type=%s: FUSE volumes ('%s') are not supported yet "
                                           "(this version mounts kernel file systems: %s)",
                                           value, value, known->str);
        else if (g_strv_contains(volume_types_later_luks, value))
                *ret_why = g_strdup_printf("Type=%s: LUKS volumes ('%s') are not supported yet "
                                           "(this version mounts kernel file systems: %s)",
                                           value, value, known->str);
        else
                *ret_why = g_strdup_printf("Type=%s: unknown type (known: %s)", value, known->str);
        return -EINVAL;
}

/* Does t hold the specifier %h ("%%h" is a '%' and an 'h')? */
static bool has_home_specifier(const char *t) {
        for (const char *p = t; *p; p++)
                if (*p == '%') {
                        if (p[1] == 'h')
                                return true;
                        if (p[1] == '\0')
                                break;
                        p++;
                }
        return false;
}

/* Source= of a volume of kind k (checked once Type= is known: keys may come in any order). */
static char *volume_source_why(const Volume *v) {
        const VolumeTypeOptions *t = volume_type_options_find(v->type);
        const VolumeKind k = v->kind;
        const char *value = v->source;
        g_autofree char *why = NULL;

        if (k == VOLUME_KIND_NETWORK)
                why = network_source_why(value);
        else if (k == VOLUME_KIND_FUSE && t && t->local_source)
                /* a folder the user's program reads as the user (gocryptfs' cipher folder) */
                why = template_why(value, TEMPLATE_SPECIFIERS);
        else if (k == VOLUME_KIND_FUSE)
                /* the FUSE program's argument after "--"; never one that reads as an option */
                why = value[0] == '-' ? g_strdup("must not start with '-'")
                                      : network_source_why(value);
        else if (has_home_specifier(value))
                why = g_strdup("%h is not allowed: an image the user can write is a crafted file "
                               "system waiting for the kernel (give an image of root's, e.g. "
                               "/srv/volumes/%u.img)");
        else
                why = template_why(value, TEMPLATE_USER_IDS);
        return why ? g_strdup_printf("Source=%s: %s", value, why) : NULL;
}

/* In the *_set() functions below, whose key, value and ret_why they use: is it key name? */
#define KEY(name) (strcmp(key, name) == 0)
/* ... and key=value, one of names (an array), into the enum field: 0, or -EINVAL with *ret_why
 * saying what was expected (field unchanged). */
#define SET_NAME(field, names, expected)                                                        \
        ({                                                                                      \
                int r_ = parse_name(names, G_N_ELEMENTS(names), key, value, expected, ret_why); \
                                                                                                \
                if (r_ >= 0)                                                                    \
                        (field) = r_;                                                           \
                r_ < 0 ? r_ : 0;                                                                \
        })

static int volume_set(void *object, const char *key, const char *value, unsigned line,
                      char **ret_why) {
        Volume *v = object;
        int r;

        if (KEY("Type"))
                return set_volume_type(v, value, ret_why);
        if (KEY("Source")) {
                /* what both kinds refuse: empty, a control character (the rest once Type=
                 * is known) */
                for (const char *p = value; *p; p++)
                        if ((unsigned char) *p < 0x20 || *p == 0x7f) {
                                *ret_why = g_strdup_printf("Source=%s: contains a control "
                                                           "character",
                                                           value);
                                return -EINVAL;
                        }
                if (!*value) {
                        *ret_why = g_strdup("Source=: empty");
                        return -EINVAL;
                }
                g_free(v->source);
                v->source = g_strdup(value);
                v->source_line = line;
                return 0;
        }
        if (KEY("Where"))
                return set_template(&v->where, value, TEMPLATE_SPECIFIERS, key, ret_why);
        if (KEY("Options")) {
                g_free(v->options_text);
                v->options_text = g_strdup(value);
                v->options_line = line;
                return 0;
        }
        if (KEY("Users") || KEY("Groups"))
                return set_members(KEY("Users") ? &v->users : &v->groups, key, value, ret_why);
        if (KEY("OnFailure")) {
                r = parse_on_failure(value, ret_why);
                if (r < 0)
                        return r;
                v->on_failure = r ? VOLUME_ON_FAILURE_CONTINUE : VOLUME_ON_FAILURE_REFUSE;
                return 0;
        }
        if (KEY("Start")) {
                r = SET_NAME(v->start, volume_start_names, "'namespace', 'login' or 'request'");
                if (r < 0)
                        return r;
                v->start_set = true;
                return 0;
        }
        if (KEY("Release")) {
                r = SET_NAME(v->release, volume_release_names, "'namespace' or 'last-session'");
                if (r < 0)
                        return r;
                v->release_line = line;
                return 0;
        }
        if (KEY("Key")) {
                r = SET_NAME(v->key, volume_key_names,
                             "'login' (the login password, or nsctl unlock) or 'ask' (only nsctl "
                             "unlock); for a key file, KeyFile= instead");
                if (r < 0)
                        return r;
                v->key_set = true;
                v->key_line = line;
                return 0;
        }
        if (KEY("KeyFile")) {
                r = set_template(&v->key_file, value, TEMPLATE_USER_IDS, key, ret_why);
                if (r < 0)
                        return r;
                v->key_file_line = line;
                return 0;
        }
        g_assert_not_reached();
}

/* A number from 1 to max (MaxMembers=, MaxMountsPerUser=). */
static int set_count(unsigned *field, const char *key, const char *value, unsigned max,
                     char **ret_why) {
        unsigned long long v;

        if (config_parse_uint(value, 1, max, &v) < 0) {
                *ret_why = g_strdup_printf("%s=%s: expected a number from 1 to %u", key, value,
                                           max);
                return -EINVAL;
        }
        *field = (unsigned) v;
        return 0;
}

static int share_set(void *object, const char *key, const char *value, unsigned line,
                     char **ret_why) {
        Share *sh = object;

        if (KEY("Path"))
                /* no specifier: one directory for every member */
                return set_template(&sh->path, value, 0, key, ret_why);
        if (KEY("Users") || KEY("Groups"))
                return set_members(KEY("Users") ? &sh->users : &sh->groups, key, value, ret_why);
        if (KEY("Propagation"))
                return SET_NAME(sh->propagation, share_propagation_names,
                                "'members', 'host', 'both' or 'per-user'");
        if (KEY("MaxMembers"))
                return set_count(&sh->max_members, key, value, SHARE_MAX_MEMBERS_LIMIT, ret_why);
        if (KEY("MaxMountsPerUser"))
                return set_count(&sh->max_mounts_per_user, key, value,
                                 SHARE_MAX_MOUNTS_PER_USER_LIMIT, ret_why);
        g_assert_not_reached();
}

static int polydir_set(void *object, const char *key, const char *value, unsigned line,
                       char **ret_why) {
        Polydir *p = object;
        bool b;

        if (KEY("Path"))
                return set_template(&p->path, value, TEMPLATE_SPECIFIERS, key, ret_why);
        if (KEY("InstancePrefix"))
                return set_template(&p->instance_prefix, value,
                                    TEMPLATE_SPECIFIERS | TEMPLATE_PREFIX, key, ret_why);
        if (KEY("InitScript"))
                return set_template(&p->init_script, value, 0, key, ret_why);
        if (KEY("Method"))
                return SET_NAME(p->method, polydir_method_names,
                                "'user' (a persistent instance directory) or 'tmpfs'");
        if (KEY("MountOptions"))
                return parse_mount_options(p, value, ret_why);
        if (KEY("Mode")) {
                char *end = NULL;
                unsigned long m = strtoul(value, &end, 8);

                if (!g_ascii_isdigit(value[0]) || *end != '\0' || m > 07777) {
                        *ret_why = g_strdup_printf("Mode=%s: expected an octal mode from 0 to "
                                                   "7777 (1777, 0700)",
                                                   value);
                        return -EINVAL;
                }
                p->mode = (int) m;
                return 0;
        }
        if (KEY("OnlyUsers") || KEY("ExcludeUsers")) /* empty: nobody, or nobody excluded */
                return set_names(KEY("OnlyUsers") ? &p->only_users : &p->exclude_users, key, value,
                                 true, ret_why);
        if (KEY("NoInit")) {
                if (config_parse_bool(value, &b) < 0) {
                        *ret_why = g_strdup_printf("NoInit=%s: expected yes or no", value);
                        return -EINVAL;
                }
                p->no_init = b;
                return 0;
        }
        g_assert_not_reached();
}
#undef SET_NAME
#undef KEY

static int bind_set(void *object, const char *key, const char *value, unsigned line,
                    char **ret_why) {
        BindReadOnly *b = object;

        return set_template(strcmp(key, "Source") == 0 ? &b->source : &b->target, value, 0, key,
                            ret_why);
}

/* ---- the kinds of group ---------------------------------------------------------------- */

/* A kind of [KIND NAME] group: its keys, where SetupConf keeps its objects (each with its
 * name first), and what is done to one. */
typedef struct ObjectKind {
        const char *kind; /* "Polydir" */
        const char *const *keys;
        const char *name_chars; /* what NAME may hold besides letters and digits */
        const char *name_rule;  /* what is said of a NAME that holds more */
        size_t size;            /* of one object */
        size_t array_offset;    /* of the objects in SetupConf */
        size_t count_offset;    /* of how many there are */
        unsigned max;
        void (*init)(void *object, const char *name, const char *file, unsigned line);
        const Owned *owned; /* what one object owns, n_owned entries */
        size_t n_owned;
        int (*set)(void *object, const char *key, const char *value, unsigned line, char **ret_why);
} ObjectKind;

#define NAME_RULE "a name is 1 to 64 letters, digits, '_', '-', '.' or '@', not starting with '.'"

#define OBJECT_KIND(type, fn, array, count, max_, chars, rule)                              \
        {                                                                                   \
                .kind = #type, .keys = fn##_keys, .name_chars = chars, .name_rule = rule,   \
                .size = sizeof(type), .array_offset = offsetof(SetupConf, array),           \
                .count_offset = offsetof(SetupConf, count), .max = max_, .init = fn##_init, \
                .owned = fn##_owned, .n_owned = G_N_ELEMENTS(fn##_owned), .set = fn##_set,  \
        }

static const ObjectKind object_kinds[] = {
        OBJECT_KIND(Polydir, polydir, polydirs, n_polydirs, SETUP_MAX_POLYDIRS, "_-.@", NAME_RULE),
        OBJECT_KIND(BindReadOnly, bind, binds, n_binds, SETUP_MAX_BINDS, "_-.@", NAME_RULE),
        /* nsd makes a directory named NAME: no '@' (nor '/', nor a leading '.') */
        OBJECT_KIND(Share, share, shares, n_shares, SETUP_MAX_SHARES, "_-.",
                    "a share's name is 1 to 64 letters, digits, '_', '-' or '.', not starting "
                    "with '.' (nsd names a directory after it)"),
        OBJECT_KIND(Volume, volume, volumes, n_volumes, SETUP_MAX_VOLUMES, "_-.@", NAME_RULE),
};

_Static_assert(offsetof(Polydir, name) == 0, "an object's name comes first");
_Static_assert(offsetof(BindReadOnly, name) == 0, "an object's name comes first");
_Static_assert(offsetof(Share, name) == 0, "an object's name comes first");
_Static_assert(offsetof(Volume, name) == 0, "an object's name comes first");

/* The kind of [KIND NAME] and NAME, or NULL. */
static const ObjectKind *object_kind(const char *group, const char **ret_name) {
        for (size_t i = 0; i < G_N_ELEMENTS(object_kinds); i++) {
                size_t n = strlen(object_kinds[i].kind);

                if (strncmp(group, object_kinds[i].kind, n) == 0 && group[n] == ' ') {
                        if (ret_name)
                                *ret_name = group + n + 1;
                        return &object_kinds[i];
                }
        }
        return NULL;
}

static char **kind_objects(SetupConf *s, const ObjectKind *k) {
        return (char **) (void *) ((char *) s + k->array_offset);
}

static size_t *kind_count(SetupConf *s, const ObjectKind *k) {
        return (size_t *) (void *) ((char *) s + k->count_offset);
}

static void *object_find(SetupConf *s, const ObjectKind *k, const char *name) {
        char *objects = *kind_objects(s, k);

        for (size_t i = 0; i < *kind_count(s, k); i++) {
                char *o = objects + i * k->size;

                if (strcmp(*(char **) (void *) o, name) == 0)
                        return o;
        }
        return NULL;
}

const char *const *setup_conf_group_keys(const char *group, const char **ret_why) {
        const char *name;
        const ObjectKind *k;

        if (strcmp(group, GROUP_SETUP) == 0)
                return setup_keys;
        k = object_kind(group, &name);
        if (!k)
                return NULL;
        if (!valid_object_name(name, k->name_chars)) {
                if (ret_why)
                        *ret_why = k->name_rule;
                return NULL;
        }
        return k->keys;
}

bool setup_conf_group_is_object(const char *group) {
        return object_kind(group, NULL);
}

/* A group line: a new object (conf.c refuses a second definition before calling this). */
static int begin_group(SetupConf *s, const char *group, const char *file, unsigned line,
                       char **ret_why) {
        const char *name;
        const ObjectKind *k = object_kind(group, &name);
        char **objects;
        size_t *n;

        if (!k || object_find(s, k, name))
                return 0;
        objects = kind_objects(s, k);
        n = kind_count(s, k);
        if (*n >= k->max) {
                *ret_why = g_strdup_printf("more than %u [%s] groups", k->max, k->kind);
                return -EINVAL;
        }
        *objects = g_realloc_n(*objects, *n + 1, k->size);
        k->init(*objects + *n * k->size, name, file, line);
        (*n)++;
        return 0;
}

void setup_conf_done(SetupConf *s) {
        if (!s)
                return;
        for (size_t i = 0; i < G_N_ELEMENTS(object_kinds); i++) {
                const ObjectKind *k = &object_kinds[i];
                char *objects = *kind_objects(s, k);

                for (size_t j = 0; j < *kind_count(s, k); j++)
                        owned_done(k->owned, k->n_owned, objects + j * k->size);
                g_free(objects);
        }
        g_free(s->init_script);
        g_free(s->init_script_file);
        memset(s, 0, sizeof *s);
}

void setup_conf_copy(SetupConf *dst, const SetupConf *src) {
        *dst = *src;
        for (size_t i = 0; i < G_N_ELEMENTS(object_kinds); i++) {
                const ObjectKind *k = &object_kinds[i];
                char **objects = kind_objects(dst, k);
                size_t n = *kind_count(dst, k);
                const char *from = *objects;

                *objects = g_memdup2(from, n * k->size);
                for (size_t j = 0; j < n; j++)
                        owned_copy(k->owned, k->n_owned, *objects + j * k->size);
        }
        dst->init_script = g_strdup(src->init_script);
        dst->init_script_file = g_strdup(src->init_script_file);
}

int setup_conf_set(SetupConf *s, const char *group, const char *key, const char *value,
                   const char *file, unsigned line, char **ret_why) {
        const ObjectKind *k;
        const char *name;
        void *object;

        if (!key)
                return begin_group(s, group, file, line, ret_why);

        if (strcmp(group, GROUP_SETUP) == 0) {
                if (strcmp(key, "InitScript") == 0) {
                        g_free(s->init_script_file);
                        s->init_script_file = g_strdup(file);
                        s->init_script_line = line;
                        return set_template(&s->init_script, value, 0, key, ret_why);
                }
                if (strcmp(key, "TimeoutSec") == 0) {
                        unsigned long long v;

                        if (config_parse_usec(value, 1000, 3600ULL * 1000000ULL, &v) < 0) {
                                *ret_why = g_strdup_printf("TimeoutSec=%s: expected seconds "
                                                           "(decimals allowed) between 0.001 "
                                                           "and 3600",
                                                           value);
                                return -EINVAL;
                        }
                        s->timeout_usec = v;
                        return 0;
                }
                if (strcmp(key, "OnFailure") == 0) {
                        int r = parse_on_failure(value, ret_why);

                        if (r < 0)
                                return r;
                        s->on_failure_continue = r;
                        return 0;
                }
                g_assert_not_reached();
        }
        k = object_kind(group, &name);
        g_assert(k);
        object = object_find(s, k, name);
        g_assert(object);
        return k->set(object, key, value, line, ret_why);
}

/* ---- the whole ------------------------------------------------------------------------- */

static int fail_at(char **ret_error, const char *file, unsigned line, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static int fail_at(char **ret_error, const char *file, unsigned line, const char *fmt, ...) {
        g_autofree char *what = NULL;
        va_list ap;

        va_start(ap, fmt);
        what = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        *ret_error = g_strdup_printf("%s:%u: %s", file, line, what);
        return -EINVAL;
}

static int check_polydir(const Polydir *p, char **ret_error) {
        if (!p->path)
                return fail_at(ret_error, p->file, p->line, "[Polydir %s] has no Path=", p->name);
        if (p->method == POLYDIR_METHOD_UNSET)
                return fail_at(ret_error, p->file, p->line,
                               "[Polydir %s] has no Method= (user or tmpfs)", p->name);
        if (p->method == POLYDIR_METHOD_USER && !p->instance_prefix)
                return fail_at(ret_error, p->file, p->line,
                               "[Polydir %s] Method=user needs InstancePrefix= (where the "
                               "instance directories are kept)",
                               p->name);
        if (p->method == POLYDIR_METHOD_TMPFS && p->instance_prefix)
                return fail_at(ret_error, p->file, p->line,
                               "[Polydir %s] InstancePrefix= is for Method=user; a tmpfs has no "
                               "instance directory",
                               p->name);
        if (p->method == POLYDIR_METHOD_USER && p->n_options > 0)
                return fail_at(ret_error, p->file, p->line,
                               "[Polydir %s] MountOptions=%s%s: Method=user is a bind mount, "
                               "which takes only ro, noexec, noatime and the like",
                               p->name, p->options[0].key, p->options[0].value ? "=..." : "");
        if (p->mode >= 0 && polydir_has_option(p, "mode"))
                return fail_at(ret_error, p->file, p->line,
                               "[Polydir %s] sets both Mode= and MountOptions=mode=: keep one",
                               p->name);
        if (p->only_users && p->exclude_users)
                return fail_at(ret_error, p->file, p->line,
                               "[Polydir %s] sets both OnlyUsers= and ExcludeUsers=: keep one",
                               p->name);
        return 0;
}

/* Where path is to other: 0 elsewhere, 1 the same, 2 under it, 3 above it (both normalized,
 * without a trailing '/'). */
enum { PATH_APART, PATH_SAME, PATH_UNDER, PATH_ABOVE };

static int path_relation(const char *path, const char *other) {
        size_t a = strlen(path), b = strlen(other);

        if (a == b)
                return strcmp(path, other) == 0 ? PATH_SAME : PATH_APART;
        if (a > b)
                return strncmp(path, other, b) == 0 && path[b] == '/' ? PATH_UNDER : PATH_APART;
        return strncmp(other, path, a) == 0 && other[a] == '/' ? PATH_ABOVE : PATH_APART;
}

static const char *const relation_words[] = {
        [PATH_SAME] = "is",
        [PATH_UNDER] = "is under",
        [PATH_ABOVE] = "is above",
};

const char *setup_path_overlap(const char *path, const char *other) {
        int rel = path_relation(path, other);

        return rel == PATH_APART ? NULL : relation_words[rel];
}

/* A path-valued key of one group, as the checks below name it. */
typedef struct PathKey {
        const char *group; /* "Share" */
        const char *name;
        const char *key;  /* "Path" */
        const char *noun; /* "path" */
        const char *path;
        const char *file;
        unsigned line;
} PathKey;

static PathKey polydir_path(const Polydir *p) {
        return (PathKey) { "Polydir", p->name, "Path", "path", p->path, p->file, p->line };
}

static PathKey bind_target(const BindReadOnly *b) {
        return (PathKey) {
                "BindReadOnly", b->name, "Target", "target", b->target, b->file, b->line
        };
}

static PathKey share_path(const Share *sh) {
        return (PathKey) { "Share", sh->name, "Path", "path", sh->path, sh->file, sh->line };
}

static PathKey volume_where(const Volume *v) {
        return (PathKey) { "Volume", v->name, "Where", "mount point", v->where, v->file, v->line };
}

/* a's path is b's too: an error at a. */
static int check_unique(PathKey a, PathKey b, char **ret_error) {
        if (strcmp(a.path, b.path) != 0)
                return 0;
        return fail_at(ret_error, a.file, a.line, "[%s %s] %s=%s is the %s of [%s %s] (%s:%u) too",
                       a.group, a.name, a.key, a.path, b.noun, b.group, b.name, b.file, b.line);
}

/* a's path is, is under or is above b's: an error at a, saying why that is refused. */
static int check_apart(PathKey a, PathKey b, const char *why, char **ret_error) {
        int rel = path_relation(a.path, b.path);

        if (rel == PATH_APART)
                return 0;
        return fail_at(ret_error, a.file, a.line,
                       "[%s %s] %s=%s %s the %s of [%s %s] (%s:%u), %s=%s: %s", a.group, a.name,
                       a.key, a.path, relation_words[rel], b.noun, b.group, b.name, b.file, b.line,
                       b.key, b.path, why);
}

/* The shares, once the polydirs (PrivateTmp=yes's too, polydirs[0] when private_tmp) and the
 * binds are checked: Path=, a membership, no overlap with another share, a polydir or a bind.
 * A polydir whose Path= has a specifier (%h/...) differs per user: compared once
 * expanded, in plan_share_overlap_check() (domain/setup.c). */
static int check_shares(const SetupConf *s, bool private_tmp, char **ret_error) {
        int r;

        for (size_t i = 0; i < s->n_shares; i++) {
                const Share *sh = &s->shares[i];

                if (!sh->path)
                        return fail_at(ret_error, sh->file, sh->line,
                                       "[Share %s] has no Path=", sh->name);
                if (!sh->users && !sh->groups)
                        return fail_at(ret_error, sh->file, sh->line,
                                       "[Share %s] has neither Users= nor Groups=: a share has "
                                       "no default membership (say who its members are)",
                                       sh->name);
                for (size_t j = 0; j < i; j++) {
                        r = check_apart(share_path(sh), share_path(&s->shares[j]),
                                        "overlapping shares", ret_error);
                        if (r < 0)
                                return r;
                }
                for (size_t j = 0; j < s->n_polydirs; j++) {
                        const Polydir *p = &s->polydirs[j];
                        int rel;

                        if (strchr(p->path, '%'))
                                continue;
                        rel = path_relation(sh->path, p->path);
                        if (rel == PATH_APART)
                                continue;
                        if (private_tmp && j == 0)
                                return fail_at(ret_error, sh->file, sh->line,
                                               "[Share %s] Path=%s %s /tmp, the polydir of "
                                               "PrivateTmp=yes (%s:%u): a share cannot overlap "
                                               "a polydir",
                                               sh->name, sh->path, relation_words[rel], p->file,
                                               p->line);
                        return check_apart(share_path(sh), polydir_path(p),
                                           "a share cannot overlap a polydir", ret_error);
                }
                for (size_t j = 0; j < s->n_binds; j++) {
                        r = check_apart(share_path(sh), bind_target(&s->binds[j]),
                                        "a share cannot overlap a read-only bind", ret_error);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* The volumes: every key that has no default, members, one volume per Where=, and no
 * Where= (without a specifier) that overlaps a share's path: a mount under a share travels
 * to its other members (one with a specifier: per user, plan_share_overlap_check()). */
static int check_volumes(SetupConf *s, char **ret_error) {
        int r;

        for (size_t i = 0; i < s->n_volumes; i++) {
                Volume *v = &s->volumes[i];
                const char *missing = !v->type     ? "Type="
                                      : !v->source ? "Source="
                                      : !v->where  ? "Where="
                                                   : NULL;

                if (missing)
                        return fail_at(ret_error, v->file, v->line, "[Volume %s] has no %s",
                                       v->name, missing);
                g_autofree char *why = volume_source_why(v);
                if (why)
                        return fail_at(ret_error, v->file, v->source_line, "[Volume %s] %s",
                                       v->name, why);
                /* the kind's own start by default */
                if (!v->start_set)
                        v->start = v->kind == VOLUME_KIND_FUSE ? VOLUME_START_LOGIN
                                                               : VOLUME_START_NAMESPACE;
                if (v->kind == VOLUME_KIND_FUSE && v->start == VOLUME_START_NAMESPACE)
                        return fail_at(ret_error, v->file, v->line,
                                       "[Volume %s] Start=namespace: a FUSE volume (Type=%s) "
                                       "is run by the user's service manager, which starts at "
                                       "login (Start=login) or when the user asks "
                                       "(Start=request)",
                                       v->name, v->type);
                if (v->release == VOLUME_RELEASE_AT_LAST_SESSION && v->kind != VOLUME_KIND_BLOCK)
                        return fail_at(ret_error, v->file, v->release_line,
                                       v->kind == VOLUME_KIND_FUSE
                                               ? "[Volume %s] Release=last-session: a FUSE volume "
                                                 "(Type=%s) ends with the user's service manager, "
                                                 "which stops after the last session already"
                                               : "[Volume %s] Release=last-session: not supported "
                                                 "yet for a network volume (Type=%s): it is "
                                                 "unmounted with the namespace",
                                       v->name, v->type);
                if (v->release == VOLUME_RELEASE_AT_LAST_SESSION &&
                    v->start == VOLUME_START_NAMESPACE)
                        return fail_at(ret_error, v->file, v->release_line,
                                       "[Volume %s] Release=last-session with Start=namespace: "
                                       "once released it would stay unmounted for the "
                                       "namespace's life; say when it is mounted again "
                                       "(Start=login or Start=request)",
                                       v->name);
                if ((v->key_set || v->key_file) &&
                    !volume_type_options_find(v->type)->takes_password)
                        return fail_at(ret_error, v->file,
                                       v->key_set ? v->key_line : v->key_file_line,
                                       "[Volume %s] %s=: Type=%s takes no password (only a "
                                       "type whose program reads one does: gocryptfs)",
                                       v->name, v->key_set ? "Key" : "KeyFile", v->type);
                if (v->key_set && v->key_file)
                        return fail_at(ret_error, v->file, MAX(v->key_line, v->key_file_line),
                                       "[Volume %s] Key= and KeyFile= both given: KeyFile= is "
                                       "where its password comes from (never the login "
                                       "password nor nsctl unlock), Key= says which typed one "
                                       "it takes; keep one",
                                       v->name);
                if (v->options_text) {
                        const VolumeTypeOptions *t = volume_type_options_find(v->type);

                        /* for each type its own list (Type= may come after Options=) */
                        if (parse_options("Options", v->options_text, t->value_options,
                                          t->flag_options, &v->options, &v->n_options,
                                          &v->mount_attr, &why) < 0)
                                return fail_at(ret_error, v->file, v->options_line,
                                               "[Volume %s] %s (Type=%s)", v->name, why, v->type);
                }
                if (!v->users && !v->groups)
                        return fail_at(ret_error, v->file, v->line,
                                       "[Volume %s] has neither Users= nor Groups=: a volume has "
                                       "no default membership (say whose namespaces get it)",
                                       v->name);
                for (size_t j = 0; j < i; j++) {
                        r = check_unique(volume_where(v), volume_where(&s->volumes[j]), ret_error);
                        if (r < 0)
                                return r;
                }
                if (strchr(v->where, '%'))
                        continue;
                for (size_t j = 0; j < s->n_shares; j++) {
                        r = check_apart(volume_where(v), share_path(&s->shares[j]),
                                        "a volume's mount would travel to the share's other "
                                        "members",
                                        ret_error);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int setup_conf_finish(SetupConf *s, bool private_tmp, const char *private_tmp_file,
                      unsigned private_tmp_line, char **ret_error) {
        int r;

        for (size_t i = 0; i < s->n_polydirs; i++) {
                const Polydir *p = &s->polydirs[i];

                r = check_polydir(p, ret_error);
                if (r < 0)
                        return r;
                for (size_t j = 0; j < i; j++) {
                        r = check_unique(polydir_path(p), polydir_path(&s->polydirs[j]), ret_error);
                        if (r < 0)
                                return r;
                }
                if (private_tmp && strcmp(p->path, "/tmp") == 0)
                        return fail_at(ret_error, private_tmp_file, private_tmp_line,
                                       "PrivateTmp=yes and [Polydir %s] (%s:%u) both make /tmp: "
                                       "keep one",
                                       p->name, p->file, p->line);
        }
        for (size_t i = 0; i < s->n_binds; i++) {
                const BindReadOnly *b = &s->binds[i];

                if (!b->source || !b->target)
                        return fail_at(ret_error, b->file, b->line, "[BindReadOnly %s] has no %s",
                                       b->name, b->source ? "Target=" : "Source=");
                for (size_t j = 0; j < i; j++) {
                        r = check_unique(bind_target(b), bind_target(&s->binds[j]), ret_error);
                        if (r < 0)
                                return r;
                }
        }
        if (private_tmp) {
                /* PrivateTmp=yes: a tmpfs polydir on /tmp, first, as it always was */
                if (s->n_polydirs >= SETUP_MAX_POLYDIRS)
                        return fail_at(ret_error, private_tmp_file, private_tmp_line,
                                       "PrivateTmp=yes is one polydir more than the %d allowed",
                                       SETUP_MAX_POLYDIRS);
                s->polydirs = g_renew(Polydir, s->polydirs, s->n_polydirs + 1);
                memmove(s->polydirs + 1, s->polydirs, s->n_polydirs * sizeof *s->polydirs);
                s->n_polydirs++;
                s->polydirs[0] = (Polydir) {
                        .name = g_strdup("PrivateTmp"),
                        .path = g_strdup("/tmp"),
                        .method = POLYDIR_METHOD_TMPFS,
                        .mode = 01777,
                        .no_init = true,
                        .file = g_strdup(private_tmp_file ? private_tmp_file : "nsd.conf"),
                        .line = private_tmp_line,
                };
        }
        r = check_shares(s, private_tmp, ret_error);
        if (r < 0)
                return r;
        return check_volumes(s, ret_error);
}

/* ---- generation ------------------------------------------------------------------------ */

static void digest_str(GChecksum *c, const char *tag, const char *s) {
        g_checksum_update(c, (const guchar *) tag, (gssize) strlen(tag) + 1);
        if (s)
                g_checksum_update(c, (const guchar *) s, (gssize) strlen(s) + 1);
        else
                g_checksum_update(c, (const guchar *) "\xff", 1);
}

static void digest_strv(GChecksum *c, const char *tag, char **v) {
        digest_str(c, tag, v ? "list" : NULL);
        for (; v && *v; v++)
                digest_str(c, "-", *v);
}

static void digest_options(GChecksum *c, const MountOption *o, size_t n) {
        for (size_t i = 0; i < n; i++) {
                digest_str(c, "option", o[i].key);
                digest_str(c, "=", o[i].value);
        }
}

const char *setup_conf_generation(const SetupConf *s, bool propagation_private, char *buf,
                                  size_t size) {
        g_autoptr(GChecksum) c = g_checksum_new(G_CHECKSUM_SHA256);
        char num[64];

        digest_str(c, "nsd-setup-1", NULL);
        digest_str(c, "propagation", propagation_private ? "private" : "slave");
        digest_str(c, "init", s->init_script);
        for (size_t i = 0; i < s->n_polydirs; i++) {
                const Polydir *p = &s->polydirs[i];

                digest_str(c, "polydir", p->name);
                digest_str(c, "path", p->path);
                snprintf(num, sizeof num, "%d %d %llu %d", (int) p->method, p->mode,
                         (unsigned long long) p->mount_attr, (int) p->no_init);
                digest_str(c, "numbers", num);
                digest_str(c, "prefix", p->instance_prefix);
                digest_options(c, p->options, p->n_options);
                digest_strv(c, "only", p->only_users);
                digest_strv(c, "exclude", p->exclude_users);
                digest_str(c, "script", p->init_script);
        }
        for (size_t i = 0; i < s->n_binds; i++) {
                digest_str(c, "bind", s->binds[i].source);
                digest_str(c, "to", s->binds[i].target);
        }
        /* not MaxMembers= nor MaxMountsPerUser=: they bound what the share holds, not what a
         * namespace is made of */
        for (size_t i = 0; i < s->n_shares; i++) {
                const Share *sh = &s->shares[i];

                digest_str(c, "share", sh->name);
                digest_str(c, "path", sh->path);
                digest_strv(c, "users", sh->users);
                digest_strv(c, "groups", sh->groups);
                digest_str(c, "propagation", share_propagation_to_string(sh->propagation));
        }
        for (size_t i = 0; i < s->n_volumes; i++) {
                const Volume *v = &s->volumes[i];

                digest_str(c, "volume", v->name);
                digest_str(c, "type", v->type);
                digest_str(c, "source", v->source);
                digest_str(c, "where", v->where);
                snprintf(num, sizeof num, "%llu %d", (unsigned long long) v->mount_attr,
                         (int) v->start);
                digest_str(c, "numbers", num);
                if (v->key != VOLUME_KEY_LOGIN) /* the default keeps the digest of before */
                        digest_str(c, "key", "ask");
                if (v->key_file) /* likewise */
                        digest_str(c, "key-file", v->key_file);
                if (v->release != VOLUME_RELEASE_AT_NAMESPACE) /* likewise */
                        digest_str(c, "release", "last-session");
                digest_options(c, v->options, v->n_options);
                digest_strv(c, "users", v->users);
                digest_strv(c, "groups", v->groups);
        }
        g_strlcpy(buf, g_checksum_get_string(c), MIN(size, (size_t) 17));
        return buf;
}

/* ---- per user -------------------------------------------------------------------------- */

bool setup_conf_is_empty(const SetupConf *s) {
        return s->n_polydirs == 0 && s->n_binds == 0 && s->n_shares == 0 && s->n_volumes == 0;
}

static bool names_a_user(char **list) {
        for (; list && *list; list++)
                if (!g_ascii_isdigit(**list))
                        return true;
        return false;
}

/* A specifier other than %U and %%. */
static bool needs_user(const char *t) {
        for (const char *p = t ? strchr(t, '%') : NULL; p && p[1]; p = strchr(p + 2, '%'))
                if (p[1] != 'U' && p[1] != '%')
                        return true;
        return false;
}

bool setup_conf_needs_identity(const SetupConf *s) {
        /* a share's or a volume's membership: the user's name and groups */
        if (s->n_shares > 0 || s->n_volumes > 0)
                return true;
        for (size_t i = 0; i < s->n_polydirs; i++) {
                const Polydir *p = &s->polydirs[i];

                /* Method=user: the instance is named after the user */
                if (p->method == POLYDIR_METHOD_USER || needs_user(p->path) ||
                    names_a_user(p->only_users) || names_a_user(p->exclude_users))
                        return true;
                if (!p->no_init && (p->init_script || s->init_script))
                        return true;
        }
        return false;
}

const char *polydir_describe(const Polydir *p, char *buf, size_t size) {
        snprintf(buf, size, "polydir '%s' (%s:%u)", p->name, p->file ? p->file : "?", p->line);
        return buf;
}

static bool user_listed(char **list, const char *user_name, uid_t uid) {
        for (; list && *list; list++) {
                if (g_ascii_isdigit(**list)) {
                        if ((uid_t) g_ascii_strtoull(*list, NULL, 10) == uid)
                                return true;
                } else if (user_name && strcmp(*list, user_name) == 0)
                        return true;
        }
        return false;
}

/* Users= and Groups= of a share or a volume. */
static bool members_have(char **users, char **groups, const char *user_name, uid_t uid,
                         const gid_t *gids, const char *const *group_names, size_t n) {
        if (user_listed(users, user_name, uid))
                return true;
        for (char **g = groups; g && *g; g++)
                for (size_t i = 0; i < n; i++) {
                        if (g_ascii_isdigit(**g)) {
                                if (gids && (gid_t) g_ascii_strtoull(*g, NULL, 10) == gids[i])
                                        return true;
                        } else if (group_names && group_names[i] && strcmp(*g, group_names[i]) == 0)
                                return true;
                }
        return false;
}

bool share_has_member(const Share *s, const char *user_name, uid_t uid, const gid_t *gids,
                      const char *const *group_names, size_t n) {
        return members_have(s->users, s->groups, user_name, uid, gids, group_names, n);
}

bool volume_has_member(const Volume *v, const char *user_name, uid_t uid, const gid_t *gids,
                       const char *const *group_names, size_t n) {
        return members_have(v->users, v->groups, user_name, uid, gids, group_names, n);
}

const char *volume_describe(const Volume *v, char *buf, size_t size) {
        snprintf(buf, size, "volume '%s' (%s:%u)", v->name, v->file ? v->file : "?", v->line);
        return buf;
}

const char *share_propagation_to_string(SharePropagation p) {
        if ((size_t) p >= G_N_ELEMENTS(share_propagation_names))
                return "?";
        return share_propagation_names[p];
}

const char *share_anchor_name(const Share *s, char *buf, size_t size) {
        g_autofree char *what = g_strdup_printf("%s\n%s", s->path,
                                                share_propagation_to_string(s->propagation));
        g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, what, -1);

        snprintf(buf, size, "%s@%.12s", s->name, sum);
        return buf;
}

bool volume_failure_refuses(const SetupConf *s, const Volume *v) {
        switch (v->on_failure) {
        case VOLUME_ON_FAILURE_REFUSE:
                return true;
        case VOLUME_ON_FAILURE_CONTINUE:
                return false;
        default:
                return !s->on_failure_continue;
        }
}

const char *share_describe(const Share *s, char *buf, size_t size) {
        snprintf(buf, size, "share '%s' (%s:%u)", s->name, s->file ? s->file : "?", s->line);
        return buf;
}

bool polydir_applies(const Polydir *p, const char *user_name, uid_t uid) {
        if (p->only_users)
                return user_listed(p->only_users, user_name, uid);
        return !user_listed(p->exclude_users, user_name, uid);
}
