/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * nsctl: show and steer nsd, the daemon that keeps one mount namespace per user.
 * See nsctl(1).
 */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libsmartcols.h>

#include "cleanup.h"
#include "cli.h"
#include "config.h"
#include "exposition.h"
#include "import-namespace-conf.h"
#include "import-pam-mount.h"
#include "json.h"
#include "mount-tree.h"
#include "nsclient.h"
#include "nsctl-cleanup.h"
#include "nsd-protocol.h"
#include "nss-util.h"
#include "output.h"
#include "time-util.h"
#include "volumes.h"

#define EXIT_EXEC_FAILED 126
#define EXIT_EXEC_ENOENT 127

/* the values of options without a short form */
enum {
        ARG_SOCKET = 0x100,
        ARG_MODE,
        ARG_UNHIDE,
        ARG_OUTPUT_ALL,
        ARG_TEXTFILE,
};

/* parse_args(): the command goes on (any other value is nsctl's exit status) */
#define GO_ON (-1)

static const char *arg_socket = NULL;

/* ---- messages -------------------------------------------------------------------------- */

static const char *socket_path_shown(void) {
        const char *e;

        if (arg_socket)
                return arg_socket;
        e = secure_getenv("NSD_SOCKET"); /* as libnsclient does */
        if (e && *e)
                return e;
        if (geteuid() == 0 && access(NSD_ROOT_SOCKET_PATH_DEFAULT, F_OK) == 0)
                return NSD_ROOT_SOCKET_PATH_DEFAULT;
        return NSD_SOCKET_PATH_DEFAULT;
}

/* "nsctl: cannot <what>: <strerror> (<why>)", why being nsd's reason (NULL or "": none, then
 * no parentheses); returns EXIT_FAILURE */
