/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-pam-args: pam_nsjoin's argument parsing (pam_nsjoin/nsjoin-util.c) over argument
 * vectors, the way pam_sm_open_session() gets them from a PAM stack line; and the value
 * parsers behind it (nsjoin_parse_uid(), nsjoin_parse_timeout()) on every argument.
 *
 * Input: the arguments separated by NUL bytes (at most 64 of them). The last two bytes
 * also choose a step and an errno for nsjoin_errno_to_pam().
 *
 * Properties besides the sanitizers' (any failure aborts):
 *   - every argument is OK, UNKNOWN or BAD_VALUE, and exactly the ones with the known
 *     names ("debug", "mode=", "socket=", "skip_users=", "only_group=", "min_uid=",
 *     "max_uid=", "timeout=", "unmanaged=") are not UNKNOWN; a BAD_VALUE comes with a hint;
 *   - an UNKNOWN or BAD_VALUE argument changes nothing; later arguments override earlier;
 *     each accepted one does what pam_nsjoin(8) says (a model of each is below);
 *   - nsjoin_parse_uid() takes exactly decimal 1..4294967294, nsjoin_parse_timeout()
 *     exactly seconds with up to six decimals, more than 0 and at most 300, and both give
 *     the value a plain reading of the digits gives;
 *   - after the vector: mode is setns or chroot, socket is NULL or an absolute path,
 *     skip_users is NULL or non-empty, only_group is NULL or non-empty, every stored
 *     string points into the argument that set it, the timeout is within its range;
 *   - nsjoin_name_in_list() agrees with a plain split of the list at commas;
 *   - nsjoin_errno_to_pam() gives one of PAM_SUCCESS, PAM_IGNORE, PAM_BUF_ERR,
 *     PAM_SESSION_ERR, with an explanation exactly for failures.
 */
#include <errno.h>
#include <security/_pam_types.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "nsjoin-util.h"

#define ARGS_MAX 64

static const char *value_of(const char *arg, const char *key) {
        size_t n = strlen(key);
        return strncmp(arg, key, n) == 0 && arg[n] == '=' ? arg + n + 1 : NULL;
}

/* The models: read the digits with saturation, compare with the range. */
static bool uid_ref(const char *s, uid_t *ret) {
        uint64_t v = 0;

        if (!*s)
                return false;
        for (const char *p = s; *p; p++) {
                if (*p < '0' || *p > '9')
                        return false;
                v = v > UINT32_MAX ? v : v * 10 + (uint64_t) (*p - '0');
        }
        if (v < 1 || v > 4294967294u)
                return false;
        *ret = (uid_t) v;
        return true;
}

static bool timeout_ref(const char *s, uint64_t *ret) {
        uint64_t sec = 0, frac = 0;
        unsigned decimals = 0;
        const char *p = s;

        if (*p < '0' || *p > '9')
                return false;
        for (; *p >= '0' && *p <= '9'; p++)
                sec = sec > 1000000 ? sec : sec * 10 + (uint64_t) (*p - '0');
        if (*p == '.') {
                p++;
                if (*p < '0' || *p > '9')
                        return false;
                for (; *p >= '0' && *p <= '9'; p++) {
                        if (++decimals > 6)
                                return false;
                        frac = frac * 10 + (uint64_t) (*p - '0');
                }
                for (unsigned k = decimals; k < 6; k++)
                        frac *= 10;
        }
        if (*p)
                return false;
        if (sec > 300)
                return false;
        sec = sec * 1000000 + frac;
        if (sec == 0 || sec > NSJOIN_TIMEOUT_MAX_USEC)
                return false;
        *ret = sec;
        return true;
}

static bool in_arg(const char *p, const char *arg) {
        return p >= arg && p <= arg + strlen(arg);
}

