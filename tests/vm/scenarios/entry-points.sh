#!/bin/bash
# entry-points: every way a user's processes start, the Debian way, under
# systemd as PID 1 (tests/vm/run --init systemd) with the .debs installed and the profile
# enabled by `pam-auth-update --enable nsjoin`, nothing added to any PAM file by hand:
#   a lingering user manager (started with no login at all), ssh (Debian's own sshd stack),
#   su -l, login on a console (through script(1), a pty), sudo -i -u, a cron job, a user
#   service (transient, through the lingering manager), and where systemd has it (>= 256:
#   Debian 13) run0 --user=USER, run by root.
# Each lands in the user's namespace (the inode nsctl lists); a real sshfs mount made in an ssh
# login (sshfs to this VM's own sshd over loopback) is read in every other; a user service's
# own FUSE mount is read from ssh; bob's entry points never see alice's mounts, root in the
# initial namespace neither.
# The hard cases about entry points:
#   - nsd restarted while user services run: they stay in the namespace with their mounts, and
#     later logins and services join the same one;
#   - a user manager started while nsd is not running: socket activation starts nsd and the
#     manager lands in the same (re-adopted) namespace; at boot nsd.socket listens before any
#     user manager starts (the unit ordering is asserted).
#   Args: BUILD-DIR [full|core]   (the .debs from BUILD-DIR/debs; on the Debian 13 root,
#   tests/vm/run --root trixie, from BUILD-DIR/debs-trixie)
# full (the default): every entry point and both hard cases. core: what depends on the kernel
# (the other image of a base runs it): the lingering manager, ssh with its sshfs, su -l, a user
# service, bob's ssh and user service, root, and nsd restarted under running services; login,
# sudo -i and cron (PAM stacks like su's, joining the same way) and the socket activation case
# (unit ordering) run in full only. run0 joins both matrices when the VM's systemd has it
# (Debian 12's 252 has not): its PAM service systemd-run0 has no file of its own on Debian 13,
# so libpam reads /etc/pam.d/other, which includes common-session (README.Debian, "Debian 13";
# the scenario prints which file the service reads).
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/deb.sh

build=${1:-build}
matrix=${2:-full}
case $matrix in
        full) entries=(ssh su-l sudo-i login cron user-service) ;;
        core) entries=(ssh su-l user-service) ;;
        *) fail "the matrix is full or core, not '$matrix'" ;;
esac
command -v run0 > /dev/null && entries+=(run0)
has_entry() { [[ " ${entries[*]} " == *" $1 "* ]]; }
say "entry points ($matrix): ${entries[*]}"
deb_install "$(deb_native "$build")"
assert_eq active "$(systemctl is-active nsd.socket)" "nsd.socket after installation"
say "pam-auth-update --enable nsjoin"
nsd_enable_profile
grep -H pam_nsjoin /etc/pam.d/common-session /etc/pam.d/common-session-noninteractive

vm_create_user alice 1001
vm_create_user bob 1002
chmod 0755 /home/alice /home/bob
install -d -o alice -g alice /home/alice/data /home/alice/remote /home/alice/svcsrc /home/alice/svcmnt
echo sshfs-data-of-alice > /home/alice/data/file
echo service-mount-of-alice > /home/alice/svcsrc/file
chown alice:alice /home/alice/data/file /home/alice/svcsrc/file
init_ns=$(vm_ns_of 1)

# probe [OUT]: "<mount namespace inode> <alice's sshfs file or -> <sshfs lines in my mountinfo>
# <alice's service-mount file or ->", on stdout or into OUT (written whole).
probe=$VM_TMPDIR/probe
cat > "$probe" <<'SH'
#!/bin/sh
r="$(stat -L -c %i /proc/self/ns/mnt) $(cat /home/alice/remote/file 2>/dev/null || echo -) $(grep -c ' /home/alice/remote ' /proc/self/mountinfo) $(cat /home/alice/svcmnt/file 2>/dev/null || echo -)"
if [ -n "${1:-}" ]; then echo "$r" > "$1.tmp" && mv "$1.tmp" "$1"; else echo "$r"; fi
SH
chmod 0755 "$probe"

manager_pid() { systemctl show -p MainPID --value "user@$(id -u "$1").service"; }
service_pid() { vm_user_systemctl "$1" show -p MainPID --value "$2"; }
file_has() { [ -s "$1" ]; }

