/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * import-test.h: what the tests of nsctl's importers share (test-import.c,
 * test-import-pam-mount.c): a converter's output, its notes, and the drop-in read back by
 * nsd's own parser (nsd/policy/conf.c). Header-only, as tap.h.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import-util.h"
#include "policy/conf.h"
#include "tap.h"

typedef struct Out {
        int r; /* the converter's */
        char *error;
        char *text;
        char *notes; /* joined by "\n" */
        bool lost;
        int parsed; /* config_parse_text() of the text */
        char *parse_error;
        Config config;
} Out;

/* text (taken) and what im says, the text read by nsd's parser */
static inline void out_read(Out *o, const ImportOut *im, char *text) {
        size_t len = 0;
        FILE *f = open_memstream(&o->notes, &len);

        if (!f)
                tap_bail_errno("open_memstream");
        for (size_t i = 0; i < im->n_notes; i++)
                fprintf(f, "%s\n", im->notes[i]);
        fclose(f);
        o->text = text;
        o->lost = im->lost;
        o->parsed = config_parse_text(o->text, strlen(o->text), "drop-in.conf", &o->config,
                                      &o->parse_error);
}

static inline void out_done(Out *o) {
        free(o->error);
        free(o->text);
        free(o->notes);
        free(o->parse_error);
        if (o->parsed == 0)
                config_done(&o->config);
}

static inline bool has(const char *hay, const char *needle) {
        return hay && strstr(hay, needle);
}

/* Does the drop-in hold each of the NULL-terminated strings of ap? Says which it misses. */
static inline bool out_has_all(const Out *o, va_list ap) {
        bool all = true;

        for (const char *s; (s = va_arg(ap, const char *));)
                if (!has(o->text, s)) {
                        printf("# missing: %s\n", s);
                        all = false;
                }
        return all;
}

/* After a failed point: what the converter and nsd said, and the drop-in. */
static inline void out_show(const Out *o) {
        char *copy = strdup(o->text ? o->text : "");

        printf("# r=%d error: %s\n# parse: %s\n# notes: %s\n", o->r, o->error ? o->error : "-",
               o->parse_error ? o->parse_error : "ok", o->notes ? o->notes : "");
        for (char *l = strtok(copy, "\n"); l; l = strtok(NULL, "\n"))
                printf("#   %s\n", l);
        free(copy);
}

/* A point: cond, and the drop-in holds each of the NULL-terminated strings of ap; o done. */
static inline void out_point(Out *o, bool cond, const char *what, va_list ap) {
        bool all = out_has_all(o, ap) && cond;

        if (!ok(all, "%s", what))
                out_show(o);
        out_done(o);
}
