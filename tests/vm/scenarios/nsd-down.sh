#!/bin/bash
# pam_nsjoin with nsd out of service, the module `required` (sshd and su -l): root's logins
# and an unmanaged user's never depend on nsd (they go on, untouched, not a line logged); a
# managed user's login is refused within timeout= with ONE clear syslog line. Three ways to
# be out of service: nsd stopped; nsd SIGSTOPped (connections queue, nothing is answered);
# nsd SIGSTOPped with its listen queue full (connect itself would wait). With `optional`
# the managed login goes on in the initial namespace. After SIGCONT everything works again.
# Args: BUILD-DIR
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"

TIMEOUT=2
nsd_user alice # managed: useradd's next uid >= 1000
useradd -r -m -s /bin/bash svc || fail "useradd svc failed"
SVC_UID=$(id -u svc)
[ "$SVC_UID" -lt 1000 ] || fail "svc got uid $SVC_UID, not a system uid"
# root logs in over ssh with a key of its own
install -d -m 0700 /root/.ssh
ssh-keygen -q -t ed25519 -N '' -C root@nsd-vm -f /root/.ssh/id_ed25519
cp /root/.ssh/id_ed25519.pub /root/.ssh/authorized_keys

syslog_start
LINE=$(nsd_pam_line required timeout=$TIMEOUT)
vm_start_sshd --pam-session "$LINE"
nsd_setup_su_pam "$LINE"
INIT_NS=$(mnt_ns_of 1)

nsjoin_lines() { grep -c 'pam_nsjoin' "$SYSLOG" || true; }
nsjoin_lines_above() { [ "$(nsjoin_lines)" -gt "$1" ]; }

# check_out_of_service WHAT WANT [all]: root (ssh; with all also su -l) and svc (su -l) go
# on in the initial namespace without a pam_nsjoin line; alice (ssh; with all also su -l) is
# refused, each time with one line saying WANT. (TCG logins are slow: all only once.)
check_out_of_service() {
    local what=$1 want=$2 all=${3:-} before out new
    before=$(nsjoin_lines)

    say "$what: root's ssh login goes on, in the initial namespace"
    out=$(vm_ssh root 'echo root-in; stat -L -c %i /proc/self/ns/mnt') ||
        fail "$what: root's ssh login failed: $out; $(vm_sshd_log | tail -5)"
    assert_eq "root-in
$INIT_NS" "$out" "$what: root's ssh login"
    if [ -n "$all" ]; then
        say "$what: su -l root goes on"
        out=$(su -l root -c 'echo root-su') || fail "$what: su -l root failed: $out"
        assert_eq root-su "$out" "$what: su -l root"
    fi
    say "$what: su -l svc (uid $SVC_UID, unmanaged) goes on"
    out=$(su -l svc -c 'echo svc-in; stat -L -c %i /proc/self/ns/mnt') || fail "$what: su -l svc failed: $out"
    assert_eq "svc-in
$INIT_NS" "$out" "$what: su -l svc"
    assert_eq "$before" "$(nsjoin_lines)" "$what: pam_nsjoin lines for root's and svc's logins"

    say "$what: alice's ssh login is refused, with one line"
    out=$(vm_ssh alice 'echo alice-in' 2>&1) && fail "$what: alice logged in: $out"
    assert_not_contains "$out" alice-in "$what: alice's ssh session"
    vm_wait_for 10 nsjoin_lines_above "$before"
    new=$(grep pam_nsjoin "$SYSLOG" | tail -n +$((before + 1)))
    echo "$new"
    assert_eq 1 "$(printf '%s\n' "$new" | wc -l)" "$what: pam_nsjoin lines of alice's ssh login"
    assert_contains "$new" "cannot join the mount namespace of user 'alice'"
    assert_contains "$new" "$want"

    [ -n "$all" ] || return 0
    say "$what: su -l alice is refused, with one line"
    out=$(su -l alice -c 'echo alice-in' 2>&1) && fail "$what: su -l alice went on: $out"
    assert_not_contains "$out" alice-in "$what: su -l alice"
    vm_wait_for 10 nsjoin_lines_above "$((before + 1))"
    assert_eq $((before + 2)) "$(nsjoin_lines)" "$what: pam_nsjoin lines after su -l alice"
    assert_contains "$(grep pam_nsjoin "$SYSLOG" | tail -n 1)" "$want"
}

say "nsd running: alice's login joins her namespace"
nsd_start
out=$(vm_ssh alice 'stat -L -c %i /proc/self/ns/mnt') || { nsd_log; cat "$SYSLOG"; fail "alice's login failed"; }
assert_ne "$INIT_NS" "$out" "alice's namespace"
ALICE_NS=$out

say "nsd stopped"
nsd_stop
check_out_of_service "nsd stopped" "is not running" all

say "nsd stopped, su -l with the module optional: alice goes on in the initial namespace"
nsd_setup_su_pam "$(nsd_pam_line optional timeout=$TIMEOUT)"
out=$(su -l alice -c 'echo alice-in; stat -L -c %i /proc/self/ns/mnt') || fail "optional: su -l alice failed: $out"
assert_eq "alice-in
$INIT_NS" "$out" "optional, nsd down: su -l alice"
assert_contains "$(grep pam_nsjoin "$SYSLOG" | tail -n 1)" "is not running"
nsd_setup_su_pam "$LINE"

say "nsd SIGSTOPped: connections queue, nothing is answered"
nsd_start
kill -STOP "$NSD_PID"
vm_on_exit "kill -CONT $NSD_PID 2>/dev/null"
check_out_of_service "nsd SIGSTOPped" "nsd did not answer in time (Connection timed out); gave up after timeout=$TIMEOUT s"

say "nsd SIGSTOPped with its listen queue full: connect itself would wait"
sock=/run/nsd/root.socket # nsd >= 1.2; pam_nsjoin takes it when it exists
[ -S "$sock" ] || sock=$NSD_SOCKET
python3 - "$sock" "$VM_TMPDIR/full" <<'PY' &
import resource, signal, socket, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (1 << 16, 1 << 16))
path, marker = sys.argv[1], sys.argv[2]
held = []
while True:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.setblocking(False)
    try:
        s.connect(path)
    except BlockingIOError:  # EAGAIN: the queue is full
        break
    held.append(s)
with open(marker, "w") as f:
    f.write("%d\n" % len(held))
signal.pause()
PY
FILLER=$!
vm_on_exit "kill $FILLER 2>/dev/null"
vm_wait_for 60 test -s "$VM_TMPDIR/full"
say "the queue of $sock is full after $(cat "$VM_TMPDIR/full") more connections"
check_out_of_service "nsd's queue full" "did not accept the connection in time (Connection timed out); gave up after timeout=$TIMEOUT s"
kill "$FILLER"
wait "$FILLER" 2>/dev/null || true

say "SIGCONT: nsd serves again, alice is back in her namespace"
kill -CONT "$NSD_PID"
vm_wait_for 60 "$NSCTL" status
out=$(vm_ssh alice 'stat -L -c %i /proc/self/ns/mnt') || { nsd_log; tail -5 "$SYSLOG"; fail "alice's login after SIGCONT failed"; }
assert_eq "$ALICE_NS" "$out" "alice's namespace after SIGCONT"
nsd_stop
echo "PASS"
