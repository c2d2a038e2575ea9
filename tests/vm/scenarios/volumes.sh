#!/bin/bash
# volumes: issue 25's first slice ([Volume NAME], a kernel file system mounted in the user's
# namespace when it is made), under systemd as PID 1 (tests/vm/run --init systemd) with nsd
# from the built units, the host's sshd and su, and pam_nsjoin in Debian's common-session.
# One drop-in: an ext4 image /srv/vol/%u.img (made here with mkfs.ext4, root's, 0600) on
# %h/vault for alice and carol.
#  1. alice made ~/vault a symbolic link to /etc before she has a namespace: her ssh login is
#     refused, nsd's setup-failed event names the volume, its file:line and the path; nothing
#     is mounted on /etc, no namespace pinned, no loop device attached.
#  2. with ~/vault a directory again: her login sees the volume (ext4 from a loop device,
#     nosuid,nodev,noatime in her own /proc/self/mountinfo); a file written there in one login
#     is there in a second ssh login and in su -l; the event volume-mounted names source, type
#     and target; the loop device is autoclear, backed by the image.
#  3. root in the initial namespace and bob (not a member) do not list it in their mount
#     tables, and alice's file is not in root's view of /home/alice/vault.
#  4. carol's image is hers (writable by the user): her login is refused with the clear
#     reason, and no loop device is attached for it.
#  5. alice's namespace released (nsctl release, no session left) while a process of root's
#     outside her namespace holds a file of her vault open: refused, naming that process (pid
#     and command), in the reply, the journal (volume-busy) and nsctl volumes' WHY (protocol
#     1.10); her namespace, her vault and its
#     loop device stay. Once it let go: nsd unmounts the vault itself before the namespace
#     goes (volume-unmounted, "its loop device is cleared"), the loop device is gone, the
#     image keeps the file.
#  6. a second drop-in gives dave a volume whose image is missing, with OnFailure=continue:
#     his login goes on, in a namespace of his own without it, and setup-failed names it.
#  7. an sshfs volume for alice (Type=sshfs, Source=%u@127.0.0.1:/srv/remote-%u): nsd mounts
#     nothing; at her login her own service manager (inside her namespace) runs
#     nsd-volumes.service, which starts nsd-volume@remote.service, which runs nsctl run-volume,
#     which becomes sshfs as alice: her second login reads the remote file, with nosuid,nodev;
#     the daemon is alice's, in her namespace; root and bob do not list the mount; nsctl
#     volumes says user-manager; run-volume outside her namespace, or of a kernel volume,
#     is refused with the reason.
#  8. with Linger=0: a process alice left behind keeps her namespace and vault (and her user
#     manager, whose session in nsd ends only after it);
#     once it and her manager are gone, linger releases it: nsd unmounts the vault first
#     (volume-unmounted, "linger time over"), the loop device is cleared.
#  9. kernel volumes started later (protocol 1.11): bob's ext4 desk (Start=login) is mounted
#     by his manager's nsctl start-volumes, his box (Start=request) is stopped until he runs
#     nsctl start box: then mounted in his namespace only; a second start mounts nothing more
#     (one mount, one loop device); nsctl stop box while his own process sits in it is refused
#     naming it, then unmounts it and frees the loop device; nsd killed (SIGKILL) while it
#     mounts it: the next start leaves exactly one mount and one loop device; a ~/box made a link to /etc: the
#     start is refused with the reason, nothing mounted. With Linger=300, bob's last session
#     ends: his desk (Release=last-session) is unmounted by nsd once no process of his is left,
#     its loop device freed, his namespace kept.
#  nsctl volumes (protocol 1.7): after 2, root's shows alice's vault mounted on her loop
#  device, and (1.8) NOW follows what is mounted: not-mounted while root has moved it away in
#  her namespace, mounted once it is back;
#  device and alice's her own; after 3, bob's shows nothing (his namespace has no volume);
#  nsd restarted, root's still shows it (the record is in the state file); after 6, dave's
#  scratch is "failed" with the reason setup-failed logged.
#   Args: BUILD-DIR
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"

vm_needs_systemd
for p in mkfs.ext4 losetup findmnt su truncate; do
        command -v "$p" > /dev/null || skip "$p is not installed (tools/deps)"
done
grep -qw ext4 /proc/filesystems || skip "the VM's kernel has no ext4"
[ -e /dev/loop-control ] || skip "the VM's kernel has no loop devices"

# Under a custom boot target /run/nologin stays until this runs (VM-NOTES.md)
systemctl start systemd-user-sessions.service

dropins=/etc/nsd/nsd.conf.d
vol=/srv/vol
vm_on_exit "rm -rf $vol"

