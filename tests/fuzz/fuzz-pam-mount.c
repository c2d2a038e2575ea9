/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-pam-mount: nsctl import-pam-mount's converter, pm_import_text() of
 * nsctl/import-pam-mount.c (libxml2 underneath), over pam_mount.conf.xml text; and the drop-in
 * it prints read by nsd's own parser, config_parse_text() of nsd/policy/conf.c.
 *
 * Input: the document, as it would be read from the file.
 *
 * Properties besides the sanitizers' (any failure aborts):
 *   - pm_import_text() returns 0, or -EINVAL or -EFBIG with an error naming the file;
 *   - whatever it carried over, nsd reads: the drop-in parses, with as many volumes as the
 *     importer counted (nothing the importer writes is refused by nsd);
 *   - every note names the file ("fuzz.xml:LINE: "), and a drop-in with a note that lost
 *     something is marked lost;
 *   - no control byte but newline and tab reaches the drop-in (UTF-8 may: nsd reads it).
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "import-pam-mount.h"
#include "policy/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *sources[] = { "fuzz.xml" };
        char *text = malloc(size + 1), *error = NULL, *out, *why = NULL;
        PmImport im;
        Config c;
        int r;

        if (!text || pm_import_init(&im) < 0)
                abort();
        memcpy(text, data, size);
        text[size] = '\0';
        r = pm_import_text(&im, text, size, "fuzz.xml", &error);
        fuzz_assert(r == 0 || ((r == -EINVAL || r == -EFBIG) && error &&
                               strncmp(error, "fuzz.xml", 8) == 0),
                    "r=%d error=%s", r, error ? error : "(none)");
        fuzz_assert(r < 0 || !error, "an error on success: %s", error);
        out = pm_import_finish(&im, sources, 1);
        for (const unsigned char *p = (const unsigned char *) out; *p; p++)
                fuzz_assert((*p >= 0x20 && *p != 0x7f) || *p == '\n' || *p == '\t',
                            "byte 0x%02x in the drop-in", *p);
        for (size_t i = 0; i < im.out.n_notes; i++)
                fuzz_assert(strncmp(im.out.notes[i], "fuzz.xml:", 9) == 0, "note '%s'",
                            im.out.notes[i]);
        if (config_parse_text(out, strlen(out), "drop-in.conf", &c, &why) == 0) {
                fuzz_assert(c.setup.n_volumes == im.n_volumes, "nsd reads %zu volumes, %u written",
                            c.setup.n_volumes, im.n_volumes);
                config_done(&c);
        } else
                fuzz_assert(false, "nsd refuses the drop-in: %s\n%s", why, out);
        free(why);
        free(out);
        free(error);
        free(text);
        pm_import_done(&im);
        return 0;
}
