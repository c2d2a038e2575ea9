/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* volumes.c: a user's FUSE volumes, see volumes.h. */
#include "volumes.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "volume-options.h"

int volume_argv(const struct nsc_volume_info *v, const char *argv[VOLUME_ARGV_MAX],
                const char **ret_why) {
        const VolumeTypeOptions *t;
        size_t n = 0;

        if (v->state != NSC_VOLUME_USER)
                return *ret_why = "not a volume the user's service manager runs (a kernel "
                                  "file system: nsd mounts it)",
                       -EINVAL;
        t = volume_type_options_find(v->type);
        if (!t || !t->fuse || !t->program)
                return *ret_why = "a FUSE type this nsctl does not know (nsctl older than nsd?)",
                       -EINVAL;
        if (v->source[0] == '\0' || v->source[0] == '-' || (t->local_source && v->source[0] != '/'))
                return *ret_why = t->local_source ? "Source= is not an absolute path"
                                                  : "Source= is empty or starts with '-'",
                       -EINVAL;
        if (v->where[0] != '/')
                return *ret_why = "Where= is not an absolute path", -EINVAL;
        if (t->takes_password != !!(v->flags & NSC_VOLUME_PASSWORD))
                return *ret_why = "nsd and this nsctl disagree on whether it takes a password",
                       -EINVAL;
        argv[n++] = t->program;
        /* the foreground: the unit's main process is the FUSE daemon */
        argv[n++] = t->foreground;
        if (v->options[0]) {
                argv[n++] = t->options_arg;
                argv[n++] = v->options;
        }
        for (const char *const *p = volume_password_args; t->takes_password && *p; p++)
                argv[n++] = *p;
        argv[n++] = "--";
        argv[n++] = v->source;
        argv[n++] = v->where;
        argv[n] = NULL;
        return 0;
}

int volume_unit_name(const char *name, char *buf, size_t size) {
        static const char prefix[] = "nsd-volume@", suffix[] = ".service";
        size_t n = 0;

#define PUT(c)                                \
        do {                                  \
                if (n + 1 >= size)            \
                        return -ENAMETOOLONG; \
                buf[n++] = (c);               \
        } while (0)
        for (const char *p = prefix; *p; p++)
                PUT(*p);
        for (const char *p = name; *p; p++) {
                unsigned char c = (unsigned char) *p;
                bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                             (c >= '0' && c <= '9') || c == '_' || c == ':' ||
                             (c == '.' && p != name);

                if (plain)
                        PUT((char) c);
                else {
                        char hex[5];

                        snprintf(hex, sizeof hex, "\\x%02x", c);
                        for (const char *h = hex; *h; h++)
                                PUT(*h);
                }
        }
        for (const char *p = suffix; *p; p++)
                PUT(*p);
#undef PUT
        buf[n] = '\0';
        return 0;
}
