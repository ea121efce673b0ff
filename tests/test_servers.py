"""The test infrastructure itself: real origins crawled by Scrapy with its built-in RobotsTxtMiddleware."""

from __future__ import annotations

import asyncio
import logging
import sys
import time

import pytest
import pytest_twisted
from crawl import ListSpider, run_crawl
from middleware_support import TrackingSpider, until
from reactorless import is_reactorless
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.defer import deferred_from_coro
from scrapy_errors import DownloadCancelledError, DownloadFailedError, DownloadTimeoutError, connection_lost
from servers import (
    Delay,
    Drop,
    Dynamic,
    Gate,
    Huge,
    Origin,
    Redirect,
    Sequence,
    Stall,
    Static,
    server_reactor,
)
from twisted.internet import defer
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol
from twisted.internet.error import ConnectionRefusedError
from twisted.internet.protocol import Protocol

ROBOTS_LOGGER = "scrapy.downloadermiddlewares.robotstxt"


class _RawClient(Protocol):
    """Sends one raw request and records what comes back and when the connection closes."""

    def __init__(self, request: bytes) -> None:
        self.request = request
        self.received = b""
        self.closed: defer.Deferred[None] = defer.Deferred()

    def connectionMade(self) -> None:
        self.transport.write(self.request)

    def dataReceived(self, data: bytes) -> None:
        self.received += data

    def connectionLost(self, reason: object = None) -> None:
        self.closed.callback(None)


