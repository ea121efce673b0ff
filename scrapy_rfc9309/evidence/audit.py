"""The ledger's audit (docs/ledger-format.md, "What a checker does"): reads the
directories of a crawl or a fleet, checks every segment's chain and seal, every
version's digest, every verdict against the archived robots.txt parsed again, and
every response against an earlier allowed verdict, and reports per origin and per run.

The files are streamed: memory grows with the number of origins, versions and
fingerprints allowed but still awaiting their response, not with the ledger's size.
Pure Python (no Scrapy or Twisted): ``scrapy robotstxt audit`` is its command.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import time
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from ..core.caches import BoundedDict
from ..core.origins import Origin
from ..core.robotstxt import RobotsTxt, parse
from ..core.syntax import DEFAULT_MAX_BYTES
from ..core.tdmrep import TdmRep
from ..core.usage_rules import UsagePreference
from ..core.usage_vocabulary import REVISION, REVISIONS_READ
from .format import (
    FORMAT,
    FORMATS_READ,
    GENESIS,
    MANIFEST,
    RUNS_DIR,
    SEGMENT_RE,
    VERSION_FORMAT,
    VERSIONS_DIR,
    chain,
    file_hash,
    link,
    version_digest,
)

__all__ = ["CORRUPT", "MAX_PROBLEMS", "MISMATCH", "MISSING", "ORPHAN", "UNSEALED", "Audit", "LedgerError",
           "OriginReport", "Problem", "RunReport", "audit", "format_text"]

#: Kinds of problem. ``unsealed`` is what a killed process leaves (its open segment
#: without a seal, perhaps a last line cut short): everything written verifies, the
#: run did not end cleanly. ``orphan`` is a version file no record names (left by a run
#: that was removed). The others mean the ledger was altered, lost files, or records
#: something the archived robots.txt does not justify.
CORRUPT, MISSING, MISMATCH, UNSEALED, ORPHAN = "corrupt", "missing", "mismatch", "unsealed", "orphan"

#: Verdicts (``d``) a robots.txt version decides: the URL must be allowed for every one but ``disallowed``.
_DECIDED = ("allowed", "disallowed", "usage_denied", "tdm_reserved")
_VERDICTS = frozenset({*_DECIDED, "held", "dropped", "requeued", "not_judged"})
_VERSION_NAME = re.compile(r"^(?P<digest>[0-9a-f]{64})\.warc\.gz$")
#: Parsed robots.txt versions kept at hand (a crawl's verdicts mostly follow each other per origin).
_PARSED_CACHE = 256
_CHUNK = 1 << 16
#: Problems listed (all are counted): a ledger altered throughout would list millions.
MAX_PROBLEMS = 10_000
#: A record's line and a version's body longer than this are reported, not read: what the writer
#: writes is far shorter (a URL, a rule), and a hostile file must not exhaust the audit's memory.
MAX_LINE_BYTES = 1 << 20
MAX_VERSION_BYTES = 64 << 20


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

    def add(self, problem: Problem) -> None:
        self.kinds[problem.kind] += 1
        if len(self.problems) < MAX_PROBLEMS:
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
                    "requests": {**{d: report.requests[d] for d in sorted(_VERDICTS)},
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


def audit(directories: Sequence[str | os.PathLike[str]], anchors: Sequence[str] = ()) -> Audit:
    """Audit the ledger directories of one crawl or of a fleet together; each of
    ``anchors`` (a head kept outside, see :class:`~scrapy_rfc9309.ledger.writer.Ledger`) must be
    the chain hash of a line of a directory's manifest.
    Raises :class:`LedgerError` for a directory that is missing, unreadable or not a ledger,
    or an anchor that is not a SHA-256 in hex."""
    if not directories:
        raise LedgerError("no ledger directory given")
    for anchor in anchors:
        if not re.fullmatch(r"[0-9a-fA-F]{64}", anchor):
            raise LedgerError(f"--anchor {anchor!r} is not a SHA-256 hash in hex (64 digits)")
    names = [os.fspath(directory) for directory in directories]
    listings = [_listing(directory) for directory in names]
    auditor = _Auditor(Audit(names))
    for directory, (_, versions) in zip(names, listings, strict=True):
        for name in versions:
            auditor.version_file(directory, name)
    runs: dict[str, dict[int, list[tuple[str, str, bool]]]] = {}
    for directory, (segments, _) in zip(names, listings, strict=True):
        for name in segments:
            path = os.path.join(directory, RUNS_DIR, name)
            match = SEGMENT_RE.match(name)
            if match is None:
                auditor.problem(path, None, CORRUPT, "not a segment's file name (ignored)")
                continue
            runs.setdefault(match["run"], {}).setdefault(int(match["seg"]), []).append(
                (directory, path, bool(match["gz"])))
    for run in sorted(runs):
        auditor.run(run, runs[run])
    lines: dict[str, str] = {}
    for directory in names:
        lines.update(auditor.manifest(directory))
    for anchor in anchors:
        where = lines.get(anchor.lower())
        auditor.result.anchors[anchor.lower()] = where
        if where is None:
            auditor.problem(os.path.join(names[0], MANIFEST) if len(names) == 1 else ", ".join(names), None, MISSING,
                            f"the anchor {anchor.lower()} is the hash of no line of the manifest: the manifest, and "
                            "the runs it lists, were rewritten or cut short up to it")
    for directory, (_, versions) in zip(names, listings, strict=True):
        auditor.orphans(directory, versions)
    return auditor.result


def _listing(directory: str) -> tuple[list[str], list[str]]:
    """The names in a ledger directory's ``runs`` and ``versions`` (temporary files left out)."""
    if not os.path.isdir(directory):
        raise LedgerError(f"{directory}: not a directory" if os.path.exists(directory) else
                          f"{directory}: no such directory")
    found: list[list[str] | None] = []
    for sub in (RUNS_DIR, VERSIONS_DIR):
        path = os.path.join(directory, sub)
        try:
            found.append(sorted(name for name in os.listdir(path) if not name.endswith(".tmp")))
        except FileNotFoundError:
            found.append(None)
        except OSError as exc:
            raise LedgerError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    segments, versions = found
    if segments is None and versions is None:
        raise LedgerError(f"{directory}: not a ledger directory (it has neither {RUNS_DIR}/ nor {VERSIONS_DIR}/)")
    return segments or [], versions or []


