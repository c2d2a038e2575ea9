#!/bin/bash
# nsd-restart: alice logs out of every session; her namespace and FUSE mount
# stay (default linger); nsd is killed with SIGKILL and started again: `nsctl list` shows
# alice's namespace again (adopted from its pin) and her next login sees the mount.
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"

nsd_user alice 1001
nsd_start
vm_start_sshd --pam-session "$(nsd_pam_line required)"

out=$(fuse_mount_as alice) || { nsd_log; fail "alice could not mount: $out"; }
ns_before=$(vm_ssh alice 'stat -L -c %i /proc/self/ns/mnt')

say "every session of alice is over; nsd still holds the namespace"
alice_has_no_session() {
        [ "$("$NSCTL" list --raw --noheadings -o USER,SESSIONS | awk '$1=="alice"{print $2}')" = 0 ]
}
nsd_wait_for 10 alice_has_no_session
host_lines=$(wc -l </proc/self/mountinfo)

say "kill -9 nsd, start it again"
nsd_kill9
nsd_start
"$NSCTL" list
out=$("$NSCTL" list --raw --noheadings -o USER,NS)
assert_contains "$out" "alice $ns_before"
assert_eq "$host_lines" "$(wc -l </proc/self/mountinfo)"

say "alice's next login: same namespace, mount still there"
out=$(vm_ssh alice 'stat -L -c %i /proc/self/ns/mnt; cat ~/mnt/file')
assert_eq "$ns_before
secret of alice" "$out"

say "a clean stop (SIGTERM) and start: the same"
nsd_stop
nsd_start
assert_eq "secret of alice" "$(vm_ssh alice 'cat ~/mnt/file')"
grep -i "adopt" "$NSD_LOG" | tail -2 || true
echo "PASS"
