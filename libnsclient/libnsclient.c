/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* STUB: replaced by the libnsclient work. Every call fails with -ENOSYS. */
#include <errno.h>
#include "nsclient.h"
int nsc_connect(const char *p, nsc_conn **r) { return -ENOSYS; }
void nsc_disconnect(nsc_conn *c) {}
const char *nsc_last_error_message(nsc_conn *c) { return NULL; }
int nsc_join(nsc_conn *c, uid_t u, unsigned f, struct nsc_join_result *r) { return -ENOSYS; }
int nsc_enter_setns(const struct nsc_join_result *j) { return -ENOSYS; }
int nsc_enter_chroot(const struct nsc_join_result *j, int *u) { return -ENOSYS; }
int nsc_session_open(nsc_conn *c, uid_t u, pid_t p, const char *s, uint64_t *i, unsigned *n) { return -ENOSYS; }
int nsc_session_close(nsc_conn *c, uid_t u, pid_t p, uint64_t i, unsigned *n) { return -ENOSYS; }
int nsc_status(nsc_conn *c, struct nsc_status *r) { return -ENOSYS; }
int nsc_list(nsc_conn *c, struct nsc_ns_info **e, size_t *n) { return -ENOSYS; }
int nsc_show(nsc_conn *c, uid_t u, char **t, size_t *l) { return -ENOSYS; }
int nsc_release(nsc_conn *c, uid_t u, unsigned f) { return -ENOSYS; }
