"""The ``<meta name=... content=...>`` tags of an HTML document's head, read from at
most a bounded number of bytes (a hostile page costs no more than that). Pure Python.

The document is cut at the first ``</head`` or ``<body`` (or at the bound), decoded
with the response's encoding (undecodable bytes replaced) and parsed by the standard
library's tolerant ``html.parser``, which stops at the first element that cannot be
in a head (an HTML parser ends the head there too).
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser

__all__ = ["HeadMeta", "read_head_meta"]

#: Elements that may stand in a head (and ``html``/``head`` themselves).
_HEAD_ELEMENTS = frozenset({"html", "head", "meta", "title", "link", "style", "script", "base", "noscript",
                            "template"})
#: Meta tags kept at most (a page with more is read as far as that).
MAX_TAGS = 256


@dataclass(frozen=True)
class HeadMeta:
    """The wanted meta tags, ``(name, content)`` in document order (names lower-cased),
    and whether the head ended within the bytes read (``complete``)."""

    tags: tuple[tuple[str, str], ...]
    complete: bool

    def contents(self, name: str) -> list[str]:
        return [content for tag, content in self.tags if tag == name]


class _EndOfHead(Exception):
    pass


class _MetaParser(HTMLParser):
    def __init__(self, wanted: Callable[[str], bool]) -> None:
        super().__init__(convert_charrefs=True)
        self.wanted = wanted
        self.tags: list[tuple[str, str]] = []
        self.ended = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "meta":
            name = content = None
            for key, value in attrs:
                if key == "name" and name is None:
                    name = (value or "").strip().lower()
                elif key == "content" and content is None:
                    content = value or ""
            if name and content is not None and self.wanted(name) and len(self.tags) < MAX_TAGS:
                self.tags.append((name, content))
        elif tag not in _HEAD_ELEMENTS:
            self.ended = True
            raise _EndOfHead

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("head", "html"):
            self.ended = True
            raise _EndOfHead


def _head_end(data: bytes) -> int:
    """Where the head certainly ends in ``data`` (the first ``</head`` or ``<body``), or -1."""
    lowered = data.lower()
    ends = [i for i in (lowered.find(b"</head"), lowered.find(b"<body")) if i >= 0]
    return min(ends) if ends else -1


def read_head_meta(body: bytes, encoding: str | None, max_bytes: int, wanted: Callable[[str], bool]) -> HeadMeta:
    """The meta tags whose lower-cased ``name`` ``wanted`` accepts, from the head in
    the first ``max_bytes`` bytes of ``body``."""
    data = body[:max_bytes]
    end = _head_end(data)
    complete = end >= 0 or len(body) <= max_bytes
    if end >= 0:
        data = data[:end]
    try:
        codecs.lookup(encoding or "utf-8")
    except LookupError:
        encoding = "utf-8"
    text = data.decode(encoding or "utf-8", errors="replace")
    parser = _MetaParser(wanted)
    try:
        parser.feed(text)
        parser.close()
    except _EndOfHead:
        complete = True
    except Exception:  # html.parser raises on nothing documented; a bug of its own must not end the crawl
        pass
    return HeadMeta(tuple(parser.tags), complete)
