"""The verdict ledger (ROBOTSTXT_LEDGER) in crawls run as OS processes of their own
(``fleet_crawl.py``, through ``test_fleet``'s runner): a fleet sharing one directory,
a full disk (a file size limit), and ``kill -9`` mid-crawl."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest_twisted
from ledger_reader import read
from middleware_support import page_hits, text, until
from scrapy.utils.defer import deferred_from_coro
from test_fleet import RULES, START_DELAY, _check_fleet, _crawl, _settings, _two_processes

from scrapy_rfc9309.testing import Gate


@pytest_twisted.inlineCallbacks
def test_a_redis_fleet_writes_one_version_per_robots_txt_into_one_shared_directory(origins, redis_url, tmp_path):
    directory = tmp_path / "ledger"
    sites, own, reports = yield _two_processes(origins, tmp_path, _settings(
        ROBOTSTXT_STORE="redis", ROBOTSTXT_REDIS_URL=redis_url, ROBOTSTXT_LEDGER=str(directory)))
    _check_fleet(sites, own, reports, told=True)
    ledger = read(directory)  # every chain and seal, every version's digest
    runs = ledger.runs()
    assert len(runs) == 2
    assert all(len(segments) == 1 and segments[0].records[-1].get("end") is True for segments in runs.values())
    # One version per robots.txt, written by the process that fetched it (before it saved it in the store).
    assert sorted(v.fields["WARC-Target-URI"] for v in ledger.versions.values()) == sorted(
        s.url("/robots.txt") for s in sites + own)
    assert {v.fields["WARC-RFC9309-Source"] for v in ledger.versions.values()} == {"fetch"}
    assert {v.body for v in ledger.versions.values()} == {RULES.encode()}
    by_url = {v.fields["WARC-Target-URI"]: v.digest for v in ledger.versions.values()}
    sources = []
    for segments in runs.values():
        records = segments[0].records
        states = {r["o"]: r for r in records if r["k"] == "state"}
        sources += [r["src"] for r in states.values()]
        for verdict in (r for r in records if r["k"] == "verdict"):
            origin = verdict["o"]
            assert verdict["ver"] == states[origin]["ver"] == by_url[origin + "/robots.txt"]
            assert verdict["d"] == ("disallowed" if "/private/" in verdict["u"] else "allowed")
    # Each shared site's state: fetched by one process, loaded from the store by the other.
    assert sorted(sources) == sorted(["fetch"] * 6 + ["store"] * 4)
    assert {r["ver"] for r in ledger.records("state")} == set(by_url.values())


@pytest_twisted.inlineCallbacks
def test_a_full_disk_stops_the_crawl_and_no_response_is_without_its_record(origins, tmp_path):
    site = origins("127.0.0.1")
    site.robots("User-agent: *\nDisallow: /private\n")
    directory = tmp_path / "ledger"
    urls = [site.url(f"/page/{n}") for n in range(40)]
    report = yield _crawl({"settings": _settings(ROBOTSTXT_LEDGER=str(directory), CONCURRENT_REQUESTS=2),
                           "urls": urls, "fsize_limit": 3000}, tmp_path, "full")
    assert report["stats"]["finish_reason"] == "robotstxt_ledger_error"
    assert report["stats"]["robotstxt/ledger/error"] == 1
    errors = [w for w in report["warnings"] if "robots.txt ledger: cannot write" in w]
    assert len(errors) == 1 and "EFBIG" in errors[0] and str(directory / "runs") in errors[0]
    ledger = read(directory)  # the records up to the failure chain; the last may be cut short
    [[segment]] = ledger.runs().values()
    assert not segment.closed and not segment.sealed
    assert segment.path.stat().st_size == 3000
    allowed = {r["u"] for r in ledger.records("verdict") if r["d"] == "allowed"}
    responded = {r["u"] for r in ledger.records("response")}
    assert report["responses"], "the crawl got going before the disk filled"
    assert set(report["responses"]) <= responded <= allowed
    # Nothing was downloaded without its allowed verdict on disk.
    assert {site.url(hit.path) for hit in page_hits(site)} <= allowed
    assert len(report["responses"]) < len(urls)
    assert "RobotsTxtLedgerError" in {kind for _, kind in report["errors"]}


@pytest_twisted.inlineCallbacks
def test_kill_9_mid_crawl_leaves_a_plain_segment_whose_records_all_chain_without_a_seal(origins, tmp_path):
    site = origins("127.0.0.1")
    site.robots("User-agent: *\nDisallow: /private\n")
    gate = Gate(text("late"))
    for n in range(4):
        site[f"/slow/{n}"] = gate
    directory = tmp_path / "ledger"
    fast = [site.url(f"/page/{n}") for n in range(30)]
    spec = {"settings": _settings(ROBOTSTXT_LEDGER=str(directory), CONCURRENT_REQUESTS=4),
            "urls": fast + [site.url(f"/slow/{n}") for n in range(4)]}
    processes: list[Any] = []
    running = _crawl(spec, tmp_path, "killed", started=processes.append, exit_code=None)

    def responses_written() -> int:
        runs = list((directory / "runs").glob("*.jsonl")) if (directory / "runs").exists() else []
        return sum(p.read_bytes().count(b'"k":"response"') for p in runs)

    # Every fast page's response recorded, the slow ones held at the gate: the crawl is mid-way.
    yield deferred_from_coro(until(lambda: responses_written() >= len(fast) and gate.waiting == 4,
                                   "the fast pages recorded", limit=60 + START_DELAY))
    processes[0].send_signal(signal.SIGKILL)
    code, _ = yield running
    assert code == -signal.SIGKILL
    gate.open()
    ledger = read(directory)  # raises on a broken link
    [[segment]] = ledger.runs().values()
    assert not segment.closed and not segment.sealed and segment.tail == b""
    assert [r["k"] for r in segment.records[:2]] == ["head", "state"]
    assert sorted(r["u"] for r in ledger.records("response")) == sorted(fast)
    assert {r["u"] for r in ledger.records("verdict") if r["d"] == "allowed"} == set(
        fast + [site.url(f"/slow/{n}") for n in range(4)])
    assert len(ledger.versions) == 1
    assert not list(Path(directory / "runs").glob("*.gz"))
