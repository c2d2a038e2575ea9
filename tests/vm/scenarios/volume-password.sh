#!/bin/bash
# volume-password: issue 25's "unlocked once": a gocryptfs vault in alice's namespace, its key
# her login password, under systemd as PID 1 with nsd from the built units, the host's sshd
# (key logins) and su (password logins), pam_nsjoin in Debian's common-session and its auth
# stage after pam_unix in common-auth by the package's profile (pam-auth-update --enable
# nsjoin-password).
#  1. alice's key-only ssh login: her service manager starts nsd-volume@vault, which waits
#     ("locked"); nothing is mounted on ~/vault; nsctl volumes says user-manager.
#  2. a password login of hers (su -l alice from bob, the password on a pty): pam_nsjoin hands
#     the password to nsd, the waiting run-volume gets it, gocryptfs mounts ~/vault inside her
#     namespace (nosuid,nodev); nsd logs credential-received and credential-taken.
#  3. a file written there in a key-only login is in the next key-only login; the cipher
#     folder holds no plain name; root in the initial namespace and bob do not list the mount.
#  4. the password is nowhere: not in the journal, not in any process's cmdline or environ,
#     not in nsd's state files or /run/nsd; nsd holds it no longer (every volume took it).
#  5. another password login while the vault is mounted hands nothing over (no volume waits);
#     a wrong password: su fails, nothing is handed to nsd.
#  6. a second vault of hers, Key=ask (its own password) and Start=request: not started at
#     login; `nsctl start safe` starts it, locked; `nsctl unlock safe` with a wrong password
#     (piped, from a key-only login): gocryptfs refuses it, the unit runs again and waits;
#     with the right one it is mounted; the login password never reached it; neither
#     password is in the journal, a cmdline or environ, or nsd's files; `nsctl stop safe`
#     unmounts it; bob's `nsctl unlock safe` is refused (his namespace has no such volume).
#  7. the last logout with a process of hers left (what tmux is; logind's default
#     KillUserProcesses=no keeps it in its session's scope): her user manager lives on, and so
#     does the vault, past UserStopDelaySec; when that process exits, her manager stops and
#     gocryptfs unmounts the vault (its SIGTERM); nothing of her namespace is lost.
#  8. a vault with KeyFile= (carol's, her namespace made after the drop-in came): a key file of
#     root's nsd refuses while it is open to others (credential-key-file-refused, the unit
#     tries again); once it is 0600, carol's key-only login gets the vault mounted with no
#     password typed; the key is in no log, cmdline, environ or file of nsd's; nsctl unlock
#     of it is refused.
#   Args: BUILD-DIR
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"

vm_needs_systemd
for p in gocryptfs fusermount3 su setpriv python3 openssl; do
        command -v "$p" > /dev/null || fail "$p is not installed (tools/deps)"
done
systemctl start systemd-user-sessions.service

pw='correct horse battery staple'
pw2='tr0ub4dor and 3 more'
dropins=/etc/nsd/nsd.conf.d
# nowhere PASSWORD: not in the journal, any process's cmdline or environ, nsd's files
nowhere() {
        local p hits=
        journalctl --flush 2> /dev/null || true
        assert_eq 0 "$(journalctl --no-pager -o export | grep -c -a -F "$1")" "the journal"
        for p in /proc/[0-9]*; do
                grep -q -a -F "$1" "$p/cmdline" "$p/environ" 2> /dev/null && hits="$hits ${p#/proc/}"
        done
        assert_eq "" "$hits" "processes with a password in cmdline or environ"
        assert_eq "" "$(grep -r -l -a -F "$1" /run/nsd /var/lib/nsd 2> /dev/null)" "nsd's files"
}
journal_dump() {
        vm_sshd_log | tail -20 >&2
        journalctl --no-pager -n 80 >&2 || true
}

say "nsd from the built units; pam-auth-update --enable nsjoin-password; pam_nsjoin in common-session"
nsd_units_start '[Namespaces]' 'Users=@regular'
nsd_enable_password_profile
nsd_setup_debian_pam timeout=60 debug
nsd_install_user_units
vm_start_sshd --debian-pam
nsd_user alice 1001
nsd_user bob 1002
usermod -p "$(printf '%s' "$pw" | openssl passwd -6 -stdin)" alice || fail "alice's password"

