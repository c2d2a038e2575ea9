#!/bin/bash
# crossing-users: issue 19, item 1 (acceptance), under systemd as PID 1 with the host's real
# sshd, sudo and su and Debian's PAM stacks, pam_nsjoin in common-session and
# common-session-noninteractive (the profile's line). From alice's ssh login:
#   - sudo -i and sudo -i -u a system account land in PID 1's mount namespace, not alice's
#     (neither sees alice's FUSE mount); a mount root makes there is seen from the host;
#   - sudo -i -u bob lands in bob's namespace;
#   - su -l (to root and to the system account) run by root inside alice's namespace leaves it
#     too; with nsd stopped (sockets and service), sudo -i and su still work and still leave;
#   - a process in a container-like namespace (unshare -m, from the host's and from alice's)
#     that runs su or sudo to root stays in its own namespace;
#   - mode=chroot: alice's login is chrooted into her namespace's root (stock kernel; on the
#     patched one chroot mode joins the namespace proper), and root's su -l in that root
#     leaves the chroot: root does not see alice's mount, and a mount root makes is seen from
#     the host (sudo -i too on the patched kernel; on stock, set-uid programs do not work in a
#     chroot-mode login at all, DESIGN.md row 12).
#   Args: BUILD-DIR [full|core]   core (the stock image): parts 1 and 5, what depends on the
#   kernel; full (the default) all of them
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"
matrix=${2:-full}
case $matrix in full | core) ;; *) fail "the matrix is full or core, not '$matrix'" ;; esac

vm_needs_systemd
for p in sudo su nsenter unshare setpriv bindfs findmnt; do
        command -v "$p" > /dev/null || skip "$p is not installed (tools/deps)"
done

journal_dump() {
        vm_sshd_log | tail -30 >&2
        journalctl --no-pager -n 60 >&2 || true
}

# Under a custom boot target /run/nologin stays until this runs (VM-NOTES.md): pam_nologin in
# Debian's account stack would refuse alice's ssh login
systemctl start systemd-user-sessions.service

say "nsd from the built units"
nsd_units_start

nsd_user alice 1001
nsd_user bob 1002
useradd -r -m -d /var/lib/crossing-svc -s /bin/sh crossing-svc || fail "useradd -r crossing-svc"
vm_on_exit "userdel -r crossing-svc 2>/dev/null"
assert_eq 1 "$(($(id -u crossing-svc) < 1000))" "crossing-svc is a system account"

# pam_nsjoin in both common stacks, with the profile's control value
nsd_setup_debian_pam debug
echo "alice ALL=(ALL:ALL) NOPASSWD: ALL" > /etc/sudoers.d/crossing
chmod 0440 /etc/sudoers.d/crossing
vm_on_exit "rm -f /etc/sudoers.d/crossing"
vm_start_sshd --debian-pam

init_ns=$(vm_ns_of 1)
# probe: "<mount namespace> <user> <alice's FUSE file, or ->"
probe=/usr/local/bin/crossing-probe
cat > "$probe" << 'SH'
#!/bin/sh
echo "$(stat -L -c %i /proc/self/ns/mnt) $(id -un) $(cat /home/alice/mnt/file 2> /dev/null || echo -)"
SH
chmod 0755 "$probe"
vm_on_exit "rm -f $probe"

say "alice mounts bindfs on ~/mnt in her ssh login"
out=$(fuse_mount_as alice 2>&1) || { journal_dump; fail "alice's FUSE mount: $out"; }
assert_eq "secret of alice" "$out" "alice's FUSE mount"
alice_ns=$(nsd_ns_inode alice)
assert_ne "$init_ns" "$alice_ns" "alice's namespace"
fuse_pid=$(pgrep -u alice -x bindfs | head -1)
[ -n "$fuse_pid" ] || fail "alice's bindfs is not running"
assert_eq "$alice_ns" "$(vm_ns_of "$fuse_pid")" "alice's bindfs"

# ---- 1. from alice's ssh login ---------------------------------------------------------------
say "ssh alice: the probe, sudo -i, sudo -i -u crossing-svc, sudo -i -u bob"
out=$(vm_ssh alice "$probe; sudo -i $probe; sudo -i -u crossing-svc $probe; sudo -i -u bob $probe") ||
        { vm_sshd_log | tail -20 >&2; journal_dump; fail "alice's ssh login with sudo failed: $out"; }
echo "$out"
bob_ns=$(nsd_ns_inode bob)
assert_ne "$alice_ns" "$bob_ns" "bob's namespace"
assert_eq "$alice_ns alice secret of alice
$init_ns root -
$init_ns crossing-svc -
$bob_ns bob -" "$out" "alice's login, then sudo -i (root), sudo -i -u crossing-svc, sudo -i -u bob"
journalctl --no-pager -o cat -g "moved the session of user 'root'" | tail -1 | grep -q . ||
        { journal_dump; fail "no debug line of pam_nsjoin saying it moved root's session"; }

