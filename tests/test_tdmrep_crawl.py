"""TDMRep's /.well-known/tdmrep.json in real crawls (ROBOTSTXT_TDMREP): fetched once
per origin through the robots.txt lifecycle, matched against each request, put in
its meta, and enforced with ROBOTSTXT_USAGE_DENY; every way its fetch can fail ends
in a recorded state with a next step in time."""

from __future__ import annotations

import json
import logging
from collections import Counter
from typing import Any

import pytest
import pytest_twisted
from crawl import run_crawl
from middleware_support import TrackingSpider, mw_settings, stat, until
from scrapy.utils.defer import deferred_from_coro
from servers import Delay, Dynamic, Gate, Huge, Redirect, Sequence, Static
from twisted.internet import defer

from scrapy_rfc9309.components.robotstxt_middleware import TDMREP_META, RobotsTxtMiddleware
from scrapy_rfc9309.core.origins import Origin as OriginKey
from scrapy_rfc9309.core.state import Access
from scrapy_rfc9309.core.tdmrep import TdmEntry
from scrapy_rfc9309.exceptions import (
    RobotsTxtConfigError,
    RobotsTxtForbidden,
    RobotsTxtTdmReserved,
    RobotsTxtUnreachable,
)

TDMREP = "/.well-known/tdmrep.json"
RULES = [
    {"location": "/reserved/", "tdm-reservation": 1, "tdm-policy": "https://example.com/policy.json"},
    {"location": "/*.jpg$", "tdm-reservation": 0},
]


def crawl(urls: list[str], **settings: Any) -> Any:
    from crawl import ListSpider

    class Spider(ListSpider):
        name = "tdm"
        tdm_meta: dict[str, Any]

        def parse(self, response: Any, **kwargs: Any) -> Any:
            if not hasattr(self, "tdm_meta"):
                self.tdm_meta = {}
            self.tdm_meta[response.url] = response.meta.get(TDMREP_META, "unset")
            yield from super().parse(response, **kwargs)

    return run_crawl(Spider, mw_settings(**settings), urls=urls)


def tdm_meta(result: Any) -> dict[str, Any]:
    return dict(getattr(result.crawler.spider, "tdm_meta", {}))


def tdm_state(result: Any, site: Any) -> Any:
    """The tdmrep.json state the crawl ended with for ``site``, checked to have a next step in time."""
    [mw] = [m for m in result.crawler.engine.downloader.middleware.middlewares
            if isinstance(m, RobotsTxtMiddleware)]
    state = mw.tdm.cache.get(OriginKey.from_url(site.url("/")))
    assert state is not None and state.expires_at > state.fetched_at
    return state


def _running_middleware() -> Any:
    """The middleware of the crawl of ``TrackingSpider.latest`` once its engine runs, else None."""
    spider = TrackingSpider.latest
    if spider is None or spider.crawler.engine is None:
        return None
    return spider.crawler.get_downloader_middleware(RobotsTxtMiddleware)


def _tdm_waiting() -> int:
    """Requests of that crawl waiting for a tdmrep.json (-1 before it runs)."""
    middleware = _running_middleware()
    return -1 if middleware is None else middleware.tdm.waiting


ENFORCE = {"ROBOTSTXT_TDMREP": True, "ROBOTSTXT_USAGE_DENY": ["train-ai"]}
ERROR = Static(b"busy", 503, {"Content-Type": "text/plain"})


@pytest_twisted.inlineCallbacks
def test_reserved_and_not_reserved_urls_with_enforcement(origins):
    site = origins()
    site.tdmrep(RULES)
    urls = [site.url("/reserved/a"), site.url("/reserved/b"), site.url("/open/x.jpg"), site.url("/open/page")]
    result = yield crawl(urls, ROBOTSTXT_TDMREP=True, ROBOTSTXT_USAGE_DENY=["train-ai"])

    assert sorted(result.responses) == sorted(urls[2:])
    meta = tdm_meta(result)
    assert meta[site.url("/open/x.jpg")] == TdmEntry(False, None, "/*.jpg$", 1, site.url(TDMREP))
    assert meta[site.url("/open/page")] is None
    for url in urls[:2]:
        [error] = result.errors_for(url)
        assert isinstance(error, RobotsTxtTdmReserved)
        assert error.entry == TdmEntry(True, "https://example.com/policy.json", "/reserved/", 0, site.url(TDMREP))
        assert error.tdmrep_url == site.url(TDMREP)
    assert stat(result, "tdm_reserved") == 2
    assert len(site.requests_for(TDMREP)) == 1  # once for the origin
    assert stat(result, "tdmrep/parsed") == 1
    assert not [u for u in result.downloaded if "/reserved/" in u[0]]  # dropped before download


