"""Records and answers a store cannot take at their word, in real crawls against
local origins, a real SQLite file and a real ``redis-server``: a record saved by a
process whose clock runs ahead, a record fresh for its writer but not for the reader,
records that cannot be read, a server that is not a working Redis, a lock that would
never expire, and a disk file this process may only read."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import pytest
import pytest_twisted
import redis
from crawl import run_crawl
from middleware_support import mw_settings, robots_hits, stat
from scrapy.utils.defer import deferred_from_coro
from test_stores_crawl import _settings
from test_stores_crawl import _sites as _origins
from twisted.internet import defer

from scrapy_rfc9309.core.state import Access, FetchOutcome, OriginState, Policy
from scrapy_rfc9309.exceptions import RobotsTxtForbidden
from scrapy_rfc9309.stores import Claim, Store
from scrapy_rfc9309.stores.disk import FILENAME, DiskStore
from scrapy_rfc9309.stores.record import Record, decode, encode
from scrapy_rfc9309.stores.redis import RedisStore

V1 = b"User-agent: *\nDisallow: /v1\n"  # what the origin served once
V2 = "User-agent: *\nDisallow: /v2\n"  # what it serves now
MONTH = 30 * 86400.0


@pytest.fixture(params=["disk", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """``(ROBOTSTXT_STORE, where)`` for each persistent store."""
    where = str(tmp_path / "store") if request.param == "disk" else request.getfixturevalue("redis_url")
    return request.param, where


def _sites(origins: Any, count: int) -> list[Any]:
    """``count`` origins on 127.0.0.1 and up, each serving V2."""
    return _origins(origins, count, V2)


class _ClockAhead:
    """The ``time`` module of a process whose clock runs ``offset`` seconds ahead."""

    def __init__(self, offset: float) -> None:
        self.offset = offset

    def time(self) -> float:
        return time.time() + self.offset

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def _state(site: Any, body: bytes, fetched_at: float, policy: Policy) -> Record:
    outcome = FetchOutcome(Access.PARSED, site.url("/robots.txt"), 200, body)
    return encode(OriginState.initial(outcome, fetched_at, policy), policy)


def _saved_by_another_process(store: tuple[str, str], site: Any, body: bytes, monkeypatch: pytest.MonkeyPatch, *,
                              clock_ahead: float = 0.0, age: float = 0.0,
                              policy: Policy | None = None) -> defer.Deferred[Record]:
    """What another process saves in the store after fetching ``site``'s robots.txt
    (``body``) ``age`` seconds ago, with its clock ``clock_ahead`` seconds ahead and its
    own ``policy``: the package's own record and save, run with that clock."""
    import scrapy_rfc9309.stores.disk as disk_module
    import scrapy_rfc9309.stores.redis as redis_module

    kind, where = store
    policy = policy or Policy()
    record = _state(site, body, time.time() + clock_ahead - age, policy)

    async def save() -> Record:
        with monkeypatch.context() as patched:
            patched.setattr(disk_module if kind == "disk" else redis_module, "time", _ClockAhead(clock_ahead))
            if kind == "disk":
                os.makedirs(where, exist_ok=True)
                disk = DiskStore(where)
                disk.open()
                assert disk.save(site.base, record)
                disk.close()
            else:
                other = RedisStore(where)
                await other.open()
                assert await other.save(site.base, record)
                await other.close()
        return record

    return deferred_from_coro(save())


def _kept(store: tuple[str, str], site: Any) -> defer.Deferred[Record | None]:
    """The record the store keeps for ``site``, read as any process reads it."""
    kind, where = store

    async def load() -> Record | None:
        if kind == "disk":
            disk = DiskStore(where)
            try:
                return disk.load(site.base)
            finally:
                disk.close()
        reader = RedisStore(where)
        try:
            return await reader.load(site.base)
        finally:
            await reader.close()

    return deferred_from_coro(load())


# --------------------------------------------------------------------------- clocks and lifetimes


