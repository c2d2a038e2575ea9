#!/bin/bash
# deb-upgrade-trixie: a Debian 13 machine (tests/vm/run --root trixie --init systemd) with nsd's
# packages built on Debian 12 installed, as a machine upgraded from bookworm has them, upgraded
# to the packages built on trixie while alice has an ssh session open and a FUSE mount in her
# namespace. Nothing is lost:
#   - her namespace, her mount, her open session (it goes on and closes cleanly); nsd.socket is
#     never stopped nor its socket file recreated; nsd (it ran) is restarted on the new binary;
#     a new login lands in the same namespace; the profile stays enabled;
#   - the files that move across the /usr-move (Debian 12's packages ship the units in
#     /lib/systemd/system and the PAM module in /lib/<triplet>/security; trixie's pkg-config
#     says /usr/lib/...): on a merged-/usr system both spellings are one file, and dpkg, which
#     removes the old path after unpacking the new one, must not take the new file with it.
#     dpkg --verify finds every file, both spellings resolve, dpkg -S names the new path.
# Then trixie's nsd-metrics.timer and nsd-metrics.service (systemd 257's sandbox) as in
# systemd-deb.sh (lib/deb.sh, deb_metrics_timer).
#   Args: BUILD-DIR   (BUILD-DIR/debs: built on Debian 12; BUILD-DIR/debs-trixie: built in the
#   trixie tree, tools/build-debs --trixie)
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/deb.sh

[ "${NSD_VM_ROOT:-host}" = trixie ] || skip "needs the Debian 13 root: tests/vm/run --root trixie"
build=${1:-build}
old=$build/debs new=$build/debs-trixie
old_version=$(dpkg-deb -f "$(deb_files "$old" nsjoin)" Version)
new_version=$(dpkg-deb -f "$(deb_files "$new" nsjoin)" Version)
dpkg --compare-versions "$new_version" gt "$old_version" ||
        fail "trixie's build ($new_version) is not newer than bookworm's ($old_version)"
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
pam_old=/lib/$triplet/security/pam_nsjoin.so pam_new=/usr/lib/$triplet/security/pam_nsjoin.so
# owner PATH: the package dpkg's database says PATH belongs to (no architecture qualifier)
owner() { dpkg -S "$1" 2> /dev/null | sed -E 's/^([^:]+)(:[a-z0-9]+)?: .*/\1/'; }
say "on $(cat /etc/debian_version): $old_version (built on Debian 12) -> $new_version (built on Debian 13)"

# ---- the bookworm-built packages on trixie ----------------------------------------------
deb_install "$old"
assert_eq libpam-nsjoin "$(owner "$pam_old")" "$pam_old of bookworm's build"
assert_eq nsjoin "$(owner /lib/systemd/system/nsd.socket)" "/lib/systemd/system/nsd.socket of bookworm's build"
nsd_enable_profile
nsd_user alice 1001
vm_start_sshd --debian-pam
fuse_mount_as alice > /dev/null || { nsd_journal_dump; fail "alice could not mount bindfs"; }
want=$(deb_probe alice)
ns=${want%% *}
assert_ne "$(vm_ns_of 1)" "$ns" "alice's namespace"
assert_eq "$ns secret of alice" "$want" "alice's login and mount with bookworm's build"

# ---- the upgrade, alice's session open across it: one line before, one after ------------
deb_upgrade_across alice "$want" "$new" "$new_version"
# the files that moved: one file, both spellings, dpkg's database names the new one
assert_eq libpam-nsjoin "$(owner "$pam_new")" "$pam_new after the upgrade"
assert_eq nsjoin "$(owner /usr/lib/systemd/system/nsd.socket)" "/usr/lib/systemd/system/nsd.socket after the upgrade"
for f in "$pam_new" "$pam_old" /usr/lib/systemd/system/nsd.socket /usr/lib/systemd/system/nsd.service \
        /lib/systemd/system/nsd.socket; do
        [ -s "$f" ] || fail "$f is gone after the upgrade (the /usr-move lost it)"
done
verify=$(dpkg --verify "${DEB_PACKAGES[@]}" 2>&1) || true
assert_eq "" "$verify" "dpkg --verify after the upgrade"
assert_eq enabled "$(systemctl is-enabled nsd.socket)" "nsd.socket after the upgrade"
assert_eq "$(readlink -f /usr/sbin/nsd)" "$(readlink -f "/proc/$(nsd_main_pid)/exe")" "nsd runs the installed binary"

# ---- nothing lost -----------------------------------------------------------------------
assert_eq "$want" "$(deb_probe alice)" "a new login after the upgrade (namespace and mount)"
assert_eq "$ns" "$(nsd_ns_inode alice)" "nsctl list after the upgrade"
deb_upgrade_end alice "$want" _COMM=sshd-session
nsctl list

deb_metrics_timer alice
say "ok"
