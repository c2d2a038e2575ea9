#!/bin/bash
# nsd-private-mode: with [Private] Enable=yes, alice's FUSE mount in the INITIAL namespace
# (made by a process not started through PAM) is hidden from bob and from root (ls, stat,
# /proc/self/mountinfo, walks through /proc/<alice's pid>/) and visible to every process of
# alice's, PAM or not; `nsctl hide` does the same on request; nsd keeps only the capabilities it uses.
# On the stock kernel the same configuration makes nsd say that the mode is unavailable.
# The watch first (BornPrivate=no); then, on the patched kernels (F4b), BornPrivate=yes and a
# reload: the initial namespace's mounts carry the born-private policy, and bob and root,
# racing alice's bindfs mounted and unmounted a hundred times, never reach a file in it;
# the policy stays in the initial namespace (new namespaces and propagation copies into them
# carry none).
#   tests/vm/scenarios/nsd-private-mode.sh BUILD-DIR patched|stock
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"
kernel=${2:-patched}

ALICE_UID=1001
nsd_user alice $ALICE_UID
nsd_user bob 1002
ahome=$(vm_home alice)

cat > "$NSD_TMP/nsd.conf" <<EOF
[Private]
Enable=yes
BornPrivate=no
EOF

as_alice() { runuser -u alice -- "$@"; }
as_bob() { runuser -u bob -- "$@"; }
# alice's mount: a bindfs of ~/src on ~/mnt, by a process that never went through PAM
mount_alice_fuse() {
        as_alice bash -c 'mkdir -p ~/src ~/mnt && echo "secret of alice" > ~/src/file &&
                bindfs --no-allow-other ~/src ~/mnt'
        vm_on_exit "umount -l '$ahome/mnt' 2>/dev/null; runuser -u alice -- fusermount3 -u -z '$ahome/mnt' 2>/dev/null"
}
# does USER's /proc/self/mountinfo list PATH as a mount point? (prints the count)
mountinfo_count() {
        local user=$1 path=$2
        if [ "$user" = root ]; then
                awk -v p="$path" '$5 == p' /proc/self/mountinfo | wc -l
        else
                runuser -u "$user" -- awk -v p="$path" '$5 == p' /proc/self/mountinfo | wc -l
        fi
}

nsd_start --config "$NSD_TMP/nsd.conf"

say "nsd keeps only the capabilities it uses: CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER,"
say "CAP_SETGID, CAP_SETUID, CAP_SYS_CHROOT, CAP_SYS_PTRACE, CAP_SYS_ADMIN (bits 0 1 3 6 7 18 19 21)"
assert_eq 00000000002c00cb "$(awk '$1 == "CapEff:" { print $2 }' "/proc/$NSD_PID/status")" \
        "nsd's effective capabilities"
assert_eq 00000000002c00cb "$(awk '$1 == "CapBnd:" { print $2 }' "/proc/$NSD_PID/status")" \
        "nsd's bounding set"

if [ "$kernel" = stock ]; then
        say "stock kernel: the mode is refused with a clear message, nsd keeps serving"
        nsd_has_feature owner-private && fail "the stock kernel claims owner-private mounts"
        log=$(nsd_log)
        assert_contains "$log" "Mode private ([Private] Enable=yes) is unavailable: owner-private mounts need a kernel with MOUNT_ATTR_OWNER_PRIVATE (kernel-patches/, 'fs: add MOUNT_ATTR_OWNER_PRIVATE'); this kernel lacks it"
        status=$("$NSCTL" status)
        echo "$status" | grep -E 'private mode|owner-private'
        assert_contains "$status" "private mode:    unavailable (enabled, but the kernel lacks owner-private mounts, F4)"
        assert_contains "$("$NSCTL" status --json)" '"private_mode": "unavailable"'
        mount_alice_fuse
        assert_eq 1 "$(mountinfo_count root "$ahome/mnt")" "root's mountinfo lines for alice's FUSE mount (nothing hidden)"
        out=$(as_alice "$NSCTL" hide "$ahome/mnt" 2>&1) && fail "hide succeeded on a stock kernel: $out"
        echo "$out"
        assert_contains "$out" "Operation not supported (owner-private mounts need a kernel with MOUNT_ATTR_OWNER_PRIVATE (kernel-patches/, 'fs: add MOUNT_ATTR_OWNER_PRIVATE'); this kernel lacks it)"
        # nsd still serves its namespaces
        "$NSCTL" enter alice -- true || fail "nsd no longer hands out namespaces"
        echo "PASS"
        exit 0
