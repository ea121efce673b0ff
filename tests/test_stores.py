"""The disk (SQLite) and Redis stores on their own, against a real file and a real
``redis-server``: locks, newest-wins saves, expiry, and files that cannot be used."""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import sqlite3
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deadline
import pytest
import pytest_twisted
import redis
from middleware_support import channel_waited, sleep, until
from reactorless import blockon
from scrapy.utils.defer import deferred_from_coro
from servers import server_reactor
from twisted.internet import defer

from scrapy_rfc9309.exceptions import RobotsTxtConfigError
from scrapy_rfc9309.stores import Claim, MemoryStore, store_class
from scrapy_rfc9309.stores.disk import FILENAME, DiskStore
from scrapy_rfc9309.stores.record import CLOCK_TOLERANCE, Record, Unreadable
from scrapy_rfc9309.stores.redis import _SCRIPTS, DEFAULT_URL, RedisStore

KEY = "https://example.com"


def record(fetched_at: float, ttl: float = 100.0, body: bytes = b"User-agent: *\nDisallow: /x\n",
           keep: float | None = None) -> Record:
    return Record(fetched_at, fetched_at + ttl, fetched_at + (ttl if keep is None else keep), '{"v": 1}', body)


class Awaitable:
    """A store whose every method returns something to await, in the reactor: a
    blocking store's answer, or an async store's coroutine run in the asyncio loop."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.store, name)
        if not callable(attribute) or name == "keys":
            return attribute
        if inspect.iscoroutinefunction(attribute):
            return lambda *args: deferred_from_coro(attribute(*args))
        return lambda *args: defer.succeed(attribute(*args))


@pytest.fixture(params=["disk", "redis", "redis-cluster"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "disk":
        made = Awaitable(DiskStore(str(tmp_path)))
    elif request.param == "redis":
        made = Awaitable(RedisStore(request.getfixturevalue("redis_url"), prefix="t"))
    else:
        made = Awaitable(RedisStore(request.getfixturevalue("redis_cluster_url"), prefix="t", cluster=True))
    blockon(made.open())
    yield made
    blockon(made.close())


@pytest_twisted.ensureDeferred
async def test_one_owner_gets_the_lock_the_others_are_told_to_wait(store: Any) -> None:
    now = time.time()
    assert (await store.claim(KEY, "a", now, 30)) == (Claim.ACQUIRED, None)
    assert (await store.claim(KEY, "b", now, 30)) == (Claim.BUSY, None)
    assert (await store.claim(KEY, "a", now, 30))[0] is Claim.ACQUIRED  # the holder may claim again
    assert (await store.claim("https://other.example", "b", now, 30))[0] is Claim.ACQUIRED  # locks are per origin


@pytest_twisted.ensureDeferred
async def test_saving_releases_the_lock_and_makes_the_record_fresh_for_everyone(store: Any) -> None:
    now = time.time()
    assert (await store.claim(KEY, "a", now, 30))[0] is Claim.ACQUIRED
    assert await store.save(KEY, record(now), "a")
    assert (await store.load(KEY)) == record(now)
    assert (await store.claim(KEY, "b", now, 30)) == (Claim.FRESH, record(now))  # the record comes with it
    # Once it expires, the next claimant gets the lock (the previous holder released it), and the
    # expired record (its good copy may still apply).
    assert (await store.claim(KEY, "b", now + 101, 30)) == (Claim.ACQUIRED, record(now))


async def _claimed(store: Any, key: str, owner: str) -> None:
    """Return once ``owner`` gets ``key``'s lock (claiming it every 10 ms): the lock held before has expired.
    The test's deadline bounds the wait, and says what it waited for."""
    unregister = deadline.on_timeout(lambda: f"it waited for the lock of {key} to expire")
    try:
        while (await store.claim(key, owner, time.time(), 30))[0] is not Claim.ACQUIRED:
            await sleep(0.01)
    finally:
        unregister()


@pytest_twisted.ensureDeferred
async def test_a_lock_expires_so_a_dead_fetcher_blocks_nobody_for_long(store: Any) -> None:
    assert (await store.claim(KEY, "dead", time.time(), 0.3))[0] is Claim.ACQUIRED
    assert (await store.claim(KEY, "b", time.time(), 30))[0] is Claim.BUSY
    await _claimed(store, KEY, "b")
    assert (await store.claim(KEY, "dead", time.time(), 30))[0] is Claim.BUSY  # b's now


@pytest_twisted.ensureDeferred
async def test_renew_extends_only_the_holders_lock_and_release_frees_it(store: Any) -> None:
    other = "https://other.example"
    assert (await store.claim(KEY, "a", time.time(), 0.4))[0] is Claim.ACQUIRED
    assert (await store.claim(other, "a", time.time(), 0.4))[0] is Claim.ACQUIRED  # expires after KEY's would
    assert not await store.renew(KEY, "b", 30)
    assert await store.renew(KEY, "a", 30)
    await _claimed(store, other, "b")  # the lock taken with KEY's, not renewed, expired
    assert (await store.claim(KEY, "b", time.time(), 30))[0] is Claim.BUSY  # renewed past its first expiry
    await store.release(KEY, "b")  # not b's: nothing happens
    assert (await store.claim(KEY, "b", time.time(), 30))[0] is Claim.BUSY
    await store.release(KEY, "a")
    assert (await store.claim(KEY, "b", time.time(), 30))[0] is Claim.ACQUIRED


@pytest_twisted.ensureDeferred
async def test_an_older_record_never_replaces_a_newer_one(store: Any) -> None:
    now = time.time()
    assert await store.save(KEY, record(now, body=b"new"))
    assert not await store.save(KEY, record(now - 50, body=b"old"))
    loaded = await store.load(KEY)
    assert loaded is not None and loaded.body == b"new"
    assert await store.save(KEY, record(now + 1, body=b"newer"))
    assert (await store.load(KEY)).body == b"newer"


@pytest_twisted.ensureDeferred
async def test_bodies_are_kept_byte_for_byte(store: Any) -> None:
    body = bytes(range(256)) * 2000  # 512000 bytes, every byte value
    await store.save(KEY, record(time.time(), body=body))
    assert (await store.load(KEY)).body == body
    assert (await store.claim(KEY, "a", time.time() + 1000, 30))[1].body == body


@pytest_twisted.ensureDeferred
async def test_a_missing_origin_loads_as_none(store: Any) -> None:
    assert await store.load("https://never.example") is None


@pytest_twisted.ensureDeferred
async def test_redis_forgets_a_record_when_it_is_no_longer_useful(redis_url: str) -> None:
    store = Awaitable(RedisStore(redis_url, prefix="t"))
    now = time.time()
    await store.save(KEY, record(now, ttl=100, keep=1000))
    client = redis.Redis.from_url(redis_url)
    ttl_ms = client.pttl(store.keys(KEY)[0])
    client.close()
    assert 990_000 < ttl_ms <= 1_000_000
    await store.save("https://gone.example", record(now - 10, ttl=5, keep=5))
    assert await store.load("https://gone.example") is None
    await store.close()


@pytest_twisted.ensureDeferred
async def test_a_record_dated_ahead_of_the_claimant_is_not_fresh_and_any_save_replaces_it(store: Any) -> None:
    now = time.time()
    ahead = record(now + 30 * 86400, body=b"from a clock a month ahead")
    assert await store.save(KEY, ahead)
    assert (await store.claim(KEY, "a", now, 30)) == (Claim.ACQUIRED, ahead)  # the lock, to fetch it again
    assert (await store.claim(KEY, "b", now, 30)) == (Claim.BUSY, None)
    assert await store.save(KEY, record(now - 5, body=b"fetched here"), "a")  # fetched "before" it: written
    assert (await store.claim(KEY, "b", now, 30))[1].body == b"fetched here"
    # Within the tolerance the clocks are taken to agree: newest wins.
    slightly = record(now + CLOCK_TOLERANCE / 2, body=b"slightly ahead")
    assert await store.save(KEY, slightly)
    assert not await store.save(KEY, record(now, body=b"older"))
    assert (await store.claim(KEY, "b", now, 30)) == (Claim.FRESH, slightly)


