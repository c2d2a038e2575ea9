/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsd: keeps one persistent mount namespace per user and hands it to that user's logins.
 * main.c: arguments, configuration, capabilities, the listening sockets, signals and the
 * service manager (sd_notify, watchdog). Everything else is in the core library (server.h
 * lists its rooms). See nsd(8).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glib-unix.h>
#include <glib.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "base/log.h"
#include "config.h" /* generated: PACKAGE_VERSION, NSD_CONFIG_PATH */
#include "nsd-protocol.h"
#include "policy/conf-files.h"
#include "policy/conf.h"
#include "server.h"
#include "store/fdstore.h"

#define NSD_RUN_DIR_DEFAULT "/run/nsd"

static const char *arg_config = NSD_CONFIG_PATH;
static const char *arg_socket = NULL;      /* default: <run dir>/socket */
static const char *arg_root_socket = NULL; /* default: <run dir>/root.socket */
static const char *arg_run_dir = NSD_RUN_DIR_DEFAULT;
static int arg_log_level = LOG_INFO;
static enum log_target arg_log_target = LOG_TARGET_AUTO;
static enum { CHECK_NONE, CHECK_ALL, CHECK_SYNTAX } arg_check_config = CHECK_NONE;

static void help(void) {
        printf("Usage: nsd [OPTIONS]\n"
               "\n"
               "Keep one persistent mount namespace per user and hand it to every login of\n"
               "that user (through pam_nsjoin). Runs in the foreground, as root, in the\n"
               "initial mount namespace.\n"
               "\n"
               "Options:\n"
               "  --config FILE        configuration file (default %s), read with its\n"
               "                       drop-ins FILE.d/*.conf\n"
               "  --check-config[=syntax]\n"
               "                       read the configuration and check the files it names\n"
               "                       (=syntax: only read it), say what is wrong (FILE:LINE)\n"
               "                       and exit\n"
               "  --socket PATH        everyone's socket (mode 0666), when the service manager\n"
               "                       passes none (default <run dir>/socket, i.e. %s)\n"
               "  --root-socket PATH   root's own socket (mode 0600; pam_nsjoin uses it, no\n"
               "                       other uid is served there), when the service manager\n"
               "                       passes none (default <run dir>/root.socket, i.e.\n"
               "                       %s)\n"
               "  --run-dir DIR        runtime folder for the pins (default %s)\n"
               "  --log-level LEVEL    emerg, alert, crit, err, warning, notice, info, debug\n"
               "                       or 0-7 (default info)\n"
               "  --log-target TARGET  auto, stderr or journal (default auto)\n"
               "  -h, --help           show this help and exit\n"
               "  -V, --version        show the version and exit\n"
               "\n"
               "Signals: SIGTERM/SIGINT stop (namespaces stay pinned), SIGHUP reloads the\n"
               "configuration.\n"
               "\n"
               "See nsd(8).\n",
               NSD_CONFIG_PATH, NSD_SOCKET_PATH_DEFAULT, NSD_ROOT_SOCKET_PATH_DEFAULT,
               NSD_RUN_DIR_DEFAULT);
}

static int parse_log_level(const char *s) {
        static const char *const names[] = { "emerg",   "alert",  "crit", "err",
                                             "warning", "notice", "info", "debug" };

        for (int i = 0; i < 8; i++)
                if (strcmp(s, names[i]) == 0)
                        return i;
        if (strcmp(s, "error") == 0)
                return LOG_ERR;
        if (s[0] >= '0' && s[0] <= '7' && s[1] == '\0')
                return s[0] - '0';
        return -EINVAL;
}

/* --check-config: the configuration as a start or a reload would read it, and the files its
 * setup names (conf-files.h). Any user may run it. */
