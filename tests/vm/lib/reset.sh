#!/bin/bash
# tests/vm/lib/reset.sh: put a VM back as it booted, between two scenarios sharing one boot
# (tests/vm/run-shared). Inside the VM, as root; systemd as PID 1 or tests/vm/init's default.
# Undoes what scenarios do: nsd stopped and its units, configuration and runtime state (the
# pins under /run/nsd) gone; every account the scenario made (tests/vm/init leaves the VM the
# host's system accounts only) logged out, their processes, managers, lingering, crontabs,
# homes and FUSE mounts gone; our packages purged; /etc/pam.d, /var/lib/pam (pam-auth-update's
# state), /etc/sudoers.d and /etc/fstab as the host has them (its root, read-only at
# /run/nsd-vm/host); the journal
# emptied, so that the next scenario reads only its own. Exits non-zero, saying what, when
# anything is left; the next scenario then runs in a VM of its own.
set -uo pipefail

host=/run/nsd-vm/host
bad=0
say() { echo "reset: $*"; }
problem() { echo "reset: $*" >&2; bad=1; }
# vm_poll SECONDS CMD...: until CMD succeeds, for at most SECONDS of wall-clock time
. "$(dirname "${BASH_SOURCE[0]}")/poll.sh"
no_process_of() { ! pgrep -U "$1" > /dev/null; }

[ -d "$host/etc" ] || { problem "the host's root is not at $host (tests/vm/init)"; exit 1; }
systemd=
[ -d /run/systemd/system ] && systemd=1

# ---- nsd and the services scenarios start ----------------------------------------------------
[ -n "$systemd" ] && systemctl stop nsd.service nsd.socket nsd-root.socket nsd-metrics.timer \
    nsd-metrics.service cron.service 2> /dev/null
# nsd, and what scenarios start as root and leave to their exit traps (sshd of vm_start_sshd,
# the syslog sink of lib/nsd.sh): gone, whatever those traps managed
pkill -KILL -x nsd 2> /dev/null
pkill -KILL -x sshd 2> /dev/null
# (OpenSSH 10, Debian 13: each connection's monitor is sshd-session, running as root)
pkill -KILL -x sshd-session 2> /dev/null
pkill -KILL -f '^busybox syslogd' 2> /dev/null
vm_poll 30 sh -c '! pgrep -x nsd && ! pgrep -x sshd && ! pgrep -x sshd-session' ||
    problem "nsd or sshd still runs: $(pgrep -a -x nsd; pgrep -a -x sshd; pgrep -a -x sshd-session)"
[ -n "$systemd" ] || rm -f /dev/log # busybox syslogd's (under systemd: journald's, kept)

# ---- users ------------------------------------------------------------------------------------
# every account but the host's system accounts (what tests/vm/init leaves the VM): the users
# scenarios made, and the system accounts some make (useradd -r)
keep=" $(awk -F: '$3 < 1000 || $3 == 65534 { printf "%s ", $1 }' "$host/etc/passwd") "
for user in $(cut -d: -f1 /etc/passwd); do
    case $keep in *" $user "*) continue ;; esac
    uid=$(id -u "$user")
    if [ -n "$systemd" ]; then
        loginctl disable-linger "$user" 2> /dev/null
        loginctl terminate-user "$user" 2> /dev/null
        systemctl stop "user@$uid.service" "user-runtime-dir@$uid.service" 2> /dev/null
    fi
    pkill -KILL -U "$uid" 2> /dev/null
    vm_poll 30 no_process_of "$uid" || problem "processes of $user ($uid) still run: $(pgrep -a -U "$uid")"
    crontab -r -u "$user" 2> /dev/null
    userdel -r -f "$user" > /dev/null 2>&1
    rm -rf "/home/$user" "/run/user/$uid"
    getent passwd "$user" > /dev/null && problem "user $user is still there"
done
keep=" $(awk -F: '$3 < 1000 || $3 == 65534 { printf "%s ", $1 }' "$host/etc/group") "
for group in $(cut -d: -f1 /etc/group); do
    case $keep in *" $group "*) continue ;; esac
    groupdel "$group" 2> /dev/null
done

# ---- FUSE mounts left behind (their daemons are gone) -----------------------------------------
findmnt -rn -o TARGET -t fuse,fuseblk,fuse.bindfs,fuse.sshfs,fuse.fuse-hang 2> /dev/null | sort -r |
    while IFS= read -r m; do umount -l "$m" 2> /dev/null; done

# ---- our packages -----------------------------------------------------------------------------
pkgs=()
for p in libpam-nsjoin libnsclient-dev nsjoin libnsclient1 nsd; do
    dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2> /dev/null | grep -q '^[ihrtfcu]' && pkgs+=("$p")
done
if [ ${#pkgs[@]} -gt 0 ]; then
    say "purging ${pkgs[*]}"
    DEBIAN_FRONTEND=noninteractive dpkg --purge "${pkgs[@]}" < /dev/null > /dev/null 2>&1 ||
        problem "dpkg --purge ${pkgs[*]} failed"
fi

# ---- nsd's state and configuration --------------------------------------------------------------
awk '$5 == "/run/nsd" || index($5, "/run/nsd/") == 1 { print $5 }' /proc/self/mountinfo | sort -r |
    while IFS= read -r m; do umount -l "$m" 2> /dev/null; done
rm -rf /run/nsd /etc/nsd /etc/tmpfiles.d/nsd.conf /usr/share/pam-configs/nsjoin \
    /etc/systemd/system/nsd.service.d
# the node exporter's folder lib/deb.sh's deb_metrics_timer makes (the host has none)
[ -e "$host/var/lib/prometheus" ] || rm -rf /var/lib/prometheus
# the built units and what `systemctl enable` linked to them (sockets.target.wants/...)
find /etc/systemd/system \( -name nsd.service -o -name nsd.socket -o -name nsd-root.socket \) \
    -delete 2> /dev/null
left=$(awk '$5 == "/run/nsd" || index($5, "/run/nsd/") == 1 { print $5 }' /proc/self/mountinfo)
[ -z "$left" ] || problem "mounts under /run/nsd left: $left"

# ---- files scenarios change, as the host has them ---------------------------------------------
for f in /etc/pam.d /var/lib/pam /etc/sudoers.d /etc/fstab; do
    if [ -e "$host$f" ]; then
        rm -rf "$f" && cp -a "$host$f" "$f" || problem "cannot put back $f"
    fi
done
[ -n "$systemd" ] && systemctl daemon-reload

# ---- the journal: the next scenario reads only its own ----------------------------------------
# (what was logged until now goes to an archived file, and archived files whose newest entry
# is older than a second are removed: looked at again until nsd's and sshd's entries are gone)
journal_clear() {
    journalctl --rotate > /dev/null 2>&1
    journalctl --vacuum-time=1s > /dev/null 2>&1
    [ -z "$(journalctl -q --no-pager -n 1 -u nsd.service)" ] && [ -z "$(journalctl -q --no-pager -n 1 -t sshd)" ]
}
if [ -n "$systemd" ]; then
    vm_poll 20 journal_clear || problem "the journal still has entries of nsd or sshd"
fi

[ "$bad" = 0 ] && say "the VM is as it booted"
exit "$bad"
