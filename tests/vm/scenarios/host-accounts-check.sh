#!/bin/bash
# host-accounts-check: inside a VM started by tests/vm/host/host-accounts.sh (a host with accounts
# at uid 1000, 1001 and 1002 and their homes), the VM has a users database of its own: none
# of those accounts, homes or files; alice 1001, bob 1002 and carol 1000 are created as the
# scenarios do and log in over ssh and su -l. Both init modes (tests/vm/init writes the
# database in each). Run from a copy of the repository under /tmp (NSD_TMP_CLONE,
# tests/vm/host/tmp-clone.sh), it also checks that it runs there.
. "$(dirname "$0")/../lib/vm.sh"

[ -n "${NSD_HOST_ACCOUNTS:-}" ] || skip "run through tests/vm/host/host-accounts.sh (a host with accounts at 1000-1002)"
say "the host has: $NSD_HOST_ACCOUNTS; init mode ${NSD_VM_INIT:-default}"
# run from a copy under /tmp (tests/vm/host/tmp-clone.sh): the VM runs the command in it
if [ -n "${NSD_TMP_CLONE:-}" ]; then
        assert_eq "$NSD_TMP_CLONE" "$PWD" "the folder the command runs in (a clone under /tmp)"
        [ -x tests/vm/init ] && [ -f meson.build ] || fail "the clone at $NSD_TMP_CLONE is not visible in the VM"
        say "the command runs in the clone at $PWD"
fi
for a in $NSD_HOST_ACCOUNTS; do
        assert_eq "" "$(getent passwd "${a#*:}" || true)" "the VM's passwd entry for the host's uid ${a#*:}"
        assert_eq "" "$(getent passwd "${a%%:*}" || true)" "the VM's passwd entry for the host's ${a%%:*}"
        assert_eq "" "$(getent group "${a%%:*}" || true)" "the VM's group of the host's ${a%%:*}"
        [ ! -e "/home/${a%%:*}" ] || fail "the host's home /home/${a%%:*} is visible in the VM: $(ls -la "/home/${a%%:*}" 2>&1)"
        assert_not_contains "$(getent group)" "${a%%:*}" "the VM's group members"
done
assert_eq "" "$(awk -F: '$3 >= 1000 && $3 != 65534' /etc/passwd)" "accounts >= 1000 in the VM"
assert_eq root "$(getent passwd 0 | cut -d: -f1)" "root"
assert_eq nobody "$(getent passwd 65534 | cut -d: -f1)" "nobody"
[ -n "$(getent passwd sshd)" ] || fail "the host's system account sshd is missing in the VM"

vm_create_user carol 1000
vm_create_user alice 1001
vm_create_user bob 1002
assert_eq "1001" "$(id -u alice)" "alice's uid"
[ ! -e /home/alice/HOST-FILE ] || fail "alice's new home holds the host's file"
vm_start_sshd
assert_eq "alice 1001 /home/alice" "$(vm_ssh alice 'echo $(id -un) $(id -u) $HOME')" "alice over ssh"
assert_eq "bob 1002" "$(vm_ssh bob 'echo $(id -un) $(id -u); touch ~/mine')" "bob over ssh"
assert_eq bob "$(stat -c %U /home/bob/mine)" "owner of bob's file"
assert_eq "carol 1000" "$(su -l carol -c 'echo $(id -un) $(id -u)')" "su -l carol"
say "ok"
