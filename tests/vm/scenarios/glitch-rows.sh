#!/bin/bash
# The chroot glitches of DESIGN.md, rows 1-14, as TAP (one test per row), through the ROOT
# descriptor that nsd hands out (nsc_enter_chroot: setns(root_fd) with kernel patch F1, else
# fchdir+chroot). The kernel decides what is expected: *-nsd-stock → every row shows the glitch;
# *-nsd-patched (or -debug) → rows 1-8, 10, 11, 13, 14 work, row 12 (setuid) works, row 9 is
# consistent (NSD_GLITCH_EXPECT=glitch|fixed overrides: the rows must then fail on the other
# kernel). Row 14 (listmount/statmount) is a TAP skip on 6.1, which lacks them.
# The rows themselves are tests/vm/glitch-rows.c (built as BUILD-DIR/tests/vm/glitch-rows).
#
#   in the VM:   tests/vm/glitch-rows.sh BUILD-DIR
#   on the host: tests/vm/glitch-rows.sh --vm [--base 6.1|6.12] stock|patched TIMEOUT BUILD-DIR
#                (boots the VM with tests/vm/run; a kernel image not built yet becomes a TAP
#                skip, "1..0 # SKIP", since meson's TAP protocol fails on exit status 77)
set -u

if [ "${1:-}" = --vm ]; then
        shift
        base=${NSD_VM_BASE:-6.12}
        if [ "${1:-}" = --base ]; then
                base=${2:?6.1 or 6.12}
                shift 2
        fi
        flavour=${1:?stock or patched} timeout=${2:?seconds} build=${3:?build dir}
        here=$(dirname "$(readlink -f "$0")")
        rc=0
        "$here/run" --base "$base" --kernel "$flavour" --timeout "$timeout" -- "$here/glitch-rows.sh" "$build" || rc=$?
        if [ "$rc" -eq 77 ]; then
                echo "1..0 # SKIP the VM cannot run (kernel image build/kernel/$base/$flavour not built or no qemu)"
                exit 0
        fi
        exit "$rc"
fi

. tests/vm/lib.sh
. tests/vm/lib-nsd.sh "${1:-build}"

GLITCH_ROWS=$NSD_BUILD/tests/vm/glitch-rows
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
