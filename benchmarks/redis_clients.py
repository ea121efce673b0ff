"""The Redis store with two other ways of talking to Redis than the one the package
uses (:class:`scrapy_rfc9309.stores.redis_connection.Pipelined`: the commands of one
turn of the event loop as one redis-py pipeline, on a pool), for
``bench_store.py --redis-clients`` to measure side by side. Crawls name them in
``ROBOTSTXT_STORE`` (a store of one's own, by its dotted path).

- :class:`HandmadeRedisStore`: every command of the process on one connection,
  written on redis-py's private ``Connection._writer`` without waiting for the
  answers before it, answers matched in order (what the package did before it used
  redis-py's public API only).
- :class:`PerCallRedisStore`: redis-py's public API without pipelines: each command
  one ``Redis.execute_command`` on a connection of the same pool.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.connection import Connection
from redis.exceptions import AuthenticationError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from scrapy_rfc9309.stores import redis as redis_store
from scrapy_rfc9309.stores.redis_connection import Pipelined, _options, connection_maker, set_up

__all__ = ["HandmadeRedisStore", "PerCallRedisStore"]


class HandmadeRedisStore(redis_store.RedisStore):
    """The Redis store on one hand-made shared connection."""

    def __init__(self, url: str = redis_store.DEFAULT_URL, prefix: str = "robotstxt",
                 setting: str = "ROBOTSTXT_REDIS_URL", cluster: bool = False) -> None:
        super().__init__(url, prefix, setting, cluster)
        self.connection = SharedConnection(url, connect_timeout=redis_store.CONNECT_TIMEOUT,  # type: ignore[assignment]
                                           answer_timeout=redis_store.SOCKET_TIMEOUT)


class PerCallRedisStore(redis_store.RedisStore):
    """The Redis store sending each command on its own, on the pool."""

    def __init__(self, url: str = redis_store.DEFAULT_URL, prefix: str = "robotstxt",
                 setting: str = "ROBOTSTXT_REDIS_URL", cluster: bool = False) -> None:
        super().__init__(url, prefix, setting, cluster)
        self.connection = PerCall(url, connect_timeout=redis_store.CONNECT_TIMEOUT,  # type: ignore[assignment]
                                  answer_timeout=redis_store.SOCKET_TIMEOUT,
                                  max_connections=redis_store.MAX_CONNECTIONS)


class PerCall(Pipelined):
    """Each command one ``execute_command``, sent at once, on a connection of the pool
    (a ``BlockingConnectionPool``: a command waits for a free connection)."""

    def __init__(self, url: str, *, connect_timeout: float, answer_timeout: float, max_connections: int) -> None:
        super().__init__(url, connect_timeout=connect_timeout, answer_timeout=answer_timeout,
                         max_connections=max_connections)
        self.pool = BlockingConnectionPool.from_url(url, max_connections=max_connections, timeout=answer_timeout,
                                                    socket_timeout=answer_timeout,
                                                    **_options(url, connect_timeout))
        self.client = Redis(connection_pool=self.pool)

    async def call(self, *args: Any) -> Any:
        try:
            return await self.client.execute_command(*args)
        except AuthenticationError:
            raise
        except RedisConnectionError:  # closed before it was answered: once more, on a new connection
            return await self.client.execute_command(*args)


class _Lost(RedisConnectionError):
    """The connection a call was in flight on closed before it was answered."""



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