static int check_config(void) {
        g_autoptr(ConfigFiles) files = NULL;
        g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *error = NULL;
        Config c = { 0 };
        bool missing = false;
        char generation[17];
        int r;

        r = config_files_read(arg_config, &files, &missing, &error);
        if (r >= 0)
                r = config_parse_texts(files->texts, files->n, &c, &error);
        if (r < 0) {
                fprintf(stderr, "nsd: %s\n", error ? error : g_strerror(-r));
                return EXIT_FAILURE;
        }
        if (arg_check_config == CHECK_ALL)
                setup_conf_check_files(&c.setup, problems, warnings);
        for (guint i = 0; i < problems->len; i++)
                fprintf(stderr, "nsd: %s\n", (const char *) g_ptr_array_index(problems, i));
        for (guint i = 0; i < warnings->len; i++) /* said, but the configuration is good */
                fprintf(stderr, "nsd: warning: %s\n",
                        (const char *) g_ptr_array_index(warnings, i));
        if (problems->len == 0) {
                size_t dropins = files->n - (missing ? 0 : 1);

                printf("%s%s: OK, with %zu drop-in%s: %zu polydir%s, %zu read-only bind%s, "
                       "%zu share%s, %zu volume%s, setup generation %s\n",
                       arg_config, missing ? " (missing: the defaults)" : "", dropins,
                       dropins == 1 ? "" : "s", c.setup.n_polydirs,
                       c.setup.n_polydirs == 1 ? "" : "s", c.setup.n_binds,
                       c.setup.n_binds == 1 ? "" : "s", c.setup.n_shares,
                       c.setup.n_shares == 1 ? "" : "s", c.setup.n_volumes,
                       c.setup.n_volumes == 1 ? "" : "s",
                       setup_conf_generation(&c.setup, c.propagation_private, generation,
                                             sizeof generation));
        }
        config_done(&c);
        if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "nsd: cannot write: %s\n", g_strerror(errno));
                return EXIT_FAILURE;
        }
        return problems->len == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* 0: go on; 1: exit 0 (help, version); -EINVAL: a bad argument (already said). */
static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_CONFIG = 0x100,
                ARG_SOCKET,
                ARG_ROOT_SOCKET,
                ARG_RUN_DIR,
                ARG_LOG_LEVEL,
                ARG_LOG_TARGET,
                ARG_CHECK_CONFIG,
        };
        static const struct option options[] = {
                { "config", required_argument, NULL, ARG_CONFIG },
                { "socket", required_argument, NULL, ARG_SOCKET },
                { "root-socket", required_argument, NULL, ARG_ROOT_SOCKET },
                { "run-dir", required_argument, NULL, ARG_RUN_DIR },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                { "log-target", required_argument, NULL, ARG_LOG_TARGET },
                { "check-config", optional_argument, NULL, ARG_CHECK_CONFIG },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {}
        };
        int c;

        opterr = 0; /* our own one-line messages */
        while ((c = getopt_long(argc, argv, ":hV", options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        help();
                        return 1;
                case 'V':
                        printf("nsd %s\n", PACKAGE_VERSION);
                        return 1;
                case ARG_CONFIG:
                        if (!*optarg)
                                goto empty;
                        arg_config = optarg;
                        break;
                case ARG_SOCKET:
                case ARG_ROOT_SOCKET:
                        if (!*optarg)
                                goto empty;
                        if (strlen(optarg) >= sizeof(((struct sockaddr_un *) NULL)->sun_path)) {
                                fprintf(stderr, "nsd: socket path '%s' is too long\n", optarg);
                                return -EINVAL;
                        }
                        if (c == ARG_SOCKET)
                                arg_socket = optarg;
                        else
                                arg_root_socket = optarg;
                        break;
                case ARG_RUN_DIR:
                        if (optarg[0] != '/') {
                                fprintf(stderr, "nsd: --run-dir needs an absolute path, not '%s'\n",
                                        optarg);
                                return -EINVAL;
                        }
                        arg_run_dir = optarg;
                        break;
                case ARG_LOG_LEVEL:
                        arg_log_level = parse_log_level(optarg);
                        if (arg_log_level < 0) {
                                fprintf(stderr,
                                        "nsd: unknown log level '%s' (emerg..debug or 0-7)\n",
                                        optarg);
                                return -EINVAL;
                        }
                        break;
                case ARG_LOG_TARGET:
                        if (strcmp(optarg, "auto") == 0)
                                arg_log_target = LOG_TARGET_AUTO;
                        else if (strcmp(optarg, "stderr") == 0)
                                arg_log_target = LOG_TARGET_STDERR;
                        else if (strcmp(optarg, "journal") == 0)
                                arg_log_target = LOG_TARGET_JOURNAL;
                        else {
                                fprintf(stderr,
                                        "nsd: unknown log target '%s' (auto, stderr or "
                                        "journal)\n",
                                        optarg);
                                return -EINVAL;
                        }
                        break;
                case ARG_CHECK_CONFIG:
                        if (!optarg || strcmp(optarg, "all") == 0)
                                arg_check_config = CHECK_ALL;
                        else if (strcmp(optarg, "syntax") == 0)
                                arg_check_config = CHECK_SYNTAX;
                        else {
                                fprintf(stderr,
                                        "nsd: --check-config=%s: expected 'syntax' or 'all'\n",
                                        optarg);
                                return -EINVAL;
                        }
                        break;
                case ':':
                        fprintf(stderr, "nsd: option '%s' needs an argument\n", argv[optind - 1]);
                        return -EINVAL;
                default:
                        fprintf(stderr, "nsd: unknown option '%s' (see nsd --help)\n",
                                argv[optind - 1]);
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "nsd: unexpected argument '%s' (see nsd --help)\n", argv[optind]);
                return -EINVAL;
        }
        if (arg_socket && arg_root_socket && strcmp(arg_socket, arg_root_socket) == 0) {
                fprintf(stderr, "nsd: --socket and --root-socket must differ (both are '%s')\n",
                        arg_socket);
                return -EINVAL;
        }
        return 0;
empty:
        fprintf(stderr, "nsd: option '%s' needs a non-empty argument\n", argv[optind - 1]);
        return -EINVAL;
}

