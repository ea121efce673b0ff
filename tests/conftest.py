from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import pytest_twisted
from servers import Origin
from twisted.internet import defer


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
        from twisted.internet import reactor  # not at import time: pytest-twisted installs it later

        stopping = defer.gatherResults([o.stop() for o in started], consumeErrors=True)
        # A connection that would not close fails the teardown instead of hanging the run.
        pytest_twisted.blockon(stopping.addTimeout(5, reactor))
