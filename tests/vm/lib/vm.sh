# tests/vm/lib/vm.sh: helpers for VM scenarios. Source it from a scenario script:
#
#   . tests/vm/lib/vm.sh          (scenarios run in the repository folder)
#
# Scenarios run INSIDE a tests/vm/run VM, as root, in the repository folder. Sourcing this file
# turns on `set -euo pipefail`, refuses to run outside a VM, and creates the scenario's temp
# folder ($VM_TMPDIR, see vm_tmpdir) which an EXIT trap removes together with whatever was
# registered with vm_on_exit (sshd started by vm_start_sshd, ...). Generic only: nsd-specific
# helpers live in tests/vm/lib/nsd.sh.
# shellcheck shell=bash

set -euo pipefail

VM_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VM_REPO=$(cd "$VM_LIB_DIR/../../.." && pwd)
VM_SCENARIO=$(basename "$0" .sh)

# --- reporting -------------------------------------------------------------------------------

# fail MSG...: the scenario failed (exit 1).
fail() {
    echo "FAIL: $VM_SCENARIO: $*" >&2
    exit 1
}

# skip MSG...: the scenario cannot run here, for the reason given (exit 77).
skip() {
    echo "SKIP: $VM_SCENARIO: $*"
    exit 77
}

# say MSG...: a progress line on stdout, with the seconds since the scenario started (where
# a scenario's time goes: tools/test lists the slowest tests, these lines say which steps)
say() {
    echo "# [${SECONDS}s] $*"
}

# assert_eq EXPECTED ACTUAL [WHAT]
assert_eq() {
    [ "$1" = "$2" ] || fail "${3:-value}: expected '$1', got '$2'"
}

# assert_ne UNEXPECTED ACTUAL [WHAT]
assert_ne() {
    [ "$1" != "$2" ] || fail "${3:-value}: expected anything but '$1'"
}

# assert_contains HAYSTACK NEEDLE [WHAT]: NEEDLE is a fixed string.
assert_contains() {
    case $1 in
        *"$2"*) ;;
        *) fail "${3:-output} does not contain '$2'; it is: $(printf '%s' "$1" | head -c 2000)" ;;
    esac
}

# assert_not_contains HAYSTACK NEEDLE [WHAT]
assert_not_contains() {
    case $1 in
        *"$2"*) fail "${3:-output} contains '$2'; it is: $(printf '%s' "$1" | head -c 2000)" ;;
        *) ;;
    esac
}

# assert_status EXPECTED CMD...: run CMD, expect its exit status.
assert_status() {
    local want=$1 got=0
    shift
    "$@" || got=$?
    [ "$got" -eq "$want" ] || fail "'$*' exited with $got, expected $want"
}

# vm_poll SECONDS CMD...: lib/poll.sh
. "$VM_LIB_DIR/poll.sh"

# vm_wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds; fail after SECONDS.
vm_wait_for() {
    vm_poll "$@" || fail "timed out after $1 s waiting for: ${*:2}"
}

# --- cleanup and temp folder -----------------------------------------------------------------

VM_ON_EXIT=()

# vm_on_exit CMD: run CMD (a shell string) when the scenario ends, last registered first.
vm_on_exit() {
    VM_ON_EXIT+=("$1")
}

