"""``ROBOTSTXT_DNS_WARMUP``: while a crawl waits for another process's robots.txt fetch
(a shared Redis store, the other process played by this test), the origin's host is
resolved into Scrapy's DNS cache, so that the request released afterwards does not
resolve it then. Never for requests that go through a proxy (set by a later
downloader middleware, by the spider, or by the environment), nor through a download
handler other than Scrapy's HTTP ones, nor without a caching resolver."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_twisted
from crawl import run_crawl
from middleware_support import (
    channel_waited,
    mw_settings,
    page_hits,
    record_of_another_process,
    robots_hits,
    stat,
    until,
)
from scrapy import Request
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.resolver import CachingHostnameResolver, CachingThreadedResolver, dnscache
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.test import get_crawler
from twisted.internet import defer

from scrapy_rfc9309.core.origins import Origin
from scrapy_rfc9309.lifecycle.dns_warmup import MAX_IN_FLIGHT, DnsWarmup
from scrapy_rfc9309.runtime import compat as _compat
from scrapy_rfc9309.runtime.compat import dns_cached
from scrapy_rfc9309.stores import Claim

RULES = "User-agent: *\nDisallow: /private\n"

# The lookups go through the reactor's resolver into Scrapy's DNS cache, and the tests install
# Scrapy's caching resolvers on the reactor; without a reactor the warm-up is off
# (test_reactorless.py, and the fleet tests' dns_warmup counts in the reactorless run).
pytestmark = pytest.mark.requires_reactor("DNS warm-up needs the reactor's resolver")


@pytest.fixture(params=["threaded", "hostname"])
def caching_resolver(request: pytest.FixtureRequest) -> Iterator[str]:
    """Scrapy's caching resolver installed on the reactor (as ``CrawlerProcess`` does;
    the tests' crawls run in ``CrawlerRunner`` style, which installs none), with an
    empty DNS cache; the reactor's resolvers are put back afterwards."""
    from twisted.internet import reactor

    saved = (reactor.resolver, reactor.nameResolver)
    dnscache.clear()
    if request.param == "threaded":
        reactor.installResolver(CachingThreadedResolver(reactor, 1000, 10.0))
    else:
        reactor.installNameResolver(CachingHostnameResolver(reactor, 1000))
    yield request.param
    reactor.installNameResolver(saved[1])
    reactor.resolver = saved[0]
    dnscache.clear()


class NotScrapys(HTTP11DownloadHandler):
    """A download handler of a plugin (a browser, an API) built on Scrapy's."""


class _SetProxy:
    """A downloader middleware after the robots.txt one that sends every request through
    ``PROXY`` (as rotating-proxy middlewares do)."""

    PROXY = ""

    def process_request(self, request: Request, spider: Any = None) -> None:
        request.meta["proxy"] = self.PROXY


def _forward_proxy() -> tuple[Any, list[bytes]]:
    """A real HTTP forward proxy on loopback (Twisted's), and the URIs it was asked for."""
    import warnings

    from twisted.internet import reactor
    from twisted.web import http

    with warnings.catch_warnings():  # it is built on twisted.web.http.HTTPClient, deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        from twisted.web import proxy

    asked: list[bytes] = []

    class Logged(proxy.ProxyRequest):
        def process(self) -> None:
            asked.append(self.uri)
            super().process()

    class Channel(proxy.Proxy):
        requestFactory = Logged

    factory = http.HTTPFactory()
    factory.protocol = Channel
    return reactor.listenTCP(0, factory, interface="127.0.0.1"), asked


