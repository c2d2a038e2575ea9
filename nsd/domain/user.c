/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* user.c: one user's namespace as nsd holds it, see user.h. */
#include "domain/user.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errno-util.h"
#include "base/log.h"
#include "store/fdstore.h"
#include "store/mounts.h"
#include "store/state.h"
#include "store/userns.h"

/* A volume's group in the state file: "Volume NAME". */
#define VOLUME_GROUP_PREFIX "Volume "

User *user_new(UserNs *ns, GArray *baseline, FdStore *fdstore, StateDir *state) {
        User *u = g_new0(User, 1);

        u->uid = ns->uid;
        u->ns = ns;
        u->sessions = g_ptr_array_new();
        u->baseline = baseline;
        u->fdstore = fdstore;
        u->state = state;
        u->credential_fd = -1;
        return u;
}

void user_free(User *u) {
        if (!u)
                return;
        g_assert(u->sessions->len == 0);
        g_ptr_array_unref(u->sessions);
        userns_free(u->ns); /* closes descriptors; the pin stays */
        if (u->baseline)
                g_array_unref(u->baseline);
        g_free(u->setup_generation);
        g_strfreev(u->shares);
        g_free(u->owner);
        g_free(u->release_refused);
        user_credential_drop(u, NULL);
        user_credential_unlock_drop(u, NULL);
        user_volumes_free(u->volumes, u->n_volumes);
        g_free(u);
}

/* ---- the fd store ------------------------------------------------------------------------ */

bool user_is_stored(const User *u) {
        char name[FDSTORE_NAME_MAX];

        return fdstore_contains(u->fdstore, fdstore_ns_name(name, u->uid));
}

bool user_store_passed(const User *u) {
        char name[FDSTORE_NAME_MAX];

        return fdstore_is_passed(u->fdstore, fdstore_ns_name(name, u->uid));
}

int user_store(User *u) {
        FdStoreClass c = u->ns->pinned ? FDSTORE_CLASS_PINNED : FDSTORE_CLASS_NAMESPACE;
        char name[FDSTORE_NAME_MAX];
        FdStoreStats before, after;
        int r;

        fdstore_ns_name(name, u->uid);
        if (fdstore_contains(u->fdstore, name)) {
                fdstore_set_class(u->fdstore, name, c);
                return 1;
        }
        fdstore_get_stats(u->fdstore, &before);
        r = fdstore_put(u->fdstore, u->ns->ns_fd, name, c);
        fdstore_get_stats(u->fdstore, &after);
        /* one without a pin is said once each, also past the first refusal of a crossing (which
         * the store says at warning level itself) */
        if (r == -ENOSPC && c == FDSTORE_CLASS_NAMESPACE && !u->store_warned) {
                u->store_warned = true;
                if (after.warnings == before.warnings)
                        log_event(LOG_WARNING, 0, u->uid, "fdstore-full",
                                  "No room in the service manager's fd store for the namespace "
                                  "of uid %u, which is not pinned either: only nsd's descriptor "
                                  "keeps it, it does not survive a restart of nsd",
                                  (unsigned) u->uid);
        }
        return r;
}

void user_unkeep(User *u) {
        char name[FDSTORE_NAME_MAX], sname[32];

        (void) fdstore_remove(u->fdstore, fdstore_ns_name(name, u->uid));
        user_state_name(sname, u->uid);
        state_remove(u->state, sname);
}

/* ---- the state file ns-<uid> ------------------------------------------------------------- */

void user_state_name(char buf[static 32], uid_t uid) {
        snprintf(buf, 32, STATE_NS_PREFIX "%u", (unsigned) uid);
}

