/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * nsctl metrics: nsd's METRICS and STATUS as text for Prometheus (node_exporter's textfile
 * collector, promtool check metrics), following OpenMetrics where the two formats agree:
 * counters end in _total, # UNIT for the histogram in seconds, fixed label sets only, and a
 * last line # EOF. See nsctl(1), METRICS. Private to nsctl.
 */
#pragma once

#include <stdio.h>

#include "nsclient.h"

/* The whole exposition of st (version, features, start) and m into f. 0, or -errno when
 * writing failed. */
int exposition_write(FILE *f, const struct nsc_status *st, const struct nsc_metrics *m);

/* The file the textfile collector reads: DIR/EXPOSITION_TEXTFILE_NAME. */
#define EXPOSITION_TEXTFILE_NAME "nsd.prom"

/* text (len bytes) into dir/nsd.prom atomically: a temp file in dir (a name the collector
 * skips), mode 0644, fsync, rename over nsd.prom, fsync of dir. The temp file never stays.
 * 0, or -errno. */
int exposition_write_textfile(const char *dir, const char *text, size_t len);
