#!/usr/bin/env python3
"""The raw nsd protocol client of the VM scenarios: sends well-formed and deliberately bad
requests and prints what came back, one line per request, as
  <name> <reply-type> <errno> fds=<n> <message>
and for join-session (protocol 1.2, JOIN + SESSION_OPEN in one; root's socket, as pam_nsjoin)
  join-session <reply-type> <errno> fds=<n> sessions=<n> session=<id> ns=<inode>|<message>
The layouts mirror libnsclient/nsd-protocol.h (checked against its sizes at start).

  nsd-rawclient.py [--socket PATH] [--header FILE] WHAT [UID] [--count N]
  nsd-rawclient.py [--socket PATH] join-session [--no-pidfd | --pidfd-of PID] UID LEADER_PID
  nsd-rawclient.py [--socket PATH] flood-join FIRST_UID --count N --seconds S
      (root) N processes at a time, each a fresh uid from FIRST_UID on, JOIN for itself, for S
      seconds (a subuid range flooding nsd); then one line: flood-join <requests> <errno>=<n>...
  nsd-rawclient.py [--socket PATH] join-range FIRST_UID --count N
      (root) JOIN for uids FIRST_UID to FIRST_UID+N-1, one after the other on one connection
      (the cheapest way to make N namespaces); then one line:
      join-range <requests> <errno>=<n>... seconds=<wall time>
"""
import argparse, errno, os, re, socket, struct, sys

MAGIC, MAJOR, MINOR = 0x3044534E, 1, 2
HDR = struct.Struct("<IHHHHIIi")  # magic, major, minor, type, flags, length, seq, error
REQ_JOIN, REQ_STATUS, REQ_LIST, REQ_JOIN_SESSION = 1, 4, 5, 9
REP_JOIN_SESSION, REP_ERROR = 0x8009, 0xFFFF
JOIN_SESSION_PIDFD = 0x2


def proto_header_sizes(path):
    """Read the _Static_assert sizes from the header so this script cannot drift silently."""
    text = open(path).read()
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r"sizeof\(struct (\w+)\) == (\d+)", text)}


def hdr(type_, length, seq=1, major=MAJOR, magic=MAGIC, error=0):
    return HDR.pack(magic, major, MINOR, type_, 0, length, seq, error)


def join(uid, **kw):
    return hdr(REQ_JOIN, 32, **kw) + struct.pack("<II", uid, 0)


