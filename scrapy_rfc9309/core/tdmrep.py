"""The origin's ``/.well-known/tdmrep.json`` of the W3C TDM Reservation Protocol
(TDMRep, Community Group final report, section "TDM File on the Origin Server").

The file is a JSON array of rules, each an object with a ``location`` (a path
pattern: ``*`` is any run of characters, a final ``$`` ends the path, matched as
robots.txt patterns are, case-sensitively, against the canonical path and query), a
``tdm-reservation`` (``1``: text and data mining rights are reserved, ``0``: not
reserved) and an optional ``tdm-policy`` (the URL of a licensing policy). The first
rule in sequence whose location matches a URL applies ("the most specific match is
the first in sequence"); none matching means no reservation is stated for it.

Read defensively, because the file comes from the site: what is not JSON stops the
reading where it stops being JSON (the rules before it are kept, and a file cut at
the size limit keeps its complete leading rules, which are the first to match
anyway); a file nested deeper than :data:`MAX_DEPTH` levels is read up to the
bracket that opens the level too deep, as if the file stopped being JSON there (the
complete rules before it are kept; the rule holding it is not); a rule of the wrong
shape is skipped; past :data:`MAX_WILDCARD_RULES` rules with wildcards (or ``$``), the
file is read as if cut before the next one (its rules before it are kept).

A URL is matched without a scan of every rule: the plain locations (prefixes) in a
dict probed once per distinct location length, and the wildcard rules, in file order,
each skipped unless its longest literal piece is in the path, up to the first plain
rule that matches. Each problem is kept in
:attr:`TdmRep.problems` for the crawl's log. Pure Python.
"""

from __future__ import annotations

import json
import zlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .limited_json import too_deep
from .matcher import glob_match, glob_pieces
from .urls import path_of
from .usage_vocabulary import TDM_CATEGORY, labels_for

__all__ = ["MAX_DEPTH", "MAX_PROBLEMS", "MAX_WILDCARD_RULES", "RESERVED_CATEGORIES", "TDMREP_PATH", "TdmEntry",
           "TdmRep", "reserves"]

#: Where an origin publishes the file.
TDMREP_PATH = "/.well-known/tdmrep.json"
#: The usage categories that a TDM reservation denies: ``ROBOTSTXT_USAGE_DENY``
#: listing one of them drops the requests of reserved URLs. The vocabulary's
#: :data:`~scrapy_rfc9309.usage.vocabulary.TDM_CATEGORY` (``train-ai``, the one category of the
#: current AIPREF draft that text and data mining covers) under each of its labels
#: (``ai-train`` is Content-Signal's): the same category the response side reads a
#: reservation as.
RESERVED_CATEGORIES = frozenset(labels_for(TDM_CATEGORY))
#: Levels of nesting read (a rule is two: the array and its object; the rest leaves room for
#: members of a later version of the format). Past it the file is read as cut at that point.
MAX_DEPTH = 32
#: Rules with wildcards (or a final ``$``) read per file: each may be tried against every URL of
#: the origin; past it the file is read as cut there.
MAX_WILDCARD_RULES = 256
#: Problems kept per file (the rest are counted).
MAX_PROBLEMS = 10
#: Bodies at least this long are kept compressed (a store reads them back; matching never does).
_COMPRESS_FROM = 4096
#: Raw deflate, no header: the bytes are only ever read back here.
_WBITS = -15
_WHITESPACE = " \t\r\n"
_decoder = json.JSONDecoder()


def reserves(category: str) -> bool:
    """Whether a TDM reservation denies the usage ``category``."""
    return category.lower() in RESERVED_CATEGORIES


@dataclass(frozen=True, slots=True)
class TdmEntry:
    """The rule of a tdmrep.json that applies to a URL: ``reserved`` (its
    ``tdm-reservation`` is 1), ``policy`` (its ``tdm-policy``, or None),
    ``location`` (its pattern), ``index`` (its position in the file's array, from 0)
    and ``url`` (the tdmrep.json it comes from)."""

    reserved: bool
    policy: str | None
    location: str
    index: int
    url: str

    def as_dict(self) -> dict[str, object]:
        """The rule as plain data (for a feed, a log, JSON)."""
        return {"reserved": self.reserved, "policy": self.policy, "location": self.location, "index": self.index,
                "url": self.url}

    def __str__(self) -> str:
        state = "reserved" if self.reserved else "not reserved"
        policy = f", tdm-policy {self.policy}" if self.policy else ""
        return f"TDM rights {state} (rule {self.index}, location {self.location!r}{policy}, of {self.url})"


