/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pending.h: the one way a kept namespace comes back. A namespace nsd does not hold yet is
 * kept by its pin (pinstore.h: a pin nsd did not adopt yet, or the pin store is not ready)
 * or by the service manager's fd store (fdstore.h: "ns-<uid>", whose pin is gone or was
 * refused). Until it is adopted its uid is PENDING: a JOIN for it answers "not yet
 * available" (-NSD_ERRNO_NOT_YET), never a fresh namespace in place of a kept one
 * (DESIGN.md "Never lose").
 *
 * Both kinds are adopted the same way, in one retry with one backoff (first after
 * PENDING_RETRY_FIRST_USEC, doubling up to PENDING_RETRY_MAX_USEC, back to the first after
 * progress): the pin store is made ready if it is not, then one helper child enters every
 * pending namespace (userns_adopt_fds()); each one entered goes to the adopt callback, the
 * others stay pending (an error that may pass) or, for a descriptor of the fd store that is
 * provably no mount namespace, are dropped from the store (logged). A pin is dropped only by
 * the pin store, when it is provably dead.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/nsd-forward.h"

#define PENDING_RETRY_FIRST_USEC (50 * 1000ULL)
#define PENDING_RETRY_MAX_USEC (1000 * 1000ULL)

/* Where an adopted namespace was kept. */
typedef enum PendingSource {
        PENDING_FROM_PIN,     /* ns->pinned and ns->adopted are set */
        PENDING_FROM_FDSTORE, /* ns->adopted is set; its pin is gone (or was refused) */
} PendingSource;

/* Called once per adopted namespace; takes ns (userns_free()). */
typedef void (*PendingAdoptFn)(UserNs *ns, PendingSource from, void *userdata);

/* ps: the pin store (NULL: none), fdstore: the service manager's (never NULL). Both stay
 * the caller's. */
Pending *pending_new(PinStore *ps, FdStore *fdstore);
/* Stop the retries and close the descriptors not adopted (they stay in the fd store). */
void pending_free(Pending *p);

/* At start: adopt every pinned namespace (a few attempts at once), then every "ns-<uid>" the
 * fd store passed back that is not taken yet (pinned ones are taken by whoever adopts their
 * pin), handing each to cb; from then on the retries hand what they adopt to cb, on the main
 * loop. Returns the number adopted now. */
unsigned pending_start(Pending *p, PendingAdoptFn cb, void *userdata);

/* Is uid pending: kept, and not adopted yet (or the pin store is not ready: then every uid
 * is)? */
bool pending_contains(const Pending *p, uid_t uid);
/* Is the pin store ready (or is there none)? Until it is, every uid is pending. */
bool pending_store_ready(const Pending *p);
/* The uids known to be pending, for status (0 while the pin store is not ready). */
size_t pending_count(const Pending *p);

/* One more attempt now, if one is due (a JOIN for a pending uid; a test without a main
 * loop); before the next retry is due it does nothing, so calling it on every request costs
 * nothing. *ret_delay_usec (may be NULL): when the next one is due, from now; 0 when nothing
 * is pending any more. Returns the number adopted by this call. */
unsigned pending_retry_due(Pending *p, uint64_t *ret_delay_usec);
