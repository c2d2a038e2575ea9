#!/bin/bash
# shares: issue 24's acceptance for [Share NAME], under systemd as PID 1 (tests/vm/run --init
# systemd) with nsd from the built units, logins over the host's real sshd and pam_nsjoin in
# common-session. Users alice, bob and dave in group "lab"; carol and erin in none.
#   [Share lab]   Path=/srv/nsd-lab    Groups=lab                      (members to members)
#   [Share media] Path=/srv/nsd-media  Users=alice Propagation=host    (the host's mounts too)
#   [Share duo]   Path=/srv/nsd-duo    Groups=lab MaxMembers=2
#   [Share removable] Path=/media Groups=lab Users=erin Propagation=per-user (udisks's /media:
#     the VM's / is an overlay with a tmpfs upper over the host's root, which QEMU exports
#     read-only, so nothing done to /media here reaches the host's)
#  1. alice's bindfs mount under /srv/nsd-lab (made in her ssh login) appears in bob's
#     namespace and bob reads through it; carol (not a member) and root in the initial
#     namespace see no mount there; bob's mount there reaches alice. Every share's mount in a
#     member's namespace is nosuid,nodev.
#  2. Propagation=host: root's tmpfs under /srv/nsd-media in the initial namespace reaches
#     alice's share; alice's mount there does not reach the initial namespace.
#  2b. Propagation=per-user: nsd made /srv/nsd-removable a mount of its own on the host and
#     alice's directory under it (bob's was there, as udisks leaves it); root's tmpfs on
#     alice/usb reaches alice only, the one on bob/usb bob only: in each one's namespace
#     $removable holds only their own directory, and not a line of the other's mount is
#     in /proc/self/mountinfo; carol, not a member, keeps the host's view (both listed, each
#     behind its owner's 0750 directory).
#  2c. erin's directory, $removable/erin, made by carol before erin's first login, with a
#     mount in it: erin's route is refused (share-route-refused in the journal, naming the
#     path, its owner and mode, and what to do), her login works, and nothing of the
#     directory reaches her namespace (her own directory alone, empty); nsctl shares does
#     not list her as a member.
#  3. MaxMembers=2: alice and bob got duo; dave's namespace is made without it (share-full in
#     the journal, naming the share and the limit) and his login works.
#  4. a kill -9 of nsd (systemd restarts it): the share still carries mounts between the
#     living namespaces, and a member whose namespace is made afterwards (dave, released and
#     made again) joins the same peer group: he sees alice's mount.
#     nsctl shares lists each share's members, the mounts under its anchor and its peer
#     group for root; a member sees only its own uid.
#  5. nsd --check-config names FILE:LINE of a share without members.
#   Args: BUILD-DIR
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"

vm_needs_systemd
for p in bindfs findmnt fusermount3; do
        command -v "$p" > /dev/null || skip "$p is not installed (tools/deps)"
done
systemctl start systemd-user-sessions.service

dropins=/etc/nsd/nsd.conf.d
lab=/srv/nsd-lab media=/srv/nsd-media duo=/srv/nsd-duo removable=/media
vm_on_exit "umount -R $media/usb 2> /dev/null; umount -R $removable 2> /dev/null; rm -rf $lab $media $duo $removable/alice $removable/bob $removable/erin"

say "the shares' directories, users, a drop-in"
install -d -m 1777 "$lab" "$duo" "$media"
install -d -m 0755 "$removable"
install -d -m 0755 /etc/nsd "$dropins"
cat > "$dropins/60-shares.conf" << CONF
[Share lab]
Path=$lab
Groups=lab

[Share media]
Path=$media
Users=alice
Propagation=host

[Share duo]
Path=$duo
Groups=lab
MaxMembers=2
MaxMountsPerUser=2

[Share removable]
Path=$removable
Groups=lab
Users=erin
Propagation=per-user
CONF
chmod 0644 "$dropins/60-shares.conf"
out=$("$NSD_BIN" --check-config 2>&1) || fail "nsd --check-config: $out"
echo "$out"
case $out in *warning*) fail "nsd --check-config warns ($removable is root's, 0755): $out" ;; esac

grep -q '^user_allow_other' /etc/fuse.conf 2> /dev/null || echo user_allow_other >> /etc/fuse.conf
nsd_units_start '[Namespaces]' 'Users=@regular'
# timeout= generous: a first login waits for the setup under TCG
nsd_setup_debian_pam timeout=60 debug
vm_start_sshd --debian-pam
groupadd lab
nsd_user alice 1001
nsd_user bob 1002
nsd_user carol 1003
nsd_user dave 1004
nsd_user erin 1005
for u in alice bob dave; do usermod -aG lab "$u"; done
install -d -m 0750 -o root -g bob "$removable/bob" # as udisks leaves it
init_ns=$(vm_ns_of 1)

