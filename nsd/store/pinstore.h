/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pinstore.h: nsd's pin store. The pins that keep user namespaces alive across nsd restarts,
 * and which of them nsd does not hold (their adoption is store/pending.h's).
 *
 * Layout (DESIGN.md "Lifetime and restarts"):
 *   <run_dir>            e.g. /run/nsd, made a private bind mount of itself in the host
 *   <run_dir>/pins       a file; nsfs bind mount of the PIN NAMESPACE (the one host mount)
 *   inside the pin namespace, a private tmpfs on <run_dir> holds one file per user:
 *       <uid>            nsfs bind mount of that user's namespace
 *       <uid>.info       small text: created_usec=..., for re-adoption
 * The pin namespace is created before any user namespace, so it is older than all of them
 * (the kernel's mnt_ns_loop check requires that).
 *
 * Durability (DESIGN.md "Never lose", issue 9). A pin is committed data:
 *   - No error removes or replaces anything. A pin is removed only by a release
 *     (userns_unpin(), userns_release()) or when it is provably dead: not a regular file, a
 *     mount of something that is not a namespace, a namespace of another type, or an empty
 *     file that pins nothing. Each removal is logged with its reason. The host pin of the pin
 *     namespace is never replaced while it is a mount namespace.
 *   - What cannot be done now is PENDING and retried with backoff (pending.h): a pin whose namespace
 *     could not be adopted yet (a failing clone(), setns(), open(): EAGAIN, ENOMEM, EMFILE,
 *     ...), and the store itself when the pin namespace could not be opened or the pins not
 *     listed yet ("not ready"). While the store is not ready every uid counts as pending:
 *     nsd cannot know whose pins exist, and a namespace created now could never be pinned
 *     (it would be older than a pin namespace made later).
 *   - A pending uid never gets a fresh namespace: userns_create() answers -EAGAIN for it, and
 *     the server answers JOIN with -NSD_ERRNO_NOT_YET ("not yet available"), which
 *     pam_nsjoin retries within its timeout.
 *
 * The store takes no decision on time: it says what it finds (pinstore_set_pending_cb(): a pin
 * nsd does not hold was found) and does what it is asked; pending.c retries, with backoff,
 * what is pending and what is not ready.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/errno-util.h" /* errno_may_pass() */
#include "base/nsd-forward.h"

/* Open the pin store under run_dir: adopt the existing pin namespace if run_dir/pins is one,
 * else create it (and make run_dir a private mount if it is not already one), then list the
 * pins in it (each becomes pending until it is adopted: pending.h). Transient failures
 * are retried a few times at once.
 *   0        *ret is the store. It may be not ready yet (pinstore_is_ready() false: the pin
 *            namespace exists but could not be entered or listed, or could not be created for
 *            a reason that may pass); it becomes ready by pinstore_retry_ready(). Until
 *            then every uid is pending. The server must NOT run without pins then.
 *   -EINVAL  bad arguments.
 *   other    no pin namespace exists (so nothing is pinned) and none can be made, for a
 *            reason that will not pass (EPERM, EROFS, a directory at run_dir/pins, ...): the
 *            caller may run without a pin store (ps NULL everywhere), namespaces then live by
 *            descriptor only. Logged. */
int pinstore_open(const char *run_dir, PinStore **ret);
/* pinstore_open() with the pin namespace's nsfs descriptor that the service manager's fd
 * store kept (pinns_fd, taken; -1: none), the second line behind the host pin: when
 * run_dir/pins pins nothing any more (removed by hand) it is pinned there again and used;
 * when run_dir/pins cannot be looked at now it is used as it is; when run_dir/pins pins
 * another pin namespace, the pinned one wins (logged at error: the other one is left alone,
 * with its pins). */
int pinstore_open_full(const char *run_dir, int pinns_fd, PinStore **ret);
/* The pin namespace's nsfs descriptor (the store's own; -1 until found), and whether it is
 * the one given to pinstore_open_full() (then the fd store holds it already). */
int pinstore_pinns_fd(const PinStore *ps, bool *ret_from_fdstore);
/* cb(userdata) when the store becomes ready by a retry (pinstore_open() left it not ready). */
void pinstore_set_ready_cb(PinStore *ps, void (*cb)(void *userdata), void *userdata);
/* cb(userdata) when a uid becomes pending (a pin nsd does not hold was found after listing:
 * by a create, an abandoned create, an unpin, a release that could not unpin): its owner
 * should try to adopt it soon. NULL: nobody is told. */
void pinstore_set_pending_cb(PinStore *ps, void (*cb)(void *userdata), void *userdata);
/* Close the store's descriptors; the pins stay (they are what survives a restart). NULL is
 * fine. */
void pinstore_free(PinStore *ps);
static inline void pinstore_freep(PinStore **ps) {
        pinstore_free(*ps);
}
/* "/run/nsd/pins:1000"-style text naming where a uid's pin lives, for nsctl list. */
void pinstore_pin_name(const PinStore *ps, uid_t uid, char *buf, size_t size);

/* True when the pin namespace is open and its pins are listed: only then can namespaces be
 * created (userns_create() answers -EAGAIN before). */
bool pinstore_is_ready(const PinStore *ps);
/* The pin tmpfs (run_dir in the pin namespace), an O_PATH descriptor, the store's own; -1
 * until ready. The anchors of shares (setup.h) live beside the pins, in its "shares". */
int pinstore_dir_fd(const PinStore *ps);
/* run_dir, as given to pinstore_open(): the pin tmpfs's path in the pin namespace. */
const char *pinstore_run_dir(const PinStore *ps);
/* True when a JOIN for uid must wait ("not yet available", -NSD_ERRNO_NOT_YET) rather than
 * get a new namespace: the store is not ready, or uid has a pin whose namespace nsd does not
 * hold (adoption failed, a release failed to unpin, ...). False for ps NULL. */
bool pinstore_is_pending(const PinStore *ps, uid_t uid);
/* The number of uids known to be pending (0 when there are none or the store is not ready:
 * then pinstore_is_ready() tells). For status. */
size_t pinstore_n_pending(const PinStore *ps);

/* Not ready: try to open the pin namespace and list the pins now (logged at warning each 12th
 * of retries, at debug otherwise). 1: ready now (the ready callback was called), 0: it was
 * ready, -errno: not yet. */
int pinstore_retry_ready(PinStore *ps, unsigned retries);
/* The uids pending now (g_free()), *ret_n of them. */
uid_t *pinstore_pending_uids(const PinStore *ps, size_t *ret_n);
/* A pending uid's pin, for its adoption: 1 and *ret_ns_fd (the caller's) and its creation
 * time (0: unknown); 0 when there is nothing to adopt (not pending, the pin is gone, or it
 * was provably dead and is removed, logged: no longer pending); -errno when it cannot be
 * looked at now (still pending). */
int pinstore_take_pin(PinStore *ps, uid_t uid, int *ret_ns_fd, uint64_t *ret_created_usec);
/* uid's pin is adopted: no longer pending. */
void pinstore_adopted(PinStore *ps, uid_t uid);
