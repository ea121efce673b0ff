"""Fetching one origin's robots.txt through Scrapy's engine (RFC 9309, 2.3).

The request goes through ``crawler.engine`` and so through every downloader
middleware (proxies, auth, headers, the HTTP cache), but this module applies the
RFC's redirect, status and size rules itself: Scrapy's redirect and retry
middlewares are told to leave it alone.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, StopDownload
from scrapy.http.request import NO_CALLBACK

from .access import Access, FetchOutcome, Policy, classify_status, max_age_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from .origin import Origin

__all__ = ["FETCH_META", "RobotsFetcher"]

logger = logging.getLogger(__name__)

#: Meta key that marks this module's own robots.txt requests.
FETCH_META = "_robotstxt_rfc9309_fetch"
_SIZE_META = "_robotstxt_rfc9309_bytes"
_HTML_TYPES = (b"text/html", b"application/xhtml+xml")


class RobotsFetcher:
    """Fetches robots.txt files and reports a :class:`FetchOutcome`."""

    def __init__(self, crawler: Crawler, policy: Policy, max_size: int) -> None:
        self.crawler = crawler
        self.policy = policy
        self.max_size = max_size
        self.stats = crawler.stats
        self._in_flight = 0

    def _bytes_received(self, data: bytes, request: Request, spider: Any = None) -> None:
        meta = request.meta
        if FETCH_META not in meta:
            return
        received = meta.get(_SIZE_META, 0) + len(data)
        meta[_SIZE_META] = received
        if received > self.max_size:
            raise StopDownload(fail=False)

    def _inc(self, key: str, count: int = 1) -> None:
        assert self.stats is not None
        self.stats.inc_value(f"robotstxt/{key}", count)

    def request_for(self, url: str, origin: Origin) -> Request:
        return Request(
            url,
            # Identity, because the size limit counts the bytes received and a cut
            # compressed stream cannot be decoded.
            headers={"Accept-Encoding": "identity"},
            priority=1000,
            dont_filter=True,
            callback=NO_CALLBACK,
            meta={
                FETCH_META: str(origin),
                "dont_obey_robotstxt": True,
                "dont_redirect": True,
                "dont_retry": True,
                "handle_httpstatus_all": True,
                "allow_offsite": True,
                # A body cut short by the server is a network error, not a file.
                "download_fail_on_dataloss": True,
            },
        )

    async def fetch(self, origin: Origin) -> FetchOutcome:
        engine = self.crawler.engine
        assert engine is not None
        url = origin.robots_url
        redirects: list[str] = []
        while True:
            request = self.request_for(url, origin)
            self._inc("request_count")
            # Listen to bytes_received only while a robots.txt is being fetched:
            # every chunk of every download would pay for the dispatch otherwise.
            if not self._in_flight:
                self.crawler.signals.connect(self._bytes_received, signal=signals.bytes_received)
            self._in_flight += 1
            try:
                response: Response = await engine.download_async(request)
            except IgnoreRequest as exc:
                # Another component refused the fetch (HTTPCACHE_IGNORE_MISSING, a
                # custom middleware): there is no file to obey.
                logger.warning("robots.txt request %s was ignored (%s): treating it as unavailable", url, exc,
                               extra={"spider": self.crawler.spider})
                return FetchOutcome(Access.UNAVAILABLE, url, redirects=tuple(redirects),
                                    error=f"ignored: {exc}", reason="request ignored")
            except Exception as exc:
                self._inc(f"exception_count/{type(exc)}")
                logger.info("robots.txt of %s unreachable: %s: %s", origin, type(exc).__name__, exc,
                            extra={"spider": self.crawler.spider})
                return FetchOutcome(Access.UNREACHABLE, url, redirects=tuple(redirects),
                                    error=f"{type(exc).__name__}: {exc}", reason="network error")
            finally:
                self._in_flight -= 1
                if not self._in_flight:
                    self.crawler.signals.disconnect(self._bytes_received, signal=signals.bytes_received)
            status = response.status
            self._inc("response_count")
            if "dataloss" in response.flags:
                self._inc(f"response_status_count/{status}")
                return FetchOutcome(Access.UNREACHABLE, url, status, redirects=tuple(redirects),
                                    error="incomplete body (data loss)", reason="truncated response")
            self._inc(f"response_status_count/{status}")
            kind = classify_status(status)
            max_age = max_age_of(response.headers.getlist(b"Cache-Control"), response.headers.get(b"Age"))
            if kind == "redirect":
                location = _header(response, b"Location")
                target = urljoin(response.url, location) if location else None
                reason = ""
                if not target or urlsplit(target).scheme not in ("http", "https"):
                    reason = "redirect without a usable Location"
                elif target == url or target in redirects or target == origin.robots_url:
                    reason = "redirect loop"
                elif len(redirects) >= self.policy.max_redirects:
                    reason = f"more than {self.policy.max_redirects} redirects"
                if reason:
                    self._inc("redirect_failed")
                    return FetchOutcome(Access.UNAVAILABLE, url, status, redirects=tuple(redirects), reason=reason)
                self._inc("redirect_count")
                redirects.append(target)  # type: ignore[arg-type]
                url = target  # type: ignore[assignment]
                continue
            if kind == "parse":
                if redirects and _is_html(response):
                    return FetchOutcome(Access.UNAVAILABLE, url, status, redirects=tuple(redirects),
                                        reason="redirected to an HTML page")
                body = response.body
                truncated = "download_stopped" in response.flags or len(body) > self.max_size
                if truncated:
                    self._inc("truncated")
                    body = body[: self.max_size]
                return FetchOutcome(Access.PARSED, url, status, body, max_age, tuple(redirects),
                                    truncated=truncated)
            if kind == "unavailable":
                return FetchOutcome(Access.UNAVAILABLE, url, status, max_age=max_age,
                                    redirects=tuple(redirects), reason=f"status {status}")
            return FetchOutcome(Access.UNREACHABLE, url, status, redirects=tuple(redirects),
                                reason=f"status {status}")


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None


def _is_html(response: Response) -> bool:
    content_type = (response.headers.get(b"Content-Type") or b"").lower()
    if any(content_type.startswith(t) for t in _HTML_TYPES):
        return True
    head = response.body[:512].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))
