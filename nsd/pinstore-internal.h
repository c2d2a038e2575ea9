/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pinstore-internal.h: what the pin store (pinstore.c) shares with the creation and release of
 * user namespaces (userns.c), which pin and unpin in it. Not for the server: it uses
 * pinstore.h and userns.h.
 */
#pragma once

#include <linux/nsfs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <errno.h>

#include "pinstore.h"
#include "userns.h"

/* CPUs tried for one create (see PinStore.cpus) */
#define PIN_CPUS_MAX 16

struct PinStore {
        char *run_dir;
        char *pins_path;  /* <run_dir>/pins: the one host mount */
        int pinns_fd;     /* nsfs descriptor of the pin namespace */
        int dir_fd;       /* O_PATH: the pin tmpfs (run_dir inside the pin namespace) */
        bool created;     /* this process made the pin namespace */
        /* Linux 6.18 hands out namespace ids from per-CPU batches, so only namespaces made on
         * one CPU are ordered by age, and mnt_ns_loop() refuses a pin whose namespace has a
         * smaller id than the pinning one. We create the pin namespace and every user
         * namespace bound to the same CPU, and on a refusal try the other CPUs in turn. */
        int cpus[PIN_CPUS_MAX];
        size_t n_cpus;
        size_t cpu_idx; /* the CPU that worked last */
};

/* CLONE_NEWNS, another CLONE_NEW* or -errno (-ENOTTY: not an nsfs file). */
static inline int fd_nstype(int fd) {
        int t = ioctl(fd, NS_GET_NSTYPE);
        return t < 0 ? -errno : t;
}

/* The CPU to bind a create to, attempt 0 being the one that worked last; -1: none. */
int pinstore_cpu(const PinStore *ps, size_t attempt);
/* Create the empty pin file <uid> (or reuse a stale one); -EEXIST when it pins a namespace. */
int pin_file_prepare(PinStore *ps, uid_t uid, const char *name);
/* <uid>.info: the creation time, for re-adoption. Failures are logged, not returned. */
void pin_info_write(PinStore *ps, uid_t uid, const char *name, uint64_t created);
