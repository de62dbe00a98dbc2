#!/usr/bin/env python3
"""Holds idle TCP connections for the descriptor-flood tests, outside the test process.

    idle-connections.py PORT COUNT

Opens COUNT non-blocking connections to 127.0.0.1:PORT that never send a byte and prints how many
it opened. Then, for each line read on stdin, prints how many of them the server has closed (a
read sees the end or a reset). Exits, closing them all, at the end of stdin.

The test process keeps few descriptors this way: Foundation's Process reads /proc/self/fd to
launch a child, and with a couple of thousand descriptors open it reads past its buffer.
"""
import resource
import socket
import sys

port, count = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if hard == resource.RLIM_INFINITY or hard > soft:
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

sockets = []
for _ in range(count):
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except OSError:
        break
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    except OSError:
        s.close()
        break
    sockets.append(s)
print(len(sockets), flush=True)


def closed_by_peer(s):
    try:
        return s.recv(1, socket.MSG_DONTWAIT) == b""
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True


for _ in sys.stdin:
    print(sum(1 for s in sockets if closed_by_peer(s)), flush=True)
