"""The verdict ledger (ROBOTSTXT_LEDGER) in real crawls: what it writes (read back
and checked by ``ledger_reader``, from the format document), versions that change
mid-crawl, rotation, and misconfiguration at start-up."""

from __future__ import annotations

import os
import stat as stat_module
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from crawl import run_crawl
from ledger_reader import read
from middleware_support import BatchSpider, mw_settings, page_hits, robots_hits, stat, text

from scrapy_rfc9309.exceptions import RobotsTxtConfigError, RobotsTxtForbidden
from scrapy_rfc9309.robotstxt import RobotsTxt
from scrapy_rfc9309.testing import Sequence, Static

V1 = "User-agent: *\nDisallow: /a\n"
V2 = "User-agent: *\nAllow: /a\nDisallow: /b\n"


def check_verdicts(ledger: Any) -> dict[str, list[dict[str, Any]]]:
    """Each verdict against the version its state record put in force before it (in its
    segment's order): the same digest, and the same decision and rule when the version
    is parsed again. Returns the verdicts by digest."""
    in_force: dict[str, str | None] = {}
    by_version: dict[str, list[dict[str, Any]]] = {}
    for segment in ledger.segments:
        for record in segment.records:
            if record["k"] == "state" and record["doc"] == "robots.txt":
                in_force[record["o"]] = record["ver"]
            elif record["k"] == "verdict" and record["d"] in ("allowed", "disallowed"):
                assert record["ver"] == in_force[record["o"]], record
                version = ledger.versions[record["ver"]]
                robots = RobotsTxt(version.body)
                verdict = robots.verdict(record["u"], record["a"] or "*")
                assert record["d"] == ("allowed" if verdict.allowed else "disallowed"), record
                rule = verdict.rule
                assert record["r"] == (None if rule is None else [rule.directive, rule.pattern, rule.line])
                by_version.setdefault(record["ver"], []).append(record)
    return by_version


@pytest_twisted.inlineCallbacks
def test_a_robots_txt_changing_mid_crawl_gives_two_versions_each_verdict_tied_to_its_own(origins, tmp_path):
    site = origins("127.0.0.1")
    site["/robots.txt"] = Sequence([text(V1), text(V2)])
    urls = [site.url(p) for p in ("/a", "/b", "/c")]
    result = yield run_crawl(BatchSpider, mw_settings(ROBOTSTXT_LEDGER=str(tmp_path), ROBOTSTXT_CACHE_TTL=0.2),
                             batches=[(0, urls), (0.5, urls)])
    assert len(robots_hits(site)) == 2
    ledger = read(tmp_path)
    [run] = ledger.runs().values()
    assert len(run) == 1 and run[0].closed and run[0].records[-1].get("end") is True
    assert len(ledger.versions) == 2
    bodies = {version.body: digest for digest, version in ledger.versions.items()}
    assert set(bodies) == {V1.encode(), V2.encode()}
    by_version = check_verdicts(ledger)
    first, second = bodies[V1.encode()], bodies[V2.encode()]
    assert sorted((r["u"], r["d"]) for r in by_version[first]) == [
        (urls[0], "disallowed"), (urls[1], "allowed"), (urls[2], "allowed")]
    assert sorted((r["u"], r["d"]) for r in by_version[second]) == [
        (urls[0], "allowed"), (urls[1], "disallowed"), (urls[2], "allowed")]
    # One response record for each response the spider got, after its allowed verdict.
    responses = ledger.records("response")
    assert sorted(r["u"] for r in responses) == sorted(result.responses)
    allowed = {r["fp"] for r in ledger.records("verdict") if r["d"] == "allowed"}
    assert {r["fp"] for r in responses} <= allowed
    assert len(page_hits(site)) == len(result.responses) == 4
    # The version files: WARC response records of the fetch, as received.
    version = ledger.versions[first]
    assert version.fields["WARC-Target-URI"] == site.url("/robots.txt")
    assert version.fields["WARC-RFC9309-Access"] == "parsed"
    assert version.fields["WARC-RFC9309-Source"] == "fetch"
    assert version.status_line == "200 OK"
    assert ("Content-Type", "text/plain; charset=utf-8") in version.headers
    assert stat(result, "ledger/segments") == 1
    fingerprinter = result.crawler.request_fingerprinter
    forbidden = [e for e in result.errors if isinstance(e.exception, RobotsTxtForbidden)]
    assert len(forbidden) == 2
    assert {r["fp"] for r in ledger.records("verdict") if r["d"] == "disallowed"} == {
        fingerprinter.fingerprint(e.failure.request).hex() for e in forbidden}


