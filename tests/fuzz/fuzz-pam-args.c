/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-pam-args: pam_nsjoin's argument parsing (pam_nsjoin/nsjoin-util.c) over argument
 * vectors, the way pam_sm_open_session() gets them from a PAM stack line.
 *
 * Input: the arguments separated by NUL bytes (at most 64 of them). The last two bytes
 * also choose a step and an errno for nsjoin_errno_to_pam().
 *
 * Properties besides the sanitizers' (any failure aborts):
 *   - every argument is OK, UNKNOWN or BAD_VALUE, and exactly the ones with the known
 *     names ("debug", "mode=", "socket=", "skip_users=", "only_group=") are not UNKNOWN;
 *   - an UNKNOWN or BAD_VALUE argument changes nothing; later arguments override earlier;
 *   - after the vector: mode is setns or chroot, socket is NULL or an absolute path,
 *     skip_users is NULL or non-empty, only_group is NULL or non-empty, and every stored
 *     string points into the argument that set it;
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
        for (char *p = copy;; ) {
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
                            !a.only_group,
                    "defaults");
        want = a;
        const char *setter_socket = NULL, *setter_skip = NULL, *setter_group = NULL;

        for (int i = 0; i < argc; i++) {
                const char *arg = argv[i], *v;
                struct nsjoin_args before = a;
                enum nsjoin_arg_result res = nsjoin_args_parse_one(&a, arg);
                bool known = strcmp(arg, "debug") == 0 || value_of(arg, "mode") ||
                             value_of(arg, "socket") || value_of(arg, "skip_users") ||
                             value_of(arg, "only_group");

                fuzz_assert(res == NSJOIN_ARG_OK || res == NSJOIN_ARG_UNKNOWN ||
                                    res == NSJOIN_ARG_BAD_VALUE,
                            "result %d for '%s'", (int) res, arg);
                fuzz_assert((res != NSJOIN_ARG_UNKNOWN) == known, "'%s' is %s", arg,
                            res == NSJOIN_ARG_UNKNOWN ? "UNKNOWN" : "known");
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
                }
                fuzz_assert(a.mode == want.mode && a.debug == want.debug &&
                                    a.socket == want.socket && a.skip_users == want.skip_users &&
                                    a.only_group == want.only_group,
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
                int step = data[size - 2] % 9 - 1; /* -1 .. 7: one out of range each side */
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
