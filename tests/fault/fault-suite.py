#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Fault injection for nsd (issue 9): no fault may lose a user's namespace or a mount in it.

    fault-suite.py BUILD_DIR [--quick] [--table FILE] [--only SUBSTRING] [--no-faults]

(--no-faults: only the API and session tests below, without the injected faults.)

TAP on stdout. Runs on the host, as root, inside `unshare -m --propagation private` (it
re-executes itself there), with nsd's --run-dir in a temporary folder; nothing outside the
private mount namespace changes. The whole run is bound to one CPU (taskset): on Linux 6.18
namespace ids are ordered only per CPU (DESIGN.md), and one CPU makes nsd's calls, and so the
numbering of the calls to fail, the same in every run.

1. A calibration run of the scenario below under the shim (tests/fault/fault-shim.c) with
   NSD_FAULT_TRACE lists every call nsd makes of clone, unshare, setns, mount, umount2,
   open_tree, move_mount, mount_setattr, fspick, open, openat, openat2, accept, accept4,
   sendmsg, recvmsg and pidfd_open (the shim's fcntl and fstat only where CALLS_ONLY_IN says:
   the credential phases), with its call site (addr2line) and the phase it falls in.
2. For each (phase, call site), first occurrence, and each errno of ERRNOS, one case: a fresh
   run directory, user A's namespace made by a clean nsd holding a tmpfs with a file (a random
   token), then the scenario with that one call failing (NSD_FAULT=call:N:ERRNO), then a clean
   nsd. Bursts (COUNT calls failing from the Nth on) for the sites where one failure is
   absorbed by an immediate retry.
   Scenario: start nsd (kernel probes, pin store, adoption of A); JOIN A and read its file;
   JOIN B (creation) and mount a tmpfs in B; SESSION_OPEN/CLOSE for B (Linger=0: kept, it
   holds a mount of its own) and for C (created, then released by linger); RELEASE B; stop.
   Every JOIN is retried for up to JOIN_WAIT_MS while it answers "not yet available"
   (-EAGAIN) or finds no nsd, as pam_nsjoin does; an nsd that exits is started again (as
   systemd does).
   Asserted: A is the same namespace with the same file (token and inode) in the fault run and
   after a clean restart; B likewise after the clean restart unless its RELEASE answered ok;
   each phase's JOIN succeeds within JOIN_WAIT_MS (one more try allowed after an error other
   than "not yet"); nsd never logs that it replaced or lost pins, nor removes A's or B's pin.
3. The pin store's own API, without the server (tests/fault/pinstore-driver.c): a pending
   uid is refused creation (-EAGAIN) and adopted once the fault passes; a store that is not
   ready refuses every creation; a release that cannot unpin keeps the pin and makes the uid
   pending; provably dead pins are removed with a reason, a directory is left alone; a dead
   host pin is replaced.
