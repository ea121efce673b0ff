"""The suite in Scrapy's reactorless mode (``TWISTED_REACTOR_ENABLED = False``): ``make test-reactorless``,
or ``pytest -p no:twisted --reactor=none``.

On a reactor, pytest-twisted runs the reactor in a greenlet and switches to it whenever the suite waits for
a Deferred: a test marked ``@pytest_twisted.inlineCallbacks`` or ``@pytest_twisted.ensureDeferred`` runs in a
reactor call, and a fixture waits with :func:`blockon`. Without a reactor this module does the same with an
asyncio event loop: the loop runs forever in a greenlet of its own from the start of the session, each test
runs in a call of the loop, and :func:`blockon` switches to the loop until its Deferred fires. So the tests are
written once, as Deferred-driven code, and run unchanged in both modes. No Twisted reactor is installed:
Scrapy's import hook makes importing ``twisted.internet.reactor`` an error, as Scrapy's own suite does.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

import greenlet
import pytest
from twisted.internet import defer
from twisted.python.failure import Failure

__all__ = ["blockon", "command_options", "is_reactorless", "run_test", "start", "stop"]

_T = TypeVar("_T")

#: pytest-twisted's mark on the test functions it drives (its decorators set it).
_MARK = "_pytest_twisted_mark"


class _Loop:
    loop: asyncio.AbstractEventLoop | None = None
    greenlet: greenlet.greenlet | None = None


def is_reactorless() -> bool:
    """Whether this is the reactorless run: no Twisted reactor, the tests run in this module's loop
    (and Scrapy's ``get_crawler`` makes reactorless crawlers)."""
    return _Loop.loop is not None


def command_options() -> list[str]:
    """The options that make a ``scrapy`` command run in this run's mode: without a reactor
    in the reactorless run."""
    return ["-s", "TWISTED_REACTOR_ENABLED=False"] if is_reactorless() else []


def start() -> None:
    """Install Scrapy's reactor import hook and start the session's loop in its greenlet."""
    from scrapy.utils.reactor import set_asyncio_event_loop_policy
    from scrapy.utils.reactorless import install_reactor_import_hook

    set_asyncio_event_loop_policy()  # the selector loop on Windows, as Scrapy's suite does
    install_reactor_import_hook()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    _Loop.loop = loop
    _Loop.greenlet = greenlet.greenlet(loop.run_forever)
    # Into the loop and straight back: from here on the loop is running (suspended in its greenlet),
    # as the reactor is under pytest-twisted, so fixtures see a running loop.
    loop.call_soon(greenlet.getcurrent().switch)
    _Loop.greenlet.switch()


def stop() -> None:
    """Stop the loop, let its greenlet end, and close the loop."""
    loop, runner = _Loop.loop, _Loop.greenlet
    if loop is None or runner is None:
        return
    if not runner.dead:
        loop.call_soon(loop.stop)
        runner.switch()  # run_forever returns, the greenlet ends, and control comes back here
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()
    asyncio.set_event_loop(None)
    _Loop.loop = _Loop.greenlet = None


def blockon(d: defer.Deferred[_T]) -> _T:
    """Wait for ``d`` from a fixture (or other code outside the reactor or loop) and return its result
    or raise its failure: ``pytest_twisted.blockon`` on a reactor, the loop's greenlet without one."""
    if not is_reactorless():
        import pytest_twisted

        return pytest_twisted.blockon(d)  # type: ignore[no-any-return]
    runner = _Loop.greenlet
    if runner is None or runner.dead:
        raise RuntimeError("the reactorless run's loop is not running (run pytest with --reactor=none)")
    current = greenlet.getcurrent()
    if current is runner:
        raise RuntimeError("blockon cannot be called from a test or callback running in the loop")
    result: list[Any] = []

    def settled(outcome: Any) -> None:
        result.append(outcome)
        if greenlet.getcurrent() is not current:
            current.switch(result)

    d.addBoth(settled)
    if not result:
        back = runner.switch()
        if back is not result:
            raise RuntimeError("the reactorless run's loop stopped while a Deferred was awaited")
    if isinstance(result[0], Failure):
        result[0].raiseException()
    return result[0]  # type: ignore[no-any-return]


def run_test(item: pytest.Function) -> None:
    """Run a test function in a call of the loop, waiting for the Deferred it returns, or for its
    coroutine (``@pytest_twisted.ensureDeferred``) driven as a Deferred."""
    assert _Loop.loop is not None
    function = item.obj
    kwargs = {name: item.funcargs[name] for name in item._fixtureinfo.argnames}
    done: defer.Deferred[Any] = defer.Deferred()

    def call() -> None:
        if getattr(function, _MARK, None) == "async_test":
            running = defer.Deferred.fromCoroutine(function(**kwargs))
        else:
            running = defer.maybeDeferred(function, **kwargs)
        running.chainDeferred(done)

    _Loop.loop.call_soon(call)
    blockon(done)
