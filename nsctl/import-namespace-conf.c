/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * nsctl import-namespace-conf: see import-namespace-conf.h and nsctl(1).
 *
 * namespace.conf(5), as pam_namespace reads it: '#' starts a comment anywhere on a line;
 * fields are separated by white space, may be quoted with '"', and know the escapes \n \t
 * \b; the fields are polydir, instance prefix, method[:flag...] and an optional list of
 * user names (comma-separated; "~" first: only for them). $HOME and $USER are expanded.
 */
#include "import-namespace-conf.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "import-util.h"

/* the flags and options of nsd.conf(5)'s MountOptions= */
static const char *const nsd_mount_options[] = {
        "size",     "nr_blocks",   "nr_inodes",  "mode",        "uid",    "gid",
        "huge",     "mpol",        "inode32",    "inode64",     "noswap", "ro",
        "rw",       "noexec",      "exec",       "nosuid",      "nodev",  "noatime",
        "relatime", "strictatime", "nodiratime", "nosymfollow", NULL,
};

int ns_import_init(NsImport *im) {
        *im = (NsImport) { 0 };
        return import_out_init(&im->out);
}

void ns_import_done(NsImport *im) {
        import_out_done(&im->out);
        for (size_t i = 0; i < im->n_paths; i++) {
                free(im->paths[i]);
                free(im->paths_where[i]);
        }
        free(im->paths);
        free(im->paths_where);
        *im = (NsImport) { 0 };
}

/* ---- one line ---------------------------------------------------------------------------- */

typedef struct Line {
        ImportSite site;
        char *shown; /* the line as a comment may show it */
} Line;

/* A note: on stderr later, and above the line's group (or in place of it). */
#define note(l, lost, ...) import_note(&(l)->site, (lost), __VA_ARGS__)

/* pam_namespace's argv_parse(): fields, quotes, \n \t \b. */
static size_t split_fields(const char *line, char **fields, size_t max) {
        size_t n = 0;
        const char *p = line;

        for (;;) {
                char *out, *o;

                while (*p == ' ' || *p == '\t' || *p == '\v' || *p == '\f' || *p == '\r')
                        p++;
                if (!*p)
                        break;
                out = o = xrealloc(NULL, strlen(p) + 1);
                bool quoted = false;
                for (; *p; p++) {
                        if (quoted) {
                                if (*p == '"')
                                        quoted = false;
                                else
                                        *o++ = *p;
                                continue;
                        }
                        if (*p == ' ' || *p == '\t' || *p == '\v' || *p == '\f' || *p == '\r')
                                break;
                        if (*p == '"') {
                                quoted = true;
                                continue;
                        }
                        if (*p == '\\' && p[1]) {
                                p++;
                                *o++ = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p == 'b' ? '\b' : *p;
                                continue;
                        }
                        *o++ = *p;
                }
                *o = '\0';
                if (n < max)
                        fields[n++] = out;
                else
                        free(out);
        }
        return n;
}

/* $HOME (only first: nsd's %h starts a path) and $USER to nsd's specifiers; '%' to "%%";
 * runs of '/' to one. NULL with *why when it cannot be said in nsd's words. */
static char *to_template(const char *s, const char **why) {
        size_t n = strlen(s);
        char *out = xrealloc(NULL, 2 * n + 3), *o = out;
        const char *p = s;

        if (!import_valid_utf8(s)) {
                *why = "it is not valid UTF-8";
                free(out);
                return NULL;
        }
        if (strncmp(p, "$HOME", 5) == 0) {
                o = stpcpy(o, "%h");
                p += 5;
        }
        for (; *p; p++) {
                if (strncmp(p, "$HOME", 5) == 0) {
                        *why = "$HOME is not at its start (nsd's %h may only start a path)";
                        free(out);
                        return NULL;
                }
                if (strncmp(p, "$USER", 5) == 0) {
                        o = stpcpy(o, "%u");
                        p += 4;
                        continue;
                }
                if ((unsigned char) *p < 0x20 || *p == 0x7f) {
                        *why = "it holds a control character";
                        free(out);
                        return NULL;
                }
                if (*p == '%')
                        *o++ = '%';
                if (*p == '/' && o > out && o[-1] == '/')
                        continue;
                *o++ = *p;
        }
        *o = '\0';
        if (out[0] != '/' && strncmp(out, "%h", 2) != 0) {
                *why = "it is not an absolute path";
                free(out);
                return NULL;
        }
        if (strstr(out, "..")) {
                *why = "it contains '..' (pam_namespace skips such a line too)";
                free(out);
                return NULL;
        }
        return out;
}