@pytest_twisted.inlineCallbacks
def test_without_enforcement_the_entry_is_in_meta_and_nothing_is_dropped(origins):
    site = origins()
    site.tdmrep(RULES)
    urls = [site.url("/reserved/a"), site.url("/open/page")]
    result = yield crawl(urls, ROBOTSTXT_TDMREP=True, ROBOTSTXT_USAGE_DENY=["search"])

    assert sorted(result.responses) == sorted(urls)
    meta = tdm_meta(result)
    assert meta[urls[0]].reserved and meta[urls[0]].index == 0
    assert meta[urls[1]] is None
    assert stat(result, "tdm_reserved") == 0


@pytest_twisted.inlineCallbacks
def test_with_the_setting_off_no_tdmrep_json_is_requested(origins):
    site = origins()
    site.tdmrep([{"location": "/", "tdm-reservation": 1}])
    urls = [site.url("/a"), site.url("/b")]
    result = yield crawl(urls, ROBOTSTXT_USAGE_DENY=["train-ai"])

    assert sorted(result.responses) == sorted(urls)
    assert site.requests_for(TDMREP) == []
    assert tdm_meta(result) == {url: "unset" for url in urls}


@pytest_twisted.inlineCallbacks
def test_a_missing_file_is_no_reservation(origins):
    site = origins()  # /.well-known/tdmrep.json: 404
    urls = [site.url("/a"), site.url("/b")]
    result = yield crawl(urls, ROBOTSTXT_TDMREP=True, ROBOTSTXT_USAGE_DENY=["train-ai"])

    assert sorted(result.responses) == sorted(urls)
    assert tdm_meta(result) == {url: None for url in urls}
    assert len(site.requests_for(TDMREP)) == 1
    assert stat(result, "tdmrep/unavailable") == 1


@pytest_twisted.inlineCallbacks
def test_a_slow_file_is_waited_for(origins):
    site = origins()
    site[TDMREP] = Delay(0.5, Static(json.dumps(RULES).encode(), 200, {"Content-Type": "application/json"}))
    urls = [site.url("/reserved/a"), site.url("/open/a"), site.url("/open/b")]
    result = yield crawl(urls, **ENFORCE)

    assert sorted(result.responses) == sorted(urls[1:])
    assert [type(e) for e in result.errors_for(urls[0])] == [RobotsTxtTdmReserved]
    assert tdm_meta(result) == {urls[1]: None, urls[2]: None}  # judged with the file, not before it
    assert len(site.requests_for(TDMREP)) == 1
    assert tdm_state(result, site).access is Access.PARSED


@pytest_twisted.inlineCallbacks
def test_a_file_that_fails_then_answers_holds_the_requests_when_enforced(origins):
    site = origins()
    site[TDMREP] = Sequence([ERROR, ERROR, Static(json.dumps(RULES).encode(), 200,
                                                  {"Content-Type": "application/json"})])
    urls = [site.url("/reserved/a"), site.url("/open/a")]
    result = yield crawl(urls, **ENFORCE)

    assert result.responses == [urls[1]]
    assert [type(e) for e in result.errors_for(urls[0])] == [RobotsTxtTdmReserved]
    assert len(site.requests_for(TDMREP)) == 3
    assert stat(result, "tdmrep/unreachable") == 2 and stat(result, "tdmrep/parsed") == 1
    assert stat(result, "tdmrep/held") >= 1
    assert result.logged("tdmrep.json of", logging.WARNING)
    assert tdm_state(result, site).access is Access.PARSED


