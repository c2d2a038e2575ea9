/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsd-forward.h: the name of every object of nsd, on the bottom floor, so that a header that
 * only passes an object along includes this and not the room that owns it (systemd's
 * logind-forward.h). Each struct is defined in the header named beside it.
 */
#pragma once

typedef struct Children Children;         /* base/child.h */
typedef struct Config Config;             /* policy/conf.h */
typedef struct Policy Policy;             /* policy/policy.h */
typedef struct PinStore PinStore;         /* store/pinstore.h */
typedef struct UserNs UserNs;             /* store/userns.h */
typedef struct FdStore FdStore;           /* store/fdstore.h */
typedef struct StateDir StateDir;         /* store/state.h */
typedef struct NsProcs NsProcs;           /* store/nsprocs.h */
typedef struct Pending Pending;           /* store/pending.c */
typedef struct ConnManager ConnManager;   /* transport/conn.h */
typedef struct Conn Conn;                 /* transport/conn.h */
typedef struct Request Request;           /* transport/request.h */
typedef struct User User;                 /* domain/user.h */
typedef struct UserVolume UserVolume;     /* domain/user.h */
typedef struct Session Session;           /* domain/session.h */
typedef struct Linger Linger;             /* domain/linger.c */
typedef struct Users Users;               /* domain/users.c */
typedef struct PrivateWatch PrivateWatch; /* domain/private.c */
typedef struct ShareBound ShareBound;     /* domain/share-bound.c */
typedef struct Api Api;                   /* api/api.h */
typedef struct Server Server;             /* server.h */
