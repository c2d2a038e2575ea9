/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* STUB: replaced by the nsd namespace work. Every call fails with -ENOSYS. */
#include <errno.h>
#include <stddef.h>
#include "userns.h"
int pinstore_open(const char *d, PinStore **r) { return -ENOSYS; }
void pinstore_free(PinStore *ps) {}
void pinstore_pin_name(const PinStore *ps, uid_t u, char *b, size_t s) { if (s) b[0] = 0; }
int pinstore_adopt_all(PinStore *ps, void (*cb)(UserNs *, void *), void *u) { return -ENOSYS; }
int userns_create(PinStore *ps, uid_t u, const NsSetup *s, UserNs **r) { return -ENOSYS; }
int userns_release(PinStore *ps, UserNs *ns) { return -ENOSYS; }
void userns_free(UserNs *ns) {}
int userns_read_mountinfo(const UserNs *ns, size_t m, char **r, size_t *l) { return -ENOSYS; }
int userns_count_mounts(const UserNs *ns) { return -ENOSYS; }
uint32_t kernel_features_probe(void) { return 0; }
