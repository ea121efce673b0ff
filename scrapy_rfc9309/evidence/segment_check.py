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
from .verdict_check import Evidence, RunContext, VerdictCheck, origin_of, record_time

__all__ = ["SegmentCheck", "origin_base"]


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
        """Check a response record; the origin it is counted for (None: not counted)."""
        fp, url = record.get("fp"), record.get("u")
        if not isinstance(fp, str) or not isinstance(url, str):
            self.problem(number, CORRUPT, "a response without its fp or u")
            return None
        awaiting = self.context.awaiting
        origin = awaiting.take(fp)
        if origin is None:
            found = origin_of(url)
            origin = found.base if found is not None else url
            self.origin_report(origin).responses[str(record.get("d"))] += 1
            older = "" if not awaiting.forgotten else (
                f" among the latest {awaiting.limit:,} allowed verdicts awaiting their response (the audit keeps no "
                f"more: {awaiting.forgotten:,} older ones were not answered by then)")
            self.problem(number, MISMATCH, f"a response (status {record.get('s')!r}) for {url} without an earlier "
                         f"allowed verdict of the same request that verified{older}")
            return origin
        self.origin_report(origin).responses[str(record.get("d"))] += 1
        settings = self.context.settings
        if record.get("d") == "usage_denied" and settings is not None and (
                not settings.deny or not settings.read & {"headers", "meta"}):
            said = "denied no usage category" if not settings.deny else "read no response headers nor meta tags"
            self.problem(number, MISMATCH, f"a response usage_denied, but the run's head says it {said}")
        return origin
