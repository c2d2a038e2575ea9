#!/bin/bash
# nsd-bad-clients: bob cannot get alice's namespace (nsctl enter, raw JOIN), nor his own
# from outside it (descriptors go only to root or a process inside); bad
# protocol input (garbage, truncated, wrong version, oversized, wrong length field, unknown
# type) gets an error reply or a close, connections past the per-user limit are refused, and
# after all that alice's next login still works.
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"

nsd_user alice 1001
nsd_user bob 1002
nsd_start_with_limits MaxConnectionsPerUser=4
vm_start_sshd --pam-session "$(nsd_pam_line required)"
assert_eq "secret of alice" "$(fuse_mount_as alice)"

say "bob: nsctl enter alice"
out=$(su bob -s /bin/sh -c "$NSCTL enter alice -- true" 2>&1) && fail "bob entered alice's namespace: $out"
echo "$out"
assert_contains "$out" "only root may enter"
say "bob: raw JOIN for alice's uid"
out=$(su bob -s /bin/sh -c "$NSD_RAW join 1001")
echo "$out"
assert_contains "$out" "EPERM"
assert_contains "$out" "fds=0"
say "bob: raw JOIN for his own uid, from outside his namespace (su): no descriptors"
out=$(su bob -s /bin/sh -c "$NSD_RAW join 1002")
echo "$out"
assert_contains "$out" "EPERM"
assert_contains "$out" "fds=0"
say "bob: raw JOIN for his own uid, from inside it (an ssh login): both descriptors"
out=$(vm_ssh bob "python3 $PWD/tests/vm/helpers/nsd-rawclient.py --socket $NSD_SOCKET --header $PWD/libnsclient/nsd-protocol.h join 1002")
echo "$out"
assert_contains "$out" "fds=2"

for what in garbage truncated wrong-version oversized bad-length unknown-type; do
        out=$(su bob -s /bin/sh -c "$NSD_RAW $what 1002")
        echo "$out"
        case "$out" in
        *" 0 fds="*) fail "$what was answered as a success: $out" ;;
        esac
        assert_not_contains "$out" "fds=2"
done
assert_contains "$(su bob -s /bin/sh -c "$NSD_RAW wrong-version 1002")" "EPROTONOSUPPORT"
assert_contains "$(su bob -s /bin/sh -c "$NSD_RAW truncated 1002")" "EBADMSG"

say "bob opens 10 connections; the limit is 4 per user"
out=$(su bob -s /bin/sh -c "$NSD_RAW hold --count 10")
echo "$out"
assert_eq "hold opened=10 refused=6" "$out"

say "nsd still serves: alice logs in and sees her mount"
assert_eq "secret of alice" "$(vm_ssh alice 'cat ~/mnt/file')"
kill -0 "$NSD_PID" || fail "nsd died"
say "nsd's log names what was wrong"
grep -iE "version|size|length|limit" "$NSD_LOG" | tail -8 || true
echo "PASS"
