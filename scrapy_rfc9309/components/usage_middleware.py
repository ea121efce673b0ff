"""``scrapy_rfc9309.UsageMiddleware``: the usage preferences of each downloaded
response. It takes the header values and (when ``ROBOTSTXT_USAGE_META`` is on) the
head of an HTML body out of the Scrapy response, has the pure modules read them
(:mod:`scrapy_rfc9309.usage.response_sources`, :mod:`scrapy_rfc9309.usage.html_head`) and combine them
with the robots.txt and tdmrep.json preferences of its request
(:mod:`scrapy_rfc9309.usage.preferences`), puts the answer in the response's meta, and
drops a response whose preferences deny a category of ``ROBOTSTXT_USAGE_DENY``;
counts and logs what could not be read."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured
from scrapy.http.headers import Headers
from w3lib.encoding import http_content_type_encoding

from .. import signals as rfc_signals
from ..config import Config
from ..core.caches import BoundedDict
from ..core.origins import OriginOf
from ..exceptions import RobotsTxtUsageDeniedByResponse
from ..meta import FETCH_META, KEEPER_META, PREFERENCES_META, TDMREP_META, USAGE_META
from ..runtime import compat as _compat
from ..runtime.compat import header_values
from ..runtime.reporting import Reporting
from ..usage.html_head import HeadMeta, read_head_meta
from ..usage.preferences import Preferences, Statement, TdmRepMatch, build
from ..usage.response_sources import (
    MAX_FIELD_BYTES,
    Malformed,
    content_usage,
    robots_directives,
    robots_tags,
    robotstxt_malformed,
    robotstxt_statements,
    tdm_statement,
    tdmrep_statement,
)
from .wiring import VerdictParts

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from ..config import Config
    from ..core.usage_rules import UsagePreference

__all__ = ["PREFERENCES_META", "TDMREP_META", "ResponseUsage", "UsageMiddleware"]

logger = logging.getLogger(__name__)

#: The response headers read, in the order :meth:`ResponseUsage._fields` gives them, then Content-Type.
_FIELDS = (b"Content-Usage", b"tdm-reservation", b"tdm-policy", b"X-Robots-Tag", b"Content-Type")
#: The request meta keys with which a response is not read at once or at all (see ``UsageMiddleware``).
_READ_META = frozenset({FETCH_META, KEEPER_META, "dont_obey_robotstxt", USAGE_META, TDMREP_META})
#: The meta names read (and the crawler's product token).
_META_NAMES = frozenset({"robots", "tdm-reservation", "tdm-policy"})
#: Answers remembered at most (then forgotten all at once, as a crawl moves on to other sites).
_MAX_ANSWERS = 1024
#: Bytes of header values and meta tags the remembered answers are keyed by, at most (then
#: forgotten all at once); an answer keyed by more than _MAX_REMEMBERED_BYTES (a response
#: with pathological headers or meta tags) is computed and not remembered.
_MAX_ANSWER_BYTES = 1 << 20
_MAX_REMEMBERED_BYTES = 4096
#: A Content-Type longer than this is read each time, not remembered.
_MAX_KIND_BYTES = 256


def _last(values: list[bytes]) -> bytes | None:
    """The last of a header's values (what ``Headers.get`` gives), or None."""
    return values[-1] if values else None


def _texts(values: Sequence[bytes]) -> list[str]:
    return [v.decode("latin-1") for v in values]


