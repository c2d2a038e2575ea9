/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * exposition.c: nsctl metrics' text, see exposition.h. Every family's labels come from the
 * fixed tables below, never from what nsd counted: the number of series is the same for 1
 * user or 10000.
 */
#include "exposition.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "output.h"

/* a label of a family: its value and the slot of nsd's array it counts */
struct label {
        const char *value;
        unsigned slot;
};

static const struct label join_results[] = {
        { "ok", NSC_METRICS_JOIN_OK },
        { "refused", NSC_METRICS_JOIN_REFUSED },
        { "not_managed", NSC_METRICS_JOIN_NOT_MANAGED },
        { "not_yet", NSC_METRICS_JOIN_NOT_YET },
        { "timeout", NSC_METRICS_JOIN_TIMEOUT },
        { "error", NSC_METRICS_JOIN_ERROR },
};

static const struct label release_reasons[] = {
        { "asked", NSC_METRICS_RELEASE_ASKED },
        { "forced", NSC_METRICS_RELEASE_FORCED },
        { "linger", NSC_METRICS_RELEASE_LINGER },
};

static const struct label lookup_results[] = {
        { "ok", NSC_METRICS_LOOKUP_OK },
        { "not_found", NSC_METRICS_LOOKUP_NOT_FOUND },
        { "timeout", NSC_METRICS_LOOKUP_TIMEOUT },
        { "error", NSC_METRICS_LOOKUP_ERROR },
};

static const struct label lookup_timeout_decisions[] = {
        { "refused", NSC_METRICS_LOOKUP_TIMEOUT_REFUSED },
        { "unmanaged", NSC_METRICS_LOOKUP_TIMEOUT_UNMANAGED },
};

static const struct label throttle_reasons[] = {
        { "rate_limit", NSC_METRICS_THROTTLE_RATE },
        { "connection_limit", NSC_METRICS_THROTTLE_CONNECTIONS },
        { "lookup_queue", NSC_METRICS_THROTTLE_LOOKUP_QUEUE },
};

static const struct label sockets[] = {
        { "user", NSC_METRICS_SOCKET_USER },
        { "root", NSC_METRICS_SOCKET_ROOT },
};

/* the kernel features of STATUS, as nsctl status names them (with _ for -) */
static const struct {
        uint32_t flag;
        const char *value;
} features[] = {
        { NSC_FEATURE_SETNS_DIRFD, "setns_dirfd" },
        { NSC_FEATURE_PROC_MOUNTS_ROOT, "proc_mounts_root" },
        { NSC_FEATURE_FSPICK_CHECK, "fspick_check" },
        { NSC_FEATURE_OWNER_PRIVATE, "owner_private" },
        { NSC_FEATURE_OWNER_PRIVATE_NEW, "born_private" },
        { NSC_FEATURE_PIN_NAMESPACE, "pin_namespace" },
};

/* The HELP and TYPE lines (and UNIT, when unit is not NULL) of a family. The name is the
 * samples' (nsd_joins_total), as the Prometheus text format wants it. */
static void family(FILE *f, const char *name, const char *type, const char *unit,
                   const char *help) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
        if (unit)
                fprintf(f, "# UNIT %s %s\n", name, unit);
}

static void labelled(FILE *f, const char *name, const char *label, const struct label *labels,
                     size_t n, const uint64_t *values) {
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%s{%s=\"%s\"} %" PRIu64 "\n", name, label, labels[i].value,
                        values[labels[i].slot]);
}

/* usec as seconds, exactly (no floating point): 250 -> 0.00025, 1000000 -> 1.0 */
static void seconds(FILE *f, uint64_t usec) {
        char frac[8];
        size_t len;

        snprintf(frac, sizeof(frac), "%06" PRIu64, usec % 1000000u);
        len = strlen(frac);
        while (len > 1 && frac[len - 1] == '0')
                len--;
        fprintf(f, "%" PRIu64 ".%.*s", usec / 1000000u, (int) len, frac);
}

/* a label value: \\, \" and \n escaped; anything but printable ASCII as '?' */
static void label_value(FILE *f, const char *s, size_t size) {
        for (size_t i = 0; i < size && s[i]; i++) {
                unsigned char c = (unsigned char) s[i];

                if (c == '\\' || c == '"')
                        fprintf(f, "\\%c", c);
                else if (c == '\n')
                        fputs("\\n", f);
                else
                        fputc(c >= 0x20 && c < 0x7f ? c : '?', f);
        }
}

