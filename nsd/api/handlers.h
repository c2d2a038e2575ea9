/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * handlers.h: what nsd answers. One handler per request type of the protocol, in a table that
 * server.c gives the transport (transport/request.h: RequestHandlers, as libfuse's lowlevel
 * ops); the wire side (sizes, flags, checks, replies) is the transport's.
 *
 * Rules that hold in every handler:
 *  - The caller's identity is SO_PEERCRED (uid, pid) taken at accept(); a uid in a request only
 *    names the namespace asked for. Root may name any uid; anyone else only their own.
 *  - Who gets what beyond that (nsd-protocol.h, "Who gets what"): descriptors of a namespace
 *    only to root or to a process inside it; SHOW, HIDE and RELEASE only to root, a process
 *    inside, or one in the initial namespace, never to a sandboxed process. Checked where the
 *    answer is made, after any wait.
 *  - Log lines a user's requests cause are rate limited per uid (log_event_by()).
 *  - A request that is well-formed but refused (permission, policy, limit) gets an
 *    NSD_REP_ERROR and the connection stays open.
 *  - A handler that continues later checks everything again when it does: the world may have
 *    changed while it waited.
 */
#pragma once

#include "api/api.h"
#include "nsd-protocol.h"
#include "transport/request.h"

/* Every request type's handler; their userdata (Request.userdata) is an Api (api.h). */
extern const RequestHandler api_handlers[_NSD_REQ_MAX];
/* What the api holds of its own (requests that wait): let go, before the connections go. */
void api_done(Api *a);
/* RequestHandlers.refused: a JOIN or JOIN_SESSION refused is a login refused, logged as the
 * event join-refused with its reason (NSD_REASON=; rate limited per caller) and counted for
 * METRICS by the class of its error (base/metrics.h). */
void api_refused(Request *r, int error);