@pytest_twisted.inlineCallbacks
def test_a_record_saved_by_a_process_whose_clock_runs_a_month_ahead_is_fetched_again_and_replaced(
        origins, store, monkeypatch):
    (site,) = _sites(origins, 1)  # the origin serves V2 now
    written = yield _saved_by_another_process(store, site, V1, monkeypatch, clock_ahead=MONTH)
    if store[0] == "redis":  # kept for its keep time from the save, not a month more
        client = redis.Redis.from_url(store[1])
        assert client.pttl(f"robotstxt:{{{site.base}}}:state") <= (written.keep_until - written.fetched_at) * 1000
        client.close()
    settings = _settings(*store, ROBOTSTXT_CACHE_TTL=5)
    urls = [site.url("/v1/page"), site.url("/v2/page")]

    first = yield run_crawl(urls, settings)
    second = yield run_crawl(urls, settings)

    assert len(robots_hits(site)) == 1  # fetched again by the first crawl, once
    for result in (first, second):
        assert result.responses == [site.url("/v1/page")]  # judged by the file the origin serves now
        assert result.error_types() == [RobotsTxtForbidden]
    assert stat(first, "store_future_dated") == 1 and stat(first, "store_hit") == 0
    assert first.logged("ahead of this process's clock", logging.WARNING)
    # Replaced by the first crawl's save: the second finds it fresh.
    assert stat(second, "store_hit") == 1 and stat(second, "request_count") == 0
    kept = yield _kept(store, site)
    assert kept is not None and kept.body == V2.encode() and kept.fetched_at <= time.time()


@pytest_twisted.inlineCallbacks
def test_a_reader_with_a_shorter_lifetime_fetches_again_a_record_its_writer_still_holds_fresh(
        origins, store, monkeypatch):
    (site,) = _sites(origins, 1)
    yield _saved_by_another_process(store, site, V1, monkeypatch, age=10)  # a 24 h lifetime, 10 s ago
    settings = _settings(*store, ROBOTSTXT_CACHE_TTL=5, ROBOTSTXT_CACHE_MIN_TTL=0)
    urls = [site.url("/v1/page"), site.url("/v2/page")]

    first = yield run_crawl(urls, settings)
    second = yield run_crawl(urls, settings)

    assert len(robots_hits(site)) == 1
    for result in (first, second):
        assert result.responses == [site.url("/v1/page")]
        assert result.error_types() == [RobotsTxtForbidden]
    assert stat(first, "store_hit") == 0 and stat(first, "refetch") == 1  # the stored copy was its previous state
    assert stat(second, "store_hit") == 1  # the first crawl's save, 5 s fresh for it
    kept = yield _kept(store, site)
    assert kept is not None and kept.body == V2.encode()


# --------------------------------------------------------------------------- records that cannot be read


def _damage_redis(url: str, site: Any, how: str) -> None:
    client = redis.Redis.from_url(url)
    key = f"robotstxt:{{{site.base}}}:state"
    if how == "wrong-type":
        client.delete(key)
        client.set(key, b"not a hash")
    elif how == "expires_at":
        client.hset(key, "expires_at", b"tomorrow")
    elif how == "fetched_at":
        client.hset(key, "fetched_at", b"1.5e9 or so")
    elif how == "nested-meta":  # deeper than Python's JSON reader recurses
        client.hset(key, "meta", client.hget(key, "meta")[:-1] + b',"x":' + b"[" * 100_000 + b"}")
    client.close()


@pytest.mark.parametrize("how", ["wrong-type", "expires_at", "fetched_at", "nested-meta"])
@pytest_twisted.inlineCallbacks
def test_an_unreadable_redis_record_is_one_missing_record_and_the_store_stays_up(origins, redis_url, monkeypatch,
                                                                                   how):
    sites = _sites(origins, 6)
    store = ("redis", redis_url)
    for site in sites:
        yield _saved_by_another_process(store, site, V2.encode(), monkeypatch, age=10)
    bad = sites[0]
    _damage_redis(redis_url, bad, how)
    settings = _settings(*store)
    urls = [u for s in sites for u in (s.url("/v1/page"), s.url("/v2/page"))]

    first = yield run_crawl(urls, settings)
    second = yield run_crawl(urls, settings)

    assert [len(robots_hits(s)) for s in sites] == [1, 0, 0, 0, 0, 0]  # the bad record's origin only
    assert stat(first, "store_error") == 0 and stat(first, "store_unreadable") == 1
    assert stat(first, "store_hit") == 5
    assert len([m for m in first.messages(logging.WARNING) if "cannot be read" in m]) == 1
    assert stat(second, "store_hit") == 6 and stat(second, "request_count") == 0  # repaired by the save
    for result in (first, second):
        assert sorted(result.responses) == sorted(s.url("/v1/page") for s in sites)
    kept = yield _kept(store, bad)
    assert kept is not None and decode(kept, Policy()).robots is not None


