"""A small ledger writer for the audit's tests, written from docs/ledger-format.md
alone (nothing of the package: its digests, chain hashes and file names are computed
here from the document's definitions), so that the audit is checked against the format
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
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

# -- the format document's definitions (docs/ledger-format.md) ----------------------------
MANIFEST = "manifest.jsonl"
RUNS_DIR = "runs"
VERSIONS_DIR = "versions"
#: The chain hash "before" the first line: ``h_0 = SHA-256(line_0)``.
GENESIS = b""
#: The usage vocabulary revision a head names (``cfg.vocab``).
VOCAB = "aipref-vocab-2026-08"
#: The settings a head of format 3 records when a test gives none: nothing enforced but robots.txt.
SETTINGS: dict[str, Any] = {"purpose": [], "deny": [], "read": ["robots.txt", "headers"], "tdm": False,
                            "crawl_delay": False, "vocab": VOCAB}


def chain(previous: bytes, line: bytes) -> bytes:
    """``h_i = SHA-256(h_(i-1) + line_i)``: the 32 raw bytes of the previous hash, then the line."""
    return hashlib.sha256(previous + line).digest()


def link(previous: bytes) -> str:
    """A segment record's ``p``: the first 16 hex digits of the previous chain hash."""
    return previous.hex()[:16]


def version_digest(document: str, requested_url: str, redirects: Sequence[str], final_url: str, status: int,
                   access: str, body: bytes) -> str:
    """SHA-256 of ``json([1, document, requested_url, redirects, final_url, status, access]) + "\\n" + body``,
    the JSON compact (separators ``,`` and ``:``) and ASCII only."""
    fields = json.dumps([1, document, requested_url, list(redirects), final_url, status, access],
                        separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(fields.encode("ascii") + b"\n" + body).hexdigest()


def version_name(digest: str) -> str:
    return f"{digest}.warc.gz"


def segment_name(run: str, number: int, closed: bool) -> str:
    return f"{run}-{number:06d}.jsonl{'.gz' if closed else ''}"


def origin_of(url: str) -> str:
    """``scheme://host:port`` (the port may be left out when it is the scheme's default)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port is not None else "")

#: Every version file written, by digest: what a state record names (``vh``).
FILES: dict[str, Path] = {}


def file_sha256(digest: str, directory: Path | None = None) -> str:
    """The SHA-256 of a version file's bytes (the copy in ``directory`` if it has one)."""
    path = directory / VERSIONS_DIR / version_name(digest) if directory is not None else None
    if path is None or not path.exists():
        path = FILES[digest]
    return hashlib.sha256(path.read_bytes()).hexdigest()


def append_manifest(directory: Path, kind: str, run: str, clock: float, **fields: Any) -> str:
    """Append a line to the directory's manifest, chained to its lines (``p`` the full previous
    chain hash, format 3); its chain hash (hex)."""
    path = directory / MANIFEST
    data = path.read_bytes() if path.exists() else b""
    hashed = GENESIS
    for line in data.splitlines():
        hashed = chain(hashed, line)
    record = {"k": kind, "t": clock, "p": hashed.hex() if data else "", "run": run, **fields}
    line = json.dumps(record, separators=(",", ":")).encode()
    with open(path, "ab") as handle:  # a line cut short (a process killed as it wrote it) ended first
        handle.write((b"\n" if data and not data.endswith(b"\n") else b"") + line + b"\n")
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
        record["p"] = hashed.hex() if number else ""
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
                 responses: str | None = None, settings: dict[str, Any] | None = None, version: int = 3) -> None:
        self.directory = directory
        #: The heads' ``v``, and their ``cfg`` (format 3; a head of format 2 has none).
        self.version = version
        self.settings = {**SETTINGS, **(settings or {})}
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
        if self.version >= 3:
            extra["cfg"] = self.settings
        self.write("head", v=self.version, run=self.run, seg=number, prev=self.prev_seal, pkg="0.1.0", agent=self.agent,
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
        self.write("verdict", m="GET", u=url, fp=fp, o=origin_of(url), a=agent, ver=version, d=d,
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
        if end:  # the end line before the segment's gzip form (a kill between leaves it plain)
            self.head = append_manifest(self.directory, "end", self.run, self.clock, segs=self.segment,
                                        h=self.prev_seal)
            if self.stop_before_gzip:
                return
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

    #: Stop after the end line, the last segment left plain (a process killed before its gzip form).
    stop_before_gzip = False

    def seal_and_kill(self) -> None:
        """A process killed after it sealed its last segment, before its end line."""
        self.write("seal", n=self.count, h=self.hash.hex(), end=True)
        self.handle.close()

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