fi

[ "$kernel" = patched ] || fail "second argument must be patched or stock, not '$kernel'"
nsd_has_feature owner-private || fail "the patched kernel lacks owner-private mounts (F4)"
status=$("$NSCTL" status)
echo "$status" | grep -E 'private mode|owner-private'
case $status in
*"private mode:    unavailable (nsd cannot take"*)
        nsd_log | grep -i private
        fail "nsd cannot take a user's fsuid: nsd/main.c's drop_capabilities() must keep CAP_SETUID for mode private" ;;
esac
assert_contains "$status" "private mode:    on"

say "alice mounts bindfs in the initial namespace (no PAM); nsd hides it"
mkdir -p "$ahome/mnt"
chown alice: "$ahome/mnt"
under_ino=$(stat -c %i "$ahome/mnt")
mount_alice_fuse
nsd_wait_log 10 "Hid the fuse(\.bindfs)? mount [0-9]+ on '$ahome/mnt' from everyone but uid $ALICE_UID"
grep "Hid the" "$NSD_LOG"

say "bob: an empty directory, the covered inode, no mountinfo line"
assert_eq "" "$(as_bob ls -A "$ahome/mnt")" "bob's ls of ~alice/mnt"
assert_eq "$under_ino" "$(as_bob stat -c %i "$ahome/mnt")" "inode bob's stat sees"
assert_eq 0 "$(mountinfo_count bob "$ahome/mnt")" "bob's mountinfo lines for ~alice/mnt"
as_bob cat "$ahome/mnt/file" 2>/dev/null && fail "bob reads alice's file"

say "root: the same"
assert_eq "" "$(ls -A "$ahome/mnt")" "root's ls of ~alice/mnt"
assert_eq "$under_ino" "$(stat -c %i "$ahome/mnt")" "inode root's stat sees"
assert_eq 0 "$(mountinfo_count root "$ahome/mnt")" "root's mountinfo lines for ~alice/mnt"
assert_eq 0 "$(grep -c "owner_private" /proc/self/mountinfo || true)" "owner_private lines in root's mountinfo"
[ -e "$ahome/mnt/file" ] && fail "root sees alice's file"

say "alice, in processes not started through PAM: runuser, setpriv"
assert_eq "secret of alice" "$(as_alice cat "$ahome/mnt/file")" "alice's file through runuser"
assert_eq "secret of alice" "$(vm_run_as alice cat "$ahome/mnt/file")" "alice's file through setpriv"
assert_eq 1 "$(mountinfo_count alice "$ahome/mnt")" "alice's mountinfo lines for ~/mnt"
line=$(as_alice awk -v p="$ahome/mnt" '$5 == p' /proc/self/mountinfo)
echo "alice's mountinfo: $line"
assert_contains "$line" "owner_private=$ALICE_UID"
assert_ne "$under_ino" "$(as_alice stat -c %i "$ahome/mnt")" "inode alice's stat sees (the FUSE root)"

say "walks through /proc/<alice's pid>/"
vm_run_as alice bash -c "cd '$ahome/mnt' && exec sleep 600" &
vm_wait_for 10 pgrep -u alice -x sleep
apid=$(pgrep -u alice -x sleep | head -n 1)
vm_on_exit "kill $apid 2>/dev/null"
# bob has no ptrace access to alice's processes: /proc/<pid>/root and cwd are closed to him
out=$(as_bob ls -A "/proc/$apid/root$ahome/mnt" 2>&1) && fail "bob walked /proc/$apid/root: $out"
assert_contains "$out" "Permission denied" "bob's ls of /proc/<alice>/root/home/alice/mnt"
out=$(as_bob ls -A "/proc/$apid/cwd/" 2>&1) && fail "bob walked /proc/$apid/cwd: $out"
assert_contains "$out" "Permission denied" "bob's ls of /proc/<alice>/cwd"
# root may follow /proc/<pid>/root, but the walk still does not cross into the mount
assert_eq "" "$(ls -A "/proc/$apid/root$ahome/mnt")" "root's ls of /proc/<alice>/root/home/alice/mnt"
# the documented way in for root (kernel-patches/README.md): the cwd of the owner's process
out=$(ls -A "/proc/$apid/cwd/" 2>&1) || true
say "root through /proc/<alice>/cwd (the documented way in, ptrace access; FUSE's own check still applies): $out"

