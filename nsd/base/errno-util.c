/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* errno-util.c: saying why, see errno-util.h. */
#include "base/errno-util.h"

#include <glib.h>
#include <stdlib.h>

int why_setv(char **why, int error, const char *fmt, va_list ap) {
        if (why) {
                g_free(*why);
                *why = g_strdup_vprintf(fmt, ap);
        }
        return -abs(error);
}

int why_set(char **why, int error, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = why_setv(why, error, fmt, ap);
        va_end(ap);
        return r;
}

bool why_is_news(char **last, const char *why) {
        if (g_strcmp0(*last, why) == 0)
                return false;
        g_free(*last);
        *last = g_strdup(why);
        return true;
}
