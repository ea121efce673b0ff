"""RobotsTxtMiddleware against real origins: what an origin is, and how long a robots.txt result
holds (TTL, Cache-Control, stale copies while unreachable, the LRU bound)."""

from __future__ import annotations

import logging
import socket

import pytest
import pytest_twisted
from crawl import run_crawl
from middleware_support import BatchSpider, mw_settings, page_hits, robots_hits, stat, text
from servers import Origin, Sequence, Static
from twisted.internet.error import CannotListenError

from scrapy_rfc9309 import RobotsTxtMiddleware
from scrapy_rfc9309.exceptions import RobotsTxtForbidden

RULES = "User-agent: *\nDisallow: /private\n"


def _localhost_is_loopback() -> bool:
    try:
        return {info[4][0] for info in socket.getaddrinfo("localhost", 80, socket.AF_INET)} == {"127.0.0.1"}
    except OSError:
        return False


# --------------------------------------------------------------------------- origins


@pytest_twisted.inlineCallbacks
def test_urls_of_one_origin_share_one_robots_txt_fetch(origins):
    a = origins("127.0.0.1")
    a.robots(RULES)
    p = a.port
    urls = [
        f"http://127.0.0.1:{p}/",
        f"http://127.0.0.1:{p}",
        f"http://127.0.0.1:{p}/private/1",
        f"http://127.0.0.1:{p}/public?x=1",
    ]
    named = _localhost_is_loopback()
    if named:
        # The host is case-folded: LOCALHOST and localhost are one origin (another than 127.0.0.1).
        urls += [f"http://LOCALHOST:{p}/private/2", f"http://localhost:{p}/public/2", f"http://LocalHost:{p}/"]

    result = yield run_crawl(urls, mw_settings())

    robots = robots_hits(a)
    assert sorted(h.headers["host"] for h in robots) == sorted(
        [f"127.0.0.1:{p}"] + ([f"localhost:{p}"] if named else [])
    )
    assert a.hits("/private/1") == a.hits("/private/2") == 0
    expected_pages = ["/", "/", "/public?x=1"] + (["/", "/public/2"] if named else [])
    assert sorted(h.path for h in page_hits(a)) == sorted(expected_pages)
    assert stat(result, "request_count") == len(robots)
    assert stat(result, "forbidden") == (2 if named else 1)


@pytest_twisted.inlineCallbacks
def test_the_default_port_is_folded(origins):
    try:
        a = origins("127.0.0.5", port=80)
    except CannotListenError:
        pytest.skip("cannot listen on port 80 here")
    a.robots(RULES)
    urls = ["http://127.0.0.5/", "http://127.0.0.5:80/page", "http://127.0.0.5:80/private/1", "http://127.0.0.5/private/2"]

    result = yield run_crawl(urls, mw_settings())

    assert len(robots_hits(a)) == 1
    assert sorted(h.path for h in page_hits(a)) == ["/", "/page"]
    assert stat(result, "forbidden") == 2


@pytest_twisted.inlineCallbacks
def test_two_ports_on_one_host_are_two_origins(origins):
    one = origins("127.0.0.1")
    two = origins("127.0.0.1")
    assert one.port != two.port
    one.robots("User-agent: *\nDisallow: /one\n")
    two.robots("User-agent: *\nDisallow: /two\n")
    urls = [o.url(p) for o in (one, two) for p in ("/one", "/two", "/three")]

    result = yield run_crawl(urls, mw_settings())

    assert len(robots_hits(one)) == len(robots_hits(two)) == 1
    assert sorted(h.path for h in page_hits(one)) == ["/three", "/two"]
    assert sorted(h.path for h in page_hits(two)) == ["/one", "/three"]
    assert stat(result, "request_count") == 2
    assert stat(result, "forbidden") == 2


@pytest_twisted.inlineCallbacks
def test_two_hosts_on_one_port_are_two_origins(origins):
    first = origins("127.0.0.1")
    second = origins("127.0.0.2", port=first.port)
    assert first.port == second.port
    first.robots("User-agent: *\nDisallow: /one\n")
    second.robots("User-agent: *\nDisallow: /two\n")
    urls = [o.url(p) for o in (first, second) for p in ("/one", "/two")]

    result = yield run_crawl(urls, mw_settings())

    assert len(robots_hits(first)) == len(robots_hits(second)) == 1
    assert [h.path for h in page_hits(first)] == ["/two"]
    assert [h.path for h in page_hits(second)] == ["/one"]
    assert sorted(result.responses) == sorted([first.url("/two"), second.url("/one")])


# --------------------------------------------------------------------------- lifetime


