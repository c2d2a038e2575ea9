#!/usr/bin/python3
# su-password.py AS-USER TARGET-USER COMMAND: run `su -l TARGET-USER -c COMMAND` as AS-USER on a
# pseudo-terminal of its own and answer su's password prompt with the first line of stdin (never
# an argument or an environment variable: the scenarios look for the password in every
# process's cmdline and environ). Prints what su printed after the prompt; exits with su's
# status (124 when no prompt came within 30 s).
import os
import pty
import select
import sys
import time


def read_some(fd, timeout):
    """What fd has (b"" at its end, or when the child is gone), or None after timeout."""
    if not select.select([fd], [], [], timeout)[0]:
        return None
    try:
        return os.read(fd, 4096)
    except OSError:
        return b""


def main():
    as_user, target, command = sys.argv[1:4]
    password = sys.stdin.readline().rstrip("\n")
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp("setpriv", ["setpriv", "--reuid=" + as_user, "--regid=" + as_user,
                              "--init-groups", "su", "-l", target, "-c", command])
    out = b""
    deadline = time.monotonic() + 30
    while b"assword:" not in out:
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            sys.exit(124)
        chunk = read_some(fd, 1)
        if chunk is None:
            continue
        if not chunk:
            break
        out += chunk
    os.write(fd, password.encode() + b"\n")
    password = None
    rest = b""
    while True:
        chunk = read_some(fd, None)
        if not chunk:
            break
        rest += chunk
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(rest.decode(errors="replace").lstrip("\r\n"))
    sys.exit(os.waitstatus_to_exitcode(status))


main()
