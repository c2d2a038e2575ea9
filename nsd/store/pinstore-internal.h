/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pinstore-internal.h: what the pin store (pinstore.c) shares with the creation and release of
 * user namespaces (userns.c), which pin and unpin in it. Not for the server: it uses
 * pinstore.h and userns.h.
 */
#pragma once

#include <errno.h>
#include <glib.h>
#include <linux/nsfs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "store/pinstore.h"
#include "store/userns.h"

/* CPUs tried for one create (see PinStore.cpus) */
#define PIN_CPUS_MAX 16

struct PinStore {
        char *run_dir;
        char *pins_path;  /* <run_dir>/pins: the one host mount */
        int pinns_fd;     /* nsfs descriptor of the pin namespace; -1 until opened */
        int dir_fd;       /* O_PATH: the pin tmpfs (run_dir inside the pin namespace); -1 */
        bool created;     /* this process made the pin namespace */
        bool pinns_found; /* a pin namespace exists on pins_path: never make another */
        bool listed;      /* the pins were listed: everything pending is in `pending` */
        /* Linux 6.18 hands out namespace ids from per-CPU batches, so only namespaces made on
         * one CPU are ordered by age, and mnt_ns_loop() refuses a pin whose namespace has a
         * smaller id than the pinning one. We create the pin namespace and every user
         * namespace bound to the same CPU, and on a refusal try the other CPUs in turn. */
        int cpus[PIN_CPUS_MAX];
        size_t n_cpus;
        size_t cpu_idx; /* the CPU that worked last */

        /* uids whose pin exists but whose namespace nsd does not hold (see pinstore.h) */
        GHashTable *pending;
        unsigned retries;         /* failed retries since the last progress */
        uint64_t next_retry_usec; /* CLOCK_MONOTONIC; 0: due now */
        guint retry_source;       /* the store's own retry timer, 0: none */
        pinstore_adopt_cb adopt_cb;
        void *adopt_userdata;
        void (*ready_cb)(void *userdata);
        void *ready_userdata;
        /* the pin namespace the service manager's fd store kept, until used or dropped */
        int hint_fd;
        bool pinns_from_hint; /* pinns_fd is that very descriptor */
};

struct helper_status;
/* One helper child enters each ns_fds[i] in turn and opens its root into root_fds[i] (-1 and
 * errs[i] set on failure). -errno when the child could not run at all (*s says why). */
int userns_open_roots(const int *ns_fds, size_t n, int *root_fds, int *errs,
                      struct helper_status *s);

/* CLONE_NEWNS, another CLONE_NEW* or -errno (-ENOTTY: not an nsfs file). */
static inline int fd_nstype(int fd) {
        int t = ioctl(fd, NS_GET_NSTYPE);
        return t < 0 ? -errno : t;
}

/* The CPU to bind a create to, attempt 0 being the one that worked last; -1: none. */
int pinstore_cpu(const PinStore *ps, size_t attempt);

/* Before creating uid's namespace: the store must be ready, uid not pending, and the pin file
 * <uid> free. Leaves an empty pin file to bind-mount onto. -EAGAIN: not now (store not
 * ready, uid pending, or a pin of uid found, which makes uid pending and due for adoption);
 * never touches an existing pin. Other -errno: logged. */
int pinstore_pin_begin(PinStore *ps, uid_t uid);
/* The create failed after pinstore_pin_begin(): remove the pin file if it is still empty;
 * a pin found there (the pin was made after all) makes uid pending. */
void pinstore_pin_abandon(PinStore *ps, uid_t uid);
/* The pin of uid is made, on create attempt `attempt` (see pinstore_cpu()). */
void pinstore_pin_done(PinStore *ps, uid_t uid, uint64_t created_usec, size_t attempt,
                       bool cpu_bound);
/* Remove uid's pin if it pins namespace ns_inode. 0: removed, or there was nothing of that
 * namespace to remove (a pin of another namespace makes uid pending). -errno: the pin is
 * still there (-EAGAIN: the store is not ready). Logged. */
int pinstore_unpin(PinStore *ps, uid_t uid, uint64_t ns_inode);
/* uid has a pin nsd does not hold: pending, and a retry is due now (the store's timer runs it
 * on the next main loop iteration). err and why for the log. */
void pinstore_mark_pending(PinStore *ps, uid_t uid, int err, const char *why);
