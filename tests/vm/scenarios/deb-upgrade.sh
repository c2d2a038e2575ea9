#!/bin/bash
# deb-upgrade: the packages' maintainer scripts on a running system, under systemd as PID 1.
# Upgrades keep every namespace, mount and session:
#   A. (when BUILD/debs-0.1.0 exists) our earlier package nsd 0.1.0 with alice's mount and an
#      administrator's change to /etc/nsd/nsd.conf; nsjoin (BUILD/debs) takes it over: nsd
#      0.1.0 is removed, the conffile is kept as the administrator left it, nothing is lost;
#   B. v1 (BUILD/debs) -> v2 (BUILD/debs-v2, the same tree with a higher version) while alice
#      has an ssh session open and a FUSE mount: her namespace inode and mount are unchanged,
#      nsd (it ran) is restarted, its socket is never stopped, the session closes cleanly;
#   C. the same upgrade while nsd does not run: it stays stopped (socket-activated);
#   D. apt-get remove: nsd.service and nsd.socket stopped, the profile out of common-session
#      (logins still work), the pins under /run/nsd left alone, the package says so;
#   E. apt-get purge: /etc/nsd/nsd.conf removed, the pins still left alone;
#   F. installed again: nsd re-adopts alice's namespace with her mount in it.
#   Args: BUILD-DIR
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/deb.sh

build=${1:-build}
v1=$build/debs v2=$build/debs-v2 old=$build/debs-0.1.0
deb_files "$v1" > /dev/null
deb_files "$v2" > /dev/null
v1_version=$(dpkg-deb -f "$(deb_files "$v1" nsjoin)" Version)
v2_version=$(dpkg-deb -f "$(deb_files "$v2" nsjoin)" Version)
dpkg --compare-versions "$v2_version" gt "$v1_version" || fail "v2 ($v2_version) is not newer than v1 ($v1_version)"

nsd_user alice 1001
cp /etc/pam.d/sshd "$VM_TMPDIR/sshd.debian" # Debian's stack, before vm_start_sshd writes its own
mount_as_alice() { fuse_mount_as alice || { vm_journal_dump nsd.service; fail "alice could not mount bindfs"; }; }
pins_mounted() { grep -q ' /run/nsd/pins ' /proc/self/mountinfo; }
conf_line="# an administrator's change, kept across upgrades (deb-upgrade.sh)"

# ---- A. the takeover of nsd 0.1.0 ------------------------------------------------------
if [ -d "$old" ] && ls "$old"/nsd_0.1.0_*.deb > /dev/null 2>&1; then
        say "A. nsd 0.1.0 installed, alice's mount, an administrator's change to nsd.conf"
        deb_install "$old" nsd libnsclient1 libpam-nsjoin
        echo "$conf_line" >> /etc/nsd/nsd.conf
        # 0.1.0 had no pam-auth-update profile: its README said to add the line by hand
        vm_start_sshd --pam-session "session required pam_nsjoin.so"
        assert_eq "secret of alice" "$(mount_as_alice)" "alice's mount under 0.1.0"
        before=$(deb_probe alice)
        ns=${before%% *}
        assert_ne "$(vm_ns_of 1)" "$ns" "alice's namespace under 0.1.0"
        # The administrator changed nsd.conf and so did the package since 0.1.0: dpkg asks
        # (the standard conffile prompt); a non-interactive upgrade keeps the administrator's
        # file and puts the package's beside it as nsd.conf.dpkg-dist.
        DEB_DPKG_OPTS=--force-confold deb_install "$v1"
        assert_eq "" "$(deb_version nsd)" "nsd 0.1.0 after nsjoin's installation"
        assert_eq "$v1_version" "$(deb_version nsjoin)" "nsjoin"
        assert_eq "nsjoin: /etc/nsd/nsd.conf" "$(dpkg -S /etc/nsd/nsd.conf)" "the conffile's package"
        assert_contains "$(cat /etc/nsd/nsd.conf)" "$conf_line" "/etc/nsd/nsd.conf after the takeover"
        shipped=$(dpkg-deb --fsys-tarfile "$(deb_files "$v1" nsjoin)" | tar -xO ./etc/nsd/nsd.conf)
        if [ "$shipped" = "$(dpkg-deb --fsys-tarfile "$(deb_files "$old" nsd)" | tar -xO ./etc/nsd/nsd.conf)" ]; then
                assert_eq "" "$(ls /etc/nsd | grep dpkg || true)" "dpkg's leftovers in /etc/nsd"
        else
                assert_eq "nsd.conf.dpkg-dist" "$(ls /etc/nsd | grep dpkg || true)" \
                        "dpkg's files in /etc/nsd (nsd.conf changed since 0.1.0)"
                assert_eq "$shipped" "$(cat /etc/nsd/nsd.conf.dpkg-dist)" "nsd.conf.dpkg-dist"
                rm /etc/nsd/nsd.conf.dpkg-dist
        fi
        assert_eq enabled "$(systemctl is-enabled nsd.socket)" "nsd.socket after the takeover"
        assert_eq active "$(systemctl is-active nsd.socket)" "nsd.socket after the takeover"
        assert_eq "$before" "$(deb_probe alice)" "alice's namespace and mount after the takeover"
        assert_contains "$(cat "$VM_TMPDIR/dpkg.log")" "Removing nsd (0.1.0)" "dpkg's output"
        cp "$VM_TMPDIR/sshd.debian" /etc/pam.d/sshd # from now on: Debian's stack + the profile
