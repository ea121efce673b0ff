"""The ledger's audit (docs/ledger-format.md, "What a checker does"): reads the
directories of a crawl or a fleet, checks every segment's chain and seal, every
version's digest, every verdict against the archived robots.txt parsed again, and
every response against an earlier allowed verdict, and reports per origin and per run.

The files are streamed: memory grows with the number of origins and versions, not with the
ledger's size (the allowed verdicts awaiting their response are the latest
:data:`.verdict_check.AWAITING` of a run at most; a response whose verdict is older is settled
after its run by reading the run's segments again for its fingerprint, up to
:data:`.verdict_check.PENDING` such responses per run).
Pure Python (no Scrapy or Twisted): ``scrapy robotstxt audit`` is its command.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Sequence

from ..core.caches import BoundedDict
from ..core.robotstxt import RobotsTxt, parse
from ..core.syntax import DEFAULT_MAX_BYTES
from ..core.tdmrep import TdmRep
from .audit_result import (
    CORRUPT,
    MAX_PROBLEMS,
    MISMATCH,
    MISSING,
    ORPHAN,
    UNSEALED,
    Audit,
    LedgerError,
    OriginReport,
    Problem,
    RunReport,
    VersionInfo,
    format_text,
)
from .files import MAX_VERSION_BYTES, VERSION_NAME, listing, read_version, same_records
from .format import MANIFEST, RUNS_DIR, SEGMENT_RE, VERSIONS_DIR, file_hash, version_digest
from .manifest_check import check_manifest
from .observer import Observer
from .segment_check import SegmentCheck, settle
from .verdict_check import RunContext

__all__ = ["CORRUPT", "MAX_PROBLEMS", "MISMATCH", "MISSING", "ORPHAN", "UNSEALED", "Audit", "LedgerError",
           "OriginReport", "Problem", "RunReport", "audit", "format_text"]

#: Parsed robots.txt versions kept at hand (a crawl's verdicts mostly follow each other per origin).
_PARSED_CACHE = 256


def audit(directories: Sequence[str | os.PathLike[str]], anchors: Sequence[str] = (),
          observer: Observer | None = None) -> Audit:
    """Audit the ledger directories of one crawl or of a fleet together; each of
    ``anchors`` (a head kept outside, see :class:`~scrapy_rfc9309.ledger.writer.Ledger`) must be
    the chain hash of a line of a directory's manifest. ``observer`` is told of each record
    counted, as it is read (``scrapy robotstxt report``).
    Raises :class:`LedgerError` for a directory that is missing, unreadable or not a ledger,
    or an anchor that is not a SHA-256 in hex."""
    if not directories:
        raise LedgerError("no ledger directory given")
    for anchor in anchors:
        if not re.fullmatch(r"[0-9a-fA-F]{64}", anchor):
            raise LedgerError(f"--anchor {anchor!r} is not a SHA-256 hash in hex (64 digits)")
    names = [os.fspath(directory) for directory in directories]
    listings = [listing(directory) for directory in names]
    auditor = _Auditor(Audit(names), observer)
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
    if observer is not None:
        observer.started(auditor, sum(len(segments) for segments in runs.values()))
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



class _Auditor:
    """The state of one audit: the version files known, the problems found (in :attr:`result`)."""

    def __init__(self, result: Audit, observer: Observer | None = None) -> None:
        self.result = result
        self.observer = observer
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
        self.result.add(Problem(file, line, kind, message), MAX_PROBLEMS)

    # -- versions -------------------------------------------------------------------
    def version_file(self, directory: str, name: str) -> None:
        path = os.path.join(directory, VERSIONS_DIR, name)
        match = VERSION_NAME.match(name)
        if match is None:
            self.problem(path, None, CORRUPT, "not a version's file name (ignored)")
            return
        digest = match["digest"]
        try:
            with open(path, "rb") as handle:
                self.file_hashes[(directory, digest)] = file_hash(handle.read(MAX_VERSION_BYTES + 1))
            info, body = read_version(path, MAX_VERSION_BYTES)
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
            _, body = read_version(info.path, MAX_VERSION_BYTES)
            robots = self.parsed[digest] = parse(body, max(DEFAULT_MAX_BYTES, len(body)), url=info.final_url)
        return robots

    def tdmrep(self, digest: str, info: VersionInfo) -> TdmRep:
        """A tdmrep.json version parsed again (not kept: TDM-reserved verdicts are few)."""
        _, body = read_version(info.path, MAX_VERSION_BYTES)
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
        """Check the directory's manifest (:func:`.manifest_check.check_manifest`)."""
        return check_manifest(self.result, self.problem, directory)

    def orphans(self, directory: str, names: list[str]) -> None:
        """Report the version files of ``directory`` that no record of its runs names."""
        named = self.named
        killed = [report.run for report in self.result.runs
                  if report.directory == directory and report.ending == "not sealed"]
        for name in names:
            match = VERSION_NAME.match(name)
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
        context = RunContext()
        numbers = sorted(segments)
        last = numbers[-1]
        expected = 1
        previous_seal: str | None = ""  # the previous segment's seal ``h``; None when it has none
        ending = "ended"
        read: list[tuple[int, str, bool, int]] = []  # what settle() reads again
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
                if entry is not primary and not same_records(primary[1], primary[2], entry[1], entry[2]):
                    self.problem(entry[1], None, CORRUPT, f"its records differ from those of {primary[1]}")
                    ending = "incomplete"
            if self.observer is not None:
                self.observer.segment(run, number)
            segment = SegmentCheck(self, context, primary[1], primary[2], run, number, number == last, primary[0])
            segment.verify()
            read.append((number, primary[1], primary[2], segment.read))
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
        settle(self, context, read)
        report.ending = ending