int exposition_write(FILE *f, const struct nsc_status *st, const struct nsc_metrics *m) {
        static const uint64_t bounds[] = NSC_METRICS_LATENCY_BOUNDS_USEC;
        uint64_t conns[NSC_METRICS_SOCKETS], cumulative = 0;

        /* gauges */
        family(f, "nsd_namespaces", "gauge", NULL,
               "Per-user mount namespaces nsd keeps, by state: pinned (survives a restart of "
               "nsd) or fd_only (kept by a descriptor).");
        fprintf(f, "nsd_namespaces{state=\"pinned\"} %" PRIu32 "\n", m->pinned);
        fprintf(f, "nsd_namespaces{state=\"fd_only\"} %" PRIu32 "\n",
                m->namespaces > m->pinned ? m->namespaces - m->pinned : 0);
        family(f, "nsd_sessions", "gauge", NULL, "Live sessions (logins) in all namespaces.");
        fprintf(f, "nsd_sessions %" PRIu32 "\n", m->sessions);
        family(f, "nsd_connections", "gauge", NULL, "Open client connections, by socket.");
        for (size_t i = 0; i < NSC_METRICS_SOCKETS; i++)
                conns[i] = m->connections[i];
        labelled(f, "nsd_connections", "socket", sockets, ELEMENTSOF(sockets), conns);
        family(f, "nsd_fdstore_entries", "gauge", NULL,
               "Descriptors nsd keeps in systemd's fd store.");
        fprintf(f, "nsd_fdstore_entries %" PRIu32 "\n", m->fdstore_entries);

        /* counters */
        family(f, "nsd_joins_total", "counter", NULL,
               "JOIN and JOIN_SESSION requests answered, by result.");
        labelled(f, "nsd_joins_total", "result", join_results, ELEMENTSOF(join_results), m->joins);
        family(f, "nsd_join_duration_seconds", "histogram", "seconds",
               "Time from reading a JOIN or JOIN_SESSION request to its answer.");
        for (size_t i = 0; i < NSC_METRICS_LATENCY_BUCKETS; i++) {
                cumulative += m->join_latency[i];
                fputs("nsd_join_duration_seconds_bucket{le=\"", f);
                if (i < ELEMENTSOF(bounds))
                        seconds(f, bounds[i]);
                else
                        fputs("+Inf", f);
                fprintf(f, "\"} %" PRIu64 "\n", cumulative);
        }
        fputs("nsd_join_duration_seconds_sum ", f);
        seconds(f, m->join_latency_sum_usec);
        fprintf(f, "\nnsd_join_duration_seconds_count %" PRIu64 "\n", cumulative);
        family(f, "nsd_namespaces_created_total", "counter", NULL,
               "Namespaces nsd made and set up.");
        fprintf(f, "nsd_namespaces_created_total %" PRIu64 "\n", m->created);
        family(f, "nsd_setup_failures_total", "counter", NULL,
               "Namespaces refused because their setup failed.");
        fprintf(f, "nsd_setup_failures_total %" PRIu64 "\n", m->setup_failures);
        family(f, "nsd_releases_total", "counter", NULL,
               "Namespaces released, by reason: asked (nsctl release), forced (with live "
               "sessions), linger (the linger time was over).");
        labelled(f, "nsd_releases_total", "reason", release_reasons, ELEMENTSOF(release_reasons),
                 m->releases);
        family(f, "nsd_lookups_total", "counter", NULL,
               "Answers of the user database (NSS) to nsd's lookups, by result; timeout counts "
               "the requests that stopped waiting.");
        labelled(f, "nsd_lookups_total", "result", lookup_results, ELEMENTSOF(lookup_results),
                 m->lookups);
        family(f, "nsd_lookup_timeouts_total", "counter", NULL,
               "Lookups of whether nsd manages a uid that stopped waiting (LookupTimeoutSec=), by "
               "what OnLookupTimeout= made of them: refused, or unmanaged (the login went on "
               "without nsd).");
        labelled(f, "nsd_lookup_timeouts_total", "decision", lookup_timeout_decisions,
                 ELEMENTSOF(lookup_timeout_decisions), m->lookup_timeouts);
        family(f, "nsd_path_walk_timeouts_total", "counter", NULL,
               "Path walks through users' mounts stopped at PathWalkTimeoutSec=.");
        fprintf(f, "nsd_path_walk_timeouts_total %" PRIu64 "\n", m->path_walk_timeouts);
        family(f, "nsd_throttled_total", "counter", NULL,
               "Requests slowed down and connections refused by a limit, by reason.");
        labelled(f, "nsd_throttled_total", "reason", throttle_reasons, ELEMENTSOF(throttle_reasons),
                 m->throttled);

        /* what STATUS says */
        family(f, "nsd_kernel_feature", "gauge", NULL,
               "Kernel features nsd found at its start (1) or not (0).");
        for (size_t i = 0; i < ELEMENTSOF(features); i++)
                fprintf(f, "nsd_kernel_feature{feature=\"%s\"} %d\n", features[i].value,
                        st->features & features[i].flag ? 1 : 0);
        family(f, "nsd_start_time_seconds", "gauge", "seconds",
               "When this nsd process started, in seconds since the epoch; the counters count "
               "from then.");
        fputs("nsd_start_time_seconds ", f);
        seconds(f, st->started_usec);
        fputc('\n', f);
        family(f, "nsd_build_info", "gauge", NULL, "nsd's version, as the value of a label.");
        fputs("nsd_build_info{version=\"", f);
        label_value(f, st->version, sizeof(st->version));
        fputs("\"} 1\n# EOF\n", f);

        if (fflush(f) != 0 || ferror(f))
                return errno > 0 ? -errno : -EIO;
        return 0;
}

int exposition_write_textfile(const char *dir, const char *text, size_t len) {
        _cleanup_free_ char *tmp = NULL, *path = NULL;
        _cleanup_close_ int fd = -1, dfd = -1;
        int r;

        if (asprintf(&tmp, "%s/.%s.XXXXXX", dir, EXPOSITION_TEXTFILE_NAME) < 0) {
                tmp = NULL;
                return -ENOMEM;
        }
        if (asprintf(&path, "%s/%s", dir, EXPOSITION_TEXTFILE_NAME) < 0) {
                path = NULL;
                return -ENOMEM;
        }
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return NEG_ERRNO();
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return NEG_ERRNO();
        /* the collector runs as another user: readable to all, as a text file of metrics is */
        if (fchmod(fd, 0644) < 0)
                goto fail;
        for (size_t off = 0; off < len;) {
                ssize_t n = write(fd, text + off, len - off);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        if (n == 0)
                                errno = EIO;
                        goto fail;
                }
                off += (size_t) n;
        }
        if (fsync(fd) < 0 || rename(tmp, path) < 0)
                goto fail;
        (void) fsync(dfd); /* the rename itself, durable; nothing to undo if it fails */
        return 0;

fail:
        r = NEG_ERRNO();
        (void) unlink(tmp);
        return r;
}