void user_state_write(const User *u) {
        g_autoptr(GKeyFile) kf = NULL;
        g_autofree char *b = NULL;
        char name[32];

        if (!u->state)
                return;
        kf = g_key_file_new();
        g_key_file_set_uint64(kf, "Namespace", "Inode", u->ns->ns_inode);
        g_key_file_set_uint64(kf, "Namespace", "CreatedUsec", u->ns->created_usec);
        if (u->baseline) {
                b = mounts_baseline_to_string(u->baseline);
                g_key_file_set_string(kf, "Namespace", "Baseline", b);
        }
        if (u->setup_generation)
                g_key_file_set_string(kf, "Namespace", "SetupGeneration", u->setup_generation);
        if (u->shares && u->shares[0])
                g_key_file_set_string_list(kf, "Namespace", "Shares",
                                           (const char *const *) u->shares,
                                           g_strv_length(u->shares));
        if (u->owner)
                g_key_file_set_string(kf, "Namespace", "Owner", u->owner);
        for (size_t i = 0; i < u->n_volumes; i++) {
                const UserVolume *v = &u->volumes[i];
                g_autofree char *group = g_strconcat(VOLUME_GROUP_PREFIX, v->name, NULL);

                g_key_file_set_string(kf, group, "Type", v->type);
                g_key_file_set_string(kf, group, "Source", v->source);
                g_key_file_set_string(kf, group, "Where", v->where);
                g_key_file_set_integer(kf, group, "Outcome", v->outcome);
                if (v->err)
                        g_key_file_set_integer(kf, group, "Errno", v->err);
                if (v->why)
                        g_key_file_set_string(kf, group, "Why", v->why);
                if (v->options)
                        g_key_file_set_string(kf, group, "Options", v->options);
                if (v->password)
                        g_key_file_set_boolean(kf, group, "Password", true);
                if (v->ask)
                        g_key_file_set_string(kf, group, "Key", "ask");
                if (v->key_file)
                        g_key_file_set_string(kf, group, "KeyFile", v->key_file);
                if (v->on_request || v->at_login)
                        g_key_file_set_string(kf, group, "Start",
                                              v->on_request ? "request" : "login");
                if (v->release_last)
                        g_key_file_set_string(kf, group, "Release", "last-session");
                if (v->loop)
                        g_key_file_set_uint64(kf, group, "Loop", v->loop - 1);
                g_key_file_set_uint64(kf, group, "AtUsec", v->at_usec);
        }
        user_state_name(name, u->uid);
        (void) state_write(u->state, name, kf);
}

/* ns's state file, if it describes this very namespace; NULL otherwise. */
static GKeyFile *state_of(StateDir *state, const UserNs *ns, bool quiet) {
        g_autoptr(GKeyFile) kf = NULL;
        char name[32];

        if (!state)
                return NULL;
        user_state_name(name, ns->uid);
        if (state_read(state, name, &kf) < 0)
                return NULL;
        if (g_key_file_get_uint64(kf, "Namespace", "Inode", NULL) != ns->ns_inode) {
                if (!quiet)
                        log_info("'%s/%s' describes another namespace than mnt:[%" PRIu64 "], "
                                 "ignoring it",
                                 state_path(state), name, ns->ns_inode);
                return NULL;
        }
        return g_steal_pointer(&kf);
}

char *user_state_generation(StateDir *state, const UserNs *ns) {
        g_autoptr(GKeyFile) kf = state_of(state, ns, true);

        return kf ? g_key_file_get_string(kf, "Namespace", "SetupGeneration", NULL) : NULL;
}

char **user_state_shares(StateDir *state, const UserNs *ns) {
        g_autoptr(GKeyFile) kf = state_of(state, ns, true);

        return kf ? g_key_file_get_string_list(kf, "Namespace", "Shares", NULL, NULL) : NULL;
}

char *user_state_owner(StateDir *state, const UserNs *ns) {
        g_autoptr(GKeyFile) kf = state_of(state, ns, true);

        return kf ? g_key_file_get_string(kf, "Namespace", "Owner", NULL) : NULL;
}

static void user_volume_clear(UserVolume *v) {
        g_free(v->name);
        g_free(v->type);
        g_free(v->source);
        g_free(v->where);
        g_free(v->why);
        g_free(v->options);
        g_free(v->key_file);
        g_free(v->key_refused);
        g_free(v->held);
        *v = (UserVolume) { 0 };
}

void user_volumes_free(UserVolume *v, size_t n) {
        for (size_t i = 0; i < n; i++)
                user_volume_clear(&v[i]);
        g_free(v);
}

