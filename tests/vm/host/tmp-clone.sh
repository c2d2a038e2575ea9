#!/bin/bash
# tmp-clone (host side): run COMMAND from a copy of this repository under /tmp (CI may clone
# there; the VM's fresh /tmp must not hide it). Copies this tree's files (git ls-files,
# uncommitted changes included) to a fresh folder under /tmp, links its build/kernel to ours,
# and runs COMMAND (a path relative to the repository) in the copy with NSD_TMP_CLONE set to
# the copy's path: a scenario checks that it runs there (host-accounts-check.sh).
#   tests/vm/host/tmp-clone.sh COMMAND [ARGS...]
# Exit status: COMMAND's (77 when the kernel image is not built).
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: tmp-clone.sh COMMAND [ARGS...]" >&2; exit 2; }
src=$(cd "$(dirname "$(readlink -f "$0")")/../../.." && pwd)
tmp=$(mktemp -d /tmp/nsd-tmp-clone.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
repo=$tmp/nsd
mkdir -p "$repo/build"
(cd "$src" && git ls-files -z | xargs -0 tar -c) | tar -x -C "$repo"
ln -s "$(readlink -f "$src/build/kernel")" "$repo/build/kernel"
echo "# a copy of the repository at $repo: $*"
cd "$repo"
rc=0
NSD_TMP_CLONE=$repo "$@" || rc=$?
exit "$rc"
