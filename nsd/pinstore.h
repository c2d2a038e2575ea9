/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pinstore.h: nsd's pin store. The pins that keep user namespaces alive across nsd restarts,
 * and their re-adoption at start.
 *
 * Layout (DESIGN.md "Lifetime and restarts"):
 *   <run_dir>            e.g. /run/nsd, made a private bind mount of itself in the host
 *   <run_dir>/pins       a file; nsfs bind mount of the PIN NAMESPACE (the one host mount)
 *   inside the pin namespace, a private tmpfs on <run_dir> holds one file per user:
 *       <uid>            nsfs bind mount of that user's namespace
 *       <uid>.info       small text: created_usec=..., for re-adoption
 * The pin namespace is created before any user namespace, so it is older than all of them
 * (the kernel's mnt_ns_loop check requires that).
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

typedef struct PinStore PinStore;
typedef struct UserNs UserNs;

/* Open the pin store under run_dir: adopt the existing pin namespace if run_dir/pins is one,
 * else create it (and make run_dir a private mount if it is not already one). When the pin
 * namespace cannot be had at all, returns an error; the caller may then run without pins. */
int pinstore_open(const char *run_dir, PinStore **ret);
void pinstore_free(PinStore *ps);
/* "/run/nsd/pins:1000"-style text naming where a uid's pin lives, for nsctl list. */
void pinstore_pin_name(const PinStore *ps, uid_t uid, char *buf, size_t size);

/* Call cb once per pinned user namespace found in the store (at start, after a restart or a
 * crash). The callback takes ownership of the UserNs (userns_free). Broken pins are logged
 * and skipped. Returns the number adopted or -errno. */
int pinstore_adopt_all(PinStore *ps, void (*cb)(UserNs *ns, void *userdata), void *userdata);
