"""RobotsTxtMiddleware when things go wrong, in real crawls against loopback origins:
a redirect to an unusable Location, a Redis that accepts connections and never
answers, compression bombs, a robots.txt larger than DOWNLOAD_MAXSIZE, an LRU cache
too small for the failing origins, a downloader middleware that raises, thousands
of held requests released or dropped at once, a request meta key of the wrong type,
ROBOTSTXT_MAX_WAIT counted from the origin's first failure, and an unexpected
exception in a fetch. Each ends in a state with a known next step, and the crawl
ends."""

from __future__ import annotations

import functools
import gzip
import itertools
import logging
import os
import subprocess
import sys
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import pytest_twisted
from crawl import ListSpider, run_crawl
from middleware_support import (
    BatchSpider,
    TrackingSpider,
    mw_settings,
    page_hits,
    robots_hits,
    stat,
    text,
    until,
)
from optional import missing
from reactorless import blockon, command_options
from scrapy import Request
from scrapy.http import Response
from servers import Gate, Huge, Redirect, SilentListener, Stall, Static, ThreadedOrigin, server_reactor
from twisted.internet import defer

from scrapy_rfc9309 import RobotsTxtMiddleware
from scrapy_rfc9309 import signals as rfc_signals
from scrapy_rfc9309.exceptions import RobotsTxtForbidden, RobotsTxtMetaError, RobotsTxtUnreachable
from scrapy_rfc9309.lifecycle.fetch import RobotsFetcher

REPO = Path(__file__).resolve().parent.parent
RULES = "User-agent: *\nDisallow: /private\n"


def _failing(status: int = 503) -> Static:
    # An error page that would allow everything if it were parsed.
    return Static(b"User-agent: *\nAllow: /\n", status, {"Content-Type": "text/plain"})


def _errors(result: Any, kind: type[BaseException]) -> list[Any]:
    return [e.exception for e in result.errors if isinstance(e.exception, kind)]


# --------------------------------------------------------------------------- 1. unusable redirects

UNUSABLE_LOCATIONS = ["http://[::1", "http://127.0.0.1:99999/robots.txt", "http://a b/robots.txt"]


@pytest.mark.parametrize("location", UNUSABLE_LOCATIONS)
@pytest_twisted.inlineCallbacks
def test_a_redirect_to_an_unusable_location_is_unavailable_and_fetched_once(origins, location):
    a = origins()
    a["/robots.txt"] = Redirect(location)
    first = [a.url(f"/page/{i}") for i in range(3)]
    later = [a.url(f"/private/{i}") for i in range(3)]  # judged from the cached state

    result = yield run_crawl(BatchSpider, mw_settings(), batches=[(0, first), (0.3, later)])

    assert len(robots_hits(a)) == 1
    assert sorted(result.responses) == sorted(first + later)  # unavailable: everything is allowed
    assert result.errors == []
    assert stat(result, "redirect_failed") == 1
    assert stat(result, "unavailable") == 1
    assert stat(result, "request_count") == 1
    assert result.messages(logging.ERROR) == []
    assert result.stats["finish_reason"] == "finished"


@pytest.fixture(params=UNUSABLE_LOCATIONS)
def redirecting_server(request: pytest.FixtureRequest) -> Iterator[ThreadedOrigin]:
    """robots.txt answers a 301 to the location; every other path an empty 200; every path received is
    recorded."""
    with ThreadedOrigin(default=(200, {}, b"")) as server:
        server.routes["/robots.txt"] = (301, {"Location": request.param}, b"")
        yield server


