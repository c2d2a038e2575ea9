#!/bin/bash
# nsd-join-session: JOIN_SESSION (protocol 1.2), nsd's side: one request from root on root's
# socket gives alice's namespace descriptors and opens a session whose leader's pidfd rode
# along; the leader's exit ends the session. A refused session leaves nothing open: a pidfd
# of another pid (EINVAL), a leader that already exited (ESRCH), MaxSessionsPerUser=
# (EUSERS) create neither a namespace nor a session.
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"
js="$NSD_ROOT_RAW join-session"

nsd_user alice 1001
nsd_user bob 1002
nsd_start_with_limits MaxSessionsPerUser=1
# sleeper: a process that lives until it is killed or the scenario ends; its pid in $SLEEPER
sleeper() {
        sleep 600 &
        SLEEPER=$!
        vm_on_exit "kill $SLEEPER 2>/dev/null"
}
# js_expect WANT WHAT ARGS...: JOIN_SESSION (ARGS: the helper's), its reply shown and containing WANT
js_expect() {
        local want=$1 what=$2 out
        shift 2
        out=$($js "$@")
        echo "$out"
        assert_contains "$out" "$want" "$what"
}

say "refusals first: nothing may stay open"
sleeper
js_expect "EINVAL fds=0" "a pidfd of another pid" --pidfd-of "$SLEEPER" 1001 $$
true &
gone=$!
wait "$gone"
js_expect "fds=0" "a leader that is gone" --no-pidfd 1001 "$gone"
assert_eq "" "$("$NSCTL" list --raw --noheadings -o USER)" "no namespace after the refusals"

say "one request: the namespace's descriptors and a session"
sleeper
leader=$SLEEPER
js_expect "0x8009 0 fds=2 sessions=1 session=" "JOIN_SESSION's reply" 1001 "$leader"
assert_eq 1 "$(nsd_sessions_of alice)" "alice's sessions"
assert_contains "$(nsd_log)" "JOIN for uid 1001 by pid" "the join event"

say "MaxSessionsPerUser=1: a second one is refused, nothing more opens"
sleeper
second=$SLEEPER
js_expect "EUSERS fds=0" "the second session" 1001 "$second"
assert_eq 1 "$(nsd_sessions_of alice)" "alice's sessions after the refusal"

say "the leader exits: the session ends"
kill "$leader"
wait "$leader" 2>/dev/null || true
ended() { [ "$(nsd_sessions_of alice)" = 0 ]; }
vm_wait_for 30 ended
nsd_wait_log 10 "ended without close"

say "bob's first login by JOIN_SESSION without a pidfd (nsd opens one)"
js_expect "0x8009 0 fds=2 sessions=1" "bob's JOIN_SESSION" --no-pidfd 1002 "$second"
assert_eq 1 "$(nsd_sessions_of bob)" "bob's sessions"
nsd_alive
echo "PASS"
