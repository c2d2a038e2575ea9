/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * import-util.h: what nsctl's importers share (import-namespace-conf, import-pam-mount):
 * reading a source file with a cap, the notes on what was not carried over ("FILE:LINE:
 * what", on stderr and as comments in the drop-in), nsd.conf(5)'s value quoting and group
 * names made unique. Out of memory aborts (nsctl cannot go on without it). Private to nsctl.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* What an importer has made so far. */
typedef struct ImportOut {
        FILE *body; /* the groups of the drop-in (open_memstream) */
        char *body_buf;
        size_t body_len;
        char **notes; /* "FILE:LINE: what", one per thing not carried over */
        size_t n_notes;
        char **names; /* the group names used */
        size_t n_names;
        bool lost; /* something was not carried over */
} ImportOut;

int import_out_init(ImportOut *o);
void import_out_done(ImportOut *o);

/* The drop-in, in a memstream onto *buf and *len (set when it is closed), its first lines
 * written: "nsctl verb" wrote it from which files of whom, to be saved as
 * /etc/nsd/nsd.conf.d/save_as, and the section of nsd.conf(5) to read. The caller adds what
 * goes before the groups; import_dropin_close() adds them. */
FILE *import_dropin_open(char **buf, size_t *len, ImportOut *o, const char *verb, const char *whose,
                         const char *const *sources, size_t n_sources, const char *save_as,
                         const char *see);
/* The groups after what the caller added, and the stream closed: *buf, the drop-in. */
char *import_dropin_close(FILE *f, ImportOut *o, char **buf);

/* What an importer reads of one file at the most. */
#define IMPORT_READ_MAX (16u << 20)

char *xstrdup(const char *s);
void *xrealloc(void *p, size_t n);
__attribute__((format(printf, 1, 2))) char *xasprintf(const char *fmt, ...);
void strv_push(char ***v, size_t *n, char *s /* taken */);
void strv_free(char **v, size_t n);
/* Is the n bytes at s one of the NULL-terminated v? */
bool strv_contains(const char *const *v, const char *s, size_t n);

/* The whole file at path (at most IMPORT_READ_MAX bytes: -EFBIG beyond), malloc()ed and
 * NUL-terminated past *ret_len. 0 or -errno. */
int import_read_file(const char *path, char **ret, size_t *ret_len);

/* Is s valid UTF-8 (nsd.conf is read as such)? */
bool import_valid_utf8(const char *s);

/* A user or group name nsd's Users=/Groups= take (useradd(8)'s portable names). */
bool import_valid_user_name(const char *s);

/* One construct of a source (a line, an element) while it is converted: where it stands, and
 * its notes as the comment the drop-in shows above it. */
typedef struct ImportSite {
        ImportOut *out;
        const char *file;
        unsigned no;
        FILE *c;       /* open between import_site_open() and import_site_close() */
        char *comment; /* after import_site_close(): the notes ("#   what" lines), or NULL */
        size_t comment_len;
} ImportSite;

/* s at file:no, its comment open (out of memory aborts). The caller frees s->comment. */
void import_site_open(ImportSite *s, ImportOut *out, const char *file, unsigned no);
void import_site_close(ImportSite *s);

/* A note on s: "FILE:LINE: what" pushed to its out's notes (each byte that is not printable
 * ASCII a '?') and "#   what" written to its comment; lost: something is not carried over. */
void import_note(ImportSite *s, bool lost, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* A key file line "key=v": backslashes, a leading space and tabs escaped. */
void import_put_value(FILE *f, const char *key, const char *v);

/* base, or base-2, base-3, ...: the first not in *names, which it is added to. malloc()ed. */
char *import_unique_name(char ***names, size_t *n_names, const char *base);

/* The verbs' end: the drop-in on stdout, each note as "nsctl: NOTE" on stderr; the exit
 * status (0, or 2 when lost). */
int import_print(const char *dropin, char *const *notes, size_t n_notes, bool lost);
