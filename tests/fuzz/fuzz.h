/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/fuzz/fuzz.h: what every harness defines, and the one way a harness says that a
 * property failed.
 *
 * Each harness is one program with LLVMFuzzerTestOneInput() (and optionally
 * LLVMFuzzerInitialize()). Built two ways (tests/fuzz/meson.build):
 *   - with clang and -fsanitize=fuzzer,address,undefined: a libFuzzer program (suite fuzz,
 *     bench/fuzz);
 *   - with any compiler and standalone.c as main(): runs the checked-in seed corpus and the
 *     regression inputs once each (suite unit, also in the sanitizer build of tools/test).
 *
 * A harness checks properties of the code under test (no descriptor leaked, outputs written
 * only on success, ...) besides what the sanitizers catch. fuzz_assert() aborts with a line
 * naming the property, so that libFuzzer saves the input as a crash.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define fuzz_assert(cond, ...)                                                                    \
        do {                                                                                      \
                if (!(cond)) {                                                                    \
                        fprintf(stderr, "fuzz: %s:%d: property failed: %s: ", __FILE__, __LINE__, \
                                #cond);                                                           \
                        fprintf(stderr, __VA_ARGS__);                                             \
                        fputc('\n', stderr);                                                      \
                        abort();                                                                  \
                }                                                                                 \
        } while (0)

/* A little reader over the fuzz input: past the end it yields zeros, never fails. */
struct fuzz_input {
        const uint8_t *data;
        size_t size, pos;
};

static inline uint8_t fuzz_u8(struct fuzz_input *in) {
        return in->pos < in->size ? in->data[in->pos++] : 0;
}

static inline uint16_t fuzz_u16(struct fuzz_input *in) {
        uint16_t lo = fuzz_u8(in);
        return (uint16_t) (lo | (uint16_t) fuzz_u8(in) << 8);
}

static inline uint32_t fuzz_u32(struct fuzz_input *in) {
        uint32_t lo = fuzz_u16(in);
        return lo | (uint32_t) fuzz_u16(in) << 16;
}

static inline size_t fuzz_left(const struct fuzz_input *in) {
        return in->size - in->pos;
}
