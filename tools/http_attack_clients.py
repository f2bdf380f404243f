#!/usr/bin/env python3
"""Hostile HTTP clients for tools/http_attack_mix.sh, all in one process (one thread,
non-blocking sockets, select):

  slow headers  --slow N: N connections that each send a request header one byte per
                second and never finish it; one closed by the server is reopened.
  pipeliners    --pipeliners N: N connections that each send --pipeline_bytes of
                pipelined GET requests as fast as the server takes them, never read an
                answer, then send a byte a second (which finds the close); reopened when
                the server closes them.
  resetters     --resets_per_s R: R times a second, a connection that sends half a
                request and resets (SO_LINGER 0, then close).

Runs for --seconds, then closes everything and prints one line of counts:
  attack: slow_opened=.. slow_closed_by_server=.. pipeliners_opened=.. pipelined_bytes=..
          pipeliners_closed_by_server=.. resets=.. connect_errors=..
"""

import argparse
import errno
import select
import socket
import struct
import sys
import time

SLOW_HEADER = b"GET / HTTP/1.1\r\nHost: attack\r\nX-Slow: " + b"a" * 100000
PIPELINED = b"GET / HTTP/1.1\r\nHost: attack\r\n\r\n" * 64
HALF_REQUEST = b"GET / HTTP/1.1\r\nHost: res"


def connect(address):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect(address)
    except BlockingIOError:
        pass
    except OSError:
        s.close()
        return None
    return s


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--slow", type=int, default=200)
    parser.add_argument("--pipeliners", type=int, default=10)
    parser.add_argument("--pipeline_bytes", type=int, default=256 * 1024)
    parser.add_argument("--resets_per_s", type=float, default=50)
    args = parser.parse_args()
    address = (args.host, args.port)
    counts = dict(slow_opened=0, slow_closed_by_server=0, pipeliners_opened=0,
                  pipelined_bytes=0, pipeliners_closed_by_server=0, resets=0,
                  connect_errors=0)

    slow = {}  # socket -> bytes of SLOW_HEADER sent
    pipeliners = {}  # socket -> bytes sent
    end = time.monotonic() + args.seconds
    next_trickle = time.monotonic()
    next_reset = time.monotonic()

    def open_into(sockets, counter):
        s = connect(address)
        if s is None:
            counts["connect_errors"] += 1
            return
        sockets[s] = 0
        counts[counter] += 1

    def open_slow():
        open_into(slow, "slow_opened")

    def open_pipeliner():
        open_into(pipeliners, "pipeliners_opened")

    for _ in range(args.slow):
        open_slow()
    for _ in range(args.pipeliners):
        open_pipeliner()

    while True:
        now = time.monotonic()
        if now >= end:
            break
        # Slow headers: one byte each per second; a closed one is reopened. Pipeliners
        # that sent their share: an empty line a second (a server may ignore empty
        # lines before a request: it must not renew its idle deadline for them), which
        # also finds the server's close.
        if now >= next_trickle:
            next_trickle = now + 1.0
            for s in [p for p, sent in pipeliners.items() if sent >= args.pipeline_bytes]:
                try:
                    s.send(b"\r\n")
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    del pipeliners[s]
                    s.close()
                    counts["pipeliners_closed_by_server"] += 1
                    open_pipeliner()
            for s in list(slow):
                try:
                    sent = s.send(SLOW_HEADER[slow[s]:slow[s] + 1])
                    slow[s] += sent
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    del slow[s]
                    s.close()
                    counts["slow_closed_by_server"] += 1
                    open_slow()
        # Resetters: half a request, then an abortive close.
        while now >= next_reset and args.resets_per_s > 0:
            next_reset += 1.0 / args.resets_per_s
            s = connect(address)
            if s is None:
                counts["connect_errors"] += 1
                continue
            try:
                select.select([], [s], [], 0.05)
                s.send(HALF_REQUEST)
            except OSError:
                pass
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
            counts["resets"] += 1
        # Pipeliners: write whatever the server takes, up to pipeline_bytes; never read.
        writable = [s for s, sent in pipeliners.items() if sent < args.pipeline_bytes]
        timeout = max(0.0, min(next_trickle, next_reset if args.resets_per_s > 0 else end,
                               end) - time.monotonic())
        try:
            _, ready, _ = select.select([], writable, [], min(timeout, 0.05))
        except ValueError:  # more descriptors than select() takes
            ready = writable
        for s in ready:
            offset = pipeliners[s] % len(PIPELINED)
            try:
                sent = s.send(PIPELINED[offset:])
                counts["pipelined_bytes"] += sent
                pipeliners[s] += sent
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as error:
                if error.errno in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
                    counts["pipeliners_closed_by_server"] += 1
                del pipeliners[s]
                s.close()
                open_pipeliner()

    for s in list(slow) + list(pipeliners):
        s.close()
    print("attack: " + " ".join(f"{k}={v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
