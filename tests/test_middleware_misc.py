"""RobotsTxtMiddleware against real origins: which group applies (product tokens), compatibility
with Scrapy's built-in middleware (meta keys, signals, stats, the add-on, the parser on its own) and
start-up errors for bad settings."""

from __future__ import annotations

import logging
from typing import Any

import crawl
import pytest
import pytest_twisted
from crawl import ListSpider, run_crawl
from middleware_support import ENABLE, BatchSpider, mw_settings, page_hits, robots_hits, stat, text
from scrapy import Request, signals
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as BuiltinRobotsTxtMiddleware
from scrapy.settings import Settings
from scrapy_errors import host_header
from servers import Redirect, Sequence

import scrapy_rfc9309
from scrapy_rfc9309 import RobotParser, RobotsTxtMiddleware
from scrapy_rfc9309.exceptions import RobotsTxtConfigError, RobotsTxtForbidden
from scrapy_rfc9309.runtime import compat as _compat

MW_LOGGER = "scrapy_rfc9309"
#: Scrapy's robots_parsed signal exists from Scrapy 2.18 (the plugin sends it where it exists).
NEEDS_ROBOTS_PARSED = pytest.mark.skipif(
    _compat.ROBOTS_PARSED is None, reason="no robots_parsed signal before Scrapy 2.18"
)
AGENTS = (
    "User-agent: ExampleBot\n"
    "Disallow: /example\n"
    "\n"
    "User-agent: OtherBot\n"
    "Disallow: /other\n"
    "\n"
    "User-agent: *\n"
    "Disallow: /star\n"
)
PATHS = ("/example", "/other", "/star")
EXAMPLE_UA = "Mozilla/5.0 (compatible; ExampleBot/0.1; +https://e.com/bot.html)"


def _fetched(origin) -> list[str]:
    return sorted(h.path for h in page_hits(origin))


def _agent_log_lines(result) -> list[str]:
    return [m for m in result.messages(logging.INFO, logger=MW_LOGGER) if m.startswith("robots.txt: obeying")]


# --------------------------------------------------------------------------- product tokens


@pytest.mark.parametrize(
    ("agent", "blocked"),
    [("OtherBot", "/other"), ("examplebot", "/example"), ("NoSuchBot", "/star"), (EXAMPLE_UA, "/example")],
)
@pytest_twisted.inlineCallbacks
def test_robotstxt_user_agent_selects_the_group(origins, agent, blocked):
    a = origins()
    a.robots(AGENTS)

    result = yield run_crawl([a.url(p) for p in PATHS], mw_settings(ROBOTSTXT_USER_AGENT=agent))

    assert _fetched(a) == sorted(p for p in PATHS if p != blocked)
    (error,) = result.errors
    assert error.url == a.url(blocked)
    assert isinstance(error.exception, RobotsTxtForbidden)
    # The User-Agent header sent is still Scrapy's: the setting only picks the group.
    assert robots_hits(a)[0].headers["user-agent"].startswith("Scrapy/")


class ExampleBotSpider(ListSpider):
    name = "examplebot"
    custom_settings = {"ROBOTSTXT_USER_AGENT": "ExampleBot"}


@pytest_twisted.inlineCallbacks
def test_per_spider_custom_settings_select_the_group(origins):
    a = origins()
    a.robots(AGENTS)

    result = yield run_crawl(ExampleBotSpider, mw_settings(), urls=[a.url(p) for p in PATHS])

    assert _fetched(a) == ["/other", "/star"]
    assert [e.url for e in result.errors] == [a.url("/example")]


@pytest_twisted.inlineCallbacks
def test_meta_robotstxt_user_agent_overrides_per_request(origins):
    a = origins()
    a.robots(AGENTS)
    other = {"robotstxt_user_agent": "OtherBot"}
    urls = [
        Request(a.url("/other/1"), meta=other),
        Request(a.url("/example/1"), meta=other),
        a.url("/other/2"),
        a.url("/example/2"),
    ]

    result = yield run_crawl(urls, mw_settings(ROBOTSTXT_USER_AGENT="ExampleBot"))

    assert _fetched(a) == ["/example/1", "/other/2"]
    assert sorted(e.url for e in result.errors) == sorted([a.url("/other/1"), a.url("/example/2")])
    assert len(robots_hits(a)) == 1


