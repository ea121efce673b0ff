"""A TCP listener that accepts connections and never answers (a server that hangs)."""

from __future__ import annotations

from typing import Any

from twisted.internet import defer, protocol

from .server_reactor import server_reactor

__all__ = ["SilentListener"]


class _Silent(protocol.Protocol):
    def connectionMade(self) -> None:
        self.factory.connections.append(self.transport)  # type: ignore[attr-defined]


class _SilentFactory(protocol.Factory):
    protocol = _Silent
    noisy = False

    def __init__(self) -> None:
        self.connections: list[Any] = []


class SilentListener:
    """Listens on ``host`` (a free port), accepts every connection, reads what
    comes and never writes a byte: a server that hangs, such as a Redis behind a
    broken proxy. Runs in the running reactor (see :mod:`.server_reactor`)::

        silent = SilentListener().start()
        url = f"redis://{silent.netloc}/0"
        ...
        yield silent.stop()   # aborts the connections it holds
    """

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self._factory = _SilentFactory()
        self._port: Any = None

    def start(self) -> SilentListener:
        self._port = server_reactor().listenTCP(0, self._factory, interface=self.host)
        return self

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("listener not started")
        return int(self._port.getHost().port)

    @property
    def netloc(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connections(self) -> int:
        """Connections accepted so far."""
        return len(self._factory.connections)

    def stop(self) -> defer.Deferred[None]:
        """Abort every connection held and stop listening."""
        for transport in self._factory.connections:
            transport.abortConnection()
        if self._port is None:
            return defer.succeed(None)
        return defer.maybeDeferred(self._port.stopListening)
