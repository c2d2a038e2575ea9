#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/unit/nsd/test-check-config.sh NSD: nsd --check-config, as an administrator runs it
# before a reload: the configuration with its drop-ins, one clear FILE:LINE message for what
# is wrong (a bad key, a key in two files, a world-writable drop-in, a share that overlaps
# another or a polydir, a share with no members), and the files the setup names (an init
# script that is not root's or is missing, a bind source with a symbolic link on the way, a
# share's missing directory), and a warning for a route's Path= that anyone but root may write
# to. TAP; no root (some points more with root); files only in a temp folder.
set -eu
nsd=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
umask 022
. "$(dirname "$0")/../lib/tap.sh"
# check NAME WANT_STATUS TEXT [=syntax]: nsd --check-config on $tmp/NAME/nsd.conf must exit
# WANT_STATUS and say TEXT
check() {
        name=$1 want=$2 text=$3 mode=${4:-}
        status=0
        out=$("$nsd" "--check-config$mode" --config "$tmp/$name/nsd.conf" 2>&1) || status=$?
        if [ "$status" != "$want" ]; then
                point not "$name: exit $status (expected $want): $out"
        elif printf '%s\n' "$out" | grep -qF -- "$text"; then
                point ok "$name: exit $status, '$text'"
        else
                point not "$name: exit $status, but no '$text' in: $out"
        fi
}
conf() { # NAME: a folder with nsd.conf from stdin
        mkdir -p "$tmp/$1/nsd.conf.d"
        cat >"$tmp/$1/nsd.conf"
}
sh=$(command -v sh)

conf good <<EOF2
[Setup]
InitScript=$sh
[Polydir tmp]
Path=$tmp
Method=tmpfs
EOF2
printf '[Polydir cache]\nPath=%%h/.cache\nMethod=tmpfs\nNoInit=yes\n' >"$tmp/good/nsd.conf.d/10-cache.conf"
check good 0 "good/nsd.conf: OK, with 1 drop-in: 2 polydirs, 0 read-only binds, 0 shares, 0 volumes, setup generation "

conf badkey <<'EOF2'
[Namespaces]
Linger=10
EOF2
printf '\n[Polydir x]\nPaht=/tmp\n' >"$tmp/badkey/nsd.conf.d/20-x.conf"
check badkey 1 "badkey/nsd.conf.d/20-x.conf:3: unknown key Paht= in [Polydir x]"

conf twice <<'EOF2'
[Namespaces]
Linger=10
EOF2
printf '[Namespaces]\nLinger=20\n' >"$tmp/twice/nsd.conf.d/30-linger.conf"
check twice 1 "twice/nsd.conf.d/30-linger.conf:2: [Namespaces] Linger= is set in $tmp/twice/nsd.conf:2 already"

conf world </dev/null
printf '[Namespaces]\nLinger=20\n' >"$tmp/world/nsd.conf.d/40-open.conf"
chmod 0666 "$tmp/world/nsd.conf.d/40-open.conf"
check world 1 "world/nsd.conf.d/40-open.conf: refused: writable by everyone (mode 0666)"

conf noscript <<EOF2
[Polydir tmp]
Path=$tmp
Method=tmpfs
[Setup]
InitScript=$tmp/no-such.init
EOF2
check noscript 1 "noscript/nsd.conf:5: [Setup] InitScript= '$tmp/no-such.init': No such file or directory"
check noscript 0 "noscript/nsd.conf: OK" =syntax

printf '#!/bin/sh\nexit 0\n' >"$tmp/mine.init"
chmod 0777 "$tmp/mine.init"
conf openscript <<EOF2
[Polydir tmp]
Path=$tmp
Method=tmpfs
InitScript=$tmp/mine.init
EOF2
check openscript 1 "openscript/nsd.conf:1: its InitScript= '$tmp/mine.init' must be a regular file owned by root, executable, and writable by nobody else"

mkdir -p "$tmp/real"
echo cpuinfo >"$tmp/real/cpuinfo"
ln -s "$tmp/real" "$tmp/link"
conf bindlink <<EOF2
[BindReadOnly cpu]
Source=$tmp/link/cpuinfo
Target=/proc/cpuinfo
EOF2
check bindlink 1 "bindlink/nsd.conf:1: [BindReadOnly cpu] Source=$tmp/link/cpuinfo: a symbolic link is on the way"

conf nopolydir <<EOF2
[Polydir gone]
Path=$tmp/no-such-dir
Method=tmpfs
EOF2
check nopolydir 1 "nopolydir/nsd.conf:1: [Polydir gone] Path=$tmp/no-such-dir: No such file or directory"

mkdir -p "$tmp/lab"
conf share <<EOF2
[Share lab]
Path=$tmp/lab
Groups=lab
EOF2
check share 0 "share/nsd.conf: OK, with 0 drop-ins: 0 polydirs, 0 read-only binds, 1 share, 0 volumes, setup generation "

conf shareoverlap <<EOF2
[Share lab]
Path=$tmp/lab
Groups=lab
EOF2
printf '\n[Share sub]\nPath=%s/lab/sub\nUsers=alice\n' "$tmp" >"$tmp/shareoverlap/nsd.conf.d/10-sub.conf"
check shareoverlap 1 "shareoverlap/nsd.conf.d/10-sub.conf:2: [Share sub] Path=$tmp/lab/sub is under the path of [Share lab] ($tmp/shareoverlap/nsd.conf:1), Path=$tmp/lab: overlapping shares" =syntax

conf sharenobody <<EOF2
[Share lab]
Path=$tmp/lab
EOF2
check sharenobody 1 "sharenobody/nsd.conf:1: [Share lab] has neither Users= nor Groups=: a share has no default membership"

