"""Real HTTP origins, served by twisted.web in the running reactor (the test's, the crawl's), or, in
Scrapy's reactorless mode, in a private reactor on the running asyncio loop (:mod:`.server_reactor`).

Each :class:`Origin` listens on ``(host, port 0)`` of a loopback address, so a test can start several
"sites" (``127.0.0.1``, ``127.0.0.2``, ... all route to ``lo`` on Linux) and crawl them with a real
Scrapy crawler. The origin logs every request it *receives* (robots.txt included) and answers each path
with a configurable :class:`Behaviour`::

    a = Origin("127.0.0.2").start()
    a.robots("User-agent: *\\nDisallow: /private\\n")
    a["/flaky"] = Sequence([Static(b"busy", status=503), Static(b"ok")])
    a["/slow"] = Delay(0.3, Static(b"late"))
    ...
    yield a.stop()          # aborts stalled/streaming connections, cancels timers

Everything runs in the reactor thread, so no locking is needed; ``requests`` is a plain list.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Sequence as SequenceABC
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from twisted.internet import defer
from twisted.internet.interfaces import IPushProducer
from twisted.python.failure import Failure
from twisted.web import server
from twisted.web.http import Request as TxRequest
from twisted.web.resource import Resource
from zope.interface import implementer  # type: ignore[import-untyped]

from .server_reactor import server_reactor

__all__ = [
    "Behaviour",
    "Conditional",
    "Delay",
    "Drop",
    "Dynamic",
    "Gate",
    "Headers",
    "Hit",
    "Huge",
    "Origin",
    "Page",
    "Redirect",
    "Sequence",
    "Stall",
    "Static",
    "Transfer",
    "respond",
]


#: A timer from ``reactor.callLater`` (its interface type does not describe a bound method).
_Call = Any


# --------------------------------------------------------------------------- request log


class Headers(dict[str, str]):
    """Request headers as received: ``str -> str``, keys stored lower-case, looked up case-insensitively.

    A header sent more than once is joined with ``", "``.
    """

    def __init__(self, items: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__()
        for key, value in items:
            self[key] = value

    def __setitem__(self, key: str, value: str) -> None:
        super().__setitem__(key.lower(), value)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)


class Hit(NamedTuple):
    """One request as the origin received it (a tuple, so it unpacks as ``t, method, path, headers``)."""

    time: float  # time.monotonic() when the request line and headers had arrived
    method: str
    path: str  # path with query, exactly as in the request line
    headers: Headers

    @property
    def path_only(self) -> str:
        return self.path.split("?", 1)[0]


def _path_matches(recorded: str, wanted: str) -> bool:
    """``wanted`` with a query must match exactly; without one it matches the path part."""
    if "?" in wanted:
        return recorded == wanted
    return recorded.split("?", 1)[0] == wanted


# --------------------------------------------------------------------------- behaviours


def _alive(request: TxRequest) -> bool:
    return not request._disconnected and not request.finished


def respond(request: TxRequest, status: int, headers: Mapping[str, str], body: bytes) -> None:
    """Answer ``request`` with ``status``, ``headers`` and ``body`` (a ``Content-Type`` of
    ``text/html; charset=utf-8`` unless given, and the ``Content-Length``), unless the client
    has gone. For behaviours of one's own."""
    if not _alive(request):
        return
    request.setResponseCode(status)
    for name, value in headers.items():
        request.setHeader(name, value)
    if request.responseHeaders.getRawHeaders(b"content-type") is None:
        request.setHeader(b"content-type", b"text/html; charset=utf-8")
    request.setHeader(b"content-length", str(len(body)).encode())
    if request.method != b"HEAD":
        request.write(body)
    request.finish()


class Behaviour:
    """How an origin answers a request. Subclasses implement :meth:`handle`.

    ``handle`` must either finish ``request`` (now or later through the reactor) or leave it open on
    purpose (:class:`Stall`). Anything scheduled must go through ``origin.call_later`` so that
    :meth:`Origin.stop` can cancel it.
    """

    def handle(self, origin: Origin, request: TxRequest, hit: Hit) -> None:
        raise NotImplementedError


@dataclass
class Static(Behaviour):
    """A fixed response. ``Content-Type`` defaults to ``text/html; charset=utf-8``."""

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)

    def handle(self, origin: Origin, request: TxRequest, hit: Hit) -> None:
        respond(request, self.status, self.headers, self.body)


