#!/bin/bash
# namespace-setup: issue 22's acceptance, under systemd as PID 1 (tests/vm/run --init systemd)
# with nsd from the built units, the host's real sshd, su, sudo, login, cron and user managers,
# and pam_nsjoin at the end of common-session and common-session-noninteractive. Two drop-ins
# in /etc/nsd/nsd.conf.d/: a ~/.cache polydir (Method=user, NoInit=yes), a tmpfs polydir on
# /tmp, a Method=user polydir on /var/tmp (InstancePrefix=/var/tmp-inst/) and [Setup]
# InitScript= a script that appends one line per run to a root-only log.
#  1. alice made her ~/.cache a symbolic link to /etc before she has a namespace: her ssh login
#     is refused, nsd's journal (setup-failed) and pam_nsjoin's message name the path, nothing
#     is pinned, /etc is untouched, no init script ran, no instance was made.
#  2. with ~/.cache a directory again: alice's /tmp (a tmpfs, nosuid,nodev) and /var/tmp (her
#     instance /var/tmp-inst/alice) are the same in ssh, su -l (by root), sudo -i -u, a console
#     login, a cron job, her lingering user manager and a user service of it: the file her ssh
#     login wrote is read in all of them, the one her user service wrote is read over ssh; bob
#     sees his own, not hers; root in the initial namespace sees neither.
#  3. the init script ran exactly once per polydir for alice (and bob) over all those logins
#     and a kill -9 of nsd (systemd restarts it, alice's namespace is adopted, still current).
#  4. a config change (size= of the /tmp tmpfs) and `systemctl reload nsd`: nsctl list and
#     nsctl show mark alice's and bob's live namespaces stale and leave them as they are; a new
#     user's namespace gets the new setup (and the init script once), and is current.
#   Args: BUILD-DIR
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"

vm_needs_systemd
for p in sudo su login script crontab cron findmnt loginctl; do
        command -v "$p" > /dev/null || skip "$p is not installed (tools/deps)"
done

# Under a custom boot target /run/nologin stays until this runs (VM-NOTES.md)
systemctl start systemd-user-sessions.service

init_log=/var/log/nsd-setup-init.log
init_script=/usr/local/sbin/nsd-setup-init
probe=/usr/local/bin/nsd-setup-probe
dropins=/etc/nsd/nsd.conf.d
vm_on_exit "rm -rf $init_log $init_script $probe /var/tmp-inst /var/tmp/alice-file /var/tmp/bob-file"

# ---- the setup ---------------------------------------------------------------------------
say "a root-only log, the init script, two drop-ins"
install -m 0600 /dev/null "$init_log"
cat > "$init_script" << SH
#!/bin/sh
# pam_namespace's namespace.init arguments: polydir instance new user
echo "\$4 \$1 \$2 \$3" >> $init_log
echo "namespace.init for \$4: \$1"
SH
chmod 0755 "$init_script"
install -d -m 0755 /etc/nsd "$dropins"
cat > "$dropins/40-cache.conf" << 'CONF'
[Polydir cache]
Path=%h/.cache
Method=user
InstancePrefix=%h/.cache/.inst-
NoInit=yes
CONF
cat > "$dropins/50-tmp.conf" << CONF
[Polydir tmp]
Path=/tmp
Method=tmpfs
Mode=1777
MountOptions=size=8m

[Polydir var-tmp]
Path=/var/tmp
Method=user
InstancePrefix=/var/tmp-inst/