/* the reference: split at commas, compare each piece */
static bool name_in_list_ref(const char *list, const char *name) {
        if (!list || !name || !*name)
                return false;
        char *copy = strdup(list);
        bool found = false;

        fuzz_assert(copy, "out of memory");
        /* strtok_r would merge empty entries; walk by hand */
        for (char *p = copy;;) {
                char *comma = strchr(p, ',');
                if (comma)
                        *comma = 0;
                if (strcmp(p, name) == 0)
                        found = true;
                if (!comma)
                        break;
                p = comma + 1;
        }
        free(copy);
        return found;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf = malloc(size + 1);
        const char *argv[ARGS_MAX];
        int argc = 0;
        struct nsjoin_args a, want;

        fuzz_assert(buf, "out of memory");
        memcpy(buf, data, size);
        buf[size] = 0;
        for (size_t i = 0; i <= size && argc < ARGS_MAX;) {
                argv[argc++] = buf + i;
                i += strlen(buf + i) + 1;
        }

        nsjoin_args_init(&a);
        fuzz_assert(a.mode == NSJOIN_MODE_SETNS && !a.socket && !a.debug && !a.skip_users &&
                            !a.only_group && !a.min_uid_set && !a.max_uid_set &&
                            a.timeout_usec == NSJOIN_TIMEOUT_DEFAULT_USEC &&
                            a.unmanaged == NSJOIN_UNMANAGED_LEAVE,
                    "defaults");
        want = a;
        const char *setter_socket = NULL, *setter_skip = NULL, *setter_group = NULL;

        for (int i = 0; i < argc; i++) {
                const char *arg = argv[i], *v;
                struct nsjoin_args before = a;
                static const char unset[] = "unset";
                const char *hint = unset;
                /* every other argument without a hint pointer (the caller may pass NULL) */
                enum nsjoin_arg_result res = nsjoin_args_parse_one(&a, arg, i % 2 ? NULL : &hint);
                bool known = strcmp(arg, "debug") == 0 || value_of(arg, "mode") ||
                             value_of(arg, "socket") || value_of(arg, "skip_users") ||
                             value_of(arg, "only_group") || value_of(arg, "min_uid") ||
                             value_of(arg, "max_uid") || value_of(arg, "timeout") ||
                             value_of(arg, "unmanaged");
                uid_t uid = 0, uid2 = 0;
                uint64_t usec = 0, usec2 = 0;

                /* the value parsers on their own, on every argument */
                bool uid_ok = uid_ref(arg, &uid);
                fuzz_assert((nsjoin_parse_uid(arg, &uid2) == 0) == uid_ok && uid2 == uid,
                            "nsjoin_parse_uid('%s'): %u, the digits say %s %u", arg,
                            (unsigned) uid2, uid_ok ? "ok" : "no", (unsigned) uid);
                bool timeout_ok = timeout_ref(arg, &usec);
                fuzz_assert((nsjoin_parse_timeout(arg, &usec2) == 0) == timeout_ok && usec2 == usec,
                            "nsjoin_parse_timeout('%s'): %llu, the digits say %s %llu", arg,
                            (unsigned long long) usec2, timeout_ok ? "ok" : "no",
                            (unsigned long long) usec);

                fuzz_assert(res == NSJOIN_ARG_OK || res == NSJOIN_ARG_UNKNOWN ||
                                    res == NSJOIN_ARG_BAD_VALUE,
                            "result %d for '%s'", (int) res, arg);
                fuzz_assert((res != NSJOIN_ARG_UNKNOWN) == known, "'%s' is %s", arg,
                            res == NSJOIN_ARG_UNKNOWN ? "UNKNOWN" : "known");
                if (res == NSJOIN_ARG_BAD_VALUE && i % 2 == 0)
                        fuzz_assert(hint && hint != unset && *hint, "no hint for '%s'", arg);
                if (res != NSJOIN_ARG_OK) {
                        fuzz_assert(memcmp(&before, &a, sizeof a) == 0,
                                    "refused argument '%s' changed the result", arg);
                        continue;
                }
                /* the model of what an accepted argument does */
                if (strcmp(arg, "debug") == 0)
                        want.debug = true;
                else if ((v = value_of(arg, "mode"))) {
                        fuzz_assert(strcmp(v, "setns") == 0 || strcmp(v, "chroot") == 0,
                                    "mode '%s' accepted", v);
                        want.mode = strcmp(v, "chroot") == 0 ? NSJOIN_MODE_CHROOT
                                                             : NSJOIN_MODE_SETNS;
                } else if ((v = value_of(arg, "socket"))) {
                        want.socket = v;
                        setter_socket = arg;
                } else if ((v = value_of(arg, "skip_users"))) {
                        want.skip_users = *v ? v : NULL;
                        setter_skip = arg;
                } else if ((v = value_of(arg, "only_group"))) {
                        want.only_group = v;
                        setter_group = arg;
                } else if ((v = value_of(arg, "min_uid")) || (v = value_of(arg, "max_uid"))) {
                        fuzz_assert(uid_ref(v, &uid), "'%s' accepted", arg);
                        if (arg[1] == 'i') {
                                want.min_uid = uid;
                                want.min_uid_set = true;
                        } else {
                                want.max_uid = uid;
                                want.max_uid_set = true;
                        }
                } else if ((v = value_of(arg, "timeout"))) {
                        fuzz_assert(timeout_ref(v, &usec), "'%s' accepted", arg);
                        want.timeout_usec = usec;
                } else if ((v = value_of(arg, "unmanaged"))) {
                        fuzz_assert(strcmp(v, "leave") == 0 || strcmp(v, "stay") == 0,
                                    "unmanaged '%s' accepted", v);
                        want.unmanaged = strcmp(v, "stay") == 0 ? NSJOIN_UNMANAGED_STAY
                                                                : NSJOIN_UNMANAGED_LEAVE;
                }
                fuzz_assert(a.mode == want.mode && a.debug == want.debug &&
                                    a.socket == want.socket && a.skip_users == want.skip_users &&
                                    a.only_group == want.only_group &&
                                    a.min_uid_set == want.min_uid_set &&
                                    (!a.min_uid_set || a.min_uid == want.min_uid) &&
                                    a.max_uid_set == want.max_uid_set &&
                                    (!a.max_uid_set || a.max_uid == want.max_uid) &&
                                    a.timeout_usec == want.timeout_usec &&
                                    a.unmanaged == want.unmanaged,
                            "'%s' did not do what it says", arg);
        }

        fuzz_assert(a.mode == NSJOIN_MODE_SETNS || a.mode == NSJOIN_MODE_CHROOT, "mode %d",
                    (int) a.mode);
        fuzz_assert(!a.socket || (a.socket[0] == '/' && in_arg(a.socket, setter_socket)),
                    "socket '%s'", a.socket);
        fuzz_assert(!a.skip_users || (a.skip_users[0] && in_arg(a.skip_users, setter_skip)),
                    "skip_users '%s'", a.skip_users);
        fuzz_assert(!a.only_group || (a.only_group[0] && in_arg(a.only_group, setter_group)),
                    "only_group '%s'", a.only_group);
        fuzz_assert(a.timeout_usec > 0 && a.timeout_usec <= NSJOIN_TIMEOUT_MAX_USEC, "timeout %llu",
                    (unsigned long long) a.timeout_usec);

        /* list matching: every argument as a name against the skip list and a few fixed */
        for (int i = 0; i < argc; i++) {
                const char *lists[] = { a.skip_users, argv[i], "root,,alice", "," };
                for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) {
                        const char *name = argv[(i + 1) % argc];
                        fuzz_assert(nsjoin_name_in_list(lists[k], name) ==
                                            name_in_list_ref(lists[k], name),
                                    "name_in_list('%s', '%s')", lists[k] ? lists[k] : "(null)",
                                    name);
                }
        }

        /* errno mapping: step and errno from the last bytes */
        if (size >= 2) {
                int step = data[size - 2] % 8 - 1; /* -1 .. 6: one out of range each side */
                int r = -(int) data[size - 1];
                const char *e = "unset";
                int code = nsjoin_errno_to_pam((enum nsjoin_step) step, r, &e);

                fuzz_assert(code == PAM_SUCCESS || code == PAM_IGNORE || code == PAM_BUF_ERR ||
                                    code == PAM_SESSION_ERR,
                            "code %d for step %d r %d", code, step, r);
                fuzz_assert((code == PAM_SUCCESS) == (r >= 0), "code %d for r %d", code, r);
                fuzz_assert((e == NULL) == (r >= 0), "explanation for r %d", r);
                fuzz_assert(code != PAM_IGNORE || (step == NSJOIN_STEP_JOIN && r == -ENXIO),
                            "PAM_IGNORE for step %d r %d", step, r);
        }
        free(buf);
        return 0;
}