@pytest_twisted.inlineCallbacks
def test_a_file_unreachable_past_max_wait_drops_the_requests_when_enforced(origins):
    site = origins()
    site[TDMREP] = ERROR
    urls = [site.url("/reserved/a"), site.url("/open/a")]
    result = yield crawl(urls, ROBOTSTXT_MAX_WAIT=1, **ENFORCE)

    assert result.responses == []
    for url in urls:
        [error] = result.errors_for(url)
        assert isinstance(error, RobotsTxtUnreachable) and error.reason == "max_wait"
        assert error.robots_url == site.url(TDMREP)
    assert stat(result, "tdmrep/dropped_unreachable") == 2
    state = tdm_state(result, site)
    assert state.access is Access.UNREACHABLE and state.failures == len(site.requests_for(TDMREP)) >= 2


@pytest_twisted.inlineCallbacks
def test_an_unreachable_file_without_enforcement_lets_the_requests_go_on_unjudged(origins):
    site = origins()
    site[TDMREP] = ERROR
    urls = [site.url("/reserved/a"), site.url("/open/a")]
    result = yield crawl(urls, ROBOTSTXT_TDMREP=True)

    assert sorted(result.responses) == sorted(urls)
    assert tdm_meta(result) == {url: "unset" for url in urls}  # nothing known: the key is not set
    assert result.logged("TDM reservations unknown, its requests go on", logging.WARNING)
    assert tdm_state(result, site).access is Access.UNREACHABLE


@pytest_twisted.inlineCallbacks
def test_a_redirect_loop_is_no_file(origins):
    site = origins()
    site[TDMREP] = Redirect("/elsewhere.json")
    site["/elsewhere.json"] = Redirect(TDMREP)
    urls = [site.url("/reserved/a")]
    result = yield crawl(urls, **ENFORCE)

    assert result.responses == urls
    assert tdm_meta(result) == {urls[0]: None}
    assert stat(result, "tdmrep/redirect_failed") == 1
    assert len(site.requests_for(TDMREP)) == 1
    assert tdm_state(result, site).access is Access.UNAVAILABLE


@pytest_twisted.inlineCallbacks
def test_a_redirect_is_followed(origins):
    site = origins()
    site[TDMREP] = Redirect("/policies/tdm.json")
    site["/policies/tdm.json"] = Static(json.dumps(RULES).encode(), 200, {"Content-Type": "application/json"})
    urls = [site.url("/reserved/a")]
    result = yield crawl(urls, **ENFORCE)

    [error] = result.errors_for(urls[0])
    assert isinstance(error, RobotsTxtTdmReserved) and error.tdmrep_url == site.url("/policies/tdm.json")


@pytest_twisted.inlineCallbacks
def test_invalid_json_keeps_the_rules_before_it_and_says_so(origins):
    site = origins()
    site.tdmrep(b'[{"location": "/reserved/", "tdm-reservation": 1}, {"location": "/open/", oops}]')
    urls = [site.url("/reserved/a"), site.url("/open/a")]
    result = yield crawl(urls, **ENFORCE)

    assert result.responses == [urls[1]]
    assert [type(e) for e in result.errors_for(urls[0])] == [RobotsTxtTdmReserved]
    assert tdm_meta(result) == {urls[1]: None}
    [line] = [m for m in result.messages(logging.WARNING) if "invalid JSON" in m]
    assert site.url(TDMREP) in line and "1 rules read" in line
    assert stat(result, "tdmrep/invalid") == 1
    assert tdm_state(result, site).access is Access.PARSED


@pytest.mark.parametrize("damage", [b"[" * 5000, b'{"a":' * 2000 + b"1" + b"}" * 2000, b"[" * 100_000])
@pytest_twisted.inlineCallbacks
def test_a_file_nested_too_deep_keeps_the_rules_before_it_and_holds_nothing(origins, damage):
    """Nesting Python's JSON reader would recurse into until RecursionError: the file
    is read up to the level too deep, the origin is not held (enforced: a held origin's
    requests would be dropped after ROBOTSTXT_MAX_WAIT), nothing is logged at ERROR."""
    site = origins()
    site.tdmrep(b'[{"location": "/reserved/", "tdm-reservation": 1}, ' + damage + b"]")
    urls = [site.url("/reserved/a"), site.url("/open/a")]
    result = yield crawl(urls, ROBOTSTXT_MAX_WAIT=3, **ENFORCE)

    assert result.responses == [urls[1]]
    assert [type(e) for e in result.errors_for(urls[0])] == [RobotsTxtTdmReserved]
    [line] = [m for m in result.messages(logging.WARNING) if "nested deeper than" in m]
    assert site.url(TDMREP) in line and "1 rules read" in line
    assert result.messages(logging.ERROR) == []
    assert stat(result, "tdmrep/invalid") == 1 and stat(result, "tdmrep/parsed") == 1
    assert tdm_state(result, site).access is Access.PARSED
    assert len(site.requests_for(TDMREP)) == 1


