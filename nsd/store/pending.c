/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pending.c: kept namespaces not adopted yet, from pins and from the fd store, adopted by one
 * path under one backoff. See pending.h.
 *
 * The pin store knows which pins nsd does not hold (it finds them: listing, a create or a
 * release that meets a pin) and tells this room when one appears; this room holds the
 * descriptors the fd store passed back. Each attempt takes what is there of both and enters
 * it with one helper child.
 */
#include "store/pending.h"

#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errno-util.h"
#include "base/log.h"
#include "store/fdstore.h"
#include "store/pinstore.h"
#include "store/userns.h"

/* At start: attempts at once for pins that may pass, before leaving them to the retries. */
#define START_ATTEMPTS 3

struct Pending {
        PinStore *ps;
        FdStore *fdstore;
        GHashTable *stored; /* uid -> nsfs descriptor + 1, from the fd store */
        PendingAdoptFn cb;
        void *userdata;
        unsigned retries;         /* failed attempts since the last progress */
        uint64_t next_retry_usec; /* CLOCK_MONOTONIC; 0: due now */
        guint retry_source;
};

static void stored_close(gpointer v) {
        close(GPOINTER_TO_INT(v) - 1);
}

Pending *pending_new(PinStore *ps, FdStore *fdstore) {
        Pending *p = g_new0(Pending, 1);

        p->ps = ps;
        p->fdstore = fdstore;
        p->stored = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, stored_close);
        return p;
}

void pending_free(Pending *p) {
        if (!p)
                return;
        g_clear_handle_id(&p->retry_source, g_source_remove);
        if (p->ps)
                pinstore_set_pending_cb(p->ps, NULL, NULL);
        g_hash_table_destroy(p->stored);
        g_free(p);
}

bool pending_store_ready(const Pending *p) {
        return !p->ps || pinstore_is_ready(p->ps);
}

bool pending_contains(const Pending *p, uid_t uid) {
        return (p->ps && pinstore_is_pending(p->ps, uid)) ||
               g_hash_table_contains(p->stored, GUINT_TO_POINTER(uid));
}

size_t pending_count(const Pending *p) {
        return (p->ps ? pinstore_n_pending(p->ps) : 0) + g_hash_table_size(p->stored);
}

static bool pending_needs_retry(const Pending *p) {
        return !pending_store_ready(p) || pending_count(p) > 0;
}

/* ---- one attempt ------------------------------------------------------------------------- */

/* The level of a "not yet, retrying" line: warning the first time, debug while it lasts. */
static int retry_level(const Pending *p) {
        return p->retries == 0 ? LOG_WARNING : LOG_DEBUG;
}

/* Enter what is pending now, from both sources, with one helper child. Returns the number
 * adopted; *ret_changed tells whether anything left the pending set. */
