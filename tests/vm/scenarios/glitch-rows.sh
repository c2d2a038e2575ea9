#!/bin/bash
# The chroot glitches of DESIGN.md, rows 1-14, as TAP (one test per row), through the ROOT
# descriptor that nsd hands out (nsc_enter_chroot: setns(root_fd) with kernel patch F1, else
# fchdir+chroot). The kernel decides what is expected: *-nsd-stock → every row shows the glitch;
# *-nsd-patched (or -debug) → rows 1-8, 10, 11, 13, 14 work, row 12 (setuid) works, row 9 is
# consistent (NSD_GLITCH_EXPECT=glitch|fixed overrides: the rows must then fail on the other
# kernel). Row 14 (listmount/statmount) is a TAP skip on 6.1, which lacks them.
# The rows themselves are tests/vm/helpers/glitch-rows.c (built as BUILD-DIR/tests/vm/helpers/glitch-rows).
#
# Run in the VM as TAP: tests/vm/host/tap.sh [--base 6.1|6.12] --kernel stock|patched
#   --timeout SECONDS -- tests/vm/scenarios/glitch-rows.sh BUILD-DIR
set -u

. tests/vm/lib/vm.sh
. tests/vm/lib/nsd.sh "${1:-build}"

GLITCH_ROWS=$NSD_BUILD/tests/vm/helpers/glitch-rows
[ -x "$GLITCH_ROWS" ] || fail "$GLITCH_ROWS is not built (ninja -C $NSD_BUILD)"

case "$(uname -r)" in
*-nsd-stock) expect=glitch ;;
*-nsd-patched|*-nsd-debug) expect=fixed ;;
*) fail "kernel $(uname -r) is neither -nsd-stock, -nsd-patched nor -nsd-debug" ;;
esac
# NSD_GLITCH_EXPECT=glitch|fixed overrides, to check that the rows tell the kernels apart
expect=${NSD_GLITCH_EXPECT:-$expect}
say "kernel $(uname -r): --expect $expect"

nsd_user alice 1001
nsd_start
vm_on_exit nsd_stop

# alice's namespace with a known tmpfs inside it, absent from the initial namespace
"$NSCTL" enter alice -- sh -c 'mkdir -p /home/alice/mnt &&
        mount -t tmpfs -o mode=0755 glitchfs /home/alice/mnt' || fail "cannot mount inside alice's namespace"
grep -q ' /home/alice/mnt ' /proc/self/mountinfo && fail "the tmpfs leaked into the initial namespace"

rc=0
"$GLITCH_ROWS" --expect "$expect" --user alice --dir /home/alice/mnt || rc=$?
if [ "$rc" -ne 0 ]; then
        say "nsd's log:"
        sed 's/^/#   /' "$NSD_LOG" | tail -20
fi
exit "$rc"