@pytest_twisted.inlineCallbacks
def test_within_the_ttl_robots_txt_is_not_fetched_again(origins):
    a = origins()
    a.robots(RULES)
    batches = [
        (0, [a.url("/private/1"), a.url("/public/1")]),
        (0.6, [a.url("/private/2"), a.url("/public/2")]),
        (0.3, [a.url("/private/3"), a.url("/public/3")]),
    ]

    result = yield run_crawl(BatchSpider, mw_settings(), batches=batches)

    assert len(robots_hits(a)) == 1
    assert sorted(h.path for h in page_hits(a)) == ["/public/1", "/public/2", "/public/3"]
    assert stat(result, "forbidden") == 3
    assert stat(result, "cache_hit") >= 4
    assert stat(result, "refetch") == 0


@pytest_twisted.inlineCallbacks
def test_after_the_ttl_robots_txt_is_fetched_again_and_the_new_rules_apply(origins):
    a = origins()
    a["/robots.txt"] = Sequence(
        [text("User-agent: *\nDisallow: /old\n"), text("User-agent: *\nDisallow: /new\n")]
    )
    batches = [
        (0, [a.url("/old/1"), a.url("/new/1")]),
        (1.0, [a.url("/old/2"), a.url("/new/2")]),
    ]

    result = yield run_crawl(
        BatchSpider, mw_settings(ROBOTSTXT_CACHE_TTL=0.5, ROBOTSTXT_CACHE_MIN_TTL=0.1), batches=batches
    )

    hits = robots_hits(a)
    assert len(hits) == 2
    assert sorted(h.path for h in page_hits(a)) == ["/new/1", "/old/2"]
    assert stat(result, "refetch") == 1
    assert stat(result, "parsed") == 2
    assert stat(result, "forbidden") == 2


@pytest_twisted.inlineCallbacks
def test_cache_control_max_age_shortens_the_lifetime(origins):
    a = origins()
    a["/robots.txt"] = text(RULES, Cache_Control="public, max-age=1")
    batches = [(0, [a.url("/public/1")]), (1.5, [a.url("/public/2")]), (0.5, [a.url("/public/3")])]

    result = yield run_crawl(BatchSpider, mw_settings(ROBOTSTXT_CACHE_MIN_TTL=0.2), batches=batches)

    # The default TTL is a day: only the max-age can make it fetch again.
    assert len(robots_hits(a)) == 2
    assert robots_hits(a)[1].time - robots_hits(a)[0].time >= 1.0
    assert sorted(h.path for h in page_hits(a)) == ["/public/1", "/public/2", "/public/3"]
    assert stat(result, "request_count") == 2


@pytest.mark.parametrize("cache_control", ["max-age=0", "no-store", "no-cache, max-age=0"])
@pytest_twisted.inlineCallbacks
def test_max_age_zero_is_floored_at_the_min_ttl(origins, cache_control):
    a = origins()
    a["/robots.txt"] = text(RULES, Cache_Control=cache_control)
    batches = [(0.3 if i else 0, [a.url(f"/public/{i}/{j}") for j in range(3)]) for i in range(4)]

    result = yield run_crawl(BatchSpider, mw_settings(ROBOTSTXT_CACHE_MIN_TTL=5), batches=batches)

    assert len(robots_hits(a)) == 1
    assert len(page_hits(a)) == 12
    assert stat(result, "request_count") == 1
    assert stat(result, "cache_hit") >= 9


@pytest.mark.parametrize(
    ("headers", "settings", "lifetime"),
    [
        ({"Cache_Control": "max-age=3600"}, {}, 3600),
        # Directives one by one: the order of max-age and s-maxage does not matter.
        ({"Cache_Control": "max-age=3600, s-maxage=600"}, {}, 600),
        ({"Cache_Control": "s-maxage=7200, max-age=3600"}, {}, 3600),
        # no-cache naming a header field is not a no-cache of the file.
        ({"Cache_Control": 'no-cache="Set-Cookie", max-age=3600'}, {}, 3600),
        ({"Cache_Control": "no-cache, max-age=3600"}, {}, 60),
        # The Age header is subtracted; down to the floor at most.
        ({"Cache_Control": "max-age=3600", "Age": "1200"}, {}, 2400),
        ({"Cache_Control": "max-age=3600", "Age": "3590"}, {}, 60),
        ({"Age": "1200"}, {}, 86400),
        # An explicit TTL on its own, below the default floor: it holds, header or not.
        ({}, {"ROBOTSTXT_CACHE_TTL": 2}, 2),
        ({"Cache_Control": "max-age=0"}, {"ROBOTSTXT_CACHE_TTL": 2}, 2),
        ({"Cache_Control": "max-age=3600"}, {"ROBOTSTXT_CACHE_TTL": 2}, 2),
    ],
)
@pytest_twisted.inlineCallbacks
def test_the_lifetime_cache_control_and_age_give(origins, headers, settings, lifetime):
    a = origins()
    a["/robots.txt"] = text(RULES, **headers)

    result = yield run_crawl([a.url("/private/1"), a.url("/public/1")], mw_settings(**settings))

    assert sorted(h.path for h in page_hits(a)) == ["/public/1"]
    state = result.crawler.get_downloader_middleware(RobotsTxtMiddleware).state_for(a.url("/"))
    assert state.expires_at - state.fetched_at == pytest.approx(lifetime, abs=1e-6)


