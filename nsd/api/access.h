/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * access.h: who may ask for what (nsd-protocol.h "Who gets what"; SECURITY.md). The caller's
 * identity is SO_PEERCRED (uid, pid) taken at accept(); a uid in a request only names the
 * namespace asked for. Root may name any uid, anyone else only their own. Beyond that,
 * descriptors of a namespace go only to root or to a process inside it; SHOW, HIDE and
 * RELEASE answer only root, a process inside, or one in the initial namespace, never a
 * sandboxed process (peer.h says where a process stands). Each check refuses through
 * request_refuse() and returns its -errno, or 0.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "api/api.h"

#define ACCESS_WHY_DESCRIPTORS                                                \
        "descriptors of a namespace go only to root or to a process already " \
        "inside it; see nsctl show"

/* May the caller name uid (root, or uid itself)? */
bool access_may_ask_for(const Request *r, uid_t uid);
/* JOIN, JOIN_SESSION: descriptors of uid's namespace go only where they give nothing new. */
int access_check_descriptors(Request *r, uid_t uid);
/* SHOW, HIDE, RELEASE: a path walk, a mount table or the end of a namespace answer only a
 * full view of the user's, never a sandbox: the namespace itself or the initial one. u may
 * be NULL (no namespace yet: only the initial view counts). */
int access_check_full_view(Request *r, const User *u);
/* SHARES: may the caller see the share name, and every member of it? Root sees every share
 * and member; anyone else the shares its own namespace (own: the caller's User, or NULL) was
 * given, and of their members its own uid only. */
bool access_may_see_share(const Request *r, const User *own, const char *share);
bool access_sees_all_members(const Request *r);
/* SESSION_OPEN, JOIN_SESSION: only root names a session leader other than itself. */
int access_check_leader(Request *r, uint32_t pid);
