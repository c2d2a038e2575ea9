#!/bin/bash
# host-accounts (host side): run a VM with tests/vm/run on a host that has user accounts at uid
# 1000, 1001 and 1002 (named hostuser, alice and bob, with home folders holding files), as a
# workstation with a second user has, without touching this host's real accounts: inside an
# `unshare -m --propagation private` sandbox, copies of /etc/passwd, group, shadow and gshadow
# with those accounts added are bind-mounted over the real ones, and /home gets their folders
# (a tmpfs over /home, or, when the repository lives under /home, folders beside it). QEMU
# serves that root over 9p, so the VM sees it as a real host's.
#   tests/vm/host/host-accounts.sh RUN-ARGS...    (RUN-ARGS as for tests/vm/run)
# Exit status: tests/vm/run's; 77 when not root (unshare needs it).
set -euo pipefail

here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
repo=$(cd "$here/../../.." && pwd -P)
if [ "${NSD_HOST_ACCOUNTS_INSIDE:-}" != 1 ]; then
        [ "$(id -u)" -eq 0 ] || { echo "SKIP: host-accounts needs root for unshare -m"; exit 77; }
        exec env NSD_HOST_ACCOUNTS_INSIDE=1 unshare -m --propagation private -- "$0" "$@"
fi
unset NSD_HOST_ACCOUNTS_INSIDE

# ---- inside the sandbox (a mount namespace of our own, nothing propagates to the host) ----
tmp=$(mktemp -d /tmp/nsd-host-accounts.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for f in passwd group shadow gshadow; do
        cp -p "/etc/$f" "$tmp/$f"
done
added=()
add_account() { # add_account NAME UID
        local name=$1 uid=$2
        if getent passwd "$uid" > /dev/null || getent passwd "$name" > /dev/null; then
                return 0 # the host has it already: all the better
        fi
        echo "$name:x:$uid:$uid:host account $name:/home/$name:/bin/bash" >> "$tmp/passwd"
        getent group "$uid" > /dev/null || getent group "$name" > /dev/null ||
                echo "$name:x:$uid:" >> "$tmp/group"
        echo "$name:!:19000:0:99999:7:::" >> "$tmp/shadow"
        echo "$name:!::" >> "$tmp/gshadow"
        added+=("$name:$uid")
}
add_account hostuser 1000
add_account alice 1001
add_account bob 1002
# the host's alice is also in a system group, as a workstation user is (sudo, plugdev)
sed -i 's/^\(plugdev:x:[0-9]*:\)\(.*\)$/\1\2,alice/;s/^\(plugdev:x:[0-9]*:\),/\1/' "$tmp/group"
for f in passwd group shadow gshadow; do
        mount --bind "$tmp/$f" "/etc/$f"
done

case $repo/ in
        /home/*) homes=$tmp/homes; mkdir -p "$homes" ;; # keep the real /home (the repository)
        *) mount -t tmpfs -o mode=0755 tmpfs /home; homes=/home ;;
esac
for uid in 1000 1001 1002; do
        name=$(getent passwd "$uid" | cut -d: -f1) || true
        [ -n "$name" ] && [ "$homes" = /home ] || continue
        mkdir -p "/home/$name/.ssh"
        echo "host file of $name" > "/home/$name/HOST-FILE"
        echo "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKeyOfTheHostsOwnUserNotTheVMs host" \
                > "/home/$name/.ssh/authorized_keys"
        chown -R "$uid:$uid" "/home/$name"
        chmod 0700 "/home/$name"
done
# bob's home belongs to somebody else on this host (a reused name): 0700, uid 1005
[ -d /home/bob ] && [ "$homes" = /home ] && chown -R 1005:1005 /home/bob

echo "# host-accounts: this sandbox's host has $(getent passwd | awk -F: '$3 >= 1000 && $3 < 65534 { printf "%s%s:%s", s, $1, $3; s = " " }')${added:+ (added here: ${added[*]})}"
for uid in 1000 1001 1002; do
        getent passwd "$uid" > /dev/null || { echo "host-accounts: uid $uid is not an account in the sandbox" >&2; exit 1; }
done
# (not exec: the trap removes $tmp when the VM is done)
rc=0
NSD_HOST_ACCOUNTS="$(getent passwd 1000 1001 1002 | cut -d: -f1,3 | paste -sd' ')" \
        "$here/../run" "$@" || rc=$?
exit "$rc"
