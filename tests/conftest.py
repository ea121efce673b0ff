from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import pytest_twisted
from twisted.internet import defer

from scrapy_rfc9309.testing import Origin
from scrapy_rfc9309.testing.loopback import loopback_problem

#: The highest loopback address a test serves on (127.0.0.1 to 127.0.0.<LAST_LOOPBACK>).
LAST_LOOPBACK = 64


def pytest_sessionstart(session: pytest.Session) -> None:
    """Stop at once, with the fix, on a machine where the tests' loopback addresses do not work (macOS)."""
    if problem := loopback_problem(LAST_LOOPBACK):
        pytest.exit(problem, returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture
def origins() -> Iterator[Callable[..., Origin]]:
    """Factory for started :class:`scrapy_rfc9309.testing.Origin` objects, all stopped after the test.

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
        from twisted.internet import reactor  # not at import time: pytest-twisted installs it later

        stopping = defer.gatherResults([o.stop() for o in started], consumeErrors=True)
        # A connection that would not close fails the teardown instead of hanging the run.
        pytest_twisted.blockon(stopping.addTimeout(5, reactor))


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Any]:
    """One ``redis-server`` for the session (``scrapy_rfc9309.testing.RedisServer``)."""
    from optional import require_redis_server

    from scrapy_rfc9309.testing import RedisServer

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

    from scrapy_rfc9309.testing import RedisServer

    server = RedisServer(require_redis_server()).start()
    yield server
    server.close()


@pytest.fixture(scope="session")
def redis_cluster_server() -> Iterator[Any]:
    """One Redis Cluster (three masters) for the session."""
    from optional import require_redis_server

    from scrapy_rfc9309.testing import RedisCluster

    cluster = RedisCluster(require_redis_server()).start()
    yield cluster
    cluster.close()


@pytest.fixture
def redis_cluster_url(redis_cluster_server: Any) -> str:
    """The session's Redis Cluster, emptied for this test: the URL of one of its nodes."""
    redis_cluster_server.flush()
    return str(redis_cluster_server.url())