journal_dump() {
        vm_sshd_log | tail -20 >&2
        journalctl --no-pager -n 80 >&2 || true
}
# loops_of FILE: the loop devices backed by FILE, "NAME AUTOCLEAR" per line
loops_of() { losetup --list --noheadings --raw -O NAME,AUTOCLEAR,BACK-FILE | awk -v f="$1" '$3 == f { print $1, $2 }'; }
no_loop_of() { [ -z "$(loops_of "$1")" ]; }
# dropin_in FILE WANT: stdin as the drop-in FILE (root's, 0644); nsd --check-config says WANT;
# nsd reloaded
dropin_in() {
        local out
        cat > "$dropins/$1"
        chmod 0644 "$dropins/$1"
        out=$("$NSD_BIN" --check-config 2>&1) || fail "nsd --check-config: $out"
        assert_contains "$out" "$2" "nsd --check-config with $1"
        systemctl reload nsd.service || fail "systemctl reload nsd"
}
no_session_of() { [ "$(nsd_sessions_of "$1")" = 0 ] || [ -z "$(nsd_sessions_of "$1")" ]; }

say "nsd from the built units; pam_nsjoin in common-session"
nsd_units_start '[Namespaces]' 'Users=@regular'
nsd_setup_debian_pam timeout=60 debug
vm_start_sshd --debian-pam
nsd_user alice 1001
nsd_user bob 1002
nsd_user carol 1003
init_ns=$(vm_ns_of 1)

say "ext4 images for alice (root's, 0600, its root directory hers) and carol (hers: refused)"
install -d -m 0755 "$vol"
for u in alice carol; do
        truncate -s 16M "$vol/$u.img"
        mkfs.ext4 -q -F -E "root_owner=$(id -u $u):$(id -g $u)" "$vol/$u.img" ||
                fail "mkfs.ext4 $vol/$u.img"
        chmod 0600 "$vol/$u.img"
done
chown carol: "$vol/carol.img"
install -d -m 0755 /etc/nsd "$dropins"
cat > "$dropins/60-vault.conf" << 'CONF'
[Volume vault]
Type=ext4
Source=/srv/vol/%u.img
Where=%h/vault
Options=noatime
Users=alice carol
CONF
chmod 0644 "$dropins/60-vault.conf"
out=$("$NSD_BIN" --check-config 2>&1) || fail "nsd --check-config: $out"
echo "$out"
assert_contains "$out" "OK, with 1 drop-in: 0 polydirs, 0 read-only binds, 0 shares, 1 volume, setup generation" \
        "nsd --check-config"
systemctl reload nsd.service 2> /dev/null || true

# ---- 1. ~/vault a symbolic link to /etc -----------------------------------------------------
say "1. alice makes ~/vault a symbolic link to /etc before she has a namespace"
reason="volume 'vault' ($dropins/60-vault.conf:1): '/home/alice/vault' is a symbolic link, or one is on the way to it: refused"
nsd_symlink_refused alice 1001 /home/alice/vault "$reason" \
        "nsd says: the namespace of uid 1001 cannot be set up: volume 'vault'"
assert_eq "" "$(loops_of "$vol/alice.img")" "loop devices of alice.img after the refusal"

say "1. alice puts ~/vault back as a directory: her login works (after the failure's 5 s)"
vm_run_as alice sh -c 'rm ~/vault && mkdir -m 0755 ~/vault'
vm_poll 120 vm_ssh alice true || { journal_dump; fail "alice cannot log in with ~/vault a directory"; }

# ---- 2. alice's logins see the volume -------------------------------------------------------
say "2. alice's ssh login: the volume in her mount table, a file written in it"
out=$(vm_ssh alice 'stat -L -c %i /proc/self/ns/mnt &&
        awk '\''$5 == "/home/alice/vault" { print $6; print $(NF-2), $(NF-1) }'\'' /proc/self/mountinfo &&
        echo "secret of alice" > ~/vault/file && stat -c "%U %a" ~/vault') ||
        { journal_dump; fail "alice's ssh login: $out"; }
echo "$out"
ns=$(echo "$out" | sed -n 1p)
assert_eq "$ns" "$(nsd_ns_inode alice)" "alice's namespace in nsctl list"
assert_ne "$init_ns" "$ns" "alice's namespace"
opts=$(echo "$out" | sed -n 2p)
for o in nosuid nodev noatime rw; do
        assert_contains ",$opts," ",$o," "the mount options of ~/vault in alice's mountinfo"
done
fs_src=$(echo "$out" | sed -n 3p)
assert_eq ext4 "${fs_src%% *}" "the file system on ~/vault"
loop=${fs_src#* }
case $loop in /dev/loop[0-9]*) ;; *) fail "the source of ~/vault is '$loop', not a loop device" ;; esac
assert_eq "alice 755" "$(echo "$out" | sed -n 4p)" "~/vault's root directory (the image's, alice's)"
assert_eq "$loop 1" "$(loops_of "$vol/alice.img")" "the loop device of alice.img (autoclear)"
out=$(nsd_journal NSD_EVENT=volume-mounted USER_ID=1001)
echo "$out"
assert_contains "$out" "volume 'vault' ($dropins/60-vault.conf:1): '$vol/alice.img' (ext4 on $loop) mounted on '/home/alice/vault'" \
        "nsd's volume-mounted event"

