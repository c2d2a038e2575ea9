/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * nsctl import-pam-mount: see import-pam-mount.h and nsctl(1).
 *
 * pam_mount.conf(5): a <pam_mount> element holding <volume> elements and global settings.
 * A volume's attributes say who gets it (user, uid, gid, pgrp, sgrp: all must match; none
 * means every user), what it is (fstype, server, path, options, the crypt and FUSE ones)
 * and where it goes (mountpoint, "~" the home). Values may hold variables %(NAME).
 */
#include "import-pam-mount.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include "cleanup.h"
#include "cli.h"
#include "import-util.h"
#include "volume-options.h"

/* nsd.conf(5)'s Options= holds at most this many options */
#define NSD_VOLUME_OPTIONS_MAX 16

/* the mount attributes nsd's Options= takes for every type (nosuid, nodev: always set) */
static const char *const attr_options[] = { "ro",          "rw",       "noexec",      "exec",
                                            "noatime",     "relatime", "strictatime", "nodiratime",
                                            "nosymfollow", NULL };

/* options that carry a secret or name a file holding one: never copied into a drop-in */
static const char *const secret_options[] = { "password",    "pass", "passwd",   "password2",
                                              "credentials", "cred", "passfile", NULL };

/* Is the option of len bytes at p (its key key bytes) a secret? A secret option, or a cifs
 * user name with its password after a '%' ("user=alice%pw"; "%(USER)" is a variable). */
static bool secret_option(const char *p, size_t key, size_t len) {
        if (strv_contains(secret_options, p, key))
                return true;
        if (key < len && strv_contains((const char *const[]) { "user", "username", NULL }, p, key))
                for (const char *q = p + key + 1; q < p + len; q++)
                        if (*q == '%' && q[1] != '(')
                                return true;
        return false;
}

/* pam_mount's elements that name a command it runs: nsd runs none */
static const char *const command_elements[] = {
        "cifsmount",      "smbmount",        "ncpmount",  "ncpumount", "smbumount",
        "fusemount",      "fuseumount",      "lclmount",  "nfsmount",  "umount",
        "cryptmount",     "cryptumount",     "fsck",      "ofl",       "pmvarrun",
        "truecryptmount", "truecryptumount", "nfsumount", "fd0ssh",    NULL
};

/* a volume's attributes that pam_mount knows */
static const char *const volume_attributes[] = {
        "user",   "uid",         "gid",        "pgrp",      "sgrp",    "fstype",
        "server", "path",        "mountpoint", "options",   "noroot",  "ssh",
        "cipher", "fskeycipher", "fskeyhash",  "fskeypath", "keyfile", NULL
};

int pm_import_init(PmImport *im) {
        *im = (PmImport) { 0 };
        return import_out_init(&im->out);
}

void pm_import_done(PmImport *im) {
        import_out_done(&im->out);
        strv_free(im->wheres, im->n_wheres);
        strv_free(im->wheres_at, im->n_wheres);
        *im = (PmImport) { 0 };
}

/* ---- one element ------------------------------------------------------------------------ */

/* the document being read */
typedef struct Doc {
        const char *file;
        const char *text;
        size_t len;
        bool has_volumes; /* a <volume> anywhere in it */
} Doc;

typedef struct Element {
        ImportSite site;
        bool fatal; /* the element is not carried over */
} Element;

#define note(e, lost, ...) import_note(&(e)->site, (lost), __VA_ARGS__)

/* "not carried over: ..." */
#define refuse(e, ...)                        \
        do {                                  \
                (e)->fatal = true;            \
                note((e), true, __VA_ARGS__); \
        } while (0)

/* The line a start tag begins on: libxml2 numbers the line it ends on ('>'), so look back
 * from the end of that line for "<name" ('<' cannot stand in an attribute value). */
static unsigned start_line(const char *text, size_t len, long end_line, const char *name) {
        size_t name_len = strlen(name), pos = 0;
        unsigned line = 1;

        if (end_line <= 0 || end_line >= INT_MAX)
                return 0;
        for (long l = 1; l <= end_line && pos < len; pos++)
                if (text[pos] == '\n')
                        l++;
        while (pos > 0) {
                pos--;
                if (text[pos] == '<' && pos + 1 + name_len < len &&
                    strncmp(text + pos + 1, name, name_len) == 0 &&
                    strchr(" \t\r\n/>", text[pos + 1 + name_len]))
                        break;
        }
        for (size_t i = 0; i < pos; i++)
                if (text[i] == '\n')
                        line++;
        return line;
}

