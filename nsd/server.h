/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * server.h: nsd's state and its socket protocol. The user table (uid -> namespace, sessions,
 * linger timer), client connections, request handling and policy live in server.c; the
 * kernel work is userns.c's, process setup (arguments, capabilities, signals) is main.c's.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "conf.h"

typedef struct Server Server;

/* Take over config (moved out of *config) and the listening socket, open the pin store
 * under run_dir (a failure is logged and nsd runs without pins), re-adopt every pinned
 * namespace and start serving on the GLib main context. config_path is kept for reloads. */
int server_new(Config *config, const char *config_path, const char *run_dir, int listen_fd,
               Server **ret);
/* Stop serving and forget everything in memory. Namespaces stay pinned: a restarted nsd
 * re-adopts them. */
void server_free(Server *s);

/* SIGHUP: read the config again; a bad one is logged with FILE:LINE and the old one kept.
 * Returns 0 or -errno. */
int server_reload_config(Server *s);

/* Send STATUS= ("N namespaces, M sessions") to the service manager. */
void server_notify_status(Server *s);
