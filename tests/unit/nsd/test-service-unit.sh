#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/unit/nsd/test-service-unit.sh UNIT: the built nsd.service sets no sandbox option that
# takes away a system call nsd depends on. RestrictSUIDSGID= makes systemd answer every
# openat2() with ENOSYS (its filter cannot look into struct open_how), and openat2() is how nsd
# resolves every path of a namespace's setup, of HIDE and of mode private: under such a unit
# every setup failed (tests/vm/scenarios/namespace-setup.sh found it). TAP.
set -eu
unit=$1
. "$(dirname "$0")/../lib/tap.sh"
# value KEY: the last value of KEY= in the unit (what systemd uses), empty when unset
value() { sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*//p" "$unit" | tail -n 1; }

if grep -q '^SystemCallFilter=.*@mount' "$unit"; then
        point ok "$unit is nsd's unit (SystemCallFilter= with @mount)"
else
        point not "$unit has no SystemCallFilter= with @mount: not nsd's unit?"
fi
case $(value RestrictSUIDSGID) in
        "" | no | false | off | 0) point ok "no RestrictSUIDSGID= (systemd's filter for it turns openat2() into ENOSYS)" ;;
        *) point not "RestrictSUIDSGID=$(value RestrictSUIDSGID): systemd's filter for it turns openat2() into ENOSYS, and every namespace setup, HIDE and mode private fail" ;;
esac
tap_end
