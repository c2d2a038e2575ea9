/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * nsctl: cleanup attributes for the objects of libmount, libsmartcols and stdio, beside
 * common/cleanup.h's free and close (as sd-bus.h ships sd_bus_unrefp). Private to nsctl.
 *
 *     _cleanup_scols_table_ struct libscols_table *tb = scols_new_table();
 */
#pragma once

#include <stdio.h>

#include <libmount.h>
#include <libsmartcols.h>

#include "cleanup.h"

static inline void cleanup_mnt_tablep(struct libmnt_table **p) {
        mnt_unref_table(*p); /* NULL is fine */
}
static inline void cleanup_mnt_iterp(struct libmnt_iter **p) {
        mnt_free_iter(*p);
}
static inline void cleanup_scols_tablep(struct libscols_table **p) {
        scols_unref_table(*p);
}
static inline void cleanup_fclosep(FILE **p) {
        if (*p)
                fclose(*p);
}

#define _cleanup_mnt_table_ __attribute__((cleanup(cleanup_mnt_tablep)))
#define _cleanup_mnt_iter_ __attribute__((cleanup(cleanup_mnt_iterp)))
#define _cleanup_scols_table_ __attribute__((cleanup(cleanup_scols_tablep)))
#define _cleanup_fclose_ __attribute__((cleanup(cleanup_fclosep)))
