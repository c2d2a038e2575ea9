#!/bin/bash
# tests/vm/host/tap.sh RUN-ARGS... -- SCENARIO [ARG...]: tests/vm/run for a scenario whose
# output is TAP (meson's protocol 'tap'). A VM that cannot run (tests/vm/run's exit status 77:
# the kernel image is not built, or no QEMU) becomes "1..0 # SKIP": meson's TAP protocol reads
# exit status 77 as a failure. Any other exit status is passed on.
set -uo pipefail

here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
"$here/../run" "$@"
rc=$?
if [ "$rc" -eq 77 ]; then
        echo "1..0 # SKIP the VM cannot run (kernel image not built, or no qemu): tests/vm/run $*"
        exit 0
fi
exit "$rc"
