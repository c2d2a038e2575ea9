/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench/lib/list.c: the list options of the bench programs, taken and refused. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "list.h"
#include "tap.h"

/* list_parse(s, 1..64, at most 8): the numbers as "a,b,c" or "error: <what>" */
static const char *parse(const char *s) {
        static char out[256];
        unsigned v[8];
        char err[160];
        int n = list_parse(s, 1, 64, v, 8, err, sizeof(err));

        if (n < 0) {
                snprintf(out, sizeof(out), "error: %s", err);
                return out;
        }
        out[0] = '\0';
        for (int i = 0; i < n; i++)
                snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%u", i ? "," : "", v[i]);
        return out;
}

int main(void) {
        static const struct {
                const char *in, *want;
        } cases[] = {
                /* taken, as before */
                { "1", "1" },
                { "1,2,8", "1,2,8" },
                { "64,1", "64,1" },
                { "007", "7" },
                { "1,2,3,4,5,6,7,8", "1,2,3,4,5,6,7,8" },
                /* refused */
                { "1,2,3,4,5,6,7,8,9", "error: more than 8 values" },
                { "0", "error: 0 is out of range 1..64" },
                { "1,65", "error: 65 is out of range 1..64" },
                { "99999999999999999999999",
                  "error: 99999999999999999999999 is out of range 1..64" },
                { "x", "error: 'x' is not a number" },
                { "1,5abc", "error: '5abc' is not a number" },
                { "-1", "error: '-1' is not a number" },
                { "+5", "error: '+5' is not a number" },
                { " 5", "error: ' 5' is not a number" },
                { "0x10", "error: '0x10' is not a number" },
                { "", "error: an empty list" },
                { ",", "error: an empty value in ','" },
                { "1,,2", "error: an empty value in '1,,2'" },
                { "1,", "error: an empty value in '1,'" },
                { ",1", "error: an empty value in ',1'" },
        };
        unsigned v[3];
        char err[160];
        int fds[2], status;
        char buf[256] = "";
        ssize_t len;
        pid_t pid;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                is_str(parse(cases[i].in), cases[i].want, "'%s'", cases[i].in);

        /* the whole range of unsigned, and a range of one */
        is_int(list_parse("4294967295", 0, 4294967295u, v, 3, err, sizeof(err)), 1,
               "0..UINT_MAX takes UINT_MAX");
        is_int(v[0], 4294967295u, "as UINT_MAX");
        is_int(list_parse("4294967296", 0, 4294967295u, v, 3, err, sizeof(err)), -1,
               "0..UINT_MAX refuses UINT_MAX + 1");
        is_int(list_parse("0,0", 0, 0, v, 3, err, sizeof(err)), 2, "0..0 takes 0,0");

        /* list_option(): the option's name in the message, exit status 2 */
        if (pipe(fds) < 0)
                tap_bail_errno("pipe");
        pid = tap_fork();
        if (pid == 0) {
                dup2(fds[1], STDERR_FILENO);
                list_option("--clients", "1,70000", 1, 65536, v, 3);
                _exit(0);
        }
        close(fds[1]);
        len = read(fds[0], buf, sizeof(buf) - 1);
        buf[len > 0 ? len : 0] = '\0';
        close(fds[0]);
        if (waitpid(pid, &status, 0) != pid)
                tap_bail_errno("waitpid");
        ok(WIFEXITED(status) && WEXITSTATUS(status) == 2, "list_option() exits 2 on a bad list");
        is_str(buf, "test-bench-list: --clients: 70000 is out of range 1..65536\n",
               "list_option() says which option and what is wrong");
        is_int(list_option("--clients", "3,2,1", 1, 65536, v, 3), 3,
               "list_option() returns how many");
        ok(v[0] == 3 && v[1] == 2 && v[2] == 1, "in their order");
        return tap_done();
}
