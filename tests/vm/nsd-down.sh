#!/bin/bash
# Acceptance 5 of the broker: with nsd stopped, a `session required pam_nsjoin.so` login is
# refused with one clear log line; with `optional` it goes on in the initial namespace.
set -u
. tests/vm/lib.sh
. tests/vm/lib-nsd.sh "${1:-build}"

nsd_user alice 1001
syslog_start

echo "# required, nsd down: the login is refused"
vm_start_sshd --pam-session "$(nsd_pam_line required)"
out=$(vm_ssh alice 'echo logged-in' 2>&1) && fail "login succeeded without nsd: $out"
sleep 0.5
log=$(cat "$SYSLOG")
echo "$log" | grep pam_nsjoin || true
assert_contains "$log" "pam_nsjoin"
assert_contains "$log" "alice"
assert_contains "$log" "$NSD_SOCKET"

echo "# optional, nsd down: the login goes on, in the initial namespace"
pkill -x sshd; sleep 0.5
vm_start_sshd --pam-session "$(nsd_pam_line optional)"
out=$(vm_ssh alice 'echo logged-in; stat -L -c %i /proc/self/ns/mnt')
assert_eq "logged-in
$(mnt_ns_of 1)" "$out"
echo "PASS"