@defer.inlineCallbacks
def _crawl_while_another_process_fetches(origins: Any, redis_url: str, settings: dict[str, Any],
                                         while_waiting: Any) -> Any:
    """Crawl ``waited`` (127.0.0.2, whose fetch lock another process holds) and ``fetched``
    (127.0.0.3, fetched by the crawl itself). Once the crawl waits on ``waited`` and has
    fetched ``fetched``'s robots.txt, ``while_waiting(waited)`` runs (awaited), then the
    other process saves ``waited``'s state, which releases the crawl's requests."""
    from scrapy_rfc9309.stores.redis import RedisStore

    waited, fetched = origins("127.0.0.2"), origins("127.0.0.3")
    fetched.robots(RULES)
    other = RedisStore(redis_url)
    yield deferred_from_coro(other.open())
    claim, _ = yield deferred_from_coro(other.claim(waited.base, "another-process", time.time(), 30))
    assert claim is Claim.ACQUIRED

    async def the_other_process() -> None:
        await channel_waited(other, other.channel(waited.base))
        await until(lambda: robots_hits(fetched), "the crawl fetched a robots.txt itself")
        await while_waiting(waited)
        assert page_hits(waited) == [], "a request of the waited origin went out before the save"
        now = time.time()
        record = record_of_another_process(waited, RULES.encode(), now, now + 3600)
        assert await other.save(waited.base, record, "another-process")

    finishing = deferred_from_coro(the_other_process())
    urls = [o.url(p) for o in (waited, fetched) for p in ("/public", "/private/1")]
    result = yield run_crawl(urls, mw_settings(ROBOTSTXT_STORE="redis", ROBOTSTXT_REDIS_URL=redis_url, **settings))
    yield finishing
    yield deferred_from_coro(other.close())
    assert robots_hits(waited) == []  # the other process's file, from the store
    assert stat(result, "store_wait") == 1 and stat(result, "store_hit") == 1
    assert sorted(result.responses) == sorted([waited.url("/public"), fetched.url("/public")])
    return waited, result


@pytest_twisted.inlineCallbacks
def test_a_waiting_crawl_resolves_the_host_before_its_requests_are_released(origins, redis_url,
                                                                             caching_resolver):
    async def resolved_while_waiting(waited: Any) -> None:
        await until(lambda: dns_cached(waited.host), "the waited origin's host was resolved")

    waited, result = yield _crawl_while_another_process_fetches(origins, redis_url, {}, resolved_while_waiting)

    assert stat(result, "dns_warmup") == 1
    assert dns_cached(waited.host)


@pytest_twisted.inlineCallbacks
def test_no_lookup_when_turned_off(origins, redis_url, caching_resolver):
    async def not_resolved(waited: Any) -> None:
        # Lookups start as the wait does (DnsWarmup.waiting), and the crawl waits here: had one been
        # started, its count would show at the end (dns_warmup == 0 below).
        assert not dns_cached(waited.host)

    waited, result = yield _crawl_while_another_process_fetches(
        origins, redis_url, {"ROBOTSTXT_DNS_WARMUP": False}, not_resolved)

    assert stat(result, "dns_warmup") == 0
    assert dns_cached(waited.host)  # resolved by the page request itself, once released


@pytest_twisted.inlineCallbacks
def test_no_lookup_when_a_later_middleware_sends_requests_through_a_proxy(origins, redis_url,
                                                                          caching_resolver):
    port, asked = _forward_proxy()
    _SetProxy.PROXY = f"http://127.0.0.1:{port.getHost().port}"

    async def not_resolved(waited: Any) -> None:
        # Lookups start as the wait does (DnsWarmup.waiting), and the crawl waits here: had one been
        # started, its count would show at the end (dns_warmup == 0 below).
        assert not dns_cached(waited.host)

    try:
        waited, result = yield _crawl_while_another_process_fetches(
            origins, redis_url, {"DOWNLOADER_MIDDLEWARES": {**mw_settings()["DOWNLOADER_MIDDLEWARES"],
                                                            f"{__name__}._SetProxy": 610}},
            not_resolved)
    finally:
        yield port.stopListening()

    assert stat(result, "dns_warmup") == 0
    assert not dns_cached(waited.host)  # the proxy resolved it, never this process
    assert waited.url("/public").encode() in asked  # the crawl did go through the proxy


# --------------------------------------------------------------------------- the conditions, one by one


