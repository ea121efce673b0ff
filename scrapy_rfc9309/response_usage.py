"""The usage preferences of a downloaded response, for the middleware: takes the
header values and (when ``ROBOTSTXT_USAGE_META`` is on) the head of an HTML body out of
the Scrapy response, has the pure modules read them (:mod:`scrapy_rfc9309.sources`,
:mod:`scrapy_rfc9309.html_head`) and combine them with the robots.txt and tdmrep.json
preferences of its request (:mod:`scrapy_rfc9309.preferences`); counts and logs what
could not be read."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from w3lib.encoding import http_content_type_encoding

from ._compat import header_values
from .html_head import HeadMeta, read_head_meta
from .preferences import Preferences, Statement, TdmRepMatch, build
from .reporting import Reporting
from .sources import (
    MAX_FIELD_BYTES,
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
    from scrapy.http.headers import Headers

    from .config import Config
    from .usage import UsagePreference

__all__ = ["PREFERENCES_META", "TDMREP_META", "ResponseUsage"]

logger = logging.getLogger(__name__)

#: Request (and so response) meta key set to the response's :class:`~scrapy_rfc9309.preferences.Preferences`.
PREFERENCES_META = "robotstxt_preferences"
#: Request (and so response) meta key set, with ``ROBOTSTXT_TDMREP`` on, to the rule
#: of the origin's tdmrep.json that applies (a :class:`~scrapy_rfc9309.tdmrep.TdmEntry`),
#: or None (no rule applies, or the origin has no tdmrep.json); not set while the
#: file is unreachable and no copy of it is at hand (nothing is known).
TDMREP_META = "robotstxt_tdmrep"
#: The response headers read, in the order :meth:`ResponseUsage._fields` gives them, then Content-Type.
_FIELDS = (b"Content-Usage", b"tdm-reservation", b"tdm-policy", b"X-Robots-Tag", b"Content-Type")
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
        self._answers: dict[tuple[Any, ...], tuple[Preferences, tuple[tuple[str, str], ...]]] = {}
        self._answer_bytes = 0
        #: Per Content-Type value: whether it is HTML's, and its encoding.
        self._kinds: dict[bytes, tuple[bool, str | None]] = {}
        #: The names of _FIELDS as each headers class stores them, and the set of the usage ones.
        self._keys: dict[type, tuple[tuple[Any, ...], frozenset[Any]]] = {}
        #: The meta names read, per product token.
        self._names: dict[str, frozenset[str]] = {}

    def read(self, request: Request, response: Response, token: str, robots_url: str) -> Preferences | None:
        """The preferences of ``response`` to ``request`` for product ``token``, or None
        when no source states any. The same inputs give the same (immutable) object."""
        robots = request.meta.get("robotstxt_usage") or None  # middleware.USAGE_META, set in process_request
        match = request.meta.get(TDMREP_META)
        if match is not None and getattr(match, "reserved", None) is None:
            match = None
        headers = response.headers
        known = self._keys.get(type(headers))
        if known is None:  # the header names as the class stores them (Headers title-cases them)
            keys = tuple(headers.normkey(name) for name in _FIELDS)
            known = self._keys[type(headers)] = (keys, frozenset(keys[:4]))
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
                head = self._head(response, kind[1], token)
        if robots is None and match is None and fields is None and head is None:
            return None
        size = _size(fields, head)
        key = (robots_url, token, _robots_key(robots), _match_key(match), fields, head)
        answer = self._answers.get(key) if size <= _MAX_REMEMBERED_BYTES else None
        if answer is None:
            answer = self._answer(robots, robots_url, match, fields, head, token)
            if size <= _MAX_REMEMBERED_BYTES:
                if len(self._answers) >= _MAX_ANSWERS or self._answer_bytes + size > _MAX_ANSWER_BYTES:
                    self._answers.clear()
                    self._answer_bytes = 0
                self._answers[key] = answer
                self._answer_bytes += size
        preferences, malformed = answer
        for what, error in malformed:
            self._log_malformed(what, error, response)
        return preferences if preferences.statements or preferences.malformed else None

    def _kind(self, content_type: bytes) -> tuple[bool, str | None]:
        """Whether a ``Content-Type`` value is HTML's, and the encoding it names (remembered)."""
        html = b"html" in content_type.lower()
        kind = (html, http_content_type_encoding(content_type.decode("latin-1")) if html else None)
        if len(content_type) <= _MAX_KIND_BYTES:
            if len(self._kinds) >= _MAX_ANSWERS:
                self._kinds.clear()
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
            if len(self._names) >= _MAX_ANSWERS:
                self._names.clear()
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
    longer than :data:`~scrapy_rfc9309.sources.MAX_FIELD_BYTES`, as a ``Content-Usage`` may not be."""
    size = sum(len(value) for value in values)
    if size > MAX_FIELD_BYTES:
        raise Malformed(f"longer than {MAX_FIELD_BYTES} bytes ({size})")
    return values


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
    return (tuple((record, tuple(values.items())) for record, values in preference.values.items()),
            tuple(preference.lines.items()))


def _match_key(match: TdmRepMatch | None) -> tuple[Any, ...] | None:
    if match is None:
        return None
    return (bool(match.reserved), match.policy, match.location, match.index, match.url)
