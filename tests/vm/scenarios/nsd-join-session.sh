#!/bin/bash
# nsd-join-session: JOIN_SESSION (protocol 1.2), nsd's side: one request from root on root's
# socket gives alice's namespace descriptors and opens a session whose leader's pidfd rode
# along; the leader's exit ends the session. A refused session leaves nothing open: a pidfd
# of another pid (EINVAL), a leader that already exited (ESRCH), MaxSessionsPerUser=
# (EUSERS) create neither a namespace nor a session.
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"
js="python3 tests/vm/helpers/nsd-rawclient.py --socket $NSD_ROOT_SOCKET join-session"

nsd_user alice 1001
nsd_user bob 1002
cat >"$NSD_TMP/nsd.conf" <<CONF
[Limits]
MaxSessionsPerUser=1
CONF
nsd_start --config "$NSD_TMP/nsd.conf"

say "refusals first: nothing may stay open"
sleep 600 &
other=$!
vm_on_exit "kill $other 2>/dev/null"
out=$($js --pidfd-of "$other" 1001 $$)
echo "$out"
assert_contains "$out" "EINVAL fds=0" "a pidfd of another pid"
true &
gone=$!
wait "$gone"
out=$($js --no-pidfd 1001 "$gone")
echo "$out"
assert_contains "$out" "fds=0" "a leader that is gone"
assert_eq "" "$("$NSCTL" list --raw --noheadings -o USER)" "no namespace after the refusals"

say "one request: the namespace's descriptors and a session"
sleep 600 &
leader=$!
vm_on_exit "kill $leader 2>/dev/null"
out=$($js 1001 "$leader")
echo "$out"
assert_contains "$out" "0x8009 0 fds=2 sessions=1 session=" "JOIN_SESSION's reply"
assert_eq 1 "$(nsd_sessions_of alice)" "alice's sessions"
assert_contains "$(nsd_log)" "JOIN for uid 1001 by pid" "the join event"

say "MaxSessionsPerUser=1: a second one is refused, nothing more opens"
sleep 600 &
second=$!
vm_on_exit "kill $second 2>/dev/null"
out=$($js 1001 "$second")
echo "$out"
assert_contains "$out" "EUSERS fds=0" "the second session"
assert_eq 1 "$(nsd_sessions_of alice)" "alice's sessions after the refusal"

say "the leader exits: the session ends"
kill "$leader"
wait "$leader" 2>/dev/null || true
ended() { [ "$(nsd_sessions_of alice)" = 0 ]; }
vm_wait_for 30 ended
nsd_wait_log 10 "ended without close"

say "bob's first login by JOIN_SESSION without a pidfd (nsd opens one)"
out=$($js --no-pidfd 1002 "$second")
assert_contains "$out" "0x8009 0 fds=2 sessions=1" "bob's JOIN_SESSION"
assert_eq 1 "$(nsd_sessions_of bob)" "bob's sessions"
nsd_alive
echo "PASS"