# ---- 1. a lingering user manager: started by logind, no login of alice at all -------------
say "loginctl enable-linger alice bob: their user managers start with no login"
loginctl enable-linger alice bob
vm_wait_for 90 systemctl is-active --quiet user@1001.service
vm_wait_for 90 systemctl is-active --quiet user@1002.service
ns=$(nsd_ns_inode alice)
bob_ns=$(nsd_ns_inode bob)
[ -n "$ns" ] && [ -n "$bob_ns" ] || { vm_journal_dump; fail "nsd lists no namespace for alice or bob: $(nsctl list)"; }
assert_ne "$init_ns" "$ns" "alice's namespace"
assert_ne "$ns" "$bob_ns" "bob's namespace"
assert_eq "$ns" "$(vm_ns_of "$(manager_pid alice)")" "alice's lingering systemd --user"
assert_eq "$bob_ns" "$(vm_ns_of "$(manager_pid bob)")" "bob's lingering systemd --user"

# ---- 2. ssh: alice mounts sshfs to this VM's own sshd -----------------------------------
vm_start_sshd --debian-pam
say "ssh alice: sshfs alice@127.0.0.1:data ~/remote"
out=$(vm_ssh alice 'sshfs -o IdentityFile=$HOME/.ssh/id_ed25519,StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,BatchMode=yes \
        alice@127.0.0.1:/home/alice/data ~/remote && cat ~/remote/file && findmnt -n -o FSTYPE ~/remote') ||
        { vm_sshd_log | tail -20 >&2; vm_journal_dump; fail "alice's sshfs over ssh failed: $out"; }
assert_eq "sshfs-data-of-alice
fuse.sshfs" "$out" "alice's sshfs mount"
want="$ns sshfs-data-of-alice 1"

# ---- 3. a user service makes a FUSE mount of its own ------------------------------------
say "a user service of alice mounts bindfs on ~/svcmnt"
vm_user_run alice --unit=svc-mount bindfs -f --no-allow-other /home/alice/svcsrc /home/alice/svcmnt ||
        fail "systemd-run --user bindfs failed"
vm_wait_for 30 vm_ssh alice 'test -s ~/svcmnt/file'
want_all="$want service-mount-of-alice"

# ---- 4. every entry point of alice ------------------------------------------------------
declare -A got
got[ssh]=$(vm_ssh alice "$probe")
got[su-l]=$(su -l alice -c "$probe")
has_entry sudo-i && got[sudo-i]=$(sudo -i -u alice "$probe")
# run0 (systemd >= 256), as root: a transient service of PID 1 with User=alice and
# PAMName=systemd-run0, its output through pipes (no tty here)
run0_probe() { # run0_probe USER
        run0 --user="$1" "$probe" || fail "run0 --user=$1 failed"
}
if has_entry run0; then
        for f in /etc/pam.d/systemd-run0 /usr/lib/pam.d/systemd-run0 /etc/pam.d/other; do
                [ -e "$f" ] && break
        done
        say "run0 ($(run0 --version | head -1)): PAM service systemd-run0 reads $f: $(grep -E '^[[:space:]]*(@include|session)' "$f" | tr -s ' \t' ' ' | paste -sd';')"
        mgr=$(manager_pid alice)
        got[run0]=$(run0_probe alice)
        # the lingering manager is the same one after run0's session ended
        assert_eq "$mgr" "$(manager_pid alice)" "alice's lingering manager after run0"
fi
# login on a console: login(1) on a pty made by script(1), fed through a fifo that stays open
# until the shell has answered
login_probe() { # login_probe USER: the probe's line from a console login of USER
        local u=$1 fifo=$VM_TMPDIR/login.fifo out=/home/$1/probe.login
        rm -f "$fifo" "$out"
        mkfifo "$fifo"
        script -qec "login -f $u" /dev/null < "$fifo" > "$VM_TMPDIR/login-$u.log" 2>&1 &
        local spid=$!
        exec 7> "$fifo"
        echo "$probe $out; exit" >&7
        vm_wait_for 60 file_has "$out"
        exec 7>&-
        wait "$spid" || true
        cat "$out"
}
has_entry login && got[login]=$(login_probe alice)
if has_entry cron; then
        # a cron job (@reboot: run when cron starts, through cron's PAM stack like every job)
        echo "@reboot $probe /home/alice/probe.cron" | crontab -u alice -
        echo "@reboot $probe /home/bob/probe.cron" | crontab -u bob -
        rm -f /run/crond.reboot
        systemctl start cron.service
        vm_wait_for 90 file_has /home/alice/probe.cron
        got[cron]=$(cat /home/alice/probe.cron)
fi
# a user service of the lingering manager, and the manager itself
vm_user_run alice --unit=probe-svc --wait "$probe" /home/alice/probe.svc ||
        { systemctl status --no-pager user@1001.service >&2; vm_journal_dump; fail "alice's probe service failed"; }
