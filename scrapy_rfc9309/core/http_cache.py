"""The HTTP caching rules a robots.txt fetch follows (RFC 9309, 2.4 lets a crawler use HTTP
caching): the class of a status code, the freshness lifetime a response's ``Cache-Control`` and
``Age`` give (RFC 9111, 4.2), the validators a refetch sends back (RFC 9111, 4.3.1) and the HTTP
dates they hold.

Pure Python.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timezone
from email.utils import parsedate_to_datetime

__all__ = [
    "MAX_VALIDATOR",
    "Validators",
    "cache_directives",
    "classify_status",
    "http_date",
    "max_age_of",
    "validator",
]


def classify_status(status: int) -> str:
    """``"parse"``, ``"redirect"``, ``"unavailable"`` or ``"unreachable"``."""
    if 200 <= status < 300:
        return "parse"
    if status in (301, 302, 303, 307, 308):
        return "redirect"
    if 300 <= status < 500 and status != 429:
        return "unavailable"
    return "unreachable"


#: One Cache-Control directive: a name, then optionally ``=`` and a token or a
#: quoted string (which may hold commas: ``no-cache="Set-Cookie, Set-Cookie2"``);
#: or a stray quoted string, skipped whole.
_DIRECTIVE = re.compile(r'"(?:[^"\\]|\\.)*"?|([^\s,;="]+)[ \t]*(=[ \t]*(?:"((?:[^"\\]|\\.)*)"?|([^\s,"]*)))?')
_QUOTED_PAIR = re.compile(r"\\(.)")
_DELTA_SECONDS = re.compile(r"[0-9]+")
#: RFC 9111, 1.2.2: a delta-seconds value too large to represent is read as 2^31.
_DELTA_MAX = 2**31


def cache_directives(cache_control: str) -> dict[str, str | None]:
    """The directives of a Cache-Control field value, one by one: lower-cased
    name -> value (unquoted) or None for a directive without ``=``. Of a directive
    given twice, the first counts (RFC 9111, 4.2.1)."""
    directives: dict[str, str | None] = {}
    for name, equals, quoted, token in _DIRECTIVE.findall(cache_control):
        name = name.lower()
        if name and name not in directives:
            directives[name] = (_QUOTED_PAIR.sub(r"\1", quoted) if quoted else token) if equals else None
    return directives


def _delta_seconds(value: str | None) -> float | None:
    """A delta-seconds value (RFC 9111, 1.2.2), or None when it is not one."""
    if value is None or not _DELTA_SECONDS.fullmatch(value.strip()):
        return None
    return float(min(int(value), _DELTA_MAX))


def max_age_of(cache_control: str | bytes | Iterable[str | bytes] | None,
               age: str | bytes | None = None) -> float | None:
    """The freshness lifetime a response has left (RFC 9111, 4.2), or None when
    its Cache-Control gives none.

    ``cache_control`` is the field value, or its field lines (combined, RFC 9110,
    5.3); ``age`` the ``Age`` header, subtracted from the lifetime (a malformed
    one is ignored). The lifetime is ``max-age``, or ``s-maxage`` when that is
    shorter (a robots.txt state may be shared by a fleet through the store, and
    the shorter one never keeps a file longer than either kind of cache may).
    ``no-store``, a ``no-cache`` without field names and a malformed ``max-age``
    give 0 (stale at once); ``no-cache="Set-Cookie"`` only concerns that header
    field, and other directives do not change the lifetime."""
    if cache_control is None:
        return None
    if isinstance(cache_control, (str, bytes)):
        cache_control = [cache_control]
    text = ", ".join(v.decode("latin-1") if isinstance(v, bytes) else v for v in cache_control)
    if not text.strip():
        return None
    directives = cache_directives(text)
    if "no-store" in directives or ("no-cache" in directives and directives["no-cache"] is None):
        return 0.0
    lifetimes = [_delta_seconds(directives[name]) for name in ("max-age", "s-maxage") if name in directives]
    if not lifetimes:
        return None
    if None in lifetimes:  # RFC 9111, 4.2.1: invalid freshness information means stale
        return 0.0
    if isinstance(age, bytes):
        age = age.decode("latin-1")
    current_age = _delta_seconds(age) or 0.0
    return max(0.0, min(value for value in lifetimes if value is not None) - current_age)


#: The longest validator kept (an ETag; an HTTP date is 29 characters): a longer one is not used.
MAX_VALIDATOR = 1024
#: A field value a request may carry: visible ASCII and spaces (no CR, LF or other control characters).
_FIELD_VALUE = re.compile(r"[\x20-\x7e]+").fullmatch
#: An entity tag (RFC 9110, 8.8.3): weak or strong, quoted.
_ETAG = re.compile(r'(W/)?"[\x21\x23-\x7e]*"').fullmatch


def validator(name: str, value: str | bytes | None) -> str | None:
    """A response's ``ETag`` or ``Last-Modified`` value as a later conditional request
    may send it back, or None when it is absent or unusable: longer than
    :data:`MAX_VALIDATOR`, not an entity tag (RFC 9110, 8.8.3), not an HTTP date
    (``If-Modified-Since`` with another value is ignored by servers, RFC 9110, 13.1.3)."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    value = value.strip()
    if not value or len(value) > MAX_VALIDATOR or not _FIELD_VALUE(value):
        return None
    if name == "etag":
        return value if _ETAG(value) else None
    return value if http_date(value) is not None else None


def http_date(value: str | bytes) -> float | None:
    """An HTTP date (RFC 9110, 5.6.7) as a POSIX time, or None when ``value`` is none."""
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if len(value) > MAX_VALIDATOR:
        return None
    try:
        moment = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    try:
        return moment.timestamp() if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc).timestamp()
    except (ValueError, OverflowError):
        return None


@dataclass(frozen=True, slots=True)
class Validators:
    """What a refetch sends to revalidate the copy it holds (RFC 9111, 4.3.1): the
    copy's ``ETag`` (``If-None-Match``) and ``Last-Modified`` (``If-Modified-Since``),
    sent to ``url``, the URL the copy came from; ``size`` is the copy's length (the
    bytes a ``304 Not Modified`` saves)."""

    url: str
    etag: str | None
    last_modified: str | None
    size: int = 0

    def headers(self) -> dict[str, str]:
        """The request's conditional header fields."""
        found = {}
        if self.etag is not None:
            found["If-None-Match"] = self.etag
        if self.last_modified is not None:
            found["If-Modified-Since"] = self.last_modified
        return found

    def selected_by(self, etag: str | bytes | None, last_modified: str | bytes | None) -> bool:
        """Whether a ``304 Not Modified`` with these ``ETag`` and ``Last-Modified`` values
        (None: absent) refers to the copy these validators came from (RFC 9111, 4.3.4).
        An entity tag decides when the 304 has one: a strong one must equal the copy's
        strong tag, a weak one match it by weak comparison (RFC 9110, 8.8.3.2); one
        that cannot be read matches nothing. Without one, a ``Last-Modified`` must
        be the copy's own date. A 304 with neither refers to a copy without an entity
        tag (validated by its date, which a 304 need not repeat; a 304 must repeat the
        ``ETag`` a 200 would carry, RFC 9110, 15.4.5)."""
        if etag is not None:
            tag = validator("etag", etag)
            if tag is None or self.etag is None:
                return False
            if tag.startswith("W/"):
                return tag.removeprefix("W/") == self.etag.removeprefix("W/")
            return tag == self.etag
        if last_modified is not None:
            date = http_date(last_modified)
            return date is not None and self.last_modified is not None and date == http_date(self.last_modified)
        return self.etag is None
