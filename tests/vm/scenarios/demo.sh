#!/bin/bash
# The tour that tools/demo shows, run inside the VM booted with systemd as PID 1 (tests/vm/run
# --init systemd).  Args: BUILD-DIR [--shell OUTDIR]
# nsd runs from the build as its units say (socket activation); pam_nsjoin goes into every
# login the Debian way: a pam-auth-update profile (libpam-nsjoin's, pointing at the built
# module) and `pam-auth-update --enable nsjoin`.
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"
vm_needs_systemd
shell_out=
[ "${2:-}" = --shell ] && shell_out=$3

t0=$(cut -d' ' -f1 /proc/uptime)
say() { printf '\n\033[1m>>> %s\033[0m  [+%s s]\n' "$*" "$(echo "$(cut -d' ' -f1 /proc/uptime) - $t0" | bc | cut -d. -f1)"; }
run() { printf '$ %s\n' "$*"; "$@"; }
as() { local u=$1; shift; printf '%s@vm$ %s\n' "$u" "$*"; vm_ssh "$u" "$@"; }
# claim WHAT EXPECTED ACTUAL: the tour says WHAT; when it is not so, the demo says it and fails
# at the end (tools/demo exits non-zero; the VM test `demo` runs this tour)
wrong=0
claim() {
        [ "$2" = "$3" ] && return 0
        printf '\033[1;31m!!! NOT SO: %s: expected "%s", got "%s"\033[0m\n' "$1" "$2" "$3"
        wrong=$((wrong + 1))
}
note="hello from alice's sshfs"

say "This VM runs the kernel we built: $(uname -r), systemd $(systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p') as PID 1"
export DEBIAN_FRONTEND=noninteractive
systemctl start systemd-user-sessions.service
rm -f /var/lib/man-db/auto-update
nsd_install_units
run systemctl enable --now nsd.socket nsd-root.socket
say "pam_nsjoin into every login, the Debian way (libpam-nsjoin's profile):"
printf '$ %s\n' "pam-auth-update --enable nsjoin"
nsd_enable_profile
run grep -H pam_nsjoin /etc/pam.d/common-session /etc/pam.d/common-session-noninteractive

say "Users alice (1001) and bob (1002) in the VM's own users database; Debian's sshd stack"
vm_create_user alice 1001
vm_create_user bob 1002
chmod 0755 /home/alice /home/bob
install -d -o alice -g alice /home/alice/data /home/alice/remote
echo "$note" > /home/alice/data/note
chown alice:alice /home/alice/data/note
vm_start_sshd --debian-pam || fail "sshd did not start"

say "alice logs in over ssh and mounts sshfs (to this VM's own sshd) on ~/remote:"
as alice 'sshfs -o IdentityFile=$HOME/.ssh/id_ed25519,StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,BatchMode=yes alice@127.0.0.1:/home/alice/data ~/remote; findmnt -n ~/remote; cat ~/remote/note'

say "alice's cron job reads it (cron's own PAM stack; @reboot runs as cron starts):"
# (a script: cron reads % in a crontab line as a newline)
printf '%s\n' '#!/bin/sh' 'stat -L -c "cron job in mnt:[%i]" /proc/self/ns/mnt' 'cat ~/remote/note' \
        > /home/alice/cron-job
chmod 0755 /home/alice/cron-job
# (written whole, then renamed: the test below never reads half of it)
echo '@reboot ~/cron-job > ~/cron.part 2>&1; mv ~/cron.part ~/cron.out' | crontab -u alice -
run crontab -u alice -l
rm -f /run/crond.reboot
systemctl start cron.service
vm_wait_for 60 test -s /home/alice/cron.out
run cat /home/alice/cron.out
ssh_ns=$(vm_ssh alice 'stat -L -c %i /proc/self/ns/mnt')
claim "alice's cron job reads her sshfs" "$note" "$(sed -n 2p /home/alice/cron.out)"
claim "alice's cron job runs in her ssh login's namespace" "cron job in mnt:[$ssh_ns]" \
        "$(sed -n 1p /home/alice/cron.out)"

say "alice's user service reads it (systemd --user, its own PAM stack /usr/lib/pam.d/systemd-user):"
as alice 'systemd-run --user --quiet --wait --unit=demo-read sh -c "{ stat -L -c \"user service in mnt:[%i]\" /proc/self/ns/mnt; cat ~/remote/note; } > ~/service.out 2>&1"; cat ~/service.out'
as alice 'stat -L -c "ssh login in mnt:[%i]" /proc/self/ns/mnt'
claim "alice's user service reads her sshfs" "$note" "$(sed -n 2p /home/alice/service.out)"
claim "alice's user service runs in her ssh login's namespace" "user service in mnt:[$ssh_ns]" \
        "$(sed -n 1p /home/alice/service.out)"

say "bob looks at alice's ~/remote: a plain empty directory, no such mount in his table"
as bob 'stat -L -c "bob in mnt:[%i]" /proc/self/ns/mnt; ls -A /home/alice/remote | wc -l; grep -c /home/alice/remote /proc/self/mountinfo || true'
claim "bob sees nothing in alice's ~/remote" 0 "$(vm_ssh bob 'ls -A /home/alice/remote | wc -l')"
say "root in the initial namespace: the same"
run sh -c 'stat -L -c "root in mnt:[%i]" /proc/self/ns/mnt; ls -A /home/alice/remote | wc -l; grep -c /home/alice/remote /proc/self/mountinfo || true'
claim "root in the initial namespace sees nothing in alice's ~/remote" 0 "$(ls -A /home/alice/remote | wc -l)"

say "What nsd holds (root sees everyone; a user only itself):"
run "$NSCTL" list
as bob "$NSCTL list"
run systemctl status --no-pager --lines=0 nsd.service

say "nsd is killed with SIGKILL; systemd starts it again; nothing is lost"
run systemctl kill -s KILL nsd.service
vm_wait_for 30 systemctl is-active --quiet nsd.service
as alice 'cat ~/remote/note'
claim "after nsd's SIGKILL, a new login of alice reads her sshfs" "$note" "$(vm_ssh alice 'cat ~/remote/note')"
claim "after nsd's SIGKILL, a new login of alice is in the same namespace" "$ssh_ns" \
        "$(vm_ssh alice 'stat -L -c %i /proc/self/ns/mnt')"

if [ -n "$shell_out" ]; then
        cp /home/alice/.ssh/id_ed25519 "$shell_out/alice.key"
        cp /home/bob/.ssh/id_ed25519 "$shell_out/bob.key"
        chmod 0600 "$shell_out"/*.key
        # listen on all guest addresses so the host's forwarded port reaches sshd
        vm_stop_sshd
        VM_SSHD_LISTEN=0.0.0.0 vm_start_sshd --debian-pam
        echo "READY" > "$shell_out/ready"
        say "The VM stays up. Log in from the host (see the lines tools/demo printed). Ctrl-C ends it."
        while :; do sleep 3600; done
fi
[ "$wrong" -eq 0 ] || fail "$wrong of the tour's claims were not so (the lines marked !!! above)"
say "Done: the tour took $(echo "$(cut -d' ' -f1 /proc/uptime) - $t0" | bc) s in the VM; every claim checked."
