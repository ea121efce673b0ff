"""The exceptions a failed download raises, on every supported Scrapy: Scrapy 2.15
gave downloads their own exception types; before, Twisted's surfaced."""

from __future__ import annotations

import re

from reactorless import is_reactorless
from scrapy import exceptions
from twisted.internet import defer, error
from twisted.web import client

__all__ = [
    "DownloadCancelledError",
    "DownloadFailedError",
    "DownloadTimeoutError",
    "connection_lost",
    "host_header",
    "resends_dropped_get",
]

DownloadCancelledError: type[BaseException] = getattr(exceptions, "DownloadCancelledError", defer.CancelledError)
DownloadTimeoutError: type[BaseException] = getattr(exceptions, "DownloadTimeoutError", error.TimeoutError)
#: A connection that broke: one class from Scrapy 2.15, Twisted's before.
DownloadFailedError: type[BaseException] | tuple[type[BaseException], ...] = getattr(
    exceptions, "DownloadFailedError", (client.ResponseFailed, client.ResponseNeverReceived, error.ConnectionLost)
)


def connection_lost(exception: BaseException) -> bool:
    """Whether a failed download's exception says the server dropped the connection: Twisted's
    HTTP/1.1 handler names ``ConnectionLost``; the aiohttp one that Scrapy uses without a reactor
    says the connection was reset or the server disconnected."""
    return re.search(r"ConnectionLost|Connection reset by peer|Server ?disconnected", str(exception)) is not None


def resends_dropped_get() -> int:
    """How many times the download handler of the tests' crawls sends a GET again when the
    connection closes without a response: aiohttp's (Scrapy's handler without a reactor) once,
    on any connection; Twisted's HTTP/1.1 pool only on a reused keep-alive connection, which a
    robots.txt request, the first of its origin, does not use."""
    return 1 if is_reactorless() else 0


def host_header(host: str) -> str:
    """The ``Host`` header the download handler of the tests' crawls sends for ``host``:
    Twisted's as given; aiohttp's (Scrapy's handler without a reactor) without a trailing dot."""
    return host.rstrip(".") if is_reactorless() else host
