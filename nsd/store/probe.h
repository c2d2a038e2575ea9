/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* probe.h: which of our kernel patches the running kernel has. */
#pragma once

#include <stdint.h>

/* Probe the running kernel (NSD_FEATURE_* bits of nsd-protocol.h, never by version number):
 * F1 setns() on a directory fd, F2 /proc mounts following a chrooted root, F3 fspick check,
 * F4 owner-private mount attribute. Runs forked children in throwaway namespaces; changes
 * nothing outside them. */
uint32_t kernel_features_probe(void);