size_t user_state_volumes(StateDir *state, const UserNs *ns, UserVolume **ret) {
        g_autoptr(GKeyFile) kf = state_of(state, ns, true);
        g_auto(GStrv) groups = NULL;
        UserVolume *vols;
        size_t n = 0;
        char name[32];

        *ret = NULL;
        if (!kf)
                return 0;
        user_state_name(name, ns->uid);
        groups = g_key_file_get_groups(kf, NULL);
        vols = g_new0(UserVolume, g_strv_length(groups) + 1);
        for (char **g = groups; *g; g++) {
                UserVolume *v = &vols[n];
                g_autoptr(GError) e = NULL;

                if (!g_str_has_prefix(*g, VOLUME_GROUP_PREFIX))
                        continue;
                v->name = g_strdup(*g + strlen(VOLUME_GROUP_PREFIX));
                v->type = g_key_file_get_string(kf, *g, "Type", &e);
                if (!e)
                        v->source = g_key_file_get_string(kf, *g, "Source", &e);
                if (!e)
                        v->where = g_key_file_get_string(kf, *g, "Where", &e);
                if (!e)
                        v->outcome = g_key_file_get_integer(kf, *g, "Outcome", &e);
                if (e || v->name[0] == '\0') {
                        log_warning("'%s/%s': [%s] does not read (%s), leaving it out",
                                    state_path(state), name, *g, e ? e->message : "no name");
                        user_volume_clear(v);
                        continue;
                }
                v->err = g_key_file_get_integer(kf, *g, "Errno", NULL);
                v->why = g_key_file_get_string(kf, *g, "Why", NULL);
                v->options = g_key_file_get_string(kf, *g, "Options", NULL);
                v->password = g_key_file_get_boolean(kf, *g, "Password", NULL);
                g_autofree char *key = g_key_file_get_string(kf, *g, "Key", NULL);
                g_autofree char *start = g_key_file_get_string(kf, *g, "Start", NULL);
                v->ask = v->password && g_strcmp0(key, "ask") == 0;
                if (v->password)
                        v->key_file = g_key_file_get_string(kf, *g, "KeyFile", NULL);
                v->on_request = g_strcmp0(start, "request") == 0;
                /* "login" is written for kernel volumes only (a FUSE one's is not written) */
                v->at_login = g_strcmp0(start, "login") == 0;
                g_autofree char *release = g_key_file_get_string(kf, *g, "Release", NULL);
                v->release_last = g_strcmp0(release, "last-session") == 0;
                if (g_key_file_has_key(kf, *g, "Loop", NULL))
                        v->loop = (uint32_t) g_key_file_get_uint64(kf, *g, "Loop", NULL) + 1;
                v->at_usec = g_key_file_get_uint64(kf, *g, "AtUsec", NULL);
                n++;
        }
        if (n == 0)
                g_clear_pointer(&vols, g_free);
        *ret = vols;
        return n;
}

/* ---- the login password of its volumes ---------------------------------------------------- */

bool user_volume_takes_login(const User *u, size_t i) {
        return i < u->n_volumes && u->volumes[i].password && !u->volumes[i].ask &&
               !u->volumes[i].key_file;
}

size_t user_password_volumes(const User *u) {
        size_t n = 0;

        for (size_t i = 0; i < u->n_volumes; i++)
                n += user_volume_takes_login(u, i);
        return n;
}

void user_credential_drop(User *u, const char *why) {
        g_clear_handle_id(&u->credential_timer, g_source_remove);
        if (u->credential_fd >= 0) {
                (void) close(u->credential_fd);
                if (why)
                        log_debug("Let uid %u's login password go: %s", (unsigned) u->uid, why);
        }
        u->credential_fd = -1;
        u->credential_taken = 0;
}

static gboolean on_credential_timeout(void *userdata) {
        User *u = userdata;

        u->credential_timer = 0;
        log_info("Let uid %u's login password go: not every volume that takes it took it within "
                 "%d s",
                 (unsigned) u->uid, USER_CREDENTIAL_HOLD_SEC);
        user_credential_drop(u, NULL);
        return G_SOURCE_REMOVE;
}

void user_credential_hold(User *u, int fd) {
        user_credential_drop(u, "another one came");
        u->credential_fd = fd;
        u->credential_timer = g_timeout_add_seconds(USER_CREDENTIAL_HOLD_SEC, on_credential_timeout,
                                                    u);
}

void user_credential_unlock_drop(User *u, const char *why) {
        bool held = false;

        g_clear_handle_id(&u->unlock_timer, g_source_remove);
        for (size_t i = 0; u->unlock_fd && i < u->n_volumes; i++)
                if (u->unlock_fd[i] >= 0) {
                        (void) close(u->unlock_fd[i]);
                        held = true;
                }
        g_clear_pointer(&u->unlock_fd, g_free);
        if (held && why)
                log_info("Let the volume passwords uid %u gave go: %s", (unsigned) u->uid, why);
}

static gboolean on_unlock_timeout(void *userdata) {
        User *u = userdata;

        u->unlock_timer = 0;
        user_credential_unlock_drop(u,
                                    "not taken within " G_STRINGIFY(USER_CREDENTIAL_HOLD_SEC) " s");
        return G_SOURCE_REMOVE;
}

void user_credential_unlock(User *u, size_t i, int fd) {
        g_return_if_fail(i < u->n_volumes && u->volumes[i].password);
        if (!u->unlock_fd) {
                u->unlock_fd = g_new(int, u->n_volumes);
                for (size_t k = 0; k < u->n_volumes; k++)
                        u->unlock_fd[k] = -1;
        }
        if (u->unlock_fd[i] >= 0)
                (void) close(u->unlock_fd[i]);
        u->unlock_fd[i] = fd;
        g_clear_handle_id(&u->unlock_timer, g_source_remove);
        u->unlock_timer = g_timeout_add_seconds(USER_CREDENTIAL_HOLD_SEC, on_unlock_timeout, u);
}

