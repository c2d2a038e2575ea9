/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * table.h: what the rooms above do alike with their GHashTables.
 */
#pragma once

#include <glib.h>

/* Destroys table, whose values are work under way (Type *) that points back at the table's
 * owner through its member back: each one's back is set to NULL first, so that it ends on its
 * own later, without the owner (and without removing itself from the table it was in). A table
 * of g_hash_table_add()'s has each key as its value. */
#define TABLE_DESTROY_ORPHANING(table, Type, back)              \
        do {                                                    \
                GHashTableIter it_;                             \
                gpointer v_;                                    \
                                                                \
                g_hash_table_iter_init(&it_, (table));          \
                while (g_hash_table_iter_next(&it_, NULL, &v_)) \
                        ((Type *) v_)->back = NULL;             \
                g_hash_table_destroy(table);                    \
        } while (0)