@dataclass
class Conditional(Behaviour):
    """A file with validators (``ETag``, ``Last-Modified``; None leaves one out) that answers
    ``304 Not Modified`` to a request whose ``If-None-Match`` names its entity tag, or (without
    ``If-None-Match``) whose ``If-Modified-Since`` is its ``Last-Modified`` (RFC 9110, 13.1.1-2).
    ``headers`` go with both answers (a ``Cache-Control``); ``not_modified_headers`` replace them in a
    304. ``not_modified`` counts the 304s sent. Change ``body`` and ``etag`` to change the file."""

    body: bytes = b""
    etag: str | None = '"v1"'
    last_modified: str | None = "Wed, 21 Oct 2026 07:28:00 GMT"
    headers: dict[str, str] = field(default_factory=dict)
    not_modified_headers: dict[str, str] | None = None
    not_modified: int = 0

    def handle(self, origin: Origin, request: TxRequest, hit: Hit) -> None:
        tags = hit.headers.get("If-None-Match")
        since = hit.headers.get("If-Modified-Since")
        if tags is not None:
            fresh = self.etag is not None and (tags.strip() == "*" or self.etag in [t.strip() for t in tags.split(",")])
        else:
            fresh = since is not None and self.last_modified is not None and since == self.last_modified
        validators = {name: value for name, value in (("ETag", self.etag), ("Last-Modified", self.last_modified))
                      if value is not None}
        if fresh:
            self.not_modified += 1
            headers = self.headers if self.not_modified_headers is None else self.not_modified_headers
            if not _alive(request):
                return
            request.setResponseCode(304)
            for name, value in {**validators, **headers}.items():
                request.setHeader(name, value)
            request.finish()
            return
        respond(request, 200, {"Content-Type": "text/plain; charset=utf-8", **validators, **self.headers}, self.body)


def _page_html(title: str, links: Iterable[str]) -> bytes:
    items = "".join(f'<li><a href="{html.escape(href)}">{html.escape(href)}</a></li>' for href in links)
    return (
        f"<!DOCTYPE html><html><head><title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1><ul>{items}</ul></body></html>"
    ).encode()


@dataclass
class Page(Behaviour):
    """An HTML page listing ``links`` (hrefs as given; ``None`` = the origin's ``links``)."""

    links: list[str] | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)

    def handle(self, origin: Origin, request: TxRequest, hit: Hit) -> None:
        links = origin.links if self.links is None else self.links
        respond(request, self.status, self.headers, _page_html(hit.path, links))


class Sequence(Behaviour):
    """The Nth request gets ``behaviours[N]``; the last one repeats. ``count`` = requests seen so far.

    The counter belongs to this object, so put a separate instance on each path.
    """

    def __init__(self, behaviours: SequenceABC[Behaviour | bytes]) -> None:
        if not behaviours:
            raise ValueError("Sequence needs at least one behaviour")
        self.behaviours = [_as_behaviour(b) for b in behaviours]
        self.count = 0

    def handle(self, origin: Origin, request: TxRequest, hit: Hit) -> None:
        behaviour = self.behaviours[min(self.count, len(self.behaviours) - 1)]
        self.count += 1
        behaviour.handle(origin, request, hit)

    def __repr__(self) -> str:
        return f"Sequence({self.behaviours!r}, count={self.count})"


@dataclass
class Redirect(Behaviour):
    """A redirect to ``location`` (absolute URL or a path on the same origin)."""

    location: str
    status: int = 301

    def handle(self, origin: Origin, request: TxRequest, hit: Hit) -> None:
        respond(request, self.status, {"Location": self.location}, b"")


class Stall(Behaviour):
    """Read the request and never answer. :meth:`Origin.stop` aborts the connection."""

    def handle(self, origin: Origin, request: TxRequest, hit: Hit) -> None:
        return None

    def __repr__(self) -> str:
        return "Stall()"


class Drop(Behaviour):
    """Close the connection without sending anything (``abortConnection``: an RST, no response)."""

    def handle(self, origin: Origin, request: TxRequest, hit: Hit) -> None:
        if request.channel is not None and request.channel.transport is not None:
            request.channel.transport.abortConnection()

    def __repr__(self) -> str:
        return "Drop()"


