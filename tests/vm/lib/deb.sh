# tests/vm/lib/deb.sh: the Debian packages in a VM booted with systemd as PID 1. Source after
# lib/vm.sh. The .debs come from tools/test's .deb step (build/debs, build/debs-v2,
# build/debs-0.1.0); a scenario skips when they are missing.
# shellcheck shell=bash

vm_needs_systemd
# nsd's helpers on the installed files (nsctl, pam_nsjoin.so by name)
. "$VM_LIB_DIR/nsd.sh" --installed
# metrics text as Prometheus reads it (deb_metrics_timer)
. "$VM_LIB_DIR/metrics.sh"
export DEBIAN_FRONTEND=noninteractive
# man-db's trigger rebuilds the whole man index: minutes under TCG over 9p. Not what we test.
rm -f /var/lib/man-db/auto-update
# Under a custom boot target /run/nologin stays until this runs (VM-NOTES.md).
systemctl start systemd-user-sessions.service

DEB_PACKAGES=(nsjoin libnsclient1 libnsclient-dev libpam-nsjoin)

# deb_native BUILD-DIR: the packages built for the VM's own root: BUILD-DIR/debs on Debian 12
# (this machine's root), BUILD-DIR/debs-trixie on the Debian 13 root (tests/vm/run --root
# trixie; tools/build-debs --trixie, as tools/test builds them)
deb_native() {
        case ${NSD_VM_ROOT:-host} in
                trixie) echo "$1/debs-trixie" ;;
                *) echo "$1/debs" ;;
        esac
}