@pytest_twisted.inlineCallbacks
def test_a_huge_file_is_cut_at_the_size_limit(origins):
    site = origins()
    size = 20 * 1024 * 1024
    huge = Huge(size, b'[{"location": "/reserved/", "tdm-reservation": 1}, ', fill=b'{"location": "/x/", '
                b'"tdm-reservation": 0}, ', suffix=b'{"location": "/open/", "tdm-reservation": 1}]',
                headers={"Content-Type": "application/json"})
    site[TDMREP] = huge
    urls = [site.url("/reserved/a"), site.url("/open/a")]
    result = yield crawl(urls, **ENFORCE)

    # The leading rule applies; the last one, past the limit, does not.
    assert result.responses == [urls[1]]
    assert [type(e) for e in result.errors_for(urls[0])] == [RobotsTxtTdmReserved]
    assert stat(result, "tdmrep/truncated") == 1
    assert huge.bytes_sent < size // 2  # the download was stopped
    assert result.logged("cut at the size limit", logging.WARNING)
    state = tdm_state(result, site)
    assert state.access is Access.PARSED and len(state.good_body) == 500 * 1024  # what a store keeps


def _store_settings(kind: str, tmp_path: Any, redis_url: str | None) -> dict[str, Any]:
    if kind == "disk":
        return {"ROBOTSTXT_STORE": "disk", "ROBOTSTXT_STORE_PATH": str(tmp_path / "store")}
    return {"ROBOTSTXT_STORE": "redis", "ROBOTSTXT_REDIS_URL": redis_url, "ROBOTSTXT_REDIS_CLUSTER": kind == "cluster",
            "ROBOTSTXT_REDIS_PREFIX": f"tdm-{tmp_path.name}"}


@pytest.mark.parametrize("kind", ["disk", "redis", "cluster"])
@pytest_twisted.inlineCallbacks
def test_the_state_is_saved_in_the_store_and_reused(origins, tmp_path, request, kind):
    fixture = {"redis": "redis_url", "cluster": "redis_cluster_url"}.get(kind)
    redis_url = request.getfixturevalue(fixture) if fixture else None
    site = origins()
    site.tdmrep(RULES)
    site.robots("User-agent: *\nDisallow: /private\n")
    urls = [site.url("/reserved/a"), site.url("/open/a")]
    settings = {**ENFORCE, **_store_settings(kind, tmp_path, redis_url)}
    first = yield crawl(urls, **settings)
    second = yield crawl(urls, **settings)

    for result in (first, second):
        assert result.responses == [urls[1]]
        assert [type(e) for e in result.errors_for(urls[0])] == [RobotsTxtTdmReserved]
    assert len(site.requests_for(TDMREP)) == 1 and len(site.requests_for("/robots.txt")) == 1
    assert stat(first, "tdmrep/store_saved") == 1 and stat(second, "tdmrep/store_hit") == 1
    assert stat(second, "store_hit") == 1  # the robots.txt's record, beside it under its own key
    assert tdm_meta(second) == {urls[1]: None}


@pytest_twisted.inlineCallbacks
def test_the_file_is_fetched_beside_the_robots_txt_not_after_it(origins):
    """The origin's robots.txt is answered only once its tdmrep.json was asked for: a
    new origin's requests wait for one round trip, not two."""
    site = origins()
    gate = Gate(Static(b"User-agent: *\nDisallow: /private\n", 200, {"Content-Type": "text/plain"}))
    site["/robots.txt"] = gate

    def tdmrep(origin: Any, hit: Any) -> Any:
        gate.open()
        return Static(json.dumps(RULES).encode(), 200, {"Content-Type": "application/json"})

    site[TDMREP] = Dynamic(tdmrep)
    urls = [site.url("/reserved/a"), site.url("/open/a"), site.url("/private/a")]
    result = yield crawl(urls, DOWNLOAD_TIMEOUT=10, **ENFORCE)

    assert gate.is_open and result.responses == [urls[1]]
    assert stat(result, "parsed") == 1 and stat(result, "tdmrep/parsed") == 1
    assert [type(e) for e in result.errors_for(urls[2])] == [RobotsTxtForbidden]


