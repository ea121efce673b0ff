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
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http.request import NO_CALLBACK

from ..core.documents import ROBOTS_TXT, Document
from ..core.http_cache import Validators, classify_status, max_age_of, validator
from ..core.state import Access, Cause, FetchOutcome, Policy
from ..meta import FETCH_META
from ..runtime import compat as _compat
from ..runtime.reporting import Reporting
from .content_coding import UnsupportedCoding, decode_body
from .fetch_errors import FetchErrors, words
from .fetch_progress import CODING_HEADER, FetchProgress

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from ..core.origins import Origin

__all__ = ["CODING_HEADER", "FETCH_META", "RobotsFetcher"]

logger = logging.getLogger(__name__)

_HTML_TYPES = (b"text/html", b"application/xhtml+xml")
#: What may come before a document's first character: a UTF-8 byte order mark, white space.
_LEADING = b"\xef\xbb\xbf \t\r\n"
#: What an HTTP client accepts as a URL once Scrapy has escaped it (Twisted's check).
_URI_CHARS = re.compile(r"[\x21-\x7e]+").fullmatch


class Outcome:
    """The :class:`FetchOutcome` of one fetch of ``document``, made as the fetch goes: ``url`` is
    the URL requested last (it moves with each redirect followed, listed in ``redirects``), and
    every way the fetch ends is one of the methods below."""

    __slots__ = ("document", "redirects", "url")

    def __init__(self, url: str, document: Document) -> None:
        self.url = url
        self.document = document
        self.redirects: list[str] = []

    def follow(self, target: str) -> None:
        self.redirects.append(target)
        self.url = target

    def _of(self, access: Access, status: int | None, **fields: Any) -> FetchOutcome:
        return FetchOutcome(access, self.url, status, redirects=tuple(self.redirects), document=self.document,
                            **fields)

    def parsed(self, status: int, body: bytes, max_age: float | None, truncated: bool, response: Response
               ) -> FetchOutcome:
        headers = response.headers
        return self._of(Access.PARSED, status, body=body, max_age=max_age, truncated=truncated,
                        headers=_header_lines(response), etag=validator("etag", headers.get(b"ETag")),
                        last_modified=validator("last-modified", headers.get(b"Last-Modified")))

    def not_modified(self, max_age: float | None) -> FetchOutcome:
        """The copy held renewed by a ``304 Not Modified``."""
        return self._of(Access.PARSED, 304, max_age=max_age, not_modified=True)

    def unavailable(self, reason: str, status: int | None = None, **fields: Any) -> FetchOutcome:
        return self._of(Access.UNAVAILABLE, status, reason=reason, **fields)

    def unreachable(self, reason: str, status: int | None = None, **fields: Any) -> FetchOutcome:
        return self._of(Access.UNREACHABLE, status, reason=reason, **fields)

    def error(self, exc: BaseException) -> FetchOutcome:
        """A fetch that ended with an exception nothing expected: counted as a failed fetch."""
        return self.unreachable("unexpected error", error=words(exc))


