#!/bin/bash
# systemd-durable: nsd's durability under systemd as PID 1 (tests/vm/run --init systemd),
# issue 9 items 4 and 5:
#  1. the fd store as a second line: alice's pin removed by hand, `systemctl restart nsd`:
#     her namespace (same inode) and FUSE mount are still there, and pinned again;
#  2. sessions survive restarts: a login left open across `systemctl restart`, SIGKILL
#     (Restart=on-failure) and the watchdog is counted after each, and its logout closes it
#     (no "no such session"), leaving 0 sessions.
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"

vm_needs_systemd

sessions_are() { [ "$(nsd_sessions_of alice)" = "$1" ]; }
pins_list() { nsenter --mount=/run/nsd/pins ls -1 /run/nsd; }
has_pin() { pins_list | grep -qx "$1"; }

say "the built units, with ExecStart= pointing at the build"
nsd_units_start '[Namespaces]' 'Linger=0'

say "alice logs in, mounts, and keeps one login open"
nsd_user alice 1001
vm_start_sshd --pam-session "$(nsd_pam_line required)"
out=$(fuse_mount_as alice) || { nsd_journal_dump; fail "alice could not mount: $out"; }
assert_eq "secret of alice" "$out" "alice's FUSE mount"
ns_before=$(vm_ssh alice 'stat -L -c %i /proc/self/ns/mnt')
rm -f /home/alice/held.pid
vm_ssh alice 'echo $$ > ~/held.pid; exec sleep 600' > /dev/null 2>&1 &
held=$!
vm_wait_for 30 test -s /home/alice/held.pid
( vm_wait_for 30 sessions_are 1 ) || { nsd_journal_dump; fail "alice's open login is not counted"; }

say "alice's pin removed by hand, then systemctl restart nsd"
has_pin 1001 || fail "alice's pin before: $(pins_list)"
nsenter --mount=/run/nsd/pins sh -c 'umount /run/nsd/1001 && rm /run/nsd/1001' ||
        fail "cannot remove alice's pin"
! has_pin 1001 || fail "alice's pin not removed: $(pins_list)"
pid=$(nsd_main_pid)
systemctl restart nsd.service
vm_wait_for 30 nsd_restarted "$pid"
( vm_wait_for 10 sessions_are 1 ) || { nsd_journal_dump; fail "after the restart: sessions $(nsd_sessions_of alice)"; }
nsd_assert_kept alice "$ns_before" "pin removed, systemctl restart"
assert_contains "$(nsd_journal)" "Pinned the namespace of uid 1001 (mnt:[$ns_before]) again" \
        "nsd pinned alice's namespace again from the fd store"
has_pin 1001 || fail "alice's pin is not back: $(pins_list)"

say "systemctl kill -s KILL nsd: systemd restarts it, the session is still counted"
pid=$(nsd_main_pid)
systemctl kill -s KILL nsd.service
vm_wait_for 30 nsd_restarted "$pid"
( vm_wait_for 10 sessions_are 1 ) || { nsd_journal_dump; fail "after SIGKILL: sessions $(nsd_sessions_of alice)"; }
nsd_assert_kept alice "$ns_before" "after SIGKILL"

say "the watchdog: SIGSTOP, systemd aborts and restarts nsd"
nsd_watchdog_restart
( vm_wait_for 10 sessions_are 1 ) || { nsd_journal_dump; fail "after the watchdog: sessions $(nsd_sessions_of alice)"; }

say "alice logs out of the login held open since before the restarts"
# the remote command ends, so sshd closes the PAM session (its pam_nsjoin's SESSION_CLOSE)
kill "$(cat /home/alice/held.pid)"
wait "$held" 2> /dev/null || true
( vm_wait_for 30 sessions_are 0 ) || { nsd_journal_dump; fail "after the logout: sessions $(nsd_sessions_of alice)"; }
out=$(nsd_journal)
assert_contains "$out" "Restored 1 sessions" "nsd restored the session at start"
# pam_nsjoin's close found the session opened three nsd processes ago (before, it was
# unknown: the pidfd ended it "without close" at best)
assert_contains "$out" "of uid 1001 closed (pid" "the logout's SESSION_CLOSE"
say "ok"