@pytest_twisted.inlineCallbacks
def test_a_claim_given_fetched_after_takes_the_lock_over_that_record_not_over_a_newer_one(store: Any):
    now = time.time()
    kept = record(now - 10)
    yield store.save(KEY, kept)
    assert (yield store.claim(KEY, "a", now, 30)) == (Claim.FRESH, kept)
    assert (yield store.claim(KEY, "a", now, 30, kept.fetched_at)) == (Claim.ACQUIRED, kept)
    assert (yield store.claim(KEY, "b", now, 30, kept.fetched_at)) == (Claim.BUSY, None)
    newer = record(now - 1)
    yield store.save(KEY, newer, "a")
    assert (yield store.claim(KEY, "b", now, 30, kept.fetched_at)) == (Claim.FRESH, newer)


def _unreadable_kept(store: Any, how: str) -> None:
    """Damage the record ``store`` keeps for ``KEY`` (a real SQLite row, a real Redis key)."""
    inner = store.store
    if isinstance(inner, DiskStore):
        columns = {"types": "fetched_at = 'yesterday', body = 'text'", "numbers": "expires_at = 'never'"}[how]
        with sqlite3.connect(inner.path) as db:
            db.execute(f"UPDATE states SET {columns} WHERE origin = ?", (KEY,))
        return
    from redis.cluster import RedisCluster

    client = (RedisCluster if inner.cluster else redis.Redis).from_url(inner.url)
    state = inner.keys(KEY)[0]
    if how == "types":
        client.delete(state)
        client.set(state, "a string")
    else:
        client.hset(state, "expires_at", "0x10")  # Lua would read it as 16, Python not at all
    client.close()


@pytest.mark.parametrize("how", ["types", "numbers"])
@pytest_twisted.ensureDeferred
async def test_an_unreadable_record_is_returned_as_such_and_the_next_save_replaces_it(store: Any, how: str) -> None:
    now = time.time()
    await store.save(KEY, record(now + 0.5))  # fetched after the save below, within the clock tolerance
    _unreadable_kept(store, how)
    claim, kept = await store.claim(KEY, "a", now, 30)
    assert claim is Claim.ACQUIRED and isinstance(kept, Unreadable) and kept.reason
    assert isinstance(await store.load(KEY), Unreadable)
    assert await store.save(KEY, record(now), "a")
    assert (await store.claim(KEY, "b", now, 30)) == (Claim.FRESH, record(now))


@pytest_twisted.ensureDeferred
async def test_a_redis_lock_of_another_type_is_no_lock(redis_url: str) -> None:
    store = Awaitable(RedisStore(redis_url, prefix="t"))
    await store.open()
    client = redis.Redis.from_url(redis_url)
    client.hset(store.keys(KEY)[1], "owner", "nobody")
    assert (await store.claim(KEY, "a", time.time(), 30))[0] is Claim.ACQUIRED
    assert await store.renew(KEY, "a", 30)
    assert await store.save(KEY, record(time.time()), "a")
    assert client.exists(store.keys(KEY)[1]) == 0
    client.close()
    await store.close()


@pytest_twisted.ensureDeferred
async def test_redis_sends_no_more_of_a_record_than_this_process_reads(redis_url: str) -> None:
    """A record written larger than any process writes (by anyone with access to the store) costs the
    reader nothing: a body longer than ``ROBOTSTXT_MAX_SIZE`` or too long metadata is not read (the
    record is unreadable: fetched again); a body as long as that is read whole."""
    store = Awaitable(RedisStore(redis_url, prefix="t", max_body=600_000))
    await store.open()
    client = redis.Redis.from_url(redis_url)
    now = time.time()
    await store.save(KEY, record(now))
    client.hset(store.keys(KEY)[0], "body", b"x" * 600_000)
    assert len((await store.load(KEY)).body) == 600_000
    client.hset(store.keys(KEY)[0], "body", b"Disallow: /\n" * 1_000_000)  # 12 MB
    claim, claimed = await store.claim(KEY, "a", now, 30)
    assert claim is Claim.ACQUIRED
    for kept in (await store.load(KEY), claimed):
        assert isinstance(kept, Unreadable)
        assert kept.reason == "the key is a record with 12000000 bytes of body (at most 600000 are read)"
    meta = b'{"v": 1, "x": "' + b"a" * 2_000_000 + b'"}'
    client.hset(store.keys(KEY)[0], "meta", meta)
    for kept in (await store.load(KEY), (await store.claim(KEY, "a", now, 30))[1]):  # "a" holds the lock
        assert isinstance(kept, Unreadable)
        assert kept.reason == f"the key is a record with {len(meta)} bytes of metadata (at most 262144 are read)"
    client.close()
    await store.close()


def _reads_of_hash_values(client: redis.Redis) -> int:
    """The calls Redis counted (scripts' included) of every command that reads a hash field's value."""
    stats = client.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0))
               for name in ("hget", "hmget", "hgetall", "hvals", "hrandfield", "hscan"))


@pytest_twisted.ensureDeferred
async def test_redis_scripts_never_copy_a_body_past_the_limit(redis_url: str) -> None:
    """Redis runs one script at a time for all its clients: a claim, a load or a save of an origin
    whose record holds a huge body looks at the fields' lengths, and reads no field's value (the
    command stats Redis keeps of the scripts' calls say so), so the body is never copied."""
    store = Awaitable(RedisStore(redis_url, prefix="t"))
    await store.open()
    client = redis.Redis.from_url(redis_url)
    now = time.time()
    await store.save(KEY, record(now - 10))
    before = _reads_of_hash_values(client)
    assert (await store.claim(KEY, "a", now, 30))[0] is Claim.FRESH
    assert _reads_of_hash_values(client) == before + 1  # the counts include the scripts' calls
    client.hset(store.keys(KEY)[0], "body", b"x" * 20_000_000)
    before = _reads_of_hash_values(client)
    claim, kept = await store.claim(KEY, "a", now, 30)
    assert claim is Claim.ACQUIRED and isinstance(kept, Unreadable)
    assert isinstance(await store.load(KEY), Unreadable)
    assert not await store.save(KEY, record(now - 20), "a")  # the kept record is newer: its times read only
    assert _reads_of_hash_values(client) == before + 1  # the save's times; never the body
    assert client.hstrlen(store.keys(KEY)[0], "body") == 20_000_000
    client.close()
    await store.close()


@pytest.mark.parametrize("field", ["body", "meta"])
@pytest_twisted.ensureDeferred
async def test_a_redis_record_without_its_body_or_metadata_is_unreadable_not_empty(redis_url: str,
                                                                                  field: str) -> None:
    """A record hash lacking a field every record has (``body`` is b"" without a good copy) is a
    missing record that says why: the claimant takes the lock and fetches, and a save replaces it,
    although it is dated later; never an empty robots.txt (allow all)."""
    store = Awaitable(RedisStore(redis_url, prefix="t"))
    await store.open()
    client = redis.Redis.from_url(redis_url)
    now = time.time()
    await store.save(KEY, record(now + 0.5))  # fetched after the save below, within the clock tolerance
    client.hdel(store.keys(KEY)[0], field)
    claim, kept = await store.claim(KEY, "a", now, 30)
    assert claim is Claim.ACQUIRED and isinstance(kept, Unreadable) and "missing" in kept.reason
    assert isinstance(await store.load(KEY), Unreadable)
    assert await store.save(KEY, record(now), "a")
    assert (await store.claim(KEY, "b", now, 30)) == (Claim.FRESH, record(now))
    client.close()
    await store.close()


