"""Fetching one origin's robots.txt (RFC 9309, 2.3), or its tdmrep.json, through
Scrapy's engine.

The request goes through ``crawler.engine`` and so through every downloader
middleware (proxies, auth, headers, the HTTP cache), but this module applies the
RFC's redirect, status and size rules itself: Scrapy's redirect and retry
middlewares are told to leave it alone. A tdmrep.json follows the same rules (its
specification allows redirects; a missing file, a 4xx, means no reservation), and
its stats are counted under ``robotstxt/tdmrep/``.

A refetch of a file whose copy is held is conditional (RFC 9309, 2.4 lets a crawler
use HTTP caching; RFC 9111, 4.3.1): the request to the URL the copy came from carries
the copy's ``ETag`` as ``If-None-Match`` and its ``Last-Modified`` as
``If-Modified-Since`` (unless that date is later than the copy's fetch), and a
``304 Not Modified`` whose validators are the copy's renews it (an outcome with
``not_modified``). A 304 that names another copy, or to a request that sent no
validators, has no file to go with it: the origin is unreachable for now (retried on
the backoff, unconditionally), never "allow all".
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, StopDownload
from scrapy.http.request import NO_CALLBACK

from ..core.documents import ROBOTS_TXT, Document
from ..core.state import Access, Cause, FetchOutcome, Policy, Validators, classify_status, max_age_of, validator
from ..meta import FETCH_META
from ..meta import SIZE_META as _SIZE_META
from ..runtime import compat as _compat
from ..runtime.reporting import Reporting
from .content_coding import UnsupportedCoding, decode_body

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from ..core.origins import Origin

__all__ = ["CODING_HEADER", "FETCH_META", "RobotsFetcher"]

logger = logging.getLogger(__name__)

#: Where the response's Content-Encoding is moved, out of HttpCompressionMiddleware's sight.
CODING_HEADER = b"X-Robotstxt-Content-Encoding"
_HTML_TYPES = (b"text/html", b"application/xhtml+xml")
#: What may come before a document's first character: a UTF-8 byte order mark, white space.
_LEADING = b"\xef\xbb\xbf \t\r\n"
#: What an HTTP client accepts as a URL once Scrapy has escaped it (Twisted's check).
_URI_CHARS = re.compile(r"[\x21-\x7e]+").fullmatch
#: Distinct exceptions whose traceback is logged (beyond, each is logged at DEBUG).
_MAX_LOGGED_CAUSES = 100


class RobotsFetcher(Reporting):
    """Fetches robots.txt files and reports a :class:`FetchOutcome`."""

    def __init__(self, crawler: Crawler, policy: Policy, max_size: int,
                 route_seen: Callable[[Request], None] | None = None) -> None:
        self.crawler = crawler
        self.policy = policy
        self.max_size = max_size
        #: Told of each robots.txt request that reaches the downloader (every
        #: downloader middleware has seen it: its proxy, if any, is set).
        self.route_seen = route_seen
        self._in_flight = 0
        self._network_errors = _compat.network_errors(crawler.settings)
        self._no_host = _compat.no_host_errors()
        self._refused = _compat.refused_errors()
        self._cannot_request = _compat.cannot_request_errors()
        self._config_errors_logged: set[tuple[type, str]] = set()
        self._component_errors_logged: set[tuple[type, str]] = set()

    # -- size and content coding, through the download signals --------------------------------
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
        # its sight and undone here, bounded (content_coding).
        if FETCH_META in request.meta and b"Content-Encoding" in response.headers:
            response.headers[CODING_HEADER] = response.headers.getlist(b"Content-Encoding")
            del response.headers[b"Content-Encoding"]

    def _listen(self, on: bool) -> None:
        """Listen to the download signals only while a robots.txt is being fetched:
        every chunk of every download would pay for the dispatch otherwise."""
        handlers = ((self._reached_downloader, signals.request_reached_downloader),
                    (self._headers_received, signals.headers_received),
                    (self._bytes_received, signals.bytes_received),
                    (self._response_downloaded, signals.response_downloaded))
        for handler, signal in handlers:
            if on:
                self.crawler.signals.connect(handler, signal=signal)
            else:
                self.crawler.signals.disconnect(handler, signal=signal)

    def request_for(self, url: str, origin: Origin, validators: Validators | None = None) -> Request:
        headers = {"Accept-Encoding": "identity"}
        if validators is not None and validators.url == url:
            headers.update(validators.headers())
        return Request(
            url,
            # Identity, because the size limit counts the bytes received; a server
            # that compresses anyway is decoded with a bound (content_coding).
            headers=headers,
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
                # The size limit is applied by cutting the body (bytes_received): no
                # DOWNLOAD_MAXSIZE may cancel a large robots.txt. Set here too, because
                # some download handlers (aiohttp, httpx) read it before headers_received.
                "download_maxsize": 0,
            },
        )

    async def fetch(self, origin: Origin, document: Document = ROBOTS_TXT, *,
                    validators: Validators | None = None) -> FetchOutcome:
        """Fetch the origin's robots.txt (or another ``document``), following
        redirects; every way it can end is an outcome (an exception from a
        component of the crawl included). With ``validators`` (those of the copy
        held), the request is conditional."""
        outcome = await self._fetch(origin, document, validators)
        return outcome if document is ROBOTS_TXT else replace(outcome, document=document)

    async def _fetch(self, origin: Origin, document: Document, validators: Validators | None) -> FetchOutcome:
        url = document.url(origin)
        name, stat = document.name, document.stat
        redirects: list[str] = []
        while True:
            request = self.request_for(url, origin, validators)
            conditional = b"If-None-Match" in request.headers or b"If-Modified-Since" in request.headers
            self._inc(f"{stat}request_count")
            if not self._in_flight:
                self._listen(True)
            self._in_flight += 1
            # A robots.txt fetch does not take one of the CONCURRENT_REQUESTS places.
            widened = _compat.widen_concurrency(self.crawler.engine, 1)
            try:
                response: Response = await _compat.download(self.crawler, request)
            except IgnoreRequest as exc:
                # Another component refused the fetch (HTTPCACHE_IGNORE_MISSING, a
                # custom middleware): there is no file to obey.
                logger.warning("%s request %s was ignored (%s): treating it as unavailable", name, url, exc,
                               extra=self._log_extra)
                return FetchOutcome(Access.UNAVAILABLE, url, redirects=tuple(redirects),
                                    error=f"ignored: {exc}", reason="request ignored")
            except self._cannot_request as exc:
                return self._cannot_make(exc, url, origin, redirects, document)
            except self._network_errors as exc:
                self._inc(f"{stat}exception_count/{type(exc)}")
                cause = self._cause(exc)
                logger.debug("%s of %s: %s: %s", name, origin, type(exc).__name__, exc, extra=self._log_extra)
                return FetchOutcome(Access.UNREACHABLE, url, redirects=tuple(redirects),
                                    error=f"{type(exc).__name__}: {exc}", reason="network error", cause=cause)
            except Exception as exc:
                # Not the network: a downloader middleware or handler of the crawl raised.
                self._inc(f"{stat}exception_count/{type(exc)}")
                self._component_error(exc, url, name)
                return FetchOutcome(Access.UNREACHABLE, url, redirects=tuple(redirects),
                                    error=f"{type(exc).__name__}: {exc}", reason="error in the crawl's components")
            finally:
                if widened:
                    _compat.widen_concurrency(self.crawler.engine, -1)
                self._in_flight -= 1
                if not self._in_flight:
                    self._listen(False)
            status = response.status
            self._inc(f"{stat}response_count")
            self._inc(f"{stat}response_status_count/{status}")
            if "dataloss" in response.flags:
                return FetchOutcome(Access.UNREACHABLE, url, status, redirects=tuple(redirects),
                                    error="incomplete body (data loss)", reason="truncated response")
            kind = classify_status(status)
            max_age = max_age_of(response.headers.getlist(b"Cache-Control"), response.headers.get(b"Age"))
            if status == 304:
                return self._not_modified(response, url, redirects, max_age, validators if conditional else None,
                                          document)
            if kind == "redirect":
                target, reason = self._redirect_target(response, url, document.url(origin), origin, redirects)
                if target is None:
                    self._inc(f"{stat}redirect_failed")
                    return FetchOutcome(Access.UNAVAILABLE, url, status, redirects=tuple(redirects), reason=reason)
                self._inc(f"{stat}redirect_count")
                redirects.append(target)
                url = target
                continue
            if kind == "parse":
                return self._parsed(response, url, status, max_age, redirects, document)
            if kind == "unavailable":
                return FetchOutcome(Access.UNAVAILABLE, url, status, max_age=max_age,
                                    redirects=tuple(redirects), reason=f"status {status}",
                                    headers=_header_lines(response))
            return FetchOutcome(Access.UNREACHABLE, url, status, redirects=tuple(redirects),
                                reason=f"status {status}")

    def _cause(self, exc: BaseException) -> Cause:
        if isinstance(exc, self._no_host):
            return Cause.NO_HOST
        if isinstance(exc, self._refused):
            return Cause.REFUSED
        return Cause.TRANSIENT

    def _cannot_make(self, exc: BaseException, url: str, origin: Origin, redirects: list[str],
                     document: Document) -> FetchOutcome:
        """The outcome of a robots.txt request Scrapy cannot make at all. A redirect
        to such a URL leads to no usable file (unavailable: allow all, as Google
        treats one); the origin's own URL means the crawl cannot download this
        origin with its settings: logged once per cause, naming the fix."""
        name, stat = document.name, document.stat
        self._inc(f"{stat}exception_count/{type(exc)}")
        error = f"{type(exc).__name__}: {exc}"
        if redirects:
            # A Location the site got wrong is the site's business; a scheme the crawl cannot download is not.
            if not isinstance(exc, ValueError):
                self._config_error(exc, url, error, urlsplit(url).scheme, f"the redirected {name} is unavailable")
            self._inc(f"{stat}redirect_failed")
            logger.debug("%s of %s: redirect to %s, which Scrapy cannot request (%s): unavailable", name, origin,
                         url, error, extra=self._log_extra)
            return FetchOutcome(Access.UNAVAILABLE, url, redirects=tuple(redirects), error=error,
                                reason="redirect to a URL Scrapy cannot request")
        self._config_error(exc, url, error, origin.scheme,
                           "requests of the origins this affects are dropped (robotstxt/dropped_cannot_request) "
                           f"and their {name} is not fetched again in this crawl")
        return FetchOutcome(Access.UNREACHABLE, url, error=error, reason="Scrapy cannot make the request",
                            cause=Cause.CANNOT_REQUEST)

    def _config_error(self, exc: BaseException, url: str, error: str, scheme: str, consequence: str) -> None:
        cause = (type(exc), str(exc))
        if cause in self._config_errors_logged:
            return
        if len(self._config_errors_logged) < _MAX_LOGGED_CAUSES:
            self._config_errors_logged.add(cause)
        logger.error("Scrapy cannot request %s: %s. %s This is logged once; %s.", url, error,
                     _fix_for(exc, scheme), consequence, extra=self._log_extra)

    def _component_error(self, exc: BaseException, url: str, name: str) -> None:
        """Log a downloader middleware's or handler's exception: its traceback once
        per kind and message, a line at DEBUG after that (it is retried on the
        backoff)."""
        cause = (type(exc), str(exc))
        if cause in self._component_errors_logged:
            logger.debug("%s request %s failed again: %s: %s", name, url, type(exc).__name__, exc,
                         extra=self._log_extra)
            return
        if len(self._component_errors_logged) < _MAX_LOGGED_CAUSES:
            self._component_errors_logged.add(cause)
        logger.error("%s request %s failed in a downloader middleware or handler: %s: %s; counted as a "
                     "failed fetch, retried later (logged once)", name, url, type(exc).__name__, exc, exc_info=exc,
                     extra=self._log_extra)

    def _redirect_target(self, response: Response, url: str, start: str, origin: Origin,
                         redirects: list[str]) -> tuple[str | None, str]:
        """The URL a redirect leads to, or None and why it is not followed. A
        ``Location`` that is no usable http(s) URL makes the file unavailable, as
        Google treats it."""
        location = _header(response, b"Location")
        if not location:
            return None, "redirect without a Location"
        try:
            target = urljoin(response.url, location.strip())
            parts = urlsplit(target)
            parts.port  # noqa: B018 (raises ValueError for a port out of range)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError("not an absolute http(s) URL")
            if not _URI_CHARS(self.request_for(target, origin).url):
                raise ValueError("a URL Scrapy's HTTP clients refuse (a space or a control character)")
        except ValueError as exc:
            return None, f"redirect to an unusable Location {location[:200]!r} ({exc})"
        if target == url or target in redirects or target == start:
            return None, "redirect loop"
        if len(redirects) >= self.policy.max_redirects:
            return None, f"more than {self.policy.max_redirects} redirects"
        return target, ""

    def _parsed(self, response: Response, url: str, status: int, max_age: float | None,
                redirects: list[str], document: Document) -> FetchOutcome:
        stat = document.stat
        if redirects and not document.html_is_no_file and _is_html(response):
            return FetchOutcome(Access.UNAVAILABLE, url, status, redirects=tuple(redirects),
                                reason="redirected to an HTML page")
        body = response.body
        truncated = "download_stopped" in response.flags or len(body) > self.max_size
        codings = [value.decode("latin-1") for value in response.headers.getlist(CODING_HEADER)]
        codings += [value.decode("latin-1") for value in response.headers.getlist(b"Content-Encoding")]
        codings = [part for value in codings for part in value.split(",")]
        if codings:
            try:
                body, cut = decode_body(body, codings, self.max_size)
            except UnsupportedCoding as exc:
                return FetchOutcome(Access.UNREACHABLE, url, status, redirects=tuple(redirects), error=str(exc),
                                    reason="undecodable body")
            truncated = truncated or cut
        if document.html_is_no_file and body.lstrip(_LEADING).startswith(b"<"):
            # Markup, whatever its Content-Type says (a JSON file served as text/html is read).
            return FetchOutcome(Access.UNAVAILABLE, url, status, redirects=tuple(redirects),
                                reason="redirected to an HTML page" if redirects else "an HTML page")
        if truncated:
            self._inc(f"{stat}truncated")
            body = body[: self.max_size]
        return FetchOutcome(Access.PARSED, url, status, body, max_age, tuple(redirects), truncated=truncated,
                            headers=_header_lines(response),
                            etag=validator("etag", response.headers.get(b"ETag")),
                            last_modified=validator("last-modified", response.headers.get(b"Last-Modified")))

    def _not_modified(self, response: Response, url: str, redirects: list[str], max_age: float | None,
                      validators: Validators | None, document: Document) -> FetchOutcome:
        """The outcome of a ``304 Not Modified``. To a conditional request, when its
        validators are the copy's (:meth:`Validators.selected_by`, RFC 9111, 4.3.4),
        the copy held is renewed: its freshness from the 304's ``Cache-Control``
        (the 304's header fields replace the stored ones; without a lifetime there,
        the copy's own), its validators its own. A 304 whose validators are another
        copy's, or to a request without validators (a cache in between answered it,
        or the server is wrong), renews nothing and brings no file: unreachable,
        retried on the backoff without validators (access.py)."""
        stat = document.stat
        if validators is None:
            self._inc(f"{stat}not_modified_unrequested")
            return FetchOutcome(Access.UNREACHABLE, url, 304, redirects=tuple(redirects),
                                reason="304 Not Modified to a request without validators")
        headers = response.headers
        etag, last_modified = headers.get(b"ETag"), headers.get(b"Last-Modified")
        if not validators.selected_by(etag, last_modified):
            self._inc(f"{stat}not_modified_unmatched")
            sent = ", ".join(f"{name} {value}" for name, value in validators.headers().items())
            got = ", ".join(f"{name} {value.decode('latin-1')[:100]!r}" for name, value in
                            (("ETag", etag), ("Last-Modified", last_modified)) if value is not None) or "no validators"
            return FetchOutcome(Access.UNREACHABLE, url, 304, redirects=tuple(redirects),
                                reason=f"304 Not Modified with {got}, not the copy's ({sent})")
        self._inc(f"{stat}revalidated")
        self._inc(f"{stat}revalidated_bytes", validators.size)
        return FetchOutcome(Access.PARSED, url, 304, max_age=max_age, redirects=tuple(redirects), not_modified=True)


def _header_lines(response: Response) -> tuple[tuple[bytes, bytes], ...]:
    """The response's header lines, as received (the Content-Encoding this module moved
    out of HttpCompressionMiddleware's sight under its own name again)."""
    lines: list[tuple[bytes, bytes]] = []
    for name, values in response.headers.items():
        name = b"Content-Encoding" if name.lower() == CODING_HEADER.lower() else bytes(name)
        lines.extend((name, bytes(value)) for value in values)
    return tuple(lines)


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None


def _is_html(response: Response) -> bool:
    content_type = (response.headers.get(b"Content-Type") or b"").lower()
    if any(content_type.startswith(t) for t in _HTML_TYPES):
        return True
    head = response.body[:512].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))


def _fix_for(exc: BaseException, scheme: str) -> str:
    """What to change so that Scrapy can make the request ``exc`` refused."""
    if isinstance(exc, ValueError):
        return ("Its URL, or what a downloader middleware made of it (a proxy, a rewritten URL), is one Scrapy's "
                "HTTP client refuses.")
    return (f"Check the download handler for {scheme!r} URLs (DOWNLOAD_HANDLERS[{scheme!r}]) and install what it "
            "needs; Scrapy logs why it could not load it when the crawl starts.")