vm_run_exit_handlers() {
    local rc=$? i
    set +e
    for ((i = ${#VM_ON_EXIT[@]} - 1; i >= 0; i--)); do
        eval "${VM_ON_EXIT[i]}"
    done
    [ -n "${VM_TMPDIR:-}" ] && rm -rf "$VM_TMPDIR"
    exit "$rc"
}
trap vm_run_exit_handlers EXIT

# vm_tmpdir: print the scenario's own temp folder (created on sourcing, removed at exit).
vm_tmpdir() {
    echo "$VM_TMPDIR"
}

if [ "${NSD_VM:-}" != 1 ]; then
    echo "FAIL: $VM_SCENARIO: runs only inside a VM: tests/vm/run -- $0" >&2
    trap - EXIT
    exit 1
fi
VM_TMPDIR=$(mktemp -d "/tmp/$VM_SCENARIO.XXXXXX")
chmod 0755 "$VM_TMPDIR"

# vm_needs_systemd: skip unless the VM runs systemd as PID 1 (tests/vm/run --init systemd).
vm_needs_systemd() {
    [ "${NSD_VM_INIT:-}" = systemd ] || skip "needs systemd as PID 1: tests/vm/run --init systemd"
}

# vm_journal_dump [UNIT]: the last lines of the journal (of UNIT) on stderr, when something
# failed.
vm_journal_dump() {
    journalctl --no-pager -n 60 ${1:+-u "$1"} >&2 || true
}

# --- users -----------------------------------------------------------------------------------

# vm_home USER: print USER's home folder.
vm_home() {
    getent passwd "$1" | cut -d: -f6
}

# vm_create_user NAME [UID]: a user with a home, a login shell, no password (not locked: sshd
# and pam_unix accept key logins) and an ed25519 key pair in ~/.ssh, authorized for ssh.
vm_create_user() {
    local name=$1 uid=${2:-} home
    # tests/vm/init gives the VM a users database of its own: only the test's users are >= 1000
    [ -z "$uid" ] || ! getent passwd "$uid" > /dev/null ||
        fail "vm_create_user $name $uid: uid $uid is already '$(getent passwd "$uid" | cut -d: -f1)' in the VM"
    useradd -m -s /bin/bash -U ${uid:+-u "$uid"} "$name" || fail "useradd $name failed"
    usermod -p '*' "$name"
    home=$(vm_home "$name")
    install -d -m 0700 -o "$name" -g "$name" "$home/.ssh"
    ssh-keygen -q -t ed25519 -N '' -C "$name@nsd-vm" -f "$home/.ssh/id_ed25519" > /dev/null
    cp "$home/.ssh/id_ed25519.pub" "$home/.ssh/authorized_keys"
    chown "$name:$name" "$home/.ssh/id_ed25519" "$home/.ssh/id_ed25519.pub" "$home/.ssh/authorized_keys"
    chmod 0600 "$home/.ssh/id_ed25519" "$home/.ssh/authorized_keys"
}

# vm_ns_of PID: the inode of PID's mount namespace.
vm_ns_of() {
    stat -L -c %i "/proc/$1/ns/mnt"
}

# vm_run_as USER CMD...: run CMD as USER (no PAM session), in USER's home.
vm_run_as() {
    local user=$1
    shift
    (cd "$(vm_home "$user")" && setpriv --reuid="$user" --regid="$user" --init-groups \
        env HOME="$(vm_home "$user")" USER="$user" LOGNAME="$user" "$@")
}

# vm_user_systemctl USER ARGS...: systemctl --user of USER's manager; vm_user_run USER ARGS...:
# systemd-run --user --quiet through it.
vm_user_systemctl() {
    local user=$1
    shift
    vm_run_as "$user" env XDG_RUNTIME_DIR="/run/user/$(id -u "$user")" systemctl --user "$@"
}
vm_user_run() {
    local user=$1
    shift
    vm_run_as "$user" env XDG_RUNTIME_DIR="/run/user/$(id -u "$user")" systemd-run --user --quiet "$@"
}

# --- sshd ------------------------------------------------------------------------------------

VM_SSHD_DIR=/run/nsd-vm-sshd
VM_SSHD_PORT=22

# vm_start_sshd [--pam-session 'LINE']... | --debian-pam: start the host's /usr/sbin/sshd on
# 127.0.0.1:22 with UsePAM yes and key logins only. The PAM stack of service 'sshd'
# (/etc/pam.d/sshd) is written here: pam_unix for auth, account and session, then each
# --pam-session LINE in order (e.g. 'session required pam_nsjoin.so debug'); with
# --debian-pam it stays as the openssh-server package installed it (common-auth, ...,
# common-session: what pam-auth-update manages). Returns once sshd accepts connections;
# stopped at exit. VM_SSHD_LISTEN=0.0.0.0 makes it listen on every address (tools/demo --shell).
vm_start_sshd() {
    local extra=() key=/etc/ssh/ssh_host_ed25519_key_nsd-vm conf=$VM_SSHD_DIR/sshd_config i
    local debian_pam=
    while [ $# -gt 0 ]; do
        case $1 in
            --pam-session) extra+=("$2"); shift 2 ;;
            --debian-pam) debian_pam=1; shift ;;
            *) fail "vm_start_sshd: unknown argument '$1'" ;;
        esac
    done
    [ -x /usr/sbin/sshd ] || skip "/usr/sbin/sshd not installed (apt-get install openssh-server)"
    mkdir -p "$VM_SSHD_DIR" /run/sshd
    chmod 0755 /run/sshd
    [ -f "$key" ] || ssh-keygen -q -t ed25519 -N '' -f "$key" > /dev/null

    [ -z "$debian_pam" ] || grep -q '^@include common-session' /etc/pam.d/sshd ||
        fail "vm_start_sshd --debian-pam: /etc/pam.d/sshd does not include common-session"
    if [ -z "$debian_pam" ]; then
        {
            echo "# written by tests/vm/lib/vm.sh vm_start_sshd"
            echo "auth     required pam_unix.so"
            echo "account  required pam_unix.so"
            echo "session  required pam_unix.so"
            for i in "${extra[@]}"; do
                echo "$i"
            done
        } > /etc/pam.d/sshd
    fi

    cat > "$conf" <<EOF
ListenAddress ${VM_SSHD_LISTEN:-127.0.0.1}:$VM_SSHD_PORT
HostKey $key
PidFile $VM_SSHD_DIR/sshd.pid
UsePAM yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
PermitRootLogin prohibit-password
StrictModes yes
UseDNS no
PrintMotd no
PrintLastLog no
X11Forwarding no
AcceptEnv LANG LC_*
LogLevel VERBOSE
Subsystem sftp internal-sftp
EOF
    /usr/sbin/sshd -t -f "$conf" || fail "sshd rejects its configuration $conf"
    /usr/sbin/sshd -D -f "$conf" -E "$VM_SSHD_DIR/sshd.log" &
    VM_SSHD_PID=$!
    vm_on_exit vm_stop_sshd
    for ((i = 0; i < 300; i++)); do
        if (exec 3<> "/dev/tcp/127.0.0.1/$VM_SSHD_PORT") 2> /dev/null; then
            return 0
        fi
        kill -0 "$VM_SSHD_PID" 2> /dev/null || {
            cat "$VM_SSHD_DIR/sshd.log" >&2
            fail "sshd exited at start"
        }
        sleep 0.1
    done
    cat "$VM_SSHD_DIR/sshd.log" >&2
    fail "sshd does not listen on 127.0.0.1:$VM_SSHD_PORT after 30 s"
}

# vm_stop_sshd: stop the sshd vm_start_sshd started, and wait until it is gone.
vm_stop_sshd() {
    [ -n "${VM_SSHD_PID:-}" ] || return 0
    kill "$VM_SSHD_PID" 2> /dev/null
    wait "$VM_SSHD_PID" 2> /dev/null
    VM_SSHD_PID=
}

# vm_sshd_log: print sshd's log so far.
vm_sshd_log() {
    cat "$VM_SSHD_DIR/sshd.log" 2> /dev/null || true
}

# vm_ssh USER CMD...: log in as USER over ssh to 127.0.0.1 with USER's key and run CMD there. As
# with ssh(1), CMD's words are joined by spaces and run by USER's login shell. Prints the
# command's output (stdin is passed on) and returns its exit status (255: ssh itself failed).
vm_ssh() {
    local user=$1 home
    shift
    home=$(vm_home "$user")
    [ -n "$home" ] || fail "vm_ssh: no user '$user'"
    ssh -T -p "$VM_SSHD_PORT" -i "$home/.ssh/id_ed25519" \
        -o BatchMode=yes -o IdentitiesOnly=yes -o StrictHostKeyChecking=no \
        -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=60 \
        "$user@127.0.0.1" -- "$@"
}
