# tests/vm/lib/deb.sh: the Debian packages in a VM booted with systemd as PID 1. Source after
# lib/vm.sh. The .debs come from tools/test's .deb step (build/debs, build/debs-v2,
# build/debs-0.1.0); a scenario skips when they are missing.
# shellcheck shell=bash

vm_needs_systemd
# nsd's helpers on the installed files (nsctl, pam_nsjoin.so by name)
. "$VM_LIB_DIR/nsd.sh" --installed
export DEBIAN_FRONTEND=noninteractive
# man-db's trigger rebuilds the whole man index: minutes under TCG over 9p. Not what we test.
rm -f /var/lib/man-db/auto-update
# Under a custom boot target /run/nologin stays until this runs (VM-NOTES.md).
systemctl start systemd-user-sessions.service

DEB_PACKAGES=(nsjoin libnsclient1 libnsclient-dev libpam-nsjoin)

# deb_files DIR [PACKAGE...]: print the .deb of each PACKAGE (default DEB_PACKAGES) in DIR,
# one a line; skips the scenario when one is missing.
deb_files() {
        local dir=$1 p f
        shift
        [ $# -gt 0 ] || set -- "${DEB_PACKAGES[@]}"
        for p in "$@"; do
                f=$(ls "$dir/${p}"_*.deb 2> /dev/null | head -1)
                [ -n "$f" ] || skip "no ${p}_*.deb in '$dir' (tools/test's .deb step builds them)"
                echo "$f"
        done
}

# deb_install DIR [PACKAGE...]: dpkg -i those packages from DIR; their output goes to the
# scenario's log (and $VM_TMPDIR/dpkg.log); fails when dpkg does. DEB_DPKG_OPTS: more dpkg
# options (--force-confold: what apt -o Dpkg::Options::=--force-confold passes, the answer of
# a non-interactive upgrade to a conffile both the administrator and the package changed).
deb_install() {
        local debs
        mapfile -t debs < <(deb_files "$@")
        say "dpkg ${DEB_DPKG_OPTS:-}${DEB_DPKG_OPTS:+ }-i ${debs[*]##*/}"
        # shellcheck disable=SC2086 # DEB_DPKG_OPTS: words
        dpkg ${DEB_DPKG_OPTS:-} -i "${debs[@]}" < /dev/null 2>&1 | tee -a "$VM_TMPDIR/dpkg.log" ||
                fail "dpkg -i ${debs[*]##*/} failed"
        [ "${PIPESTATUS[0]}" -eq 0 ] || fail "dpkg -i ${debs[*]##*/} failed"
}

# deb_version PACKAGE: the installed version ('' when not installed).
deb_version() {
        dpkg-query -W -f='${db:Status-Abbrev} ${Version}' "$1" 2> /dev/null | awk '$1 == "ii" { print $2 }'
}
