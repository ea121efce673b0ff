"""Opening and reading a ledger directory's files for the audit: its listing, a segment's lines
(plain or gzip), a version file's fields and body. Everything read is bounded: a line at
:data:`MAX_LINE_BYTES` + 1 bytes, a version's body at :data:`MAX_VERSION_BYTES` + 1. Pure Python.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

from .audit_result import LedgerError
from .format import RUNS_DIR, VERSION_FORMAT, VERSIONS_DIR

__all__ = ["MAX_LINE_BYTES", "MAX_VERSION_BYTES", "VERSION_NAME", "lines", "listing", "open_segment",
           "read_version", "same_records"]

#: A record's line and a version's body longer than this are reported, not read: what the writer
#: writes is far shorter (a URL, a rule), and a hostile file must not exhaust the audit's memory.
MAX_LINE_BYTES = 1 << 20
MAX_VERSION_BYTES = 64 << 20
#: A version file's name: its digest.
VERSION_NAME = re.compile(r"^(?P<digest>[0-9a-f]{64})\.warc\.gz$")
_CHUNK = 1 << 16


def listing(directory: str) -> tuple[list[str], list[str]]:
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



def open_segment(path: str, closed: bool) -> BinaryIO:
    return gzip.open(path, "rb") if closed else open(path, "rb")  # type: ignore[return-value]


def lines(path: str, closed: bool) -> Iterator[bytes]:
    """The file's lines, each cut after :data:`MAX_LINE_BYTES` + 1 bytes (a longer one is not a record)."""
    with open_segment(path, closed) as handle:
        while line := handle.readline(MAX_LINE_BYTES + 1):
            yield line


def same_records(path: str, closed: bool, other: str, other_closed: bool) -> bool:
    """Whether two files of one segment (its plain and gzip forms) hold the same bytes."""
    try:
        with open_segment(path, closed) as first, open_segment(other, other_closed) as second:
            while True:
                chunk = first.read(_CHUNK)
                if chunk != second.read(_CHUNK):
                    return False
                if not chunk:
                    return True
    except (OSError, EOFError, zlib.error):
        return False


def read_version(path: str, limit: int = MAX_VERSION_BYTES) -> tuple[dict[str, Any], bytes]:
    """A version file's fields and body (the record's payload as stored, at most ``limit`` bytes)."""
    from warcio.archiveiterator import ArchiveIterator

    found: tuple[Any, bytes] | None = None
    with open(path, "rb") as handle:
        for record in ArchiveIterator(handle):
            if record.rec_type != "response":
                continue
            if found is not None:
                raise ValueError("more than one response record")
            body = record.raw_stream.read(limit + 1)
            if len(body) > limit:
                raise ValueError(f"a body over {limit >> 20} MiB (not read)")
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

