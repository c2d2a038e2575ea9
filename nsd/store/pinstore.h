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
 *
 * Durability (DESIGN.md "Never lose", issue 9). A pin is committed data:
 *   - No error removes or replaces anything. A pin is removed only by a release
 *     (userns_unpin(), userns_release()) or when it is provably dead: not a regular file, a
 *     mount of something that is not a namespace, a namespace of another type, or an empty
 *     file that pins nothing. Each removal is logged with its reason. The host pin of the pin
 *     namespace is never replaced while it is a mount namespace.
 *   - What cannot be done now is PENDING and retried with backoff: a pin whose namespace
 *     could not be adopted yet (a failing clone(), setns(), open(): EAGAIN, ENOMEM, EMFILE,
 *     ...), and the store itself when the pin namespace could not be opened or the pins not
 *     listed yet ("not ready"). While the store is not ready every uid counts as pending:
 *     nsd cannot know whose pins exist, and a namespace created now could never be pinned
 *     (it would be older than a pin namespace made later).
 *   - A pending uid never gets a fresh namespace: userns_create() answers -EAGAIN for it, and
 *     the server answers JOIN with -NSD_ERRNO_NOT_YET ("not yet available"), which
 *     pam_nsjoin retries within its timeout.
 *
 * Retries. Once pinstore_adopt_all() has been given a callback, the store retries what is
 * pending by itself, on a GLib timeout on the thread-default main context (first after
 * PINSTORE_RETRY_FIRST_USEC, doubling up to PINSTORE_RETRY_MAX_USEC, back to the first after
 * progress), and hands each namespace it adopts to that callback. pinstore_retry_pending()
 * makes an attempt at once for a caller that wants one (a JOIN for a pending uid, a test
 * without a main loop); before the next retry is due it does nothing, so calling it on every
 * request costs nothing.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/errno-util.h" /* errno_may_pass() */
#include "base/nsd-forward.h"

#define PINSTORE_RETRY_FIRST_USEC (50 * 1000ULL)
#define PINSTORE_RETRY_MAX_USEC (1000 * 1000ULL)

/* Called once per adopted namespace; takes ownership of ns (userns_free()). */
typedef void (*pinstore_adopt_cb)(UserNs *ns, void *userdata);

/* Open the pin store under run_dir: adopt the existing pin namespace if run_dir/pins is one,
 * else create it (and make run_dir a private mount if it is not already one), then list the
 * pins in it (each becomes pending until pinstore_adopt_all() adopts it). Transient failures
 * are retried a few times at once.
 *   0        *ret is the store. It may be not ready yet (pinstore_is_ready() false: the pin
 *            namespace exists but could not be entered or listed, or could not be created for
 *            a reason that may pass); it becomes ready by the retries described above. Until
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
/* Close the store's descriptors and stop its retries; the pins stay (they are what survives
 * a restart). NULL is fine. */
void pinstore_free(PinStore *ps);
static inline void pinstore_freep(PinStore **ps) {
        pinstore_free(*ps);
}
/* "/run/nsd/pins:1000"-style text naming where a uid's pin lives, for nsctl list. */
void pinstore_pin_name(const PinStore *ps, uid_t uid, char *buf, size_t size);

/* Adopt every pending pin (at start, after a restart or a crash): cb gets each namespace
 * whose pin could be entered, pinned=true, adopted=true. The store keeps cb and userdata
 * (until pinstore_free()) for the namespaces its own retries adopt later: cb may be called
 * again from the main loop, once per namespace. Pins that cannot be adopted now stay pending
 * (logged); provably dead ones are removed (logged). Returns the number adopted now (>= 0),
 * or -EINVAL. */
int pinstore_adopt_all(PinStore *ps, pinstore_adopt_cb cb, void *userdata);

/* True when the pin namespace is open and its pins are listed: only then can namespaces be
 * created (userns_create() answers -EAGAIN before). */
bool pinstore_is_ready(const PinStore *ps);
/* True when a JOIN for uid must wait ("not yet available", -NSD_ERRNO_NOT_YET) rather than
 * get a new namespace: the store is not ready, or uid has a pin whose namespace nsd does not
 * hold (adoption failed, a release failed to unpin, ...). False for ps NULL. */
bool pinstore_is_pending(const PinStore *ps, uid_t uid);
/* The number of uids known to be pending (0 when there are none or the store is not ready:
 * then pinstore_is_ready() tells). For status. */
size_t pinstore_n_pending(const PinStore *ps);

/* Retry now what is pending, if a retry is due: open or list the store if it is not ready,
 * then adopt pending pins, handing each adopted namespace to cb (NULL: the callback given to
 * pinstore_adopt_all()). *ret_delay_usec (if not NULL) is when the next retry is due, from
 * now; 0 when nothing is pending any more. Returns the number adopted by this call (>= 0), or
 * -EINVAL. */
int pinstore_retry_pending(PinStore *ps, pinstore_adopt_cb cb, void *userdata,
                           uint64_t *ret_delay_usec);