static unsigned pending_adopt(Pending *p, bool *ret_changed) {
        g_autoptr(GArray) uids = g_array_new(FALSE, FALSE, sizeof(uid_t));
        g_autoptr(GArray) fds = g_array_new(FALSE, FALSE, sizeof(int));
        g_autoptr(GArray) created = g_array_new(FALSE, FALSE, sizeof(uint64_t));
        g_autofree uid_t *pin_uids = NULL;
        g_autofree UserNs **nss = NULL;
        g_autofree int *errs = NULL;
        size_t n_pins = 0, n_pin_uids = 0;
        unsigned adopted = 0;
        GHashTableIter it;
        gpointer k, v;
        int r;

        /* the pins first, their descriptors ours; then the fd store's, still the table's */
        if (p->ps && pinstore_is_ready(p->ps))
                pin_uids = pinstore_pending_uids(p->ps, &n_pin_uids);
        for (size_t i = 0; i < n_pin_uids; i++) {
                uint64_t c = 0;
                int fd = -1;

                r = pinstore_take_pin(p->ps, pin_uids[i], &fd, &c);
                if (r == 0)
                        *ret_changed = true; /* gone, or provably dead: nothing to adopt */
                if (r <= 0)
                        continue;
                g_array_append_val(uids, pin_uids[i]);
                g_array_append_val(fds, fd);
                g_array_append_val(created, c);
        }
        n_pins = uids->len;
        g_hash_table_iter_init(&it, p->stored);
        while (g_hash_table_iter_next(&it, &k, &v)) {
                uid_t uid = GPOINTER_TO_UINT(k);
                int fd = GPOINTER_TO_INT(v) - 1;
                uint64_t c = 0;

                g_array_append_val(uids, uid);
                g_array_append_val(fds, fd);
                g_array_append_val(created, c);
        }
        if (uids->len == 0)
                return 0;

        nss = g_new0(UserNs *, uids->len);
        errs = g_new0(int, uids->len);
        r = userns_adopt_fds((const uid_t *) uids->data, (int *) fds->data, uids->len, nss, errs);
        if (r < 0) {
                log_full_errno(retry_level(p), r,
                               "Failed to enter %u kept namespaces (%zu pinned, %u from the fd "
                               "store), retrying: %m",
                               uids->len, n_pins, uids->len - (unsigned) n_pins);
                for (size_t i = 0; i < n_pins; i++)
                        close(g_array_index(fds, int, i));
                return 0;
        }

        for (size_t i = 0; i < uids->len; i++) {
                uid_t uid = g_array_index(uids, uid_t, i);
                int fd = g_array_index(fds, int, i); /* -1 once the namespace took it */
                UserNs *ns = nss[i];
                char name[FDSTORE_NAME_MAX];

                if (i < n_pins) {
                        if (!ns) {
                                log_full_errno(retry_level(p), errs[i] ? errs[i] : EIO,
                                               "Failed to enter the pinned namespace of uid %u, "
                                               "retrying: %m",
                                               (unsigned) uid);
                                close(fd);
                                continue;
                        }
                        ns->pinned = true;
                        ns->created_usec = g_array_index(created, uint64_t, i);
                        pinstore_adopted(p->ps, uid);
                        if (p->retries > 0)
                                log_event(LOG_NOTICE, 0, uid, "adopt-retried",
                                          "Adopted the pinned namespace %" PRIu64 " of uid %u "
                                          "after %u retries",
                                          ns->ns_inode, (unsigned) uid, p->retries);
                        else
                                log_debug("Adopted mount namespace %" PRIu64 " of uid %u",
                                          ns->ns_inode, (unsigned) uid);
                        adopted++;
                        *ret_changed = true;
                        p->cb(ns, PENDING_FROM_PIN, p->userdata);
                        continue;
                }
                fdstore_ns_name(name, uid);
                if (ns) {
                        /* its descriptor is the namespace's now: out of the table unclosed */
                        g_hash_table_steal(p->stored, GUINT_TO_POINTER(uid));
                        adopted++;
                        *ret_changed = true;
                        p->cb(ns, PENDING_FROM_FDSTORE, p->userdata);
                } else if (errno_may_pass(errs[i])) {
                        log_full_errno(retry_level(p), errs[i],
                                       "Cannot enter the namespace of uid %u from the fd store "
                                       "now, retrying: %m",
                                       (unsigned) uid);
                } else {
                        log_event(LOG_WARNING, errs[i], uid, "fdstore-dropped",
                                  "Dropping '%s' from the service manager's fd store: it cannot "
                                  "be entered (%m), so it is no usable mount namespace",
                                  name);
                        g_hash_table_remove(p->stored, GUINT_TO_POINTER(uid));
                        (void) fdstore_remove(p->fdstore, name);
                        *ret_changed = true;
                }
        }
        return adopted;
}

/* ---- retries ----------------------------------------------------------------------------- */

static gboolean on_retry(gpointer userdata);