conf sharepolydir <<EOF2
[Polydir tmp]
Path=$tmp
Method=tmpfs
[Share lab]
Path=$tmp/lab
Users=alice
EOF2
check sharepolydir 1 "sharepolydir/nsd.conf:4: [Share lab] Path=$tmp/lab is under the path of [Polydir tmp] ($tmp/sharepolydir/nsd.conf:1), Path=$tmp: a share cannot overlap a polydir"

conf sharegone <<EOF2
[Share gone]
Path=$tmp/no-such-share
Users=alice
EOF2
check sharegone 1 "sharegone/nsd.conf:1: [Share gone] Path=$tmp/no-such-share: No such file or directory"
check sharegone 0 "sharegone/nsd.conf: OK" =syntax

# a route's Path= others may write to: works, but another user can make a member's directory
# there first (nsd refuses that member's route then): a warning, exit 0
mkdir -p "$tmp/media"
chmod 1777 "$tmp/media"
conf route <<EOF2
[Share media]
Path=$tmp/media
Users=alice
Propagation=per-user
EOF2
check route 0 "nsd: warning: $tmp/route/nsd.conf:1: [Share media] Path=$tmp/media (Propagation=per-user) is writable by "
check route 0 "route/nsd.conf: OK, with 0 drop-ins: 0 polydirs, 0 read-only binds, 1 share"
chmod 0755 "$tmp/media"
if [ "$(id -u)" = 0 ]; then
        out=$("$nsd" --check-config --config "$tmp/route/nsd.conf" 2>&1) || true
        case "$out" in
        *warning*) point not "route, root's and closed: no warning, but: $out" ;;
        *) point ok "route: root's and closed: no warning" ;;
        esac
        # an ACL entry that lets uid 4242003 write (the mask lets it): setfacl -m u:4242003:rwx
        if command -v setfacl >/dev/null && setfacl -m u:4242003:rwx "$tmp/media" 2>/dev/null ||
                python3 -c 'import os, struct, sys
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, i) for t, p, i in
        [(1, 7, 2**32 - 1), (2, 7, 4242003), (4, 5, 2**32 - 1), (16, 7, 2**32 - 1), (32, 5, 2**32 - 1)])
os.setxattr(sys.argv[1], "system.posix_acl_access", acl)' "$tmp/media" 2>/dev/null; then
                check route 0 "is writable by uid 4242003 (an ACL entry)"
        else
                point ok "# SKIP an ACL entry: neither setfacl nor python3, or no ACLs here"
        fi
else
        check route 0 "is writable by uid $(id -u) (its owner)"
        point ok "# SKIP an ACL entry: needs root"
fi

# volumes: an image of root's writable by nobody else (as a user: refused, it is not root's)
# counts; one writable by others, one behind a symbolic link and a missing mount point do not
mkdir -p "$tmp/vol/vault"
: >"$tmp/vol/alice.img"
chmod 0600 "$tmp/vol/alice.img"
conf volume <<EOF2
[Volume vault]
Type=ext4
Source=$tmp/vol/alice.img
Where=$tmp/vol/vault
Users=alice
EOF2
if [ "$(id -u)" = 0 ]; then
        check volume 0 "volume/nsd.conf: OK, with 0 drop-ins: 0 polydirs, 0 read-only binds, 0 shares, 1 volume, setup generation "
else
        check volume 1 "volume/nsd.conf:3: [Volume vault] Source=$tmp/vol/alice.img must be an image (a regular file owned by root, writable by nobody else)"
fi
check volume 0 "volume/nsd.conf: OK, with 0 drop-ins: 0 polydirs, 0 read-only binds, 0 shares, 1 volume" =syntax
chmod 0666 "$tmp/vol/alice.img"
check volume 1 "volume/nsd.conf:3: [Volume vault] Source=$tmp/vol/alice.img must be an image (a regular file owned by root, writable by nobody else) or a block device owned by root (it is uid $(id -u)'s, mode 0666, a regular file); nsd would refuse it"
ln -s "$tmp/vol/alice.img" "$tmp/vol/link.img"
sed -i "s|alice.img|link.img|; s|Where=.*|Where=$tmp/vol/gone|" "$tmp/volume/nsd.conf"
check volume 1 "volume/nsd.conf:3: [Volume vault] Source=$tmp/vol/link.img: a symbolic link is on the way, which nsd does not follow"
check volume 1 "volume/nsd.conf:1: [Volume vault] Where=$tmp/vol/gone: No such file or directory"

# a KeyFile= (no specifier) nsd would refuse: open to others (and in a folder others may
# write, when $tmp is under /tmp); the message is the one a TAKE gets
conf keyfile <<EOF2
[Volume kv]
Type=gocryptfs
Source=%h/.c
Where=%h/kv
KeyFile=$tmp/kv.key
Users=alice
EOF2
printf 'k\n' >"$tmp/kv.key"
chmod 0644 "$tmp/kv.key"
check keyfile 1 "keyfile/nsd.conf:5: [Volume kv] KeyFile $tmp/kv.key: "
check keyfile 1 "; nsd would refuse it"
sed -i 's|^KeyFile=.*|KeyFile=/etc/nsd/keys/%u.kv|' "$tmp/keyfile/nsd.conf"
check keyfile 0 "keyfile/nsd.conf: OK, with 0 drop-ins: 0 polydirs, 0 read-only binds, 0 shares, 1 volume"

status=0
out=$("$nsd" --check-config=everything 2>&1) || status=$?
[ "$status" = 1 ] && case "$out" in *"expected 'syntax' or 'all'"*) true ;; *) false ;; esac &&
        point ok "--check-config=everything: a usage error" ||
        point not "--check-config=everything: exit $status: $out"

tap_end
