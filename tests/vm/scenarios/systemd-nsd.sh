#!/bin/bash
# systemd-nsd: nsd as it runs on a host, under systemd as PID 1 (tests/vm/run --init systemd):
#  1. nsd.socket and nsd.service (the built units) in /etc/systemd/system; `systemctl start
#     nsd.socket`; alice's first ssh login activates nsd through the socket; `systemctl status
#     nsd` shows the STATUS= line; the journal has the join event with USER_ID= and NSD_EVENT=,
#     and no nsd entry has an empty field (USER_ID=, ERRNO=, ...).
#  2. `systemctl restart nsd`, then `systemctl kill -s KILL nsd` (systemd restarts it): alice's
#     namespace and FUSE mount stay, her next login sees them.
#  3. the watchdog: nsd stopped with SIGSTOP is restarted by systemd; nothing is lost.
#  4. a refused login explains itself: bob's namespace cannot be set up (a polydir that does
#     not exist, for him only), his ssh login is refused, and `journalctl -x` shows the
#     join-refused event with its MESSAGE_ID=, NSD_REASON= and the catalog's text
#     (systemd/nsd.catalog) with his uid and the reason filled in. Once the polydir exists,
#     his next login gets a namespace with it: a setup works under nsd.service's sandbox.
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"

say "the built units, with ExecStart= pointing at the build"
nsd_units_start
assert_eq "755 root" "$(stat -c '%a %U' /run/nsd)" "/run/nsd from tmpfiles.d"
assert_eq active "$(systemctl is-active nsd.socket)" "nsd.socket"
assert_eq active "$(systemctl is-active nsd-root.socket)" "nsd-root.socket"
assert_eq inactive "$(systemctl is-active nsd.service || true)" "nsd.service before any login"
assert_eq "666 socket" "$(stat -c '%a %F' "$NSD_SOCKET" | sed 's/^666 .*socket$/666 socket/')" \
        "socket mode"
assert_eq "600 socket" "$(stat -c '%a %F' /run/nsd/root.socket | sed 's/^600 .*socket$/600 socket/')" \
        "root's socket mode"

say "alice's first login activates nsd through the socket"
nsd_user alice 1001
vm_start_sshd --pam-session "$(nsd_pam_line required)"
out=$(fuse_mount_as alice) || { nsd_journal_dump; fail "alice could not mount: $out"; }
assert_eq "secret of alice" "$out" "alice's FUSE mount"
assert_eq active "$(systemctl is-active nsd.service)" "nsd.service after the login"
assert_eq "$(stat -L -c %i /proc/1/ns/mnt)" "$(stat -L -c %i "/proc/$(nsd_main_pid)/ns/mnt")" \
        "nsd's mount namespace (must be the initial one)"
ns_before=$(vm_ssh alice 'stat -L -c %i /proc/self/ns/mnt')
assert_ne "$(stat -L -c %i /proc/1/ns/mnt)" "$ns_before" "alice's namespace"

status=$(systemctl status --no-pager nsd.service || true)
echo "$status" | sed -n '1,6p'
assert_contains "$status" 'Status: "1 namespaces, ' "systemctl status nsd"
journalctl --sync
out=$(journalctl -u nsd.service --no-pager -o verbose NSD_EVENT=join USER_ID=1001)
assert_contains "$out" "MESSAGE=JOIN for uid 1001" "journal join event"
assert_not_contains "$out" "ERRNO=" "journal join event (no error, no ERRNO=)"
out=$(journalctl --no-pager -o export SYSLOG_IDENTIFIER=nsd | grep -a -c -x -e 'USER_ID=' -e 'ERRNO=' \
        -e 'NSD_EVENT=' -e 'CODE_FILE=' -e 'CODE_FUNC=' -e 'MESSAGE_ID=' -e 'NSD_REASON=' || true)
assert_eq 0 "$out" "nsd's journal entries: only fields that exist (no empty USER_ID=, ERRNO=)"
assert_contains "$(journalctl --no-pager -o export SYSLOG_IDENTIFIER=nsd)" "CODE_FILE=" \
        "nsd's own log lines still name their source (CODE_FILE=)"
assert_contains "$(journalctl -u nsd.service --no-pager -o cat NSD_EVENT=namespace-created)" \
        "Created the namespace of uid 1001" "journal namespace-created event"
out=$(journalctl -u nsd.service --no-pager -o cat)
assert_contains "$out" "Serving root on the socket passed by the service manager ('root')" \
        "nsd got root's socket from nsd-root.socket"
