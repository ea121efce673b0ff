"""``ROBOTSTXT_STORE = "redis"``: origin states shared by every process pointed at
one Redis (``ROBOTSTXT_REDIS_URL``), with a fetch lock per origin so that one
process fetches each robots.txt per lifetime while the others wait for it.

Keys, per origin (``{...}`` is a Redis Cluster hash tag, so both keys of an origin
live on one node):

- ``<prefix>:{<origin>}:state``, a hash: ``fetched_at``, ``expires_at``,
  ``keep_until``, ``meta`` (JSON), ``body`` (the raw robots.txt); it expires as long
  after the save as the saving process has to ``keep_until`` (so on Redis's clock,
  whatever the saving process's clock says);
- ``<prefix>:{<origin>}:lock``: the fetching process's id, with an expiry
  (``ROBOTSTXT_STORE_LOCK_TTL``, renewed while the fetch runs), so a process that
  dies while fetching blocks the others for that long at most.

- ``<prefix>:db<N>:{<origin>}:saved``: a channel (``N``, the database number of the
  URL: Redis's channels are shared by every database, so the number keeps two fleets
  on two databases apart), told when the origin's record is saved or its lock
  released, so that processes waiting for the fetch go on at once instead of polling.
  A message is only a hint: whatever it says, the waiter reads the key (claims
  again), so a message published by anyone else can cost a claim, never a record.

Waiting processes subscribe to the channel of each origin they wait for (one
connection per Redis node, subscribed only while someone waits), then wait for a
message, or for the lock's expiry (a fetcher that died sends none). Without a
working subscription they poll, as with any store that cannot tell.

With ``ROBOTSTXT_REDIS_CLUSTER = True`` the URL names one node of a Redis Cluster
(``redis.asyncio.cluster.RedisCluster``); every key and the channel of an origin
share its hash slot, so each script runs on one node, and the channel is a shard
channel (``SPUBLISH``/``SSUBSCRIBE``, Redis 7 and later; an older cluster is
polled).

Its methods are coroutines of ``redis.asyncio``, awaited in the reactor's asyncio
loop: no thread, and a claim is one round trip (a Lua script that answers with the
record). On a single Redis the calls that the process makes in one turn of the event
loop go together, as one redis-py pipeline on a connection of a pool
(:mod:`.redis_connection`); a cluster's calls go through redis-py's cluster client.
Needs the ``redis``
package (redis-py 5.0.1 or later: :data:`.base.REDIS_INSTALL`) and Scrapy's asyncio reactor (the
default ``TWISTED_REACTOR``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import math
import time
from collections import deque
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..config import flag
from ..core.syntax import DEFAULT_MAX_BYTES
from ..exceptions import RobotsTxtConfigError
from .base import REDIS_INSTALL, AsyncStore, Claim
from .record import CLOCK_TOLERANCE, MAX_META_BYTES, Record, Unreadable

try:
    from redis.exceptions import NoScriptError

    from .redis_connection import Pipelined, connection_maker, database, set_up
except ImportError:  # reported when the store is made, with a message naming the setting
    Pipelined = None  # type: ignore[assignment,misc]

__all__ = ["DEFAULT_URL", "RedisStore", "UnexpectedReply"]

logger = logging.getLogger(__name__)

DEFAULT_URL = "redis://localhost:6379/0"
#: Seconds to connect and to wait for an answer before the store counts as down.
CONNECT_TIMEOUT = 2.0
SOCKET_TIMEOUT = 5.0
#: Connections per process to a Redis (to each node of a cluster). Calls beyond wait for one.
MAX_CONNECTIONS = 8
#: Seconds without subscribing again after a subscription failed (waiters poll meanwhile).
SUBSCRIBE_RETRY_DELAY = 5.0

#: The record's fields, in the order the scripts and ``load`` read them.
_FIELDS = ("fetched_at", "expires_at", "keep_until", "meta", "body")
# What every script starts with: a field's number (nil unless a finite number), a key's type.
_PRELUDE = """
local function number(value)
  if type(value) ~= 'string' or value:find('[xX]') then return nil end  -- no hexadecimal, as Python reads them
  local n = tonumber(value)
  if n and n == n and n > -math.huge and n < math.huge then return n end
  return nil
