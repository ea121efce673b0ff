"""A small reader of a ledger directory, written from docs/ledger-format.md alone
(not from the writer's code): it checks every chain, seal and version digest it
reads and returns the records, so that the ledger tests check the files as a third
party would. (The audit command, when it lands, replaces it.)"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

SEGMENT = re.compile(r"^(?P<run>\d{8}T\d{6}Z-[A-Za-z0-9._]+-\d+-[0-9a-f]{8})-(?P<seg>\d{6,})\.jsonl(?P<gz>\.gz)?$")


class LedgerBroken(AssertionError):
    """The files do not verify."""


@dataclass
class Segment:
    path: Path
    run: str
    number: int
    closed: bool
    records: list[dict[str, Any]]
    last_hash: bytes
    sealed: bool
    #: Bytes after the last complete line (a record cut short by a kill or a full disk).
    tail: bytes = b""


@dataclass
class Version:
    digest: str
    fields: dict[str, str]
    status_line: str
    headers: list[tuple[str, str]]
    body: bytes


@dataclass
class Ledger:
    segments: list[Segment] = field(default_factory=list)
    versions: dict[str, Version] = field(default_factory=dict)

    def runs(self) -> dict[str, list[Segment]]:
        runs: dict[str, list[Segment]] = {}
        for segment in self.segments:
            runs.setdefault(segment.run, []).append(segment)
        return runs

    def records(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [r for s in self.segments for r in s.records if kind is None or r["k"] == kind]


def _digest(fields: dict[str, str], body: bytes) -> str:
    redirects = fields.get("WARC-RFC9309-Redirects")
    head = [1, fields["WARC-RFC9309-Document"], fields["WARC-RFC9309-Requested-URI"],
            redirects.split(" ") if redirects else [], fields["WARC-Target-URI"],
            int(fields["WARC-RFC9309-Status"]), fields["WARC-RFC9309-Access"]]
    text = json.dumps(head, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii") + b"\n" + body).hexdigest()


def read_version(path: Path) -> Version:
    with path.open("rb") as handle:
        records = list(_warc_records(handle))
    if len(records) != 1:
        raise LedgerBroken(f"{path}: {len(records)} WARC records")
    version = records[0]
    if version.fields.get("WARC-RFC9309-Format") != "1":
        raise LedgerBroken(f"{path}: format {version.fields.get('WARC-RFC9309-Format')}")
    if _digest(version.fields, version.body) != path.name.removesuffix(".warc.gz"):
        raise LedgerBroken(f"{path}: the digest of its fields and body is not its name")
    if version.fields["WARC-RFC9309-Version"] != version.digest:
        raise LedgerBroken(f"{path}: WARC-RFC9309-Version is not its name")
    return version


def _warc_records(handle: Any) -> Any:
    for record in ArchiveIterator(handle):
        fields = dict(record.rec_headers.headers)
        http = record.http_headers
        body = record.content_stream().read()
        yield Version(fields.get("WARC-RFC9309-Version", ""), fields, http.statusline if http else "",
                      list(http.headers) if http else [], body)


def read_segment(path: Path) -> Segment:
    match = SEGMENT.match(path.name)
    if match is None:
        raise LedgerBroken(f"{path}: not a segment name")
    data = path.read_bytes()
    if match["gz"]:
        data = gzip.decompress(data)
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" after the last line break
    if match["gz"] and tail:
        raise LedgerBroken(f"{path}: a closed segment ends inside a record")
    records: list[dict[str, Any]] = []
    previous = b""
    sealed = False
    for n, line in enumerate(lines):
        record = json.loads(line)
        expected = previous.hex()[:16] if n else ""
        if record["p"] != expected:
            raise LedgerBroken(f"{path}, record {n}: link {record['p']!r}, the chain says {expected!r}")
        if sealed:
            raise LedgerBroken(f"{path}, record {n}: after the seal")
        if record["k"] == "seal":
            if record["n"] != n or record["h"] != previous.hex():
                raise LedgerBroken(f"{path}: the seal does not match the records before it")
            sealed = True
        if n == 0 and (record["k"] != "head" or record["v"] != 1 or record["seg"] != int(match["seg"])):
            raise LedgerBroken(f"{path}: no head of format 1 for this segment")
        records.append(record)
        previous = hashlib.sha256(previous + line).digest()
    if match["gz"] and not sealed:
        raise LedgerBroken(f"{path}: a closed segment without a seal")
    return Segment(path, match["run"], int(match["seg"]), bool(match["gz"]), records, previous, sealed, tail)


def read(directory: str | os.PathLike[str]) -> Ledger:
    """Every segment and version of ``directory``, checked."""
    root = Path(directory)
    ledger = Ledger()
    for path in sorted((root / "runs").iterdir()):
        if path.name.endswith(".tmp"):
            continue
        ledger.segments.append(read_segment(path))
    for run, segments in ledger.runs().items():
        segments.sort(key=lambda s: s.number)
        if [s.number for s in segments] != list(range(1, len(segments) + 1)):
            raise LedgerBroken(f"run {run}: segments {[s.number for s in segments]}")
        previous_seal = ""
        for segment in segments:
            head = segment.records[0]
            if head["run"] != run or head["prev"] != previous_seal:
                raise LedgerBroken(f"{segment.path}: head run/prev does not follow the previous segment")
            seal = segment.records[-1] if segment.sealed else None
            previous_seal = seal["h"] if seal is not None else ""
        for segment in segments[:-1]:
            if not segment.closed:
                raise LedgerBroken(f"{segment.path}: plain, but not the run's last segment")
    for path in sorted((root / "versions").iterdir()):
        if path.name.endswith(".tmp"):
            continue
        version = read_version(path)
        ledger.versions[version.digest] = version
    return ledger
