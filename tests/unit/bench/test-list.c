/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench/lib/list.c: the list and number options of the bench programs, taken and refused. */
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

/* list_parse_uint(s, 1..64): the number or "error: <what>", with " (and changed)" when it
 * failed but changed the value all the same */
static const char *parse_uint(const char *s) {
        static char out[256];
        unsigned v = 12345;
        char err[160];

        if (list_parse_uint(s, 1, 64, &v, err, sizeof(err)) < 0)
                snprintf(out, sizeof(out), "error: %s%s", err, v == 12345 ? "" : " (and changed)");
        else
                snprintf(out, sizeof(out), "%u", v);
        return out;
}

/* fn() in a child: its stderr into buf, its wait status returned */
static int in_child(void (*fn)(void), char *buf, size_t size) {
        int fds[2], status;
        ssize_t len;
        pid_t pid;

        if (pipe(fds) < 0)
                tap_bail_errno("pipe");
        pid = tap_fork();
        if (pid == 0) {
                dup2(fds[1], STDERR_FILENO);
                fn();
                _exit(0);
        }
        close(fds[1]);
        len = read(fds[0], buf, size - 1);
        buf[len > 0 ? len : 0] = '\0';
        close(fds[0]);
        if (waitpid(pid, &status, 0) != pid)
                tap_bail_errno("waitpid");
        return status;
}

static void bad_list(void) {
        unsigned v[3];

        list_option("--clients", "1,70000", 1, 65536, v, 3);
}

static void bad_uint(void) {
        list_uint("--reps", "5abc", 1, 101);
}

static void bad_uint_range(void) {
        list_uint("--reps", "0", 1, 101);
}

int main(void) {
        /* each input as a list (list_parse()) and as one number (list_parse_uint(), whose
         * refusals leave *v unchanged); NULL: not tried that way */
        static const struct {
                const char *in, *list, *one;
        } cases[] = {
                /* taken, as before */
                { "1", "1", "1" },
                { "1,2,8", "1,2,8", NULL },
                { "64,1", "64,1", NULL },
                { "5", NULL, "5" },
                { "64", NULL, "64" },
                { "007", "7", "7" },
                { "1,2,3,4,5,6,7,8", "1,2,3,4,5,6,7,8", NULL },
                /* refused */
                { "1,2,3,4,5,6,7,8,9", "error: more than 8 values", NULL },
                { "0", "error: 0 is out of range 1..64", "error: 0 is out of range 1..64" },
                { "65", NULL, "error: 65 is out of range 1..64" },
                { "1,65", "error: 65 is out of range 1..64", NULL },
                { "99999999999999999999999", "error: 99999999999999999999999 is out of range 1..64",
                  "error: 99999999999999999999999 is out of range 1..64" },
                { "x", "error: 'x' is not a number", NULL },
                { "abc", NULL, "error: 'abc' is not a number" },
                { "1,5abc", "error: '5abc' is not a number", NULL },
                { "5abc", NULL, "error: '5abc' is not a number" },
                { "-1", "error: '-1' is not a number", "error: '-1' is not a number" },
                { "+5", "error: '+5' is not a number", "error: '+5' is not a number" },
                { " 5", "error: ' 5' is not a number", "error: ' 5' is not a number" },
                { "5 ", NULL, "error: '5 ' is not a number" },
                { "0x10", "error: '0x10' is not a number", "error: '0x10' is not a number" },
                { "1,2", NULL, "error: '1,2' is not a number" },
                { "", "error: an empty list", "error: an empty value" },
                { ",", "error: an empty value in ','", "error: ',' is not a number" },
                { "1,,2", "error: an empty value in '1,,2'", NULL },
                { "1,", "error: an empty value in '1,'", NULL },
                { ",1", "error: an empty value in ',1'", NULL },
        };
        unsigned v[3], u;
        char err[160];
        int status;
        char buf[256] = "";

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                if (cases[i].list)
                        is_str(parse(cases[i].in), cases[i].list, "'%s'", cases[i].in);
                if (cases[i].one)
                        is_str(parse_uint(cases[i].in), cases[i].one, "one number: '%s'",
                               cases[i].in);
        }

        /* the whole range of unsigned, and a range of one */
        is_int(list_parse("4294967295", 0, 4294967295u, v, 3, err, sizeof(err)), 1,
               "0..UINT_MAX takes UINT_MAX");
        is_int(v[0], 4294967295u, "as UINT_MAX");
        is_int(list_parse("4294967296", 0, 4294967295u, v, 3, err, sizeof(err)), -1,
               "0..UINT_MAX refuses UINT_MAX + 1");
        is_int(list_parse("0,0", 0, 0, v, 3, err, sizeof(err)), 2, "0..0 takes 0,0");
        is_int(list_parse_uint("4294967295", 0, 4294967295u, &u, err, sizeof(err)), 0,
               "one number: 0..UINT_MAX takes UINT_MAX");
        is_int(u, 4294967295u, "as UINT_MAX");
        is_int(list_parse_uint("4294967296", 0, 4294967295u, &u, err, sizeof(err)), -1,
               "one number: 0..UINT_MAX refuses UINT_MAX + 1");
        is_str(err, "4294967296 is out of range 0..4294967295", "saying so");
        is_int(list_parse_uint("0", 0, 0, &u, err, sizeof(err)), 0, "one number: 0..0 takes 0");
        is_int(u, 0, "as 0");

        /* list_option(): the option's name in the message, exit status 2 */
        status = in_child(bad_list, buf, sizeof(buf));
        ok(WIFEXITED(status) && WEXITSTATUS(status) == 2, "list_option() exits 2 on a bad list");
        is_str(buf, "test-bench-list: --clients: 70000 is out of range 1..65536\n",
               "list_option() says which option and what is wrong");
        is_int(list_option("--clients", "3,2,1", 1, 65536, v, 3), 3,
               "list_option() returns how many");
        ok(v[0] == 3 && v[1] == 2 && v[2] == 1, "in their order");

        /* list_uint(): the same message and exit status */
        status = in_child(bad_uint, buf, sizeof(buf));
        ok(WIFEXITED(status) && WEXITSTATUS(status) == 2, "list_uint() exits 2 on a bad number");
        is_str(buf, "test-bench-list: --reps: '5abc' is not a number\n",
               "list_uint() says which option and what is wrong");
        status = in_child(bad_uint_range, buf, sizeof(buf));
        ok(WIFEXITED(status) && WEXITSTATUS(status) == 2, "list_uint() exits 2 out of range");
        is_str(buf, "test-bench-list: --reps: 0 is out of range 1..101\n", "with the range");
        is_int(list_uint("--reps", "101", 1, 101), 101, "list_uint() returns the number");
        return tap_done();
}
