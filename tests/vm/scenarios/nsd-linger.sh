#!/bin/bash
# nsd-linger: what linger releases and what it keeps, under systemd as PID 1 (tests/vm/run
# --init systemd), nsd from the built units with Linger=6 and real ssh logins:
#  a) a host mount (shared, there before alice's namespace is made, so her namespace receives
#     it) and a mount of alice's own (a tmpfs she mounts herself: an fstab entry with "user",
#     no process behind it); she logs out, the host unmounts its mount (gone in her namespace
#     too): past the linger time her namespace is kept, nsd says why (her mount), and her next
#     login is in the same namespace with her file on her mount. Once she unmounts it and logs
#     out, the namespace is released.
#  b) a process bob leaves running (setsid) keeps his namespace after his logout, check after
#     check; once it is killed (bob made no mount) nsd releases the namespace and says why.
#  c) a user service of carol's (her lingering systemd --user, which joins through the
#     systemd-user PAM stack) keeps her namespace after her ssh logout: the manager's session
#     stays; `loginctl disable-linger` stops the manager, then the namespace is released.
#  d) dave logs in and out, leaving nothing: his namespace is released at linger's first look,
#     with the reason, and his next login gets a new one.
# Every wait is for a condition (a journal line, a session count); "past the linger time" is
# a linger check nsd logged (at debug when the reason did not change).
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"

vm_needs_systemd

LINGER=6
released="(linger time over: no session, no process and no mount of its own in it)"

# cursor: the journal cursor of nsd's last entry (everything logged so far is written)
cursor() {
        journalctl --sync
        journalctl -u nsd.service -n 1 --show-cursor --no-pager -o cat | sed -n 's/^-- cursor: //p'
}
# j_lines CURSOR [MATCH...]: nsd's journal after CURSOR (from the start when empty)
j_lines() {
        local c=$1
        shift
        journalctl -u nsd.service --no-pager -o cat ${c:+--after-cursor "$c"} "$@"
}
# j_count CURSOR TEXT: lines after CURSOR containing TEXT (a fixed string)
j_count() { j_lines "$1" | grep -cF -- "$2" || true; }
j_has_n() { [ "$(j_count "$2" "$3")" -ge "$1" ]; }
# j_wait SECONDS N CURSOR TEXT: until N lines after CURSOR contain TEXT; the deadline is
# wall-clock time, however long each look at the (debug) journal takes
j_wait() {
        local end=$((SECONDS + $1))
        while [ "$SECONDS" -le "$end" ]; do
                j_has_n "$2" "$3" "$4" && return 0
                sleep 0.5
        done
        nsd_journal_dump
        fail "nsd's journal has not $2 line(s) with '$4' after $1 s"
}
sessions_are() { [ "$(nsd_sessions_of "$1")" = "$2" ]; }
wait_sessions() { # wait_sessions USER N
        vm_poll 60 sessions_are "$1" "$2" && return 0
        nsd_journal_dump
        fail "$1 has $(nsd_sessions_of "$1") sessions, expected $2"
}
user_listed() { [ -n "$(nsd_ns_inode "$1")" ]; }
carol_job_runs() { [ "$(vm_user_systemctl carol show -p MainPID --value carol-job.service)" -gt 0 ]; }
# assert_kept USER NS WHAT: nsd still holds USER's namespace NS, not released
assert_kept() {
        assert_eq "$2" "$(nsd_ns_inode "$1")" "$3: $1's namespace in nsctl list"
        assert_eq 0 "$(j_count "" "Released the namespace of uid $(id -u "$1")")" \
                "$3: releases of $1's namespace in nsd's journal"
}

say "nsd from the built units, Linger=$LINGER, logging at debug (linger's every check)"
nsd_units_start '[Namespaces]' "Linger=$LINGER"
mkdir -p /etc/systemd/system/nsd.service.d
printf '[Service]\nExecStart=\nExecStart=%s --log-level debug\n' "$NSD_BIN" \
        > /etc/systemd/system/nsd.service.d/debug.conf
systemctl daemon-reload
systemctl start systemd-user-sessions.service
# pam_nsjoin the Debian way (libpam-nsjoin's profile, pointing at the built module): it reaches
# systemd --user's stack (systemd-user includes common-session-noninteractive). sshd gets a
# stack of its own without pam_systemd, so no ssh login starts a user manager.
export DEBIAN_FRONTEND=noninteractive
nsd_enable_profile
vm_start_sshd --pam-session "$(nsd_pam_line required)"
nsd_user alice 1001
nsd_user bob 1002
nsd_user carol 1003
nsd_user dave 1004