static void element_begin(Element *e, PmImport *im, const Doc *d, xmlNode *n) {
        *e = (Element) { 0 };
        import_site_open(&e->site, &im->out, d->file,
                         start_line(d->text, d->len, xmlGetLineNo(n), (const char *) n->name));
}

static char *prop(xmlNode *n, const char *name) {
        xmlChar *v = xmlGetNoNsProp(n, (const xmlChar *) name);
        char *s;

        if (!v)
                return NULL;
        s = xstrdup((const char *) v);
        xmlFree(v);
        return s;
}

static bool is_true(const char *v) {
        return v && (strcmp(v, "1") == 0 || strcasecmp(v, "yes") == 0 ||
                     strcasecmp(v, "true") == 0 || strcasecmp(v, "on") == 0);
}

/* The start tag as the comment above the group shows it: printable, a secret option's value
 * (password=...) as "***", at most about 400 bytes. */
static char *shown_tag(xmlNode *n) {
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);

        if (!f)
                abort();
        fprintf(f, "<%s", (const char *) n->name);
        for (xmlAttr *a = n->properties; a; a = a->next) {
                _cleanup_free_ char *v = prop(n, (const char *) a->name);

                if (!v)
                        continue;
                fprintf(f, " %s=\"", (const char *) a->name);
                if (strcmp((const char *) a->name, "options") == 0) {
                        for (const char *p = v; *p;) {
                                size_t l = strcspn(p, ","), k = strcspn(p, "=,");

                                if (k < l && secret_option(p, k, l))
                                        fprintf(f, "%.*s=***", (int) k, p);
                                else
                                        fprintf(f, "%.*s", (int) l, p);
                                p += l;
                                if (*p == ',')
                                        fputc(*p++, f);
                        }
                } else
                        fputs(v, f);
                fputc('"', f);
        }
        fputs(n->children ? ">" : " />", f);
        fclose(f);
        for (char *p = out; *p; p++)
                if ((unsigned char) *p < 0x20 || (unsigned char) *p >= 0x7f)
                        *p = '?';
        if (strlen(out) > 400)
                strcpy(out + 396, " ...");
        return out;
}

/* A value in nsd's words: %(USER) %u, %(USERUID) %U, a leading "~" %h when home_ok, '%'
 * "%%". NULL with *why for any other variable, or a "~" where nsd takes no home. */
static char *to_template(const char *s, bool home_ok, char **why) {
        char *out = xrealloc(NULL, 2 * strlen(s) + 3), *o = out;
        const char *p = s;

        if (!import_valid_utf8(s)) {
                *why = xstrdup("it is not valid UTF-8");
                goto fail;
        }
        if (p[0] == '~' && (p[1] == '\0' || p[1] == '/')) {
                if (!home_ok) {
                        *why = xstrdup("'~' (the home): nsd takes no home here");
                        goto fail;
                }
                o = stpcpy(o, "%h");
                p++;
        }
        for (; *p; p++) {
                if (strncmp(p, "%(", 2) == 0) {
                        size_t n = strcspn(p, ")");

                        if (strncmp(p, "%(USER)", 7) == 0) {
                                o = stpcpy(o, "%u");
                                p += 6;
                                continue;
                        }
                        if (strncmp(p, "%(USERUID)", 10) == 0) {
                                o = stpcpy(o, "%U");
                                p += 9;
                                continue;
                        }
                        *why = xasprintf("the variable '%.*s' has no nsd specifier (nsd has %%u "
                                         "for %%(USER), %%U for %%(USERUID), %%h for '~')",
                                         (int) (p[n] ? n + 1 : n), p);
                        goto fail;
                }
                if ((unsigned char) *p < 0x20 || *p == 0x7f) {
                        *why = xstrdup("it holds a control character");
                        goto fail;
                }
                if (*p == '%')
                        *o++ = '%';
                *o++ = *p;
        }
        *o = '\0';
        return out;
fail:
        free(out);
        return NULL;
}