@pytest_twisted.inlineCallbacks
def test_user_agent_header_form_selects_the_named_product(origins):
    a = origins()
    a.robots(AGENTS)
    urls = [a.url(p) for p in PATHS] + [a.url(f"/page/{i}") for i in range(4)]

    result = yield run_crawl(urls, mw_settings(USER_AGENT=EXAMPLE_UA))

    assert _fetched(a) == sorted(["/other", "/star"] + [f"/page/{i}" for i in range(4)])
    assert [e.url for e in result.errors] == [a.url("/example")]
    assert robots_hits(a)[0].headers["user-agent"] == EXAMPLE_UA
    # The token in effect is logged once, however many requests use it.
    lines = _agent_log_lines(result)
    assert lines == [f"robots.txt: obeying the groups for product token 'examplebot' (from USER_AGENT {EXAMPLE_UA!r})"]


@pytest_twisted.inlineCallbacks
def test_the_start_up_line_names_the_agent_of_the_settings_before_any_request(origins):
    """The agent obeyed is logged when the crawl starts, from ROBOTSTXT_USER_AGENT, even
    when no request is made; a request's own agent (meta or header) gets a line of its
    own the first time it is seen, never the start-up line's place."""
    a = origins()
    a.robots(AGENTS)
    first = Request(a.url("/example/1"), meta={"robotstxt_user_agent": "OtherBot"})
    header = Request(a.url("/other/2"), headers={"User-Agent": "Mozilla/5.0 (compatible; ThirdBot/1.0)"})

    idle = yield run_crawl([], mw_settings(ROBOTSTXT_USER_AGENT="ExampleBot"))
    result = yield run_crawl([first, header, a.url("/example/3")], mw_settings(ROBOTSTXT_USER_AGENT="ExampleBot"))

    at_start = "robots.txt: obeying the groups for product token 'examplebot' (from ROBOTSTXT_USER_AGENT 'ExampleBot')"
    assert _agent_log_lines(idle) == [at_start]
    # ROBOTSTXT_USER_AGENT comes before a request's header: only the meta key overrides it.
    assert _agent_log_lines(result) == [
        at_start,
        "robots.txt: obeying the groups for product token 'otherbot' (from a request's 'robotstxt_user_agent' meta "
        "key 'OtherBot')",
    ]
    assert _fetched(a) == ["/example/1", "/other/2"]


@pytest_twisted.inlineCallbacks
def test_a_request_header_agent_is_logged_the_first_time_it_is_seen(origins):
    a = origins()
    a.robots(AGENTS)
    header = {"User-Agent": "Mozilla/5.0 (compatible; OtherBot/2.1)"}

    result = yield run_crawl([Request(a.url("/x/1"), headers=header), Request(a.url("/x/2"), headers=header)],
                             mw_settings(USER_AGENT="ExampleBot/1.0"))

    assert _agent_log_lines(result) == [
        "robots.txt: obeying the groups for product token 'examplebot' (from USER_AGENT 'ExampleBot/1.0')",
        "robots.txt: obeying the groups for product token 'otherbot' (from a request's User-Agent header "
        "'Mozilla/5.0 (compatible; OtherBot/2.1)')",
    ]
    assert _fetched(a) == ["/x/1", "/x/2"]


class AttributeAgentSpider(ListSpider):
    """A spider with the ``user_agent`` attribute (deprecated by Scrapy 2.19), which Scrapy
    still sends as the User-Agent header: its group is obeyed."""

    name = "attribute_agent"
    user_agent = "Mozilla/5.0 (compatible; OtherBot/2.1)"


