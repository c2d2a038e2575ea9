#!/bin/bash
# systemd-deb: the Debian packages, installed with dpkg -i in a VM booted with systemd as PID 1
# (tests/vm/run --init systemd; its root is an overlay, so installs stay in the VM): the
# postinst enables and starts nsd.socket; the broker's alice/bob scenario
# (nsd-fuse-shared.sh) passes with installed files only: socket-activated /usr/sbin/nsd, the PAM
# module by name from the system's PAM folder, /usr/bin/nsctl; libnsclient-dev builds a client.
# Then the packaged nsd-metrics.timer and nsd-metrics.service under systemd (issue 26;
# lib/deb.sh, deb_metrics_timer): enabled and started, listed with a next elapse; the service
# runs in its own sandbox to success and writes /var/lib/prometheus/node-exporter/nsd.prom
# (root's, 0644, no temp file left) that promtool, or without it helpers/metrics_samples.py,
# accepts; after a login through the packaged PAM profile its next run has more joins.
#   Args: BUILD-DIR [DEB-DIR]   (DEB-DIR default: BUILD-DIR/debs)
# The .debs are built on the host, from a copy of the tree:
#   git archive HEAD | tar -x -C /tmp/src && cd /tmp/src && dpkg-buildpackage -us -uc -b
#   cp ../*.deb BUILD-DIR/debs/
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/deb.sh

deb_install "${2:-${1:-build}/debs}"
for p in "${DEB_PACKAGES[@]}"; do
        assert_eq "install ok installed" "$(dpkg-query -W -f='${Status}' "$p")" "dpkg status of $p"
done
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2> /dev/null || gcc -print-multiarch)
for f in /usr/sbin/nsd /usr/bin/nsctl /lib/systemd/system/nsd.socket /lib/systemd/system/nsd.service \
        /usr/lib/tmpfiles.d/nsd.conf /etc/nsd/nsd.conf "/lib/$multiarch/security/pam_nsjoin.so" \
        "/usr/lib/$multiarch/libnsclient.so.1" /usr/include/nsclient.h \
        "/usr/lib/$multiarch/pkgconfig/libnsclient.pc" /usr/share/man/man8/nsd.8.gz \
        /usr/share/pam-configs/nsjoin /usr/share/pam-configs/nsjoin-password \
        /usr/lib/systemd/user/nsd-volumes.service /usr/lib/systemd/user/nsd-volume@.service; do
        [ -e "$f" ] || fail "$f is not installed"
done
# the volume-password profile is the administrator's to enable (Default: no): the install
# left common-auth without pam_nsjoin
assert_eq "" "$(grep pam_nsjoin /etc/pam.d/common-auth || true)" "common-auth after the install"
assert_eq enabled "$(systemctl is-enabled nsd.socket)" "nsd.socket enabled by the postinst"
assert_eq active "$(systemctl is-active nsd.socket)" "nsd.socket started by the postinst"
assert_eq inactive "$(systemctl is-active nsd.service || true)" "nsd.service before any login"
assert_eq "755" "$(stat -c %a /run/nsd)" "/run/nsd"

say "libnsclient-dev: a client built with pkg-config asks the installed nsd for its status"
cat > "$VM_TMPDIR/client.c" <<'EOF'
#include <nsclient.h>
#include <stdio.h>
int main(void) {
        nsc_conn *c;
        struct nsc_status st;
        if (nsc_connect(NULL, &c) < 0 || nsc_status(c, &st) < 0)
                return 1;
        nsc_disconnect(c);
        puts("status ok");
        return 0;
}
EOF
# shellcheck disable=SC2046
gcc -o "$VM_TMPDIR/client" "$VM_TMPDIR/client.c" $(pkg-config --cflags --libs libnsclient) ||
        fail "cannot build a client against libnsclient-dev"
assert_eq "status ok" "$("$VM_TMPDIR/client")" "the client"
assert_eq active "$(systemctl is-active nsd.service)" "nsd.service started by the socket"

say "the broker's alice/bob scenario with the installed files"
nsd_user alice 1001
nsd_user bob 1002
vm_start_sshd --pam-session "$(nsd_pam_line required)"
nsd_setup_su_pam "$(nsd_pam_line required)"

out=$(fuse_mount_as alice) || { nsd_journal_dump; fail "alice could not mount bindfs: $out"; }
assert_eq "secret of alice" "$out" "alice, ssh session 1"
out=$(vm_ssh alice 'cat ~/mnt/file; grep -c " /home/alice/mnt " /proc/self/mountinfo || true')
assert_eq "secret of alice
1" "$out" "alice, ssh session 2"
ns2=$(vm_ssh alice 'stat -L -c %i /proc/self/ns/mnt')
assert_eq "$ns2" "$(vm_ssh alice 'stat -L -c %i /proc/self/ns/mnt')" "alice's sessions' namespace"
assert_ne "$(stat -L -c %i /proc/1/ns/mnt)" "$ns2" "alice's namespace"
assert_eq "secret of alice" "$(su -l alice -c 'cat ~/mnt/file')" "su -l alice"
out=$(vm_ssh bob 'ls -A /home/alice/mnt | wc -l; grep -c "/home/alice/mnt" /proc/self/mountinfo || true')
assert_eq "0
0" "$out" "bob's view of /home/alice/mnt"
assert_eq 0 "$(ls -A /home/alice/mnt | wc -l)" "root's view of /home/alice/mnt"
assert_not_contains "$(cat /proc/self/mountinfo)" "/home/alice/mnt" "root's mountinfo"
/usr/bin/nsctl list
out=$(/usr/bin/nsctl list --raw --noheadings -o USER)
assert_contains "$out" alice "nsctl list"
assert_contains "$out" bob "nsctl list"
assert_contains "$(/usr/bin/nsctl show alice --list)" "/home/alice/mnt" "nsctl show alice"
journalctl --sync
assert_contains "$(journalctl -u nsd.service --no-pager -o cat NSD_EVENT=join USER_ID=1002)" \
        "JOIN for uid 1002" "bob's join in the journal"

deb_metrics_timer alice
say "ok"