/* Where=: absolute or in the home, no "..", runs of '/' to one, no trailing '/'. */
/* A path in nsd's words (Where=, a block type's Source=), made tidy in place: runs of '/'
 * one, no trailing '/'. Then what nsd refuses: not absolute (nor "%h..." where home_ok), '/'
 * itself, a '.' or '..' component, more than 1024 bytes. NULL, or why not. */
static const char *path_why(char *t, bool home_ok) {
        char *o = t;

        for (const char *p = t; *p; p++)
                if (!(*p == '/' && o > t && o[-1] == '/'))
                        *o++ = *p;
        *o = '\0';
        while (strlen(t) > 1 && t[strlen(t) - 1] == '/')
                t[strlen(t) - 1] = '\0';
        if (t[0] != '/' && !(home_ok && strncmp(t, "%h", 2) == 0))
                return home_ok ? "is not an absolute path or '~'" : "is not an absolute path";
        if (strcmp(t, "/") == 0)
                return "is '/' itself";
        if (strlen(t) > 1024)
                return "is longer than nsd's 1024 bytes";
        for (const char *c = strchr(t, '/'); c; c = strchr(c + 1, '/'))
                if ((c[1] == '.' && (c[2] == '/' || c[2] == '\0')) ||
                    (c[1] == '.' && c[2] == '.' && (c[3] == '/' || c[3] == '\0')))
                        return "has a '.' or '..' component";
        return NULL;
}

static char *where_of(Element *e, const char *mountpoint) {
        char *why = NULL, *t = to_template(mountpoint, true, &why);
        const char *bad;

        if (!t) {
                refuse(e, "not carried over: mountpoint '%s': %s", mountpoint, why);
                free(why);
                return NULL;
        }
        bad = path_why(t, true);
        if (bad) {
                refuse(e, "not carried over: mountpoint '%s' %s", mountpoint, bad);
                free(t);
                return NULL;
        }
        return t;
}

/* Source=: //server/path for cifs, server:path for nfs, an absolute path for a block type. */
static char *source_of(Element *e, const VolumeTypeOptions *t, const char *server,
                       const char *path) {
        _cleanup_free_ char *s = NULL, *p = NULL;
        char *why = NULL, *src;

        if (!path) {
                refuse(e, "not carried over: no path= (the volume's source)");
                return NULL;
        }
        p = to_template(path, false, &why);
        if (p && server)
                s = to_template(server, false, &why);
        if (!p || (server && !s)) {
                refuse(e, "not carried over: %s '%s': %s", p ? "server" : "path", p ? server : path,
                       why);
                free(why);
                return NULL;
        }
        if (t->network && !s) {
                refuse(e, "not carried over: a %s volume needs server=", t->name);
                return NULL;
        }
        if (!t->network && s) {
                refuse(e,
                       "not carried over: server= on a %s volume (nsd mounts an image or a "
                       "block device of this host)",
                       t->name);
                return NULL;
        }
        if (!t->network) {
                const char *bad = path_why(p, false);

                if (bad) {
                        refuse(e, "not carried over: path '%s' %s", path, bad);
                        return NULL;
                }
                return TAKE_PTR(p);
        }
        if (strcmp(t->name, "cifs") == 0)
                src = xasprintf("//%s/%s", s, p + strspn(p, "/"));
        else
                src = xasprintf("%s:%s", s, p);
        if (strlen(src) > 1024) {
                refuse(e, "not carried over: the source is longer than nsd's 1024 bytes");
                free(src);
                return NULL;
        }
        for (const char *q = src; *q; q++)
                if ((unsigned char) *q <= 0x20) {
                        refuse(e,
                               "not carried over: the source '%s' holds white space (nsd's "
                               "Source= takes none)",
                               src);
                        free(src);
                        return NULL;
                }
        return src;
}

/* Are the len bytes at p printable ASCII without a space? */
static bool printable(const char *p, size_t len) {
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) p[i] <= 0x20 || (unsigned char) p[i] >= 0x7f)
                        return false;
        return true;
}

