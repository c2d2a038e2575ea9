/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * volumes.h: what nsctl does with a user's FUSE volumes ([Volume NAME] of nsd.conf(5) with a
 * FUSE Type=, state NSC_VOLUME_USER): nsd mounts nothing of them; the user's own service
 * manager, which runs inside the user's namespace, starts one nsd-volume@NAME.service per
 * volume at login (nsd-volumes.service runs `nsctl start-volumes`), and each runs `nsctl
 * run-volume NAME`, which becomes the volume's FUSE program in the foreground, as the user.
 * nsd gives the program's arguments (its Source=, Where= and checked Options=); nothing here
 * takes one from anywhere else.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "nsclient.h"

/* The most arguments volume_argv() makes, with the NULL. */
#define VOLUME_ARGV_MAX 12

/* The argv of v's FUSE program (its type's program of common/volume-options.c) in the
 * foreground: program -f -o OPTIONS -- SOURCE WHERE (sshfs), program -fg -ko OPTIONS
 * -passfile /dev/stdin -- SOURCE WHERE (gocryptfs: the password on stdin). 0, or -EINVAL with *ret_why naming what
 * is wrong (not a FUSE volume, a type this nsctl does not know, an empty or '-'-led Source=, a
 * Where= that is not absolute). The strings are v's and static ones. */
int volume_argv(const struct nsc_volume_info *v, const char *argv[VOLUME_ARGV_MAX],
                const char **ret_why);

/* The unit of the user's service manager that runs volume name: "nsd-volume@" + name escaped
 * as systemd-escape(1) does (its %I gives name back) + ".service". -ENAMETOOLONG when it does
 * not fit into size. */
int volume_unit_name(const char *name, char *buf, size_t size);

/* nsctl unlock: the user's password for a volume, read from the terminal with echo off (the
 * prompt on stderr) when fd is one, else the first line fd gives (a script: `printf ... |`);
 * without its line end. Put into a sealed memfd (nsc_credential_memfd()), the copy read
 * wiped: the memfd, or -errno with *ret_why (-ENODATA: nothing was typed; -EMSGSIZE: longer
 * than NSC_CREDENTIAL_MAX bytes). */
int volume_read_password(int fd, const char *prompt, const char **ret_why);

/* run-volume: what to say when nsd did not hand a volume's password over at once (r, from
 * nsc_credential_take() without waiting: -EAGAIN nothing held, -EALREADY only a login password
 * that was handed on already; said, nsd's message or NULL; ask, Key=ask). NULL when r is no
 * reason to wait. An -EAGAIN whose message says "nsd could not" is nsd short of resources for
 * the moment, not a locked volume: the line says that, and the wait that follows serves as
 * the retry. Into buf. */
const char *volume_wait_why(int r, const char *said, bool ask, const char *name, char *buf,
                            size_t size);
