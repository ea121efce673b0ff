"""Usage preferences in robots.txt: the AIPREF ``Content-Usage`` rule
(draft-ietf-aipref-attach, section 3) and the ``Content-Signal`` record.

Both are group records (they never end a group). A rule value that starts with
``/`` starts with a path pattern, which ends at the first SP or HTAB and scopes the
rule the way Allow/Disallow patterns are matched (the longest matching pattern, by
its encoded length, applies); a value that starts with any other character has no
path and applies to the whole group::

    Content-Usage: train-ai=n
    Content-Usage: /public/ train-ai=y
    Content-Signal: search=yes, ai-train=no

The statement of preference is read as the vocabulary draft says (draft-ietf-aipref-vocab-08,
section 6.5; attach-05, section 3.2), with the same Structured Fields parser (``http_sf``) as the
``Content-Usage`` response header: a Dictionary whose last value of a key applies; only
the Tokens ``y`` and ``n`` are preferences, any other value leaves the category
unknown; a statement that does not parse as a Dictionary (an uppercase key, a stray
character, a non-ASCII byte) leaves every category unknown (section 6.5.1). A label of
another vocabulary (Content-Signal's ``ai-train``) names no category in ``Content-Usage``
and is left out (sections 6.4, 6.5; :func:`~scrapy_rfc9309.core.usage_vocabulary.category_of`).
``Content-Signal`` is the same Dictionary with the Tokens ``yes`` and ``no`` (any case) for
``y`` and ``n``, and its own labels (``ai-train`` is ``train-ai``).

All rules of the longest matching path (of both records) are statements about the
URL: they combine per category as the vocabulary's combining rule says (any ``n``
wins, then any ``y``; vocab-08, section 5.1; attach-05, section 3.1;
:func:`scrapy_rfc9309.usage.vocabulary.combine`), unlike Allow/Disallow, where a tie allows.
Pure Python.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import http_sf

from .caches import BoundedDict
from .matcher import compile_rules, glob_match, glob_pieces
from .usage_vocabulary import ALIASES_IN_CONTENT_USAGE, ALLOW, DISALLOW, REVISION, canonical, category_of, combine

__all__ = ["UsageIndex", "UsagePreference", "UsageRule", "applicable", "read_statement", "split_rule"]

#: The record names, in the order their rules are listed.
RECORDS = ("content-usage", "content-signal")
#: The names records are written with in reports.
RECORD_NAMES = {"content-usage": "Content-Usage", "content-signal": "Content-Signal"}
#: The Tokens each record uses for "allow" and "disallow" (Content-Signal's compared lower-cased).
_TOKENS = {"content-usage": {ALLOW: ALLOW, DISALLOW: DISALLOW}, "content-signal": {"yes": ALLOW, "no": DISALLOW}}
#: The longest statement read; a longer one states nothing (a robots.txt line is at most 16 KiB anyway).
MAX_STATEMENT_BYTES = 16_384
#: Statements already read (a file's few rules are read for every URL they scope), at most this many.
_MAX_READ = 4096
_read: BoundedDict[tuple[str, ...], tuple[Mapping[str, str], str | None]] = BoundedDict(_MAX_READ)


def read_statement(record: str, text: str, revision: str = REVISION) -> tuple[Mapping[str, str], str | None]:
    """The preferences a statement states (``{label: "y" | "n"}``, labels as
    written: Content-Signal's ``ai-train`` included, a label that names nothing under
    ``revision`` left out) and, when it does not parse as a Structured Field
    Dictionary, why (its preferences are then all unknown)."""
    # ``(record, text)`` as this revision reads it; an earlier one's reading (for the audit) apart.
    key = (record, text, "aliases") if revision in ALIASES_IN_CONTENT_USAGE else (record, text)
    found = _read.get(key)
    if found is None:
        found = _read[key] = _read_statement(record, text, revision)
    return found


def _read_statement(record: str, text: str, revision: str) -> tuple[Mapping[str, str], str | None]:
    data = text.encode("utf-8", "surrogateescape")  # processed as bytes (vocab, 6.3): non-ASCII does not parse
    if len(data) > MAX_STATEMENT_BYTES:
        return {}, f"longer than {MAX_STATEMENT_BYTES} bytes"
    try:
        parsed = http_sf.parse(data, tltype="dictionary")
    except (http_sf.StructuredFieldError, ValueError) as error:
        return {}, f"not a Structured Field Dictionary: {error}"
    tokens = _TOKENS[record]
    lower = record == "content-signal"
    values: dict[str, str] = {}
    assert isinstance(parsed, dict)
    for label, member in parsed.items():  # a repeated key: the parser keeps its last value
        value = member[0] if isinstance(member, tuple) else member
        if isinstance(value, http_sf.Token) and category_of(label, record, revision) is not None:
            said = tokens.get(str(value).lower() if lower else str(value))
            if said is not None:
                values[label] = said
    return values, None


@dataclass(frozen=True)
class UsageRule:
    """One ``Content-Usage`` or ``Content-Signal`` rule that applies to a URL: its
    record, line, path pattern (``""`` when it has none), statement as written, the
    preferences it states (``{label: "y" | "n"}``) and, when the statement does not
    parse, why (it then states none)."""

    record: str
    line: int
    path: str
    text: str
    #: Read from ``record`` and ``text`` (so not compared: a rule hashes by its place and text).
    values: Mapping[str, str] = field(compare=False)
    malformed: str | None = field(default=None, compare=False)

    @property
    def where(self) -> str:
        return f"line {self.line} ({RECORD_NAMES[self.record]})"

    def as_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"record": self.record, "line": self.line, "path": self.path, "text": self.text,
                                   "values": dict(self.values)}
        if self.malformed is not None:
            data["malformed"] = self.malformed
        return data

    def __str__(self) -> str:
        said = f"{self.path} {self.text}" if self.path else self.text
        ignored = f", ignored: {self.malformed}" if self.malformed is not None else ""
        return f"{self.record}: {said} (line {self.line}{ignored})"


@dataclass(frozen=True)
class UsagePreference:
    """The usage preferences that apply to one URL: the rules of the longest
    matching path of each record (in file order), combined per category as the
    vocabulary says (any ``n`` wins, then any ``y``, else unknown)."""

    rules: tuple[UsageRule, ...] = ()
    #: Per category: its value and the rules (``where``) that gave it.
    combined: Mapping[str, tuple[str, tuple[str, ...]]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "combined", combine((rule.where, rule.values) for rule in self.rules))

    def get(self, category: str) -> str | None:
        """``"y"``, ``"n"`` or None (unknown) for a category such as ``train-ai``
        (``ai-train`` in Content-Signal is the same category)."""
        found = self.combined.get(canonical(category))
        return None if found is None else found[0]

    def source_of(self, category: str) -> tuple[str, str] | None:
        """The value for ``category`` and the record of the first rule that gives it
        (``("n", "content-usage")``), or None."""
        found = self.combined.get(canonical(category))
        if found is None:
            return None
        value, where = found
        record = next(rule.record for rule in self.rules if rule.where == where[0])
        return value, record

    def denies(self, category: str, revision: str = REVISION) -> bool:
        """Whether ``category`` is ``n``, as :data:`~scrapy_rfc9309.core.usage_vocabulary.REVISION`
        reads the rules or, for the audit of a run written before it, as ``revision`` did."""
        if revision not in ALIASES_IN_CONTENT_USAGE:
            return self.get(category) == DISALLOW
        said = combine((rule.where, read_statement(rule.record, rule.text, revision)[0]) for rule in self.rules)
        found = said.get(canonical(category))
        return found is not None and found[0] == DISALLOW

    @property
    def values(self) -> dict[str, dict[str, str]]:
        """Per record: the preferences its rules state, combined (labels as written, as
        :func:`read_statement` keeps them)."""
        found: dict[str, dict[str, str]] = {}
        for rule in self.rules:
            if rule.values:
                values = found.setdefault(rule.record, {})
                for label, value in rule.values.items():
                    if values.get(label) != DISALLOW:
                        values[label] = value
        return found

    @property
    def lines(self) -> dict[str, tuple[int, ...]]:
        """Per record: the lines of its rules that apply."""
        found: dict[str, tuple[int, ...]] = {}
        for rule in self.rules:
            found[rule.record] = (*found.get(rule.record, ()), rule.line)
        return found

    @property
    def malformed(self) -> tuple[UsageRule, ...]:
        """The rules that apply whose statement does not parse (they state nothing)."""
        return tuple(rule for rule in self.rules if rule.malformed is not None)

    def as_dict(self) -> dict[str, object]:
        return {"rules": [rule.as_dict() for rule in self.rules],
                "combined": {k: {"value": v, "rules": list(w)} for k, (v, w) in self.combined.items()}}

    def __bool__(self) -> bool:
        return bool(self.rules)

    def __str__(self) -> str:
        """The rules that apply, the first :data:`SHOWN_RULES` of them, each cut at :data:`SHOWN_CHARS`
        characters (``...`` added), and how many more there are: what the ledger's verdict records
        (``up``), the logs and the command write, within a few KiB whatever the file."""
        if not self.rules:
            return "no usage preference"
        shown = "; ".join(_shown(str(rule)) for rule in self.rules[:SHOWN_RULES])
        more = len(self.rules) - SHOWN_RULES
        return f"{shown}; and {more} more rules" if more > 0 else shown


#: Rules, and characters of each, that ``str(UsagePreference)`` writes at most.
SHOWN_RULES = 10
SHOWN_CHARS = 300


def _shown(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."


def split_rule(value: str) -> tuple[str, str]:
    """A rule value's path pattern (``""`` without one) and statement (attach-05, section 3.2:
    a value that starts with ``/`` starts with a path, which ends at the first SP or HTAB)."""
    if not value.startswith("/"):
        return "", value
    end = len(value)
    for separator in (" ", "\t"):
        found = value.find(separator)
        if 0 <= found < end:
            end = found
    return value[:end], value[end:].lstrip(" \t")


#: A rule as the index keeps it: its place among the records given (their order is kept), record
#: name, path pattern, statement and line.
_Found = tuple[int, str, str, str, int]

#: The patterns with ``*``, ``$`` or ``%`` of one priority: ``(index, pieces, anchored)``.
_Special = list[tuple[int, list[str | tuple[str, str]], bool]]


class UsageIndex:
    """The usage rules of one merged group, indexed for :meth:`applicable`: per record
    name, the rules without a path, and the distinct path patterns compiled into the
    project's own rule matcher (:func:`~scrapy_rfc9309.core.matcher.compile_rules`, RFC 9309's
    longest match), which gives the priority of the longest matching pattern of a path;
    the rules of every pattern of that priority apply. A plain literal of that
    priority is the path's prefix of that length (one dict look-up); only the
    patterns with ``*``, ``$`` or ``%`` of that priority are matched one by one. The
    answer for each set of patterns that apply is kept (a path matching none of a
    file's patterns gets the rules without a path, built once)."""

    __slots__ = ("_answers", "_names")

    def __init__(self, records: list[tuple[str, str, int]], speedups: bool = True) -> None:
        by_name: dict[str, tuple[list[_Found], dict[str, list[_Found]]]] = {}
        for seq, (name, value, line) in enumerate(records):
            scope, statement = split_rule(value)
            unscoped, scoped = by_name.setdefault(name, ([], {}))
            if scope:
                scoped.setdefault(scope, []).append((seq, name, scope, statement, line))
            else:
                unscoped.append((seq, name, scope, statement, line))
        #: Per record name (in :data:`RECORDS` order): the rules without a path, the rules of each
        #: pattern (by index), the matcher, each plain literal's index, and per priority the others'
        #: ``(index, pieces, anchored)``.
        self._names: list[tuple[tuple[_Found, ...], list[list[_Found]], Any, dict[str, int], dict[int, _Special]]] = []
        for name in RECORDS:
            if name not in by_name:
                continue
            unscoped, scoped = by_name[name]
            patterns = list(scoped)
            literal: dict[str, int] = {}
            special: dict[int, _Special] = {}
            for index, pattern in enumerate(patterns):
                if "*" in pattern or "$" in pattern or "%" in pattern or not pattern.isascii():
                    pieces, anchored, priority, _ = glob_pieces(pattern)
                    special.setdefault(priority, []).append((index, pieces, anchored))
                else:
                    literal[pattern] = index
            matcher = compile_rules(patterns, array("I", [(index + 1) << 1 | 1 for index in range(len(patterns))]),
                                    speedups) if patterns else None
            self._names.append((tuple(unscoped), list(scoped.values()), matcher, literal, special))
        self._answers: BoundedDict[tuple[int, ...], UsagePreference] = BoundedDict(_MAX_ANSWERS)

    def applicable(self, path: str) -> UsagePreference:
        """The rules that apply to a canonical path (see :func:`applicable`)."""
        key: list[int] = []
        for position, (unscoped, _scoped, matcher, literal, special) in enumerate(self._names):
            rule = None if matcher is None else matcher.best_rule(path)
            if rule is None:
                if unscoped:
                    key.append(~position)
                continue
            priority = _priority(rule.pattern)
            found = literal.get(path[:priority]) if len(path) >= priority else None  # a wildcard's may be longer
            if found is not None:
                key.append(position << _SHIFT | found)
            for index, pieces, anchored in special.get(priority, ()):
                if glob_match(path, pieces, anchored):
                    key.append(position << _SHIFT | index)
        answer_key = tuple(key)
        answer = self._answers.get(answer_key)
        if answer is None:
            answer = self._answers[answer_key] = self._answer(answer_key)
        return answer

    def _answer(self, key: tuple[int, ...]) -> UsagePreference:
        rules: list[UsageRule] = []
        current = -1
        chosen: list[_Found] = []
        for part in (*key, _END):
            position = ~part if part < 0 else part >> _SHIFT
            if position != current and chosen:
                rules += [_rule(*found[1:]) for found in sorted(chosen)]
                chosen = []
            if part == _END:
                break
            current = position
            unscoped, scoped = self._names[position][:2]
            chosen += unscoped if part < 0 else scoped[part & _MASK]
        return UsagePreference(tuple(rules))


#: A pattern's index and its record name's position share one int in an answer's key.
_SHIFT = 32
_MASK = (1 << _SHIFT) - 1
_END = 1 << 62
#: Answers kept per group (one per distinct set of patterns that apply to a path): few, a broad crawl
#: keeps many groups; an answer made again costs the rules of the patterns that apply.
_MAX_ANSWERS = 64


def _priority(pattern: str) -> int:
    """A pattern's priority as the matcher counts it (its canonical length)."""
    return len(pattern) if "%" not in pattern and pattern.isascii() else glob_pieces(pattern)[2]


def _rule(record: str, scope: str, statement: str, line: int) -> UsageRule:
    values, malformed = read_statement(record, statement)
    return UsageRule(record, line, scope, statement, values, malformed)


def applicable(records: list[tuple[str, str, int]], path: str) -> UsagePreference:
    """The rules (``(name, value, line)`` records) that apply to a canonical path:
    per record name, every rule of the longest matching path pattern (a rule without
    one matches every path, shorter than any pattern). Builds a :class:`UsageIndex`
    (a caller that asks about many paths keeps one)."""
    return UsageIndex(records).applicable(path)