end
local function kind(key) return redis.call('TYPE', key)['ok'] end
local names = {'fetched_at', 'expires_at', 'keep_until', 'meta', 'body'}
local words = {'fetched_at', 'expires_at', 'keep_until', 'metadata', 'body'}
-- Why the record's fields are not read (nil when they may be): each one's length is looked up first
-- (HSTRLEN copies nothing), and a record with a field longer than this process reads (a time longer than a
-- number's 64 bytes, metadata or a body past its limit) is never copied into the script, which blocks every
-- client of the server while it runs, nor sent.
local function too_long(key, meta_max, body_max)
  local limits = {64, 64, 64, meta_max, body_max}
  for i, name in ipairs(names) do
    local size = redis.call('HSTRLEN', key, name)
    if size > limits[i] then
      return 'a record with ' .. size .. ' bytes of ' .. words[i] .. ' (at most ' .. limits[i] .. ' are read)'
    end
  end
  return nil
end
-- The record's fields, or why they are not read.
local function fields_of(key, meta_max, body_max)
  return too_long(key, meta_max, body_max) or redis.call('HMGET', key, unpack(names))
end
"""
# KEYS: state, lock. ARGV: now, owner, lock ttl (ms), fetched_after (or ''), CLOCK_TOLERANCE, the
# metadata's and the body's limits in bytes. Answers {1, fields} (fresh), {2, fields} (lock taken; the
# fields kept, or nil when there is no record, or why the key cannot be read), {0} (busy). A key of
# another type is no record, and a lock key of another type no lock; a lock without an expiry is given
# the lock ttl.
_CLAIM = _PRELUDE + """
local now = tonumber(ARGV[1])
local fields = false
local state = kind(KEYS[1])
if state == 'hash' then
  fields = fields_of(KEYS[1], tonumber(ARGV[6]), tonumber(ARGV[7]))
  if type(fields) == 'table' then
    local fetched, expires, after = number(fields[1]), number(fields[2]), tonumber(ARGV[4])
    -- A record without its metadata or its body is no record (the process that claims it fetches).
    if fetched and expires and expires > now and fetched <= now + tonumber(ARGV[5])
       and (not after or fetched > after) and fields[4] and fields[5] then
      return {1, fields}
    end
  end
elseif state ~= 'none' then
  fields = 'a Redis ' .. state .. ', not a hash'
end
local lock = kind(KEYS[2])
if lock ~= 'none' and lock ~= 'string' then redis.call('DEL', KEYS[2]) end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then return {2, fields} end
if redis.call('GET', KEYS[2]) == ARGV[2] then
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return {2, fields}
end
if redis.call('PTTL', KEYS[2]) == -1 then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
return {0}
"""
# KEYS: state. ARGV: the metadata's and the body's limits in bytes. Answers {fields} (nil fields when
# there is no record), or why the key cannot be read.
_LOAD = _PRELUDE + """
local state = kind(KEYS[1])
if state ~= 'hash' and state ~= 'none' then return 'a Redis ' .. state .. ', not a hash' end
local fields = fields_of(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
if type(fields) == 'table' then return {fields} end
return fields
"""
# KEYS: state, lock, channel. ARGV: fetched_at, expires_at, keep_until, ms to keep it (0: it is past
# its keep_until, not written), meta, body, owner or '', the publishing command ('PUBLISH',
# 'SPUBLISH', or '' for none), now, CLOCK_TOLERANCE. Written unless the record kept was fetched later
# and is readable and not dated ahead of now (see stores.base.replaces). The message, 'saved', carries
# nothing: the waiters read the key (a channel can be published on by any client of the server).
_SAVE = _PRELUDE + """
local write = tonumber(ARGV[4]) > 0
local state = kind(KEYS[1])
-- Only the kept record's times are read (its metadata and body need only be there).
if write and state == 'hash' and not too_long(KEYS[1], math.huge, math.huge) then
  local kept = redis.call('HMGET', KEYS[1], 'fetched_at', 'expires_at', 'keep_until')
  local fetched = number(kept[1])
  local readable = fetched and number(kept[2]) and (not kept[3] or number(kept[3]))
                   and redis.call('HSTRLEN', KEYS[1], 'meta') > 0 and redis.call('HEXISTS', KEYS[1], 'body') == 1
  if readable and fetched > tonumber(ARGV[1]) and fetched <= tonumber(ARGV[9]) + tonumber(ARGV[10]) then
    write = false
  end
end
if write then
  if state ~= 'none' then redis.call('DEL', KEYS[1]) end
  redis.call('HSET', KEYS[1], 'fetched_at', ARGV[1], 'expires_at', ARGV[2], 'keep_until', ARGV[3],
             'meta', ARGV[5], 'body', ARGV[6])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
if ARGV[7] ~= '' and kind(KEYS[2]) == 'string' and redis.call('GET', KEYS[2]) == ARGV[7] then
  redis.call('DEL', KEYS[2])
end
if ARGV[8] ~= '' then redis.call(ARGV[8], KEYS[3], 'saved') end
if write then return 1 end
return 0
"""
# KEYS: lock. ARGV: owner, ttl (ms).
_RENEW = _PRELUDE + """
if kind(KEYS[1]) == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
# KEYS: lock, channel. ARGV: owner, the publishing command (or '').
_RELEASE = _PRELUDE + """
if kind(KEYS[1]) == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] ~= '' then redis.call(ARGV[2], KEYS[2], 'released') end
  return 1
end
return 0
"""


class UnexpectedReply(Exception):
    """Redis answered a command with something it never answers to it (a server or
    proxy that is not a working Redis): the store counts as unavailable."""


class _Script:
    """A Lua script of the store, called by its SHA1 (``EVALSHA``)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()  # the name Redis gives it


_SCRIPTS = {name: _Script(source) for name, source in
            (("claim", _CLAIM), ("load", _LOAD), ("save", _SAVE), ("renew", _RENEW), ("release", _RELEASE))}


class RedisStore(AsyncStore):
    """Origin states in Redis (or a Redis Cluster), shared by a fleet."""

    def __init__(self, url: str = DEFAULT_URL, prefix: str = "robotstxt", setting: str = "ROBOTSTXT_REDIS_URL",
                 cluster: bool = False, max_body: int = DEFAULT_MAX_BYTES) -> None:
        if Pipelined is None:
            raise RobotsTxtConfigError(
                f"ROBOTSTXT_STORE = 'redis' needs the redis package (redis-py): {REDIS_INSTALL}"
            )
        #: The calls of the process, pipelined (a single Redis), or redis-py's cluster
        #: client, which routes each call to the node of its keys.
        self.connection: Pipelined | None = None
        self.client: Any = None
        try:
            if cluster:
                from redis.asyncio.cluster import RedisCluster

                self.client = RedisCluster.from_url(
                    url, max_connections=MAX_CONNECTIONS, socket_connect_timeout=CONNECT_TIMEOUT,
                    socket_timeout=SOCKET_TIMEOUT,
                )
            else:
                self.connection = Pipelined(url, connect_timeout=CONNECT_TIMEOUT, answer_timeout=SOCKET_TIMEOUT,
                                            max_connections=MAX_CONNECTIONS)
        except ValueError as exc:
            raise RobotsTxtConfigError(f"{setting} is not a Redis URL ({exc}): {url!r}") from None
        self.url = url
        self.prefix = prefix
        self.cluster = cluster
        #: The most of a record this process reads: its metadata (a longer one is unreadable, unsent) and its
        #: body (cut; ``ROBOTSTXT_MAX_SIZE``, as a file fetched here is). Other processes write the store.
        self.max_meta = MAX_META_BYTES
        self.max_body = max(max_body, DEFAULT_MAX_BYTES)
        #: The database of the URL (a cluster has only 0): part of every channel's name.
        self.db = 0 if cluster else database(url)
        #: The command that tells waiters (``PUBLISH``, ``SPUBLISH`` in a cluster), or "" (they poll).
        self.publish = "PUBLISH"
        self.notifier = _Notifier(self)

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
        max_size = settings.getint("ROBOTSTXT_MAX_SIZE", DEFAULT_MAX_BYTES)
        return cls(url, prefix, setting, flag(settings, "ROBOTSTXT_REDIS_CLUSTER"), max_size)

    def keys(self, key: str) -> tuple[str, str]:
        """The state and lock keys of an origin."""
        base = f"{self.prefix}:{{{key}}}"
        return f"{base}:state", f"{base}:lock"

    def channel(self, key: str) -> str:
        """The channel told when the origin's record is saved or its lock released:
        named for the prefix and the database, which Redis's channels ignore."""
        return f"{self.prefix}:db{self.db}:{{{key}}}:saved"

    async def open(self) -> None:
        if self.cluster:
            await self.client.initialize()
            # Shard channels came with Redis 7: an older cluster has no way to tell waiters.
            answers = await self.client.info("server", target_nodes=self.client.PRIMARIES)
            infos = [answers] if "redis_version" in answers else list(answers.values())
            majors = [int(str(info.get("redis_version", "0")).split(".")[0]) for info in infos]
            self.publish = "SPUBLISH" if majors and min(majors) >= 7 else ""
        # Load the scripts now (on every master of a cluster), or the first calls would each
        # fail with NOSCRIPT and send them.
        answers = await asyncio.gather(*(self.client.script_load(script.source) if self.cluster
                                         else self._command("SCRIPT", "LOAD", script.source)
                                         for script in _SCRIPTS.values()))
        for script, answer in zip(_SCRIPTS.values(), answers, strict=True):
            shas = answer.values() if isinstance(answer, dict) else [answer]
            if any(sha not in (script.sha, script.sha.encode()) for sha in shas):
                raise UnexpectedReply(f"Redis answered {answer!r:.100} to SCRIPT LOAD")

    async def close(self) -> None:
        await self.notifier.close()
        if self.connection is not None:
            await self.connection.close()
        else:
            await self.client.aclose()

    async def _command(self, *args: Any) -> Any:
        """The answer to a command (in a cluster, sent to the node of its key: the
        first key, or for ``EVAL``/``EVALSHA`` the script's keys)."""
        if self.connection is not None:
            return await self.connection.call(*args)
        return await self.client.execute_command(*args)

    async def _run(self, name: str, keys: list[str] | tuple[str, ...], args: list[Any]) -> Any:
        """The answer of the script ``name`` called with ``keys`` and ``args``."""
        script = _SCRIPTS[name]
        try:
            return await self._command("EVALSHA", script.sha, len(keys), *keys, *args)
        except NoScriptError:  # the server lost its scripts (a restart): EVAL sends it and keeps it
            return await self._command("EVAL", script.source, len(keys), *keys, *args)

    async def pttl(self, key: str) -> int:
        """Milliseconds left to the fetch lock of ``key`` (-2: no lock, -1: no expiry)."""
        return _integer(await self._command("PTTL", self.keys(key)[1]), "PTTL", (-2, None))

    async def load(self, key: str) -> Record | None:
        answer = await self._run("load", [self.keys(key)[0]], [self.max_meta, self.max_body])
        if isinstance(answer, bytes):
            return Unreadable.because(f"the key is {answer.decode(errors='replace')}")
        if not (isinstance(answer, list) and len(answer) == 1 and isinstance(answer[0], list)
                and len(answer[0]) == len(_FIELDS)):
            raise UnexpectedReply(f"Redis answered {answer!r:.100} to the load script")
        return _record(answer[0])

    async def save(self, key: str, record: Record, owner: str | None = None) -> bool:
        now = time.time()
        # How long to keep it from now, on Redis's clock: right whatever this process's clock says.
        keep_ms = max(0, math.ceil((record.keep_until - now) * 1000))
        args: list[str | bytes | int] = [repr(record.fetched_at), repr(record.expires_at), repr(record.keep_until),
                                         keep_ms, record.meta, record.body, owner or "", self.publish, repr(now),
                                         repr(CLOCK_TOLERANCE)]
        answer = await self._run("save", [*self.keys(key), self.channel(key)], args)
        return bool(_integer(answer, "the save script", (0, 1)))

    async def claim(self, key: str, owner: str, now: float, lock_ttl: float,
                    fetched_after: float | None = None) -> tuple[Claim, Record | None]:
        ttl_ms = max(1, math.ceil(lock_ttl * 1000))
        after = "" if fetched_after is None else repr(fetched_after)
        answer = await self._run("claim", self.keys(key), [repr(now), owner, ttl_ms, after, repr(CLOCK_TOLERANCE),
                                                           self.max_meta, self.max_body])
        if isinstance(answer, list) and answer[:1] == [0] and len(answer) == 1:
            return Claim.BUSY, None
        if isinstance(answer, list) and len(answer) == 2 and answer[0] in (1, 2):
            kept = answer[1]
            if kept is None or (isinstance(kept, list) and len(kept) == len(_FIELDS)):
                record = _record(kept)
                if answer[0] == 2:
                    return Claim.ACQUIRED, record
                if record is not None:
                    return Claim.FRESH, record
            elif isinstance(kept, bytes) and answer[0] == 2:
                return Claim.ACQUIRED, Unreadable.because(f"the key is {kept.decode(errors='replace')}")
        raise UnexpectedReply(f"Redis answered {answer!r:.100} to the claim script")

    async def renew(self, key: str, owner: str, lock_ttl: float) -> bool:
        answer = await self._run("renew", [self.keys(key)[1]], [owner, max(1, math.ceil(lock_ttl * 1000))])
        return bool(_integer(answer, "the renew script", (0, 1)))

    async def release(self, key: str, owner: str) -> None:
        _integer(await self._run("release", [self.keys(key)[1], self.channel(key)], [owner, self.publish]),
                 "the release script", (0, 1))

    async def wait_saved(self, key: str, timeout: float) -> Record | bool | None:
        """True when told (whatever the message says: the caller claims again, reading
        the key), False at the lock's expiry or ``timeout``, None when it cannot tell."""
        if not self.publish:
            return None
        return await self.notifier.wait(key, timeout)


class _Notifier:
    """The subscriptions of one process: a connection per Redis node that holds a
    channel waited for, a reader task per connection that wakes the waiters of the
    channel a message names, and each channel subscribed while someone waits."""

    def __init__(self, store: RedisStore) -> None:
        self.store = store
        self._subscribe = "SSUBSCRIBE" if store.cluster else "SUBSCRIBE"
        self._unsubscribe = "SUNSUBSCRIBE" if store.cluster else "UNSUBSCRIBE"
        #: Waiters by channel; a channel is subscribed while it has some.
        self._waiters: dict[str, set[asyncio.Future[bool]]] = {}
        #: Subscriptions not yet confirmed by the server, by channel.
        self._confirming: dict[str, asyncio.Future[None]] = {}
        self._nodes: dict[str, _Node] = {}
        self._broken_until = 0.0

    async def wait(self, key: str, timeout: float) -> bool | None:
        if time.monotonic() < self._broken_until:
            return None
        channel = self.store.channel(key)
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[bool] = loop.create_future()
        self._waiters.setdefault(channel, set()).add(woken)
        try:
            try:
                node = await self._subscribed(channel)
            except Exception as exc:
                self._broken_until = time.monotonic() + SUBSCRIBE_RETRY_DELAY
                logger.info("robots.txt store: cannot subscribe to Redis (%s: %s); waiting processes poll for %g s",
                            type(exc).__name__, exc, SUBSCRIBE_RETRY_DELAY)
                return None
            # Subscribed before looking at the lock: a save from now on is heard.
            lock_ms = await self.store.pttl(key)
            if lock_ms == -2 and not woken.done():
                # No lock: saved or released meanwhile. A save's message was sent to the
                # subscription before this answer, on another connection, so it may not be
                # read yet: a ping's answer comes after it on that connection.
                await node.ping()
            if woken.done():
                return woken.result()
            if lock_ms == -2:
                return True
            # Past the lock's expiry (PTTL rounds down, timers may fire a little early).
            limit = min(timeout, lock_ms / 1000 + 0.005) if lock_ms >= 0 else timeout
            expiry = loop.call_later(max(limit, 0.0), _settle, woken, False)
            try:
                return await woken
            finally:
                expiry.cancel()
        finally:
            waiters = self._waiters.get(channel)
            if waiters is not None:
                waiters.discard(woken)
                if not waiters:
                    del self._waiters[channel]
                    holder = self._nodes.get(self._node_name(channel))
                    if holder is not None and not holder.lost and channel in holder.channels:
                        holder.channels.discard(channel)
                        holder.send(self._unsubscribe, channel)

    async def _subscribed(self, channel: str) -> _Node:
        """Subscribe to ``channel`` on the node holding it, unless it is already;
        return that node's connection once the server confirmed it."""
        name = self._node_name(channel)
        node = self._nodes.get(name)
        if node is None or node.lost:
            node = _Node(self, name)
            self._nodes[name] = node
            node.connecting = asyncio.get_running_loop().create_task(node.connect())
        assert node.connecting is not None
        try:
            await asyncio.shield(node.connecting)  # one connection, however many waiters come meanwhile
        except Exception as exc:
            node._fail(exc)
            raise
        if channel not in node.channels:
            node.channels.add(channel)
            self._confirming[channel] = asyncio.get_running_loop().create_future()
            node.send(self._subscribe, channel)
        confirming = self._confirming.get(channel)
        if confirming is not None:  # None: confirmed already
            await asyncio.wait_for(asyncio.shield(confirming), SOCKET_TIMEOUT)
        if node.lost:
            raise ConnectionError("the subscribing connection was lost")
        return node

    def _node_name(self, channel: str) -> str:
        if not self.store.cluster:
            return self.store.url
        node = self.store.client.get_node_from_key(channel)
        return f"{node.host}:{node.port}"

    def heard(self, kind: bytes, channel: str) -> None:
        """A message of the server: a subscription confirmed, or a channel told. What
        a message carries is never read: any client may publish on any channel it
        is allowed to, so a message only wakes the waiters, who read the key."""
        if kind in (b"subscribe", b"ssubscribe"):
            confirming = self._confirming.pop(channel, None)
            if confirming is not None and not confirming.done():
                confirming.set_result(None)
        elif kind in (b"message", b"smessage"):
            for woken in self._waiters.get(channel, ()):
                _settle(woken, True)

    def lost(self, node: _Node, exc: BaseException | None) -> None:
        """A connection failed: its waiters claim again (and subscribe anew)."""
        if self._nodes.get(node.name) is node:
            del self._nodes[node.name]
        logger.debug("robots.txt store: subscription to Redis %s lost (%s)", node.name, exc)
        for channel in node.channels:
            confirming = self._confirming.pop(channel, None)
            if confirming is not None and not confirming.done():
                confirming.set_result(None)
        for waiters in self._waiters.values():
            for woken in waiters:
                _settle(woken, True)

    async def close(self) -> None:
        for node in list(self._nodes.values()):
            await node.close()
        self._nodes.clear()


class _Node:
    """One subscribing connection, to the Redis (or to one cluster node)."""

    def __init__(self, notifier: _Notifier, name: str) -> None:
        self.notifier = notifier
        self.name = name
        self.lost = False
        #: Channels subscribed (or being subscribed) on this connection.
        self.channels: set[str] = set()
        # No read timeout: the connection is silent until a channel is told.
        store = notifier.store
        self.connection = connection_maker(_node_url(store.url, name, store.cluster), CONNECT_TIMEOUT,
                                           with_db=not store.cluster)()
        self.connecting: asyncio.Task[None] | None = None
        self.reader: asyncio.Task[None] | None = None
        self._sending: asyncio.Task[None] | None = None
        #: Pings sent, answered in order.
        self._pongs: deque[asyncio.Future[None]] = deque()

    async def connect(self) -> None:
        await set_up(self.connection, CONNECT_TIMEOUT + SOCKET_TIMEOUT)
        self.reader = asyncio.get_running_loop().create_task(self._read())

    def send(self, *command: str) -> None:
        """Send ``command`` (no answer but through the reader); sends stay in order."""
        previous = self._sending

        async def sending() -> None:
            if previous is not None:
                await asyncio.gather(previous, return_exceptions=True)
            try:
                await self.connection.send_command(*command)
            except Exception as exc:
                self._fail(exc)

        self._sending = asyncio.get_running_loop().create_task(sending())

    async def ping(self) -> None:
        """Return once the server answered a ping on this connection (so every message
        it sent before is handled), or the connection failed, or ``SOCKET_TIMEOUT``."""
        pong: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pongs.append(pong)
        self.send("PING")
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(pong), SOCKET_TIMEOUT)

    def _ponged(self) -> None:
        if self._pongs:
            _settle(self._pongs.popleft(), None)

    async def _read(self) -> None:
        try:
            while True:
                message = await self.connection.read_response()
                if message == b"PONG" or (isinstance(message, list) and message[:1] == [b"pong"]):
                    self._ponged()  # unsubscribed, and subscribed: the two forms of the answer
                elif isinstance(message, list) and len(message) >= 2:
                    kind, channel = message[0], message[1]
                    if isinstance(channel, bytes):
                        self.notifier.heard(kind if isinstance(kind, bytes) else str(kind).encode(),
                                            channel.decode("utf-8", "replace"))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._fail(exc)

    def _fail(self, exc: BaseException | None) -> None:
        while self._pongs:
            self._ponged()
        if not self.lost:
            self.lost = True
            self.notifier.lost(self, exc)
            if self.reader is not None and self.reader is not asyncio.current_task():
                self.reader.cancel()

    async def close(self) -> None:
        self.lost = True
        while self._pongs:
            self._ponged()
        for running in (self.connecting, self.reader, self._sending):
            if running is not None and not running.done():
                running.cancel()
                await asyncio.gather(running, return_exceptions=True)
        await self.connection.disconnect()


def _node_url(url: str, name: str, cluster: bool) -> str:
    """The URL of the node ``name`` (``host:port``), with ``url``'s scheme and credentials."""
    if not cluster:
        return url
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@{name}" if credentials else name
    return urlunsplit((parts.scheme, netloc, "/0", parts.query, ""))


def _settle(woken: asyncio.Future[Any], value: Any) -> None:
    if not woken.done():
        woken.set_result(value)


def _record(fields: list[Any] | None) -> Record | None:
    """A record from the hash's fields (in ``_FIELDS`` order): None when there is none,
    :class:`~scrapy_rfc9309.record.Unreadable` when its fields cannot be read (as
    ``_SAVE`` tells a readable record)."""
    if not fields or all(field is None for field in fields):
        return None
    fetched_at, expires_at, keep_until, meta, body = (_float(fields[0]), _float(fields[1]),
                                                      _float(fields[2]) if fields[2] is not None else None,
                                                      fields[3], fields[4])
    if (fetched_at is None or expires_at is None or (keep_until is None and fields[2] is not None)
            or not isinstance(meta, bytes) or not isinstance(body, bytes)):
        # A record without its body (every record has one, b"" without a good copy) is no empty robots.txt.
        return Unreadable.because("fields missing or of the wrong types: " + ", ".join(
            f"{name} {value!r:.40}" for name, value in zip(_FIELDS, fields, strict=True)))
    return Record(fetched_at, expires_at, expires_at if keep_until is None else keep_until,
                  meta.decode("utf-8", "replace"), body)


def _float(value: Any) -> float | None:
    """A field's number (None unless it is a finite number)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _integer(value: Any, command: str, allowed: tuple[int | None, int | None]) -> int:
    """``value`` when it is an integer in ``allowed`` (a range, None: unbounded)."""
    low, high = allowed
    if (isinstance(value, int) and not isinstance(value, bool) and (low is None or value >= low)
            and (high is None or value <= high)):
        return value
    raise UnexpectedReply(f"Redis answered {value!r:.100} to {command}")
