"""A resolver for crawls in a subprocess (``TWISTED_DNS_RESOLVER``, ``DNS_RESOLVER``
before Scrapy 2.19) that asks a DNS server which never answers: each lookup of a
name blocks one of the reactor's threads until its timeout, then fails, as a lookup
does where the resolver is slow or unreachable. Scrapy's default resolver blocks a
thread the same way (``socket.gethostbyname`` in the reactor's thread pool).

Environment: ``SILENT_DNS`` (``host:port`` of a UDP socket that reads and never
answers), ``SILENT_DNS_TIMEOUT`` (seconds, default 1), ``SILENT_DNS_LOG`` (a file
that gets one line per lookup: the time it started, the name).
"""

from __future__ import annotations

import os
import socket
import struct
import time
from typing import Any

from twisted.internet import defer, threads
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IResolverSimple
from zope.interface import implementer


def _query(name: str) -> bytes:
    header = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
    labels = b"".join(bytes([len(part)]) + part.encode("ascii") for part in name.rstrip(".").split("."))
    return header + labels + b"\x00" + struct.pack(">HH", 1, 1)


@implementer(IResolverSimple)
class SilentDnsResolver:
    def __init__(self, reactor: Any) -> None:
        self.reactor = reactor
        host, port = os.environ["SILENT_DNS"].rsplit(":", 1)
        self.server = (host, int(port))
        self.timeout = float(os.environ.get("SILENT_DNS_TIMEOUT", "1"))
        self.log = os.environ.get("SILENT_DNS_LOG")

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> SilentDnsResolver:
        return cls(reactor)

    def install_on_reactor(self) -> None:
        self.reactor.installResolver(self)

    def getHostByName(self, name: str, timeout: Any = ()) -> defer.Deferred[str]:
        try:
            socket.inet_aton(name)
        except OSError:
            return threads.deferToThreadPool(self.reactor, self.reactor.getThreadPool(), self._lookup, name)
        return defer.succeed(name)

    def _lookup(self, name: str) -> str:
        if self.log:
            with open(self.log, "a") as log:
                log.write(f"{time.time()} {name}\n")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(self.timeout)
            sock.sendto(_query(name), self.server)
            try:
                sock.recvfrom(512)
            except OSError:
                pass
        raise DNSLookupError(f"no answer from {self.server[0]}:{self.server[1]} for {name}")
