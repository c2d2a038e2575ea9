/* SPDX-License-Identifier: GPL-2.0-only */
#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "json.h"

/* The length of the valid UTF-8 sequence at p (1 to 4), or 0 when it is not one. */
static size_t utf8_valid_at(const unsigned char *p) {
        uint32_t cp;
        size_t n;

        if (p[0] < 0x80)
                return 1;
        if (p[0] >= 0xc2 && p[0] <= 0xdf)
                n = 2, cp = p[0] & 0x1f;
        else if (p[0] >= 0xe0 && p[0] <= 0xef)
                n = 3, cp = p[0] & 0x0f;
        else if (p[0] >= 0xf0 && p[0] <= 0xf4)
                n = 4, cp = p[0] & 0x07;
        else
                return 0; /* a continuation byte, 0xc0/0xc1 (overlong) or 0xf5.. */
        for (size_t i = 1; i < n; i++) {
                if ((p[i] & 0xc0) != 0x80) /* also stops at the NUL */
                        return 0;
                cp = (cp << 6) | (p[i] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return n;
}

char *utf8_escape_invalid(const char *s) {
        static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
        const unsigned char *p = (const unsigned char *) s;
        char *buf, *q;

        /* at worst every byte becomes three */
        buf = malloc(strlen(s) * 3 + 1);
        if (!buf)
                return NULL;
        for (q = buf; *p;) {
                size_t n = utf8_valid_at(p);

                if (n == 0) {
                        memcpy(q, replacement, 3);
                        q += 3;
                        p++;
                } else {
                        memcpy(q, p, n);
                        q += n;
                        p += n;
                }
        }
        *q = '\0';
        return buf;
}

/* JSON's two-character escapes; other control characters become \u00XX */
static const char *const json_escapes[256] = {
        ['"'] = "\\\"", ['\\'] = "\\\\", ['\n'] = "\\n", ['\t'] = "\\t",
        ['\r'] = "\\r", ['\b'] = "\\b",  ['\f'] = "\\f",
};

static void write_quoted(FILE *out, const char *s) {
        _cleanup_free_ char *valid = utf8_escape_invalid(s);

        fputc('"', out);
        for (const unsigned char *p = (const unsigned char *) (valid ?: ""); *p; p++) {
                if (json_escapes[*p])
                        fputs(json_escapes[*p], out);
                else if (*p < 0x20)
                        fprintf(out, "\\u%04x", *p);
                else
                        fputc(*p, out);
        }
        fputc('"', out);
}

/* The separator before a member, its indent and its key. */
static void member_start(struct json_writer *w, const char *name) {
        if (w->has_member[w->depth])
                fputc(',', w->out);
        if (w->depth > 0)
                fputc('\n', w->out);
        w->has_member[w->depth] = true;
        for (unsigned i = 0; i < w->depth; i++)
                fputs("   ", w->out);
        if (name) {
                write_quoted(w->out, name);
                fputs(": ", w->out);
        }
}

void json_open(struct json_writer *w, FILE *out) {
        *w = (struct json_writer) { .out = out };
        json_object_open(w, NULL);
}

void json_close(struct json_writer *w) {
        json_object_close(w);
        assert(w->depth == 0);
        fputc('\n', w->out);
}

void json_object_open(struct json_writer *w, const char *name) {
        assert(w->depth + 1 < JSON_DEPTH_MAX);
        member_start(w, name);
        fputc('{', w->out);
        w->has_member[++w->depth] = false;
}

void json_object_close(struct json_writer *w) {
        assert(w->depth > 0);
        w->depth--;
        fputc('\n', w->out);
        for (unsigned i = 0; i < w->depth; i++)
                fputs("   ", w->out);
        fputc('}', w->out);
}

void json_string(struct json_writer *w, const char *name, const char *value) {
        member_start(w, name);
        if (value)
                write_quoted(w->out, value);
        else
                fputs("null", w->out);
}

void json_uint(struct json_writer *w, const char *name, uint64_t value) {
        member_start(w, name);
        fprintf(w->out, "%" PRIu64, value);
}

void json_bool(struct json_writer *w, const char *name, bool value) {
        member_start(w, name);
        fputs(value ? "true" : "false", w->out);
}
