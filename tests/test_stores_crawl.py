"""``ROBOTSTXT_STORE``: real crawls against local origins with the disk store (a real
SQLite file) and the Redis store (a real ``redis-server``). Restarts within the
lifetime fetch nothing; an origin that stays unreachable keeps its last good copy;
a lock held by another process is waited for, and one whose holder died expires;
Redis going away never stops the crawl."""

from __future__ import annotations

import itertools
import json
import logging
import time
import uuid
from pathlib import Path
from typing import Any, ClassVar

import pytest
import pytest_twisted
import redis
from crawl import ListSpider, run_crawl
from middleware_support import (
    channel_waited,
    mw_settings,
    page_hits,
    record_of_another_process,
    robots_hits,
    sleep,
    stat,
    text,
    until,
)
from scrapy import Request
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from servers import Sequence, SilentListener, Static

from scrapy_rfc9309.components.robotstxt_middleware import RobotsTxtMiddleware
from scrapy_rfc9309.exceptions import RobotsTxtConfigError, RobotsTxtForbidden, RobotsTxtUnreachable
from scrapy_rfc9309.stores import Claim, Store
from scrapy_rfc9309.stores.disk import FILENAME
from scrapy_rfc9309.stores.record import Record

RULES = "User-agent: *\nDisallow: /private\n"


def _settings(kind: str, where: str, **extra: Any) -> dict[str, Any]:
    location = {"ROBOTSTXT_STORE_PATH": where} if kind == "disk" else {"ROBOTSTXT_REDIS_URL": where}
    return mw_settings(ROBOTSTXT_STORE=kind, **location, **extra)