__attribute__((format(printf, 3, 4))) static int fail_why(const char *why, int r, const char *fmt,
                                                          ...) {
        va_list ap;

        fputs("nsctl: cannot ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, ": %s", strerror(-r));
        if (why && *why)
                fprintf(stderr, " (%s)", why);
        fputc('\n', stderr);
        return EXIT_FAILURE;
}

/* nsd's reason for the last refusal on conn (NULL: none, also for no connection) */
static const char *conn_why(nsc_conn *conn) {
        return conn ? nsc_last_error_message(conn) : NULL;
}

/* fail_why() with the reason nsd gave on conn */
#define fail(conn, r, ...) fail_why(conn_why(conn), r, __VA_ARGS__)

/* ---- users and connections ------------------------------------------------------------- */

/* A user name or a numeric uid. -ENOENT: no such user; -ERANGE: not a valid uid. */
static int parse_user(const char *s, uid_t *ret_uid) {
        _cleanup_free_ struct passwd *pw = NULL;
        int r;

        if (!s || !*s)
                return -EINVAL;
        if (strspn(s, "0123456789") == strlen(s)) {
                unsigned long long v;
                char *end;

                errno = 0;
                v = strtoull(s, &end, 10);
                if (errno != 0 || *end != '\0' || v >= (uid_t) -1)
                        return -ERANGE;
                *ret_uid = (uid_t) v;
                return 0;
        }
        r = nss_user_by_name(s, &pw);
        if (r < 0)
                return r;
        *ret_uid = pw->pw_uid;
        return 0;
}

/* parse_user() with the message for the user; 0 or EXIT_FAILURE */
static int resolve_user(const char *s, uid_t *ret_uid) {
        int r = parse_user(s, ret_uid);

        if (r == -ENOENT)
                return usage_error("unknown user '%s'", s);
        if (r == -ERANGE || r == -EINVAL)
                return usage_error("invalid user '%s'", s);
        if (r < 0) {
                fprintf(stderr, "nsctl: cannot look up user '%s': %s\n", s, strerror(-r));
                return EXIT_FAILURE;
        }
        return 0;
}

/* the command's <user> argument at argv[optind] */
static int user_arg(const char *verb, int argc, char **argv, uid_t *ret_uid) {
        if (optind >= argc)
                return usage_error("%s: missing user", verb);
        return resolve_user(argv[optind], ret_uid);
}

static int no_more_args(const char *verb, int argc, char **argv, int first) {
        if (first < argc)
                return usage_error("%s: unexpected argument '%s'", verb, argv[first]);
        return 0;
}

static int connect_nsd(nsc_conn **ret_conn) {
        int r = nsc_connect(arg_socket, ret_conn);

        if (r < 0) {
                fprintf(stderr, "nsctl: cannot connect to nsd at %s: %s%s\n", socket_path_shown(),
                        strerror(-r),
                        r == -ENOENT || r == -ECONNREFUSED ? " (is nsd running?)" : "");
                return EXIT_FAILURE;
        }
        return 0;
}

/* uid's name, or the number when it has none (or the lookup fails) */
static void user_name(uid_t uid, char *buf, size_t size) {
        _cleanup_free_ struct passwd *pw = NULL;

        if (nss_user_by_uid(uid, &pw) == 0 && pw->pw_name && *pw->pw_name)
                snprintf(buf, size, "%s", pw->pw_name);
        else
                snprintf(buf, size, "%u", (unsigned) uid);
}

/* ---- what a command was asked, and what nsd answered ------------------------------------ */

struct args {
        /* options */
        struct table_options table; /* -J, -r, -n */
        bool tree;                  /* show: not --list */
        size_t ids[COLUMNS_MAX];    /* -o, or the command's default columns */
        size_t n_ids;
        bool force;           /* release --force */
        bool dry_run;         /* release --dry-run */
        bool mode_chroot;     /* enter --mode chroot */
        const char *owner;    /* hide, start, stop --user */
        bool unhide;          /* hide --unhide */
        const char *textfile; /* metrics --textfile: the folder */
        /* operands */
        const char *user; /* <user> as given */
        uid_t uid;
        const char *path; /* hide <path>, made absolute */
        char *abs_path;
        char **cmd;          /* enter: the command */
        char *shell_argv[2]; /* enter: $SHELL when no command is given */
        char owner_name[64]; /* hide: the owner's name, for messages */
        /* nsd's answer */
        struct nsc_status status;
        struct nsc_metrics metrics;
        struct nsc_ns_info *entries;
        size_t n_entries;
        int show_error; /* release --dry-run: SHOW's error, the text then unknown */
        struct nsc_share_info *shares;
        size_t n_shares;
        struct nsc_volume_info *volumes;
        size_t n_volumes;
        /* run-volume, start, stop: its name, the volume; run-volume: its argv, its password */
        const char *volume;
        const struct nsc_volume_info *run;
        const char *run_argv[VOLUME_ARGV_MAX];
        int credential_fd;
        unsigned waiting; /* unlock: a waiting run-volume got it */
        /* start, stop of a kernel volume: nsd's answer (ctl_done: there is one) */
        struct nsc_volume_ctl ctl;
        bool ctl_done;
        /* start-volumes: what became of each of a->volumes it asked nsd to start */
        struct volume_outcome *outcomes;
        char *text;
        size_t len;
        struct nsc_join_result join;
};

static void args_done(struct args *a) {
        free(a->abs_path);
        free(a->entries);
        nsc_shares_free(a->shares, a->n_shares);
        free(a->volumes);
        free(a->outcomes);
        free(a->text);
        if (a->join.root_fd >= 0)
                close(a->join.root_fd);
        if (a->join.ns_fd >= 0)
                close(a->join.ns_fd);
        if (a->credential_fd >= 0)
                close(a->credential_fd);
}

/* ---- status ---------------------------------------------------------------------------- */

static const struct feature_info {
        uint32_t flag;
        const char *name; /* short, also the JSON key */
        const char *what;
} features[] = {
        { NSC_FEATURE_SETNS_DIRFD, "setns-dirfd", "F1: setns() on a directory descriptor" },
        { NSC_FEATURE_PROC_MOUNTS_ROOT, "proc-mounts-root", "F2: /proc mounts follow the root" },
        { NSC_FEATURE_FSPICK_CHECK, "fspick-check", "F3: fspick checked like other mount calls" },
        { NSC_FEATURE_OWNER_PRIVATE, "owner-private", "F4: owner-private mounts" },
        { NSC_FEATURE_OWNER_PRIVATE_NEW, "born-private", "F4b: mounts born owner-private" },
        { NSC_FEATURE_PIN_NAMESPACE, "pin-namespace", "pins kept in nsd's own pin namespace" },
};

/* [Private] Enable= of nsd.conf and whether the kernel lets nsd do it */
static const char *private_mode_name(uint32_t f) {
        if (f & NSC_FEATURE_PRIVATE_MODE)
                return "on";
        if (f & NSC_FEATURE_PRIVATE_UNAVAILABLE)
                return "unavailable";
        return "off";
}

static const char *private_mode_text(uint32_t f) {
        if (f & NSC_FEATURE_PRIVATE_MODE)
                return "on (users' FUSE mounts are made owner-private)";
        if (f & NSC_FEATURE_PRIVATE_UNAVAILABLE)
                return (f & NSC_FEATURE_OWNER_PRIVATE)
                               ? "unavailable (nsd cannot take a user's fsuid: CAP_SETUID)"
                               : "unavailable (enabled, but the kernel lacks owner-private mounts, "
                                 "F4)";
        return "off";
}

static void limit_text(uint32_t v, char *buf, size_t size) {
        if (v == 0)
                snprintf(buf, size, "no limit");
        else
                snprintf(buf, size, "limit %u", v);
}

static uint64_t uptime_usec(const struct nsc_status *st) {
        uint64_t now = now_usec(CLOCK_REALTIME);

        return now > st->started_usec ? now - st->started_usec : 0;
}

static void status_print_human(const struct nsc_status *st, const char *version) {
        char since[64], up[64], lim[32];

        format_timestamp(st->started_usec, since, sizeof(since));
        format_duration(uptime_usec(st), up, sizeof(up));

        printf("nsd version:     %s\n", version);
        printf("pid:             %ld\n", (long) st->pid);
        printf("running since:   %s (up %s)\n", since, up);
        printf("protocol:        %u.%u (nsctl speaks %d.%d)\n", st->proto_major, st->proto_minor,
               NSD_PROTO_MAJOR, NSD_PROTO_MINOR);
        printf("kernel features:\n");
        for (size_t i = 0; i < ELEMENTSOF(features); i++)
                printf("  %-17s %-3s  (%s)\n", features[i].name,
                       st->features & features[i].flag ? "yes" : "no", features[i].what);
        printf("private mode:    %s\n", private_mode_text(st->features));
        limit_text(st->max_namespaces, lim, sizeof(lim));
        printf("namespaces:      %u (%u pinned; %s)\n", st->namespaces, st->pinned, lim);
        limit_text(st->max_sessions_per_uid, lim, sizeof(lim));
        printf("sessions:        %u (%s per user)\n", st->sessions, lim);
        limit_text(st->max_connections_per_uid, lim, sizeof(lim));
        printf("connections:     %u (%s per user)\n", st->connections, lim);
}

static void status_print_json(const struct nsc_status *st, const char *version) {
        struct json_writer w;
        char since[64], protocol[32];

        format_timestamp(st->started_usec, since, sizeof(since));
        snprintf(protocol, sizeof(protocol), "%u.%u", st->proto_major, st->proto_minor);

        json_open(&w, stdout);
        json_uint(&w, "schema_version", NSCTL_JSON_SCHEMA_VERSION);
        json_object_open(&w, "status");
        json_string(&w, "version", version);
        json_uint(&w, "pid", (uint64_t) st->pid);
        json_uint(&w, "started_usec", st->started_usec);
        json_string(&w, "started", since);
        json_uint(&w, "uptime_sec", uptime_usec(st) / USEC_PER_SEC);
        json_string(&w, "protocol", protocol);
        json_object_open(&w, "features");
        for (size_t i = 0; i < ELEMENTSOF(features); i++)
                json_bool(&w, features[i].name, st->features & features[i].flag);
        json_object_close(&w);
        json_string(&w, "private_mode", private_mode_name(st->features));
        json_uint(&w, "namespaces", st->namespaces);
        json_uint(&w, "pinned", st->pinned);
        json_uint(&w, "sessions", st->sessions);
        json_uint(&w, "connections", st->connections);
        json_object_open(&w, "limits");
        json_uint(&w, "namespaces", st->max_namespaces);
        json_uint(&w, "sessions_per_user", st->max_sessions_per_uid);
        json_uint(&w, "connections_per_user", st->max_connections_per_uid);
        json_object_close(&w);
        json_object_close(&w);
        json_close(&w);
}

static int status_request(nsc_conn *conn, struct args *a) {
        int r = nsc_status(conn, &a->status);

        return r < 0 ? fail(conn, r, "get status from nsd") : 0;
}

static int status_print(struct args *a) {
        const struct nsc_status *st = &a->status;
        char version[sizeof(st->version) + 1];

        snprintf(version, sizeof(version), "%.*s", (int) strnlen(st->version, sizeof(st->version)),
                 st->version);
        if (a->table.json)
                status_print_json(st, version);
        else
                status_print_human(st, version);
        return EXIT_SUCCESS;
}

/* nsd speaks a protocol older than 1.<since_minor>, which brought request; EXIT_FAILURE */
static int too_old(const struct nsc_status *st, const char *request, unsigned since_minor) {
        fprintf(stderr, "nsctl: this nsd does not answer %s (older than 1.%u: it speaks %u.%u)\n",
                request, since_minor, st->proto_major, st->proto_minor);
        return EXIT_FAILURE;
}

/* STATUS into a->status, and whether nsd is new enough for request (1.<since_minor>): 0 to go
 * on, or nsctl's exit status (said why). An nsd that is older is not sent request at all
 * (it would close the connection). */
static int status_since(nsc_conn *conn, struct args *a, const char *request, unsigned since_minor) {
        int r = nsc_status(conn, &a->status);

        if (r < 0)
                return fail(conn, r, "get status from nsd");
        if (a->status.proto_major == 1 && a->status.proto_minor < since_minor)
                return too_old(&a->status, request, since_minor);
        return 0;
}

/* ---- volumes --------------------------------------------------------------------------- */

/* the protocol minor (of major 1) that brought VOLUMES, CREDENTIAL_UNLOCK, and VOLUME_START
 * and VOLUME_STOP */
#define VOLUMES_SINCE_MINOR 7
#define UNLOCK_SINCE_MINOR 8
#define VOLUME_CTL_SINCE_MINOR 11

enum {
        VOLUMES_COL_USER,
        VOLUMES_COL_UID,
        VOLUMES_COL_VOLUME,
        VOLUMES_COL_TYPE,
        VOLUMES_COL_WHERE,
        VOLUMES_COL_STATE,
        VOLUMES_COL_NOW,
        VOLUMES_COL_SOURCE,
        VOLUMES_COL_LOOP,
        VOLUMES_COL_SINCE,
        VOLUMES_COL_WHY,
        VOLUMES_COL_START,
        VOLUMES_COL_RELEASE,
        VOLUMES_COL_KEY,
        _VOLUMES_COL_MAX,
};

static const struct column_info volumes_columns[_VOLUMES_COL_MAX] = {
        [VOLUMES_COL_USER] = { "USER", 0.1, 0, SCOLS_JSON_STRING,
                               "user name (or uid when it has none)" },
        [VOLUMES_COL_UID] = { "UID", 5, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER, "user id" },
        [VOLUMES_COL_VOLUME] = { "VOLUME", 0.1, 0, SCOLS_JSON_STRING, "[Volume NAME] of nsd.conf" },
        [VOLUMES_COL_TYPE] = { "TYPE", 5, 0, SCOLS_JSON_STRING, "its Type=" },
        [VOLUMES_COL_WHERE] = { "WHERE", 0.3, 0, SCOLS_JSON_STRING,
                                "its Where= for this user, inside the user's namespace" },
        [VOLUMES_COL_STATE] = { "STATE", 8, 0, SCOLS_JSON_STRING,
                                "mounted, failed, not-tried (an earlier failure stopped the "
                                "setup), stopped (a kernel volume not started yet, or stopped), "
                                "user-manager (a FUSE volume) or unknown" },
        [VOLUMES_COL_NOW] = { "NOW", 11, 0, SCOLS_JSON_STRING,
                              "what is so now: mounted (something is mounted on WHERE), "
                              "not-mounted, or locked (it waits for a password: nsctl "
                              "unlock); '-': nsd did not say" },
        [VOLUMES_COL_SOURCE] = { "SOURCE", 0.3, 0, SCOLS_JSON_STRING, "its Source= for this user" },
        [VOLUMES_COL_LOOP] = { "LOOP", 10, 0, SCOLS_JSON_STRING,
                               "the loop device its image is on ('-': none)" },
        [VOLUMES_COL_SINCE] = { "SINCE", 19, 0, SCOLS_JSON_STRING,
                                "when the setup reported (local time)" },
        [VOLUMES_COL_WHY] = { "WHY", 0.4, SCOLS_FL_WRAP, SCOLS_JSON_STRING,
                              "a failed volume: which step, which path, what happened; a "
                              "mounted one that stopped the last release: who held it" },
        [VOLUMES_COL_START] = { "START", 9, 0, SCOLS_JSON_STRING,
                                "when it is mounted: namespace (with the namespace), login (at "
                                "the user's first session; a FUSE volume by the user's service "
                                "manager) or request (nsctl start)" },
        [VOLUMES_COL_RELEASE] = { "RELEASE", 12, 0, SCOLS_JSON_STRING,
                                  "when it goes: namespace (with the namespace), last-session "
                                  "(after the last session, no process left) or user-manager "
                                  "(a FUSE volume: when its unit stops)" },
        [VOLUMES_COL_KEY] = { "KEY", 5, 0, SCOLS_JSON_STRING,
                              "where its password comes from: login (the login password, or "
                              "nsctl unlock), ask (only nsctl unlock) or file (a key file of "
                              "root's, KeyFile=); '-': it takes none" },
};

static const char *const volume_state_names[] = {
        [NSC_VOLUME_UNKNOWN] = "unknown",   [NSC_VOLUME_MOUNTED] = "mounted",
        [NSC_VOLUME_FAILED] = "failed",     [NSC_VOLUME_NOT_TRIED] = "not-tried",
        [NSC_VOLUME_USER] = "user-manager", [NSC_VOLUME_STOPPED] = "stopped",
};

static const char *volume_state_name(uint32_t state) {
        return state < ELEMENTSOF(volume_state_names) && volume_state_names[state]
                       ? volume_state_names[state]
                       : "unknown";
}

static char *volumes_cell(const void *row, size_t col, bool json) {
        const struct nsc_volume_info *v = row;
        char buf[128];

        switch (col) {
        case VOLUMES_COL_USER:
                user_name(v->uid, buf, sizeof(buf));
                break;
        case VOLUMES_COL_UID:
                snprintf(buf, sizeof(buf), "%u", (unsigned) v->uid);
                break;
        case VOLUMES_COL_VOLUME:
                return strndup(v->name, sizeof(v->name));
        case VOLUMES_COL_TYPE:
                return strndup(v->type, sizeof(v->type));
        case VOLUMES_COL_WHERE:
                return strndup(v->where, sizeof(v->where));
        case VOLUMES_COL_STATE:
                return strdup(volume_state_name(v->state));
        case VOLUMES_COL_NOW:
                if (v->flags & NSC_VOLUME_WAITING)
                        return strdup("locked");
                if (!(v->flags & NSC_VOLUME_NOW_KNOWN))
                        return json ? NULL : strdup("-");
                return strdup(v->flags & NSC_VOLUME_NOW_MOUNTED ? "mounted" : "not-mounted");
        case VOLUMES_COL_SOURCE:
                return strndup(v->source, sizeof(v->source));
        case VOLUMES_COL_LOOP:
                if (v->loop == 0)
                        return json ? NULL : strdup("-");
                snprintf(buf, sizeof(buf), "/dev/loop%u", v->loop - 1);
                break;
        case VOLUMES_COL_SINCE:
                format_timestamp(v->at_usec, buf, sizeof(buf));
                break;
        case VOLUMES_COL_WHY:
                if (v->state != NSC_VOLUME_FAILED && !(v->flags & NSC_VOLUME_HELD))
                        return json ? NULL : strdup("-");
                return strndup(v->why, sizeof(v->why));
        case VOLUMES_COL_START:
                return strdup((v->flags & NSC_VOLUME_ON_REQUEST) ? "request"
                              : (v->flags & NSC_VOLUME_AT_LOGIN) || v->state == NSC_VOLUME_USER
                                      ? "login"
                                      : "namespace");
        case VOLUMES_COL_RELEASE:
                return strdup((v->flags & NSC_VOLUME_RELEASE_LAST) ? "last-session"
                              : v->state == NSC_VOLUME_USER        ? "user-manager"
                                                                   : "namespace");
        case VOLUMES_COL_KEY:
                if (!(v->flags & NSC_VOLUME_PASSWORD))
                        return json ? NULL : strdup("-");
                return strdup((v->flags & NSC_VOLUME_KEY_FILE) ? "file"
                              : (v->flags & NSC_VOLUME_ASK)    ? "ask"
                                                               : "login");
        default:
                return NULL;
        }
        return strdup(buf);
}

static int volumes_request(nsc_conn *conn, struct args *a) {
        int r = status_since(conn, a, "VOLUMES", VOLUMES_SINCE_MINOR);

        if (r)
                return r;
        r = nsc_volumes(conn, &a->volumes, &a->n_volumes);
        return r < 0 ? fail(conn, r, "list volumes") : 0;
}

/* run-volume and start-volumes: the caller's own volumes, and its namespace (to check that it
 * runs inside it) */
static int own_volumes_request(nsc_conn *conn, struct args *a) {
        int r = volumes_request(conn, a);

        if (r)
                return r;
        r = nsc_list(conn, &a->entries, &a->n_entries);
        return r < 0 ? fail(conn, r, "list namespaces") : 0;
}

/* Is this process inside the caller's namespace (the one nsd holds for its uid)? */
/* The caller's own entry of the LIST own_volumes_request() read, or NULL: nsd holds no
 * namespace of its uid. */
static const struct nsc_ns_info *own_entry(const struct args *a) {
        for (size_t i = 0; i < a->n_entries; i++)
                if (a->entries[i].uid == getuid())
                        return &a->entries[i];
        return NULL;
}

static bool in_own_namespace(const struct args *a, char *why, size_t size) {
        const struct nsc_ns_info *e = own_entry(a);
        struct stat here;

        if (!e) {
                snprintf(why, size, "nsd holds no namespace for uid %u (log in first)",
                         (unsigned) getuid());
                return false;
        }
        if (stat("/proc/self/ns/mnt", &here) < 0) {
                snprintf(why, size, "cannot tell which mount namespace this process is in: %s",
                         strerror(errno));
                return false;
        }
        if ((uint64_t) here.st_ino == e->ns_inode)
                return true;
        snprintf(why, size,
                 "this process is not inside your namespace (it is in mnt:[%llu], yours is "
                 "mnt:[%llu]): the volume would be mounted where your logins do not look. Run it "
                 "from your service manager (systemctl --user start nsd-volume@NAME.service), "
                 "whose logins go through pam_nsjoin (/etc/pam.d/systemd-user)",
                 (unsigned long long) here.st_ino, (unsigned long long) e->ns_inode);
        return false;
}

/* uid's volume a->volume among the VOLUMES read (the caller's own, or with --user another
 * user's), or NULL, said for verb. */
static const struct nsc_volume_info *own_volume(const struct args *a, uid_t uid, const char *verb) {
        for (size_t i = 0; i < a->n_volumes; i++)
                if (a->volumes[i].uid == uid && strcmp(a->volumes[i].name, a->volume) == 0)
                        return &a->volumes[i];
        if (uid == getuid())
                fprintf(stderr,
                        "nsctl: %s %s: your namespace has no volume '%s' (nsctl volumes lists "
                        "them)\n",
                        verb, a->volume, a->volume);
        else
                fprintf(stderr,
                        "nsctl: %s %s: the namespace of %s has no volume '%s' (nsctl volumes "
                        "lists them)\n",
                        verb, a->volume, a->owner, a->volume);
        return NULL;
}

/* run-volume: the volume, checked; for one that takes the login password, the password
 * (waiting for a login with one: the unit is "active" meanwhile, and says so) */
static int run_volume_request(nsc_conn *conn, struct args *a) {
        const char *why = NULL, *wait_why;
        char nswhy[512], wait_buf[NSD_ERROR_MESSAGE_MAX + 64];
        int r = own_volumes_request(conn, a);

        if (r)
                return r;
        a->run = own_volume(a, getuid(), "run-volume");
        if (!a->run)
                return EXIT_FAILURE;
        if (volume_argv(a->run, a->run_argv, &why) < 0) {
                fprintf(stderr, "nsctl: run-volume %s: %s\n", a->volume, why);
                return EXIT_FAILURE;
        }
        if (!in_own_namespace(a, nswhy, sizeof nswhy)) {
                fprintf(stderr, "nsctl: run-volume %s: %s\n", a->volume, nswhy);
                return EXIT_FAILURE;
        }
        if (!(a->run->flags & NSC_VOLUME_PASSWORD))
                return 0;
        r = nsc_credential_take(conn, a->volume, 0, &a->credential_fd);
        wait_why = volume_wait_why(r, nsc_last_error_message(conn), a->run->flags & NSC_VOLUME_ASK,
                                   a->volume, wait_buf, sizeof wait_buf);
        if (wait_why) {
                fprintf(stderr, "nsctl: run-volume %s: %s\n", a->volume, wait_why);
                (void) nsc_set_timeout(conn, 0); /* for as long as it takes */
                r = nsc_credential_take(conn, a->volume, NSC_CREDENTIAL_WAIT, &a->credential_fd);
        }
        return r < 0 ? fail(conn, r, "take the password of volume %s", a->volume) : 0;
}

static int run_volume_finish(struct args *a) {
        int r;

        if (a->credential_fd >= 0) { /* the program reads it on stdin, from the start */
                if (lseek(a->credential_fd, 0, SEEK_SET) < 0 ||
                    dup2(a->credential_fd, STDIN_FILENO) < 0) {
                        fprintf(stderr, "nsctl: run-volume %s: cannot pass the password on: %s\n",
                                a->volume, strerror(errno));
                        return EXIT_FAILURE;
                }
                (void) close(a->credential_fd);
                a->credential_fd = -1;
        }
        fflush(stdout);
        execv(a->run_argv[0], (char *const *) a->run_argv);
        r = errno;
        fprintf(stderr, "nsctl: run-volume %s: cannot execute %s: %s\n", a->volume, a->run_argv[0],
                strerror(r));
        return r == ENOENT ? EXIT_EXEC_ENOENT : EXIT_EXEC_FAILED;
}

/* systemctl --user ACTION [--no-block] UNIT for nsctl's command verb: 0, or the error said */
static int systemctl_user(const char *verb, const char *action, bool no_block, const char *unit) {
        char *const argv[] = { (char *) "systemctl",
                               (char *) "--user",
                               (char *) action,
                               (char *) unit,
                               no_block ? (char *) "--no-block" : NULL,
                               NULL };
        pid_t pid;
        int r, status;

        r = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
        if (r != 0) {
                fprintf(stderr, "nsctl: %s: cannot run systemctl: %s\n", verb, strerror(r));
                return -r;
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "nsctl: %s: systemctl --user %s %s failed\n", verb, action, unit);
                return -EIO;
        }
        return 0;
}

