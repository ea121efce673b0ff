"""One connection to Redis shared by every call of a process.

A call is written to the socket in its caller's turn of the event loop, without
waiting for the answers of the calls before it, and its answer is the next one read:
Redis answers a connection's commands in order. So a call never queues for a free
connection behind calls whose answers a busy event loop has not read yet, and a
crawl starting on a thousand origins sends a thousand claims in a few writes, on one
connection, instead of opening a pool of them.

redis-py's :class:`~redis.asyncio.connection.Connection` connects and sets the
connection up (TLS, ``AUTH``, ``SELECT``, everything a ``redis://``, ``rediss://`` or
``unix://`` URL says) and reads the answers; the commands are written here, on its
stream. What ends a connection ends every call in flight on it: the server closing
it, a read failing, or an answer not arriving within ``answer_timeout``; a call
that was in flight on a connection that closed is sent once more on a new one
(the calls are the store's scripts and reads, which are safe to repeat), and a
connection that timed out is not retried (the server is not answering).
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import Callable
from typing import Any

from redis.asyncio.connection import Connection, parse_url
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

__all__ = ["SharedConnection", "connection_maker", "set_up"]


def connection_maker(url: str, connect_timeout: float, *, with_db: bool = True) -> Callable[[], Connection]:
    """What makes a new (unconnected) redis-py connection to ``url``: answers as bytes,
    in RESP2 (plain replies, no pushes to tell apart from answers), no read timeout of
    its own (an idle connection waits for as long as it is idle; the caller times
    what it waits for), one attempt to connect (the caller decides on retries)."""
    options: dict[str, Any] = dict(parse_url(url))
    connection_class = options.pop("connection_class", Connection)
    if not with_db:  # a cluster node: no SELECT
        options.pop("db", None)
    options.update(socket_connect_timeout=connect_timeout, socket_timeout=None, decode_responses=False,
                   protocol=2, retry=Retry(NoBackoff(), 0))
    if issubclass(connection_class, Connection):  # TCP (and TLS), not a Unix socket
        options["socket_keepalive"] = True
    return functools.partial(connection_class, **options)


class _Lost(RedisConnectionError):
    """The connection a call was in flight on closed before it was answered."""


async def set_up(connection: Connection, timeout: float) -> None:
    """Connect ``connection`` and set it up (``AUTH``, ``SELECT``...), within
    ``timeout`` seconds: a server that accepts connections and never answers fails it."""
    try:
        await asyncio.wait_for(connection.connect(), timeout)  # type: ignore[no-untyped-call]
    except asyncio.TimeoutError:
        await connection.disconnect(nowait=True)
        raise RedisTimeoutError(f"Redis did not answer the connection's set-up in {timeout:g} s") from None


class SharedConnection:
    """Every command of a process, on one connection to the Redis at ``url``."""

    def __init__(self, url: str, *, connect_timeout: float, answer_timeout: float) -> None:
        self._new_connection = connection_maker(url, connect_timeout)
        self.connect_timeout = connect_timeout
        self.answer_timeout = answer_timeout
        #: The answers awaited on the current connection, in the order of their commands.
        self._answers: deque[tuple[asyncio.Future[Any], asyncio.TimerHandle]] = deque()
        self._connection: Connection | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reader: asyncio.Task[None] | None = None
        self._connecting: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self._closed = False
        #: Connections made so far.
        self.connections = 0

    async def call(self, *args: Any) -> Any:
        """The answer to the command ``args`` (a reply error is raised, as redis-py does)."""
        try:
            return await self._call(args)
        except _Lost:
            return await self._call(args)

    async def _call(self, args: tuple[Any, ...]) -> Any:
        if self._writer is None:
            await self._connected()
            if self._writer is None:  # lost again before this call's turn came
                raise _Lost("the connection to Redis closed")
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Any] = loop.create_future()
        overdue = loop.call_later(self.answer_timeout, self._overdue, self._connection)
        # Nothing is awaited between queueing the answer and writing the command: the
        # order of the queue is the order of the commands on the socket.
        self._answers.append((answer, overdue))
        assert self._connection is not None
        self._writer.writelines(self._connection.pack_command(*args))
        return await answer

    async def _connected(self) -> None:
        """Connect, once however many calls come meanwhile."""
        if self._closed:
            raise RedisConnectionError("the Redis store is closed")
        if self._connecting is None:
            self._connecting = asyncio.get_running_loop().create_task(self._connect())
        connecting = self._connecting
        try:
            await asyncio.shield(connecting)
        finally:
            if connecting.done() and self._connecting is connecting:
                self._connecting = None

    async def _connect(self) -> None:
        connection = self._new_connection()
        await set_up(connection, self.connect_timeout + self.answer_timeout)
        writer = getattr(connection, "_writer", None)
        if not isinstance(writer, asyncio.StreamWriter):
            await connection.disconnect()
            raise RuntimeError("redis-py's Connection has no stream writer: this version of redis-py is not supported")
        self._connection, self._writer = connection, writer
        self._reader = asyncio.get_running_loop().create_task(self._read(connection))
        self.connections += 1

    async def _read(self, connection: Connection) -> None:
        """Hand each answer read to the call it answers."""
        try:
            while True:
                value: Any
                try:
                    value = await connection.read_response()
                except ResponseError as exc:  # an error reply: the connection reads on
                    value = exc
                if not self._answers:
                    raise RedisConnectionError("Redis sent an answer to no command")
                answer, overdue = self._answers.popleft()
                overdue.cancel()
                if not answer.done():  # a call cancelled meanwhile: its answer is dropped
                    if isinstance(value, Exception):
                        answer.set_exception(value)
                    else:
                        answer.set_result(value)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._lose(connection, exc, retry=True)

    def _overdue(self, connection: Connection | None) -> None:
        """The oldest answer is late: the server is not answering; end the connection."""
        self._lose(connection, RedisTimeoutError(f"no answer from Redis in {self.answer_timeout:g} s"), retry=False)

    def _lose(self, connection: Connection | None, exc: Exception, retry: bool) -> None:
        """End ``connection`` (if it is still the current one) and every call in flight on it."""
        if connection is None or connection is not self._connection:
            return
        answers, self._answers = self._answers, deque()
        reader = self._reader
        self._connection = self._writer = self._reader = None
        if reader is not None and reader is not asyncio.current_task():
            reader.cancel()
        closing = asyncio.get_running_loop().create_task(connection.disconnect(nowait=True))
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)
        for answer, overdue in answers:
            overdue.cancel()
            if not answer.done():
                answer.set_exception(_Lost(str(exc)) if retry else exc)

    async def close(self) -> None:
        self._closed = True
        if self._connecting is not None:
            self._connecting.cancel()
            await asyncio.gather(self._connecting, return_exceptions=True)
        self._lose(self._connection, RedisConnectionError("the Redis store is closed"), retry=False)
        await asyncio.gather(*self._closing, return_exceptions=True)
