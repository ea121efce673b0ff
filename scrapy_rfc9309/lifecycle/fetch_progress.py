"""The download of a robots.txt (or tdmrep.json) while it runs, through Scrapy's download
signals: the size limit applied by cutting the body, the content coding moved out of
``HttpCompressionMiddleware``'s sight (undone, bounded, by :mod:`.content_coding`), and the
route of each request told once every downloader middleware has seen it.

The handlers are connected only while a fetch is in flight: every chunk of every download
would pay for the dispatch otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import StopDownload

from ..meta import FETCH_META
from ..meta import SIZE_META as _SIZE_META

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["CODING_HEADER", "FetchProgress"]

#: Where the response's Content-Encoding is moved, out of HttpCompressionMiddleware's sight.
CODING_HEADER = b"X-Robotstxt-Content-Encoding"


class FetchProgress:
    """The download signals' handlers of the fetches in flight (``started``/``ended`` around
    each download)."""

    def __init__(self, crawler: Crawler, max_size: int,
                 route_seen: Callable[[Request], None] | None = None) -> None:
        self.crawler = crawler
        self.max_size = max_size
        #: Told of each robots.txt request that reaches the downloader (every
        #: downloader middleware has seen it: its proxy, if any, is set).
        self.route_seen = route_seen
        self.in_flight = 0

    def started(self) -> None:
        if not self.in_flight:
            self._listen(True)
        self.in_flight += 1

    def ended(self) -> None:
        self.in_flight -= 1
        if not self.in_flight:
            self._listen(False)

    def _headers_received(self, headers: Any, body_length: Any, request: Request, spider: Any = None) -> None:
        # The size limit is applied below, by cutting the body: no DOWNLOAD_MAXSIZE may
        # cancel a large robots.txt (it is truncated and parsed instead).
        if FETCH_META in request.meta:
            request.meta["download_maxsize"] = 0

    def _reached_downloader(self, request: Request, spider: Any = None) -> None:
        if self.route_seen is not None and FETCH_META in request.meta:
            self.route_seen(request)

    def _bytes_received(self, data: bytes, request: Request, spider: Any = None) -> None:
        meta = request.meta
        if FETCH_META not in meta:
            return
        received = meta.get(_SIZE_META, 0) + len(data)
        meta[_SIZE_META] = received
        if received > self.max_size:
            raise StopDownload(fail=False)

    def _response_downloaded(self, response: Response, request: Request, spider: Any = None) -> None:
        # Scrapy's HttpCompressionMiddleware would inflate the whole body (up to
        # DOWNLOAD_MAXSIZE) before the size limit applies: the coding is moved out of
        # its sight and undone by the fetcher, bounded (content_coding).
        if FETCH_META in request.meta and b"Content-Encoding" in response.headers:
            response.headers[CODING_HEADER] = response.headers.getlist(b"Content-Encoding")
            del response.headers[b"Content-Encoding"]

    def _listen(self, on: bool) -> None:
        handlers = ((self._reached_downloader, signals.request_reached_downloader),
                    (self._headers_received, signals.headers_received),
                    (self._bytes_received, signals.bytes_received),
                    (self._response_downloaded, signals.response_downloaded))
        for handler, signal in handlers:
            if on:
                self.crawler.signals.connect(handler, signal=signal)
            else:
                self.crawler.signals.disconnect(handler, signal=signal)