say "alice's gocryptfs cipher folder, made with her password"
vm_run_as alice sh -c 'mkdir -m 0700 ~/.vault-cipher ~/vault' || fail "alice's folders"
# (a file of hers for -init: a pipe of root's is not hers to open as /dev/stdin)
install -m 0600 -o alice -g alice /dev/null /home/alice/.pw
printf '%s' "$pw" > /home/alice/.pw
# -scryptn 10: the key derivation 64 times cheaper than gocryptfs' default (2^16), which costs
# seconds per unlock under TCG; what is tested is who gets the password, not its hardness
vm_run_as alice gocryptfs -q -init -scryptn 10 -passfile /home/alice/.pw /home/alice/.vault-cipher ||
        fail "gocryptfs -init"
printf '%s' "$pw2" > /home/alice/.pw
vm_run_as alice sh -c 'mkdir -m 0700 ~/.safe-cipher ~/safe' || fail "alice's second folders"
vm_run_as alice gocryptfs -q -init -scryptn 10 -passfile /home/alice/.pw /home/alice/.safe-cipher ||
        fail "gocryptfs -init of the second vault"
rm -f /home/alice/.pw
install -d -m 0755 "$dropins"
cat > "$dropins/60-vault.conf" << 'CONF'
[Volume vault]
Type=gocryptfs
Source=%h/.vault-cipher
Where=%h/vault
Users=alice

[Volume safe]
Type=gocryptfs
Source=%h/.safe-cipher
Where=%h/safe
Key=ask
Start=request
Users=alice
CONF
chmod 0644 "$dropins/60-vault.conf"
out=$("$NSD_BIN" --check-config 2>&1) || fail "nsd --check-config: $out"
assert_contains "$out" "2 volumes" "nsd --check-config"
systemctl reload nsd.service 2> /dev/null || true

# ---- 1. a key-only login: locked ---------------------------------------------------------
say "1. alice's key-only ssh login: the volume waits for her password"
vm_ssh alice 'sleep 600' > /dev/null 2>&1 &
stay=$!
vm_on_exit "kill $stay 2> /dev/null"
waiting() {
        vm_user_systemctl alice is-active --quiet nsd-volume@vault.service &&
                journalctl --no-pager -q _UID=1001 -o cat | grep -q "locked; waiting for your login password"
}
vm_poll 60 waiting || {
        vm_user_systemctl alice status --no-pager nsd-volumes.service nsd-volume@vault.service >&2 || true
        journal_dump
        fail "nsd-volume@vault.service does not wait for the password"
}
assert_eq "" "$(vm_ssh alice 'findmnt -n -o FSTYPE ~/vault')" "a mount on ~/vault before a password login"
out=$("$NSCTL" volumes --raw --noheadings -o user,volume,type,state)
assert_eq "alice vault gocryptfs user-manager
alice safe gocryptfs user-manager" "$out" "root's nsctl volumes"
assert_eq inactive "$(vm_user_systemctl alice is-active nsd-volume@safe.service)" \
        "the Start=request volume's unit after the login"
# (run-volume says "locked" just before its waiting request reaches nsd: polled)
now_is() { [ "$("$NSCTL" volumes --raw --noheadings -o volume,now)" = "$1" ]; }
vm_poll 30 now_is "vault locked
safe not-mounted" || fail "nsctl volumes' NOW while locked: $("$NSCTL" volumes --raw --noheadings -o volume,now)"

# ---- 2. a password login unlocks it ------------------------------------------------------
say "2. su -l alice with her password (from bob, on a pty): the vault is mounted"
out=$(printf '%s\n' "$pw" | python3 tests/vm/helpers/su-password.py bob alice 'echo in as $(id -un)' 2>&1) ||
        { journal_dump; fail "su -l alice with her password: $out"; }