def test_the_disk_store_reads_no_more_of_a_row_than_this_process_reads(tmp_path: Path) -> None:
    """A row written larger than any process writes costs the reader nothing: its body read cut to
    ``ROBOTSTXT_MAX_SIZE``, its too long metadata not read; an empty body stays a body."""
    store = DiskStore(str(tmp_path), max_body=600_000)
    now = time.time()
    store.save(KEY, record(now, body=b""))
    assert store.load(KEY).body == b""
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE states SET body = ? WHERE origin = ?", (b"Disallow: /\n" * 1_000_000, KEY))
    loaded = store.load(KEY)
    assert len(loaded.body) == 600_000 and loaded.body.startswith(b"Disallow: /\n")
    claim, kept = store.claim(KEY, "a", now, 30)
    assert claim is Claim.FRESH and len(kept.body) == 600_000
    meta = '{"v": 1, "x": "' + "é" * 1_000_000 + '"}'
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE states SET meta = ? WHERE origin = ?", (meta, KEY))
    for kept in (store.load(KEY), store.claim(KEY, "b", now, 30)[1]):
        assert isinstance(kept, Unreadable)
        assert kept.reason == (f"a row with {len(meta.encode())} bytes of metadata (at most 262144 are read)")
    store.close()


def test_a_disk_lock_of_a_process_whose_clock_is_ahead_is_held_for_the_lock_ttl_at_most(tmp_path: Path) -> None:
    store = DiskStore(str(tmp_path))
    now = time.time()
    assert store.claim(KEY, "ahead", now + 30 * 86400, 30)[0] is Claim.ACQUIRED  # until a month from now
    assert store.claim(KEY, "b", now, 0.3)[0] is Claim.BUSY
    assert store.claim(KEY, "b", now + 0.5, 0.3)[0] is Claim.ACQUIRED  # cut to 0.3 s by the first look
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE locks SET until = 'later' WHERE origin = ?", (KEY,))
    assert store.claim(KEY, "c", now, 30)[0] is Claim.ACQUIRED  # an unreadable lock is no lock
    store.close()