class RobotsFetcher(Reporting):
    """Fetches robots.txt files and reports a :class:`FetchOutcome`."""

    def __init__(self, crawler: Crawler, policy: Policy, max_size: int,
                 route_seen: Callable[[Request], None] | None = None) -> None:
        self.crawler = crawler
        self.policy = policy
        self.max_size = max_size
        self.progress = FetchProgress(crawler, max_size, route_seen)
        self.errors = FetchErrors(crawler)

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
        outcome = Outcome(document.url(origin), document)
        name, stat = document.name, document.stat
        errors = self.errors
        while True:
            url = outcome.url
            request = self.request_for(url, origin, validators)
            conditional = b"If-None-Match" in request.headers or b"If-Modified-Since" in request.headers
            self._inc(f"{stat}request_count")
            self.progress.started()
            # A robots.txt fetch does not take one of the CONCURRENT_REQUESTS places.
            widened = _compat.widen_concurrency(self.crawler.engine, 1)
            try:
                response: Response = await _compat.download(self.crawler, request)
            except IgnoreRequest as exc:
                # Another component refused the fetch (HTTPCACHE_IGNORE_MISSING, a
                # custom middleware): there is no file to obey.
                logger.warning("%s request %s was ignored (%s): treating it as unavailable", name, url, exc,
                               extra=self._log_extra)
                return outcome.unavailable("request ignored", error=f"ignored: {exc}")
            except errors.cannot_request as exc:
                errors.cannot_make(exc, url, origin, document, redirected=bool(outcome.redirects))
                if outcome.redirects:
                    # A redirect to such a URL leads to no usable file: unavailable (allow all, as Google
                    # treats one); the origin's own URL means the crawl cannot download this origin with its
                    # settings.
                    return outcome.unavailable("redirect to a URL Scrapy cannot request", error=words(exc))
                return outcome.unreachable("Scrapy cannot make the request", error=words(exc),
                                           cause=Cause.CANNOT_REQUEST)
            except errors.network as exc:
                errors.network_error(exc, origin, document)
                return outcome.unreachable("network error", error=words(exc), cause=errors.cause(exc))
            except Exception as exc:
                # Not the network: a downloader middleware or handler of the crawl raised.
                errors.component_error(exc, url, document)
                return outcome.unreachable("error in the crawl's components", error=words(exc))
            finally:
                if widened:
                    _compat.widen_concurrency(self.crawler.engine, -1)
                self.progress.ended()
            status = response.status
            self._inc(f"{stat}response_count")
            self._inc(f"{stat}response_status_count/{status}")
            if "dataloss" in response.flags:
                return outcome.unreachable("truncated response", status, error="incomplete body (data loss)")
            kind = classify_status(status)
            max_age = max_age_of(response.headers.getlist(b"Cache-Control"), response.headers.get(b"Age"))
            if status == 304:
                return self._not_modified(outcome, response, max_age, validators if conditional else None)
            if kind == "redirect":
                target, reason = self._redirect_target(response, url, document.url(origin), origin,
                                                       outcome.redirects)
                if target is None:
                    self._inc(f"{stat}redirect_failed")
                    return outcome.unavailable(reason, status)
                self._inc(f"{stat}redirect_count")
                outcome.follow(target)
                continue
            if kind == "parse":
                return self._parsed(outcome, response, status, max_age)
            if kind == "unavailable":
                return outcome.unavailable(f"status {status}", status, max_age=max_age,
                                           headers=_header_lines(response))
            return outcome.unreachable(f"status {status}", status)

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

    def _parsed(self, outcome: Outcome, response: Response, status: int, max_age: float | None
                ) -> FetchOutcome:
        document = outcome.document
        if outcome.redirects and not document.html_is_no_file and _is_html(response):
            return outcome.unavailable("redirected to an HTML page", status)
        body = response.body
        truncated = "download_stopped" in response.flags or len(body) > self.max_size
        codings = [value.decode("latin-1") for value in response.headers.getlist(CODING_HEADER)]
        codings += [value.decode("latin-1") for value in response.headers.getlist(b"Content-Encoding")]
        codings = [part for value in codings for part in value.split(",")]
        if codings:
            try:
                body, cut = decode_body(body, codings, self.max_size)
            except UnsupportedCoding as exc:
                return outcome.unreachable("undecodable body", status, error=str(exc))
            truncated = truncated or cut
        if document.html_is_no_file and body.lstrip(_LEADING).startswith(b"<"):
            # Markup, whatever its Content-Type says (a JSON file served as text/html is read).
            return outcome.unavailable("redirected to an HTML page" if outcome.redirects else "an HTML page", status)
        if truncated:
            self._inc(f"{document.stat}truncated")
            body = body[: self.max_size]
        return outcome.parsed(status, body, max_age, truncated, response)

    def _not_modified(self, outcome: Outcome, response: Response, max_age: float | None,
                      validators: Validators | None) -> FetchOutcome:
        """The outcome of a ``304 Not Modified``. To a conditional request, when its
        validators are the copy's (:meth:`Validators.selected_by`, RFC 9111, 4.3.4),
        the copy held is renewed: its freshness from the 304's ``Cache-Control``
        (the 304's header fields replace the stored ones; without a lifetime there,
        the copy's own), its validators its own. A 304 whose validators are another
        copy's, or to a request without validators (a cache in between answered it,
        or the server is wrong), renews nothing and brings no file: unreachable,
        retried on the backoff without validators (access.py)."""
        stat = outcome.document.stat
        if validators is None:
            self._inc(f"{stat}not_modified_unrequested")
            return outcome.unreachable("304 Not Modified to a request without validators", 304)
        headers = response.headers
        etag, last_modified = headers.get(b"ETag"), headers.get(b"Last-Modified")
        if not validators.selected_by(etag, last_modified):
            self._inc(f"{stat}not_modified_unmatched")
            sent = ", ".join(f"{name} {value}" for name, value in validators.headers().items())
            got = ", ".join(f"{name} {value.decode('latin-1')[:100]!r}" for name, value in
                            (("ETag", etag), ("Last-Modified", last_modified)) if value is not None) or "no validators"
            return outcome.unreachable(f"304 Not Modified with {got}, not the copy's ({sent})", 304)
        self._inc(f"{stat}revalidated")
        self._inc(f"{stat}revalidated_bytes", validators.size)
        return outcome.not_modified(max_age)


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