@pytest.mark.filterwarnings("ignore:The 'user_agent' spider attribute is deprecated")
@pytest_twisted.inlineCallbacks
def test_the_spider_user_agent_attribute_scrapy_sends_is_obeyed_and_named(origins):
    a = origins()
    a.robots(AGENTS)

    result = yield run_crawl(AttributeAgentSpider, mw_settings(), urls=[a.url(p) for p in PATHS])

    assert robots_hits(a)[0].headers["user-agent"] == AttributeAgentSpider.user_agent
    assert _fetched(a) == ["/example", "/star"]
    assert [e.url for e in result.errors] == [a.url("/other")]
    assert _agent_log_lines(result) == [
        "robots.txt: obeying the groups for product token 'otherbot' (from the spider's user_agent attribute "
        f"{AttributeAgentSpider.user_agent!r})"
    ]


@pytest_twisted.inlineCallbacks
def test_a_request_user_agent_header_selects_the_group(origins):
    a = origins()
    a.robots(AGENTS)
    header = {"User-Agent": "Mozilla/5.0 (compatible; OtherBot/2.1)"}
    urls = [Request(a.url(p), headers=header) for p in PATHS]

    result = yield run_crawl(urls, mw_settings())

    assert _fetched(a) == ["/example", "/star"]
    assert [e.url for e in result.errors] == [a.url("/other")]


MJ12 = "User-agent: MJ12bot\nDisallow: /\n\nUser-agent: *\nDisallow: /star\n"


@pytest.mark.parametrize(
    "settings",
    [{"ROBOTSTXT_USER_AGENT": "MJ12bot"}, {"USER_AGENT": "MJ12bot/1.4.8"},
     {"USER_AGENT": "Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)"}],
    ids=["bare-setting", "user-agent-header", "compatible-header"],
)
@pytest_twisted.inlineCallbacks
def test_a_crawler_name_with_digits_obeys_its_group(origins, settings):
    """``User-agent: MJ12bot`` / ``Disallow: /`` blocks the crawler named MJ12bot, given bare or
    in its User-Agent header; the way the name is read is logged once at start-up."""
    a = origins()
    a.robots(MJ12)

    result = yield run_crawl([a.url("/page"), a.url("/other")], mw_settings(**settings))

    assert _fetched(a) == []
    assert sorted(e.url for e in result.errors) == [a.url("/other"), a.url("/page")]
    assert all(isinstance(e.exception, RobotsTxtForbidden) for e in result.errors)
    notes = [m for m in result.messages(logging.WARNING, logger=MW_LOGGER) if "token set" in m]
    assert len(notes) == 1
    assert "'MJ12bot'" in notes[0]
    assert "product token 'mj'" in notes[0]
    assert notes[0].startswith("ROBOTSTXT_USER_AGENT" if "ROBOTSTXT_USER_AGENT" in settings else "USER_AGENT")


@pytest_twisted.inlineCallbacks
def test_an_agent_that_names_no_token_is_logged_at_start_up_and_gets_the_star_group(origins):
    a = origins()
    a.robots("User-agent: 360Spider\nDisallow: /\n\nUser-agent: *\nDisallow: /star\n")

    result = yield run_crawl([a.url("/page"), a.url("/star")], mw_settings(ROBOTSTXT_USER_AGENT="360Spider"))

    assert _fetched(a) == ["/page"]
    assert [e.url for e in result.errors] == [a.url("/star")]
    (note,) = [m for m in result.messages(logging.WARNING, logger=MW_LOGGER) if "names no product token" in m]
    assert note.startswith("ROBOTSTXT_USER_AGENT '360Spider'")


@pytest_twisted.inlineCallbacks
def test_a_plain_token_logs_no_start_up_note(origins):
    a = origins()
    a.robots(AGENTS)

    result = yield run_crawl([a.url("/page")], mw_settings(ROBOTSTXT_USER_AGENT="ExampleBot"))

    assert _fetched(a) == ["/page"]
    assert not [m for m in result.messages(logging.WARNING, logger=MW_LOGGER) if "token" in m]


