/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/lib/options: the bench programs' options as tables: each option is a row naming what it
 * sets (a string, a number in a range through list.h, a flag, a list, a call of its own), and
 * one getopt_long() loop serves every program. Plain C on libc only, in the static library of
 * list.c: the programs on libnsclient (bench-util adds --socket, --nsd-log, --uid-base) and
 * those in the VM (vm-bench adds --reps, --rep-ms, --other-uid, --cpu) both use it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* One option of a table: --name and what it sets. */
struct bench_option {
        const char *name;
        enum {
                BENCH_STRING,   /* const char *: the argument */
                BENCH_UNSIGNED, /* unsigned: a number lo..hi (list_uint(), list.h) */
                BENCH_INT,      /* int: a decimal number, may be negative */
                BENCH_DOUBLE,   /* double */
                BENCH_FLAG,     /* bool: set, no argument */
                BENCH_LIST,     /* unsigned[max]: a list of lo..hi (list.h), its length in *n */
                BENCH_CALL,     /* call(the argument): a value of its own kind */
        } type;
        void *var;
        size_t max, *n;                /* BENCH_LIST */
        unsigned lo, hi;               /* BENCH_UNSIGNED, BENCH_LIST: the range of a value */
        void (*call)(const char *arg); /* BENCH_CALL */
};

/* The options of argv by two tables (a library's options, n_common of them, and the
 * program's, n_own; either may be empty) and -h/--help (help(), exit 0); an unknown option or
 * a bad value exits 2 with a message. With in_order, the options end at the first operand
 * (what follows is a command's). Returns the index of the first operand. */
int options_parse(int argc, char *argv[], const struct bench_option *common, size_t n_common,
                  const struct bench_option *own, size_t n_own, bool in_order, void (*help)(void));