class ResponseUsage(Reporting):
    """Reads the usage preferences of responses, as ``config`` says."""

    def __init__(self, crawler: Crawler, config: Config) -> None:
        self.crawler = crawler
        self.headers = config.usage_headers
        self.meta = config.usage_meta
        self.max_bytes = config.usage_meta_max_bytes
        self._malformed_logged: set[str] = set()
        # The answer per combination of inputs: a site sends the same few header values, and the same
        # robots.txt record applies to many URLs, so most responses are answered by one look-up.
        self._answers: BoundedDict[tuple[Any, ...], tuple[Preferences, tuple[tuple[str, str], ...]]] = BoundedDict(
            _MAX_ANSWERS, max_bytes=_MAX_ANSWER_BYTES, size=_answer_size)
        #: Per Content-Type value: whether it is HTML's, and its encoding.
        self._kinds: BoundedDict[bytes, tuple[bool, str | None]] = BoundedDict(_MAX_ANSWERS)
        #: The names of _FIELDS as each headers class stores them, and the set of the usage ones
        #: (Scrapy's ``Headers`` known from the start: see ``UsageMiddleware.process_response``).
        self.keys: dict[type, tuple[tuple[Any, ...], frozenset[Any]]] = {}
        keys = tuple(Headers().normkey(name) for name in _FIELDS)
        self.keys[Headers] = (keys, frozenset(keys[:4]))
        #: The meta names read, per product token.
        self._names: BoundedDict[str, frozenset[str]] = BoundedDict(_MAX_ANSWERS)

    def read(self, request: Request, response: Response, token: str | Callable[[], str],
             robots_url: str | Callable[[], str]) -> Preferences | None:
        """The preferences of ``response`` to ``request`` for product ``token``, or None
        when no source states any. The same inputs give the same (immutable) object.
        ``token`` and ``robots_url`` may be given as functions, asked only for a
        response about which some source states something."""
        robots = request.meta.get(USAGE_META) or None  # set when the request was judged
        match = request.meta.get(TDMREP_META)
        if match is not None and getattr(match, "reserved", None) is None:
            match = None
        headers = response.headers
        known = self.keys.get(type(headers))
        if known is None:  # the header names as the class stores them (Headers title-cases them)
            keys = tuple(headers.normkey(name) for name in _FIELDS)
            known = self.keys[type(headers)] = (keys, frozenset(keys[:4]))
        keys, usage_keys = known
        content_type = _last(header_values(headers, keys[4])) if self.meta else None
        fields = None
        if self.headers and not usage_keys.isdisjoint(headers):  # most responses have none
            fields = self._fields(headers, keys, content_type)
        head = None
        if content_type:
            kind = self._kinds.get(content_type)
            if kind is None:
                kind = self._kind(content_type)
            if kind[0]:
                if callable(token):
                    token = token()
                head = self._head(response, kind[1], token)
        if robots is None and match is None and fields is None and head is None:
            return None
        if callable(token):
            token = token()
        if callable(robots_url):
            robots_url = robots_url()
        size = _size(fields, head)
        key = (robots_url, token, _robots_key(robots), _match_key(match), fields, head)
        answer = self._answers.get(key) if size <= _MAX_REMEMBERED_BYTES else None
        if answer is None:
            answer = self._answer(robots, robots_url, match, fields, head, token)
            if size <= _MAX_REMEMBERED_BYTES:
                self._answers[key] = answer
        preferences, malformed = answer
        for what, error in malformed:
            self._log_malformed(what, error, response)
        return preferences if preferences.statements or preferences.malformed else None

    def _kind(self, content_type: bytes) -> tuple[bool, str | None]:
        """Whether a ``Content-Type`` value is HTML's, and the encoding it names (remembered)."""
        html = b"html" in content_type.lower()
        kind = (html, http_content_type_encoding(content_type.decode("latin-1")) if html else None)
        if len(content_type) <= _MAX_KIND_BYTES:
            self._kinds[content_type] = kind
        return kind

    @staticmethod
    def _fields(headers: Headers, keys: tuple[Any, ...], content_type: bytes | None) -> tuple[Any, ...] | None:
        """The usage header lines of ``headers`` (and whether they are an image's), or None without any;
        ``keys``: the names of :data:`_FIELDS` as the class stores them; ``content_type``: their
        Content-Type, when already looked up."""
        found = tuple(tuple(header_values(headers, key)) for key in keys[:4])
        if not any(found):
            return None
        if found[3] and content_type is None:
            content_type = _last(header_values(headers, keys[4]))
        image = bool(found[3]) and (content_type or b"").lower().startswith(b"image/")
        return (*found, image)

    def _head(self, response: Response, encoding: str | None, token: str) -> tuple[tuple[str, str], ...] | None:
        """The meta tags of the head of an HTML ``response`` that may state a preference, or None."""
        names = self._names.get(token)
        if names is None:
            names = self._names[token] = _META_NAMES | {token} if token else _META_NAMES
        head = read_head_meta(response.body, encoding, self.max_bytes, names)
        if not head.complete:
            self._inc("usage_meta_cut")
            logger.debug("Read the meta tags of the first %d bytes of %s only (ROBOTSTXT_USAGE_META_MAX_BYTES): "
                         "its head goes on", self.max_bytes, response, extra=self._log_extra)
        return head.tags or None

    def _answer(self, robots: UsagePreference | None, robots_url: str, match: TdmRepMatch | None,
                fields: tuple[Any, ...] | None, head: tuple[tuple[str, str], ...] | None,
                token: str) -> tuple[Preferences, tuple[tuple[str, str], ...]]:
        statements: list[Statement] = []
        malformed: list[tuple[str, str]] = []
        if robots is not None:
            statements.extend(robotstxt_statements(robots, robots_url))
            malformed.extend(robotstxt_malformed(robots, robots_url))
        if match is not None:
            statements.append(tdmrep_statement(match))
        if fields is not None:
            usage, reservation, policy, tags, image = fields
            self._add(lambda: content_usage(usage), "Content-Usage header", statements, malformed)
            self._add(lambda: tdm_statement(_texts(reservation), _texts(policy), meta=False),
                      "tdm-reservation header", statements, malformed)
            if tags:
                texts = _texts(tags)
                self._add(lambda: robots_tags(robots_directives(_bounded(texts), token, scoped=True),
                                              "X-Robots-Tag header", "; ".join(texts), image),
                          "X-Robots-Tag header", statements, malformed)
        if head is not None:
            self._read_meta(HeadMeta(head, True), token, statements, malformed)
        return build(statements, [f"{what} ignored: {error}" for what, error in malformed]), tuple(malformed)

    def _read_meta(self, head: HeadMeta, token: str, statements: list[Statement],
                   malformed: list[tuple[str, str]]) -> None:
        self._add(lambda: tdm_statement(head.contents("tdm-reservation"), head.contents("tdm-policy"), meta=True),
                  '<meta name="tdm-reservation">', statements, malformed)
        generic = head.contents("robots")
        scoped = head.contents(token) if token and token != "robots" else []
        names = ([] if not generic else ['<meta name="robots">']) + ([] if not scoped else [f'<meta name="{token}">'])
        robots = generic + scoped
        if robots:
            self._add(lambda: robots_tags(robots_directives(_bounded(robots), token, scoped=False), ", ".join(names),
                                          "; ".join(robots), False),
                      ", ".join(names), statements, malformed)

    @staticmethod
    def _add(read: Callable[[], Statement | None], what: str, statements: list[Statement],
             malformed: list[tuple[str, str]]) -> None:
        try:
            statement = read()
        except Malformed as error:
            malformed.append((what, str(error)))
            return
        if statement is not None:
            statements.append(statement)

    def _log_malformed(self, what: str, error: str, response: Response) -> None:
        self._inc("usage_malformed")
        first = what not in self._malformed_logged
        self._malformed_logged.add(what)
        logger.log(logging.WARNING if first else logging.DEBUG, "Usage preference: %s of %s ignored: %s%s", what,
                   response.url, error, " (further ones are logged at DEBUG level)" if first else "",
                   extra=self._log_extra)


