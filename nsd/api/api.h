/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * api.h: what the handlers (handlers.h) and the access checks (access.h) work with: the rooms
 * below them and the manager's facts STATUS reports. server.c fills it and keeps the facts up
 * to date (a reload, mode private on or off); it is the handlers' userdata (Request.userdata),
 * so the api knows no Server.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include "base/nsd-forward.h"
#include "transport/request.h"

struct Api {
        const Config *config;
        Users *users;
        Policy *policy;
        Children *children;
        ConnManager *conns; /* STATUS's connection counts */
        PinStore *pins;     /* NULL: no pin store (LIST's pin names) */
        FdStore *fdstore;   /* METRICS' fd-store entries */
        /* the manager's facts */
        uint64_t started_usec;
        uint32_t kernel_features;    /* NSD_FEATURE_* the kernel probe found */
        PrivateWatch *private_watch; /* mode private on; NULL: off */
        bool private_unavailable;    /* [Private] Enable=yes, refused */
        /* the api's own */
        size_t stream_bytes;            /* SHOW text held by replies being sent */
        GHashTable *credential_waiters; /* uid -> GPtrArray of Request*: TAKEs that wait for
                                         * a login password (handlers.c); NULL: none yet */
        GHashTable *autostarts;         /* uids whose Start=login volumes are being started at their
                                 * first session (handlers.c); NULL: none yet */
        bool stopping;                  /* api_done() ran: nsd stops */
};

static inline Api *api_of(const Request *r) {
        return r->userdata;
}
