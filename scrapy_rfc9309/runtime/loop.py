"""The event loop's timers, looping calls, sleeps, timeouts and thread hand-offs, the
same in every run mode: Scrapy 2.14 and later run them on the asyncio loop when there
is one (the asyncio reactor, or no reactor at all: ``TWISTED_REACTOR_ENABLED = False``,
Scrapy 2.15 and later), where importing ``twisted.internet.reactor`` is an error;
Scrapy 2.13 always has a reactor. Scrapy's internals are :mod:`.compat`'s.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.defer import TimeoutError as TimeoutError_
from twisted.python.failure import Failure

try:  # Scrapy 2.14 and later: mode-neutral timers (asyncio loop or reactor)
    from scrapy.utils.asyncio import call_later as _call_later
    from scrapy.utils.asyncio import create_looping_call as _create_looping_call
    from scrapy.utils.asyncio import is_asyncio_available as _is_asyncio_available
except ImportError:  # Scrapy 2.13: always a reactor
    _call_later = _create_looping_call = _is_asyncio_available = None  # type: ignore[assignment]

__all__ = ["Timer", "asyncio_available", "call_from_thread", "call_later", "looping_call", "running_loop", "sleep",
           "within"]


class Timer(Protocol):
    """A call scheduled by :func:`call_later` or :func:`looping_call`; cancelling
    (stopping) one that already ran or was cancelled does nothing."""

    def cancel(self) -> None: ...


def asyncio_available() -> bool:
    """Whether asyncio futures can be awaited here: a running asyncio loop, or the
    asyncio reactor installed (``scrapy.utils.asyncio.is_asyncio_available``)."""
    if _is_asyncio_available is not None:
        return bool(_is_asyncio_available())
    from scrapy.utils.reactor import is_asyncio_reactor_installed

    return is_asyncio_reactor_installed()


def call_later(delay: float, func: Callable[..., Any], *args: Any) -> Timer:
    """Call ``func(*args)`` in ``delay`` seconds, on the asyncio loop when there is
    one, else through the reactor (``scrapy.utils.asyncio.call_later``)."""
    if _call_later is not None:
        return _call_later(delay, func, *args)  # type: ignore[no-any-return]
    from twisted.internet import reactor

    return _DelayedCall(reactor.callLater(delay, func, *args))  # type: ignore[attr-defined]


class _DelayedCall:
    def __init__(self, call: Any) -> None:
        self._call = call

    def cancel(self) -> None:
        if self._call.active():
            self._call.cancel()


class _Looping:
    def __init__(self, call: Any) -> None:
        self._call = call

    def cancel(self) -> None:
        if self._call.running:
            self._call.stop()


def looping_call(interval: float, func: Callable[..., Any], *args: Any) -> Timer:
    """Call ``func(*args)`` every ``interval`` seconds, the first time after one
    interval, until cancelled (``scrapy.utils.asyncio.create_looping_call``). An
    exception from ``func`` is logged and stops the calls."""
    if _create_looping_call is not None:
        call = _create_looping_call(func, *args)
    else:
        from twisted.internet.task import LoopingCall

        call = LoopingCall(func, *args)
    started = call.start(interval, now=False)
    if started is not None:  # Twisted's LoopingCall: its Deferred fails when func raises
        started.addErrback(_log_looping_failure)
    return _Looping(call)


def _log_looping_failure(failure: Any) -> None:
    import logging

    logging.getLogger(__name__).error("Error in a looping call", exc_info=(failure.type, failure.value,
                                                                           failure.getTracebackObject()))


async def sleep(seconds: float) -> None:
    """Sleep ``seconds`` in a coroutine of the crawl (``scrapy.utils.asyncio.sleep``
    from Scrapy 2.18; the same choice of asyncio or reactor before)."""
    if asyncio_available():
        await asyncio.sleep(seconds)
        return
    from twisted.internet import reactor
    from twisted.internet.task import deferLater

    await maybe_deferred_to_future(deferLater(reactor, seconds, lambda: None))  # type: ignore[arg-type]


async def within(awaitable: Coroutine[Any, Any, Any] | Deferred[Any], timeout: float) -> Any:
    """Await ``awaitable`` (a coroutine or a Deferred), cancelling it and raising
    the built-in :exc:`TimeoutError` after ``timeout`` seconds. In an asyncio task
    (the asyncio reactor, or no reactor) it is awaited in place, so its answer
    reaches the caller in the loop turn it arrives in."""
    if _in_asyncio_task():
        future = awaitable.asFuture(asyncio.get_running_loop()) if isinstance(awaitable, Deferred) else awaitable
        try:
            return await _wait_for(future, timeout)
        except asyncio.TimeoutError:  # not the built-in TimeoutError before Python 3.11
            raise TimeoutError(f"no answer in {timeout:g} s") from None
    from twisted.internet import reactor

    running = awaitable if isinstance(awaitable, Deferred) else deferred_from_coro(awaitable)
    # A coroutine run as an asyncio task ends in asyncio's CancelledError (a
    # BaseException) when the timeout cancels it, not in Twisted's, which
    # addTimeout's default translation expects: translate whatever it ends in.
    running.addTimeout(timeout, reactor, onTimeoutCancel=_timed_out)  # type: ignore[arg-type]
    try:
        return await maybe_deferred_to_future(running)
    except TimeoutError_:
        raise TimeoutError(f"no answer in {timeout:g} s") from None


def _timed_out(result: Any, timeout: float) -> Failure:
    return Failure(TimeoutError_(f"no answer in {timeout:g} s"))


def _in_asyncio_task() -> bool:
    try:
        return asyncio.current_task() is not None
    except RuntimeError:  # no running loop: another reactor
        return False


if sys.version_info >= (3, 11):

    async def _wait_for(awaitable: Any, timeout: float) -> Any:
        async with asyncio.timeout(timeout):
            return await awaitable

else:

    async def _wait_for(awaitable: Any, timeout: float) -> Any:
        return await asyncio.wait_for(awaitable, timeout)


def call_from_thread(loop: asyncio.AbstractEventLoop | None, func: Callable[..., Any], *args: Any) -> None:
    """From a worker thread, call ``func(*args)`` in the crawl's thread: on
    ``loop`` (the asyncio loop the caller ran in, None without one), else
    through the reactor."""
    if loop is not None:
        loop.call_soon_threadsafe(func, *args)
        return
    from twisted.internet import reactor

    reactor.callFromThread(func, *args)  # type: ignore[attr-defined]


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop, or None (another reactor, or called outside one)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
