#!/bin/bash
# harness-kernel: the VM runs the kernel image it was asked for (uname -r equals the release
# tools/build-kernel recorded for that flavour). Run as: tests/vm/run --kernel FLAVOUR -- THIS
. "$(dirname "$0")/../lib/vm.sh"

flavour=${NSD_VM_KERNEL:?}
release_file=$VM_REPO/build/kernel/$flavour/release
[ -r "$release_file" ] || fail "$release_file missing"
assert_eq "$(cat "$release_file")" "$(uname -r)" "uname -r of the $flavour kernel"
assert_contains "$(uname -r)" "-nsd-$flavour" "uname -r"
say "kernel $flavour: $(uname -r)"

# The basics every other scenario relies on.
[ -w /etc ] && [ -w /home ] && [ -w /root ] && [ -w /var ] && [ -w /tmp ] && [ -w /run ] \
    || fail "/etc, /home, /root, /var, /tmp and /run must be writable"
assert_eq "$VM_REPO" "$(pwd -P)" "working folder"
assert_eq /root "$HOME" "HOME"
[ -c /dev/fuse ] || fail "/dev/fuse missing"
assert_eq 666 "$(stat -c %a /dev/fuse)" "mode of /dev/fuse"
assert_eq cgroup2fs "$(stat -f -c %T /sys/fs/cgroup)" "/sys/fs/cgroup type"
assert_contains "$(ip -o link show lo)" "UP" "loopback"
assert_eq nsd-vm "$(hostname)" "hostname"
[ -s /etc/machine-id ] || fail "/etc/machine-id empty"
if touch "$VM_REPO/.vm-write-test" 2> /dev/null; then
    rm -f "$VM_REPO/.vm-write-test"
    fail "the repository must be read-only in the VM"
fi
say "ok"
