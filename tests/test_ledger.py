"""The verdict ledger (ROBOTSTXT_LEDGER) in real crawls, proven through its audit
(``scrapy_rfc9309.audit``, and ``scrapy robotstxt audit`` in a subprocess): what it
writes, versions that change mid-crawl, rotation, a stale copy from a store, tampering
with a real crawl's files, and misconfiguration at start-up."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import stat as stat_module
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from crawl import run_crawl
from ledger_writer import read_lines, records, versions, write_lines
from middleware_support import BatchSpider, TrackingSpider, mw_settings, page_hits, robots_hits, stat, text, until
from scrapy.utils.defer import deferred_from_coro
from servers import Sequence, Static
from test_command import scrapy

from scrapy_rfc9309.core.origins import Origin
from scrapy_rfc9309.evidence.audit import CORRUPT, UNSEALED, Audit, audit, format_text
from scrapy_rfc9309.evidence.format import MANIFEST, RUNS_DIR, VERSIONS_DIR
from scrapy_rfc9309.exceptions import RobotsTxtConfigError, RobotsTxtForbidden

V1 = "User-agent: *\nDisallow: /a\n"
V2 = "User-agent: *\nAllow: /a\nDisallow: /b\n"


def passes(*directories: Path, allow_unsealed: bool = False) -> Audit:
    """The audit of ``directories`` together, which must pass (exit 0)."""
    result = audit(list(directories))
    assert result.exit_status(allow_unsealed) == 0, format_text(result, allow_unsealed)
    return result


def base(site: Any) -> str:
    """The site's origin as the audit names it."""
    origin = Origin.from_url(site.url("/"))
    assert origin is not None
    return origin.base


def by_version(directory: Path) -> dict[str, list[tuple[str, str]]]:
    """The (URL, verdict) of the allowed and disallowed verdicts, by the version they name."""
    found: dict[str, list[tuple[str, str]]] = {}
    for record in records(directory, "verdict"):
        if record["d"] in ("allowed", "disallowed"):
            found.setdefault(record["ver"], []).append((record["u"], record["d"]))
    return {digest: sorted(pairs) for digest, pairs in found.items()}


@pytest_twisted.inlineCallbacks
def test_a_robots_txt_changing_mid_crawl_gives_two_versions_each_verdict_tied_to_its_own(origins, tmp_path):
    site = origins("127.0.0.1")
    site["/robots.txt"] = Sequence([text(V1), text(V2)])
    urls = [site.url(p) for p in ("/a", "/b", "/c")]
    directory = tmp_path / "ledger"
    result = yield run_crawl(BatchSpider, mw_settings(ROBOTSTXT_LEDGER=str(directory), ROBOTSTXT_CACHE_TTL=0.2,
                                                      ROBOTSTXT_LEDGER_RESPONSES=True),
                             batches=[(0, urls), (0.5, urls)])
    assert len(robots_hits(site)) == 2
    # The audit re-parses each version and recomputes each verdict against the version in force.
    audited = passes(directory)
    [run] = audited.runs
    assert (run.segments, run.ending) == (1, "ended")
    found = versions(directory)
    bodies = {version.body: digest for digest, version in found.items()}
    assert set(bodies) == {V1.encode(), V2.encode()}
    first, second = bodies[V1.encode()], bodies[V2.encode()]
    report = audited.origins[base(site)]
    uses = sorted(report.versions.values(), key=lambda use: use.first)
    assert [(u.digest, u.document, u.access, u.status) for u in uses] == [
        (first, "robots.txt", "parsed", 200), (second, "robots.txt", "parsed", 200)]
    assert uses[0].last <= uses[1].first
    assert (report.requests["allowed"], report.requests["disallowed"]) == (4, 2)
    assert sum(report.requests.values()) == 6 and report.responses == {"passed": 4}
    # Each request tied to the version that was in force when it was judged.
    assert by_version(directory) == {
        first: [(urls[0], "disallowed"), (urls[1], "allowed"), (urls[2], "allowed")],
        second: [(urls[0], "allowed"), (urls[1], "disallowed"), (urls[2], "allowed")]}
    assert sorted(r["u"] for r in records(directory, "response")) == sorted(result.responses)
    assert len(page_hits(site)) == len(result.responses) == 4
    # What changes from record to record last, in one run (the bytes per verdict of the gzip segments): a
    # response's URL and fingerprint are then one back-reference to its verdict's.
    assert {tuple(r)[-4:] for r in records(directory, "verdict")} == {("u", "fp", "t", "p")}
    assert {tuple(r) for r in records(directory, "response")} == {("k", "s", "d", "u", "fp", "t", "p")}
    # The version files: WARC response records of the fetch, as received.
    version = found[first]
    assert version.fields["WARC-Target-URI"] == site.url("/robots.txt")
    assert version.fields["WARC-RFC9309-Source"] == "fetch"
    assert version.status_line == "200 OK"
    assert ("Content-Type", "text/plain; charset=utf-8") in version.headers
    assert stat(result, "ledger/segments") == 1
    fingerprinter = result.crawler.request_fingerprinter
    forbidden = [e for e in result.errors if isinstance(e.exception, RobotsTxtForbidden)]
    assert len(forbidden) == 2
    assert {r["fp"] for r in records(directory, "verdict") if r["d"] == "disallowed"} == {
        fingerprinter.fingerprint(e.failure.request).hex() for e in forbidden}
    # The command, as a third party runs it: the same findings, for machines.
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = scrapy(cwd, "robotstxt", "audit", "--json", str(directory))
    assert done.returncode == 0, done.stdout + done.stderr
    [origin] = json.loads(done.stdout)["origins"]
    assert origin["origin"] == base(site)
    assert [v["digest"] for v in origin["versions"]] == [first, second]
    assert (origin["requests"]["allowed"], origin["requests"]["disallowed"]) == (4, 2)
    assert origin["responses"]["received"] == 4


