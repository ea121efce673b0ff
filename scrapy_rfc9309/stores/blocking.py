"""Blocking stores seen as :class:`~scrapy_rfc9309.stores.AsyncStore`, so that the
middleware calls every store one way.

- :class:`InReactorStore`: the methods run directly in the reactor thread, for a
  store whose calls take microseconds (``Store.in_reactor = True``, the disk store).
  A thread hand-off is not free: a busy crawl holds the GIL, and each time a
  worker gives it up and takes it back it waits up to the 5 ms switch interval.
- :class:`ThreadedStore`: the methods run in worker threads (``Store.threads`` of
  them). Calls made while every worker is busy go to the next one together, as one
  batch; after a failure the rest of a batch is not run (a store that hangs would
  make each of them wait for its own timeout).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from threading import Thread
from typing import Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import defer
from twisted.python.threadpool import ThreadPool

from ..runtime.loop import call_from_thread, running_loop
from .base import AsyncStore, Claim, Store
from .record import Record

__all__ = ["InReactorStore", "ThreadedStore", "as_async"]

#: A batch's answer for the calls after the one that failed (not run).
_SKIPPED = object()


class SkippedCall(Exception):
    """Not run: an earlier call of its batch failed."""


def as_async(store: Store | AsyncStore) -> AsyncStore:
    """``store`` with coroutine methods."""
    if isinstance(store, AsyncStore):
        return store
    return InReactorStore(store) if store.in_reactor else ThreadedStore(store)


class _Blocking(AsyncStore):
    def __init__(self, store: Store) -> None:
        self.store = store

    async def _run(self, method: Callable[..., Any], *args: Any) -> Any:
        raise NotImplementedError

    async def open(self) -> None:
        await self._run(self.store.open)

    async def close(self) -> None:
        await self._run(self.store.close)

    async def load(self, key: str) -> Record | None:
        return await self._run(self.store.load, key)  # type: ignore[no-any-return]

    async def save(self, key: str, record: Record, owner: str | None = None) -> bool:
        return await self._run(self.store.save, key, record, owner)  # type: ignore[no-any-return]

    async def claim(self, key: str, owner: str, now: float, lock_ttl: float,
                    fetched_after: float | None = None) -> tuple[Claim, Record | None]:
        more = () if fetched_after is None else (fetched_after,)  # a store's claim may not take it
        return await self._run(self.store.claim, key, owner, now, lock_ttl, *more)  # type: ignore[no-any-return]

    async def renew(self, key: str, owner: str, lock_ttl: float) -> bool:
        return await self._run(self.store.renew, key, owner, lock_ttl)  # type: ignore[no-any-return]

    async def release(self, key: str, owner: str) -> None:
        await self._run(self.store.release, key, owner)


class InReactorStore(_Blocking):
    """A blocking store called in the reactor thread."""

    async def _run(self, method: Callable[..., Any], *args: Any) -> Any:
        return method(*args)


class ThreadedStore(_Blocking):
    """A blocking store called in batched worker threads."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.workers = max(1, store.threads)
        self._pool: ThreadPool | None = None
        self._queue: list[tuple[Callable[..., Any], tuple[Any, ...], defer.Deferred[Any]]] = []
        self._running = 0

    async def _run(self, method: Callable[..., Any], *args: Any) -> Any:
        ok, value = await maybe_deferred_to_future(self._submit(method, *args))
        if not ok:
            raise SkippedCall("an earlier call of the batch failed") if value is _SKIPPED else value
        return value

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            if self._pool is not None:
                self._pool.stop()
                self._pool = None

    def _submit(self, method: Callable[..., Any], *args: Any) -> defer.Deferred[tuple[bool, Any]]:
        if self._pool is None:
            self._pool = _DaemonPool(minthreads=0, maxthreads=self.workers, name="robotstxt-store")
            self._pool.start()
        answer: defer.Deferred[tuple[bool, Any]] = defer.Deferred()
        self._queue.append((method, args, answer))
        self._dispatch()
        return answer

    def _dispatch(self) -> None:
        if not self._queue or self._running >= self.workers or self._pool is None:
            return
        batch, self._queue = self._queue, []
        self._running += 1
        calls = [(method, args) for method, args, _ in batch]
        loop = running_loop()

        def ran(ok: bool, results: Any) -> None:  # in the worker thread; not ok: a Failure
            call_from_thread(loop, self._batch_done, results if ok else [(False, results.value)], batch)

        self._pool.callInThreadWithCallback(ran, self._run_batch, calls)

    def _batch_done(self, results: list[tuple[bool, Any]], batch: list[tuple[Any, Any, defer.Deferred[Any]]]) -> None:
        self._running -= 1
        if len(results) < len(batch):  # the batch itself failed
            results = results[:1] + [(False, _SKIPPED)] * (len(batch) - 1)
        for (_, _, answer), result in zip(batch, results, strict=True):
            if not answer.called:  # not cancelled meanwhile
                answer.callback(result)
        self._dispatch()

    def _run_batch(self, calls: list[tuple[Callable[..., Any], tuple[Any, ...]]]) -> list[tuple[bool, Any]]:
        results: list[tuple[bool, Any]] = []
        failed = False
        for method, args in calls:
            if failed:
                results.append((False, _SKIPPED))
                continue
            try:
                results.append((True, method(*args)))
            except Exception as exc:
                failed = True
                results.append((False, exc))
        return results


class _DaemonPool(ThreadPool):
    """Worker threads that never keep the process alive: a crawl that ends without
    closing its store (or whose store call hangs) still exits."""

    threadFactory = partial(Thread, daemon=True)  # type: ignore[assignment]
