# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/unit/lib/tap.sh: TAP for the shell tests, sourced (POSIX sh). point ok|not TEXT
# prints one numbered result; tap_end prints the plan and exits 1 if any point failed.
n=0
failed=0
point() {
        n=$((n + 1))
        if [ "$1" = ok ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi
}
tap_end() {
        echo "1..$n"
        exit "$failed"
}
