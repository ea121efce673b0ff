"""A small ledger writer for the audit's tests, written from docs/ledger-format.md
alone (not the package's writer), so that the audit is checked against the format
document; and, for the real-crawl ledger tests, the records and version files of a
directory read back as they are (nothing checked: the audit checks them).
"""

from __future__ import annotations

import calendar
import gzip
import hashlib
import io
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from scrapy_rfc9309.ledger_format import (
    GENESIS,
    MANIFEST,
    RUNS_DIR,
    VERSIONS_DIR,
    chain,
    link,
    segment_name,
    version_digest,
    version_name,
)
from scrapy_rfc9309.origin import Origin

#: Every version file written, by digest: what a state record names (``vh``).
FILES: dict[str, Path] = {}


def file_sha256(digest: str, directory: Path | None = None) -> str:
    """The SHA-256 of a version file's bytes (the copy in ``directory`` if it has one)."""
    path = directory / VERSIONS_DIR / version_name(digest) if directory is not None else None
    if path is None or not path.exists():
        path = FILES[digest]
    return hashlib.sha256(path.read_bytes()).hexdigest()


def append_manifest(directory: Path, kind: str, run: str, clock: float, **fields: Any) -> str:
    """Append a line to the directory's manifest, chained to its lines; its chain hash (hex)."""
    path = directory / MANIFEST
    data = path.read_bytes() if path.exists() else b""
    hashed = GENESIS
    for line in data.splitlines():
        hashed = chain(hashed, line)
    record = {"k": kind, "t": clock, "p": link(hashed) if data else "", "run": run, **fields}
    line = json.dumps(record, separators=(",", ":")).encode()
    with open(path, "ab") as handle:
        handle.write(line + b"\n")
    return chain(hashed, line).hex()


def rewrite_manifest(directory: Path, edit: dict[str, dict[str, Any]]) -> list[str]:
    """Rewrite the directory's manifest with the end lines of some runs changed (``edit``:
    run -> fields) and its chain recomputed; the chain hashes of its lines."""
    path = directory / MANIFEST
    out, hashes, hashed = [], [], GENESIS
    for number, raw in enumerate(path.read_bytes().splitlines()):
        record = json.loads(raw)
        if record["k"] == "end":
            record.update(edit.get(record["run"], {}))
        record["p"] = link(hashed) if number else ""
        line = json.dumps(record, separators=(",", ":")).encode()
        out.append(line + b"\n")
        hashed = chain(hashed, line)
        hashes.append(hashed.hex())
    path.write_bytes(b"".join(out))
    return hashes


def write_version(directory: Path, url: str, body: bytes, status: int = 200, *, document: str = "robots.txt",
                  redirects: Sequence[str] = (), final_url: str | None = None) -> str:
    """Write one version (if the directory does not have it) and return its digest."""
    access = "parsed" if 200 <= status < 300 else "unavailable"
    final = final_url or url
    digest = version_digest(document, url, redirects, final, status, access, body)
    folder = directory / VERSIONS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / version_name(digest)
    if path.exists():
        return digest
    FILES[digest] = path
    fields = {
        "WARC-Date": "2026-09-21T12:00:00Z",
        "WARC-RFC9309-Format": "1",
        "WARC-RFC9309-Version": digest,
        "WARC-RFC9309-Document": document,
        "WARC-RFC9309-Requested-URI": url,
        "WARC-RFC9309-Status": str(status),
        "WARC-RFC9309-Access": access,
        "WARC-RFC9309-Lifetime": "86400",
        "WARC-RFC9309-Source": "fetch",
    }
    if redirects:
        fields["WARC-RFC9309-Redirects"] = " ".join(redirects)
    temporary = folder / f"{digest}.{os.getpid()}.tmp"
    with open(temporary, "wb") as handle:
        writer = WARCWriter(handle, gzip=True, warc_version="WARC/1.1")
        http = StatusAndHeaders(f"{status} X", [("Content-Type", "text/plain"),
                                                ("Content-Length", str(len(body)))], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(final, "response", payload=io.BytesIO(body),
                                                      http_headers=http, warc_headers_dict=fields))
    os.link(temporary, path)
    os.unlink(temporary)
    return digest