say "2. a second ssh login and su -l: the same namespace, the file is there"
assert_eq "$ns secret of alice" "$(vm_ssh alice 'echo $(stat -L -c %i /proc/self/ns/mnt) $(cat ~/vault/file)')" \
        "alice's second ssh login"
assert_eq "$ns secret of alice" "$(su -l alice -c 'echo $(stat -L -c %i /proc/self/ns/mnt) $(cat ~/vault/file)')" \
        "alice's su -l"
assert_eq "$loop 1" "$(loops_of "$vol/alice.img")" "still one loop device of alice.img"

say "2. nsctl volumes: root sees alice's vault mounted on $loop, alice sees her own"
out=$("$NSCTL" volumes --raw --noheadings -o user,volume,type,where,state,loop) ||
        fail "nsctl volumes: $out"
echo "$out"
assert_eq "alice vault ext4 /home/alice/vault mounted $loop" "$out" "root's nsctl volumes"
out=$(vm_ssh alice "$NSCTL volumes --raw --noheadings -o uid,volume,state") ||
        fail "alice's nsctl volumes: $out"
assert_eq "1001 vault mounted" "$out" "alice's nsctl volumes"
# what is mounted now (protocol 1.8), not only what the setup did: root moves it away inside
# her namespace (an unmount would free its auto-clearing loop device) and back
assert_eq "vault mounted mounted" "$("$NSCTL" volumes --raw --noheadings -o volume,state,now)" \
        "nsctl volumes' NOW"
"$NSCTL" enter alice -- sh -c 'mkdir -m 0700 /home/alice/.vault-away && mount --move /home/alice/vault /home/alice/.vault-away' ||
        fail "move alice's vault away inside her namespace"
assert_eq "vault mounted not-mounted" "$("$NSCTL" volumes --raw --noheadings -o volume,state,now)" \
        "nsctl volumes' NOW with nothing on her ~/vault"
"$NSCTL" enter alice -- sh -c 'mount --move /home/alice/.vault-away /home/alice/vault && rmdir /home/alice/.vault-away' ||
        fail "move alice's vault back"
assert_eq "vault mounted mounted" "$("$NSCTL" volumes --raw --noheadings -o volume,state,now)" \
        "nsctl volumes' NOW once it is back"

# ---- 3. nobody else lists it ------------------------------------------------------------------
say "3. root in the initial namespace and bob do not list it"
assert_eq "" "$(awk '$5 ~ /vault/ || $(NF-1) ~ /^\/dev\/loop/' /proc/self/mountinfo)" \
        "the initial namespace's mount table (a vault or a loop device)"
[ ! -e /home/alice/vault/file ] || fail "root in the initial namespace sees alice's file in ~/vault"
out=$(vm_ssh bob 'stat -L -c %i /proc/self/ns/mnt') || { journal_dump; fail "bob's ssh login: $out"; }
bob_ns=$(nsd_ns_inode bob)
assert_eq "$bob_ns" "$out" "bob's namespace"
assert_ne "$ns" "$bob_ns" "bob's namespace"
assert_eq "" "$(vm_ssh bob 'awk '\''$5 ~ /vault/ || $(NF-1) ~ /^\/dev\/loop/'\'' /proc/self/mountinfo')" \
        "bob's mount table (a vault or a loop device)"
assert_eq "" "$(vm_ssh bob 'ls -A /home/alice/vault')" "bob's view of /home/alice/vault (empty)"
out=$(vm_ssh bob "$NSCTL volumes --raw --noheadings") || fail "bob's nsctl volumes: $out"
assert_eq "" "$out" "bob's nsctl volumes (his namespace has none, alice's are not his)"

say "3. nsd restarted: alice's volume and its record are kept"
pid=$(nsd_main_pid)
systemctl restart nsd.service
vm_poll 30 nsd_restarted "$pid" || { nsd_journal_dump; fail "nsd did not come back"; }
# (her namespace is adopted from its pin as nsd starts: poll until it is)
vm_poll 30 sh -c "[ \"\$('$NSCTL' volumes --raw --noheadings -o user,volume,state,loop)\" = 'alice vault mounted $loop' ]" ||
        true
