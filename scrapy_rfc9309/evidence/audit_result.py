"""What the ledger's audit finds (:func:`.audit.audit`): the problems, per origin and per run,
the settings a run's heads record, and the text report of ``scrapy robotstxt audit``. Pure Python.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..core import verdict_kinds
from .format import FORMAT

__all__ = ["CORRUPT", "DECIDED", "MAX_PROBLEMS", "MISMATCH", "MISSING", "ORPHAN", "UNSEALED", "VERDICTS", "Audit",
           "LedgerError", "OriginReport", "Problem", "RunReport", "RunSettings", "VersionInfo", "VersionUse",
           "format_text", "strings"]

#: Kinds of problem. ``unsealed`` is what a killed process leaves (its open segment
#: without a seal, perhaps a last line cut short): everything written verifies, the
#: run did not end cleanly. ``orphan`` is a version file no record names (left by a run
#: that was removed). The others mean the ledger was altered, lost files, or records
#: something the archived robots.txt does not justify.
CORRUPT, MISSING, MISMATCH, UNSEALED, ORPHAN = "corrupt", "missing", "mismatch", "unsealed", "orphan"


#: Verdicts (``d``) a robots.txt version decides: the URL must be allowed for every one but ``disallowed``;
#: and every verdict a ledger records. Both from the one table of verdict kinds.
DECIDED = verdict_kinds.DECIDED
VERDICTS = verdict_kinds.LEDGER_VERDICTS
#: Problems listed (all are counted): a ledger altered throughout would list millions.
MAX_PROBLEMS = 10_000


class LedgerError(Exception):
    """A directory that cannot be audited: missing, unreadable, or not a ledger."""


@dataclass(frozen=True)
class Problem:
    """What does not verify: the file, the line (1-based; ``None`` for the whole file),
    the kind (:data:`CORRUPT`, :data:`MISSING`, :data:`MISMATCH`, :data:`UNSEALED`) and what is wrong."""

    file: str
    line: int | None
    kind: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.kind}: {self.message}"


@dataclass
class VersionInfo:
    """A version file's fields, once its digest verified (``ok``)."""

    path: str
    document: str
    requested_url: str
    final_url: str
    status: int
    access: str
    truncated: bool
    ok: bool


@dataclass
class VersionUse:
    """A version as one origin used it: first and last time a record names it."""

    digest: str
    document: str | None
    status: int | None
    access: str | None
    first: float
    last: float


@dataclass
class OriginReport:
    """One origin's share of the ledger: the versions its records name, its verdicts, its responses."""

    origin: str
    versions: dict[str, VersionUse] = field(default_factory=dict)
    #: Verdicts by ``d``; ``dropped`` ones also by ``why`` in :attr:`dropped`.
    requests: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    #: Responses by ``d`` (``passed``, ``usage_denied``).
    responses: Counter[str] = field(default_factory=Counter)

    def used(self, digest: str, when: float, info: VersionInfo | None) -> None:
        use = self.versions.get(digest)
        if use is None:
            self.versions[digest] = VersionUse(digest, info.document if info else None,
                                               info.status if info else None, info.access if info else None,
                                               when, when)
        else:
            use.first, use.last = min(use.first, when), max(use.last, when)


@dataclass
class RunReport:
    """One run (one process's crawl): the directory of its first segment, its segments and records."""

    run: str
    directory: str
    segments: int = 0
    records: int = 0
    #: ``ended`` (sealed with ``end``), ``not sealed`` (killed: the last segment open), ``incomplete``
    #: (segments missing or altered).
    ending: str = "incomplete"
    #: The responses its segments record (its first head's ``resp``): ``all``, or ``refused`` (those a
    #: usage preference kept from the spider; a passed response is implied by its ``allowed`` verdict).
    responses: str = "all"
    #: What the manifest check reads: the first head's ``man``, the last seal's ``h``, the last segment's number.
    manifest_line: str | None = field(default=None, repr=False)
    last_seal: str | None = field(default=None, repr=False)
    last_segment: int = field(default=0, repr=False)
    #: Whether the last segment is plain (not replaced by its gzip form yet).
    last_plain: bool = field(default=False, repr=False)


