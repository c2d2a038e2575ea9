/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conf.h: nsd.conf, see nsd.conf(5). A GKeyFile-syntax file; every error names FILE:LINE and
 * the key, and unknown groups or keys are errors (a typo must not pass silently).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CONFIG_LINGER_FOREVER INT64_C(-1)

typedef struct Config {
        /* [Namespaces] */
        char **users;              /* NULL-terminated: "@regular", user names or numeric uids */
        char **groups;             /* NULL-terminated: group names or numeric gids */
        uid_t min_uid;             /* @regular: MinUid <= uid <= MaxUid */
        uid_t max_uid;
        bool propagation_private;  /* Propagation=private (default slave) */
        bool private_tmp;          /* PrivateTmp= */
        int64_t linger_sec;        /* Linger=: CONFIG_LINGER_FOREVER or seconds (0 = at once) */
        /* [Limits] */
        unsigned max_namespaces;
        unsigned max_sessions_per_user;
        unsigned max_connections_per_user;
        unsigned max_connections;
        /* [Private] */
        bool private_mode;         /* Enable=: mode private, owner-private user FUSE mounts */
} Config;

/* Fill ret with the defaults (the commented values of the installed nsd.conf). */
void config_init_defaults(Config *ret);
/* Free what a Config holds (not the struct itself); leaves it zeroed. NULL is fine. */
void config_done(Config *c);
/* Move *src into *dst (after config_done(dst)); src is left zeroed. */
void config_move(Config *dst, Config *src);

/* Parse text (len bytes, not necessarily NUL-terminated). filename is only used in messages.
 * On failure returns -EINVAL (or -ENOMEM) and *ret_error is a g_malloc()ed
 * "FILE:LINE: what" message; *ret is written only on success. Pure: no file or NSS access. */
int config_parse_text(const char *text, size_t len, const char *filename, Config *ret,
                      char **ret_error);

/* Read and parse path. A missing file gives the defaults and *ret_missing = true. */
int config_load(const char *path, Config *ret, bool *ret_missing, char **ret_error);

/* Policy: does nsd manage a namespace for uid? When not, *ret_why (g_malloc()ed) says why
 * ("uid 999 is below MinUid=1000 and not listed in Users= or Groups="). Looks up user and
 * group names through NSS (getpwnam_r, getpwuid_r, getgrouplist). */
bool config_uid_managed(const Config *c, uid_t uid, char **ret_why);

/* "Linger=forever" or "Linger=30": for log lines. Returns buf. */
const char *config_linger_to_string(const Config *c, char *buf, size_t size);