/* Options=: what nsd's list for the type takes; nosuid and nodev dropped (always set); the
 * rest named, a secret's value never. */
static char *options_of(Element *e, const VolumeTypeOptions *t, const char *v) {
        char *out = xrealloc(NULL, strlen(v) + 1), *o = out;
        unsigned n = 0;

        for (const char *p = v; *p;) {
                size_t len = strcspn(p, ","), key = strcspn(p, "=,");
                bool has_value = key < len;

                if (len == 0 ||
                    (!has_value &&
                     (strv_contains((const char *const[]) { "nosuid", "nodev", "defaults", NULL },
                                    p, key))))
                        ; /* nsd's own, always */
                else if (secret_option(p, key, len))
                        note(e, true,
                             "option '%.*s' is not carried over: a secret does not belong in a "
                             "drop-in, which anyone may read (nsd cannot give a password to a "
                             "mount yet, issue 25)",
                             (int) key, p);
                else if (!has_value &&
                         (strv_contains((const char *const[]) { "suid", "dev", NULL }, p, key)))
                        note(e, true,
                             "option '%.*s' is not carried over: every mount nsd makes is "
                             "nosuid,nodev",
                             (int) key, p);
                else if (!printable(p, len))
                        note(e, true,
                             "option '%.*s' is not carried over: it holds white space, a control "
                             "character or a byte that is not ASCII",
                             (int) len, p);
                else if (memchr(p, '%', len))
                        note(e, true,
                             "option '%.*s' is not carried over: nsd's option values take no "
                             "variables (write the value out, or leave it to the type's default)",
                             (int) len, p);
                else if (!(has_value ? strv_contains(t->value_options, p, key)
                                     : strv_contains(attr_options, p, key) ||
                                               strv_contains(t->flag_options, p, key)) ||
                         (has_value && key + 1 == len))
                        note(e, true,
                             "option '%.*s' is not carried over: nsd's Options= does not take "
                             "it for %s (nsd.conf(5))",
                             (int) len, p, t->name);
                else if (n >= NSD_VOLUME_OPTIONS_MAX)
                        note(e, true,
                             "option '%.*s' is not carried over: nsd takes at most %d options",
                             (int) len, p, NSD_VOLUME_OPTIONS_MAX);
                else {
                        if (!has_value && strncmp(p, "exec", key) == 0 && key == 4)
                                note(e, false,
                                     "option 'exec' carried over: programs on the volume may "
                                     "run (nsd's noexec would refuse them)");
                        if (o > out)
                                *o++ = ',';
                        memcpy(o, p, len);
                        o += len;
                        n++;
                }
                p += len;
                if (*p == ',')
                        p++;
        }
        *o = '\0';
        return out;
}

