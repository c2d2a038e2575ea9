# tests/vm/lib/nsd.sh: nsd fixtures for VM scenarios. Source after lib/vm.sh, inside the VM.
#   . tests/vm/lib/vm.sh; . tests/vm/lib/nsd.sh "$1"    ($1: the meson build dir, default build)
#   . tests/vm/lib/nsd.sh --installed                   (nsd as the .debs install it: lib/deb.sh)
# shellcheck shell=bash

if [ "${1:-}" = --installed ]; then
        NSD_BUILD=
        NSD_BIN=/usr/sbin/nsd
        NSCTL=/usr/bin/nsctl
        PAM_NSJOIN=pam_nsjoin.so
else
        NSD_BUILD=$(cd "${1:-build}" && pwd) || fail "build dir '${1:-build}' not found"
        NSD_BIN=$NSD_BUILD/nsd/nsd
        NSCTL=$NSD_BUILD/nsctl/nsctl
        PAM_NSJOIN=$NSD_BUILD/pam_nsjoin/pam_nsjoin.so
        for f in "$NSD_BIN" "$NSCTL" "$PAM_NSJOIN"; do
                [ -e "$f" ] || fail "$f is not built (ninja -C $NSD_BUILD)"
        done
fi
NSD_SOCKET=/run/nsd/socket
NSD_PID=
NSD_TMP=$(vm_tmpdir)
NSD_LOG=$NSD_TMP/nsd.log
SYSLOG=$NSD_TMP/syslog

# Like systemd on a real host: the initial namespace's mounts are shared, so the per-user
# namespaces (slaves) receive new host mounts.
mount --make-rshared /

# A syslog sink, so pam_syslog lines can be asserted (no syslogd runs in the VM otherwise).
syslog_start() {
        busybox syslogd -n -O "$SYSLOG" -S &
        for _ in $(seq 50); do [ -S /dev/log ] && return 0; sleep 0.1; done
        fail "syslogd did not create /dev/log"
}

# nsd_install_units: what the package installs for systemd, from this tree: nsd.service
# (ExecStart= the build's nsd), nsd.socket and nsd-root.socket (nsd.service requires both), the
# tmpfiles.d entry (and /run/nsd made from it), the journal's message catalog (in the local
# catalog folder, indexed as Debian's trigger does: journalctl -x explains nsd's events); then
# daemon-reload. Starts nothing.
nsd_install_units() {
        local units=/etc/systemd/system catalogs=/usr/local/lib/systemd/catalog
        sed "s|^ExecStart=.*|ExecStart=$NSD_BIN|" "$NSD_BUILD/systemd/nsd.service" > "$units/nsd.service"
        cp systemd/nsd.socket systemd/nsd-root.socket "$units/"
        cp systemd/tmpfiles-nsd.conf /etc/tmpfiles.d/nsd.conf
        systemd-tmpfiles --create /etc/tmpfiles.d/nsd.conf
        mkdir -p "$catalogs"
        cp systemd/nsd.catalog "$catalogs/"
        journalctl --update-catalog || fail "journalctl --update-catalog failed"
        systemctl daemon-reload
}

# nsd_install_user_units: the user units of FUSE volumes (nsd-volumes.service, enabled for
# every user as the package does, and nsd-volume@.service), ExecStart= the build's nsctl.
nsd_install_user_units() {
        local u
        for u in nsd-volumes.service nsd-volume@.service; do
                sed "s|^ExecStart=[^ ]*nsctl |ExecStart=$NSCTL |" "$NSD_BUILD/systemd/$u" > "/etc/systemd/user/$u"
        done
        systemctl --global enable nsd-volumes.service || fail "systemctl --global enable nsd-volumes.service"
}