@pytest_twisted.inlineCallbacks
def test_an_unavailable_robots_txt_is_a_version_and_dont_obey_requests_are_recorded_unjudged(origins, tmp_path):
    from scrapy import Request

    site = origins("127.0.0.1")
    site["/robots.txt"] = Static(b"gone", 404, {"Content-Type": "text/plain"})
    yield run_crawl([site.url("/a"), Request(site.url("/b"), meta={"dont_obey_robotstxt": True})],
                    mw_settings(ROBOTSTXT_LEDGER=str(tmp_path), ROBOTSTXT_LEDGER_RESPONSES=True))
    report = passes(tmp_path).origins[base(site)]
    assert (report.requests["allowed"], report.requests["not_judged"], report.responses) == (1, 1, {"passed": 1})
    [version] = versions(tmp_path).values()
    assert [(u.digest, u.access, u.status) for u in report.versions.values()] == [
        (version.digest, "unavailable", 404)]
    assert version.fields["WARC-RFC9309-Access"] == "unavailable" and version.body == b""
    assert version.status_line == "404 Not Found"
    verdicts = {r["u"]: r for r in records(tmp_path, "verdict")}
    assert verdicts[site.url("/a")]["d"] == "allowed" and verdicts[site.url("/a")]["ver"] == version.digest
    assert verdicts[site.url("/a")]["r"] is None
    assert verdicts[site.url("/b")]["d"] == "not_judged"
    assert verdicts[site.url("/b")]["why"] == "dont_obey_robotstxt"
    # Responses are recorded for judged requests only.
    assert [r["u"] for r in records(tmp_path, "response")] == [site.url("/a")]


@pytest_twisted.inlineCallbacks
def test_segments_rotate_by_size_each_sealed_and_compressed_chained_by_their_heads(origins, tmp_path):
    site = origins("127.0.0.1")
    site.robots("User-agent: *\nDisallow: /private\n")
    urls = [site.url(f"/page/{n}?{'x' * 100}") for n in range(60)]
    result = yield run_crawl(urls, mw_settings(ROBOTSTXT_LEDGER=str(tmp_path), ROBOTSTXT_LEDGER_ROTATE_BYTES=4096,
                                               ROBOTSTXT_LEDGER_RESPONSES=True))
    # The audit checks each head's prev against the seal before it, and the last seal's end.
    [run] = passes(tmp_path).runs
    assert run.segments >= 3 and run.ending == "ended"
    names = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert len(names) == run.segments and all(name.endswith(".jsonl.gz") for name in names)
    seals = records(tmp_path, "seal")
    assert [seal.get("end") for seal in seals] == [None] * (run.segments - 1) + [True]
    assert stat(result, "ledger/segments") == run.segments
    assert sorted(r["u"] for r in records(tmp_path, "verdict")) == sorted(urls)
    assert len(records(tmp_path, "response")) == len(result.responses) == 60


