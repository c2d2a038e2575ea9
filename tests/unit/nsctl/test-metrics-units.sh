#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# tests/unit/nsctl/test-metrics-units.sh SERVICE TIMER RULES: the built nsd-metrics.service
# runs `nsctl metrics --textfile` into the node exporter's folder, once, only where that
# folder exists; nsd-metrics.timer runs it every 60 s; and debian/rules neither enables nor
# starts the timer (nsctl(1), METRICS). TAP.
set -eu
service=$1 timer=$2 rules=$3
. "$(dirname "$0")/../lib/tap.sh"
# value FILE KEY: the last value of KEY= (what systemd uses), empty when unset
value() { sed -n "s/^[[:space:]]*$2[[:space:]]*=[[:space:]]*//p" "$1" | tail -n 1; }
check() { if [ "$(value "$1" "$2")" = "$3" ]; then point ok "$4"; else point not "$4 ($2=$(value "$1" "$2"))"; fi; }

dir=/var/lib/prometheus/node-exporter
check "$service" Type oneshot "the service is Type=oneshot"
case $(value "$service" ExecStart) in
        */nsctl\ metrics\ --textfile\ $dir) point ok "it runs nsctl metrics --textfile $dir" ;;
        *) point not "ExecStart=$(value "$service" ExecStart)" ;;
esac
check "$service" ConditionPathIsDirectory "$dir" "only where the node exporter's folder exists"
check "$service" ReadWritePaths "$dir" "and may write there (ProtectSystem=strict)"
check "$timer" OnUnitActiveSec 60s "the timer runs it every 60 s"
check "$timer" WantedBy timers.target "the timer is enabled into timers.target, when enabled"
if grep -q -- '--no-enable --no-start nsd-metrics.timer' "$rules"; then
        point ok "debian/rules neither enables nor starts the timer"
else
        point not "debian/rules has no 'dh_installsystemd --no-enable --no-start nsd-metrics.timer'"
fi
tap_end