got[user-service]=$(cat /home/alice/probe.svc)
got[user-manager]="$(vm_ns_of "$(manager_pid alice)") (pid)"
for e in "${entries[@]}"; do
        printf '# alice %-13s %s\n' "$e:" "${got[$e]}"
        assert_eq "$want_all" "${got[$e]}" "alice's $e (namespace, sshfs file, sshfs mounts, service mount)"
done
assert_eq "$ns (pid)" "${got[user-manager]}" "alice's user manager"
journalctl --sync
assert_contains "$(journalctl -u nsd.service --no-pager -o cat NSD_EVENT=join USER_ID=1001)" \
        "JOIN for uid 1001" "alice's joins in nsd's journal"

# ---- 5. bob's entry points and root: none of alice's mounts -----------------------------
declare -A bob
bob[ssh]=$(vm_ssh bob "$probe")
bob[su-l]=$(su -l bob -c "$probe")
has_entry sudo-i && bob[sudo-i]=$(sudo -i -u bob "$probe")
has_entry run0 && bob[run0]=$(run0_probe bob)
has_entry login && bob[login]=$(login_probe bob)
if has_entry cron; then
        vm_wait_for 60 file_has /home/bob/probe.cron
        bob[cron]=$(cat /home/bob/probe.cron)
fi
vm_user_run bob --unit=probe-svc --wait "$probe" /home/bob/probe.svc || fail "bob's probe service failed"
bob[user-service]=$(cat /home/bob/probe.svc)
for e in "${entries[@]}"; do
        printf '# bob   %-13s %s\n' "$e:" "${bob[$e]}"
        assert_eq "$bob_ns - 0 -" "${bob[$e]}" "bob's $e"
done
assert_eq "$init_ns - 0 -" "$("$probe")" "root in the initial namespace"
assert_eq 0 "$(ls -A /home/alice/remote | wc -l)" "root's view of /home/alice/remote"

# ---- 6. nsd restarted while alice's user services run ----------------------------------
say "systemctl restart nsd.service while alice's user services run"
svc_pid=$(service_pid alice svc-mount)
pid=$(nsd_main_pid)
systemctl restart nsd.service
vm_wait_for 30 sh -c "[ \"\$(systemctl show -p MainPID --value nsd.service)\" != $pid ] && systemctl is-active --quiet nsd.service"
assert_eq "$ns" "$(vm_ns_of "$svc_pid")" "the running user service after the restart"
assert_eq "$ns" "$(nsd_ns_inode alice)" "alice's namespace re-adopted"
assert_eq "$want_all" "$(vm_ssh alice "$probe")" "an ssh login after the restart"
vm_user_run alice --unit=probe-svc2 --wait "$probe" /home/alice/probe.svc2 || fail "a service after the restart failed"
assert_eq "$want_all" "$(cat /home/alice/probe.svc2)" "a user service started after the restart"

# ---- 7. a user manager started while nsd does not run: socket activation ---------------
if [ "$matrix" != full ]; then
        nsctl list
        say "ok (core matrix)"
        exit 0
fi
say "nsd stopped (its sockets listen); alice's user manager restarted: socket activation"
# at boot: nsd.socket is part of sockets.target, which basic.target (and so every user
# manager, DefaultDependencies) waits for; no user manager can start before it listens
assert_contains " $(systemctl show -p WantedBy --value nsd.socket) " " sockets.target " "nsd.socket's WantedBy"
assert_contains " $(systemctl show -p Before --value nsd.socket) " " sockets.target " "nsd.socket's Before"
assert_contains " $(systemctl show -p After --value basic.target) " " sockets.target " "basic.target's After"
assert_contains " $(systemctl show -p After --value user@1001.service) " " basic.target " "user@1001.service's After"
systemctl stop nsd.service
assert_eq inactive "$(systemctl is-active nsd.service || true)" "nsd.service stopped"
assert_eq active "$(systemctl is-active nsd.socket)" "nsd.socket"
systemctl restart user@1001.service
vm_wait_for 90 systemctl is-active --quiet user@1001.service
assert_eq active "$(systemctl is-active nsd.service)" "nsd.service, started by the manager's PAM session"
assert_eq "$ns" "$(vm_ns_of "$(manager_pid alice)")" "the user manager started while nsd did not run"
vm_user_run alice --unit=probe-svc3 --wait "$probe" /home/alice/probe.svc3 || fail "a service of the new manager failed"
assert_eq "$want" "$(cut -d' ' -f1-3 /home/alice/probe.svc3)" "a service of the new manager (the sshfs mount)"
nsctl list
say "ok"