class _Auditor:
    def __init__(self, result: Audit) -> None:
        self.result = result
        #: Every version file's fields, by digest (the first copy that verified, else the first).
        self.versions: dict[str, VersionInfo] = {}
        self.missing_reported: set[str] = set()
        #: Digests whose version file could not be read (reported once, as the file's problem).
        self.unreadable: set[str] = set()
        #: The SHA-256 of each version file's bytes, by directory and digest.
        self.file_hashes: dict[tuple[str, str], str] = {}
        #: The digests the records name (a run may name a version another directory of the fleet holds).
        self.named: set[str] = set()
        self.parsed: BoundedDict[str, RobotsTxt] = BoundedDict(_PARSED_CACHE)

    def problem(self, file: str, line: int | None, kind: str, message: str) -> None:
        self.result.add(Problem(file, line, kind, message))

    # -- versions -------------------------------------------------------------------
    def version_file(self, directory: str, name: str) -> None:
        path = os.path.join(directory, VERSIONS_DIR, name)
        match = _VERSION_NAME.match(name)
        if match is None:
            self.problem(path, None, CORRUPT, "not a version's file name (ignored)")
            return
        digest = match["digest"]
        try:
            with open(path, "rb") as handle:
                self.file_hashes[(directory, digest)] = file_hash(handle.read(MAX_VERSION_BYTES + 1))
            info, body = _read_version(path)
        except (OSError, ValueError, EOFError, zlib.error) as exc:
            self.unreadable.add(digest)
            self.problem(path, None, CORRUPT, f"not a readable version file: {exc}")
            return
        except Exception as exc:  # warcio's ArchiveLoadFailed and whatever a damaged file raises in its reader
            self.unreadable.add(digest)
            self.problem(path, None, CORRUPT, f"not a readable WARC file: {type(exc).__name__}: {exc}")
            return
        recorded = info.pop("version")
        computed = version_digest(info["document"], info["requested_url"], info["redirects"], info["final_url"],
                                  info["status"], info["access"], body)
        ok = computed == digest
        if not ok:
            self.problem(path, None, CORRUPT, f"the digest of its fields and body is {computed}, not its name")
        elif recorded != digest:
            ok = False
            self.problem(path, None, CORRUPT, f"WARC-RFC9309-Version is {recorded!r}, not its name")
        known = self.versions.get(digest)
        if known is None or (ok and not known.ok):
            if known is None:
                self.result.versions += 1
            self.versions[digest] = VersionInfo(path, info["document"], info["requested_url"], info["final_url"],
                                                info["status"], info["access"], info["truncated"], ok)

    def robots(self, digest: str, info: VersionInfo) -> RobotsTxt:
        """The version parsed again (kept for the next verdicts)."""
        robots = self.parsed.get(digest)
        if robots is None:
            _, body = _read_version(info.path)
            robots = self.parsed[digest] = parse(body, max(DEFAULT_MAX_BYTES, len(body)), url=info.final_url)
        return robots

    def tdmrep(self, digest: str, info: VersionInfo) -> TdmRep:
        """A tdmrep.json version parsed again (not kept: TDM-reserved verdicts are few)."""
        _, body = _read_version(info.path)
        return TdmRep(body, len(body) if info.truncated else len(body) + 1, url=info.final_url)

    def version(self, digest: object, file: str, line: int, document: str) -> VersionInfo | None:
        """The version a record names, or None (a problem said why, once per missing digest)."""
        if not isinstance(digest, str):
            self.problem(file, line, CORRUPT, f"version {digest!r} is not a digest")
            return None
        self.named.add(digest)
        info = self.versions.get(digest)
        if info is None:
            if digest not in self.missing_reported and digest not in self.unreadable:
                self.missing_reported.add(digest)
                self.problem(file, line, MISSING, f"version {digest} is in no directory's {VERSIONS_DIR}/ "
                             "(reported at its first reference)")
            return None
        if info.document != document:
            self.problem(file, line, MISMATCH, f"version {digest} is a {info.document}, not a {document}")
            return None
        return info if info.ok else None

    # -- the directory: its manifest, its version files no record names -----------------
    def manifest(self, directory: str) -> dict[str, str]:
        """Check the directory's manifest: its chain, and that it and the runs of the
        directory agree (every run listed has its segments, each run's head names its start
        line, each run's end is its last seal). Returns where each line's chain hash is."""
        path = os.path.join(directory, MANIFEST)
        runs = {report.run: report for report in self.result.runs if report.directory == directory}
        where: dict[str, str] = {}
        starts: dict[str, str] = {}
        ends: dict[str, tuple[int, dict[str, Any]]] = {}
        previous = GENESIS
        broken = False
        try:
            lines = list(_lines(path, False))
        except FileNotFoundError:
            lines = []
            if runs:
                self.problem(path, None, MISSING, "the directory's manifest is missing (deleted): the runs cannot be "
                             "told complete")
        except OSError as exc:
            self.problem(path, None, CORRUPT, f"cannot be read: {exc}")
            return where
        rest_of_long_line = False
        for number, raw in enumerate(lines, 1):
            if rest_of_long_line:  # the rest of a line over MAX_LINE_BYTES, reported once
                rest_of_long_line = not raw.endswith(b"\n")
                continue
            if len(raw) > MAX_LINE_BYTES or not raw.endswith(b"\n"):
                rest_of_long_line = len(raw) > MAX_LINE_BYTES
                if number == len(lines) and len(raw) <= MAX_LINE_BYTES:  # what a process killed as it wrote leaves
                    self.problem(path, number, UNSEALED, "the manifest's last line was cut short by an interrupted "
                                 "write (a process killed as it wrote it)")
                else:
                    self.problem(path, number, CORRUPT, "a line cut short, or over 1 MiB")
                previous = chain(previous, raw.rstrip(b"\n"))
                continue
            line = raw[:-1]
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                record = None
            # Format 3 names the full chain hash before the line, format 2 its first 16 digits.
            if isinstance(record, dict) and record.get("p") not in (
                    (link(previous), previous.hex()) if number > 1 else ("",)) and not broken:
                broken = True
                self.problem(path, number, CORRUPT, "the manifest's chain breaks here: lines were edited, removed, "
                             "added or reordered here or just before")
            previous = chain(previous, line)
            where[previous.hex()] = f"{path}:{number}"
            if record is None and line.startswith(b'{"k":"') and number < len(lines):
                # A process killed as it wrote the line; the next append ended it with a line break.
                self.problem(path, number, UNSEALED, "a line cut short by an interrupted write (a process killed "
                             "as it wrote it), ended and chained as it is by the next process to append")
                continue
            run = record.get("run") if isinstance(record, dict) else None
            if not isinstance(run, str) or record.get("k") not in ("start", "end"):
                self.problem(path, number, CORRUPT, "not a manifest line (a start or end naming a run)")
                continue
            if record["k"] == "start":
                starts[run] = previous.hex()
                if run not in runs:
                    self.problem(path, number, MISSING, f"run {run} is in the manifest, but none of its segments is "
                                 f"in {os.path.join(directory, RUNS_DIR)}: it was removed")
            else:
                ends[run] = (number, record)
        self.result.heads[directory] = previous.hex() if lines else None
        for run, report in runs.items():
            if report.manifest_line is not None and starts.get(run) != report.manifest_line:
                self.problem(path, None, MISSING, f"run {run}'s head names manifest line "
                             f"{report.manifest_line[:16]}..., which the manifest does not hold: the manifest was "
                             "replaced, cut short or deleted")
            end = ends.get(run)
            if end is None:
                if report.ending == "ended" and report.last_plain:
                    # The end line is appended before the last segment is compressed.
                    report.ending = "not sealed"
                    self.problem(path, None, UNSEALED, f"run {run} did not end cleanly: killed after it sealed its "
                                 "last segment, before it appended its end line (the segment is not compressed)")
                elif report.ending == "ended":
                    self.problem(path, None, MISSING, f"run {run} ended, but the manifest has no end line for it: the "
                                 "manifest was cut short")
            elif end[1].get("h") != report.last_seal or end[1].get("segs") != report.last_segment:
                self.problem(path, end[0], CORRUPT, f"run {run} ended at segment {end[1].get('segs')!r} with seal "
                             f"{str(end[1].get('h'))[:16]}..., its segments end at {report.last_segment} with "
                             f"{str(report.last_seal)[:16]}...: segments were removed, replaced or rewritten")
        return where

    def orphans(self, directory: str, names: list[str]) -> None:
        """Report the version files of ``directory`` that no record of its runs names."""
        named = self.named
        killed = [report.run for report in self.result.runs
                  if report.directory == directory and report.ending == "not sealed"]
        for name in names:
            match = _VERSION_NAME.match(name)
            if match is None or match["digest"] in named:
                continue
            path = os.path.join(directory, VERSIONS_DIR, name)
            if killed:
                self.problem(path, None, UNSEALED, "a version no record names: written by a run killed before its "
                             f"state record ({', '.join(killed)}), or left by a run that was removed")
            else:
                self.problem(path, None, ORPHAN, "a version no record names: left by a run that was removed")

    # -- runs -----------------------------------------------------------------------
    def run(self, run: str, segments: dict[int, list[tuple[str, str, bool]]]) -> None:
        first_directory = segments[min(segments)][0][0]
        report = RunReport(run, first_directory)
        self.result.runs.append(report)
        context = _RunContext()
        numbers = sorted(segments)
        last = numbers[-1]
        expected = 1
        previous_seal: str | None = ""  # the previous segment's seal ``h``; None when it has none
        ending = "ended"
        for number in numbers:
            files = segments[number]
            primary = next((entry for entry in files if entry[2]), files[0])
            if number != expected:
                gap = f"{expected}" if number == expected + 1 else f"{expected} to {number - 1}"
                self.problem(primary[1], None, MISSING, f"segment {gap} of run {run} is missing")
                ending = "incomplete"
                previous_seal = None
            expected = number + 1
            for entry in files:
                if entry is not primary and not _same_records(primary[1], primary[2], entry[1], entry[2]):
                    self.problem(entry[1], None, CORRUPT, f"its records differ from those of {primary[1]}")
                    ending = "incomplete"
            segment = _Segment(self, context, primary[1], primary[2], run, number, number == last, primary[0])
            segment.verify()
            if number == 1:
                report.manifest_line = segment.head_man
                report.responses = segment.head_responses
            report.last_seal, report.last_segment, report.last_plain = segment.seal_hash, number, not primary[2]
            report.segments += 1
            report.records += segment.records
            if segment.head_prev is not None and previous_seal is not None and segment.head_prev != previous_seal:
                self.problem(primary[1], 1, CORRUPT, "head's prev is not the seal hash of the previous segment "
                             "(a segment was replaced or reordered)")
                ending = "incomplete"
            previous_seal = segment.seal_hash
            if segment.seal_hash is None:
                if number == last and not primary[2] and not segment.damaged:
                    ending = "not sealed" if ending == "ended" else ending
                    torn = " (its last line was cut short by an interrupted write)" if segment.torn else ""
                    self.problem(primary[1], None, UNSEALED, f"not sealed: run {run} did not end cleanly "
                                 f"(killed?); its {segment.records} complete records verify{torn}")
                else:
                    ending = "incomplete"
                    if not segment.damaged:
                        what = "closed (gzip) segment" if primary[2] else "segment before the run's last"
                        self.problem(primary[1], None, CORRUPT, f"{what} without a seal: records at its end "
                                     "were removed (truncated)")
            elif segment.ended and number != last:
                ending = "incomplete"
                self.problem(primary[1], None, CORRUPT, "sealed as the run's end, but later segments follow")
            elif not segment.ended and number == last and not primary[2] and len(files) == 1:
                # Sealed at rotation, killed before its gzip form was written (and the next segment opened).
                ending = "not sealed" if ending == "ended" else ending
                self.problem(primary[1], None, UNSEALED, f"not sealed: run {run} did not end cleanly (killed as "
                             f"it rotated: its last segment is sealed, not closed); its {segment.records} records "
                             "verify")
            elif not segment.ended and number == last:
                ending = "incomplete"
                self.problem(primary[1], None, MISSING, f"run {run} stops at a segment closed by rotation: "
                             "its later segments are missing (removed, or the process was killed as it rotated)")
            if segment.damaged:
                ending = "incomplete"
        report.ending = ending


