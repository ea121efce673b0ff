"""The verdict ledger (ROBOTSTXT_LEDGER) in crawls run as OS processes of their own
(``fleet_crawl.py``, through ``test_fleet``'s runner), proven through the audit: a
fleet sharing one directory or writing two, a full disk (a file size limit), and
``kill -9`` mid-crawl."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from ledger_writer import records, versions
from middleware_support import page_hits, text, until
from scrapy.utils.defer import deferred_from_coro
from servers import Gate
from test_command import scrapy
from test_fleet import RULES, _check_fleet, _crawl, _settings, _two_processes
from test_ledger import base, passes

from scrapy_rfc9309.evidence.audit import UNSEALED, audit, format_text


@pytest.mark.parametrize("shared", [True, False], ids=["one shared directory", "a directory each"])
@pytest_twisted.inlineCallbacks
def test_a_redis_fleet_writes_one_version_per_robots_txt_and_its_audit_passes(origins, redis_url, tmp_path, shared):
    directories = [tmp_path / "ledger"] if shared else [tmp_path / "ledger1", tmp_path / "ledger2"]
    own = ({}, {}) if shared else tuple({"ROBOTSTXT_LEDGER": str(d)} for d in directories)
    sites, mine, reports = yield _two_processes(origins, tmp_path, _settings(
        ROBOTSTXT_STORE="redis", ROBOTSTXT_REDIS_URL=redis_url, ROBOTSTXT_LEDGER=str(directories[0])), own)
    _check_fleet(sites, mine, reports, told=True)
    # Every chain and seal, every version's digest, every verdict recomputed, every response proven.
    result = passes(*directories)
    assert len(result.runs) == 2 and {run.ending for run in result.runs} == {"ended"}
    # ROBOTSTXT_LEDGER_RESPONSES off: the responses passed to the spider are implied by their verdicts.
    assert {run.responses for run in result.runs} == {"refused"}
    assert sorted(run.directory for run in result.runs) == sorted(str(d) for d in directories) * (2 // len(directories))
    # One version per robots.txt, the same digest whichever process wrote it.
    assert result.versions == 6
    for n, site in enumerate(sites + mine):
        report = result.origins[base(site)]
        [use] = report.versions.values()
        assert (use.document, use.access, use.status) == ("robots.txt", "parsed", 200)
        shared_site = n < len(sites)
        assert report.requests == ({"allowed": 2, "disallowed": 2} if shared_site else {"allowed": 1})
        assert report.responses == {}
    written = [versions(d) for d in directories]
    assert {v.body for found in written for v in found.values()} == {RULES.encode()}
    states = [r for d in directories for r in records(d, "state")]
    # Each shared site's state: fetched by one process, loaded from the store by the other.
    assert sorted(r["src"] for r in states) == sorted(["fetch"] * 6 + ["store"] * 4)
    if shared:  # written once, by the process that fetched it (before it saved it in the store)
        assert len(written[0]) == 6
        assert {v.fields["WARC-RFC9309-Source"] for v in written[0].values()} == {"fetch"}
    else:  # each directory has the versions its process used: a shared one loaded from the store, from its copy
        assert [len(found) for found in written] == [5, 5]
        sources = sorted(v.fields["WARC-RFC9309-Source"] for found in written for v in found.values())
        assert sources == sorted(["fetch"] * 6 + ["store"] * 4)
        # Each directory alone verifies too: it has every version its run names.
        for directory in directories:
            passes(directory)


@pytest_twisted.inlineCallbacks
def test_a_full_disk_stops_the_crawl_and_no_response_is_without_its_record(origins, tmp_path):
    site = origins("127.0.0.1")
    site.robots("User-agent: *\nDisallow: /private\n")
    directory = tmp_path / "ledger"
    urls = [site.url(f"/page/{n}") for n in range(40)]
    report = yield _crawl({"settings": _settings(ROBOTSTXT_LEDGER=str(directory), CONCURRENT_REQUESTS=2,
                                                 ROBOTSTXT_LEDGER_RESPONSES=True),
                           "urls": urls, "fsize_limit": 4000}, tmp_path, "full")
    assert report["stats"]["finish_reason"] == "robotstxt_ledger_error"
    assert report["stats"]["robotstxt/ledger/error"] == 1
    errors = [w for w in report["warnings"] if "robots.txt ledger: cannot write" in w]
    assert len(errors) == 1 and "EFBIG" in errors[0] and str(directory / "runs") in errors[0]
    [segment] = (directory / "runs").iterdir()
    assert segment.name.endswith(".jsonl") and segment.stat().st_size == 4000
    # What was written verifies; the only problem is the seal the full disk kept out (and the record
    # it cut short): every response recorded follows its allowed verdict.
    result = audit([directory])
    assert result.kinds == {UNSEALED: 1}, format_text(result)
    assert result.exit_status(allow_unsealed=True) == 0
    assert report["responses"], "the crawl got going before the disk filled"
    assert len(report["responses"]) < len(urls)
    allowed = {r["u"] for r in records(directory, "verdict") if r["d"] == "allowed"}
    responded = {r["u"] for r in records(directory, "response")}
    assert set(report["responses"]) <= responded <= allowed
    assert sum(result.origins[base(site)].responses.values()) == len(responded)
    # Nothing was downloaded without its allowed verdict on disk.
    assert {site.url(hit.path) for hit in page_hits(site)} <= allowed
    assert "RobotsTxtLedgerError" in {kind for _, kind in report["errors"]}


@pytest_twisted.inlineCallbacks
def test_kill_9_mid_crawl_leaves_files_whose_audit_verifies_all_and_reports_the_missing_seal(origins, tmp_path):
    site = origins("127.0.0.1")
    site.robots("User-agent: *\nDisallow: /private\n")
    gate = Gate(text("late"))
    for n in range(4):
        site[f"/slow/{n}"] = gate
    directory = tmp_path / "ledger"
    fast = [site.url(f"/page/{n}") for n in range(30)]
    slow = [site.url(f"/slow/{n}") for n in range(4)]
    spec = {"settings": _settings(ROBOTSTXT_LEDGER=str(directory), CONCURRENT_REQUESTS=4,
                                  ROBOTSTXT_LEDGER_RESPONSES=True), "urls": fast + slow}
    processes: list[Any] = []
    running = _crawl(spec, tmp_path, "killed", started=processes.append, exit_code=None)

    def responses_written() -> int:
        runs = list((directory / "runs").glob("*.jsonl")) if (directory / "runs").exists() else []
        return sum(p.read_bytes().count(b'"k":"response"') for p in runs)

    # Every fast page's response recorded, the slow ones held at the gate: the crawl is mid-way.
    yield deferred_from_coro(until(lambda: responses_written() >= len(fast) and gate.waiting == 4,
                                   "the fast pages recorded"))
    processes[0].send_signal(signal.SIGKILL)
    code, _ = yield running
    assert code == -signal.SIGKILL
    gate.open()
    [segment] = (directory / "runs").iterdir()
    assert segment.name.endswith(".jsonl") and segment.read_bytes().endswith(b"\n")
    result = audit([directory])
    [problem] = result.problems
    assert (problem.file, problem.line, problem.kind) == (str(segment), None, UNSEALED)
    assert "interrupted write" not in problem.message  # killed between two records: none cut short
    [run] = result.runs
    assert run.ending == "not sealed" and run.records == len(records(directory))
    report = result.origins[base(site)]
    assert report.requests == {"allowed": len(fast + slow)} and report.responses == {"passed": len(fast)}
    assert sorted(r["u"] for r in records(directory, "response")) == sorted(fast)
    assert len(versions(directory)) == 1
    passes(directory, allow_unsealed=True)
    # The command: exit 1 for the missing seal, 0 when runs that did not end cleanly are accepted.
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = scrapy(cwd, "robotstxt", "audit", str(directory))
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{segment}: unsealed: not sealed" in done.stdout and "Result: FAILED (exit 1)" in done.stdout
    done = scrapy(cwd, "robotstxt", "audit", "--allow-unsealed", str(directory))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "runs that did not end cleanly accepted" in done.stdout


@pytest.mark.parametrize("where", ["before", "mid"])
@pytest_twisted.inlineCallbacks
def test_kill_9_at_the_end_line_leaves_a_run_not_sealed_whatever_runs_follow(origins, tmp_path, where):
    """A process killed just before it appends its end line to the manifest, or with half of it
    written: the audit tells a run that did not end cleanly (and the cut line), accepted with
    --allow-unsealed, before and after three more runs in the directory."""
    from crawl import run_crawl
    from middleware_support import mw_settings

    from scrapy_rfc9309.evidence.format import MANIFEST

    site = origins("127.0.0.1")
    site.robots("User-agent: *\nDisallow: /private\n")
    directory = tmp_path / "ledger"
    urls = [site.url("/page/1"), site.url("/private/1")]
    code, err = yield _crawl({"settings": _settings(ROBOTSTXT_LEDGER=str(directory)), "urls": urls,
                              "kill_at_end_line": where}, tmp_path, "killed", exit_code=None)
    assert code == -signal.SIGKILL, err
    [segment] = (directory / "runs").iterdir()
    assert segment.name.endswith(".jsonl")  # sealed, not compressed
    assert records(directory)[-1]["k"] == "seal" and records(directory)[-1]["end"] is True
    manifest = directory / MANIFEST
    assert manifest.read_bytes().endswith(b"\n") is (where == "before")
    killed_run = records(directory, "head")[0]["run"]

    def check(runs: int, anchor: str | None = None) -> None:
        result = audit([directory], [anchor] if anchor else [])
        expected = [(str(manifest), UNSEALED, f"run {killed_run} did not end cleanly")]
        if where == "mid":
            expected.insert(0, (str(manifest), UNSEALED, "cut short by an interrupted write"))
        assert [(p.file, p.kind) for p in result.problems] == [(f, k) for f, k, _ in expected], format_text(result)
        assert all(words in p.message for p, (_, _, words) in zip(result.problems, expected, strict=True))
        assert result.exit_status() == 1 and result.exit_status(allow_unsealed=True) == 0
        assert sorted(run.ending for run in result.runs) == ["ended"] * (runs - 1) + ["not sealed"]

    check(1)
    head = None
    for n in range(3):
        result = yield run_crawl([site.url(f"/page/{n + 2}")], mw_settings(ROBOTSTXT_LEDGER=str(directory)))
        head = result.stats["robotstxt/ledger/head"]
        check(n + 2, head)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = scrapy(cwd, "robotstxt", "audit", "--allow-unsealed", "--anchor", str(head), str(directory))
    assert done.returncode == 0, done.stdout + done.stderr


class _Writes:
    """What a crawl's ledger does to its directory, in order, as a process killed at any point
    would leave it: files created, bytes appended, files put in place whole (a rename or link
    of a complete temporary file), files removed. Recorded through the functions the ledger
    calls (the Python form of its record writer), replayed up to any point."""

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self.ops: list[tuple[str, str, bytes]] = []
        self._paths: dict[int, str] = {}
        self._lock = threading.Lock()

    def _add(self, kind: str, path: Any, data: bytes = b"") -> None:
        path = os.fspath(path)
        if path.startswith(self.root + os.sep):
            with self._lock:
                self.ops.append((kind, os.path.relpath(path, self.root), data))

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from scrapy_rfc9309.ledger import segments as ledger

        real_open, real_write_all, real_rename, real_link, real_remove = (
            os.open, ledger._write_all, os.rename, os.link, os.remove)

        def opened(path: Any, flags: int, mode: int = 0o777, **kwargs: Any) -> int:
            fd = real_open(path, flags, mode, **kwargs)
            self._paths[fd] = os.fspath(path)
            if flags & os.O_CREAT:
                self._add("create", path)
            return fd

        def write_all(fd: int, data: bytes) -> None:
            real_write_all(fd, data)
            self._add("write", self._paths.get(fd, ""), data)

        def renamed(source: Any, target: Any, **kwargs: Any) -> None:
            real_rename(source, target, **kwargs)
            self._add("whole", target, Path(target).read_bytes())

        def linked(source: Any, target: Any, **kwargs: Any) -> None:
            real_link(source, target, **kwargs)
            self._add("whole", target, Path(target).read_bytes())

        def removed(path: Any, **kwargs: Any) -> None:
            real_remove(path, **kwargs)
            self._add("remove", path)

        monkeypatch.setattr(ledger, "_write_record", ledger.write_record)  # its writes through _write_all
        monkeypatch.setattr(ledger, "_write_all", write_all)
        monkeypatch.setattr(os, "open", opened)
        monkeypatch.setattr(os, "rename", renamed)
        monkeypatch.setattr(os, "link", linked)
        monkeypatch.setattr(os, "remove", removed)

    def replay(self, target: Path, count: int, half: bool) -> None:
        """The directory after the first ``count`` operations, and half of the next write."""
        for sub in ("runs", "versions"):
            (target / sub).mkdir(parents=True)
        for n, (kind, name, data) in enumerate(self.ops[:count + half]):
            path = target / name
            if n == count:
                data = data[: len(data) // 2]
            if kind == "create":
                path.touch()
            elif kind == "write":
                with open(path, "ab") as handle:
                    handle.write(data)
            elif kind == "whole":
                path.write_bytes(data)
            elif path.exists():
                path.unlink()


@pytest_twisted.inlineCallbacks
def test_a_run_killed_at_any_write_leaves_a_ledger_audited_not_sealed_whatever_runs_follow(origins, tmp_path,
                                                                                          monkeypatch):
    """Every point a process could be killed at, before each write of the manifest and of the
    segments (and each rename, link and removal) and halfway through each write: what it leaves
    audits as a run that did not end cleanly, accepted with --allow-unsealed, and so it stays
    after two more runs in the directory."""
    from crawl import run_crawl
    from middleware_support import mw_settings

    site = origins("127.0.0.1")
    site.robots("User-agent: *\nDisallow: /private\n")
    directory = tmp_path / "ledger"
    writes = _Writes(directory)
    long = "x" * 600  # rotated after a few records (ROBOTSTXT_LEDGER_ROTATE_BYTES' least, 4096)
    urls = [site.url(f"/page/{n}/{long}") for n in range(4)] + [site.url("/private/1")]
    settings = mw_settings(ROBOTSTXT_LEDGER=str(directory), ROBOTSTXT_LEDGER_RESPONSES=True,
                           ROBOTSTXT_LEDGER_ROTATE_BYTES=4096, CONCURRENT_REQUESTS=1)
    with monkeypatch.context() as patched:
        writes.install(patched)
        yield run_crawl(urls, settings)
    kinds = [kind for kind, _, _ in writes.ops]
    names = [name for _, name, _ in writes.ops]
    assert sum(name.endswith(".jsonl.gz") for name in names) == 2  # two segments, each compressed
    assert [data[:9] for kind, name, data in writes.ops if name == "manifest.jsonl" and kind == "write"] == [
        b'{"k":"sta', b'{"k":"end']
    points = [(count, False) for count in range(len(writes.ops) + 1)]
    points += [(count, True) for count, kind in enumerate(kinds) if kind == "write"]
    for count, half in points:
        target = tmp_path / f"killed-{count}{'-mid' if half else ''}"
        writes.replay(target, count, half)
        done = writes.ops[:count]
        started = any(name.startswith("runs") for _, name, _ in done)  # its first segment created
        ended = any(data.startswith(b'{"k":"end"') for _, name, data in done if name == "manifest.jsonl")
        for later in range(3):
            result = audit([target])
            killed = [run for run in result.runs if run.ending != "ended"]
            where = f"killed before operation {count} {writes.ops[count:count + 1]}{' mid' if half else ''}"
            assert {p.kind for p in result.problems} <= {UNSEALED}, f"{where}:\n{format_text(result)}"
            assert result.exit_status(allow_unsealed=True) == 0, where
            assert len(killed) == (started and not ended) and len(result.runs) == later + started, where
            assert (UNSEALED in result.kinds) == (started and not ended), where
            if later < 2:
                yield run_crawl([site.url(f"/page/later/{later}")], mw_settings(ROBOTSTXT_LEDGER=str(target)))