/* What VOLUME_START or VOLUME_STOP of a kernel volume did, one line on stdout: "vault: mounted
 * on /home/alice/vault (/dev/loop3)", "vault: already mounted on ...", "vault: unmounted",
 * "vault: not mounted" */
static void volume_ctl_print(const struct nsc_volume_info *v, const struct nsc_volume_ctl *ctl) {
        char loop[32] = "";

        if (ctl->state == NSC_VOLUME_MOUNTED) {
                if (ctl->loop != 0)
                        snprintf(loop, sizeof loop, " (/dev/loop%u)", ctl->loop - 1);
                printf("%s: %smounted on %s%s\n", v->name, ctl->changed ? "" : "already ", v->where,
                       loop);
        } else if (ctl->state == NSC_VOLUME_STOPPED)
                printf("%s: %s\n", v->name, ctl->changed ? "unmounted" : "not mounted");
        else
                printf("%s: %s\n", v->name, volume_state_name(ctl->state));
}

/* start-volumes: one of a->volumes nsd was asked to start, and its answer */
struct volume_outcome {
        bool tried;
        int error; /* 0, or nsd's -errno (and its reason in why) */
        char why[NSD_ERROR_MESSAGE_MAX];
        struct nsc_volume_ctl ctl;
};

/* Does start-volumes ask nsd to start v, a kernel volume with Start=login not mounted now? */
static bool starts_at_login(const struct nsc_volume_info *v) {
        return v->uid == getuid() && v->state != NSC_VOLUME_USER &&
               v->state != NSC_VOLUME_MOUNTED && (v->flags & NSC_VOLUME_AT_LOGIN);
}

/* How long start-volumes asks again for a kernel volume that nsd answers "not yet" (another
 * start of it runs): 60 times, half a second apart. */
#define START_VOLUMES_RETRIES 60
#define START_VOLUMES_RETRY_USEC 500000

/* start-volumes: the caller's volumes and namespace, then VOLUME_START of each kernel volume
 * with Start=login that is not mounted (nsd mounts it in the namespace itself: no need to be
 * inside it); a refusal is kept for finish, and the others are still asked for. Nothing
 * without a namespace; an nsd older than 1.11 flags none. */
static int start_volumes_request(nsc_conn *conn, struct args *a) {
        int r = own_volumes_request(conn, a);

        if (r)
                return r;
        if (!own_entry(a) ||
            (a->status.proto_major == 1 && a->status.proto_minor < VOLUME_CTL_SINCE_MINOR))
                return 0;
        for (size_t i = 0; i < a->n_volumes; i++) {
                struct volume_outcome *o;

                if (!starts_at_login(&a->volumes[i]))
                        continue;
                if (!a->outcomes) {
                        a->outcomes = calloc(a->n_volumes, sizeof(*a->outcomes));
                        if (!a->outcomes)
                                return fail(NULL, -ENOMEM, "start-volumes");
                }
                o = &a->outcomes[i];
                o->tried = true;
                /* "not yet": nsd starts it already (the user's first session), or another
                 * start or stop of the user's runs; asked again while it lasts */
                for (unsigned tries = 0;; tries++) {
                        o->error = nsc_volume_start(conn, getuid(), a->volumes[i].name, &o->ctl);
                        if (o->error != -EAGAIN || tries >= START_VOLUMES_RETRIES)
                                break;
                        (void) usleep(START_VOLUMES_RETRY_USEC);
                }
                if (o->error < 0)
                        snprintf(o->why, sizeof o->why, "%s", nsc_last_error_message(conn) ?: "");
        }
        return 0;
}