@pytest_twisted.inlineCallbacks
def test_the_matcher_in_use_is_logged_once_at_start_up(origins):
    a = origins()
    a.robots(AGENTS)

    result = yield run_crawl([a.url("/page"), a.url("/star")], mw_settings())

    lines = [r for r in result.log_records
             if r.name.startswith(MW_LOGGER) and r.getMessage().startswith("robots.txt matcher:")]
    assert [r.getMessage() for r in lines] == [f"robots.txt matcher: {scrapy_rfc9309.matcher_in_use()}"]
    assert lines[0].levelno == (logging.INFO if scrapy_rfc9309.ACCELERATED else logging.WARNING)


# --------------------------------------------------------------------------- Scrapy compatibility


@pytest_twisted.inlineCallbacks
def test_dont_obey_robotstxt_meta_is_honoured(origins):
    a = origins()
    a.robots("User-agent: *\nDisallow: /\n")
    urls = [Request(a.url("/anyway"), meta={"dont_obey_robotstxt": True})]

    result = yield run_crawl(urls, mw_settings())

    assert a.paths() == ["/anyway"]  # robots.txt not even fetched
    assert result.responses == [a.url("/anyway")]
    assert stat(result, "request_count") == 0


@pytest_twisted.inlineCallbacks
def test_a_page_redirected_to_another_origin_is_checked_against_that_origin(origins):
    a = origins("127.0.0.1")
    b = origins("127.0.0.2")
    b.robots("User-agent: *\nDisallow: /private\n")
    a["/old"] = Redirect(b.url("/private/x"))
    a["/also-old"] = Redirect(b.url("/public/x"), status=302)

    result = yield run_crawl([a.url("/old"), a.url("/also-old")], mw_settings())

    assert sorted(h.path for h in page_hits(a)) == ["/also-old", "/old"]
    assert [h.path for h in page_hits(b)] == ["/public/x"]
    assert len(robots_hits(a)) == len(robots_hits(b)) == 1
    assert result.responses == [b.url("/public/x")]
    (error,) = result.errors
    assert isinstance(error.exception, RobotsTxtForbidden)
    assert error.exception.robots_url == b.url("/robots.txt")


@pytest_twisted.inlineCallbacks
def test_a_host_with_a_trailing_dot_is_an_origin_of_its_own(origins, monkeypatch):
    """``http://ex.test./`` is requested as ``ex.test.`` (its Host header, its download slot):
    its requests are judged by the robots.txt that authority serves, not by ``ex.test``'s.
    Every request goes through a forward proxy (the environment's, as HttpProxyMiddleware
    applies it), a loopback origin that answers by the absolute URL it is asked for."""
    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    proxy = origins()
    monkeypatch.setenv("http_proxy", proxy.base)
    proxy["http://ex.test./robots.txt"] = text("User-agent: *\nDisallow: /dotted\n")
    proxy["http://ex.test/robots.txt"] = text("User-agent: *\nDisallow: /plain\n")
    urls = ["http://ex.test./dotted", "http://ex.test./plain", "http://ex.test/dotted", "http://ex.test/plain"]

    result = yield run_crawl(urls, mw_settings(HTTPPROXY_ENABLED=True))

    assert sorted(result.responses) == ["http://ex.test./plain", "http://ex.test/dotted"]
    assert sorted(e.url for e in result.errors) == ["http://ex.test./dotted", "http://ex.test/plain"]
    asked = [hit.path for hit in proxy.requests]
    assert asked.count("http://ex.test./robots.txt") == 1 and asked.count("http://ex.test/robots.txt") == 1
    hosts = {hit.path: hit.headers["host"] for hit in proxy.requests}
    assert hosts["http://ex.test./robots.txt"] == host_header("ex.test.")


@pytest_twisted.inlineCallbacks
def test_a_data_url_passes_unchecked(origins):
    a = origins()
    a.robots("User-agent: *\nDisallow: /\n")
    urls = ["data:text/plain,hello", a.url("/blocked")]

    result = yield run_crawl(urls, mw_settings())

    assert result.responses == ["data:text/plain,hello"]
    assert a.paths() == ["/robots.txt"]
    assert stat(result, "request_count") == 1
    assert stat(result, "forbidden") == 1
    assert [e.url for e in result.errors] == [a.url("/blocked")]