# deb_files DIR [PACKAGE...]: print the .deb of each PACKAGE (default DEB_PACKAGES) in DIR,
# one a line; skips the scenario when one is missing.
deb_files() {
        local dir=$1 p f
        shift
        [ $# -gt 0 ] || set -- "${DEB_PACKAGES[@]}"
        for p in "$@"; do
                f=$(ls "$dir/${p}"_*.deb 2> /dev/null | head -1)
                [ -n "$f" ] || skip "no ${p}_*.deb in '$dir' (tools/test's .deb step builds them)"
                echo "$f"
        done
}

# deb_install DIR [PACKAGE...]: dpkg -i those packages from DIR; their output goes to the
# scenario's log (and $VM_TMPDIR/dpkg.log); fails when dpkg does. DEB_DPKG_OPTS: more dpkg
# options (--force-confold: what apt -o Dpkg::Options::=--force-confold passes, the answer of
# a non-interactive upgrade to a conffile both the administrator and the package changed).
deb_install() {
        local debs
        mapfile -t debs < <(deb_files "$@")
        say "dpkg ${DEB_DPKG_OPTS:-}${DEB_DPKG_OPTS:+ }-i ${debs[*]##*/}"
        # shellcheck disable=SC2086 # DEB_DPKG_OPTS: words
        dpkg ${DEB_DPKG_OPTS:-} -i "${debs[@]}" < /dev/null 2>&1 | tee -a "$VM_TMPDIR/dpkg.log" ||
                fail "dpkg -i ${debs[*]##*/} failed"
        [ "${PIPESTATUS[0]}" -eq 0 ] || fail "dpkg -i ${debs[*]##*/} failed"
}

# deb_version PACKAGE: the installed version ('' when not installed).
deb_version() {
        dpkg-query -W -f='${db:Status-Abbrev} ${Version}' "$1" 2> /dev/null | awk '$1 == "ii" { print $2 }'
}

# ---- an upgrade while a user has a session open and a FUSE mount ----------------------------
# deb_probe USER: a new ssh login of USER prints its mount namespace's inode and ~/mnt/file
# (its FUSE mount's file; '-' when there is none)
deb_probe() {
        vm_ssh "$1" 'echo "$(stat -L -c %i /proc/self/ns/mnt) $(cat ~/mnt/file 2>/dev/null || echo -)"'
}

# deb_upgrade_begin USER WANT: before an upgrade: an ssh session of USER, kept open across it,
# prints its mount namespace's inode and ~/mnt/file now (the line must be WANT) and again at
# deb_upgrade_end; nsd's pid, the socket file's inode and nsd.socket's start time are noted.
deb_upgrade_begin() {
        local user=$1 want=$2
        mkfifo "$VM_TMPDIR/session.in"
        vm_ssh "$user" 'echo "$(stat -L -c %i /proc/self/ns/mnt) $(cat ~/mnt/file)"; read -r _; echo "$(stat -L -c %i /proc/self/ns/mnt) $(cat ~/mnt/file)"' \
                < "$VM_TMPDIR/session.in" > "$VM_TMPDIR/session.out" 2>&1 &
        DEB_SESSION_PID=$!
        exec 8> "$VM_TMPDIR/session.in"
        vm_wait_for 60 grep -q . "$VM_TMPDIR/session.out"
        assert_eq "$want" "$(head -1 "$VM_TMPDIR/session.out")" "the open session"
        DEB_NSD_PID=$(nsd_main_pid)
        assert_ne 0 "$DEB_NSD_PID" "nsd runs before the upgrade"
        DEB_SOCKET_INODE=$(stat -c %i /run/nsd/socket)
        DEB_SOCKET_STARTED=$(deb_socket_started)
}

deb_socket_started() { systemctl show -p ActiveEnterTimestampMonotonic --value nsd.socket; }

# deb_upgrade_kept VERSION: after the upgrade: every package at VERSION; nsd.service active on
# a new pid (it ran, so it was restarted); nsd.socket never stopped, its socket file never
# recreated; the profile still in common-session.
deb_upgrade_kept() {
        local p
        for p in "${DEB_PACKAGES[@]}"; do
                assert_eq "$1" "$(deb_version "$p")" "$p after the upgrade"
        done
        assert_eq active "$(systemctl is-active nsd.service)" "nsd.service after the upgrade"
        assert_ne "$DEB_NSD_PID" "$(nsd_main_pid)" "nsd's pid after the upgrade (restarted: it ran)"
        assert_eq "$DEB_SOCKET_STARTED" "$(deb_socket_started)" "nsd.socket's start time (never stopped)"
        assert_eq "$DEB_SOCKET_INODE" "$(stat -c %i /run/nsd/socket)" "the socket file (never recreated)"
        grep -q pam_nsjoin /etc/pam.d/common-session || fail "the profile is no longer enabled after the upgrade"
}

# deb_upgrade_across USER WANT DIR VERSION: the upgrade to the packages in DIR (at VERSION)
# with a session of USER open across it: deb_upgrade_begin USER WANT, deb_install DIR,
# deb_upgrade_kept VERSION; deb_upgrade_end ends that session.
deb_upgrade_across() {
        deb_upgrade_begin "$1" "$2"
        deb_install "$3"
        deb_upgrade_kept "$4"
}

# deb_upgrade_end USER WANT JOURNAL-MATCH...: the session of deb_upgrade_begin goes on and ends
# cleanly, its second line WANT too; then every PAM session of USER that sshd opened is closed
# again (pam_unix's lines; JOURNAL-MATCH: journalctl's words for sshd's lines, -t sshd or
# _COMM=sshd-session).
deb_upgrade_end() {
        local user=$1 want=$2
        shift 2
        echo >&8
        exec 8>&-
        wait "$DEB_SESSION_PID" || fail "$user's session opened before the upgrade did not end cleanly: $(cat "$VM_TMPDIR/session.out")"
        assert_eq "$want
$want" "$(cat "$VM_TMPDIR/session.out")" "the session across the upgrade"
        vm_wait_for 30 deb_sessions_balanced "$user" "$@"
}

# deb_sessions_balanced USER JOURNAL-MATCH...: as many sessions of USER closed as opened, and one at least
deb_sessions_balanced() {
        local user=$1 o c
        shift
        journalctl --sync
        o=$(journalctl --no-pager -o cat "$@" -g "session opened for user $user" | wc -l)
        c=$(journalctl --no-pager -o cat "$@" -g "session closed for user $user" | wc -l)
        [ "$o" -gt 0 ] && [ "$o" -eq "$c" ]
}

# ---- nsd-metrics.timer and nsd-metrics.service as installed ---------------------------------
# deb_metrics_timer USER: the packaged timer and service under systemd (issue 26; nsctl(1),
# METRICS), with nsd of the packages running and USER an account nsd manages. The node
# exporter's folder made as Debian's prometheus-node-exporter makes it (its system user
# prometheus owns it, 0755: root writes there by CAP_DAC_OVERRIDE, what the unit's
# CapabilityBoundingSet= keeps). Then:
#   - the timer is not enabled by the installation; `systemctl enable --now` enables and
#     starts it, list-timers lists it with a next elapse, and its first run (OnActiveSec=0)
#     writes nsd.prom. The timer is stopped again: a run of its own during the checks below
#     would leave its temp file in the folder for a moment;
#   - `systemctl start nsd-metrics.service` runs ExecStart= in the unit's own sandbox to
#     success and writes nsd.prom anew (a new inode: renamed over the old one); the folder
#     holds nsd.prom only, root's, 0644; metrics_valid (promtool, or
#     helpers/metrics_samples.py without it) accepts it;
#   - after a login of USER through the packaged PAM profile (pam-auth-update --enable nsjoin;
#     su, whose stack includes common-session) the service's next run writes a file whose
#     joins ok are more than before.
deb_metrics_timer() {
        local user=$1 dir=/var/lib/prometheus/node-exporter unit=nsd-metrics.service
        local f=/var/lib/prometheus/node-exporter/nsd.prom copy=$VM_TMPDIR/nsd.prom ns j1 j2

        say "nsd-metrics.timer and $unit from the packages ($(metrics_checker))"
        [ -e /var/lib/prometheus ] && fail "/var/lib/prometheus is there before the scenario made it"
        getent passwd prometheus > /dev/null ||
                useradd --system --user-group --home-dir /var/lib/prometheus --no-create-home \
                        --shell /usr/sbin/nologin prometheus || fail "useradd prometheus failed"
        install -d -o prometheus -g prometheus -m 0755 /var/lib/prometheus "$dir" || fail "cannot make $dir"
        vm_on_exit "systemctl disable --now nsd-metrics.timer > /dev/null 2>&1; systemctl stop $unit; rm -rf /var/lib/prometheus"

        assert_eq disabled "$(systemctl is-enabled nsd-metrics.timer || true)" "nsd-metrics.timer after installation (not enabled)"
        assert_eq inactive "$(systemctl is-active nsd-metrics.timer || true)" "nsd-metrics.timer after installation (not started)"
        systemctl enable --now nsd-metrics.timer || fail "systemctl enable --now nsd-metrics.timer failed"
        assert_eq enabled "$(systemctl is-enabled nsd-metrics.timer)" "nsd-metrics.timer after enable --now"
        assert_eq active "$(systemctl is-active nsd-metrics.timer)" "nsd-metrics.timer after enable --now"
        # its first run (OnActiveSec=0): the file appears without anyone starting the service
        vm_wait_for 120 deb_metrics_first_run "$f"
        if [ ! -s "$f" ]; then
                systemctl status --no-pager nsd-metrics.timer "$unit" || true
                fail "the timer's run of $unit failed ($(systemctl show -p Result --value "$unit")); $f not written"
        fi
        vm_wait_for 120 deb_timer_listed
        systemctl list-timers --no-pager nsd-metrics.timer
        say "next elapse: $(systemctl show -p NextElapseUSecMonotonic --value nsd-metrics.timer) after boot"
        systemctl stop nsd-metrics.timer || fail "systemctl stop nsd-metrics.timer failed"
        # (a run the timer started is waited for: start joins it)

        deb_metrics_run "$f" "$copy.1"
        j1=$(metrics_sample "$copy.1" 'nsd_joins_total{result="ok"}')

        say "a login of $user through the packaged PAM profile, then the service again"
        nsd_enable_profile
        ns=$(cd / && su "$user" -c 'stat -L -c %i /proc/self/ns/mnt' < /dev/null) || fail "su $user failed"
        assert_ne "$(vm_ns_of 1)" "$ns" "$user's login through the profile: its namespace"
        deb_metrics_run "$f" "$copy.2"
        j2=$(metrics_sample "$copy.2" 'nsd_joins_total{result="ok"}')
        [ "$j2" -gt "$j1" ] || fail "nsd_joins_total{result=\"ok\"} in $f did not grow across $user's login: $j1, then $j2"
        say "nsd.prom rewritten: joins ok $j1, then $j2"
}

# deb_metrics_first_run FILE: the timer's first run of nsd-metrics.service wrote FILE, or failed
deb_metrics_first_run() {
        [ -s "$1" ] || [ "$(systemctl show -p ActiveState --value nsd-metrics.service)" = failed ]
}

# deb_timer_listed: list-timers lists nsd-metrics.timer, with a next elapse
deb_timer_listed() {
        local line next
        line=$(systemctl list-timers --no-pager --no-legend nsd-metrics.timer | grep -F nsd-metrics.timer) || return 1
        next=$(systemctl show -p NextElapseUSecMonotonic --value nsd-metrics.timer)
        case $line in n/a* | -*) return 1 ;; esac
        case $next in '' | 0 | infinity) return 1 ;; esac
}

# deb_metrics_run FILE COPY: `systemctl start nsd-metrics.service` ran ExecStart= to success
# (start of a Type=oneshot waits for it and fails when it does) and it wrote FILE anew (a new
# inode: a condition not met would succeed without running). Not the unit's properties: once
# it ran and nothing refers to it (the timer stopped) systemd 257 unloads it, and `systemctl
# show` then reports a fresh unit's (ConditionResult=no, Result=success). The folder holds
# FILE only (no temp file left), root's, 0644, and metrics_valid accepts it (copied to COPY,
# out of the folder, for the check's own files).
deb_metrics_run() {
        local f=$1 copy=$2 unit=nsd-metrics.service ino
        ino=$(stat -c %i "$f")
        systemctl start "$unit" ||
                { systemctl status --no-pager "$unit" || true; fail "systemctl start $unit failed"; }
        assert_ne "$ino" "$(stat -c %i "$f")" "$f's inode after systemctl start $unit (written anew)"
        assert_eq "${f##*/}" "$(ls -A "${f%/*}")" "${f%/*} after the service (no temp file left)"
        assert_eq "root root 644" "$(stat -c '%U %G %a' "$f")" "$f's owner and mode"
        cp "$f" "$copy"
        metrics_valid "$copy"
}