static int start_volumes_finish(struct args *a) {
        char unit[256], why[512];
        bool checked = false, outside = false;
        int failed = 0;

        /* a user nsd does not manage, or one without volumes to start: nothing to start, and
         * nothing to say */
        if (!own_entry(a))
                return EXIT_SUCCESS;
        for (size_t i = 0; i < a->n_volumes; i++) {
                const struct nsc_volume_info *v = &a->volumes[i];

                if (a->outcomes && a->outcomes[i].tried) { /* a kernel volume */
                        const struct volume_outcome *o = &a->outcomes[i];

                        if (o->error < 0) {
                                fail_why(o->why, o->error, "start %s", v->name);
                                failed++;
                        } else
                                volume_ctl_print(v, &o->ctl);
                        continue;
                }
                if (v->uid != getuid() || v->state != NSC_VOLUME_USER ||
                    (v->flags & NSC_VOLUME_ON_REQUEST) || outside)
                        continue;
                /* a FUSE volume: its unit runs it in the namespace this process must be in */
                if (!checked && !in_own_namespace(a, why, sizeof why)) {
                        fprintf(stderr, "nsctl: start-volumes: %s\n", why);
                        outside = true;
                        failed++;
                        continue;
                }
                checked = true;
                if (volume_unit_name(v->name, unit, sizeof unit) < 0 ||
                    systemctl_user("start-volumes", "start", true, unit) < 0) {
                        failed++;
                        continue;
                }
                printf("%s\n", unit);
        }
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* start, stop --user: whose volume (by default the caller's; root must say) */
static int volume_ctl_prepare(struct args *a, const char *verb) {
        a->uid = getuid();
        if (!a->owner && a->uid == 0)
                return usage_error("%s: root must name the user with --user", verb);
        return a->owner ? resolve_user(a->owner, &a->uid) : 0;
}

static int start_prepare(struct args *a) {
        return volume_ctl_prepare(a, "start");
}

static int stop_prepare(struct args *a) {
        return volume_ctl_prepare(a, "stop");
}

/* start, stop: the volume a->volume of a->uid; a kernel volume nsd mounts or unmounts now
 * (VOLUME_START, VOLUME_STOP), a FUSE volume is its unit's, for finish */
static int volume_ctl_request(nsc_conn *conn, struct args *a, bool start) {
        const char *verb = start ? "start" : "stop";
        int r = volumes_request(conn, a);

        if (r)
                return r;
        a->run = own_volume(a, a->uid, verb);
        if (!a->run)
                return EXIT_FAILURE;
        if (a->run->state == NSC_VOLUME_USER) {
                if (a->uid == getuid())
                        return 0;
                fprintf(stderr,
                        "nsctl: %s %s: a FUSE volume runs in its user's service manager: only %s "
                        "can %s it\n",
                        verb, a->volume, a->owner, verb);
                return EXIT_FAILURE;
        }
        if (a->status.proto_major == 1 && a->status.proto_minor < VOLUME_CTL_SINCE_MINOR)
                return too_old(&a->status, start ? "VOLUME_START" : "VOLUME_STOP",
                               VOLUME_CTL_SINCE_MINOR);
        r = start ? nsc_volume_start(conn, a->uid, a->volume, &a->ctl)
                  : nsc_volume_stop(conn, a->uid, a->volume, &a->ctl);
        if (r < 0)
                return a->uid == getuid() ? fail(conn, r, "%s %s", verb, a->volume)
                                          : fail(conn, r, "%s %s of %s", verb, a->volume, a->owner);
        a->ctl_done = true;
        return 0;
}

static int start_request(nsc_conn *conn, struct args *a) {
        return volume_ctl_request(conn, a, true);
}

static int stop_request(nsc_conn *conn, struct args *a) {
        return volume_ctl_request(conn, a, false);
}

/* start, stop: what nsd did with a kernel volume, or the caller's FUSE volume a->run through
 * its user manager */
static int volume_ctl_finish(struct args *a, const char *verb) {
        char unit[256];

        if (a->ctl_done) {
                volume_ctl_print(a->run, &a->ctl);
                return EXIT_SUCCESS;
        }
        if (volume_unit_name(a->run->name, unit, sizeof unit) < 0) {
                fprintf(stderr, "nsctl: %s %s: the volume's unit name is too long\n", verb,
                        a->volume);
                return EXIT_FAILURE;
        }
        /* start: --no-block, as a volume that waits for its password is "activating" until
         * it has one; stop: waits for the unmount */
        if (systemctl_user(verb, verb, strcmp(verb, "start") == 0, unit) < 0)
                return EXIT_FAILURE;
        printf("%s\n", unit);
        return EXIT_SUCCESS;
}

static int start_finish(struct args *a) {
        return volume_ctl_finish(a, "start");
}

static int stop_finish(struct args *a) {
        return volume_ctl_finish(a, "stop");
}

/* unlock: the password, read before nsd is asked anything */
static int unlock_prepare(struct args *a) {
        char prompt[128];
        const char *why = NULL;
        int fd;

        snprintf(prompt, sizeof prompt, "Password for volume '%s': ", a->volume);
        fd = volume_read_password(STDIN_FILENO, prompt, &why);
        if (fd < 0) {
                fprintf(stderr, "nsctl: unlock %s: %s%s%s\n", a->volume, why,
                        fd == -ENODATA || fd == -EMSGSIZE ? "" : ": ",
                        fd == -ENODATA || fd == -EMSGSIZE ? "" : strerror(-fd));
                return EXIT_FAILURE;
        }
        a->credential_fd = fd;
        return 0;
}

static int unlock_request(nsc_conn *conn, struct args *a) {
        int r = status_since(conn, a, "CREDENTIAL_UNLOCK", UNLOCK_SINCE_MINOR);

        if (r)
                return r;
        r = nsc_credential_unlock(conn, a->volume, a->credential_fd, &a->waiting);
        return r < 0 ? fail(conn, r, "unlock %s", a->volume) : 0;
}

static int unlock_finish(struct args *a) {
        char unit[256];

        if (volume_unit_name(a->volume, unit, sizeof unit) < 0)
                snprintf(unit, sizeof unit, "nsd-volume@NAME.service");
        if (a->waiting)
                printf("Handed to %s, which was waiting for it (systemctl --user status %s says "
                       "whether it mounted).\n",
                       unit, unit);
        else
                printf("Held by nsd for %d s for the next start of %s (nsctl start %s).\n",
                       NSC_CREDENTIAL_HOLD_SEC, unit, a->volume);
        return EXIT_SUCCESS;
}

static int volumes_finish(struct args *a) {
        int r = table_print_rows("volumes", volumes_columns, a->volumes, a->n_volumes,
                                 sizeof(a->volumes[0]), volumes_cell, a->ids, a->n_ids, &a->table,
                                 stdout);

        return r < 0 ? fail(NULL, r, "print the volumes") : EXIT_SUCCESS;
}

/* ---- shares ---------------------------------------------------------------------------- */

/* the protocol minor (of major 1) that brought SHARES */
#define SHARES_SINCE_MINOR 5

enum {
        SHARES_COL_SHARE,
        SHARES_COL_PATH,
        SHARES_COL_PROPAGATION,
        SHARES_COL_MEMBERS,
        SHARES_COL_MAX,
        SHARES_COL_UIDS,
        SHARES_COL_MOUNTS,
        SHARES_COL_GROUP,
        _SHARES_COL_MAX,
};

/* The anchor's mount count and each member's peer group are not asked of nsd yet (it would
 * need a look from inside its pin namespace): no column shows them. */
static const struct column_info shares_columns[_SHARES_COL_MAX] = {
        [SHARES_COL_SHARE] = { "SHARE", 0.1, 0, SCOLS_JSON_STRING, "[Share NAME] of nsd.conf" },
        [SHARES_COL_PATH] = { "PATH", 0.3, 0, SCOLS_JSON_STRING, "its Path=" },
        [SHARES_COL_PROPAGATION] = { "PROPAGATION", 7, 0, SCOLS_JSON_STRING,
                                     "Propagation=: members, host, both or per-user" },
        [SHARES_COL_MEMBERS] = { "MEMBERS", 3, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
                                 "namespaces given the share (those being made included)" },
        [SHARES_COL_MAX] = { "MAX", 3, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER, "MaxMembers=" },
        [SHARES_COL_UIDS] = { "UIDS", 0.3, SCOLS_FL_WRAP, SCOLS_JSON_ARRAY_NUMBER,
                              "uids of its live members (without privilege: your own)" },
        [SHARES_COL_MOUNTS] = { "MOUNTS", 3, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
                                "mounts under the share's anchor, each a copy in every member's "
                                "namespace (root; '-' when unknown)" },
        [SHARES_COL_GROUP] = { "GROUP", 3, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
                               "the anchor's peer group, shared:N in mountinfo (root; '-' when "
                               "unknown)" },
};

/* Propagation= of nsd.conf, by NSC_SHARE_PROPAGATION_* */
static const char *const propagation_names[] = {
        [NSC_SHARE_PROPAGATION_MEMBERS] = "members",
        [NSC_SHARE_PROPAGATION_HOST] = "host",
        [NSC_SHARE_PROPAGATION_BOTH] = "both",
        [NSC_SHARE_PROPAGATION_PER_USER] = "per-user",
};

static const char *propagation_name(uint32_t p) {
        return p < ELEMENTSOF(propagation_names) ? propagation_names[p] : "unknown";
}

/* the uids, "1000,1001" (JSON: one a line, libsmartcols' array) */
static char *shares_uids(const struct nsc_share_info *sh, bool json) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < sh->n_members; i++)
                fprintf(f, "%s%u", i == 0 ? "" : json ? "\n" : ",", (unsigned) sh->member[i].uid);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

static char *shares_cell(const void *row, size_t col, bool json) {
        const struct nsc_share_info *sh = row;
        char buf[64];

        switch (col) {
        case SHARES_COL_SHARE:
                return strndup(sh->name, sizeof(sh->name));
        case SHARES_COL_PATH:
                return strndup(sh->path, sizeof(sh->path));
        case SHARES_COL_PROPAGATION:
                return strdup(propagation_name(sh->propagation));
        case SHARES_COL_MEMBERS:
                snprintf(buf, sizeof(buf), "%u", sh->members);
                break;
        case SHARES_COL_MAX:
                snprintf(buf, sizeof(buf), "%u", sh->max_members);
                break;
        case SHARES_COL_UIDS:
                return shares_uids(sh, json);
        case SHARES_COL_MOUNTS:
                return cell_number(sh->mounts, sh->mounts >= 0, json);
        case SHARES_COL_GROUP:
                return cell_number(sh->peer_group, sh->peer_group != 0, json);
        default:
                return NULL;
        }
        return strdup(buf);
}

static int shares_request(nsc_conn *conn, struct args *a) {
        int r = status_since(conn, a, "SHARES", SHARES_SINCE_MINOR);

        if (r)
                return r;
        r = nsc_shares(conn, &a->shares, &a->n_shares);
        return r < 0 ? fail(conn, r, "list shares") : 0;
}

static int shares_finish(struct args *a) {
        int r = table_print_rows("shares", shares_columns, a->shares, a->n_shares,
                                 sizeof(a->shares[0]), shares_cell, a->ids, a->n_ids, &a->table,
                                 stdout);

        return r < 0 ? fail(NULL, r, "print the shares") : EXIT_SUCCESS;
}

/* ---- metrics --------------------------------------------------------------------------- */

/* the protocol minor (of major 1) that brought METRICS */
#define METRICS_SINCE_MINOR 4

/* STATUS (version, features, start) and METRICS on one connection; an nsd older than 1.4
 * is not sent METRICS at all (it would close the connection) */
static int metrics_request(nsc_conn *conn, struct args *a) {
        int r = status_since(conn, a, "METRICS", METRICS_SINCE_MINOR);

        if (r)
                return r;
        r = nsc_metrics_sized(conn, &a->metrics, sizeof a->metrics);
        if (r == -EOPNOTSUPP)
                return too_old(&a->status, "METRICS", METRICS_SINCE_MINOR);
        return r < 0 ? fail(conn, r, "get metrics from nsd") : 0;
}

static int metrics_print(struct args *a) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *f;
        int r;

        if (!a->textfile) {
                (void) exposition_write(stdout, &a->status, &a->metrics);
                return EXIT_SUCCESS; /* a write error: close_stdout() says it at exit */
        }
        f = open_memstream(&text, &len);
        if (!f)
                return fail(NULL, -errno, "write the metrics");
        r = exposition_write(f, &a->status, &a->metrics);
        if (fclose(f) != 0 && r >= 0)
                r = -errno;
        if (r < 0)
                return fail(NULL, r, "write the metrics");
        r = exposition_write_textfile(a->textfile, text, len);
        if (r < 0)
                return fail(NULL, r, "write %s/%s", a->textfile, EXPOSITION_TEXTFILE_NAME);
        return EXIT_SUCCESS;
}