4. Sessions across restarts, without faults: sessions opened before nsd stops (SIGTERM) or is
   killed (SIGKILL) are closed after it with the right counts; one whose leader died while
   nsd was down ends at the next start; a restored session ends when its leader dies.
   A third scenario (setup) makes D's namespace with a setup (issue 22: a tmpfs polydir, a
   Method=user polydir whose instance directory nsd makes, an init script; issue 24: a share
   of D's alone, and a per-user route; issue 25: a volume, an ext4 image on D's ~/vault on a
   loop device; D is nss_wrapper's user "ud"), with A pinned before:
   each call site of the setup (openat2, mkdirat, fsopen, fsconfig, fsmount, open_tree,
   mount_setattr, move_mount, the init script's clone and execveat, in the setup's helper
   child; the shares' anchor, the route's mount on the host and the clones; the watch of the
   pin namespace's mount table for MaxMountsPerUser=) failed in turn. Asserted: D is either
   handed out fully set up (its tmpfs, its instance bound, the init script's mark, the share's
   clone, the route, the volume's mark) or not handed out at
   all (not listed, and not there after a clean restart); an error that may pass is retried
   by the login and then served; A survives; once the case's pins are detached, no loop
   device holds the volume's image; a clean restart adopts D set up, its volume mounted (the
   cases of the setup's own sites end there). Then D's volume is stopped and started again (phases
   stop-d, start-d: VOLUME_STOP, VOLUME_START as root, one errno per call site as
   RELEASE_D_ERRNOS): a stop that answers ok leaves no mount on ~/vault, one that fails leaves
   it mounted; a start that answers ok (after one retry) leaves exactly one mount with its
   mark, one that fails none or one, never two (stop_start_d()). Then D's first session
   (phase login-d: JOIN, SESSION_OPEN, SESSION_CLOSE) makes nsd start its Start=login volume,
   desk, after the answer, each call site of that start failed in turn: the session is
   answered whatever becomes of the start, desk ends mounted once or not at all (login_d();
   phase login-undo stops it again, not failed). Then D is released (phase
   release-d: nsd unmounts its
   volume first, volume-release.h, then unpins it), each call site of that failed in turn (one
   errno each, RELEASE_D_ERRNOS):
   either the RELEASE answers ok and D is gone (also after a clean restart), or it answers
   an error and D is kept, pinned, with its volume mounted (or, when the unpin itself failed
   after the unmount, without it and nsd's log says so).
5. Linger (Linger=0), without faults: a host unmount plus a mount of the user's keeps the
   namespace (the user's mount named in the log); a process left inside keeps it until it
   ends, then it is released.
6. The fd store, with a fake service manager on NOTIFY_SOCKET: nsd stores the pin namespace
   and every user namespace; with a user's pin removed by hand, or the pin namespace's mount
   itself, a restart with the stored descriptors keeps the namespace and its file and pins it
   again.
7. A volume's login password (issue 25), a fourth scenario (cred): with A pinned, nsd under
   the fake service manager makes D with a gocryptfs volume (recorded only: no gocryptfs
   runs), then the requests of CRED_REQUESTS in turn (root's CREDENTIAL_GIVE of a random
   password in a sealed memfd, D's own CREDENTIAL_TAKE), each call site they reach failed in
   turn (first occurrences, one errno each: CRED_ERRNOS), a request that failed retried once.
   Asserted: a failed request answers an error (a message with it unless the connection was
   lost), never no answer; after the retry each ended as a served one (the TAKE got the
   password in a sealed memfd: no half state, where nsd counts it handed over and the client
   never got it); a failure of nsd's own check (credential_check()'s fcntl or fstat, the peer
   check's helper, its opens, its looks at descriptors nsd holds: OWN_FAILURE_SITES) refused
   with "nsd could not check ..." and EAGAIN (the call's errno when it does not pass), never
   with the text that blames the client, never let through; nsd holds no memfd once the
   volume took it; A served with its file during
   the run and after a clean restart, D's namespace kept; the password's bytes in no file of
   the case (nsd's run dir, state files, log) and no descriptor of the fd store. The last
   request (take-key) is D's TAKE of a second volume whose password is a key file of root's
   (KeyFile=, on a tmpfs the sandbox mounts on its own /run, so every folder from / is
   trusted): each call of that read (the folders' opens and fstats, the file's, the copy's
   seals) failed in turn is nsd's own failure ("nsd could not hand ..."), and the retry gets
   the key; the key's bytes are written nowhere either.
   Without faults: TAKEs with NSD_CREDENTIAL_WAIT, 8 per uid (MaxConnectionsPerUser=16), the
   9th EBUSY with a message; at the default MaxConnectionsPerUser=8, 6 wait and the user's
   nsctl still connects;
   a waiter whose client is gone not counted; nsd stopped (SIGTERM) while 8 wait: each client
   gets an error and nsd starts clean; a password held across a stop is gone after it and
   written nowhere.

The table (phase, call, site, errno -> outcome) goes to --table (default
BUILD_DIR/tests/fault/fault-table.md) and, as TAP comments, to the end of the output.
"""

import fcntl
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

JOIN_WAIT_MS = 10000
SERVE_WAIT_S = 15
UA, UB, UC, UD = 4242001, 4242002, 4242003, 4242004

ERRNOS = ["EAGAIN", "ENOMEM", "EMFILE", "ENFILE", "EINTR", "ETIMEDOUT", "EBUSY", "EIO"]
QUICK_ERRNOS = ["EAGAIN", "ENOMEM", "EIO"]
# one failure at these is absorbed by an immediate retry; COUNT failures in a row are not
BURST = 6
BURST_CALLS = {"clone", "setns", "open", "openat", "mount"}
BURST_PHASES = {"start", "create", "linger", "release", "first-start", "first-create", "setup"}

# --------------------------------------------------------------------------------------------

out_lines = []
test_no = 0
failures = 0


def tap(ok, desc, diag=None, skip=None, todo=None):
    """todo: a known bug of nsd's, not fixed yet: "not ok" does not fail the suite, and an
    "ok" tells meson (an unexpected pass) that the TODO can go"""
    global test_no, failures
    test_no += 1
    if skip or todo:  # a '#' before the directive would end the description there
        desc = desc.replace("#", " no.")
    line = f"{'ok' if ok else 'not ok'} {test_no} - {desc}"
    if skip:
        line += f" # SKIP {skip}"
    elif todo:
        line += f" # TODO {todo}"
    print(line, flush=True)
    if not ok:
        if not todo:
            failures += 1
        for d in (diag or "").splitlines():
            print(f"#   {d}", flush=True)


def diag(msg):
    for d in msg.splitlines():
        print(f"# {d}", flush=True)


def run(cmd, env=None, timeout=60, stdin=None):
    try:
        p = subprocess.run(cmd, env=env, timeout=timeout, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, input=stdin)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or b"").decode(errors="replace") + "\n(timed out)"


class World:
    """One run directory, one nsd at a time."""

    def __init__(self, work, build, setup=False, cred=()):
        self.build = build
        self.dir = tempfile.mkdtemp(dir=work, prefix="case.")
        self.run_dir = f"{self.dir}/run"
        self.conf = f"{self.dir}/nsd.conf"
        self.log = f"{self.dir}/nsd.log"
        self.env = dict(os.environ, NSD_SOCKET=f"{self.run_dir}/socket")
        self.env.pop("LD_PRELOAD", None)
        self.proc = None
        self.exits = []
        self.preload = []
        self.volume = False
        self.mgr = None  # a FakeManager, when the case keeps nsd's fd store
        with open(self.conf, "w") as f:
            f.write(f"[Namespaces]\nUsers={UA},{UB},{UC},{UD}\nLinger=0\n")
        if setup:
            self.make_setup()
        self.cred_volumes = tuple(cred)  # names of D's volumes that take a password
        if cred:
            self.make_cred()

    def make_setup(self):
        """What D's namespace gets (issue 22), and nss_wrapper's users for nsd's lookups."""
        d = self.dir
        for sub, mode in (("poly/t", 0o755), ("poly/u", 0o1777), (f"home/{UD}", 0o700),
                          ("share", 0o755), ("media", 0o755)):
            os.makedirs(f"{d}/{sub}", exist_ok=True)
            os.chmod(f"{d}/{sub}", mode)
        os.chown(f"{d}/home/{UD}", UD, UD)
        with open(f"{d}/init.sh", "w") as f:
            f.write(f"#!/bin/sh\necho \"$1 $2 $3 $4\" >> {d}/init.log\ntouch \"$1/.init-done\"\n")
        os.chmod(f"{d}/init.sh", 0o755)
        with open(f"{d}/passwd", "w") as f:
            f.write(f"root:x:0:0::/root:/bin/sh\nud:x:{UD}:{UD}::{d}/home/{UD}:/bin/sh\n")
        with open(f"{d}/group", "w") as f:
            f.write(f"root:x:0:\nud:x:{UD}:\n")
        # issue 25: an ext4 image of root's on D's ~/vault, holding a mark (read-only: a
        # case's namespace lives until cleanup() detaches its pins); on a host without loop
        # devices or mkfs.ext4 the scenario goes without it, and says so
        self.volume = bool(os.path.exists("/dev/loop-control") and shutil.which("mkfs.ext4"))
        volume = ""
        if self.volume:
            os.makedirs(f"{d}/vol-src")
            with open(f"{d}/vol-src/vault-mark", "w") as f:
                f.write("D's vault\n")
            with open(f"{d}/vault.img", "wb") as f:
                f.truncate(8 << 20)
            os.chmod(f"{d}/vault.img", 0o600)
            rc, out = run(["mkfs.ext4", "-q", "-F", "-d", f"{d}/vol-src", f"{d}/vault.img"])
            if rc != 0:
                raise RuntimeError(f"mkfs.ext4 {d}/vault.img: {out}")
            os.makedirs(f"{d}/home/{UD}/vault")
            os.chown(f"{d}/home/{UD}/vault", UD, UD)
            # a second one, Start=login: nsd mounts it at D's first session (phase login-d)
            with open(f"{d}/desk.img", "wb") as f:
                f.truncate(8 << 20)
            os.chmod(f"{d}/desk.img", 0o600)
            rc, out = run(["mkfs.ext4", "-q", "-F", f"{d}/desk.img"])
            if rc != 0:
                raise RuntimeError(f"mkfs.ext4 {d}/desk.img: {out}")
            os.makedirs(f"{d}/home/{UD}/desk")
            os.chown(f"{d}/home/{UD}/desk", UD, UD)
            volume = (f"[Volume vault]\nType=ext4\nSource={d}/vault.img\nWhere=%h/vault\n"
                      f"Options=ro\nUsers=ud\n"
                      f"[Volume desk]\nType=ext4\nSource={d}/desk.img\nWhere=%h/desk\n"
                      f"Options=ro\nStart=login\nUsers=ud\n")
        with open(self.conf, "a") as f:
            f.write(f"[Setup]\nInitScript={d}/init.sh\nTimeoutSec=10\n"
                    f"[Polydir t]\nPath={d}/poly/t\nMethod=tmpfs\nMountOptions=size=1m\n"
                    f"NoInit=yes\nOnlyUsers=ud\n"
                    f"[Polydir u]\nPath={d}/poly/u\nMethod=user\nInstancePrefix={d}/inst/\n"
                    f"OnlyUsers=ud\n"
                    f"[Share s]\nPath={d}/share\nUsers=ud\n"
                    f"[Share m]\nPath={d}/media\nUsers=ud\nPropagation=per-user\n" + volume)
        self.preload = ["libnss_wrapper.so"]
        self.env_nsd = {"NSS_WRAPPER_PASSWD": f"{d}/passwd", "NSS_WRAPPER_GROUP": f"{d}/group"}

    def make_cred(self):
        """D ("ud", nss_wrapper's) with gocryptfs volumes that take the login password
        (issue 25): nsd only records them as FUSE volumes of D's manager, no gocryptfs runs.
        The case's folders open to D, whose own TAKE connects to nsd's socket here."""
        d = self.dir
        os.makedirs(f"{d}/home/{UD}", mode=0o700)
        os.chown(f"{d}/home/{UD}", UD, UD)
        for p in (os.path.dirname(d), d):
            os.chmod(p, 0o711)
        with open(f"{d}/passwd", "w") as f:
            f.write(f"root:x:0:0::/root:/bin/sh\nud:x:{UD}:{UD}::{d}/home/{UD}:/bin/sh\n")
        with open(f"{d}/group", "w") as f:
            f.write(f"root:x:0:\nud:x:{UD}:\n")
        with open(self.conf, "a") as f:
            for name in self.cred_volumes:
                f.write(f"[Volume {name}]\nType=gocryptfs\nSource=%h/.{name}-cipher\n"
                        f"Where=%h/{name}\nUsers=ud\n")
            # and one whose password is a key file of root's, read at each TAKE
            f.write(f"[Volume {KEY_VOLUME}]\nType=gocryptfs\nSource=%h/.k-cipher\n"
                    f"Where=%h/k\nUsers=ud\nKeyFile={KEY_DIR}/%u.key\n")
        with open(f"{KEY_DIR}/ud.key", "w") as f:
            os.fchmod(f.fileno(), 0o600)
            f.write(KEY_TEXT)
        self.preload = ["libnss_wrapper.so"]
        self.env_nsd = {"NSS_WRAPPER_PASSWD": f"{d}/passwd", "NSS_WRAPPER_GROUP": f"{d}/group"}

    def nsd_cmd(self):
        return [f"{self.build}/nsd/nsd", "--config", self.conf, "--run-dir", self.run_dir,
                "--log-target", "stderr", "--log-level", "debug"]

    def log_text(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def start(self, fault=None, trace=None, what=None, env=None, argv0=(), **popen):
        """Start nsd; True once it serves, False if it exited first or did not serve within
        SERVE_WAIT_S (stopped then; either recorded in exits). fault, trace: the shim's
        NSD_FAULT and NSD_FAULT_TRACE; what: for the log's line; env: more variables; argv0:
        words before nsd's command line; popen: more of subprocess.Popen's arguments."""
        e = dict(self.env, **(env or {}), **getattr(self, "env_nsd", {}))
        preload = list(self.preload)
        if fault or trace:
            preload.append(f"{self.build}/tests/fault/nsd-fault-shim.so")
            e["NSD_FAULT"] = fault or ""
            if trace:
                e["NSD_FAULT_TRACE"] = trace
        if preload:
            e["LD_PRELOAD"] = " ".join(preload)
        before = self.log_text().count(" serving (pid ")
        with open(self.log, "a") as logf:
            logf.write(f"--- nsd start, {what or 'NSD_FAULT=' + (fault or '')}\n")
            logf.flush()
            self.proc = subprocess.Popen([*argv0, *self.nsd_cmd()], stdout=logf,
                                         stderr=subprocess.STDOUT, env=e, **popen)
        deadline = time.monotonic() + SERVE_WAIT_S
        while time.monotonic() < deadline:
            if self.log_text().count(" serving (pid ") > before:
                return True
            if self.proc.poll() is not None:
                self.exits.append(self.proc.returncode)
                self.proc = None
                return False
            time.sleep(0.01)
        self.stop()
        self.exits.append("no-serve")
        return False

    def ensure_running(self):
        """Like systemd's Restart=: an nsd that exited is started again (clean)."""
        if self.proc and self.proc.poll() is not None:
            self.exits.append(self.proc.returncode)
            self.proc = None
        if not self.proc:
            self.start()

    def stop(self):
        if not self.proc:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        elif self.proc.returncode not in (0, None):
            self.exits.append(self.proc.returncode)
        self.proc = None

    def client(self, *args, timeout=60, stdin=None):
        """fault-client ARGS; stdin: text for its standard input (give's password)"""
        return run([f"{self.build}/tests/fault/fault-client", *map(str, args)], env=self.env,
                   timeout=timeout, stdin=stdin)

    def nsctl(self, *args):
        return run([f"{self.build}/nsctl/nsctl", *map(str, args)], env=self.env)

    def driver(self, *args, fault=None, timeout=60):
        env = dict(self.env)
        if fault:
            env["LD_PRELOAD"] = f"{self.build}/tests/fault/nsd-fault-shim.so"
            env["NSD_FAULT"] = fault
        return run([f"{self.build}/tests/fault/pinstore-driver", self.run_dir, *map(str, args)],
                   env=env, timeout=timeout)

    def cleanup(self):
        """nsd stopped (and the fake service manager's store closed); then, unless
        NSD_FAULT_KEEP, every mount below the case's folder detached, deepest first: its pins,
        so the namespaces they kept end (and a volume's loop device with them)."""
        self.stop()
        if self.mgr:
            self.mgr.close()
            self.mgr = None
        if os.environ.get("NSD_FAULT_KEEP"):
            return
        with open("/proc/self/mountinfo") as f:
            points = [line.split()[4] for line in f]
        for p in sorted((p for p in points if p.startswith(self.dir + "/")), key=len,
                        reverse=True):
            run(["umount", "-l", p])


def parse_join(text):
    """('ok', inode, tries) / ('err', name, tries) from fault-client's last line."""
    for line in reversed(text.strip().splitlines()):
        f = line.split()
        if f and f[0] == "ok" and len(f) >= 5:
            return ("ok", int(f[1]), f[2], f[3], int(f[4]))
        if f and f[0] == "err":
            return ("err", f[1], int(f[2]) if len(f) > 2 and f[2].isdigit() else 1)
    return ("err", "no-output:" + text.strip()[-80:], 1)


def mount_token(w, uid, token):
    """In uid's namespace: a tmpfs on <case>/m<uid> with a file holding token. -> file inode"""
    d = f"{w.dir}/m{uid}"
    os.makedirs(d, exist_ok=True)
    rc, out = w.client("exec", uid, JOIN_WAIT_MS, "--", "sh", "-c",
                       f"mount -t tmpfs -o size=1m nsd-fault-{uid} {d} && echo {token} > {d}/f "
                       f"&& stat -c %i {d}/f && stat -L -c %i /proc/self/ns/mnt")
    f = out.split()
    if rc != 0 or len(f) < 2:
        return None, None, out
    return int(f[-2]), int(f[-1]), out


def read_token(w, uid):
    """(token, file inode, ns inode) as seen in uid's namespace, or (None, None, why)."""
    d = f"{w.dir}/m{uid}"
    rc, out = w.client("exec", uid, JOIN_WAIT_MS, "--", "sh", "-c",
                       f"cat {d}/f 2>/dev/null || echo NO-FILE; stat -c %i {d}/f 2>/dev/null "
                       f"|| echo 0; stat -L -c %i /proc/self/ns/mnt")
    f = out.split()
    if rc != 0 or len(f) < 3:
        return None, None, out.strip()
    return f[-3], int(f[-2]), int(f[-1])


def listed(w):
    """{uid: inode} from nsctl list"""
    rc, out = w.nsctl("list", "--raw", "--noheadings", "-o", "UID,NS")
    res = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[0].isdigit() and f[1].isdigit():
            res[int(f[0])] = int(f[1])
    return res


# ---- the scenario ----------------------------------------------------------------------------

class Outcome:
    def __init__(self):
        self.notes = []
        self.problems = []

    def note(self, s):
        if s not in self.notes:
            self.notes.append(s)

    def problem(self, s):
        self.problems.append(s)


def phase_join(w, oc, phase, uid):
    """JOIN as a login does; one more try after an error that is not 'not yet'."""
    w.ensure_running()
    rc, out = w.client("join", uid, JOIN_WAIT_MS)
    j = parse_join(out)
    if j[0] == "ok":
        if j[4] > 1:
            oc.note(f"{phase}: 'not yet'/no nsd x{j[4] - 1}, then served")
        return j
    oc.note(f"{phase}: JOIN {j[1]}")
    w.ensure_running()
    rc, out = w.client("join", uid, JOIN_WAIT_MS)
    j = parse_join(out)
    if j[0] != "ok":
        oc.problem(f"{phase}: JOIN of uid {uid} not served within {JOIN_WAIT_MS} ms after "
                   f"the fault ({j[1]})")
    return j


TRANSIENT = {"EAGAIN", "ENOMEM", "EMFILE", "ENFILE", "EINTR", "ETIMEDOUT", "EBUSY"}


def start_faulty(w, oc, mark, phase, fault, trace):
    """The phase of nsd's start with the fault; an nsd that exits is started again (clean)."""
    mark(phase)
    if not w.start(fault=fault, trace=trace):
        oc.note(f"{phase}: nsd exited ({w.exits[-1]}), started again")
        w.start()


def scenario_restart(w, oc, mark, fault=None, trace=None):
    """nsd restarts with A pinned: start, JOIN A, create B, linger, release B."""
    start_faulty(w, oc, mark, "start", fault, trace)
    mark("join")
    phase_join(w, oc, "join", UA)
    tok = read_token(w, UA)
    if tok[0] is None:
        oc.note("join: entering A failed once (" + str(tok[2])[-60:] + ")")
        w.ensure_running()
        tok = read_token(w, UA)
    oc.fault_run_token_a = tok
    mark("create")
    oc.b = create_with_token(w, oc, "create", UB, oc.token_b)
    mark("linger")
    for uid in (UB, UC):
        w.ensure_running()
        rc, out = w.client("session", uid)
        if rc != 0:
            oc.note(f"linger: session of {uid}: {out.strip()}")
    mark("release")
    w.ensure_running()
    rc, out = w.client("release", UB)
    oc.release_b = out.strip()
    if rc != 0:
        oc.note(f"release: RELEASE B answered {out.strip()}")
    mark("stop")
    # B's next login, in the same nsd: served (never stuck on a pin nsd lost track of), with
    # its old namespace if the release did not unpin it
    j = phase_join(w, oc, "after-release", UB)
    t = read_token(w, UB) if j[0] == "ok" else (None,)
    oc.b_kept = t[0] == oc.token_b
    if oc.b_kept and oc.release_b == "ok":
        oc.note("release: answered ok, yet B is back with its file, adopted again (nothing "
                "lost; a failed unpin should have made the RELEASE answer its error)")
    w.stop()


def scenario_fresh(w, oc, mark, fault=None, trace=None):
    """nsd's first start (no pin namespace yet): start, create A, stop."""
    start_faulty(w, oc, mark, "first-start", fault, trace)
    mark("first-create")
    oc.a_fresh = create_with_token(w, oc, "first-create", UA, oc.token_a)
    mark("stop")
    w.stop()


def create_with_token(w, oc, phase, uid, token):
    """JOIN (creating uid's namespace), then a tmpfs with token in it: (file ino, ns, join)"""
    j = phase_join(w, oc, phase, uid)
    if j[0] == "ok" and j[2] == "unpinned":
        oc.note(f"{phase}: uid {uid} handed out NOT pinned")
        if oc.errno in TRANSIENT:
            oc.problem(f"{phase}: a namespace that cannot survive a restart was handed out "
                       f"for an error that may pass ({oc.errno})")
    fi, nsi, out = mount_token(w, uid, token)
    if fi is None:
        w.ensure_running()
        fi, nsi, out = mount_token(w, uid, token)
    return (fi, nsi, j)


def clean_start(w, oc):
    """Every check begins so: nsd started again with no fault. False (and a problem) if not."""
    if w.start():
        return True
    oc.problem("clean start after the fault failed: " + w.log_text()[-1500:])
    return False


def check_a_kept(w, oc, inode):
    """A's token is still in A's namespace (the file A wrote, at INODE) after the restart."""
    tok = read_token(w, UA)
    if tok[0] != oc.token_a or tok[1] != inode:
        oc.problem(f"A LOST after a clean restart: file {tok[0]!r} inode {tok[1]} ns {tok[2]}, "
                   f"expected {oc.token_a} inode {inode}")


def check_restart(w, oc, fault_log):
    """The clean restart after the fault run: nothing lost, service back."""
    if not clean_start(w, oc):
        return
    check_a_kept(w, oc, oc.a[0])
    ft = getattr(oc, "fault_run_token_a", (None,))
    if ft[0] != oc.token_a:
        oc.problem(f"A not served intact during the fault run: {ft}")
    fi, nsi, jb = oc.b
    lost_answer = oc.release_b.split()[1:2] in (["ECONNRESET"], ["EPIPE"], ["ECONNREFUSED"],
                                               ["ENOENT"], ["ETIMEDOUT"], ["no-output"])
    b_pinned = fi is not None and jb[0] == "ok" and jb[2] == "pinned"
    if oc.b_kept and b_pinned:
        # B outlived its RELEASE (refused, answer lost, or an unpin that failed): it must
        # outlive the restart too
        t = read_token(w, UB)
        if t[0] != oc.token_b:
            oc.problem(f"B LOST after a clean restart (it outlived its RELEASE, answered "
                       f"{oc.release_b!r}): {t}")
    elif not oc.b_kept and oc.release_b != "ok":
        if lost_answer:
            oc.note("release: answer lost; B released")
        elif b_pinned:
            oc.problem(f"B LOST: its RELEASE answered {oc.release_b!r} but B's namespace was "
                       f"gone at its next JOIN")
    w.stop()
    check_log(oc, fault_log)


def check_fresh(w, oc, fault_log):
    if not clean_start(w, oc):
        return
    fi, nsi, j = oc.a_fresh
    if fi is not None and j[0] == "ok" and j[2] == "pinned":
        check_a_kept(w, oc, fi)
    elif fi is None:
        oc.problem(f"A could not be created and mounted after the fault: {j}")
    w.stop()
    check_log(oc, fault_log)


def check_log(oc, fault_log):
    for bad in ("replacing it", "pins in it are lost"):
        if bad in fault_log:
            oc.problem(f"nsd logged {bad!r}")
    for uid in (UA, UB):
        if re.search(rf"Removed the pin[^\n]*:{uid}'", fault_log):
            oc.problem(f"nsd removed the pin of uid {uid}")


def setup_state(w, uid):
    """D's namespace as seen from inside: (tmpfs on poly/t, poly/u is the instance, init mark,
    the share's clone on share (a shared mount), the route on media (a tmpfs holding the
    clone of media/ud), the volume (its mark on ~/vault; True without a volume), ns inode)
    or None with why."""
    d = w.dir
    rc, out = w.client("exec", uid, JOIN_WAIT_MS, "--", "sh", "-c",
                       f"test -e {d}/home/{UD}/vault/vault-mark && echo vault || echo no-vault; "
                       f"stat -f -c %T {d}/poly/t; stat -c %i {d}/poly/u; "
                       f"test -e {d}/poly/u/.init-done && echo init || echo no-init; "
                       f"awk '$5 == \"{d}/share\" && / shared:/ {{ n++ }} "
                       f"END {{ print n ? \"share\" : \"no-share\" }}' /proc/self/mountinfo; "
                       f"awk '$5 == \"{d}/media/ud\" {{ n++ }} "
                       f"END {{ print n ? \"route\" : \"no-route\" }}' /proc/self/mountinfo; "
                       f"stat -f -c %T {d}/media; "
                       f"stat -L -c %i /proc/self/ns/mnt")
    f = out.split()
    if rc != 0 or len(f) < 8:
        return None, out.strip()[-200:]
    try:
        inst = os.stat(f"{d}/inst/ud").st_ino
    except OSError:
        inst = -1
    return (f[-7] == "tmpfs", int(f[-6]) == inst, f[-5] == "init", f[-4] == "share",
            f[-3] == "route" and f[-2] == "tmpfs", f[-8] == "vault" or not w.volume,
            int(f[-1])), None


def vault_mounts(w, name="vault"):
    """How many mounts D's namespace has on ~/vault, or ~/NAME (-1: it cannot be entered)."""
    rc, out = w.client("exec", UD, JOIN_WAIT_MS, "--", "awk",
                       f"$5 == \"{w.dir}/home/{UD}/{name}\" {{ n++ }} END {{ print n + 0 }}",
                       "/proc/self/mountinfo")
    f = out.split()
    return int(f[-1]) if rc == 0 and f and f[-1].isdigit() else -1


def volume_state(w, uid, name):
    """The STATE nsctl volumes gives uid's volume name ("" when not listed)."""
    rc, out = w.nsctl("volumes", "--raw", "--noheadings", "-o", "UID,VOLUME,STATE")
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[0] == str(uid) and f[1] == name:
            return f[2]
    return ""


def login_d(w, oc, mark):
    """Issue 25: D's first session (JOIN, SESSION_OPEN, SESSION_CLOSE) makes nsd start its
    Start=login volume, desk, after the answer; each call site of that start failed in turn.
    Asserted: nsd answers the session whatever became of the start (a refusal only from the
    session's own calls, never for the volume); the desk ends mounted once or not at all,
    never twice; nsd's record never says mounted when nothing is there. A start that answers
    "not yet" is asked again a second later. Then (phase login-undo, not failed) the desk is
    stopped again, so that release-d is what it was."""
    mark("login-d")
    w.ensure_running()
    out = w.client("session", UD)[1].strip()
    if not out.startswith("ok"):
        oc.note(f"login-d: D's session answered {out}")
        if "desk" in out:
            oc.problem(f"login-d: D's session was refused for its Start=login volume: {out}")
    # the start runs after the answer: until nsd's record of desk moves, or it said why not
    deadline = time.monotonic() + (15 if out.startswith("ok") else 3)
    st = ""
    while time.monotonic() < deadline:
        w.ensure_running()
        st = volume_state(w, UD, "desk")
        if st not in ("", "stopped") or "not started at its first session" in w.log_text():
            break
        time.sleep(0.2)
    n = vault_mounts(w, "desk")
    if n > 1:
        oc.problem(f"login-d: D's desk is MOUNTED {n} TIMES after its first session")
    elif n == 1 and st != "mounted":
        # a record behind the mount: the next start or stop corrects it (volume-found)
        oc.note(f"login-d: desk mounted, nsd's record says {st or 'nothing'}")
    elif n == 0 and st == "mounted":
        oc.problem("login-d: nsd records D's desk mounted, yet nothing is on ~/desk")
    elif n != 1:
        oc.note(f"login-d: desk not mounted ({st or 'no record'})")
    mark("login-undo")
    w.ensure_running()
    if n >= 1:
        w.client("volume", UD, "stop", "desk")


def stop_start_d(w, oc, mark):
    """Issue 25 (protocol 1.11): D's volume stopped (VOLUME_STOP: unmounted as a release
    does) and started again (VOLUME_START: mounted into D's namespace as the setup mounts),
    root asking, each call site failed in turn. Asserted: a stop that answers ok left no
    mount on ~/vault, one that fails left the vault mounted (or, its reply lost, nsd logged
    the unmount); a start that answers ok (after one retry, as nsctl's user would) left
    exactly one mount with the vault's mark, one that fails left none or one, never two.
    A start whose helper's report was lost is answered from the mount table: ok when the
    vault is there. oc.vault_up says whether the vault is mounted after both."""
    mark("stop-d")
    w.ensure_running()
    out = w.client("volume", UD, "stop", "vault")[1].strip()
    w.ensure_running()
    n = vault_mounts(w)
    if n < 0:
        oc.problem(f"stop-d: D cannot be entered after VOLUME_STOP ({out})")
        return
    if out.startswith("ok") and n != 0:
        oc.problem(f"stop-d: VOLUME_STOP answered '{out}', yet ~/vault has {n} mount(s)")
    elif not out.startswith("ok"):
        oc.note(f"stop-d: VOLUME_STOP answered {out}")
        if n == 0 and "Unmounted volume 'vault'" not in w.log_text():
            oc.problem(f"stop-d: VOLUME_STOP failed ({out}), and the vault is gone unlogged")
        elif n > 1:
            oc.problem(f"stop-d: ~/vault has {n} mounts after a failed VOLUME_STOP")
    mark("start-d")
    w.ensure_running()
    out = w.client("volume", UD, "start", "vault")[1].strip()
    if "without a report" in out:
        # the helper's report lost: nsd looks at the mount table (volume-found), so a vault
        # that is there is never answered as a failure
        w.ensure_running()
        if vault_mounts(w) == 1:
            oc.problem(f"start-d: VOLUME_START answered '{out}' while the vault is mounted")
    if not out.startswith("ok"):
        oc.note(f"start-d: VOLUME_START answered {out}, asked again")
        w.ensure_running()
        out = w.client("volume", UD, "start", "vault")[1].strip()
    w.ensure_running()
    n = vault_mounts(w)
    st, why = setup_state(w, UD)
    if n < 0 or st is None:
        oc.problem(f"start-d: D cannot be entered after VOLUME_START ({out}): {why}")
        return
    if n > 1:
        oc.problem(f"start-d: the vault is MOUNTED {n} TIMES on ~/vault ({out})")
    if out.startswith("ok") and not (n == 1 and st[5]):
        oc.problem(f"start-d: VOLUME_START answered '{out}', yet ~/vault has {n} mount(s), "
                   f"mark {st[5]}")
    elif not out.startswith("ok"):
        oc.note(f"start-d: VOLUME_START answered {out} twice")
    oc.vault_up = n == 1 and st[5]


# The setup scenario's phases, in the order they run (mark()). A case of a phase has its
# fault there and runs the phases after it only where setup_runs() says so.
SETUP_PHASES = ("start", "setup", "stop-d", "start-d", "login-d", "release-d")


def setup_runs(phase, name):
    """Whether a case of PHASE (None: the calibration run) runs the setup phase NAME: not when
    its fault came before NAME's set-up was done (D is left as the fault left it)."""
    return phase not in SETUP_PHASES[:SETUP_PHASES.index(name)]


def scenario_setup(w, oc, mark, fault=None, trace=None):
    """A pinned, then D's namespace made with a setup; JOIN retried as a login does."""
    start_faulty(w, oc, mark, "start", fault, trace)
    mark("setup")
    w.ensure_running()
    rc, out = w.client("join", UD, JOIN_WAIT_MS)
    j = parse_join(out)
    if j[0] != "ok":
        oc.note(f"setup: JOIN of D {j[1]}")
        if j[1] != "EIO" and not j[1].startswith("E"):
            oc.problem(f"setup: JOIN of D: no answer ({j[1]})")
        if oc.errno in TRANSIENT and oc.errno != "ETIMEDOUT":
            oc.problem(f"setup: an error that may pass ({oc.errno}) refused D's login "
                       f"({j[1]}) instead of 'not yet'")
        oc.d = None
        if UD in listed(w):
            oc.problem("setup: D refused, yet nsctl list shows its namespace")
    else:
        if j[4] > 1:
            oc.note(f"setup: 'not yet' x{j[4] - 1}, then served")
        st, why = setup_state(w, UD)
        if st is None:
            w.ensure_running()
            st, why = setup_state(w, UD)
        if st is None:
            oc.problem(f"setup: D handed out, but cannot be entered: {why}")
        elif not all(st[:-1]):
            oc.problem(f"setup: D handed out HALF SET UP: tmpfs={st[0]} instance={st[1]} "
                       f"init={st[2]} share={st[3]} route={st[4]} volume={st[5]}")
        oc.d = (j, st)
    oc.release_d = None
    oc.release_d_partial = False
    oc.vault_up = True
    # D's volume verbs, first session and release: in calibration and in the cases of their
    # own phases (whose call counts include what runs before them). A case of an earlier
    # phase has had its fault: D is left as the fault left it, and check_setup() asserts that
    # a clean restart adopts it set up (a release here would leave it nothing to look at).
    site = getattr(oc, "site", None)
    phase = site["phase"] if site else None
    if oc.d is not None and w.volume and st is not None and all(st[:-1]) and \
            setup_runs(phase, "stop-d"):
        stop_start_d(w, oc, mark)
        if setup_runs(phase, "login-d"):
            login_d(w, oc, mark)
        # issue 25: D released; nsd unmounts its volume first (volume-release.h)
        mark("release-d")
        w.ensure_running()
        rc, out = w.client("release", UD)
        oc.release_d = out.strip()
        # a reply lost on the way (sendmsg failed) after the release was done
        if oc.release_d != "ok" and f"Released the namespace of uid {UD} " in w.log_text():
            oc.note(f"release-d: RELEASE D answered {oc.release_d}, but nsd released it")
            oc.release_d = "ok"
        w.ensure_running()
        if oc.release_d == "ok":
            if UD in listed(w):
                oc.problem("release-d: RELEASE D answered ok, yet D is still listed")
        else:
            oc.note(f"release-d: RELEASE D answered {oc.release_d}")
            if UD in listed(w):
                st2, why = setup_state(w, UD)
                if st2 is not None and not st2[5] and \
                        "kept WITHOUT its block volumes" in w.log_text():
                    # the pin could not be removed after the volume was unmounted: kept,
                    # pinned, without it (nsd says so; the release was asked for)
                    oc.note("release-d: unmounted, then the unpin failed: D kept without its "
                            "volume, logged")
                    oc.release_d_partial = True
                elif st2 is None or (oc.vault_up and not st2[5]):
                    oc.problem(f"release-d: RELEASE D failed ({oc.release_d}), and D is kept "
                               f"WITHOUT its volume: {st2 or why}")
    tok = read_token(w, UA)
    oc.fault_run_token_a = tok
    mark("stop")
    w.stop()


def check_setup(w, oc, fault_log):
    if not clean_start(w, oc):
        return
    check_a_kept(w, oc, oc.a[0])
    now = listed(w)
    if oc.d is None:
        if UD in now:
            oc.problem("D was refused, yet a clean restart adopted a namespace of it (a "
                       "half-built namespace was pinned)")
    elif oc.release_d == "ok":
        if UD in now:
            oc.problem("D was released (RELEASE answered ok), yet a clean restart adopted it")
    else:
        j, st = oc.d
        if j[2] == "pinned":
            if now.get(UD) != j[1]:
                oc.problem(f"D LOST after a clean restart: listed {now.get(UD)}, was {j[1]}")
            else:
                st2, why = setup_state(w, UD)
                if oc.release_d_partial and st2 is not None and all(st2[:5]) and not st2[5]:
                    oc.note("D after a clean restart: kept without its volume, as the release "
                            "that failed at the unpin left it")
                elif st2 is None or not all(st2[:5]) or (oc.vault_up and not st2[5]):
                    oc.problem(f"D after a clean restart is not set up: {st2 or why}")
    w.stop()
    check_log(oc, fault_log)


# ---- a volume's login password (issue 25: CREDENTIAL_GIVE, CREDENTIAL_TAKE) -------------------

# D's volume that takes the login password in the fault scenario
CRED_VOLUME = "vault"
# D's volume with KeyFile=, the folder of the key file (a tmpfs of the sandbox's own on /run:
# every folder from / root's and closed to writers) and the key
KEY_VOLUME = "keyed"
KEY_DIR = "/run/nsd-fault-keys"
KEY_TEXT = "the key file of ud, not a password"


def cred_give(w, oc):
    """root (pam_nsjoin) gives D's password: fault-client's outcome line"""
    return w.client("give", UD, stdin=oc.password)[1].strip()


def cred_take(w, oc):
    """D itself (nsctl run-volume) takes it for its volume"""
    return w.client("take", UD, CRED_VOLUME)[1].strip()


def cred_take_key(w, oc):
    """D itself (nsctl run-volume) takes its KeyFile= volume's key"""
    return w.client("take", UD, KEY_VOLUME)[1].strip()


def cred_unlock(w, oc):
    """D itself (nsctl unlock) gives its volume a password of its own"""
    return w.client("unlock", UD, CRED_VOLUME, stdin=oc.password[::-1])[1].strip()


# The credential path, one row per request, in the order a login and the user's manager make
# them: (name, the request, the outcome it must end with: GIVE's "ok 0" (no TAKE waited),
# TAKE's "ok memfd sealed PASSWORD"). Each is retried once after an error, as the next login
# (GIVE) or the unit's Restart= (TAKE) would; a request of a later protocol (UNLOCK) is one
# more row and one more fault-client verb.
CRED_REQUESTS = [
    ("give", cred_give, lambda oc: "ok 0"),
    ("take", cred_take, lambda oc: f"ok memfd sealed {oc.password}"),
    # protocol 1.8: the user's own password for the volume (a wrong login password, Key=ask),
    # held for its next TAKE, which gets it rather than anything else
    ("unlock", cred_unlock, lambda oc: "ok 0"),
    ("take-again", cred_take, lambda oc: f"ok memfd sealed {oc.password[::-1]}"),
    # a volume with KeyFile= (a file of root's under a /run of the sandbox's own, trusted all
    # the way from /): each TAKE reads it; a failure of that read is nsd's own
    ("take-key", cred_take_key, lambda oc: f"ok memfd sealed {KEY_TEXT}"),
]

# the phases of the scenario that only prepare (their calls are other scenarios' sites)
CRED_PREP_PHASES = {"cred-start", "cred-prep", "cred-after"}
# the phases of the requests, one each
CRED_PHASES = {f"cred-{r[0]}" for r in CRED_REQUESTS}
# one errno per call site of the credential path (first occurrences only, to keep the run
# short): what that call meets on a loaded machine; EMFILE elsewhere
CRED_ERRNOS = {"sendmsg": ["EAGAIN", "ENOBUFS"], "recvmsg": ["ENOMEM"], "fstat": ["EIO"],
               "clone": ["EAGAIN"], "setns": ["ENOMEM"]}
CRED_ERRNO_DEFAULT = ["EMFILE"]
# D's release (phase release-d): one errno per call site as for the credential path, and for
# the unmount both "in use" and a plain failure
RELEASE_D_ERRNOS = {"umount2": ["EBUSY", "EIO"], "clone": ["EAGAIN"], "setns": ["ENOMEM"]}
# The calls every request makes before its handler runs (the accept, the peer's uid, the
# read): the same code for every request type, failed in the phases before. The volume
# start and stop phases (stop-d, start-d, login-d) leave them out; their reply's send stays in.
PRE_DISPATCH_SITES = ("listener_source_dispatch", "peer_real_uid", "conn_read")
# Cases that fail for a bug of nsd's not fixed yet: (phase, call, function of the call site
# and which of its calls in the phase (None: any), errno test, the bug). Their TAP lines
# carry a TODO; once nsd is fixed they pass, meson reports it, and the row goes.
KNOWN_BUGS = [
    # none now: the lost TAKE reply and view_of_nsd()'s kept failure were fixed in nsd
]


def known_bug(site, errno):
    for phase, call, at, errnos, why in KNOWN_BUGS:
        if site["phase"] == phase and site["call"] == call and errnos(errno) and (
                at is None or (site["site"].split(" ")[0], site.get("occ")) == at):
            return why
    return None


# Calls whose failure is nsd's own, not the client's (issue 25, "misleading refusals under
# load"): nsd could not check the password's descriptor (credential_check()), or where the
# client is (the peer check: its helper child, the child's opens of /proc/PID/ns/mnt and
# /proc/PID/root, nsd's look at the descriptors it holds). (function of the call site, call,
# the helper child a clone runs or None; and credential_keep(), nsd keeping the password's
# descriptor) -> must the request be refused (fail closed), or may
# the fault be absorbed (None: only view_of()'s look at the user's namespace, which a client
# in the initial namespace does not need; its first call in a phase, at the client's view,
# must refuse)? A refusal must say "nsd could not check", with
# EAGAIN (retry) for an errno that may pass and the call's own errno otherwise, and never
# blame the client.
OWN_FAILURE_SITES = {
    ("credential_check", "fcntl", None): True,
    ("credential_check", "fstat", None): True,
    ("credential_keep", "fcntl", None): True,
    ("helper_run", "clone", "peer_open_child"): True,
    ("peer_open_child", "open", None): True,
    ("view_of_nsd", "open", None): True,
    ("view_of", "fstat", None): None,
    # a KeyFile='s read (policy/conf-files.c): the folders from /, the file, its sealed copy
    ("key_file_dir", "open", None): True,
    ("key_file_dir", "openat", None): True,
    ("stat_trusted", "fstat", None): True,
    ("config_key_file_memfd", "openat", None): True,
    ("config_key_file_memfd", "fcntl", None): True,
}
# errno_may_pass() in nsd/base/errno-util.h
MAY_PASS = {"EAGAIN", "ENOMEM", "EMFILE", "ENFILE", "EINTR", "ETIMEDOUT", "EBUSY", "ENOSPC",
            "ENOBUFS"}
# what such a refusal said before: the client's descriptor or the client's place to blame
CLIENT_BLAMED = ["must come as a memfd", "must have 1 to", "nsd cannot see where",
                 "cannot look at pid", "not a sandboxed process", "answers only root"]


def own_failure_site(site):
    """OWN_FAILURE_SITES' entry for a fault case's site: (True | None), or False if none"""
    fn = site["site"].split(" ")[0]
    child = None
    if site["call"] == "clone":
        m = re.search(r" -> (\S+)", site["site"])
        child = m.group(1) if m else None
    if fn == "view_of" and site.get("occ") == 1:
        return True  # the first look of a peer check is at the client's own view
    return OWN_FAILURE_SITES.get((fn, site["call"], child), False)


def check_own_failure(oc):
    """A request whose call failed at an OWN_FAILURE_SITES site: refused (when it must be),
    saying nsd could not check, with the errno a client retries; not blaming the client."""
    site = getattr(oc, "site", None)
    if not site or not site["phase"].startswith("cred-"):
        return
    must = own_failure_site(site)
    if must is False:
        return
    name = site["phase"][len("cred-"):]
    first = oc.cred.get(name, ("(not made)", ""))[0]
    f = first.split()
    if not first.startswith("err"):
        if must and first.startswith("ok"):
            oc.problem(f"{name}: {site['call']} failed in nsd's check, yet the request "
                       f"passed ({redact(first, oc)!r}): a refusal must stay a refusal")
        return
    want = "EAGAIN" if oc.errno in MAY_PASS else oc.errno
    if len(f) < 2 or f[1] != want or "nsd could not" not in first:
        oc.problem(f"{name}: {site['call']} {oc.errno} in nsd's check answered "
                   f"{redact(first, oc)!r}, not {want} with \"nsd could not ...\"")
    blamed = [b for b in CLIENT_BLAMED if b in first]
    if blamed:
        oc.problem(f"{name}: nsd's own failure blamed on the client ({blamed[0]!r}): "
                   f"{redact(first, oc)!r}")


# an answer lost with the connection, as fault-client reports it
LOST_ANSWER = {"ECONNRESET", "EPIPE", "ECONNREFUSED", "ENOENT", "ETIMEDOUT"}


def wait_for(pred, secs):
    """True once pred() is, within secs"""
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def fd_target(link):
    """What the descriptor link /proc/PID/fd/N names, or None if it is closed by now."""
    try:
        return os.readlink(link)
    except OSError:
        return None


def nsd_memfds(w):
    """The memfds nsd holds now (its /proc/PID/fd), as 'FD -> /memfd:NAME'."""
    if not w.proc or w.proc.poll() is not None:
        return []
    res = []
    d = f"/proc/{w.proc.pid}/fd"
    try:
        for fd in os.listdir(d):
            t = fd_target(f"{d}/{fd}")
            if t is not None and t.startswith("/memfd:"):
                res.append(f"{fd} -> {t}")
    except OSError:
        pass
    return res


def password_leaks(w, password):
    """Where the password's bytes are, though nsd must never write them: any file under the
    case's folder (nsd's run dir and state files, its log), any descriptor of the fake
    service manager's fd store (a memfd at all, or a file holding them). [] if nowhere."""
    found = []
    pw = password.encode()
    for root, dirs, files in os.walk(w.dir):
        for name in files:
            path = f"{root}/{name}"
            try:
                if not stat_isreg(path):
                    continue
                with open(path, "rb") as f:
                    if pw in f.read():
                        found.append(path.replace(w.dir, "<case>"))
            except OSError:
                continue
    for name, fd in (w.mgr.entries() if w.mgr else []):
        t = fd_target(f"/proc/self/fd/{fd}")
        if t is None:
            continue
        if t.startswith("/memfd:"):
            found.append(f"fd store: {name} is a memfd ({t})")
        elif stat_isreg(f"/proc/self/fd/{fd}"):
            try:
                if pw in os.pread(fd, 1 << 20, 0):
                    found.append(f"fd store: {name} ({t}) holds it")
            except OSError:
                pass
    return found


def stat_isreg(path):
    return stat.S_ISREG(os.stat(path).st_mode)


def scenario_cred(w, oc, mark, fault=None, trace=None):
    """A pinned; nsd under a service manager makes D (a volume that takes the password);
    then each request of CRED_REQUESTS, the fault somewhere in them; then A's JOIN."""
    mark("cred-start")
    w.mgr = w.mgr or FakeManager(f"{w.dir}/notify")
    if not w.mgr.start(w, fault=fault, trace=trace):
        oc.note(f"start: nsd exited ({w.exits[-1]}), started again")
        w.mgr.start(w)
    mark("cred-prep")
    j = phase_join(w, oc, "cred-prep", UD)
    oc.d = j if j[0] == "ok" else None
    oc.cred = {}
    for name, request, want in CRED_REQUESTS:
        mark(f"cred-{name}")
        w.ensure_running()
        first = request(w, oc)
        out = first
        if not first.startswith("ok"):
            w.ensure_running()
            out = request(w, oc)
            oc.note(f"{name}: {redact(first, oc)}, then {redact(out, oc)}")
        oc.cred[name] = (first, out)
    # what nsd holds once every volume took it: nothing (the descriptor it sent is closed
    # just after the send, which the client may outrun)
    wait_for(lambda: not nsd_memfds(w), 2)
    oc.memfds_after = nsd_memfds(w)
    mark("cred-after")
    oc.fault_run_token_a = read_token(w, UA)
    mark("stop")
    w.stop()


def redact(out, oc):
    """out without the password (oc's and its UNLOCK's, its reverse; or a string)"""
    if isinstance(oc, str):
        return out.replace(oc, "<password>")
    return out.replace(oc.password, "<password>").replace(oc.password[::-1],
                                                           "<unlock password>").replace(
                                                               KEY_TEXT, "<key file>")


def check_cred(w, oc, fault_log):
    """Nothing held lost, each request ended as a served one would, no half state, the
    password nowhere but in the client that took it."""
    for name, request, want in CRED_REQUESTS:
        first, out = oc.cred.get(name, ("(not made)", "(not made)"))
        f = first.split()
        if not first.startswith(("ok", "err")):
            oc.problem(f"{name}: no answer, not even an error ({redact(first, oc)!r})")
        elif f[0] == "err" and f[1] not in LOST_ANSWER and len(f) < 3:
            oc.problem(f"{name}: refused without a message ({first!r})")
        if out != want(oc):
            # e.g. a TAKE whose answer was lost, yet nsd counted the password as handed over
            oc.problem(f"{name}: after {redact(first, oc)!r} and a retry, "
                       f"{redact(out, oc)!r} instead of {redact(want(oc), oc)!r} (half state)")
    check_own_failure(oc)
    if oc.cred.get("take-again", ("", ""))[1].startswith("ok") and oc.memfds_after:
        oc.problem(f"every volume took the password, yet nsd holds a memfd: {oc.memfds_after}")
    ft = getattr(oc, "fault_run_token_a", (None,))
    if ft[0] != oc.token_a:
        oc.problem(f"A not served intact after the credential requests: {ft}")
    leaks = sorted(set(password_leaks(w, oc.password) + password_leaks(w, oc.password[::-1]) +
                       password_leaks(w, KEY_TEXT)))
    if leaks:
        oc.problem(f"a password is written: {', '.join(leaks)}")
    if not clean_start(w, oc):
        return
    check_a_kept(w, oc, oc.a[0])
    if oc.d is None:
        oc.problem("D's namespace was not made before the credential requests")
    elif oc.d[2] == "pinned" and listed(w).get(UD) != oc.d[1]:
        oc.problem(f"D LOST after a clean restart: listed {listed(w).get(UD)}, was {oc.d[1]}")
    w.stop()
    leaks = sorted(set(password_leaks(w, oc.password) + password_leaks(w, oc.password[::-1]) +
                       password_leaks(w, KEY_TEXT)))
    if leaks:
        oc.problem(f"a password is written after a restart: {', '.join(leaks)}")
    check_log(oc, fault_log)


SCENARIOS = {
    "restart": (scenario_restart, check_restart, True),
    "fresh": (scenario_fresh, check_fresh, False),
    "setup": (scenario_setup, check_setup, True),
    "cred": (scenario_cred, check_cred, True),
}
# what each scenario's World holds besides A
WORLD_OF = {"setup": dict(setup=True), "cred": dict(cred=(CRED_VOLUME,))}


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def settle(path):
    """Wait until the trace stops growing (nsd done with the last request), at most 1 s."""
    if not path:
        return
    last, stable, t0 = -1, 0, time.monotonic()
    while time.monotonic() - t0 < 1.0:
        n = count_lines(path)
        stable = stable + 1 if n == last else 0
        if stable >= 3:
            return
        last = n
        time.sleep(0.01)


def setup_a(w, oc):
    """A clean nsd makes A's namespace with a tmpfs and a token file in it."""
    if not w.start():
        return "nsd did not start cleanly:\n" + w.log_text()[-2000:]
    fi, nsi, out = mount_token(w, UA, oc.token_a)
    w.stop()
    if fi is None:
        return "could not make A's mount: " + out
    oc.a = (fi, nsi)
    return None


# ---- calibration and symbols ----------------------------------------------------------------

# calls whose sites are failed only in these phases (nsd makes them everywhere: failing each
# of their sites in every phase would double the run); the credential path is where their
# failures matter and were not tried
CALLS_ONLY_IN = {"fcntl": CRED_PHASES, "fstat": CRED_PHASES}
# calls whose every occurrence at a site is failed in these phases, not only the first: a
# TAKE's peer check makes three fstat() calls at one site (view_of(): the client's view,
# nsd's own, the namespace's), each with its own consequence
EVERY_OCCURRENCE_IN = {"fstat": CRED_PHASES}

# helper children several callers run: their calls are told apart by the caller's context
SHARED_CHILD_FUNCS = {"helper_enter_child", "roots_child", "mountinfo_child"}

TRACE_RE = re.compile(r"^(\S+) (\d+) (\S+) (ok|FAIL \S+)(?: (.*))?$")


def read_trace(path):
    res = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = TRACE_RE.match(line.rstrip("\n"))
                if m:
                    res.append(m.groups())
    except OSError:
        pass
    return res


def symbolize(nsd_bin, addrs, funcs=()):
    """{object+offset: 'function (file:line)'} for call sites in nsd: return addresses (the
    call is the instruction before), or function addresses (funcs)"""
    res = {}
    offs = []
    for a in addrs:
        obj, _, off = a.rpartition("+")
        if os.path.realpath(obj) == os.path.realpath(nsd_bin):
            offs.append((a, int(off, 16) - (0 if a in funcs else 1)))
    if not offs:
        return res
    rc, out = run(["addr2line", "-f", "-s", "-e", nsd_bin] + [hex(o) for _, o in offs])
    lines = out.splitlines()
    for i, (a, _) in enumerate(offs):
        fn = lines[2 * i] if 2 * i < len(lines) else "?"
        loc = lines[2 * i + 1] if 2 * i + 1 < len(lines) else "?"
        loc = re.sub(r" \(discriminator \d+\)", "", loc)
        res[a] = f"{fn} ({loc})"
    return res


def calibrate(work, build, name, seen):
    run_fn, _, needs_a = SCENARIOS[name]
    w = World(work, build, **WORLD_OF.get(name, {}))
    oc = Outcome()
    oc.token_a, oc.token_b, oc.errno = "calib-a", "calib-b", None
    oc.password = "calib-pw-" + secrets.token_hex(12)
    if needs_a:
        err = setup_a(w, oc)
        if err:
            return None, err
    trace = f"{w.dir}/trace"
    marks = []

    def mark(phase):
        settle(trace)
        marks.append((phase, count_lines(trace)))

    run_fn(w, oc, mark, trace=trace)
    settle(trace)
    if w.mgr:
        w.mgr.close()
        w.mgr = None
    if oc.problems or oc.notes:
        return None, "the scenario fails without a fault: " + "; ".join(oc.problems + oc.notes)
    calls = read_trace(trace)
    fns = {c[4][3:] for c in calls if (c[4] or "").startswith("fn=")}
    syms = symbolize(f"{build}/nsd/nsd", {c[2] for c in calls} - fns)
    syms.update(symbolize(f"{build}/nsd/nsd", fns, funcs=fns))
    sites = []
    occurrences = {}  # key -> how many calls there so far
    ctx = ""
    for idx, (call, n, addr, res, arg) in enumerate(calls):
        if call == "clone" and (arg or "").startswith("fn="):
            # which helper child: the function it runs; calls made in it are in its context
            ctx = syms.get(arg[3:], arg[3:]).split(" ")[0]
        if addr not in syms:
            continue  # a call made by a library (GLib reading the configuration, ...)
        phase = marks[0][0]
        for p, at in marks:
            if idx >= at:
                phase = p
        if phase == "stop" or phase in CRED_PREP_PHASES:
            continue
        if call in CALLS_ONLY_IN and phase not in CALLS_ONLY_IN[call]:
            continue
        site = syms[addr]
        if call == "clone":
            site = f"{site} -> {ctx}"
        elif site.split(" ")[0] in SHARED_CHILD_FUNCS and ctx != site.split(" ")[0]:
            site = f"{site} in {ctx}"
        # the same site once per phase, but a uid's pin apart from another's; the kernel
        # probes (the same at every start) once in all
        if "(probe.c:" in site or "-> probe_" in site:
            key = ("probe", call, site)
        else:
            key = (phase, call, site, re.sub(rf"{re.escape(w.dir)}", "", arg or "")
                   if call in ("umount2", "openat") else "")
            if "(volume-release.c:" in site:
                # the look for holders opens each process of /proc: one site, not one per pid
                key = key[:3] + (re.sub(r"[0-9]+", "N", key[3]),)
        occ = occurrences[key] = occurrences.get(key, 0) + 1
        if phase in EVERY_OCCURRENCE_IN.get(call, ()):
            key += (occ,)
        if key in seen:
            continue
        seen.add(key)
        sites.append({"scenario": name, "phase": phase, "call": call, "n": int(n),
                      "site": site, "arg": (arg or "").replace(w.dir, "<case>"), "occ": occ})
    return sites, None


# ---- one case ---------------------------------------------------------------------------------

def run_case(work, build, site, errno, count):
    run_fn, check_fn, needs_a = SCENARIOS[site["scenario"]]
    w = World(work, build, **WORLD_OF.get(site["scenario"], {}))
    oc = Outcome()
    oc.errno = errno
    oc.token_a = "A-" + secrets.token_hex(8)
    oc.token_b = "B-" + secrets.token_hex(8)
    oc.password = "pw-" + secrets.token_hex(12)
    if needs_a:
        err = setup_a(w, oc)
        if err:
            oc.problem(err)
            return oc, True, w
    oc.site = site
    fault = f"{site['call']}:{site['n']}:{errno}" + (f":{count}" if count != 1 else "")
    trace = f"{w.dir}/trace"
    log_start = len(w.log_text())
    run_fn(w, oc, lambda phase: None, trace=trace, fault=fault)
    fault_log = w.log_text()[log_start:]
    fails = [c for c in read_trace(trace) if c[3].startswith("FAIL")]
    hit = bool(fails)
    if fails:
        got = symbolize(f"{build}/nsd/nsd", {fails[0][2]}).get(fails[0][2], fails[0][2])
        if got.split(" ")[0] != site["site"].split(" ")[0]:
            oc.note(f"(the call made there in this run: {got})")
    check_fn(w, oc, fault_log)
    w.cleanup()
    if w.volume and not os.environ.get("NSD_FAULT_KEEP"):
        # the case's namespaces ended with their pins: no loop device may still hold the
        # image (one configured and never mounted, or mounted outside them)
        deadline = time.monotonic() + 10
        while True:
            rc, out = run(["losetup", "-j", f"{w.dir}/vault.img"])
            if rc == 0 and not out.strip() or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if rc != 0 or out.strip():
            oc.problem(f"a loop device still holds D's image after the case: {out.strip()}")
    return oc, hit, w


def outcome_text(oc, hit):
    if not hit:
        return "not reached"
    if oc.problems:
        return "FAIL: " + "; ".join(oc.problems)
    return "; ".join(oc.notes) if oc.notes else "absorbed (no client saw it)"


# ---- the pin store's own API ------------------------------------------------------------------

def driver_trace_n(w, call, pred, *args):
    """The number of the first `call` made by the driver (clean run) whose arg matches pred."""
    trace = f"{w.dir}/dtrace"
    try:
        os.unlink(trace)
    except OSError:
        pass
    env = dict(w.env, LD_PRELOAD=f"{w.build}/tests/fault/nsd-fault-shim.so",
               NSD_FAULT_TRACE=trace)
    run([f"{w.build}/tests/fault/pinstore-driver", w.run_dir, *map(str, args)], env=env)
    for c, n, addr, res, arg in read_trace(trace):
        if c == call and "pinstore-driver" in addr and pred(arg or ""):
            return int(n)
    return None


def api_tests(work, build):
    w = World(work, build)
    oc = Outcome()
    oc.token_a, oc.token_b = "api-" + secrets.token_hex(6), ""
    err = setup_a(w, oc)
    if err:
        tap(False, "api: set up A", err)
        return
    fi, nsi = oc.a

    # the adoption helper is the second clone of a start (the first opens the pin tmpfs)
    n_clone = driver_trace_n(w, "clone", lambda a: True, "state")
    rc, out = w.driver("state")
    tap(f"adopted {UA} {nsi}" in out and "ready yes" in out, "api: a clean open adopts A",
        out)

    # a pending uid: adoption fails 4 times in a row, then passes
    fault = f"clone:{(n_clone or 1) + 1}:EAGAIN:4"
    rc, out = w.driver("wait", UA, 10000, fault=fault)
    tap("create-while-pending EAGAIN" in out, "api: userns_create() of a pending uid answers "
        "-EAGAIN (never a fresh namespace)", out)
    tap(f"adopted {UA} {nsi}" in out, "api: the pending uid is adopted once the fault "
        "passes, same namespace", out)

    # the fault never passes: still pending, nothing lost
    rc, out = w.driver("wait", UA, 1500, fault=f"clone:{(n_clone or 1) + 1}:EAGAIN:0")
    tap("create-while-pending EAGAIN" in out and f"still-pending {UA}" in out,
        "api: adoption failing for good: A stays pending, creation refused", out)
    t = read_token_driver(w, UA)
    tap(t == (oc.token_a, fi), "api: ... and a clean open finds A with its file", str(t))

    # the store not ready: entering the pin namespace fails for good
    rc, out = w.driver("create", UD, fault="clone:1:ENOMEM:0")
    tap("create-error Resource temporarily unavailable" in out,
        "api: store not ready: userns_create() of any uid answers -EAGAIN", out)
    rc, out = w.driver("wait", UA, 1000, fault="setns:1:ENOMEM:0")
    tap(f"still-pending {UA}" in out, "api: store not ready: every uid is pending", out)
    t = read_token_driver(w, UA)
    tap(t == (oc.token_a, fi), "api: ... and a clean open finds A with its file", str(t))

    # a release that cannot unpin: the pin stays, the uid becomes pending
    n_umount = 1
    rc, out = w.driver("release", UA, 5000, fault=f"umount2:{n_umount}:EBUSY")
    tap("release-error" in out and "pending yes" in out,
        "api: userns_release() that cannot unpin reports it, keeps the pin, uid pending", out)
    t = read_token_driver(w, UA)
    tap(t == (oc.token_a, fi), "api: ... and A is adopted again with its file", str(t))

    # provably dead pins are removed with a reason; a directory is left alone
    script = (f"touch {UD + 1}; mkdir {UD + 2}; ln -s /etc/passwd {UD + 3}; "
              f"touch {UD + 4} {UD + 5}; mount --bind /proc/self/ns/net {UD + 4}; "
              f"mount --bind /etc/hostname {UD + 5}")
    rc, out = w.driver("pinns", "--", "sh", "-c", script)
    tap(rc == 0, "api: junk made in the pin tmpfs", out)
    log_before = len(w.log_text())
    rc, out = w.driver("state")
    tap(f"adopted {UA} {nsi}" in out, "api: with junk beside it, A is adopted", out)
    rc2, ls = w.driver("pinns", "--", "sh", "-c", "ls -1")
    present = set(ls.split())
    tap(str(UD + 2) in present and not present & {str(UD + i) for i in (1, 3, 4, 5)},
        "api: empty file, symlink, net namespace and foreign mount removed; directory kept",
        ls + "\n" + out)
    tap(out.count("Removed the pin") >= 4 and "is a directory, not a pin" in out
        and "a namespace of another type" in out and "a symbolic link" in out,
        "api: each removal is logged with its reason", out)

    # a host pin that is not a mount namespace is replaced (logged); a directory refused
    w2 = World(work, build)
    os.makedirs(w2.run_dir)
    open(f"{w2.run_dir}/pins", "w").close()
    run(["mount", "--bind", "/proc/self/ns/net", f"{w2.run_dir}/pins"])
    rc, out = w2.driver("state")
    tap("ready yes" in out and "it was a namespace of another type" in out,
        "api: a net namespace on run_dir/pins is replaced by a pin namespace, logged", out)
    w3 = World(work, build)
    os.makedirs(f"{w3.run_dir}/pins")
    rc, out = w3.driver("state")
    tap("open-error Is a directory" in out, "api: a directory on run_dir/pins is refused "
        "(final: nsd runs without pins)", out)


# ---- sessions across restarts (issue 9, 5) -----------------------------------------------------

def session_field(out, i):
    f = out.split()
    return f[i] if len(f) > i and f[0] == "ok" else None


def session_tests(work, build):
    """Sessions opened before a restart (SIGTERM, SIGKILL) are closed after it, counts right;
    a leader that died while nsd was down ends its session at the next start."""
    w = World(work, build)
    if not w.start():
        tap(False, "sessions: nsd starts", w.log_text()[-2000:])
        return
    leaders = [subprocess.Popen(["sleep", "600"]) for _ in range(4)]
    try:
        ids, out = [], ""
        for p in leaders:
            rc, out = w.client("open", UB, p.pid)
            ids.append(session_field(out, 1))
        tap(all(ids) and session_field(out, 2) == "4", "sessions: four sessions of B open",
            out)

        w.stop()
        w.start()
        rc, out = w.client("close", UB, ids[0])
        tap(out.split() == ["ok", "3"], "sessions: after a clean restart (SIGTERM), closing "
            "one opened before works, 3 left", out + w.log_text()[-2000:])

        w.proc.kill()
        w.proc.wait()
        w.proc = None
        leaders[2].kill()
        leaders[2].wait()
        w.start()
        log = w.log_text()
        tap(f"Session {int(ids[2], 10)} of uid {UB}" in log and "ended while nsd was not "
            "running" in log, "sessions: a leader that died while nsd was down (SIGKILL) ends "
            "its session at the next start, logged", log[-2000:])
        rc, out = w.client("close", UB, ids[1])
        tap(out.split() == ["ok", "1"], "sessions: after SIGKILL, closing one opened before "
            "works, 1 left", out + log[-2000:])
        rc, out = w.client("close", UB, ids[1])
        tap(out.split() == ["err", "ENOENT"], "sessions: closing it twice answers ENOENT",
            out)

        # the restored session's pidfd still watches its leader
        leaders[3].kill()
        leaders[3].wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "ended without close" not in w.log_text():
            time.sleep(0.05)
        tap(f"Session {int(ids[3], 10)} of uid {UB}" in w.log_text() and "ended without "
            "close" in w.log_text(), "sessions: a restored session ends when its leader dies",
            w.log_text()[-2000:])
        rc, out = w.client("open", UB, leaders[0].pid)
        tap(session_field(out, 2) == "1", "sessions: a new session counts 1 (none left over)",
            out)
        w.stop()
        st = os.listdir(f"{w.run_dir}/state") if os.path.isdir(f"{w.run_dir}/state") else []
        tap(len([n for n in st if n.startswith("session-")]) == 1, "sessions: one state file "
            "per live session (the ended ones are removed)", " ".join(st))
    finally:
        for p in leaders:
            p.kill()
            p.wait()
        w.cleanup()


# ---- linger releases only what is empty (issue 9, 3) ---------------------------------------------

def wait_log(w, text, secs):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        if text in w.log_text():
            return True
        time.sleep(0.05)
    return text in w.log_text()


def linger_tests(work, build):
    """Linger=0: a host unmount plus a user mount does not release (no counting); a process
    left inside keeps the namespace until it ends."""
    w = World(work, build)
    h1 = f"{w.dir}/host-shared"
    os.makedirs(h1)
    # a shared host mount: the user's namespace receives it as a slave
    rc, out = run(["sh", "-c", f"mount -t tmpfs nsd-host {h1} && mount --make-shared {h1}"])
    if rc != 0 or not w.start():
        tap(False, "linger: set up a shared host mount and start nsd", out + w.log_text()[-2000:])
        return
    leader = None
    try:
        rc, out = w.client("join", UD, JOIN_WAIT_MS)
        rc2, out2 = run(["umount", h1])
        token = "lin-" + secrets.token_hex(6)
        fi, nsi, out3 = mount_token(w, UD, token)
        rc4, out4 = w.client("session", UD)
        # (on some kernels the host unmount leaves D's copy behind, without its master: then
        # it counts as D's own too, which keeps D all the same)
        blind = "nsd needs CAP_SYS_PTRACE"  # a process here nsd may not look at: keeps all
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            ok = (f"Keeping the namespace of uid {UD}: it holds " in w.log_text() or
                  blind in w.log_text())
            if ok:
                break
            time.sleep(0.05)
        tap(rc == 0 and rc2 == 0 and fi is not None and ok and
            f"Released the namespace of uid {UD}" not in w.log_text(),
            "linger: host unmount + a user mount, last session ends: kept (not counted: "
            "told apart)", "\n".join([out, out2, out3, out4]) + w.log_text()[-2000:])
        t = read_token(w, UD)
        tap(t == (token, fi, nsi), "linger: ... and the user's file is still there", str(t))

        mark = len(w.log_text())
        leader = subprocess.Popen([f"{build}/tests/fault/fault-client", "exec", str(UC),
                                   str(JOIN_WAIT_MS), "--", "sleep", "600"], env=w.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        ok = wait_log(w, f"Created the namespace of uid {UC}", 10)
        deadline = time.monotonic() + 10
        while ok and time.monotonic() < deadline:  # until the sleep is in UC's namespace
            if os.stat(f"/proc/{leader.pid}/ns/mnt").st_ino != os.stat("/proc/self/ns/mnt").st_ino:
                break
            time.sleep(0.05)
        rc, out = w.client("session", UC)
        kept = wait_log(w, f"Keeping the namespace of uid {UC}: 1 process still in it", 10)
        if blind in w.log_text():
            why = ("nsd may not read some process's /proc/PID/ns/mnt here (no CAP_SYS_PTRACE "
                   "over it): linger keeps every namespace, as it must")
            tap(f"Released the namespace of uid {UC}" not in w.log_text(),
                "linger: a process left in the namespace keeps it", skip=why)
            tap(True, "linger: ... released once that process is gone", skip=why)
            return
        tap(ok and rc == 0 and kept, "linger: a process left in the namespace keeps it after "
            "the last session", out + w.log_text()[mark:][-2000:])
        leader.kill()
        leader.wait()
        leader = None
        released = wait_log(w, f"Released the namespace of uid {UC}", 30)
        tap(released, "linger: ... and it is released once that process is gone",
            w.log_text()[mark:][-2000:])
    finally:
        if leader:
            leader.kill()
            leader.wait()
        w.cleanup()


# ---- the fd store as a second line (issue 9, 4) -------------------------------------------------

class FakeManager:
    """What systemd does with sd_notify's fd store: FDSTORE=1 + FDNAME= keeps descriptors,
    FDSTOREREMOVE=1 drops them; start() hands them back as LISTEN_FDS/LISTEN_FDNAMES."""

    def __init__(self, path):
        self.path = path
        self.store = []  # [name, fd]
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.2)
        self.done = False
        self.thread = threading.Thread(target=self.pump, daemon=True)
        self.thread.start()

    def pump(self):
        while not self.done:
            try:
                msg, anc, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(64 * 4))
            except (socket.timeout, OSError):
                continue
            fds = []
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds += list(memoryview(data).cast("i")[:len(data) // 4])
            kv = dict(line.split("=", 1) for line in msg.decode().splitlines() if "=" in line)
            with self.lock:
                if kv.get("FDSTORE") == "1":
                    for fd in fds:
                        self.store.append([kv.get("FDNAME", "stored"), fd])
                    fds = []
                elif kv.get("FDSTOREREMOVE") == "1":
                    for e in [e for e in self.store if e[0] == kv.get("FDNAME")]:
                        os.close(e[1])
                        self.store.remove(e)
            for fd in fds:
                os.close(fd)

    def names(self):
        with self.lock:
            return sorted(e[0] for e in self.store)

    def settle(self, want, timeout=10):
        """Wait until every name of want is stored."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not set(want) <= set(self.names()):
            time.sleep(0.02)
        return set(want) <= set(self.names())

    def entries(self):
        """[(name, fd)] of what is stored now"""
        with self.lock:
            return [tuple(e) for e in self.store]

    def start(self, w, fault=None, trace=None):
        """Start nsd as systemd would, with the store's descriptors at 3, 4, ..."""
        with self.lock:
            fds = [e[1] for e in self.store]
            names = [e[0] for e in self.store]
        n = len(fds)

        def child():
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 1000) for fd in fds]
            for i, fd in enumerate(high):
                os.dup2(fd, 3 + i)
                os.close(fd)

        env = dict(NOTIFY_SOCKET=self.path)
        if n:
            env.update(LISTEN_FDS=str(n), LISTEN_FDNAMES=":".join(names))
        return w.start(fault=fault, trace=trace, what=f"fd store: {' '.join(names)}", env=env,
                       argv0=["sh", "-c", 'export LISTEN_PID=$$; exec "$@"', "sh"],
                       preexec_fn=child, pass_fds=range(3, 3 + n))

    def close(self):
        self.done = True
        self.thread.join()
        self.sock.close()
        with self.lock:
            for e in self.store:
                os.close(e[1])
            self.store = []


def fdstore_tests(work, build):
    """Namespaces kept in the fd store survive a pin removed by hand, and the pin namespace
    itself removed by hand; nsd pins them again."""
    w = World(work, build)
    mgr = FakeManager(f"{w.dir}/notify")
    try:
        if not mgr.start(w):
            tap(False, "fd store: nsd starts under a service manager", w.log_text()[-2000:])
            return
        token = "fds-" + secrets.token_hex(6)
        fi, nsi, out = mount_token(w, UA, token)
        tap(fi is not None, "fd store: A made with a tmpfs and a file", out)
        ok = mgr.settle(["pinns", f"ns-{UA}"])
        tap(ok, "fd store: nsd stores the pin namespace and A's namespace (FDNAME=pinns, "
            f"ns-{UA})", " ".join(mgr.names()))

        # A's pin removed by hand while nsd is down
        w.stop()
        rc, out = w.driver("pinns", "--", "sh", "-c", f"umount {UA} && rm {UA}")
        tap(rc == 0, "fd store: A's pin removed by hand", out)
        mark = len(w.log_text())
        ok = mgr.start(w)
        t = read_token(w, UA)
        tap(ok and t == (token, fi, nsi), "fd store: after a restart A is the same namespace "
            "with its file, from the fd store", f"{t} want {(token, fi, nsi)}\n" +
            w.log_text()[mark:][-3000:])
        log = w.log_text()[mark:]
        tap("Pinned the namespace of uid %d" % UA in log and "again" in log,
            "fd store: ... and pinned again, logged", log[-3000:])
        w.stop()
        rc, ls = w.driver("pinns", "--", "sh", "-c", "ls -1")
        tap(str(UA) in ls.split(), "fd store: A's pin is back", ls)

        # the pin namespace itself removed by hand (its mount on run_dir/pins)
        rc, out = run(["umount", f"{w.run_dir}/pins"])
        tap(rc == 0, "fd store: the pin namespace's mount removed by hand", out)
        mark = len(w.log_text())
        ok = mgr.start(w)
        t = read_token(w, UA)
        log = w.log_text()[mark:]
        tap(ok and t == (token, fi, nsi) and "from the service manager's fd store" in log,
            "fd store: with the pin namespace unmounted, a restart takes it from the fd store, "
            "pins it again, and A is the same with its file", f"{t}\n" + log[-3000:])
        w.stop()
        rc, out = w.driver("exec", UA, 5000, "--", "sh", "-c", f"cat {w.dir}/m{UA}/f")
        tap(token in out, "fd store: ... and a start without the store finds A by its pin",
            out)

        # A's pin gone again, and entering namespaces fails for a while at the next start (a
        # pids limit): A, kept by the fd store only, waits ("not yet"), never a fresh one
        rc, out = w.driver("pinns", "--", "sh", "-c", f"umount {UA} && rm {UA}")
        mark = len(w.log_text())
        ok = mgr.start(w, fault="setns:1:EAGAIN:12")
        t = read_token(w, UA)
        log = w.log_text()[mark:]
        tap(rc == 0 and ok and t == (token, fi, nsi) and
            f"Adopted the namespace of uid {UA} (mnt:[{nsi}]) from the service manager's fd "
            "store" in log and f"Created the namespace of uid {UA}" not in log and
            re.search(r"(Cannot enter the namespace of uid \d+ from the fd store now|Failed to "
                      r"enter \d+ namespaces from the fd store), retrying", log),
            "fd store: setns() failing 12 times at start: A from the fd store is retried and "
            "adopted, same namespace and file", f"{t}\n" + log[-3000:])
        w.stop()
    finally:
        w.cleanup()
        mgr.close()


# ---- the bounds of a waiting CREDENTIAL_TAKE (issue 25) -------------------------------------

# nsd/api/handlers.c: TAKEs with NSD_CREDENTIAL_WAIT parked per uid
CREDENTIAL_WAITERS_MAX = 8


def log_count(w, text):
    return w.log_text().count(text)


WAITS = "waits for a password for volume"


def park_takes(w, build, waiters, n):
    """n more TAKE ... wait of D (into waiters), each parked in nsd (its debug line) before the
    next: True, or False when one was not parked (it ended, or no line came)"""
    for _ in range(n):
        before = log_count(w, WAITS)
        p = subprocess.Popen([f"{build}/tests/fault/fault-client", "take", str(UD), "vault",
                              "wait"], env=w.env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        waiters.append(p)
        if not wait_for(lambda: log_count(w, WAITS) > before or p.poll() is not None, 10) \
                or p.poll() is not None:
            return False
    return True


def ended(procs, secs=10):
    """{proc: its outcome line} once all have exited (None for one still running)"""
    wait_for(lambda: all(p.poll() is not None for p in procs), secs)
    res = {}
    for p in procs:
        if p.poll() is None:
            res[p] = None
        else:
            res[p] = p.stdout.read().strip()
    return res


def reap(waiters, w):
    """The fault clients still waiting killed and collected, then w's folder gone"""
    for p in waiters:
        p.kill()
        p.wait()
        p.stdout.close()
    w.cleanup()


def cred_default_bound(work, build):
    """At the default MaxConnectionsPerUser=8, 6 TAKEs of a uid wait and the 7th gets EBUSY:
    two connections stay free, so the user's nsctl unlock still reaches nsd and wakes one."""
    w = World(work, build, cred=("vault",))
    w.mgr = FakeManager(f"{w.dir}/notify")
    waiters = []
    try:
        if not w.mgr.start(w):
            tap(False, "credential (defaults): nsd starts", w.log_text()[-2000:])
            return
        rc, out = w.client("join", UD, JOIN_WAIT_MS)
        ok = rc == 0 and park_takes(w, build, waiters, 6)
        rc, out = w.client("take", UD, "vault", "wait", timeout=15)
        tap(ok and out.startswith("err EBUSY") and "(at most 6:" in out,
            "credential (defaults): 6 TAKEs of a uid wait, the 7th gets EBUSY naming the bound",
            out + w.log_text()[-2000:])
        password = "pw-" + secrets.token_hex(12)
        rc, out = w.client("unlock", UD, "vault", stdin=password)
        res = ended(waiters[:1], 10)
        got = [o for o in res.values()]
        tap(out == "ok 1\n" and got == [f"ok memfd sealed {password}"],
            "credential (defaults): with 6 waiting, the user's UNLOCK still connects and the "
            "first waiter gets its password", redact(out + str(got), password))
        w.stop()
    finally:
        reap(waiters, w)


def cred_tests(work, build):
    """A TAKE that waits (NSD_CREDENTIAL_WAIT): at most 8 per uid, the 9th refused with
    EBUSY and a message, a waiter whose connection is gone not counted; nsd stopped (SIGTERM)
    while TAKEs wait: each client gets an error, nsd starts clean, and a password it held is
    in no file and no fd store, nor held by the next nsd."""
    w = World(work, build, cred=("vault", "vault2"))
    # each waiter holds a connection: at the default MaxConnectionsPerUser=8 the 9th TAKE
    # of a uid meets that limit (EUSERS) before the waiters' bound
    with open(w.conf, "a") as f:
        f.write("[Limits]\nMaxConnectionsPerUser=16\n")
    w.mgr = FakeManager(f"{w.dir}/notify")
    waiters = []

    def park(n):
        return park_takes(w, build, waiters, n)

    try:
        if not w.mgr.start(w):
            tap(False, "credential: nsd starts with D's two volumes that take a password",
                w.log_text()[-2000:])
            return
        rc, out = w.client("join", UD, JOIN_WAIT_MS)
        tap(rc == 0, "credential: D's namespace made (two gocryptfs volumes, recorded only)",
            out + w.log_text()[-2000:])
        rc, out = w.client("take", UD, "vault")
        tap(out.startswith("err EAGAIN") and "locked" in out, "credential: a TAKE with nothing "
            "held and no wait answers EAGAIN (locked)", out)

        ok = park(CREDENTIAL_WAITERS_MAX)
        tap(ok and all(p.poll() is None for p in waiters), f"credential: "
            f"{CREDENTIAL_WAITERS_MAX} TAKEs of D wait", w.log_text()[-2000:])
        rc, out = w.client("take", UD, "vault", "wait", timeout=15)
        tap(out.startswith("err EBUSY") and
            f"{CREDENTIAL_WAITERS_MAX} requests of uid {UD} wait for a password "
            "already" in out, f"credential: the {CREDENTIAL_WAITERS_MAX + 1}th waiting TAKE of "
            "a uid gets EBUSY with a message", out)
        gone = waiters.pop(0)
        gone.kill()
        gone.wait()
        gone.stdout.close()
        # once nsd saw that client go (its request stays parked, orphaned)
        wait_for(lambda: f"Connection of uid {UD} pid {gone.pid} closed" in w.log_text(), 10)
        ok = park(1)
        tap(ok and len([p for p in waiters if p.poll() is None]) == CREDENTIAL_WAITERS_MAX,
            "credential: a waiter whose client is gone does not count (one more waits in its "
            "place)", w.log_text()[-2000:])
        rc, out = w.client("take", UD, "vault", "wait", timeout=15)
        tap(out.startswith("err EBUSY"), f"credential: ... and the next one beyond "
            f"{CREDENTIAL_WAITERS_MAX} gets EBUSY again", out)

        # nsd stopped while they wait
        w.proc.send_signal(signal.SIGTERM)
        try:
            code = w.proc.wait(10)
        except subprocess.TimeoutExpired:
            code = "no exit within 10 s"
        w.proc = None
        res = ended(waiters)
        bad = {p.pid: o for p, o in res.items() if not o or not o.startswith("err ")}
        tap(code == 0 and not bad, "credential: nsd stopped (SIGTERM) while 8 TAKEs wait: it "
            "exits 0, each client gets an error, none hangs",
            f"exit {code}; {bad}; {sorted(set(res.values()), key=str)}\n" + w.log_text()[-2000:])
        diag("waiting TAKEs at SIGTERM got: " + ", ".join(sorted({str(o) for o in res.values()})))
        waiters.clear()

        mark = len(w.log_text())
        ok = w.mgr.start(w)
        rc, out = w.client("join", UD, JOIN_WAIT_MS)
        j = parse_join(out)
        rc2, out2 = w.client("take", UD, "vault")
        tap(ok and j[0] == "ok" and j[3] == "adopted" and out2.startswith("err EAGAIN"),
            "credential: nsd starts clean again: D adopted, nothing held (TAKE: EAGAIN), no "
            "waiter left over", out + out2 + w.log_text()[mark:][-2000:])

        # a waiting TAKE gets the next GIVE's password
        first = "pw-" + secrets.token_hex(12)
        ok = park(1)
        rc, out = w.client("give", UD, stdin=first)
        res = ended(waiters)
        waiters.clear()
        got = list(res.values())
        tap(ok and out == "ok 1\n" and got == [f"ok memfd sealed {first}"],
            "credential: a TAKE that waits gets the next GIVE's password (the GIVE counts it)",
            redact(out + str(got), first))
        rc, out = w.client("take", UD, "vault")
        tap(out.startswith("err EALREADY"), "credential: ... and a second TAKE for that "
            "volume gets EALREADY (once per volume)", redact(out, first))

        # a password held across a stop: given, taken by one of D's two volumes
        password = "pw-" + secrets.token_hex(12)
        rc, out = w.client("give", UD, stdin=password)
        rc2, out2 = w.client("take", UD, "vault")
        wait_for(lambda: len(nsd_memfds(w)) <= 1, 2)  # the one sent, closed after the send
        memfds = nsd_memfds(w)
        tap(out == "ok 0\n" and out2.strip() == f"ok memfd sealed {password}" and
            len(memfds) == 1, "credential: GIVE, then a TAKE for one of two volumes gets the "
            "sealed memfd; nsd holds it for the other", out + redact(out2, password) +
            str(memfds))
        leaks = password_leaks(w, password)
        tap(not leaks, "credential: the password is in no file of nsd's (run dir, state, log) "
            "and no descriptor of its fd store", "\n".join(leaks))
        w.stop()
        ok = w.mgr.start(w)
        rc, out = w.client("take", UD, "vault2")
        leaks = password_leaks(w, password)
        tap(ok and out.startswith("err EAGAIN") and not leaks, "credential: after a restart "
            "the held password is gone (the other volume's TAKE: EAGAIN), written nowhere",
            redact(out, password) + "\n".join(leaks))
        w.stop()
    finally:
        reap(waiters, w)


def read_token_driver(w, uid):
    d = f"{w.dir}/m{uid}"
    rc, out = w.driver("exec", uid, 5000, "--", "sh", "-c",
                       f"cat {d}/f 2>/dev/null || echo NO-FILE; stat -c %i {d}/f 2>/dev/null "
                       f"|| echo 0")
    f = out.split()
    if len(f) < 2:
        return (None, out)
    return (f[-2], int(f[-1]) if f[-1].isdigit() else None)


# ---- main -------------------------------------------------------------------------------------

def main():
    args = sys.argv[1:]
    if not args:
        print("usage: fault-suite.py BUILD_DIR [--quick] [--table FILE] [--only S]",
              file=sys.stderr)
        return 2
    build = os.path.abspath(args[0])
    quick = "--quick" in args or os.environ.get("NSD_FAULT_QUICK") == "1"
    table = f"{build}/tests/fault/fault-table.md"
    only = None
    if "--table" in args:
        table = os.path.abspath(args[args.index("--table") + 1])
    if "--only" in args:
        only = args[args.index("--only") + 1]

    if os.environ.get("NSD_FAULT_SANDBOX") != "1":
        if os.geteuid() != 0:
            print("1..0 # SKIP needs root (namespaces and mounts, in a private mount namespace)")
            return 0
        if not shutil.which("unshare") or not shutil.which("addr2line"):
            print("1..0 # SKIP needs unshare (util-linux) and addr2line (binutils)")
            return 0
        work = tempfile.mkdtemp(prefix="nsd-fault.")
        cpu = min(os.sched_getaffinity(0))
        cmd = ["unshare", "-m", "--propagation", "private", sys.executable,
               os.path.abspath(__file__)] + args
        if shutil.which("taskset"):
            cmd = ["taskset", "-c", str(cpu)] + cmd
        env = dict(os.environ, NSD_FAULT_SANDBOX="1", NSD_FAULT_WORK=work)
        try:
            rc = subprocess.call(cmd, env=env)
        finally:
            # the mounts went with the private namespace
            if not os.environ.get("NSD_FAULT_KEEP"):
                shutil.rmtree(work, ignore_errors=True)
        return rc

    work = os.environ["NSD_FAULT_WORK"]
    # in the private mount namespace: a /run of its own (nothing here uses the host's), where
    # D's key file lies in folders nsd trusts (KeyFile=)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755,nosuid,nodev", "nsd-fault-run",
                    "/run"], check=True)
    os.makedirs(KEY_DIR, mode=0o755)
    for f in ("nsd/nsd", "nsctl/nsctl", "tests/fault/nsd-fault-shim.so",
              "tests/fault/fault-client", "tests/fault/pinstore-driver"):
        if not os.path.exists(f"{build}/{f}"):
            print(f"Bail out! {build}/{f} is not built")
            return 1

    sites = []
    seen = set()
    for name in ([] if "--no-faults" in args else SCENARIOS):
        found, err = calibrate(work, build, name, seen)
        if err:
            tap(False, f"calibration: the {name} scenario without a fault", err)
            print(f"1..{test_no}")
            return 1
        sites += found
    errnos = QUICK_ERRNOS if quick else ERRNOS
    cases = []
    for s in sites:
        if s["scenario"] == "cred":
            for e in CRED_ERRNOS.get(s["call"], CRED_ERRNO_DEFAULT):
                cases.append((s, e, 1))
            continue
        if s["phase"] == "login-undo":  # the clean-up after login-d
            continue
        if s["phase"] in ("stop-d", "start-d", "login-d") and \
                s["site"].startswith(PRE_DISPATCH_SITES):
            continue
        if s["phase"] in ("release-d", "stop-d", "start-d", "login-d"):
            for e in RELEASE_D_ERRNOS.get(s["call"], CRED_ERRNO_DEFAULT):
                cases.append((s, e, 1))
            continue
        for e in errnos:
            cases.append((s, e, 1))
        if s["call"] in BURST_CALLS and s["phase"] in BURST_PHASES:
            cases.append((s, "EAGAIN", BURST))
    if only:
        cases = [c for c in cases if only in f"{c[0]['phase']} {c[0]['call']} {c[0]['site']} {c[1]}"]
    diag(f"{len(sites)} call sites, {len(cases)} cases, errnos {' '.join(errnos)}, "
         f"bursts of {BURST}")

    rows = []
    t0 = time.monotonic()
    phase_time = {}  # (scenario, phase) -> [cases, seconds]: where the suite's time goes
    for s, e, count in cases:
        t_case = time.monotonic()
        oc, hit, w = run_case(work, build, s, e, count)
        pt = phase_time.setdefault((s["scenario"], s["phase"]), [0, 0.0])
        pt[0] += 1
        pt[1] += time.monotonic() - t_case
        text = outcome_text(oc, hit)
        fault = f"{s['call']}#{s['n']} {e}" + (f" x{count}" if count != 1 else "")
        desc = f"{s['phase']}: {fault} at {s['site']}" + (f" [{s['arg']}]" if s["arg"] else "")
        known = known_bug(s, e)
        if not hit:
            tap(True, desc, skip="the call was not reached in this run")
        else:
            tap(not oc.problems, f"{desc}: {text}",
                "\n".join(oc.problems) + "\n--- nsd log (tail)\n" + w.log_text()[-3000:],
                todo=known)
            if known and oc.problems:
                text = f"KNOWN BUG (TODO): {text}"
        rows.append((s["phase"], s["call"], s["site"] + (f" [{s['arg']}]" if s["arg"] else ""),
                     e + (f" x{count}" if count != 1 else ""), text))
        if not os.environ.get("NSD_FAULT_KEEP"):
            shutil.rmtree(w.dir, ignore_errors=True)
        else:
            diag(f"kept {w.dir}")
    diag(f"fault cases took {time.monotonic() - t0:.0f} s; by scenario and phase: " +
         ", ".join(f"{sc} {ph} {n} in {t:.0f} s" for (sc, ph), (n, t) in
                   sorted(phase_time.items(), key=lambda kv: -kv[1][1])))

    api_tests(work, build)
    session_tests(work, build)
    linger_tests(work, build)
    fdstore_tests(work, build)
    cred_tests(work, build)
    cred_default_bound(work, build)

    if "--no-faults" in args:  # no table: keep the last one
        print(f"1..{test_no}")
        return 1 if failures else 0
    with open(table, "w") as f:
        f.write("| phase | call | call site | injected | outcome |\n|---|---|---|---|---|\n")
        for r in rows:
            f.write("| " + " | ".join(x.replace("|", "/") for x in r) + " |\n")
    diag(f"table: {table}")
    for r in rows:
        diag(" | ".join(r))
    print(f"1..{test_no}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