@pytest_twisted.inlineCallbacks
def test_a_setting_that_is_not_a_boolean_stops_the_crawl_at_start_up(origins):
    site = origins()
    with pytest.raises(RobotsTxtConfigError) as info:
        yield crawl([site.url("/a")], ROBOTSTXT_TDMREP="sometimes")
    assert "ROBOTSTXT_TDMREP" in str(info.value)
    assert site.requests == []



@pytest_twisted.inlineCallbacks
def test_requests_held_for_the_file_when_the_crawl_stops_are_crawled_once_after_a_resume(origins, tmp_path):
    """Ctrl-C while an enforced tdmrep.json is unreachable: with a JOBDIR the held requests go
    back to the scheduler, as those held for a robots.txt do, and the resumed crawl judges each once.
    Each is counted for the tdmrep.json it waited for, parked ones included: the stat, the close
    summary and the verdicts line name that file, none the robots.txt."""
    site = origins()
    site[TDMREP] = ERROR
    count = 40
    urls = [site.url(f"/open/{i}") for i in range(count)] + [site.url("/reserved/a")]
    settings = mw_settings(JOBDIR=str(tmp_path / "job"), ROBOTSTXT_RETRY_DELAY=60, ROBOTSTXT_RETRY_MAX_DELAY=60,
                           ROBOTSTXT_MAX_WAIT=600, **ENFORCE)
    TrackingSpider.latest = None
    crawling = run_crawl(TrackingSpider, settings, urls=urls, dont_filter=False)

    async def stop() -> Any:
        await until(lambda: _tdm_waiting() >= count + 1, "all held")
        crawler = TrackingSpider.latest.crawler  # type: ignore[union-attr]
        stop_async = getattr(crawler, "stop_async", None)  # Scrapy 2.14 and later
        await (deferred_from_coro(stop_async()) if stop_async is not None else crawler.stop())
        return await crawling

    stopped = yield defer.ensureDeferred(stop())

    assert stopped.stats["finish_reason"] == "shutdown"
    assert site.requests_for("/open/0") == [] and len(site.requests_for(TDMREP)) == 1
    assert stat(stopped, "tdmrep/requeued_on_close") == count + 1 and stat(stopped, "requeued_on_close") == 0
    (summary,) = [m for m in stopped.messages(logging.WARNING) if "Put back in the scheduler" in m]
    assert f"{count + 1} requests that waited for a tdmrep.json" in summary, summary
    (verdicts,) = [m for m in stopped.messages(logging.INFO) if m.startswith("robots.txt verdicts:")]
    assert f"{count + 1} requeued for their tdmrep.json" in verdicts, verdicts
    assert "for their robots.txt" not in verdicts, verdicts
    assert not stopped.errors

    site.tdmrep(RULES)
    resumed = yield run_crawl(TrackingSpider, settings, urls=urls, dont_filter=False)

    assert resumed.stats["finish_reason"] == "finished"
    assert sorted(resumed.responses) == sorted(urls[:count])
    assert [type(e) for e in resumed.errors_for(urls[-1])] == [RobotsTxtTdmReserved]
    hits = Counter(hit.path for hit in site.requests if hit.path.startswith(("/open/", "/reserved/")))
    assert hits == Counter({f"/open/{i}": 1 for i in range(count)})