[Setup]
InitScript=$init_script
TimeoutSec=30
CONF
chmod 0644 "$dropins"/*.conf
out=$("$NSD_BIN" --check-config 2>&1) || fail "nsd --check-config: $out"
echo "$out"
assert_contains "$out" "OK, with 2 drop-ins: 3 polydirs, 0 read-only binds" "nsd --check-config"
gen1=${out##* }

say "nsd from the built units; pam_nsjoin in common-session and common-session-noninteractive"
nsd_units_start '[Namespaces]' 'Users=@regular'
# timeout= generous: a first login waits for the setup under TCG
nsd_setup_debian_pam timeout=60 debug
vm_start_sshd --debian-pam
nsd_user alice 1001
nsd_user bob 1002
install -d -o bob -g bob -m 0700 /home/bob/.cache
init_ns=$(vm_ns_of 1)

# probe [OUT]: "<mount namespace> <alice's /tmp file or -> <alice's /var/tmp file or ->", on
# stdout or into OUT (written whole)
cat > "$probe" << 'SH'
#!/bin/sh
r="$(stat -L -c %i /proc/self/ns/mnt) $(cat /tmp/alice-file 2>/dev/null || echo -) $(cat /var/tmp/alice-file 2>/dev/null || echo -)"
if [ -n "${1:-}" ]; then echo "$r" > "$1.tmp" && mv "$1.tmp" "$1"; else echo "$r"; fi
SH
chmod 0755 "$probe"

journal_dump() {
        vm_sshd_log | tail -20 >&2
        journalctl --no-pager -n 80 >&2 || true
}
# init_runs USER: the init log's lines of USER
init_runs() { grep "^$1 " "$init_log" || true; }
# setup_of USER: the SETUP column of nsctl list for USER
setup_of() { "$NSCTL" list --raw --noheadings -o USER,SETUP | awk -v u="$1" '$1 == u { print $2 }'; }
setup_is() { [ "$(setup_of "$1")" = "$2" ]; }
file_has() { [ -s "$1" ]; }

# ---- 1. ~/.cache a symbolic link to /etc --------------------------------------------------
say "1. alice makes ~/.cache a symbolic link to /etc before she has a namespace"
reason="polydir 'cache' ($dropins/40-cache.conf:1): '/home/alice/.cache' is a symbolic link, or one is on the way to it: refused, nothing is followed there"
# (nsd's reason reaches the client in the protocol's 200 bytes: the path is there, the end is cut)
nsd_symlink_refused alice 1001 /home/alice/.cache "$reason" \
        "pam_nsjoin(sshd:session): cannot join the mount namespace of user 'alice' (uid 1001)" \
        "nsd says: the namespace of uid 1001 cannot be set up: ${reason%%, or one is*}"
assert_eq "" "$(init_runs alice)" "init script runs for alice after the refusal"
[ ! -e /var/tmp-inst/alice ] || fail "the refused setup made /var/tmp-inst/alice"

say "1. alice puts ~/.cache back as a directory: her login works (within the failure's 5 s)"
vm_run_as alice sh -c 'rm ~/.cache && mkdir -m 0700 ~/.cache'
vm_poll 120 vm_ssh alice true || { journal_dump; fail "alice cannot log in with ~/.cache a directory"; }

# ---- 2. every entry point of alice's -------------------------------------------------------
say "2. ssh alice: files in /tmp and /var/tmp"
out=$(vm_ssh alice 'echo "tmp of alice" > /tmp/alice-file && echo "var-tmp of alice" > /var/tmp/alice-file &&
        stat -L -c %i /proc/self/ns/mnt && findmnt -n -r -o FSTYPE,OPTIONS /tmp | tail -n 1 &&
        stat -c "%a %U" /tmp &&
        stat -c "%d:%i" /var/tmp && findmnt -n -o TARGET ~/.cache') ||
        { journal_dump; fail "alice's ssh login: $out"; }
echo "$out"
ns=$(echo "$out" | sed -n 1p)
nsd_assert_ns_of alice "$ns"
tmp_opts=$(echo "$out" | sed -n 2p)
assert_eq tmpfs "${tmp_opts%% *}" "alice's /tmp"
for o in nosuid nodev size=8192k; do
        assert_contains ",${tmp_opts#* }," ",$o," "alice's /tmp options"
done
assert_eq "0 root" "$(stat -c '%a %U' /var/tmp-inst)" "the instance parent /var/tmp-inst"
assert_eq "1777 root" "$(echo "$out" | sed -n 3p)" "alice's /tmp (Mode=1777, the polydir's owner)"
assert_eq "$(stat -c '%d:%i' /var/tmp-inst/alice)" "$(echo "$out" | sed -n 4p)" \
        "alice's /var/tmp (her instance /var/tmp-inst/alice)"
assert_eq "/home/alice/.cache" "$(echo "$out" | sed -n 5p)" "alice's ~/.cache polydir"
assert_eq "var-tmp of alice" "$(cat /var/tmp-inst/alice/alice-file)" "her instance, read by root"
want="$ns tmp of alice var-tmp of alice"

declare -A got
got[ssh]=$(vm_ssh alice "$probe")
got[su-l]=$(su -l alice -c "$probe")
got[sudo-i]=$(sudo -i -u alice "$probe")
# login on a console: login(1) on a pty made by script(1), fed through a fifo that stays open
# until the shell has answered
login_probe() { # login_probe USER: the probe's line from a console login of USER
        local u=$1 fifo=$VM_TMPDIR/login.fifo out=/home/$1/probe.login spid
        rm -f "$fifo" "$out"
        mkfifo "$fifo"
        script -qec "login -f $u" /dev/null < "$fifo" > "$VM_TMPDIR/login-$u.log" 2>&1 &
        spid=$!
        exec 7> "$fifo"
        echo "$probe $out; exit" >&7
        vm_wait_for 90 file_has "$out"
        exec 7>&-
        wait "$spid" || true
        cat "$out"
}
got[login]=$(login_probe alice)
say "2. a cron job of alice's (@reboot, cron started now)"
echo "@reboot $probe /home/alice/probe.cron" | crontab -u alice -
rm -f /run/crond.reboot
systemctl start cron.service
vm_wait_for 120 file_has /home/alice/probe.cron
got[cron]=$(cat /home/alice/probe.cron)
say "2. loginctl enable-linger alice: her user manager and a user service"
loginctl enable-linger alice
vm_wait_for 120 systemctl is-active --quiet user@1001.service
got[user-manager]="$(vm_ns_of "$(systemctl show -p MainPID --value user@1001.service)") tmp of alice var-tmp of alice"
vm_user_run alice --unit=setup-probe --wait sh -c "$probe ~/probe.svc && echo 'from a service' > /var/tmp/alice-svc" ||
        fail "alice's user service failed"
got[user-service]=$(cat /home/alice/probe.svc)
for e in ssh su-l sudo-i login cron user-manager user-service; do
        printf '# alice %-13s %s\n' "$e:" "${got[$e]}"
        assert_eq "$want" "${got[$e]}" "alice's $e (namespace, /tmp file, /var/tmp file)"
done
assert_eq "from a service" "$(vm_ssh alice 'cat /var/tmp/alice-svc')" \
        "the file alice's user service wrote, read over ssh"

say "2. bob: his own /tmp and /var/tmp, not alice's; root sees neither"
out=$(vm_ssh bob "echo 'tmp of bob' > /tmp/bob-file && echo 'var-tmp of bob' > /var/tmp/bob-file && $probe") ||
        { journal_dump; fail "bob's ssh login: $out"; }
bob_ns=$(nsd_ns_inode bob)
assert_ne "$ns" "$bob_ns" "bob's namespace"
assert_ne "$init_ns" "$bob_ns" "bob's namespace"
assert_eq "$bob_ns - -" "$out" "bob's ssh login (alice's files)"
assert_eq "$bob_ns - -
tmp of bob var-tmp of bob" "$(su -l bob -c "$probe; echo \$(cat /tmp/bob-file) \$(cat /var/tmp/bob-file)")" \
        "bob's su -l (alice's files, then his own)"
assert_eq "$init_ns - -" "$("$probe")" "root in the initial namespace (alice's files)"
for f in /tmp/bob-file /var/tmp/bob-file /var/tmp/alice-svc; do
        [ ! -e "$f" ] || fail "root in the initial namespace sees $f"
done

# ---- 3. the init script ran once per polydir, also across a kill -9 of nsd ----------------
alice_runs="alice /tmp tmpfs 1
alice /var/tmp /var/tmp-inst/alice 1"
bob_runs="bob /tmp tmpfs 1
bob /var/tmp /var/tmp-inst/bob 1"
say "3. the init script's runs"
cat "$init_log"
assert_eq "$alice_runs" "$(init_runs alice)" "the init script's runs for alice (ssh, su -l, sudo -i, login, cron, user manager, user service)"
assert_eq "$bob_runs" "$(init_runs bob)" "the init script's runs for bob"
assert_eq "600 root" "$(stat -c '%a %U' "$init_log")" "the init log"
journalctl --sync
assert_contains "$(journalctl --no-pager -o cat -t nsd-init-script)" "namespace.init for alice: /var/tmp" \
        "the init script's output in the journal"

say "3. kill -9 of nsd: systemd restarts it"
pid=$(nsd_main_pid)
systemctl kill -s KILL nsd.service
vm_wait_for 90 nsd_restarted "$pid"
vm_wait_for 90 "$NSCTL" status
assert_eq "$ns yes current" "$("$NSCTL" list --raw --noheadings -o USER,NS,ADOPTED,SETUP | awk '$1 == "alice" { print $2, $3, $4 }')" \
        "alice's namespace after the restart (NS ADOPTED SETUP)"
assert_eq "$want" "$(vm_ssh alice "$probe")" "alice's ssh login after the restart"
assert_eq "$want" "$(su -l alice -c "$probe")" "alice's su -l after the restart"
assert_eq "$alice_runs" "$(init_runs alice)" "the init script's runs for alice after a kill -9 of nsd"

# ---- 4. a config change: live namespaces stale, a new user's gets the new setup ------------
say "4. the drop-in changed (size=16m), nsd --check-config, systemctl reload nsd"
sed -i 's/^MountOptions=size=8m$/MountOptions=size=16m/' "$dropins/50-tmp.conf"
out=$("$NSD_BIN" --check-config 2>&1) || fail "nsd --check-config after the change: $out"
gen2=${out##* }
assert_ne "$gen1" "$gen2" "the setup generation after the change"
assert_eq current "$(setup_of alice)" "alice's SETUP before the reload"
systemctl reload nsd.service
vm_poll 60 setup_is alice stale || { nsd_journal_dump; fail "alice's SETUP after the reload: '$(setup_of alice)'"; }
"$NSCTL" list
assert_eq stale "$(setup_of bob)" "bob's SETUP after the reload"
out=$("$NSCTL" show alice 2>&1 > /dev/null) || fail "nsctl show alice: $out"
assert_contains "$out" "the namespace of alice was made with an older setup than nsd.conf's (stale)" "nsctl show alice"
out=$(vm_ssh alice "$probe; findmnt -n -r -o OPTIONS /tmp | tail -n 1") || { journal_dump; fail "alice's login after the reload: $out"; }
assert_eq "$want" "$(echo "$out" | sed -n 1p)" "alice's login after the reload (her live namespace)"
assert_contains ",$(echo "$out" | sed -n 2p)," ",size=8192k," "alice's /tmp after the reload (not edited)"

say "4. carol, a new user: the new setup"
nsd_user carol 1003
install -d -o carol -g carol -m 0700 /home/carol/.cache
out=$(vm_ssh carol 'stat -L -c %i /proc/self/ns/mnt; findmnt -n -r -o OPTIONS /tmp | tail -n 1') ||
        { journal_dump; fail "carol's ssh login: $out"; }
assert_eq "$(nsd_ns_inode carol)" "$(echo "$out" | sed -n 1p)" "carol's namespace"
assert_contains ",$(echo "$out" | sed -n 2p)," ",size=16384k," "carol's /tmp (the new setup)"
assert_eq current "$(setup_of carol)" "carol's SETUP"
assert_eq stale "$(setup_of alice)" "alice's SETUP after carol's login"
assert_eq "carol /tmp tmpfs 1
carol /var/tmp /var/tmp-inst/carol 1" "$(init_runs carol)" "the init script's runs for carol"
assert_eq "$alice_runs" "$(init_runs alice)" "the init script's runs for alice, at the end"
"$NSCTL" list
say "ok"