@pytest.mark.parametrize("every", [False, True], ids=["default: refused responses", "ROBOTSTXT_LEDGER_RESPONSES"])
@pytest_twisted.inlineCallbacks
def test_a_response_a_usage_preference_refuses_is_recorded_and_a_passed_one_only_when_asked(origins, tmp_path,
                                                                                          every):
    site = origins("127.0.0.1")
    site.robots("User-agent: *\nDisallow: /private\n")
    site["/denied"] = text("no training", Content_Usage="train-ai=n")
    urls = [site.url("/a"), site.url("/denied"), site.url("/private")]
    settings = mw_settings(ROBOTSTXT_LEDGER=str(tmp_path), ROBOTSTXT_USAGE_DENY=["train-ai"])
    if every:
        settings["ROBOTSTXT_LEDGER_RESPONSES"] = True
    result = yield run_crawl(urls, settings)
    assert result.responses == [site.url("/a")]
    assert stat(result, "usage_denied_response") == 1
    responses = sorted((r["u"], r["s"], r["d"]) for r in records(tmp_path, "response"))
    refused = [(site.url("/denied"), 200, "usage_denied")]
    assert responses == sorted([*refused, (site.url("/a"), 200, "passed")] if every else refused)
    [head] = records(tmp_path, "head")
    assert head["resp"] == ("all" if every else "refused")
    # Every verdict is recorded either way: the passed response is implied by its allowed verdict.
    assert sorted((r["u"], r["d"]) for r in records(tmp_path, "verdict")) == [
        (urls[0], "allowed"), (urls[1], "allowed"), (urls[2], "disallowed")]
    audited = passes(tmp_path)
    [run] = audited.runs
    assert run.responses == head["resp"]
    report = audited.origins[base(site)]
    assert report.responses == ({"passed": 1, "usage_denied": 1} if every else {"usage_denied": 1})
    assert ("responses passed to the spider not recorded" in format_text(audited)) is not every


@pytest.mark.parametrize("value", [100, 0, "big", 1 << 41])
def test_a_bad_rotate_size_fails_at_start_up_naming_the_setting(value, tmp_path):
    from scrapy.utils.test import get_crawler

    from scrapy_rfc9309.components.robotstxt_middleware import RobotsTxtMiddleware

    crawler = get_crawler(settings_dict=mw_settings(ROBOTSTXT_LEDGER=str(tmp_path),
                                                   ROBOTSTXT_LEDGER_ROTATE_BYTES=value))
    with pytest.raises(RobotsTxtConfigError, match="ROBOTSTXT_LEDGER_ROTATE_BYTES"):
        RobotsTxtMiddleware.from_crawler(crawler)
    assert not (tmp_path / "runs").exists()


def test_an_unwritable_directory_fails_at_start_up_naming_the_setting_and_the_path(tmp_path):
    from scrapy.utils.test import get_crawler

    from scrapy_rfc9309.components.robotstxt_middleware import RobotsTxtMiddleware

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
                                               ROBOTSTXT_USAGE_DENY=["train-ai"], ROBOTSTXT_LEDGER_RESPONSES=True))
    assert result.responses == [site.url("/public/1")]
    report = passes(tmp_path).origins[base(site)]  # the tdm_reserved verdict recomputed from tdmrep.json
    assert (report.requests["allowed"], report.requests["tdm_reserved"], report.requests["disallowed"]) == (1, 1, 1)
    documents = {v.fields["WARC-RFC9309-Document"]: v for v in versions(tmp_path).values()}
    assert set(documents) == {"robots.txt", "tdmrep.json"}
    assert documents["tdmrep.json"].body == rules
    assert documents["tdmrep.json"].fields["WARC-Target-URI"] == site.url("/.well-known/tdmrep.json")
    states = {r["doc"]: r for r in records(tmp_path, "state")}
    assert states["tdmrep.json"]["ver"] == documents["tdmrep.json"].digest
    verdicts = {r["u"]: r for r in records(tmp_path, "verdict")}
    robots, tdm = documents["robots.txt"].digest, documents["tdmrep.json"].digest
    assert verdicts[urls[0]]["d"] == "allowed" and verdicts[urls[0]]["ver"] == robots
    assert (verdicts[urls[0]]["tv"], verdicts[urls[0]]["tr"]) == (tdm, None)
    assert verdicts[urls[1]]["d"] == "tdm_reserved" and verdicts[urls[1]]["ver"] == robots
    assert (verdicts[urls[1]]["tv"], verdicts[urls[1]]["tr"]) == (tdm, [1, "/reserved/", 0])
    assert verdicts[urls[2]]["d"] == "disallowed" and verdicts[urls[2]]["r"] == ["Disallow", "/private", 2]
    assert [r["u"] for r in records(tmp_path, "response")] == [urls[0]]


@pytest_twisted.inlineCallbacks
def test_a_version_loaded_from_a_store_is_written_from_the_store_when_the_directory_lacks_it(origins, tmp_path):
    site = origins("127.0.0.1")
    site.robots(V1)
    store = {"ROBOTSTXT_STORE": "disk", "ROBOTSTXT_STORE_PATH": str(tmp_path / "store")}
    yield run_crawl([site.url("/c")], mw_settings(**store))  # an earlier run, without a ledger
    directory = tmp_path / "ledger"
    result = yield run_crawl([site.url("/a"), site.url("/c")], mw_settings(**store, ROBOTSTXT_LEDGER=str(directory)))
    assert stat(result, "store_hit") == 1 and len(robots_hits(site)) == 1
    report = passes(directory).origins[base(site)]
    assert (report.requests["allowed"], report.requests["disallowed"]) == (1, 1)
    [version] = versions(directory).values()
    assert list(report.versions) == [version.digest]
    assert version.fields["WARC-RFC9309-Source"] == "store"
    assert version.status_line == "200 OK" and version.headers == [] and version.body == V1.encode()
    [state] = records(directory, "state")
    assert (state["src"], state["ver"]) == ("store", version.digest)
    # Fetched, the same version has the same digest: a restart that fetches it writes no second file.
    yield run_crawl([site.url("/c")], mw_settings(ROBOTSTXT_LEDGER=str(directory)))
    assert len(robots_hits(site)) == 2
    assert len(passes(directory).runs) == 2
    assert list(versions(directory)) == [version.digest]
    assert sorted(r["src"] for r in records(directory, "state")) == ["fetch", "store"]
    assert {r["ver"] for r in records(directory, "verdict")} == {version.digest}


