"""The release memo of a bare allowed verdict (``scrapy_rfc9309.enforcement.release_memo``).
In real crawls with the add-on: taken where nothing reads more than the count (the close summary still
counts every request, and a teller of every verdict, a ``robotstxt_verdict`` receiver or the ledger, is
told each one, with the rule that allowed it), and bypassed for ``judge`` where an allowed verdict
carries something (a usage preference set in the request's meta). On a middleware whose states are put in its
cache: what ends a release (another agent, a state put in the cache, its state's expiry), and what it
makes up (the count, the cache's least-recently-used order)."""

from __future__ import annotations

import time
from typing import Any

import pytest_twisted
from crawl import ListSpider, run_crawl
from scrapy import Request

from scrapy_rfc9309.core.matcher import Rule
from scrapy_rfc9309.core.verdict import Judgement, Kind
from scrapy_rfc9309.enforcement.release_memo import MAX_RELEASES, REFRESH
from scrapy_rfc9309.exceptions import RobotsTxtForbidden
from scrapy_rfc9309.meta import USAGE_META
from scrapy_rfc9309.signals import robotstxt_verdict

SETTINGS: dict[str, Any] = {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "LOG_LEVEL": "INFO"}
PAGES = [f"/p/{n}" for n in range(6)]


class MetaSpider(ListSpider):
    """Records the usage preference each response's request carries. Starts with the first page of
    each origin, and asks for the others of the origin (``then``) from its response: those find its
    robots.txt known."""

    name = "meta"
    usage: dict[str, Any]
    then: dict[str, list[str]]

    def parse(self, response: Any, **kwargs: Any) -> Any:
        self.usage[response.url] = response.meta.get(USAGE_META)
        yield from super().parse(response, **kwargs)
        for url in self.then.pop(response.url, []):
            yield Request(url, callback=self.parse, errback=self.on_error)


class VerdictSpider(MetaSpider):
    """Also records every verdict told (the ``robotstxt_verdict`` signal)."""

    name = "verdicts"

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.verdicts = []
        crawler.signals.connect(spider.judged, signal=robotstxt_verdict)
        return spider

    def judged(self, request: Any, judgement: Judgement) -> None:
        self.verdicts.append(judgement)


def _sites(origins: Any) -> tuple[Any, Any]:
    plain = origins("127.0.0.1")
    plain.robots("User-agent: *\nDisallow: /private\nAllow: /\n")
    usage = origins("127.0.0.2")
    usage.robots("User-agent: *\nDisallow: /private\nContent-Usage: train-ai=n\n")
    return plain, usage


def _urls(spider: type[MetaSpider], plain: Any, usage: Any) -> list[str]:
    spider.usage = {}
    spider.then = {o.url(PAGES[0]): [o.url(p) for p in [*PAGES[1:], "/private/x"]] for o in (plain, usage)}
    return list(spider.then)


@pytest_twisted.inlineCallbacks
def test_without_a_teller_every_verdict_is_counted_and_usage_is_still_set(origins):
    plain, usage = _sites(origins)
    result = yield run_crawl(MetaSpider, SETTINGS, urls=_urls(MetaSpider, plain, usage))
    assert sorted(result.responses) == sorted(o.url(p) for o in (plain, usage) for p in PAGES)
    assert sorted(e.url for e in result.errors) == sorted(o.url("/private/x") for o in (plain, usage))
    assert {type(e.exception) for e in result.errors} == {RobotsTxtForbidden}
    # Allowed requests judged by the release are counted as those judged in full.
    assert result.logged("robots.txt verdicts: 12 allowed, 2 disallowed by robots.txt")
    # An allowed verdict that carries a usage preference is judged in full: the request carries it.
    assert all(MetaSpider.usage[plain.url(p)] is None for p in PAGES)
    assert all(MetaSpider.usage[usage.url(p)].denies("train-ai") for p in PAGES), MetaSpider.usage


@pytest_twisted.inlineCallbacks
def test_a_verdict_receiver_gets_every_allowed_verdict_with_its_rule(origins):
    plain, usage = _sites(origins)
    result = yield run_crawl(VerdictSpider, SETTINGS, urls=_urls(VerdictSpider, plain, usage))
    spider = result.crawler.spider
    allowed = [j for j in spider.verdicts if j.kind is Kind.ALLOWED]
    assert sorted(j.url for j in allowed) == sorted(result.responses) and len(allowed) == 12
    assert {j.rule for j in allowed if j.url.startswith(plain.url("/"))} == {Rule(True, "/", 3)}
    assert sum(j.kind is Kind.FORBIDDEN for j in spider.verdicts) == 2
    assert result.logged("robots.txt verdicts: 12 allowed, 2 disallowed by robots.txt")


