/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * import-util.c: what nsctl's importers share, see import-util.h.
 */
#include "import-util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

char *xstrdup(const char *s) {
        char *d = strdup(s);
        if (!d)
                abort(); /* nsctl: out of memory is fatal */
        return d;
}

void *xrealloc(void *p, size_t n) {
        void *q = realloc(p, n ? n : 1);
        if (!q)
                abort();
        return q;
}

__attribute__((format(printf, 1, 0))) static char *xvasprintf(const char *fmt, va_list ap) {
        char *s = NULL;

        if (vasprintf(&s, fmt, ap) < 0)
                abort();
        return s;
}

char *xasprintf(const char *fmt, ...) {
        va_list ap;
        char *s;

        va_start(ap, fmt);
        s = xvasprintf(fmt, ap);
        va_end(ap);
        return s;
}

void strv_push(char ***v, size_t *n, char *s /* taken */) {
        *v = xrealloc(*v, (*n + 1) * sizeof(char *));
        (*v)[(*n)++] = s;
}

void strv_free(char **v, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

bool strv_contains(const char *const *v, const char *s, size_t n) {
        for (; *v; v++)
                if (strlen(*v) == n && strncmp(*v, s, n) == 0)
                        return true;
        return false;
}

int import_out_init(ImportOut *o) {
        *o = (ImportOut) { 0 };
        o->body = open_memstream(&o->body_buf, &o->body_len);
        return o->body ? 0 : -errno;
}

void import_out_done(ImportOut *o) {
        if (o->body)
                fclose(o->body);
        free(o->body_buf);
        strv_free(o->notes, o->n_notes);
        strv_free(o->names, o->n_names);
        *o = (ImportOut) { 0 };
}

FILE *import_dropin_open(char **buf, size_t *len, ImportOut *o, const char *verb, const char *whose,
                         const char *const *sources, size_t n_sources, const char *save_as,
                         const char *see) {
        FILE *f = open_memstream(buf, len);

        if (!f)
                abort();
        fflush(o->body);
        fprintf(f, "# nsd drop-in written by 'nsctl %s' from %s\n", verb, whose);
        for (size_t i = 0; i < n_sources; i++)
                fprintf(f, "#   %s\n", sources[i]);
        fprintf(f,
                "# Save it as /etc/nsd/nsd.conf.d/%s (root's, mode 0644), check it\n"
                "# with 'nsd --check-config', then reload nsd. What could not be carried over is\n"
                "# named below. See nsd.conf(5), \"%s\".\n",
                save_as, see);
        return f;
}

char *import_dropin_close(FILE *f, ImportOut *o, char **buf) {
        fwrite(o->body_buf, 1, o->body_len, f);
        fclose(f);
        return *buf;
}

int import_read_file(const char *path, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;
        FILE *f = fopen(path, "re");

        if (!f)
                return -errno;
        for (;;) {
                size_t n;

                if (cap - len < 4096) {
                        if (cap > IMPORT_READ_MAX) {
                                fclose(f);
                                return -EFBIG;
                        }
                        cap = cap ? cap * 2 : 8192;
                        if (cap > IMPORT_READ_MAX)
                                cap = IMPORT_READ_MAX + 8192;
                        buf = xrealloc(buf, cap);
                }
                n = fread(buf + len, 1, cap - len - 1, f);
                len += n;
                if (n == 0)
                        break;
        }
        if (ferror(f)) {
                int e = errno ? errno : EIO;
                fclose(f);
                return -e;
        }
        fclose(f);
        if (len > IMPORT_READ_MAX)
                return -EFBIG;
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

bool import_valid_utf8(const char *s) {
        const unsigned char *p = (const unsigned char *) s;

        while (*p) {
                size_t n = *p < 0x80             ? 0
                           : (*p & 0xe0) == 0xc0 ? 1
                           : (*p & 0xf0) == 0xe0 ? 2
                           : (*p & 0xf8) == 0xf0 ? 3
                                                 : 9;
                if (n == 9 || (n == 1 && *p < 0xc2))
                        return false;
                p++;
                for (; n > 0; n--, p++)
                        if ((*p & 0xc0) != 0x80)
                                return false;
        }
        return true;
}

bool import_valid_user_name(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > 32 ||
            !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_' ||
              (s[0] >= '0' && s[0] <= '9')))
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.' || (c == '$' && i == n - 1))
                        continue;
                return false;
        }
        return true;
}

void import_site_open(ImportSite *s, ImportOut *out, const char *file, unsigned no) {
        *s = (ImportSite) { .out = out, .file = file, .no = no };
        s->c = open_memstream(&s->comment, &s->comment_len);
        if (!s->c)
                abort();
}

void import_site_close(ImportSite *s) {
        fclose(s->c);
        s->c = NULL;
}

void import_note(ImportSite *s, bool lost, const char *fmt, ...) {
        va_list ap;
        char *what;

        va_start(ap, fmt);
        what = xvasprintf(fmt, ap);
        va_end(ap);
        /* it may quote the source: keep it one printable line */
        for (char *p = what; *p; p++)
                if ((unsigned char) *p < 0x20 || (unsigned char) *p >= 0x7f)
                        *p = '?';
        strv_push(&s->out->notes, &s->out->n_notes, xasprintf("%s:%u: %s", s->file, s->no, what));
        fprintf(s->c, "#   %s\n", what);
        free(what);
        s->out->lost = s->out->lost || lost;
}

void import_put_value(FILE *f, const char *key, const char *v) {
        fprintf(f, "%s=", key);
        for (const char *p = v; *p; p++) {
                if (*p == '\\')
                        fputs("\\\\", f);
                else if (*p == ' ' && p == v)
                        fputs("\\s", f);
                else if (*p == '\t')
                        fputs("\\t", f);
                else
                        fputc(*p, f);
        }
        fputc('\n', f);
}

char *import_unique_name(char ***names, size_t *n_names, const char *base) {
        char *name = xstrdup(base);

        for (unsigned k = 2;; k++) {
                bool used = false;
                for (size_t i = 0; i < *n_names && !used; i++)
                        used = strcmp((*names)[i], name) == 0;
                if (!used)
                        break;
                free(name);
                name = xasprintf("%s-%u", base, k);
        }
        strv_push(names, n_names, xstrdup(name));
        return name;
}

int import_print(const char *dropin, char *const *notes, size_t n_notes, bool lost) {
        fputs(dropin, stdout);
        for (size_t i = 0; i < n_notes; i++)
                fprintf(stderr, "nsctl: %s\n", notes[i]);
        return lost ? 2 : EXIT_SUCCESS;
}
