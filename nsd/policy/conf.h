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

#include "policy/conf-files.h"
#include "policy/setup-conf.h"

#define CONFIG_LINGER_FOREVER INT64_C(-1)
#define CONFIG_RESERVED_AUTO UINT32_MAX

typedef struct Config {
        /* [Namespaces] */
        char **users;  /* NULL-terminated: "@regular", user names or numeric uids */
        char **groups; /* NULL-terminated: group names or numeric gids */
        uid_t min_uid; /* @regular: MinUid <= uid <= MaxUid */
        uid_t max_uid;
        bool propagation_private; /* Propagation=private (default slave) */
        bool private_tmp;         /* PrivateTmp= */
        int64_t linger_sec;       /* Linger=: CONFIG_LINGER_FOREVER or seconds (0 = at once) */
        /* OnLookupTimeout=unmanaged: a uid whose managed-lookup is past LookupTimeoutSec= is
         * not managed for that request; false (refuse): the request gets -ETIMEDOUT */
        bool lookup_timeout_unmanaged;
        /* [Limits]: counts */
        unsigned max_namespaces; /* as configured; the effective one is server.c's */
        unsigned max_sessions_per_user;
        unsigned max_connections_per_user;        /* unprivileged callers */
        unsigned max_connections;                 /* unprivileged callers in all */
        unsigned reserved_connections;            /* of max_connections: for MinUid..MaxUid only;
                                            * CONFIG_RESERVED_AUTO: a quarter of them */
        unsigned max_root_connections;            /* uid 0, on either socket: a bound of its own */
        unsigned max_setuid_connections_per_user; /* root's whose real uid is a user's */
        unsigned request_rate_per_user;           /* token bucket: requests a second per uid ... */
        unsigned request_burst_per_user;          /* ... and its depth (root is exempt) */
        unsigned max_queued_replies;              /* replies waiting per connection */
        unsigned max_lookup_threads;              /* threads that may sit in NSS at once */
        unsigned max_path_walks;                  /* path-walk helper children alive at once */
        /* [Limits]: times, in microseconds */
        uint64_t idle_timeout_usec;           /* a connection with nothing to do is dropped */
        uint64_t reply_timeout_usec;          /* a client whose replies do not drain is dropped */
        uint64_t lookup_timeout_usec;         /* an NSS lookup past this: -ETIMEDOUT */
        uint64_t lookup_cache_usec;           /* policy answers kept per uid (0: none) */
        uint64_t path_walk_timeout_usec;      /* a HIDE or mode-private walk past this: killed */
        uint64_t setuid_request_timeout_usec; /* a set-uid program's first request by then */
        /* [Private] */
        bool private_mode; /* Enable=: mode private, owner-private user FUSE mounts */
        bool born_private; /* BornPrivate=: with F4b, the initial namespace's mounts get the
                            * policy that makes users' new mounts born owner-private */
        /* [Setup], [Polydir NAME], [BindReadOnly NAME], [Share NAME] (PrivateTmp=yes is a
         * polydir there) */
        SetupConf setup;
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

/* Several files read as one configuration (ConfigText: conf-files.h), in this order
 * (nsd.conf, then its drop-ins): a key set in two of them, or an object ([Polydir NAME],
 * [BindReadOnly NAME], [Share NAME]) defined in two, is an error naming both places. */
int config_parse_texts(const ConfigText *texts, size_t n, Config *ret, char **ret_error);

/* Read and parse path and its drop-ins, path + ".d/" *.conf in lexical order (conf-files.h:
 * each must be owned by root, or by the user nsd runs as, and writable by nobody else). A
 * missing path gives the defaults (plus drop-ins) and *ret_missing = true. */
int config_load(const char *path, Config *ret, bool *ret_missing, char **ret_error);

/* A deep copy of src into *dst (which is overwritten, not freed). */
void config_copy(Config *dst, const Config *src);

/*
 * Policy: does nsd manage a namespace for uid?
 *
 * config_uid_managed_inline() answers what needs no user database: uid 0, nobody and -1
 * never; @regular (MinUid..MaxUid) and numeric uids in Users=. Returns 1 (managed), 0 (not,
 * *ret_why says why) or CONFIG_NEEDS_LOOKUP when only NSS can tell (user names in Users=, or
 * any Groups=). Never blocks.
 *
 * config_uid_managed_lookup() is the rest, through NSS (common/nss-util.h, which retries
 * ERANGE, so a group of 3000 members works): the uid's passwd entry (getpwuid); managed when
 * its name is listed in Users=, or when one of its groups (getgrouplist) is in Groups=.
 * Returns 1, 0 (with *ret_why) or -errno when the user database failed (not "no such
 * user", which is 0). BLOCKS for as long as NSS does: nsd calls it in a worker thread only
 * (policy.c). Thread-safe for a Config that nobody changes meanwhile.
 *
 * config_uid_managed(): both in a row, for tests and tools; a failed lookup counts as
 * not managed. *ret_why is g_malloc()ed ("uid 999 is outside MinUid=1000..MaxUid=60000 and
 * not listed in Users= or Groups= of nsd.conf").
 */
#define CONFIG_NEEDS_LOOKUP 2
int config_uid_managed_inline(const Config *c, uid_t uid, char **ret_why);
int config_uid_managed_lookup(const Config *c, uid_t uid, char **ret_why);
bool config_uid_managed(const Config *c, uid_t uid, char **ret_why);
/* "uid 999 is outside MinUid=1000..MaxUid=60000 and not listed in Users= or Groups= of
 * nsd.conf" (g_malloc()ed): the reason once every rule was tried. */
char *config_not_managed_why(const Config *c, uid_t uid);

/* "2.5" for 2500000: a time in seconds for messages (up to milliseconds). Returns buf. */
const char *config_usec_to_string(uint64_t usec, char *buf, size_t size);

/* ReservedConnections= in force: as set, or a quarter of MaxConnections= when not set. */
unsigned config_reserved_connections(const Config *c);

/* "Linger=forever" or "Linger=30": for log lines. Returns buf. */
const char *config_linger_to_string(const Config *c, char *buf, size_t size);
