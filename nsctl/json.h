/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * nsctl: the one JSON writer for what is not a table (status), in the layout libsmartcols
 * gives list and show (three-space indent, "key": value), so every --json of nsctl reads
 * alike. Modelled on util-linux's ul_jsonwrt. Private to nsctl.
 *
 *     struct json_writer w;
 *     json_open(&w, stdout);             {
 *     json_object_open(&w, "status");       "status": {
 *     json_string(&w, "version", v);          "version": "1.2",
 *     json_object_close(&w);                 }
 *     json_close(&w);                     }
 *
 * Strings come out as valid UTF-8 JSON whatever their bytes: control characters escaped,
 * invalid UTF-8 replaced by U+FFFD (see utf8_escape_invalid()).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/*
 * The version of nsctl's JSON: the member "schema_version", first in every --json output.
 * nsctl.schema.json describes each output of this version; nsctl(1), JSON OUTPUT, has the
 * rules: members and values are only ever added, each release that adds one adds 1 here (and
 * to the schema's "const"), nothing is removed, renamed or changes type or meaning.
 *   1  nsctl 0.2: status, list and show as nsctl 0.1 wrote them, plus "schema_version"
 *   2  list: "setup", "current" or "stale" (the namespace was made with an older setup of
 *      nsd.conf, issue 22)
 *   3  shares (nsctl shares --json, issue 24)
 *   4  volumes (nsctl volumes --json, issue 25)
 *   5  volumes: "now", mounted, not-mounted or locked (null: nsd did not say)
 *   6  volumes: "state" "stopped", a kernel volume not mounted now (protocol 1.11); "start"
 *      and "release", from Start= and Release=
 */
#define NSCTL_JSON_SCHEMA_VERSION 7

#define JSON_DEPTH_MAX 8

struct json_writer {
        FILE *out;
        unsigned depth;
        bool has_member[JSON_DEPTH_MAX]; /* a member was written at this depth: next needs ',' */
};

void json_open(struct json_writer *w, FILE *out);
void json_close(struct json_writer *w);
void json_object_open(struct json_writer *w, const char *name);
void json_object_close(struct json_writer *w);
void json_string(struct json_writer *w, const char *name, const char *value); /* NULL: null */
void json_uint(struct json_writer *w, const char *name, uint64_t value);
void json_bool(struct json_writer *w, const char *name, bool value);

/* A malloc()ed copy of s in which every byte sequence that is not valid UTF-8 (a stray
 * continuation byte, a truncated sequence, an overlong form, a surrogate, beyond U+10FFFF)
 * is replaced by U+FFFD, as systemd's utf8_escape_invalid() does. NULL on ENOMEM. */
char *utf8_escape_invalid(const char *s);