/* Users= or Groups= from the one condition nsd can say; "Users=..." or "Groups=..." */
static char *members_of(Element *e, xmlNode *n) {
        static const char *const conds[] = { "user", "uid", "sgrp", "pgrp", "gid" };
        const char *which = NULL;
        _cleanup_free_ char *v = NULL;
        unsigned count = 0;

        for (size_t i = 0; i < sizeof conds / sizeof conds[0]; i++) {
                char *c = prop(n, conds[i]);

                if (!c)
                        continue;
                /* user="*" matches everyone: beside another condition it adds nothing */
                if (strcmp(conds[i], "user") == 0 && strcmp(c, "*") == 0 &&
                    (xmlHasProp(n, (const xmlChar *) "uid") ||
                     xmlHasProp(n, (const xmlChar *) "sgrp") ||
                     xmlHasProp(n, (const xmlChar *) "pgrp") ||
                     xmlHasProp(n, (const xmlChar *) "gid"))) {
                        free(c);
                        continue;
                }
                count++;
                if (!v) {
                        which = conds[i];
                        v = c;
                } else
                        free(c);
        }
        if (count > 1) {
                refuse(e, "not carried over: pam_mount wants every one of its user conditions "
                          "(user, uid, gid, pgrp, sgrp) to hold, nsd's Users= and Groups= "
                          "admit anyone in either: name the members yourself");
                return NULL;
        }
        if (count == 0 || (strcmp(which, "user") == 0 && strcmp(v, "*") == 0)) {
                refuse(e, "not carried over: the volume is every user's; nsd mounts a volume "
                          "only for the users (Users=) or group members (Groups=) it names: "
                          "write them in");
                return NULL;
        }
        if (strcmp(which, "user") == 0 || strcmp(which, "sgrp") == 0) {
                if (!import_valid_user_name(v) || (v[0] >= '0' && v[0] <= '9')) {
                        refuse(e, "not carried over: %s '%s' is not a name nsd takes", which, v);
                        return NULL;
                }
                return xasprintf("%s=%s", which[0] == 'u' ? "Users" : "Groups", v);
        }
        if (strcmp(which, "uid") == 0) {
                const char *dash = strchr(v, '-');
                char *end = NULL;
                unsigned long lo, hi;

                errno = 0;
                lo = strtoul(v, &end, 10);
                hi = lo;
                if (end && *end == '-')
                        hi = strtoul(end + 1, &end, 10);
                if (errno || !end || *end || v[0] < '0' || v[0] > '9' ||
                    (dash && (dash[1] < '0' || dash[1] > '9')) || lo >= 0xffffffffUL ||
                    hi >= 0xffffffffUL || hi < lo) {
                        refuse(e, "not carried over: uid '%s' is not a uid or a range of them", v);
                        return NULL;
                }
                if (hi != lo) {
                        refuse(e,
                               "not carried over: uid range %s: nsd's Users= takes no range "
                               "(name the users, or a group they are in, with Groups=)",
                               v);
                        return NULL;
                }
                return xasprintf("Users=%lu", lo);
        }
        refuse(e,
               "not carried over: %s '%s' admits only users whose primary group it is; "
               "nsd's Groups= admits members by primary or supplementary group and would "
               "widen it (write Groups= yourself if every member may have the volume)",
               which, v);
        return NULL;
}

