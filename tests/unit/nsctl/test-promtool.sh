#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# tests/unit/nsctl/test-promtool.sh GOLDEN: `promtool check metrics` (Debian's prometheus
# package) accepts what `nsctl metrics` prints: the stdout of the golden file that nsctl-cli
# holds nsctl's output to, byte for byte, with every family and label filled in. promtool
# parses the text as node_exporter's textfile collector does. Skips (77) without promtool.
set -eu
golden=$1
# PROMTOOL, else promtool on PATH, else the copy tools/deps takes out of the package
promtool=${PROMTOOL:-promtool}
if ! command -v "$promtool" >/dev/null 2>&1 && [ -z "${PROMTOOL:-}" ]; then
        promtool=${NSD_TEST_CACHE:-/var/cache/nsd-test}/promtool/usr/bin/promtool
fi
if ! command -v "$promtool" >/dev/null 2>&1; then
        echo "test-promtool: no promtool (apt-get install prometheus, or tools/deps as root); skipping" >&2
        exit 77
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# the golden file: "exit 0", "--- stdout", the text, "--- stderr", nothing
sed -n '/^--- stdout$/,/^--- stderr$/p' "$golden" | sed '1d;$d' >"$tmp"
if ! tail -n 1 "$tmp" | grep -qx '# EOF'; then
        echo "test-promtool: no exposition in $golden" >&2
        exit 1
fi
"$promtool" check metrics <"$tmp"