# ---- the release's own checks, on a middleware of a crawler that does not crawl (its states put in
# its cache, requests judged by process_request at once)

ROBOTS = b"User-agent: *\nDisallow: /private\n\nUser-agent: otherbot\nDisallow: /\n"


def _middleware(**settings: Any) -> Any:
    from scrapy.utils.test import get_crawler

    from scrapy_rfc9309.components.robotstxt_middleware import RobotsTxtMiddleware

    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True, "DOWNLOADER_MIDDLEWARES": {
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None}, **settings})
    return RobotsTxtMiddleware.from_crawler(crawler)


def _put(mw: Any, body: bytes, host: str = "example.com", lifetime: float = 3600.0) -> Any:
    from scrapy_rfc9309.core.origins import Origin
    from scrapy_rfc9309.core.state import Access, FetchOutcome, OriginState, Policy

    origin = Origin.from_url(f"https://{host}/")
    now = time.time()
    state = OriginState.initial(FetchOutcome(Access.PARSED, f"https://{host}/robots.txt", 200, body), now,
                                Policy(ttl=lifetime))
    mw.states.cache.put(origin, state)
    return origin


def _judged(mw: Any, url: str, **kwargs: Any) -> str:
    try:
        result = mw.process_request(Request(url, **kwargs))
    except RobotsTxtForbidden:
        return "forbidden"
    assert result is None
    return "allowed"


def test_a_release_is_made_by_a_bare_allowed_verdict_and_answers_the_next_requests():
    mw = _middleware()
    _put(mw, ROBOTS)
    assert _judged(mw, "https://example.com/a") == "allowed"
    assert list(mw.releases) == ["https://example.com"]
    for n in range(300):
        assert _judged(mw, f"https://example.com/p/{n}") == "allowed"
    assert _judged(mw, "https://example.com/private/1") == "forbidden"
    # Refreshed every REFRESH requests: what it answered is counted then, and the rest at the close.
    assert mw.tellers.tally.allowed > 300 - REFRESH
    mw.releases.flush()
    assert mw.tellers.tally.allowed == 301


def test_a_release_tells_the_tellers_of_allowed_verdicts_each_verdict_with_its_rule():
    from scrapy import signals

    mw = _middleware()
    told: list[Judgement] = []
    mw.crawler.signals.connect(lambda request, judgement: told.append(judgement), signal=robotstxt_verdict, weak=False)
    mw.crawler.signals.send_catch_log(signals.spider_opened, spider=None)  # the verdict receiver is found then
    _put(mw, b"User-agent: *\nDisallow: /private\nAllow: /p/\n")
    urls = ["https://example.com/a", *(f"https://example.com/p/{n}" for n in range(200)), "https://example.com/b"]
    for url in urls:
        assert _judged(mw, url) == "allowed"
    assert _judged(mw, "https://example.com/private/1") == "forbidden"
    assert list(mw.releases) == ["https://example.com"]  # taken with a teller too
    # Each request told once, with the verdict judge() gives: the Allow rule that allowed it, or none.
    assert [(j.kind, j.url, j.rule) for j in told] == [
        *((Kind.ALLOWED, url, Rule(True, "/p/", 3) if "/p/" in url else None) for url in urls),
        (Kind.FORBIDDEN, "https://example.com/private/1", Rule(False, "/private", 2))]
    mw.releases.flush()
    assert mw.tellers.tally.allowed == len(urls)


def test_a_request_with_a_user_agent_header_is_judged_for_its_own_agent():
    mw = _middleware()
    _put(mw, ROBOTS)
    assert _judged(mw, "https://example.com/a") == "allowed"
    assert _judged(mw, "https://example.com/b", headers={"User-Agent": "OtherBot/2"}) == "forbidden"
    assert _judged(mw, "https://example.com/c") == "allowed"