class _RecordsRobotsParsed:
    """Spider mix-in: ``parsed_signals`` lists the ``(robotparser, request)`` of each robots_parsed signal."""

    @classmethod
    def from_crawler(cls, crawler, *args: Any, **kwargs: Any):
        spider = super().from_crawler(crawler, *args, **kwargs)  # type: ignore[misc]
        spider.parsed_signals = []
        crawler.signals.connect(spider.on_robots_parsed, signal=signals.robots_parsed)
        return spider

    def on_robots_parsed(self, robotparser, request, **kwargs: Any) -> None:
        self.parsed_signals.append((robotparser, request))


class SignalSpider(_RecordsRobotsParsed, ListSpider):
    name = "signals"


class BatchSignalSpider(_RecordsRobotsParsed, BatchSpider):
    name = "batch-signals"


@NEEDS_ROBOTS_PARSED
@pytest_twisted.inlineCallbacks
def test_robots_parsed_signal_and_scrapy_stats_keys(origins):
    a = origins()
    a.robots("User-agent: *\nDisallow: /private\n")
    urls = [a.url("/public"), a.url("/private/1")]

    result = yield run_crawl(SignalSpider, mw_settings(), urls=urls)

    ((parser, request),) = result.crawler.spider.parsed_signals
    assert isinstance(parser, RobotParser)
    assert parser.allowed(a.url("/public"), "AnyBot") is True
    assert parser.allowed(a.url("/private/x"), "AnyBot") is False
    assert request.url in urls
    assert result.stats["robotstxt/request_count"] == 1
    assert result.stats["robotstxt/response_count"] == 1
    assert result.stats["robotstxt/response_status_count/200"] == 1
    assert result.stats["robotstxt/forbidden"] == 1
    # The robots.txt request as the server got it.
    (hit,) = robots_hits(a)
    assert hit.headers["accept-encoding"] == "identity"


@NEEDS_ROBOTS_PARSED
@pytest_twisted.inlineCallbacks
def test_robots_parsed_after_a_retry_names_a_request_that_waited(origins):
    a = origins()
    a["/robots.txt"] = Sequence([text("busy", status=503), text("User-agent: *\nDisallow: /private\n")])
    urls = [a.url("/public"), a.url("/private/1")]

    result = yield run_crawl(SignalSpider, mw_settings(), urls=urls)

    assert len(robots_hits(a)) == 2
    ((parser, request),) = result.crawler.spider.parsed_signals
    assert parser.allowed(a.url("/private/1"), "AnyBot") is False
    # Scrapy: "the request that triggered the robots.txt download", i.e. one of the spider's requests.
    assert request.url in urls


def _downloader_middleware_types(result) -> list[type]:
    return [type(m) for m in result.crawler.engine.downloader.middleware.middlewares]


@pytest_twisted.inlineCallbacks
def test_the_addon_enables_the_middleware_and_removes_the_builtin_one(origins, monkeypatch):
    # Scrapy's default ROBOTSTXT_OBEY (False): the add-on alone turns it on.
    monkeypatch.delitem(crawl.BASE_SETTINGS, "ROBOTSTXT_OBEY")
    a = origins()
    a.robots("User-agent: *\nDisallow: /private\n")
    urls = [a.url("/public"), a.url("/private/1")]

    result = yield run_crawl(urls, {"ADDONS": {"scrapy_rfc9309.Addon": 0}})

    types = _downloader_middleware_types(result)
    assert RobotsTxtMiddleware in types
    assert BuiltinRobotsTxtMiddleware not in types
    assert _fetched(a) == ["/public"]
    (error,) = result.errors
    assert isinstance(error.exception, RobotsTxtForbidden)
    assert stat(result, "parsed") == 1
    assert result.crawler.settings.getbool("ROBOTSTXT_OBEY") is True


@pytest_twisted.inlineCallbacks
def test_the_addon_holds_for_an_unreachable_robots_txt(origins):
    """Through the add-on too, a 5xx robots.txt is a complete disallow (the built-in would parse it)."""
    a = origins()
    a["/robots.txt"] = text("User-agent: *\nAllow: /\n", status=503)
    urls = [a.url("/public")]

    result = yield run_crawl(
        urls, {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "ROBOTSTXT_RETRY_DELAY": 0.2, "ROBOTSTXT_MAX_WAIT": 0.5}
    )

    assert page_hits(a) == []
    assert result.responses == []
    assert stat(result, "held") == 1