static void import_volume(PmImport *im, const Doc *d, xmlNode *n) {
        _cleanup_free_ char *shown = shown_tag(n), *fstype = prop(n, "fstype"),
                            *server = prop(n, "server"), *path = prop(n, "path"),
                            *mountpoint = prop(n, "mountpoint"), *options = prop(n, "options"),
                            *src = NULL, *where = NULL, *opts = NULL, *members = NULL,
                            *noroot = prop(n, "noroot"), *ssh = prop(n, "ssh");
        const VolumeTypeOptions *t = NULL;
        const char *type = fstype ? fstype : "auto";
        Element e;

        element_begin(&e, im, d, n);
        for (xmlNode *c = n->children; c; c = c->next)
                if (c->type == XML_ELEMENT_NODE) {
                        refuse(&e,
                               "not carried over: user conditions as elements (<%s> here; "
                               "<and>, <or>, <not>, <user>, ...): nsd's Users= and Groups= "
                               "are lists; write them yourself",
                               (const char *) c->name);
                        break;
                }
        for (xmlAttr *a = n->properties; a; a = a->next)
                if (!strv_contains(volume_attributes, (const char *) a->name,
                                   strlen((const char *) a->name)))
                        note(&e, true,
                             "attribute '%s' is not carried over: pam_mount.conf(5) has "
                             "no such attribute",
                             (const char *) a->name);
        if (strcmp(type, "smb3") == 0) {
                t = volume_type_options_find("cifs");
                note(&e, false,
                     "fstype smb3 carried over as Type=cifs (the kernel's smb3 is cifs with "
                     "vers=3.0 or later: add vers= to Options= if the server needs it)");
        } else if (strcmp(type, "ext2") == 0 || strcmp(type, "ext3") == 0)
                refuse(&e,
                       "not carried over: nsd does not mount %s volumes (Type= takes ext4, "
                       "whose driver reads %s: write Type=ext4 yourself if that is meant)",
                       type, type);
        else if (!(t = volume_type_options_find(type)))
                refuse(&e, "not carried over: nsd does not mount %s volumes yet (issue 25)", type);
        else if (t->fuse) {
                refuse(&e,
                       "not carried over: a %s volume is run by the user's service manager, "
                       "with the user's own keys; write its [Volume] group yourself "
                       "(nsd.conf(5))",
                       type);
                t = NULL;
        }
        if (t) {
                src = source_of(&e, t, server, path);
                if (!mountpoint)
                        refuse(&e, "not carried over: no mountpoint=");
                else
                        where = where_of(&e, mountpoint);
                members = members_of(&e, n);
                if (options)
                        opts = options_of(&e, t, options);
                for (const char *const *k =
                             (const char *const[]) { "cipher", "fskeycipher", "fskeyhash",
                                                     "fskeypath", "keyfile", NULL };
                     *k; k++)
                        if (xmlHasProp(n, (const xmlChar *) *k))
                                note(&e, true,
                                     "attribute '%s' is not carried over: nsd does not unlock "
                                     "volumes yet (issue 25)",
                                     *k);
                if (noroot && is_true(noroot))
                        note(&e, true, "noroot=\"%s\" is not carried over: nsd mounts as root",
                             noroot);
                if (ssh && is_true(ssh))
                        note(&e, true,
                             "ssh=\"%s\" is not carried over: nsd hands no password "
                             "to ssh",
                             ssh);
        }
        if (where)
                for (size_t i = 0; i < im->n_wheres; i++)
                        if (strcmp(im->wheres[i], where) == 0) {
                                refuse(&e,
                                       "not carried over: %s is the mount point of %s "
                                       "already (nsd mounts one volume per Where=)",
                                       where, im->wheres_at[i]);
                                break;
                        }
        import_site_close(&e.site);
        fprintf(im->out.body, "\n# %s:%u: %s\n%s", d->file, e.site.no, shown,
                e.site.comment ? e.site.comment : "");
        if (!e.fatal && t && src && where && members) {
                _cleanup_free_ char *name = NULL;
                char base[57];
                const char *last = strrchr(where, '/');
                size_t k = 0;

                last = last ? last + 1 : where;
                /* "/bigdisk/%u": "bigdisk-user" rather than "user" */
                if (last[0] == '%' && last > where + 1) {
                        const char *q = last - 1;
                        while (q > where && q[-1] != '/')
                                q--;
                        last = q;
                }
                for (const char *p = last; *p && k < sizeof base - 8; p++) {
                        char c = *p;

                        if (c == '%' && p[1] && p[1] != '%') {
                                const char *w = p[1] == 'u' ? "user" : p[1] == 'U' ? "uid" : "home";
                                p++;
                                while (*w && k < sizeof base - 8)
                                        base[k++] = *w++;
                                continue;
                        }
                        if (c == '/')
                                c = '-';
                        else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                   (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '@' ||
                                   c == '-'))
                                c = '_';
                        if (c == '.' && k == 0)
                                continue;
                        base[k++] = c;
                }
                base[k] = '\0';
                name = import_unique_name(&im->out.names, &im->out.n_names, k ? base : "volume");
                fprintf(im->out.body, "[Volume %s]\nType=%s\n", name, t->name);
                import_put_value(im->out.body, "Source", src);
                import_put_value(im->out.body, "Where", where);
                if (opts && opts[0])
                        import_put_value(im->out.body, "Options", opts);
                fprintf(im->out.body, "%s\n", members);
                /* pam_mount's session stage lets the login go on when a volume fails */
                fputs("OnFailure=continue\n", im->out.body);
                strv_push(&im->wheres, &im->n_wheres, xstrdup(where));
                im->wheres_at = xrealloc(im->wheres_at, im->n_wheres * sizeof(char *));
                im->wheres_at[im->n_wheres - 1] = xasprintf("%s:%u", d->file, e.site.no);
                im->n_volumes++;
        } else if (!e.fatal) /* a note said why already; make sure it counts */
                im->out.lost = true;
        free(e.site.comment);
}

/* Global settings: one note each where nsd has no such thing. What only shapes how volumes
 * are mounted (mkmountpoint, logout, the commands) loses something only where the file has
 * volumes: Debian's stock file, which has none, carries over whole. */
