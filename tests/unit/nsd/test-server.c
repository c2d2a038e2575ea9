/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-server: the manager's own arithmetic (nsd/server.c): the effective MaxNamespaces=
 * under RLIMIT_NOFILE and user.max_mnt_namespaces, and what it says when capped. TAP.
 */
#include "server.h"
#include "tap.h"

static void test_effective_limit(void) {
        Config c;
        g_autofree char *why = NULL;
        unsigned n;

        config_init_defaults(&c);
        n = server_effective_max_namespaces(&c, 524288, 100000, &why);
        ok(n == 10000 && !why, "plenty of descriptors: MaxNamespaces= stands (%u)", n);
        n = server_effective_max_namespaces(&c, 1024, 100000, &why);
        ok(n == (1024 - 64 - 480) / 3 && why && strstr(why, "RLIMIT_NOFILE=1024"),
           "RLIMIT_NOFILE=1024: %u, and why (%s)", n, why);
        g_clear_pointer(&why, g_free);
        n = server_effective_max_namespaces(&c, 524288, 5000, &why);
        ok(n == 5000 - 64 && why && strstr(why, "max_mnt_namespaces=5000"),
           "user.max_mnt_namespaces=5000: %u (%s)", n, why);
        g_clear_pointer(&why, g_free);
        n = server_effective_max_namespaces(&c, 524288, 0, &why);
        ok(n == 10000 && !why, "max_mnt_namespaces unknown: not a cap");
        n = server_effective_max_namespaces(&c, 10, 0, &why);
        is_int(n, 0, "a tiny RLIMIT_NOFILE: none, said plainly");
        config_done(&c);
}

int main(void) {
        test_effective_limit();
        return tap_done();
}
