/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * nsctl import-namespace-conf: pam_namespace's namespace.conf (and namespace.d/ *.conf) as
 * an nsd drop-in ([Polydir NAME] groups of nsd.conf(5)). See nsctl(1).
 *
 * The converter works on text and knows no file system, so tests give it lines and read
 * what it makes. What it cannot carry over (SELinux methods, create=, shared, options nsd
 * has no word for) is named with its file and line, in a note and as a comment in the
 * output; the rest of the line is carried when that keeps its meaning.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "import-util.h"

#define NS_IMPORT_DEFAULT_CONF "/etc/security/namespace.conf"
#define NS_IMPORT_DEFAULT_DIR "/etc/security/namespace.d"
#define NS_IMPORT_DEFAULT_INIT "/etc/security/namespace.init"

typedef struct NsImport {
        ImportOut out; /* the [Polydir] groups, the notes, the names */
        char **paths;  /* the polydir paths set, and where ("FILE:LINE") */
        char **paths_where;
        size_t n_paths;
        unsigned n_polydirs;
        unsigned n_default_script; /* polydirs that run the default init script */
} NsImport;

int ns_import_init(NsImport *im);
void ns_import_done(NsImport *im);

/* One file's text (len bytes). Never fails on content: a bad line becomes a note. -ENOMEM. */
int ns_import_text(NsImport *im, const char *text, size_t len, const char *filename);

/* The drop-in: a header naming the sources, [Setup] InitScript=init_script when a polydir
 * runs the default script and init_script is not NULL, then the polydirs. malloc()ed. */
char *ns_import_finish(NsImport *im, const char *const *sources, size_t n_sources,
                       const char *init_script);

/* The verb. Exit status 0: everything carried over; 2: printed, but something was not
 * (named on stderr); 1: an error (a file could not be read, bad arguments). */
int verb_import_namespace_conf(int argc, char **argv);