@pytest_twisted.inlineCallbacks
def test_a_short_ttl_alone_starts_and_expires(origins):
    """``ROBOTSTXT_CACHE_TTL`` set alone, below the default ``ROBOTSTXT_CACHE_MIN_TTL``
    (60 s): no start-up error, and the file is fetched again once it expires."""
    a = origins()
    a["/robots.txt"] = Sequence([text("User-agent: *\nDisallow: /old\n", Cache_Control="max-age=0"),
                                 text("User-agent: *\nDisallow: /new\n")])
    batches = [(0, [a.url("/old/1"), a.url("/new/1")]), (1.0, [a.url("/old/2"), a.url("/new/2")])]

    result = yield run_crawl(BatchSpider, mw_settings(ROBOTSTXT_CACHE_TTL=0.5), batches=batches)

    assert len(robots_hits(a)) == 2
    assert sorted(h.path for h in page_hits(a)) == ["/new/1", "/old/2"]
    assert stat(result, "refetch") == 1


@pytest_twisted.inlineCallbacks
def test_an_unreachable_refetch_keeps_the_cached_rules(origins):
    a = origins()
    failing = Static(b"User-agent: *\nAllow: /\n", 503, {"Content-Type": "text/plain"})
    a["/robots.txt"] = Sequence([text(RULES), failing])
    batches = [
        (0, [a.url("/private/1"), a.url("/public/1")]),
        (0.8, [a.url("/private/2"), a.url("/public/2")]),
        (0.5, [a.url("/private/3"), a.url("/public/3")]),
        (0.5, [a.url("/private/4"), a.url("/public/4")]),
    ]

    result = yield run_crawl(
        BatchSpider, mw_settings(ROBOTSTXT_CACHE_TTL=0.5, ROBOTSTXT_CACHE_MIN_TTL=0.1), batches=batches
    )

    assert len(robots_hits(a)) >= 2
    assert sorted(h.path for h in page_hits(a)) == [f"/public/{i}" for i in range(1, 5)]
    assert sorted(result.responses) == sorted(a.url(f"/public/{i}") for i in range(1, 5))
    assert [type(e.exception) for e in result.errors] == [RobotsTxtForbidden] * 4
    assert stat(result, "stale_used") >= 1
    assert stat(result, "response_status_count/503") >= 1
    assert stat(result, "dropped_unreachable") == 0
    assert stat(result, "held") == 0


@pytest.mark.parametrize(("cache_size", "fetches"), [(1, 2), (2, 1)])
@pytest_twisted.inlineCallbacks
def test_the_cache_is_lru_bounded(origins, cache_size, fetches):
    a: Origin = origins("127.0.0.1")
    b: Origin = origins("127.0.0.2")
    a.robots(RULES)
    b.robots(RULES)
    batches = [
        (0, [a.url("/public/1"), a.url("/private/1")]),
        (0.4, [b.url("/public/1"), b.url("/private/1")]),
        (0.4, [a.url("/public/2"), a.url("/private/2")]),
        (0.4, [b.url("/public/2"), b.url("/private/2")]),
    ]

    result = yield run_crawl(BatchSpider, mw_settings(ROBOTSTXT_CACHE_SIZE=cache_size), batches=batches)

    assert len(robots_hits(a)) == len(robots_hits(b)) == fetches
    for origin in (a, b):
        assert sorted(h.path for h in page_hits(origin)) == ["/public/1", "/public/2"]
    assert stat(result, "forbidden") == 4