@dataclass
class Delay(Behaviour):
    """Wait ``seconds`` (reactor time), then answer with ``behaviour``, unless the client has gone."""

    seconds: float
    behaviour: Behaviour | bytes

    def handle(self, origin: Origin, request: TxRequest, hit: Hit) -> None:
        inner = _as_behaviour(self.behaviour)

        def fire() -> None:
            if _alive(request):
                inner.handle(origin, request, hit)

        call = origin.call_later(self.seconds, fire)

        def cancel(_: Any) -> None:
            if call.active():
                call.cancel()

        request.notifyFinish().addBoth(cancel)


class Gate(Behaviour):
    """Holds requests until :meth:`open` is called, then answers them (and later ones) with ``behaviour``.

    ``waiting`` is the number of held requests whose client is still connected.
    """

    def __init__(self, behaviour: Behaviour | bytes) -> None:
        self.behaviour = _as_behaviour(behaviour)
        self.is_open = False
        self._held: list[tuple[Origin, TxRequest, Hit]] = []

    @property
    def waiting(self) -> int:
        return sum(1 for _, request, _ in self._held if _alive(request))

    def open(self) -> None:
        self.is_open = True
        held, self._held = self._held, []
        for origin, request, hit in held:
            if _alive(request):
                self.behaviour.handle(origin, request, hit)

    def handle(self, origin: Origin, request: TxRequest, hit: Hit) -> None:
        if self.is_open:
            self.behaviour.handle(origin, request, hit)
        else:
            self._held.append((origin, request, hit))

    def __repr__(self) -> str:
        return f"Gate({self.behaviour!r}, open={self.is_open}, waiting={self.waiting})"


class Dynamic(Behaviour):
    """``fn(origin, hit)`` picks the behaviour per request (e.g. from the query or the headers)."""

    def __init__(self, fn: Callable[[Origin, Hit], Behaviour | bytes]) -> None:
        self.fn = fn

    def handle(self, origin: Origin, request: TxRequest, hit: Hit) -> None:
        _as_behaviour(self.fn(origin, hit)).handle(origin, request, hit)


@dataclass
class Transfer:
    """One streamed response of a :class:`Huge` behaviour."""

    size: int
    sent: int = 0  # bytes handed to the TCP transport (the kernel may still have buffered some)
    complete: bool = False  # the whole body was written and the response finished
    client_gone: bool = False  # the connection was lost before the body was complete
    settled: defer.Deferred[Transfer] = field(default_factory=defer.Deferred, repr=False)

    def _settle(self) -> None:
        if not self.settled.called:
            self.settled.callback(self)


@implementer(IPushProducer)
class _Streamer:
    """Writes a :class:`Huge` body a chunk at a time, paused by TCP back-pressure."""

    def __init__(self, huge: Huge, origin: Origin, request: TxRequest, transfer: Transfer) -> None:
        self.huge = huge
        self.origin = origin
        self.request = request
        self.transfer = transfer
        self.paused = False
        self.stopped = False
        self.call: _Call | None = None

    def start(self) -> None:
        self.request.registerProducer(self, True)
        self.request.notifyFinish().addErrback(self._lost)
        self._schedule()

    def _schedule(self) -> None:
        if self.call is None and not self.paused and not self.stopped:
            self.call = self.origin.call_later(0, self._tick)

    def _tick(self) -> None:
        self.call = None
        t = self.transfer
        while not self.paused and not self.stopped and _alive(self.request) and t.sent < t.size:
            data = self.huge.slice(t.sent, min(self.huge.chunk, t.size - t.sent))
            t.sent += len(data)  # count before write(): write() may pause us synchronously
            self.request.write(data)
        if self.stopped or not _alive(self.request):
            return
        if t.sent >= t.size:
            self.stopped = True
            self.request.unregisterProducer()
            self.request.finish()
            t.complete = True
            t._settle()
        else:
            self._schedule()

    def _lost(self, failure: Failure) -> None:
        self.transfer.client_gone = not self.transfer.complete
        self.stopProducing()
        self.transfer._settle()

    def pauseProducing(self) -> None:
        self.paused = True
        if self.call is not None and self.call.active():
            self.call.cancel()
        self.call = None

    def resumeProducing(self) -> None:
        self.paused = False
        self._schedule()

    def stopProducing(self) -> None:
        self.stopped = True
        if self.call is not None and self.call.active():
            self.call.cancel()
        self.call = None


