#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""abi-check: libnsclient's exported symbols are exactly those of its version script.

Usage: abi-check.py LIBNSCLIENT.SYM LIBNSCLIENT.SO.X.Y.Z

Reads the version script (one node per release, every symbol by name, no globs but the
`local: *;` of the first node), then the dynamic symbol table of the built library
(`readelf --dyn-syms --wide`), and checks, as TAP:
  - the script names every symbol by name (no glob in a global: list);
  - every symbol the library defines and exports is in the script, in the node it carries
    (name@@NODE), and every name in the script is exported from its node;
  - each node inherits from the one before (NSCLIENT_1.1 { ... } NSCLIENT_1;);
  - the library's file version follows the newest node: NSCLIENT_1.4 -> libnsclient.so.1.4.0.
Like libfuse's ABI check: a symbol added without a node, moved between nodes, or dropped
fails here instead of at a user's dynamic linker.
"""
import os
import re
import subprocess
import sys

n_test = 0
n_failed = 0


def ok(cond, what):
    global n_test, n_failed
    n_test += 1
    if not cond:
        n_failed += 1
    print(("ok" if cond else "not ok") + " %d - %s" % (n_test, what))
    return cond


def diag(text):
    for line in text.splitlines():
        print("# " + line)


def parse_script(path):
    """[(node, parent, [names], [globs])] in file order."""
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"#[^\n]*", "", text)
    nodes = []
    for m in re.finditer(r"([A-Za-z_][A-Za-z0-9_.]*)\s*\{(.*?)\}\s*([A-Za-z_][A-Za-z0-9_.]*)?\s*;",
                         text, flags=re.S):
        node, body, parent = m.group(1), m.group(2), m.group(3)
        names, globs, section = [], [], "global"
        for item in re.split(r";", body):
            item = item.strip()
            if not item:
                continue
            sec = re.match(r"^(global|local)\s*:\s*(.*)$", item, flags=re.S)
            if sec:
                section, item = sec.group(1), sec.group(2).strip()
                if not item:
                    continue
            if section == "local":
                if item != "*":
                    globs.append("local: " + item)
                continue
            if re.search(r"[*?\[]", item):
                globs.append(item)
            else:
                names.append(item)
        nodes.append((node, parent, names, globs))
    return nodes


def exported(so):
    """{name: (node, default)} of the symbols the library defines and exports."""
    out = subprocess.run(["readelf", "--dyn-syms", "--wide", so], check=True,
                         capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(f) < 8 or not f[0].endswith(":") or f[4] not in ("GLOBAL", "WEAK"):
            continue
        if f[6] == "UND" or f[3] not in ("FUNC", "OBJECT", "IFUNC"):
            continue
        name = f[7]
        m = re.match(r"^([^@]+)(@@?)(.+)$", name)
        if m:
            syms[m.group(1)] = (m.group(3), m.group(2) == "@@")
        else:
            syms[name] = (None, True)
    return syms


def main():
    if len(sys.argv) != 3:
        print("Bail out! usage: abi-check.py LIBNSCLIENT.SYM LIBRARY")
        return 1
    script, so = sys.argv[1], sys.argv[2]
    nodes = parse_script(script)
    if not ok(len(nodes) > 0, "the version script has nodes"):
        return 1

    # names, no globs
    for node, parent, names, globs in nodes:
        ok(not globs, "%s lists every symbol by name%s" % (node, (" (globs: %s)" % ", ".join(globs)) if globs else ""))

    # the chain of nodes
    for i, (node, parent, names, globs) in enumerate(nodes):
        want = nodes[i - 1][0] if i > 0 else None
        ok(parent == want, "%s inherits from %s" % (node, want or "nothing"))

    in_script = {}
    for node, parent, names, globs in nodes:
        for n in names:
            ok(n not in in_script, "%s is in one node only (%s)" % (n, node))
            in_script.setdefault(n, node)

    syms = exported(so)
    ours = {n: v for n, v in syms.items() if not n.startswith("NSCLIENT_")}
    # the version nodes themselves appear as absolute symbols of type OBJECT in some
    # binutils; they are no API
    for name, (node, default) in sorted(ours.items()):
        want = in_script.get(name)
        ok(want is not None and node == want and default,
           "exported %s@@%s is in the script's node %s" % (name, node, want))
    for name, node in sorted(in_script.items()):
        got = ours.get(name)
        ok(got is not None and got[0] == node, "%s of node %s is exported from it" % (name, node))

    # the file version follows the newest node
    newest = nodes[-1][0]
    m = re.match(r"^NSCLIENT_(\d+)(?:\.(\d+))?$", newest)
    real = os.path.realpath(so)
    want_suffix = "%s.%s.0" % (m.group(1), m.group(2) or "0") if m else "?"
    ok(m is not None and real.endswith(".so." + want_suffix),
       "the library's version follows the newest node %s: %s (want .so.%s)" % (newest, os.path.basename(real), want_suffix))

    print("1..%d" % n_test)
    return 1 if n_failed else 0


if __name__ == "__main__":
    sys.exit(main())
