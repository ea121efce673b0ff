from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import deadline
import pytest
import reactorless
from servers import Origin
from servers.loopback import loopback_problem
from twisted.internet import defer

#: The highest loopback address a test serves on (127.0.0.1 to 127.0.0.<LAST_LOOPBACK>).
LAST_LOOPBACK = 64


def pytest_sessionstart(session: pytest.Session) -> None:
    """Stop at once, with the fix, on a machine where the tests' loopback addresses do not work (macOS)."""
    if problem := loopback_problem(LAST_LOOPBACK):
        pytest.exit(problem, returncode=pytest.ExitCode.USAGE_ERROR)

# ---------------------------------------------------------------------------------------- run modes
# On the asyncio reactor (pyproject's addopts: --reactor=asyncio), pytest-twisted runs the tests.
# Reactorless (-p no:twisted --reactor=none, `make test-reactorless`), tests/reactorless.py does.


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    if pluginmanager.hasplugin("twisted"):
        return  # pytest-twisted's --reactor
    parser.addoption("--reactor", default="none", choices=["asyncio", "default", "none"],
                     help="none: run without a Twisted reactor (Scrapy's reactorless mode)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "requires_reactor(reason): the test needs a Twisted reactor; "
                                       "skipped in the reactorless run")
    if config.pluginmanager.hasplugin("twisted"):
        return
    if config.getoption("--reactor") != "none":
        raise pytest.UsageError("without pytest-twisted (-p no:twisted) the suite runs reactorless: "
                                "pass --reactor=none")
    reactorless.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    reactorless.stop()


# ---------------------------------------------------------------------------------------- timeouts
# pytest-timeout (pyproject.toml: timeout, timeout_method = "thread") is the last resort; a test the loop
# drives is cancelled in the loop before, and fails alone (tests/deadline.py).

_TIMEOUT = pytest.StashKey[float]()


def pytest_report_header(config: pytest.Config) -> str | None:
    """Say at the top of the run when the tests have no timeout (tests/test_timeouts.py fails under CI)."""
    if config.pluginmanager.hasplugin("timeout"):
        return None
    return "pytest-timeout is not installed: no test has a timeout (pip install -e '.[test]')"


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # pytest-timeout's hook
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> None:
    """Note the test's timeout (pytest-timeout's, with a ``timeout`` mark's); pytest-timeout's own
    timer is set after this (the hook returns None)."""
    item.stash[_TIMEOUT] = float(settings.timeout)


@pytest.hookimpl(wrapper=True, specname="pytest_pyfunc_call")
def pytest_pyfunc_call_deadline(pyfuncitem: pytest.Function) -> Any:
    """Around whichever hook runs the test (pytest-twisted's, or the reactorless run's below): a test
    the loop drives gets its deadline."""
    timeout = pyfuncitem.stash.get(_TIMEOUT, 0.0)
    original = pyfuncitem.obj
    wrapped = (deadline.guarded(original, deadline.deadline(timeout), pyfuncitem.nodeid)
               if timeout > 0 and getattr(original, "hypothesis", None) is None else None)
    if wrapped is None:
        return (yield)
    pyfuncitem.obj = wrapped
    try:
        return (yield)
    finally:
        pyfuncitem.obj = original


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if not reactorless.is_reactorless() or getattr(pyfuncitem.obj, "hypothesis", None) is not None:
        return None  # pytest-twisted's hook, or a plain call (Hypothesis drives its own test)
    reactorless.run_test(pyfuncitem)
    return True


def pytest_runtest_setup(item: pytest.Item) -> None:
    marker = item.get_closest_marker("requires_reactor")
    if marker is not None and reactorless.is_reactorless():
        reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "")
        pytest.skip(f"needs a Twisted reactor: {reason}" if reason else "needs a Twisted reactor")


# ---------------------------------------------------------------------------------------- servers


@pytest.fixture
def origins() -> Iterator[Callable[..., Origin]]:
    """Factory for started :class:`servers.Origin` objects, all stopped after the test.

    ``make = origins; a = make("127.0.0.1"); b = make("127.0.0.2", behaviours={...}, links=[...])``.
    Teardown aborts every open connection (stalled, streaming, keep-alive) and cancels pending timers.
    """
    started: list[Origin] = []

    def make(host: str = "127.0.0.1", **kwargs: Any) -> Origin:
        origin = Origin(host, **kwargs).start()
        started.append(origin)
        return origin

    yield make
    if started:
        stopping = defer.gatherResults([o.stop() for o in started], consumeErrors=True)
        # A connection that would not close fails the teardown instead of hanging the run.
        reactorless.blockon(stopping.addTimeout(5, started[0].reactor))


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Any]:
    """One ``redis-server`` for the session (``servers.RedisServer``)."""
    from optional import require_redis_server
    from servers import RedisServer

    server = RedisServer(require_redis_server()).start()
    yield server
    server.close()


@pytest.fixture
def redis_url(redis_server: Any) -> str:
    """The session's Redis, emptied for this test."""
    import redis

    if redis_server.proc is None:  # a test stopped it and failed before starting it again
        redis_server.start()
    client = redis.Redis.from_url(redis_server.url())
    client.flushall()
    client.close()
    return str(redis_server.url())


@pytest.fixture
def own_redis() -> Iterator[Any]:
    """A ``redis-server`` of this test's own, which the test may stop and start."""
    from optional import require_redis_server
    from servers import RedisServer

    server = RedisServer(require_redis_server()).start()
    yield server
    server.close()


@pytest.fixture(scope="session")
def redis_cluster_server() -> Iterator[Any]:
    """One Redis Cluster (three masters) for the session."""
    from optional import require_redis_server
    from servers import RedisCluster

    cluster = RedisCluster(require_redis_server()).start()
    yield cluster
    cluster.close()


@pytest.fixture
def redis_cluster_url(redis_cluster_server: Any) -> str:
    """The session's Redis Cluster, emptied for this test: the URL of one of its nodes."""
    redis_cluster_server.flush()
    return str(redis_cluster_server.url())