@pytest.fixture(params=["disk", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """``(ROBOTSTXT_STORE, where)`` for each persistent store."""
    if request.param == "disk":
        return "disk", str(tmp_path / "store")
    return "redis", request.getfixturevalue("redis_url")


def _sites(origins: Any, count: int = 3, rules: str = RULES) -> list[Any]:
    sites = []
    for n in range(count):
        site = origins(f"127.0.0.{n + 1}")
        site.robots(rules)
        sites.append(site)
    return sites


def _expiry(crawler: Any, url: str) -> float:
    """When the robots.txt state of ``url``'s origin that ``crawler`` holds expires."""
    state = crawler.get_downloader_middleware(RobotsTxtMiddleware).state_for(url)
    assert state is not None, f"no state of {url}"
    return float(state.expires_at)


def _expired(result: Any, url: str) -> Any:
    """Fires once the state of ``url``'s origin that the crawl of ``result`` saved has expired (its
    own expiry, not a guess of it)."""
    expiry = _expiry(result.crawler, url)
    return deferred_from_coro(until(lambda: time.time() > expiry, f"the robots.txt of {url} expired"))


def _urls(sites: list[Any]) -> list[str]:
    return [u for s in sites for u in (s.url("/public"), s.url("/private/1"))]


# --------------------------------------------------------------------------- restarts


@pytest_twisted.inlineCallbacks
def test_a_restart_within_the_lifetime_fetches_no_robots_txt(origins, store):
    sites = _sites(origins)
    settings = _settings(*store)

    first = yield run_crawl(_urls(sites), settings)
    second = yield run_crawl(_urls(sites), settings)

    assert [len(robots_hits(s)) for s in sites] == [1, 1, 1]  # the first run's fetches only
    assert stat(first, "request_count") == 3 and stat(first, "store_saved") == 3
    assert stat(second, "request_count") == 0
    assert stat(second, "store_hit") == 3
    for result in (first, second):
        assert sorted(result.responses) == sorted(s.url("/public") for s in sites)
        assert stat(result, "forbidden") == 3
        assert set(result.error_types()) == {RobotsTxtForbidden}
    assert [h.path for s in sites for h in page_hits(s)] == ["/public"] * 6


@pytest_twisted.inlineCallbacks
def test_a_restart_after_the_lifetime_fetches_again(origins, store):
    (site,) = _sites(origins, 1)
    site["/robots.txt"] = text(RULES, Cache_Control="max-age=1")
    settings = _settings(*store, ROBOTSTXT_CACHE_MIN_TTL=0)

    first = yield run_crawl([site.url("/public")], settings)
    yield _expired(first, site.url("/public"))
    second = yield run_crawl([site.url("/public")], settings)

    assert len(robots_hits(site)) == 2
    assert stat(second, "refetch") == 1 and stat(second, "store_hit") == 0


@pytest_twisted.inlineCallbacks
def test_an_origin_unreachable_across_runs_keeps_its_last_good_copy(origins, store):
    (site,) = _sites(origins, 1)
    site["/robots.txt"] = Sequence([text(RULES), Static(b"<h1>down</h1>", 503)])
    settings = _settings(*store, ROBOTSTXT_CACHE_TTL=1, ROBOTSTXT_CACHE_MIN_TTL=0)

    first = yield run_crawl([site.url("/public")], settings)
    yield _expired(first, site.url("/public"))  # the next run finds the origin failing
    second = yield run_crawl([site.url("/public"), site.url("/private/2")], settings)

    assert len(robots_hits(site)) == 2
    assert stat(second, "stale_used") == 1 and stat(second, "unreachable") == 1
    assert second.responses == [site.url("/public")]  # judged by the copy of the first run
    assert second.error_types() == [RobotsTxtForbidden]


@pytest_twisted.inlineCallbacks
def test_an_unreachable_result_is_shared_until_its_retry_is_due(origins, store):
    (site,) = _sites(origins, 1)
    site["/robots.txt"] = Sequence([Static(b"busy", 503), text(RULES)])
    settings = _settings(*store, ROBOTSTXT_RETRY_DELAY=1.5, ROBOTSTXT_RETRY_MAX_DELAY=5, ROBOTSTXT_MAX_WAIT=0.3)

    first = yield run_crawl([site.url("/public")], settings)
    assert first.error_types() == [RobotsTxtUnreachable]  # held, then dropped after MAX_WAIT
    started = time.monotonic()
    second = yield run_crawl([site.url("/public")],
                             {**settings, "ROBOTSTXT_MAX_WAIT": 5})

    first_fetch, retry = robots_hits(site)
    assert stat(second, "store_hit") == 1 and stat(second, "retry") == 1
    # The second run waited for the retry time the first run stored rather than fetching at once.
    assert retry.time - first_fetch.time >= 1.4
    assert retry.time >= started
    assert second.responses == [site.url("/public")]


# --------------------------------------------------------------------------- a corrupt disk store


@pytest_twisted.inlineCallbacks
def test_a_corrupt_disk_store_is_set_aside_with_a_warning_and_rebuilt(origins, tmp_path):
    sites = _sites(origins, 2)
    directory = tmp_path / "store"
    directory.mkdir()
    (directory / FILENAME).write_bytes(b"this is not a database\n" * 500)
    settings = _settings("disk", str(directory))

    first = yield run_crawl(_urls(sites), settings)
    second = yield run_crawl(_urls(sites), settings)

    aside = [p.name for p in directory.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1
    assert (directory / aside[0]).read_bytes().startswith(b"this is not a database")
    assert first.logged("set aside", logging.WARNING)
    assert sorted(first.responses) == sorted(s.url("/public") for s in sites)
    assert stat(first, "store_error") == 0
    assert stat(second, "request_count") == 0 and stat(second, "store_hit") == 2  # the new file works


@pytest_twisted.inlineCallbacks
def test_a_disk_store_path_that_is_a_file_stops_the_crawl_at_start_up(origins, tmp_path):
    (site,) = _sites(origins, 1)
    (tmp_path / "file").write_text("x")
    with pytest.raises(RobotsTxtConfigError, match="ROBOTSTXT_STORE_PATH"):
        yield run_crawl([site.url("/public")], _settings("disk", str(tmp_path / "file")))
    assert site.requests == []


# --------------------------------------------------------------------------- waiting for another process


def _redis(url: str) -> redis.Redis:
    return redis.Redis.from_url(url)


def _store_as_another_process(client: redis.Redis, site: Any, body: bytes, fetched_at: float,
                              expires_at: float) -> None:
    """Write the record another process would save after fetching ``site``'s robots.txt."""
    meta = {"v": 1, "access": "parsed", "fetched_at": fetched_at, "expires_at": expires_at, "good_at": fetched_at,
            "failures": 0, "url": site.url("/robots.txt"), "status": 200}
    client.hset(f"robotstxt:{{{site.base}}}:state", mapping={
        "fetched_at": repr(fetched_at), "expires_at": repr(expires_at), "keep_until": repr(expires_at + 3600),
        "meta": json.dumps(meta), "body": body})


@pytest.fixture(params=["redis", "redis-cluster"])
def redis_where(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """``(URL, settings)`` of a single Redis and of a three-master Redis Cluster."""
    if request.param == "redis":
        return request.getfixturevalue("redis_url"), {}
    return request.getfixturevalue("redis_cluster_url"), {"ROBOTSTXT_REDIS_CLUSTER": True}


@pytest_twisted.inlineCallbacks
def test_a_process_waits_for_the_fetch_of_another_and_is_woken_by_its_save(origins, redis_where):
    from scrapy.utils.defer import deferred_from_coro

    from scrapy_rfc9309.stores.redis import RedisStore

    url, extra = redis_where
    (site,) = _sites(origins, 1)
    site.robots("User-agent: *\nDisallow: /\n")  # what a fetch by this process would find
    key = site.base
    other = RedisStore(url, cluster=bool(extra))  # another process, in this reactor
    yield deferred_from_coro(other.open())
    claim, _ = yield deferred_from_coro(other.claim(key, "another-process", time.time(), 30))
    assert claim is Claim.ACQUIRED
    saved: list[bool] = []

    async def the_other_process_finishes() -> None:
        # Saved once this process waits on the origin's channel (however long the
        # crawl takes to start), so that the save is what wakes it.
        await channel_waited(other, other.channel(key))
        now = time.time()
        record = record_of_another_process(site, RULES.encode(), now, now + 3600)
        saved.append(await other.save(key, record, "another-process"))

    finishing = deferred_from_coro(the_other_process_finishes())
    result = yield run_crawl([site.url("/public"), site.url("/private/1")], _settings("redis", url, **extra))
    yield finishing
    yield deferred_from_coro(other.close())

    assert saved == [True]
    assert robots_hits(site) == []  # this process fetched nothing
    assert stat(result, "store_wait") == 1 and stat(result, "store_hit") == 1
    # Woken by the save: one claim before waiting, one after; no polling.
    assert stat(result, "store_woken") == 1 and stat(result, "store_poll") == 0
    assert result.responses == [site.url("/public")]  # judged by the other process's file
    assert result.error_types() == [RobotsTxtForbidden]


@pytest_twisted.inlineCallbacks
def test_a_forged_save_message_from_another_database_is_not_believed(origins, redis_url):
    """A client of database 1 publishes an ``Allow: /`` record on the channel the
    crawl (database 0) waits on, then the fetcher saves the origin's real rules: the
    crawl reads the key and the page they disallow is not crawled."""
    from scrapy.utils.defer import deferred_from_coro

    from scrapy_rfc9309.stores.redis import RedisStore

    (site,) = _sites(origins, 1)
    key = site.base
    other = RedisStore(redis_url)  # the fetching process, in this reactor
    yield deferred_from_coro(other.open())
    claim, _ = yield deferred_from_coro(other.claim(key, "another-process", time.time(), 30))
    assert claim is Claim.ACQUIRED
    forger = _redis(redis_url.rsplit("/", 1)[0] + "/1")

    async def forged_then_saved() -> None:
        await channel_waited(other, other.channel(key))
        now = time.time()
        allow = record_of_another_process(site, b"User-agent: *\nAllow: /\n", now, now + 3600)
        meta = allow.meta.encode()
        message = (b"R%r\n%r\n%r\n%d\n" % (allow.fetched_at, allow.expires_at, allow.keep_until, len(meta))
                   + meta + allow.body)
        for channel in (other.channel(key), f"robotstxt:{{{key}}}:saved"):  # this version's name, and the old one
            forger.publish(channel, message)
        real = record_of_another_process(site, RULES.encode(), now, now + 3600)
        assert await other.save(key, real, "another-process")

    finishing = deferred_from_coro(forged_then_saved())
    result = yield run_crawl([site.url("/public"), site.url("/private/1")], _settings("redis", redis_url))
    yield finishing
    yield deferred_from_coro(other.close())
    forger.close()

    assert robots_hits(site) == []  # the fetcher's save was read
    assert [h.path for h in page_hits(site)] == ["/public"]
    assert result.responses == [site.url("/public")]
    assert result.error_types() == [RobotsTxtForbidden]
    assert stat(result, "store_woken") >= 1 and stat(result, "store_hit") == 1


@pytest_twisted.inlineCallbacks
def test_the_fleet_lock_is_taken_when_the_fetch_starts_not_when_it_is_queued(origins, redis_url):
    """With one fetch place, the second origin's robots.txt waits in this process while the
    first one's is fetched: its lock is not held meanwhile (another process of the fleet may
    fetch it), and it is taken once its own fetch starts."""
    from servers import Gate

    first, second = _sites(origins, 2)
    gate = Gate(text(RULES))
    first["/robots.txt"] = gate
    second_gate = Gate(text(RULES))
    second["/robots.txt"] = second_gate
    client = _redis(redis_url)
    crawl = run_crawl([first.url("/public"), second.url("/public")],
                      _settings("redis", redis_url, ROBOTSTXT_CONCURRENT_FETCHES=1))
    yield deferred_from_coro(until(lambda: gate.waiting + second_gate.waiting == 1, "one fetch started"))
    fetching, queued = (first, second) if gate.waiting else (second, first)
    assert client.exists(f"robotstxt:{{{fetching.base}}}:lock") == 1
    assert client.exists(f"robotstxt:{{{queued.base}}}:lock") == 0  # queued here: not locked for the fleet
    (gate if fetching is first else second_gate).open()
    yield deferred_from_coro(until(lambda: client.exists(f"robotstxt:{{{queued.base}}}:lock") == 1,
                                   "the queued origin's lock, once its fetch starts"))
    gate.open()
    second_gate.open()
    result = yield crawl
    assert sorted(result.responses) == sorted([first.url("/public"), second.url("/public")])
    assert stat(result, "fetch_queued") == 1 and stat(result, "store_saved") == 2
    client.close()


@pytest_twisted.inlineCallbacks
def test_the_lock_of_a_fetcher_that_died_expires_and_another_fetches(origins, redis_url):
    (site,) = _sites(origins, 1)
    client = _redis(redis_url)
    client.set(f"robotstxt:{{{site.base}}}:lock", "a-process-that-died", px=1200)
    started = time.monotonic()

    result = yield run_crawl([site.url("/public"), site.url("/private/1")], _settings("redis", redis_url))

    (hit,) = robots_hits(site)
    assert hit.time - started >= 1.0  # not before the dead process's lock ran out
    assert stat(result, "store_wait") == 1
    assert stat(result, "store_woken") == 0 and stat(result, "store_poll") >= 1  # woken by the lock's expiry
    assert result.responses == [site.url("/public")]
    assert client.exists(f"robotstxt:{{{site.base}}}:state") == 1
    assert client.exists(f"robotstxt:{{{site.base}}}:lock") == 0  # released with the save
    client.close()


@pytest_twisted.inlineCallbacks
def test_a_long_fetch_keeps_its_lock_renewed(origins, redis_url):
    from servers import Gate

    (site,) = _sites(origins, 1)
    gate = Gate(text(RULES))
    site["/robots.txt"] = gate
    client = _redis(redis_url)
    lock = f"robotstxt:{{{site.base}}}:lock"
    ttls: list[int] = []

    def renewed_past_its_lifetimes() -> bool:
        """The lock's TTL, sampled: renewed (its TTL went up) three times, so it outlived three of its
        0.6 s lifetimes while the fetch is held."""
        ttls.append(client.pttl(lock))
        return sum(1 for before, after in itertools.pairwise(ttls) if after > before > 0) >= 3

    crawl = run_crawl([site.url("/public")], _settings("redis", redis_url, ROBOTSTXT_STORE_LOCK_TTL=0.6))
    yield site.wait_for("/robots.txt")
    yield deferred_from_coro(until(renewed_past_its_lifetimes, "the lock renewed three times"))
    gate.open()
    result = yield crawl

    held = ttls[ttls.index(next(t for t in ttls if t > 0)):]
    assert all(t > 0 for t in held), ttls  # never lost, from the fetch's start until it was let go
    assert result.responses == [site.url("/public")]
    assert len(robots_hits(site)) == 1
    client.close()


# --------------------------------------------------------------------------- Redis going away


class _OutageSpider(ListSpider):
    """Crawls ``phases`` one after another; ``between[i](spider)`` runs after phase i is done."""

    name = "outage"
    phases: ClassVar[list[list[str]]] = []
    between: ClassVar[list[Any]] = []

    async def start(self):  # type: ignore[override]
        for index, urls in enumerate(self.phases):
            for url in urls:
                yield Request(url, callback=self.parse, errback=self.on_error, dont_filter=True)
            done = self.crawl_result
            while done is not None and sum(
                1 for u in urls if u in done.responses or u in [e.url for e in done.errors]
            ) < len(urls):
                await maybe_deferred_to_future(sleep(0.05))
            if index < len(self.between):
                await maybe_deferred_to_future(self.between[index](self))


@pytest_twisted.inlineCallbacks
def test_redis_going_down_mid_crawl_and_coming_back(origins, own_redis):
    a, b, c = _sites(origins, 3)
    url = own_redis.url()

    def stop(spider: Any) -> Any:
        own_redis.stop()
        return sleep(0)

    def restart(spider: Any) -> Any:
        own_redis.start()
        # The store's last failure was before now (in phase 2, which is done): it is asked again
        # ROBOTSTXT_STORE_RETRY_DELAY after it, so at the latest after this.
        return sleep(0.5)

    _OutageSpider.phases = [[a.url("/public")], [b.url("/public"), b.url("/private/1")], [c.url("/public")]]
    _OutageSpider.between = [stop, restart]
    result = yield run_crawl(_OutageSpider, _settings("redis", url, ROBOTSTXT_STORE_RETRY_DELAY=0.5))

    # The crawl went on: every origin's robots.txt fetched once and obeyed, pages fetched.
    assert [len(robots_hits(s)) for s in (a, b, c)] == [1, 1, 1]
    assert sorted(result.responses) == sorted([a.url("/public"), b.url("/public"), c.url("/public")])
    assert result.error_types() == [RobotsTxtForbidden]
    assert stat(result, "store_error") >= 1
    assert result.logged("is unavailable", logging.WARNING) and result.logged("answers again", logging.INFO)
    # Back in Redis (restarted empty: no persistence): c went through it, and b, fetched while Redis
    # was down, was saved on its return.
    client = _redis(url)
    assert {k.decode() for k in client.keys("robotstxt:*:state")} == {
        f"robotstxt:{{{s.base}}}:state" for s in (b, c)}
    assert stat(result, "store_saved") == 3  # a before the outage, b on the return, c
    client.close()
    assert result.stats.get("finish_reason") == "finished"


@pytest_twisted.inlineCallbacks
def test_a_redis_that_never_answers_does_not_stop_the_crawl(origins):
    sites = _sites(origins, 2)
    result = yield run_crawl(_urls(sites), _settings("redis", "redis://127.0.0.1:1/0"))

    assert [len(robots_hits(s)) for s in sites] == [1, 1]
    assert sorted(result.responses) == sorted(s.url("/public") for s in sites)
    assert stat(result, "forbidden") == 2
    assert stat(result, "store_error") >= 1
    assert len([m for m in result.messages(logging.WARNING) if "is unavailable" in m]) == 1  # once per outage


@pytest_twisted.inlineCallbacks
def test_a_redis_that_accepts_connections_and_never_answers_does_not_stall_the_crawl(origins):
    sites = _sites(origins, 3)
    silent = SilentListener().start()  # accepts, says nothing
    url = f"redis://{silent.netloc}/1"
    try:
        result = yield run_crawl(_urls(sites), _settings("redis", url, ROBOTSTXT_STORE_TIMEOUT=1,
                                                         ROBOTSTXT_STORE_RETRY_DELAY=0.5))
    finally:
        yield silent.stop()

    # Every robots.txt fetched here, once, and obeyed.
    assert [len(robots_hits(s)) for s in sites] == [1, 1, 1]
    assert sorted(result.responses) == sorted(s.url("/public") for s in sites)
    assert stat(result, "forbidden") == 3
    assert stat(result, "store_error") >= 1
    assert len([m for m in result.messages(logging.WARNING) if "is unavailable" in m]) == 1
    assert result.stats.get("finish_reason") == "finished"


@pytest_twisted.inlineCallbacks
def test_a_bad_redis_url_stops_the_crawl_at_start_up(origins):
    (site,) = _sites(origins, 1)
    with pytest.raises(RobotsTxtConfigError, match="ROBOTSTXT_REDIS_URL"):
        yield run_crawl([site.url("/public")], _settings("redis", "http://not-redis/"))
    assert site.requests == []


# --------------------------------------------------------------------------- a store of one's own


class DictStore(Store):
    """A store kept in a class attribute: what a user's own store class looks like."""

    records: ClassVar[dict[str, Record]] = {}
    calls: ClassVar[list[str]] = []

    def load(self, key: str) -> Record | None:
        self.calls.append(f"load {key}")
        return self.records.get(key)

    def save(self, key: str, record: Record, owner: str | None = None) -> bool:
        self.calls.append(f"save {key}")
        self.records[key] = record
        return True


@pytest_twisted.inlineCallbacks
def test_a_store_class_named_by_its_dotted_path(origins):
    sites = _sites(origins, 2)
    DictStore.records.clear()
    DictStore.calls.clear()
    settings = mw_settings(ROBOTSTXT_STORE=f"{__name__}.DictStore")

    first = yield run_crawl(_urls(sites), settings)
    second = yield run_crawl(_urls(sites), settings)

    assert sorted(DictStore.records) == sorted(s.base for s in sites)
    assert all(r.body == RULES.encode() for r in DictStore.records.values())
    assert [f"save {s.base}" in DictStore.calls for s in sites] == [True, True]
    assert stat(first, "request_count") == 2 and stat(second, "request_count") == 0
    assert stat(second, "store_hit") == 2
    assert second.error_types() == [RobotsTxtForbidden, RobotsTxtForbidden]


def test_the_default_claim_of_a_store_never_waits() -> None:
    store = DictStore()
    assert store.claim("k", "a", time.time(), 30) == (Claim.ACQUIRED, None)
    assert store.claim("k", "b", time.time(), 30) == (Claim.ACQUIRED, None)


@pytest_twisted.inlineCallbacks
def test_the_default_redis_url_is_the_local_redis(origins, tmp_path):
    """No ROBOTSTXT_REDIS_URL nor REDIS_URL: ``redis://localhost:6379/0``: the Redis there (``.ci/run``
    starts one), or one this test starts there (a test of the default, so it uses its own key prefix)."""
    from optional import require_redis_server
    from servers import RedisServer

    binary = require_redis_server()
    own = None
    client = redis.Redis.from_url("redis://localhost:6379/0")
    try:
        client.ping()
    except redis.ConnectionError:
        own = RedisServer(binary)
        own.port = 6379  # the default's port, free: nothing answered there
        own.start()
    prefix = f"robotstxt-test-{uuid.uuid4().hex[:8]}"
    sites = _sites(origins, 2)
    settings = mw_settings(ROBOTSTXT_STORE="redis", ROBOTSTXT_REDIS_PREFIX=prefix)
    try:
        first = yield run_crawl(_urls(sites), settings)
        second = yield run_crawl(_urls(sites), settings)
        assert len(client.keys(f"{prefix}:*:state")) == 2
    finally:
        for key in client.scan_iter(f"{prefix}:*"):
            client.delete(key)
        client.close()
        if own is not None:
            own.close()
    assert stat(first, "request_count") == 2 and stat(second, "request_count") == 0
    assert stat(second, "store_hit") == 2


@pytest_twisted.inlineCallbacks
def test_a_newer_copy_fetched_by_another_process_is_the_one_kept_when_the_origin_fails(origins, redis_url):
    (site,) = _sites(origins, 1)
    site["/robots.txt"] = Sequence([text("User-agent: *\nDisallow: /old\n"), Static(b"down", 503)])
    client = _redis(redis_url)

    async def another_process_refetched(spider: Any) -> None:
        # This process's copy expires; then another process fetched the file again (new rules), after
        # this one, and that copy has just expired too.
        expiry = _expiry(spider.crawler, site.url("/old/1"))
        await until(lambda: time.time() > expiry, "this process's copy expired")
        now = time.time()
        _store_as_another_process(client, site, b"User-agent: *\nDisallow: /new\n", now - 0.05, now)

    _OutageSpider.phases = [[site.url("/old/1")], [site.url("/old/2"), site.url("/new/2")]]  # then the origin fails
    _OutageSpider.between = [lambda spider: deferred_from_coro(another_process_refetched(spider))]
    settings = _settings("redis", redis_url, ROBOTSTXT_CACHE_TTL=1, ROBOTSTXT_CACHE_MIN_TTL=0)
    result = yield run_crawl(_OutageSpider, settings)

    assert len(robots_hits(site)) == 2
    assert stat(result, "stale_used") == 1
    # Judged by the newer copy (Disallow: /new), not by this process's older one (Disallow: /old).
    assert result.errors_for(site.url("/old/1")) and site.url("/old/2") in result.responses
    assert [type(e) for e in result.errors_for(site.url("/new/2"))] == [RobotsTxtForbidden]
    client.close()


class HangingStore(Store):
    """A store that answers nothing for 0.3 s, then fails (a Redis behind a dropped network)."""

    claims: ClassVar[int] = 0

    def load(self, key: str) -> Record | None:
        raise AssertionError("never reached")

    def save(self, key: str, record: Record, owner: str | None = None) -> bool:
        raise ConnectionError("still down")

    def claim(self, key: str, owner: str, now: float, lock_ttl: float) -> tuple[Claim, Record | None]:
        type(self).claims += 1
        time.sleep(0.3)
        raise TimeoutError("no answer")


@pytest_twisted.inlineCallbacks
def test_a_store_that_hangs_costs_one_timeout_per_batch_not_one_per_origin(origins):
    sites = _sites(origins, 8)
    HangingStore.claims = 0
    settings = mw_settings(ROBOTSTXT_STORE=f"{__name__}.HangingStore", CONCURRENT_REQUESTS=16)

    result = yield run_crawl([s.url("/public") for s in sites], settings)

    # The calls queued behind the first failure are not run: each would wait out its own timeout.
    assert HangingStore.claims <= 2 < len(sites)
    assert sorted(result.responses) == sorted(s.url("/public") for s in sites)
    assert [len(robots_hits(s)) for s in sites] == [1] * 8
    assert stat(result, "store_error") == HangingStore.claims


@pytest_twisted.inlineCallbacks
def test_the_redis_store_without_the_asyncio_reactor_stops_the_crawl_at_start_up(origins, redis_url, monkeypatch):
    from scrapy_rfc9309.stores import client as store_client

    (site,) = _sites(origins, 1)
    # Another reactor than asyncio's cannot be installed beside the test's: the check is told it is.
    monkeypatch.setattr(store_client, "asyncio_available", lambda: False)
    with pytest.raises(RobotsTxtConfigError, match=r"ROBOTSTXT_STORE.*TWISTED_REACTOR"):
        yield run_crawl([site.url("/public")], _settings("redis", redis_url))
    assert site.requests == []


@pytest.mark.parametrize("body", ["missing", "past the limit"])
@pytest_twisted.inlineCallbacks
def test_a_redis_record_without_a_usable_body_is_fetched_again_not_allow_all(origins, redis_url, body):
    """A fresh record of another process whose ``body`` field is missing (a damaged or hand-made
    key), or longer than this process reads (never copied into Redis's script), is a missing record:
    the crawl fetches the robots.txt, obeys it and saves it over the record."""
    from scrapy_rfc9309.stores.redis import RedisStore

    (site,) = _sites(origins, 1)
    other = RedisStore(redis_url)
    yield deferred_from_coro(other.open())
    now = time.time()
    rules = b"User-agent: *\nAllow: /\n" + (b"#" * 600_000 if body != "missing" else b"")
    yield deferred_from_coro(other.save(site.base, record_of_another_process(site, rules, now, now + 3600)))
    yield deferred_from_coro(other.close())
    client = redis.Redis.from_url(redis_url)
    state = other.keys(site.base)[0]
    if body == "missing":
        client.hdel(state, "body")

    result = yield run_crawl([site.url("/public"), site.url("/private/1")], _settings("redis", redis_url))

    assert len(robots_hits(site)) == 1
    assert result.responses == [site.url("/public")]
    assert result.error_types() == [RobotsTxtForbidden]
    assert stat(result, "store_unreadable") == 1 and stat(result, "store_hit") == 0
    assert client.hget(state, "body") == RULES.encode()  # this process's save replaced the record
    client.close()