static void import_global(PmImport *im, const Doc *d, xmlNode *n) {
        const char *name = (const char *) n->name;
        _cleanup_free_ char *luser = NULL;
        bool volumes = d->has_volumes;
        Element e;

        if (strcmp(name, "debug") == 0 || strcmp(name, "path") == 0 ||
            strncmp(name, "msg-", 4) == 0)
                return; /* pam_mount's own logging, helpers' PATH and prompts: nothing to say */
        element_begin(&e, im, d, n);
        if (strcmp(name, "mkmountpoint") == 0) {
                _cleanup_free_ char *v = prop(n, "enable");

                if (is_true(v))
                        note(&e, volumes,
                             "<mkmountpoint> is not carried over: nsd never makes a "
                             "Where=; make the mount points (tmpfiles.d(5)) or let "
                             "the users make them");
        } else if (strcmp(name, "luserconf") == 0) {
                luser = prop(n, "name");
                note(&e, true,
                     "<luserconf> is not carried over: users' own volumes (~/%s) are not nsd's; "
                     "nsd takes only root's configuration",
                     luser ? luser : ".pam_mount.conf.xml");
        } else if (strcmp(name, "mntoptions") == 0)
                note(&e, false,
                     "<mntoptions> is not carried over: nsd has its own list of options per type "
                     "(nsd.conf(5), Options=)");
        else if (strcmp(name, "logout") == 0) {
                bool any = false;

                for (xmlAttr *a = n->properties; a; a = a->next) {
                        _cleanup_free_ char *v = prop(n, (const char *) a->name);
                        any = any || (v && !(strcmp(v, "0") == 0 || strcasecmp(v, "no") == 0 ||
                                             strcasecmp(v, "false") == 0));
                }
                if (any)
                        note(&e, volumes,
                             "<logout> is not carried over: nsd signals no process at "
                             "logout (a volume lives as long as the namespace)");
        } else if (strv_contains(command_elements, name, strlen(name)))
                note(&e, volumes,
                     "<%s> is not carried over: nsd mounts with the kernel's API, not with this "
                     "command",
                     name);
        else
                note(&e, true, "<%s> is not carried over: not an element of pam_mount.conf(5)",
                     name);
        import_site_close(&e.site);
        if (e.site.comment && e.site.comment[0]) {
                _cleanup_free_ char *shown = shown_tag(n);
                fprintf(im->out.body, "\n# %s:%u: %s\n%s", d->file, e.site.no, shown,
                        e.site.comment);
        }
        free(e.site.comment);
}

/* Nothing is loaded from outside the document: no DTD, no external entity, no network. */
static xmlParserInputPtr no_entity_loader(const char *url, const char *id, xmlParserCtxtPtr ctx) {
        (void) url;
        (void) id;
        (void) ctx;
        return NULL;
}

static bool declares_entity(xmlDtd *dtd, char **ret_name) {
        for (xmlNode *c = dtd ? dtd->children : NULL; c; c = c->next)
                if (c->type == XML_ENTITY_DECL) {
                        *ret_name = xstrdup(c->name ? (const char *) c->name : "?");
                        return true;
                }
        return false;
}