# nsd_units_start [CONF-LINE...]: nsd from the built units (nsd_install_units), its sockets
# started (nsd itself starts at the first request); with CONF-LINEs, /etc/nsd/nsd.conf is
# those lines first. Skips the scenario without systemd as PID 1 (vm_needs_systemd).
nsd_units_start() {
        vm_needs_systemd
        if [ $# -gt 0 ]; then
                mkdir -p /etc/nsd
                printf '%s\n' "$@" > /etc/nsd/nsd.conf
        fi
        nsd_install_units
        systemctl start nsd.socket nsd-root.socket
}

# nsd.service under systemd: its main pid (0 when it does not run); active again under another
# main pid than OLDPID (after a restart, a SIGKILL, the watchdog); its journal (-o cat, ARGS
# passed on, written out first); the end of it on stderr, when something failed.
nsd_main_pid() { systemctl show -p MainPID --value nsd.service; }
nsd_restarted() { # nsd_restarted OLDPID
        [ "$(systemctl is-active nsd.service)" = active ] && [ "$(nsd_main_pid)" != 0 ] &&
                [ "$(nsd_main_pid)" != "$1" ]
}
nsd_journal() {
        journalctl --sync
        journalctl -u nsd.service --no-pager -o cat "$@"
}
nsd_journal_dump() { journalctl -u nsd.service --no-pager -n 80 >&2 || true; }

# nsd_watchdog_restart: WatchdogSec=3s for nsd.service (a drop-in), nsd restarted with it,
# then stopped with SIGSTOP: systemd's watchdog aborts it and starts it again. Returns once nsd
# runs again under a new pid and the journal says why.
nsd_watchdog_restart() {
        local d=/etc/systemd/system/nsd.service.d pid
        mkdir -p "$d"
        printf '[Service]\nWatchdogSec=3s\nTimeoutAbortSec=5s\n' > "$d/watchdog.conf"
        systemctl daemon-reload
        systemctl restart nsd.service
        vm_wait_for 30 nsd_restarted 0
        assert_eq 3000000 "$(systemctl show -p WatchdogUSec --value nsd.service | sed 's/^3s$/3000000/')" \
                "nsd.service's WatchdogUSec"
        pid=$(nsd_main_pid)
        kill -STOP "$pid"
        vm_wait_for 40 nsd_restarted "$pid"
        assert_contains "$(nsd_journal)" "Failed with result 'watchdog'" "systemd's watchdog message"
}

# nsd_enable_profile: pam_nsjoin in every login the Debian way, `pam-auth-update --enable
# nsjoin` (libpam-nsjoin's profile; from a build, the profile of this tree pointing at the
# built module): common-session and common-session-noninteractive get the line (required,
# except for a module that cannot be loaded).
nsd_enable_profile() {
        local line='^session[[:space:]]+\[success=ok new_authtok_reqd=ok ignore=ignore module_unknown=ignore default=bad\][[:space:]]+[^[:space:]]*pam_nsjoin\.so'
        if [ -n "$NSD_BUILD" ]; then
                sed "s|pam_nsjoin.so|$PAM_NSJOIN|" debian/pam-configs/nsjoin > /usr/share/pam-configs/nsjoin
        fi
        pam-auth-update --enable nsjoin < /dev/null || fail "pam-auth-update --enable nsjoin failed"
        grep -Eq "$line" /etc/pam.d/common-session ||
                fail "common-session has no pam_nsjoin line: $(cat /etc/pam.d/common-session)"
        grep -Eq "$line" /etc/pam.d/common-session-noninteractive ||
                fail "common-session-noninteractive has no pam_nsjoin line"
}

# nsd_enable_password_profile: pam_nsjoin's auth line the Debian way, `pam-auth-update
# --enable nsjoin-password` (from a build, this tree's profile pointing at the built module):
# common-auth gets `auth optional pam_nsjoin.so` after pam_unix.
nsd_enable_password_profile() {
        if [ -n "$NSD_BUILD" ]; then
                sed "s|pam_nsjoin.so|$PAM_NSJOIN|" debian/pam-configs/nsjoin-password > /usr/share/pam-configs/nsjoin-password
        fi
        pam-auth-update --enable nsjoin-password < /dev/null || fail "pam-auth-update --enable nsjoin-password failed"
        awk '/^auth/ && /pam_unix\.so/ { u = NR } /^auth[[:space:]]+optional[[:space:]]+[^[:space:]]*pam_nsjoin\.so/ { n = NR }
             END { exit !(u && n > u) }' /etc/pam.d/common-auth ||
                fail "common-auth has no pam_nsjoin line after pam_unix: $(cat /etc/pam.d/common-auth)"
}

# nsd_assert_kept USER NS WHAT: nsd lists USER's namespace NS, and USER's next ssh login is in
# it and reads the FUSE mount of fuse_mount_as.
nsd_assert_kept() {
        local user=$1 ns=$2 what=$3 out
        out=$("$NSCTL" list --raw --noheadings -o USER,NS) || { nsd_journal_dump; fail "$what: nsctl list"; }
        assert_contains "$out" "$user $ns" "$what: nsctl list"
        out=$(vm_ssh "$user" 'stat -L -c %i /proc/self/ns/mnt; cat ~/mnt/file') ||
                { nsd_journal_dump; fail "$what: $user cannot log in: $out"; }
        assert_eq "$ns
secret of $user" "$out" "$what: $user's next login"
}

nsd_start() {
        "$NSD_BIN" --log-target stderr --log-level debug "$@" >>"$NSD_LOG" 2>&1 &
        NSD_PID=$!
        for _ in $(seq 200); do
                [ -S "$NSD_SOCKET" ] && "$NSCTL" status >/dev/null 2>&1 && return 0
                kill -0 "$NSD_PID" 2>/dev/null || { cat "$NSD_LOG"; fail "nsd exited at start"; }
                sleep 0.1
        done
        cat "$NSD_LOG"
        fail "nsd did not answer on $NSD_SOCKET within 20 s"
}

# nsd_start_with_conf [ARGS...] <<CONF: nsd.conf from stdin (into $NSD_TMP/nsd.conf), then
# nsd_start --config it, ARGS after.
nsd_start_with_conf() {
        cat >"$NSD_TMP/nsd.conf"
        nsd_start --config "$NSD_TMP/nsd.conf" "$@"
}

# nsd_start_with_limits SETTING...: as nsd_start_with_conf, nsd.conf a [Limits] section of the
# SETTINGs (KEY=VALUE each, one a line).
nsd_start_with_limits() {
        printf '%s\n' '[Limits]' "$@" >"$NSD_TMP/nsd.conf"
        nsd_start --config "$NSD_TMP/nsd.conf"
}

nsd_stop() {
        [ -n "$NSD_PID" ] || return 0
        kill -TERM "$NSD_PID" 2>/dev/null
        wait "$NSD_PID" 2>/dev/null || true
        NSD_PID=
}

nsd_kill9() {
        kill -KILL "$NSD_PID"
        wait "$NSD_PID" 2>/dev/null || true
        NSD_PID=
}

nsd_log() { cat "$NSD_LOG"; }

# The session line for PAM stacks: nsd_pam_line [required|optional] [ARGS...]
nsd_pam_line() {
        local control=$1
        shift
        echo "session $control $PAM_NSJOIN $*"
}

# nsd_setup_debian_pam [ARGS...]: pam_nsjoin (with ARGS) at the end of Debian's common-session
# and common-session-noninteractive, with the control value of its pam-auth-update profile,
# in place of the line there was (sudo, su, su -l and sshd --debian-pam include them).
nsd_setup_debian_pam() {
        local f
        for f in /etc/pam.d/common-session /etc/pam.d/common-session-noninteractive; do
                sed -i '/pam_nsjoin/d' "$f"
                echo "session [success=ok new_authtok_reqd=ok ignore=ignore module_unknown=ignore default=bad] $PAM_NSJOIN $*" >> "$f"
        done
}

# su -l with our module: /etc/pam.d/su-l of the VM (a writable overlay of the host's /etc).
nsd_setup_su_pam() {
        cat >/etc/pam.d/su-l <<PAM
auth       sufficient pam_rootok.so
auth       required   pam_unix.so
account    required   pam_unix.so
session    required   pam_unix.so
$*
PAM
}

# A user whose home others may look into (so "bob sees an empty directory" is a real test).
nsd_user() {
        vm_create_user "$@"
        chmod 0755 "/home/$1"
}

# Mount a FUSE filesystem as USER in a fresh ssh session: bindfs of ~/src onto ~/mnt.
fuse_mount_as() {
        local user=$1
        vm_ssh "$user" 'mkdir -p ~/src ~/mnt && echo "secret of $(id -un)" > ~/src/file &&
                bindfs --no-allow-other ~/src ~/mnt && cat ~/mnt/file'
}

mnt_ns_of() { stat -L -c %i "/proc/$1/ns/mnt"; }

# nsd_has_feature NAME: does the running kernel have it, as nsd probed it (nsctl status)?
# NAME as in `nsctl status`: setns-dirfd, proc-mounts-root, fspick-check, owner-private.
nsd_has_feature() {
        "$NSCTL" status --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
f = d.get("features") or d.get("status", {}).get("features")
sys.exit(0 if f[sys.argv[1]] else 1)' "$1"
}

# The NS column of `nsctl list` for USER: the inode of that user's namespace; the SESSIONS
# column: how many sessions nsd counts for USER.
nsd_ns_inode() {
        "$NSCTL" list --raw --noheadings -o USER,NS | awk -v u="$1" '$1 == u { print $2 }'
}
nsd_sessions_of() {
        "$NSCTL" list --raw --noheadings -o USER,SESSIONS | awk -v u="$1" '$1 == u { print $2 }'
}

# nsd_assert_ns_of USER NS: NS (the inode a login of USER found itself in) is USER's namespace
# in nsctl list, and not the initial one.
nsd_assert_ns_of() {
        assert_eq "$2" "$(nsd_ns_inode "$1")" "$1's namespace in nsctl list"
        assert_ne "$(vm_ns_of 1)" "$2" "$1's namespace"
}

# nsd_symlink_refused USER UID PATH REASON PAM-MESSAGE...: the attack of a path swapped for a
# symbolic link. USER (no namespace yet) makes PATH a symbolic link to /etc; her ssh login must
# be refused with REASON in nsd's setup-failed event and each PAM-MESSAGE in sshd's log, and
# nothing may be left of the refused setup: no namespace pinned, /etc (names, modes, owners,
# inodes) unchanged, nothing mounted on it. The link stays; the caller puts PATH back.
nsd_symlink_refused() {
        local user=$1 uid=$2 path=$3 reason=$4 etc_before out m
        shift 4
        vm_run_as "$user" ln -s /etc "$path"
        etc_before=$(find /etc -xdev -printf '%M %U %G %i %p\n' | sort | sha256sum)
        assert_eq "" "$(nsd_ns_inode "$user")" "$user's namespace before her first login"
        if out=$(vm_ssh "$user" 'echo logged in' 2>&1); then
                fail "$user's login with $path a symbolic link to /etc was not refused: $out"
        fi
        out=$(nsd_journal NSD_EVENT=setup-failed USER_ID="$uid")
        assert_contains "$out" "$reason" "nsd's setup-failed event"
        journalctl --sync
        out=$(journalctl --no-pager -o cat -g "cannot join the mount namespace of user .$user.")
        for m in "$@"; do
                assert_contains "$out" "$m" "pam_nsjoin's message in sshd's login"
        done
        assert_eq "" "$(nsd_ns_inode "$user")" "$user's namespace after the refusal (nothing pinned)"
        assert_eq "$etc_before" "$(find /etc -xdev -printf '%M %U %G %i %p\n' | sort | sha256sum)" \
                "/etc (names, modes, owners, inodes) after the refused setup"
        assert_eq "" "$(findmnt -n /etc || true)" "mounts on /etc"
}

# --- for the availability scenarios (nsd-flood, nsd-slow-nss, nsd-fuse-hang, ...) ----------
NSD_ROOT_SOCKET=/run/nsd/root.socket
# tests/vm/helpers/nsd-rawclient.py (requests made by hand) on nsd's socket and on root's, as a
# command line with the subcommand after it: $NSD_RAW join 1001 (the scenarios' alone)
# shellcheck disable=SC2034
NSD_RAW="python3 tests/vm/helpers/nsd-rawclient.py --socket $NSD_SOCKET"
# shellcheck disable=SC2034
NSD_ROOT_RAW="python3 tests/vm/helpers/nsd-rawclient.py --socket $NSD_ROOT_SOCKET"

# nsd_helper NAME: the path of a test helper built in tests/vm/helpers (nsd-flood, fuse-hang, ...).
nsd_helper() {
        [ -e "$NSD_BUILD/tests/vm/helpers/$1" ] || fail "$NSD_BUILD/tests/vm/helpers/$1 is not built"
        echo "$NSD_BUILD/tests/vm/helpers/$1"
}

# nsd_wait_log SECONDS PATTERN: until nsd's log has a line matching PATTERN (grep -E); the
# deadline is wall-clock time, however long each look at a big log takes.
nsd_wait_log() {
        local end=$((SECONDS + $1))
        while [ "$SECONDS" -le "$end" ]; do
                grep -qE "$2" "$NSD_LOG" && return 0
                sleep 0.2
        done
        nsd_log | grep -v '^<7>' | tail -n 40
        fail "nsd's log has no line matching '$2' after $1 s"
}

# nsd_alive: fail unless nsd still runs and answers root on its own socket.
nsd_alive() {
        kill -0 "$NSD_PID" 2>/dev/null || { nsd_log | tail -n 40; fail "nsd died"; }
        "$NSCTL" --socket "$NSD_ROOT_SOCKET" status >/dev/null ||
                fail "nsd does not answer root's STATUS on $NSD_ROOT_SOCKET"
}

# nsd_status_field NAME: a number of root's `nsctl status --json` (connections, sessions, ...).
nsd_status_field() {
        "$NSCTL" --socket "$NSD_ROOT_SOCKET" status --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
def find(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == sys.argv[1] and not isinstance(v, (dict, list)):
                return v
            r = find(v)
            if r is not None:
                return r
    return None
print(find(d))' "$1"
}

# nsd_fail MSG...: fail, after showing the end of nsd's log (debug lines about connections
# left out), or of its journal when it runs from the units (no log file then).
nsd_fail() {
        if [ -e "$NSD_LOG" ]; then
                nsd_log | grep -vE '^<7>(Connection of uid|STATUS from)' | tail -n 40 >&2
        else
                nsd_journal_dump
        fi
        fail "$@"
}

# nsd_wait_for SECONDS CMD...: vm_wait_for, showing nsd's log when it times out.
nsd_wait_for() {
        vm_poll "$@" || nsd_fail "timed out after $1 s waiting for: ${*:2}"
}