@pytest_twisted.inlineCallbacks
def test_an_unreadable_disk_row_is_one_missing_record_and_the_store_stays_up(origins, tmp_path, monkeypatch):
    sites = _sites(origins, 6)
    store = ("disk", str(tmp_path / "store"))
    for site in sites:
        yield _saved_by_another_process(store, site, V2.encode(), monkeypatch, age=10)
    bad = sites[0]
    with sqlite3.connect(tmp_path / "store" / FILENAME) as db:  # columns of the wrong types
        db.execute("UPDATE states SET fetched_at = 'yesterday', expires_at = 'never', body = 'text'"
                   " WHERE origin = ?", (bad.base,))
    settings = _settings(*store)
    urls = [u for s in sites for u in (s.url("/v1/page"), s.url("/v2/page"))]

    first = yield run_crawl(urls, settings)
    second = yield run_crawl(urls, settings)

    assert [len(robots_hits(s)) for s in sites] == [1, 0, 0, 0, 0, 0]
    assert stat(first, "store_error") == 0 and stat(first, "store_unreadable") == 1
    assert stat(first, "store_hit") == 5
    assert len([m for m in first.messages(logging.WARNING) if "cannot be read" in m]) == 1
    assert stat(second, "store_hit") == 6 and stat(second, "request_count") == 0
    assert not [p for p in (tmp_path / "store").iterdir() if ".corrupt-" in p.name]  # the file is kept
    kept = yield _kept(store, bad)
    assert kept is not None and decode(kept, Policy()).robots is not None


# --------------------------------------------------------------------------- answers Redis never gives


class _AlwaysOk(asyncio.Protocol):
    """A server that answers ``+OK`` to every command (RESP arrays of bulk strings)."""

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (count := _command_length(self.buffer)) is not None:
            self.buffer = self.buffer[count:]
            self.transport.write(b"+OK\r\n")


def _command_length(buffer: bytes) -> int | None:
    """The length of the first whole command in ``buffer``, or None."""
    if not buffer.startswith(b"*") or b"\r\n" not in buffer:
        return None
    head, _, rest = buffer.partition(b"\r\n")
    position = len(head) + 2
    for _ in range(int(head[1:])):
        if b"\r\n" not in rest:
            return None
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line[1:])
        if len(rest) < size + 2:
            return None
        position += len(size_line) + 2 + size + 2
        rest = rest[size + 2:]
    return position


@pytest_twisted.inlineCallbacks
def test_a_server_answering_ok_to_everything_is_an_unavailable_store_not_a_lock_to_wait_for(origins):
    sites = _sites(origins, 3)
    server = yield deferred_from_coro(_serve(_AlwaysOk))
    port = server.sockets[0].getsockname()[1]
    # Waiting on a "busy" lock would take the lock ttl plus DOWNLOAD_TIMEOUT per allowed redirect (13 s).
    settings = _settings("redis", f"redis://127.0.0.1:{port}/0", ROBOTSTXT_STORE_LOCK_TTL=1, DOWNLOAD_TIMEOUT=2)
    try:
        result = yield run_crawl([u for s in sites for u in (s.url("/v1/page"), s.url("/v2/page"))], settings)
    finally:
        server.close()

    assert [len(robots_hits(s)) for s in sites] == [1, 1, 1]
    assert stat(result, "store_wait") == 0 and stat(result, "store_error") >= 1
    (warning,) = [m for m in result.messages(logging.WARNING) if "is unavailable" in m]
    assert "UnexpectedReply" in warning and "b'OK'" in warning
    assert sorted(result.responses) == sorted(s.url("/v1/page") for s in sites)
    assert not result.logged("held its fetch lock")


async def _serve(protocol: Any) -> asyncio.AbstractServer:
    return await asyncio.get_running_loop().create_server(protocol, "127.0.0.1", 0)


