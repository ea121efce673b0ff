"""The ledger format's functions (scrapy_rfc9309/evidence/format.py) against docs/ledger-format.md:
the chain hash of a manifest's last line, found from its tail, is the one the document's formula
gives over the whole file, whatever the manifest's size, versions of lines, cut last line or the
reads' sizes; run and segment names follow the document's pattern. These kill the mutants the
audit's tests leave alive (docs/development.md, "Mutation testing"): the writer alone reads a tail."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
from pathlib import Path

import pytest

from scrapy_rfc9309.evidence.format import (
    MANIFEST_TAIL,
    SEGMENT_RE,
    manifest_last,
    new_run_id,
    segment_name,
    version_digest,
)


def _chain(previous: bytes, line: bytes) -> bytes:
    """The document's ``h_i = SHA-256(h_(i-1) + line_i)``, ``h_-1`` empty."""
    return hashlib.sha256(previous + line).digest()


def _manifest(count: int, full_links: bool = True, pad: int = 0) -> tuple[bytes, bytes]:
    """A manifest of ``count`` lines (``p`` the full previous hash, or its first 16 hex digits as
    version 2 wrote), each padded by ``pad`` characters, and its last line's chain hash."""
    lines, hashed = [], b""
    for index in range(count):
        p = hashed.hex() if full_links else hashed.hex()[:16]
        line = json.dumps({"k": "start" if index % 2 == 0 else "end", "t": 1789992000.0 + index, "p": p,
                           "run": f"20260921T120000Z-host-{index}-0000aaaa", "x": "y" * pad},
                          separators=(",", ":")).encode()
        lines.append(line)
        hashed = _chain(hashed, line)
    return b"".join(line + b"\n" for line in lines), hashed


def _last(tmp_path: Path, data: bytes, most: int | None = None) -> tuple[bytes, bool]:
    """``manifest_last`` of ``data`` in a file; each read returns at most ``most`` bytes if given."""
    path = tmp_path / "manifest.jsonl"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        if most is None:
            return manifest_last(fd, len(data))
        return manifest_last(fd, len(data), lambda f, count, offset: os.pread(f, min(count, most), offset))
    finally:
        os.close(fd)


def _whole(data: bytes) -> bytes:
    """The chain hash of the last line, by the document's formula over every line from the first."""
    hashed = b""
    for line in data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n"):
        hashed = _chain(hashed, line)
    return hashed


def test_an_empty_manifest_is_the_genesis(tmp_path: Path) -> None:
    assert _last(tmp_path, b"") == (b"", False)
    assert _last(tmp_path, b"{") == (_chain(b"", b"{"), True)  # a process killed after one byte


@pytest.mark.parametrize("count", [1, 2, 5])
def test_a_short_manifest(tmp_path: Path, count: int) -> None:
    data, hashed = _manifest(count)
    assert _last(tmp_path, data) == (hashed, False)


@pytest.mark.parametrize("full_links", [True, False])
@pytest.mark.parametrize("count", [1, 3])
def test_a_short_manifest_with_its_last_line_cut(tmp_path: Path, count: int, full_links: bool) -> None:
    data, _ = _manifest(count, full_links)
    cut = data + b'{"k":"start","t":1789993000.0,"p":"'  # a process killed while appending
    assert _last(tmp_path, cut) == (_whole(cut), True)


@pytest.mark.parametrize("full_links", [True, False])
def test_a_manifest_longer_than_its_tail(tmp_path: Path, full_links: bool) -> None:
    """Over 64 KiB: from the newest line naming its full link (format 3), or from the start."""
    data, hashed = _manifest(300, full_links, pad=400)
    assert len(data) > 1 << 16
    assert _last(tmp_path, data) == (hashed, False)
    cut = data[:-1]  # the last line's break missing
    assert _last(tmp_path, cut) == (hashed, True)
    assert _last(tmp_path, data + b'{"k":"end"') == (_whole(data + b'{"k":"end"'), True)
    if full_links:  # the document: "the writer reads the last 64 KiB", however long the manifest
        read: list[int] = []
        fd = os.open(tmp_path / "manifest.jsonl", os.O_RDONLY)
        try:
            def counted(f: int, count: int, offset: int) -> bytes:
                chunk = os.pread(f, count, offset)
                read.append(len(chunk))
                return chunk

            manifest_last(fd, len(data) + len(b'{"k":"end"'), counted)
        finally:
            os.close(fd)
        assert sum(read) <= MANIFEST_TAIL, sum(read)