class Huge(Behaviour):
    """A ``size``-byte body streamed ``chunk`` bytes at a time, never held in memory.

    The body is ``prefix`` + ``fill`` repeated + ``suffix`` (``fill`` defaults to robots.txt comment
    lines, so a huge robots.txt stays valid). With ``content_length=False`` it is sent chunked.
    ``transfers`` has one :class:`Transfer` per request; ``bytes_sent`` is the total over all of
    them (for one request: how far the server got before the client went away).
    """

    def __init__(
        self,
        size_bytes: int,
        prefix: bytes = b"",
        chunk: int = 64 * 1024,
        *,
        suffix: bytes = b"",
        fill: bytes = b"#" * 63 + b"\n",
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        content_length: bool = True,
    ) -> None:
        if len(prefix) + len(suffix) > size_bytes:
            raise ValueError("prefix + suffix longer than size_bytes")
        if not fill or chunk <= 0:
            raise ValueError("fill must be non-empty and chunk positive")
        self.size = size_bytes
        self.prefix = prefix
        self.suffix = suffix
        self.fill = fill
        self.chunk = chunk
        self.status = status
        self.headers = {"Content-Type": "text/plain", **(headers or {})}
        self.content_length = content_length
        self.transfers: list[Transfer] = []
        reps = chunk // len(fill) + 2
        self._fillbuf = fill * reps

    @property
    def bytes_sent(self) -> int:
        return sum(t.sent for t in self.transfers)

    @property
    def completed(self) -> int:
        return sum(1 for t in self.transfers if t.complete)

    def settled(self) -> defer.Deferred[list[Transfer]]:
        """Fires once every transfer started so far is complete or lost its client.

        A crawl can end before the server has noticed the client went away; wait on this first.
        """
        return defer.gatherResults([t.settled for t in self.transfers])

    def slice(self, pos: int, n: int) -> bytes:
        """Bytes ``[pos, pos + n)`` of the body."""
        out = bytearray()
        end = pos + n
        fill_start, fill_end = len(self.prefix), self.size - len(self.suffix)
        if pos < fill_start:
            out += self.prefix[pos : min(end, fill_start)]
        lo, hi = max(pos, fill_start), min(end, fill_end)
        while lo < hi:
            off = (lo - fill_start) % len(self.fill)
            take = min(hi - lo, len(self._fillbuf) - off)
            out += self._fillbuf[off : off + take]
            lo += take
        if end > fill_end:
            out += self.suffix[max(pos, fill_end) - fill_end : end - fill_end]
        return bytes(out)

    def handle(self, origin: Origin, request: TxRequest, hit: Hit) -> None:
        request.setResponseCode(self.status)
        for name, value in self.headers.items():
            request.setHeader(name, value)
        if request.method == b"HEAD":
            request.setHeader(b"content-length", str(self.size).encode())
            request.finish()
            return
        if self.content_length:
            request.setHeader(b"content-length", str(self.size).encode())
        transfer = Transfer(self.size)
        self.transfers.append(transfer)
        _Streamer(self, origin, request, transfer).start()

    def __repr__(self) -> str:
        return f"Huge({self.size}, sent={self.bytes_sent})"


def _as_behaviour(value: Behaviour | bytes | str) -> Behaviour:
    if isinstance(value, Behaviour):
        return value
    if isinstance(value, str):
        value = value.encode()
    if isinstance(value, bytes):
        return Static(value)
    raise TypeError(f"not a behaviour: {value!r}")


ROBOTS_NOT_FOUND = Static(b"Not Found", status=404, headers={"Content-Type": "text/plain"})


# --------------------------------------------------------------------------- the server


class _Root(Resource):
    isLeaf = True

    def __init__(self, origin: Origin) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.origin = origin

    def render(self, request: TxRequest) -> int:
        self.origin._dispatch(request)
        return server.NOT_DONE_YET


@dataclass
class _Connection:
    transport: Any = None
    lost: defer.Deferred[None] = field(default_factory=defer.Deferred)


class _Site(server.Site):
    def __init__(self, origin: Origin, reactor: Any) -> None:
        # The reactor given, not the global one twisted.web imports by default.
        super().__init__(_Root(origin), timeout=None, reactor=reactor)  # type: ignore[no-untyped-call]
        self.origin = origin
        self.noisy = False

    def log(self, request: Any) -> None:  # no access log
        pass

    def buildProtocol(self, addr: Any) -> Any:
        proto = super().buildProtocol(addr)  # type: ignore[no-untyped-call]
        conn = _Connection()
        self.origin._connections[proto] = conn
        original_make, original_lost = proto.makeConnection, proto.connectionLost

        def make_connection(transport: Any) -> None:
            conn.transport = transport
            original_make(transport)

        def connection_lost(reason: Failure) -> None:
            try:
                original_lost(reason)
            finally:
                self.origin._connections.pop(proto, None)
                conn.lost.callback(None)

        proto.makeConnection = make_connection
        proto.connectionLost = connection_lost
        return proto


