/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-util.h: the small helpers the bench programs (nsd-bench, nsd-login, nsd-start) share.
 * Header only. Define BENCH_NAME (the program's name) before including it: progress() starts
 * its lines with it.
 */
#pragma once

#include <dirent.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#ifndef BENCH_NAME
#error "define BENCH_NAME before including bench-util.h"
#endif

static inline uint64_t clock_ns(clockid_t c) {
        struct timespec ts;
        clock_gettime(c, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static inline uint64_t now_ns(void) {
        return clock_ns(CLOCK_MONOTONIC);
}

/* A line on stderr for the person running the bench: "<BENCH_NAME>: ..." */
static inline void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void progress(const char *fmt, ...) {
        va_list ap;
        fputs(BENCH_NAME ": ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

/* VmRSS (or another field) of /proc/PID/status in kB, or -1. */
static inline long proc_status_kb(pid_t pid, const char *name) {
        char path[64], line[256];
        size_t len = strlen(name);
        long v = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, name, len) == 0 && line[len] == ':') {
                        v = strtol(line + len + 1, NULL, 10);
                        break;
                }
        fclose(f);
        return v;
}

/* How many descriptors PID has open, or -1. */
static inline long count_fds(pid_t pid) {
        char path[64];
        struct dirent *de;
        long n = 0;
        DIR *d;

        snprintf(path, sizeof(path), "/proc/%d/fd", (int) pid);
        d = opendir(path);
        if (!d)
                return -1;
        while ((de = readdir(d)))
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}
