# tests/vm/lib/metrics.sh: `nsctl metrics` text checked as Prometheus reads it (nsctl(1),
# METRICS), for nsd-metrics.sh and the packages' timer (lib/deb.sh, deb_metrics_timer). Source
# after lib/vm.sh.
# shellcheck shell=bash

# METRICS_PROMTOOL: the host's promtool (the VM's root is the host's): /usr/bin/promtool
# (Debian's prometheus package), or the one tools/deps took out of that package into
# $NSD_TEST_CACHE/promtool; when it is there and checks something (it rejects a counter
# without _total). Empty when not. The trixie root has none.
METRICS_PROMTOOL=
for p in /usr/bin/promtool "${NSD_TEST_CACHE:-/var/cache/nsd-test}/promtool/usr/bin/promtool"; do
        [ -x "$p" ] || continue
        printf '# HELP nsd_bad b\n# TYPE nsd_bad counter\nnsd_bad 1\n' | "$p" check metrics > /dev/null 2>&1 &&
                fail "$p check metrics accepts a counter without _total: it checks nothing here"
        METRICS_PROMTOOL=$p
        break
done

# metrics_valid FILE: FILE is metrics text Prometheus reads: `promtool check metrics` accepts
# it, or without promtool the scenarios' own reader (helpers/metrics_samples.py: every sample
# line a series and a number, declared by a '# TYPE' line, no series twice, counters in
# _total, '# EOF' last). Fails, showing the text, when not.
metrics_valid() {
        local f=$1
        if [ -n "$METRICS_PROMTOOL" ]; then
                "$METRICS_PROMTOOL" check metrics < "$f" > "$f.check" 2>&1 ||
                        { cat "$f" "$f.check"; fail "promtool check metrics rejects $f: $(cat "$f.check")"; }
        else
                python3 "$VM_REPO/tests/vm/helpers/metrics_samples.py" "$f" > /dev/null 2> "$f.check" ||
                        { cat "$f" "$f.check"; fail "no promtool; metrics_samples.py rejects $f: $(cat "$f.check")"; }
        fi
        rm -f "$f.check"
}

# metrics_checker: what metrics_valid uses, for the log
metrics_checker() {
        if [ -n "$METRICS_PROMTOOL" ]; then
                echo "promtool check metrics ($METRICS_PROMTOOL)"
        else
                echo "helpers/metrics_samples.py (no promtool in this VM)"
        fi
}

# metrics_sample FILE SERIES: the value of one series ('nsd_joins_total{result="ok"}'); fails
# unless FILE has exactly one sample of it
metrics_sample() {
        awk -v s="$2" '$1 == s { print $2; n++ } END { exit n != 1 }' "$1" ||
                fail "$1 has no single sample '$2'"
}