else
        say "A. skipped: no $old/nsd_0.1.0_*.deb (tools/test builds it from git history)"
        deb_install "$v1"
        echo "$conf_line" >> /etc/nsd/nsd.conf
        vm_start_sshd --debian-pam
fi

# ---- B. v1 -> v2 with alice's session open ---------------------------------------------
say "B. pam-auth-update --enable nsjoin; alice logs in (a session kept open) and mounts"
nsd_enable_profile
[ -n "$(vm_ssh alice 'cat ~/mnt/file 2>/dev/null')" ] || mount_as_alice > /dev/null
want=$(deb_probe alice)
ns=${want%% *}
assert_eq "$ns secret of alice" "$want" "alice's login with the profile"
assert_eq "$ns" "$(nsd_ns_inode alice)" "nsctl list"
say "dpkg -i v2 ($v2_version) over v1 ($v1_version), alice's session open across it"
deb_upgrade_across alice "$want" "$v2" "$v2_version"
assert_eq "$want" "$(deb_probe alice)" "a new login after the upgrade"
assert_eq "$ns" "$(nsd_ns_inode alice)" "nsctl list after the upgrade"
assert_contains "$(cat /etc/nsd/nsd.conf)" "$conf_line" "/etc/nsd/nsd.conf after the upgrade"
deb_upgrade_end alice "$want" -t sshd
say "pam_nsjoin's lines about the session across the upgrade:"
journalctl --no-pager -o cat -t sshd -g 'pam_nsjoin' | tail -3 || true

# ---- C. the same upgrade while nsd does not run ----------------------------------------
say "C. nsd stopped (the socket listens); dpkg -i v2 again: nsd stays stopped"
# Nothing but the upgrade may start nsd here. Alice's user manager (user@1001, started by
# pam_systemd for her logins above) stops UserStopDelaySec (10 s) after her last session, and
# its PAM session's close connects to nsd, which starts it through the socket: wait until it
# is gone (ActiveState inactive, not only "not active": it talks to nsd while deactivating).
manager_gone() { [ "$(systemctl show -p ActiveState --value user@1001.service)" = inactive ]; }
vm_wait_for 90 manager_gone
systemctl stop nsd.service
deb_install "$v2"
state=$(systemctl is-active nsd.service || true)
[ "$state" = inactive ] ||
        journalctl --no-pager -o short-monotonic -n 30 -u nsd.service -u nsd.socket \
                -u user@1001.service >&2 # who started it
assert_eq inactive "$state" "nsd.service after an upgrade while stopped"
assert_eq active "$(systemctl is-active nsd.socket)" "nsd.socket"
assert_eq "$want" "$(deb_probe alice)" "a login after that (socket activation)"

# ---- D. apt-get remove ----------------------------------------------------------------
say "D. apt-get remove nsjoin (libpam-nsjoin goes with it: it depends on nsjoin)"
apt-get remove -y nsjoin < /dev/null > "$VM_TMPDIR/remove.log" 2>&1 || { cat "$VM_TMPDIR/remove.log"; fail "apt-get remove failed"; }
{ grep -v '^(Reading' "$VM_TMPDIR/remove.log" || true; } | tail -8
assert_contains "$(cat "$VM_TMPDIR/remove.log")" "stay until reboot" "the removal's message"
assert_eq "" "$(deb_version nsjoin)$(deb_version libpam-nsjoin)" "nsjoin and libpam-nsjoin installed"
assert_eq inactive "$(systemctl is-active nsd.service || true)" "nsd.service after apt remove"
assert_eq inactive "$(systemctl is-active nsd.socket || true)" "nsd.socket after apt remove"
pins_mounted || fail "the pins are gone after apt remove"
! grep -q pam_nsjoin /etc/pam.d/common-session /etc/pam.d/common-session-noninteractive ||
        fail "pam_nsjoin is still in common-session after removal"
assert_eq "$(vm_ns_of 1) -" "$(deb_probe alice)" "a login after the removal (the initial namespace, not refused)"
[ -f /etc/nsd/nsd.conf ] || fail "apt remove removed the configuration"

# ---- E. apt-get purge -----------------------------------------------------------------
say "E. apt-get purge nsjoin"
apt-get purge -y nsjoin < /dev/null > "$VM_TMPDIR/purge.log" 2>&1 || { cat "$VM_TMPDIR/purge.log"; fail "apt-get purge failed"; }
{ grep -v '^(Reading' "$VM_TMPDIR/purge.log" || true; } | tail -4
assert_contains "$(cat "$VM_TMPDIR/purge.log")" "stay until reboot" "the purge's message"
assert_contains "$(cat "$VM_TMPDIR/purge.log")" "/etc/nsd/nsd.conf is removed" "the purge's message"
[ ! -e /etc/nsd ] || fail "/etc/nsd after purge: $(ls -la /etc/nsd)"
pins_mounted || fail "the pins are gone after apt purge"

# ---- F. installed again: nsd re-adopts alice's namespace -------------------------------
say "F. dpkg -i v2 again: nsd re-adopts alice's namespace from the pins"
deb_install "$v2"
nsd_enable_profile
assert_eq "$want" "$(deb_probe alice)" "alice's login after remove, purge and a new installation"
nsctl list
say "ok"