say "nsctl hide: refusals"
mkdir -p "$ahome/scratch"
chown alice: "$ahome/scratch"
mount -t tmpfs -o mode=0755,uid=$ALICE_UID alice-scratch "$ahome/scratch"
vm_on_exit "umount -l '$ahome/scratch' 2>/dev/null"
echo "alice's scratch" > "$ahome/scratch/note"
out=$(as_alice "$NSCTL" hide "$ahome/scratch" 2>&1) && fail "alice hid root's tmpfs: $out"
echo "$out"; assert_contains "$out" "Operation not permitted"
out=$(as_bob "$NSCTL" hide "$ahome/scratch" 2>&1) && fail "bob hid root's tmpfs: $out"
echo "$out"; assert_contains "$out" "Operation not permitted"
out=$(as_bob "$NSCTL" hide --user alice "$ahome/scratch" 2>&1) && fail "bob hid for alice: $out"
echo "$out"; assert_contains "$out" "Operation not permitted (only root may hide a mount for another user)"
out=$(as_alice "$NSCTL" hide "$ahome/src" 2>&1) && fail "hid a directory: $out"
echo "$out"; assert_contains "$out" "Invalid argument ('$ahome/src' is not a mount point)"
out=$(as_alice "$NSCTL" hide "$ahome/nonexistent" 2>&1) && fail "hid a missing path: $out"
echo "$out"; assert_contains "$out" "No such file or directory"
ln -s "$ahome/scratch" "$ahome/link"
out=$("$NSCTL" hide --user alice "$ahome/link" 2>&1) && fail "hid through a symlink: $out"
echo "$out"; assert_contains "$out" "symbolic links are refused"
out=$("$NSCTL" hide --user root "$ahome/scratch" 2>&1) && fail "hid for root: $out"
echo "$out"; assert_contains "$out" "No such device or address"

say "nsctl hide: root hides a tmpfs it mounted for alice"
"$NSCTL" hide --user alice "$ahome/scratch"
grep "mount-hidden\|Hid mount" "$NSD_LOG" | tail -1
[ -e "$ahome/scratch/note" ] && fail "root still sees the hidden tmpfs"
assert_eq 0 "$(mountinfo_count root "$ahome/scratch")" "root's mountinfo lines for ~alice/scratch"
assert_eq "" "$(as_bob ls -A "$ahome/scratch")" "bob's ls of ~alice/scratch"
assert_eq "alice's scratch" "$(vm_run_as alice cat "$ahome/scratch/note")" "alice's note"
out=$(as_bob "$NSCTL" hide --unhide "$ahome/scratch" 2>&1) && fail "bob unhid alice's tmpfs: $out"
echo "$out"
assert_eq 0 "$(mountinfo_count root "$ahome/scratch")" "root's mountinfo lines for ~alice/scratch after bob's unhide"

say "bob cannot unhide alice's mount hidden by private mode (his walk does not reach it)"
out=$(as_bob "$NSCTL" hide --unhide "$ahome/mnt" 2>&1) && fail "bob unhid alice's FUSE mount: $out"
echo "$out"; assert_contains "$out" "is not a mount point"
assert_eq 0 "$(mountinfo_count root "$ahome/mnt")" "root's mountinfo lines for ~alice/mnt after bob's unhide"

say "alice makes her FUSE mount visible again; nsd leaves it so"
as_alice "$NSCTL" hide --unhide "$ahome/mnt"
# nsd's watch has looked at the mount table since the unhide once it hid a mount made after it
vm_run_as alice bash -c 'mkdir -p ~/src3 ~/mnt3 && bindfs --no-allow-other ~/src3 ~/mnt3'
vm_on_exit "umount -l '$ahome/mnt3' 2>/dev/null"
nsd_wait_log 10 "on '$ahome/mnt3' from everyone but uid $ALICE_UID"
assert_eq 1 "$(mountinfo_count root "$ahome/mnt")" "root's mountinfo lines for ~alice/mnt after unhide"
assert_ne "$under_ino" "$(as_alice stat -c %i "$ahome/mnt")" "alice still sees her mount"
# a plain FUSE mount of alice's, as in the moment before the watch hides a fresh one (the
# race of issue 10): bob may neither unhide it (which exempted it from the watch) nor hide it
out=$(as_bob "$NSCTL" hide --unhide "$ahome/mnt" 2>&1) && fail "bob unhid alice's plain FUSE mount: $out"
echo "$out"; assert_contains "$out" "Operation not permitted ('$ahome/mnt' is not a FUSE mount of uid 1002; only its owner or root may unhide it)"
out=$(as_bob "$NSCTL" hide "$ahome/mnt" 2>&1) && fail "bob hid alice's plain FUSE mount: $out"
echo "$out"; assert_contains "$out" "only its owner or root may hide it"
as_alice "$NSCTL" hide "$ahome/mnt"
assert_eq 0 "$(mountinfo_count root "$ahome/mnt")" "root's mountinfo lines after alice hid it again"

