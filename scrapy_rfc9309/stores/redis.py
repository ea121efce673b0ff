"""``ROBOTSTXT_STORE = "redis"``: origin states shared by every process pointed at
one Redis (``ROBOTSTXT_REDIS_URL``), with a fetch lock per origin so that one
process fetches each robots.txt per lifetime while the others wait for it.

Keys, per origin (``{...}`` is a Redis Cluster hash tag, so both keys of an origin
live on one node):

- ``<prefix>:{<origin>}:state``, a hash: ``fetched_at``, ``expires_at``,
  ``keep_until``, ``meta`` (JSON), ``body`` (the raw robots.txt); it expires at
  ``keep_until``;
- ``<prefix>:{<origin>}:lock``: the fetching process's id, with an expiry
  (``ROBOTSTXT_STORE_LOCK_TTL``, renewed while the fetch runs), so a process that
  dies while fetching blocks the others for that long at most.

Its methods are coroutines of ``redis.asyncio``, awaited in the reactor's asyncio
loop: no thread, and a claim is one round trip (a Lua script that answers with the
record). Needs the ``redis`` package (``pip install 'scrapy-rfc9309[redis]'``) and
Scrapy's asyncio reactor (the default ``TWISTED_REACTOR``).
"""

from __future__ import annotations

import math
from typing import Any

from ..exceptions import RobotsTxtConfigError
from ..record import Record
from .base import AsyncStore, Claim

try:
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
except ImportError:  # reported when the store is made, with a message naming the setting
    aioredis = None  # type: ignore[assignment]

__all__ = ["DEFAULT_URL", "RedisStore"]

DEFAULT_URL = "redis://localhost:6379/0"
#: Seconds to connect and to wait for an answer before the store counts as down.
CONNECT_TIMEOUT = 2.0
SOCKET_TIMEOUT = 5.0
#: Connections per process. Calls beyond wait for one (a hundred origins starting at
#: once would otherwise open a hundred connections, each with its own set-up).
MAX_CONNECTIONS = 8

