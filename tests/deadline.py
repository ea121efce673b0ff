"""The per-test timeout of the tests the event loop runs (``@pytest_twisted.inlineCallbacks`` and
``@pytest_twisted.ensureDeferred`` tests, on the reactor or in the reactorless run's loop).

pytest-timeout (``timeout`` in pyproject.toml) cannot stop such a test and let the run go on: its
``signal`` method raises in whatever runs when the alarm comes, the reactor's or the loop's greenlet, which
dies with the exception and leaves no loop for the tests after; its ``thread`` method ends the whole run.
So a test's Deferred is cancelled from inside the loop once :func:`deadline` of its timeout has passed: the
test fails with :class:`TestTimedOut` (naming what it waited for, when the wait was a Deferred), its fixtures
are torn down, and the run goes on. pytest-timeout's ``thread`` method stays as the last resort, at the full
timeout, for what the loop cannot end: a test or fixture that blocks the loop itself, or waits outside it;
it prints every thread's stack and ends the run.

What the test was waiting in tells more than the cancelled Deferred: :func:`on_timeout` registers a teller
(tests/crawl.py registers one for each crawl it runs) whose text the failure carries, and which may also stop
what it describes, so that the test's teardown does not wait for it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from servers import server_reactor
from twisted.internet import defer
from twisted.python.failure import Failure

__all__ = ["TestTimedOut", "deadline", "guarded", "on_timeout"]

#: pytest-twisted's mark on the test functions it drives (its decorators set it).
_MARK = "_pytest_twisted_mark"
#: Seconds of the timeout left for the cancelled test's teardown before pytest-timeout's last resort.
_TEARDOWN = 30.0
#: What the running test waits in, told when its deadline passes (:func:`on_timeout`).
_TELLERS: list[Callable[[], str]] = []


class TestTimedOut(AssertionError):
    """A test driven by the loop did not end within its deadline."""

    __test__ = False  # not a test class, despite its name


def deadline(timeout: float) -> float:
    """Seconds after which the loop cancels a test whose timeout is ``timeout``: the timeout less 30 s
    for its teardown (at least half of it)."""
    return max(timeout - _TEARDOWN, timeout / 2)


def on_timeout(teller: Callable[[], str]) -> Callable[[], None]:
    """Have ``teller`` called when the running test's deadline passes, its text added to the failure;
    returns the function that unregisters it (call it once the wait it tells of has ended)."""
    _TELLERS.append(teller)

    def unregister() -> None:
        if teller in _TELLERS:
            _TELLERS.remove(teller)

    return unregister


def _told() -> str:
    told = []
    for teller in list(_TELLERS):
        try:
            told.append(teller())
        except Exception as exc:  # a teller's own failure must not hide the timeout
            told.append(f"({teller!r} failed: {exc!r})")
    _TELLERS.clear()
    return "".join(f"\n{text}" for text in told)


def guarded(function: Callable[..., Any], seconds: float, name: str) -> Callable[..., Any] | None:
    """``function`` (a test the loop drives) wrapped so that its Deferred fails with :class:`TestTimedOut`
    after ``seconds``; None for a function the loop does not drive."""
    mark = getattr(function, _MARK, None)
    if mark == "inline_callbacks_test":

        @functools.wraps(function)
        def wrapped(**kwargs: Any) -> defer.Deferred[Any]:
            _TELLERS.clear()  # a previous test's, should one have been left
            return _bounded(function(**kwargs), seconds, name)

    elif mark == "async_test":

        @functools.wraps(function)
        async def wrapped(**kwargs: Any) -> Any:  # type: ignore[misc]
            _TELLERS.clear()  # a previous test's, should one have been left
            return await _bounded(defer.Deferred.fromCoroutine(function(**kwargs)), seconds, name)

    else:
        return None
    setattr(wrapped, _MARK, mark)
    return wrapped


def _bounded(running: defer.Deferred[Any], seconds: float, name: str) -> defer.Deferred[Any]:
    told: list[str] = []

    def expire() -> None:
        told.append(_told())  # what the test waits in, while it still waits
        running.cancel()

    def settled(result: Any) -> Any:
        if timer.active():
            timer.cancel()
            return result
        reason = result.getErrorMessage() if isinstance(result, Failure) else ""
        return Failure(TestTimedOut(
            f"{name} did not end within {seconds:g} s (the loop's deadline of its pytest-timeout timeout, "
            f"see docs/development.md), and was cancelled{': ' + reason if reason else ''}{''.join(told)}"))

    timer = server_reactor().callLater(seconds, expire)
    return running.addBoth(settled)
