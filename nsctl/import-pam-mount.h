/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * nsctl import-pam-mount: pam_mount's pam_mount.conf.xml as an nsd drop-in ([Volume NAME]
 * groups of nsd.conf(5)). See nsctl(1).
 *
 * The converter works on text and knows no file system, so tests give it a document and
 * read what it makes. The document is read with libxml2, as pam_mount reads it, but never
 * with the network, never loading a DTD, and refusing any entity. What nsd cannot mount yet
 * (crypt, FUSE, tmpfs, ...), who nsd cannot name (every user, uid ranges, primary groups,
 * conditions as elements), variables nsd has no specifier for, secrets and options nsd does
 * not take are named with their file and line, in a note and as a comment in the output.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "import-util.h"

#define PM_IMPORT_DEFAULT_CONF "/etc/security/pam_mount.conf.xml"

typedef struct PmImport {
        ImportOut out; /* the [Volume] groups, the notes, the names */
        char **wheres; /* the Where= set, and where ("FILE:LINE") */
        char **wheres_at;
        size_t n_wheres;
        unsigned n_volumes;
} PmImport;

int pm_import_init(PmImport *im);
void pm_import_done(PmImport *im);

/* One file's text (len bytes). Content nsd cannot take becomes a note; -EINVAL with
 * *ret_error ("FILE:LINE: what", malloc()ed) when the text is not XML, declares an entity
 * or is not a pam_mount configuration. */
int pm_import_text(PmImport *im, const char *text, size_t len, const char *filename,
                   char **ret_error);

/* The drop-in: a header naming the sources, then the volumes. malloc()ed. */
char *pm_import_finish(PmImport *im, const char *const *sources, size_t n_sources);

/* The verb. Exit status 0: everything carried over; 2: printed, but something was not
 * (named on stderr); 1: an error (a file could not be read or is not pam_mount's XML, bad
 * arguments). */
int verb_import_pam_mount(int argc, char **argv);