@pytest_twisted.inlineCallbacks
def test_robotstxt_obey_false_still_turns_the_addon_off(origins):
    a = origins()
    a.robots("User-agent: *\nDisallow: /\n")

    result = yield run_crawl([a.url("/page")], {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "ROBOTSTXT_OBEY": False})

    types = _downloader_middleware_types(result)
    assert RobotsTxtMiddleware not in types
    assert BuiltinRobotsTxtMiddleware not in types
    assert a.paths() == ["/page"]
    assert result.responses == [a.url("/page")]


@NEEDS_ROBOTS_PARSED
@pytest_twisted.inlineCallbacks
def test_the_parser_works_with_the_builtin_middleware(origins):
    a = origins()
    # %62%61%7A is "baz" (RFC 9309, 2.2.2): this parser blocks /foo/bar/baz.
    a.robots("User-agent: *\nDisallow: /private\nDisallow: /foo/bar/%62%61%7A\n")
    # The first request alone, the others once robots.txt is parsed: the built-in middleware hands the
    # parser to one waiting request only, which is not what this test is about.
    batches = [(0, [a.url("/public")]), (0.3, [a.url("/private/1"), a.url("/foo/bar/baz")])]

    result = yield run_crawl(BatchSignalSpider, {"ROBOTSTXT_PARSER": "scrapy_rfc9309.RobotParser"}, batches=batches)

    types = _downloader_middleware_types(result)
    assert BuiltinRobotsTxtMiddleware in types
    assert RobotsTxtMiddleware not in types
    ((parser, _request),) = result.crawler.spider.parsed_signals
    assert isinstance(parser, RobotParser)
    assert _fetched(a) == ["/public"]
    assert len(robots_hits(a)) == 1
    assert stat(result, "forbidden") == 2
    assert sorted(e.url for e in result.errors) == sorted([a.url("/private/1"), a.url("/foo/bar/baz")])


# --------------------------------------------------------------------------- bad configuration


class SubclassedBuiltin(BuiltinRobotsTxtMiddleware):
    """A project's own variant of the built-in middleware: it judges as the built-in does."""


@pytest.mark.parametrize(
    "middlewares",
    [
        {"scrapy_rfc9309.RobotsTxtMiddleware": 100},  # the plugin's line without the None line
        {RobotsTxtMiddleware: 543},
        {"scrapy_rfc9309.RobotsTxtMiddleware": 100, f"{__name__}.SubclassedBuiltin": 110},
    ],
    ids=["path", "class", "subclass"],
)
@pytest_twisted.inlineCallbacks
def test_the_builtin_middleware_beside_the_plugin_stops_the_crawl_at_start_up(origins, middlewares):
    a = origins()
    a.robots("User-agent: *\nDisallow: /private\n")

    with pytest.raises(RobotsTxtConfigError) as info:
        yield run_crawl([a.url("/public"), a.url("/private/1")],
                        {"ROBOTSTXT_OBEY": True, "DOWNLOADER_MIDDLEWARES": middlewares})

    message = str(info.value)
    assert f"'{_compat.BUILTIN_MIDDLEWARE}': None to DOWNLOADER_MIDDLEWARES" in message
    assert "scrapy_rfc9309.Addon" in message
    assert a.requests == []  # neither robots.txt nor a page was fetched