# leave PIDFILE CMD...: CMD detached from the login (a session of its own, stdio closed); its
# pid written to PIDFILE whole
leave=$VM_TMPDIR/leave
cat > "$leave" << 'SH'
#!/bin/sh
f=$1
shift
setsid -f sh -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' "$f" "$@" \
        < /dev/null > /dev/null 2>&1
SH
chmod 0755 "$leave"

# ---- c) carol's lingering user manager and a user service --------------------------------
say "c) loginctl enable-linger carol: her systemd --user joins her namespace"
loginctl enable-linger carol
vm_wait_for 180 systemctl is-active --quiet user@1003.service
vm_wait_for 30 user_listed carol
ns_c=$(nsd_ns_inode carol)
mgr=$(systemctl show -p MainPID --value user@1003.service)
assert_eq "$ns_c" "$(vm_ns_of "$mgr")" "carol's systemd --user"
wait_sessions carol 1
say "c) carol logs in, starts a user service and logs out"
cur_c=$(cursor)
out=$(vm_ssh carol 'XDG_RUNTIME_DIR=/run/user/$(id -u) systemd-run --user --quiet --unit=carol-job sleep 1000 &&
        stat -L -c %i /proc/self/ns/mnt') || { nsd_journal_dump; fail "carol's user service: $out"; }
assert_eq "$ns_c" "$out" "carol's ssh login"
vm_wait_for 30 carol_job_runs
svc=$(vm_user_systemctl carol show -p MainPID --value carol-job.service)
assert_eq "$ns_c" "$(vm_ns_of "$svc")" "carol's user service"
wait_sessions carol 1

# ---- a) a host mount, then alice's own mount; she logs out; the host unmounts -------------
say "a) the host mounts a shared tmpfs on /media/nsd-usb (before alice's namespace exists)"
mkdir -p /media/nsd-usb
mount -t tmpfs -o size=1m nsd-usb /media/nsd-usb
vm_on_exit "umount /media/nsd-usb 2> /dev/null; rmdir /media/nsd-usb 2> /dev/null"
echo "the host's disk" > /media/nsd-usb/label
assert_eq shared "$(findmnt -n -o PROPAGATION /media/nsd-usb)" "the host mount's propagation"
# a mount alice makes herself with nothing running behind it: mount(8) is setuid root and
# mounts fstab entries marked "user" for anyone
install -d -o alice -g alice -m 0700 /home/alice/vault
cp /etc/fstab "$VM_TMPDIR/fstab"
vm_on_exit "cp $VM_TMPDIR/fstab /etc/fstab"
echo "alice-vault /home/alice/vault tmpfs noauto,user,size=1m,mode=0700,uid=1001,gid=1001 0 0" >> /etc/fstab

say "a) alice logs in, sees the host's mount, mounts ~/vault herself, writes to it, logs out"
out=$(vm_ssh alice 'cat /media/nsd-usb/label && findmnt -n -o PROPAGATION /media/nsd-usb &&
        mount ~/vault && echo "note of alice" > ~/vault/note &&
        findmnt -n -o FSTYPE ~/vault && findmnt -n -o PROPAGATION ~/vault &&
        stat -L -c %i /proc/self/ns/mnt') || { nsd_journal_dump; fail "alice's login: $out"; }
ns_a=$(echo "$out" | sed -n 5p)
# the host's mount a slave of its peer group (received), hers private under a slave mount
assert_eq "the host's disk
private,slave
tmpfs
private" "$(echo "$out" | sed -n 1,4p)" "alice's view of the host mount and of her own"
assert_eq "$ns_a" "$(nsd_ns_inode alice)" "alice's namespace in nsctl list"
wait_sessions alice 0
say "a) the host unmounts /media/nsd-usb: gone in alice's namespace too, her mount stays"
umount /media/nsd-usb
cur_a=$(cursor)
out=$("$NSCTL" show alice --raw --noheadings -o TARGET) || { nsd_journal_dump; fail "nsctl show alice"; }
assert_contains "$out" "/home/alice/vault" "nsctl show alice after the host unmount"
assert_not_contains "$out" "/media/nsd-usb" "nsctl show alice after the host unmount"

# ---- b) bob leaves a process running ----------------------------------------------------
say "b) bob logs in, leaves a process running (setsid), logs out"
cur_b=$(cursor)
ns_b=$(vm_ssh bob "$leave ~/left.pid sleep 1000; stat -L -c %i /proc/self/ns/mnt") ||
        { nsd_journal_dump; fail "bob's login: $ns_b"; }
vm_wait_for 30 test -s /home/bob/left.pid
left=$(cat /home/bob/left.pid)
assert_eq "$ns_b" "$(vm_ns_of "$left")" "bob's process left behind"
assert_eq "$ns_b" "$(nsd_ns_inode bob)" "bob's namespace in nsctl list"
wait_sessions bob 0

# ---- d) dave leaves nothing -------------------------------------------------------------
say "d) dave logs in and out, leaving nothing"
cur_d=$(cursor)
ns_d=$(vm_ssh dave 'stat -L -c %i /proc/self/ns/mnt') || { nsd_journal_dump; fail "dave's login: $ns_d"; }
assert_eq "$ns_d" "$(nsd_ns_inode dave)" "dave's namespace in nsctl list"
j_wait 90 1 "$cur_d" "Released the namespace of uid 1004 $released"
assert_eq "" "$(nsd_ns_inode dave)" "dave's namespace after linger"
assert_eq 0 "$(j_count "$cur_d" "Keeping the namespace of uid 1004")" \
        "linger's keeps of dave's empty namespace (released at the first look)"
say "d) dave's next login: a new namespace"
vm_ssh dave true || { nsd_journal_dump; fail "dave's second login"; }
assert_eq 2 "$(j_count "$cur_d" "Created the namespace of uid 1004")" "dave's namespaces created"

# ---- a) past the linger time ------------------------------------------------------------
say "a) past the linger time: alice's namespace is kept for her mount"
j_wait 90 1 "$cur_a" "Keeping the namespace of uid 1001: it holds 1 mount of its own (tmpfs on /home/alice/vault)"
assert_kept alice "$ns_a" "after linger's check"
out=$(vm_ssh alice 'stat -L -c %i /proc/self/ns/mnt; cat ~/vault/note; findmnt -n -o FSTYPE ~/vault;
        test -e /media/nsd-usb/label && echo "host mount here" || echo "host mount gone"') ||
        { nsd_journal_dump; fail "alice's next login: $out"; }
assert_eq "$ns_a
note of alice
tmpfs
host mount gone" "$out" "alice's next login (namespace, her file, her mount, the host's)"
say "a) alice unmounts ~/vault and logs out: nothing of hers is left, the namespace goes"
cur_a=$(cursor)
vm_ssh alice 'umount ~/vault' || { nsd_journal_dump; fail "alice cannot unmount ~/vault"; }
j_wait 90 1 "$cur_a" "Released the namespace of uid 1001 $released"
assert_eq "" "$(nsd_ns_inode alice)" "alice's namespace after her unmount"

# ---- b) past the linger time, check after check -----------------------------------------
say "b) bob's namespace is kept for his process, at linger's first and next check"
keep_b="Keeping the namespace of uid 1002: 1 process still in it (pid $left)"
j_wait 90 2 "$cur_b" "$keep_b"
assert_kept bob "$ns_b" "after two of linger's checks"
say "b) bob's process killed: the namespace is released"
kill "$left"
j_wait 90 1 "$cur_b" "Released the namespace of uid 1002 $released"
assert_eq "" "$(nsd_ns_inode bob)" "bob's namespace after his process ended"

# ---- c) past the linger time (dave's release came after carol's logout) ------------------
say "c) carol's namespace is still held by her user manager and its service"
assert_kept carol "$ns_c" "after dave's, alice's and bob's releases"
assert_eq 1 "$(nsd_sessions_of carol)" "carol's sessions (her user manager's)"
kill -0 "$svc" || fail "carol's user service is gone"
# her ssh logout was not her last session: linger never started
assert_eq 0 "$(j_count "$cur_c" "Last session of uid 1003 ended")" "linger countdowns of carol's"
assert_eq 0 "$(j_count "$cur_c" "Keeping the namespace of uid 1003")" "linger's checks of carol's"
assert_eq "$ns_c" "$(vm_ns_of "$svc")" "carol's user service"
say "c) loginctl disable-linger carol: her manager stops, then the namespace goes"
cur_c=$(cursor)
loginctl disable-linger carol
vm_wait_for 120 sh -c '! systemctl is-active --quiet user@1003.service'
j_wait 90 1 "$cur_c" "Last session of uid 1003 ended, Linger=$LINGER"
j_wait 90 1 "$cur_c" "Released the namespace of uid 1003 $released"
assert_eq "" "$(nsd_ns_inode carol)" "carol's namespace after her manager stopped"
! kill -0 "$svc" 2> /dev/null || fail "carol's user service still runs"

journalctl --sync
j_lines "" | grep -E '^(Keeping|Released) the namespace' | sort | uniq -c
say "ok"