/* After an attempt: when is the next one due (backoff, reset by progress)? */
static void pending_schedule(Pending *p, bool progress) {
        uint64_t delay;

        g_clear_handle_id(&p->retry_source, g_source_remove);
        if (!pending_needs_retry(p)) {
                p->retries = 0;
                p->next_retry_usec = 0;
                return;
        }
        if (progress)
                p->retries = 0;
        delay = PENDING_RETRY_FIRST_USEC << (p->retries < 8 ? p->retries : 8);
        if (delay > PENDING_RETRY_MAX_USEC)
                delay = PENDING_RETRY_MAX_USEC;
        p->retries++;
        p->next_retry_usec = (uint64_t) g_get_monotonic_time() + delay;
        if (p->cb)
                p->retry_source = g_timeout_add((guint) ((delay + 999) / 1000), on_retry, p);
}

/* The pin store found a pin nsd does not hold: an attempt at once (on the next turn of the
 * loop). */
static void on_pin_pending(void *userdata) {
        Pending *p = userdata;

        p->next_retry_usec = 0;
        g_clear_handle_id(&p->retry_source, g_source_remove);
        if (p->cb)
                p->retry_source = g_idle_add(on_retry, p);
}

static unsigned pending_retry(Pending *p) {
        bool progress = false;
        unsigned adopted;

        if (!pending_store_ready(p)) {
                int r = pinstore_retry_ready(p->ps, p->retries);
                if (r < 0) {
                        pending_schedule(p, false);
                        return 0;
                }
                progress = true;
        }
        adopted = pending_adopt(p, &progress);
        pending_schedule(p, progress);
        return adopted;
}

static gboolean on_retry(gpointer userdata) {
        Pending *p = userdata;

        p->retry_source = 0;
        (void) pending_retry(p);
        return G_SOURCE_REMOVE;
}

unsigned pending_retry_due(Pending *p, uint64_t *ret_delay_usec) {
        uint64_t now = (uint64_t) g_get_monotonic_time();
        unsigned adopted = 0;

        if (p->cb && pending_needs_retry(p) && now >= p->next_retry_usec) {
                adopted = pending_retry(p);
                now = (uint64_t) g_get_monotonic_time();
        }
        if (ret_delay_usec)
                *ret_delay_usec = !pending_needs_retry(p)    ? 0
                                  : p->next_retry_usec > now ? p->next_retry_usec - now
                                                             : 1;
        return adopted;
}

/* ---- start ------------------------------------------------------------------------------- */

/* The fd store's "ns-<uid>" not taken yet: pending. */
static void pending_take_stored(Pending *p) {
        g_auto(GStrv) names = fdstore_passed_names(p->fdstore, FDSTORE_NS_PREFIX);

        for (char **n = names; *n; n++) {
                const char *s = *n + strlen(FDSTORE_NS_PREFIX);
                char *end = NULL;
                unsigned long long uid = g_ascii_strtoull(s, &end, 10);
                int fd;

                if (!*s || *end || uid >= UINT32_MAX)
                        continue; /* dropped by fdstore_drop_unclaimed() */
                fd = fdstore_take(p->fdstore, *n);
                if (fd < 0)
                        continue;
                if (g_hash_table_contains(p->stored, GUINT_TO_POINTER((guint) uid))) {
                        close(fd); /* a duplicate */
                        continue;
                }
                g_hash_table_insert(p->stored, GUINT_TO_POINTER((guint) uid),
                                    GINT_TO_POINTER(fd + 1));
        }
}

unsigned pending_start(Pending *p, PendingAdoptFn cb, void *userdata) {
        unsigned adopted = 0;
        bool progress = false;

        p->cb = cb;
        p->userdata = userdata;
        if (p->ps)
                pinstore_set_pending_cb(p->ps, on_pin_pending, p);
        /* the pins: at start a few attempts at once are cheap, and spare logins a wait */
        if (pending_store_ready(p))
                for (int attempt = 0; attempt < START_ATTEMPTS; attempt++) {
                        if (attempt > 0) {
                                if (pending_count(p) == 0)
                                        break;
                                g_usleep(10000 << (2 * attempt)); /* 40 ms, 160 ms */
                        }
                        adopted += pending_adopt(p, &progress);
                }
        /* then what the fd store holds beside: the adoption of a pin takes its copy */
        pending_take_stored(p);
        adopted += pending_adopt(p, &progress);
        pending_schedule(p, true);
        return adopted;
}