/* A group name from a polydir template: "/var/tmp" "var-tmp", "%h/.cache" "home-.cache". */
static char *group_name(NsImport *im, const char *path) {
        char base[65];
        size_t n = 0;

        for (const char *p = path; *p && n < 56; p++) {
                char c = *p;

                if (c == '%' && p[1]) {
                        const char *w = p[1] == 'h' ? "home" : p[1] == 'u' ? "user" : "pct";
                        p++;
                        while (*w && n < 56)
                                base[n++] = *w++;
                        continue;
                }
                if (c == '/')
                        c = '-';
                else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '@' || c == '-'))
                        c = '_';
                if (c == '-' && (n == 0 || base[n - 1] == '-'))
                        continue;
                if ((c == '.') && n == 0)
                        continue;
                base[n++] = c;
        }
        while (n > 0 && base[n - 1] == '-')
                n--;
        base[n] = '\0';
        if (n == 0)
                strcpy(base, "polydir");
        return import_unique_name(&im->out.names, &im->out.n_names, base);
}

/* MountOptions= from mntopts=: what nsd knows; the rest named. */
static char *mount_options(Line *l, const char *v) {
        size_t n = strlen(v);
        char *out = xrealloc(NULL, n + 1), *o = out;
        const char *p = v;

        while (*p) {
                size_t len = strcspn(p, ","), key = strcspn(p, "=,");

                if (len > 0) {
                        if (strv_contains(nsd_mount_options, p, key) &&
                            !(key == 4 && strncmp(p, "suid", 4) == 0)) {
                                if (o > out)
                                        *o++ = ',';
                                memcpy(o, p, len);
                                o += len;
                        } else
                                note(l, true,
                                     "mount option '%.*s' is not carried over: nsd's "
                                     "MountOptions= does not take it (nsd.conf(5))",
                                     (int) len, p);
                }
                p += len;
                if (*p == ',')
                        p++;
        }
        *o = '\0';
        return out;
}

typedef struct Polyline {
        char *path;
        char *prefix;
        const char *method; /* nsd's */
        char *options;
        char *script;
        bool no_init;
        bool only;
        char *users; /* space-separated */
} Polyline;

static void polyline_done(Polyline *p) {
        free(p->path);
        free(p->prefix);
        free(p->options);
        free(p->script);
        free(p->users);
}

/* The method field: "user:noinit:iscript=x". false: the line cannot be carried. */
static bool parse_method(Line *l, char *field, Polyline *pl) {
        char *save = NULL, *m = strtok_r(field, ":", &save), *flag;
        bool tmpdir = false;

        if (!m) {
                note(l, true, "not carried over: no method");
                return false;
        }
        if (strcmp(m, "user") == 0)
                pl->method = "user";
        else if (strcmp(m, "tmpfs") == 0)
                pl->method = "tmpfs";
        else if (strcmp(m, "tmpdir") == 0) {
                pl->method = "tmpfs";
                tmpdir = true;
        } else if (strcmp(m, "level") == 0 || strcmp(m, "context") == 0) {
                note(l, true,
                     "not carried over: method '%s' makes an instance per SELinux %s, which nsd "
                     "does not do (Method=user gives one instance per user)",
                     m, strcmp(m, "level") == 0 ? "MLS level" : "security context");
                return false;
        } else {
                note(l, true, "not carried over: unknown method '%s'", m);
                return false;
        }
        while ((flag = strtok_r(NULL, ":", &save))) {
                if (strcmp(flag, "noinit") == 0)
                        pl->no_init = true;
                else if (strncmp(flag, "iscript=", 8) == 0) {
                        const char *v = flag + 8;

                        free(pl->script);
                        pl->script = v[0] == '/' ? xstrdup(v)
                                                 : xasprintf(NS_IMPORT_DEFAULT_DIR "/%s", v);
                        if (strchr(pl->script, '%') || strstr(pl->script, "..") || !v[0]) {
                                note(l, true,
                                     "iscript=%s is not carried over: nsd's InitScript= takes "
                                     "a plain absolute path",
                                     v);
                                free(pl->script);
                                pl->script = NULL;
                        }
                } else if (strncmp(flag, "mntopts=", 8) == 0) {
                        if (strcmp(pl->method, "tmpfs") != 0) {
                                note(l, true,
                                     "mntopts= is not carried over: it is for the tmpfs method "
                                     "(pam_namespace ignores it here too)");
                                continue;
                        }
                        free(pl->options);
                        pl->options = mount_options(l, flag + 8);
                } else if (strncmp(flag, "create", 6) == 0) {
                        note(l, true,
                             "%s is not carried over: nsd does not make polydirs; make it "
                             "beforehand (tmpfiles.d(5)), a missing polydir fails the setup",
                             flag);
                } else if (strcmp(flag, "shared") == 0) {
                        note(l, true,
                             "'shared' is not carried over: it shares level and context "
                             "instances, which nsd does not make");
                } else
                        note(l, true, "unknown flag '%s' is not carried over", flag);
        }
        if (tmpdir)
                note(l, false,
                     "method tmpdir (a fresh directory under the instance prefix per session, "
                     "removed at its end) becomes Method=tmpfs: a fresh tmpfs that lives as "
                     "long as the user's namespace");
        return true;
}

