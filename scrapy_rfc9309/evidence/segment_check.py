"""The audit's check of one segment of a run (docs/ledger-format.md, "What a checker does", 1, 5
and 6): its chain and seal, its head and the run's settings, its state records and the version
files they name, its responses; its verdicts through :class:`.verdict_check.VerdictCheck`.
Pure Python.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from ..core.usage_vocabulary import REVISION, REVISIONS_READ
from .audit_result import CORRUPT, MISMATCH, OriginReport, RunSettings
from .files import MAX_LINE_BYTES, lines
from .format import FORMATS_READ, GENESIS, chain, link
from .verdict_check import Evidence, Pending, RunContext, VerdictCheck, origin_of, record_time

__all__ = ["SegmentCheck", "answered", "origin_base", "settle"]


def origin_base(value: object) -> str | None:
    """An origin as the report names it (``scheme://host``, the port only when it is not
    the scheme's default): ``http://h:80`` and ``http://h`` are one origin."""
    if not isinstance(value, str):
        return None
    origin = origin_of(value)
    return value if origin is None else origin.base


class SegmentCheck:
    """Verify one segment's file, its records in order (:meth:`verify`)."""

    def __init__(self, auditor: Evidence, context: RunContext, path: str, closed: bool, run: str, number: int,
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
        #: The last line read as a record (what :func:`settle` reads again).
        self.read = 0
        self.head_prev: str | None = None
        self.seal_hash: str | None = None
        self.ended = False
        self.torn = False
        #: The chain broke at a record: later links and the seal cannot match.
        self.broken = False
        #: The file is corrupt (a broken chain, a line that is no record, ...): a missing seal is then
        #: part of that, not reported again.
        self.damaged = False
        self.verdicts = VerdictCheck(auditor, context, path, self.problem, self.origin_report)

    def problem(self, line: int | None, kind: str, message: str) -> None:
        if kind == CORRUPT:
            self.damaged = True
        self.auditor.problem(self.path, line, kind, message)

    def verify(self) -> None:
        previous = GENESIS
        try:
            for number, raw in enumerate(lines(self.path, self.closed), 1):
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
                self.read = number
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
        observer = self.auditor.observer
        if kind == "head":
            if self.head(number, record) and observer is not None:
                observer.record(kind, record, None, ())
            return
        origin = origin_base(record.get("o"))
        if kind == "state":
            counted = self.state(number, record)
        elif kind == "verdict":
            counted = self.verdicts.verdict(number, record, origin)
        elif kind == "response":
            origin = self.response(number, record)
            counted = origin is not None
        else:
            self.problem(number, CORRUPT, f"unknown record kind {kind!r}")
            return
        if counted and observer is not None:
            observer.record(kind, record, origin, self.verdicts.denied)

    def head(self, number: int, record: dict[str, Any]) -> bool:
        """Check the segment's head; False for a head inside the segment (not read)."""
        if number != 1:
            self.problem(number, CORRUPT, "a head inside the segment")
            return False
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
        return True

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

    def state(self, number: int, record: dict[str, Any]) -> bool:
        """Read a state record; False for one without an origin or a document (not read)."""
        origin, document, digest = origin_base(record.get("o")), record.get("doc"), record.get("ver")
        if origin is None or document not in ("robots.txt", "tdmrep.json"):
            self.problem(number, CORRUPT, "a state without an origin o or a document doc")
            return False
        self.context.in_force[(origin, document)] = digest
        if document == "robots.txt":
            if digest is None and record.get("access") == "unavailable":
                self.context.unversioned.add(origin)
            else:
                self.context.unversioned.discard(origin)
        if digest is not None:
            info = self.auditor.version(digest, self.path, number, document)
            self.origin_report(origin).used(str(digest), record_time(record), info)
            self.file_named(number, str(digest), record.get("vh"))
        return True

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

    def response(self, number: int, record: dict[str, Any]) -> str | None:
        """Check a response record; the origin it is counted for (None: not counted, or not yet:
        pending, see :class:`.verdict_check.Pending`)."""
        fp, url = record.get("fp"), record.get("u")
        if not isinstance(fp, str) or not isinstance(url, str):
            self.problem(number, CORRUPT, "a response without its fp or u")
            return None
        awaiting = self.context.awaiting
        origin = awaiting.take(fp)
        if origin is None and awaiting.forgotten:
            pending = self.context.pending
            if pending.add(self.number, number, fp):
                return None  # its verdict may be one forgotten: settled after the run
            self.problem(number, MISMATCH, f"not settled: a response (status {record.get('s')!r}) for {url} "
                         f"without an allowed verdict among the latest {awaiting.limit:,} awaiting their response, "
                         f"and {pending.limit:,} such responses of the run already wait to be settled after it (the "
                         "audit keeps no more): whether an older verdict proves it is not checked")
            return answered(self.auditor, self.context, self.path, number, record, None)
        if origin is None:
            return unanswered(self.auditor, self.context, self.path, number, record)
        return answered(self.auditor, self.context, self.path, number, record, origin)


def answered(auditor: Evidence, context: RunContext, path: str, number: int, record: dict[str, Any],
             origin: str | None) -> str:
    """Count a response record for the origin of the allowed verdict it used up, or, with none
    (``origin`` None: reported), for its URL's; the origin counted for."""
    url = str(record.get("u"))
    if origin is None:
        found = origin_of(url)
        counted = found.base if found is not None else url
    else:
        counted = origin
    origins = auditor.result.origins
    report = origins.get(counted)
    if report is None:
        report = origins[counted] = OriginReport(counted)
    report.responses[str(record.get("d"))] += 1
    if origin is None:
        return counted
    settings = context.settings
    if record.get("d") == "usage_denied" and settings is not None and (
            not settings.deny or not settings.read & {"headers", "meta"}):
        said = "denied no usage category" if not settings.deny else "read no response headers nor meta tags"
        auditor.problem(path, number, MISMATCH, f"a response usage_denied, but the run's head says it {said}")
    return counted


def unanswered(auditor: Evidence, context: RunContext, path: str, number: int, record: dict[str, Any]) -> str:
    """Report and count a response no allowed verdict proves."""
    awaiting = context.awaiting
    older = "" if not awaiting.forgotten else (
        f" (its fingerprint's allowed verdicts and responses were read again after the run: none is left for it, "
        f"beyond the latest {awaiting.limit:,} awaiting their response either)")
    auditor.problem(path, number, MISMATCH, f"a response (status {record.get('s')!r}) for {record.get('u')} without "
                    f"an earlier allowed verdict of the same request that verified{older}")
    return answered(auditor, context, path, number, record, None)


def settle(auditor: Evidence, context: RunContext, segments: list[tuple[int, str, bool, int]]) -> None:
    """Settle a run's pending responses (:class:`.verdict_check.Pending`) once its segments were
    read: ``segments`` are its (number, file, gzip, last line read) in order. They are read again up to
    the last pending response; for the pending fingerprints only, every allowed verdict and every
    response in order: a response uses up the earliest unused allowed verdict before it (one that did
    not verify was reported already). A pending response so proven is counted for its verdict's
    origin, one that is not is a mismatch."""
    pending = context.pending
    if not pending.places:
        return
    last = max(pending.places)
    context.awaiting.origins.clear()  # the run was read: its window is let go before the second reading
    context.awaiting.more.clear()
    #: The unused allowed verdicts of each pending fingerprint: their origins, oldest first, as
    #: [origin, count] for consecutive verdicts of one origin (a fingerprint names one URL: only a
    #: forged ledger or two fingerprints of one hash alternate; beyond ``limit`` such runs in all, a
    #: verdict joins its fingerprint's last run).
    unused: dict[int, list[list[Any]]] = {}
    held = 0
    observer = auditor.observer
    for segment, path, closed, read in segments:
        if Pending.place(segment, 1) > last:
            break
        try:
            for number, raw in enumerate(lines(path, closed), 1):
                place = Pending.place(segment, number)
                if number > read or place > last:
                    break
                try:
                    record = json.loads(raw)
                except (ValueError, RecursionError):
                    continue
                fp = record.get("fp") if isinstance(record, dict) else None
                if not isinstance(fp, str) or hash(fp) not in pending.fps:
                    continue
                key, kind = hash(fp), record.get("k")
                if kind == "verdict" and record.get("d") == "allowed":
                    origin = origin_base(record.get("o"))
                    if origin is not None:
                        runs = unused.setdefault(key, [])
                        if runs and (runs[-1][0] == origin or held >= pending.limit):
                            runs[-1][1] += 1
                        else:
                            runs.append([origin, 1])
                            held += 1
                elif kind == "response":
                    origin = _use(unused, key)
                    if pending.places.get(place) != key:
                        continue  # checked in the first reading
                    del pending.places[place]
                    if not isinstance(record.get("u"), str):
                        continue
                    if origin is None:
                        counted = unanswered(auditor, context, path, number, record)
                    else:
                        counted = answered(auditor, context, path, number, record, origin)
                    if observer is not None:
                        observer.record("response", record, counted, ())
        except (OSError, EOFError, zlib.error) as exc:
            auditor.problem(path, None, CORRUPT, f"cannot be read again to settle its responses: {exc}")
    for place in sorted(pending.places):
        segment, number = place >> 32, place & 0xFFFFFFFF
        path = next((entry[1] for entry in segments if entry[0] == segment), "?")
        auditor.problem(path, number, CORRUPT, "a response the audit read, not found there when it read the file "
                        "again to settle it (the file changed during the audit)")
    pending.places.clear()
    pending.fps.clear()


def _use(unused: dict[int, list[list[Any]]], key: int) -> str | None:
    """The origin of the earliest unused allowed verdict of ``key``, now used; None when none is left."""
    runs = unused.get(key)
    if not runs:
        return None
    origin: str = runs[0][0]
    runs[0][1] -= 1
    if not runs[0][1]:
        runs.pop(0)
        if not runs:
            del unused[key]
    return origin