out=$("$NSCTL" volumes --raw --noheadings -o user,volume,state,loop) || fail "nsctl volumes: $out"
assert_eq "alice vault mounted $loop" "$out" "root's nsctl volumes after a restart of nsd"
assert_eq "$ns secret of alice" "$(vm_ssh alice 'echo $(stat -L -c %i /proc/self/ns/mnt) $(cat ~/vault/file)')" \
        "alice's ssh login after the restart"

# ---- 4. carol's image is hers -----------------------------------------------------------------
say "4. carol's image is writable by carol: her login is refused"
install -d -o carol -g carol -m 0700 /home/carol/vault
if out=$(vm_ssh carol 'echo logged in' 2>&1); then
        fail "carol's login with an image of her own was not refused: $out"
fi
out=$(nsd_journal NSD_EVENT=setup-failed USER_ID=1003)
echo "$out"
assert_contains "$out" "volume 'vault' ($dropins/60-vault.conf:1): the image '$vol/carol.img' must be owned by root and writable by nobody else (it is uid 1003's, mode 0600): refused" \
        "nsd's setup-failed event for carol"
assert_eq "" "$(nsd_ns_inode carol)" "carol's namespace after the refusal"
assert_eq "" "$(loops_of "$vol/carol.img")" "loop devices of carol.img"

# ---- 5. released with the namespace -----------------------------------------------------------
say "5. alice's namespace released: refused while root's process holds her file, then unmounted by nsd"
vm_poll 60 no_session_of alice || fail "alice still has sessions: $(nsd_sessions_of alice)"
# a process of hers to reach her namespace through; root's holder opens her file through it
vm_ssh alice 'exec sleep 600' &
vm_poll 30 pgrep -U alice -x sleep > /dev/null || fail "alice's sleep did not start"
apid=$(pgrep -U alice -x sleep | head -1)
sleep 600 < "/proc/$apid/root/home/alice/vault/file" &
holder=$!
vm_on_exit "kill $holder 2> /dev/null"
# her user manager (started by her logins) is a process in the namespace too: gone first
loginctl terminate-user alice 2> /dev/null || true
pkill -U alice -x sleep 2> /dev/null || true
vm_poll 60 sh -c '! pgrep -U alice > /dev/null' || fail "alice's processes are still there: $(pgrep -a -U alice)"
vm_poll 60 no_session_of alice || fail "alice still has sessions: $(nsd_sessions_of alice)"
ns=$(nsd_ns_inode alice)
[ -n "$ns" ] || fail "alice has no namespace before the release"
if out=$("$NSCTL" release alice 2>&1); then
        fail "nsctl release alice while root's pid $holder holds her file: not refused ($out)"
fi
echo "$out"
assert_contains "$out" "volume 'vault' on /home/alice/vault is in use by pid $holder (sleep)" \
        "nsctl release's error while the vault is held"
out=$(nsd_journal NSD_EVENT=volume-busy USER_ID=1001)
assert_contains "$out" "Cannot release the namespace of uid 1001 (asked by uid 0" "nsd's volume-busy event"
assert_contains "$out" "in use by pid $holder (sleep)" "nsd's volume-busy event"
assert_eq "$ns" "$(nsd_ns_inode alice)" "alice's namespace after the refused release"
# protocol 1.10: nsctl volumes says who held it at the refused release
out=$("$NSCTL" volumes --noheadings -o volume,state,why) || fail "nsctl volumes: $out"
echo "$out"
assert_contains "$out" "in use by pid $holder (sleep)" "nsctl volumes' WHY after the refused release"
assert_eq "$loop 1" "$(loops_of "$vol/alice.img")" "the loop device of alice.img after the refused release"
kill "$holder"
wait "$holder" 2> /dev/null || true # killed: 143
"$NSCTL" release alice || { nsd_journal_dump; fail "nsctl release alice"; }
assert_eq "" "$(nsd_ns_inode alice)" "alice's namespace after the release"
# nsd unmounted it before the namespace went: the loop device is cleared at once
assert_eq "" "$(loops_of "$vol/alice.img")" "the loop device of alice.img after the release"
out=$(nsd_journal NSD_EVENT=volume-unmounted USER_ID=1001)
assert_contains "$out" "Unmounted volume 'vault' of uid 1001 from /home/alice/vault (asked by uid 0" \
        "nsd's volume-unmounted event"
assert_contains "$out" "its loop device is cleared" "nsd's volume-unmounted event"
assert_eq "" "$(nsd_journal NSD_EVENT=volume-released USER_ID=1001)" \
        "volume-released events for alice (her block volume was unmounted before)"
install -d -m 0700 "$VM_TMPDIR/check"
mount -o ro,nosuid,nodev,noexec "$vol/alice.img" "$VM_TMPDIR/check" || fail "mount alice.img to check it"
assert_eq "secret of alice" "$(cat "$VM_TMPDIR/check/file")" "alice's file in the image"
umount "$VM_TMPDIR/check"