@pytest_twisted.inlineCallbacks
def test_requests_waiting_for_the_file_are_parked_and_each_crawled_once(origins):
    """Many requests of an origin whose robots.txt is known and whose tdmrep.json is not yet:
    beyond CONCURRENT_REQUESTS_PER_DOMAIN they are parked outside the downloader, as for a
    robots.txt, and once the file arrives each is judged and crawled once."""
    site = origins()
    gate = Gate(Static(json.dumps(RULES).encode(), 200, {"Content-Type": "application/json"}))
    site[TDMREP] = gate
    count = 200
    urls = [site.url(f"/open/{i}") for i in range(count)] + [site.url(f"/reserved/{i}") for i in range(10)]
    settings = mw_settings(CONCURRENT_REQUESTS=16, CONCURRENT_REQUESTS_PER_DOMAIN=2,
                           **ENFORCE)
    TrackingSpider.latest = None
    crawling = run_crawl(TrackingSpider, settings, urls=urls, dont_filter=False)

    yield defer.ensureDeferred(until(lambda: _tdm_waiting() == len(urls), "every request waiting for the tdmrep.json"))
    parked = _running_middleware().tdm.parking.count
    gate.open()
    result = yield crawling

    assert parked >= len(urls) - 2 * 2  # all but those waiting in the downloader
    assert result.stats["finish_reason"] == "finished"
    assert sorted(result.responses) == sorted(urls[:count])
    assert len(result.errors) == 10 and {type(e.exception) for e in result.errors} == {RobotsTxtTdmReserved}
    hits = Counter(hit.path for hit in site.requests if hit.path.startswith(("/open/", "/reserved/")))
    assert hits == Counter({f"/open/{i}": 1 for i in range(count)})
    assert len(site.requests_for(TDMREP)) == 1


@pytest_twisted.inlineCallbacks
def test_an_html_page_in_place_of_the_file_is_no_file(origins):
    """Many sites answer every path with a page: that is no tdmrep.json, not a broken one."""
    site = origins()
    site[TDMREP] = Static(b"<!doctype html><html><body>Welcome</body></html>", 200,
                          {"Content-Type": "text/html; charset=utf-8"})
    urls = [site.url("/reserved/a")]
    result = yield crawl(urls, **ENFORCE)

    assert result.responses == urls and tdm_meta(result) == {urls[0]: None}
    assert stat(result, "tdmrep/unavailable") == 1 and stat(result, "tdmrep/invalid") == 0
    assert not [m for m in result.messages(logging.WARNING) if "tdmrep.json" in m]
    state = tdm_state(result, site)
    assert state.access is Access.UNAVAILABLE and state.outcome.reason == "an HTML page"


@pytest_twisted.inlineCallbacks
def test_a_file_served_with_an_html_content_type_is_read(origins):
    """The body decides, not the Content-Type: a tdmrep.json a server labels text/html is obeyed."""
    site = origins()
    site[TDMREP] = Static(json.dumps(RULES).encode(), 200, {"Content-Type": "text/html"})
    urls = [site.url("/reserved/a")]
    result = yield crawl(urls, **ENFORCE)

    assert [type(e) for e in result.errors_for(urls[0])] == [RobotsTxtTdmReserved]
    assert tdm_state(result, site).access is Access.PARSED


@pytest_twisted.inlineCallbacks
def test_the_tdmrep_json_rule_is_a_source_of_the_responses_preferences(origins):
    """The entry the tdmrep.json lifecycle puts in request meta is what the response's
    combined preferences read: a reserved URL's answer is train-ai=n from that entry,
    beside a Content-Usage header that says y (n wins), and a URL the file does not
    reserve has no tdmrep.json statement saying n."""
    site = origins()
    site.tdmrep(RULES)
    site["/reserved/a"] = Static(b"<html>a</html>", 200, {"Content-Type": "text/html", "Content-Usage": "train-ai=y"})
    urls = [site.url("/reserved/a"), site.url("/open/x.jpg")]

    class Spider(TrackingSpider):
        name = "tdm-prefs"
        seen: dict[str, Any] = {}

        def parse(self, response: Any, **kwargs: Any) -> Any:
            type(self).seen[response.url] = response.meta.get("robotstxt_preferences")
            yield from super().parse(response, **kwargs)

    Spider.seen = {}
    result = yield run_crawl(Spider, mw_settings(ROBOTSTXT_TDMREP=True), urls=urls)

    assert sorted(result.responses) == sorted(urls)
    reserved = Spider.seen[urls[0]]
    assert reserved.get("train-ai") == "n"
    [where] = reserved.sources_of("train-ai")
    assert where.startswith(site.url(TDMREP)) and "/reserved/" in where
    assert [s.source for s in reserved.statements] == ["tdmrep.json", "content-usage-header"]
    open_jpg = Spider.seen[urls[1]]
    assert open_jpg is not None and open_jpg.get("train-ai") == "y"  # the rule says tdm-reservation 0
    assert [s.source for s in open_jpg.statements] == ["tdmrep.json"]
