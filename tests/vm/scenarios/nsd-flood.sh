#!/bin/bash
# nsd-flood: connection exhaustion and slow readers do not keep anyone from logging in. 4
# unprivileged uids send requests without ever reading a reply, and 64 more hold 8 idle
# connections each (more than the rest of MaxConnections=512; they reconnect whatever nsd
# drops or refuses), while
# root's `su -l` and ssh logins of a managed user all succeed (pam_nsjoin `required`; no
# timing assertions). nsd logs the refusals and the drops (naming uid and pid), stays alive
# and answers root on its own socket throughout; once the attack ends, its connections
# drain away.
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"

nsd_user alice 1001
# info, not debug: under attack every connection would be a debug line
nsd_start_with_conf --log-level info <<CONF
[Limits]
IdleTimeoutSec=3
ReplyTimeoutSec=2
CONF
nsd_setup_su_pam "$(nsd_pam_line required)"
vm_start_sshd --pam-session "$(nsd_pam_line required)"
out=$(fuse_mount_as alice) || { nsd_log | tail -40; fail "alice's first login: $out"; }
assert_eq "secret of alice" "$out" "alice's FUSE mount"

flood=$(nsd_helper nsd-flood)
say "4 uids flood requests without reading, then 64 uids hold 8 idle connections each"
"$flood" "$NSD_SOCKET" flood 30000 30003 >"$NSD_TMP/flood.out" &
flood_pid=$!
vm_on_exit "kill -TERM $flood_pid 2>/dev/null; wait $flood_pid 2>/dev/null"
four() { [ "$(nsd_status_field connections)" -ge 4 ]; }
vm_wait_for 60 four
"$flood" "$NSD_SOCKET" hold 20000 20063 8 >"$NSD_TMP/hold.out" &
hold_pid=$!
vm_on_exit "kill -TERM $hold_pid 2>/dev/null; wait $hold_pid 2>/dev/null"

nsd_wait_log 120 "Refusing a connection of uid [0-9]+ pid [0-9]+: nsd serves at most 512 connections"
say "MaxConnections= is full: unprivileged newcomers are refused"
nsd_wait_log 120 "Dropping the connection of uid 3000[0-3] pid [0-9]+: (it does not read its replies|more than [0-9]+ replies wait unread)"
say "the flooders are being dropped"

say "root's logins meanwhile: su -l alice (3 times), ssh alice (2 times)"
for i in 1 2 3; do
        out=$(su -l alice -c 'cat ~/mnt/file' 2>&1) ||
                { nsd_log | grep -v '^<7>' | tail -30; fail "su -l alice #$i failed: $out"; }
        assert_eq "secret of alice" "$out" "su -l alice #$i"
done
for i in 1 2; do
        out=$(vm_ssh alice 'cat ~/mnt/file' 2>&1) ||
                { vm_sshd_log | tail -20; nsd_log | grep -v '^<7>' | tail -30; fail "ssh alice #$i failed: $out"; }
        assert_eq "secret of alice" "$out" "ssh alice #$i"
done
nsd_alive
conns=$(nsd_status_field connections)
say "nsd holds $conns connections under attack"
[ "$conns" -le $((512 + 1024)) ] || fail "nsd holds $conns connections, more than its bounds"

say "nsd's log names what it refused and dropped"
nsd_wait_log 30 "Dropping the connection of uid 200[0-6][0-9] pid [0-9]+: idle for 3 s"
grep -oE "(Refusing a connection|Dropping the connection) of uid [0-9]+ pid [0-9]+: [a-z ]+" \
        "$NSD_LOG" | sed -E 's/uid [0-9]+ pid [0-9]+/uid U pid P/' | sort | uniq -c | sort -rn || true

say "the attack ends: connections drain"
kill -TERM "$hold_pid" "$flood_pid"
wait "$hold_pid" "$flood_pid" 2>/dev/null || true
cat "$NSD_TMP/hold.out" "$NSD_TMP/flood.out" | head -3
cnt() { [ "$(nsd_status_field connections)" -le 1 ]; }
vm_wait_for 60 cnt
nsd_alive
assert_eq "secret of alice" "$(su -l alice -c 'cat ~/mnt/file')" "su -l alice after the attack"
echo "PASS"