def _get(origin: Origin, path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: {origin.netloc}\r\n\r\n".encode()


def _connect(origin: Origin, path: str) -> defer.Deferred[_RawClient]:
    endpoint = TCP4ClientEndpoint(server_reactor(), origin.host, origin.port, timeout=2)
    return connectProtocol(endpoint, _RawClient(_get(origin, path)))


@pytest_twisted.inlineCallbacks
def test_the_run_crawls_in_its_mode_and_the_servers_share_the_crawls_loop(origins):
    """The reactorless run installs no reactor, so its crawls run without one; either way the
    servers run on the asyncio loop the test (and so the crawl) runs on."""
    a = origins()
    result = yield run_crawl([a.url("/page")])

    assert ("twisted.internet.reactor" in sys.modules) is not is_reactorless()
    assert result.crawler.settings.getbool("TWISTED_REACTOR_ENABLED", True) is not is_reactorless()
    assert a.reactor is server_reactor()
    assert a.reactor._asyncioEventloop is asyncio.get_running_loop()
    assert result.responses == [a.url("/page")]


@pytest_twisted.inlineCallbacks
def test_two_origins_on_different_loopback_hosts_each_serve_their_robots_txt(origins):
    a = origins("127.0.0.1")
    b = origins("127.0.0.2")
    a.robots("User-agent: *\nDisallow: /private\n")
    # b has no robots.txt: the default is a 404, so everything is allowed there.
    assert (a.host, b.host) == ("127.0.0.1", "127.0.0.2")
    assert b.base == f"http://127.0.0.2:{b.port}"
    assert b.url("/x?y=1") == f"http://127.0.0.2:{b.port}/x?y=1"

    urls = [a.url("/page"), a.url("/private/1"), b.url("/page"), b.url("/private/1")]
    result = yield run_crawl(urls)

    assert a.hits("/robots.txt") == 1
    assert b.hits("/robots.txt") == 1
    assert a.hits("/private/1") == 0
    assert b.hits("/private/1") == 1
    assert a.paths()[0] == "/robots.txt"
    assert sorted(a.paths()) == ["/page", "/robots.txt"]
    assert sorted(b.paths()) == ["/page", "/private/1", "/robots.txt"]
    assert sorted(result.responses) == sorted([a.url("/page"), b.url("/page"), b.url("/private/1")])

    stats = result.stats
    assert stats["robotstxt/request_count"] == 2
    assert stats["robotstxt/response_status_count/200"] == 1
    assert stats["robotstxt/response_status_count/404"] == 1
    assert stats["robotstxt/forbidden"] == 1
    assert result.errors_for(a.url("/private/1"))
    assert isinstance(result.errors_for(a.url("/private/1"))[0], IgnoreRequest)
    assert result.logged("Forbidden by robots.txt", logging.DEBUG, logger=ROBOTS_LOGGER)
    assert (f"{b.base}/robots.txt", 404) in result.downloaded
    assert {i["url"] for i in result.items} == set(result.responses)

    # What the server received, as sent by Scrapy.
    robots_hit = a.requests_for("/robots.txt")[0]
    _time, method, path, headers = robots_hit
    assert (method, path) == ("GET", "/robots.txt")
    assert headers["Host"] == a.netloc
    assert headers["user-agent"].startswith("Scrapy/")
    assert "HOST" in headers
    page_hit = a.requests_for("/page")[0]
    assert robots_hit.time <= page_hit.time


@pytest_twisted.inlineCallbacks
def test_a_port_is_bound_to_its_loopback_address_only(origins):
    b = origins("127.0.0.2")
    client = yield _connect(b, "/hello")
    hit = yield b.wait_for("/hello")
    assert hit.headers["host"] == b.netloc
    client.transport.loseConnection()
    yield client.closed
    assert b.hits("/hello") == 1
    with pytest.raises(ConnectionRefusedError):
        yield connectProtocol(TCP4ClientEndpoint(server_reactor(), "127.0.0.3", b.port, timeout=2), Protocol())


@pytest_twisted.inlineCallbacks
def test_sequence_serves_a_robots_txt_that_recovers(origins):
    a = origins("127.0.0.3")
    robots = Sequence(
        [
            Static(b"busy", status=503),
            Static(b"busy", status=503),
            Static(b"User-agent: *\nDisallow: /private\n", headers={"Content-Type": "text/plain"}),
        ]
    )
    a["/robots.txt"] = robots  # configured after start

    result = yield run_crawl(
        [a.url("/private"), a.url("/public")], {"RETRY_ENABLED": True, "RETRY_TIMES": 2}
    )

    assert a.hits("/robots.txt") == 3
    assert robots.count == 3
    assert result.stats["retry/count"] == 2
    assert result.stats["robotstxt/response_status_count/200"] == 1
    assert "robotstxt/response_status_count/503" not in result.stats
    assert a.hits("/private") == 0
    assert result.responses == [a.url("/public")]
    assert result.stats["robotstxt/forbidden"] == 1


@pytest_twisted.inlineCallbacks
def test_sequence_last_behaviour_repeats(origins):
    a = origins()
    a["/flaky"] = Sequence([Static(b"no", status=503), b"yes"])
    url = a.url("/flaky")

    result = yield run_crawl([url, url, url], {"CONCURRENT_REQUESTS": 1})

    assert a.hits("/flaky") == 3
    assert result.responses == [url, url]
    assert [type(e) for e in result.errors_for(url)] == [HttpError]
    assert result.errors[0].exception.response.status == 503


@pytest_twisted.inlineCallbacks
def test_redirect_same_origin_and_cross_origin(origins):
    a = origins("127.0.0.1")
    b = origins("127.0.0.2")
    a["/old"] = Redirect("/new")
    a["/away"] = Redirect(b.url("/there"), status=302)

    result = yield run_crawl([a.url("/old"), a.url("/away")])

    assert sorted(result.responses) == sorted([a.url("/new"), b.url("/there")])
    assert a.hits("/old") == a.hits("/new") == a.hits("/away") == 1
    assert b.hits("/there") == 1
    # The redirected request went through the robots middleware again, for the new origin.
    assert b.hits("/robots.txt") == 1
    assert result.stats["downloader/response_status_count/301"] == 1
    assert result.stats["downloader/response_status_count/302"] == 1


@pytest_twisted.inlineCallbacks
def test_default_page_links_can_be_followed(origins):
    a = origins(links=["/one", "/two"])
    a["/two"] = Static(b'<a href="/one">back</a><a href="/three">on</a>')

    result = yield run_crawl([a.url("/")], follow=True)

    assert sorted(a.paths()) == ["/", "/one", "/robots.txt", "/three", "/two"]
    assert sorted(result.responses) == sorted(a.url(p) for p in ["/", "/one", "/two", "/three"])
    assert all(i["status"] == 200 for i in result.items)


@pytest_twisted.inlineCallbacks
def test_huge_body_is_streamed_whole(origins):
    a = origins()
    size = 3 * 1024 * 1024 + 17
    huge = Huge(size, prefix=b"User-agent: *\n", suffix=b"Disallow: /end\n", content_length=False)
    a["/big"] = huge

    result = yield run_crawl([a.url("/big")])
    yield huge.settled()

    assert result.items == [{"url": a.url("/big"), "status": 200, "length": size}]
    assert huge.bytes_sent == size
    assert huge.completed == 1
    assert not huge.transfers[0].client_gone


@pytest_twisted.inlineCallbacks
def test_huge_body_records_how_far_the_server_got_when_the_client_stops(origins):
    a = origins()
    size = 256 * 1024 * 1024
    huge = Huge(size, chunk=16 * 1024, content_length=False)
    a["/big"] = huge

    result = yield run_crawl([a.url("/big")], {"DOWNLOAD_MAXSIZE": 1024 * 1024})
    yield huge.settled()

    assert result.error_types() == [DownloadCancelledError]
    (transfer,) = huge.transfers
    assert transfer.client_gone and not transfer.complete
    # More than the limit arrived, then the client hung up long before the end.
    assert 1024 * 1024 < huge.bytes_sent < 64 * 1024 * 1024
    assert a.open_connections == 0


def test_huge_body_layout():
    huge = Huge(100, prefix=b"PRE", suffix=b"SUF", fill=b"abc", chunk=7)
    body = b"".join(huge.slice(pos, min(7, 100 - pos)) for pos in range(0, 100, 7))
    expected = b"PRE" + (b"abc" * 40)[: 100 - 6] + b"SUF"
    assert body == expected
    assert huge.slice(1, 5) == b"REabc"
    assert huge.slice(95, 5) == expected[95:]
    with pytest.raises(ValueError):
        Huge(4, prefix=b"abc", suffix=b"de")


@pytest_twisted.inlineCallbacks
def test_stall_times_out_in_the_client(origins):
    a = origins()
    a["/stall"] = Stall()
    start = time.monotonic()

    result = yield run_crawl([a.url("/stall"), a.url("/ok")], {"DOWNLOAD_TIMEOUT": 0.5})

    assert time.monotonic() - start >= 0.5  # not before the timeout (a loaded machine only makes it later)
    assert a.hits("/stall") == 1
    assert result.responses == [a.url("/ok")]
    assert result.error_types() == [DownloadTimeoutError]


@pytest_twisted.inlineCallbacks
def test_stop_aborts_stalled_and_delayed_connections_and_leaves_no_timers(origins):
    a = origins()
    a["/stall"] = Stall()
    a["/later"] = Delay(60, Static(b"too late"))
    readers_before = set(server_reactor().getReaders())

    stalled = yield _connect(a, "/stall")
    delayed = yield _connect(a, "/later")
    yield a.wait_for("/stall")
    yield a.wait_for("/later")
    assert a.open_connections == 2
    timers = a.pending_calls
    assert len(timers) == 1  # the Delay timer
    assert set(timers) <= set(server_reactor().getDelayedCalls())

    yield a.stop().addTimeout(3, server_reactor())

    # Server side: all connections are gone when stop() fires. The clients then see the reset.
    assert a.open_connections == 0
    yield defer.gatherResults([stalled.closed, delayed.closed]).addTimeout(2, server_reactor())
    assert stalled.received == delayed.received == b""
    assert not a.running
    assert a.pending_calls == []
    assert not timers[0].active()
    assert set(timers).isdisjoint(server_reactor().getDelayedCalls())
    # The listening port and the server side of both connections leave the reactor.
    yield deferred_from_coro(until(lambda: set(server_reactor().getReaders()) <= readers_before,
                                   "the server's sockets left the reactor"))
    with pytest.raises(ConnectionRefusedError):
        yield _connect(a, "/stall")
    yield a.stop()  # idempotent (the fixture calls it again)


@pytest_twisted.inlineCallbacks
def test_teardown_with_a_crawl_cut_short_by_a_stall(origins):
    a = origins()
    a["/stall"] = Stall()
    result = yield run_crawl([a.url("/stall")], {"DOWNLOAD_TIMEOUT": 0.3})
    assert result.error_types() == [DownloadTimeoutError]
    # A raw client keeps a stalled request open; the fixture must abort it after the test.
    client = yield _connect(a, "/stall")
    yield a.wait_for("/stall", count=2)
    assert a.open_connections >= 1
    assert not client.closed.called


@pytest_twisted.inlineCallbacks
def test_drop_closes_without_a_response(origins):
    a = origins()
    a["/drop"] = Drop()

    result = yield run_crawl([a.url("/drop")])

    # Twisted's connection pool resends a request once when a reused keep-alive connection (here:
    # the one robots.txt came on) closes without a response, so the server may see it twice.
    assert a.hits("/drop") in (1, 2)
    assert result.responses == []
    (error,) = result.errors
    assert isinstance(error.exception, DownloadFailedError)
    assert connection_lost(error.exception), error.exception
    assert error.url == a.url("/drop")


@pytest_twisted.inlineCallbacks
def test_delay_answers_late(origins):
    a = origins()
    a["/slow"] = Delay(0.4, Static(b"late", headers={"Cache-Control": "max-age=60"}))

    class HeaderSpider(ListSpider):
        def parse(self, response, **kwargs):
            yield {"body": response.body, "cache": response.headers.get("Cache-Control")}

    start = time.monotonic()
    result = yield run_crawl(HeaderSpider, urls=[a.url("/slow")])

    assert time.monotonic() - start >= 0.4
    assert result.items == [{"body": b"late", "cache": b"max-age=60"}]


@pytest_twisted.inlineCallbacks
def test_exact_query_behaviour_wins_and_dynamic_sees_the_request(origins):
    a = origins()
    a["/q"] = Dynamic(lambda origin, hit: Static(hit.path.encode(), headers={"Content-Type": "text/plain"}))
    a["/q?special=1"] = Static(b"special", status=410)

    result = yield run_crawl([a.url("/q?x=1"), a.url("/q?special=1")])

    assert result.statuses == {a.url("/q?x=1"): 200}
    assert [e.response.status for e in result.errors_for(a.url("/q?special=1"))] == [410]
    assert a.hits("/q") == 2
    assert a.hits("/q?x=1") == 1
    assert a.paths().count("/q?special=1") == 1


@pytest_twisted.inlineCallbacks
def test_gate_holds_robots_txt_until_opened(origins):
    a = origins()
    gate = Gate(Static(b"User-agent: *\nDisallow: /no\n", headers={"Content-Type": "text/plain"}))
    a["/robots.txt"] = gate

    crawl = run_crawl(TrackingSpider, urls=[a.url("/yes"), a.url("/no")])
    yield a.wait_for("/robots.txt")
    spider = TrackingSpider.latest
    assert spider is not None
    # Both page requests reach the downloader, where the built-in middleware makes them wait for robots.txt.
    downloader = spider.crawler.engine.downloader
    yield deferred_from_coro(until(lambda: {r.url for r in downloader.active} >= {a.url("/yes"), a.url("/no")},
                                   "both page requests in the downloader"))
    assert a.paths() == ["/robots.txt"]
    assert gate.waiting == 1
    gate.open()
    result = yield crawl

    assert gate.waiting == 0
    assert a.hits("/robots.txt") == 1
    assert a.paths() == ["/robots.txt", "/yes"]
    assert result.responses == [a.url("/yes")]
    assert result.stats["robotstxt/forbidden"] == 1


@pytest_twisted.inlineCallbacks
def test_list_spider_accepts_requests_and_meta(origins):
    a = origins()
    a.robots("User-agent: *\nDisallow: /\n")
    request = Request(a.url("/anyway"), meta={"dont_obey_robotstxt": True})

    result = yield run_crawl([request])

    assert a.paths() == ["/anyway"]  # no robots.txt fetch for this request
    assert result.responses == [a.url("/anyway")]
    assert result.items[0]["length"] > 0


# --------------------------------------------------------------------------- loopback addresses


def test_the_loopback_addresses_the_suite_serves_on_are_usable():
    from conftest import LAST_LOOPBACK
    from servers.loopback import loopback_problem

    assert loopback_problem(LAST_LOOPBACK) is None


def test_an_address_that_cannot_be_listened_on_is_named_with_the_fix():
    """An address of no interface of this machine (192.0.2.1, TEST-NET-1) fails to bind
    as 127.0.0.2 does on macOS: the message names it, the error and the command to add them."""
    from servers.loopback import loopback_problem, unusable_address

    found = unusable_address(["127.0.0.1", "192.0.2.1", "127.0.0.2"])
    assert found is not None and found[0] == "192.0.2.1"
    problem = loopback_problem(8, ["127.0.0.1", "192.0.2.1"])
    assert problem is not None
    assert problem.startswith(f"Cannot listen on 192.0.2.1 ({found[1].strerror}). ")
    assert "127.0.0.1 to 127.0.0.8" in problem
    assert problem.endswith("for i in $(seq 2 8); do sudo ifconfig lo0 alias 127.0.0.$i up; done")