static void parse_users(Line *l, const char *field, Polyline *pl) {
        const char *p = field;
        size_t cap = strlen(field) + 1;
        char *out = xrealloc(NULL, cap), *o = out;

        if (*p == '~') {
                pl->only = true;
                p++;
        }
        while (*p) {
                size_t len = strcspn(p, ",");
                char *name = strndup(p, len);

                if (!name)
                        abort();
                if (len > 0 && import_valid_user_name(name)) {
                        if (o > out)
                                *o++ = ' ';
                        o = stpcpy(o, name);
                } else if (len > 0)
                        note(l, true, "user '%s' is not carried over: not a valid user name", name);
                free(name);
                p += len;
                if (*p == ',')
                        p++;
        }
        *o = '\0';
        if (out[0] == '\0' && pl->only)
                note(l, true,
                     "'~' with no valid user: pam_namespace makes this polydir for nobody; nsd "
                     "gets OnlyUsers= with nobody's uid 65534");
        pl->users = out;
}

static void import_line(NsImport *im, const char *file, unsigned no, char *line) {
        char *fields[4] = { 0 };
        Line l = { 0 };
        Polyline pl = { 0 };
        const char *why = NULL;
        size_t n;
        bool ok = false;

        import_site_open(&l.site, &im->out, file, no);
        /* '#' anywhere starts a comment, as pam_namespace reads it */
        line[strcspn(line, "#")] = '\0';
        n = split_fields(line, fields, 4);
        if (n == 0)
                goto done;
        /* what the comment above the group shows: the fields, printable */
        {
                char shown[512];
                size_t k = 0;
                for (size_t i = 0; i < n && k < sizeof shown - 4; i++) {
                        if (i > 0)
                                shown[k++] = ' ';
                        for (const unsigned char *p = (const unsigned char *) fields[i];
                             *p && k < sizeof shown - 4; p++)
                                shown[k++] = (*p >= 0x20 && *p < 0x7f) ? (char) *p : '?';
                }
                shown[k] = '\0';
                l.shown = xstrdup(shown);
        }
        if (n < 3) {
                note(&l, true,
                     "not carried over: a line needs a polydir, an instance prefix and "
                     "a method");
                goto done;
        }
        pl.path = to_template(fields[0], &why);
        if (!pl.path) {
                note(&l, true, "not carried over: polydir '%s': %s", l.shown, why);
                goto done;
        }
        while (strlen(pl.path) > 1 && pl.path[strlen(pl.path) - 1] == '/')
                pl.path[strlen(pl.path) - 1] = '\0'; /* as pam_namespace does */
        if (strcmp(pl.path, "/") == 0) {
                note(&l, true, "not carried over: '/' cannot be a polydir");
                goto done;
        }
        if (!parse_method(&l, fields[2], &pl))
                goto done;
        if (strcmp(pl.method, "user") == 0) {
                pl.prefix = to_template(fields[1], &why);
                if (!pl.prefix) {
                        note(&l, true, "not carried over: instance prefix '%s': %s", fields[1],
                             why);
                        goto done;
                }
        }
        if (fields[3])
                parse_users(&l, fields[3], &pl);
        for (size_t i = 0; i < im->n_paths; i++)
                if (strcmp(im->paths[i], pl.path) == 0) {
                        note(&l, true,
                             "not carried over: polydir %s is set up by %s already (nsd makes "
                             "one polydir per path)",
                             fields[0], im->paths_where[i]);
                        goto done;
                }
        ok = true;
done:
        import_site_close(&l.site);
        if (ok) {
                char *name = group_name(im, pl.path);

                fprintf(im->out.body, "\n# %s:%u: %s\n%s[Polydir %s]\n", file, no, l.shown,
                        l.site.comment ? l.site.comment : "", name);
                import_put_value(im->out.body, "Path", pl.path);
                fprintf(im->out.body, "Method=%s\n", pl.method);
                if (pl.prefix)
                        import_put_value(im->out.body, "InstancePrefix", pl.prefix);
                if (pl.options && pl.options[0])
                        fprintf(im->out.body, "MountOptions=%s\n", pl.options);
                if (pl.users && (pl.users[0] || pl.only))
                        fprintf(im->out.body, "%s=%s\n", pl.only ? "OnlyUsers" : "ExcludeUsers",
                                pl.users[0] ? pl.users : "65534");
                if (pl.no_init)
                        fprintf(im->out.body, "NoInit=yes\n");
                else if (pl.script)
                        import_put_value(im->out.body, "InitScript", pl.script);
                else
                        im->n_default_script++;
                im->paths = xrealloc(im->paths, (im->n_paths + 1) * sizeof(char *));
                im->paths_where = xrealloc(im->paths_where, (im->n_paths + 1) * sizeof(char *));
                im->paths[im->n_paths] = xstrdup(pl.path);
                im->paths_where[im->n_paths++] = xasprintf("%s:%u", file, no);
                im->n_polydirs++;
                free(name);
        } else if (l.shown)
                fprintf(im->out.body, "\n# %s:%u: %s\n%s", file, no, l.shown,
                        l.site.comment ? l.site.comment : "");
        for (size_t i = 0; i < 4; i++)
                free(fields[i]);
        free(l.shown);
        free(l.site.comment);
        polyline_done(&pl);
}