@pytest.mark.parametrize(
    "middlewares",
    [
        {_compat.BUILTIN_MIDDLEWARE: None, "scrapy_rfc9309.RobotsTxtMiddleware": 100},
        pytest.param({BuiltinRobotsTxtMiddleware: None, RobotsTxtMiddleware: 100}, marks=pytest.mark.skipif(
            not hasattr(Settings, "get_component_priority_dict_with_base"),
            reason="before Scrapy 2.15 a class key does not switch off the built-in's path key",
        )),
    ],
    ids=["path", "class"],
)
@pytest_twisted.inlineCallbacks
def test_with_the_none_line_only_the_plugin_judges(origins, middlewares):
    a = origins()
    a.robots("User-agent: *\nDisallow: /private\n")

    result = yield run_crawl([a.url("/public"), a.url("/private/1")],
                             {"ROBOTSTXT_OBEY": True, "DOWNLOADER_MIDDLEWARES": middlewares})

    types = _downloader_middleware_types(result)
    assert RobotsTxtMiddleware in types
    assert BuiltinRobotsTxtMiddleware not in types
    assert len(robots_hits(a)) == 1
    assert _fetched(a) == ["/public"]
    assert stat(result, "forbidden") == 1


@pytest.mark.parametrize(
    ("name", "value", "extra"),
    [
        ("ROBOTSTXT_CACHE_TTL", -1, {}),
        ("ROBOTSTXT_CACHE_TTL", 0, {}),
        ("ROBOTSTXT_MAX_SIZE", "abc", {}),
        ("ROBOTSTXT_MAX_SIZE", 1000, {}),
        # Finite but out of range: a lifetime that would overflow a Redis expiry, and the like.
        ("ROBOTSTXT_CACHE_TTL", 1e16, {}),
        ("ROBOTSTXT_KEEP_CACHED", 1e300, {}),
        ("ROBOTSTXT_RETRY_MAX_DELAY", 1e12, {}),
        ("ROBOTSTXT_MAX_WAIT", 1e18, {}),
        ("ROBOTSTXT_CACHE_SIZE", 10**12, {}),
        ("ROBOTSTXT_MAX_SIZE", 2**40, {}),
        ("ROBOTSTXT_STORE_LOCK_TTL", 1e9, {"ROBOTSTXT_STORE": "disk"}),
        ("ROBOTSTXT_STORE_TIMEOUT", 0, {"ROBOTSTXT_STORE": "disk"}),
        ("ROBOTSTXT_RETRY_MAX_DELAY", 1, {"ROBOTSTXT_RETRY_DELAY": 5}),
        ("ROBOTSTXT_USER_AGENT", 123, {}),
        ("ROBOTSTXT_CACHE_SIZE", 0, {}),
        ("ROBOTSTXT_MAX_WAIT", "soon", {}),
        ("ROBOTSTXT_MAX_REDIRECTS", 2.5, {}),
        ("ROBOTSTXT_KEEP_CACHED", float("nan"), {}),
        ("ROBOTSTXT_STORE", "bogus", {}),
        ("ROBOTSTXT_STORE", "no_such_module.Store", {}),
        ("ROBOTSTXT_STORE_LOCK_TTL", 0, {"ROBOTSTXT_STORE": "disk"}),
        ("ROBOTSTXT_STORE_RETRY_DELAY", "later", {"ROBOTSTXT_STORE": "disk"}),
        ("ROBOTSTXT_REDIS_URL", "localhost:6379", {"ROBOTSTXT_STORE": "redis"}),
        ("ROBOTSTXT_REDIS_PREFIX", 5, {"ROBOTSTXT_STORE": "redis"}),
        ("ROBOTSTXT_REDIS_CLUSTER", "sometimes", {"ROBOTSTXT_STORE": "redis"}),
        ("ROBOTSTXT_CRAWL_DELAY", "often", {}),
        ("ROBOTSTXT_DNS_WARMUP", "maybe", {"ROBOTSTXT_STORE": "disk"}),
    ],
)
@pytest.mark.parametrize("enable", ["explicit", "addon"])
@pytest_twisted.inlineCallbacks
def test_a_bad_setting_stops_the_crawl_at_start_up(origins, name, value, extra, enable):
    a = origins()
    base = dict(ENABLE) if enable == "explicit" else {"ADDONS": {"scrapy_rfc9309.Addon": 0}}
    settings = {**base, **extra, name: value}

    with pytest.raises(RobotsTxtConfigError) as info:
        yield run_crawl([a.url("/page")], settings)

    assert name in str(info.value)
    assert a.requests == []
