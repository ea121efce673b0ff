"""The provenance of items (docs/provenance.md): its shape's bounds, shared with the
middleware that writes it, and the per-item check of ``scrapy robotstxt audit --item``.

The check reads exported items (JSON Lines, as ``scrapy crawl -O items.jsonl`` writes
them) and the ledger: each item's verdict record must exist at the place its
provenance names (run, segment, line), its segment must verify (the audit's chain and
seal check, :func:`~.audit.audit`), its chain hash must be the one the item names, and
the record must say what the item says (URL, verdict, token, rule, robots.txt version,
purpose tokens, tdmrep.json rule). Each mismatch names the item's line and field.

Memory grows with the number of items that name a ledger record (a few small values
each), not with the ledger's size: the segments are streamed. Pure Python.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .audit import CORRUPT, MISMATCH, MISSING, Audit, audit
from .files import lines, listing
from .format import GENESIS, RUNS_DIR, SEGMENT_RE, chain, link

__all__ = ["MAX_ITEM_BYTES", "MAX_LIST", "MAX_TEXT", "MAX_URL", "VERSION", "ItemCheck", "ItemProblem", "check_items",
           "cut", "format_items", "shown_rule"]

#: The provenance's shape version (its ``v``).
VERSION = 1
#: Characters of a text a site controls (a rule's pattern, a statement, a header) the provenance keeps;
#: a longer one is cut, ``...`` added.
MAX_TEXT = 200
#: Characters of a URL it keeps.
MAX_URL = 4096
#: Entries of a list (statements, labels, directives, sources) it keeps; ``more`` counts the rest.
MAX_LIST = 10
#: Bytes of one exported item's line read; a longer one is reported and not read.
MAX_ITEM_BYTES = 16 << 20


def cut(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` within ``limit`` characters: cut, ``...`` added, when longer."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def shown_rule(directive: str, pattern: str, line: int) -> dict[str, Any]:
    """A robots.txt rule as the provenance names it (its pattern cut at :data:`MAX_TEXT`)."""
    return {"directive": directive, "pattern": cut(pattern), "line": line}


@dataclass(frozen=True)
class ItemProblem:
    """An item whose provenance does not verify: its line in the export (1-based), the
    field (a dotted path inside the provenance, or ``item``) and what is wrong."""

    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"item line {self.line}: {self.field}: {self.message}"


@dataclass
class ItemCheck:
    """What :func:`check_items` found."""

    path: str
    audit: Audit
    #: Items read, items with a provenance, items whose ledger record verified.
    items: int = 0
    with_provenance: int = 0
    verified: int = 0
    problems: list[ItemProblem] = field(default_factory=list)
    #: Problems not kept (past :data:`MAX_PROBLEMS`).
    more: int = 0

    def add(self, line: int, name: str, message: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(ItemProblem(line, name, message))
        else:
            self.more += 1

    def exit_status(self, allow_unsealed: bool = False) -> int:
        """0 when every item with a provenance verifies and the ledger's audit passes, else 1."""
        return 1 if self.problems or self.more or self.audit.exit_status(allow_unsealed) else 0

    def as_dict(self, allow_unsealed: bool = False) -> dict[str, Any]:
        """The ``item`` part of ``audit --item ... --json``."""
        return {"file": self.path, "ok": self.exit_status(allow_unsealed) == 0, "items": self.items,
                "with_provenance": self.with_provenance, "verified": self.verified,
                "problem_count": len(self.problems) + self.more,
                "problems": [{"line": p.line, "field": p.field, "message": p.message} for p in self.problems]}


#: Item problems kept at most (all are counted).
MAX_PROBLEMS = 10_000


@dataclass
class _Wanted:
    """What an item's provenance says its verdict record is."""

    line: int
    provenance: dict[str, Any]
    hash: str


