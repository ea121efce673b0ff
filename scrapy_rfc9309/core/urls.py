"""Canonical form of URL paths and robots.txt patterns (RFC 9309, 2.2.2 and 2.2.3).

Both sides of a comparison are brought to one canonical ASCII form, so that the
same octets match however they were written:

* raw non-ASCII characters become the percent-encoding of their UTF-8 octets
  (invalid UTF-8 kept as ``surrogateescape`` is encoded as the original byte);
* ``%xx`` escapes of ASCII octets that carry no delimiting role are decoded
  (unreserved characters, ``*`` and ``$``, and characters that are not allowed raw
  in a URI such as space or ``"``); in the query, ``:``, ``/``, ``?`` and ``@`` too,
  since RFC 3986 allows them raw there;
* escapes of the other reserved characters (``/``, ``?``, ``&``, ``=``, ...) and of
  non-ASCII octets stay encoded, with upper-case hex digits;
* a ``%`` that does not start a valid escape becomes ``%25``.

No Scrapy or Twisted imports here.
"""

from __future__ import annotations

import re

__all__ = ["canonical", "canonical_path", "escape_undecodable", "one_origin", "origin_text", "path_of",
           "url_path"]

_HEX = "0123456789ABCDEFabcdef"
# ASCII octets that stay percent-encoded everywhere: "%" itself and the reserved
# characters that delimit URI components or query parameters.
_KEEP_ENCODED_PATH = frozenset(b"%/?#[]:@!&'()+,;=")
# In the query ":", "/", "?" and "@" have no delimiting role (RFC 3986, 3.4).
_KEEP_ENCODED_QUERY = _KEEP_ENCODED_PATH - frozenset(b":/?@")


def _build_table(keep: frozenset[int]) -> dict[str, str]:
    """``"%xx"`` (any hex case) -> its canonical form; a lone ``"%"`` -> ``"%25"``."""
    table = {"%": "%25"}
    for hi in _HEX:
        for lo in _HEX:
            octet = int(hi + lo, 16)
            table["%" + hi + lo] = f"%{octet:02X}" if octet >= 0x80 or octet in keep else chr(octet)
    return table


_DECODE_PATH = _build_table(_KEEP_ENCODED_PATH)
_DECODE_QUERY = _build_table(_KEEP_ENCODED_QUERY)
_ESCAPE_SPLIT = re.compile(r"(%[0-9A-Fa-f]{2}|%)")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
#: What ``surrogateescape`` makes of bytes that are not UTF-8.
_UNDECODABLE = re.compile("[\udc80-\udcff]+")


def utf8_octets(text: str) -> bytes:
    """UTF-8 octets; undecodable bytes kept by ``surrogateescape`` come back as
    themselves, and any other lone surrogate as its (invalid) 3-byte form."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _percent_encode(match: re.Match[str]) -> str:
    return "%" + utf8_octets(match.group()).hex("%").upper()


def escape_undecodable(text: str) -> str:
    """``text`` with the bytes that were not UTF-8 (kept by ``surrogateescape``)
    percent-encoded, as a path's are for matching, so that the result can be
    encoded (a URL such as a Sitemap value can then be requested); valid
    characters are left as they are."""
    return _UNDECODABLE.sub(_percent_encode, text)


def _encode_non_ascii(text: str) -> str:
    # One call per run of non-ASCII characters, not per character.
    return _NON_ASCII.sub(_percent_encode, text)


def _decode_escapes(text: str, table: dict[str, str]) -> str:
    # Split around the escapes and map them all in C: no Python call per escape.
    parts = _ESCAPE_SPLIT.split(text)
    parts[1::2] = map(table.__getitem__, parts[1::2])
    return "".join(parts)


def canonical(text: str, in_query: bool = False) -> str:
    """Return the canonical form of a path, query or pattern fragment.

    ``in_query`` selects the query table for the whole of ``text``; use
    :func:`canonical_path` for text that may hold both a path and a query.
    """
    # Escapes first, on the text as written: the escapes that encoding non-ASCII
    # characters adds are already canonical.
    if "%" in text:
        text = _decode_escapes(text, _DECODE_QUERY if in_query else _DECODE_PATH)
    if not text.isascii():
        text = _encode_non_ascii(text)
    return text


def canonical_path(text: str, in_query: bool = False) -> str:
    """Canonical form of ``path[?query]``: the query starts at the first ``?``
    (or at the start of ``text`` when ``in_query``)."""
    if "%" not in text and text.isascii():  # already canonical: most paths
        return text
    if in_query:
        return canonical(text, in_query=True)
    qpos = text.find("?")
    if qpos < 0:
        return canonical(text)
    return canonical(text[:qpos]) + "?" + canonical(text[qpos + 1:], in_query=True)


#: An absolute URL whose path starts with "/" (most URLs): group 1 is what
#: :func:`url_path` gives for it.
_absolute_path = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?;#]*(/[^#]*)", re.S).match


def url_path(url: str) -> str:
    """The path and query of ``url`` as matched by robots.txt: from the first
    ``/``, ``?`` or ``;`` after the authority, without the fragment; ``/`` when
    empty. Accepts absolute URLs, scheme-relative ones and bare paths (same rules
    as Google's reference parser)."""
    found = _absolute_path(url)
    if found is not None:
        return found.group(1)
    return _url_path(url)


def _url_path(url: str) -> str:
    """:func:`url_path` for any URL."""
    start = 2 if url.startswith("//") else 0
    early = _first_of(url, "/?;", start)
    proto = url.find("://", start)
    if proto < 0 or (early >= 0 and early < proto):
        proto_end = start
    else:
        proto_end = proto + 3
    path_start = _first_of(url, "/?;", proto_end)
    if path_start < 0:
        return "/"
    hash_pos = url.find("#", start)
    if 0 <= hash_pos < path_start:
        return "/"
    path = url[path_start:] if hash_pos < 0 else url[path_start:hash_pos]
    if path[0] != "/":
        path = "/" + path
    return path


def path_of(url: str) -> str:
    """Canonical path and query of ``url``."""
    return canonical_path(url_path(url))


def _first_of(text: str, chars: str, start: int) -> int:
    best = -1
    for ch in chars:
        pos = text.find(ch, start)
        if pos >= 0 and (best < 0 or pos < best):
            best = pos
    return best


def origin_text(url: str) -> str:
    """The ``scheme://authority`` text of an http(s) URL: up to the first ``/`` after
    ``http://`` and one character (a host has one at least) or after ``https://``; the whole
    URL without one. The key of the per-origin memos (:class:`~.origins.OriginOf`, the
    release memo): a text that holds a whole authority determines the origin of every URL
    it begins, when :func:`one_origin` says it names one."""
    end = url.find("/", 8)
    return url if end < 0 else url[:end]


def one_origin(text: str) -> bool:
    """Whether an :func:`origin_text` names one http(s) origin, its authority whole: it
    begins with ``http://`` or ``https://`` (so that the ``/`` it ends before follows the
    authority) and does not run into a query, fragment or parameters (``?``, ``#``, ``;``).
    Another text is not remembered: its URL's origin is worked out each time."""
    return text.startswith(("http://", "https://")) and "?" not in text and "#" not in text and ";" not in text