int ns_import_text(NsImport *im, const char *text, size_t len, const char *filename) {
        size_t pos = 0;
        unsigned no = 0;

        while (pos < len) {
                const char *start = text + pos, *nl = memchr(start, '\n', len - pos);
                size_t n = nl ? (size_t) (nl - start) : len - pos;
                char *line = strndup(start, n);

                if (!line)
                        return -ENOMEM;
                pos += n + (nl ? 1 : 0);
                no++;
                if (strlen(line) != n) { /* a NUL byte */
                        ImportSite site;

                        import_site_open(&site, &im->out, filename, no);
                        import_note(&site, true, "not carried over: the line contains a NUL byte");
                        import_site_close(&site);
                        fprintf(im->out.body, "\n# %s:%u:\n%s", filename, no, site.comment);
                        free(site.comment);
                } else
                        import_line(im, filename, no, line);
                free(line);
        }
        return 0;
}

char *ns_import_finish(NsImport *im, const char *const *sources, size_t n_sources,
                       const char *init_script) {
        char *out = NULL;
        size_t len = 0;
        FILE *f = import_dropin_open(&out, &len, &im->out, "import-namespace-conf",
                                     "pam_namespace's", sources, n_sources, "50-namespace.conf",
                                     "MIGRATING FROM PAM_NAMESPACE");
        if (im->n_polydirs == 0)
                fputs("# (no polydir: nothing to set up)\n", f);
        if (init_script && im->n_default_script > 0) {
                fputs("\n[Setup]\n# pam_namespace's default init script, run for each polydir "
                      "without its own\n",
                      f);
                import_put_value(f, "InitScript", init_script);
        }
        return import_dropin_close(f, &im->out, &out);
}