/* ---- list ------------------------------------------------------------------------------ */

enum {
        LIST_COL_USER,
        LIST_COL_UID,
        LIST_COL_SESSIONS,
        LIST_COL_MOUNTS,
        LIST_COL_CREATED,
        LIST_COL_PINNED,
        LIST_COL_ADOPTED,
        LIST_COL_SETUP,
        LIST_COL_NS,
        LIST_COL_ORPHANED,
        _LIST_COL_MAX,
};

static const struct column_info list_columns[_LIST_COL_MAX] = {
        [LIST_COL_USER] = { "USER", 0.1, 0, SCOLS_JSON_STRING,
                            "user name (or uid when it has none)" },
        [LIST_COL_UID] = { "UID", 5, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER, "user id" },
        [LIST_COL_SESSIONS] = { "SESSIONS", 3, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
                                "live sessions (logins) in the namespace" },
        [LIST_COL_MOUNTS] = { "MOUNTS", 3, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
                              "mounts in the namespace ('-' when unknown)" },
        [LIST_COL_CREATED] = { "CREATED", 19, 0, SCOLS_JSON_STRING,
                               "when nsd created the namespace (local time)" },
        [LIST_COL_PINNED] = { "PINNED", 0.2, SCOLS_FL_TRUNC, SCOLS_JSON_STRING,
                              "where it is pinned, or \"fd only\" when kept by a descriptor" },
        [LIST_COL_ADOPTED] = { "ADOPTED", 3, 0, SCOLS_JSON_BOOLEAN,
                               "re-adopted from its pin when nsd started" },
        [LIST_COL_SETUP] = { "SETUP", 7, 0, SCOLS_JSON_STRING,
                             "\"current\", or \"stale\": made with an older setup of "
                             "nsd.conf" },
        [LIST_COL_NS] = { "NS", 10, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
                          "inode number of the namespace (as lsns)" },
        [LIST_COL_ORPHANED] = { "ORPHANED", 3, 0, SCOLS_JSON_BOOLEAN,
                                "made for a user name the uid no longer has (a recycled uid): "
                                "handed to nobody, released only by nsctl release" },
};

static int cmp_ns_info(const void *a, const void *b) {
        const struct nsc_ns_info *x = a, *y = b;

        return x->uid < y->uid ? -1 : x->uid > y->uid;
}

static char *list_cell(const void *row, size_t col, bool json) {
        const struct nsc_ns_info *e = row;
        char buf[128];

        switch (col) {
        case LIST_COL_USER:
                user_name(e->uid, buf, sizeof(buf));
                break;
        case LIST_COL_UID:
                snprintf(buf, sizeof(buf), "%u", (unsigned) e->uid);
                break;
        case LIST_COL_SESSIONS:
                snprintf(buf, sizeof(buf), "%u", e->sessions);
                break;
        case LIST_COL_MOUNTS:
                return cell_number(e->mounts, e->mounts >= 0, json);
        case LIST_COL_CREATED:
                format_timestamp(e->created_usec, buf, sizeof(buf));
                break;
        case LIST_COL_PINNED:
                if (!(e->ns_flags & NSC_NS_PINNED))
                        snprintf(buf, sizeof(buf), "fd only");
                else if (strnlen(e->pin, sizeof(e->pin)) == 0)
                        snprintf(buf, sizeof(buf), "yes");
                else
                        snprintf(buf, sizeof(buf), "%.*s", (int) strnlen(e->pin, sizeof(e->pin)),
                                 e->pin);
                break;
        case LIST_COL_ADOPTED:
                snprintf(buf, sizeof(buf), "%s", e->ns_flags & NSC_NS_ADOPTED ? "yes" : "no");
                break;
        case LIST_COL_SETUP:
                snprintf(buf, sizeof(buf), "%s", e->ns_flags & NSC_NS_STALE ? "stale" : "current");
                break;
        case LIST_COL_NS:
                snprintf(buf, sizeof(buf), "%llu", (unsigned long long) e->ns_inode);
                break;
        case LIST_COL_ORPHANED:
                snprintf(buf, sizeof(buf), "%s", e->ns_flags & NSC_NS_ORPHANED ? "yes" : "no");
                break;
        default:
                return NULL;
        }
        return strdup(buf);
}

static int list_request(nsc_conn *conn, struct args *a) {
        int r = nsc_list(conn, &a->entries, &a->n_entries);

        return r < 0 ? fail(conn, r, "list namespaces") : 0;
}

static int list_finish(struct args *a) {
        int r;

        if (a->n_entries > 1)
                qsort(a->entries, a->n_entries, sizeof(a->entries[0]), cmp_ns_info);
        r = table_print_rows("namespaces", list_columns, a->entries, a->n_entries,
                             sizeof(a->entries[0]), list_cell, a->ids, a->n_ids, &a->table, stdout);
        return r < 0 ? fail(NULL, r, "print the list") : EXIT_SUCCESS;
}

/* orphans: list's rows of the namespaces flagged ORPHANED alone */
static int orphans_finish(struct args *a) {
        size_t n = 0;

        for (size_t i = 0; i < a->n_entries; i++)
                if (a->entries[i].ns_flags & NSC_NS_ORPHANED)
                        a->entries[n++] = a->entries[i];
        a->n_entries = n;
        return list_finish(a);
}

/* -o's list: the columns instead of those in ids, or with "+<list>" after them, as lsns */
static int parse_columns_arg(const char *arg, const struct column_info *infos, size_t n_infos,
                             size_t *ids, size_t *n_ids) {
        bool add = arg[0] == '+';
        size_t more[COLUMNS_MAX], n_more = 0, bad_len = 0;
        const char *bad = NULL;
        int r = columns_parse(arg + add, infos, n_infos, more, COLUMNS_MAX - (add ? *n_ids : 0),
                              &n_more, &bad, &bad_len);

        if (r == -E2BIG)
                return usage_error("too many columns in '%s'", arg);
        if (r < 0) {
                if (bad_len == 0)
                        return usage_error("no columns in '%s'", arg);
                return usage_error("unknown column: %.*s", (int) bad_len, bad);
        }
        if (!add)
                *n_ids = 0;
        memcpy(ids + *n_ids, more, n_more * sizeof(more[0]));
        *n_ids += n_more;
        return 0;
}

/* ---- show ------------------------------------------------------------------------------ */

static int show_request(nsc_conn *conn, struct args *a) {
        int r = nsc_show(conn, a->uid, &a->text, &a->len);

        if (r < 0)
                return fail(conn, r, "show %s", a->user);
        /* whether it is stale: LIST has its flags (a failure only leaves the note out) */
        if (nsc_list(conn, &a->entries, &a->n_entries) < 0) {
                a->entries = NULL;
                a->n_entries = 0;
        }
        return 0;
}

static int show_print(struct args *a) {
        int bad_line = 0;
        int r = mount_tree_print(a->text, a->len, a->ids, a->n_ids, &a->table, a->tree, stdout,
                                 &bad_line);

        /* stale (issue 22): a note beside the table, on stderr, so the table stays as is */
        for (size_t i = 0; i < a->n_entries; i++)
                if (a->entries[i].uid == a->uid && (a->entries[i].ns_flags & NSC_NS_STALE))
                        fprintf(stderr,
                                "nsctl: the namespace of %s was made with an older setup than "
                                "nsd.conf's (stale); it gets the new one when it is next "
                                "created\n",
                                a->user);

        if (r == -EINVAL) {
                fprintf(stderr,
                        "nsctl: cannot parse the mount table of %s: line %d is not mountinfo\n",
                        a->user, bad_line);
                return EXIT_FAILURE;
        }
        if (r < 0)
                return fail(NULL, r, "show %s", a->user);
        return EXIT_SUCCESS;
}

/* ---- enter ----------------------------------------------------------------------------- */

/* After EPERM from nsd or the kernel, for a caller without privilege: what it can do. */
static void enter_refused_hint(uid_t uid, const char *user) {
        if (uid != getuid()) {
                fprintf(stderr, "nsctl: only root may enter another user's namespace\n");
                return;
        }
        fprintf(stderr,
                "nsctl: only root may enter a namespace from outside it; 'nsctl show %s' shows "
                "its\n"
                "nsctl: mounts, and a new login (ssh, su -l, a new session) runs inside it\n",
                user);
}

