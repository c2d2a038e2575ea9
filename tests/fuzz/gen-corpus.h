/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/fuzz/gen-corpus.h: what the seed corpus generators (gen-*-corpus.c) share. A seed
 * is put together in one buffer and written as one file into the folder named on the
 * command line:
 *
 *   gen_corpus_folder(argc, argv, "gen-x-corpus");   the folder, or exit 2 with the usage
 *   out_n = 0; put(p, n); put8(byte);                 the seed
 *   finish("name");                                   written to FOLDER/name (exit 1 on error)
 *   m = proto_msg(type, size, seq);                   a sound message of nsd-protocol.h,
 *                                                     zeroed past its header (one buffer,
 *                                                     reused by the next call)
 *
 * Header-only (static functions), like tests/tap.h: each generator is one program.
 */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsd-protocol.h"

static unsigned char out[65536];
static size_t out_n;
static const char *folder;

static inline void gen_corpus_folder(int argc, char **argv, const char *prog) {
        if (argc != 2) {
                fprintf(stderr, "usage: %s FOLDER\n", prog);
                exit(2);
        }
        folder = argv[1];
}

static inline void put(const void *p, size_t n) {
        if (out_n + n > sizeof out) {
                fprintf(stderr, "seed too large\n");
                exit(1);
        }
        memcpy(out + out_n, p, n);
        out_n += n;
}

static inline void put8(unsigned v) {
        unsigned char b = (unsigned char) v;
        put(&b, 1);
}

static inline void finish(const char *name) {
        char path[4096];
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", folder, name);
        f = fopen(path, "we");
        if (!f || fwrite(out, 1, out_n, f) != out_n || fclose(f) != 0) {
                fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
                exit(1);
        }
}

static inline void *proto_msg(uint16_t type, size_t size, uint32_t seq) {
        static unsigned char buf[NSD_MSG_SIZE_MAX + 200] __attribute__((aligned(8)));
        memset(buf, 0, sizeof buf);
        nsd_msg_init((struct nsd_msg_header *) buf, type, (uint32_t) size, seq);
        return buf;
}
