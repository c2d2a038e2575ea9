#!/bin/sh
# test-deb-prerm: debian/libpam-nsjoin.prerm with two architectures' worth of package state
# (Multi-Arch: same), TAP. The profile must leave the PAM stacks before the NATIVE
# architecture's pam_nsjoin.so goes, even while another architecture's package stays: the
# system's own sshd, su and sudo load the native module, and a `required` line naming a
# missing module fails every session, root's too (issue 19, item 6).
#
#   test-deb-prerm.sh PRERM
#
# Runs the script with stand-ins for dpkg (--print-architecture) and pam-auth-update (which
# records its arguments) first in PATH, and dpkg's DPKG_MAINTSCRIPT_* variables as dpkg sets
# them. Needs only sh; leaves nothing behind.
set -u
prerm=${1:?usage: test-deb-prerm.sh PRERM}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-deb-prerm.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

mkdir "$tmp/bin"
cat >"$tmp/bin/dpkg" <<'STUB'
#!/bin/sh
[ "$1" = --print-architecture ] || exit 2
[ -n "${FAKE_NATIVE:-}" ] || exit 1
echo "$FAKE_NATIVE"
STUB
cat >"$tmp/bin/pam-auth-update" <<'STUB'
#!/bin/sh
echo "$*" >>"$FAKE_LOG"
STUB
chmod +x "$tmp/bin/dpkg" "$tmp/bin/pam-auth-update"

n=0 failed=0
said() { if [ "$1" = remove ]; then echo "both profiles taken out"; else echo "the profiles kept"; fi; }
# check NAME WANT(remove|keep) NATIVE ARCH REFCOUNT ACTION: one run of the prerm
check() {
    name=$1 want=$2 native=$3 arch=$4 refcount=$5 action=$6
    n=$((n + 1))
    : >"$tmp/log"
    if ! env PATH="$tmp/bin:$PATH" FAKE_LOG="$tmp/log" FAKE_NATIVE="$native" \
        ${arch:+DPKG_MAINTSCRIPT_ARCH=$arch} ${refcount:+DPKG_MAINTSCRIPT_PACKAGE_REFCOUNT=$refcount} \
        DPKG_MAINTSCRIPT_PACKAGE=libpam-nsjoin sh "$prerm" "$action" >"$tmp/out" 2>&1; then
        echo "not ok $n - $name: the prerm failed"
        sed 's/^/# /' "$tmp/out"
        failed=$((failed + 1))
        return
    fi
    got=keep
    if grep -qx -- '--package --remove nsjoin nsjoin-password' "$tmp/log"; then got=remove; fi
    if [ "$got" = "$want" ]; then
        echo "ok $n - $name: $(said "$want")"
    else
        echo "not ok $n - $name: want $(said "$want"), got $(said "$got") ($(cat "$tmp/log"))"
        failed=$((failed + 1))
    fi
}

# native amd64; i386 installed beside it (refcount 2) or alone (refcount 1)
check "native removed, foreign stays" remove amd64 amd64 2 remove
check "foreign removed, native stays" keep amd64 i386 2 remove
check "native removed last" remove amd64 amd64 1 remove
check "foreign removed last" remove amd64 i386 1 remove
check "native upgraded beside foreign" keep amd64 amd64 2 upgrade
check "native upgraded alone" keep amd64 amd64 1 upgrade
check "deconfigure" keep amd64 amd64 1 deconfigure
check "failed-upgrade" keep amd64 amd64 2 failed-upgrade
# when it cannot be told, remove: a stack without the line never locks anyone out
check "no DPKG_MAINTSCRIPT_ARCH (old dpkg), refcount 2" remove amd64 '' 2 remove
check "dpkg --print-architecture fails, foreign, refcount 2" remove '' i386 2 remove
check "no refcount (old dpkg), foreign" remove amd64 i386 '' remove

echo "1..$n"
[ "$failed" -eq 0 ]
