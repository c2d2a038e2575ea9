# tests/vm/lib/poll.sh: waiting for a condition, for lib/vm.sh (the scenarios) and lib/reset.sh
# (between two scenarios sharing a boot), which sources nothing else of the library.
# shellcheck shell=bash

# vm_poll SECONDS CMD...: poll CMD (output dropped) every 0.1 s until it succeeds; status 1
# after SECONDS. For helpers that fail their own way (lib/nsd.sh's nsd_wait_for). The deadline
# is wall-clock time, however long each look takes (under TCG on a busy host, a systemctl call
# can take a second: counting looks made a 90 s wait last many minutes).
vm_poll() {
    local end=$((SECONDS + $1))
    shift
    while :; do
        "$@" > /dev/null 2>&1 && return 0
        [ "$SECONDS" -lt "$end" ] || return 1
        sleep 0.1
    done
}