@pytest_twisted.inlineCallbacks
def test_a_lock_without_an_expiry_is_given_one_and_waited_for_no_longer(origins, redis_url):
    (site,) = _sites(origins, 1)
    client = redis.Redis.from_url(redis_url)
    lock = f"robotstxt:{{{site.base}}}:lock"
    client.set(lock, "a-process-that-set-no-expiry")
    settings = _settings("redis", redis_url, ROBOTSTXT_STORE_LOCK_TTL=1, DOWNLOAD_TIMEOUT=2)

    result = yield run_crawl([site.url("/v1/page"), site.url("/v2/page")], settings)

    assert len(robots_hits(site)) == 1
    assert stat(result, "store_wait") == 1 and stat(result, "store_poll") >= 1  # until the expiry it was given
    assert not result.logged("held its fetch lock")  # not the longest wait for a busy lock
    assert client.exists(lock) == 0  # this process took the lock when it expired, and its save let it go
    assert result.responses == [site.url("/v1/page")]
    client.close()


# --------------------------------------------------------------------------- a file this process may only read


@contextmanager
def _read_only(path: Path) -> Iterator[None]:
    """``path`` read-only for this process: its permissions, or for root (which may
    write any file), the immutable attribute."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    chattr = shutil.which("chattr")
    made = chattr is not None and subprocess.run([chattr, "+i", str(path)], capture_output=True).returncode == 0
    if not made:
        message = "running as root, and chattr +i cannot make a file read-only here"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield
    finally:
        subprocess.run([str(chattr), "-i", str(path)], check=True)


@pytest_twisted.inlineCallbacks
def test_a_read_only_disk_file_is_used_read_only_not_set_aside(origins, tmp_path):
    known, new = _sites(origins, 2)
    directory = tmp_path / "store"
    settings = _settings("disk", str(directory))
    yield run_crawl([known.url("/v1/page")], settings)  # the file now holds known's record
    path = directory / FILENAME
    before = path.read_bytes()

    with _read_only(path):
        result = yield run_crawl([u for s in (known, new) for u in (s.url("/v1/page"), s.url("/v2/page"))],
                                 settings)

    assert [p.name for p in directory.iterdir() if ".corrupt-" in p.name] == []
    assert path.read_bytes() == before  # nothing written
    assert stat(result, "store_error") == 0
    assert stat(result, "store_hit") == 1 and [len(robots_hits(s)) for s in (known, new)] == [1, 1]  # new: here
    assert stat(result, "store_saved") == 0
    assert result.logged("is read-only", logging.WARNING)
    assert sorted(result.responses) == sorted(s.url("/v1/page") for s in (known, new))


# --------------------------------------------------------------------------- a store of one's own


class _OldClaimStore(Store):
    """A store of one's own whose claim looks at the expiry only (it ignores
    ``fetched_after``), kept in a class attribute."""

    records: ClassVar[dict[str, Record]] = {}

    def load(self, key: str) -> Record | None:
        return self.records.get(key)

    def save(self, key: str, record: Record, owner: str | None = None) -> bool:
        self.records[key] = record
        return True

    def claim(self, key: str, owner: str, now: float, lock_ttl: float,
              fetched_after: float | None = None) -> tuple[Claim, Record | None]:
        record = self.load(key)
        return (Claim.FRESH if record is not None and record.expires_at > now else Claim.ACQUIRED), record


@pytest_twisted.inlineCallbacks
def test_a_store_that_calls_a_record_fresh_for_longer_than_the_reader_trusts_it_is_fetched_around(origins):
    (site,) = _sites(origins, 1)
    _OldClaimStore.records = {site.base: _state(site, V1, time.time() - 10, Policy())}  # 24 h from 10 s ago
    settings = mw_settings(ROBOTSTXT_STORE=f"{__name__}._OldClaimStore", ROBOTSTXT_CACHE_TTL=5,
                           ROBOTSTXT_CACHE_MIN_TTL=0)

    result = yield run_crawl([site.url("/v1/page"), site.url("/v2/page")], settings)

    assert len(robots_hits(site)) == 1  # fetched here, though the store keeps calling its record fresh
    assert result.responses == [site.url("/v1/page")]
    assert _OldClaimStore.records[site.base].body == V2.encode()  # and saved