say "a user's HIDE walks as the user: groups, gid, uid (a 0750 root:root directory is closed)"
groupadd -g 2750 nsdstaff
usermod -a -G nsdstaff alice
vm_on_exit "groupdel nsdstaff 2>/dev/null"
install -d -m 0750 -o root -g root /home/closed /home/closed/m
install -d -m 0750 -o root -g nsdstaff /home/staff /home/staff/m
vm_on_exit "rm -rf /home/closed /home/staff"
mount -t tmpfs -o mode=0755 closed /home/closed/m
mount -t tmpfs -o mode=0755 staff /home/staff/m
vm_on_exit "umount -l /home/closed/m /home/staff/m 2>/dev/null"
for who in alice bob; do
        st=$(runuser -u $who -- stat /home/closed/m 2>&1) && fail "$who can stat /home/closed/m: $st"
        out=$(runuser -u $who -- "$NSCTL" hide /home/closed/m 2>&1) && fail "$who hid in a closed directory: $out"
        echo "$who: $out"
        assert_contains "$out" "Permission denied" "$who's HIDE in a 0750 root:root directory"
        assert_not_contains "$out" "mount point"
        assert_not_contains "$out" "tmpfs"
done
# alice's supplementary group (from the user database, not from runuser) opens /home/staff:
# her walk reaches the tmpfs, which is not hers; bob's does not
out=$(as_alice "$NSCTL" hide /home/staff/m 2>&1) && fail "alice hid root's tmpfs: $out"
echo "alice: $out"; assert_contains "$out" "is not a FUSE mount of uid $ALICE_UID"
out=$(as_bob "$NSCTL" hide /home/staff/m 2>&1) && fail "bob hid root's tmpfs: $out"
echo "bob: $out"; assert_contains "$out" "Permission denied"

say "a second FUSE mount while nsd runs, by setpriv: hidden as it appears"
vm_run_as alice bash -c 'mkdir -p ~/src2 ~/mnt2 && echo two > ~/src2/f && bindfs --no-allow-other ~/src2 ~/mnt2'
vm_on_exit "umount -l '$ahome/mnt2' 2>/dev/null"
nsd_wait_log 10 "on '$ahome/mnt2' from everyone but uid $ALICE_UID"
assert_eq 0 "$(mountinfo_count root "$ahome/mnt2")" "root's mountinfo lines for ~alice/mnt2"
assert_eq "two" "$(as_alice cat "$ahome/mnt2/f")" "alice's second mount"

say "born private (F4b): BornPrivate=yes (the default) and a reload"
nsd_has_feature born-private || fail "the patched kernel lacks mounts born owner-private (F4b)"
assert_eq 0 "$(grep -c owner_private_new /proc/self/mountinfo || true)" \
        "mounts with the policy before BornPrivate=yes"
printf '[Private]\nEnable=yes\n' > "$NSD_TMP/nsd.conf"
kill -HUP "$NSD_PID"
nsd_wait_log 10 "the mounts of the initial namespace carry the born-private policy"
grep "born-private" "$NSD_LOG"
line=$(awk '$5 == "/"' /proc/self/mountinfo | head -n 1)
echo "root's /: $line"
assert_contains "$line" ",owner_private_new"
# the policy stays in the namespace it was set in (the kernel's rule, nothing of nsd's): bob's
# namespace, made now from the initial one, starts without it, and root's tmpfs mounted below
# the policy reaches alice's namespace (a slave) without it, so a user's mount below that copy
# would be plain there, as in every namespace nsd makes
install -d -m 0755 /home/bp-host
mount -t tmpfs -o mode=0755 bp-host /home/bp-host
vm_on_exit "umount -l /home/bp-host 2>/dev/null; rmdir /home/bp-host 2>/dev/null"
assert_contains "$(awk '$5 == "/home/bp-host"' /proc/self/mountinfo)" ",owner_private_new"
for u in alice bob; do
        assert_eq 0 "$("$NSCTL" enter $u -- grep -c owner_private_new /proc/self/mountinfo || true)" \
                "mounts with the policy in $u's namespace"