@pytest.mark.parametrize("store", ["disk", "redis"])
@pytest_twisted.inlineCallbacks
def test_a_stale_copy_from_a_store_names_its_good_version_while_the_origin_is_unreachable(origins, tmp_path,
                                                                                        request, store):
    site = origins("127.0.0.1")
    site["/robots.txt"] = text(V1, Cache_Control="max-age=0")  # stale at once: the next process fetches again
    settings: dict[str, Any] = {"ROBOTSTXT_STORE": store, "ROBOTSTXT_CACHE_MIN_TTL": 0, "ROBOTSTXT_RETRY_DELAY": 600,
                                "ROBOTSTXT_RETRY_MAX_DELAY": 600, "ROBOTSTXT_LEDGER_RESPONSES": True}
    if store == "disk":
        settings["ROBOTSTXT_STORE_PATH"] = str(tmp_path / "store")
    else:
        settings["ROBOTSTXT_REDIS_URL"] = request.getfixturevalue("redis_url")
    one, two, three = (tmp_path / f"ledger{n}" for n in (1, 2, 3))
    yield run_crawl([site.url("/c")], mw_settings(**settings, ROBOTSTXT_LEDGER=str(one)))
    [good] = versions(one)
    site["/robots.txt"] = Static(b"busy", 503, {"Content-Type": "text/plain"})
    urls = [site.url("/a"), site.url("/c")]
    # Process 2 fetches (503) and judges by the good copy it found in the store; process 3 loads the
    # unreachable state process 2 saved (its retry not due), with the good copy, and judges by it too.
    second = yield run_crawl(urls, mw_settings(**settings, ROBOTSTXT_LEDGER=str(two)))
    third = yield run_crawl(urls, mw_settings(**settings, ROBOTSTXT_LEDGER=str(three)))
    assert len(robots_hits(site)) == 2 and stat(third, "store_hit") == 1
    assert second.responses == third.responses == [site.url("/c")]
    for directory, source in ((two, "fetch"), (three, "store")):
        [state] = records(directory, "state")
        assert (state["access"], state["status"], state["src"], state["ver"]) == ("unreachable", 503, source, good)
        assert sorted((r["u"], r["d"], r["ver"]) for r in records(directory, "verdict")) == [
            (urls[0], "disallowed", good), (urls[1], "allowed", good)]
        # The directory lacked the version: written from the store's copy, the same digest.
        [version] = versions(directory).values()
        assert (version.digest, version.body, version.fields["WARC-RFC9309-Source"]) == (good, V1.encode(), "store")
        assert version.fields["WARC-RFC9309-Access"] == "parsed" and version.status_line == "200 OK"
        passes(directory)
    report = passes(one, two, three).origins[base(site)]
    assert list(report.versions) == [good]
    assert (report.requests["allowed"], report.requests["disallowed"], report.responses) == (3, 2, {"passed": 3})


@pytest_twisted.inlineCallbacks
def test_held_and_dropped_requests_are_recorded_with_the_unreachable_state_and_why(origins, tmp_path):
    site = origins("127.0.0.1")
    site["/robots.txt"] = Static(b"busy", 503, {"Content-Type": "text/plain"})
    result = yield run_crawl([site.url("/a")], mw_settings(ROBOTSTXT_LEDGER=str(tmp_path), ROBOTSTXT_MAX_WAIT=0.5))
    assert stat(result, "dropped_unreachable") == 1 and page_hits(site) == []
    report = passes(tmp_path).origins[base(site)]
    assert (report.requests["held"], report.dropped, report.versions) == (1, {"max_wait": 1}, {})
    assert versions(tmp_path) == {}
    states = records(tmp_path, "state")
    assert states and all((s["access"], s["ver"], s["status"], s["err"]) == ("unreachable", None, 503, "status 503")
                          for s in states)
    assert [(r["d"], r.get("why"), r["ver"]) for r in records(tmp_path, "verdict")] == [
        ("held", None, None), ("dropped", "max_wait", None)]
    assert records(tmp_path, "response") == []