def check_items(directories: Sequence[str | os.PathLike[str]], path: str | os.PathLike[str],
                name: str = "provenance", result: Audit | None = None) -> ItemCheck:
    """Check the provenance (the field ``name``) of every item of the JSON Lines file
    ``path`` against the ledger ``directories`` (audited here unless ``result`` is that
    audit). Raises :class:`~.audit.LedgerError` for a directory that is not a ledger and
    :class:`OSError` for an items file that cannot be read."""
    names = [os.fspath(directory) for directory in directories]
    if result is None:
        result = audit(names)
    check = ItemCheck(os.fspath(path), result)
    wanted: dict[tuple[str, int], dict[int, list[_Wanted]]] = {}
    for number, item in _items(check, os.fspath(path)):
        provenance = item.get(name)
        if provenance is None:
            continue  # not derived from a judged response: nothing to check
        check.with_provenance += 1
        found = _wanted(check, number, name, provenance)
        if found is not None:
            run, segment, record, hashed = found
            wanted.setdefault((run, segment), {}).setdefault(record, []).append(_Wanted(number, provenance, hashed))
    segments = _segments(names)
    damaged = _damaged(result)
    for (run, segment), records in wanted.items():
        place = segments.get((run, segment))
        if place is None:
            for items in records.values():
                for want in items:
                    check.add(want.line, f"{name}.ledger.seg",
                              f"segment {segment} of run {run} is not in the ledger ({', '.join(names)})")
            continue
        _check_segment(check, name, place, records, damaged.get(place[0]))
    return check


def _items(check: ItemCheck, path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, "rb") as handle:
        number = 0
        while raw := handle.readline(MAX_ITEM_BYTES + 1):
            number += 1
            if len(raw) > MAX_ITEM_BYTES:
                check.add(number, "item", f"a line over {MAX_ITEM_BYTES:,} bytes (not read)")
                while raw and not raw.endswith(b"\n"):
                    raw = handle.readline(MAX_ITEM_BYTES + 1)
                continue
            if not raw.strip():
                continue
            check.items += 1
            try:
                item = json.loads(raw)
            except (ValueError, RecursionError):
                item = None
            if not isinstance(item, dict):
                check.add(number, "item", "not a JSON object")
                continue
            yield number, item


def _wanted(check: ItemCheck, number: int, name: str,
            provenance: object) -> tuple[str, int, int, str] | None:
    """The verdict record an item's provenance names (run, segment, line, chain hash), or None (reported)."""
    if not isinstance(provenance, dict):
        check.add(number, name, "not an object")
        return None
    if provenance.get("v") != VERSION:
        check.add(number, f"{name}.v", f"version {provenance.get('v')!r}: this check reads version {VERSION}")
        return None
    ledger = provenance.get("ledger")
    if not isinstance(ledger, dict):
        check.add(number, f"{name}.ledger", "names no ledger record (crawled without ROBOTSTXT_LEDGER?)")
        return None
    run, segment, record, hashed = ledger.get("run"), ledger.get("seg"), ledger.get("seq"), ledger.get("hash")
    for key, value, kind in (("run", run, str), ("seg", segment, int), ("seq", record, int), ("hash", hashed, str)):
        if not isinstance(value, kind) or isinstance(value, bool):
            check.add(number, f"{name}.ledger.{key}", f"{value!r} is not a {kind.__name__}")
            return None
    return run, segment, record, hashed  # type: ignore[return-value]


def _segments(directories: list[str]) -> dict[tuple[str, int], tuple[str, bool]]:
    """Every segment file of the directories, by run and number (its gzip form first, as the audit reads it)."""
    found: dict[tuple[str, int], tuple[str, bool]] = {}
    for directory in directories:
        segments, _ = listing(directory)
        for name in segments:
            match = SEGMENT_RE.match(name)
            if match is None:
                continue
            key = (match["run"], int(match["seg"]))
            closed = bool(match["gz"])
            if key not in found or (closed and not found[key][1]):
                found[key] = (os.path.join(directory, RUNS_DIR, name), closed)
    return found


def _damaged(result: Audit) -> dict[str, str]:
    """Per segment file: the first problem the audit found in it that means records were altered or lost."""
    damaged: dict[str, str] = {}
    for problem in result.problems:
        if problem.kind in (CORRUPT, MISSING, MISMATCH) and problem.file not in damaged:
            damaged[problem.file] = str(problem)
    return damaged


def _check_segment(check: ItemCheck, name: str, place: tuple[str, bool], records: dict[int, list[_Wanted]],
                   damaged: str | None) -> None:
    path, closed = place
    previous = GENESIS
    chained = True
    settings: dict[str, Any] = {}
    last = max(records)
    number = 0
    try:
        for number, raw in enumerate(lines(path, closed), 1):
            line = raw[:-1] if raw.endswith(b"\n") else raw
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                record = None
            if not isinstance(record, dict) or record.get("p") != link(previous):
                chained = False
            if number == 1 and isinstance(record, dict) and isinstance(record.get("cfg"), dict):
                settings = record["cfg"]
            previous = chain(previous, line)
            for want in records.get(number, ()):
                if not _compare(check, name, want, record if isinstance(record, dict) else None, previous.hex(),
                                chained, settings, f"{path}:{number}"):
                    continue
                if damaged is None:
                    check.verified += 1
                else:  # the segment's links up to here hold; a later record or the seal does not
                    check.add(want.line, f"{name}.ledger", f"its segment does not verify ({damaged})")
            if number >= last:
                break
    except (OSError, EOFError, zlib.error) as exc:
        for line_number, items in records.items():
            if line_number > number:
                for want in items:
                    check.add(want.line, f"{name}.ledger", f"{path} cannot be read to line {line_number}: {exc}")
        return
    for line_number, items in records.items():
        if line_number > number:
            for want in items:
                check.add(want.line, f"{name}.ledger.seq", f"{path} has no line {line_number} ({number} lines)")


