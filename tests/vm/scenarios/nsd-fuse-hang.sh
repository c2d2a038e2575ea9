#!/bin/bash
# nsd-fuse-hang: nsd keeps serving beside a FUSE file system whose daemon never answers a
# lookup (tests/vm/helpers/fuse-hang.c), mounted by alice in the initial namespace with allow_other
# (without it the kernel refuses nsd's helper, whose real uid is root, at once with EACCES:
# fuse_allow_current_process() wants every uid of the caller to be the owner's). alice's
# `nsctl hide ~/hang/x` walks into it: nsd's helper process hangs there, and past
# PathWalkTimeoutSec= the request gets ETIMEDOUT (kernel with owner-private mounts, F4),
# while root's STATUS, alice's own STATUS and a root `su -l` login of bob are served
# meanwhile. When the daemon goes, the stuck helper ends too.
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"

nsd_user alice 1001
nsd_user bob 1002
ahome=$(vm_home alice)
hang=$(nsd_helper fuse-hang)
nsd_start_with_limits PathWalkTimeoutSec=15
nsd_has_feature owner-private || skip "the kernel lacks owner-private mounts (F4): HIDE is refused before any walk"
nsd_setup_su_pam "$(nsd_pam_line required)"

say "alice mounts a FUSE file system that never answers a lookup"
cp /etc/fuse.conf "$NSD_TMP/fuse.conf.orig" 2>/dev/null || : >"$NSD_TMP/fuse.conf.orig"
vm_on_exit "cp $NSD_TMP/fuse.conf.orig /etc/fuse.conf"
echo user_allow_other >>/etc/fuse.conf
vm_run_as alice mkdir -p "$ahome/hang"
vm_run_as alice "$hang" "$ahome/hang" allow_other 2>"$NSD_TMP/fuse-hang.log" &
mounted() { awk -v p="$ahome/hang" '$5 == p' /proc/self/mountinfo | grep -q fuse; }
vm_wait_for 30 mounted
vm_wait_for 30 grep -q "mounted on .*, pid " "$NSD_TMP/fuse-hang.log"
hang_pid=$(sed -n 's/^mounted on .*, pid \([0-9]*\)$/\1/p' "$NSD_TMP/fuse-hang.log")
vm_on_exit "kill -TERM $hang_pid 2>/dev/null; umount -l '$ahome/hang' 2>/dev/null"

say "alice: nsctl hide ~/hang/x (the walk hangs in her FUSE daemon)"
vm_run_as alice "$NSCTL" hide "$ahome/hang/x" >"$NSD_TMP/hide.out" 2>&1 &
hide_pid=$!
nsd_wait_log 30 "HIDE from uid 1001"
hang_seen() { grep -q "lookup 'x'" "$NSD_TMP/fuse-hang.log"; }
vm_poll 30 hang_seen || { cat "$NSD_TMP/fuse-hang.log" "$NSD_TMP/hide.out" >&2; nsd_fail "the lookup of 'x' never reached the FUSE daemon"; }
say "the lookup reached the daemon, which does not answer; meanwhile:"

"$NSCTL" --socket "$NSD_ROOT_SOCKET" status >/dev/null || fail "root's STATUS while the HIDE hangs"
vm_run_as alice "$NSCTL" status >/dev/null || fail "alice's STATUS while her HIDE hangs"
out=$(su -l bob -c 'echo bob is in' 2>&1) || { nsd_log | grep -v '^<7>' | tail -30; fail "su -l bob while alice's HIDE hangs: $out"; }
assert_eq "bob is in" "$out" "bob's login"
kill -0 "$hide_pid" 2>/dev/null || { cat "$NSD_TMP/hide.out"; fail "the HIDE did not wait for the walk"; }
say "served: root's STATUS, alice's STATUS, bob's login"

rc=0
wait "$hide_pid" || rc=$?
out=$(cat "$NSD_TMP/hide.out")
echo "$out"
assert_ne 0 "$rc" "nsctl hide's exit status"
assert_contains "$out" "PathWalkTimeoutSec=" "nsctl hide's error"
nsd_wait_log 10 "HIDE of '$ahome/hang/x' for uid 1001, asked by uid 1001: resolving"
nsd_alive

say "a second HIDE into it times out the same way; nsd keeps serving"
out=$(vm_run_as alice "$NSCTL" hide "$ahome/hang/y" 2>&1) && fail "the second HIDE succeeded: $out"
assert_contains "$out" "PathWalkTimeoutSec=" "the second HIDE's error"
nsd_alive

say "the daemon goes: the stuck helpers end"
kill -TERM "$hang_pid"
gone() { ! kill -0 "$hang_pid"; }
vm_wait_for 30 gone
nsd_wait_log 30 "ended after it was killed"
nsd_alive
echo "PASS"