@pytest_twisted.inlineCallbacks
def test_a_request_parked_while_its_origin_is_held_is_recorded_held_when_parked(origins, tmp_path):
    site = origins("127.0.0.1")
    site["/robots.txt"] = Sequence([Static(b"busy", 503, {"Content-Type": "text/plain"}), text(V1)])
    urls = [site.url(f"/{path}/{n}") for path in ("a", "c") for n in range(3)]
    # One request of the origin waits in the downloader for its robots.txt, the others are parked; the 503
    # holds them all: each held one, in the downloader or parked, has its held record, then its verdict.
    result = yield run_crawl(urls, mw_settings(ROBOTSTXT_LEDGER=str(tmp_path), CONCURRENT_REQUESTS_PER_DOMAIN=1))
    assert len(robots_hits(site)) == 2
    held = [r["fp"] for r in records(tmp_path, "verdict") if r["d"] == "held"]
    assert stat(result, "held") == len(held) == len(urls)
    report = passes(tmp_path).origins[base(site)]
    assert (report.requests["held"], report.requests["allowed"], report.requests["disallowed"]) == (6, 3, 3)
    verdicts = records(tmp_path, "verdict")
    for fp in held:
        after = [r["d"] for r in verdicts if r["fp"] == fp]
        assert after[0] == "held" and after[-1] in ("allowed", "disallowed") and set(after[1:-1]) <= {"held"}



@pytest_twisted.inlineCallbacks
def test_requests_parked_once_their_origin_is_held_are_recorded_held_as_they_are_parked(origins, tmp_path):
    from scrapy import Request
    from servers import Gate

    site = origins("127.0.0.1")
    gate = Gate(text(V1))  # the retry waits at the gate: the origin stays held meanwhile
    site["/robots.txt"] = Sequence([Static(b"busy", 503, {"Content-Type": "text/plain"}), gate])
    TrackingSpider.latest = None
    crawl = run_crawl(TrackingSpider, mw_settings(ROBOTSTXT_LEDGER=str(tmp_path), ROBOTSTXT_MAX_WAIT=60),
                      urls=[site.url("/a/0")])

    def held() -> int:
        spider = TrackingSpider.latest
        return 0 if spider is None else int(spider.crawler.stats.get_value("robotstxt/held", 0))

    yield deferred_from_coro(until(lambda: held() == 1, "the first request held in the downloader"))
    assert TrackingSpider.latest is not None
    engine = TrackingSpider.latest.crawler.engine
    engine.crawl(Request(site.url("/a/1")))  # judged held, then parked
    yield deferred_from_coro(until(lambda: held() == 2, "one parked as it is held"))
    for path in ("/c/1", "/c/2"):  # of an origin with parked requests: parked before the scheduler sees them
        engine.crawl(Request(site.url(path)))
    yield deferred_from_coro(until(lambda: held() == 4, "two more parked held"))
    assert [r["d"] for r in records(tmp_path, "verdict")] == ["held"] * 4
    gate.open()
    result = yield crawl
    assert sorted(result.responses) == [site.url("/c/1"), site.url("/c/2")]
    report = passes(tmp_path).origins[base(site)]
    assert (report.requests["held"], report.requests["allowed"], report.requests["disallowed"]) == (4, 2, 2)
    assert stat(result, "held") == 4


