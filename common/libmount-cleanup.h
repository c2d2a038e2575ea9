/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Cleanup attributes for libmount's objects, beside cleanup.h's free and close (as sd-bus.h
 * ships sd_bus_unrefp). For nsd and nsctl. Private.
 *
 *     _cleanup_mnt_table_ struct libmnt_table *tb = mnt_new_table();
 */
#pragma once

#include <libmount.h>

static inline void cleanup_mnt_tablep(struct libmnt_table **p) {
        mnt_unref_table(*p); /* NULL is fine */
}
static inline void cleanup_mnt_iterp(struct libmnt_iter **p) {
        mnt_free_iter(*p); /* NULL is fine */
}

#define _cleanup_mnt_table_ __attribute__((cleanup(cleanup_mnt_tablep)))
#define _cleanup_mnt_iter_ __attribute__((cleanup(cleanup_mnt_iterp)))