def _lookups(warmup: DnsWarmup) -> int:
    """The lookups ``warmup`` started (its stat, counted as each starts: a lookup is started from
    within ``waiting`` or ``route_seen``, or as one ends, never later on its own)."""
    return int(warmup.crawler.stats.get_value("robotstxt/dns_warmup") or 0)


def _warmup(**settings: Any) -> DnsWarmup:
    return DnsWarmup(get_crawler(settings_dict={"HTTPPROXY_ENABLED": False, **settings}))


def _robots_request(proxy: str | None = None) -> Request:
    return Request("http://127.0.0.9/robots.txt", meta={"proxy": proxy} if proxy else {})


@pytest_twisted.inlineCallbacks
def test_lookups_wait_until_a_robots_txt_request_is_seen_going_direct(caching_resolver):
    warmup = _warmup()
    origin = Origin("http", "127.0.0.4", 80)

    warmup.waiting(origin, Request(origin.base + "/page"))
    assert _lookups(warmup) == 0  # nothing is known of the route yet: no lookup started

    warmup.route_seen(_robots_request())
    yield deferred_from_coro(until(lambda: dns_cached("127.0.0.4"), "resolved once the route is known"))


def test_a_robots_txt_request_through_a_proxy_turns_lookups_off(caching_resolver):
    warmup = _warmup()
    first, second = Origin("http", "127.0.0.4", 80), Origin("http", "127.0.0.5", 80)

    warmup.waiting(first, Request(first.base + "/page"))
    warmup.route_seen(_robots_request(proxy="http://proxy.invalid:8080"))
    warmup.route_seen(_robots_request())  # a direct one afterwards does not turn them on again
    warmup.waiting(second, Request(second.base + "/page"))

    assert _lookups(warmup) == 0
    assert not dns_cached("127.0.0.4") and not dns_cached("127.0.0.5")


@pytest.mark.parametrize(
    ("settings", "meta", "env"),
    [
        ({}, {"proxy": "http://proxy.invalid:8080"}, {}),  # the spider's proxy
        ({"HTTPPROXY_ENABLED": True}, {}, {"http_proxy": "http://proxy.invalid:8080"}),  # the environment's
        ({"DOWNLOAD_HANDLERS": {"http": f"{__name__}.NotScrapys"}}, {}, {}),  # another handler
        ({"DOWNLOAD_HANDLERS": {"http": None}}, {}, {}),  # no handler
    ],
    ids=["meta-proxy", "env-proxy", "other-handler", "no-handler"],
)
def test_requests_that_would_not_resolve_the_host_here_get_no_lookup(caching_resolver, monkeypatch, settings, meta,
                                                                    env):
    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    warmup = _warmup(**settings)
    origin = Origin("http", "127.0.0.4", 80)
    warmup.route_seen(_robots_request())

    warmup.waiting(origin, Request(origin.base + "/page", meta=meta))

    assert _lookups(warmup) == 0
    assert not dns_cached("127.0.0.4")


@pytest_twisted.inlineCallbacks
def test_an_environment_proxy_bypassed_for_the_host_still_resolves(caching_resolver, monkeypatch):
    monkeypatch.setenv("http_proxy", "http://proxy.invalid:8080")
    monkeypatch.setenv("no_proxy", "127.0.0.4")
    warmup = _warmup(HTTPPROXY_ENABLED=True)
    warmup.route_seen(_robots_request())

    warmup.waiting(Origin("http", "127.0.0.4", 80), Request("http://127.0.0.4/page"))
    warmup.waiting(Origin("http", "127.0.0.5", 80), Request("http://127.0.0.5/page"))
    yield deferred_from_coro(until(lambda: dns_cached("127.0.0.4"), "the bypassed host resolved"))

    assert _lookups(warmup) == 1  # 127.0.0.5 (through the proxy) got none
    assert not dns_cached("127.0.0.5")


