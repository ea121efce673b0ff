"""The compiled matcher of one merged group (RFC 9309, 2.2.2, 2.2.3 and 5.2).

A group's rules are compiled once, on first use, into two structures that never
backtrack:

* literal rules (no ``*``, no trailing ``$``), by canonical text, in a sorted list:
  the longest literal that prefixes a path is the largest key not above the path
  or one of that key's prefixes among the keys (each key knows its longest one),
  found by binary search and a short walk; a large group's go in a dict probed
  once per distinct key length instead;
* wildcard rules sorted by priority, each skipped unless its longest piece is in
  the path, then matched piece by piece with ``str.find``: every piece between
  two ``*`` commits to its leftmost occurrence, which is always right for glob
  patterns, so a rule costs one pass over the path.

When the C accelerator is built, none of this is built (unless a wildcard piece
has two forms, see :func:`piece_forms`): the group's rules go as parsed to a
``FastMatcher`` (see ``_speedups.c``), which compiles them in one C pass and
decides every URL and verdict, with the same answers. Either matcher gives back
every rule of its group as written, with its line (``written``), and the deciding
rule of a path (``best_rule``): a parsed file keeps no other copy of the rules of
the group it was first asked about (see :class:`~scrapy_rfc9309.RobotsTxt`).
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol

from .urls import canonical_path, path_of, utf8_octets

__all__ = ["Matcher", "Rule", "compile_pattern", "compile_rules", "glob_match", "glob_pieces",
           "piece_forms"]

#: Above this many literal rules the pure-Python index probes a dict once per
#: distinct key length instead of sorting them on the first decision.
_HASH_ABOVE = 2000

#: From this many wildcard rules, the pure-Python matcher searches for any of
#: their longest pieces in one call before looking at them one by one.
_NEEDLE_SEARCH_FROM = 8

#: Above this many literal rules the C accelerator hashes them instead of sorting.
_C_HASH_ABOVE = 1024

#: An absolute URL whose path starts with "/" and is canonical as written (ASCII,
#: no "%"; the class lists the ASCII octets but "#" and "%", which the engine
#: checks faster than their complement): group 1 is its canonical path (see
#: :func:`~.urls.path_of`).
_plain_path = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?;#]*(/[\x00-\x22\x24\x26-\x7f]*)(?:#|\Z)", re.S).match

try:  # the optional C accelerator (built at install when a compiler is there)
    from ._speedups import FastMatcher
    from ._speedups import configure as _configure
except ImportError:  # pragma: no cover - depends on the build
    FastMatcher = None  # type: ignore[misc,assignment]
    _configure = None  # type: ignore[assignment]


class Rule(NamedTuple):
    """A rule as written in the file."""

    allow: bool
    pattern: str
    line: int

    @property
    def directive(self) -> str:
        return "Allow" if self.allow else "Disallow"

    def __str__(self) -> str:
        return f"{self.directive}: {self.pattern}, line {self.line}"


#: A compiled wildcard rule: ``(priority, allow, rule index, pieces, anchored,
#: needle)``, where ``needle`` is the longest plain piece (a path without it
#: cannot match).
_Wildcard = tuple[int, bool, int, list[str | tuple[str, str]], bool, str]


def piece_forms(pattern: str) -> tuple[list[tuple[str, str]], bool]:
    """Split a pattern at its ``*`` wildcards and trailing ``$`` anchor, and give
    each literal piece in canonical form twice: as it reads where it lands in the
    path, and where it lands in the query (``%2F`` stays encoded in a path but
    equals ``/`` in a query, and a ``*`` can cross the URL's ``?``). The two forms
    differ only for a piece after a ``*`` and before any ``?`` of the pattern.
    ``%2A`` and ``%24`` become literal ``*`` and ``$``. Returns ``(forms, anchored)``."""
    anchored = pattern.endswith("$")
    if anchored:
        pattern = pattern[:-1]
    forms = []
    in_query = False
    for raw in pattern.split("*"):
        if "%" not in raw and raw.isascii():  # already canonical, in both forms
            forms.append((raw, raw))
        else:
            query_form = canonical_path(raw, True)
            forms.append((query_form if in_query else canonical_path(raw), query_form))
        in_query = in_query or "?" in raw
    return forms, anchored


def compile_pattern(pattern: str) -> tuple[list[str], bool]:
    """The pattern's pieces in their path form (see :func:`piece_forms`); the
    priority of a rule is counted on these. Returns ``(pieces, anchored)``."""
    forms, anchored = piece_forms(pattern)
    return [path_form for path_form, _ in forms], anchored


def glob_pieces(pattern: str) -> tuple[list[str | tuple[str, str]], bool, int, bool]:
    """A wildcard pattern ready for :func:`glob_match`: ``(pieces, anchored,
    priority, two_forms)``. A piece is a string, or a ``(path form, query form)``
    pair where the two differ (never the first piece: it always starts the path);
    the priority is the length of the canonical pattern (path forms), wildcards and
    anchor included."""
    if "%" not in pattern and pattern.isascii():  # canonical as written
        anchored = pattern.endswith("$")
        return (pattern[:-1] if anchored else pattern).split("*"), anchored, len(pattern), False  # type: ignore[return-value]
    forms, anchored = piece_forms(pattern)
    priority = sum(len(path_form) for path_form, _ in forms) + len(forms) - 1 + anchored
    pieces: list[str | tuple[str, str]] = [forms[0][0]]
    pieces += [p if p == q else (p, q) for p, q in forms[1:]]
    return pieces, anchored, priority, any(type(piece) is tuple for piece in pieces)


def glob_match(path: str, pieces: Sequence[str | tuple[str, str]], anchored: bool) -> bool:
    """Whether a pattern split at its wildcards matches from the start of ``path``.
    A piece is a string, or a ``(path form, query form)`` pair when the two differ."""
    if any(type(piece) is tuple for piece in pieces):
        return _glob_two_forms(path, pieces, anchored)
    first = pieces[0]
    if not path.startswith(first):  # type: ignore[arg-type]
        return False
    last = len(pieces) - 1
    if last == 0:
        return not anchored or len(path) == len(first)
    pos = len(first)
    for index in range(1, last):
        piece: str = pieces[index]  # type: ignore[assignment]
        pos = path.find(piece, pos)
        if pos < 0:
            return False
        pos += len(piece)
    tail: str = pieces[last]  # type: ignore[assignment]
    if anchored:
        return len(path) - len(tail) >= pos and path.endswith(tail)
    return path.find(tail, pos) >= 0


def _glob_two_forms(path: str, pieces: Sequence[str | tuple[str, str]], anchored: bool) -> bool:
    """Pieces that start at or before the URL's first ``?`` use their path form,
    later ones their query form. The pieces in the path come first, so try each
    split point; within a part, the leftmost occurrence is always the best."""
    query = path.find("?")
    if query < 0:
        query = len(path)
    count = len(pieces)
    for split in range(count, 0, -1):  # pieces[:split] start in the path
        pos = 0
        for index, piece in enumerate(pieces):
            in_path = index < split
            text = piece if type(piece) is str else piece[0 if in_path else 1]  # type: ignore[index]
            low = pos if in_path else max(pos, query + 1)
            if index == 0:
                start = 0 if path.startswith(text) else -1  # type: ignore[arg-type]
            elif index == count - 1 and anchored:
                start = len(path) - len(text)
                if start < low or not path.endswith(text):  # type: ignore[arg-type]
                    start = -1
            else:
                start = path.find(text, low)  # type: ignore[arg-type]
            if start < 0 or (in_path and start > query):
                break
            pos = start + len(text)
        else:
            return not anchored or count > 1 or pos == len(path)
    return False


class _Accelerated(Protocol):
    """A ``FastMatcher`` of the C accelerator: a group's matcher by itself (see
    :func:`compile_rules`)."""

    def __call__(self, url: str | bytes, /) -> bool: ...

    def best_rule(self, path: str, /) -> Rule | None: ...

    def url_rule(self, url: str | bytes, /) -> Rule | None: ...

    def written(self) -> list[Rule]: ...

    def fill(self, records: bytes, keys: tuple[bytes, bytes], /) -> bytes: ...

    @property
    def allowed(self) -> Callable[[str | bytes], bool]: ...


class _TwoForms(Exception):
    """A wildcard piece reads differently in the path and the query: the C
    accelerator takes one form per piece."""


def _c_form(pattern: str) -> tuple[int, list[str | tuple[str, str]], bool]:
    """For the C accelerator, a wildcard pattern with ``%`` or non-ASCII text in
    canonical form: ``(priority, pieces, anchored)`` (the C accelerator makes a
    literal rule's key itself, as :func:`~.urls.canonical_path` does)."""
    pieces, anchored, priority, two = glob_pieces(pattern)
    if two:
        raise _TwoForms
    return priority, pieces, anchored


def _url_path(url: str | bytes) -> str:
    """The canonical path of a URL the C accelerator does not decode itself."""
    if not isinstance(url, str):
        url = url.decode("utf-8", "surrogateescape")
    return path_of(url)


class Matcher:
    """Decides URLs for one merged group in pure Python (the C accelerator's
    ``FastMatcher`` does the same, see :func:`compile_rules`). ``allowed(url)`` is
    the hot entry point; ``best_rule(canonical_path)`` gives the deciding rule.

    Rules come as the parser keeps them: ``patterns[i]`` and ``codes[i] = line << 1
    | allow``; the matcher refers to rules by index and builds :class:`Rule` only
    for a verdict."""

    __slots__ = (
        "_any_needle",
        "_by_key",
        "_codes",
        "_key_allows",
        "_key_rules",
        "_keys",
        "_lengths",
        "_literal_only",
        "_parents",
        "_patterns",
        "_wildcards",
        "allowed",
    )

    def __init__(self, patterns: Sequence[str], codes: Sequence[int], special: Sequence[int] | None = None,
                 allows: Sequence[int] | None = None) -> None:
        """``special`` and ``allows`` (indices of the patterns that are more than
        plain literals, and of the allow rules, both ascending) are derived when
        not given; the parser gives them."""
        self._patterns = patterns
        self._codes = codes
        self.allowed: Callable[[str | bytes], bool] = _allow_all
        self._compile(patterns, special, allows)
        if self._keys or self._by_key or self._wildcards:
            self.allowed = self.exact_allowed

    def _compile(self, patterns: Sequence[str], special: Sequence[int] | None, allows: Sequence[int] | None) -> None:
        """Build the pure-Python index."""
        codes = self._codes
        literals: dict[str, int] = {}
        wildcards: list[_Wildcard] = []
        count = len(patterns)
        # Most patterns are plain canonical literals: index them in bulk and look
        # at the others (wildcards, anchors, escapes, non-ASCII) one by one.
        if special is None:
            special = []
            joined = "\n".join(patterns)
            if not joined.isascii() or "*" in joined or "$" in joined or "%" in joined:
                special = [i for i, p in enumerate(patterns) if "*" in p or "$" in p or "%" in p or not p.isascii()]
        # Among equal patterns an allow rule wins, then the first one: written in
        # reverse, the first one is written last.
        literals = dict(zip(reversed(patterns), range(count - 1, -1, -1), strict=True))
        if allows is None:
            allows = [index for index in range(count) if codes[index] & 1]
        if allows:
            allows = allows[::-1]
            literals.update(zip([patterns[index] for index in allows], allows, strict=True))
        for index in special:
            literals.pop(patterns[index], None)
        for index in special:
            pattern = patterns[index]
            allow = bool(codes[index] & 1)
            if "*" not in pattern and not pattern.endswith("$"):
                key = pattern if "%" not in pattern and pattern.isascii() else canonical_path(pattern)
                if key and ((prev := literals.get(key)) is None or (allow and not codes[prev] & 1)):
                    literals[key] = index
                continue
            pieces, anchored, priority, two = glob_pieces(pattern)
            if two:
                needle = max((p for p in pieces if type(p) is str), key=len, default="")
            else:
                needle = max(pieces, key=len)  # type: ignore[arg-type,assignment]
            wildcards.append((priority, allow, index, pieces, anchored, needle))  # type: ignore[arg-type]
        wildcards.sort(key=lambda w: (-w[0], not w[1], w[2]))
        if len(literals) > _HASH_ABOVE:
            # Too many to sort on a first decision: probe
            # the path's prefixes once per distinct key length instead (at most
            # about a thousand lengths fit in the parsing limit).
            self._by_key: dict[str, int] | None = literals
            self._lengths = sorted(set(map(len, literals)), reverse=True)
            self._keys = []
            self._key_rules = []
            self._key_allows = []
            self._parents = []
        else:
            self._by_key = None
            self._lengths = []
            self._keys = keys = sorted(literals)
            self._key_rules = [literals[key] for key in keys]
            self._key_allows = [bool(codes[rule] & 1) for rule in self._key_rules]
            # Each key's longest proper prefix among the keys (-1: none). In sorted
            # order a key's prefixes come before it, on a stack of the current chain.
            parents = []
            chain: list[int] = []
            for index, key in enumerate(keys):
                while chain and not key.startswith(keys[chain[-1]]):
                    chain.pop()
                parents.append(chain[-1] if chain else -1)
                chain.append(index)
            self._parents = parents
        self._wildcards = wildcards
        self._literal_only = not wildcards and self._by_key is None
        # Many wildcard rules: one search for any of their longest pieces first
        # (most paths hold none), unless some piece is in nearly every path.
        needles = {w[5] for w in wildcards}
        self._any_needle: Callable[[str], re.Match[str] | None] | None = None
        if len(wildcards) >= _NEEDLE_SEARCH_FROM and min(map(len, needles)) >= 2:
            self._any_needle = re.compile("|".join(map(re.escape, sorted(needles)))).search

    def rule(self, index: int) -> Rule:
        code = self._codes[index]
        return Rule(bool(code & 1), self._patterns[index], code >> 1)

    def written(self) -> list[Rule]:
        """Every rule as written, in the order given (a file's order)."""
        return [Rule(bool(code & 1), pattern, code >> 1) for pattern, code in zip(self._patterns, self._codes,
                                                                                   strict=True)]

    def fill(self, records: bytes, keys: tuple[bytes, bytes]) -> bytes:
        """Records (lines of octets) with every rule written on its line, as its
        key (``keys``: Disallow's, Allow's) and its pattern's octets (see
        :func:`~scrapy_rfc9309.core.syntax.records_text`, which leaves them out)."""
        patterns = self._patterns
        if not patterns:
            return records
        lines = records.split(b"\n")
        disallow, allow = keys
        try:  # the patterns of a file (without newlines): one encoding for all
            written = "\n".join(patterns).encode("utf-8", "surrogateescape").split(b"\n")
        except UnicodeEncodeError:
            written = [utf8_octets(pattern) for pattern in patterns]
        for octets, code in zip(written, self._codes, strict=True):
            lines[(code >> 1) - 1] = (allow if code & 1 else disallow) + octets
        return b"\n".join(lines)

    # -- deciding -------------------------------------------------------------------
    def best_index(self, path: str) -> int:
        """Index of the deciding rule for a canonical path, or -1."""
        codes = self._codes
        best, best_priority = -1, -1
        if self._by_key is not None:
            by_key = self._by_key
            size = len(path)
            for length in self._lengths:
                if length <= size:
                    hit = by_key.get(path[:length])
                    if hit is not None:
                        best, best_priority = hit, length
                        break
        else:
            # The longest literal key that prefixes the path. Every key that
            # prefixes it prefixes the largest key not above it too (a string
            # between a prefix of the path and the path starts with that prefix):
            # the answer is the first of that key and its chain of prefixes
            # among the keys that prefixes the path.
            keys = self._keys
            parents = self._parents
            index = bisect_right(keys, path) - 1
            while index >= 0 and not path.startswith(keys[index]):
                index = parents[index]
            if index >= 0:
                best, best_priority = self._key_rules[index], len(keys[index])
        if self._any_needle is not None and self._any_needle(path) is None:
            return best  # no wildcard rule's longest piece is in the path
        for priority, allow, rule, pieces, anchored, needle in self._wildcards:
            if priority <= best_priority and (priority < best_priority or codes[best] & 1 or not allow):
                break
            if needle in path and glob_match(path, pieces, anchored):
                return rule
        return best

    def best_rule(self, path: str) -> Rule | None:
        """The deciding rule for a canonical path, or None when no rule matches."""
        best = self.best_index(path)
        return None if best < 0 else self.rule(best)

    def url_rule(self, url: str | bytes) -> Rule | None:
        """The deciding rule for a URL (:meth:`best_rule` of its canonical path), or
        None: the URL is allowed by no rule."""
        path = _url_path(url)
        return None if path == "/robots.txt" else self.best_rule(path)

    def exact_allowed(self, url: str | bytes) -> bool:
        if type(url) is str and (found := _plain_path(url)) is not None:  # path_of, the common case first
            path = found.group(1)
        else:
            path = path_of(url if isinstance(url, str) else url.decode("utf-8", "surrogateescape"))
        if path == "/robots.txt":
            return True
        if self._literal_only:  # best_index inlined for the most common group
            keys = self._keys
            index = bisect_right(keys, path) - 1
            parents = self._parents
            while index >= 0 and not path.startswith(keys[index]):
                index = parents[index]
            return index < 0 or self._key_allows[index]
        best = self.best_index(path)
        return best < 0 or bool(self._codes[best] & 1)


def _allow_all(url: str | bytes) -> bool:
    return True


def compile_rules(patterns: Sequence[str], codes: Sequence[int] | bytes, speedups: bool = True,
                  special: Sequence[int] | bytes | None = None) -> Matcher | _Accelerated:
    """The matcher of a group's rules: the C accelerator's ``FastMatcher`` alone when
    it takes them, else a :class:`Matcher`; one shared matcher for every group
    without rules (a broad crawl keeps many).

    A ``FastMatcher`` keeps the rules compactly (a broad crawl keeps many): the
    canonical text of each literal key and wildcard piece once, each rule named by
    its line, and the text as written of the few rules whose canonical text differs
    or whose text another rule decides for; ``written()`` and ``best_rule()`` give
    the rules as written. The codes' lines must be distinct (a file's are)."""
    if not patterns:
        return _NO_RULES
    if speedups and FastMatcher is not None:
        if not (type(codes) is bytes or (type(codes) is array and codes.typecode == "I")):
            codes = array("I", codes)
        try:
            # _c_form gives plain str pieces only (it raises _TwoForms otherwise: a
            # wildcard piece with two forms, which the Python matcher takes).
            return FastMatcher(patterns, codes, _c_form, _C_HASH_ABOVE)  # type: ignore[arg-type,no-any-return]
        except _TwoForms:
            pass
    if type(codes) is bytes:  # native unsigned ints, as the parser selects them
        codes = array("I", codes)
    if type(special) is bytes:
        special = array("I", special)
    return Matcher(patterns, codes, special)


#: The matcher of every group without rules.
_NO_RULES = Matcher((), array("I"))


if _configure is not None:
    _configure(_url_path, Rule)