@pytest_twisted.inlineCallbacks
def test_an_unavailable_robots_txt_is_a_version_and_dont_obey_requests_are_recorded_unjudged(origins, tmp_path):
    from scrapy import Request

    site = origins("127.0.0.1")
    site["/robots.txt"] = Static(b"gone", 404, {"Content-Type": "text/plain"})
    yield run_crawl([site.url("/a"), Request(site.url("/b"), meta={"dont_obey_robotstxt": True})],
                    mw_settings(ROBOTSTXT_LEDGER=str(tmp_path)))
    ledger = read(tmp_path)
    [version] = ledger.versions.values()
    assert version.fields["WARC-RFC9309-Access"] == "unavailable" and version.body == b""
    assert version.status_line == "404 Not Found"
    verdicts = {r["u"]: r for r in ledger.records("verdict")}
    assert verdicts[site.url("/a")]["d"] == "allowed" and verdicts[site.url("/a")]["ver"] == version.digest
    assert verdicts[site.url("/a")]["r"] is None
    assert verdicts[site.url("/b")]["d"] == "not_judged"
    assert verdicts[site.url("/b")]["why"] == "dont_obey_robotstxt"
    # Responses are recorded for judged requests only.
    assert [r["u"] for r in ledger.records("response")] == [site.url("/a")]


@pytest_twisted.inlineCallbacks
def test_segments_rotate_by_size_each_sealed_and_compressed_chained_by_their_heads(origins, tmp_path):
    site = origins("127.0.0.1")
    site.robots("User-agent: *\nDisallow: /private\n")
    urls = [site.url(f"/page/{n}?{'x' * 100}") for n in range(60)]
    result = yield run_crawl(urls, mw_settings(ROBOTSTXT_LEDGER=str(tmp_path), ROBOTSTXT_LEDGER_ROTATE_BYTES=4096))
    ledger = read(tmp_path)  # checks each head's prev against the seal before it
    [run] = ledger.runs().values()
    assert len(run) >= 3
    assert all(s.closed and s.sealed for s in run)
    assert [s.records[-1].get("end") for s in run] == [None] * (len(run) - 1) + [True]
    assert [s.records[0]["prev"] for s in run[1:]] == [s.records[-1]["h"] for s in run[:-1]]
    assert not any(p.name.endswith((".jsonl", ".tmp")) for p in (tmp_path / "runs").iterdir())
    assert stat(result, "ledger/segments") == len(run)
    assert sorted(r["u"] for r in ledger.records("verdict")) == sorted(urls)
    assert len(ledger.records("response")) == len(result.responses) == 60


@pytest.mark.parametrize("value", [100, 0, "big", 1 << 41])
def test_a_bad_rotate_size_fails_at_start_up_naming_the_setting(value, tmp_path):
    from scrapy.utils.test import get_crawler

    from scrapy_rfc9309.middleware import RobotsTxtMiddleware

    crawler = get_crawler(settings_dict=mw_settings(ROBOTSTXT_LEDGER=str(tmp_path),
                                                   ROBOTSTXT_LEDGER_ROTATE_BYTES=value))
    with pytest.raises(RobotsTxtConfigError, match="ROBOTSTXT_LEDGER_ROTATE_BYTES"):
        RobotsTxtMiddleware.from_crawler(crawler)
    assert not (tmp_path / "runs").exists()


def test_an_unwritable_directory_fails_at_start_up_naming_the_setting_and_the_path(tmp_path):
    from scrapy.utils.test import get_crawler

    from scrapy_rfc9309.middleware import RobotsTxtMiddleware

    occupied = tmp_path / "a-file"
    occupied.write_text("not a directory")
    unwritable = [occupied, occupied / "ledger"]
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(stat_module.S_IRUSR | stat_module.S_IXUSR)
        unwritable += [locked, locked / "ledger"]
    try:
        for directory in unwritable:
            crawler = get_crawler(settings_dict=mw_settings(ROBOTSTXT_LEDGER=str(directory)))
            with pytest.raises(RobotsTxtConfigError, match=rf"ROBOTSTXT_LEDGER: cannot write to .*{directory.name}"):
                RobotsTxtMiddleware.from_crawler(crawler)
    finally:
        if os.geteuid() != 0:
            locked.chmod(stat_module.S_IRWXU)
    crawler = get_crawler(settings_dict=mw_settings(ROBOTSTXT_LEDGER=Path(tmp_path / "new" / "ledger")))
    assert RobotsTxtMiddleware.from_crawler(crawler).ledger is not None
    assert (tmp_path / "new" / "ledger" / "runs").is_dir() and (tmp_path / "new" / "ledger" / "versions").is_dir()


