"""The Redis store's commands to one Redis, through redis-py's public API.

:class:`Pipelined` sends the commands that the process makes in one turn of the
event loop together, as one pipeline (``Redis.pipeline(transaction=False)``) on one
connection of a pool (``ConnectionPool``; a command made alone goes alone, as
``Redis.execute_command``). A crawl starting on a thousand origins sends its thousand
claims in one write, on one connection, instead of one round trip each on a pool's
few connections; the commands made while a pipeline is in flight go as the next one,
on another connection of the pool, without waiting for the answers of the first;
with ``max_connections`` in flight, the commands made meanwhile go together as soon
as one is answered. Each command's answer (or error reply) goes to its caller. Every
step costs as few turns of the event loop as redis-py allows (each turn is
milliseconds on a busy crawler): no read timeout of redis-py's, the send timed here.

redis-py connects and sets every connection up (TLS, ``AUTH``, ``SELECT``,
everything a ``redis://``, ``rediss://`` or ``unix://`` URL says). A pipeline whose
connection closed before it was answered (a Redis restart) is sent once more, on a
new connection (the store's commands are its scripts and reads, safe to repeat); one
not answered within ``answer_timeout`` (connecting and setting the connection up
included) fails (the server is not answering), and its connection is not used again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.connection import Connection, parse_url
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import AuthenticationError, AuthorizationError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

__all__ = ["Pipelined", "connection_maker", "database", "set_up"]


def _options(url: str, connect_timeout: float) -> dict[str, Any]:
    """What every connection of the store is made with: answers as bytes, in RESP2
    (plain replies, no pushes to tell apart from answers; redis-py's default changed
    across versions), no retries of redis-py's own (the store decides on retries)."""
    options: dict[str, Any] = dict(socket_connect_timeout=connect_timeout, decode_responses=False, protocol=2,
                                   retry=Retry(NoBackoff(), 0))
    if urlsplit(url).scheme.lower() != "unix":
        options["socket_keepalive"] = True  # TCP (and TLS): a peer gone silently is found
    return options


def database(url: str) -> int:
    """The database number ``url`` selects (its path or ``?db=``, as redis-py reads it; 0 by default)."""
    return int(parse_url(url).get("db") or 0)


def connection_maker(url: str, connect_timeout: float, *, with_db: bool = True) -> Callable[[], Connection]:
    """What makes a new (unconnected) redis-py connection to ``url``, with no read
    timeout of its own (a subscribed connection waits for as long as nobody saves)."""
    options: dict[str, Any] = dict(parse_url(url))
    connection_class = options.pop("connection_class", Connection)
    if not with_db:  # a cluster node: no SELECT
        options.pop("db", None)
    options.update(_options(url, connect_timeout), socket_timeout=None)

    def make() -> Connection:
        return connection_class(**options)  # type: ignore[no-any-return]

    return make


async def set_up(connection: Connection, timeout: float) -> None:
    """Connect ``connection`` and set it up (``AUTH``, ``SELECT``...), within
    ``timeout`` seconds: a server that accepts connections and never answers fails it."""
    try:
        await asyncio.wait_for(connection.connect(), timeout)  # type: ignore[no-untyped-call]
    except asyncio.TimeoutError:
        await connection.disconnect(nowait=True)
        raise RedisTimeoutError(f"Redis did not answer the connection's set-up in {timeout:g} s") from None


class Pipelined:
    """Every command of a process to the Redis at ``url``, the commands of one turn of
    the event loop in one pipeline (a single command on its own), up to
    ``max_connections`` at once, each answered within ``answer_timeout``."""

    def __init__(self, url: str, *, connect_timeout: float, answer_timeout: float, max_connections: int) -> None:
        # Never more connections than sends in flight, so the pool never runs out. No read
        # timeout of redis-py's (it costs event-loop turns on every call): each send is
        # timed here instead.
        self.pool = ConnectionPool.from_url(url, max_connections=max_connections, socket_timeout=None,
                                            **_options(url, connect_timeout))
        self.client = Redis(connection_pool=self.pool)
        self.answer_timeout = answer_timeout
        self.max_in_flight = max_connections
        #: The commands not sent yet, with their callers' futures.
        self._batch: list[tuple[tuple[Any, ...], asyncio.Future[Any]]] = []
        #: A send started that has not taken the commands yet.
        self._starting = False
        self._sending: set[asyncio.Task[None]] = set()
        self._closed = False

    async def call(self, *args: Any) -> Any:
        """The answer to the command ``args`` (an error reply is raised, as redis-py does)."""
        if self._closed:
            raise RedisConnectionError("the Redis store is closed")
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._batch.append((args, answer))
        self._start()
        return await answer

    def _start(self) -> None:
        """Start a send, unless one is starting (it takes every command made until it
        runs: the rest of this turn of the event loop) or all are in flight."""
        if self._batch and not self._starting and len(self._sending) < self.max_in_flight:
            self._starting = True
            sending = asyncio.get_running_loop().create_task(self._send())
            self._sending.add(sending)
            sending.add_done_callback(self._sent)

    def _sent(self, sending: asyncio.Task[None]) -> None:
        self._sending.discard(sending)
        if not self._closed:
            self._start()

    async def _send(self) -> None:
        self._starting = False
        batch, self._batch = self._batch, []
        sending = asyncio.current_task()
        assert sending is not None
        overdue = asyncio.get_running_loop().call_later(self.answer_timeout, _overdue, sending, batch,
                                                        self.answer_timeout)
        try:
            try:
                answers = await self._answers(batch)
            except (AuthenticationError, AuthorizationError):
                raise
            except RedisConnectionError:  # closed before it was answered: once more, on a new connection
                answers = await self._answers(batch)
        except BaseException as exc:
            for _, answer in batch:
                if not answer.done():
                    answer.set_exception(exc if isinstance(exc, Exception) else RedisConnectionError(str(exc)))
            if not isinstance(exc, Exception):
                raise
            return
        finally:
            overdue.cancel()
        for (_, answer), value in zip(batch, answers, strict=True):
            if answer.done():  # a caller cancelled meanwhile: its answer is dropped
                continue
            if isinstance(value, Exception):
                answer.set_exception(value)
            else:
                answer.set_result(value)

    async def _answers(self, batch: list[tuple[tuple[Any, ...], asyncio.Future[Any]]]) -> list[Any]:
        """The answers (error replies included) to the commands of ``batch``."""
        if len(batch) == 1:  # fewer turns of the event loop than a pipeline of one
            try:
                return [await self.client.execute_command(*batch[0][0])]  # type: ignore[no-untyped-call]
            except ResponseError as exc:
                return [exc]
        pipeline = self.client.pipeline(transaction=False)
        for args, _ in batch:
            pipeline.execute_command(*args)
        return list(await pipeline.execute(raise_on_error=False))

    async def close(self) -> None:
        self._closed = True
        batch, self._batch = self._batch, []
        for _, answer in batch:
            if not answer.done():
                answer.set_exception(RedisConnectionError("the Redis store is closed"))
        for sending in list(self._sending):
            sending.cancel()
        await asyncio.gather(*self._sending, return_exceptions=True)
        await self.client.aclose()
        await self.pool.disconnect()


def _overdue(sending: asyncio.Task[None], batch: list[tuple[tuple[Any, ...], asyncio.Future[Any]]],
             timeout: float) -> None:
    """A send not answered in time: its commands fail with a timeout, and it is
    cancelled (redis-py then drops its connection: the server is not answering)."""
    for _, answer in batch:
        if not answer.done():
            answer.set_exception(RedisTimeoutError(f"no answer from Redis in {timeout:g} s"))
    sending.cancel()
