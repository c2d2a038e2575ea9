#!/bin/bash
# nsd-slow-nss: a slow user database delays only the logins that need it. nsd.conf names its
# users by a group (Groups=nsdslow: nsd resolves Users= names once, a group needs a lookup
# per uid), so each login's policy check asks NSS; a test NSS module
# (tests/vm/helpers/nss-slow.c, first in the VM's /etc/nsswitch.conf, loaded by nsd only) blocks
# the lookup of user 'slow' until a flag file goes. While slow's login waits, the logins of
# fast1 and fast2 succeed; released, slow's login succeeds too. Then, with
# LookupTimeoutSec=2, a blocked lookup makes slow's login fail with nsd's ETIMEDOUT (logged)
# while nsd keeps serving, and after the release slow logs in again. Last, the uids of a subuid
# range flood nsd with JOINs for themselves while the user database takes 200 ms for each of
# them: root's JOIN for a first login (fast3) is answered at once, ahead of them (issue 19).
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"

flag=/run/nsd-slow
nsd_user slow 1101
nsd_user fast1 1102
nsd_user fast2 1103
nsd_user fast3 1104
groupadd -f nsdslow
for u in slow fast1 fast2 fast3; do usermod -a -G nsdslow "$u"; done
mkdir -p "$flag"
echo 1101 >"$flag/uid"
echo slow >"$flag/name"
vm_on_exit "rm -f $flag/block $flag/range"

# no subordinate id ranges (the VM's /etc is the host's): the flood's uids are people of their own
for f in subuid subgid; do
        cp "/etc/$f" "$NSD_TMP/$f.orig" 2>/dev/null || : >"$NSD_TMP/$f.orig"
        vm_on_exit "cp $NSD_TMP/$f.orig /etc/$f"
        : >"/etc/$f"
done

say "the VM's nsswitch.conf asks nsdslow first"
cp /etc/nsswitch.conf "$NSD_TMP/nsswitch.conf.orig"
vm_on_exit "cp $NSD_TMP/nsswitch.conf.orig /etc/nsswitch.conf"
sed -i -E 's/^(passwd|group):[[:space:]]*/\1: nsdslow /' /etc/nsswitch.conf
grep -E '^(passwd|group):' /etc/nsswitch.conf

LD_LIBRARY_PATH=$(dirname "$(nsd_helper libnss_nsdslow.so.2)") nsd_start_with_conf <<CONF
[Namespaces]
Users=
Groups=nsdslow
[Limits]
LookupTimeoutSec=120
CONF
# timeout=: a pam_nsjoin with a client timeout waits as long as nsd does (an older one
# ignores the argument, with a warning, and waits its own 25 s)
nsd_setup_su_pam "$(nsd_pam_line required timeout=120)"
host_ns=$(mnt_ns_of 1)

say "slow's lookup blocks; slow's login waits"
touch "$flag/block"
su -l slow -c 'stat -L -c %i /proc/self/ns/mnt' >"$NSD_TMP/slow.out" 2>&1 &
slow_pid=$!
vm_wait_for 60 test -e "$flag/asked"
nsd_wait_log 30 "Asking the user database about uid 1101"

say "meanwhile fast1 and fast2 log in"
for u in fast1 fast2; do
        out=$(su -l $u -c 'stat -L -c %i /proc/self/ns/mnt' 2>&1) ||
                { nsd_log | grep -v '^<7>' | tail -30; fail "su -l $u: $out"; }
        assert_ne "$host_ns" "$out" "$u's login is in a namespace of its own"
done
kill -0 "$slow_pid" 2>/dev/null || { cat "$NSD_TMP/slow.out"; fail "slow's login did not wait"; }
nsd_alive

say "released: slow's login goes through"
rm -f "$flag/block"
wait "$slow_pid" || { cat "$NSD_TMP/slow.out"; nsd_log | grep -v '^<7>' | tail -30; fail "slow's login failed after the release"; }
out=$(cat "$NSD_TMP/slow.out")
assert_ne "$host_ns" "$out" "slow's login is in a namespace of its own"

say "LookupTimeoutSec=2: a blocked lookup is refused with ETIMEDOUT, nothing else waits"
sed -i 's/^LookupTimeoutSec=.*/LookupTimeoutSec=2/' "$NSD_TMP/nsd.conf"
kill -HUP "$NSD_PID"
nsd_wait_log 30 "Reloaded the configuration"
rm -f "$flag/asked"
touch "$flag/block"
out=$(su -l slow -c true 2>&1) && fail "slow's login succeeded although nsd could not decide: $out"
echo "$out"
nsd_wait_log 30 "did not answer for uid 1101 within 2 s \(LookupTimeoutSec=\)"
out=$(su -l fast1 -c 'stat -L -c %i /proc/self/ns/mnt' 2>&1) || fail "su -l fast1 while slow's lookup hangs: $out"
nsd_alive
rm -f "$flag/block"
out=$(su -l slow -c 'stat -L -c %i /proc/self/ns/mnt' 2>&1) || fail "slow's login after the release: $out"
assert_ne "$host_ns" "$out" "slow's login after the release"
grep -E "user database|LookupTimeoutSec" "$NSD_LOG" | grep -v '^<7>' | tail -4 || true

say "uids 100000.. (a subuid range) flood JOINs; the user database takes 200 ms for each"
echo "100000 65536 200" >"$flag/range"
$NSD_RAW flood-join 100000 --count 64 \
        --seconds 20 >"$NSD_TMP/flood.out" 2>&1 &
flood_pid=$!
vm_wait_for 60 test -e "$flag/range-asked"
nsd_wait_log 30 "Asking the user database about uid 1000[0-9][0-9] \(a user waits"
say "meanwhile root's JOIN for fast3's first login (LookupTimeoutSec=2)"
t0=$(date +%s%N)
out=$(su -l fast3 -c 'stat -L -c %i /proc/self/ns/mnt' 2>&1) ||
        { nsd_log | grep -v '^<7>' | tail -30; fail "su -l fast3 during the flood: $out"; }
t1=$(date +%s%N)
assert_ne "$host_ns" "$out" "fast3's first login is in a namespace of its own"
echo "fast3's first login (su -l) took $(((t1 - t0) / 1000000)) ms during the flood"
kill -0 "$flood_pid" 2>/dev/null || { cat "$NSD_TMP/flood.out"; fail "the flood ended before fast3's login"; }
wait "$flood_pid" || true
cat "$NSD_TMP/flood.out"
grep -q '^flood-join [0-9]' "$NSD_TMP/flood.out" || fail "the flood did not report"
nsd_alive
echo "PASS"