class TdmRep:
    """A parsed tdmrep.json. ``body`` is the file's bytes (at most the size limit:
    what a store keeps), ``url`` its URL, ``truncated`` whether the file reached the
    limit (the fetch cuts a longer file there), ``problems`` what could not be read (at most
    :data:`MAX_PROBLEMS`; ``problem_count`` counts them all).

    The rules are kept compactly (a file of the size limit holds some ten thousand):
    their locations, a compiled pattern only where one has wildcards, their positions
    and reservations in an array, each policy URL once, and the body compressed; a
    :class:`TdmEntry` is made for the rule a URL matches."""

    __slots__ = ("_body", "_compressed", "_flags", "_lengths", "_locations", "_needles", "_patterns", "_plain",
                 "_policies", "_wild", "problem_count", "problems", "size", "truncated", "url")

    def __init__(self, body: bytes, max_bytes: int, *, url: str | None = None) -> None:
        self.size = len(body)
        self.truncated = self.size >= max_bytes
        body = body[:max_bytes] if self.truncated else body
        self.url = url or ""
        self.problems: list[str] = []
        self.problem_count = 0
        self._locations: list[str] = []
        #: Per rule: None for a location matched as a plain prefix, else its pattern's pieces and anchor.
        self._patterns: list[tuple[list[str | tuple[str, str]], bool] | None] = []
        #: Per rule: its position in the file's array, shifted left by one, or 1 when reserved.
        self._flags = array("Q")
        self._policies: list[str | None] = []
        #: The first rule of each plain location, the distinct lengths of those locations (descending).
        self._plain: dict[str, int] = {}
        self._lengths: list[int] = []
        #: The wildcard rules (their positions among the rules, ascending) and their longest pieces.
        self._wild: list[int] = []
        self._needles: list[str] = []
        self._body, self._compressed = body, False
        self._read(body)
        self._lengths = sorted({len(location) for location in self._plain}, reverse=True)
        if len(body) >= _COMPRESS_FROM:
            self._body, self._compressed = _compress(body), True

    @property
    def body(self) -> bytes:
        """The file's bytes, up to the size limit."""
        return zlib.decompress(self._body, _WBITS) if self._compressed else self._body

    def _problem(self, text: str) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)

    def _read(self, body: bytes) -> None:
        try:
            text = body.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            if not self.truncated or exc.start < len(body) - 3:
                self._problem(f"not UTF-8 (byte {exc.start})")
                return
            text = body[: exc.start].decode("utf-8-sig")  # a character cut by the size limit
        deep = too_deep(text, MAX_DEPTH)
        damage = None
        if deep is not None:  # json recurses per level: read only up to the level too deep
            text, damage = text[:deep], f"nested deeper than {MAX_DEPTH} levels at char {deep}"
        policies: dict[str, str] = {}
        for index, item in enumerate(self._items(text, damage)):
            if not self._rule(index, item, policies):
                self._problem(f"more than {MAX_WILDCARD_RULES} rules with wildcards: rule {index} and the rest are "
                              f"not read; the {index} rules before it are used")
                return

    def _items(self, text: str, damage: str | None = None) -> Iterator[Any]:
        """The array's elements read one by one, up to the end of the array or the
        first point where the text stops being JSON (``damage``: why ``text`` was cut
        short of the file, reported in place of the JSON error it makes)."""
        pos = _skip(text, 0)
        if not text.startswith("[", pos):
            self._problem(damage or ("not a JSON array" if pos < len(text) else "empty file"))
            return
        read = 0
        pos = _skip(text, pos + 1)
        if text.startswith("]", pos):
            return
        while True:
            try:
                item, pos = _decoder.raw_decode(text, pos)
            except (ValueError, RecursionError) as exc:
                self._cut(read, damage or f"invalid JSON: {exc}")
                return
            read += 1
            yield item
            pos = _skip(text, pos)
            if text.startswith("]", pos):
                if _skip(text, pos + 1) < len(text):
                    self._problem("text after the array (ignored)")
                return
            if not text.startswith(",", pos):
                self._cut(read, f"invalid JSON: ',' or ']' expected at char {pos}")
                return
            pos = _skip(text, pos + 1)

    def _cut(self, read: int, why: str) -> None:
        if self.truncated and not why.startswith("nested"):
            self._problem(f"cut at the size limit ({len(self.body)} bytes, ROBOTSTXT_MAX_SIZE): the {read} complete "
                          "rules before it are used")
        else:
            self._problem(f"{why}; the {read} rules before it are used")

    def _rule(self, index: int, item: Any, policies: dict[str, str]) -> bool:
        """Read one rule (a problem says why one is skipped); False past :data:`MAX_WILDCARD_RULES`."""
        if not isinstance(item, dict):
            self._problem(f"rule {index} is not an object")
            return True
        location = item.get("location")
        if not isinstance(location, str) or not location.startswith(("/", "*")):
            self._problem(f"rule {index}: location {location!r} is not a path pattern")
            return True
        reservation = item.get("tdm-reservation")
        if isinstance(reservation, str) and reservation.strip() in ("0", "1"):
            reservation = int(reservation.strip())
        if reservation not in (0, 1) or isinstance(reservation, (bool, float)):
            self._problem(f"rule {index}: tdm-reservation {reservation!r} is not 0 or 1")
            return True
        policy = item.get("tdm-policy")
        if policy is not None and not (isinstance(policy, str) and policy.strip()):
            self._problem(f"rule {index}: tdm-policy {policy!r} is not a URL (ignored)")
            policy = None
        pieces, anchored, _, _ = glob_pieces(location)
        plain = not anchored and len(pieces) == 1 and pieces[0] == location
        if not plain and len(self._wild) >= MAX_WILDCARD_RULES:
            return False
        if policy:
            policy = policies.setdefault(policy.strip(), policy.strip())
        rule = len(self._locations)
        if plain:
            self._plain.setdefault(location, rule)
        else:
            self._wild.append(rule)
            self._needles.append(max((piece for piece in pieces if type(piece) is str), key=len, default=""))
        self._locations.append(location)
        self._patterns.append(None if plain else (pieces, anchored))
        self._flags.append(index << 1 | (reservation == 1))
        self._policies.append(policy or None)
        return True

    def _entry(self, rule: int) -> TdmEntry:
        flags = self._flags[rule]
        return TdmEntry(bool(flags & 1), self._policies[rule], self._locations[rule], flags >> 1, self.url)

    @property
    def entries(self) -> list[TdmEntry]:
        """The rules read, in file order."""
        return [self._entry(rule) for rule in range(len(self._locations))]

    def entry_for(self, url: str) -> TdmEntry | None:
        """The first rule whose location matches the path of ``url``, or None."""
        if not self._locations:
            return None
        path = path_of(url)
        best = len(self._locations)  # the first plain rule that matches, or past the last rule
        plain, size = self._plain, len(path)
        for length in self._lengths:
            if length <= size:
                found = plain.get(path[:length])
                if found is not None and found < best:
                    best = found
        patterns, needles = self._patterns, self._needles
        for position, rule in enumerate(self._wild):
            if rule > best:
                break
            if needles[position] in path and glob_match(path, *patterns[rule]):  # type: ignore[misc]
                best = rule
                break
        return self._entry(best) if best < len(self._locations) else None

    def __repr__(self) -> str:
        return f"<TdmRep {self.url or '(no URL)'}: {len(self._locations)} rules>"


def _compress(body: bytes) -> bytes:
    compressor = zlib.compressobj(1, zlib.DEFLATED, _WBITS)
    return compressor.compress(body) + compressor.flush()


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WHITESPACE:
        pos += 1
    return pos