journal_dump() {
        vm_sshd_log | tail -20 >&2
        journalctl --no-pager -n 80 >&2 || true
}
# mounts_at USER PATH: "FSTYPE OPTIONS" of what is mounted on PATH in USER's login ("-": none)
mounts_at() { vm_ssh "$1" "findmnt -n -r -o FSTYPE,VFS-OPTIONS --mountpoint '$2' | tail -n 1 | grep . || echo -"; }
root_mounts_at() { findmnt -n -r -o FSTYPE --mountpoint "$1" | tail -n 1 | grep . || echo -; }
has_fuse_at() { case $(mounts_at "$1" "$2") in fuse*) return 0 ;; *) return 1 ;; esac; }

# ---- 1. members to members ---------------------------------------------------------------
say "1. alice mounts bindfs on $lab/alice in her ssh login"
out=$(vm_ssh alice "mkdir -p ~/src $lab/alice && echo 'data of alice' > ~/src/file &&
        bindfs -o allow_other ~/src $lab/alice && cat $lab/alice/file && findmnt -n -r -o FSTYPE,VFS-OPTIONS --mountpoint $lab | tail -n 1" 2>&1) ||
        { journal_dump; fail "alice's bindfs under the share: $out"; }
echo "$out"
assert_eq "data of alice" "$(echo "$out" | sed -n 1p)" "alice's bindfs"
share_opts=$(echo "$out" | sed -n 2p)
for o in nosuid nodev; do
        assert_contains ",${share_opts#* }," ",$o," "the share's mount in alice's namespace ($share_opts)"
done
alice_ns=$(nsd_ns_inode alice)
assert_ne "$init_ns" "$alice_ns" "alice's namespace"
journalctl --sync
assert_contains "$(nsd_journal NSD_EVENT=share-anchor)" "share 'lab'" "the journal's share-anchor event"

say "1. bob (a member) sees it and reads through it"
start=$SECONDS
nsd_wait_for 60 has_fuse_at bob "$lab/alice"
echo "# bob saw alice's mount $((SECONDS - start)) s after it was made (including his first login)"
assert_eq "data of alice" "$(vm_ssh bob "cat $lab/alice/file")" "bob reads alice's file through the share"
bob_ns=$(nsd_ns_inode bob)
assert_ne "$alice_ns" "$bob_ns" "bob's namespace"

say "1. carol (not a member) and root in the initial namespace see no mount there"
assert_eq "-" "$(mounts_at carol "$lab/alice")" "carol's view of $lab/alice"
assert_eq "-" "$(mounts_at carol "$lab")" "carol's view of $lab"
assert_eq "-" "$(root_mounts_at "$lab/alice")" "the initial namespace's view of $lab/alice"
assert_eq "-" "$(root_mounts_at "$lab")" "the initial namespace's view of $lab"
[ ! -e "$lab/alice/file" ] || fail "root in the initial namespace reads $lab/alice/file"

say "1. bob's mount reaches alice"
out=$(vm_ssh bob "mkdir -p ~/src $lab/bob && echo 'data of bob' > ~/src/file && bindfs -o allow_other ~/src $lab/bob && cat $lab/bob/file" 2>&1) ||
        fail "bob's bindfs under the share: $out"
nsd_wait_for 60 has_fuse_at alice "$lab/bob"
assert_eq "data of bob" "$(vm_ssh alice "cat $lab/bob/file")" "alice reads bob's file through the share"

# ---- 2. Propagation=host -----------------------------------------------------------------
say "2. root mounts a tmpfs on $media/usb in the initial namespace: it reaches alice's share"
mkdir -p "$media/usb"
mount -t tmpfs -o size=1m usb-of-alice "$media/usb"
echo "on the stick" > "$media/usb/file"
assert_eq "on the stick" "$(vm_ssh alice "cat $media/usb/file")" "alice reads the host's mount through the share"
out=$(vm_ssh alice "mkdir -p ~/src2 $media/alice && bindfs ~/src2 $media/alice && findmnt -n -r -o FSTYPE --mountpoint $media/alice" 2>&1) ||
        fail "alice's bindfs under the host share: $out"
assert_contains "$out" fuse "alice's mount under the host share, in her namespace"
assert_eq "-" "$(root_mounts_at "$media/alice")" "the initial namespace's view of alice's mount under the host share"

# ---- 2b. Propagation=per-user -------------------------------------------------------------
say "2b. per-user: $removable is a mount of its own on the host, alice's directory made"
assert_ne "-" "$(root_mounts_at "$removable")" "the host's $removable"
assert_eq "750 root alice" "$(stat -c '%a %U %G' "$removable/alice")" "alice's directory, made by nsd"
assert_eq "750 root bob" "$(stat -c '%a %U %G' "$removable/bob")" "bob's directory, kept as it was"
assert_contains "$(nsd_journal NSD_EVENT=share-anchor)" "Made '$removable' a mount of its own" \
        "the journal says nsd made the host's $removable a mount"
say "2b. root mounts a stick for alice and one for bob on the host"
for u in alice bob; do
        mkdir -p "$removable/$u/usb"
        mount -t tmpfs -o size=1m "usb-of-$u" "$removable/$u/usb"
        echo "stick of $u" > "$removable/$u/usb/file"
done
# seen USER: what USER's login has in $removable, reads of both sticks, and how many lines
# of mountinfo name each stick
seen() {
        vm_ssh "$1" "echo \$(ls -A $removable); for u in alice bob; do echo \$u: \$(cat $removable/\$u/usb/file 2> /dev/null || echo -) \$(grep -c \" $removable/\$u/usb \" /proc/self/mountinfo); done"
}
out=$(seen alice); echo "$out"
assert_eq "alice
alice: stick of alice 1
bob: - 0" "$out" "alice's view: her directory alone, her stick, no line of bob's"
out=$(seen bob); echo "$out"
assert_eq "bob
alice: - 0
bob: stick of bob 1" "$out" "bob's view: his directory alone, his stick, no line of alice's"
out=$(seen carol); echo "$out"
# (the host's view: what the initial namespace lists there, alice's and bob's directories
# among it, whatever else an earlier scenario of a shared boot left; both mounts listed,
# each behind its owner's 0750 directory)
host_ls=$(echo $(ls -A "$removable"))
assert_contains " $host_ls " " alice " "the host's $removable has alice's directory"
assert_contains " $host_ls " " bob " "the host's $removable has bob's directory"
assert_eq "$host_ls
alice: - 1
bob: - 1" "$out" "carol (not a member) keeps the host's view"
for u in alice bob; do umount "$removable/$u/usb"; done

say "2c. per-user: carol made $removable/erin before erin's first login, with a mount in it"
install -d -m 0755 -o carol -g carol "$removable/erin" "$removable/erin/usb"
mount -t tmpfs -o size=1m planted-by-carol "$removable/erin/usb"
echo "planted by carol" > "$removable/erin/usb/file"
out=$(vm_ssh erin "echo logged in; echo \$(ls -A $removable); echo \$(ls -A $removable/erin);
        grep -c ' $removable/erin/usb ' /proc/self/mountinfo || true" 2>&1) ||
        { journal_dump; fail "erin's login with a hostile $removable/erin: $out"; }
echo "$out"
assert_eq "logged in
erin

0" "$out" "erin's login works; her $removable holds her directory alone, empty, no line of carol's mount"
journalctl --sync
out=$(nsd_journal NSD_EVENT=share-route-refused USER_ID=1005)
echo "$out"
assert_contains "$out" "'$removable/erin' on the host is a directory of uid 1003 (gid 1003, mode 0755)" \
        "the share-route-refused event names the path, its owner and mode"
assert_contains "$out" "WITHOUT the route" "the event says erin goes without the route"
assert_contains "$out" "chown root:root" "the event says what to do"
assert_eq "" "$(nsd_journal NSD_EVENT=setup-refused USER_ID=1005)" "no setup-refused for erin"
umount "$removable/erin/usb"

# ---- 3. MaxMembers=2 ---------------------------------------------------------------------
say "3. duo: alice and bob have it; dave, the third member, gets his namespace without it"
assert_ne "-" "$(mounts_at alice "$duo")" "alice's $duo"
assert_ne "-" "$(mounts_at bob "$duo")" "bob's $duo"
out=$(vm_ssh dave "echo logged in" 2>&1) || { journal_dump; fail "dave's login with duo full: $out"; }
assert_eq "logged in" "$out" "dave's login"
assert_eq "-" "$(mounts_at dave "$duo")" "dave's $duo (left out)"
assert_ne "-" "$(mounts_at dave "$lab")" "dave's $lab (he has lab)"
journalctl --sync
out=$(nsd_journal NSD_EVENT=share-full USER_ID=1004)
assert_contains "$out" "share 'duo'" "the share-full event names the share"
assert_contains "$out" "MaxMembers=2" "the share-full event names the limit"

# ---- 4. a kill -9 of nsd -----------------------------------------------------------------
say "4. kill -9 of nsd: systemd restarts it; the share still carries mounts"
old=$(nsd_main_pid)
kill -KILL "$old"
nsd_wait_for 60 nsd_restarted "$old"
out=$(vm_ssh alice "mkdir -p ~/src3 $lab/after && echo 'after the restart' > ~/src3/file && bindfs -o allow_other ~/src3 $lab/after" 2>&1) ||
        fail "alice's bindfs after the restart: $out"
nsd_wait_for 60 has_fuse_at bob "$lab/after"
assert_eq "after the restart" "$(vm_ssh bob "cat $lab/after/file")" "bob reads alice's new mount after nsd's restart"
assert_eq "$alice_ns" "$(nsd_ns_inode alice)" "alice's namespace after the restart"

say "4. dave's namespace made again after the restart joins the same peer group"
"$NSCTL" release --force dave || fail "nsctl release --force dave"
assert_eq "" "$(nsd_ns_inode dave)" "dave's namespace after the release"
nsd_wait_for 60 has_fuse_at dave "$lab/alice"
assert_eq "data of alice" "$(vm_ssh dave "cat $lab/alice/file")" "dave reads alice's file in his new namespace"
assert_eq "after the restart" "$(vm_ssh dave "cat $lab/after/file")" "dave reads alice's mount made after the restart"

say "4. nsctl shares: root sees every member; bob only his own uid, of the shares he has"
out=$("$NSCTL" shares --raw --noheadings -o SHARE,PROPAGATION,MEMBERS,MAX,UIDS)
echo "$out"
assert_eq "lab members 3 256 1001,1002,1004
media host 1 256 1001
duo members 2 2 1001,1002
removable per-user 3 256 1001,1002,1004" "$out" "root's nsctl shares (erin went without removable)"
out=$("$NSCTL" shares --raw --noheadings -o SHARE,MOUNTS,GROUP)
echo "$out"
# lab: alice's, bob's and alice's after the restart; media: the host's stick and alice's
echo "$out" | grep -Eq '^lab 3 [1-9][0-9]*$' || fail "lab's mounts and peer group: $out"
echo "$out" | grep -Eq '^media 2 [1-9][0-9]*$' || fail "media's mounts and peer group: $out"
echo "$out" | grep -Eq '^duo 0 [1-9][0-9]*$' || fail "duo's mounts and peer group: $out"
echo "$out" | grep -q '^removable - -$' || fail "removable (per-user: no anchor): $out"
out=$(vm_ssh bob "$NSCTL shares --raw --noheadings -o SHARE,UIDS")
assert_eq "lab 1002
duo 1002
removable 1002" "$out" "bob's nsctl shares"
assert_eq "" "$(vm_ssh carol "$NSCTL shares --raw --noheadings")" "carol's nsctl shares (she has none)"

# ---- 6. MaxMountsPerUser=2 (after the restart: the watch came back with the pin store) --------
say "6. duo: alice makes three FUSE mounts there; the third (newest) is detached from every member"
out=$(vm_ssh alice "for d in m1 m2 m3; do mkdir -p ~/src-\$d $duo/\$d && echo \$d > ~/src-\$d/file && bindfs -o allow_other ~/src-\$d $duo/\$d || exit 1; done; echo made" 2>&1) ||
        { journal_dump; fail "alice's three bindfs under duo: $out"; }
assert_contains "$out" made "alice's three mounts under duo"
no_fuse_at() { ! has_fuse_at "$@"; }
start=$SECONDS
nsd_wait_for 30 no_fuse_at bob "$duo/m3" || { journal_dump; fail "alice's third mount under duo is still in bob's namespace"; }
nsd_wait_for 30 no_fuse_at alice "$duo/m3" || { journal_dump; fail "alice's third mount under duo is still in her namespace"; }
echo "# the third mount was gone $((SECONDS - start)) s after the three were made"
for d in m1 m2; do
        has_fuse_at bob "$duo/$d" || { journal_dump; fail "alice's mount $duo/$d is gone from bob's namespace"; }
        has_fuse_at alice "$duo/$d" || fail "alice's mount $duo/$d is gone from her namespace"
done
assert_eq "m1" "$(vm_ssh bob "cat $duo/m1/file")" "bob still reads alice's first mount under duo"
journalctl --sync
out=$(nsd_journal NSD_EVENT=share-mount-detached USER_ID=1001)
echo "$out"
assert_contains "$out" "Share 'duo'" "the warning names the share"
assert_contains "$out" "MaxMountsPerUser=2" "the warning names the limit"
assert_contains "$out" "'$duo/m3'" "the warning names the mount point"
assert_contains "$out" "uid 1001" "the warning names the uid"

# ---- 5. a share without members ----------------------------------------------------------
say "5. nsd --check-config: a share without members"
printf '[Share nobody]\nPath=/srv/nsd-nobody\n' > "$dropins/70-bad.conf"
if out=$("$NSD_BIN" --check-config 2>&1); then
        rm -f "$dropins/70-bad.conf"
        fail "nsd --check-config accepted a share without members: $out"
fi
rm -f "$dropins/70-bad.conf"
echo "$out"
assert_contains "$out" "$dropins/70-bad.conf:1" "the error names FILE:LINE"
assert_contains "$out" "nobody" "the error names the share"
echo "shares: ok"