#: The record's fields, in the order the scripts and ``load`` read them.
_FIELDS = ("fetched_at", "expires_at", "keep_until", "meta", "body")
# KEYS: state, lock. ARGV: now, owner, lock ttl (ms). Answers {1, fields} (fresh),
# {2, fields} (lock taken; fields of the expired record, all nil when none), {0} (busy).
_CLAIM = """
local fields = redis.call('HMGET', KEYS[1], 'fetched_at', 'expires_at', 'keep_until', 'meta', 'body')
if fields[2] and tonumber(fields[2]) > tonumber(ARGV[1]) then return {1, fields} end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then return {2, fields} end
if redis.call('GET', KEYS[2]) == ARGV[2] then
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return {2, fields}
end
return {0}
"""
# KEYS: state, lock. ARGV: fetched_at, expires_at, keep_until, keep_until (ms), meta, body, owner or ''.
_SAVE = """
local current = redis.call('HGET', KEYS[1], 'fetched_at')
local written = 0
if not current or tonumber(current) <= tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'fetched_at', ARGV[1], 'expires_at', ARGV[2], 'keep_until', ARGV[3],
             'meta', ARGV[5], 'body', ARGV[6])
  redis.call('PEXPIREAT', KEYS[1], ARGV[4])
  written = 1
end
if ARGV[7] ~= '' and redis.call('GET', KEYS[2]) == ARGV[7] then redis.call('DEL', KEYS[2]) end
return written
"""
# KEYS: lock. ARGV: owner, ttl (ms).
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
# KEYS: lock. ARGV: owner.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisStore(AsyncStore):
    """Origin states in Redis, shared by a fleet."""

    def __init__(self, url: str = DEFAULT_URL, prefix: str = "robotstxt", setting: str = "ROBOTSTXT_REDIS_URL") -> None:
        if aioredis is None:
            raise RobotsTxtConfigError(
                "ROBOTSTXT_STORE = 'redis' needs the redis package: pip install 'scrapy-rfc9309[redis]'"
            )
        try:
            # One immediate retry: a pooled connection to a Redis that restarted fails
            # once, and the retry reconnects. More would only delay the fallback.
            pool = aioredis.BlockingConnectionPool.from_url(
                url, max_connections=MAX_CONNECTIONS, timeout=SOCKET_TIMEOUT, socket_connect_timeout=CONNECT_TIMEOUT,
                socket_timeout=SOCKET_TIMEOUT, health_check_interval=30, retry=Retry(NoBackoff(), 1),
            )
            self.client = aioredis.Redis(connection_pool=pool)
        except ValueError as exc:
            raise RobotsTxtConfigError(f"{setting} is not a Redis URL ({exc}): {url!r}") from None
        self.url = url
        self.prefix = prefix
        self._claim = self.client.register_script(_CLAIM)
        self._save = self.client.register_script(_SAVE)
        self._renew = self.client.register_script(_RENEW)
        self._release = self.client.register_script(_RELEASE)

    @classmethod
    def from_crawler(cls, crawler: Any) -> RedisStore:
        settings = crawler.settings
        setting, url = "ROBOTSTXT_REDIS_URL", settings.get("ROBOTSTXT_REDIS_URL")
        if not url and settings.get("REDIS_URL"):
            setting, url = "REDIS_URL", settings.get("REDIS_URL")
        url = url or DEFAULT_URL
        if not isinstance(url, str):
            raise RobotsTxtConfigError(f"{setting} must be a Redis URL string, got {url!r}")
        prefix = settings.get("ROBOTSTXT_REDIS_PREFIX") or "robotstxt"
        if not isinstance(prefix, str):
            raise RobotsTxtConfigError(f"ROBOTSTXT_REDIS_PREFIX must be a string, got {prefix!r}")
        return cls(url, prefix, setting)

    def keys(self, key: str) -> tuple[str, str]:
        """The state and lock keys of an origin."""
        base = f"{self.prefix}:{{{key}}}"
        return f"{base}:state", f"{base}:lock"

    async def open(self) -> None:
        # Load the scripts now, or the first calls would each fail with NOSCRIPT and retry.
        for script in (self._claim, self._save, self._renew, self._release):
            await self.client.script_load(script.script)

    async def close(self) -> None:
        await self.client.aclose()
        await self.client.connection_pool.disconnect()

    async def load(self, key: str) -> Record | None:
        return _record(await self.client.hmget(self.keys(key)[0], *_FIELDS))

    async def save(self, key: str, record: Record, owner: str | None = None) -> bool:
        keep_ms = math.ceil(record.keep_until * 1000)
        args: list[str | bytes | int] = [repr(record.fetched_at), repr(record.expires_at), repr(record.keep_until),
                                         keep_ms, record.meta, record.body, owner or ""]
        return bool(await self._save(keys=self.keys(key), args=args))

    async def claim(self, key: str, owner: str, now: float, lock_ttl: float) -> tuple[Claim, Record | None]:
        answer = await self._claim(keys=self.keys(key), args=[repr(now), owner, max(1, math.ceil(lock_ttl * 1000))])
        claim = {1: Claim.FRESH, 2: Claim.ACQUIRED}.get(int(answer[0]), Claim.BUSY)
        return claim, (_record(answer[1]) if claim is not Claim.BUSY else None)

    async def renew(self, key: str, owner: str, lock_ttl: float) -> bool:
        return bool(await self._renew(keys=[self.keys(key)[1]], args=[owner, max(1, math.ceil(lock_ttl * 1000))]))

    async def release(self, key: str, owner: str) -> None:
        await self._release(keys=[self.keys(key)[1]], args=[owner])


def _record(fields: list[Any] | None) -> Record | None:
    """A record from the hash's fields (in ``_FIELDS`` order), or None."""
    if not fields:
        return None
    fetched_at, expires_at, keep_until, meta, body = fields
    if meta is None or fetched_at is None or expires_at is None:
        return None
    return Record(float(fetched_at), float(expires_at), float(keep_until or expires_at),
                  meta.decode("utf-8", "replace"), body or b"")