/*
 * Keep only the capabilities nsd (and its helper children, helper.c and child.c, which
 * inherit them) use; the same set as nsd.service's CapabilityBoundingSet=:
 *   CAP_SYS_ADMIN    unshare(CLONE_NEWNS), setns() into mount namespaces, mount(2) and the
 *                    new mount API for pins, the pin namespace's tmpfs and PrivateTmp=
 *   CAP_SYS_CHROOT   setns(CLONE_NEWNS) requires it besides CAP_SYS_ADMIN
 *   CAP_SYS_PTRACE   follow /proc/PID/ns/mnt of every process (linger's scan, nsprocs.c:
 *                    ptrace access mode checks; without it linger keeps every namespace)
 *   CAP_DAC_OVERRIDE read and manage /run/nsd and /proc files whatever their modes
 *   CAP_FOWNER       chmod the socket and manage pin files not owned by root's fsuid
 *   CAP_SETUID       setfsuid() to a user in a helper child before mount_setattr(), since
 *                    the kernel makes the caller's fsuid the owner of an owner-private mount
 *                    (mode private, HIDE); nsd never changes its real or effective uid;
 *                    and, with CAP_SETGID, setgroups/setresgid/setresuid to a user in the
 *                    helper child that walks a user's HIDE path as that user
 *   CAP_SETGID       see CAP_SETUID; and setfsgid() to a client in peer.c's helper
 *   CAP_CHOWN        a new namespace's instance directories get their polydir's owner
 *                    (domain/setup.c); its init scripts run with this set too
 * Everything else (CAP_KILL, CAP_NET_*, CAP_SYS_MODULE, ...) goes, from the bounding set too,
 * so nothing nsd runs can get it back. CAP_SYS_PTRACE is for linger's scan only: the other
 * /proc/PID nsd opens (peer.c, a client's) it opens with that client's fsuid and fsgid, and
 * its helpers open what they need as /proc/self.
 */