def request(sock_path, payload, name, fds=(), timeout=5):
    """Send payload (and fds by SCM_RIGHTS) on a new connection and read one reply: returns
    (reply type, errno name, descriptors received, datagram), or None when none came (said
    on a line of its own)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(timeout)
    s.connect(sock_path)
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))] if fds else []
    s.sendmsg([payload], anc)
    try:
        data, anc, _, _ = s.recvmsg(8192, socket.CMSG_SPACE(4 * 4))
    except (ConnectionResetError, socket.timeout) as e:
        print(f"{name} none {type(e).__name__} -")
        return None
    finally:
        s.close()
    got = []
    for level, typ, cdata in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            got += list(struct.unpack(f"{len(cdata) // 4}i", cdata[: len(cdata) // 4 * 4]))
    for fd in got:
        os.close(fd)
    if len(data) < HDR.size:
        print(f"{name} short {len(data)} -")
        return None
    _, _, _, rtype, _, _, _, err = HDR.unpack_from(data)
    ename = errno.errorcode.get(-err, str(err)) if err else "0"
    return rtype, ename, len(got), data


def error_message(rtype, data):
    if rtype == REP_ERROR and len(data) >= HDR.size + 4:
        return data[HDR.size + 4:].split(b"\0", 1)[0].decode(errors="replace") or "-"
    return "-"


def simple(sock_path, payload, name):
    r = request(sock_path, payload, name)
    if r:
        rtype, ename, n_fds, data = r
        print(f"{name} {rtype:#06x} {ename} fds={n_fds} {error_message(rtype, data)}")


def flood_join(a):
    """Fresh uids JOIN for themselves, a.count processes at a time, for a.seconds."""
    import time
    deadline = time.monotonic() + a.seconds
    uid, running, results = a.uid, {}, {}
    while time.monotonic() < deadline or running:
        while len(running) < a.count and time.monotonic() < deadline:
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                code = "none"
                try:
                    os.setgroups([])
                    os.setresgid(uid, uid, uid)
                    os.setresuid(uid, uid, uid)
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                    s.settimeout(30)
                    s.connect(a.socket)
                    s.send(join(uid))
                    data = s.recv(8192)
                    err = HDR.unpack_from(data)[7] if len(data) >= HDR.size else 0
                    code = errno.errorcode.get(-err, str(err)) if err else "0"
                except Exception as e:
                    code = type(e).__name__
                os.write(w, code.encode())
                os._exit(0)
            os.close(w)
            running[pid] = r
            uid += 1
        pid, _ = os.wait()
        r = running.pop(pid)
        code = os.read(r, 64).decode() or "none"
        os.close(r)
        results[code] = results.get(code, 0) + 1
    print("flood-join", sum(results.values()),
          " ".join(f"{k}={v}" for k, v in sorted(results.items())))


def join_range(a):
    """Root's JOINs for a.count uids from a.uid on, one connection, one request at a time."""
    import time
    t0, results = time.monotonic(), {}
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(60)
    s.connect(a.socket)
    for i in range(a.count):
        s.send(join(a.uid + i, seq=i + 1))
        data, anc, _, _ = s.recvmsg(8192, socket.CMSG_SPACE(4 * 4))
        if not data:  # nsd closed the connection: the rest is not asked
            results["closed"] = a.count - i
            break
        for level, typ, cdata in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                for fd in struct.unpack(f"{len(cdata) // 4}i", cdata[: len(cdata) // 4 * 4]):
                    os.close(fd)
        err = HDR.unpack_from(data)[7] if len(data) >= HDR.size else 0
        code = errno.errorcode.get(-err, str(err)) if err else "0"
        results[code] = results.get(code, 0) + 1
    s.close()
    print("join-range", sum(results.values()),
          " ".join(f"{k}={v}" for k, v in sorted(results.items())),
          f"seconds={time.monotonic() - t0:.1f}")


def join_session(a):
    if a.pid is None:
        sys.exit("nsd-rawclient: join-session needs UID and LEADER_PID")
    flags = 0 if a.no_pidfd else JOIN_SESSION_PIDFD
    payload = hdr(REQ_JOIN_SESSION, 72) + struct.pack("<IIII32s", a.uid, flags, a.pid, 0, b"nsd-test")
    fds = [] if a.no_pidfd else [os.pidfd_open(a.pidfd_of or a.pid)]
    r = request(a.socket, payload, "join-session", fds, timeout=20)
    if not r:
        return
    rtype, ename, n_fds, data = r
    sessions, msg = "-", error_message(rtype, data)
    if rtype == REP_JOIN_SESSION:
        _, _, ino, _, sid, sessions, _ = struct.unpack_from("<IIQQQII", data, HDR.size)
        msg = f"session={sid} ns={ino}"
    print(f"join-session {rtype:#06x} {ename} fds={n_fds} sessions={sessions} {msg}")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--socket", default="/run/nsd/socket")
    ap.add_argument("--header", default="libnsclient/nsd-protocol.h")
    ap.add_argument("what", choices=["join", "garbage", "truncated", "wrong-version", "oversized",
                                     "bad-length", "unknown-type", "hold", "join-session",
                                     "flood-join", "join-range"])
    ap.add_argument("uid", nargs="?", type=int, default=os.getuid())
    ap.add_argument("pid", nargs="?", type=int, help="join-session: the session leader")
    ap.add_argument("--count", type=int, default=1,
                    help="hold: connections to open; flood-join: processes at a time; "
                    "join-range: uids")
    ap.add_argument("--seconds", type=float, default=10, help="flood-join: how long")
    ap.add_argument("--no-pidfd", action="store_true",
                    help="join-session: send no pidfd (nsd opens one)")
    ap.add_argument("--pidfd-of", type=int, help="join-session: send the pidfd of this pid instead")
    a = ap.parse_intermixed_args()

    sizes = proto_header_sizes(a.header)
    assert sizes["nsd_msg_header"] == HDR.size and sizes["nsd_req_join"] == 32, sizes
    assert sizes["nsd_req_join_session"] == 72 and sizes["nsd_rep_join_session"] == 64, sizes

    if a.what == "join-session":
        join_session(a)
    elif a.what == "flood-join":
        flood_join(a)
    elif a.what == "join-range":
        join_range(a)
    elif a.what == "join":
        simple(a.socket, join(a.uid), "join")
    elif a.what == "garbage":
        simple(a.socket, os.urandom(7) + b"garbage-not-a-message" * 3, "garbage")
    elif a.what == "truncated":
        simple(a.socket, join(a.uid)[:-3], "truncated")
    elif a.what == "wrong-version":
        simple(a.socket, join(a.uid, major=MAJOR + 41), "wrong-version")
    elif a.what == "oversized":
        simple(a.socket, hdr(REQ_JOIN, 65536) + b"\0" * (65536 - HDR.size), "oversized")
    elif a.what == "bad-length":
        p = bytearray(join(a.uid))
        struct.pack_into("<I", p, 12, 1000)
        simple(a.socket, bytes(p), "bad-length")
    elif a.what == "unknown-type":
        simple(a.socket, hdr(0x77, HDR.size), "unknown-type")
    elif a.what == "hold":
        # open --count connections, report how many nsd kept open, then release them all
        socks, refused = [], 0
        for _ in range(a.count):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(a.socket)
            socks.append(s)
        for s in socks:
            s.settimeout(5)
            try:
                s.send(hdr(REQ_STATUS, HDR.size))
                data = s.recv(8192)
            except (BrokenPipeError, ConnectionResetError, socket.timeout):
                data = b""
            if len(data) < HDR.size or HDR.unpack_from(data)[3] == REP_ERROR:
                refused += 1
        print(f"hold opened={len(socks)} refused={refused}")
        for s in socks:
            s.close()


if __name__ == "__main__":
    sys.exit(main())
