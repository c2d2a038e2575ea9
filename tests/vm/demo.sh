#!/bin/bash
# The tour that tools/demo shows, run inside the VM.  Args: BUILD-DIR [--shell OUTDIR]
set -u
. tests/vm/lib.sh
. tests/vm/lib-nsd.sh "${1:-build}"
shell_out=
[ "${2:-}" = --shell ] && shell_out=$3

say() { printf '\n\033[1m>>> %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
as() { local u=$1; shift; printf '%s@vm$ %s\n' "$u" "$*"; vm_ssh "$u" "$@"; }

say "This VM runs the kernel we built: $(uname -r)"
say "Users alice (uid 1001) and bob (uid 1002); nsd starts; sshd's PAM stack gets pam_nsjoin:"
nsd_user alice 1001
nsd_user bob 1002
nsd_start
vm_start_sshd --pam-session "$(nsd_pam_line required)"
nsd_setup_su_pam "$(nsd_pam_line required)"
grep pam_nsjoin /etc/pam.d/sshd
run "$NSCTL" status

say "alice logs in over ssh and mounts a FUSE filesystem (bindfs) on ~/mnt:"
as alice 'mkdir -p ~/src ~/mnt; echo "hello from alice" > ~/src/note; bindfs --no-allow-other ~/src ~/mnt; ls -l ~/mnt'

say "alice logs in again (a second ssh connection): the mount is there"
as alice 'cat ~/mnt/note; findmnt -n ~/mnt'
say "... and with su -l alice:"
run su -l alice -c 'cat ~/mnt/note'

say "bob looks at alice's ~/mnt: a plain empty directory, no such mount in his table"
as bob 'ls -A /home/alice/mnt | wc -l; grep -c /home/alice/mnt /proc/self/mountinfo || true'
say "root in the initial namespace: the same"
run sh -c 'ls -A /home/alice/mnt | wc -l; grep -c /home/alice/mnt /proc/self/mountinfo || true'

say "What nsd holds (root sees everyone; a user only itself):"
run "$NSCTL" list
as bob "$NSCTL list"
say "alice's mount tree as nsd sees it:"
run "$NSCTL" show alice
say "The host's mount table grew by two lines in all, whatever the number of users: /run/nsd (private) and the pin of nsd's pin namespace"
run grep " /run/nsd" /proc/self/mountinfo

say "nsd is killed with SIGKILL and started again: nothing is lost"
nsd_kill9
nsd_start
run "$NSCTL" list
as alice 'cat ~/mnt/note'

if [ -n "$shell_out" ]; then
        cp /home/alice/.ssh/id_ed25519 "$shell_out/alice.key"
        cp /home/bob/.ssh/id_ed25519 "$shell_out/bob.key"
        chmod 0600 "$shell_out"/*.key
        # listen on all guest addresses so the host's forwarded port reaches sshd
        pkill -x sshd; sleep 0.3
        VM_SSHD_LISTEN=0.0.0.0 vm_start_sshd --pam-session "$(nsd_pam_line required)"
        echo "READY" >"$shell_out/ready"
        say "The VM stays up. Log in from the host (see the lines tools/demo printed). Ctrl-C ends it."
        while :; do sleep 3600; done
fi
say "Done."
