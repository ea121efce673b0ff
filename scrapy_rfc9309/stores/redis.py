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

Needs the ``redis`` package: ``pip install 'scrapy-rfc9309[redis]'``.
"""

from __future__ import annotations

import math
from typing import Any

from ..exceptions import RobotsTxtConfigError
from ..record import Record
from .base import Claim, Store

try:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry
except ImportError:  # reported when the store is made, with a message naming the setting
    redis = None  # type: ignore[assignment]

__all__ = ["DEFAULT_URL", "RedisStore"]

DEFAULT_URL = "redis://localhost:6379/0"
#: Seconds to connect and to wait for an answer before the store counts as down.
CONNECT_TIMEOUT = 2.0
SOCKET_TIMEOUT = 5.0

# KEYS: state, lock. ARGV: now, owner, lock ttl (ms).
_CLAIM = """
local expires = redis.call('HGET', KEYS[1], 'expires_at')
if expires and tonumber(expires) > tonumber(ARGV[1]) then return 1 end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then return 2 end
if redis.call('GET', KEYS[2]) == ARGV[2] then
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return 2
end
return 0
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


class RedisStore(Store):
    """Origin states in Redis, shared by a fleet."""

    threads = 4

    def __init__(self, url: str = DEFAULT_URL, prefix: str = "robotstxt", setting: str = "ROBOTSTXT_REDIS_URL") -> None:
        if redis is None:
            raise RobotsTxtConfigError(
                "ROBOTSTXT_STORE = 'redis' needs the redis package: pip install 'scrapy-rfc9309[redis]'"
            )
        try:
            # One immediate retry: a pooled connection to a Redis that restarted fails
            # once, and the retry reconnects. More would only delay the fallback.
            self.client = redis.Redis.from_url(
                url, socket_connect_timeout=CONNECT_TIMEOUT, socket_timeout=SOCKET_TIMEOUT, health_check_interval=30,
                retry=Retry(NoBackoff(), 1),
            )
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

    def open(self) -> None:
        self.client.ping()

    def close(self) -> None:
        self.client.close()

    def load(self, key: str) -> Record | None:
        values: list[Any] = self.client.hmget(self.keys(key)[0], "fetched_at", "expires_at", "keep_until", "meta",
                                              "body")
        fetched_at, expires_at, keep_until, meta, body = values
        if meta is None or fetched_at is None or expires_at is None:
            return None
        return Record(float(fetched_at), float(expires_at), float(keep_until or expires_at),
                      meta.decode("utf-8", "replace"), body or b"")

    def save(self, key: str, record: Record, owner: str | None = None) -> bool:
        keep_ms = math.ceil(record.keep_until * 1000)
        args = [repr(record.fetched_at), repr(record.expires_at), repr(record.keep_until), keep_ms, record.meta,
                record.body, owner or ""]
        return bool(self._save(keys=self.keys(key), args=args))

    def claim(self, key: str, owner: str, now: float, lock_ttl: float) -> Claim:
        answer = self._claim(keys=self.keys(key), args=[repr(now), owner, max(1, math.ceil(lock_ttl * 1000))])
        return {1: Claim.FRESH, 2: Claim.ACQUIRED}.get(int(answer), Claim.BUSY)

    def renew(self, key: str, owner: str, lock_ttl: float) -> bool:
        return bool(self._renew(keys=[self.keys(key)[1]], args=[owner, max(1, math.ceil(lock_ttl * 1000))]))

    def release(self, key: str, owner: str) -> None:
        self._release(keys=[self.keys(key)[1]], args=[owner])