int pm_import_text(PmImport *im, const char *text, size_t len, const char *filename,
                   char **ret_error) {
        _cleanup_free_ char *entity = NULL;
        Doc d = { .file = filename, .text = text, .len = len };
        xmlDoc *doc;
        xmlNode *root;
        int r = 0;

        if (len > IMPORT_READ_MAX) {
                *ret_error = xasprintf("%s: larger than %u bytes", filename, IMPORT_READ_MAX);
                return -EFBIG;
        }
        size_t blank = 0;

        while (blank < len && strchr(" \t\r\n", text[blank]) && text[blank])
                blank++;
        if (blank == len) {
                *ret_error = xasprintf("%s: empty: not a pam_mount configuration", filename);
                return -EINVAL;
        }
        xmlSetExternalEntityLoader(no_entity_loader);
        xmlResetLastError();
        /* never XML_PARSE_NOENT or XML_PARSE_DTDLOAD: entities stay unexpanded, no DTD read */
        doc = xmlReadMemory(text, (int) len, filename, NULL,
                            XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                                    XML_PARSE_BIG_LINES);
        if (!doc) {
                const xmlError *err = xmlGetLastError();
                _cleanup_free_ char *msg = xstrdup(err && err->message ? err->message
                                                                       : "cannot be parsed");

                msg[strcspn(msg, "\n")] = '\0';
                *ret_error = xasprintf("%s:%d: not XML: %s", filename, err ? err->line : 0, msg);
                return -EINVAL;
        }
        if (declares_entity(doc->intSubset, &entity) || declares_entity(doc->extSubset, &entity)) {
                *ret_error = xasprintf("%s: declares the entity '%s': refused, nsctl expands no "
                                       "entity (pam_mount.conf.xml has none)",
                                       filename, entity);
                r = -EINVAL;
                goto out;
        }
        root = xmlDocGetRootElement(doc);
        if (!root || strcmp((const char *) root->name, "pam_mount") != 0) {
                *ret_error = xasprintf("%s:%ld: not a pam_mount configuration (its root element "
                                       "is <%s>, not <pam_mount>)",
                                       filename, root ? xmlGetLineNo(root) : 0L,
                                       root ? (const char *) root->name : "");
                r = -EINVAL;
                goto out;
        }
        for (xmlNode *n = root->children; n; n = n->next)
                d.has_volumes = d.has_volumes || (n->type == XML_ELEMENT_NODE &&
                                                  strcmp((const char *) n->name, "volume") == 0);
        for (xmlNode *n = root->children; n; n = n->next) {
                if (n->type == XML_ENTITY_REF_NODE) {
                        *ret_error = xasprintf("%s:%ld: an entity reference: refused", filename,
                                               xmlGetLineNo(n));
                        r = -EINVAL;
                        goto out;
                }
                if (n->type != XML_ELEMENT_NODE)
                        continue;
                if (strcmp((const char *) n->name, "volume") == 0)
                        import_volume(im, &d, n);
                else
                        import_global(im, &d, n);
        }
out:
        xmlFreeDoc(doc);
        return r;
}

char *pm_import_finish(PmImport *im, const char *const *sources, size_t n_sources) {
        char *out = NULL;
        size_t len = 0;
        FILE *f = import_dropin_open(&out, &len, &im->out, "import-pam-mount", "pam_mount's",
                                     sources, n_sources, "60-pam-mount.conf", "[Volume NAME]");
        if (im->n_volumes == 0)
                fputs("# (no volume: nothing to mount)\n", f);
        return import_dropin_close(f, &im->out, &out);
}

/* ---- the verb ---------------------------------------------------------------------------- */

int verb_import_pam_mount(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                {},
        };
        static const char *const default_sources[] = { PM_IMPORT_DEFAULT_CONF };
        const char *const *sources = default_sources;
        size_t n_sources = 1;
        _cleanup_free_ char *out = NULL;
        PmImport im;
        int c, r, status = EXIT_FAILURE;

        optind = 1;
        while ((c = getopt_long(argc, argv, "+:h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("Usage:\n"
                               " nsctl import-pam-mount [options] [<file>...]\n"
                               "\n"
                               "Print pam_mount's volumes as an nsd drop-in. Without <file>, "
                               "read\n" PM_IMPORT_DEFAULT_CONF ".\n"
                               "What cannot be carried over is named on stderr (exit status "
                               "2).\n"
                               "\n"
                               "Options:\n"
                               " -h, --help                display this help\n" USAGE_MAN_TAIL);
                        return EXIT_SUCCESS;
                default:
                        return option_error(c, argv);
                }
        if (optind < argc) {
                sources = (const char *const *) argv + optind;
                n_sources = (size_t) (argc - optind);
        }

        r = pm_import_init(&im);
        if (r < 0) {
                fprintf(stderr, "nsctl: cannot import: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        for (size_t i = 0; i < n_sources; i++) {
                _cleanup_free_ char *text = NULL, *error = NULL;
                size_t len = 0;

                r = import_read_file(sources[i], &text, &len);
                if (r < 0) {
                        fprintf(stderr, "nsctl: cannot read '%s': %s\n", sources[i], strerror(-r));
                        goto out;
                }
                r = pm_import_text(&im, text, len, sources[i], &error);
                if (r < 0) {
                        fprintf(stderr, "nsctl: %s\n", error ? error : strerror(-r));
                        goto out;
                }
        }
        out = pm_import_finish(&im, sources, n_sources);
        status = import_print(out, im.out.notes, im.out.n_notes, im.out.lost);
out:
        pm_import_done(&im);
        return status;
}