def _bounded(values: list[str]) -> list[str]:
    """``values`` (the lines of a header, or the contents of meta tags), unless together they are
    longer than :data:`~scrapy_rfc9309.usage.response_sources.MAX_FIELD_BYTES`, as a ``Content-Usage`` may not be."""
    size = sum(len(value) for value in values)
    if size > MAX_FIELD_BYTES:
        raise Malformed(f"longer than {MAX_FIELD_BYTES} bytes ({size})")
    return values


def _answer_size(key: tuple[Any, ...], value: object) -> int:
    """The bytes an answer's key holds: its header values and meta tags (see :func:`_size`)."""
    return _size(key[4], key[5])


def _size(fields: tuple[Any, ...] | None, head: tuple[tuple[str, str], ...] | None) -> int:
    """The bytes of header values and meta tags an answer is keyed by."""
    size = 0
    if fields is not None:
        size += sum(len(value) for values in fields[:4] for value in values)
    if head is not None:
        size += sum(len(name) + len(content) for name, content in head)
    return size


def _robots_key(preference: UsagePreference | None) -> tuple[Any, ...] | None:
    if preference is None:
        return None
    return preference.rules


def _match_key(match: TdmRepMatch | None) -> tuple[Any, ...] | None:
    if match is None:
        return None
    return (bool(match.reserved), match.policy, match.location, match.index, match.url)