static int drop_capabilities(void) {
        static const cap_value_t keep[] = {
                CAP_SYS_ADMIN, CAP_SYS_CHROOT, CAP_SYS_PTRACE, CAP_DAC_OVERRIDE,
                CAP_FOWNER,    CAP_SETUID,     CAP_SETGID,     CAP_CHOWN,
        };
        cap_t caps;
        int r = 0;

        for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++) {
                bool kept = false;
                for (size_t i = 0; i < G_N_ELEMENTS(keep); i++)
                        kept = kept || keep[i] == c;
                /* Under systemd's CapabilityBoundingSet= the rest is gone already, and
                 * dropping needs CAP_SETPCAP, which that set does not keep: skip what is out. */
                if (kept || prctl(PR_CAPBSET_READ, c, 0, 0, 0) <= 0)
                        continue;
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
                        return log_error_errno(errno,
                                               "Failed to drop capability %d from the "
                                               "bounding set: %m",
                                               (int) c);
        }
        caps = cap_init();
        if (!caps)
                return log_error_errno(errno, "Failed to allocate capabilities: %m");
        if (cap_set_flag(caps, CAP_PERMITTED, G_N_ELEMENTS(keep), keep, CAP_SET) < 0 ||
            cap_set_flag(caps, CAP_EFFECTIVE, G_N_ELEMENTS(keep), keep, CAP_SET) < 0 ||
            cap_set_proc(caps) < 0)
                r = log_error_errno(errno, "Failed to drop capabilities: %m");
        cap_free(caps);
        (void) prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        return r;
}

/* Every namespace costs two descriptors (nsfs + root), every session a pidfd: with the
 * default MaxNamespaces=10000 the usual soft limit of 1024 is far too low. Raise the soft
 * limit to the hard one (no privilege needed); MaxNamespaces is checked against it. */