@dataclass
class Audit:
    """The audit's findings (see :func:`audit`)."""

    directories: list[str]
    #: The anchors checked (``--anchor``): hash -> where the manifest line is (``file:line``), or None.
    anchors: dict[str, str | None] = field(default_factory=dict)
    #: Per directory: the chain hash of its manifest's last line (its head), or None without a manifest.
    heads: dict[str, str | None] = field(default_factory=dict)
    origins: dict[str, OriginReport] = field(default_factory=dict)
    runs: list[RunReport] = field(default_factory=list)
    versions: int = 0
    #: The problems, the first :data:`MAX_PROBLEMS` of them; :attr:`kinds` counts them all.
    problems: list[Problem] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)

    def add(self, problem: Problem, listed: int = MAX_PROBLEMS) -> None:
        """Count the problem; list it while fewer than ``listed`` are."""
        self.kinds[problem.kind] += 1
        if len(self.problems) < listed:
            self.problems.append(problem)

    def exit_status(self, allow_unsealed: bool = False) -> int:
        """0 when everything verifies (with ``allow_unsealed``, a run that did not end
        cleanly is accepted when what it wrote verifies), else 1."""
        blocking = sum(count for kind, count in self.kinds.items() if not (allow_unsealed and kind == UNSEALED))
        return 1 if blocking else 0

    def as_dict(self, allow_unsealed: bool = False) -> dict[str, Any]:
        """The ``--json`` form (documented in docs/compliance.md)."""
        status = self.exit_status(allow_unsealed)
        return {
            "format": FORMAT,
            "ok": status == 0,
            "exit": status,
            "directories": self.directories,
            "heads": self.heads,
            "anchors": [{"hash": anchor, "found": where} for anchor, where in self.anchors.items()],
            "versions": self.versions,
            "origins": [
                {
                    "origin": report.origin,
                    "versions": [
                        {"digest": use.digest, "document": use.document, "status": use.status, "access": use.access,
                         "first": use.first, "last": use.last}
                        for use in sorted(report.versions.values(), key=lambda use: use.first)
                    ],
                    "requests": {**{d: report.requests[d] for d in sorted(VERDICTS)},
                                 "dropped_by": dict(sorted(report.dropped.items()))},
                    "responses": {"received": sum(report.responses.values()), **dict(sorted(report.responses.items()))},
                }
                for report in sorted(self.origins.values(), key=lambda report: report.origin)
            ],
            "runs": [{"run": run.run, "directory": run.directory, "segments": run.segments, "records": run.records,
                      "ending": run.ending, "responses": run.responses} for run in self.runs],
            "problem_count": dict(sorted(self.kinds.items())),
            "problems": [{"file": p.file, "line": p.line, "kind": p.kind, "message": p.message}
                         for p in self.problems],
        }



@dataclass(frozen=True)
class RunSettings:
    """A head's ``cfg``: what the run's verdicts depend on besides the robots.txt."""

    purpose: tuple[str, ...]
    deny: tuple[str, ...]
    read: frozenset[str]
    tdm: bool
    #: The usage vocabulary's revision the run read preferences with (``UsagePreference.denies`` reads it
    #: so); not compared, as before it was kept.
    vocab: str = field(default="", compare=False)

    @classmethod
    def of(cls, value: object) -> RunSettings | None:
        """The settings of a head's ``cfg``, or None when it is not one."""
        if not isinstance(value, dict):
            return None
        purpose, deny, read = value.get("purpose"), value.get("deny"), value.get("read")
        if not (strings(purpose) and strings(deny) and strings(read) and isinstance(value.get("tdm"), bool)
                and isinstance(value.get("crawl_delay"), bool) and isinstance(value.get("vocab"), str)):
            return None
        return cls(tuple(purpose), tuple(deny), frozenset(read), value["tdm"], value["vocab"])  # type: ignore[arg-type]


def strings(value: object) -> bool:
    """Whether ``value`` is a list of strings (as JSON gives it)."""
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


# -- the text report ------------------------------------------------------------------
_COLUMNS = [("allowed", "allowed"), ("disallowed", "disallowed"), ("held", "held"), ("dropped", "dropped"),
            ("usage_denied", "usage-denied"), ("tdm_reserved", "tdm-reserved"), ("requeued", "requeued"),
            ("not_judged", "not judged")]


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))


def format_text(result: Audit, allow_unsealed: bool = False) -> str:
    """The report for people: per origin, per run, the problems, and the result."""
    runs = result.runs
    out = [f"Ledger audit of {', '.join(result.directories)}: {_count(len(runs), 'run')}, "
           f"{_count(sum(run.segments for run in runs), 'segment')}, "
           f"{_count(sum(run.records for run in runs), 'record')}, {_count(result.versions, 'version')}", ""]
    header = ["origin", *(label for _, label in _COLUMNS), "responses"]
    rows = [header]
    origins = sorted(result.origins.values(), key=lambda report: report.origin)
    for report in origins:
        rows.append([report.origin, *(str(report.requests[key]) for key, _ in _COLUMNS),
                     str(sum(report.responses.values()))])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    out.append("Requests per origin")
    for row in rows:
        out.append("  " + "  ".join(cell.ljust(widths[0]) if i == 0 else cell.rjust(widths[i])
                                    for i, cell in enumerate(row)).rstrip())
    out.append("")
    out.append("Versions per origin")
    for report in origins:
        out.append(f"  {report.origin}")
        for use in sorted(report.versions.values(), key=lambda use: use.first):
            kind = f"{use.document} {use.access} {use.status}" if use.document else "(no verified version file)"
            out.append(f"    {use.digest[:16]}  {kind}  used {_when(use.first)} to {_when(use.last)}")
        extra = [f"{why} {count}" for why, count in sorted(report.dropped.items())]
        if extra:
            out.append(f"    dropped by why: {', '.join(extra)}")
        if report.responses.get("usage_denied"):
            out.append(f"    responses usage-denied: {report.responses['usage_denied']}")
    out.append("")
    out.append("Runs")
    for run in runs:
        out.append(f"  {run.run} ({run.directory}): {_count(run.segments, 'segment')}, "
                   f"{_count(run.records, 'record')}, {run.ending}"
                   f"{'' if run.responses == 'all' else ', responses passed to the spider not recorded'}")
    out.append("")
    status = result.exit_status(allow_unsealed)
    total = sum(result.kinds.values())
    if total:
        out.append(f"Problems ({total})")
        out.extend(f"  {problem}" for problem in result.problems)
        if total > len(result.problems):
            out.append(f"  ... and {total - len(result.problems)} more, not listed")
        out.append("")
    verdict = "everything verifies" if not total else (
        "everything written verifies; runs that did not end cleanly accepted (--allow-unsealed)" if status == 0
        else "FAILED")
    out.append(f"Result: {verdict} (exit {status})")
    return "\n".join(out)