# -- tampering with a real crawl's ledger --------------------------------------------------------
@pytest.fixture(scope="module")
def real_ledger_home(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Where the module's real crawl writes its ledger, once (see :func:`real_ledger`)."""
    return {"root": tmp_path_factory.mktemp("real-ledger")}


@pytest_twisted.inlineCallbacks
def real_ledger(origins: Any, home: dict[str, Path], tmp_path: Path) -> Any:
    """A copy of one real crawl's ledger (crawled at the first call of the module): two
    segments or more, the first closed by rotation; the last made plain (its records as
    written, sealed with ``end``, as a process killed before it compressed it leaves it).
    Fires with ``(directory, gzip segment, plain segment)``."""
    source = home["root"] / "ledger"
    if not source.exists():
        site = origins("127.0.0.1")
        site.robots("User-agent: *\nDisallow: /private\n")
        urls = [site.url(f"/page/{n}?{'x' * 100}") for n in range(30)] + [site.url(f"/private/{n}") for n in range(6)]
        result = yield run_crawl(urls, mw_settings(ROBOTSTXT_LEDGER=str(home["root"] / "writing"),
                                                   ROBOTSTXT_LEDGER_ROTATE_BYTES=12_000))
        assert len(result.responses) == 30
        os.rename(home["root"] / "writing", source)
        [run] = passes(source).runs
        assert run.segments >= 2, run
    directory = tmp_path / "ledger"
    shutil.copytree(source, directory)
    segments = sorted((directory / RUNS_DIR).iterdir())
    last = segments[-1]
    plain = last.with_name(last.name.removesuffix(".gz"))
    plain.write_bytes(gzip.decompress(last.read_bytes()))
    last.unlink()
    [run] = passes(directory).runs  # the plain last segment is a sealed one, of a run that ended
    assert run.ending == "ended"
    assert len(read_lines(segments[0])) >= 8 and len(read_lines(plain)) >= 8
    return directory, segments[0], plain


def _edit_byte(path: Path) -> int:
    """Change one byte of a record (the last digit of its time, which no verdict depends on): the
    chain breaks at the next record."""
    lines = read_lines(path)
    n = 3
    at = lines[n].index(b',"p":') - 1
    lines[n] = lines[n][:at] + str((int(lines[n][at:at + 1]) + 1) % 10).encode() + lines[n][at + 1:]
    write_lines(path, lines)
    return n + 2


def _delete(path: Path) -> int:
    lines = read_lines(path)
    del lines[3]
    write_lines(path, lines)
    return 4


def _reorder(path: Path) -> int:
    lines = read_lines(path)
    lines[3], lines[4] = lines[4], lines[3]
    write_lines(path, lines)
    return 4


def _truncate(path: Path) -> None:
    """Remove the last records, the seal with them (at line boundaries)."""
    write_lines(path, read_lines(path)[:-3])


def _cut(path: Path) -> int:
    """Cut the segment inside a record (its last line without a line break)."""
    lines = read_lines(path)[:-2]
    lines[-1] = lines[-1][: len(lines[-1]) // 2]
    write_lines(path, lines)
    return len(lines)


# (tampering, which segment, the problem it must give: kind and line, None for the whole file)
TAMPERING: list[tuple[str, Callable[[Path], int | None], str, str]] = [
    ("edit one byte", _edit_byte, "gzip", CORRUPT),
    ("edit one byte", _edit_byte, "plain", CORRUPT),
    ("delete a record", _delete, "gzip", CORRUPT),
    ("delete a record", _delete, "plain", CORRUPT),
    ("reorder two records", _reorder, "gzip", CORRUPT),
    ("reorder two records", _reorder, "plain", CORRUPT),
    ("truncate records", _truncate, "gzip", CORRUPT),
    # A plain segment cut at a record's end is what a killed process leaves: not sealed.
    ("truncate records", _truncate, "plain", UNSEALED),
    ("cut a record", _cut, "gzip", CORRUPT),
]


@pytest.mark.parametrize(("what", "tamper", "where", "kind"), TAMPERING,
                         ids=[f"{what} in the {where} segment" for what, _, where, _ in TAMPERING])
@pytest_twisted.inlineCallbacks
def test_tampering_with_a_real_crawls_segment_is_detected(origins, real_ledger_home, tmp_path, what, tamper, where,
                                                          kind):
    directory, closed, plain = yield real_ledger(origins, real_ledger_home, tmp_path)
    path = closed if where == "gzip" else plain
    line = tamper(path)
    result = audit([directory])
    assert result.exit_status() == 1
    found = {(p.file, p.line, p.kind) for p in result.problems}
    assert (str(path), line, kind) in found, format_text(result)
    # The chain's problem is the first of the file; one at the file's end only when no record was moved.
    first = next(p for p in result.problems if p.file == str(path))
    assert (first.line, first.kind) == (line, kind), format_text(result)
    if kind == UNSEALED:
        # The manifest's end line says the run ended, at a seal its segments no longer have: tampering.
        manifest = directory / MANIFEST
        assert result.kinds == {UNSEALED: 1, CORRUPT: 1}, format_text(result)
        assert any(p.file == str(manifest) and p.kind == CORRUPT and "segments were removed" in p.message
                   for p in result.problems)
        # Without it (what a killed process leaves), the records left verify: nothing else is wrong.
        manifest.write_bytes(b"".join(line + b"\n" for line in manifest.read_bytes().splitlines()[:-1]))
        result = audit([directory])
        assert result.kinds == {UNSEALED: 1} and result.exit_status(allow_unsealed=True) == 0
    assert not any(p.kind == UNSEALED for p in result.problems) or kind == UNSEALED


@pytest_twisted.inlineCallbacks
def test_tampering_with_a_real_crawls_version_file_is_detected(origins, real_ledger_home, tmp_path):
    directory, _, _ = yield real_ledger(origins, real_ledger_home, tmp_path)
    [path] = (directory / VERSIONS_DIR).iterdir()
    data = gzip.decompress(path.read_bytes())
    assert data.count(b"Disallow: /private") == 1
    path.write_bytes(gzip.compress(data.replace(b"Disallow: /private", b"Disallow: /privatf")))
    result = audit([directory])
    assert result.exit_status() == 1
    assert result.problems[0].file == str(path) and result.problems[0].kind == CORRUPT
    assert "digest" in result.problems[0].message
    # The state record naming the file names other bytes too.
    named = [p for p in result.problems if "its file's bytes are not those" in p.message]
    assert len(named) == 1 and named[0].kind == CORRUPT
    # Without a version that verifies, no verdict is proven: every response is listed.
    assert sum(p.file != str(path) and p not in named for p in result.problems) == len(records(directory, "response"))


@pytest_twisted.inlineCallbacks
def test_runs_of_a_directory_are_chained_and_the_newest_head_is_exported(origins, tmp_path):
    """Two crawls into one directory: each ends by logging the directory's head and putting it in
    the stats; the audit finds it in the manifest (an anchor kept outside); the first run removed
    (every segment of it) is found, the second one removed with its manifest lines only against
    its head."""
    import hashlib
    import logging

    from scrapy_rfc9309.evidence.audit import MISSING, ORPHAN

    site = origins("127.0.0.1")
    site.robots("User-agent: *\nDisallow: /private\n")
    directory = tmp_path / "ledger"
    heads, texts = [], []
    for n in range(2):
        site.robots(f"User-agent: *\nDisallow: /private/{n}\n")  # a version of each run's own
        result = yield run_crawl([site.url(f"/page/{n}"), site.url(f"/private/{n}/x")],
                                 mw_settings(ROBOTSTXT_LEDGER=str(directory)))
        heads.append(result.stats["robotstxt/ledger/head"])
        texts.append([m for m in result.messages(logging.INFO) if "robots.txt ledger: run" in m])
    manifest = (directory / MANIFEST).read_bytes().splitlines()
    assert [json.loads(line)["k"] for line in manifest] == ["start", "end", "start", "end"]
    hashed = b""
    for line in manifest:
        hashed = hashlib.sha256(hashed + line).digest()
    assert heads[1] == hashed.hex()
    assert all(len(found) == 1 and head in found[0] and f"--anchor {head}" in found[0]
               for head, found in zip(heads, texts, strict=True))
    audited = audit([directory], heads)
    assert audited.problems == [] and len(audited.runs) == 2, format_text(audited)
    runs = [json.loads(line)["run"] for line in manifest if b'"k":"start"' in line]
    kept = tmp_path / "kept"
    shutil.copytree(directory, kept)
    [first] = (directory / RUNS_DIR).glob(f"{runs[0]}-*")
    first.unlink()  # the older run: one segment
    result = audit([directory])
    assert sorted(p.kind for p in result.problems) == [MISSING, ORPHAN], format_text(result)
    # The newest run removed with its manifest lines: consistent, except against the head kept outside.
    [last] = (kept / RUNS_DIR).glob(f"{runs[1]}-*")
    last.unlink()
    (kept / MANIFEST).write_bytes(b"".join(line + b"\n" for line in manifest[:2]))
    newest = next(p for p in (kept / VERSIONS_DIR).iterdir() if b"/private/1" in gzip.decompress(p.read_bytes()))
    newest.unlink()
    assert audit([kept]).problems == []
    assert [p.kind for p in audit([kept], [heads[1]]).problems] == [MISSING]
    assert audit([kept], [heads[0]]).problems == []


# -- the manifest's append: its cost, and what it chains to ----------------------------------------
def _manifest(directory: Path, lines: int, full: bool = True, cut: bytes = b"") -> bytes:
    """A manifest of ``lines`` lines chained as docs/ledger-format.md says (``full``: format 3's
    full ``p``, else format 2's 16 digits), then ``cut``; the chain hash of its last line."""
    import hashlib

    hashed, out = b"", []
    for n in range(lines):
        run = f"20260921T120000Z-host-{n}-0000aaaa"
        p = "" if not n else hashed.hex() if full else hashed.hex()[:16]
        line = json.dumps({"k": "start" if n % 2 == 0 else "end", "t": 1789992000.0 + n, "p": p, "run": run},
                          separators=(",", ":")).encode()
        out.append(line + b"\n")
        hashed = hashlib.sha256(hashed + line).digest()
    if cut:
        out.append(cut)
        hashed = hashlib.sha256(hashed + cut).digest()
    (directory / MANIFEST).write_bytes(b"".join(out))
    return hashed


def _append(directory: Path) -> tuple[int, bytes, str]:
    """The package's append of a start line, reading through a counter: the bytes it read, the
    line it appended and the chain hash it returned."""
    from scrapy_rfc9309.ledger.segments import append_manifest

    read = [0]

    def counting(fd: int, count: int, offset: int) -> bytes:
        data = os.pread(fd, count, offset)
        read[0] += len(data)
        return data

    size = (directory / MANIFEST).stat().st_size if (directory / MANIFEST).exists() else 0
    head = append_manifest(str(directory), {"k": "start", "run": "20260921T130000Z-host-1-0000bbbb"}, counting)
    return read[0], (directory / MANIFEST).read_bytes()[size:], head


@pytest.mark.parametrize("lines", [1, 40, 100_000])
def test_a_manifest_append_reads_a_bounded_tail_whatever_the_number_of_runs(tmp_path, lines):
    """The append at the 100,000th line (a crawl every 5 minutes for a year) reads what it reads
    at the first: the tail, which names the full chain hash before its last line."""
    import hashlib

    from scrapy_rfc9309.evidence.format import MANIFEST_TAIL

    previous = _manifest(tmp_path, lines)
    read, written, head = _append(tmp_path)
    assert read <= MANIFEST_TAIL and read <= (tmp_path / MANIFEST).stat().st_size
    assert json.loads(written)["p"] == previous.hex()  # chained to the whole file's last line
    assert head == hashlib.sha256(previous + written.rstrip(b"\n")).hexdigest()
    if lines == 100_000:
        assert (tmp_path / MANIFEST).stat().st_size > 20 * MANIFEST_TAIL


def test_a_manifest_append_chains_a_cut_line_and_reads_an_older_manifest_whole_once(tmp_path):
    import hashlib

    from scrapy_rfc9309.evidence.format import MANIFEST_TAIL

    # A last line cut short (a process killed as it wrote it): ended, and chained as it is.
    previous = _manifest(tmp_path, 5_000, cut=b'{"k":"end","t":1789999999.0,"p":"0123')
    read, written, head = _append(tmp_path)
    assert read <= MANIFEST_TAIL and written.startswith(b"\n{")
    assert json.loads(written[1:])["p"] == previous.hex()
    assert head == hashlib.sha256(previous + written.strip(b"\n")).hexdigest()
    # Format 2 (16 digits of the previous hash): hashed from the start, once; the next append reads its tail.
    previous = _manifest(tmp_path, 5_000, full=False, cut=b'{"k":"st')
    size = (tmp_path / MANIFEST).stat().st_size
    read, written, head = _append(tmp_path)
    assert read >= size and json.loads(written)["p"] == previous.hex()
    read, written, _ = _append(tmp_path)
    assert read <= MANIFEST_TAIL and json.loads(written)["p"] == head


@pytest_twisted.inlineCallbacks
def test_a_runs_heads_record_the_settings_its_verdicts_depend_on_and_the_audit_holds_verdicts_to_them(
        origins, tmp_path):
    from scrapy import Request
    from test_audit import _rewrite_chain

    from scrapy_rfc9309.core.usage_vocabulary import REVISION
    from scrapy_rfc9309.evidence.audit import MISMATCH
    from scrapy_rfc9309.meta import PURPOSE_META

    site = origins("127.0.0.1")
    site.robots("User-agent: *\nAllow: /\nContent-Usage: /train/ train-ai=n\n\nUser-agent: ai-bot\nDisallow: /no-ai/\n")
    directory = tmp_path / "ledger"
    urls = [site.url("/page"), site.url("/no-ai/x"), site.url("/train/x"),
            Request(site.url("/no-ai/own"), meta={PURPOSE_META: []})]  # this request's own purpose tokens: none
    yield run_crawl(urls, mw_settings(ROBOTSTXT_LEDGER=str(directory), ROBOTSTXT_PURPOSE_TOKENS=["ai-bot"],
                                      ROBOTSTXT_USAGE_DENY=["train-ai"], ROBOTSTXT_CRAWL_DELAY=True,
                                      ROBOTSTXT_USAGE_META=True))
    [head] = records(directory, "head")
    assert head["v"] == 3 and head["cfg"] == {
        "purpose": ["ai-bot"], "deny": ["train-ai"], "read": ["robots.txt", "headers", "meta"], "tdm": False,
        "crawl_delay": True, "crawl_delay_max": 60.0, "vocab": REVISION}
    verdicts = {r["u"]: r for r in records(directory, "verdict")}
    assert [(verdicts[site.url(path)]["d"], verdicts[site.url(path)]["a"], verdicts[site.url(path)].get("pt"))
            for path in ("/page", "/no-ai/x", "/train/x", "/no-ai/own")] == [
        ("allowed", "scrapy", None), ("disallowed", "ai-bot", None), ("usage_denied", "scrapy", None),
        ("allowed", "scrapy", [])]
    result = passes(directory)
    assert result.origins[base(site)].requests == {"allowed": 2, "disallowed": 1, "usage_denied": 1}
    # The refused requests recorded allowed, each with the rule that allows it for the crawler's own token.
    [segment] = (directory / RUNS_DIR).iterdir()
    lines = [json.loads(line) for line in read_lines(segment)]
    forged = {n: {"d": "allowed", "a": "scrapy", "r": ["Allow", "/", 2]}
              for n, record in enumerate(lines, 1)
              if record["k"] == "verdict" and record["d"] in ("disallowed", "usage_denied")}
    _rewrite_chain(segment, forged)
    result = audit([directory])
    assert sorted((p.line, p.kind) for p in result.problems) == [(n, MISMATCH) for n in sorted(forged)], \
        format_text(result)
    assert {"for the purpose token 'ai-bot'", "denies train-ai"} == {
        words for p in result.problems for words in ("for the purpose token 'ai-bot'", "denies train-ai")
        if words in p.message}
