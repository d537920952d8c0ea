"""One DNS query, no dependencies: prints the response code and the A records answered.

Usage: python3 dns-query.py SERVER[:PORT] NAME [--tcp]   (exit 0 when an answer came back)
"""

import random
import socket
import struct
import sys

RCODES = {0: "NOERROR", 2: "SERVFAIL", 3: "NXDOMAIN", 5: "REFUSED"}


def query(name: str) -> bytes:
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split("."))
    header = struct.pack(">HHHHHH", random.randrange(65536), 0x0100, 1, 0, 0, 0)  # recursion desired
    return header + labels + b"\0" + struct.pack(">HH", 1, 1)  # A, IN


def skip_name(msg: bytes, i: int) -> int:
    while msg[i]:
        if msg[i] & 0xC0 == 0xC0:  # compression pointer ends the name
            return i + 2
        i += msg[i] + 1
    return i + 1


def main() -> int:
    server, name = sys.argv[1], sys.argv[2]
    host, _, port = server.partition(":")
    address = (host, int(port or 53))
    q = query(name)
    if "--tcp" in sys.argv[3:]:
        with socket.create_connection(address, timeout=5) as s:
            s.sendall(struct.pack(">H", len(q)) + q)
            data = b""
            while len(data) < 2 or len(data) < 2 + struct.unpack(">H", data[:2])[0]:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            msg = data[2:]
    else:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(5)
            s.sendto(q, address)
            msg = s.recv(4096)
    flags, _, answers = struct.unpack(">HHH", msg[2:8])
    i = skip_name(msg, 12) + 4
    records = []
    for _ in range(answers):
        i = skip_name(msg, i)
        rtype, _, _, length = struct.unpack(">HHIH", msg[i : i + 10])
        i += 10
        if rtype == 1:
            records.append(socket.inet_ntoa(msg[i : i + 4]))
        i += length
    print(RCODES.get(flags & 0xF, str(flags & 0xF)), *records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