def test_the_command_reports_a_redirect_to_an_unusable_location_as_unavailable(tmp_path, redirecting_server):
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith("SCRAPY_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    url = redirecting_server.url("/private/x")

    run = subprocess.run([sys.executable, "-m", "scrapy", "robotstxt", url, *command_options()], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60, check=False)

    assert run.returncode == 0, run.stderr
    assert "Access:     unavailable (status 301, redirect to an unusable Location" in run.stdout, run.stdout
    assert "Verdict:    allowed (robots.txt unavailable: everything allowed)" in run.stdout
    assert redirecting_server.received == ["/robots.txt"]
    assert "Traceback" not in run.stderr


# --------------------------------------------------------------------------- 2. a Redis that never answers


@pytest.fixture
def silent_server() -> Iterator[tuple[str, SilentListener]]:
    listener = SilentListener().start()
    yield f"redis://{listener.netloc}/0", listener
    blockon(listener.stop())


@pytest_twisted.inlineCallbacks
def test_a_redis_that_accepts_connections_and_never_answers_costs_one_timeout_not_one_per_origin(
        origins, silent_server):
    url, listener = silent_server
    sites = []
    for n in range(40):
        site = origins(f"127.0.0.{n + 1}")
        site.robots(RULES)
        sites.append(site)
    urls = [s.url("/public") for s in sites] + [s.url("/private/1") for s in sites]
    settings = mw_settings(ROBOTSTXT_STORE="redis", ROBOTSTXT_REDIS_URL=url, ROBOTSTXT_STORE_TIMEOUT=0.5,
                           ROBOTSTXT_STORE_RETRY_DELAY=600, CONCURRENT_REQUESTS=64)

    result = yield run_crawl(urls, settings)

    assert result.stats["finish_reason"] == "finished"
    assert [len(robots_hits(s)) for s in sites] == [1] * 40
    assert sorted(result.responses) == sorted(s.url("/public") for s in sites)
    assert len(_errors(result, RobotsTxtForbidden)) == 40
    assert len(result.errors) == 40
    unavailable = [m for m in result.messages(logging.WARNING) if "is unavailable" in m]
    assert len(unavailable) == 1, unavailable
    # One attempt (one connection, one timeout) found the store down for all 40 origins; the
    # calls after it failed at once (no probe within ROBOTSTXT_STORE_RETRY_DELAY).
    assert listener.connections == 1
    assert stat(result, "store_error") == 1
    assert stat(result, "store_hit") == 0 and stat(result, "store_saved") == 0


# --------------------------------------------------------------------------- 3. compression bombs

#: The bomb inflates to 1 GiB: RULES, then newlines.
BOMB_SIZE = 1 << 30
#: Peak of the memory the crawl allocates (tracemalloc) while it decodes a bomb.
MEMORY_BOUND = 100 * 1024 * 1024


@functools.cache
def _gzip_bomb() -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [compressor.compress(RULES.encode())]
    block = b"\n" * (1 << 20)
    for _ in range(BOMB_SIZE // len(block)):
        parts.append(compressor.compress(block))
    parts.append(compressor.flush())
    return b"".join(parts)


@pytest.mark.parametrize("layers", [1, 2], ids=["gzip", "gzip-gzip"])
@pytest_twisted.inlineCallbacks
def test_a_gzip_bomb_is_obeyed_from_its_first_bytes_in_bounded_memory(origins, layers):
    a = origins()
    body = _gzip_bomb() if layers == 1 else gzip.compress(_gzip_bomb(), mtime=0)
    assert len(body) * 1000 < BOMB_SIZE
    a["/robots.txt"] = text(body, Content_Encoding=", ".join(["gzip"] * layers))
    urls = [a.url("/public/1"), a.url("/private/1"), a.url("/public/2"), a.url("/private/2")]

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = yield run_crawl(urls, mw_settings())
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()

    assert len(robots_hits(a)) == 1
    assert sorted(h.path for h in page_hits(a)) == ["/public/1", "/public/2"]
    assert sorted(result.responses) == [a.url("/public/1"), a.url("/public/2")]
    assert len(_errors(result, RobotsTxtForbidden)) == 2
    assert stat(result, "parsed") == 1
    assert stat(result, "truncated") == 1
    assert peak < MEMORY_BOUND, f"{peak / 1e6:.0f} MB allocated during the crawl"


def _encoders() -> dict[str, Any]:
    def br(data: bytes) -> bytes:
        try:
            import brotli
        except ImportError:
            missing("the brotli package is not installed")
        return bytes(brotli.compress(data))

    def zstd(data: bytes) -> bytes:
        for name in ("compression.zstd", "backports.zstd", "zstandard"):
            try:
                return bytes(__import__(name, fromlist=["compress"]).compress(data))
            except ImportError:
                continue
        missing("no zstd package (compression.zstd, backports.zstd, zstandard) is installed")

    return {"gzip": lambda d: gzip.compress(d, mtime=0), "deflate": zlib.compress, "br": br, "zstd": zstd}


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
@pytest_twisted.inlineCallbacks
def test_a_compressed_robots_txt_larger_than_download_maxsize_once_decoded_is_obeyed(origins, coding):
    """The file is 1 KB compressed and about 5 KB decoded: DOWNLOAD_MAXSIZE (2000) is
    for pages, not for the decoded robots.txt (its own limit is ROBOTSTXT_MAX_SIZE)."""
    body = (RULES + "# padding\n" * 500).encode()
    encoded = _encoders()[coding](body)
    assert len(encoded) < 2000 < len(body)
    a = origins()
    a["/robots.txt"] = text(encoded, Content_Encoding=coding)
    a.default = Static(b"ok", headers={"Content-Type": "text/plain"})
    urls = [a.url("/public/1"), a.url("/private/1")]

    result = yield run_crawl(urls, mw_settings(DOWNLOAD_MAXSIZE=2000))

    assert len(robots_hits(a)) == 1
    assert result.responses == [a.url("/public/1")]
    assert [type(e) for e in result.errors_for(a.url("/private/1"))] == [RobotsTxtForbidden]
    assert stat(result, "parsed") == 1
    assert stat(result, "truncated") == 0


# --------------------------------------------------------------------------- 4. DOWNLOAD_MAXSIZE


@pytest.mark.parametrize("content_length", [True, False], ids=["content-length", "chunked"])
@pytest_twisted.inlineCallbacks
def test_a_robots_txt_larger_than_download_maxsize_is_truncated_and_parsed(origins, content_length):
    a = origins()
    huge = Huge(600_000, prefix=RULES.encode(), content_length=content_length)
    a["/robots.txt"] = huge
    urls = [a.url("/public/1"), a.url("/private/1"), a.url("/public/2")]

    result = yield run_crawl(urls, mw_settings(DOWNLOAD_MAXSIZE=1000))

    assert len(robots_hits(a)) == 1
    assert sorted(result.responses) == [a.url("/public/1"), a.url("/public/2")]
    assert [type(e) for e in result.errors_for(a.url("/private/1"))] == [RobotsTxtForbidden]
    assert stat(result, "parsed") == 1
    assert stat(result, "truncated") == 1
    assert stat(result, "unreachable") == 0
    assert stat(result, "held") == 0
    assert result.stats["finish_reason"] == "finished"


# --------------------------------------------------------------------------- 5. LRU eviction


def _evicted_crawl(origins: Any, first_host: int, cache_size: int) -> Any:
    sites = []
    for n in range(30):
        site = origins(f"127.0.0.{first_host + n}")
        site["/robots.txt"] = _failing()
        sites.append(site)
    # Every origin gets a request every 0.5 s, for 2 s: each batch after the first finds the origin's
    # robots.txt unreachable, its retry an hour away (its requests held, then dropped once
    # ROBOTSTXT_MAX_WAIT has passed), or, in the small cache, its state evicted meanwhile.
    batches = [(0 if i == 0 else 0.5, [s.url(f"/page/{i}") for s in sites]) for i in range(5)]
    settings = mw_settings(ROBOTSTXT_CACHE_SIZE=cache_size, ROBOTSTXT_RETRY_DELAY=3600, ROBOTSTXT_RETRY_MAX_DELAY=3600,
                           ROBOTSTXT_MAX_WAIT=1, CONCURRENT_REQUESTS=64)
    return sites, run_crawl(BatchSpider, settings, batches=batches)


@pytest_twisted.inlineCallbacks
def test_an_unreachable_origin_evicted_from_the_cache_keeps_its_backoff(origins):
    small_sites, crawl = _evicted_crawl(origins, 1, cache_size=5)
    small = yield crawl
    large_sites, crawl = _evicted_crawl(origins, 31, cache_size=1000)
    large = yield crawl

    # The retry is an hour away, however many batches come and whenever they come: one fetch per
    # origin, whether its state stayed in the cache or was evicted (25 of the 30 were, more than once).
    assert [len(robots_hits(s)) for s in small_sites] == [1] * 30
    assert [len(robots_hits(s)) for s in large_sites] == [1] * 30
    assert stat(small, "cache_evicted") >= 25
    for result in (small, large):
        assert result.responses == []
        assert len(_errors(result, RobotsTxtUnreachable)) == 150
        assert result.stats["finish_reason"] == "finished"
    assert all(page_hits(s) == [] for s in small_sites + large_sites)


# --------------------------------------------------------------------------- 6. a downloader middleware raises


class BoomOnRobots:
    """Raises in ``process_response`` for robots.txt, ``remaining`` times (-1: always)."""

    remaining: ClassVar[int] = -1
    raised: ClassVar[int] = 0

    def process_response(self, request: Request, response: Any, spider: Any = None) -> Any:
        cls = type(self)
        if request.url.endswith("/robots.txt") and cls.remaining != 0:
            cls.remaining -= 1
            cls.raised += 1
            raise RuntimeError("boom")
        return response


@pytest.mark.parametrize("times", [1, -1], ids=["once", "always"])
@pytest_twisted.inlineCallbacks
def test_a_downloader_middleware_that_raises_for_robots_txt_is_a_failed_fetch_with_backoff(origins, times):
    a = origins()
    a.robots(RULES)
    BoomOnRobots.remaining = times
    BoomOnRobots.raised = 0
    urls = [a.url("/public/1"), a.url("/private/1"), a.url("/public/2")]
    settings = mw_settings(ROBOTSTXT_RETRY_DELAY=0.5, ROBOTSTXT_RETRY_MAX_DELAY=0.5, ROBOTSTXT_MAX_WAIT=2)
    settings["DOWNLOADER_MIDDLEWARES"] = {**settings["DOWNLOADER_MIDDLEWARES"], f"{__name__}.BoomOnRobots": 543}

    result = yield run_crawl(urls, settings)

    everything = [r.getMessage() for r in result.log_records] + [
        str(r.exc_info[1]) for r in result.log_records if r.exc_info]
    assert not [m for m in everything if "KeyError" in m]
    # The traceback once per cause, not once per retry.
    (error,) = result.messages(logging.ERROR)
    assert "RuntimeError: boom" in error and "downloader middleware" in error
    again = [m for m in result.messages() if "failed again: RuntimeError: boom" in m]
    assert len(again) == BoomOnRobots.raised - 1
    fetches = len(robots_hits(a))
    assert stat(result, "unreachable") == BoomOnRobots.raised
    assert result.stats["finish_reason"] == "finished"
    if times == 1:
        # Held, retried once after the backoff, then obeyed.
        assert fetches == 2
        assert sorted(result.responses) == [a.url("/public/1"), a.url("/public/2")]
        assert result.error_types() == [RobotsTxtForbidden]
        assert stat(result, "held") == 3 and stat(result, "released") == 3
    else:
        # A retry every 0.5 s (at the earliest: a loaded machine only makes it later) until the requests
        # are dropped 2 s after the first failure: no fetch loop.
        at = [hit.time for hit in robots_hits(a)]
        assert all(later - earlier >= 0.5 * 0.95 for earlier, later in itertools.pairwise(at)), at
        assert BoomOnRobots.raised == fetches
        assert page_hits(a) == []
        assert [e.reason for e in _errors(result, RobotsTxtUnreachable)] == ["max_wait"] * 3


# --------------------------------------------------------------------------- 7. releases in batches

HELD = 2000


class PassCounter:
    """Placed right after the robots.txt middleware: counts the requests it passes
    on (and answers them itself: the test is about the release, not about 2,000
    downloads) and the ones it drops, and, from the first one on, samples the count
    once per reactor turn (``samples``) until all ``HELD`` are through."""

    passed: ClassVar[int] = 0
    dropped: ClassVar[int] = 0
    samples: ClassVar[list[int]] = []
    ticking: ClassVar[bool] = False

    @classmethod
    def reset(cls) -> None:
        cls.passed = cls.dropped = 0
        cls.samples = []
        cls.ticking = False

    @classmethod
    def _through(cls) -> int:
        return cls.passed + cls.dropped

    @classmethod
    def _start_ticking(cls) -> None:
        if not cls.ticking:
            cls.ticking = True
            server_reactor().callLater(0, cls._tick)

    @classmethod
    def _tick(cls) -> None:
        cls.samples.append(cls._through())
        if cls._through() < HELD and len(cls.samples) < 100_000:
            server_reactor().callLater(0, cls._tick)

    def process_request(self, request: Request, spider: Any = None) -> Response | None:
        if "/page/" not in request.url:
            return None
        type(self).passed += 1
        self._start_ticking()
        return Response(request.url, body=b"ok", request=request)

    def process_exception(self, request: Request, exception: BaseException, spider: Any = None) -> None:
        if isinstance(exception, RobotsTxtUnreachable):
            type(self).dropped += 1
            self._start_ticking()


def _batch_settings(**extra: Any) -> dict[str, Any]:
    settings = mw_settings(CONCURRENT_REQUESTS=64, CONCURRENT_REQUESTS_PER_DOMAIN=64, ROBOTSTXT_MAX_WAITING=HELD + 500,
                           LOG_LEVEL="INFO", **extra)
    settings["DOWNLOADER_MIDDLEWARES"] = {**settings["DOWNLOADER_MIDDLEWARES"], f"{__name__}.PassCounter": 101}
    return settings


@defer.inlineCallbacks
def _all_held(gate: Gate, origin: Any) -> Any:
    """Wait until robots.txt was asked for and every request waits for it (in the
    downloader, or parked)."""
    yield origin.wait_for("/robots.txt")

    def all_wait() -> bool:
        spider = TrackingSpider.latest
        middleware = None if spider is None else spider.crawler.get_downloader_middleware(RobotsTxtMiddleware)
        return middleware is not None and middleware.states.waiting == HELD

    yield defer.ensureDeferred(until(all_wait, f"the {HELD} requests all wait for the robots.txt"))


@pytest_twisted.inlineCallbacks
def test_thousands_of_held_requests_are_released_in_batches(origins):
    a = origins()
    gate = Gate(text("User-agent: *\nAllow: /\n"))
    a["/robots.txt"] = gate
    PassCounter.reset()
    probes: list[int] = []

    def fetched(**kwargs: Any) -> None:
        server_reactor().callLater(0, lambda: probes.append(PassCounter.passed))

    TrackingSpider.latest = None
    crawl = run_crawl(TrackingSpider, _batch_settings(), urls=[a.url(f"/page/{i}") for i in range(HELD)])
    yield _all_held(gate, a)
    spider = TrackingSpider.latest
    assert spider is not None
    spider.crawler.signals.connect(fetched, signal=rfc_signals.robotstxt_fetched, weak=False)
    assert PassCounter.passed == 0
    gate.open()
    result = yield crawl

    assert a.paths() == ["/robots.txt"]
    assert PassCounter.passed == HELD
    assert len(result.responses) == HELD and result.errors == []
    # The reactor ran other work (the probe, the sampler) before the release was over.
    assert len(probes) == 1 and probes[0] < HELD, probes
    assert any(0 < n < HELD for n in PassCounter.samples), PassCounter.samples[:20]


@pytest_twisted.inlineCallbacks
def test_thousands_of_held_requests_are_dropped_in_batches(origins):
    a = origins()
    gate = Gate(_failing())
    a["/robots.txt"] = gate
    PassCounter.reset()

    TrackingSpider.latest = None
    settings = _batch_settings(ROBOTSTXT_MAX_WAIT=1, ROBOTSTXT_RETRY_DELAY=60, ROBOTSTXT_RETRY_MAX_DELAY=60)
    crawl = run_crawl(TrackingSpider, settings, urls=[a.url(f"/page/{i}") for i in range(HELD)])
    yield _all_held(gate, a)
    gate.open()  # 503: held, then dropped once MAX_WAIT has passed
    result = yield crawl

    assert len(robots_hits(a)) == 1
    assert PassCounter.passed == 0 and PassCounter.dropped == HELD
    assert stat(result, "held") == HELD
    assert stat(result, "dropped_unreachable") == HELD
    assert len(_errors(result, RobotsTxtUnreachable)) == HELD
    # The reactor ran other work (the sampler) before the drop was over.
    assert any(0 < n < HELD for n in PassCounter.samples), PassCounter.samples[:20]


# --------------------------------------------------------------------------- 8. meta of the wrong type


@pytest_twisted.inlineCallbacks
def test_a_robotstxt_user_agent_meta_of_the_wrong_type_drops_only_that_request(origins):
    a = origins()
    a.robots(RULES)
    bad = {
        a.url("/public/int"): 123,
        a.url("/public/list"): ["a"],
        a.url("/public/int2"): 456,
    }
    requests = [Request(url, meta={"robotstxt_user_agent": value}, dont_filter=True) for url, value in bad.items()]
    good = [Request(a.url("/public/ok"), dont_filter=True),
            Request(a.url("/public/str"), meta={"robotstxt_user_agent": "ExampleBot"}, dont_filter=True),
            Request(a.url("/private/1"), dont_filter=True)]

    result = yield run_crawl(ListSpider, mw_settings(), urls=[*requests, *good])

    assert sorted(result.responses) == [a.url("/public/ok"), a.url("/public/str")]
    assert [type(e) for e in result.errors_for(a.url("/private/1"))] == [RobotsTxtForbidden]
    for url in bad:
        (error,) = result.errors_for(url)
        assert isinstance(error, RobotsTxtMetaError), repr(error)
        assert error.key == "robotstxt_user_agent"
        assert "robotstxt_user_agent" in str(error)
    assert sorted(h.path for h in page_hits(a)) == ["/public/ok", "/public/str"]
    errors = result.messages(logging.ERROR)
    assert len(errors) == 2, errors  # once per type: int, list
    assert all("robotstxt_user_agent" in m for m in errors)
    assert stat(result, "invalid_meta") == 3
    assert result.stats["finish_reason"] == "finished"


# --------------------------------------------------------------------------- 9. MAX_WAIT from the first failure


class _NotesErrorsSpider(BatchSpider):
    """Notes, as each batch is sent, how many requests had been dropped by then."""

    name = "notes_errors"

    async def start(self):  # type: ignore[override]
        self.dropped_before: list[int] = []
        async for request in super().start():
            if self.crawl_result is not None:
                self.dropped_before.append(len(self.crawl_result.errors))
            yield request


@pytest_twisted.inlineCallbacks
def test_max_wait_counts_from_the_first_failed_fetch_not_from_each_request(origins):
    a = origins()
    a["/robots.txt"] = _failing()
    first, second, third = a.url("/page/1"), a.url("/page/2"), a.url("/page/3")
    settings = mw_settings(ROBOTSTXT_MAX_WAIT=2, ROBOTSTXT_RETRY_DELAY=0.3, ROBOTSTXT_RETRY_MAX_DELAY=0.5)
    spiders: list[Any] = []

    class Spider(_NotesErrorsSpider):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            spiders.append(self)

    # The origin fails from t=0: the first request is due to be dropped at t=2, and so is the
    # second, sent at t=1.2 (not at t=3.2); the third, sent at t=2.6, is dropped at once.
    result = yield run_crawl(Spider, settings, batches=[(0, [first]), (1.2, [second]), (1.4, [third])])

    (spider,) = spiders
    assert spider.dropped_before == [0, 0, 2]
    for url in (first, second, third):
        (error,) = result.errors_for(url)
        assert isinstance(error, RobotsTxtUnreachable) and error.reason == "max_wait"
    assert sorted(e.url for e in result.errors[:2]) == [first, second]  # dropped together
    assert result.errors[2].url == third
    assert stat(result, "held") == 2  # the third was never held
    assert stat(result, "dropped_unreachable") == 3
    assert page_hits(a) == []
    assert len(robots_hits(a)) >= 2


# --------------------------------------------------------------------------- 10. an unexpected exception


@pytest_twisted.inlineCallbacks
def test_an_unexpected_exception_in_a_fetch_is_a_failed_fetch_retried_after_the_backoff(origins, monkeypatch):
    a = origins()
    a.robots(RULES)
    original = RobotsFetcher.fetch
    calls: list[str] = []

    async def fetch(self: RobotsFetcher, origin: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(str(origin))
        if len(calls) == 1:
            raise RuntimeError("unexpected in fetch")
        return await original(self, origin, *args, **kwargs)

    monkeypatch.setattr(RobotsFetcher, "fetch", fetch)
    urls = [a.url("/public/1"), a.url("/private/1"), a.url("/public/2")]
    settings = mw_settings(ROBOTSTXT_RETRY_DELAY=0.5, ROBOTSTXT_RETRY_MAX_DELAY=0.5, ROBOTSTXT_MAX_WAIT=30)

    result = yield run_crawl(urls, settings)

    errors = [r for r in result.log_records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    (record,) = errors
    assert "unexpected error" in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)
    assert stat(result, "fetch_error") == 1
    # Held, then fetched again once, after the backoff (not at once, not in a loop).
    assert calls == [a.base, a.base]
    assert len(robots_hits(a)) == 1
    assert stat(result, "unreachable") == 1 and stat(result, "retry") == 1 and stat(result, "parsed") == 1
    assert stat(result, "held") == 3 and stat(result, "released") == 3
    assert sorted(result.responses) == [a.url("/public/1"), a.url("/public/2")]
    assert result.error_types() == [RobotsTxtForbidden]
    assert result.stats["finish_reason"] == "finished"


@pytest.mark.parametrize("pages", [2, 12], ids=["in the downloader", "parked"])
@pytest_twisted.inlineCallbacks
def test_a_retry_in_flight_when_the_held_requests_are_dropped_is_abandoned(origins, pages):
    """A robots.txt that never answers: the first fetch times out, a retry starts, and
    ROBOTSTXT_MAX_WAIT passes while that retry is still downloading. The retry serves
    nobody then: it is cancelled, so the crawl does not stay open until it times out
    (the origin counts one unreachable fetch, not two). With 12 pages, 10 of them are
    parked outside the downloader: scheduled again when they are given up, they are
    dropped as they come back, not made to wait for a fetch of their own."""
    a = origins()
    a["/robots.txt"] = Stall()
    urls = [a.url(f"/page/{i}") for i in range(pages)]
    settings = mw_settings(DOWNLOAD_TIMEOUT=1, ROBOTSTXT_RETRY_DELAY=0.2, ROBOTSTXT_RETRY_MAX_DELAY=0.2,
                           ROBOTSTXT_MAX_WAIT=0.6, CONCURRENT_REQUESTS_PER_DOMAIN=2)

    result = yield run_crawl(urls, settings)

    assert len(robots_hits(a)) == 2  # the first fetch and the retry
    assert stat(result, "unreachable") == 1  # the retry ended in no state: it was cancelled
    assert stat(result, "dropped_unreachable") == pages
    assert result.stats["finish_reason"] == "finished"
    assert page_hits(a) == []