# ---- 6. OnFailure=continue ------------------------------------------------------------------
say "6. dave's volume has no image, OnFailure=continue: his login goes on without it"
nsd_user dave 1004
install -d -o dave -g dave -m 0700 /home/dave/scratch
dropin_in 61-scratch.conf "2 volumes" << 'CONF'
[Volume scratch]
Type=ext4
Source=/srv/vol/missing-%u.img
Where=%h/scratch
Users=dave
OnFailure=continue
CONF
out=$(vm_ssh dave 'stat -L -c %i /proc/self/ns/mnt; findmnt -n -o FSTYPE ~/scratch || echo none') ||
        { journal_dump; fail "dave's login with OnFailure=continue was refused: $out"; }
echo "$out"
assert_eq "$(nsd_ns_inode dave)" "$(echo "$out" | sed -n 1p)" "dave's namespace (handed out)"
assert_ne "$init_ns" "$(echo "$out" | sed -n 1p)" "dave's namespace"
assert_eq none "$(echo "$out" | sed -n 2p)" "a mount on dave's ~/scratch"
out=$(nsd_journal NSD_EVENT=setup-failed USER_ID=1004)
echo "$out"
assert_contains "$out" "volume 'scratch' ($dropins/61-scratch.conf:1)" \
        "nsd's setup-failed event for dave's volume"
out=$("$NSCTL" volumes --noheadings -o user,volume,state) || fail "nsctl volumes: $out"
echo "$out"
assert_eq "dave scratch failed" "$(echo $out)" "root's nsctl volumes: dave's scratch"
why=$("$NSCTL" volumes --noheadings -o why)
assert_contains "$why" "volume 'scratch' ($dropins/61-scratch.conf:1): '/srv/vol/missing-dave.img'" \
        "the reason nsctl volumes gives"
assert_contains "$why" "No such file or directory" "the reason nsctl volumes gives"
"$NSCTL" list

