/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/lib/list: the one parser of the bench programs' number options: the lists (nsd-bench
 * --procs, nsd-start --counts, mntinfo --mounts, pathwalk --depths), comma separated lists of
 * decimal numbers, each lo..hi, at most max of them; and every option of a single number
 * (--reps, --cpu, --repeat, --pairs, ...: one value of a list, alone). Plain C on libc only, a
 * static library of its own: the programs on libnsclient (through bench-util) and those in the
 * VM (vm-bench) both link it.
 *
 * A number is digits only (no sign, no blank, no other base). Refused: an empty list or an
 * empty value ("1,,2", "1,", ""), anything not a number ("5abc", "+5", " 5"), a number out of
 * lo..hi, more than max values.
 */
#pragma once

#include <stddef.h>

/* The range of an option that names a uid: not root, not (uid_t) -1 (setresuid()'s and
 * setfsuid()'s "unchanged"). */
#define LIST_UID_MIN 1u
#define LIST_UID_MAX 4294967294u

/* The list s into v[0..]: how many (1..max), or -1 with what is wrong in err ("70000 is out of
 * range 1..64", "more than 8 values"). v may be changed even when it fails; s is not. */
int list_parse(const char *s, unsigned lo, unsigned hi, unsigned *v, size_t max, char *err,
               size_t err_size);

/* list_parse() of the argument s of an option (option: its name, "--procs"): how many, or
 * "<program>: <option>: <what is wrong>" on stderr and exit 2. */
size_t list_option(const char *option, const char *s, unsigned lo, unsigned hi, unsigned *v,
                   size_t max);

/* The single number s (a list of one value; "1,2" is not a number) into *v: 0, or -1 with what
 * is wrong in err ("'5abc' is not a number", "0 is out of range 1..101", "an empty value");
 * *v is changed only on success. */
int list_parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *v, char *err,
                    size_t err_size);

/* list_parse_uint() of the argument s of an option (option: its name, "--reps"): the number, or
 * "<program>: <option>: <what is wrong>" on stderr and exit 2. */
unsigned list_uint(const char *option, const char *s, unsigned lo, unsigned hi);
