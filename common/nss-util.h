/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nss-util.h: user and group lookups through NSS that never fail on a long entry.
 *
 * The *_r calls of libc answer ERANGE when the caller's buffer is too small for an entry
 * (a group with 3000 members is a 30 KiB line). These retry with a buffer twice as big, up to
 * NSS_BUFFER_MAX, so a long entry is never mistaken for a missing one. Plain C, no GLib:
 * nsd, nsctl and pam_nsjoin share it. Each result is ONE malloc()ed block (the struct and
 * the strings it points to): free() it. Returns 0, -ENOENT when the entry does not exist,
 * -ENOMEM, -E2BIG when it is larger than NSS_BUFFER_MAX, or the -errno NSS gave.
 *
 * These block for as long as NSS does (LDAP, SSSD): nsd calls them off its main loop only.
 */
#pragma once

#include <grp.h>
#include <pwd.h>
#include <stddef.h>
#include <sys/types.h>

#define NSS_BUFFER_MAX (16u * 1024 * 1024)

int nss_user_by_name(const char *name, struct passwd **ret);
int nss_user_by_uid(uid_t uid, struct passwd **ret);
int nss_group_by_name(const char *name, struct group **ret);
int nss_group_by_gid(gid_t gid, struct group **ret);

/* The groups of user (whose primary group is gid, which comes first): a malloc()ed array of
 * *ret_n gids. */
int nss_user_groups(const char *user, gid_t gid, gid_t **ret, size_t *ret_n);
