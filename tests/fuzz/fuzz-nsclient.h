/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/fuzz/fuzz-nsclient.h: the input format of fuzz-nsclient (described at the top of
 * fuzz-nsclient.c), in the one place that the harness and its seed generator
 * (gen-nsclient-corpus.c) both read it from.
 */
#pragma once

/* u8 head */
enum {
        HEAD_CALLS_MASK = 0x03, /* number of calls - 1 */
        HEAD_VIA_ENV = 0x04,    /* nsc_connect(NULL): through $NSD_SOCKET */
        HEAD_CLOSED = 0x08,     /* the fake nsd closes its end after queuing */
        HEAD_SEQ_WRAP = 0x10,   /* sequence numbers start just before they wrap */
        HEAD_CONNECT_TIMEOUT = 0x20,
        HEAD_RAW = 0x80,         /* the rest is one datagram for nsd_msg_check() ... */
        HEAD_RAW_REQUEST = 0x01, /* ... as a request */
};

/* u8 op of a call (bit 7: with bad arguments): OP_<name>, numbered in this order. X(name) is
 * one op, for the enum here and the harness's names of them (op_name[]). */
#define FUZZ_OPS(X)                                                                \
        X(JOIN)                                                                    \
        X(SESSION_OPEN)                                                            \
        X(SESSION_CLOSE)                                                           \
        X(STATUS)                                                                  \
        X(LIST)                                                                    \
        X(SHOW)                                                                    \
        X(RELEASE)                                                                 \
        X(HIDE)                                                                    \
        X(JOIN_SESSION)                                                            \
        /* 1.7; appended, so that the ops above keep the numbers the seeds hold */ \
        X(VOLUMES)                                                                 \
        X(CREDENTIAL_GIVE)                                                         \
        X(CREDENTIAL_TAKE)                                                         \
        X(CREDENTIAL_UNLOCK) /* 1.8 */                                             \
        X(METRICS)           /* 1.4, appended later */                             \
        X(SHARES)            /* 1.5, appended later */                             \
        X(VOLUME_START)      /* 1.11 */                                            \
        X(VOLUME_STOP)
#define FUZZ_OP_ENUM(name) OP_##name,
enum { FUZZ_OPS(FUZZ_OP_ENUM) _OP_MAX };
#define OP_BAD 0x80  /* with bad arguments */
#define OP_MASK 0x7f /* the op (modulo _OP_MAX) */

/* u8 ctl of a datagram: fix-ups */
enum {
        FIX_HDR = 1 << 0,
        FIX_LEN = 1 << 1,
        FIX_SEQ = 1 << 2,
        SEQ_ZERO = 1 << 3,
        FIX_ERR = 1 << 4,
        FIX_BODY = 1 << 5,
        NET_INODE = 1 << 6,
        SET_TYPE = 1 << 7,
};

/* u8 type of a datagram with SET_TYPE: an index into fuzz-nsclient.c's types[] */
enum {
        T_JOIN,
        T_SESSION_OPEN,
        T_SESSION_CLOSE,
        T_STATUS,
        T_LIST_ENTRY,
        T_LIST_END,
        T_SHOW_DATA,
        T_SHOW_END,
        T_RELEASE,
        T_HIDE,
        T_JOIN_SESSION,
        T_ERROR,
        /* not replies */
        T_ZERO,
        T_REQ_JOIN,
        T_REQ_LIST,
        T_REPLY_BIT,
        T_UNKNOWN, /* a reply type the protocol does not have */
        /* 1.7 replies; appended, so that the indexes above keep the meaning the seeds hold */
        T_VOLUMES_ENTRY,
        T_VOLUMES_END,
        T_CREDENTIAL_GIVE,
        T_CREDENTIAL_TAKE,
        T_CREDENTIAL_UNLOCK, /* 1.8 */
        T_METRICS,           /* 1.4, appended later */
        T_SHARES_ENTRY,      /* 1.5, appended later */
        T_SHARES_MEMBERS,
        T_SHARES_END,
        T_VOLUME_START, /* 1.11 */
        T_VOLUME_STOP,
        _T_MAX
};

/* u8 owner of a datagram: bits 0-1 the call; bits 2-7 (owner >> 2) these, or else once */
#define OWNER_SECOND_NSD 0x3d   /* for the second nsd (JOIN_SESSION's fallback) */
#define OWNER_REPEAT_SHORT 0x3e /* queued REPEAT_SHORT times */
#define OWNER_REPEAT_LONG 0x3f  /* queued REPEAT_LONG times */
