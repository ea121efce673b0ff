"""The response-side usage sources in real crawls against local origins: the ``Content-Usage``,
``tdm-reservation``/``tdm-policy`` and ``X-Robots-Tag`` headers, the head's meta tags
(``ROBOTSTXT_USAGE_META``), robots.txt and a tdmrep.json match in request meta, each alone and in
conflict; ``response.meta["robotstxt_preferences"]``, the ``robotstxt_usage_preferences`` signal,
``ROBOTSTXT_USAGE_DENY`` on responses, and ``NofollowMiddleware``."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_twisted
from crawl import ListSpider, run_crawl
from scrapy import Request
from servers import Behaviour, Origin
from servers.origins import respond

from scrapy_rfc9309 import signals as rfc_signals
from scrapy_rfc9309.components.robotstxt_middleware import PREFERENCES_META
from scrapy_rfc9309.exceptions import RobotsTxtUsageDenied, RobotsTxtUsageDeniedByResponse
from scrapy_rfc9309.usage.preferences import Preferences

ADDON: dict[str, Any] = {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "ROBOTSTXT_USER_AGENT": "MyBot"}
META_ON: dict[str, Any] = {**ADDON, "ROBOTSTXT_USAGE_META": True}
NOFOLLOW: dict[str, Any] = {"SPIDER_MIDDLEWARES": {"scrapy_rfc9309.NofollowMiddleware": 800}}


@dataclass
class Served(Behaviour):
    """A response with header lines given as a list (a name may repeat) and an HTML head."""

    headers: list[tuple[str, str]]
    head: str = ""
    links: tuple[str, ...] = ()
    content_type: str = "text/html; charset=utf-8"
    body: bytes | None = None

    def handle(self, origin: Origin, request: Any, hit: Any) -> None:
        for name, value in self.headers:
            request.responseHeaders.addRawHeader(name, value)
        links = "".join(f'<a href="{href}">{href}</a>' for href in self.links)
        body = self.body if self.body is not None else (
            f"<!DOCTYPE html><html><head><title>t</title>{self.head}</head><body>{links}</body></html>".encode()
        )
        respond(request, 200, {"Content-Type": self.content_type}, body)


@dataclass
class Match:
    """What the tdmrep.json part sets in request meta ``robotstxt_tdmrep``."""

    reserved: bool
    policy: str | None = None
    location: str = "/"
    index: int = 0
    url: str = "http://h/.well-known/tdmrep.json"


class PrefSpider(ListSpider):
    """Records ``response.meta["robotstxt_preferences"]`` per URL and the signals sent."""

    name = "prefs"

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.prefs = {}
        spider.signalled = []
        crawler.signals.connect(spider.on_preferences, signal=rfc_signals.robotstxt_usage_preferences)
        return spider

    def on_preferences(self, request: Any, response: Any, preferences: Any, **kwargs: Any) -> None:
        self.signalled.append((response.url, preferences))

    def parse(self, response: Any, **kwargs: Any) -> Any:
        self.prefs[response.url] = response.meta.get(PREFERENCES_META)
        yield from super().parse(response, **kwargs)


def prefs_of(result: Any, url: str) -> Preferences:
    found = result.crawler.spider.prefs[url]
    assert isinstance(found, Preferences), found
    return found


# --------------------------------------------------------------------------- each source alone


@pytest_twisted.inlineCallbacks
def test_the_content_usage_header_alone(origins):
    a = origins()
    a["/p"] = Served([("Content-Usage", "train-ai=n, search=y;why=1, bots=n")])
    a["/plain"] = Served([])

    result = yield run_crawl(PrefSpider, ADDON, urls=[a.url("/p"), a.url("/plain")])

    prefs = prefs_of(result, a.url("/p"))
    assert prefs.get("train-ai") == "n" and prefs.denies("train-ai")
    assert prefs.get("search") == "y"
    assert prefs.get("bots") == "n"  # a label outside the vocabulary, kept
    assert prefs.sources_of("train-ai") == ("Content-Usage header",)
    (statement,) = prefs.statements
    assert statement.text == "train-ai=n, search=y;why=1, bots=n"
    # Nothing is dropped by default; a response without any source has no key and no signal.
    assert sorted(result.responses) == [a.url("/p"), a.url("/plain")]
    assert result.crawler.spider.prefs[a.url("/plain")] is None
    assert [url for url, _ in result.crawler.spider.signalled] == [a.url("/p")]


@pytest_twisted.inlineCallbacks
def test_the_tdm_headers_alone(origins):
    a = origins()
    a["/reserved"] = Served([("tdm-reservation", "1"), ("tdm-policy", "https://h/policy.json")])
    a["/free"] = Served([("TDM-Reservation", "0"), ("tdm-policy", "https://h/policy.json")])

    result = yield run_crawl(PrefSpider, ADDON, urls=[a.url("/reserved"), a.url("/free")])

    reserved = prefs_of(result, a.url("/reserved"))
    assert reserved.denies("train-ai")
    assert reserved.sources_of("train-ai") == ("tdm-reservation header",)
    assert reserved.tdm_policy == "https://h/policy.json"
    free = prefs_of(result, a.url("/free"))
    assert free.get("train-ai") == "y"
    assert free.tdm_policy is None


@pytest_twisted.inlineCallbacks
def test_x_robots_tag_alone_several_lines_and_an_ignored_date(origins):
    a = origins()
    a["/p"] = Served([("X-Robots-Tag", "noarchive, unavailable_after: Wednesday, 03-Nov-2027 15:00:00 GMT"),
                      ("X-Robots-Tag", "noai, nofollow")])

    result = yield run_crawl(PrefSpider, ADDON, urls=[a.url("/p")])

    prefs = prefs_of(result, a.url("/p"))
    assert prefs.directives == {"noarchive", "noai", "nofollow"}
    assert prefs.nofollow
    assert prefs.denies("train-ai")
    assert prefs.get("search") is None
    assert prefs.sources_of("train-ai") == ("X-Robots-Tag header",)


@pytest_twisted.inlineCallbacks
def test_noimageai_denies_training_on_an_image_only(origins):
    a = origins()
    a["/img.png"] = Served([("X-Robots-Tag", "noimageai")], content_type="image/png", body=b"\x89PNG")
    a["/page"] = Served([("X-Robots-Tag", "noimageai")])

    result = yield run_crawl(PrefSpider, ADDON, urls=[a.url("/img.png"), a.url("/page")])

    assert prefs_of(result, a.url("/img.png")).denies("train-ai")
    page = prefs_of(result, a.url("/page"))
    assert page.get("train-ai") is None
    assert page.directives == {"noimageai"}


@pytest_twisted.inlineCallbacks
def test_meta_tags_are_read_only_when_turned_on(origins):
    a = origins()
    head = ('<meta name="robots" content="noindex, noai"><meta name="tdm-reservation" content="1">'
            '<meta name="tdm-policy" content="https://h/p.json">')
    a["/p"] = Served([], head=head)

    off = yield run_crawl(PrefSpider, ADDON, urls=[a.url("/p")])
    on = yield run_crawl(PrefSpider, META_ON, urls=[a.url("/p")])

    assert off.crawler.spider.prefs[a.url("/p")] is None
    prefs = prefs_of(on, a.url("/p"))
    assert prefs.denies("train-ai") and prefs.denies("search")
    assert prefs.sources_of("train-ai") == ('<meta name="tdm-reservation">', '<meta name="robots">')
    assert prefs.sources_of("search") == ('<meta name="robots">',)
    assert prefs.tdm_policy == "https://h/p.json"


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
@pytest_twisted.inlineCallbacks
def test_a_page_in_utf_16_with_a_byte_order_mark_and_no_charset_has_its_meta_tags_read(origins, encoding):
    a = origins()
    bom = b"\xff\xfe" if encoding == "utf-16-le" else b"\xfe\xff"
    html = '<!DOCTYPE html><html><head><title>t</title><meta name="robots" content="noai"></head><body></body></html>'
    a["/p"] = Served([], content_type="text/html", body=bom + html.encode(encoding))

    result = yield run_crawl(PrefSpider, META_ON, urls=[a.url("/p")])

    prefs = prefs_of(result, a.url("/p"))
    assert prefs.denies("train-ai")
    assert prefs.sources_of("train-ai") == ('<meta name="robots">',)


@pytest_twisted.inlineCallbacks
def test_robotstxt_alone_names_its_line(origins):
    a = origins()
    a.robots("User-agent: *\nAllow: /\nContent-Usage: train-ai=n\n")

    result = yield run_crawl(PrefSpider, ADDON, urls=[a.url("/p")])

    prefs = prefs_of(result, a.url("/p"))
    assert prefs.denies("train-ai")
    assert prefs.sources_of("train-ai") == (f"{a.url('/robots.txt')} line 3 (Content-Usage)",)


@pytest_twisted.inlineCallbacks
def test_a_tdmrep_match_in_request_meta_alone(origins):
    a = origins()
    match = Match(True, "https://h/policy", "/books/*", 3, a.url("/.well-known/tdmrep.json"))
    request = Request(a.url("/books/1"), meta={"robotstxt_tdmrep": match}, dont_filter=True)
    none = Request(a.url("/other"), meta={"robotstxt_tdmrep": None}, dont_filter=True)

    result = yield run_crawl(PrefSpider, ADDON, urls=[request, none])

    prefs = prefs_of(result, a.url("/books/1"))
    assert prefs.denies("train-ai")
    assert prefs.sources_of("train-ai") == (f"{a.url('/.well-known/tdmrep.json')} entry 3 (/books/*)",)
    assert prefs.tdm_policy == "https://h/policy"
    assert result.crawler.spider.prefs[a.url("/other")] is None


# --------------------------------------------------------------------------- pairs in conflict

ROBOTS_Y = "User-agent: *\nAllow: /\nContent-Usage: train-ai=y\n"
ROBOTS_N = "User-agent: *\nAllow: /\nContent-Usage: train-ai=n\n"


@pytest.mark.parametrize(
    ("robots", "headers", "head", "tdmrep", "value", "sources"),
    [
        # The vocabulary's rule between sources: any n wins, whichever source says it.
        (ROBOTS_N, [("Content-Usage", "train-ai=y")], "", None, "n", ("robots.txt",)),
        (ROBOTS_Y, [("Content-Usage", "train-ai=n")], "", None, "n", ("Content-Usage header",)),
        (ROBOTS_Y, [("X-Robots-Tag", "noai")], "", None, "n", ("X-Robots-Tag header",)),
        (ROBOTS_Y, [], '<meta name="robots" content="noai">', None, "n", ('<meta name="robots">',)),
        (None, [("Content-Usage", "train-ai=y"), ("tdm-reservation", "1")], "", None, "n",
         ("tdm-reservation header",)),
        (None, [("Content-Usage", "train-ai=y")], "", True, "n", ("tdmrep.json",)),
        # Both allowing: y, from both.
        (ROBOTS_Y, [("Content-Usage", "train-ai=y")], "", None, "y", ("robots.txt", "Content-Usage header")),
        # Within TDMRep the header supersedes tdmrep.json, and the meta tag the header.
        (None, [("tdm-reservation", "0")], "", True, "y", ("tdm-reservation header",)),
        (None, [("tdm-reservation", "1")], '<meta name="tdm-reservation" content="0">', None, "y",
         ('<meta name="tdm-reservation">',)),
        (None, [("tdm-reservation", "0")], '<meta name="tdm-reservation" content="1">', False, "n",
         ('<meta name="tdm-reservation">',)),
    ],
    ids=["robots-n-header-y", "robots-y-header-n", "robots-y-xrobots-noai", "robots-y-meta-noai",
         "header-y-tdm-header-1", "header-y-tdmrep-json-1", "robots-y-header-y", "tdmrep-json-1-tdm-header-0",
         "tdm-header-1-tdm-meta-0", "tdmrep-json-0-header-0-meta-1"],
)
@pytest_twisted.inlineCallbacks
def test_sources_in_conflict(origins, robots, headers, head, tdmrep, value, sources):
    a = origins()
    if robots is not None:
        a.robots(robots)
    a["/p"] = Served(headers, head=head)
    meta = {} if tdmrep is None else {"robotstxt_tdmrep": Match(tdmrep, url=a.url("/.well-known/tdmrep.json"))}

    result = yield run_crawl(PrefSpider, META_ON, urls=[Request(a.url("/p"), meta=meta, dont_filter=True)])

    prefs = prefs_of(result, a.url("/p"))
    assert prefs.get("train-ai") == value
    found = prefs.sources_of("train-ai")
    assert len(found) == len(sources)
    for where, expected in zip(found, sources, strict=True):
        assert expected in where, (found, sources)
    # Every source is reported, the superseded TDMRep ones too.
    assert len(prefs.statements) == (robots is not None) + (tdmrep is not None) + bool(head) + len(
        {name.lower().replace("tdm-policy", "tdm-reservation") for name, _ in headers})


@pytest_twisted.inlineCallbacks
def test_pages_with_the_same_headers_keep_their_own_robotstxt_and_tdmrep_preferences(origins):
    a = origins()
    a.robots("User-agent: *\nAllow: /\nContent-Usage: train-ai=n\nContent-Usage: /ok/ train-ai=y\n")
    for path in ("/a", "/ok/b", "/ok/c"):
        a[path] = Served([("Content-Usage", "search=y")])
    reserved = Request(a.url("/ok/c"), meta={"robotstxt_tdmrep": Match(True, url="u")}, dont_filter=True)

    result = yield run_crawl(PrefSpider, {**ADDON, "CONCURRENT_REQUESTS": 1}, urls=[a.url("/a"), a.url("/ok/b"),
                                                                                     reserved])

    robots = a.url("/robots.txt")
    assert prefs_of(result, a.url("/a")).sources_of("train-ai") == (f"{robots} line 3 (Content-Usage)",)
    assert prefs_of(result, a.url("/a")).denies("train-ai")
    assert prefs_of(result, a.url("/ok/b")).sources_of("train-ai") == (f"{robots} line 4 (Content-Usage)",)
    assert prefs_of(result, a.url("/ok/b")).get("train-ai") == "y"
    assert prefs_of(result, a.url("/ok/c")).sources_of("train-ai") == ("u entry 0 (/)",)
    for path in ("/a", "/ok/b", "/ok/c"):
        assert prefs_of(result, a.url(path)).sources_of("search") == ("Content-Usage header",)


# --------------------------------------------------------------------------- agent-scoped forms


@pytest.mark.parametrize(("agent", "expected"), [("MyBot", {"noai"}), ("OtherBot/2.0", {"noindex", "nofollow"}),
                                                 ("ThirdBot", set())])
@pytest_twisted.inlineCallbacks
def test_agent_scoped_x_robots_tag_and_meta(origins, agent, expected):
    a = origins()
    a["/p"] = Served([("X-Robots-Tag", "mybot: noai"), ("X-Robots-Tag", "otherbot: noindex, nofollow")])
    a["/m"] = Served([], head='<meta name="MyBot" content="noai"><meta name="otherbot" content="none">')

    result = yield run_crawl(PrefSpider, {**META_ON, "ROBOTSTXT_USER_AGENT": agent}, urls=[a.url("/p"), a.url("/m")])

    for path in ("/p", "/m"):
        found = result.crawler.spider.prefs[a.url(path)]
        if not expected:
            assert found is None
            continue
        assert found.directives == expected, path
        assert found.denies("train-ai") is ("noai" in expected)
        assert found.denies("search") is ("noindex" in expected)
    if agent == "MyBot":
        assert prefs_of(result, a.url("/m")).sources_of("train-ai") == ('<meta name="mybot">',)


@pytest_twisted.inlineCallbacks
def test_the_agent_is_the_one_the_request_obeys_robotstxt_as(origins):
    a = origins()
    a["/p"] = Served([("X-Robots-Tag", "mybot: noai"), ("X-Robots-Tag", "otherbot: noindex")])
    a["/q"] = Served([("X-Robots-Tag", "mybot: noai"), ("X-Robots-Tag", "otherbot: noindex")])
    settings = {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "USER_AGENT": "Mozilla/5.0 (compatible; OtherBot/1.0)"}
    by_meta = Request(a.url("/q"), meta={"robotstxt_user_agent": "MyBot"}, dont_filter=True)

    result = yield run_crawl(PrefSpider, settings, urls=[a.url("/p"), by_meta])

    # The User-Agent header names OtherBot; the request's robotstxt_user_agent meta key names MyBot.
    assert prefs_of(result, a.url("/p")).directives == {"noindex"}
    assert prefs_of(result, a.url("/q")).directives == {"noai"}


# --------------------------------------------------------------------------- malformed values


@pytest_twisted.inlineCallbacks
def test_malformed_values_are_ignored_with_one_warning_each_and_the_crawl_goes_on(origins):
    a = origins()
    for n in range(3):
        a[f"/bad{n}"] = Served([("Content-Usage", "Train-AI=n"), ("tdm-reservation", "2"), ("X-Robots-Tag", "noai")])
    a["/good"] = Served([("Content-Usage", "train-ai=y")])
    urls = [a.url(f"/bad{n}") for n in range(3)] + [a.url("/good")]

    result = yield run_crawl(PrefSpider, {**ADDON, "CONCURRENT_REQUESTS": 1}, urls=urls)

    assert sorted(result.responses) == sorted(urls)
    assert result.stats["robotstxt/usage_malformed"] == 6
    warnings = result.messages(logging.WARNING, "scrapy_rfc9309")
    usage = [m for m in warnings if "Content-Usage header" in m]
    tdm = [m for m in warnings if "tdm-reservation header" in m]
    assert len(usage) == 1 and len(tdm) == 1, warnings
    # The warning names the first malformed response (Scrapy 2.13 hands start requests out last first).
    first_bad = next(url for url in result.responses if "/bad" in url)
    assert "Structured Field Dictionary" in usage[0] and first_bad in usage[0]
    assert "must be 0 or 1" in tdm[0]
    for n in range(3):
        prefs = prefs_of(result, a.url(f"/bad{n}"))
        # The malformed sources state nothing; the well-formed X-Robots-Tag still counts.
        assert prefs.sources_of("train-ai") == ("X-Robots-Tag header",)
        assert len(prefs.malformed) == 2
    assert prefs_of(result, a.url("/good")).get("train-ai") == "y"


# --------------------------------------------------------------------------- the head's bound


@pytest_twisted.inlineCallbacks
def test_a_head_larger_than_the_bound_is_read_as_far_as_the_bound(origins):
    a = origins()
    padding = "<!-- " + "x" * 5000 + " -->"
    a["/late"] = Served([], head=padding + '<meta name="robots" content="noai">')
    a["/early"] = Served([], head='<meta name="robots" content="noai">' + padding)
    settings = {**META_ON, "ROBOTSTXT_USAGE_META_MAX_BYTES": 2048}

    bounded = yield run_crawl(PrefSpider, settings, urls=[a.url("/late"), a.url("/early")])
    wide = yield run_crawl(PrefSpider, {**settings, "ROBOTSTXT_USAGE_META_MAX_BYTES": 8192}, urls=[a.url("/late")])

    assert bounded.crawler.spider.prefs[a.url("/late")] is None
    assert bounded.stats["robotstxt/usage_meta_cut"] == 2
    assert prefs_of(bounded, a.url("/early")).denies("train-ai")
    assert prefs_of(wide, a.url("/late")).denies("train-ai")
    assert "robotstxt/usage_meta_cut" not in wide.stats


# --------------------------------------------------------------------------- enforcement


@pytest_twisted.inlineCallbacks
def test_usage_deny_keeps_denied_responses_from_the_spider(origins):
    a = origins()
    a["/header"] = Served([("Content-Usage", "train-ai=n")])
    a["/xrobots"] = Served([("X-Robots-Tag", "noai")])
    a["/meta"] = Served([], head='<meta name="robots" content="noai">')
    a["/allowed"] = Served([("Content-Usage", "train-ai=y, search=n")])
    a["/plain"] = Served([])
    urls = [a.url(p) for p in ("/header", "/xrobots", "/meta", "/allowed", "/plain")]

    result = yield run_crawl(PrefSpider, {**META_ON, "ROBOTSTXT_USAGE_DENY": ["train-ai"]}, urls=urls)

    # Each was downloaded (its headers could only be seen so), then kept from the spider.
    assert sorted(result.responses) == [a.url("/allowed"), a.url("/plain")]
    for path in ("/header", "/xrobots", "/meta", "/allowed", "/plain"):
        assert a.hits(path) == 1, path
    assert result.stats["robotstxt/usage_denied_response"] == 3
    assert "robotstxt/usage_denied" not in result.stats
    expected = {"/header": "Content-Usage header", "/xrobots": "X-Robots-Tag header", "/meta": '<meta name="robots">'}
    for path, source in expected.items():
        (error,) = result.errors_for(a.url(path))
        assert isinstance(error, RobotsTxtUsageDeniedByResponse)
        assert isinstance(error, RobotsTxtUsageDenied)
        assert error.category == "train-ai"
        assert error.sources == (source,)
        assert isinstance(error.preference, Preferences)
        assert error.robots_url == a.url("/robots.txt")
    assert len(result.errors) == 3


@pytest_twisted.inlineCallbacks
def test_a_request_that_does_not_obey_is_not_read(origins):
    a = origins()
    a["/p"] = Served([("Content-Usage", "train-ai=n")])
    request = Request(a.url("/p"), meta={"dont_obey_robotstxt": True}, dont_filter=True)

    result = yield run_crawl(PrefSpider, {**ADDON, "ROBOTSTXT_USAGE_DENY": ["train-ai"]}, urls=[request])

    assert result.responses == [a.url("/p")]
    assert result.crawler.spider.prefs[a.url("/p")] is None


@dataclass
class RedirectWith(Behaviour):
    """A 301 to ``location`` that carries ``headers``."""

    location: str
    headers: list[tuple[str, str]]

    def handle(self, origin: Origin, request: Any, hit: Any) -> None:
        for name, value in self.headers:
            request.responseHeaders.addRawHeader(name, value)
        respond(request, 301, {"Location": self.location}, b"moved")


@pytest_twisted.inlineCallbacks
def test_a_redirected_request_has_the_preferences_of_its_last_response(origins):
    a = origins()
    a["/old"] = RedirectWith("/new", [("Content-Usage", "train-ai=n")])
    a["/new"] = Served([("Content-Usage", "search=n")])
    a["/old-plain"] = RedirectWith("/plain", [("X-Robots-Tag", "noai")])
    a["/plain"] = Served([])

    result = yield run_crawl(PrefSpider, {**ADDON, "ROBOTSTXT_USAGE_DENY": ["train-ai"]},
                             urls=[a.url("/old"), a.url("/old-plain")])

    assert sorted(result.responses) == [a.url("/new"), a.url("/plain")]
    new = prefs_of(result, a.url("/new"))
    assert new.get("train-ai") is None
    assert new.denies("search")
    assert result.crawler.spider.prefs[a.url("/plain")] is None


@pytest_twisted.inlineCallbacks
def test_headers_can_be_turned_off(origins):
    a = origins()
    a["/p"] = Served([("Content-Usage", "train-ai=n"), ("X-Robots-Tag", "noai")])

    result = yield run_crawl(PrefSpider, {**ADDON, "ROBOTSTXT_USAGE_HEADERS": False,
                                          "ROBOTSTXT_USAGE_DENY": ["train-ai"]}, urls=[a.url("/p")])

    assert result.responses == [a.url("/p")]
    assert result.crawler.spider.prefs[a.url("/p")] is None


# --------------------------------------------------------------------------- nofollow


def _nofollow_site(a: Origin) -> list[str]:
    a["/nofollow"] = Served([("X-Robots-Tag", "nofollow")], links=("/a", "/b"))
    a["/metanofollow"] = Served([], head='<meta name="robots" content="none">', links=("/c",))
    a["/follow"] = Served([("X-Robots-Tag", "noarchive")], links=("/d",))
    for path in ("/a", "/b", "/c", "/d"):
        a[path] = Served([])
    return [a.url("/nofollow"), a.url("/metanofollow"), a.url("/follow")]


@pytest_twisted.inlineCallbacks
def test_nofollow_middleware_drops_the_requests_of_nofollow_pages(origins):
    a = origins()
    urls = _nofollow_site(a)

    result = yield run_crawl(PrefSpider, {**META_ON, **NOFOLLOW}, urls=urls, follow=True)

    assert a.hits("/d") == 1
    for path in ("/a", "/b", "/c"):
        assert a.hits(path) == 0, path
    assert result.stats["robotstxt/nofollow_dropped"] == 3
    # The items of the nofollow pages pass.
    assert {item["url"] for item in result.items} >= set(urls)


@pytest_twisted.inlineCallbacks
def test_without_the_nofollow_middleware_every_link_is_followed(origins):
    a = origins()
    urls = _nofollow_site(a)

    result = yield run_crawl(PrefSpider, META_ON, urls=urls, follow=True)

    for path in ("/a", "/b", "/c", "/d"):
        assert a.hits(path) == 1, path
    assert "robotstxt/nofollow_dropped" not in result.stats


@pytest.mark.parametrize("settings", [{"ROBOTSTXT_USAGE_HEADERS": False}, {"ROBOTSTXT_OBEY": False}])
@pytest_twisted.inlineCallbacks
def test_the_nofollow_middleware_says_when_it_cannot_work(origins, settings):
    a = origins()
    a["/nofollow"] = Served([("X-Robots-Tag", "nofollow")], links=("/a",))
    a["/a"] = Served([])

    result = yield run_crawl(PrefSpider, {**ADDON, **NOFOLLOW, **settings}, urls=[a.url("/nofollow")], follow=True)

    assert a.hits("/a") == 1
    assert result.logged("no request is dropped", logging.WARNING, "scrapy_rfc9309.components.nofollow_middleware")


@pytest.mark.parametrize(("name", "value"), [("ROBOTSTXT_USAGE_META_MAX_BYTES", 10),
                                             ("ROBOTSTXT_USAGE_META_MAX_BYTES", "lots"),
                                             ("ROBOTSTXT_USAGE_META", "maybe"),
                                             ("ROBOTSTXT_USAGE_HEADERS", "sometimes")])
def test_a_bad_usage_setting_fails_at_start_up_naming_it(name, value):
    from scrapy.settings import Settings

    from scrapy_rfc9309.config import Config
    from scrapy_rfc9309.exceptions import RobotsTxtConfigError

    with pytest.raises(RobotsTxtConfigError, match=name):
        Config.from_settings(Settings({name: value}))


@pytest_twisted.inlineCallbacks
def test_robotstxt_rules_combine_with_the_header_and_a_malformed_one_is_reported(origins):
    a = origins()
    a.robots("User-agent: *\nDisallow: /private\nContent-Usage: Train-AI=y\nContent-Signal: ai-train=no\n")
    for path in ("/x", "/y"):
        a[path] = Served([("Content-Usage", "train-ai=y, search=y")])
    urls = [a.url("/x"), a.url("/y")]

    result = yield run_crawl(PrefSpider, {**ADDON, "CONCURRENT_REQUESTS": 1}, urls=urls)

    for url in urls:
        prefs = prefs_of(result, url)
        # Content-Signal's n wins over the header's y; the uppercase key states nothing.
        assert prefs.get("train-ai") == "n"
        assert prefs.sources_of("train-ai") == (f"{a.url('/robots.txt')} line 4 (Content-Signal)",)
        assert prefs.get("search") == "y"
        [malformed] = prefs.malformed
        assert malformed.startswith(f"{a.url('/robots.txt')} line 3 (Content-Usage) ignored: not a Structured Field")
    assert result.stats["robotstxt/usage_malformed"] == 2
    warnings = [m for m in result.messages(logging.WARNING, "scrapy_rfc9309") if "line 3 (Content-Usage)" in m]
    assert len(warnings) == 1, warnings


@pytest.mark.parametrize("where", ["X-Robots-Tag", "meta"])
@pytest_twisted.inlineCallbacks
def test_hostile_robots_directives_cost_bounded_memory_and_time(origins, tmp_path, where):
    """300 responses, each with 10,000 robots directives of its own (X-Robots-Tag lines under
    the download handlers' line limits, or meta tags), against the same pages without them, each crawl in an
    OS process of its own: the directives past the bound are ignored (malformed), nothing of
    them is remembered, the peak RSS stays within a generous ceiling of the plain crawl's."""
    from test_fleet import _crawl, _settings

    hostile, plain = origins("127.0.0.1"), origins("127.0.0.2")
    pages = 300
    for n in range(pages):
        directives = [f"r{n}d{i}" for i in range(10_000)]
        if where == "X-Robots-Tag":
            # ~4 KiB a line: under Twisted's line limit and aiohttp's field limit (8190 bytes), the
            # download handler of a crawl without a reactor.
            lines = [", ".join(directives[i:i + 500]) for i in range(0, 10_000, 500)]
            hostile[f"/p/{n}"] = Served([("X-Robots-Tag", line) for line in lines])
        else:
            head = "".join(f'<meta name="robots" content="{", ".join(directives[i:i + 1000])}">'
                           for i in range(0, 10_000, 1000))
            hostile[f"/p/{n}"] = Served([], head=head)
        plain[f"/p/{n}"] = Served([])
    settings = _settings(**META_ON, ROBOTSTXT_USAGE_META_MAX_BYTES=1 << 20, CONCURRENT_REQUESTS=8)
    reports = []
    for name, site in (("hostile", hostile), ("plain", plain)):
        report = yield _crawl({"settings": settings, "urls": [site.url(f"/p/{n}") for n in range(pages)]},
                              tmp_path, name)
        assert len(report["responses"]) == pages
        reports.append(report)
    hostile_report, plain_report = reports
    growth_mib = (hostile_report["maxrss_kib"] - plain_report["maxrss_kib"]) / 1024
    assert growth_mib < 150, (growth_mib, hostile_report["maxrss_kib"], plain_report["maxrss_kib"])
    # A generous ceiling on time: the cost is per response, never a stall of the crawl.
    assert hostile_report["seconds"] < plain_report["seconds"] * 10 + 30
    assert hostile_report["stats"].get("robotstxt/usage_malformed") == pages
