"""A loopback HTTP origin served from a thread of its own.

:class:`~servers.origins.Origin` runs in the reactor; a test that
blocks the reactor while a subprocess (``scrapy robotstxt``, a crawl) talks to the
server needs one that answers from another thread. Each path answers a fixed
``(status, headers, body)``; every path received is recorded::

    with ThreadedOrigin() as site:
        site.route("/robots.txt", 301, Location=site.url("/real-robots.txt"))
        site.route("/real-robots.txt", 200, "User-agent: *\\nDisallow: /private\\n")
        subprocess.run(["scrapy", "robotstxt", site.url("/private/x")])
        assert site.paths() == ["/robots.txt", "/real-robots.txt"]
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Reply", "ThreadedOrigin"]

#: A fixed answer: (status, headers, body).
Reply = tuple[int, dict[str, str], bytes]

NOT_FOUND: Reply = (404, {"Content-Type": "text/plain"}, b"no")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    origin: ThreadedOrigin


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        origin = self.server.origin
        with origin.lock:
            origin.received.append(self.path)
        status, headers, body = origin.routes.get(self.path, origin.default)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class ThreadedOrigin:
    """An HTTP/1.0 server on ``http://host:port`` (a free port), served by a thread.

    ``routes`` maps a path (with its query, as in the request line) to a :data:`Reply`;
    other paths get ``default`` (a 404). ``received`` lists the paths received, in
    order. :meth:`start` and :meth:`stop` (or ``with``) run and end the thread.
    """

    def __init__(self, host: str = "127.0.0.1", default: Reply = NOT_FOUND) -> None:
        self.host = host
        self.default = default
        self.routes: dict[str, Reply] = {}
        self.received: list[str] = []
        self.lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._port = 0

    @property
    def port(self) -> int:
        if self._server is None and not self._port:
            raise RuntimeError("origin not started")
        return self._port

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.base + path

    def route(self, path: str, status: int = 200, body: bytes | str = b"", **headers: str) -> None:
        """Answer ``path`` with ``status`` and ``body`` (``text/plain`` unless ``Content_Type=...``
        is given; underscores in header names become dashes)."""
        data = body.encode() if isinstance(body, str) else body
        hdrs = {"Content-Type": "text/plain; charset=utf-8"}
        hdrs.update({k.replace("_", "-"): v for k, v in headers.items()})
        self.routes[path] = (status, hdrs, data)

    def paths(self) -> list[str]:
        """The paths received so far, in order."""
        with self.lock:
            return list(self.received)

    def start(self) -> ThreadedOrigin:
        if self._server is not None:
            raise RuntimeError("already started")
        server = _Server((self.host, 0), _Handler)
        server.origin = self
        self._server = server
        self._port = int(server.server_address[1])
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> ThreadedOrigin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
