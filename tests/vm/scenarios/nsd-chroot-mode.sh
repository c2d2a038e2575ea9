#!/bin/bash
# nsd-chroot-mode: pam_nsjoin mode=chroot (Lokier's fchdir+chroot into the root
# descriptor nsd hands out). What is in the namespace is reachable by path either way. On a
# kernel without F1 (stock) the known glitches of DESIGN.md are asserted as they are:
# /proc/self/ns/mnt still the initial namespace (row 11), /proc/self/mounts empty (row 10),
# a FUSE mount fails (rows 1 and 12). With F1 (patched), the module enters with setns(root
# descriptor): all of that works.  Args: BUILD-DIR
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"

nsd_user alice 1001
syslog_start
nsd_start
vm_start_sshd --pam-session "$(nsd_pam_line required mode=chroot debug)"

f1=no
nsd_has_feature setns-dirfd && f1=yes
say "kernel $(uname -r); F1 (setns on a directory descriptor): $f1"
case "$(uname -r)" in
*-nsd-stock) assert_eq no "$f1" "F1 on the stock kernel" ;;
esac

say "root mounts a tmpfs inside alice's namespace (nsctl enter)"
"$NSCTL" enter alice -- sh -c 'mkdir -p /home/alice/mnt /home/alice/mnt2 /home/alice/src &&
        mount -t tmpfs -o mode=0755 demo /home/alice/mnt && echo seen >/home/alice/mnt/f &&
        chown alice: /home/alice/mnt2 /home/alice/src'
alice_ns=$(nsd_ns_inode alice)
[ -n "$alice_ns" ] || fail "nsctl list has no namespace for alice"
assert_eq "" "$(ls -A /home/alice/mnt)" "the initial namespace's view of ~alice/mnt"

say "alice (chroot mode) reaches it by path"
assert_eq seen "$(vm_ssh alice 'cat ~/mnt/f')"

ns=$(vm_ssh alice 'stat -L -c %i /proc/self/ns/mnt')
lines=$(vm_ssh alice 'wc -l </proc/self/mounts')
fuse=0
vm_ssh alice 'echo x >~/src/x; bindfs --no-allow-other ~/src ~/mnt2 && cat ~/mnt2/x' || fuse=$?
grep pam_nsjoin "$SYSLOG" | tail -3 || true

if [ "$f1" = yes ]; then
        say "F1: entered with setns(root descriptor), no glitches"
        assert_eq "$alice_ns" "$ns" "alice's /proc/self/ns/mnt"
        [ "$lines" -gt 0 ] || fail "/proc/self/mounts is empty after setns(root descriptor)"
        assert_eq 0 "$fuse" "bindfs exit status"
        assert_eq x "$(vm_ssh alice 'cat ~/mnt2/x')" "the FUSE mount seen from a second session"
        assert_contains "$(cat "$SYSLOG")" "setns(root directory)"
else
        say "no F1: fchdir+chroot, the glitches as DESIGN.md measured them"
        assert_eq "$(mnt_ns_of 1)" "$ns" "row 11: /proc/self/ns/mnt after chroot"
        assert_eq 0 "$lines" "row 10: lines of /proc/self/mounts after chroot"
        assert_ne 0 "$fuse" "row 1/12: bindfs exit status after chroot"
fi
echo PASS