@pytest_twisted.inlineCallbacks
def test_the_cached_copy_stops_applying_after_keep_cached(origins):
    """Unreachable once the last good copy is older than ROBOTSTXT_KEEP_CACHED: complete disallow again."""
    a = origins()
    failing = Static(b"User-agent: *\nAllow: /\n", 503, {"Content-Type": "text/plain"})
    a["/robots.txt"] = Sequence([text(RULES), failing])
    batches = [(0, [a.url("/public/1")]), (1.0, [a.url("/public/2"), a.url("/private/2")])]
    settings = mw_settings(
        ROBOTSTXT_CACHE_TTL=0.3, ROBOTSTXT_CACHE_MIN_TTL=0.1, ROBOTSTXT_KEEP_CACHED=0.5, ROBOTSTXT_MAX_WAIT=0.6
    )

    result = yield run_crawl(BatchSpider, settings, batches=batches)

    assert [h.path for h in page_hits(a)] == ["/public/1"]
    assert len(robots_hits(a)) >= 2
    assert result.responses == [a.url("/public/1")]
    assert stat(result, "held") == 2
    assert stat(result, "stale_used") == 0


@pytest_twisted.inlineCallbacks
def test_an_unavailable_result_expires_too(origins):
    a = origins()
    a["/robots.txt"] = Sequence([text("User-agent: *\nDisallow: /\n", status=404), text(RULES)])
    batches = [(0, [a.url("/private/1"), a.url("/public/1")]), (1.0, [a.url("/private/2"), a.url("/public/2")])]

    result = yield run_crawl(
        BatchSpider, mw_settings(ROBOTSTXT_CACHE_TTL=0.5, ROBOTSTXT_CACHE_MIN_TTL=0.1), batches=batches
    )

    assert len(robots_hits(a)) == 2
    assert sorted(h.path for h in page_hits(a)) == ["/private/1", "/public/1", "/public/2"]
    assert stat(result, "unavailable") == 1
    assert stat(result, "parsed") == 1
    assert stat(result, "refetch") == 1


# --------------------------------------------------------------------------- evictions made visible


def _revisits(origins, count: int, rounds: int) -> tuple[list, list[str]]:
    sites = []
    for n in range(count):
        site = origins(f"127.0.0.{n + 1}")
        site.robots(RULES)
        sites.append(site)
    # Round after round over every origin: an origin comes back after all the others.
    return sites, [s.url(f"/page/{r}") for r in range(rounds) for s in sites]


# Waiting requests take CONCURRENT_REQUESTS places: at most 4 requests are in the middleware at once,
# so no two visits of one origin (60 requests apart) share a fetch.
_REVISIT = {"ROBOTSTXT_MAX_WAITING": 0, "CONCURRENT_REQUESTS": 4}


@pytest_twisted.inlineCallbacks
def test_fetches_caused_by_evictions_are_counted_and_warned_about_once(origins):
    sites, urls = _revisits(origins, 60, 3)
    result = yield run_crawl(urls, mw_settings(ROBOTSTXT_CACHE_SIZE=10, **_REVISIT))

    assert [len(robots_hits(s)) for s in sites] == [3] * 60  # every robots.txt fetched once per visit
    assert sorted(result.responses) == sorted(urls)
    assert stat(result, "request_count") == 180
    assert stat(result, "refetch_evicted") == 120  # the second and third fetch of each origin
    assert stat(result, "cache_evicted") == 170  # every put beyond the 10 kept
    warnings = [m for m in result.messages(logging.WARNING) if "evicted from the in-memory cache" in m]
    assert len(warnings) == 1
    assert "ROBOTSTXT_CACHE_SIZE (now 10)" in warnings[0] and "ROBOTSTXT_STORE" in warnings[0]


@pytest_twisted.inlineCallbacks
def test_a_cache_that_holds_every_origin_evicts_nothing(origins):
    sites, urls = _revisits(origins, 60, 2)
    result = yield run_crawl(urls, mw_settings(ROBOTSTXT_CACHE_SIZE=60, **_REVISIT))

    assert [len(robots_hits(s)) for s in sites] == [1] * 60
    assert stat(result, "cache_evicted") == stat(result, "refetch_evicted") == 0
    assert not result.logged("evicted from the in-memory cache")


@pytest_twisted.inlineCallbacks
def test_with_a_store_evicted_origins_are_loaded_not_fetched(origins, tmp_path):
    sites, urls = _revisits(origins, 60, 3)
    settings = mw_settings(ROBOTSTXT_CACHE_SIZE=10, ROBOTSTXT_STORE="disk", ROBOTSTXT_STORE_PATH=str(tmp_path),
                           **_REVISIT)
    result = yield run_crawl(urls, settings)

    assert [len(robots_hits(s)) for s in sites] == [1] * 60
    assert stat(result, "store_hit") == 120 and stat(result, "cache_evicted") == 170
    assert stat(result, "refetch_evicted") == 0
    assert not result.logged("evicted from the in-memory cache")
