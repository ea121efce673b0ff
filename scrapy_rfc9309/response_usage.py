"""The usage preferences of a downloaded response, for the middleware: takes the
header values and (when ``ROBOTSTXT_USAGE_META`` is on) the head of an HTML body out of
the Scrapy response, has the pure modules read them (:mod:`scrapy_rfc9309.sources`,
:mod:`scrapy_rfc9309.html_head`) and combine them with the robots.txt and tdmrep.json
preferences of its request (:mod:`scrapy_rfc9309.preferences`); counts and logs what
could not be read."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from w3lib.encoding import http_content_type_encoding

from .html_head import read_head_meta
from .preferences import Preferences, Statement, build
from .reporting import Reporting
from .sources import (
    Malformed,
    content_usage,
    robots_directives,
    robots_tags,
    robotstxt_statements,
    tdm_statement,
    tdmrep_statement,
)

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from .config import Config

__all__ = ["PREFERENCES_META", "TDMREP_META", "ResponseUsage"]

logger = logging.getLogger(__name__)

#: Request (and so response) meta key set to the response's :class:`~scrapy_rfc9309.preferences.Preferences`.
PREFERENCES_META = "robotstxt_preferences"
#: Request meta key the tdmrep.json part sets to the entry that applies to the URL (or None).
TDMREP_META = "robotstxt_tdmrep"
_EMPTY: list[bytes] = []


def _texts(values: list[bytes]) -> list[str]:
    return [v.decode("latin-1") for v in values]


class ResponseUsage(Reporting):
    """Reads the usage preferences of responses, as ``config`` says."""

    def __init__(self, crawler: Crawler, config: Config) -> None:
        self.crawler = crawler
        self.headers = config.usage_headers
        self.meta = config.usage_meta
        self.max_bytes = config.usage_meta_max_bytes
        self._malformed_logged: set[str] = set()

    def read(self, request: Request, response: Response, token: str, robots_url: str) -> Preferences | None:
        """The preferences of ``response`` to ``request`` for product ``token``, or None
        when no source states any."""
        statements: list[Statement] = []
        malformed: list[str] = []
        robots = request.meta.get("robotstxt_usage")
        if robots:
            statements.extend(robotstxt_statements(robots, robots_url))
        match = request.meta.get(TDMREP_META)
        if match is not None and getattr(match, "reserved", None) is not None:
            statements.append(tdmrep_statement(match))
        if self.headers:
            self._read_headers(response, token, statements, malformed)
        if self.meta and b"html" in (response.headers.get(b"Content-Type") or b"").lower():
            self._read_meta(response, token, statements, malformed)
        if not statements and not malformed:
            return None
        return build(statements, malformed)

    def _read_headers(self, response: Response, token: str, statements: list[Statement],
                      malformed: list[str]) -> None:
        headers = response.headers
        if not (b"Content-Usage" in headers or b"X-Robots-Tag" in headers or b"tdm-reservation" in headers
                or b"tdm-policy" in headers):
            return  # the common case: none of them, four dictionary look-ups
        getlist = headers.getlist
        self._add(lambda: content_usage(getlist(b"Content-Usage")), "Content-Usage header", response,
                  statements, malformed)
        self._add(lambda: tdm_statement(_texts(getlist(b"tdm-reservation")), _texts(getlist(b"tdm-policy")),
                                        meta=False), "tdm-reservation header", response, statements, malformed)
        tags = getlist(b"X-Robots-Tag")
        if tags:
            texts = _texts(tags)
            image = (headers.get(b"Content-Type") or b"").lower().startswith(b"image/")
            found = robots_tags(robots_directives(texts, token, scoped=True), "X-Robots-Tag header", "; ".join(texts),
                                image)
            if found is not None:
                statements.append(found)

    def _read_meta(self, response: Response, token: str, statements: list[Statement],
                   malformed: list[str]) -> None:
        def wanted(name: str) -> bool:
            return name in ("robots", "tdm-reservation", "tdm-policy") or (bool(token) and name == token)

        content_type = response.headers.get(b"Content-Type")
        encoding = http_content_type_encoding(content_type.decode("latin-1")) if content_type else None
        head = read_head_meta(response.body, encoding, self.max_bytes, wanted)
        if not head.complete:
            self._inc("usage_meta_cut")
            logger.debug("Read the meta tags of the first %d bytes of %s only (ROBOTSTXT_USAGE_META_MAX_BYTES): "
                         "its head goes on", self.max_bytes, response, extra=self._log_extra)
        if not head.tags:
            return
        self._add(lambda: tdm_statement(head.contents("tdm-reservation"), head.contents("tdm-policy"), meta=True),
                  '<meta name="tdm-reservation">', response, statements, malformed)
        generic = head.contents("robots")
        scoped = head.contents(token) if token and token != "robots" else []
        names = ([] if not generic else ['<meta name="robots">']) + ([] if not scoped else [f'<meta name="{token}">'])
        robots = generic + scoped
        found = robots_tags(robots_directives(robots, token, scoped=False), ", ".join(names), "; ".join(robots),
                            False)
        if found is not None:
            statements.append(found)

    def _add(self, read: Callable[[], Statement | None], what: str, response: Response, statements: list[Statement],
             malformed: list[str]) -> None:
        try:
            statement = read()
        except Malformed as error:
            message = f"{what} of {response.url} ignored: {error}"
            malformed.append(message)
            self._inc("usage_malformed")
            first = what not in self._malformed_logged
            self._malformed_logged.add(what)
            logger.log(logging.WARNING if first else logging.DEBUG, "Usage preference: %s%s", message,
                       " (further ones are logged at DEBUG level)" if first else "", extra=self._log_extra)
            return
        if statement is not None:
            statements.append(statement)