/* ---- the verb ---------------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* namespace.conf, then namespace.d/ *.conf in byte order, as pam_namespace reads them. */
static int default_sources(char ***ret, size_t *ret_n) {
        char **v = NULL;
        size_t n = 0;
        DIR *d;
        struct dirent *de;

        if (access(NS_IMPORT_DEFAULT_CONF, F_OK) == 0)
                strv_push(&v, &n, xstrdup(NS_IMPORT_DEFAULT_CONF));
        d = opendir(NS_IMPORT_DEFAULT_DIR);
        if (d) {
                size_t first = n;
                while ((de = readdir(d))) {
                        size_t len = strlen(de->d_name);
                        if (de->d_name[0] == '.' || len < 6 ||
                            strcmp(de->d_name + len - 5, ".conf") != 0)
                                continue;
                        strv_push(&v, &n, xasprintf(NS_IMPORT_DEFAULT_DIR "/%s", de->d_name));
                }
                closedir(d);
                qsort(v + first, n - first, sizeof(char *), cmp_str);
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

int verb_import_namespace_conf(int argc, char **argv) {
        enum { ARG_INIT_SCRIPT = 0x100, ARG_NO_INIT_SCRIPT };
        static const struct option options[] = {
                { "init-script", required_argument, NULL, ARG_INIT_SCRIPT },
                { "no-init-script", no_argument, NULL, ARG_NO_INIT_SCRIPT },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        static const excl_group_t excl[] = { { ARG_INIT_SCRIPT, ARG_NO_INIT_SCRIPT, 0 } };
        int excl_status[1] = { 0 };
        const char *init_script = NULL;
        bool no_init_script = false;
        char **sources = NULL, *out = NULL;
        size_t n_sources = 0;
        NsImport im;
        int c, r, status = EXIT_SUCCESS;

        optind = 1;
        while ((c = getopt_long(argc, argv, "+:h", options, NULL)) >= 0) {
                if (exclusive_options(c, options, excl, 1, excl_status))
                        return EXIT_FAILURE;
                switch (c) {
                case 'h':
                        printf("Usage:\n"
                               " nsctl import-namespace-conf [options] [<file>...]\n"
                               "\n"
                               "Print pam_namespace's configuration as an nsd drop-in. Without "
                               "<file>,\n"
                               "read " NS_IMPORT_DEFAULT_CONF " and " NS_IMPORT_DEFAULT_DIR
                               "/*.conf.\n"
                               "What cannot be carried over is named on stderr (exit status "
                               "2).\n"
                               "\n"
                               "Options:\n"
                               "     --init-script <path>  the default init script (default:\n"
                               "                           " NS_IMPORT_DEFAULT_INIT
                               " if it exists)\n"
                               "     --no-init-script      no default init script\n"
                               " -h, --help                display this help\n" USAGE_MAN_TAIL);
                        return EXIT_SUCCESS;
                case ARG_INIT_SCRIPT:
                        if (optarg[0] != '/')
                                return usage_error("--init-script needs an absolute path, not "
                                                   "'%s'",
                                                   optarg);
                        init_script = optarg;
                        break;
                case ARG_NO_INIT_SCRIPT:
                        no_init_script = true;
                        break;
                default:
                        return option_error(c, argv);
                }
        }
        if (!init_script && !no_init_script && access(NS_IMPORT_DEFAULT_INIT, X_OK) == 0)
                init_script = NS_IMPORT_DEFAULT_INIT;

        if (optind < argc)
                for (int i = optind; i < argc; i++)
                        strv_push(&sources, &n_sources, xstrdup(argv[i]));
        else
                default_sources(&sources, &n_sources);
        if (n_sources == 0) {
                fprintf(stderr, "nsctl: cannot import: neither " NS_IMPORT_DEFAULT_CONF
                                " nor " NS_IMPORT_DEFAULT_DIR "/*.conf exists\n");
                return EXIT_FAILURE;
        }

        r = ns_import_init(&im);
        if (r < 0) {
                fprintf(stderr, "nsctl: cannot import: %s\n", strerror(-r));
                goto out_sources;
        }
        for (size_t i = 0; i < n_sources; i++) {
                _cleanup_free_ char *text = NULL;
                size_t len = 0;

                r = import_read_file(sources[i], &text, &len);
                if (r < 0) {
                        fprintf(stderr, "nsctl: cannot read '%s': %s\n", sources[i], strerror(-r));
                        status = EXIT_FAILURE;
                        goto out;
                }
                r = ns_import_text(&im, text, len, sources[i]);
                if (r < 0) {
                        fprintf(stderr, "nsctl: cannot import '%s': %s\n", sources[i],
                                strerror(-r));
                        status = EXIT_FAILURE;
                        goto out;
                }
        }
        out = ns_import_finish(&im, (const char *const *) sources, n_sources,
                               no_init_script ? NULL : init_script);
        status = import_print(out, im.out.notes, im.out.n_notes, im.out.lost);
out:
        free(out);
        ns_import_done(&im);
out_sources:
        for (size_t i = 0; i < n_sources; i++)
                free(sources[i]);
        free(sources);
        return r < 0 && status == EXIT_SUCCESS ? EXIT_FAILURE : status;
}