@dataclass
class _RunContext:
    """What a run's records carry from one segment to the next."""

    #: Allowed verdicts that verified and await their response: fingerprint -> [count, origin].
    awaiting: dict[str, list[Any]] = field(default_factory=dict)
    #: The version each (origin, document) was last settled on, from ``state`` records.
    in_force: dict[tuple[str, str], str | None] = field(default_factory=dict)
    #: Origins whose robots.txt was last settled unavailable without a version (no HTTP status: the
    #: request was refused by another component): everything allowed, no version to name.
    unversioned: set[str] = field(default_factory=set)
    #: The settings the run's verdicts depend on, from its first head (``cfg``, format 3); None for a run
    #: of format 2, whose verdicts are checked without them.
    settings: RunSettings | None = None
    #: Whether a head was read (the first one gives :attr:`settings`).
    headed: bool = False


@dataclass(frozen=True)
class RunSettings:
    """A head's ``cfg``: what the run's verdicts depend on besides the robots.txt."""

    purpose: tuple[str, ...]
    deny: tuple[str, ...]
    read: frozenset[str]
    tdm: bool

    @classmethod
    def of(cls, value: object) -> RunSettings | None:
        """The settings of a head's ``cfg``, or None when it is not one."""
        if not isinstance(value, dict):
            return None
        purpose, deny, read = value.get("purpose"), value.get("deny"), value.get("read")
        if not (_strings(purpose) and _strings(deny) and _strings(read) and isinstance(value.get("tdm"), bool)
                and isinstance(value.get("crawl_delay"), bool) and isinstance(value.get("vocab"), str)):
            return None
        return cls(tuple(purpose), tuple(deny), frozenset(read), value["tdm"])  # type: ignore[arg-type]


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