assert_contains "$out" "Serving everyone on the socket passed by the service manager ('user')" \
        "nsd got everyone's socket from nsd.socket"
"$NSCTL" --socket /run/nsd/root.socket status >/dev/null || fail "nsctl status on root's socket"

say "systemctl restart nsd"
# nsd.service's LimitNOFILE=: a soft limit of 1024 would keep nsd from starting once the fd
# store passes 1021 descriptors back (bench/start)
assert_eq 524288 "$(systemctl show -p LimitNOFILESoft --value nsd.service)" "LimitNOFILESoft"
pid=$(nsd_main_pid)
systemctl restart nsd.service
vm_wait_for 30 nsd_restarted "$pid"
nsd_assert_kept alice "$ns_before" "after systemctl restart"

say "systemctl kill -s KILL nsd: systemd restarts it (Restart=on-failure)"
pid=$(nsd_main_pid)
systemctl kill -s KILL nsd.service
vm_wait_for 30 nsd_restarted "$pid"
assert_ne 0 "$(systemctl show -p NRestarts --value nsd.service)" "NRestarts"
nsd_assert_kept alice "$ns_before" "after SIGKILL"

say "the watchdog: SIGSTOP, systemd aborts and restarts nsd"
nsd_watchdog_restart
journalctl -u nsd.service --no-pager -n 12 -o short-monotonic | grep -i -e watchdog -e adopted
nsd_assert_kept alice "$ns_before" "after the watchdog restart"

say "a refused login, explained: journalctl -x shows the catalog's text"
nsd_user bob 1002
mkdir -p /etc/nsd/nsd.conf.d
rm -rf /srv/polydir-of-bob
printf '[Polydir journal]\nPath=/srv/polydir-of-bob\nMethod=tmpfs\nOnlyUsers=1002\n' \
        > /etc/nsd/nsd.conf.d/50-refuse-bob.conf
pid=$(nsd_main_pid)
systemctl restart nsd.service
vm_wait_for 30 nsd_restarted "$pid"
if out=$(vm_ssh bob 'echo logged in' 2>&1); then
        nsd_journal_dump
        fail "bob logged in though his namespace cannot be set up: $out"
fi
journalctl --sync
out=$(journalctl -u nsd.service --no-pager -o verbose NSD_EVENT=join-refused USER_ID=1002)
assert_contains "$out" "MESSAGE_ID=7cea993f4b9e4a45943b13b8020d2edb" "join-refused's MESSAGE_ID="
assert_contains "$out" "NSD_REASON=the namespace of uid 1002 cannot be set up" \
        "join-refused's NSD_REASON="
assert_contains "$out" "'/srv/polydir-of-bob': resolve the path without following symbolic links (openat2): No such file or directory" \
        "join-refused's reason: the polydir is missing"
out=$(journalctl -x -u nsd.service --no-pager NSD_EVENT=join-refused USER_ID=1002)
echo "$out" | sed -n '1,12p'
assert_contains "$out" "Subject: nsd refused a login's namespace" "journalctl -x: the catalog's Subject"
assert_contains "$out" "Defined-By: nsd" "journalctl -x: Defined-By"
assert_contains "$out" "nsd refused to hand out the mount namespace of uid 1002" \
        "journalctl -x: the catalog's text, with USER_ID="
assert_contains "$out" "What to do depends on the reason" "journalctl -x: what to do"
assert_contains "$(journalctl -x -u nsd.service --no-pager NSD_EVENT=setup-refused USER_ID=1002)" \
        "Subject: A user's namespace was refused: its setup failed" \
        "journalctl -x explains the setup's refusal too"

say "bob's polydir made: his next login is in a namespace set up with it (openat2 under nsd.service)"
mkdir -m 0755 /srv/polydir-of-bob
pid=$(nsd_main_pid)
systemctl restart nsd.service # forgets the refusal it repeats for 5 s
vm_wait_for 30 nsd_restarted "$pid"
out=$(vm_ssh bob 'findmnt -n -o FSTYPE /srv/polydir-of-bob') ||
        { nsd_journal_dump; fail "bob cannot log in once his polydir exists: $out"; }
assert_eq tmpfs "$out" "bob's polydir in his namespace"
rm /etc/nsd/nsd.conf.d/50-refuse-bob.conf
rmdir /srv/polydir-of-bob
say "ok"