class UsageMiddleware(Reporting):
    """Downloader middleware reading the usage preferences of responses (see the
    module's description); enabled by the add-on after ``RobotsTxtMiddleware``
    (``DOWNLOADER_MIDDLEWARES`` 101: its ``process_response`` runs first), off when
    ``ROBOTSTXT_USAGE_HEADERS`` and ``ROBOTSTXT_USAGE_META`` are both off."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        config = Config.from_settings(settings)
        if not (config.usage_headers or config.usage_meta):
            raise NotConfigured
        self.crawler = crawler
        self.parts = VerdictParts.of(crawler, config)
        self.reader = ResponseUsage(crawler, config)
        self.usage_deny = config.usage_deny
        #: Whether only the headers are read (``ROBOTSTXT_USAGE_META`` off, the default).
        self.headers_only = not config.usage_meta
        #: The names of the usage headers, as Scrapy's ``Headers`` stores them.
        self.usage_headers = self.reader.keys[Headers][1]
        self._origin_of = OriginOf()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UsageMiddleware:
        return cls(crawler)

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Response:
        """Read the preferences ``response`` states, combined with its request's
        robots.txt and tdmrep.json ones; raise for one that denies a category of
        ``ROBOTSTXT_USAGE_DENY``."""
        meta = request.meta
        # The most frequent response states nothing: no usage header, no robots.txt or TDM preference.
        if self.headers_only and _READ_META.isdisjoint(meta) and type(headers := response.headers) is Headers:
            if self.usage_headers.isdisjoint(headers):
                return response
        elif FETCH_META in meta or KEEPER_META in meta or meta.get("dont_obey_robotstxt"):
            return response
        preferences = self.reader.read(request, response, lambda: self.parts.agents.token_of(request),
                                       lambda: self._robots_url(request.url))
        if preferences is None:
            return response
        robots_url = self._robots_url(request.url)
        meta[PREFERENCES_META] = preferences
        if _compat.has_receivers(self.crawler, rfc_signals.robotstxt_usage_preferences):
            self.crawler.signals.send_catch_log(rfc_signals.robotstxt_usage_preferences, request=request,
                                                response=response, preferences=preferences)
        for category in self.usage_deny:
            if preferences.denies(category):
                sources = preferences.sources_of(category)
                self._inc("usage_denied_response")
                message = (f"Usage preference denies {category}: {response} not passed to the spider "
                           f"({'; '.join(sources)})")
                logger.debug(message, extra=self._log_extra)
                self.parts.tellers.responded(request, response.status, "usage_denied")
                raise RobotsTxtUsageDeniedByResponse(message, preferences, robots_url, category, sources)
        return response

    def _robots_url(self, url: str) -> str:
        origin = self._origin_of(url)
        return "" if origin is None else origin.robots_url