class _Segment:
    def __init__(self, auditor: _Auditor, context: _RunContext, path: str, closed: bool, run: str, number: int,
                 last: bool, directory: str) -> None:
        self.auditor = auditor
        self.directory = directory
        #: The ``man`` of the head of a run's first segment.
        self.head_man: str | None = None
        self.head_responses = "all"
        self.context = context
        self.path = path
        self.closed = closed
        self.run = run
        self.number = number
        self.last = last
        self.records = 0
        self.head_prev: str | None = None
        self.seal_hash: str | None = None
        self.ended = False
        self.torn = False
        #: The chain broke at a record: later links and the seal cannot match.
        self.broken = False
        #: The file is corrupt (a broken chain, a line that is no record, ...): a missing seal is then
        #: part of that, not reported again.
        self.damaged = False

    def problem(self, line: int | None, kind: str, message: str) -> None:
        if kind == CORRUPT:
            self.damaged = True
        self.auditor.problem(self.path, line, kind, message)

    def verify(self) -> None:
        previous = GENESIS
        try:
            for number, raw in enumerate(_lines(self.path, self.closed), 1):
                if len(raw) > MAX_LINE_BYTES:
                    self.problem(number, CORRUPT, f"a line over {MAX_LINE_BYTES >> 10} KiB (not read; the rest of "
                                 "the segment is not checked)")
                    return
                if self.seal_hash is not None:
                    self.problem(number, CORRUPT, "a record after the seal")
                    return
                if not raw.endswith(b"\n"):
                    if self.closed or not self.last:
                        self.problem(number, CORRUPT, "the last line has no line break (truncated)")
                    else:
                        self.torn = True  # an interrupted write: reported with the missing seal
                    return
                line = raw[:-1]
                self.record(number, line, previous)
                previous = chain(previous, line)
        except (OSError, EOFError, zlib.error) as exc:
            self.problem(None, CORRUPT, f"cannot be read to its end: {exc}")

    def record(self, number: int, line: bytes, previous: bytes) -> None:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than the interpreter's stack
            record = None
        if not isinstance(record, dict):
            self.problem(number, CORRUPT, "not a JSON object")
            return
        if record.get("p") != link(previous) and not self.broken:
            # Every later hash depends on this one: the rest of the segment's links and its seal are
            # not reported again.
            self.broken = True
            self.problem(number, CORRUPT, "the chain breaks here: its link p is not the hash of the records "
                         "before it (records were edited, removed, added or reordered here or just before; "
                         "the later links of this segment are not checked)")
        kind = record.get("k")
        if number == 1 and kind != "head":
            self.problem(number, CORRUPT, "the segment does not start with its head")
        if kind == "seal":
            self.seal(number, record, previous)
            return
        self.records += 1
        if kind == "head":
            self.head(number, record)
            return
        origin = _origin(record.get("o"))
        if kind == "state":
            self.state(number, record)
        elif kind == "verdict":
            self.verdict(number, record, origin)
        elif kind == "response":
            self.response(number, record)
        else:
            self.problem(number, CORRUPT, f"unknown record kind {kind!r}")

    def head(self, number: int, record: dict[str, Any]) -> None:
        if number != 1:
            self.problem(number, CORRUPT, "a head inside the segment")
            return
        version = record.get("v")
        if version not in FORMATS_READ:
            self.problem(number, CORRUPT, f"format version {version!r}: this audit reads versions "
                         f"{', '.join(map(str, FORMATS_READ))}")
        self.head_settings(number, version, record.get("cfg"))
        if record.get("run") != self.run or record.get("seg") != self.number:
            self.problem(number, CORRUPT, f"head names run {record.get('run')!r} segment {record.get('seg')!r}, "
                         "not the file's")
        prev = record.get("prev")
        self.head_prev = prev if isinstance(prev, str) else None
        if self.number == 1 and prev != "":
            self.problem(number, CORRUPT, "the run's first segment has a prev")
        responses = record.get("resp", "all")  # a run written before the key recorded them all
        if responses in ("all", "refused"):
            self.head_responses = responses
        else:
            self.problem(number, CORRUPT, f"head's resp {responses!r} is neither 'all' nor 'refused'")
        man = record.get("man")
        if self.number == 1:
            if isinstance(man, str):
                self.head_man = man
            else:
                self.problem(number, CORRUPT, "the run's first head names no manifest line (man)")

    def head_settings(self, number: int, version: object, value: object) -> None:
        """The run's settings, from its first head (format 3); each later head names the same."""
        context = self.context
        if version == 2 and value is None:
            settings = None  # written before heads recorded them
        else:
            settings = RunSettings.of(value)
            if settings is None:
                self.problem(number, CORRUPT, f"head's cfg {value!r} is not the settings of the run (purpose, deny, "
                             "read, tdm, crawl_delay, vocab)")
                return
            if value["vocab"] not in REVISIONS_READ and not context.headed:  # type: ignore[index]
                self.problem(number, MISMATCH, f"written under the usage vocabulary revision {value['vocab']!r}, "  # type: ignore[index]
                             f"this audit reads {REVISION!r}: its usage verdicts cannot be checked")
        if not context.headed:
            context.headed, context.settings = True, settings
        elif settings != context.settings:
            self.problem(number, CORRUPT, "head's cfg differs from the run's first head")

    def seal(self, number: int, record: dict[str, Any], previous: bytes) -> None:
        if (record.get("n") != self.records or record.get("h") != previous.hex()) and not self.broken:
            sealed = record.get("h")
            shown = f"{sealed[:16]}..." if isinstance(sealed, str) else repr(sealed)
            self.problem(number, CORRUPT, f"the seal (n {record.get('n')!r}, h {shown}) does not match the "
                         f"records before it (n {self.records}, h {previous.hex()[:16]}...): records were edited, "
                         "removed, added or reordered")
        # The next segment's head names the hash this seal records (checked against the records above).
        sealed_hash = record.get("h")
        self.seal_hash = sealed_hash if isinstance(sealed_hash, str) else previous.hex()
        self.ended = record.get("end") is True

    def origin_report(self, origin: str) -> OriginReport:
        origins = self.auditor.result.origins
        report = origins.get(origin)
        if report is None:
            report = origins[origin] = OriginReport(origin)
        return report

    def state(self, number: int, record: dict[str, Any]) -> None:
        origin, document, digest = _origin(record.get("o")), record.get("doc"), record.get("ver")
        if origin is None or document not in ("robots.txt", "tdmrep.json"):
            self.problem(number, CORRUPT, "a state without an origin o or a document doc")
            return
        self.context.in_force[(origin, document)] = digest
        if document == "robots.txt":
            if digest is None and record.get("access") == "unavailable":
                self.context.unversioned.add(origin)
            else:
                self.context.unversioned.discard(origin)
        if digest is not None:
            info = self.auditor.version(digest, self.path, number, document)
            self.origin_report(origin).used(str(digest), _time(record), info)
            self.file_named(number, str(digest), record.get("vh"))

    def file_named(self, number: int, digest: str, named: object) -> None:
        """The version file's bytes against the SHA-256 the state record names (``vh``): the
        fields outside the digest (HTTP headers, WARC-Date, lifetime, source) are covered so."""
        hashes = self.auditor.file_hashes
        found = hashes.get((self.directory, digest))
        if found is None:  # not in the run's own directory: another directory's copy
            found = next((value for (_, other), value in hashes.items() if other == digest), None)
        if found is None:
            return  # missing: reported as such
        if not isinstance(named, str):
            self.problem(number, CORRUPT, "a state naming a version without the SHA-256 of its file (vh)")
        elif named != found:
            self.problem(number, CORRUPT, f"version {digest}: its file's bytes are not those this record names "
                         f"(SHA-256 {found[:16]}..., vh {named[:16]}...): the file was edited (its HTTP headers, "
                         "WARC-Date, lifetime or another field outside the digest) or replaced")

    def verdict(self, number: int, record: dict[str, Any], origin: str | None) -> None:
        d, url, agent, fp = record.get("d"), record.get("u"), record.get("a"), record.get("fp")
        if d not in _VERDICTS or origin is None or not isinstance(url, str) \
                or not isinstance(fp, str) or not isinstance(agent, str):
            self.problem(number, CORRUPT, "a verdict without a known d, or without its o, u, a or fp")
            return
        report = self.origin_report(origin)
        report.requests[d] += 1
        if d == "dropped":
            report.dropped[str(record.get("why"))] += 1
        url_origin = Origin.from_url(url)
        if url_origin is None or url_origin.base != origin:
            self.problem(number, MISMATCH, f"the URL {url!r} is not of the origin {origin!r}")
            return
        tdm = record.get("tv")
        tdm_info = None
        if tdm is not None:
            tdm_info = self.auditor.version(tdm, self.path, number, "tdmrep.json")
            report.used(str(tdm), _time(record), tdm_info)
            tdm_in_force = self.context.in_force.get((origin, "tdmrep.json"), "no state")
            if tdm_in_force != tdm:
                self.problem(number, MISMATCH, f"judged with tdmrep.json version {tdm}, but the run's last state "
                             f"of the origin names {tdm_in_force}")
                return
        elif d == "tdm_reserved":
            self.problem(number, MISMATCH, "tdm_reserved without a tdmrep.json version")
            return
        settings = self.context.settings
        if settings is not None and not self.settings_allow(number, record, d, settings):
            return
        digest = record.get("ver")
        if digest is None:
            if d in ("allowed", "tdm_reserved") and origin in self.context.unversioned and record.get("r") is None:
                if d == "allowed":
                    self.awaiting(fp, origin)
            elif d in _DECIDED:
                self.problem(number, MISMATCH, f"{d} without a robots.txt version (and the run's last state of "
                             "the origin is not unavailable without one)")
            return
        info = self.auditor.version(digest, self.path, number, "robots.txt")
        report.used(str(digest), _time(record), info)
        if d not in _DECIDED and d != "held":
            return  # a version named without deciding: nothing to recompute
        in_force = self.context.in_force.get((origin, "robots.txt"), "no state")
        if in_force != digest:
            self.problem(number, MISMATCH, f"judged with version {digest}, but the run's last state of the origin "
                         f"names {in_force}")
            return
        if info is None or d not in _DECIDED:
            return
        if Origin.from_url(info.requested_url) != url_origin:
            self.problem(number, MISMATCH, f"version {digest} is the robots.txt of {info.requested_url}")
            return
        if d == "tdm_reserved" and tdm_info is not None and not self.reserved(number, url, str(tdm), tdm_info):
            return
        if not self.recomputed(number, record, d, url, agent, digest, info):
            return
        if settings is not None and d != "disallowed" and not self.allowed_under(
                number, record, d, url, agent, digest, info, settings, tdm, tdm_info):
            return
        if d == "allowed":
            self.awaiting(fp, origin)

    def settings_allow(self, number: int, record: dict[str, Any], d: str, settings: RunSettings) -> bool:
        """Whether a verdict's kind and fields are possible under the run's settings."""
        if record.get("tv") is not None and "tdmrep.json" not in settings.read:
            self.problem(number, MISMATCH, f"{d} with a tdmrep.json version, but the run's head says it read no "
                         "tdmrep.json (ROBOTSTXT_TDMREP off)")
            return False
        if d == "tdm_reserved" and not settings.tdm:
            self.problem(number, MISMATCH, "tdm_reserved, but the run's head says TDM reservations were not enforced "
                         "(ROBOTSTXT_TDMREP off, or no category of ROBOTSTXT_USAGE_DENY a reservation denies)")
            return False
        if d == "usage_denied" and not settings.deny:
            self.problem(number, MISMATCH, "usage_denied, but the run's head denies no usage category "
                         "(ROBOTSTXT_USAGE_DENY empty)")
            return False
        return True

    def allowed_under(self, number: int, record: dict[str, Any], d: str, url: str, agent: str, digest: str,
                      info: VersionInfo, settings: RunSettings, tdm: object, tdm_info: VersionInfo | None) -> bool:
        """Whether a verdict the robots.txt allows (``allowed``, ``usage_denied``,
        ``tdm_reserved``) is what the run's settings give: each purpose token's group allows
        the URL too, and an ``allowed`` one is denied by no usage preference nor TDM
        reservation the run enforced."""
        if info.access == "unavailable":
            return True  # everything allowed, no usage preference
        robots = self.auditor.robots(digest, info)
        purposes = record.get("pt", list(settings.purpose))  # the request's own, when it had them
        if not _strings(purposes):
            self.problem(number, CORRUPT, f"pt {purposes!r} is not a list of product tokens")
            return False
        for token in purposes:
            if token != agent and not robots.allowed(url, token):
                verdict = robots.verdict(url, token)
                self.problem(number, MISMATCH, f"{d}, but version {digest} disallows {url} for the purpose token "
                             f"{token!r} ({verdict.rule}) the run judged with")
                return False
        if d != "allowed":
            return True
        usage = robots.usage(url, agent)
        denied = [category for category in settings.deny if usage.denies(category)]
        if denied:
            self.problem(number, MISMATCH, f"allowed, but version {digest} denies {', '.join(denied)} for {url} "
                         f"({usage}), which the run's head says it denied (ROBOTSTXT_USAGE_DENY): usage_denied")
            return False
        if settings.tdm and tdm_info is not None and tdm_info.access != "unavailable":
            entry = self.auditor.tdmrep(str(tdm), tdm_info).entry_for(url)
            if entry is not None and entry.reserved:
                self.problem(number, MISMATCH, f"allowed, but tdmrep.json version {tdm} reserves TDM rights for {url} "
                             f"({entry}), which the run's head says it enforced: tdm_reserved")
                return False
        return True

    def awaiting(self, fp: str, origin: str) -> None:
        """An allowed verdict that verified: one response of ``fp`` is proven."""
        awaiting = self.context.awaiting.get(fp)
        if awaiting is None:
            self.context.awaiting[fp] = [1, origin]
        else:
            awaiting[0] += 1

    def reserved(self, number: int, url: str, digest: str, info: VersionInfo) -> bool:
        """Whether the tdmrep.json version reserves TDM rights for ``url`` (a ``tdm_reserved`` verdict)."""
        if info.access == "unavailable":
            entry = None
        else:
            entry = self.auditor.tdmrep(digest, info).entry_for(url)
        if entry is None or not entry.reserved:
            said = "no rule applies" if entry is None else str(entry)
            self.problem(number, MISMATCH, f"tdm_reserved, but tdmrep.json version {digest} does not reserve "
                         f"{url} ({said})")
            return False
        return True

    def recomputed(self, number: int, record: dict[str, Any], d: str, url: str, agent: str, digest: str,
                   info: VersionInfo) -> bool:
        """Whether the verdict and its rule are what the archived robots.txt gives."""
        if info.access == "unavailable":
            allowed, rule, usage = True, None, UsagePreference()
        else:
            robots = self.auditor.robots(digest, info)
            verdict = robots.verdict(url, agent)
            allowed = verdict.allowed
            rule = None if verdict.rule is None else [verdict.rule.directive, verdict.rule.pattern, verdict.rule.line]
            usage = robots.usage(url, agent) if "up" in record or d == "usage_denied" else UsagePreference()
        recorded = record.get("r")
        if isinstance(recorded, list) and len(recorded) == 3 and isinstance(recorded[0], str):
            recorded = [recorded[0].capitalize(), *recorded[1:]]
        said = "no rule" if rule is None else f"{rule[0]}: {rule[1]}, line {rule[2]}"
        if (d == "disallowed") == allowed:
            self.problem(number, MISMATCH, f"{d}, but version {digest} {'allows' if allowed else 'disallows'} "
                         f"{url} for {agent or '*'!r} ({said})")
            return False
        if recorded != rule:
            self.problem(number, MISMATCH, f"rule {record.get('r')!r}, but version {digest} decides by {said}")
            return False
        settings = self.context.settings
        if d == "usage_denied" and (
                not any(usage.denies(category) for category in settings.deny) if settings is not None
                else "n" not in {v for values in usage.values.values() for v in values.values()}):
            self.problem(number, MISMATCH, f"usage_denied, but version {digest} denies no usage "
                         f"{'the run denied ' if settings is not None else ''}for {url}")
            return False
        if "up" in record and record["up"] != str(usage):
            self.problem(number, MISMATCH, f"usage preference {record['up']!r}, but version {digest} gives "
                         f"{str(usage)!r}")
            return False
        return True

    def response(self, number: int, record: dict[str, Any]) -> None:
        fp, url = record.get("fp"), record.get("u")
        if not isinstance(fp, str) or not isinstance(url, str):
            self.problem(number, CORRUPT, "a response without its fp or u")
            return
        awaiting = self.context.awaiting.get(fp)
        if awaiting is None:
            origin = Origin.from_url(url)
            self.origin_report(origin.base if origin is not None else url).responses[str(record.get("d"))] += 1
            self.problem(number, MISMATCH, f"a response (status {record.get('s')!r}) for {url} without an earlier "
                         "allowed verdict of the same request that verified")
            return
        self.origin_report(awaiting[1]).responses[str(record.get("d"))] += 1
        awaiting[0] -= 1
        if not awaiting[0]:
            del self.context.awaiting[fp]
        settings = self.context.settings
        if record.get("d") == "usage_denied" and settings is not None and (
                not settings.deny or not settings.read & {"headers", "meta"}):
            said = "denied no usage category" if not settings.deny else "read no response headers nor meta tags"
            self.problem(number, MISMATCH, f"a response usage_denied, but the run's head says it {said}")