class Origin:
    """An HTTP/1.1 server on ``http://host:port`` in the running reactor (:attr:`reactor`).

    * ``behaviours``: ``path -> Behaviour`` (``origin[path] = ...`` works too), changeable any time.
      A key with ``?`` matches the exact path-with-query, otherwise the path part. Raw ``bytes``/``str``
      become :class:`Static`.
    * Unconfigured ``/robots.txt`` and ``/.well-known/tdmrep.json`` -> 404 (no such file); any other
      unconfigured path ->
      ``default`` (a 200 HTML :class:`Page` linking to ``links``).
    * ``requests``: list of :class:`Hit` ``(time, method, path, headers)`` in arrival order.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        behaviours: Mapping[str, Behaviour | bytes | str] | None = None,
        links: Iterable[str] = ("/a", "/b", "/c"),
        port: int = 0,
    ) -> None:
        self.host = host
        self._want_port = port
        self.behaviours: dict[str, Behaviour | bytes | str] = dict(behaviours or {})
        self.links: list[str] = list(links)
        self.default: Behaviour = Page()
        self.requests: list[Hit] = []
        self._port: Any = None
        self._port_number = 0
        #: The reactor it runs in (:func:`.server_reactor.server_reactor`), from :meth:`start` on.
        self.reactor: Any = None
        self._connections: dict[Any, _Connection] = {}
        self._calls: list[_Call] = []
        self._waiters: list[tuple[str, int, defer.Deferred[Hit]]] = []
        self._stopping: list[defer.Deferred[None]] | None = None  # None until stop() is called
        self._stop_outcome: Failure | bool | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> Origin:
        if self._port is not None:
            raise RuntimeError("already started")
        self.reactor = server_reactor()
        self._port = self.reactor.listenTCP(self._want_port, _Site(self, self.reactor), interface=self.host)
        self._port_number = self._port.getHost().port
        return self

    def stop(self) -> defer.Deferred[None]:
        """Stop listening, cancel timers, abort every open connection; fires once all are closed.

        Idempotent. Each call returns a new Deferred, so a caller may ``addTimeout`` to it.
        """
        if self._stopping is None:
            self._stopping = []
            self._stop().addBoth(self._stopped)
        if self._stop_outcome is not None:
            return defer.fail(self._stop_outcome) if isinstance(self._stop_outcome, Failure) else defer.succeed(None)
        waiter: defer.Deferred[None] = defer.Deferred()
        self._stopping.append(waiter)
        return waiter

    def _stopped(self, outcome: Any) -> None:
        self._stop_outcome = outcome if isinstance(outcome, Failure) else True
        waiters, self._stopping = self._stopping or [], []
        for waiter in waiters:
            if isinstance(outcome, Failure):
                waiter.errback(outcome)
            else:
                waiter.callback(None)

    def _stop(self) -> defer.Deferred[None]:
        for call in self._calls:
            if call.active():
                call.cancel()
        self._calls.clear()
        waits: list[defer.Deferred[Any]] = []
        if self._port is not None:
            waits.append(defer.maybeDeferred(self._port.stopListening))
        for conn in list(self._connections.values()):
            waits.append(conn.lost)
            if conn.transport is not None:
                conn.transport.abortConnection()
        for _, _, d in self._waiters:
            d.cancel()
        self._waiters.clear()
        return defer.gatherResults(waits, consumeErrors=True).addCallback(lambda _: None)

    @property
    def running(self) -> bool:
        return self._port is not None and self._stopping is None

    @property
    def open_connections(self) -> int:
        return len(self._connections)

    @property
    def pending_calls(self) -> list[_Call]:
        """Timers scheduled through :meth:`call_later` that have not run or been cancelled yet."""
        return [c for c in self._calls if c.active()]

    # -- addresses ------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("origin not started")
        return self._port_number  # still known after stop()

    @property
    def netloc(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def base(self) -> str:
        return f"http://{self.netloc}"

    def url(self, path: str = "/") -> str:
        if not path.startswith("/"):
            path = "/" + path
        return self.base + path

    # -- configuration --------------------------------------------------------------------------

    def __setitem__(self, path: str, behaviour: Behaviour | bytes | str) -> None:
        self.behaviours[path] = behaviour

    def __getitem__(self, path: str) -> Behaviour | bytes | str:
        return self.behaviours[path]

    def robots(self, text: str | bytes, status: int = 200, **headers: str) -> Static:
        """Serve ``text`` as /robots.txt (``text/plain`` unless ``Content_Type=...`` is given)."""
        body = text.encode() if isinstance(text, str) else text
        hdrs = {"Content-Type": "text/plain; charset=utf-8"}
        hdrs.update({k.replace("_", "-"): v for k, v in headers.items()})
        static = Static(body, status, hdrs)
        self.behaviours["/robots.txt"] = static
        return static

    def tdmrep(self, rules: Any, status: int = 200, **headers: str) -> Static:
        """Serve ``rules`` (JSON-encoded unless ``str`` or ``bytes``) as /.well-known/tdmrep.json."""
        if isinstance(rules, str):
            rules = rules.encode()
        body = rules if isinstance(rules, bytes) else json.dumps(rules).encode()
        hdrs = {"Content-Type": "application/json"}
        hdrs.update({k.replace("_", "-"): v for k, v in headers.items()})
        static = Static(body, status, hdrs)
        self.behaviours["/.well-known/tdmrep.json"] = static
        return static

    def behaviour_for(self, path: str) -> Behaviour:
        if path in self.behaviours:
            return _as_behaviour(self.behaviours[path])
        path_only = path.split("?", 1)[0]
        if path_only in self.behaviours:
            return _as_behaviour(self.behaviours[path_only])
        if path_only in ("/robots.txt", "/.well-known/tdmrep.json"):
            return ROBOTS_NOT_FOUND
        return self.default

    def call_later(self, seconds: float, fn: Callable[..., Any], *args: Any) -> _Call:
        """``reactor.callLater`` that :meth:`stop` cancels."""
        self._calls = [c for c in self._calls if c.active()]
        call = self.reactor.callLater(seconds, fn, *args)
        self._calls.append(call)
        return call

    # -- the request log ------------------------------------------------------------------------

    def hits(self, path: str, method: str | None = None) -> int:
        """How many requests for ``path`` arrived (see :func:`_path_matches` for ``?`` handling)."""
        return len(self.requests_for(path, method))

    def requests_for(self, path: str, method: str | None = None) -> list[Hit]:
        return [
            h
            for h in self.requests
            if _path_matches(h.path, path) and (method is None or h.method == method.upper())
        ]

    def paths(self) -> list[str]:
        """Paths-with-query of all received requests, in arrival order."""
        return [h.path for h in self.requests]

    def wait_for(self, path: str, count: int = 1, timeout: float | None = None) -> defer.Deferred[Hit]:
        """Fires with the ``count``-th :class:`Hit` for ``path`` (at once if already there), or
        fails after ``timeout`` seconds (None: no bound of its own; in the test suite, the test's
        deadline bounds the wait)."""
        matching = self.requests_for(path)
        if len(matching) >= count:
            return defer.succeed(matching[count - 1])
        d: defer.Deferred[Hit] = defer.Deferred()
        self._waiters.append((path, count, d))
        if timeout is not None:
            d.addTimeout(timeout, self.reactor)
        return d

    def _dispatch(self, request: TxRequest) -> None:
        headers = Headers(
            (name.decode("latin-1"), b", ".join(values).decode("latin-1"))
            for name, values in request.requestHeaders.getAllRawHeaders()
        )
        hit = Hit(time.monotonic(), request.method.decode("latin-1"), request.uri.decode("latin-1"), headers)
        self.requests.append(hit)
        try:
            self.behaviour_for(hit.path).handle(self, request, hit)
        finally:
            self._notify_waiters()

    def _notify_waiters(self) -> None:
        # After the behaviour ran, so that a waiting test sees its effects (timers, streams).
        ready = [(p, n, d) for p, n, d in self._waiters if not d.called and len(self.requests_for(p)) >= n]
        self._waiters = [(p, n, d) for p, n, d in self._waiters if not d.called and (p, n, d) not in ready]
        for path, count, d in ready:
            d.callback(self.requests_for(path)[count - 1])

    def __repr__(self) -> str:
        where = self.base if self._port is not None else f"{self.host}:<not started>"
        return f"<Origin {where} requests={len(self.requests)}>"