def test_a_disk_file_this_process_may_only_read_is_used_read_only(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    from test_store_records import _read_only

    writer = DiskStore(str(tmp_path))
    now = time.time()
    writer.save(KEY, record(now))
    writer.save("https://expired.example", record(now - 200))
    writer.close()
    with _read_only(tmp_path / FILENAME):
        store = DiskStore(str(tmp_path))
        store.open()
        assert store.read_only
        assert store.claim(KEY, "a", now, 30) == (Claim.FRESH, record(now))
        # No lock can be taken: every claimant fetches, and nothing is written.
        assert store.claim("https://expired.example", "a", now, 30) == (Claim.ACQUIRED, record(now - 200))
        assert store.claim("https://expired.example", "b", now, 30)[0] is Claim.ACQUIRED
        assert not store.save("https://new.example", record(now), "a")
        assert store.load("https://new.example") is None
        assert store.renew("https://expired.example", "a", 30)
        store.release("https://expired.example", "a")
        store.close()
    assert store.set_aside == [] and _aside(tmp_path) == []
    assert [r.levelno for r in caplog.records if "is read-only" in r.getMessage()] == [logging.WARNING]


def test_redis_keys_of_one_origin_share_a_cluster_slot(redis_url: str) -> None:
    store = RedisStore(redis_url, prefix="fleet")
    state, lock = store.keys("http://h:8080")
    assert state == "fleet:{http://h:8080}:state" and lock == "fleet:{http://h:8080}:lock"


def test_the_disk_store_forgets_what_outlived_its_use_when_opened(tmp_path: Path) -> None:
    first = DiskStore(str(tmp_path))
    first.open()
    now = time.time()
    first.save("https://old.example", record(now - 100, ttl=10, keep=50))
    first.save(KEY, record(now, ttl=10, keep=5000))
    first.close()
    second = DiskStore(str(tmp_path))
    second.open()
    assert second.load("https://old.example") is None
    assert second.load(KEY) is not None
    assert len(second) == 1
    second.close()


_OPEN_AT = """
import sys, time
from scrapy_rfc9309.stores.disk import DiskStore
base, rounds = float(sys.argv[1]), int(sys.argv[2])
for n in range(rounds):
    while time.time() < base + n * 0.1:
        pass
    store = DiskStore(sys.argv[3] + "/" + str(n))
    try:
        store.open()
        store.claim("k", sys.argv[4], time.time(), 30)
        print("ok")
    except Exception as exc:
        print(type(exc).__name__, exc)
    finally:
        store.close()
"""


def test_processes_that_open_a_new_disk_store_at_once_all_use_it(tmp_path: Path) -> None:
    # Crawls started together on a new store directory: the first one to open the
    # file sets it up (WAL mode, tables) while the others wait a moment for it,
    # rather than finding it locked and fetching on their own for a while.
    rounds = 15
    for n in range(rounds):
        (tmp_path / str(n)).mkdir()
    base = time.time() + 3.0  # after the interpreters have started
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    processes = [subprocess.Popen([sys.executable, "-c", _OPEN_AT, repr(base), str(rounds), str(tmp_path), owner],
                                  stdout=subprocess.PIPE, text=True, env=env) for owner in ("a", "b", "c")]
    outputs = [process.communicate(timeout=60)[0].split("\n")[:rounds] for process in processes]
    assert outputs == [["ok"] * rounds] * 3


def test_two_disk_stores_on_one_directory_share_states_and_locks(tmp_path: Path) -> None:
    a, b = DiskStore(str(tmp_path)), DiskStore(str(tmp_path))
    a.open()
    b.open()
    now = time.time()
    assert a.claim(KEY, "a", now, 30)[0] is Claim.ACQUIRED
    assert b.claim(KEY, "b", now, 30)[0] is Claim.BUSY
    a.save(KEY, record(now), "a")
    assert b.claim(KEY, "b", now, 30)[0] is Claim.FRESH
    assert b.load(KEY) == record(now)
    a.close()
    b.close()


# --------------------------------------------------------------------------- unusable disk files


def _aside(directory: Path) -> list[str]:
    names = (p.name for p in directory.iterdir())
    return sorted(n for n in names if ".corrupt-" in n and not n.endswith(("-wal", "-shm")))


@pytest.mark.parametrize(
    "damage",
    ["garbage", "truncated", "directory", "newer-layout", "foreign-table"],
)
def test_an_unusable_disk_file_is_set_aside_and_rebuilt(tmp_path: Path, damage: str,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / FILENAME
    original = DiskStore(str(tmp_path))
    original.open()
    original.save(KEY, record(time.time()))
    original.close()
    for suffix in ("-wal", "-shm"):
        assert not Path(str(path) + suffix).exists()
    if damage == "garbage":
        path.write_bytes(os.urandom(8192))
    elif damage == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[:100] + b"\0" * 50 + data[150 : len(data) // 2])
    elif damage == "directory":  # cannot be opened as a file at all
        path.unlink()
        path.mkdir()
        (path / "x").write_text("x")
    elif damage == "newer-layout":
        with sqlite3.connect(path) as db:
            db.execute("PRAGMA user_version=99")
    elif damage == "foreign-table":
        path.unlink()
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE states (origin TEXT PRIMARY KEY, something TEXT)")

    store = DiskStore(str(tmp_path))
    store.open()
    now = time.time()
    assert store.claim(KEY, "a", now, 30) == (Claim.ACQUIRED, None)  # usable again, and empty
    assert store.save(KEY, record(now, body=b"rebuilt"), "a")
    assert store.load(KEY).body == b"rebuilt"  # type: ignore[union-attr]
    store.close()
    assert len(_aside(tmp_path)) == 1
    assert store.set_aside == [str(tmp_path / _aside(tmp_path)[0])]
    assert any("cannot be used" in r.getMessage() and "set aside" in r.getMessage() for r in caplog.records)


def test_a_file_corrupted_while_in_use_is_set_aside_on_the_next_operation(tmp_path: Path) -> None:
    store = DiskStore(str(tmp_path))
    store.open()
    store.save(KEY, record(time.time()))
    store.close()
    (tmp_path / FILENAME).write_bytes(b"\x00garbage" * 4096)  # after open, before the next call
    assert store.load(KEY) is None
    assert len(_aside(tmp_path)) == 1


def test_a_process_that_finds_the_file_already_replaced_uses_the_new_one(tmp_path: Path) -> None:
    a, b = DiskStore(str(tmp_path)), DiskStore(str(tmp_path))
    a.open()
    b.open()
    a.close()
    b.close()
    (tmp_path / FILENAME).write_bytes(b"garbage" * 2000)
    a.open()  # sets the file aside, makes a new one
    a.save(KEY, record(time.time(), body=b"from a"))
    assert b.load(KEY).body == b"from a"  # type: ignore[union-attr]  # b reopens; does not set a's new file aside
    assert len(_aside(tmp_path)) == 1
    a.close()
    b.close()


# --------------------------------------------------------------------------- choosing a store


class _Settings(dict):
    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(name, default)

    def getbool(self, name: str, default: bool = False) -> bool:
        from scrapy.settings import Settings

        return Settings(dict(self)).getbool(name, default)

    def getint(self, name: str, default: int = 0) -> int:
        from scrapy.settings import Settings

        return Settings(dict(self)).getint(name, default)


class _Crawler:
    def __init__(self, **settings: Any) -> None:
        self.settings = _Settings(settings)


def test_store_names_and_dotted_paths() -> None:
    assert store_class("memory") is None
    assert store_class("MEMORY") is None
    assert store_class("scrapy_rfc9309.stores.MemoryStore") is None
    assert store_class(MemoryStore) is None
    assert store_class("disk") is DiskStore
    assert store_class("redis") is RedisStore
    assert store_class("scrapy_rfc9309.stores.disk.DiskStore") is DiskStore
    assert store_class(DiskStore) is DiskStore


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("", "ROBOTSTXT_STORE must be"),
        (5, "ROBOTSTXT_STORE must be"),
        ("sqlite", "ROBOTSTXT_STORE must be"),
        ("no.such.module.Store", "cannot be imported"),
        ("scrapy_rfc9309.stores.NoSuchStore", "has no NoSuchStore"),
        ("scrapy_rfc9309.exceptions.RobotsTxtConfigError", "is not a subclass"),
    ],
)
def test_a_bad_store_name_is_a_config_error_naming_the_setting(value: object, text: str) -> None:
    with pytest.raises(RobotsTxtConfigError, match=text) as info:
        store_class(value)
    assert "ROBOTSTXT_STORE" in str(info.value)


def test_a_store_module_that_fails_as_it_runs_is_a_config_error_naming_the_setting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "broken_store_module.py").write_text("class Store:\n    pass\n\nraise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RobotsTxtConfigError) as info:
        store_class("broken_store_module.Store")
    assert str(info.value) == ("ROBOTSTXT_STORE = 'broken_store_module.Store' cannot be imported: "
                               "broken_store_module raised RuntimeError: boom")


def test_the_disk_store_path_is_created_and_checked(tmp_path: Path) -> None:
    made = DiskStore.from_crawler(_Crawler(ROBOTSTXT_STORE_PATH=str(tmp_path / "a" / "b")))
    assert Path(made.directory).is_dir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(RobotsTxtConfigError, match="ROBOTSTXT_STORE_PATH"):
        DiskStore.from_crawler(_Crawler(ROBOTSTXT_STORE_PATH=str(tmp_path / "file")))
    with pytest.raises(RobotsTxtConfigError, match="ROBOTSTXT_STORE_PATH"):
        DiskStore.from_crawler(_Crawler(ROBOTSTXT_STORE_PATH=str(tmp_path / "file" / "below")))
    with pytest.raises(RobotsTxtConfigError, match="ROBOTSTXT_STORE_PATH"):
        DiskStore.from_crawler(_Crawler(ROBOTSTXT_STORE_PATH=42))


def test_the_disk_store_defaults_to_the_projects_scrapy_directory(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SCRAPY_SETTINGS_MODULE", raising=False)
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = nothing.settings\n")
    made = DiskStore.from_crawler(_Crawler())
    assert Path(made.directory) == tmp_path / ".scrapy" / "robotstxt"
    assert Path(made.directory).is_dir()


def test_the_redis_url_comes_from_robotstxt_redis_url_then_redis_url_then_the_default() -> None:
    assert RedisStore.from_crawler(_Crawler()).url == DEFAULT_URL == "redis://localhost:6379/0"
    assert RedisStore.from_crawler(_Crawler(REDIS_URL="redis://a:1/2")).url == "redis://a:1/2"
    both = _Crawler(REDIS_URL="redis://a:1/2", ROBOTSTXT_REDIS_URL="redis://b:3/4")
    assert RedisStore.from_crawler(both).url == "redis://b:3/4"
    with pytest.raises(RobotsTxtConfigError, match="ROBOTSTXT_REDIS_URL"):
        RedisStore.from_crawler(_Crawler(ROBOTSTXT_REDIS_URL="http://nope"))
    with pytest.raises(RobotsTxtConfigError, match="REDIS_URL"):
        RedisStore.from_crawler(_Crawler(REDIS_URL="nope"))
    with pytest.raises(RobotsTxtConfigError, match="ROBOTSTXT_REDIS_PREFIX"):
        RedisStore.from_crawler(_Crawler(ROBOTSTXT_REDIS_PREFIX=3))


@pytest_twisted.ensureDeferred
async def test_an_unreachable_redis_is_a_connection_error() -> None:
    store = Awaitable(RedisStore("redis://127.0.0.1:1/0"))
    with pytest.raises(redis.ConnectionError):
        await store.open()


# --------------------------------------------------------------------------- waking the processes that wait


@pytest.fixture(params=["redis", "redis-cluster"])
def redis_store(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A Redis store on a single Redis and on a three-master cluster."""
    if request.param == "redis":
        made = Awaitable(RedisStore(request.getfixturevalue("redis_url"), prefix="t"))
    else:
        made = Awaitable(RedisStore(request.getfixturevalue("redis_cluster_url"), prefix="t", cluster=True))
    blockon(made.open())
    yield made
    blockon(made.close())


def _waiting(store: Any, key: str) -> defer.Deferred[None]:
    """Fires once the server holds the subscription of a waiter of ``key`` (a save
    from then on is heard)."""
    return deferred_from_coro(channel_waited(store.store, store.store.channel(key)))


def _store_connections(store: Any) -> int:
    """Connections the server holds from ``store``'s client (every other client of
    the tests names itself ``test-...``)."""
    client = redis.Redis.from_url(store.store.url)
    try:
        client.client_setname("test-observer")
        return sum(1 for c in client.client_list() if not c.get("name", "").startswith("test-"))
    finally:
        client.close()


@pytest_twisted.ensureDeferred
async def test_claims_made_at_once_each_get_their_own_answer(redis_store: Any) -> None:
    now = time.time()
    keys = [f"https://site{n}.example" for n in range(20)]
    await redis_store.save(keys[0], record(now - 1))
    claims = await defer.gatherResults([redis_store.claim(key, "a", now, 30) for key in keys])
    assert claims[0][0] is Claim.FRESH and claims[0][1].fetched_at == now - 1
    assert [claim for claim, _ in claims[1:]] == [Claim.ACQUIRED] * 19
    assert all(kept is None for _, kept in claims[1:])
    others = await defer.gatherResults([redis_store.claim(key, "b", now, 30) for key in keys])
    assert [claim for claim, _ in others] == [Claim.FRESH] + [Claim.BUSY] * 19
    if not redis_store.store.cluster:
        # Made in one turn of the event loop: sent together, on one connection.
        assert _store_connections(redis_store) == 1


@pytest_twisted.ensureDeferred
async def test_calls_made_at_once_survive_a_server_that_lost_its_scripts(redis_url: str) -> None:
    store = Awaitable(RedisStore(redis_url, prefix="t"))
    await store.open()
    client = redis.Redis.from_url(redis_url, client_name="test-flusher")
    client.script_flush()  # as after a restart of the server
    now = time.time()
    keys = [f"https://site{n}.example" for n in range(5)]
    # All in flight together: each meets the lost script, and is sent again with it.
    renewed = store.renew(keys[0], "a", 30)
    saved = store.save(keys[1], record(now - 1))
    claims = [store.claim(key, "a", now, 30) for key in keys]
    assert (await renewed) is False  # no lock yet when it ran
    assert (await saved) is True
    assert [claim for claim, _ in await defer.gatherResults(claims)] == [Claim.ACQUIRED, Claim.FRESH] + [
        Claim.ACQUIRED] * 3
    assert client.script_exists(*(_SCRIPTS[name].sha for name in ("claim", "save", "renew"))) == [True] * 3
    assert _store_connections(store) == 1
    client.close()
    await store.close()


@pytest_twisted.ensureDeferred
async def test_a_cluster_that_lost_its_scripts_is_sent_them_again(redis_cluster_url: str) -> None:
    from redis.cluster import RedisCluster

    store = Awaitable(RedisStore(redis_cluster_url, prefix="t", cluster=True))
    await store.open()
    client = RedisCluster.from_url(redis_cluster_url)
    try:
        shas = [s.sha for s in _SCRIPTS.values()]
        primaries = client.get_primaries()
        def loaded(node: Any, *wanted: str) -> list[bool]:
            return list(client.get_redis_connection(node).script_exists(*wanted))

        assert all(loaded(node, *shas) == [True] * len(shas) for node in primaries)
        for node in primaries:  # as after a restart of every master
            client.get_redis_connection(node).script_flush()
        now = time.time()
        keys = [f"https://site{n}.example" for n in range(12)]  # spread over the masters
        claims = await defer.gatherResults([store.claim(key, "a", now, 30) for key in keys])
        assert [claim for claim, _ in claims] == [Claim.ACQUIRED] * 12
        holding = {client.get_node_from_key(store.store.keys(key)[0]).name for key in keys}
        assert len(holding) > 1
        claim_sha = _SCRIPTS["claim"].sha
        assert all(loaded(node, claim_sha) == [True] for node in primaries if node.name in holding)
    finally:
        client.close()
        await store.close()


class _Proxy:
    """A TCP proxy on loopback in front of a Redis: it can hold the server's answers
    back, and cut every connection through it."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.holding = False
        #: Hold back only what the server sends to subscribed connections.
        self.holding_subscribers = False
        self.links: list[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = []
        #: Connections accepted so far.
        self.accepted = 0

    async def start(self) -> _Proxy:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.links.append((writer, up_writer))
        subscriber = False

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter, answers: bool) -> None:
            nonlocal subscriber
            while data := await source.read(65536):
                subscriber = subscriber or (not answers and b"SUBSCRIBE" in data.upper())
                while answers and (self.holding or (subscriber and self.holding_subscribers)):
                    await asyncio.sleep(0.01)
                sink.write(data)
            sink.close()

        await asyncio.gather(pipe(reader, up_writer, False), pipe(up_reader, writer, True), return_exceptions=True)

    def cut(self) -> None:
        for client_side, server_side in self.links:
            client_side.transport.abort()
            server_side.transport.abort()
        self.links.clear()

    async def close(self) -> None:
        self.cut()
        self.server.close()
        await self.server.wait_closed()


@pytest.fixture
def proxy(redis_url: str) -> Iterator[_Proxy]:
    """A proxy to the session's Redis."""
    made = _Proxy(int(redis_url.rsplit(":", 1)[1].split("/")[0]))
    blockon(deferred_from_coro(made.start()))
    yield made
    blockon(deferred_from_coro(made.close()))


@pytest.fixture
def proxied(proxy: _Proxy) -> Iterator[Any]:
    """A Redis store whose connections go through ``proxy``, open."""
    made = Awaitable(RedisStore(proxy.url(), prefix="t"))
    blockon(made.open())
    yield made
    blockon(made.close())


async def _locked(proxy: _Proxy, *keys: str) -> None:
    """Return once the Redis behind ``proxy`` holds the fetch lock of each of ``keys`` (prefix ``t``):
    the claims reached the server and ran (their answers may be held back)."""
    client = redis.Redis(port=proxy.target_port)
    try:
        await until(lambda: client.exists(*(f"t:{{{key}}}:lock" for key in keys)) == len(keys),
                    f"the locks of {keys} taken")
    finally:
        client.close()


async def _saved(store: Any) -> Record:
    """A record of ``KEY`` fetched a second ago, saved in ``store``."""
    saved = record(time.time() - 1)
    await store.save(KEY, saved)
    return saved


@pytest_twisted.ensureDeferred
async def test_calls_in_flight_on_a_connection_that_closes_are_sent_again_on_a_new_one(
        proxy: _Proxy, proxied: Any) -> None:
    now = time.time()
    keys = [f"https://site{n}.example" for n in range(5)]
    await proxied.save(keys[0], record(now - 1))
    proxy.holding = True
    calls = [proxied.claim(key, "a", now, 30) for key in keys] + [proxied.load(keys[0]), proxied.load(keys[1])]
    await _locked(proxy, *keys[1:])  # the commands reached the server and ran; their answers are held
    proxy.cut()
    proxy.holding = False
    *claims, loaded, missing = await defer.gatherResults(calls)
    assert [claim for claim, _ in claims] == [Claim.FRESH] + [Claim.ACQUIRED] * 4  # the locks were a's already
    assert loaded == record(now - 1) and missing is None
    assert proxy.accepted == 2
    assert [claim for claim, _ in await defer.gatherResults(
        [proxied.claim(key, "b", now, 30) for key in keys])] == [Claim.FRESH] + [Claim.BUSY] * 4


@pytest_twisted.ensureDeferred
async def test_a_server_that_stops_answering_fails_the_calls_in_flight_and_the_next_go_on_a_new_connection(
        proxy: _Proxy, monkeypatch: pytest.MonkeyPatch) -> None:
    import scrapy_rfc9309.stores.redis as redis_module

    monkeypatch.setattr(redis_module, "SOCKET_TIMEOUT", 0.3)
    proxied = Awaitable(RedisStore(proxy.url(), prefix="t"))
    await proxied.open()
    try:
        await _a_server_that_stops_answering(proxy, proxied)
    finally:
        await proxied.close()


async def _a_server_that_stops_answering(proxy: _Proxy, proxied: Any) -> None:
    now, saved = time.time(), await _saved(proxied)
    proxy.holding = True
    calls = [proxied.load(KEY), proxied.claim("https://other.example", "a", now, 30), proxied.load("https://none")]
    results = await defer.DeferredList(calls, consumeErrors=True)
    assert [ok for ok, _ in results] == [False] * 3
    assert all(failure.check(redis.TimeoutError) for _, failure in results)
    # The answers held back never reach the calls made after: those go on a new connection.
    proxy.holding = False
    assert (await proxied.load("https://none")) is None
    assert (await proxied.load(KEY)) == saved
    assert (await proxied.claim("https://other.example", "b", now, 30))[0] is Claim.BUSY  # a's claim ran
    assert proxy.accepted == 2


@pytest_twisted.ensureDeferred
async def test_pipelines_in_flight_are_bounded_and_the_calls_made_meanwhile_go_together(
        proxy: _Proxy, proxied: Any) -> None:
    from scrapy_rfc9309.stores.redis import MAX_CONNECTIONS

    saved = await _saved(proxied)
    proxy.holding = True
    calls = []
    for _ in range(MAX_CONNECTIONS + 4):
        calls.append(proxied.load(KEY))
        # One turn of the event loop (not a time): the send this call started takes it, alone, so each
        # goes in a pipeline of its own while connections last.
        await sleep(0)
    proxy.holding = False
    assert await defer.gatherResults(calls) == [saved] * (MAX_CONNECTIONS + 4)
    assert proxy.accepted == MAX_CONNECTIONS


@pytest_twisted.ensureDeferred
async def test_a_call_cancelled_in_flight_leaves_the_others_their_own_answers(
        proxy: _Proxy, proxied: Any) -> None:
    now, saved = time.time(), await _saved(proxied)
    proxy.holding = True
    other = "https://other.example"
    first, cancelled, third = proxied.load(KEY), proxied.load("https://none"), proxied.claim(other, "a", now, 30)
    await _locked(proxy, other)  # the three ran, in their order, on one connection; their answers are held
    cancelled.cancel()
    proxy.holding = False
    assert (await first) == saved
    assert (await third) == (Claim.ACQUIRED, None)
    assert (await proxied.load("https://none")) is None
    assert proxy.accepted == 1


@pytest_twisted.ensureDeferred
async def test_a_save_made_between_the_subscription_and_the_look_at_the_lock_is_still_heard(
        proxy: _Proxy, proxied: Any) -> None:
    """The holder saves after the waiter subscribed and before it looks at the lock
    (which is then gone), and the save's message reaches the waiter after the answer
    about the lock: the waiter gets the record from the message all the same."""
    assert (await proxied.claim(KEY, "a", time.time(), 30))[0] is Claim.ACQUIRED
    saved = record(time.time())
    store = proxied.store
    look_at_the_lock = store.pttl

    async def saved_first(key: str) -> int:
        proxy.holding_subscribers = True  # what Redis tells the subscribed connection waits in the proxy
        assert await store.save(key, saved, "a")
        try:
            return await look_at_the_lock(key)
        finally:
            proxy.holding_subscribers = False

    store.pttl = saved_first
    assert (await proxied.wait_saved(KEY, 30)) is True
    assert (await proxied.claim(KEY, "b", time.time(), 30)) == (Claim.FRESH, saved)


def _requiring_a_password() -> Iterator[Any]:
    from optional import require_redis_server
    from servers import RedisServer

    server = RedisServer(require_redis_server(), options=("--requirepass", "s3cret")).start()
    yield server
    server.close()


redis_with_password = pytest.fixture(_requiring_a_password)


@pytest_twisted.ensureDeferred
async def test_the_url_s_password_and_database_are_used(redis_with_password: Any) -> None:
    port = redis_with_password.port
    store = Awaitable(RedisStore(f"redis://:s3cret@127.0.0.1:{port}/3", prefix="t"))
    await store.open()
    try:
        assert (await store.claim(KEY, "a", time.time(), 30))[0] is Claim.ACQUIRED
        waiting = store.wait_saved(KEY, 30)  # subscribes on a connection of its own, with the password too
        await _waiting(store, KEY)
        saved = record(time.time())
        await store.save(KEY, saved, "a")
        assert (await waiting) is True
        assert (await store.load(KEY)) == saved
    finally:
        await store.close()
    client = redis.Redis(port=port, password="s3cret", db=3)
    assert client.exists(store.store.keys(KEY)[0]) == 1
    assert redis.Redis(port=port, password="s3cret", db=0).dbsize() == 0
    client.close()
    wrong = Awaitable(RedisStore(f"redis://:nope@127.0.0.1:{port}/3", prefix="t"))
    with pytest.raises(redis.AuthenticationError):
        await wrong.open()
    await wrong.close()


async def _told_through(store: Any) -> None:
    """A claim, a waiter subscribed on the store's other connection, a save that tells it:
    what a fleet does, through both of the store's connections."""
    await store.open()
    try:
        assert (await store.claim(KEY, "a", time.time(), 30))[0] is Claim.ACQUIRED
        assert (await store.claim(KEY, "b", time.time(), 30))[0] is Claim.BUSY
        waiting = store.wait_saved(KEY, 30)
        await _waiting(store, KEY)
        saved = record(time.time())
        assert (await store.save(KEY, saved, "a")) is True
        assert (await waiting) is True
        assert (await store.load(KEY)) == saved
    finally:
        await store.close()


@pytest_twisted.ensureDeferred
async def test_a_unix_socket_url(tmp_path: Path) -> None:
    from optional import require_redis_server
    from servers import RedisServer

    socket_path = tmp_path / "redis.sock"
    with RedisServer(require_redis_server(), options=("--unixsocket", str(socket_path))):
        await _told_through(Awaitable(RedisStore(f"unix://{socket_path}?db=2", prefix="t")))
        client = redis.Redis(unix_socket_path=str(socket_path), db=2)
        assert client.exists(RedisStore(DEFAULT_URL, prefix="t").keys(KEY)[0]) == 1
        client.close()


def _certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A certificate authority, and a certificate for 127.0.0.1 that it signed: (CA, certificate, key),
    with the key identifiers and key usage that Python 3.13's strict verification requires."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(2).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = directory / "ca.pem", directory / "cert.pem", directory / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


@pytest_twisted.ensureDeferred
async def test_a_tls_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from optional import require_redis_server
    from servers import RedisServer
    from servers.redis_server import free_port

    import scrapy_rfc9309.stores.redis as redis_module

    # A TLS handshake on a loaded machine can take longer than the store's 2 s connect timeout: here the
    # connection is under test, not that timeout.
    monkeypatch.setattr(redis_module, "CONNECT_TIMEOUT", 60.0)
    monkeypatch.setattr(redis_module, "SOCKET_TIMEOUT", 60.0)
    ca, cert, key = _certificates(tmp_path)
    tls_port = free_port()
    options = ("--tls-port", str(tls_port), "--tls-cert-file", str(cert), "--tls-key-file", str(key),
               "--tls-ca-cert-file", str(ca), "--tls-auth-clients", "no")
    with RedisServer(require_redis_server(), options=options):
        monkeypatch.setenv("SSL_CERT_FILE", str(ca))  # the test CA, trusted as a system one would be
        await _told_through(Awaitable(RedisStore(f"rediss://127.0.0.1:{tls_port}/0", prefix="t")))
        monkeypatch.delenv("SSL_CERT_FILE")  # a server the client cannot verify is not used
        untrusted = Awaitable(RedisStore(f"rediss://127.0.0.1:{tls_port}/0", prefix="t"))
        with pytest.raises(redis.ConnectionError) as refused:
            await untrusted.open()
        await untrusted.close()
        causes, cause = [], refused.value  # redis-py 5.0 says "Error 1": the reason is its cause
        while cause is not None:
            causes.append(cause)
            cause = cause.__cause__ or cause.__context__
        assert any(isinstance(c, ssl.SSLCertVerificationError) for c in causes)


@pytest_twisted.ensureDeferred
async def test_a_server_that_accepts_connections_and_never_answers_fails_them_in_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import scrapy_rfc9309.stores.redis as redis_module

    monkeypatch.setattr(redis_module, "CONNECT_TIMEOUT", 0.2)
    monkeypatch.setattr(redis_module, "SOCKET_TIMEOUT", 0.3)
    accepted: list[asyncio.StreamWriter] = []
    silent = await deferred_from_coro(asyncio.start_server(lambda _, writer: accepted.append(writer), "127.0.0.1", 0))
    port = silent.sockets[0].getsockname()[1]
    store = Awaitable(RedisStore(f"redis://127.0.0.1:{port}/1", prefix="t"))  # /1: set up with SELECT
    try:
        with pytest.raises(redis.TimeoutError):
            await store.open().addTimeout(60, server_reactor())
        # A waiter cannot subscribe either, and is told to poll instead of waiting for a message.
        assert (await store.wait_saved(KEY, 30).addTimeout(60, server_reactor())) is None
        assert len(accepted) == 2  # the connection for the calls, the one for the subscriptions
    finally:
        await store.close()
        silent.close()
        for writer in accepted:
            writer.close()


@pytest_twisted.ensureDeferred
async def test_claims_made_at_once_all_fail_when_the_server_cannot_be_reached() -> None:
    store = Awaitable(RedisStore("redis://127.0.0.1:1/0"))
    calls = [store.claim(f"https://site{n}.example", "a", time.time(), 30) for n in range(5)]
    results = await defer.DeferredList(calls, consumeErrors=True)
    assert [ok for ok, _ in results] == [False] * 5
    assert all(failure.check(redis.ConnectionError) for _, failure in results)


@pytest_twisted.ensureDeferred
async def test_a_waiter_is_told_when_the_holder_saves(redis_store: Any) -> None:
    now = time.time()
    assert (await redis_store.claim(KEY, "a", now, 30))[0] is Claim.ACQUIRED
    waiting = redis_store.wait_saved(KEY, 30)
    await _waiting(redis_store, KEY)
    assert not waiting.called
    saved = record(now, body=bytes(range(256)) * 40 + b"\nUser-agent: *\n")
    await redis_store.save(KEY, saved, "a")
    # Told, long before the lock (30 s) or the timeout would end it; the claim reads the record saved.
    assert (await waiting) is True
    assert (await redis_store.claim(KEY, "b", now, 30)) == (Claim.FRESH, saved)
    # Nobody waits any more: the channel is let go.
    await until(lambda: not redis_store.store.notifier._nodes or not any(
        n.channels for n in redis_store.store.notifier._nodes.values()))
    assert redis_store.store.notifier._waiters == {}


@pytest_twisted.ensureDeferred
async def test_a_waiter_is_told_without_a_record_when_a_newer_one_is_kept(redis_store: Any) -> None:
    now = time.time()
    newer = record(now - 5, ttl=-1, keep=1000)  # expired: the next claim takes the lock
    await redis_store.save(KEY, newer)
    assert (await redis_store.claim(KEY, "a", now, 30))[0] is Claim.ACQUIRED
    waiting = redis_store.wait_saved(KEY, 30)
    await _waiting(redis_store, KEY)
    assert not await redis_store.save(KEY, record(now - 10), "a")  # fetched before the record kept: not written
    assert (await waiting) is True  # told to claim again, which answers with what is kept
    assert (await redis_store.claim(KEY, "b", now, 30)) == (Claim.ACQUIRED, newer)


@pytest_twisted.ensureDeferred
async def test_a_waiter_is_told_when_the_holder_lets_the_lock_go(redis_store: Any) -> None:
    assert (await redis_store.claim(KEY, "a", time.time(), 30))[0] is Claim.ACQUIRED
    waiters = [redis_store.wait_saved(KEY, 30) for _ in range(3)]  # three origins' requests, one subscription
    await _waiting(redis_store, KEY)
    await redis_store.release(KEY, "a")
    assert [await w for w in waiters] == [True, True, True]
    assert (await redis_store.claim(KEY, "b", time.time(), 30))[0] is Claim.ACQUIRED


@pytest_twisted.ensureDeferred
async def test_a_waiter_wakes_when_the_lock_of_a_dead_holder_expires(redis_store: Any) -> None:
    assert (await redis_store.claim(KEY, "dead", time.time(), 0.3))[0] is Claim.ACQUIRED
    assert (await redis_store.wait_saved(KEY, 30)) is False  # not told: the lock ran out
    assert (await redis_store.claim(KEY, "b", time.time(), 30))[0] is Claim.ACQUIRED


@pytest_twisted.ensureDeferred
async def test_a_waiter_without_a_lock_to_wait_for_returns_at_once(redis_store: Any) -> None:
    assert (await redis_store.wait_saved(KEY, 30)) is True
    assert (await redis_store.wait_saved(KEY, 0)) is True


@pytest_twisted.ensureDeferred
async def test_waiters_are_woken_when_the_subscription_is_lost_and_subscribe_again(redis_url: str) -> None:
    store = Awaitable(RedisStore(redis_url, prefix="t"))
    await store.open()
    try:
        assert (await store.claim(KEY, "a", time.time(), 30))[0] is Claim.ACQUIRED
        waiting = store.wait_saved(KEY, 30)
        await _waiting(store, KEY)
        client = redis.Redis.from_url(redis_url)
        assert client.client_kill_filter(_type="pubsub") == 1  # the subscribing connection, cut
        assert (await waiting) is True  # woken to claim again (still busy)
        assert (await store.claim(KEY, "b", time.time(), 30))[0] is Claim.BUSY
        waiting = store.wait_saved(KEY, 30)
        await _waiting(store, KEY)  # on a new connection
        saved = record(time.time())
        await store.save(KEY, saved, "a")
        assert (await waiting) is True
        assert (await store.load(KEY)) == saved
        client.close()
    finally:
        await store.close()


@pytest_twisted.ensureDeferred
async def test_a_blocking_store_cannot_tell_so_its_waiters_poll(tmp_path: Path) -> None:
    from scrapy_rfc9309.stores.blocking import as_async

    store = as_async(DiskStore(str(tmp_path)))
    assert (await deferred_from_coro(store.wait_saved(KEY, 30))) is None


@pytest_twisted.ensureDeferred
async def test_the_cluster_spreads_origins_over_its_masters(redis_cluster_url: str) -> None:
    from redis.cluster import RedisCluster

    store = Awaitable(RedisStore(redis_cluster_url, prefix="t", cluster=True))
    await store.open()
    now = time.time()
    keys = [f"https://site{n}.example" for n in range(30)]
    for key in keys:
        assert (await store.claim(key, "a", now, 30))[0] is Claim.ACQUIRED
        assert await store.save(key, record(now), "a")
    await store.close()
    client = RedisCluster.from_url(redis_cluster_url)
    nodes = {client.get_node_from_key(f"t:{{{key}}}:state").name for key in keys}
    assert len(nodes) == 3  # every master holds some
    assert all(client.exists(f"t:{{{key}}}:state") == 1 for key in keys)
    assert all(client.exists(f"t:{{{key}}}:lock") == 0 for key in keys)
    client.close()


@pytest_twisted.ensureDeferred
async def test_a_process_waiting_for_another_is_told_of_the_save_and_reads_it_with_one_more_claim(
        redis_url: str) -> None:
    """Two processes' store clients on one Redis: the one that waits is told of the
    fetcher's save and reads the state from the key, with one more claim."""
    from scrapy.utils.test import get_crawler

    from scrapy_rfc9309.config import Config
    from scrapy_rfc9309.core.origins import Origin
    from scrapy_rfc9309.core.state import Access, FetchOutcome, OriginState
    from scrapy_rfc9309.stores.client import StoreClient

    clients, claims = [], []
    for name in ("fetcher", "waiter"):
        crawler = get_crawler(settings_dict={"ROBOTSTXT_STORE": "redis", "ROBOTSTXT_REDIS_URL": redis_url})
        store = RedisStore(redis_url, prefix="client")
        claim = store.claim

        async def counted(*args: Any, _claim: Any = claim, _name: str = name) -> Any:
            claims.append(_name)
            return await _claim(*args)

        store.claim = counted  # type: ignore[method-assign]
        clients.append(StoreClient(store, crawler, Config.from_settings(crawler.settings)))
    fetcher, waiter = clients
    origin = Origin.from_url("https://example.com/")
    assert origin is not None
    try:
        got = await deferred_from_coro(fetcher.obtain(origin, None))
        assert got.state is None and got.lease is not None  # the fetch lock
        waiting = deferred_from_coro(waiter.obtain(origin, None))
        await _waiting(Awaitable(waiter.store), str(origin))
        assert not waiting.called
        body = b"User-agent: *\nDisallow: /private\n"
        state = OriginState.initial(FetchOutcome(Access.PARSED, origin.robots_url, 200, body), time.time(),
                                    fetcher.policy)
        fetcher.save(origin, state, got.lease)
        told = await waiting
        assert told.state is not None and told.lease is None
        assert told.state.robots is not None and told.state.robots.body == body
        assert not told.state.robots.allowed("https://example.com/private/x", "bot")
        assert told.state.fetched_at == state.fetched_at
        assert claims == ["fetcher", "waiter", "waiter"]  # the message is a hint: the key is read
        assert waiter.crawler.stats.get_value("robotstxt/store_woken") == 1
        assert waiter.crawler.stats.get_value("robotstxt/store_wait") == 1
    finally:
        for client in clients:
            await deferred_from_coro(client.close())


@pytest_twisted.ensureDeferred
async def test_a_message_on_the_channel_is_a_hint_whatever_record_it_carries(redis_store: Any) -> None:
    """Anyone allowed to publish on the channel (a client of another database
    included: channels ignore databases) wakes the waiters, who read the key: the
    record the message carries is never used."""
    now = time.time()
    assert (await redis_store.claim(KEY, "a", now, 30))[0] is Claim.ACQUIRED
    waiting = redis_store.wait_saved(KEY, 30)
    await _waiting(redis_store, KEY)
    store = redis_store.store
    forged = record(now, body=b"User-agent: *\nAllow: /\n")
    meta = forged.meta.encode()
    message = (b"R%r\n%r\n%r\n%d\n" % (forged.fetched_at, forged.expires_at, forged.keep_until, len(meta))
               + meta + forged.body)
    command = "SPUBLISH" if store.cluster else "PUBLISH"
    await deferred_from_coro(store._command(command, store.channel(KEY), message))
    assert (await waiting) is True  # woken, nothing more
    assert (await redis_store.claim(KEY, "b", now, 30)) == (Claim.BUSY, None)  # the holder still fetches
    assert (await redis_store.load(KEY)) is None


@pytest_twisted.ensureDeferred
async def test_channels_are_named_for_the_prefix_and_the_database(redis_url: str) -> None:
    """Two fleets on two databases of one Redis, same prefix: a save in one does
    not tell the waiters of the other."""
    base = redis_url.rsplit("/", 1)[0]
    zero, one = (Awaitable(RedisStore(f"{base}/{db}", prefix="t")) for db in (0, 1))
    other_prefix = RedisStore(f"{base}/0", prefix="u")
    assert zero.store.channel(KEY) == "t:db0:{https://example.com}:saved"
    assert one.store.channel(KEY) == "t:db1:{https://example.com}:saved"
    assert other_prefix.channel(KEY) == "u:db0:{https://example.com}:saved"
    assert RedisStore("unix:///tmp/redis.sock?db=3", prefix="t").channel(KEY) == "t:db3:{https://example.com}:saved"
    await zero.open()
    await one.open()
    try:
        now = time.time()
        assert (await zero.claim(KEY, "a", now, 30))[0] is Claim.ACQUIRED
        assert (await one.claim(KEY, "a", now, 30))[0] is Claim.ACQUIRED
        waiting = zero.wait_saved(KEY, 30)
        await _waiting(zero, KEY)
        assert await one.save(KEY, record(now), "a")  # database 1's save, published on its channel
        (node,) = zero.store.notifier._nodes.values()
        await deferred_from_coro(node.ping())  # every message sent to the subscription before is read
        assert not waiting.called
        await zero.release(KEY, "a")
        assert (await waiting) is True
    finally:
        await zero.close()
        await one.close()


def _documented_acl() -> list[str]:
    """The ``ACL SETUSER`` rules docs/stores.md gives, for the default prefix on database 0."""
    doc = (Path(__file__).parent.parent / "docs" / "stores.md").read_text()
    (line,) = [line for line in doc.splitlines() if line.startswith("ACL SETUSER crawler ")]
    return line.split()[3:]


@pytest_twisted.ensureDeferred
async def test_the_store_works_under_exactly_the_documented_acl_user() -> None:
    """A Redis 7 started for this test (channels denied to new users by default), a
    user made with the rules docs/stores.md gives: claims, saves, waiting told by
    the save, renewals and releases all work; without the channel rule, a save fails."""
    from optional import require_redis_server
    from servers import RedisServer

    server = RedisServer(require_redis_server(), options=("--acl-pubsub-default", "resetchannels")).start()
    admin = redis.Redis.from_url(server.url())
    try:
        rules = [rule.replace("CHANGE-ME", "s3cret") for rule in _documented_acl()]
        assert admin.execute_command("ACL", "SETUSER", "crawler", *rules) == b"OK"
        admin.execute_command("ACL", "SETUSER", "default", "off")  # nobody else
        url = f"redis://crawler:s3cret@127.0.0.1:{server.port}/0"
        fetcher, waiter = Awaitable(RedisStore(url)), Awaitable(RedisStore(url))
        await fetcher.open()
        await waiter.open()
        try:
            now = time.time()
            assert (await fetcher.claim(KEY, "a", now, 30)) == (Claim.ACQUIRED, None)
            assert await fetcher.renew(KEY, "a", 30)
            assert (await waiter.claim(KEY, "b", now, 30)) == (Claim.BUSY, None)
            waiting = waiter.wait_saved(KEY, 30)
            channel = waiter.store.channel(KEY)
            await until(lambda: dict(admin.pubsub_numsub(channel)).get(channel.encode()), "the waiter subscribed")
            saved = record(now)
            assert await fetcher.save(KEY, saved, "a")
            assert (await waiting) is True
            assert (await waiter.claim(KEY, "b", now, 30)) == (Claim.FRESH, saved)
            assert (await waiter.load(KEY)) == saved
            assert (await fetcher.claim("https://other.example", "a", now, 30))[0] is Claim.ACQUIRED
            await fetcher.release("https://other.example", "a")
        finally:
            await fetcher.close()
            await waiter.close()
        # The same user without its channels: the save (its PUBLISH) is refused.
        keys_only = [rule for rule in rules if not rule.startswith("&")]
        admin.execute_command("ACL", "SETUSER", "crawler", "reset", *keys_only)
        store = Awaitable(RedisStore(url))
        await store.open()
        try:
            assert (await store.claim(KEY + ":2", "a", now, 30))[0] is Claim.ACQUIRED
            with pytest.raises(redis.exceptions.ResponseError, match="publish"):
                await store.save(KEY + ":2", record(now), "a")
        finally:
            await store.close()
    finally:
        admin.close()
        server.close()


def test_repeated_warnings_of_one_kind_are_logged_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    from scrapy_rfc9309.stores.client import RepeatedWarnings

    now = [1000.0]
    warnings = RepeatedWarnings(60.0, clock=lambda: now[0])
    caplog.set_level(logging.DEBUG, logger="scrapy_rfc9309.stores.client")
    for n in range(5):
        warnings.log("held robots.txt", "robots.txt of %s: held", f"https://site{n}.example")
        now[0] += 1
    warnings.log("unavailable ConnectionError", "store down")  # another kind: its own warning
    now[0] += 60
    warnings.log("held robots.txt", "robots.txt of %s: held", "https://late.example")
    levels = [(record.levelno, record.getMessage()) for record in caplog.records]
    assert levels == [
        (logging.WARNING, "robots.txt of https://site0.example: held"),
        *[(logging.DEBUG, f"robots.txt of https://site{n}.example: held") for n in range(1, 5)],
        (logging.WARNING, "store down"),
        (logging.WARNING, "robots.txt of https://late.example: held (4 more like it in the last 65 s, logged at "
                          "DEBUG)"),
    ]


@pytest_twisted.inlineCallbacks
def test_a_crawl_giving_up_on_many_held_locks_warns_once(origins: Any, redis_url: str) -> None:
    """Three origins whose locks another process holds past the longest wait: each is fetched
    here, one warning says so, the others are at DEBUG."""
    from crawl import run_crawl
    from middleware_support import mw_settings, robots_hits

    sites = [origins(f"127.0.0.{n + 1}") for n in range(3)]
    client = redis.Redis.from_url(redis_url)
    for site in sites:
        site.robots("User-agent: *\nDisallow: /private\n")
        client.set(f"robotstxt:{{{site.base}}}:lock", "a-stuck-process", px=120_000)
    settings = mw_settings(ROBOTSTXT_STORE="redis", ROBOTSTXT_REDIS_URL=redis_url, ROBOTSTXT_STORE_LOCK_TTL=0.2,
                           DOWNLOAD_TIMEOUT=0.2, ROBOTSTXT_MAX_REDIRECTS=0)
    result = yield run_crawl([site.url("/public") for site in sites], settings)
    client.close()
    assert [len(robots_hits(site)) for site in sites] == [1, 1, 1]
    held = [m for m in result.messages(logging.WARNING) if "another process has held its fetch lock" in m]
    assert len(held) == 1, result.messages(logging.WARNING)


def test_without_redis_py_the_redis_store_says_how_to_install_it() -> None:
    """Without redis-py, ``ROBOTSTXT_STORE = "redis"`` stops the crawl with an install line that
    works for a package installed from its source (it is on no package index)."""
    code = ("import sys; sys.modules['redis'] = None\n"  # redis-py not importable
            "from scrapy_rfc9309.stores.redis import RedisStore\n"
            "try:\n    RedisStore()\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)

    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("RobotsTxtConfigError ROBOTSTXT_STORE = 'redis' needs the redis package"), run.stdout
    assert "pip install 'redis>=5.0.1'" in run.stdout
    assert "pip install '/path/to/scrapy-rfc9309[redis]'" in run.stdout
