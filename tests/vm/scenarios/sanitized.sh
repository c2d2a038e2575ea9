#!/bin/bash
# tests/vm/scenarios/sanitized.sh: run an nsd VM scenario with the sanitized nsd and nsctl (ASan,
# LeakSanitizer, UBSan: tools/test's build/sanitize), and fail on any sanitizer report.
#
#   tests/vm/run -- tests/vm/scenarios/sanitized.sh SCENARIO SANITIZED_BUILD PLAIN_BUILD [ARGS...]
#
# SCENARIO (e.g. nsd-bad-clients.sh) gets a build folder of its own: nsd/nsd and nsctl/nsctl
# from SANITIZED_BUILD, pam_nsjoin/pam_nsjoin.so from PLAIN_BUILD. The PAM module runs inside
# sshd and su, which do not carry the ASan runtime: a sanitized module would abort them
# ("ASan runtime does not come first"); the unit suite runs it sanitized instead (test-pam).
# Every sanitized process writes its reports to a folder of this script (ASAN_OPTIONS and
# UBSAN_OPTIONS log_path); at the end nsd is stopped with SIGTERM, so that LeakSanitizer
# checks it at exit, and any report file fails the scenario. Skips (77) when SANITIZED_BUILD
# has not been built.
set -u
. tests/vm/lib/vm.sh

[ $# -ge 3 ] || fail "usage: sanitized.sh SCENARIO SANITIZED_BUILD PLAIN_BUILD [ARGS...]"
scenario=$1 san=$2 plain=$3
shift 3
[ -x "$san/nsd/nsd" ] ||
        skip "$san/nsd/nsd is not built (tools/test builds it: meson setup $san -Db_sanitize=address,undefined -Db_lundef=false)"
[ -e "$plain/pam_nsjoin/pam_nsjoin.so" ] || fail "$plain/pam_nsjoin/pam_nsjoin.so is not built"
san=$(cd "$san" && pwd)
plain=$(cd "$plain" && pwd)
grep -q libasan < <(ldd "$san/nsd/nsd") || fail "$san/nsd/nsd is not built with ASan"

T=$(vm_tmpdir)
# Folders, not files, are linked: a module finds libnsclient through its rpath
# $ORIGIN/../libnsclient, and the dynamic loader takes $ORIGIN from the path dlopen() got.
mkdir -p "$T/build" "$T/reports"
ln -s "$san/nsd" "$T/build/nsd"
ln -s "$san/nsctl" "$T/build/nsctl"
ln -s "$plain/pam_nsjoin" "$T/build/pam_nsjoin"
# nsctl also runs as the scenario's users
chmod 1777 "$T/reports"

export ASAN_OPTIONS="detect_leaks=1:log_path=$T/reports/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$T/reports/ubsan"

say "running $scenario with the sanitized nsd and nsctl of $san"
rc=0
bash "tests/vm/scenarios/$scenario" "$T/build" "$@" || rc=$?

# The scenario leaves nsd running; stop it so that LeakSanitizer looks at it at exit.
nsd_exe=$(readlink -f "$san/nsd/nsd")
for p in /proc/[0-9]*; do
        [ "$(readlink "$p/exe" 2>/dev/null)" = "$nsd_exe" ] || continue
        pid=${p#/proc/}
        say "stopping the sanitized nsd (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || continue
        for _ in $(seq 300); do
                [ -d "$p" ] || break
                sleep 0.1
        done
        [ -d "$p" ] && fail "nsd (pid $pid) did not exit within 30 s of SIGTERM"
done

reports=$(find "$T/reports" -type f | sort)
for f in $reports; do
        echo "--- sanitizer report $(basename "$f"):"
        cat "$f"
done
[ "$rc" -eq 0 ] || fail "$scenario failed with the sanitized nsd (exit $rc)"
[ -z "$reports" ] || fail "$(echo "$reports" | wc -l) sanitizer report(s), see above"
say "no sanitizer reports"
echo "PASS"
