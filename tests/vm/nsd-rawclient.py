#!/usr/bin/env python3
"""A raw nsd protocol client for tests: sends well-formed and deliberately bad requests and
prints what came back, one line per request, as:  <name> <reply-type> <errno> <message>
The layouts mirror libnsclient/nsd-protocol.h (checked against its sizes at start)."""
import argparse, errno, os, re, socket, struct, sys

MAGIC, MAJOR, MINOR = 0x3044534E, 1, 0
HDR = struct.Struct("<IHHHHIIi")  # magic, major, minor, type, flags, length, seq, error
REQ_JOIN, REQ_STATUS, REQ_LIST = 1, 4, 5
REP_ERROR = 0xFFFF


def proto_header_sizes(path):
    """Read the _Static_assert sizes from the header so this script cannot drift silently."""
    text = open(path).read()
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r"sizeof\(struct (\w+)\) == (\d+)", text)}


def hdr(type_, length, seq=1, major=MAJOR, magic=MAGIC, error=0):
    return HDR.pack(magic, major, MINOR, type_, 0, length, seq, error)


def join(uid, **kw):
    return hdr(REQ_JOIN, 32, **kw) + struct.pack("<II", uid, 0)


def request(sock_path, payload, name, fds_expected=False):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(sock_path)
    s.send(payload)
    try:
        data, anc, _, _ = s.recvmsg(8192, socket.CMSG_SPACE(4 * 4))
    except (ConnectionResetError, socket.timeout) as e:
        print(f"{name} none {type(e).__name__} -")
        return
    finally:
        s.close()
    fds = []
    for level, typ, cdata in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fds += list(struct.unpack(f"{len(cdata) // 4}i", cdata[: len(cdata) // 4 * 4]))
    for fd in fds:
        os.close(fd)
    if len(data) < HDR.size:
        print(f"{name} short {len(data)} -")
        return
    _, _, _, rtype, _, length, _, err = HDR.unpack_from(data)
    msg = "-"
    if rtype == REP_ERROR and len(data) >= HDR.size + 4:
        msg = data[HDR.size + 4:].split(b"\0", 1)[0].decode(errors="replace") or "-"
    ename = errno.errorcode.get(-err, str(err)) if err else "0"
    print(f"{name} {rtype:#06x} {ename} fds={len(fds)} {msg}")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--socket", default="/run/nsd/socket")
    ap.add_argument("--header", default="libnsclient/nsd-protocol.h")
    ap.add_argument("what", choices=["join", "garbage", "truncated", "wrong-version", "oversized",
                                     "bad-length", "unknown-type", "hold"])
    ap.add_argument("uid", nargs="?", type=int, default=os.getuid())
    ap.add_argument("--count", type=int, default=1, help="hold: connections to open")
    a = ap.parse_args()

    sizes = proto_header_sizes(a.header)
    assert sizes["nsd_msg_header"] == HDR.size and sizes["nsd_req_join"] == 32, sizes

    if a.what == "join":
        request(a.socket, join(a.uid), "join")
    elif a.what == "garbage":
        request(a.socket, os.urandom(7) + b"garbage-not-a-message" * 3, "garbage")
    elif a.what == "truncated":
        request(a.socket, join(a.uid)[:-3], "truncated")
    elif a.what == "wrong-version":
        request(a.socket, join(a.uid, major=MAJOR + 41), "wrong-version")
    elif a.what == "oversized":
        request(a.socket, hdr(REQ_JOIN, 65536) + b"\0" * (65536 - HDR.size), "oversized")
    elif a.what == "bad-length":
        p = bytearray(join(a.uid))
        struct.pack_into("<I", p, 12, 1000)
        request(a.socket, bytes(p), "bad-length")
    elif a.what == "unknown-type":
        request(a.socket, hdr(0x77, HDR.size), "unknown-type")
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
