"""The ledger's writer driven directly, on real files in a temporary directory: its segments
(scrapy_rfc9309/ledger/segments.py: the chain of records, rotation at the bound, the seal, the
gzip of a closed segment, a failed write, the manifest), the run's writer (ledger/writer.py: a
verdict's record and what the request's meta names of it, states, the close) and the versions
(ledger/versions.py: a version's redirects, a stale copy's version, the file's link). Each line is
checked against docs/ledger-format.md's definitions (tests/ledger_writer.py), not against the
package. These kill the mutants the crawls of tests/test_ledger.py leave alive (docs/development.md,
"Mutation testing"), in a fraction of a second each."""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from ledger_writer import chain, link, segment_name
from scrapy.utils.defer import deferred_from_coro

from scrapy_rfc9309.evidence.format import MANIFEST, RUNS_DIR
from scrapy_rfc9309.exceptions import RobotsTxtLedgerError
from scrapy_rfc9309.ledger import segments as ledger_segments
from scrapy_rfc9309.ledger.segments import Segments, append_manifest, prepare_directory

RUN = "20260921T120000Z-host-1-0000aaaa"
SETTINGS = {"purpose": [], "deny": [], "read": ["robots.txt"], "tdm": False, "crawl_delay": False, "vocab": "v"}
#: The head of a verdict record as the writer formats it, up to its URL.
HEAD = '{"k":"verdict","m":"GET","o":"https://example.com","a":"bot","ver":null,"d":"allowed","r":null,"u":'


class Harness:
    """What surrounds a :class:`Segments`: the worker's queue (its jobs run when the test says),
    the failures told, the stats."""

    def __init__(self, directory: Path, rotate_bytes: int = 1 << 30, passed_responses: bool = False) -> None:
        from scrapy.utils.test import get_crawler

        self.crawler = get_crawler()
        self.jobs: list[tuple[Any, tuple[Any, ...]]] = []
        self.failures: list[tuple[str, OSError]] = []
        prepare_directory(str(directory))
        self.directory = directory
        self.segments = Segments(self.crawler, str(directory), RUN, "bot", passed_responses, SETTINGS, rotate_bytes,
                                 lambda job, *args: self.jobs.append((job, args)),
                                 lambda path, exc: self.failures.append((path, exc)))

    def run_jobs(self) -> None:
        jobs, self.jobs = self.jobs, []
        for job, args in jobs:
            job(*args)


def _lines(path: Path) -> list[bytes]:
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    assert data.endswith(b"\n")
    return data[:-1].split(b"\n")


def _check_chain(lines: list[bytes]) -> bytes:
    """Each line's ``p`` is the link of the chain hash before it (the head's empty); the last hash."""
    hashed = b""
    for n, line in enumerate(lines):
        assert json.loads(line)["p"] == ("" if n == 0 else link(hashed)), (n, line)
        hashed = chain(hashed, line)
    return hashed


def test_records_are_chained_each_segment_sealed_and_the_next_head_names_the_seal(tmp_path: Path) -> None:
    """A segment rotates at the record that brings it to the bound (not one later, not before),
    its seal counts its records and names the chain hash of the last, and the next segment's head
    names that hash; a closed segment is replaced by its gzip, the same lines."""
    harness = Harness(tmp_path)
    segments = harness.segments
    segments.open("")
    head_size = segments.size
    segments.record(HEAD, "https://example.com/0", b"\x01" * 16)
    one = segments.size - head_size  # every record below has this size (same URL length, time digits)
    segments.rotate_bytes = segments.size + 2 * one  # the second record from here reaches the bound exactly
    segments.record(HEAD, "https://example.com/1", b"\x02" * 16)
    assert segments.segment == 1
    segments.record(HEAD, "https://example.com/2", b"\x03" * 16)
    assert segments.segment == 2 and segments.count == 1  # rotated: the new segment holds its head
    assert harness.crawler.stats.get_value("robotstxt/ledger/segments") == 2  # type: ignore[union-attr]
    first = tmp_path / RUNS_DIR / segment_name(RUN, 1, closed=False)
    plain = first.read_bytes()
    assert [job.__name__ for job, _ in harness.jobs] == ["_close_segment"]
    harness.run_jobs()
    assert not first.exists()
    closed = tmp_path / RUNS_DIR / segment_name(RUN, 1, closed=True)
    assert gzip.decompress(closed.read_bytes()) == plain
    assert sorted(p.name for p in (tmp_path / RUNS_DIR).iterdir()) == [
        segment_name(RUN, 1, closed=True), segment_name(RUN, 2, closed=False)]
    lines = _lines(closed)
    assert [json.loads(line)["k"] for line in lines] == ["head", "verdict", "verdict", "verdict", "seal"]
    last = _check_chain(lines[:-1])
    seal = json.loads(lines[-1])
    assert seal == {"k": "seal", "t": seal["t"], "p": link(last), "n": 4, "h": last.hex()}
    assert json.loads(lines[0])["man"] == segments.manifest_line
    segments.record(HEAD, "https://example.com/3", b"\x04" * 16)
    ending = segments.seal(end=True)
    second = _lines(tmp_path / RUNS_DIR / segment_name(RUN, 2, closed=False))
    head = json.loads(second[0])
    assert (head["seg"], head["prev"], "man" in head) == (2, last.hex(), False)
    assert _check_chain(second[:-1]).hex() == ending
    assert json.loads(second[-1]) == {"k": "seal", "t": json.loads(second[-1])["t"],
                                      "p": link(bytes.fromhex(ending)), "n": 2, "h": ending, "end": True}
    assert segments.recorded == chain(chain(b"", second[0]), second[1]) and segments.written == 5 + 3
    os.close(segments.fd)


