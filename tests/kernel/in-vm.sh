#!/bin/bash
# tests/kernel/in-vm.sh OUTDIR TIMEOUT PROGRAM...: run kernel selftest programs one after the
# other inside the VM (tests/kernel/run-suite boots it), as root, each in a fresh writable
# working folder of its own under /tmp (some create files in "."; the repository is read-only
# in the VM) with a deadline of TIMEOUT seconds. For each PROGRAM (an absolute path) it writes
# OUTDIR/<n>.log (stdout and stderr), OUTDIR/<n>.rc (exit status; 124 on timeout) and
# OUTDIR/<n>.time (seconds), n = its position, and marks its start and end in the kernel log,
# so a kernel report on the console names the program that caused it.
set -u
out=${1:?OUTDIR} timeout_s=${2:?TIMEOUT}
shift 2
n=0
for prog in "$@"; do
    n=$((n + 1))
    echo "nsd-kernel-suite: start $n $prog" > /dev/kmsg 2>/dev/null
    dir=/tmp/nsd-kernel-suite/$n
    mkdir -p "$dir"
    start=$(date +%s.%N)
    (cd "$dir" && exec timeout -k 10 "$timeout_s" "$prog") > "$out/$n.log" 2>&1 < /dev/null
    echo $? > "$out/$n.rc"
    echo "$(date +%s.%N) - $start" | bc > "$out/$n.time"
    echo "nsd-kernel-suite: end $n $prog rc=$(cat "$out/$n.rc")" > /dev/kmsg 2>/dev/null
done
# Let pending kernel reports (RCU stalls, KASAN quarantine) reach the console.
sync
exit 0