done
assert_eq 1 "$("$NSCTL" enter alice -- awk '$5 == "/home/bp-host"' /proc/self/mountinfo | wc -l)" \
        "copies of root's new tmpfs in alice's namespace"

# 25 rounds: the mount is born private, so no round has a window to find (the kernel suite's
# born_private.racer_never_gets_in races a hundred on both bases); these show that nsd's
# policy makes a FUSE mount of alice's so, racers and all (a hundred cost another minute)
rounds=25
say "$rounds rounds: alice mounts bindfs on ~/race and unmounts it; bob and root race it"
as_alice bash -c 'mkdir -p ~/race && echo raced > ~/src/race-file'
race=$(mktemp -d)
chmod 0777 "$race"
vm_on_exit "touch '$race/stop'; umount -l '$ahome/race' 2>/dev/null; rm -rf '$race'"
# a racer: bash's own test (a stat(), no fork) of the mount point, in a loop. The covered
# directory is there for everyone; a walk that crosses into alice's FUSE mount gets EACCES
# from FUSE itself (no allow_other: only alice's processes get an answer), so a failed test
# is a walk that reached her file system: a line in OUT. OUT.count: how many walks were made.
cat > "$race/racer" <<'RACER'
out=$1 target=$2 stop=$3 n=0
while [ ! -e "$stop" ]; do
        [ -e "$target" ] || echo "reached at walk $n" >> "$out"
        n=$((n + 1))
done
echo "$n" > "$out.count"
RACER
runuser -u bob -- nice -n 10 bash "$race/racer" "$race/bob" "$ahome/race" "$race/stop" &
bob_racer=$!
nice -n 10 bash "$race/racer" "$race/root" "$ahome/race" "$race/stop" &
root_racer=$!
for round in $(seq "$rounds"); do
        as_alice bindfs --no-allow-other "$ahome/src" "$ahome/race" || fail "round $round: bindfs"
        # -z: a racer's walk holds the mount for an instant while it finds it hidden, and a
        # plain unmount would then fail with EBUSY, as for any mount a walk is crossing
        as_alice fusermount3 -u -z "$ahome/race" || fail "round $round: fusermount3 -u -z"
done
touch "$race/stop"
wait "$bob_racer" "$root_racer"
echo "walks: bob $(cat "$race/bob.count"), root $(cat "$race/root.count")"
[ "$(cat "$race/bob.count")" -gt 100 ] || fail "bob's racer hardly ran"
[ "$(cat "$race/root.count")" -gt 100 ] || fail "root's racer hardly ran"
assert_eq "" "$(cat "$race/bob" 2>/dev/null)" "bob's walks that reached alice's mount"
assert_eq "" "$(cat "$race/root" 2>/dev/null)" "root's walks that reached alice's mount"
# the mount is alice's: born private for her uid, no work for nsd's watch
as_alice bindfs --no-allow-other "$ahome/src" "$ahome/race"
assert_eq "raced" "$(as_alice cat "$ahome/race/race-file")" "alice's file through her born-private mount"
line=$(as_alice awk -v p="$ahome/race" '$5 == p' /proc/self/mountinfo)
echo "alice's mountinfo: $line"
assert_contains "$line" "owner_private=$ALICE_UID"
[ -e "$ahome/race/race-file" ] && fail "root reaches alice's born-private mount"
grep -q "Hid the .* on '$ahome/race'" "$NSD_LOG" && fail "nsd's watch had to hide a mount that was born private"
as_alice fusermount3 -u "$ahome/race"

say "BornPrivate=no and a reload clear the policy nsd set"
printf '[Private]\nEnable=yes\nBornPrivate=no\n' > "$NSD_TMP/nsd.conf"
kill -HUP "$NSD_PID"
nsd_wait_log 10 "the born-private policy is cleared"
assert_eq 0 "$(grep -c owner_private_new /proc/self/mountinfo || true)" \
        "mounts with the policy after BornPrivate=no"

echo "PASS"