int user_credential_peek(User *u, size_t i, bool *ret_unlocked) {
        int fd;

        *ret_unlocked = false;
        g_return_val_if_fail(i < u->n_volumes && i < 64 && u->volumes[i].password, -EINVAL);
        if (u->unlock_fd && u->unlock_fd[i] >= 0) { /* the user's own for it */
                *ret_unlocked = true;
                fd = fcntl(u->unlock_fd[i], F_DUPFD_CLOEXEC, 3);
                return fd < 0 ? -errno : fd;
        }
        if (!user_volume_takes_login(u, i) || u->credential_fd < 0)
                return -EAGAIN;
        if (u->credential_taken & (UINT64_C(1) << i))
                return -EALREADY; /* once per volume: a second taker is not the volume's */
        fd = fcntl(u->credential_fd, F_DUPFD_CLOEXEC, 3);
        return fd < 0 ? -errno : fd;
}

bool user_key_file_refused(User *u, size_t i, const char *why) {
        g_return_val_if_fail(i < u->n_volumes, true);
        return why_is_news(&u->volumes[i].key_refused, why);
}

void user_credential_handed(User *u, size_t i, bool unlocked) {
        uint64_t all = 0;

        g_return_if_fail(i < u->n_volumes && i < 64);
        if (unlocked) {
                if (u->unlock_fd && u->unlock_fd[i] >= 0) {
                        (void) close(u->unlock_fd[i]);
                        u->unlock_fd[i] = -1;
                }
                return;
        }
        if (u->credential_fd < 0)
                return;
        u->credential_taken |= UINT64_C(1) << i;
        for (size_t k = 0; k < u->n_volumes && k < 64; k++)
                if (user_volume_takes_login(u, k))
                        all |= UINT64_C(1) << k;
        if ((u->credential_taken & all) == all)
                user_credential_drop(u, "every volume that takes it took it");
}

bool user_credential_wanted(const User *u) {
        g_autofree char *text = NULL;

        if (u->credential_fd >= 0 || user_password_volumes(u) == 0)
                return false;
        if (userns_read_mountinfo(u->ns, USER_MOUNTINFO_MAX, &text, NULL) < 0)
                return true; /* unknown: it may be wanted */
        for (size_t i = 0; i < u->n_volumes; i++) {
                int count;
                unsigned group;

                /* -ENOENT: nothing mounted there; another error: it may be wanted */
                if (user_volume_takes_login(u, i) &&
                    mounts_under(text, u->volumes[i].where, &count, &group) < 0)
                        return true;
        }
        return false;
}

static gint compare_u64(gconstpointer a, gconstpointer b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

GArray *user_state_baseline(StateDir *state, const UserNs *ns) {
        g_autoptr(GKeyFile) kf = state_of(state, ns, false);
        g_autofree char *b = NULL;
        GArray *baseline = NULL;
        char name[32];

        if (!kf)
                return NULL;
        user_state_name(name, ns->uid);
        b = g_key_file_get_string(kf, "Namespace", "Baseline", NULL);
        if (b && mounts_baseline_from_string(b, &baseline) < 0) {
                log_warning("'%s/%s' has a bad Baseline=, ignoring it", state_path(state), name);
                return NULL;
        }
        return baseline;
}

void user_baseline_add(User *u, const char *where) {
        g_autofree char *text = NULL;
        uint64_t fp;
        int r;

        if (!u->baseline) /* unknown: linger keeps the namespace anyway */
                return;
        r = userns_read_mountinfo(u->ns, USER_MOUNTINFO_MAX, &text, NULL);
        if (r >= 0)
                r = mounts_fingerprint_on(text, where, &fp);
        if (r < 0) {
                log_warning_errno(r,
                                  "Cannot add nsd's mount on '%s' to the baseline of uid %u's "
                                  "namespace; linger counts it as the user's and keeps the "
                                  "namespace: %m",
                                  where, (unsigned) u->uid);
                return;
        }
        for (guint i = 0; i < u->baseline->len; i++)
                if (g_array_index(u->baseline, uint64_t, i) == fp)
                        return;
        if (u->baseline->len >= MOUNTS_BASELINE_MAX)
                return;
        g_array_append_val(u->baseline, fp);
        g_array_sort(u->baseline, compare_u64);
        user_state_write(u);
}

GArray *user_take_baseline(const UserNs *ns) {
        g_autofree char *text = NULL;
        GArray *baseline = NULL;
        int r;

        r = userns_read_mountinfo(ns, USER_MOUNTINFO_MAX, &text, NULL);
        if (r >= 0)
                r = mounts_baseline(text, &baseline);
        if (r < 0) {
                log_warning_errno(r,
                                  "Cannot take the mount baseline of uid %u's new namespace, "
                                  "linger will keep it: %m",
                                  (unsigned) ns->uid);
                return NULL;
        }
        return baseline;
}
