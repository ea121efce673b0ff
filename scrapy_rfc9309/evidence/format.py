"""The ledger's format (docs/ledger-format.md), shared by its writer and the audit:
version digests, the hash chain of a segment's records, and file names. Pure Python.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import socket
import time
from collections.abc import Callable, Sequence

__all__ = ["FORMAT", "FORMATS_READ", "GENESIS", "LINK_DIGITS", "MANIFEST", "MANIFEST_TAIL", "RUNS_DIR", "SEGMENT_RE",
           "VERSIONS_DIR", "VERSION_FORMAT", "chain", "file_hash", "link", "manifest_last", "new_run_id",
           "segment_name", "version_digest", "version_name"]

#: The format's version: ``v`` of a segment's ``head`` record (2: runs chained through the
#: directory's manifest, version files' bytes named by the ``state`` records; 3: the settings
#: the verdicts depend on in the head, ``cfg``, and the full previous chain hash in each manifest line).
FORMAT = 3
#: The versions the audit reads (a run of version 2 is checked without its settings).
FORMATS_READ = (2, 3)
#: The version files' format: ``WARC-RFC9309-Format``, and the first member of the digest's fields.
VERSION_FORMAT = 1

#: Hex digits of the previous chain hash a record carries (``p``).
LINK_DIGITS = 16

#: The chain hash before a segment's first record: the first record's hash is ``SHA-256(line)``.
GENESIS = b""

VERSIONS_DIR = "versions"
RUNS_DIR = "runs"
#: The directory's manifest: a hash-chained line per run's start and end, in the order written.
MANIFEST = "manifest.jsonl"

#: A segment's file name: run, segment number, and whether it is closed (gzip).
SEGMENT_RE = re.compile(r"^(?P<run>\d{8}T\d{6}Z-[A-Za-z0-9._]+-\d+-[0-9a-f]{8})-(?P<seg>\d{6,})\.jsonl(?P<gz>\.gz)?$")

_HOST_UNSAFE = re.compile(r"[^A-Za-z0-9.]")


def version_digest(document: str, requested_url: str, redirects: Sequence[str], final_url: str, status: int,
                   access: str, body: bytes) -> str:
    """The digest naming a version: what the access policy and the parser saw of one fetch."""
    fields = json.dumps([VERSION_FORMAT, document, requested_url, list(redirects), final_url, status, access],
                        separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(fields.encode("ascii") + b"\n" + body).hexdigest()


def version_name(digest: str) -> str:
    """The file name of a version, under :data:`VERSIONS_DIR`."""
    return f"{digest}.warc.gz"


def chain(previous: bytes, line: bytes) -> bytes:
    """The chain hash of a record whose line (without its line break) is ``line``,
    after the record whose chain hash is ``previous`` (:data:`GENESIS` for the first)."""
    return hashlib.sha256(previous + line).digest()


def link(previous: bytes) -> str:
    """What a record carries of the previous record's chain hash (``p``)."""
    return previous.hex()[:LINK_DIGITS]


#: Bytes of a manifest's end read to chain a line to it: its lines are far shorter (a run name,
#: a time, two hashes), so the tail holds the last line and the one that names its chain.
MANIFEST_TAIL = 1 << 16
_FULL_LINK = re.compile(rb'"p":"([0-9a-f]{64})"')


def manifest_last(fd: int, size: int, read: Callable[[int, int, int], bytes] | None = None) -> tuple[bytes, bool]:
    """The chain hash of the last line of the manifest open at ``fd`` (``size`` bytes;
    :data:`GENESIS` when empty), and whether that line was cut short (no line break).

    Only the last :data:`MANIFEST_TAIL` bytes are read: a line of format 3 names the full
    chain hash before it (``p``), so the chain goes on from the newest such line of the tail
    (a cut line after it is chained as it is). A manifest whose tail has none (written before
    format 3) is hashed from its start, once: the line appended then names its full link.
    ``read`` is :func:`os.pread` unless given."""
    if size <= 0:
        return GENESIS, False
    if read is None:
        read = os.pread
    start = max(0, size - MANIFEST_TAIL)
    data = _read_at(fd, size - start, start, read)
    cut = not data.endswith(b"\n")
    lines = data.split(b"\n")
    if not cut:
        lines.pop()
    for index in range(len(lines) - 1, -1, -1):
        if index == 0 and start == 0:
            hashed = GENESIS  # the file's first line
        elif index == 0:
            break  # the tail's first line may start before the tail
        else:
            found = _FULL_LINK.search(lines[index])
            if found is None or not lines[index].startswith(b"{"):
                continue
            hashed = bytes.fromhex(found[1].decode())
        for line in lines[index:]:
            hashed = chain(hashed, line)
        return hashed, cut
    return _chain_whole(fd, size, read), cut


def _read_at(fd: int, count: int, offset: int, read: Callable[[int, int, int], bytes]) -> bytes:
    parts = []
    while count > 0:
        chunk = read(fd, count, offset)
        if not chunk:
            break
        parts.append(chunk)
        count -= len(chunk)
        offset += len(chunk)
    return b"".join(parts)


def _chain_whole(fd: int, size: int, read: Callable[[int, int, int], bytes]) -> bytes:
    """The chain hash of a manifest's last line, hashed from its start a chunk at a time."""
    hashed = GENESIS
    current = hashlib.sha256(hashed)
    offset = 0
    while offset < size:
        chunk = read(fd, min(1 << 20, size - offset), offset)
        if not chunk:
            break
        offset += len(chunk)
        position = 0
        while (end := chunk.find(b"\n", position)) >= 0:
            current.update(chunk[position:end])
            hashed = current.digest()
            current = hashlib.sha256(hashed)
            position = end + 1
        current.update(chunk[position:])
    if offset and position < len(chunk):  # a last line cut short: chained as it is
        hashed = current.digest()
    return hashed


def file_hash(data: bytes) -> str:
    """What a ``state`` record names of a version file (``vh``): the SHA-256 of its bytes."""
    return hashlib.sha256(data).hexdigest()


def new_run_id(now: float | None = None) -> str:
    """A name for one process's run, unique across the processes of a fleet that share a directory."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    host = _HOST_UNSAFE.sub("_", socket.gethostname()) or "host"
    return f"{stamp}-{host}-{os.getpid()}-{secrets.token_hex(4)}"


def segment_name(run: str, segment: int, closed: bool) -> str:
    """The file name of a run's segment, under :data:`RUNS_DIR`."""
    return f"{run}-{segment:06d}.jsonl{'.gz' if closed else ''}"