def test_a_segment_below_its_bound_is_not_rotated(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    segments = harness.segments
    segments.open("")
    segments.rotate_bytes = segments.size + 10_000
    for n in range(5):
        segments.record(HEAD, f"https://example.com/{n}", b"")
    assert (segments.segment, segments.count, harness.jobs) == (1, 6, [])
    os.close(segments.fd)


def test_the_head_records_the_run_and_what_it_records(tmp_path: Path) -> None:
    for passed, resp in ((False, "refused"), (True, "all")):
        directory = tmp_path / resp
        harness = Harness(directory, passed_responses=passed)
        harness.segments.open("")
        [line] = _lines(directory / RUNS_DIR / segment_name(RUN, 1, closed=False))
        head = json.loads(line)
        manifest = (directory / MANIFEST).read_bytes()
        assert head == {"k": "head", "t": head["t"], "p": "", "v": 3, "run": RUN, "seg": 1, "prev": "",
                        "pkg": head["pkg"], "agent": "bot", "resp": resp, "cfg": SETTINGS,
                        "man": hashlib.sha256(manifest.rstrip(b"\n")).hexdigest()}
        assert json.loads(manifest)["k"] == "start" and json.loads(manifest)["run"] == RUN
        os.close(harness.segments.fd)


def test_a_record_is_the_format_documents_line(tmp_path: Path) -> None:
    """The pure-Python ``write_record`` (used where the C accelerator is not built)."""
    previous = hashlib.sha256(b"before").digest()
    fd = os.open(tmp_path / "segment", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        hashed, size = ledger_segments.write_record(fd, previous, HEAD, 'https://example.com/"\u00e9', b"\xab\xcd",
                                                    1789992099.25)
    finally:
        os.close(fd)
    data = (tmp_path / "segment").read_bytes()
    assert size == len(data) and data.endswith(b"\n") and data.count(b"\n") == 1
    assert data == (HEAD + r'"https://example.com/\"\u00e9","fp":"abcd","t":1789992099.250,"p":"'
                    + link(previous) + '"}\n').encode()
    assert hashed == chain(previous, data[:-1])


def test_a_failed_write_is_told_once_and_every_later_record_fails(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    segments = harness.segments
    segments.open("")
    os.close(segments.fd)  # what a write failing at the OS looks like to the writer (EBADF)
    with pytest.raises(RobotsTxtLedgerError, match="EBADF"):
        segments.record(HEAD, "https://example.com/0", b"")
    [(path, exc)] = harness.failures
    assert path == segments.path and isinstance(exc, OSError)
    assert segments.failure is not None and segments.failure.startswith(f"{segments.path}: EBADF: ")
    for write in (lambda: segments.record(HEAD, "https://example.com/1", b""),
                  lambda: segments.write('{"k":"state"}\n')):
        with pytest.raises(RobotsTxtLedgerError, match="EBADF"):
            write()
    assert len(harness.failures) == 1
    segments.fd = -1


def test_a_closed_ledger_refuses_records(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    segments = harness.segments
    segments.open("")
    os.close(segments.fd)
    segments.fd = -1
    with pytest.raises(RobotsTxtLedgerError, match=r"\(closed\)"):
        segments.record(HEAD, "https://example.com/0", b"")
    with pytest.raises(RobotsTxtLedgerError, match=r"\(closed\)"):
        segments.write('{"k":"state"}\n')
    assert harness.failures == [] and segments.failure is None


def test_the_first_manifest_line_links_to_nothing_and_the_next_to_it(tmp_path: Path) -> None:
    prepare_directory(str(tmp_path))
    first = append_manifest(str(tmp_path), {"k": "start", "run": RUN, "x": 1})
    second = append_manifest(str(tmp_path), {"k": "end", "run": RUN})
    lines = (tmp_path / MANIFEST).read_bytes().split(b"\n")
    assert lines[2] == b""
    records = [json.loads(line) for line in lines[:2]]
    assert [list(record) for record in records] == [["k", "t", "p", "run", "x"], ["k", "t", "p", "run"]]
    assert (records[0]["p"], records[1]["p"]) == ("", first)
    assert first == chain(b"", lines[0]).hex() and second == chain(bytes.fromhex(first), lines[1]).hex()


# -- the run's writer (ledger/writer.py) --------------------------------------------------------
ROBOTS = b"User-agent: *\nDisallow: /private\n"


class Run:
    """A :class:`Ledger` of a crawler of ``settings`` (never crawled: its records made by the test),
    and a parsed robots.txt state of ``https://example.com``."""

    def __init__(self, directory: Path, **settings: Any) -> None:
        from middleware_support import mw_settings
        from scrapy.utils.test import get_crawler

        from scrapy_rfc9309.config import Config
        from scrapy_rfc9309.core.origins import Origin
        from scrapy_rfc9309.core.state import Access, FetchOutcome, OriginState
        from scrapy_rfc9309.ledger.writer import Ledger

        self.directory = directory
        self.crawler = get_crawler(settings_dict=mw_settings(ROBOTSTXT_LEDGER=str(directory), **settings))
        self.config = Config.from_settings(self.crawler.settings)
        self.ledger = Ledger(self.crawler, self.config, "bot")
        origin = Origin.from_url("https://example.com/")
        assert origin is not None
        self.origin = origin
        outcome = FetchOutcome(Access.PARSED, "https://example.com/robots.txt", 200, body=ROBOTS)
        self.state = OriginState.initial(outcome, 1_800_000_000.0, self.config.policy)

    def judgement(self, url: str) -> Any:
        from scrapy_rfc9309.core.verdict import Enforced, judge

        return judge(url, "bot", "bot", self.state, 1_800_000_001.0, Enforced(self.config.policy), explain=True)

    def lines(self) -> list[bytes]:
        [path] = (self.directory / RUNS_DIR).iterdir()
        return _lines(path)

    async def state_record(self, state: Any) -> dict[str, Any]:
        """The one ``state`` record of robots.txt settled on ``state`` (the ledger closed after it)."""
        from scrapy_rfc9309.core.documents import ROBOTS_TXT

        try:
            await self.ledger.settled(self.origin, state, ROBOTS_TXT, "fetch")
        finally:
            await self.ledger.close()
        [record] = [json.loads(line) for line in self.lines() if b'"k":"state"' in line]
        return record


@pytest_twisted.inlineCallbacks
def test_a_verdicts_record_is_named_in_its_requests_meta(tmp_path: Path) -> Any:
    """With ``ROBOTSTXT_PROVENANCE``: the URL, run, segment, line, chain hash and robots.txt
    version of the verdict's record, as the file has them."""
    from scrapy import Request

    from scrapy_rfc9309.core.documents import ROBOTS_TXT
    from scrapy_rfc9309.meta import RECORD_META

    run = Run(tmp_path, ROBOTSTXT_PROVENANCE="provenance")
    ledger = run.ledger
    try:
        yield deferred_from_coro(ledger.settled(run.origin, run.state, ROBOTS_TXT, "fetch"))
        requests = [Request(f"https://example.com/{path}") for path in ("page", "private/x")]
        for request in requests:
            ledger.judged(request, run.origin, run.judgement(request.url))
    finally:
        yield deferred_from_coro(ledger.close())
    lines = run.lines()
    assert [json.loads(line)["k"] for line in lines] == ["head", "state", "verdict", "verdict", "seal"]
    hashed = b""
    for number, line in enumerate(lines, 1):
        hashed = chain(hashed, line)
        record = json.loads(line)
        if record["k"] == "verdict":
            [request] = [r for r in requests if r.url == record["u"]]
            assert request.meta[RECORD_META] == (request.url, ledger.run, 1, number, hashed, record["ver"])
            assert len(record["ver"]) == 64


@pytest_twisted.inlineCallbacks
def test_the_close_seals_the_run_ends_it_in_the_manifest_and_closes_its_segment(tmp_path: Path) -> Any:
    """The last segment sealed with ``end``, synced and closed (its descriptor no longer
    the file's), compressed; the manifest's end line names the seal, its chain hash the head."""
    from scrapy import Request

    run = Run(tmp_path)
    ledger = run.ledger
    request = Request("https://example.com/page")
    ledger.judged(request, run.origin, run.judgement(request.url))
    segments = ledger._segments
    fd, path = segments.fd, Path(segments.path)
    opened = os.fstat(fd)
    yield deferred_from_coro(ledger.close())
    try:
        now = os.fstat(fd)
    except OSError:
        pass
    else:  # the number reused since: another file
        assert (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino)
    assert not path.exists() and path.with_name(path.name + ".gz").exists()
    lines = run.lines()
    seal = json.loads(lines[-1])
    assert seal["end"] is True and seal["h"] == _check_chain(lines[:-1]).hex()
    manifest = (tmp_path / MANIFEST).read_bytes().split(b"\n")
    end = json.loads(manifest[1])
    assert (end["k"], end["run"], end["segs"], end["h"]) == ("end", ledger.run, 1, seal["h"])
    hashed = b""
    for line in manifest[:-1]:
        hashed = chain(hashed, line)
    assert ledger.head == hashed.hex() == run.crawler.stats.get_value("robotstxt/ledger/head")  # type: ignore[union-attr]
    assert ledger.closed
    with pytest.raises(RobotsTxtLedgerError, match=r"\(closed\)"):
        ledger.judged(request, run.origin, run.judgement(request.url))


@pytest.mark.parametrize(("settings", "read", "tdm"), [
    ({"ROBOTSTXT_TDMREP": True, "ROBOTSTXT_USAGE_DENY": ["search", "train-ai"], "ROBOTSTXT_USAGE_HEADERS": False},
     ["robots.txt", "tdmrep.json"], True),
    ({"ROBOTSTXT_TDMREP": True, "ROBOTSTXT_USAGE_DENY": ["search"]}, ["robots.txt", "headers", "tdmrep.json"], False),
    ({"ROBOTSTXT_USAGE_DENY": ["train-ai"], "ROBOTSTXT_USAGE_META": True}, ["robots.txt", "headers", "meta"], False),
], ids=["tdm enforced", "tdm read, nothing it reserves denied", "tdm not read"])
def test_a_head_records_the_documents_read_and_whether_tdm_reservations_are_enforced(settings, read, tdm):
    from middleware_support import mw_settings
    from scrapy.settings import Settings

    from scrapy_rfc9309.config import Config
    from scrapy_rfc9309.ledger.segments import head_settings

    config = Config.from_settings(Settings(mw_settings(ROBOTSTXT_LEDGER="unused", **settings)))
    recorded = head_settings(config)
    assert (recorded["read"], recorded["tdm"], recorded["deny"]) == (read, tdm, settings["ROBOTSTXT_USAGE_DENY"])


def test_a_directory_that_cannot_be_synced_is_left_as_it_is(tmp_path: Path) -> None:
    """``sync_directory``: a directory that cannot be opened, or whose file system refuses its
    ``fsync`` (procfs: EINVAL), raises nothing (the new name is as durable as the system makes it)."""
    from scrapy_rfc9309.ledger.segments import sync_directory

    sync_directory(str(tmp_path / "missing"))
    sync_directory("/proc")
    sync_directory(str(tmp_path))


def _state(run: Run, body: bytes, now: float) -> Any:
    from scrapy_rfc9309.core.state import Access, FetchOutcome, OriginState

    outcome = FetchOutcome(Access.PARSED, "https://example.com/robots.txt", 200, body=body)
    return OriginState.initial(outcome, now, run.config.policy)


@pytest_twisted.inlineCallbacks
def test_a_changed_robots_txts_state_names_the_version_it_replaces_and_the_change(tmp_path: Path) -> Any:
    from scrapy_rfc9309.core.changes import diff
    from scrapy_rfc9309.core.documents import ROBOTS_TXT

    run = Run(tmp_path)
    ledger = run.ledger
    later = _state(run, b"User-agent: *\nDisallow: /other\n", 1_800_000_100.0)
    change = diff(run.state.robots, later.robots, ["bot"])
    assert change is not None
    try:
        yield deferred_from_coro(ledger.settled(run.origin, run.state, ROBOTS_TXT, "fetch"))
        yield deferred_from_coro(ledger.settled(run.origin, later, ROBOTS_TXT, "fetch", change))
    finally:
        yield deferred_from_coro(ledger.close())
    first, second = (json.loads(line) for line in run.lines() if b'"k":"state"' in line)
    assert "was" not in first and "chg" not in first
    assert (second["was"], second["chg"]) == (first["ver"], json.loads(json.dumps(change.as_dict())))
    assert second["ver"] != first["ver"]


@pytest_twisted.inlineCallbacks
def test_a_closed_ledger_records_no_state_and_waits_for_nothing(tmp_path: Path) -> Any:
    """A state settled after the close (a fetch that ended as the crawl closed): nothing written, and
    the call ends at once (it does not wait for the stopped worker)."""
    from scrapy_rfc9309.core.documents import ROBOTS_TXT

    run = Run(tmp_path)
    yield deferred_from_coro(run.ledger.close())
    settled = run.ledger.settled(run.origin, run.state, ROBOTS_TXT, "fetch")
    with pytest.raises(StopIteration):
        settled.send(None)
    assert list((tmp_path / "versions").iterdir()) == []
    assert [json.loads(line)["k"] for line in run.lines()] == ["head", "seal"]


def test_the_files_of_a_run_are_readable_by_all_and_writable_by_their_owner(tmp_path: Path) -> None:
    """Mode 0644 (under a umask of 022) for the manifest, however it is created, and for the segments."""
    previous = os.umask(0o022)
    try:
        prepare_directory(str(tmp_path / "prepared"))
        (tmp_path / "appended").mkdir()
        append_manifest(str(tmp_path / "appended"), {"k": "start", "run": RUN})
        harness = Harness(tmp_path / "run")
        harness.segments.open("")
    finally:
        os.umask(previous)
    files = [tmp_path / "prepared" / MANIFEST, tmp_path / "appended" / MANIFEST, Path(harness.segments.path)]
    assert [oct(path.stat().st_mode & 0o777) for path in files] == ["0o644"] * 3
    os.close(harness.segments.fd)


def test_a_segment_is_never_written_into_an_existing_file(tmp_path: Path) -> None:
    """A segment's name taken already (a run id reused): the open fails and is told, the file is left
    as it was (its records are not another run's)."""
    harness = Harness(tmp_path)
    taken = tmp_path / RUNS_DIR / segment_name(RUN, 1, closed=False)
    taken.write_bytes(b'{"k":"head"}\n')
    with pytest.raises(RobotsTxtLedgerError, match="EEXIST"):
        harness.segments.open("")
    [(path, exc)] = harness.failures
    assert path == str(taken) and isinstance(exc, FileExistsError)
    assert taken.read_bytes() == b'{"k":"head"}\n' and harness.segments.fd == -1


def test_a_manifest_that_cannot_be_written_fails_at_start_up(tmp_path: Path) -> None:
    """``prepare_directory`` opens the manifest for writing: a manifest that is a directory, or a file
    this process may not write (read-only; for root, immutable where the file system has the
    attribute), is refused, naming the setting and the path."""
    import subprocess

    from scrapy_rfc9309.exceptions import RobotsTxtConfigError

    (tmp_path / "directory" / MANIFEST).mkdir(parents=True)
    with pytest.raises(RobotsTxtConfigError, match=rf"ROBOTSTXT_LEDGER: cannot write to .*{MANIFEST}.*EISDIR"):
        prepare_directory(str(tmp_path / "directory"))
    manifest = tmp_path / "read-only" / MANIFEST
    prepare_directory(str(manifest.parent))
    manifest.chmod(0o444)
    root = os.geteuid() == 0
    locked = not root
    if root:  # root writes anywhere, but into an immutable file
        try:
            locked = subprocess.run(["chattr", "+i", str(manifest)], capture_output=True).returncode == 0
        except FileNotFoundError:
            pass
    try:
        if locked:
            with pytest.raises(RobotsTxtConfigError, match=rf"ROBOTSTXT_LEDGER: cannot write to .*{MANIFEST}"):
                prepare_directory(str(manifest.parent))
    finally:
        if root and locked:
            subprocess.run(["chattr", "-i", str(manifest)], check=True)


def test_a_sync_without_an_open_segment_does_nothing(tmp_path: Path) -> None:
    """The worker syncs on its own clock: between a rotation's seal and the next open, or after the
    close, there is no open segment (``fd`` is -1), and nothing fails."""
    harness = Harness(tmp_path)
    harness.segments.sync()
    harness.segments.open("")
    harness.segments.sync()
    os.close(harness.segments.fd)
    harness.segments.fd = -1
    harness.segments.sync()
    assert harness.failures == []


@pytest_twisted.inlineCallbacks
def test_a_response_record_has_its_own_requests_fingerprint_even_with_a_copied_meta(tmp_path: Path) -> Any:
    """With ``ROBOTSTXT_LEDGER_RESPONSES`` a verdict leaves its URL and fingerprint in the request's
    meta for the response's record; a request made from it (``replace``: the meta copied) with
    another URL has a fingerprint of its own."""
    from scrapy import Request

    run = Run(tmp_path, ROBOTSTXT_LEDGER_RESPONSES=True)
    ledger = run.ledger
    fingerprint = run.crawler.request_fingerprinter.fingerprint  # type: ignore[union-attr]
    try:
        request = Request("https://example.com/b")
        ledger.judged(request, run.origin, run.judgement(request.url))
        copies = [request.replace(url="https://example.com/a"), request.replace(url="https://example.com/c")]
        for each in (request, *copies):
            ledger.responded(each, 200, "passed")
    finally:
        yield deferred_from_coro(ledger.close())
    records = [json.loads(line) for line in run.lines()]
    [verdict] = [r for r in records if r["k"] == "verdict"]
    assert verdict["fp"] == fingerprint(request).hex()
    assert [(r["u"], r["fp"]) for r in records if r["k"] == "response"] == [
        (each.url, fingerprint(each).hex()) for each in (request, *copies)]


@pytest_twisted.inlineCallbacks
def test_a_state_renewed_by_a_304_is_recorded_with_status_304(tmp_path: Path) -> Any:
    from dataclasses import replace

    from scrapy_rfc9309.core.documents import ROBOTS_TXT

    run = Run(tmp_path)
    ledger = run.ledger
    assert run.state.outcome is not None
    renewed = run.state.apply(replace(run.state.outcome, status=304, not_modified=True), 1_800_000_500.0,
                              run.config.policy)
    assert renewed.outcome is not None and renewed.outcome.not_modified and renewed.parsed is run.state.parsed
    try:
        yield deferred_from_coro(ledger.settled(run.origin, run.state, ROBOTS_TXT, "fetch"))
        yield deferred_from_coro(ledger.settled(run.origin, renewed, ROBOTS_TXT, "fetch"))
    finally:
        yield deferred_from_coro(ledger.close())
    states = [json.loads(line) for line in run.lines() if b'"k":"state"' in line]
    assert [(s["status"], s["access"]) for s in states] == [(200, "parsed"), (304, "parsed")]
    assert states[0]["ver"] == states[1]["ver"]  # the same version, renewed


@pytest_twisted.inlineCallbacks
def test_a_verdict_names_the_version_of_the_state_it_rests_on(tmp_path: Path) -> Any:
    """The version a verdict names is that of its own state's robots.txt: computed when the ledger
    was not told of the state (or has forgotten it: its memo is bounded), not the version of another
    state it was told of last."""
    from scrapy import Request

    from scrapy_rfc9309.core.documents import ROBOTS_TXT
    from scrapy_rfc9309.core.verdict import Enforced, judge
    from scrapy_rfc9309.ledger.versions import Version

    run = Run(tmp_path)
    ledger = run.ledger
    later = _state(run, b"User-agent: *\nDisallow: /other\n", 1_800_000_100.0)
    digests = [Version.of(run.origin, state, ROBOTS_TXT, "fetch", run.config.policy).digest  # type: ignore[union-attr]
               for state in (run.state, later)]
    assert digests[0] != digests[1]
    request = Request("https://example.com/page")
    try:
        ledger.judged(request, run.origin, run.judgement(request.url))  # no state settled yet
        yield deferred_from_coro(ledger.settled(run.origin, run.state, ROBOTS_TXT, "fetch"))
        ledger.judged(request, run.origin, run.judgement(request.url))
        ledger.judged(request, run.origin, judge(request.url, "bot", "bot", later, 1_800_000_101.0,
                                                 Enforced(run.config.policy), explain=True))
    finally:
        yield deferred_from_coro(ledger.close())
    verdicts = [json.loads(line) for line in run.lines() if b'"k":"verdict"' in line]
    assert [v["ver"] for v in verdicts] == [digests[0], digests[0], digests[1]]


@pytest_twisted.inlineCallbacks
def test_a_close_that_cannot_compress_the_last_segment_is_told_and_leaves_it_plain(tmp_path: Path) -> Any:
    """The close's own failures (here the gzip of the last segment, whose file was removed) are
    told as every failure to write is (logged, counted), never raised: the run is ended in the
    manifest all the same."""
    run = Run(tmp_path)
    ledger = run.ledger
    path = Path(ledger._segments.path)
    path.unlink()
    yield deferred_from_coro(ledger.close())
    assert run.crawler.stats.get_value("robotstxt/ledger/error") == 1  # type: ignore[union-attr]
    assert ledger.failure is not None and ledger.failure.startswith(f"{path}: ENOENT")
    assert ledger.head is not None
    assert [json.loads(line)["k"] for line in (tmp_path / MANIFEST).read_bytes().splitlines()] == ["start", "end"]


# -- the versions (ledger/versions.py) ------------------------------------------------------------
def _warc_fields(path: Path) -> dict[str, str]:
    from warcio.archiveiterator import ArchiveIterator

    with open(path, "rb") as handle:
        [record] = list(ArchiveIterator(handle))
        return dict(record.rec_headers.headers)


@pytest_twisted.inlineCallbacks
def test_a_redirected_robots_txts_version_lists_the_urls_requested_before_the_last(tmp_path: Path) -> Any:
    from ledger_writer import version_digest

    from scrapy_rfc9309.core.state import Access, FetchOutcome, OriginState

    run = Run(tmp_path)
    hops = ("https://example.com/moved.txt", "https://www.example.com/robots.txt")
    outcome = FetchOutcome(Access.PARSED, hops[-1], 200, body=ROBOTS, redirects=hops)
    state = OriginState.initial(outcome, 1_800_000_000.0, run.config.policy)
    record = yield deferred_from_coro(run.state_record(state))
    requested = "https://example.com/robots.txt"
    assert record["ver"] == version_digest("robots.txt", requested, [requested, hops[0]], hops[1], 200, "parsed",
                                           ROBOTS)
    fields = _warc_fields(tmp_path / "versions" / f"{record['ver']}.warc.gz")
    assert fields["WARC-RFC9309-Redirects"] == f"{requested} {hops[0]}"
    assert fields["WARC-Target-URI"] == hops[1]


@pytest_twisted.inlineCallbacks
def test_a_stale_copy_names_the_version_of_its_own_fetch(tmp_path: Path) -> Any:
    """An unreachable origin whose good copy stands in: its version is that copy's (fetched at the
    copy's time, not the failed fetch's), written when the directory lacks it; and a copy whose fetch
    is not known (a store's record of an earlier version) names the version this run recorded for
    the same copy."""
    from dataclasses import replace

    from scrapy_rfc9309.core.documents import ROBOTS_TXT
    from scrapy_rfc9309.core.state import Access, Cause, FetchOutcome

    run = Run(tmp_path)
    failed = FetchOutcome(Access.UNREACHABLE, "https://example.com/robots.txt", 503, cause=Cause.TRANSIENT,
                          reason="status 503")
    stale = run.state.apply(failed, 1_800_000_600.0, run.config.policy)
    assert stale.parsed is run.state.parsed and stale.good_fetch is not None
    unknown = replace(stale, good_fetch=None)  # read back from a store that did not keep the copy's fetch
    try:
        yield deferred_from_coro(run.ledger.settled(run.origin, stale, ROBOTS_TXT, "fetch"))
        yield deferred_from_coro(run.ledger.settled(run.origin, unknown, ROBOTS_TXT, "store"))
    finally:
        yield deferred_from_coro(run.ledger.close())
    states = [json.loads(line) for line in run.lines() if b'"k":"state"' in line]
    assert [(s["access"], s["status"]) for s in states] == [("unreachable", 503)] * 2
    digest = states[0]["ver"]
    assert digest is not None and states[1]["ver"] == digest
    fields = _warc_fields(tmp_path / "versions" / f"{digest}.warc.gz")
    assert (fields["WARC-RFC9309-Source"], fields["WARC-RFC9309-Status"]) == ("store", "200")
    assert fields["WARC-Date"] == "2027-01-15T08:00:00Z"  # the copy's fetch, 1_800_000_000


@pytest_twisted.inlineCallbacks
def test_a_robots_txt_without_an_http_response_has_no_version(tmp_path: Path) -> Any:
    """A fetch another component ignored (no status): its state is recorded, naming no version."""
    from scrapy_rfc9309.core.state import Access, FetchOutcome, OriginState

    run = Run(tmp_path)
    outcome = FetchOutcome(Access.UNAVAILABLE, "https://example.com/robots.txt", None, reason="request ignored",
                           error="ignored: by a test")
    state = OriginState.initial(outcome, 1_800_000_000.0, run.config.policy)
    record = yield deferred_from_coro(run.state_record(state))
    assert (record["access"], record["status"], record["ver"], "vh" in record) == ("unavailable", None, None, False)
    assert list((tmp_path / "versions").iterdir()) == []


def _a_version() -> Any:
    """The version of a parsed robots.txt (``ROBOTS``) of https://example.com, fetched."""
    from scrapy_rfc9309.core.documents import ROBOTS_TXT
    from scrapy_rfc9309.core.origins import Origin
    from scrapy_rfc9309.core.state import Access, FetchOutcome, OriginState, Policy
    from scrapy_rfc9309.ledger.versions import Version

    origin = Origin.from_url("https://example.com/")
    assert origin is not None
    policy = Policy()
    state = OriginState.initial(FetchOutcome(Access.PARSED, "https://example.com/robots.txt", 200, body=ROBOTS),
                                1_800_000_000.0, policy)
    version = Version.of(origin, state, ROBOTS_TXT, "fetch", policy)
    assert version is not None
    return version


def test_a_version_file_written_meanwhile_by_another_process_is_kept(tmp_path: Path) -> None:
    """Processes of a fleet write the same version at once: the link to the final name finds it
    taken (after the look for it), keeps the file there (the same bytes, by its digest's
    definition) and removes its own temporary file."""
    from scrapy_rfc9309.ledger.versions import _write_version_file

    version = _a_version()
    final = tmp_path / f"{version.digest}.warc.gz"
    final.write_bytes(b"the other process's file")
    _write_version_file(str(tmp_path), RUN, version, str(final))
    assert [p.name for p in tmp_path.iterdir()] == [final.name]
    assert final.read_bytes() == b"the other process's file"


@pytest.mark.parametrize(("error", "renamed"), [(errno.EPERM, True), (errno.EOPNOTSUPP, True), (errno.EIO, False)],
                         ids=["no hard links (EPERM)", "no hard links (EOPNOTSUPP)", "an I/O error"])
def test_a_version_file_is_renamed_into_place_only_where_hard_links_are_missing(tmp_path: Path, monkeypatch,
                                                                                error: int, renamed: bool) -> None:
    """A file system without hard links (the link refused with EPERM or EOPNOTSUPP) gets the
    version by a rename; any other failure of the link is a failure to write, raised, with no file
    under the final name and no temporary one left. (``os.link`` made to fail as such a file system
    does: this one has hard links.)"""
    from scrapy_rfc9309.ledger import versions

    def refused(source: Any, target: Any, **kwargs: Any) -> None:
        raise OSError(error, os.strerror(error), str(target))

    version = _a_version()
    monkeypatch.setattr(versions.os, "link", refused)
    final = tmp_path / f"{version.digest}.warc.gz"
    if renamed:
        hashed = versions.write_version(str(tmp_path), RUN, version, version.digest)
        assert hashed == hashlib.sha256(final.read_bytes()).hexdigest()
        assert _warc_fields(final)["WARC-RFC9309-Version"] == version.digest
    else:
        with pytest.raises(OSError) as raised:
            versions.write_version(str(tmp_path), RUN, version, version.digest)
        assert raised.value.errno == error
    assert [p.name for p in tmp_path.iterdir()] == ([final.name] if renamed else [])


# -- the worker thread (ledger/worker.py) -----------------------------------------------------------
class Synced:
    """What the worker syncs, in place of a run's :class:`Segments` (whose ``fsync`` shows nothing):
    its records written, its path, and each sync, which fails with ``fail`` when set."""

    def __init__(self) -> None:
        self.written = 0
        self.path = "the open segment"
        self.synced: list[int] = []
        self.fail: OSError | None = None

    def sync(self) -> None:
        if self.fail is not None:
            raise self.fail
        self.synced.append(self.written)


@pytest_twisted.inlineCallbacks
def test_the_worker_syncs_what_was_written_without_a_job_to_wake_it_and_tells_a_failed_sync() -> Any:
    """Records are written without a job for the worker: its own clock (every ``SYNC_INTERVAL``)
    syncs them; a sync that fails is told in the crawl's thread, naming the segment. (No bound on
    when: the test's deadline is the only one.)"""
    from middleware_support import until

    from scrapy_rfc9309.ledger.worker import Worker

    failed: list[tuple[str, OSError]] = []
    worker = Worker(lambda path, exc: failed.append((path, exc)), True)
    synced = Synced()
    worker.segments = synced  # type: ignore[assignment]
    worker.start()
    try:
        synced.written = 3
        yield deferred_from_coro(until(lambda: synced.synced == [3], "the worker's sync of 3 records"))
        synced.fail = OSError(errno.EIO, "the disk is gone")
        synced.written = 4
        yield deferred_from_coro(until(lambda: failed, "the failed sync told"))
        assert failed[0][0] == "the open segment" and failed[0][1] is synced.fail
    finally:
        worker.stop()
        worker.join()


@pytest_twisted.inlineCallbacks
def test_the_worker_syncs_once_an_interval_not_at_every_job() -> Any:
    """On the worker's clock (injected, stopped): jobs that write records are not synced one by one;
    once the clock passes ``SYNC_INTERVAL`` what was written is synced once, and nothing again until
    the next interval. (A job's result comes back after the worker's look at the clock for the job
    before it: one more job makes sure every look was made.)"""
    from scrapy_rfc9309.ledger.worker import SYNC_INTERVAL, Worker

    now = [1000.0]
    worker = Worker(lambda path, exc: None, True, clock=lambda: now[0])
    synced = Synced()
    worker.segments = synced  # type: ignore[assignment]

    def write() -> None:
        synced.written += 1

    worker.start()
    try:
        for _ in range(5):
            yield deferred_from_coro(worker.call(write))
        yield deferred_from_coro(worker.call(lambda: None))
        assert synced.synced == []
        now[0] += SYNC_INTERVAL
        yield deferred_from_coro(worker.call(lambda: None))
        yield deferred_from_coro(worker.call(lambda: None))
        assert synced.synced == [5]
        for _ in range(3):
            yield deferred_from_coro(worker.call(write))
        yield deferred_from_coro(worker.call(lambda: None))
        assert synced.synced == [5]
    finally:
        worker.stop()
        worker.join()


@pytest.mark.parametrize("outside", [False, True], ids=["built in the loop", "built outside any loop, no reactor"])
@pytest_twisted.inlineCallbacks
def test_the_workers_jobs_run_in_order_and_their_failures_are_failures_to_write(outside: bool) -> Any:
    """A job's result comes back to its caller; an exception other than an ``OSError`` comes back
    as one (EIO, naming it: a failure to write all the same); a job nobody waits for that fails is
    told, naming its last argument (the path it wrote). A worker built where no loop runs (a crawl
    without a reactor makes its ledger before its loop starts) learns the loop from its first job."""
    import threading

    from middleware_support import until

    from scrapy_rfc9309.ledger.worker import Worker

    failed: list[tuple[str, OSError]] = []
    built: list[Worker] = []

    def build() -> None:
        built.append(Worker(lambda path, exc: failed.append((path, exc)), not outside))

    if outside:
        thread = threading.Thread(target=build)
        thread.start()
        thread.join()
    else:
        build()
    [worker] = built
    assert (worker._loop is None) is outside
    worker.start()
    done: list[int] = []

    def broken(fd: int, path: str) -> None:
        raise ValueError(f"nothing to write at {path}")

    try:
        for n in range(3):
            worker.submit(done.append, n)
        result = yield deferred_from_coro(worker.call(lambda a, b: (a, b, list(done)), "x", 1))
        assert result == ("x", 1, [0, 1, 2])
        with pytest.raises(OSError) as raised:
            yield deferred_from_coro(worker.call(broken, 7, "segment-1"))
        assert raised.value.errno == errno.EIO
        assert raised.value.strerror == "ValueError: nothing to write at segment-1"
        missing = OSError(errno.ENOENT, "No such file or directory")

        def gone(path: str) -> None:
            raise missing

        with pytest.raises(OSError) as raised:
            yield deferred_from_coro(worker.call(gone, "segment-2"))
        assert raised.value is missing
        worker.submit(broken, 7, "segment-3")  # as the close of a rotated segment: (fd, path)
        yield deferred_from_coro(until(lambda: failed, "the failure of a job nobody waits for"))
        [(path, exc)] = failed
        assert path == "segment-3" and exc.errno == errno.EIO
    finally:
        worker.stop()
        worker.join()