/* Is ns_fd the mount namespace this process is in? */
static bool in_namespace(int ns_fd) {
        struct stat a, b;

        return fstat(ns_fd, &a) == 0 && stat("/proc/self/ns/mnt", &b) == 0 &&
               a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* nsd decides who gets the namespace's descriptors (root, or a process already in it) */
static int enter_request(nsc_conn *conn, struct args *a) {
        int r = nsc_join(conn, a->uid, 0, &a->join);

        if (r < 0) {
                fail(conn, r, "enter the namespace of %s", a->user);
                if (r == -EPERM && geteuid() != 0)
                        enter_refused_hint(a->uid, a->user);
                return EXIT_FAILURE;
        }
        return 0;
}

static int enter_finish(struct args *a) {
        _cleanup_free_ char *cwd = NULL;
        int r;

        if (geteuid() != 0 && in_namespace(a->join.ns_fd)) {
                /* already there (a login session of the user): nothing to enter, and entering
                 * anew would need privileges this process does not have */
        } else {
                /* keep the working directory by name where the namespace has it, as a login */
                cwd = getcwd(NULL, 0);

                if (a->mode_chroot) {
                        int used_setns = 0;

                        r = nsc_enter_chroot(&a->join, &used_setns);
                } else
                        r = nsc_enter_setns(&a->join);
                if (r < 0) {
                        fail(NULL, r, "enter the namespace of %s (mode %s)", a->user,
                             a->mode_chroot ? "chroot" : "setns");
                        if (r == -EPERM && geteuid() != 0)
                                enter_refused_hint(a->uid, a->user);
                        return EXIT_FAILURE;
                }
                if (!cwd || chdir(cwd) < 0)
                        (void) chdir("/");
        }

        execvp(a->cmd[0], a->cmd);
        r = errno;
        fprintf(stderr, "nsctl: cannot execute %s: %s\n", a->cmd[0], strerror(r));
        return r == ENOENT ? EXIT_EXEC_ENOENT : EXIT_EXEC_FAILED;
}

/* ---- release --------------------------------------------------------------------------- */

/* the number of live sessions nsd reports for uid, or -errno */
static long live_sessions(nsc_conn *conn, uid_t uid) {
        _cleanup_free_ struct nsc_ns_info *entries = NULL;
        size_t n = 0;
        int r;

        r = nsc_list(conn, &entries, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (entries[i].uid == uid)
                        return entries[i].sessions;
        return -ENOENT;
}

/* a's uid among the LIST entries a->entries, or NULL */
static const struct nsc_ns_info *entry_of(const struct args *a) {
        for (size_t i = 0; i < a->n_entries; i++)
                if (a->entries[i].uid == a->uid)
                        return &a->entries[i];
        return NULL;
}

/* Before the RELEASE of a namespace LIST calls orphaned, one line on whose it was. nsd's
 * replies do not carry the owner name it recorded (Owner=): its namespace-orphaned event in
 * the journal names it. Without LIST's answer the release goes on without the line. */
static void release_orphan_note(nsc_conn *conn, struct args *a) {
        const struct nsc_ns_info *e;

        if (nsc_list(conn, &a->entries, &a->n_entries) < 0) {
                a->entries = NULL;
                a->n_entries = 0;
                return;
        }
        e = entry_of(a);
        if (e && (e->ns_flags & NSC_NS_ORPHANED))
                fprintf(stderr,
                        "nsctl: releasing the orphaned namespace of uid %u: it was made for a user "
                        "name the uid no longer has (nsd does not say which; its "
                        "namespace-orphaned event in the journal does)\n",
                        (unsigned) a->uid);
}

/* release --dry-run: LIST (the entry) and SHOW (its mounts), no RELEASE */
static int release_dry_run_request(nsc_conn *conn, struct args *a) {
        int r = nsc_list(conn, &a->entries, &a->n_entries);

        if (r < 0)
                return fail(conn, r, "list namespaces (release --dry-run %s)", a->user);
        if (!entry_of(a)) {
                fprintf(stderr,
                        "nsctl: release --dry-run %s: uid %u has no namespace (that you may "
                        "see): nothing to release\n",
                        a->user, (unsigned) a->uid);
                return EXIT_FAILURE;
        }
        r = nsc_show(conn, a->uid, &a->text, &a->len);
        if (r < 0) {
                a->text = NULL;
                a->len = 0;
                a->show_error = r;
        }
        return 0;
}

static int release_request(nsc_conn *conn, struct args *a) {
        int r;

        if (a->dry_run)
                return release_dry_run_request(conn, a);
        release_orphan_note(conn, a);
        r = nsc_release(conn, a->uid, a->force ? NSC_RELEASE_FORCE : 0);
        if (r == -EBUSY && !a->force) {
                /* nsd's reason, before the next request replaces it: live sessions, or a
                 * volume in use (its holders) */
                const char *m = nsc_last_error_message(conn);
                char why[NSD_ERROR_MESSAGE_MAX + 1];
                long sessions;

                snprintf(why, sizeof why, "%s", m ? m : "");
                sessions = live_sessions(conn, a->uid);
                if (sessions > 0)
                        fprintf(stderr,
                                "nsctl: cannot release %s: %ld live session%s (use --force)\n",
                                a->user, sessions, sessions == 1 ? "" : "s");
                else
                        fprintf(stderr, "nsctl: cannot release %s: %s\n", a->user,
                                why[0] ? why : strerror(EBUSY));
                return EXIT_FAILURE;
        }
        return r < 0 ? fail(conn, r, "release %s", a->user) : 0;
}

/* release --dry-run: what a release would drop, from LIST's entry and SHOW's mount table
 * (the mount points, one a line, escaped as --raw escapes them) */
static int release_dry_run_print(const struct args *a) {
        static const size_t target[] = { MOUNT_COL_TARGET };
        static const struct table_options raw = { .raw = true, .noheadings = true };
        const struct nsc_ns_info *e = entry_of(a);
        _cleanup_free_ struct passwd *pw = NULL;
        _cleanup_free_ char *points = NULL;
        char buf[128];
        size_t size = 0, n = 0;
        int r;

        assert(e);
        if (a->text) {
                FILE *f = open_memstream(&points, &size);

                if (!f)
                        return fail(NULL, -errno, "release --dry-run %s", a->user);
                r = mount_tree_print(a->text, a->len, target, 1, &raw, false, f, NULL);
                if (fclose(f) != 0 && r >= 0)
                        r = -errno;
                if (r < 0) {
                        free(points);
                        points = NULL;
                } else
                        for (const char *p = points; (p = strchr(p, '\n')); p++)
                                n++;
        }

        printf("nsctl release --dry-run: nothing is released; 'nsctl release%s %s' would "
               "release:\n",
               a->force ? " --force" : "", a->user);
        printf("uid:        %u\n", (unsigned) e->uid);
        r = nss_user_by_uid(e->uid, &pw);
        if (r == -ENOENT)
                printf("user now:   none (uid %u has no passwd entry)\n", (unsigned) e->uid);
        else if (r < 0)
                printf("user now:   unknown (the lookup failed: %s)\n", strerror(-r));
        else
                printf("user now:   %s\n", pw->pw_name);
        if (e->ns_flags & NSC_NS_ORPHANED)
                printf("orphaned:   yes: made for a user name the uid no longer has (nsd does not "
                       "say which;\n"
                       "            its namespace-orphaned event in the journal does)\n");
        else
                printf("orphaned:   no\n");
        printf("sessions:   %u%s\n", e->sessions,
               e->sessions == 0 ? ""
               : a->force       ? " live: their processes stay in the namespace (--force)"
                                : " live: refused without --force");
        format_timestamp(e->created_usec, buf, sizeof(buf));
        printf("created:    %s\n", buf);
        printf("namespace:  mnt:[%llu], %s", (unsigned long long) e->ns_inode,
               !(e->ns_flags & NSC_NS_PINNED) ? "kept by a descriptor only"
               : e->pin[0]                    ? "pinned at "
                                              : "pinned");
        /* the pin as --raw shows it: a byte that is not printable ASCII as \xHH */
        for (size_t i = 0; (e->ns_flags & NSC_NS_PINNED) && i < sizeof(e->pin) && e->pin[i]; i++) {
                unsigned char ch = (unsigned char) e->pin[i];

                printf(ch > 0x20 && ch < 0x7f && ch != '\\' ? "%c" : "\\x%02x", ch);
        }
        putchar('\n');
        if (points) {
                printf("mounts:     %zu, gone with the last process inside:\n", n);
                for (const char *p = points; *p;) {
                        int len = (int) strcspn(p, "\n");

                        printf("  %.*s\n", len, p);
                        p += len + (p[len] == '\n');
                }
        } else if (e->mounts >= 0)
                printf("mounts:     %d (their mount points unknown: %s)\n", e->mounts,
                       strerror(a->text ? EINVAL : -a->show_error));
        else
                printf("mounts:     unknown (%s)\n", strerror(a->text ? EINVAL : -a->show_error));
        return EXIT_SUCCESS;
}

static int release_finish(struct args *a) {
        return a->dry_run ? release_dry_run_print(a) : EXIT_SUCCESS;
}

/* ---- hide ------------------------------------------------------------------------------ */

static int hide_prepare(struct args *a) {
        int r;

        a->uid = getuid();
        if (!a->owner && a->uid == 0)
                return usage_error("hide: root must name the owner with --user");
        if (a->owner && (r = resolve_user(a->owner, &a->uid)))
                return r;
        /* relative to the working directory, by name: nsd resolves it (symlinks refused) */
        if (a->path[0] != '/') {
                _cleanup_free_ char *cwd = getcwd(NULL, 0);

                if (!cwd)
                        return fail(NULL, -errno, "hide %s: no working directory", a->path);
                if (asprintf(&a->abs_path, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, a->path) <
                    0) {
                        a->abs_path = NULL;
                        return fail(NULL, -ENOMEM, "hide %s", a->path);
                }
                a->path = a->abs_path;
        }
        user_name(a->uid, a->owner_name, sizeof(a->owner_name));
        return 0;
}

static int hide_request(nsc_conn *conn, struct args *a) {
        int r = nsc_hide(conn, a->uid, a->path, a->unhide ? NSC_HIDE_UNHIDE : 0);

        if (r < 0)
                return fail(conn, r, "%s %s for %s", a->unhide ? "unhide" : "hide", a->path,
                            a->owner_name);
        return 0;
}

/* ---- the commands ------------------------------------------------------------------------ */

/* What follows a command's options. */
enum operand {
        OPERAND_NONE,
        OPERAND_USER,         /* <user> */
        OPERAND_USER_COMMAND, /* <user> [--] [<command> [<argument>...]] */
        OPERAND_PATH,         /* <path> */
        OPERAND_VOLUME,       /* <volume> */
};

/* in a command's --help: what follows "nsctl <name> " */
static const char *const operand_synopsis[] = {
        [OPERAND_NONE] = "[options]",
        [OPERAND_USER] = "[options] <user>",
        [OPERAND_USER_COMMAND] = "[options] <user> [--] [<command> [<argument>...]]",
        [OPERAND_PATH] = "[options] <path>",
        [OPERAND_VOLUME] = "[options] <volume>",
};

/*
 * One command: its --help, its options and operand, and its steps. nsctl parses the options
 * and the operand (parse_args()), runs prepare (what needs no nsd), connects, sends the
 * request and disconnects before finish prints the answer (a slow reader of stdout holds none
 * of nsd's connections) or enters the namespace. Each step returns 0 to go on or nsctl's exit
 * status, having said why.
 */
struct verb {
        const char *name;
        const char *summary_args;     /* in nsctl --help: after the name */
        const char *summary;          /* in nsctl --help */
        const char *description;      /* in its --help */
        const char *options_help;     /* in its --help: its own options */
        const struct option *options; /* getopt's short options follow from it */
        enum operand operand;
        const struct column_set *columns; /* -o's columns; NULL: no -o */
        int (*prepare)(struct args *a);
        int (*request)(nsc_conn *conn, struct args *a);
        int (*finish)(struct args *a);
        /* instead of all the above but the summary: a command with a path of its own (no
         * request to nsd), given its arguments from its name on */
        int (*run)(int argc, char **argv);
};

/* rows of the option tables (OPTION_OUTPUT two) */
/* clang-format off */
#define OPTION_JSON { "json", no_argument, NULL, 'J' }
#define OPTION_RAW { "raw", no_argument, NULL, 'r' }
#define OPTION_NOHEADINGS { "noheadings", no_argument, NULL, 'n' }
#define OPTION_OUTPUT { "output", required_argument, NULL, 'o' }, \
                      { "output-all", no_argument, NULL, ARG_OUTPUT_ALL }
/* the options every command has, and the end of the table */
#define OPTIONS_COMMON { "socket", required_argument, NULL, ARG_SOCKET }, \
                       { "help", no_argument, NULL, 'h' }, \
                       {}
/* clang-format on */

#define HELP_JSON " -J, --json           use JSON output format\n"
/* list's and show's table options in --help; show's -r has a note, and show has -l */
#define HELP_TABLE(raw_note, list_option)                                             \
        " -J, --json              use JSON output format\n"                           \
        " -r, --raw               use raw output format" raw_note "\n" list_option    \
        " -n, --noheadings        don't print headings\n"                             \
        " -o, --output <list>     output columns (comma separated; +<list> to add)\n" \
        "     --output-all        output all columns\n"

static const struct option status_options[] = { OPTION_JSON, OPTIONS_COMMON };
static const struct option list_options[] = { OPTION_JSON, OPTION_RAW, OPTION_NOHEADINGS,
                                              OPTION_OUTPUT, OPTIONS_COMMON };
static const struct option show_options[] = {
        OPTION_JSON,       OPTION_RAW,    { "list", no_argument, NULL, 'l' },
        OPTION_NOHEADINGS, OPTION_OUTPUT, OPTIONS_COMMON
};
static const struct option enter_options[] = { { "mode", required_argument, NULL, ARG_MODE },
                                               OPTIONS_COMMON };
static const struct option release_options[] = { { "force", no_argument, NULL, 'f' },
                                                 { "dry-run", no_argument, NULL, 'n' },
                                                 OPTIONS_COMMON };
static const struct option metrics_options[] = {
        { "textfile", required_argument, NULL, ARG_TEXTFILE }, OPTIONS_COMMON
};
static const struct option plain_options[] = { OPTIONS_COMMON };
static const struct option hide_options[] = { { "user", required_argument, NULL, 'u' },
                                              { "unhide", no_argument, NULL, ARG_UNHIDE },
                                              OPTIONS_COMMON };
static const struct option volume_ctl_options[] = { { "user", required_argument, NULL, 'u' },
                                                    OPTIONS_COMMON };

static const size_t shares_columns_default[] = {
        SHARES_COL_SHARE,   SHARES_COL_PATH, SHARES_COL_PROPAGATION,
        SHARES_COL_MEMBERS, SHARES_COL_MAX,  SHARES_COL_UIDS,
};
static const struct column_set shares_column_set = {
        .columns = shares_columns,
        .n_columns = _SHARES_COL_MAX,
        .defaults = shares_columns_default,
        .n_defaults = ELEMENTSOF(shares_columns_default),
};

static const size_t volumes_columns_default[] = {
        VOLUMES_COL_USER,  VOLUMES_COL_VOLUME, VOLUMES_COL_TYPE, VOLUMES_COL_WHERE,
        VOLUMES_COL_STATE, VOLUMES_COL_NOW,    VOLUMES_COL_WHY,
};
static const struct column_set volumes_column_set = {
        .columns = volumes_columns,
        .n_columns = _VOLUMES_COL_MAX,
        .defaults = volumes_columns_default,
        .n_defaults = ELEMENTSOF(volumes_columns_default),
};

static const size_t list_columns_default[] = {
        LIST_COL_USER,   LIST_COL_UID,     LIST_COL_SESSIONS, LIST_COL_MOUNTS, LIST_COL_CREATED,
        LIST_COL_PINNED, LIST_COL_ADOPTED, LIST_COL_SETUP,    LIST_COL_NS
};
static const struct column_set list_column_set = {
        .columns = list_columns,
        .n_columns = _LIST_COL_MAX,
        .defaults = list_columns_default,
        .n_defaults = ELEMENTSOF(list_columns_default),
};

static const struct verb verbs[] = {
        {
                .name = "status",
                .summary = "nsd's version, kernel features, counts, limits",
                .description = "Show nsd's version, pid, uptime, protocol version, the kernel "
                               "features it\n"
                               "found, the numbers of namespaces, sessions and connections, and "
                               "its limits.\n",
                .options_help = HELP_JSON,
                .options = status_options,
                .operand = OPERAND_NONE,
                .request = status_request,
                .finish = status_print,
        },
        {
                .name = "list",
                .summary = "list the per-user namespaces",
                .description = "List the per-user mount namespaces that nsd keeps (without "
                               "privilege: only\n"
                               "your own).\n",
                .options_help = HELP_TABLE("", ""),
                .options = list_options,
                .operand = OPERAND_NONE,
                .columns = &list_column_set,
                .request = list_request,
                .finish = list_finish,
        },
        {
                .name = "orphans",
                .summary = "list the orphaned namespaces (of recycled uids)",
                .description = "List the namespaces that list shows as ORPHANED: made for a "
                               "user name their uid\n"
                               "no longer has (a recycled uid, a removed user). nsd hands them "
                               "to nobody and\n"
                               "releases them only when asked: 'nsctl release --dry-run <uid>' "
                               "says what that\n"
                               "would drop. The columns are list's.\n",
                .options_help = HELP_TABLE("", ""),
                .options = list_options,
                .operand = OPERAND_NONE,
                .columns = &list_column_set,
                .request = list_request,
                .finish = orphans_finish,
        },
        {
                .name = "show",
                .summary_args = "<user>",
                .summary = "the mount tree of a user's namespace",
                .description = "Show the mounts of a user's namespace as a tree, like "
                               "findmnt(8), through nsd:\n"
                               "no need to be in it. <user> is a user name or a numeric uid; "
                               "without\n"
                               "privilege, only your own.\n",
                .options_help = HELP_TABLE(" (implies --list)",
                                           " -l, --list              use list format output (no "
                                           "tree)\n"),
                .options = show_options,
                .operand = OPERAND_USER,
                .columns = &mount_column_set,
                .request = show_request,
                .finish = show_print,
        },
        {
                .name = "enter",
                .summary_args = "<user> [-- <cmd>...]",
                .summary = "run a command (default $SHELL) in a user's namespace",
                .description = "Run a command in a user's mount namespace, as root (the "
                               "administrator's\n"
                               "view). Without a command, run $SHELL (or /bin/sh). Root only, but "
                               "for a\n"
                               "process already inside that namespace (then the command just "
                               "runs); others\n"
                               "see their namespace's mounts with 'nsctl show <user>'.\n",
                .options_help = "     --mode <mode>    how to enter: setns (default) or chroot\n",
                .options = enter_options,
                .operand = OPERAND_USER_COMMAND,
                .request = enter_request,
                .finish = enter_finish,
        },
        {
                .name = "release",
                .summary_args = "<user>",
                .summary = "unpin and forget a user's namespace",
                .description = "Unpin and forget a user's namespace. Its mounts go away with "
                               "the last process\n"
                               "still inside it. <user> may be a uid that no longer has a name "
                               "(an orphaned\n"
                               "namespace: see 'nsctl list -o +ORPHANED').\n",
                .options_help = " -f, --force          release even while the user has live "
                                "sessions\n"
                                " -n, --dry-run        say what a release would drop (uid, "
                                "sessions, mounts),\n"
                                "                      release nothing\n",
                .options = release_options,
                .operand = OPERAND_USER,
                .request = release_request,
                .finish = release_finish,
        },
        {
                .name = "hide",
                .summary_args = "<path> [--user <user>]",
                .summary = "make a mount owner-private (kernel patch F4)",
                .description = "Make the mount at <path> owner-private (kernel patch F4): only "
                               "processes of its\n"
                               "owner see it and walk into it; everyone else, root included, sees "
                               "the directory\n"
                               "below. You may hide your own FUSE mounts; root may hide any mount "
                               "for any user\n"
                               "nsd manages. <path> is in the initial mount namespace and may "
                               "contain no\n"
                               "symbolic link.\n",
                .options_help = " -u, --user <user>    the owner (default: you)\n"
                                "     --unhide         make it visible to everyone again (the "
                                "owner only)\n",
                .options = hide_options,
                .operand = OPERAND_PATH,
                .prepare = hide_prepare,
                .request = hide_request,
        },
        {
                .name = "shares",
                .summary = "the shares of nsd.conf and their members",
                .description = "Show each [Share NAME] of nsd.conf in force: its path, "
                               "propagation, how many\n"
                               "namespaces have it, MaxMembers= and the uids of its members "
                               "(without\n"
                               "privilege: only the shares of your namespace, and only your own "
                               "uid).\n",
                .options_help = HELP_TABLE("", ""),
                .options = list_options,
                .operand = OPERAND_NONE,
                .columns = &shares_column_set,
                .request = shares_request,
                .finish = shares_finish,
        },
        {
                .name = "volumes",
                .summary = "the volumes of each namespace and what became of them",
                .description = "Show each [Volume NAME] of nsd.conf a namespace was set up "
                               "with: where it is\n"
                               "mounted in the user's namespace, and whether its setup mounted "
                               "it, or why not\n"
                               "(without privilege: the volumes of your own namespace).\n",
                .options_help = HELP_TABLE("", ""),
                .options = list_options,
                .operand = OPERAND_NONE,
                .columns = &volumes_column_set,
                .request = volumes_request,
                .finish = volumes_finish,
        },
        {
                .name = "start-volumes",
                .summary = "start your volumes that start at login",
                .description = "Start nsd-volume@NAME.service in your service manager (systemctl "
                               "--user) for\n"
                               "each FUSE volume nsd.conf gives your namespace, and have nsd "
                               "mount each of its\n"
                               "kernel volumes with Start=login that is not mounted; what "
                               "nsd-volumes.service\n"
                               "runs at login. Prints the units it started and the volumes nsd "
                               "mounted.\n",
                .options_help = "",
                .options = plain_options,
                .operand = OPERAND_NONE,
                .request = start_volumes_request,
                .finish = start_volumes_finish,
        },
        {
                .name = "run-volume",
                .summary_args = "<volume>",
                .summary = "run one of your FUSE volumes in the foreground",
                .description = "Run the FUSE program of one of your volumes (nsctl volumes) in "
                               "the foreground,\n"
                               "as you, with the source, mount point and options nsd.conf gives "
                               "it: what\n"
                               "nsd-volume@NAME.service runs. Only inside your namespace.\n",
                .options_help = "",
                .options = plain_options,
                .operand = OPERAND_VOLUME,
                .request = run_volume_request,
                .finish = run_volume_finish,
        },
        {
                .name = "start",
                .summary_args = "<volume>",
                .summary = "start (mount) one of your volumes",
                .description = "Start one of your volumes: a volume with Start=request, or one "
                               "you stopped. nsd\n"
                               "mounts a kernel volume in your namespace (nsd 1.11) and nsctl "
                               "prints where; a\n"
                               "FUSE volume's unit is started in your service manager "
                               "(systemctl --user start\n"
                               "nsd-volume@NAME.service) and nsctl prints the unit.\n",
                .options_help = " -u, --user <user>    a kernel volume of this user's namespace "
                                "(root)\n",
                .options = volume_ctl_options,
                .operand = OPERAND_VOLUME,
                .prepare = start_prepare,
                .request = start_request,
                .finish = start_finish,
        },
        {
                .name = "stop",
                .summary_args = "<volume>",
                .summary = "stop (unmount) one of your volumes",
                .description = "Stop one of your volumes: nsd unmounts a kernel volume in your "
                               "namespace (nsd\n"
                               "1.11; refused while a process holds it, naming it); a FUSE "
                               "volume's unit is\n"
                               "stopped (systemctl --user stop nsd-volume@NAME.service), its "
                               "program ends and\n"
                               "the volume is unmounted. Prints what became of it, or the "
                               "unit.\n",
                .options_help = " -u, --user <user>    a kernel volume of this user's namespace "
                                "(root)\n",
                .options = volume_ctl_options,
                .operand = OPERAND_VOLUME,
                .prepare = stop_prepare,
                .request = stop_request,
                .finish = stop_finish,
        },
        {
                .name = "unlock",
                .summary_args = "<volume>",
                .summary = "give one of your volumes its password",
                .description = "Ask for the password of one of your volumes (on the terminal, "
                               "without echo; or\n"
                               "the first line of standard input when it is not a terminal) "
                               "and hand it to nsd\n"
                               "for that volume only: its waiting nsd-volume@NAME.service "
                               "takes it now, or\n"
                               "its next start within 120 s. For a volume with Key=ask, or one "
                               "your login\n"
                               "password did not reach (an ssh key login, a wrong password).\n",
                .options_help = "",
                .options = plain_options,
                .operand = OPERAND_VOLUME,
                .prepare = unlock_prepare,
                .request = unlock_request,
                .finish = unlock_finish,
        },
        {
                .name = "metrics",
                .summary = "nsd's counters as text for Prometheus (root only)",
                .description = "Print nsd's counters and gauges as OpenMetrics text for "
                               "Prometheus: namespaces,\n"
                               "sessions, connections, joins by result and their latency, "
                               "creations, releases,\n"
                               "lookups, path-walk timeouts, throttling, kernel features and "
                               "version. Root only.\n",
                .options_help = "     --textfile <dir> write <dir>/" EXPOSITION_TEXTFILE_NAME
                                " atomically instead (node_exporter's\n"
                                "                      textfile collector)\n",
                .options = metrics_options,
                .operand = OPERAND_NONE,
                .request = metrics_request,
                .finish = metrics_print,
        },
        {
                .name = "import-namespace-conf",
                .summary_args = "[<file>...]",
                .summary = "print pam_namespace's namespace.conf as an nsd drop-in",
                .run = verb_import_namespace_conf,
        },
        {
                .name = "import-pam-mount",
                .summary_args = "[<file>...]",
                .summary = "print pam_mount's pam_mount.conf.xml as an nsd drop-in",
                .run = verb_import_pam_mount,
        },
};

static int verb_help(const struct verb *v) {
        printf("Usage:\n nsctl %s %s\n\n%s\nOptions:\n", v->name, operand_synopsis[v->operand],
               v->description);
        fputs(v->options_help, stdout);
        if (!v->columns) {
                fputs(USAGE_COMMON_OPTIONS("") USAGE_MAN_TAIL, stdout);
                return EXIT_SUCCESS;
        }
        fputs(USAGE_COMMON_OPTIONS("   ") "\nAvailable output columns:\n", stdout);
        columns_help(stdout, v->columns->columns, v->columns->n_columns);
        fputs(USAGE_MAN_TAIL, stdout);
        return EXIT_SUCCESS;
}

/* -J and -r of list and show, as lsns and findmnt refuse them together */
static const excl_group_t table_excl[] = {
        { 'J', 'r' },
};

/* getopt's short options of v, from its option table: ':' first (errors are ours to say), and
 * '+' before it where the options end at the operand (what follows belongs to a command) */
static void shortopts_of(const struct verb *v, char *buf, size_t size) {
        size_t n = 0;

        if (v->operand == OPERAND_USER_COMMAND)
                buf[n++] = '+';
        buf[n++] = ':';
        for (const struct option *o = v->options; o->name; o++) {
                if (o->val >= 0x100) /* long only */
                        continue;
                assert(n + 2 < size);
                buf[n++] = (char) o->val;
                if (o->has_arg == required_argument)
                        buf[n++] = ':';
        }
        buf[n] = '\0';
}

/* The options of v and its operand into a; GO_ON, or nsctl's exit status (--help, an error). */
static int parse_args(const struct verb *v, int argc, char **argv, struct args *a) {
        int excl_status[ELEMENTSOF(table_excl)] = {};
        char shortopts[64];
        int c, r;

        for (size_t i = 0; v->columns && i < v->columns->n_defaults; i++)
                a->ids[a->n_ids++] = v->columns->defaults[i];

        shortopts_of(v, shortopts, sizeof shortopts);
        optind = 0;
        while ((c = getopt_long(argc, argv, shortopts, v->options, NULL)) >= 0) {
                r = exclusive_options(c, v->options, table_excl, ELEMENTSOF(table_excl),
                                      excl_status);
                if (r)
                        return r;
                switch (c) {
                case 'J':
                        a->table.json = true;
                        break;
                case 'r':
                        a->table.raw = true;
                        break;
                case 'n': /* release's --dry-run; list's and show's --noheadings */
                        if (v->options == release_options)
                                a->dry_run = true;
                        else
                                a->table.noheadings = true;
                        break;
                case 'l':
                        a->tree = false;
                        break;
                case 'o':
                        if ((r = parse_columns_arg(optarg, v->columns->columns,
                                                   v->columns->n_columns, a->ids, &a->n_ids)))
                                return r;
                        break;
                case ARG_OUTPUT_ALL:
                        for (a->n_ids = 0; a->n_ids < v->columns->n_columns; a->n_ids++)
                                a->ids[a->n_ids] = a->n_ids;
                        break;
                case 'f':
                        a->force = true;
                        break;
                case 'u':
                        a->owner = optarg;
                        break;
                case ARG_UNHIDE:
                        a->unhide = true;
                        break;
                case ARG_TEXTFILE:
                        if (!*optarg)
                                return usage_error("metrics: --textfile needs a folder");
                        a->textfile = optarg;
                        break;
                case ARG_MODE:
                        if (strcmp(optarg, "setns") == 0)
                                a->mode_chroot = false;
                        else if (strcmp(optarg, "chroot") == 0)
                                a->mode_chroot = true;
                        else
                                return usage_error("unknown mode '%s' (setns or chroot)", optarg);
                        break;
                case ARG_SOCKET:
                        arg_socket = optarg;
                        break;
                case 'h':
                        return verb_help(v);
                default:
                        return option_error(c, argv);
                }
        }

        switch (v->operand) {
        case OPERAND_NONE:
                return no_more_args(v->name, argc, argv, optind) ?: GO_ON;
        case OPERAND_USER:
                if ((r = user_arg(v->name, argc, argv, &a->uid)))
                        return r;
                a->user = argv[optind];
                return no_more_args(v->name, argc, argv, optind + 1) ?: GO_ON;
        case OPERAND_USER_COMMAND:
                if ((r = user_arg(v->name, argc, argv, &a->uid)))
                        return r;
                a->user = argv[optind++];
                if (optind < argc && strcmp(argv[optind], "--") == 0)
                        optind++;
                if (optind < argc) {
                        a->cmd = argv + optind;
                } else {
                        const char *shell = getenv("SHELL");

                        a->shell_argv[0] = (char *) (shell && *shell ? shell : "/bin/sh");
                        a->cmd = a->shell_argv;
                }
                return GO_ON;
        case OPERAND_PATH:
                if (optind >= argc)
                        return usage_error("%s: missing path", v->name);
                a->path = argv[optind];
                return no_more_args(v->name, argc, argv, optind + 1) ?: GO_ON;
        case OPERAND_VOLUME:
                if (optind >= argc)
                        return usage_error("%s: missing volume name", v->name);
                a->volume = argv[optind];
                return no_more_args(v->name, argc, argv, optind + 1) ?: GO_ON;
        }
        return GO_ON;
}

/* parse_args(), prepare, one request on one connection, finish: see struct verb */
static int run_verb(const struct verb *v, int argc, char **argv, struct args *a) {
        int r;

        if (v->run)
                return v->run(argc, argv);
        r = parse_args(v, argc, argv, a);
        if (r != GO_ON)
                return r;
        if (v->prepare && (r = v->prepare(a)))
                return r;
        {
                _nsc_cleanup_disconnect_ nsc_conn *conn = NULL;

                if ((r = connect_nsd(&conn)) || (r = v->request(conn, a)))
                        return r;
        } /* closed before printing: a slow reader of stdout holds none of nsd's connections */
        return v->finish ? v->finish(a) : EXIT_SUCCESS;
}

/* ---- main ------------------------------------------------------------------------------ */

static int help(void) {
        printf("Usage:\n"
               " nsctl [options] <command> [<args>]\n"
               "\n"
               "Show and steer nsd, the daemon that keeps one mount namespace per user.\n"
               "\n"
               "Commands:\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++) {
                const char *line = verbs[i].summary;
                char name[64];
                int w;

                /* the summary in a column of its own, its lines (\n) one below the other;
                 * after a longer name it starts on the next line */
                w = snprintf(name, sizeof(name), "%s%s%s", verbs[i].name,
                             verbs[i].summary_args ? " " : "", verbs[i].summary_args ?: "");
                printf(" %-28s", name);
                if (w > 28)
                        printf("\n%29s", "");
                do {
                        int len = (int) strcspn(line, "\n");

                        printf(" %.*s\n", len, line);
                        line += len;
                        if (*line)
                                printf("%29s", "");
                } while (*line && *++line);
        }
        printf("\n"
               "<user> is a user name or a numeric uid.\n"
               "\n"
               "Options:\n"
               "     --socket <path>  nsd's socket (default: $NSD_SOCKET, else %s)\n"
               " -h, --help           display this help\n"
               " -V, --version        display version\n"
               "\n"
               "Run 'nsctl <command> --help' for the options of a command.\n" USAGE_MAN_TAIL,
               NSD_SOCKET_PATH_DEFAULT);
        return EXIT_SUCCESS;
}

int main(int argc, char **argv) {
        static const struct option options[] = { { "socket", required_argument, NULL, ARG_SOCKET },
                                                 { "help", no_argument, NULL, 'h' },
                                                 { "version", no_argument, NULL, 'V' },
                                                 {} };
        int c;

        setlocale(LC_ALL, "");
        opterr = 0;
        atexit(close_stdout);

        while ((c = getopt_long(argc, argv, "+:hV", options, NULL)) >= 0) {
                switch (c) {
                case ARG_SOCKET:
                        arg_socket = optarg;
                        break;
                case 'h':
                        return help();
                case 'V':
                        printf("nsctl %s (nsd protocol %d.%d)\n", PACKAGE_VERSION, NSD_PROTO_MAJOR,
                               NSD_PROTO_MINOR);
                        return EXIT_SUCCESS;
                default:
                        return option_error(c, argv);
                }
        }
        if (optind >= argc)
                return usage_error("no command given");

        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (strcmp(argv[optind], verbs[i].name) == 0) {
                        struct args a = { .tree = true,
                                          .join = { .root_fd = -1, .ns_fd = -1 },
                                          .credential_fd = -1 };
                        int r = run_verb(&verbs[i], argc - optind, argv + optind, &a);

                        args_done(&a);
                        return r;
                }

        return usage_error("unknown command '%s'", argv[optind]);
}