def _origin(value: object) -> str | None:
    """An origin as the report names it (``scheme://host``, the port only when it is not
    the scheme's default): ``http://h:80`` and ``http://h`` are one origin."""
    if not isinstance(value, str):
        return None
    origin = Origin.from_url(value)
    return value if origin is None else origin.base


def _time(record: dict[str, Any]) -> float:
    value = record.get("t")
    return float(value) if isinstance(value, (int, float)) else 0.0


def _open(path: str, closed: bool) -> BinaryIO:
    return gzip.open(path, "rb") if closed else open(path, "rb")  # type: ignore[return-value]


def _lines(path: str, closed: bool) -> Iterator[bytes]:
    """The file's lines, each cut after :data:`MAX_LINE_BYTES` + 1 bytes (a longer one is not a record)."""
    with _open(path, closed) as handle:
        while line := handle.readline(MAX_LINE_BYTES + 1):
            yield line


def _same_records(path: str, closed: bool, other: str, other_closed: bool) -> bool:
    """Whether two files of one segment (its plain and gzip forms) hold the same bytes."""
    try:
        with _open(path, closed) as first, _open(other, other_closed) as second:
            while True:
                chunk = first.read(_CHUNK)
                if chunk != second.read(_CHUNK):
                    return False
                if not chunk:
                    return True
    except (OSError, EOFError, zlib.error):
        return False


