#!/bin/bash
# systemd-sandbox: issue 10, item 1 (acceptance 1), under systemd as PID 1. A service of a
# managed user (alice) with ProtectHome=tmpfs (then TemporaryFileSystem=/home) and
# ReadOnlyPaths= asks nsd for the descriptors of alice's namespace and gets EPERM with the
# rule's message and no descriptor, and no other request nsd answers reaches what its
# sandbox hides: nsctl enter, show, hide, release are refused; status and list answer with
# alice's own figures only. Before the rule, the root descriptor of JOIN let such a service
# read the hidden file and write the read-only one (openat(root_fd, ...)).
set -u
. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"

say "nsd from the built units"
nsd_units_start

nsd_user alice 1001
nsd_user bob 1002
install -d -m 0700 -o alice -g alice /home/alice/secret
echo "hidden by the sandbox" > /home/alice/secret/file
chown alice:alice /home/alice/secret/file
install -d -m 0755 -o alice -g alice /var/lib/sbx-ro
echo "read-only in the sandbox" > /var/lib/sbx-ro/file
chown alice:alice /var/lib/sbx-ro/file
vm_on_exit "rm -rf /var/lib/sbx-ro"

say "alice's and bob's namespaces exist (root's nsctl enter creates them)"
"$NSCTL" enter alice -- true || { nsd_journal_dump; fail "root's nsctl enter alice"; }
"$NSCTL" enter bob -- true || { nsd_journal_dump; fail "root's nsctl enter bob"; }
out=$("$NSCTL" list --raw --noheadings -o USER)
assert_contains "$out" alice "nsctl list"
assert_contains "$out" bob "nsctl list"

# What the service runs, from a place its sandbox leaves visible (the build may be in /home)
lib=/usr/local/lib/nsd-sbx
install -d "$lib"
vm_on_exit "rm -rf $lib"
cp tests/vm/helpers/nsd-rawclient.py libnsclient/nsd-protocol.h "$lib/"
cat > "$lib/probe" <<SH
#!/bin/sh
# one line per attempt: "<what>: <result>", the request's output on the lines after it
echo "ns: \$(stat -L -c %i /proc/self/ns/mnt)"
cat /home/alice/secret/file >/dev/null 2>&1 && echo "sandbox-read: open" || echo "sandbox-read: closed"
echo x 2>/dev/null >> /var/lib/sbx-ro/file && echo "sandbox-write: open" || echo "sandbox-write: closed"
echo "raw-join:"; python3 $lib/nsd-rawclient.py --socket $NSD_SOCKET --header $lib/nsd-protocol.h join 1001
echo "enter:"; $NSCTL enter alice -- cat /home/alice/secret/file 2>&1; echo "enter-exit: \$?"
echo "enter-write:"; $NSCTL enter alice -- sh -c 'echo x >> /var/lib/sbx-ro/file' 2>&1; echo "enter-write-exit: \$?"
echo "show:"; $NSCTL show alice --list 2>&1; echo "show-exit: \$?"
echo "hide:"; $NSCTL hide --unhide /home 2>&1; echo "hide-exit: \$?"
echo "release:"; $NSCTL release alice 2>&1; echo "release-exit: \$?"
echo "status:"; $NSCTL status 2>&1; echo "status-exit: \$?"
echo "list:"; $NSCTL list --raw --noheadings -o USER 2>&1; echo "list-exit: \$?"
SH
chmod 0755 "$lib/probe"

# sandbox_run PROPERTY...: the probe as a service of alice's with these sandbox properties
sandbox_run() {
        systemd-run --wait --pipe --quiet --collect -p User=alice -p ReadOnlyPaths=/var/lib/sbx-ro \
                -p BindReadOnlyPaths="$NSD_BUILD" "$@" "$lib/probe"
}

check_sandboxed() { # check_sandboxed WHAT OUTPUT
        local what=$1 out=$2
        echo "$out"
        assert_ne "$(vm_ns_of 1)" "$(echo "$out" | sed -n 's/^ns: //p')" "$what: the service's namespace"
        assert_contains "$out" "sandbox-read: closed" "$what: the sandbox hides alice's secret"
        assert_contains "$out" "sandbox-write: closed" "$what: the sandbox makes the file read-only"
        assert_contains "$out" "join 0xffff EPERM fds=0 descriptors of a namespace go only to root or to a process already inside it; see nsctl show" \
                "$what: raw JOIN"
        assert_not_contains "$out" "hidden by the sandbox" "$what: no request reached the secret"
        assert_contains "$out" "enter-exit: 1" "$what: nsctl enter"
        assert_contains "$out" "only root may enter a namespace from outside it" "$what: nsctl enter's hint"
        assert_contains "$out" "enter-write-exit: 1" "$what: nsctl enter to write"
        assert_contains "$out" "show-exit: 1" "$what: nsctl show"
        assert_contains "$out" "SHOW answers only root and processes in the user's namespace or the initial one, not a sandboxed process" \
                "$what: nsctl show's message"
        assert_contains "$out" "hide-exit: 1" "$what: nsctl hide --unhide"
        assert_contains "$out" "HIDE answers only root" "$what: nsctl hide's message"
        assert_contains "$out" "release-exit: 1" "$what: nsctl release"
        assert_contains "$out" "status-exit: 0" "$what: nsctl status answers"
        assert_contains "$out" "namespaces:      1 (" "$what: status counts alice's namespace only"
        assert_contains "$out" "list-exit: 0" "$what: nsctl list answers"
        assert_eq alice "$(echo "$out" | sed -n '/^list:$/,/^list-exit/p' | sed '1d;$d')" \
                "$what: list shows alice's entry only"
        assert_eq "read-only in the sandbox" "$(cat /var/lib/sbx-ro/file)" "$what: the read-only file"
}

say "a service of alice's with ProtectHome=tmpfs and ReadOnlyPaths="
out=$(sandbox_run -p ProtectHome=tmpfs) || true
check_sandboxed "ProtectHome=tmpfs" "$out"

say "a service of alice's with TemporaryFileSystem=/home and ReadOnlyPaths="
out=$(sandbox_run -p TemporaryFileSystem=/home) || true
check_sandboxed "TemporaryFileSystem=/home" "$out"

say "alice's namespace is untouched"
out=$("$NSCTL" list --raw --noheadings -o USER)
assert_contains "$out" alice "nsctl list after the sandboxed requests"
assert_eq "hidden by the sandbox" "$("$NSCTL" enter alice -- cat /home/alice/secret/file)" "root's view inside"
journalctl --sync
out=$(journalctl -u nsd.service --no-pager -o cat)
echo "$out" | grep -E "^JOIN for uid 1001 by pid [0-9]+ \(uid 1001\)" &&
        fail "nsd served a JOIN of alice's own (only root's were expected)"
echo "PASS"