@pytest_twisted.inlineCallbacks
def test_tdmrep_versions_are_written_and_each_verdict_names_the_rule_and_version_it_obeyed(origins, tmp_path):
    import json

    site = origins("127.0.0.1")
    site.robots("User-agent: *\nDisallow: /private\n")
    rules = json.dumps([{"location": "/reserved/", "tdm-reservation": 1}]).encode()
    site["/.well-known/tdmrep.json"] = Static(rules, 200, {"Content-Type": "application/json"})
    urls = [site.url("/public/1"), site.url("/reserved/1"), site.url("/private/1")]
    result = yield run_crawl(urls, mw_settings(ROBOTSTXT_LEDGER=str(tmp_path), ROBOTSTXT_TDMREP=True,
                                               ROBOTSTXT_USAGE_DENY=["train-ai"]))
    assert result.responses == [site.url("/public/1")]
    ledger = read(tmp_path)
    documents = {v.fields["WARC-RFC9309-Document"]: v for v in ledger.versions.values()}
    assert set(documents) == {"robots.txt", "tdmrep.json"}
    assert documents["tdmrep.json"].body == rules
    assert documents["tdmrep.json"].fields["WARC-Target-URI"] == site.url("/.well-known/tdmrep.json")
    states = {r["doc"]: r for r in ledger.records("state")}
    assert states["tdmrep.json"]["ver"] == documents["tdmrep.json"].digest
    verdicts = {r["u"]: r for r in ledger.records("verdict")}
    robots, tdm = documents["robots.txt"].digest, documents["tdmrep.json"].digest
    assert verdicts[urls[0]]["d"] == "allowed" and verdicts[urls[0]]["ver"] == robots
    assert (verdicts[urls[0]]["tv"], verdicts[urls[0]]["tr"]) == (tdm, None)
    assert verdicts[urls[1]]["d"] == "tdm_reserved" and verdicts[urls[1]]["ver"] == robots
    assert (verdicts[urls[1]]["tv"], verdicts[urls[1]]["tr"]) == (tdm, [1, "/reserved/", 0])
    assert verdicts[urls[2]]["d"] == "disallowed" and verdicts[urls[2]]["r"] == ["Disallow", "/private", 2]
    assert [r["u"] for r in ledger.records("response")] == [urls[0]]


@pytest_twisted.inlineCallbacks
def test_a_version_loaded_from_a_store_is_written_from_the_store_when_the_directory_lacks_it(origins, tmp_path):
    site = origins("127.0.0.1")
    site.robots(V1)
    store = {"ROBOTSTXT_STORE": "disk", "ROBOTSTXT_STORE_PATH": str(tmp_path / "store")}
    yield run_crawl([site.url("/c")], mw_settings(**store))  # an earlier run, without a ledger
    directory = tmp_path / "ledger"
    result = yield run_crawl([site.url("/a"), site.url("/c")], mw_settings(**store, ROBOTSTXT_LEDGER=str(directory)))
    assert stat(result, "store_hit") == 1 and len(robots_hits(site)) == 1
    ledger = read(directory)
    [version] = ledger.versions.values()
    assert version.fields["WARC-RFC9309-Source"] == "store"
    assert version.status_line == "200 OK" and version.headers == [] and version.body == V1.encode()
    [state] = ledger.records("state")
    assert (state["src"], state["ver"]) == ("store", version.digest)
    check_verdicts(ledger)
    # Fetched, the same version has the same digest: a restart that fetches it writes no second file.
    yield run_crawl([site.url("/c")], mw_settings(ROBOTSTXT_LEDGER=str(directory)))
    assert len(robots_hits(site)) == 2
    ledger = read(directory)
    assert list(ledger.versions) == [version.digest] and len(ledger.runs()) == 2
    assert sorted(r["src"] for r in ledger.records("state")) == ["fetch", "store"]
    assert {r["ver"] for r in ledger.records("verdict")} == {version.digest}


@pytest_twisted.inlineCallbacks
def test_held_and_dropped_requests_are_recorded_with_the_unreachable_state_and_why(origins, tmp_path):
    site = origins("127.0.0.1")
    site["/robots.txt"] = Static(b"busy", 503, {"Content-Type": "text/plain"})
    result = yield run_crawl([site.url("/a")], mw_settings(ROBOTSTXT_LEDGER=str(tmp_path), ROBOTSTXT_MAX_WAIT=0.5))
    assert stat(result, "dropped_unreachable") == 1 and page_hits(site) == []
    ledger = read(tmp_path)
    assert ledger.versions == {}
    states = ledger.records("state")
    assert states and all((s["access"], s["ver"], s["status"], s["err"]) == ("unreachable", None, 503, "status 503")
                          for s in states)
    assert [(r["d"], r.get("why"), r["ver"]) for r in ledger.records("verdict")] == [
        ("held", None, None), ("dropped", "max_wait", None)]
    assert ledger.records("response") == []