def test_a_request_with_its_own_user_agent_header_makes_no_release_for_the_crawl_s_agent():
    """The opposite order: a request of another agent that its group allows does not make the release
    that would answer the crawl's own agent's next requests with that agent's rules."""
    mw = _middleware()
    _put(mw, b"User-agent: *\nDisallow: /private\n\nUser-agent: otherbot\nAllow: /\n")
    assert _judged(mw, "https://example.com/private/1", headers={"User-Agent": "OtherBot/2"}) == "allowed"
    assert _judged(mw, "https://example.com/private/2") == "forbidden"
    assert _judged(mw, "https://example.com/a") == "allowed"  # the crawl's own agent makes it
    assert list(mw.releases) == ["https://example.com"]
    assert _judged(mw, "https://example.com/private/3") == "forbidden"
    assert _judged(mw, "https://example.com/private/4", headers={"User-Agent": "OtherBot/2"}) == "allowed"


def test_the_releases_are_bounded_and_what_the_forgotten_ones_answered_is_counted():
    mw = _middleware(ROBOTSTXT_CACHE_SIZE=MAX_RELEASES + 10)
    hosts = [f"site{n}.example" for n in range(MAX_RELEASES + 1)]
    for host in hosts:
        _put(mw, ROBOTS, host=host)
    for index, host in enumerate(hosts):
        for page in ("a", "b"):  # the first makes the origin's release, the second is answered by it
            assert _judged(mw, f"https://{host}/{page}") == "allowed"
        # kept up to the bound, then the oldest quarter is forgotten (what it answered counted first)
        assert len(mw.releases) == (index + 1 if index < MAX_RELEASES else MAX_RELEASES - MAX_RELEASES // 4 + 1)
    assert list(mw.releases)[-1] == f"https://{hosts[-1]}"
    assert next(iter(mw.releases)) == f"https://{hosts[MAX_RELEASES // 4]}"
    mw.releases.flush()
    assert mw.tellers.tally.allowed == 2 * len(hosts)


def test_a_state_put_in_the_cache_replaces_the_release_at_once():
    mw = _middleware()
    _put(mw, ROBOTS)
    assert _judged(mw, "https://example.com/later/1") == "allowed"
    _put(mw, b"User-agent: *\nDisallow: /later\n")  # a newer version (fetched, or told by another process)
    assert _judged(mw, "https://example.com/later/2") == "forbidden"
    _put(mw, ROBOTS, host="other.example")  # another origin's state: the release is made again
    assert _judged(mw, "https://example.com/later/3") == "forbidden"
    assert _judged(mw, "https://example.com/now") == "allowed"


def test_past_its_state_s_expiry_a_release_answers_nothing():
    mw = _middleware()
    origin = _put(mw, ROBOTS)
    assert _judged(mw, "https://example.com/a") == "allowed"
    release = mw.releases["https://example.com"]
    release.expires_at = time.time() - 1  # as if its state had expired meanwhile
    assert _judged(mw, "https://example.com/b") == "allowed"  # judged in full (the state is fresh)
    remade = mw.releases["https://example.com"]
    assert remade is not release and remade.expires_at == mw.states.cache.get(origin).expires_at
    assert remade.test is remade.ruling.passes  # the memo's test IS its ruling's


def test_an_origin_answered_by_its_release_stays_recently_used_in_the_cache():
    mw = _middleware(ROBOTSTXT_CACHE_SIZE=2)
    first = _put(mw, ROBOTS, host="first.example")
    second = _put(mw, ROBOTS, host="second.example")
    for n in range(REFRESH + 2):  # more than one release's worth: refreshed (the state used) once at least
        assert _judged(mw, f"https://first.example/p/{n}") == "allowed"
    _put(mw, ROBOTS, host="third.example")  # evicts the least recently used
    assert first in mw.states.cache and second not in mw.states.cache



def test_a_release_is_kept_only_for_a_plain_ruling_and_a_text_that_names_one_origin():
    from scrapy_rfc9309.core.verdict import Enforced, Ruling

    mw = _middleware()
    origin = _put(mw, ROBOTS)
    robots = mw.states.cache.get(origin)
    plain = Ruling(robots, None, "Scrapy", "scrapy", Enforced(mw.policy))
    assert plain.plain
    mw.releases.remember("https://example.com?q=/a", origin, plain, False)  # its text runs into the query
    assert list(mw.releases) == []
    not_plain = Ruling(robots, None, "Scrapy", "scrapy", Enforced(mw.policy, tdmrep=True))
    assert not not_plain.plain
    mw.releases.remember("https://example.com/a", origin, not_plain, False)
    assert list(mw.releases) == []
    mw.releases.remember("https://example.com/a", origin, plain, False)
    assert list(mw.releases) == ["https://example.com"]
    assert mw.releases["https://example.com"].test is plain.passes