# ---- 7. a FUSE volume run by alice's own service manager -----------------------------------
say "7. an sshfs volume: alice's service manager runs it inside her namespace"
command -v sshfs > /dev/null || fail "sshfs is not installed (tools/deps)"
nsd_install_user_units
install -d -o alice -g alice -m 0700 /srv/remote-alice
echo "remote file of alice" > /srv/remote-alice/hello
chown alice: /srv/remote-alice/hello
vm_on_exit "rm -rf /srv/remote-alice"
printf '127.0.0.1 %s\n' "$(cut -d' ' -f1,2 /etc/ssh/ssh_host_ed25519_key_nsd-vm.pub)" > /home/alice/.ssh/known_hosts
chown alice: /home/alice/.ssh/known_hosts
install -d -o alice -g alice -m 0700 /home/alice/remote
dropin_in 62-remote.conf "3 volumes" << 'CONF'
[Volume remote]
Type=sshfs
Source=%u@127.0.0.1:/srv/remote-%u
Where=%h/remote
Options=reconnect,ServerAliveInterval=15
Users=alice
CONF
# a login that stays (her manager lives as long as she has a session)
vm_ssh alice 'sleep 300' > /dev/null 2>&1 &
stay=$!
vm_on_exit "kill $stay 2> /dev/null"
remote_mounted() { [ "$(vm_ssh alice 'findmnt -n -o FSTYPE ~/remote')" = fuse.sshfs ]; }
vm_poll 90 remote_mounted || {
        vm_user_systemctl alice status --no-pager nsd-volumes.service 'nsd-volume@remote.service' >&2 || true
        journal_dump
        fail "alice's ~/remote is not an sshfs mount after 90 s"
}
out=$(vm_ssh alice 'stat -L -c %i /proc/self/ns/mnt; cat ~/remote/hello;
        awk '\''$5 == "/home/alice/remote" { print $6; print $(NF-1) }'\'' /proc/self/mountinfo')
echo "$out"
ns=$(nsd_ns_inode alice)
assert_eq "$ns" "$(echo "$out" | sed -n 1p)" "alice's namespace"
assert_eq "remote file of alice" "$(echo "$out" | sed -n 2p)" "the remote file in alice's second login"
for o in nosuid nodev; do
        assert_contains ",$(echo "$out" | sed -n 3p)," ",$o," "the mount options of ~/remote"
done
assert_eq "alice@127.0.0.1:/srv/remote-alice" "$(echo "$out" | sed -n 4p)" "the source of ~/remote"
pid=$(vm_user_systemctl alice show -p MainPID --value nsd-volume@remote.service)
[ -n "$pid" ] && [ "$pid" != 0 ] || fail "nsd-volume@remote.service has no main process"
assert_eq sshfs "$(cat "/proc/$pid/comm")" "the unit's main process"
assert_eq "$(id -u alice)" "$(stat -c %u "/proc/$pid")" "the owner of the sshfs process"
assert_eq "$ns" "$(vm_ns_of "$pid")" "the namespace of the sshfs process"
assert_eq "" "$(awk '$9 == "fuse.sshfs"' /proc/self/mountinfo)" "sshfs mounts in the initial namespace"
assert_eq "" "$(vm_ssh bob "awk '\$9 == \"fuse.sshfs\"' /proc/self/mountinfo")" "sshfs mounts in bob's namespace"
out=$("$NSCTL" volumes --raw --noheadings -o user,volume,type,state)
echo "$out"
assert_contains "$out" "alice remote sshfs user-manager" "root's nsctl volumes"

say "7. run-volume outside her namespace, or of a kernel volume: refused with the reason"
out=$(vm_run_as alice "$NSCTL" run-volume remote 2>&1) && fail "run-volume outside alice's namespace ran: $out"
assert_contains "$out" "this process is not inside your namespace" "run-volume outside the namespace"
out=$(vm_ssh alice "$NSCTL run-volume vault" 2>&1) && fail "run-volume of a kernel volume ran: $out"
assert_contains "$out" "nsd mounts it" "run-volume of alice's ext4 volume"
kill "$stay" 2> /dev/null
say "ok"

# ---- 8. linger releases alice's namespace once nothing of hers is left -----------------------
say "8. Linger=0: alice's vault stays while a process of hers lives, then nsd unmounts it and releases"
ns=$(nsd_ns_inode alice)
[ -n "$ns" ] || fail "alice has no namespace before section 8"
loop=$(loops_of "$vol/alice.img" | cut -d' ' -f1)
[ -n "$loop" ] || fail "alice's vault has no loop device before section 8"
dropin_in 63-linger.conf "3 volumes" << 'CONF'
[Namespaces]
Linger=0
CONF
# her sshfs volume logs her in to 127.0.0.1 itself (a session of hers while it runs, which
# keeps her manager, which keeps sshfs): stopped first, and her manager will not start it again
rm -f "$dropins/62-remote.conf"
systemctl reload nsd.service || fail "systemctl reload nsd"
vm_user_systemctl alice stop nsd-volume@remote.service || fail "stop alice's nsd-volume@remote.service"
# a process left behind, as a tmux server would be (KillUserProcesses=no keeps it in its
# session's scope, and her user manager with it: its session in nsd ends only after it)
left=$(vm_ssh alice 'sleep 3600 < /dev/null > /dev/null 2>&1 & echo $!') || fail "a process of alice's left behind"
# her login of section 7 ends: its remote command ends, the ssh client with it
pkill -u alice -x -f 'sleep 300' || fail "alice's login of section 7 is gone already"
wait "$stay" 2> /dev/null || true
user_closing() { [ "$(loginctl show-user alice -p State --value 2> /dev/null)" = closing ]; }
vm_poll 60 user_closing || {
        loginctl list-sessions >&2
        fail "alice's logind state is not 'closing' after her last logout"
}
# nsd's view: her ssh sessions ended, the one of her manager stays (the process keeps it)
manager_session_only() { [ "$(nsd_sessions_of alice)" = 1 ]; }
vm_poll 60 manager_session_only || fail "alice's sessions in nsd: $(nsd_sessions_of alice), not her manager's alone"
assert_eq "$ns" "$(nsd_ns_inode alice)" "alice's namespace while her process lives"
assert_eq "$loop 1" "$(loops_of "$vol/alice.img")" "the loop device of alice.img while her process lives"
assert_eq "" "$(nsd_journal NSD_EVENT=volume-unmounted USER_ID=1001 | grep 'linger time over' || true)" \
        "a linger unmount while her process lives"
kill "$left" || fail "kill alice's process left behind ($left)"
# her manager (and its sshfs) goes UserStopDelaySec after that; then linger finds nothing of
# hers and releases the namespace, the vault first
vm_poll 90 no_loop_of "$vol/alice.img" || {
        nsd_journal_dump
        fail "the loop device of alice.img after her last process ended: $(loops_of "$vol/alice.img")"
}
no_ns_of() { [ -z "$(nsd_ns_inode "$1")" ]; }
vm_poll 30 no_ns_of alice || fail "alice's namespace after linger's release: $(nsd_ns_inode alice)"
out=$(nsd_journal NSD_EVENT=volume-unmounted USER_ID=1001)
assert_contains "$out" "Unmounted volume 'vault' of uid 1001 from /home/alice/vault (linger time over" \
        "nsd's volume-unmounted event for linger's release"
assert_contains "$(nsd_journal NSD_EVENT=namespace-released USER_ID=1001)" "linger time over" \
        "nsd's namespace-released event for linger's release"

# ---- 9. kernel volumes started later in a namespace that exists (protocol 1.11) ----------------
say "9. bob: an ext4 volume with Start=login (nsd starts it at his first session) and one with Start=request"
for v in desk box; do
        truncate -s 16M "$vol/bob-$v.img"
        mkfs.ext4 -q -F -E "root_owner=$(id -u bob):$(id -g bob)" "$vol/bob-$v.img" ||
                fail "mkfs.ext4 $vol/bob-$v.img"
        chmod 0600 "$vol/bob-$v.img"
        install -d -o bob -g bob -m 0755 "/home/bob/$v"
done
# namespaces outlive their last session now: desk's Release=last-session is seen on its own
dropin_in 63-linger.conf "2 volumes" << 'CONF'
[Namespaces]
Linger=300
CONF
dropin_in 64-later.conf "4 volumes" << 'CONF'
[Volume desk]
Type=ext4
Source=/srv/vol/%u-desk.img
Where=%h/desk
Start=login
Release=last-session
Users=bob

[Volume box]
Type=ext4
Source=/srv/vol/%u-box.img
Where=%h/box
Start=request
Users=bob
CONF
# nsd itself starts a Start=login volume when the user's first session opens (a cron job, a
# login without a service manager): the manager's own start (nsd-volumes.service) is off for
# bob here, so only nsd can mount it
off=/etc/systemd/user/nsd-volumes.service.d
mkdir -p "$off"
printf '[Unit]\nConditionUser=!bob\n' > "$off/50-test-not-bob.conf"
vm_on_exit "rm -f $off/50-test-not-bob.conf"
# a login that stays: his namespace and his manager live as long as it does
vm_ssh bob 'sleep 300' > /dev/null 2>&1 &
stay=$!
vm_on_exit "kill $stay 2> /dev/null"
mounted_on() { [ "$(vm_ssh bob "findmnt -n -o FSTYPE $1")" = ext4 ]; }
vm_poll 90 mounted_on /home/bob/desk || {
        vm_user_systemctl bob status --no-pager nsd-volumes.service >&2 || true
        nsd_journal_dump
        fail "bob's ~/desk (Start=login) is not mounted 90 s after his login"
}
assert_contains "$(nsd_journal NSD_EVENT=volume-starting USER_ID=1002)" \
        "Mounting volume 'desk' of uid 1002 on /home/bob/desk (the first session of uid 1002: pid" \
        "nsd's volume-starting event for bob's desk, at his first session"
assert_contains "$(vm_user_systemctl bob show -p ConditionResult --value nsd-volumes.service)" no \
        "bob's nsd-volumes.service (skipped: nsd alone mounted his desk)"
rm -f "$off/50-test-not-bob.conf"
out=$("$NSCTL" volumes --raw --noheadings -o user,volume,state,now,start,release)
echo "$out"
assert_contains "$out" "bob desk mounted mounted login last-session" \
        "root's nsctl volumes: bob's desk (Start=login, Release=last-session)"
assert_contains "$out" "bob box stopped not-mounted request namespace" \
        "root's nsctl volumes: bob's box (Start=request)"
assert_eq "" "$(vm_ssh bob 'findmnt -n /home/bob/box || true')" "a mount on bob's ~/box before he asks"

say "9. bob starts his box: mounted in his namespace only; a second start mounts nothing more"
out=$(vm_ssh bob "$NSCTL start box" 2>&1) || { nsd_journal_dump; fail "nsctl start box: $out"; }
echo "$out"
assert_contains "$out" "mounted on /home/bob/box" "nsctl start box"
out=$(vm_ssh bob 'echo kept > ~/box/file; findmnt -n -o FSTYPE,OPTIONS ~/box')
assert_contains "$out" "ext4" "bob's ~/box in a second login"
assert_contains ",$(echo "$out" | awk '{ print $2 }')," ",nosuid," "the options of bob's ~/box"
assert_eq "" "$(findmnt -n /home/bob/box || true)" "bob's ~/box in the initial namespace"
boxloop=$(loops_of "$vol/bob-box.img")
assert_eq 1 "$(echo "$boxloop" | grep -c .)" "loop devices of bob-box.img"
out=$(vm_ssh bob "$NSCTL start box" 2>&1) || fail "a second nsctl start box: $out"
assert_contains "$out" "already mounted" "a second nsctl start box"
assert_eq "$boxloop" "$(loops_of "$vol/bob-box.img")" "loop devices of bob-box.img after a second start"
assert_eq 1 "$(vm_ssh bob "awk '\$5 == \"/home/bob/box\"' /proc/self/mountinfo" | grep -c .)" \
        "mounts on bob's ~/box after a second start"

say "9. bob stops his box while his own process sits in it: refused, naming it; then unmounted"
holder=$(vm_ssh bob 'cd ~/box && exec sleep 300 < /dev/null > /dev/null 2>&1 & echo $!') ||
        fail "a process of bob's in ~/box"
out=$(vm_ssh bob "$NSCTL stop box" 2>&1) && fail "nsctl stop box with a process in it: $out"
echo "$out"
assert_contains "$out" "pid $holder (sleep)" "nsctl stop box's refusal"
assert_eq ext4 "$(vm_ssh bob 'findmnt -n -o FSTYPE ~/box')" "bob's ~/box after the refused stop"
kill "$holder" || fail "kill bob's process in ~/box"
out=$(vm_ssh bob "$NSCTL stop box" 2>&1) || { nsd_journal_dump; fail "nsctl stop box: $out"; }
echo "$out"
assert_contains "$out" "unmounted" "nsctl stop box"
assert_eq "" "$(vm_ssh bob 'findmnt -n /home/bob/box || true')" "a mount on bob's ~/box after the stop"
vm_poll 10 no_loop_of "$vol/bob-box.img" || fail "the loop device of bob-box.img after the stop: $(loops_of "$vol/bob-box.img")"
assert_contains "$("$NSCTL" volumes --raw --noheadings -o user,volume,state)" "bob box stopped" \
        "root's nsctl volumes after the stop"
assert_contains "$(nsd_journal NSD_EVENT=volume-unmounted USER_ID=1002)" \
        "Unmounted volume 'box' of uid 1002 from /home/bob/box (asked by uid 1002" \
        "nsd's volume-unmounted event for bob's stop"

say "9. nsd killed (SIGKILL) while it mounts bob's box: then exactly one mount, one loop device"
old=$(nsd_main_pid)
vm_ssh bob "$NSCTL start box" > /dev/null 2>&1 &
starter=$!
# wherever the kill lands (before the request, during the helper's mount, before the reply),
# the outcome must be the same: the helper is not nsd's child to kill, and the next start
# finds the mount it made
kill -KILL "$old"
wait "$starter" 2> /dev/null || true
nsd_wait_for 60 nsd_restarted "$old"
out=$(vm_ssh bob "$NSCTL start box" 2>&1) || { nsd_journal_dump; fail "nsctl start box after nsd's restart: $out"; }
echo "$out"
assert_contains "$out" "mounted on /home/bob/box" "nsctl start box after nsd's restart"
assert_eq 1 "$(vm_ssh bob "awk '\$5 == \"/home/bob/box\"' /proc/self/mountinfo" | grep -c .)" \
        "mounts on bob's ~/box after a start interrupted by SIGKILL and one more"
assert_eq 1 "$(loops_of "$vol/bob-box.img" | grep -c .)" "loop devices of bob-box.img after that"
out=$(vm_ssh bob "$NSCTL stop box" 2>&1) || { nsd_journal_dump; fail "nsctl stop box after the restart: $out"; }
vm_poll 10 no_loop_of "$vol/bob-box.img" || fail "the loop device of bob-box.img after the stop"

say "9. bob makes ~/box a symbolic link to /etc: his start is refused with the reason"
vm_run_as bob sh -c 'rmdir ~/box && ln -s /etc ~/box'
out=$(vm_ssh bob "$NSCTL start box" 2>&1) && fail "nsctl start box with ~/box a link to /etc: $out"
echo "$out"
assert_contains "$out" "'/home/bob/box' is a symbolic link" "nsctl start box's refusal"
assert_eq "" "$(vm_ssh bob 'findmnt -n /etc || true')" "mounts on /etc in bob's namespace"
no_loop_of "$vol/bob-box.img" || fail "a loop device of bob-box.img after the refused start"

say "9. bob's last session ends: his desk (Release=last-session) is unmounted, his namespace stays"
ns=$(nsd_ns_inode bob)
# his login's remote command ends, and the ssh client with it (a kill of the background job
# would leave its ssh running)
pkill -u bob -x -f 'sleep 300' || fail "bob's login of section 9 is gone already"
wait "$stay" 2> /dev/null || true
desk_released() { no_loop_of "$vol/bob-desk.img"; }
vm_poll 90 desk_released || {
        nsd_journal_dump
        fail "bob's desk after his last session: $(loops_of "$vol/bob-desk.img")"
}
assert_contains "$(nsd_journal NSD_EVENT=volume-unmounted USER_ID=1002)" \
        "Unmounted volume 'desk' of uid 1002 from /home/bob/desk (last session ended, no process left in the namespace (Release=last-session)" \
        "nsd's volume-unmounted event for bob's desk"
assert_eq "$ns" "$(nsd_ns_inode bob)" "bob's namespace after his desk was released (Linger=300)"
assert_contains "$("$NSCTL" volumes --raw --noheadings -o user,volume,state)" "bob desk stopped" \
        "root's nsctl volumes after the release at the last session"
say "ok"
