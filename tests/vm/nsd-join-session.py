#!/usr/bin/env python3
"""JOIN_SESSION (protocol 1.2) from root over root's socket, for tests/vm/nsd-join-session.sh.
Prints one line per request:  <name> <reply-type> <errno> fds=<n> sessions=<n> <message>
The layouts mirror libnsclient/nsd-protocol.h (checked against its sizes at start).

  nsd-join-session.py [--socket PATH] [--no-pidfd] [--pid PID] UID LEADER_PID
"""
import argparse, errno, os, re, socket, struct, sys

MAGIC, MAJOR, MINOR = 0x3044534E, 1, 2
HDR = struct.Struct("<IHHHHIIi")  # magic, major, minor, type, flags, length, seq, error
REQ_JOIN_SESSION, REP_JOIN_SESSION, REP_ERROR = 9, 0x8009, 0xFFFF
JOIN_SESSION_PIDFD = 0x2


def sizes(path):
    text = open(path).read()
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r"sizeof\(struct (\w+)\) == (\d+)", text)}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--socket", default="/run/nsd/root.socket")
    ap.add_argument("--header", default="libnsclient/nsd-protocol.h")
    ap.add_argument("--no-pidfd", action="store_true", help="send no pidfd (nsd opens one)")
    ap.add_argument("--pidfd-of", type=int, help="send the pidfd of this pid instead")
    ap.add_argument("uid", type=int)
    ap.add_argument("pid", type=int)
    a = ap.parse_args()
    sz = sizes(a.header)
    assert sz["nsd_req_join_session"] == 72 and sz["nsd_rep_join_session"] == 64, sz

    flags = 0 if a.no_pidfd else JOIN_SESSION_PIDFD
    req = HDR.pack(MAGIC, MAJOR, MINOR, REQ_JOIN_SESSION, 0, 72, 1, 0) + \
        struct.pack("<IIII32s", a.uid, flags, a.pid, 0, b"nsd-test")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(20)
    s.connect(a.socket)
    anc = []
    if not a.no_pidfd:
        pidfd = os.pidfd_open(a.pidfd_of or a.pid)
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", pidfd))]
    s.sendmsg([req], anc)
    data, anc, _, _ = s.recvmsg(8192, socket.CMSG_SPACE(4 * 4))
    fds = []
    for level, typ, cdata in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fds += list(struct.unpack(f"{len(cdata) // 4}i", cdata[: len(cdata) // 4 * 4]))
    for fd in fds:
        os.close(fd)
    _, _, _, rtype, _, _, _, err = HDR.unpack_from(data)
    sessions, msg = "-", "-"
    if rtype == REP_JOIN_SESSION:
        uid, ns_flags, ino, created, sid, sessions, _ = struct.unpack_from("<IIQQQII", data, HDR.size)
        msg = f"session={sid} ns={ino}"
    elif rtype == REP_ERROR:
        msg = data[HDR.size + 4:].split(b"\0", 1)[0].decode(errors="replace") or "-"
    ename = errno.errorcode.get(-err, str(err)) if err else "0"
    print(f"join-session {rtype:#06x} {ename} fds={len(fds)} sessions={sessions} {msg}")


if __name__ == "__main__":
    sys.exit(main())
