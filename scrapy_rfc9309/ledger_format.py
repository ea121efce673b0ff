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
from collections.abc import Sequence

__all__ = ["FORMAT", "GENESIS", "LINK_DIGITS", "MANIFEST", "RUNS_DIR", "SEGMENT_RE", "VERSIONS_DIR",
           "VERSION_FORMAT", "chain", "file_hash", "link", "manifest_chain", "new_run_id", "segment_name",
           "version_digest", "version_name"]

#: The format's version: ``v`` of a segment's ``head`` record (2: runs chained through the
#: directory's manifest, version files' bytes named by the ``state`` records).
FORMAT = 2
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


def manifest_chain(data: bytes) -> tuple[bytes, int]:
    """The chain hash of the last complete line of a manifest's bytes (:data:`GENESIS`
    when none), and where the complete lines end (a line cut short is not chained)."""
    hashed = GENESIS
    end = data.rfind(b"\n") + 1
    for line in data[:end].splitlines():
        hashed = chain(hashed, line)
    return hashed, end


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
