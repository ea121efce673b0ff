"""The ``<meta name=... content=...>`` tags of an HTML document's head, read from at
most a bounded number of bytes (a hostile page costs no more than that). Pure Python.

The document is cut at the first ``</head`` or ``<body`` (or at the bound) and decoded
with the response's encoding (undecodable bytes replaced). A small tolerant scanner then
walks its tags the way an HTML parser would for a head: comments, doctypes and the
contents of ``script``, ``style``, ``title`` and ``template`` are skipped, attribute values
may be quoted either way or not at all and have their character references decoded, and
the head ends at ``</head>`` or at the first element that cannot be in a head. It jumps over
``<link>``, ``<base>`` and ``<noscript>`` tags with one regular-expression search (a ``<``
inside one of their quoted attribute values, which URLs do not have, would end the head
there) and reads every other tag and every ``<meta>`` attribute once, with no backtracking,
so its time is linear in the bytes read: about a tenth of what ``html.parser`` takes on a
head of links and scripts (``benchmarks/bench_usage.py``).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Collection
from dataclasses import dataclass
from html import unescape

__all__ = ["HeadMeta", "read_head_meta"]

#: Elements that may stand in a head (and ``html``/``head`` themselves).
_HEAD_ELEMENTS = frozenset({"html", "head", "meta", "title", "link", "style", "script", "base", "noscript",
                            "template"})
#: Elements whose content is not markup (skipped to their end tag).
_RAW_TEXT = frozenset({"script", "style", "title", "template"})
#: Meta tags kept at most (a page with more is read as far as that).
MAX_TAGS = 256
_NAME_END = re.compile(r"[\s/>]")
#: The next "<" that may matter: not one opening a tag that neither holds a meta tag nor ends the head.
_NEXT = re.compile(r"<(?!(?:link|base|noscript|html|head)[\s/>])", re.IGNORECASE)
_SPACE_OR_SLASH = re.compile(r"[\s/]*")
_ATTRIBUTE = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]*)))?""")


@dataclass(frozen=True)
class HeadMeta:
    """The wanted meta tags, ``(name, content)`` in document order (names lower-cased),
    and whether the head ended within the bytes read (``complete``)."""

    tags: tuple[tuple[str, str], ...]
    complete: bool

    def contents(self, name: str) -> list[str]:
        return [content for tag, content in self.tags if tag == name]


def _head_end(data: bytes) -> int:
    """Where the head certainly ends in ``data`` (the first ``</head`` or ``<body``), or -1."""
    lowered = data.lower()
    ends = [i for i in (lowered.find(b"</head"), lowered.find(b"<body")) if i >= 0]
    return min(ends) if ends else -1


def _attributes(text: str, pos: int) -> tuple[dict[str, str], int]:
    """The attributes of a tag whose name ends at ``pos`` (first occurrence of each), and
    where the tag ends (after its ``>``; -1 when it does not end in ``text``)."""
    found: dict[str, str] = {}
    end = len(text)
    while True:
        pos = _SPACE_OR_SLASH.match(text, pos).end()  # type: ignore[union-attr]  # matches the empty string
        if pos >= end:
            return found, -1
        if text[pos] == ">":
            return found, pos + 1
        match = _ATTRIBUTE.match(text, pos)
        if match is None:  # a stray quote or "=": not an attribute
            pos += 1
            continue
        key = match.group(1).lower()
        if key not in found:
            value = match.group(2)
            if value is None:
                value = match.group(3) if match.group(3) is not None else match.group(4) or ""
            found[key] = unescape(value) if "&" in value else value
        pos = match.end()


def _scan(text: str, names: Collection[str]) -> tuple[list[tuple[str, str]], bool]:
    """The meta tags named one of ``names`` of the head at the start of ``text``, and whether the
    head ended."""
    lowered = text.lower()
    tags: list[tuple[str, str]] = []
    size = len(text)
    pos = 0
    while len(tags) < MAX_TAGS:
        found = _NEXT.search(text, pos)
        if found is None:
            return tags, False
        lt = found.start()
        if lt + 1 >= size:
            return tags, False
        if text.startswith("<!--", lt):
            close = text.find("-->", lt + 4)
            if close < 0:
                return tags, False
            pos = close + 3
            continue
        closing = text[lt + 1] == "/"
        start = lt + 2 if closing else lt + 1
        if text[start:start + 1] in ("!", "?"):  # a doctype or a bogus comment
            close = text.find(">", start)
            if close < 0:
                return tags, False
            pos = close + 1
            continue
        match = _NAME_END.search(text, start)
        name_end = match.start() if match is not None else size
        name = lowered[start:name_end]
        if not name or not name[0].isalpha():  # a "<" in text
            pos = lt + 1
            continue
        if closing:
            if name in ("head", "html", "body"):
                return tags, True
            close = text.find(">", name_end)
            if close < 0:
                return tags, False
            pos = close + 1
            continue
        if name not in _HEAD_ELEMENTS:
            return tags, True
        if name == "meta":
            close = text.find(">", name_end)
            if close >= 0:
                inside = lowered[name_end:close]
                if not any(wanted in inside for wanted in names) and not (inside.count('"') % 2
                                                                           or inside.count("'") % 2):
                    pos = close + 1  # names none of the wanted names (and no quoted ">" cut it short)
                    continue
            attributes, pos = _attributes(text, name_end)
            if pos < 0:  # cut off at the bound: not a tag yet
                return tags, False
            meta_name = attributes.get("name", "").strip().lower()
            content = attributes.get("content")
            if meta_name and content is not None and meta_name in names:
                tags.append((meta_name, content))
            continue
        close = text.find(">", name_end)
        if close < 0:
            return tags, False
        pos = close + 1
        if name in _RAW_TEXT:
            close = lowered.find("</" + name, pos)
            if close < 0:
                return tags, False
            pos = close
    return tags, False


def read_head_meta(body: bytes, encoding: str | None, max_bytes: int, names: Collection[str]) -> HeadMeta:
    """The meta tags whose lower-cased ``name`` is one of ``names`` (lower-case), from the head
    in the first ``max_bytes`` bytes of ``body``."""
    data = body[:max_bytes]
    end = _head_end(data)
    if end >= 0:
        data = data[:end]
    try:
        codecs.lookup(encoding or "utf-8")
    except LookupError:
        encoding = "utf-8"
    tags, ended = _scan(data.decode(encoding or "utf-8", errors="replace"), names)
    return HeadMeta(tuple(tags), ended or end >= 0 or len(body) <= max_bytes)
