"""The ledger's worker thread: what can wait for the disk without the crawl's thread waiting
(the ``fsync`` of the open segment, at least once a second, the gzip of a closed segment, the
version files and the manifest's lines), its jobs in order, their results handed back in the
crawl's thread.
"""

from __future__ import annotations

import errno
import queue
import threading
import time
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import defer

from ..runtime.loop import call_from_thread, running_loop

if TYPE_CHECKING:
    from collections.abc import Callable

    from .segments import Segments

__all__ = ["SYNC_INTERVAL", "Worker"]

#: Seconds between two ``fsync`` of the open segment.
SYNC_INTERVAL = 1.0
_STOP = object()


class Worker(threading.Thread):
    """The ledger's worker thread: its jobs in order, and an ``fsync`` of the open
    segment (``segments``) every :data:`SYNC_INTERVAL` when records were written. A daemon:
    a crawl that ends without closing its ledger still exits (its last records unsynced).
    ``failed(path, exc)``: told in the crawl's thread of a job without a caller waiting, or a
    sync, that failed. ``reactor``: whether the crawl runs a reactor (its thread is reachable
    before a loop was seen). ``clock``: the seconds the sync interval is counted in."""

    def __init__(self, failed: Callable[[str, OSError], None], reactor: bool,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(name="robotstxt-ledger", daemon=True)
        self.failed = failed
        self.segments: Segments | None = None
        self.jobs: queue.Queue[Any] = queue.Queue()
        self._synced = 0
        self._reactor = reactor
        self._loop = running_loop()
        self.clock = clock

    def submit(self, job: Callable[..., Any], *args: Any, done: defer.Deferred[Any] | None = None) -> None:
        loop = running_loop()
        if loop is not None:
            self._loop = loop
        self.jobs.put((job, args, done))

    async def call(self, job: Callable[..., Any], *args: Any) -> Any:
        """``job(*args)`` run in the worker, its result (or exception) in the caller's thread."""
        done: defer.Deferred[Any] = defer.Deferred()
        self.submit(job, *args, done=done)
        return await maybe_deferred_to_future(done)

    def from_worker(self, func: Callable[..., Any], *args: Any) -> None:
        """Call ``func(*args)`` in the crawl's thread."""
        if self._loop is None and not self._reactor:
            return  # no loop seen yet: the failure is noticed at the next record
        call_from_thread(self._loop, func, *args)

    def stop(self) -> None:
        self.jobs.put(_STOP)

    def run(self) -> None:
        clock = self.clock
        next_sync = clock() + SYNC_INTERVAL
        while True:
            try:
                item = self.jobs.get(timeout=max(0.0, next_sync - clock()))
            except queue.Empty:
                item = None
            if item is _STOP:
                return
            if item is not None:
                job, args, done = item
                try:
                    result = job(*args)
                except Exception as exc:
                    if not isinstance(exc, OSError):  # unexpected: a failure to write all the same
                        exc = OSError(errno.EIO, f"{type(exc).__name__}: {exc}")
                    if done is not None:
                        self.from_worker(_fire, done, exc, False)
                    else:
                        self.from_worker(self.failed, str(args[-1]), exc)
                else:
                    if done is not None:
                        self.from_worker(_fire, done, result, True)
            if clock() >= next_sync:
                next_sync = clock() + SYNC_INTERVAL
                segments = self.segments
                written = 0 if segments is None else segments.written
                if segments is not None and written != self._synced:
                    try:
                        segments.sync()
                        self._synced = written
                    except OSError as exc:
                        self.from_worker(self.failed, segments.path, exc)


def _fire(done: defer.Deferred[Any], value: Any, ok: bool) -> None:
    if done.called:
        return
    if ok:
        done.callback(value)
    else:
        done.errback(value)
