#!/bin/bash
# harness-ssh-login: sshd with UsePAM yes on 127.0.0.1; a user created in the VM logs in with its
# key and runs commands whose output and files we check.
. "$(dirname "$0")/../lib/vm.sh"

vm_create_user alice 1500
vm_start_sshd --pam-session 'session optional pam_env.so'

out=$(vm_ssh alice id -un) || fail "ssh login as alice failed: $(vm_sshd_log | tail -20)"
assert_eq alice "$out" "id -un over ssh"
assert_eq 1500 "$(vm_ssh alice id -u)" "id -u over ssh"

vm_ssh alice 'echo "hello from $(id -un)" > ~/hello && pwd' > "$(vm_tmpdir)/pwd"
assert_eq /home/alice "$(cat "$(vm_tmpdir)/pwd")" "login folder"
assert_eq "hello from alice" "$(cat /home/alice/hello)" "file written over ssh"
assert_eq alice "$(stat -c %U /home/alice/hello)" "owner of the file"

# The exit status of the remote command comes back.
assert_status 7 vm_ssh alice 'exit 7'
# The PAM stack written by the fixture is the one sshd used.
assert_contains "$(vm_sshd_log)" "Accepted publickey for alice" "sshd log"
assert_contains "$(cat /etc/pam.d/sshd)" "pam_env.so" "/etc/pam.d/sshd"
say "ok"
