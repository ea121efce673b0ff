"""The verdict ledger (ROBOTSTXT_LEDGER) in crawls run as OS processes of their own
(``fleet_crawl.py``, through ``test_fleet``'s runner), proven through the audit: a
fleet sharing one directory or writing two, a full disk (a file size limit), and
``kill -9`` mid-crawl."""

from __future__ import annotations

import signal
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

from scrapy_rfc9309.audit import UNSEALED, audit, format_text


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
