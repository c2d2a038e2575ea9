#!/bin/bash
# tmp-clone (host side): a repository cloned under /tmp (CI may clone there) runs its VM
# commands in both init modes. Copies this tree's files (git ls-files, uncommitted changes
# included) to a fresh folder under /tmp, links its build/kernel to ours, and runs
# tests/vm/run --init MODE from the copy with a command that checks it runs there.
#   tests/vm/host/tmp-clone.sh MODE FLAVOUR TIMEOUT
# Exit status: tests/vm/run's (77 when the kernel image is not built).
set -euo pipefail

mode=${1:?MODE} flavour=${2:?FLAVOUR} timeout_s=${3:?TIMEOUT}
src=$(cd "$(dirname "$(readlink -f "$0")")/../../.." && pwd)
tmp=$(mktemp -d /tmp/nsd-tmp-clone.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
repo=$tmp/nsd
mkdir -p "$repo/build"
(cd "$src" && git ls-files -z | xargs -0 tar -c) | tar -x -C "$repo"
ln -s "$(readlink -f "$src/build/kernel")" "$repo/build/kernel"
echo "# a clone at $repo, tests/vm/run --init $mode"
cd "$repo"
# shellcheck disable=SC2016
tests/vm/run --smp 1 --init "$mode" --kernel "$flavour" --timeout "$timeout_s" -- bash -c '
        [ "$PWD" = "$1" ] || { echo "FAIL: runs in $PWD, not $1"; exit 1; }
        [ -x tests/vm/init ] && [ -f meson.build ] || { echo "FAIL: the clone is not visible at $1"; exit 1; }
        echo "# ok: the command runs in $PWD (init mode ${NSD_VM_INIT:-default})"' tmp-clone "$repo"