class Run:
    """One process's run: records are appended to a plain segment, which is sealed and
    gzipped at rotation and close. ``kill()`` leaves the open segment as it is."""

    def __init__(self, directory: Path, run: str = "20260921T120000Z-host-100-0000aaaa", agent: str = "testbot",
                 responses: str | None = None) -> None:
        self.directory = directory
        #: The heads' ``resp`` (None: left out, as a run written before the key).
        self.responses = responses
        self.run = run
        self.agent = agent
        (directory / RUNS_DIR).mkdir(parents=True, exist_ok=True)
        self.segment = 0
        self.prev_seal = ""
        self.clock = float(calendar.timegm(time.strptime(run[:16], "%Y%m%dT%H%M%SZ")))  # the run's start
        self.manifest_line = append_manifest(directory, "start", run, self.clock)
        #: The directory's head once the run ended (its end line's chain hash).
        self.head: str | None = None
        self._open(1)

    def _open(self, number: int) -> None:
        self.segment = number
        self.hash = GENESIS
        self.count = 0
        self.path = self.directory / RUNS_DIR / segment_name(self.run, number, closed=False)
        self.handle = open(self.path, "ab")
        extra: dict[str, Any] = {"man": self.manifest_line} if number == 1 else {}
        if self.responses is not None:
            extra["resp"] = self.responses
        self.write("head", v=2, run=self.run, seg=number, prev=self.prev_seal, pkg="0.1.0", agent=self.agent,
                   **extra)

    def write(self, kind: str, **fields: Any) -> None:
        self.clock += 1.0
        record = {"k": kind, "t": round(self.clock, 3), "p": link(self.hash) if self.count else "", **fields}
        line = json.dumps(record, separators=(",", ":")).encode()
        self.handle.write(line + b"\n")
        self.handle.flush()
        self.hash = chain(self.hash, line)
        self.count += 1

    def state(self, origin: str, version: str | None, access: str = "parsed", status: int | None = 200,
              document: str = "robots.txt") -> None:
        extra = {} if version is None else {"vh": file_sha256(version, self.directory)}
        self.write("state", o=origin, doc=document, src="fetch", access=access, ver=version, status=status,
                   err=None, exp=self.clock + 86400, **extra)

    def verdict(self, url: str, fp: str, d: str, version: str | None, rule: list[Any] | None = None,
                agent: str = "testbot", **extra: Any) -> None:
        self.write("verdict", m="GET", u=url, fp=fp, o=str(Origin.from_url(url)), a=agent, ver=version, d=d,
                   r=rule, **extra)

    def response(self, url: str, fp: str, status: int = 200, d: str = "passed") -> None:
        self.write("response", fp=fp, u=url, s=status, d=d)

    def _seal(self, end: bool) -> None:
        fields: dict[str, Any] = {"n": self.count, "h": self.hash.hex()}
        if end:
            fields["end"] = True
        self.write("seal", **fields)
        self.prev_seal = fields["h"]
        self.handle.close()
        closed = self.path.with_name(segment_name(self.run, self.segment, closed=True))
        temporary = closed.with_name(closed.name + ".tmp")
        with open(self.path, "rb") as plain, gzip.open(temporary, "wb") as packed:
            packed.write(plain.read())
        os.rename(temporary, closed)
        os.unlink(self.path)

    def rotate(self) -> None:
        self._seal(end=False)
        self._open(self.segment + 1)

    def close(self) -> None:
        self._seal(end=True)
        self.head = append_manifest(self.directory, "end", self.run, self.clock, segs=self.segment, h=self.prev_seal)

    def kill(self) -> None:
        self.handle.close()


def segment(directory: Path, run: Run, number: int, closed: bool = True) -> Path:
    return directory / RUNS_DIR / segment_name(run.run, number, closed)


def read_lines(path: Path) -> list[bytes]:
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    return data.splitlines(keepends=True)


def write_lines(path: Path, lines: list[bytes]) -> None:
    data = b"".join(lines)
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)


def records(directory: Path, kind: str | None = None) -> list[dict[str, Any]]:
    """The records of every segment of ``directory`` (of ``kind``), in run and segment order."""
    found = []
    for path in sorted((directory / RUNS_DIR).iterdir()):
        if path.name.endswith(".tmp"):
            continue
        data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        found += [json.loads(line) for line in data.split(b"\n")[:-1]]  # not a last line cut short
    return [record for record in found if kind is None or record["k"] == kind]


@dataclass
class Version:
    digest: str
    fields: dict[str, str]
    status_line: str
    headers: list[tuple[str, str]]
    body: bytes


def versions(directory: Path) -> dict[str, Version]:
    """The version files of ``directory``, by digest (their names)."""
    found = {}
    for path in sorted((directory / VERSIONS_DIR).glob("*.warc.gz")):
        digest = path.name.removesuffix(".warc.gz")
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):  # one response record
                http = record.http_headers
                assert digest not in found and record.rec_type == "response"
                found[digest] = Version(digest, dict(record.rec_headers.headers), http.statusline,
                                        list(http.headers), record.content_stream().read())
    return found