# Parts 1b to 4 (root's mount from sudo -i, su by root inside alice's namespace, nsd stopped,
# container-like namespaces) do not depend on the kernel: the core matrix (the stock image)
# leaves them to the full one (the patched image)
if [ "$matrix" = full ]; then
        say "ssh alice: sudo -i mounts a tmpfs on /mnt/crossing"
        mkdir -p /mnt/crossing
        vm_on_exit "umount /mnt/crossing 2>/dev/null; rmdir /mnt/crossing"
        vm_ssh alice 'sudo -i sh -c "mount -t tmpfs crossing-root /mnt/crossing && echo made-by-root > /mnt/crossing/f"' ||
                fail "root's mount from alice's login failed"
        assert_eq "crossing-root" "$(findmnt -n -o SOURCE /mnt/crossing)" "the host's /mnt/crossing"
        assert_eq "made-by-root" "$(cat /mnt/crossing/f)" "the host reads root's file"
        umount /mnt/crossing

        # ---- 2. su by root inside alice's namespace -----------------------------------------------
        say "root in alice's namespace (nsenter): su -l, su -l crossing-svc"
        out=$(nsenter -t "$fuse_pid" -m -- su -l -c "$probe"; nsenter -t "$fuse_pid" -m -- su -l crossing-svc -c "$probe")
        echo "$out"
        assert_eq "$init_ns root -
$init_ns crossing-svc -" "$out" "su -l from inside alice's namespace"

        # ---- 3. nsd stopped ----------------------------------------------------------------------
        say "nsd stopped (sockets and service): sudo -i and su -l from inside alice's namespace"
        systemctl stop nsd.socket nsd-root.socket nsd.service
        assert_eq inactive "$(systemctl is-active nsd.service)" "nsd.service"
        out=$(nsenter -t "$fuse_pid" -m -- setpriv --reuid=alice --regid=alice --init-groups sudo -i "$probe"
                nsenter -t "$fuse_pid" -m -- su -l -c "$probe")
        echo "$out"
        assert_eq "$init_ns root -
$init_ns root -" "$out" "sudo -i and su -l with nsd stopped"
        systemctl start nsd.socket nsd-root.socket
        # nsd started again (socket activation, adopting alice's and bob's namespaces) before the
        # next managed login, whose wait is bounded by timeout=: a slow VM takes seconds for that
        vm_wait_for 120 "$NSCTL" status

        # ---- 4. container-like namespaces are kept ------------------------------------------------
        say "unshare -m (from the host's namespace and from alice's), then su -l and sudo -i"
        check_kept() { # check_kept WHAT OUTPUT: su's and sudo's probes in the namespace of the last line
                local what=$1 out=$2 own
                echo "$out"
                own=$(echo "$out" | tail -1)
                assert_ne "$init_ns" "$own" "$what: the container-like namespace"
                assert_ne "$alice_ns" "$own" "$what: the container-like namespace"
                assert_eq "$own root
$own root
$own" "$(echo "$out" | cut -d' ' -f1-2)" "$what: su -l and sudo -i stay in it"
        }
        cmd="su -l -c $probe; sudo -i $probe; stat -L -c %i /proc/self/ns/mnt"
        check_kept "from the host" "$(unshare -m --propagation private sh -c "$cmd")"
        check_kept "from alice's namespace" "$(nsenter -t "$fuse_pid" -m -- unshare -m --propagation private sh -c "$cmd")"
else
        say "parts 1b to 4: in the full matrix only (core)"
fi

# ---- 5. mode=chroot ----------------------------------------------------------------------
# On the stock kernel a mode=chroot login is in the initial namespace, chrooted into alice's
# root, and set-uid programs (sudo, su) lose their set-uid bit there (DESIGN.md, glitch row
# 12): root's session comes from a root process in that chroot (nsenter -r into the login's
# root, then su -l). On the patched kernel chroot mode joins the namespace proper and sudo
# works as in part 1.
say "mode=chroot: alice's login; root's su -l in its root; a mount root makes there"
nsd_setup_debian_pam debug mode=chroot
out=$(vm_ssh alice "$probe; nohup sleep 600 > /dev/null 2>&1 & echo \$!") ||
        { journal_dump; fail "alice's chroot-mode login: $out"; }
echo "$out"
login_pid=$(echo "$out" | tail -1)
vm_on_exit "kill $login_pid 2>/dev/null"
if nsd_has_feature setns-dirfd; then
        want_ns=$alice_ns # chroot mode joins the namespace proper
else
        want_ns=$init_ns # in the initial namespace, chrooted
fi
assert_eq "$want_ns alice secret of alice" "$(echo "$out" | head -1)" "alice's chroot-mode login"
assert_eq "$want_ns" "$(vm_ns_of "$login_pid")" "a process of alice's chroot-mode login"
out=$(nsenter -t "$login_pid" -m -r -- su -l -c "$probe")
echo "$out"
assert_eq "$init_ns root -" "$out" "su -l by root in the root of alice's chroot-mode login"
mkdir -p /mnt/crossing
nsenter -t "$login_pid" -m -r -- su -l -c "mount -t tmpfs crossing-chroot /mnt/crossing" ||
        fail "root's mount from the root of alice's chroot-mode login failed"
assert_eq "crossing-chroot" "$(findmnt -n -o SOURCE /mnt/crossing)" "the host's /mnt/crossing"
umount /mnt/crossing
if nsd_has_feature setns-dirfd; then
        out=$(vm_ssh alice "sudo -i $probe") || { journal_dump; fail "sudo -i from alice's chroot-mode login: $out"; }
        assert_eq "$init_ns root -" "$out" "sudo -i from alice's chroot-mode login"
fi
kill "$login_pid"
nsd_setup_debian_pam debug

say "PASS: crossing users"
