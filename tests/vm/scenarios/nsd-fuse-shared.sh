#!/bin/bash
# nsd-fuse-shared: alice's FUSE mount made in one ssh session is there in her second
# ssh session and in `su -l alice`; bob and root in the initial namespace see an empty
# directory and no mountinfo line.  Args: BUILD-DIR [MODE]
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"
mode=${2:-setns}

nsd_user alice 1001
nsd_user bob 1002
syslog_start
nsd_start
vm_start_sshd --pam-session "$(nsd_pam_line required mode="$mode" debug)"
nsd_setup_su_pam "$(nsd_pam_line required mode="$mode" debug)"

say "alice, ssh session 1: mount bindfs on ~/mnt"
out=$(fuse_mount_as alice) || { nsd_log; cat "$SYSLOG"; fail "alice could not mount bindfs: $out"; }
assert_eq "secret of alice" "$out"

say "alice, ssh session 2 (a new connection) sees the files"
out=$(vm_ssh alice 'cat ~/mnt/file; grep -c " /home/alice/mnt " /proc/self/mountinfo || true')
assert_eq "secret of alice
1" "$out"

say "alice's sessions share one namespace, not the initial one"
ns2=$(vm_ssh alice 'stat -L -c %i /proc/self/ns/mnt')
ns3=$(vm_ssh alice 'stat -L -c %i /proc/self/ns/mnt')
assert_eq "$ns2" "$ns3"
[ "$ns2" != "$(mnt_ns_of 1)" ] || fail "alice's session is in the initial namespace"

say "su -l alice sees it too"
out=$(su -l alice -c 'cat ~/mnt/file') || { cat "$SYSLOG"; fail "su -l alice failed"; }
assert_eq "secret of alice" "$out"

say "bob sees the plain empty directory and no mountinfo line"
out=$(vm_ssh bob 'ls -A /home/alice/mnt | wc -l; grep -c "/home/alice/mnt" /proc/self/mountinfo || true')
assert_eq "0
0" "$out"
[ "$(vm_ssh bob 'stat -L -c %i /proc/self/ns/mnt')" != "$ns2" ] || fail "bob is in alice's namespace"

say "root in the initial namespace: the same"
assert_eq "0" "$(ls -A /home/alice/mnt | wc -l)"
assert_not_contains "$(cat /proc/self/mountinfo)" "/home/alice/mnt"

say "nsctl list (root) shows both users' namespaces"
"$NSCTL" list
out=$("$NSCTL" list --raw --noheadings -o USER)
assert_contains "$out" alice
assert_contains "$out" bob
say "nsctl show alice has the FUSE mount"
out=$("$NSCTL" show alice --list)
assert_contains "$out" "/home/alice/mnt"
echo "PASS"