def _read_version(path: str) -> tuple[dict[str, Any], bytes]:
    """A version file's fields and body (the record's payload as stored)."""
    from warcio.archiveiterator import ArchiveIterator

    found: tuple[Any, bytes] | None = None
    with open(path, "rb") as handle:
        for record in ArchiveIterator(handle):
            if record.rec_type != "response":
                continue
            if found is not None:
                raise ValueError("more than one response record")
            body = record.raw_stream.read(MAX_VERSION_BYTES + 1)
            if len(body) > MAX_VERSION_BYTES:
                raise ValueError(f"a body over {MAX_VERSION_BYTES >> 20} MiB (not read)")
            found = record.rec_headers, body
    if found is None:
        raise ValueError("no response record")
    headers, body = found
    fmt = headers.get_header("WARC-RFC9309-Format")
    if fmt != str(VERSION_FORMAT):
        raise ValueError(f"WARC-RFC9309-Format {fmt!r}: this audit reads version {VERSION_FORMAT}")
    status = headers.get_header("WARC-RFC9309-Status") or ""
    if not status.isdigit():
        raise ValueError(f"WARC-RFC9309-Status {status!r} is not a status")
    redirects = headers.get_header("WARC-RFC9309-Redirects")
    info = {
        "version": headers.get_header("WARC-RFC9309-Version"),
        "document": headers.get_header("WARC-RFC9309-Document") or "",
        "requested_url": headers.get_header("WARC-RFC9309-Requested-URI") or "",
        "redirects": redirects.split() if redirects else [],
        "final_url": headers.get_header("WARC-Target-URI") or "",
        "status": int(status),
        "access": headers.get_header("WARC-RFC9309-Access") or "",
        "truncated": headers.get_header("WARC-RFC9309-Truncated") == "true",
    }
    return info, body


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