static void raise_nofile_limit(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return (void) log_warning_errno(errno,
                                                "Failed to read RLIMIT_NOFILE, ignoring: %m");
        if (rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                return (void) log_warning_errno(errno,
                                                "Failed to raise RLIMIT_NOFILE to %llu, "
                                                "ignoring: %m",
                                                (unsigned long long) rl.rlim_max);
        log_debug("RLIMIT_NOFILE raised to %llu", (unsigned long long) rl.rlim_max);
}

/* Our own listening socket on path, mode 0666 (everyone's) or 0600 (root's). */
static int socket_create(const char *path, mode_t mode, int *ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct stat st;
        mode_t old_umask;
        int fd, r;

        g_strlcpy(sa.sun_path, path, sizeof sa.sun_path);
        {
                g_autofree char *dir = g_path_get_dirname(path);
                if (g_mkdir_with_parents(dir, 0755) < 0)
                        return log_error_errno(errno, "Failed to create '%s': %m", dir);
        }
        if (lstat(path, &st) == 0) {
                if (!S_ISSOCK(st.st_mode))
                        return log_error_errno(-EEXIST,
                                               "'%s' exists and is not a socket, "
                                               "refusing to replace it",
                                               path);
                fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (fd >= 0 && connect(fd, (struct sockaddr *) &sa, sizeof sa) == 0) {
                        close(fd);
                        return log_error_errno(-EADDRINUSE, "Another nsd already serves '%s'",
                                               path);
                }
                if (fd >= 0)
                        close(fd);
                if (unlink(path) < 0)
                        return log_error_errno(errno, "Failed to remove stale socket '%s': %m",
                                               path);
                log_debug("Removed stale socket '%s'", path);
        }

        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return log_error_errno(errno, "Failed to create a socket: %m");
        /* the file is made with the right mode: root's socket is never open, not even for
         * the moment between bind() and chmod() */
        old_umask = umask(0777 & ~mode);
        r = bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 ? -errno : 0;
        umask(old_umask);
        if (r < 0) {
                close(fd);
                return log_error_errno(r, "Failed to bind '%s': %m", path);
        }
        /* on the user socket every user may connect; nsd decides from SO_PEERCRED what each
         * may do */
        if (chmod(path, mode) < 0 || listen(fd, SOMAXCONN) < 0) {
                r = log_error_errno(errno, "Failed to set up socket '%s': %m", path);
                close(fd);
                return r;
        }
        log_info("Listening on '%s' (%s)", path, mode == 0600 ? "root only" : "everyone");
        *ret = fd;
        return 0;
}

/* The sockets the service manager passed (nsd.socket: FileDescriptorName=user,
 * nsd-root.socket: FileDescriptorName=root; a socket without one of these names counts as
 * the user socket), else our own. A socket not passed is created, so an nsd started by an
 * older nsd.socket alone still opens root's door. */
static int listen_sockets_open(const char *user_path, const char *root_path, FdStore *fdstore,
                               int *ret_user, int *ret_root) {
        char **names = NULL;
        int n, user_fd = -1, root_fd = -1, r;

        n = sd_listen_fds_with_names(1, &names);
        if (n < 0)
                return log_error_errno(n, "Failed to read the sockets passed by the service "
                                          "manager: %m");
        for (int i = 0; i < n; i++) {
                int fd = SD_LISTEN_FDS_START + i;
                const char *name = names && names[i] ? names[i] : "";
                bool root = strcmp(name, "root") == 0;

                if (fdstore_name_is_ours(name)) {
                        /* a namespace or a session leader kept in the fd store */
                        (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
                        fdstore_add_passed(fdstore, fd, name);
                        continue;
                }
                /* a socket's name: in LISTEN_FDNAMES at the next start too */
                fdstore_add_foreign(fdstore, name);
                if (sd_is_socket_unix(fd, SOCK_SEQPACKET, 1, NULL, 0) <= 0 ||
                    (root ? root_fd : user_fd) >= 0) {
                        log_warning("Ignoring descriptor %d ('%s') passed by the service "
                                    "manager: %s",
                                    fd, name,
                                    (root ? root_fd : user_fd) >= 0
                                            ? "a second socket of the same kind"
                                            : "not a listening SOCK_SEQPACKET Unix socket");
                        close(fd);
                        continue;
                }
                (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
                (void) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
                log_info("Serving %s on the socket passed by the service manager ('%s')",
                         root ? "root" : "everyone", name);
                if (root)
                        root_fd = fd;
                else
                        user_fd = fd;
        }
        g_strfreev(names);
        if (fdstore_n_passed(fdstore) > 0)
                log_info("The service manager's fd store passed %zu descriptors back",
                         fdstore_n_passed(fdstore));

        /* what the service manager did not pass (when it passed anything, say so) */
        const struct {
                int *fd;
                const char *path, *what;
                mode_t mode;
                int level;
        } sockets[] = {
                { &user_fd, user_path, "socket for everyone", 0666, LOG_WARNING },
                { &root_fd, root_path, "root socket (nsd-root.socket)", 0600, LOG_INFO },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(sockets); i++) {
                if (*sockets[i].fd >= 0)
                        continue;
                if (n > 0)
                        log_full_errno(sockets[i].level, 0,
                                       "The service manager passed no %s, creating '%s'",
                                       sockets[i].what, sockets[i].path);
                if ((r = socket_create(sockets[i].path, sockets[i].mode, sockets[i].fd)) < 0)
                        goto fail;
        }
        *ret_user = user_fd;
        *ret_root = root_fd;
        return 0;
fail:
        if (user_fd >= 0)
                close(user_fd);
        if (root_fd >= 0)
                close(root_fd);
        return r;
}

/* systemd >= 254 tells the service its FileDescriptorStoreMax= in $FDSTORE; older ones do not,
 * and nsd counts against NSD_FDSTORE_MAX, the number nsd.service was built with. */
static void fdstore_limit_from_env(FdStore *fdstore) {
        const char *e = getenv("FDSTORE");
        unsigned long long n;
        char *end = NULL;

        if (!e || !*e)
                return;
        errno = 0;
        n = strtoull(e, &end, 10);
        if (errno != 0 || *end || n == 0 || n > UINT_MAX) {
                log_warning("Ignoring $FDSTORE='%s' (not a positive number)", e);
                return;
        }
        fdstore_set_limits(fdstore, 0, 0, (unsigned) n);
        log_debug("The service manager's fd store keeps at most %llu descriptors ($FDSTORE)", n);
}

static gboolean on_quit(gpointer userdata) {
        GMainLoop *loop = userdata;

        log_info("Stopping; namespaces stay pinned");
        g_main_loop_quit(loop);
        return G_SOURCE_CONTINUE;
}

static gboolean on_reload(gpointer userdata) {
        Server *s = userdata;

        sd_notify(0, "RELOADING=1");
        (void) server_reload_config(s);
        sd_notify(0, "READY=1");
        server_notify_status_now(s);
        return G_SOURCE_CONTINUE;
}

static gboolean on_watchdog(gpointer userdata) {
        sd_notify(0, "WATCHDOG=1");
        return G_SOURCE_CONTINUE;
}

int main(int argc, char *argv[]) {
        g_autoptr(GMainLoop) loop = NULL;
        g_autofree char *socket_path = NULL, *root_socket_path = NULL;
        g_autofree char *error = NULL;
        Config config = { 0 };
        Server *server = NULL;
        uint64_t watchdog_usec = 0;
        bool missing = false;
        int r, user_fd = -1, root_fd = -1;
        FdStore *fdstore = NULL;

        r = parse_argv(argc, argv);
        if (r != 0)
                return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
        if (arg_check_config != CHECK_NONE)
                return check_config();

        log_setup(arg_log_target, arg_log_level);
        umask(0022);
        signal(SIGPIPE, SIG_IGN);

        if (geteuid() != 0) {
                log_error("nsd must run as root (it creates and pins mount namespaces)");
                return EXIT_FAILURE;
        }

        r = config_load(arg_config, &config, &missing, &error);
        if (r < 0) {
                log_error("Bad configuration, refusing to start: %s", error);
                return EXIT_FAILURE;
        }
        if (missing)
                log_info("No config at '%s', using defaults", arg_config);

        raise_nofile_limit();
        if (drop_capabilities() < 0)
                goto fail;

        if (mkdir(arg_run_dir, 0755) < 0 && errno != EEXIST) {
                log_error_errno(errno, "Failed to create '%s': %m", arg_run_dir);
                goto fail;
        }
        socket_path = arg_socket ? g_strdup(arg_socket)
                                 : g_build_filename(arg_run_dir, "socket", NULL);
        root_socket_path = arg_root_socket ? g_strdup(arg_root_socket)
                                           : g_build_filename(arg_run_dir, "root.socket", NULL);
        /* the fd store is used when a service manager listens */
        fdstore = fdstore_new(getenv("NOTIFY_SOCKET") != NULL);
        fdstore_limit_from_env(fdstore);
        if (listen_sockets_open(socket_path, root_socket_path, fdstore, &user_fd, &root_fd) < 0) {
                fdstore_free(fdstore);
                goto fail;
        }

        loop = g_main_loop_new(NULL, FALSE);
        r = server_new(&config,
                       &(ServerSetup) {
                               .config_path = arg_config,
                               .run_dir = arg_run_dir,
                               .probe_kernel = true,
                               .user_fd = user_fd,
                               .root_fd = root_fd,
                               .fdstore = fdstore, /* taken */
                               .subuid_path = "/etc/subuid",
                               .subgid_path = "/etc/subgid",
                       },
                       &server);
        if (r < 0) {
                log_error_errno(r, "Failed to start serving: %m");
                close(user_fd);
                close(root_fd);
                goto fail;
        }

        g_unix_signal_add(SIGTERM, on_quit, loop);
        g_unix_signal_add(SIGINT, on_quit, loop);
        g_unix_signal_add(SIGHUP, on_reload, server);
        /* above every client's priority, root's included: the watchdog never waits */
        if (sd_watchdog_enabled(0, &watchdog_usec) > 0 && watchdog_usec > 0)
                g_timeout_add_full(G_PRIORITY_HIGH - 100, MAX(watchdog_usec / 2000, 1), on_watchdog,
                                   NULL, NULL);

        sd_notify(0, "READY=1");
        server_notify_status_now(server);
        log_info("nsd %s serving (pid %d)", PACKAGE_VERSION, (int) getpid());

        g_main_loop_run(loop);

        sd_notify(0, "STOPPING=1");
        server_free(server);
        return EXIT_SUCCESS;

fail:
        config_done(&config);
        return EXIT_FAILURE;
}