assert_contains "$out" "in as alice" "su -l alice"
mounted() { [ "$(vm_ssh alice 'findmnt -n -o FSTYPE ~/vault')" = fuse.gocryptfs ]; }
vm_poll 60 mounted || {
        vm_user_systemctl alice status --no-pager nsd-volume@vault.service >&2 || true
        journal_dump
        fail "~/vault is not a gocryptfs mount after alice's password login"
}
out=$(vm_ssh alice 'awk '\''$5 == "/home/alice/vault" { print $6 }'\'' /proc/self/mountinfo')
for o in nosuid nodev; do
        assert_contains ",$out," ",$o," "the mount options of ~/vault"
done
out=$(nsd_journal NSD_EVENT=credential-received USER_ID=1001)
assert_contains "$out" "Received uid 1001's login password from pid" "nsd's credential-received event"
out=$(nsd_journal NSD_EVENT=credential-taken USER_ID=1001)
assert_contains "$out" "Handed uid 1001's login password to pid" "nsd's credential-taken event"
assert_contains "$out" "for volume 'vault'" "nsd's credential-taken event"

# ---- 3. later key-only logins see it ---------------------------------------------------
say "3. a file in the vault from one key-only login is in the next; nobody else lists it"
vm_ssh alice 'echo "secret of alice" > ~/vault/diary' || fail "alice writes into her vault"
assert_eq "secret of alice" "$(vm_ssh alice 'cat ~/vault/diary')" "the next key-only login"
assert_eq "" "$(find /home/alice/.vault-cipher -name diary)" "a plain name in the cipher folder"
assert_eq "" "$(awk '$9 == "fuse.gocryptfs"' /proc/self/mountinfo)" "gocryptfs mounts in the initial namespace"
assert_eq "" "$(vm_ssh bob "awk '\$9 == \"fuse.gocryptfs\"' /proc/self/mountinfo")" \
        "gocryptfs mounts in bob's namespace"
pid=$(vm_user_systemctl alice show -p MainPID --value nsd-volume@vault.service)
assert_eq gocryptfs "$(cat "/proc/$pid/comm")" "the unit's main process"
assert_eq 1001 "$(stat -c %u "/proc/$pid")" "the owner of the gocryptfs process"
assert_eq "$(nsd_ns_inode alice)" "$(vm_ns_of "$pid")" "the namespace of the gocryptfs process"

# ---- 4. the password is nowhere ---------------------------------------------------------
say "4. the password is in no log, no process's cmdline or environ, no file of nsd's"
nowhere "$pw"
out=$("$NSCTL" volumes --raw --noheadings -o user,volume,state)
assert_eq "alice vault user-manager
alice safe user-manager" "$out" "nsctl volumes after the unlock"

# ---- 5. nothing more to unlock, or a wrong password: nothing goes to nsd -----------------
say "5. another password login with the vault mounted: nothing is handed over"
before=$(nsd_journal NSD_EVENT=credential-received USER_ID=1001 | wc -l)
out=$(printf '%s\n' "$pw" | python3 tests/vm/helpers/su-password.py bob alice 'echo in as $(id -un)' 2>&1) ||
        fail "su -l alice with her password, again: $out"
assert_contains "$out" "in as alice" "su -l alice, again"
assert_eq "$before" "$(nsd_journal NSD_EVENT=credential-received USER_ID=1001 | wc -l)" \
        "credential-received events after a password login with every volume mounted"
say "5. a wrong password: su fails, nothing goes to nsd"
if out=$(printf '%s\n' "not her password" | python3 tests/vm/helpers/su-password.py bob alice true 2>&1); then
        fail "su -l alice with a wrong password succeeded: $out"
fi
assert_eq "$before" "$(nsd_journal NSD_EVENT=credential-received USER_ID=1001 | wc -l)" \
        "credential-received events after a wrong password"

# ---- 6. Key=ask, Start=request: nsctl start, unlock, stop ---------------------------------
say "6. alice's second vault: nsctl start, a wrong and then the right password by nsctl unlock"
safe_state() { vm_ssh alice 'findmnt -n -o FSTYPE ~/safe'; }
assert_eq "" "$(safe_state)" "a mount on ~/safe before nsctl start"
out=$(vm_ssh alice "$NSCTL start safe" 2>&1) || fail "nsctl start safe: $out"
assert_eq "nsd-volume@safe.service" "$out" "nsctl start safe"
safe_waits() {
        journalctl --no-pager -q _UID=1001 -o cat |
                grep -c "run-volume safe: locked; waiting for its password (nsctl unlock safe)"
}
safe_waiting() { [ "$(safe_waits)" -ge "$1" ]; }
safe_mounted() { [ "$(safe_state)" = fuse.gocryptfs ]; }
safe_unmounted() { [ -z "$(safe_state)" ]; }
vm_poll 60 safe_waiting 1 || { journal_dump; fail "nsd-volume@safe does not wait for its password"; }
assert_eq "" "$(safe_state)" "a mount on ~/safe while it waits"
safe_locked() { [ "$(vm_ssh alice "$NSCTL volumes --raw --noheadings -o volume,now" | grep '^safe ')" = "safe locked" ]; }
vm_poll 30 safe_locked || fail "alice's nsctl volumes while ~/safe waits: not locked"
out=$(printf '%s\n' "wrong one" | vm_ssh alice "$NSCTL unlock safe" 2>&1) || fail "nsctl unlock safe (wrong): $out"
assert_contains "$out" "Handed to nsd-volume@safe.service, which was waiting" "nsctl unlock safe"
# gocryptfs refuses it, exits; the unit runs nsctl run-volume again 5 s later, which waits
vm_poll 60 safe_waiting 2 || { journal_dump; fail "nsd-volume@safe does not wait again after a wrong password"; }
# the one clear error, where the user looks (journalctl --user -u nsd-volume@safe)
assert_contains "$(journalctl --no-pager -q _UID=1001 -o cat)" "Password incorrect" "gocryptfs on the wrong password"
assert_eq "" "$(safe_state)" "a mount on ~/safe after a wrong password"
out=$(printf '%s\n' "$pw2" | vm_ssh alice "$NSCTL unlock safe" 2>&1) || fail "nsctl unlock safe: $out"
assert_contains "$out" "Handed to nsd-volume@safe.service" "nsctl unlock safe (right)"
vm_poll 60 safe_mounted || { journal_dump; fail "~/safe is not mounted after nsctl unlock"; }
vm_ssh alice 'echo kept > ~/safe/note' || fail "alice writes into ~/safe"
assert_eq "vault mounted
safe mounted" "$("$NSCTL" volumes --raw --noheadings -o volume,now)" \
        "nsctl volumes' NOW once both are unlocked"
out=$(nsd_journal NSD_EVENT=credential-unlocked USER_ID=1001)
assert_contains "$out" "for its volume 'safe'" "nsd's credential-unlocked event"
out=$(nsd_journal NSD_EVENT=credential-taken USER_ID=1001)
assert_contains "$out" "Handed uid 1001's password from nsctl unlock to pid" "nsd's credential-taken event"
nowhere "$pw"
nowhere "$pw2"
out=$(printf '%s\n' "$pw2" | vm_ssh bob "$NSCTL unlock safe" 2>&1) && fail "bob's nsctl unlock safe succeeded: $out"
assert_contains "$out" "no volume 'safe'" "bob's nsctl unlock safe"
out=$(vm_ssh alice "$NSCTL stop safe" 2>&1) || fail "nsctl stop safe: $out"
vm_poll 30 safe_unmounted || fail "~/safe is still mounted after nsctl stop safe"
assert_eq "fuse.gocryptfs" "$(vm_ssh alice 'findmnt -n -o FSTYPE ~/vault')" "~/vault after nsctl stop safe"

# ---- 7. the last logout with a process left -----------------------------------------------
say "7. alice's last logout with a process of hers left: the vault stays until it exits"
ns_alice=$(nsd_ns_inode alice)
left=$(vm_ssh alice 'sleep 3600 < /dev/null > /dev/null 2>&1 & echo $!') || fail "a process of alice's left behind"
# her first login ends: its remote command ends (the ssh client, a child of the background
# shell $stay, goes with it)
pkill -u alice -x -f 'sleep 600' || fail "alice's first login's sleep is gone already"
wait "$stay" 2> /dev/null || true
vault_in() { nsenter -t "$1" -m findmnt -n -o FSTYPE /home/alice/vault; }
# logind: every session of hers ended, one still "closing" (its scope holds the process left)
user_closing() { [ "$(loginctl show-user alice -p State --value 2> /dev/null)" = closing ]; }
vm_poll 60 user_closing || {
        loginctl list-sessions >&2
        loginctl show-user alice >&2
        fail "alice's logind state is not 'closing' after her last logout"
}
# a negative: her manager stops UserStopDelaySec (10 s) after her last session would have
# gone; give it that and more before looking
sleep 15
assert_eq active "$(systemctl is-active user@1001.service)" "alice's user manager with a process of hers left"
assert_eq fuse.gocryptfs "$(vault_in "$left")" "~/vault seen from the process left behind"
kill "$left"
manager_gone() { [ "$(systemctl show -p ActiveState --value user@1001.service)" = inactive ]; }
vm_wait_for 90 manager_gone
pid=$(pgrep -u alice -x gocryptfs || true)
assert_eq "" "$pid" "gocryptfs of alice's after her manager stopped"
assert_eq "" "$("$NSCTL" enter alice -- findmnt -n -o FSTYPE /home/alice/vault)" \
        "a mount on ~/vault in alice's namespace (nsctl enter) once nothing of hers is left"
assert_eq "$ns_alice" "$(nsd_ns_inode alice)" "alice's namespace, kept (Linger=forever)"

# ---- 8. KeyFile=: unlocked by a key file of root's, no password at all ------------------
say "8. carol's vault with KeyFile=: refused while the key is open to others, then mounted"
key='a key file, not a password'
nsd_user carol 1003
vm_run_as carol sh -c 'mkdir -m 0700 ~/.kv-cipher ~/kv' || fail "carol's folders"
install -m 0600 -o carol -g carol /dev/null /home/carol/.pw
printf '%s\n' "$key" > /home/carol/.pw
vm_run_as carol gocryptfs -q -init -scryptn 10 -passfile /home/carol/.pw /home/carol/.kv-cipher ||
        fail "gocryptfs -init of carol's vault"
rm -f /home/carol/.pw
install -d -m 0755 /etc/nsd/keys
printf '%s\n' "$key" > /etc/nsd/keys/carol.kv
chmod 0644 /etc/nsd/keys/carol.kv
cat > "$dropins/61-kv.conf" << 'CONF'
[Volume kv]
Type=gocryptfs
Source=%h/.kv-cipher
Where=%h/kv
KeyFile=/etc/nsd/keys/%u.kv
Users=carol
CONF
chmod 0644 "$dropins/61-kv.conf"
out=$("$NSD_BIN" --check-config 2>&1) || fail "nsd --check-config: $out"
systemctl reload nsd.service || fail "systemctl reload nsd"
vm_ssh carol 'sleep 600' > /dev/null 2>&1 &
carol_stays=$!
vm_on_exit "kill $carol_stays 2> /dev/null"
key_refused() { [ -n "$(nsd_journal NSD_EVENT=credential-key-file-refused USER_ID=1003)" ]; }
vm_poll 60 key_refused || { journal_dump; fail "no credential-key-file-refused for carol's 0644 key file"; }
assert_contains "$(nsd_journal NSD_EVENT=credential-key-file-refused USER_ID=1003)" \
        "KeyFile /etc/nsd/keys/carol.kv: refused: open to others (mode 0644)" "nsd's refusal of the key file"
assert_eq "" "$(vm_ssh carol 'findmnt -n -o FSTYPE ~/kv')" "a mount on ~/kv while the key file is refused"
chmod 0600 /etc/nsd/keys/carol.kv
kv_mounted() { [ "$(vm_ssh carol 'findmnt -n -o FSTYPE ~/kv')" = fuse.gocryptfs ]; }
vm_poll 60 kv_mounted || {
        vm_user_systemctl carol status --no-pager nsd-volume@kv.service >&2 || true
        journal_dump
        fail "~/kv is not mounted once the key file is 0600"
}
vm_ssh carol 'echo "carol was here" > ~/kv/note' || fail "carol writes into ~/kv"
assert_eq "carol was here" "$(vm_ssh carol 'cat ~/kv/note')" "carol's next key-only login"
assert_contains "$(nsd_journal NSD_EVENT=credential-taken USER_ID=1003)" \
        "Handed uid 1003's key file's password to pid" "nsd's credential-taken event"
assert_eq "" "$(nsd_journal NSD_EVENT=credential-received USER_ID=1003)" \
        "a login password handed over for carol"
nowhere "$key"
assert_eq "vault login
safe ask
kv file" "$("$NSCTL" volumes --raw --noheadings -o volume,key)" "nsctl volumes -o volume,key"
out=$(printf '%s\n' "$key" | vm_ssh carol "$NSCTL unlock kv" 2>&1) && fail "nsctl unlock of a KeyFile= volume succeeded: $out"
assert_contains "$out" "takes its password from its key file" "carol's nsctl unlock kv"
say "ok"