def _compare(check: ItemCheck, name: str, want: _Wanted, record: dict[str, Any] | None, hashed: str, chained: bool,
             settings: dict[str, Any], where: str) -> bool:
    """Whether the item's provenance is what its verdict record says (each field that differs named)."""
    line, provenance = want.line, want.provenance
    if not chained:
        check.add(line, f"{name}.ledger.hash", f"the chain of {where} breaks at or before this record: records were "
                  "edited, removed, added or reordered")
        return False
    if want.hash != hashed:
        check.add(line, f"{name}.ledger.hash", f"{want.hash!r}, but the chain hash of {where} is {hashed!r}")
        return False
    if record is None or record.get("k") != "verdict":
        kind = None if record is None else record.get("k")
        check.add(line, f"{name}.ledger.seq", f"{where} is a {kind!r} record, not a verdict")
        return False
    ok = True
    fields: list[tuple[str, object, object]] = [
        ("request_url", provenance.get("request_url"), _cut_url(record.get("u"))),
        ("verdict", provenance.get("verdict"), record.get("d")),
        ("token", provenance.get("token"), record.get("a")),
        ("rule", provenance.get("rule"), _rule(record.get("r"))),
    ]
    robots = provenance.get("robots")
    fields.append(("robots.digest", robots.get("digest") if isinstance(robots, dict) else None, record.get("ver")))
    if "purpose_tokens" in provenance and isinstance(settings.get("purpose"), list):
        fields.append(("purpose_tokens", provenance.get("purpose_tokens"), record.get("pt", settings["purpose"])))
    if "tr" in record:
        tdm = provenance.get("tdmrep")
        rule = tdm.get("rule") if isinstance(tdm, dict) else None
        said: object = None if not isinstance(rule, dict) else [int(bool(rule.get("reserved"))), rule.get("location"),
                                                                 rule.get("index")]
        recorded_tdm = record.get("tr")
        if isinstance(recorded_tdm, list) and len(recorded_tdm) == 3 and isinstance(recorded_tdm[1], str):
            recorded_tdm = [recorded_tdm[0], cut(recorded_tdm[1]), recorded_tdm[2]]
        fields.append(("tdmrep", said, recorded_tdm))
    for key, said, recorded in fields:
        if said != recorded:
            ok = False
            check.add(line, f"{name}.{key}", f"{said!r}, but its verdict record ({where}) says {recorded!r}")
    fetched, judged = provenance.get("fetched"), record.get("t")
    if isinstance(fetched, (int, float)) and isinstance(judged, (int, float)) and fetched + 0.001 < judged:
        ok = False
        check.add(line, f"{name}.fetched", f"{fetched!r}, before its verdict was recorded ({judged!r}, {where})")
    return ok


def _cut_url(url: object) -> object:
    return cut(url, MAX_URL) if isinstance(url, str) else url


def _rule(rule: object) -> object:
    """A verdict record's ``r`` as the provenance names a rule."""
    if isinstance(rule, list) and len(rule) == 3 and isinstance(rule[0], str) and isinstance(rule[1], str) \
            and isinstance(rule[2], int):
        return shown_rule(rule[0], rule[1], rule[2])
    return rule


def format_items(check: ItemCheck) -> str:
    """The check in words, after the audit's report."""
    lines = [f"Items: {check.path}: {check.items} read, {check.with_provenance} with a provenance, "
             f"{check.verified} tied to a verified verdict record"]
    lines.extend(f"  {problem}" for problem in check.problems)
    if check.more:
        lines.append(f"  ... and {check.more} more problems")
    count = len(check.problems) + check.more
    lines.append("Items: OK" if not count else f"Items: {count} problem{'' if count == 1 else 's'}")
    return "\n".join(lines)