def test_no_lookup_without_a_caching_resolver():
    from twisted.internet import reactor

    if _compat.caching_resolver(reactor):
        pytest.fail("a caching resolver is installed outside the caching_resolver fixture")
    dnscache.clear()
    warmup = _warmup()
    warmup.route_seen(_robots_request())
    warmup.waiting(Origin("http", "127.0.0.4", 80), Request("http://127.0.0.4/page"))

    assert _lookups(warmup) == 0 and not warmup._queue  # nothing started, nothing left to start
    assert not dns_cached("127.0.0.4")


@pytest_twisted.inlineCallbacks
def test_lookups_run_a_few_at_a_time_and_all_end(caching_resolver):
    warmup = _warmup()
    warmup.route_seen(_robots_request())
    hosts = [f"127.0.1.{n}" for n in range(1, 3 * MAX_IN_FLIGHT + 1)]

    for host in hosts:
        warmup.waiting(Origin("http", host, 80), Request(f"http://{host}/page"))
        assert warmup._in_flight <= MAX_IN_FLIGHT
    yield deferred_from_coro(until(lambda: all(dns_cached(h) for h in hosts), "every host resolved"))

    assert warmup._in_flight == 0
    assert warmup.crawler.stats.get_value("robotstxt/dns_warmup") == len(hosts)


@pytest_twisted.inlineCallbacks
def test_lookups_of_waits_that_ended_or_of_a_closed_spider_are_not_made(caching_resolver):
    """Queued lookups do not wait behind each other past their use: the one of an origin
    whose wait ended is dropped, and at close every queued one (only those running end)."""
    warmup = _warmup()
    warmup.route_seen(_robots_request())
    hosts = [f"127.0.2.{n}" for n in range(1, 3 * MAX_IN_FLIGHT + 1)]
    for host in hosts:
        warmup.waiting(Origin("http", host, 80), Request(f"http://{host}/page"))
    ended = hosts[MAX_IN_FLIGHT]  # queued: its wait ends before a place frees up
    assert (ended, 80) in warmup._queue
    warmup.done(Origin("http", ended, 80))
    others = [h for h in hosts if h != ended]
    yield deferred_from_coro(until(lambda: all(dns_cached(h) for h in others), "the others resolved"))
    assert not dns_cached(ended)

    later = [f"127.0.3.{n}" for n in range(1, 3 * MAX_IN_FLIGHT + 1)]
    for host in later:
        warmup.waiting(Origin("http", host, 80), Request(f"http://{host}/page"))
    running = [h for h in later if (h, 80) not in warmup._queue]
    warmup.close()  # the spider closes: nothing queued is looked up any more
    yield deferred_from_coro(until(lambda: warmup._in_flight == 0, "the running lookups ended"))

    assert not warmup._queue  # nothing is left to start
    assert len(running) == MAX_IN_FLIGHT and all(dns_cached(h) for h in running)
    assert not any(dns_cached(h) for h in later if h not in running)
    assert warmup.crawler.stats.get_value("robotstxt/dns_warmup") == len(others) + MAX_IN_FLIGHT


@pytest_twisted.inlineCallbacks
def test_a_failed_lookup_ends_and_frees_its_place(caching_resolver):
    warmup = _warmup()
    warmup.route_seen(_robots_request())

    warmup.waiting(Origin("http", "no-such-host.invalid", 80), Request("http://no-such-host.invalid/page"))
    yield deferred_from_coro(until(lambda: warmup._in_flight == 0, "the failed lookup ended"))

    assert not dns_cached("no-such-host.invalid")


def test_the_cache_key_is_the_name_twisted_resolves():
    from twisted.internet import reactor
    from twisted.internet.endpoints import HostnameEndpoint

    for host in ("example.com", "127.0.0.1", "xn--bcher-kva.example", "::1"):
        endpoint = HostnameEndpoint(reactor, host.encode("ascii"), 80)
        assert _compat.resolver_host_name(host) == endpoint._hostText
    assert _compat.resolver_host_name("xn--bcher-kva.example") == "bücher.example"
