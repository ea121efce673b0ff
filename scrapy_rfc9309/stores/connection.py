"""Whether the store is there, for :class:`~scrapy_rfc9309.stores.client.StoreClient`: every
call of the store made one way (as an :class:`~scrapy_rfc9309.stores.AsyncStore`) and bounded by
``ROBOTSTXT_STORE_TIMEOUT``. An outage is found once and shared: the store is opened by one
attempt that every caller waits for, and while it is down, calls fail at once, except one probe
every ``ROBOTSTXT_STORE_RETRY_DELAY``; work that can wait (saves, renewals) runs in the
background, waited for (a bounded time) at close.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet import defer
from twisted.python.failure import Failure

from ..runtime.loop import within
from ..runtime.reporting import Reporting
from .blocking import SkippedCall

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from scrapy.crawler import Crawler

    from ..config import Config
    from . import AsyncStore

__all__ = ["StoreConnection", "StoreUnavailable"]

logger = logging.getLogger(__name__)

#: Seconds ``close`` waits for saves still running.
_CLOSE_TIMEOUT = 10.0


class StoreUnavailable(Exception):
    """The store failed, or failed recently; the caller goes on without it."""


class StoreConnection(Reporting):
    """Calls ``store`` (named ``name`` in log lines), opened at the first call. ``warn(key,
    message, *args, **kwargs)`` logs the outage's warning (at most once per interval and key);
    ``on_recovered()`` is called when the store answers again after an outage."""

    def __init__(self, store: AsyncStore, name: str, crawler: Crawler, config: Config,
                 warn: Callable[..., None], on_recovered: Callable[[], None]) -> None:
        self.store = store
        self.name = name
        self.crawler = crawler
        self.retry_delay = config.store_retry_delay
        self.timeout = config.store_timeout
        self._warn = warn
        self._on_recovered = on_recovered
        self._opened = False
        self._opening: list[defer.Deferred[Any]] | None = None
        self._closed = False
        self._down_until = 0.0
        self._probing = False
        self._outage: str | None = None
        self._pending: set[defer.Deferred[Any]] = set()

    async def call(self, name: str, *args: Any) -> Any:
        """The store's method ``name`` called with ``args``. Raises
        :class:`StoreUnavailable` when it fails or times out, and at once while the
        store counts as down (but for one probe call once the retry delay passed)."""
        if self._closed:
            raise StoreUnavailable
        probe = False
        if self._outage is not None:
            if self._probing or time.time() < self._down_until:
                raise StoreUnavailable
            self._probing = probe = True
        try:
            if not self._opened:
                await self._open()
            value = await self.timed(getattr(self.store, name)(*args))
        except (StoreUnavailable, defer.CancelledError):
            raise
        except SkippedCall:
            raise StoreUnavailable from None
        except Exception as exc:
            self._failed(exc)
            raise StoreUnavailable from exc
        finally:
            if probe:
                self._probing = False
        if self._outage is not None:
            self._recovered()
        return value

    async def timed(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        try:
            return await within(coroutine, self.timeout)
        except TimeoutError:
            raise TimeoutError(f"no answer in {self.timeout:g} s (ROBOTSTXT_STORE_TIMEOUT)") from None

    async def _open(self) -> None:
        """Open the store once: callers that come while it opens wait for that one
        attempt, and all fail together when it fails."""
        if self._opening is not None:
            waiter: defer.Deferred[Any] = defer.Deferred()
            self._opening.append(waiter)
            await maybe_deferred_to_future(waiter)
            return
        self._opening = []
        failure: BaseException | None = None
        try:
            await self.timed(self.store.open())
            self._opened = True
        except BaseException as exc:  # cancelled included: the waiters must never be left waiting
            failure = exc
        waiters, self._opening = self._opening, None
        for waiter in waiters:
            if failure is None:
                waiter.callback(None)
            else:
                waiter.errback(Failure(StoreUnavailable(f"{type(failure).__name__}: {failure}")))
        if failure is not None:
            raise failure

    def _failed(self, exc: Exception) -> None:
        self._inc("store_error")
        self._down_until = time.time() + self.retry_delay
        if self._outage is None:
            self._outage = f"{type(exc).__name__}: {exc}"
            self._warn(
                f"unavailable {self._outage}",
                "robots.txt store %s is unavailable (%s): robots.txt files are fetched by this process until it "
                "answers again (tried every %g s)", self.name, self._outage, self.retry_delay, extra=self._log_extra)

    def _recovered(self) -> None:
        logger.info("robots.txt store %s answers again (it was unavailable: %s)", self.name, self._outage,
                    extra=self._log_extra)
        self._outage = None
        self._on_recovered()

    def background(self, coroutine: Any) -> None:
        running = deferred_from_coro(coroutine)
        self._pending.add(running)
        running.addBoth(self._finished, running)

    def _finished(self, result: Any, running: defer.Deferred[Any]) -> None:
        self._pending.discard(running)
        if isinstance(result, Failure) and not result.check(StoreUnavailable, defer.CancelledError):
            logger.error("robots.txt store %s: %s", self.name, result.getErrorMessage(), extra=self._log_extra)

    async def close(self) -> None:
        """Wait (a bounded time) for saves still running, then close the store."""
        if self._closed:
            return
        if self._pending:
            waiting = defer.DeferredList(list(self._pending), consumeErrors=True)
            try:
                await within(waiting, _CLOSE_TIMEOUT)
            except TimeoutError:
                logger.warning("robots.txt store %s: saves still running at close were abandoned", self.name,
                               extra=self._log_extra)
        self._closed = True
        if self._opened:
            try:
                await self.timed(self.store.close())
            except Exception as exc:
                logger.warning("robots.txt store %s did not close cleanly: %s", self.name, exc,
                               extra=self._log_extra)