def test_a_manifest_of_version_2_lines_longer_than_a_read(tmp_path: Path) -> None:
    """Hashed from its start a MiB at a time (not in small reads): lines across the reads' boundaries."""
    data, hashed = _manifest(2700, full_links=False, pad=400)
    assert len(data) > 1 << 20
    assert _last(tmp_path, data) == (hashed, False)
    assert _last(tmp_path, data[:-1]) == (hashed, True)
    reads = []
    path = tmp_path / "manifest.jsonl"
    fd = os.open(path, os.O_RDONLY)
    try:
        def read(f: int, count: int, offset: int) -> bytes:
            reads.append(count)
            return os.pread(f, count, offset)

        assert manifest_last(fd, len(data) - 1, read) == (hashed, True)
    finally:
        os.close(fd)
    assert len(reads) <= 4, reads[:10]  # the tail, then the file in chunks of a MiB


@pytest.mark.parametrize("full_links", [True, False])
def test_a_manifest_shorter_than_its_size_said(tmp_path: Path, full_links: bool) -> None:
    """Cut short between the size's reading and the reads (another process's manifest is only
    appended to, but a file system may lie): what is there is chained, and the reads end."""
    data, hashed = _manifest(300, full_links, pad=400)
    path = tmp_path / "manifest.jsonl"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert manifest_last(fd, len(data) + 100) == (hashed, False)
    finally:
        os.close(fd)


@pytest.mark.parametrize("full_links", [True, False])
def test_short_reads(tmp_path: Path, full_links: bool) -> None:
    """A read may return fewer bytes than asked: the answer is the same."""
    data, hashed = _manifest(300, full_links, pad=400)
    assert _last(tmp_path, data, most=1000) == (hashed, False)
    assert _last(tmp_path, data[:-1], most=777) == (hashed, True)


@pytest.mark.parametrize("full_links", [True, False])
def test_only_the_given_size_is_read(tmp_path: Path, full_links: bool) -> None:
    """``size`` bytes are the manifest (taken under its lock): bytes past them are not read."""
    data, hashed = _manifest(300, full_links, pad=400)
    path = tmp_path / "manifest.jsonl"
    path.write_bytes(data + b'{"k":"start","t":1789999999.0,"p":"","run":"later"}\n')
    fd = os.open(path, os.O_RDONLY)
    try:
        assert manifest_last(fd, len(data)) == (hashed, False)
    finally:
        os.close(fd)


def test_newer_lines_of_version_2_after_lines_of_format_3(tmp_path: Path) -> None:
    """A process of version 2 appended after one of format 3: chained on from the newest full link."""
    new, _ = _manifest(300, True, pad=400)
    hashed = _whole(new)
    lines = []
    for index in range(3):
        line = json.dumps({"k": "start", "t": 1789999000.0 + index, "p": hashed.hex()[:16], "run": "r"},
                          separators=(",", ":")).encode()
        lines.append(line)
        hashed = _chain(hashed, line)
    data = new + b"".join(line + b"\n" for line in lines)
    assert _last(tmp_path, data) == (hashed, False)


def test_a_line_that_is_not_json_is_not_trusted_for_its_link(tmp_path: Path) -> None:
    """A line not starting with ``{`` is chained as it is; its ``"p"`` is not taken as a link."""
    data, _ = _manifest(300, True, pad=400)
    forged = b'x"p":"' + b"0" * 64 + b'"'
    data += forged + b"\n"
    assert _last(tmp_path, data) == (_whole(data), False)


def test_the_version_digest_of_fields_outside_ascii() -> None:
    """The fields' JSON is ASCII (``ensure_ascii``): a non-ASCII character is written as its escape."""
    fields = b'[1,"robots.txt","http://xn--9ca.test/\\u00e9","[]","http://xn--9ca.test/\\u00e9",200,"parsed"]'
    fields = fields.replace(b'"[]"', b"[]")
    expected = hashlib.sha256(fields + b"\n" + b"body").hexdigest()
    assert version_digest("robots.txt", "http://xn--9ca.test/\u00e9", [], "http://xn--9ca.test/\u00e9", 200,
                          "parsed", b"body") == expected


def test_run_and_segment_names() -> None:
    run = new_run_id(1789992000.0)
    assert re.fullmatch(r"20260921T120000Z-[A-Za-z0-9._]+-\d+-[0-9a-f]{8}", run), run
    assert run.split("-")[1] == re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname())
    assert run.split("-")[2] == str(os.getpid())
    assert new_run_id(1789992000.0) != run  # unique across calls: its random part
    for segment, closed in ((1, False), (12, True), (1234567, False)):
        name = segment_name(run, segment, closed)
        found = SEGMENT_RE.match(name)
        assert found is not None, name
        assert (found["run"], int(found["seg"]), bool(found["gz"])) == (run, segment, closed)
    assert segment_name(run, 7, closed=True) == f"{run}-000007.jsonl.gz"
    assert segment_name(run, 7, closed=False) == f"{run}-000007.jsonl"
