"""RobotsTxtMiddleware against real origins: access results of the robots.txt fetch (status codes,
network errors, redirects, size) and the verdicts given to requests."""

from __future__ import annotations

import logging

import pytest
import pytest_twisted
from crawl import ListSpider, run_crawl
from middleware_support import mw_settings, page_hits, robots_hits, stat, text
from scrapy.exceptions import IgnoreRequest
from scrapy_errors import DownloadFailedError, resends_dropped_get
from servers import Behaviour, Drop, Huge, Redirect, Sequence, Stall, Static

from scrapy_rfc9309.exceptions import RobotsTxtForbidden

MW_LOGGER = "scrapy_rfc9309"
RULES = "User-agent: *\nDisallow: /private\n"


# --------------------------------------------------------------------------- status codes


@pytest_twisted.inlineCallbacks
def test_2xx_robots_txt_is_parsed_and_obeyed(origins):
    a = origins()
    a.robots(RULES)
    urls = [a.url("/public/1"), a.url("/private/1"), a.url("/public/2"), a.url("/private/2?q=1"), a.url("/")]

    result = yield run_crawl(urls, mw_settings())

    assert len(robots_hits(a)) == 1
    assert a.hits("/private/1") == a.hits("/private/2") == 0
    assert sorted(h.path for h in page_hits(a)) == ["/", "/public/1", "/public/2"]
    assert sorted(result.responses) == sorted([a.url("/public/1"), a.url("/public/2"), a.url("/")])
    # robots.txt was received before any page.
    assert a.paths()[0] == "/robots.txt"
    assert stat(result, "parsed") == 1
    assert stat(result, "forbidden") == 2
    assert stat(result, "unavailable") == stat(result, "unreachable") == 0
    assert sorted(e.url for e in result.errors) == sorted([a.url("/private/1"), a.url("/private/2?q=1")])
    assert all(isinstance(e.exception, RobotsTxtForbidden) for e in result.errors)


@pytest.mark.parametrize("status", [404, 403, 401, 410])
@pytest_twisted.inlineCallbacks
def test_4xx_is_unavailable_and_its_body_is_not_obeyed(origins, status):
    a = origins()
    a.robots("User-agent: *\nDisallow: /\n", status=status)
    urls = [a.url("/"), a.url("/private/1"), a.url("/x")]

    result = yield run_crawl(urls, mw_settings())

    assert len(robots_hits(a)) == 1
    assert sorted(h.path for h in page_hits(a)) == ["/", "/private/1", "/x"]
    assert sorted(result.responses) == sorted(urls)
    assert result.errors == []
    assert stat(result, "unavailable") == 1
    assert stat(result, f"response_status_count/{status}") == 1
    assert stat(result, "forbidden") == 0
    assert stat(result, "held") == 0


@pytest.mark.parametrize("status", [500, 503, 429])
@pytest_twisted.inlineCallbacks
def test_5xx_and_429_are_a_complete_disallow_while_they_last(origins, status):
    """An error page that says ``Allow: /`` is not parsed: nothing is requested while robots.txt fails;
    once it is back, its rules decide."""
    a = origins()
    failing = Static(b"User-agent: *\nAllow: /\n", status, {"Content-Type": "text/plain"})
    robots = Sequence([failing, failing, text(RULES)])
    a["/robots.txt"] = robots
    urls = [a.url("/public/1"), a.url("/private/1"), a.url("/public/2")]

    result = yield run_crawl(urls, mw_settings())

    hits = robots_hits(a)
    assert len(hits) == 3
    assert a.hits("/private/1") == 0
    assert sorted(h.path for h in page_hits(a)) == ["/public/1", "/public/2"]
    # Not one page was requested before robots.txt answered 200.
    assert all(h.time > hits[2].time for h in page_hits(a))
    assert stat(result, f"response_status_count/{status}") == 2
    assert stat(result, "unreachable") == 2
    assert stat(result, "parsed") == 1
    assert [type(e.exception) for e in result.errors] == [RobotsTxtForbidden]


# --------------------------------------------------------------------------- network errors


class CutShort(Behaviour):
    """Announces ``Content-Length: 1000``, sends a few bytes of it and closes the connection."""

    def handle(self, origin, request, hit) -> None:
        request.setResponseCode(200)
        request.setHeader(b"content-type", b"text/plain")
        request.setHeader(b"content-length", b"1000")
        request.write(b"User-agent: *\nAllow: /\n")
        origin.call_later(0.05, request.channel.transport.loseConnection)


@pytest.mark.parametrize("failure", ["drop", "stall", "cut"])
@pytest_twisted.inlineCallbacks
def test_network_error_is_unreachable_not_allow_all(origins, failure):
    """A connection closed without a response, a timeout or a body cut short holds the origin's requests
    (the built-in middleware would allow everything); the rules of the next successful fetch decide."""
    a = origins()
    first = {"drop": Drop(), "stall": Stall(), "cut": CutShort()}[failure]
    # A dropped connection is resent by some HTTP clients: the first fetch meets the drop each time.
    resent = resends_dropped_get() if failure == "drop" else 0
    a["/robots.txt"] = Sequence([first] * (1 + resent) + [text(RULES)])
    urls = [a.url("/private/1"), a.url("/public/1"), a.url("/private/2")]

    result = yield run_crawl(urls, mw_settings(DOWNLOAD_TIMEOUT=0.3))

    hits = robots_hits(a)
    assert len(hits) == 2 + resent
    assert [h.path for h in page_hits(a)] == ["/public/1"]
    assert page_hits(a)[0].time > hits[-1].time
    assert result.responses == [a.url("/public/1")]
    assert {type(e.exception) for e in result.errors} == {RobotsTxtForbidden}
    assert stat(result, "unreachable") == 1
    assert stat(result, "held") >= 1
    exception_keys = [k for k in result.stats if k.startswith("robotstxt/exception_count/")]
    failed = DownloadFailedError if isinstance(DownloadFailedError, tuple) else (DownloadFailedError,)
    # A cut body: Scrapy's DataLoss error, or Twisted's ResponseFailed before Scrapy 2.15.
    expected = {
        "drop": tuple(c.__name__ for c in failed), "stall": ("Timeout",), "cut": ("DataLoss", "ResponseFailed"),
    }[failure]
    assert len(exception_keys) == 1
    assert any(name in exception_keys[0] for name in expected), exception_keys
    assert result.stats[exception_keys[0]] == 1


# --------------------------------------------------------------------------- redirects


def _chain(a, b, hops: int, final) -> list[str]:
    """``a/robots.txt`` -> ``hops`` redirects alternating between b and a -> ``final``; the path of
    the last hop's target gets ``final``. Returns the hop paths in order."""
    paths = [f"/hop{i}" for i in range(1, hops + 1)]
    hosts = [b if i % 2 == 0 else a for i in range(hops)]  # hop1 on b, hop2 on a, ...
    a["/robots.txt"] = Redirect(hosts[0].url(paths[0]), status=301)
    for i in range(hops - 1):
        hosts[i][paths[i]] = Redirect(hosts[i + 1].url(paths[i + 1]), status=(302, 307, 308, 303)[i % 4])
    hosts[-1][paths[-1]] = final
    return paths


@pytest_twisted.inlineCallbacks
def test_five_redirects_across_hosts_are_followed_and_apply_to_the_initial_origin(origins):
    a = origins("127.0.0.1")
    b = origins("127.0.0.2")
    _chain(a, b, 5, text(RULES))
    urls = [a.url("/private/1"), a.url("/public/1")]

    result = yield run_crawl(urls, mw_settings())

    assert len(robots_hits(a)) == 1
    assert b.hits("/robots.txt") == 0  # b's own robots.txt is not involved
    assert [a.hits(p) for p in ("/hop2", "/hop4")] == [1, 1]
    assert [b.hits(p) for p in ("/hop1", "/hop3", "/hop5")] == [1, 1, 1]
    assert [h.path for h in page_hits(a) if not h.path.startswith("/hop")] == ["/public/1"]
    assert result.responses == [a.url("/public/1")]
    assert stat(result, "redirect_count") == 5
    assert stat(result, "redirect_failed") == 0
    assert stat(result, "parsed") == 1
    assert stat(result, "request_count") == 6
    (error,) = result.errors
    assert isinstance(error.exception, RobotsTxtForbidden)
    # The verdict names the initial origin's robots.txt.
    assert error.exception.robots_url == a.url("/robots.txt")


@pytest_twisted.inlineCallbacks
def test_six_redirects_make_robots_txt_unavailable(origins):
    a = origins("127.0.0.1")
    b = origins("127.0.0.2")
    paths = _chain(a, b, 6, text("User-agent: *\nDisallow: /\n"))
    urls = [a.url("/private/1"), a.url("/public/1")]

    result = yield run_crawl(urls, mw_settings())

    assert len(robots_hits(a)) == 1
    # The sixth redirect is not followed: the file it points to is never requested.
    assert a.hits(paths[5]) == 0
    assert b.hits(paths[4]) == 1
    assert sorted(result.responses) == sorted(urls)
    assert result.errors == []
    assert stat(result, "redirect_count") == 5
    assert stat(result, "redirect_failed") == 1
    assert stat(result, "unavailable") == 1
    assert stat(result, "forbidden") == 0


@pytest.mark.parametrize(("max_redirects", "hops", "parsed"), [(2, 2, True), (2, 3, False), (0, 1, False)])
@pytest_twisted.inlineCallbacks
def test_robotstxt_max_redirects_is_honoured(origins, max_redirects, hops, parsed):
    a = origins("127.0.0.1")
    b = origins("127.0.0.2")
    _chain(a, b, hops, text(RULES))

    result = yield run_crawl([a.url("/private/1")], mw_settings(ROBOTSTXT_MAX_REDIRECTS=max_redirects))

    assert a.hits("/private/1") == (0 if parsed else 1)
    assert stat(result, "redirect_count") == min(hops, max_redirects)
    assert stat(result, "parsed" if parsed else "unavailable") == 1


class OnlyASpider(ListSpider):
    name = "only-a"
    allowed_domains = ["127.0.0.1"]


@pytest_twisted.inlineCallbacks
def test_a_redirect_to_an_offsite_host_is_followed_for_robots_txt(origins):
    """The spider's allowed_domains limit its pages, not where robots.txt may be redirected to."""
    a = origins("127.0.0.1")
    b = origins("127.0.0.2")
    a["/robots.txt"] = Redirect(b.url("/shared-robots.txt"))
    b["/shared-robots.txt"] = text(RULES)

    result = yield run_crawl(OnlyASpider, mw_settings(), urls=[a.url("/private/1"), a.url("/public/1")])

    assert b.hits("/shared-robots.txt") == 1
    assert [h.path for h in page_hits(a)] == ["/public/1"]
    assert result.responses == [a.url("/public/1")]
    assert stat(result, "parsed") == 1


@pytest.mark.parametrize("loop", ["to-robots", "two-hop"])
@pytest_twisted.inlineCallbacks
def test_a_redirect_loop_makes_robots_txt_unavailable(origins, loop):
    a = origins()
    if loop == "to-robots":
        a["/robots.txt"] = Redirect("/moved")
        a["/moved"] = Redirect("/robots.txt")
        hops = {"/moved": 1}
    else:
        a["/robots.txt"] = Redirect("/x")
        a["/x"] = Redirect("/y")
        a["/y"] = Redirect("/x")
        hops = {"/x": 1, "/y": 1}
    urls = [a.url("/private/1"), a.url("/page")]

    result = yield run_crawl(urls, mw_settings())

    assert len(robots_hits(a)) == 1
    assert {p: a.hits(p) for p in hops} == hops
    assert sorted(result.responses) == sorted(urls)
    assert stat(result, "redirect_failed") == 1
    assert stat(result, "unavailable") == 1


@pytest_twisted.inlineCallbacks
def test_robots_txt_redirected_to_an_html_page_is_unavailable(origins):
    a = origins()
    a["/robots.txt"] = Redirect("/welcome", status=302)
    # An HTML page that happens to read as robots.txt rules: it must not be obeyed.
    a["/welcome"] = Static(b"User-agent: *\nDisallow: /\n<p>Welcome</p>\n", headers={"Content-Type": "text/html"})
    urls = [a.url("/private/1"), a.url("/page")]

    result = yield run_crawl(urls, mw_settings())

    assert a.hits("/welcome") == 1
    assert sorted(h.path for h in page_hits(a) if h.path != "/welcome") == ["/page", "/private/1"]
    assert sorted(result.responses) == sorted(urls)
    assert stat(result, "unavailable") == 1
    assert stat(result, "parsed") == 0
    assert stat(result, "redirect_count") == 1


@pytest_twisted.inlineCallbacks
def test_a_redirect_to_a_non_http_url_is_unavailable(origins):
    a = origins()
    a["/robots.txt"] = Redirect("ftp://127.0.0.1/robots.txt")
    urls = [a.url("/private/1")]

    result = yield run_crawl(urls, mw_settings())

    assert result.responses == urls
    assert stat(result, "unavailable") == 1
    assert stat(result, "redirect_failed") == 1


# --------------------------------------------------------------------------- size


@pytest_twisted.inlineCallbacks
def test_a_huge_robots_txt_is_cut_at_the_limit(origins):
    a = origins()
    size = 5 * 1024 * 1024
    huge = Huge(size, prefix=b"User-agent: *\nDisallow: /top/\n", suffix=b"Disallow: /deep/\n")
    a["/robots.txt"] = huge
    urls = [a.url("/top/1"), a.url("/deep/1"), a.url("/other")]

    result = yield run_crawl(urls, mw_settings())
    yield huge.settled()

    assert a.hits("/top/1") == 0
    assert a.hits("/deep/1") == 1  # the rule past 512000 bytes was not read
    assert sorted(result.responses) == sorted([a.url("/deep/1"), a.url("/other")])
    (transfer,) = huge.transfers
    assert transfer.client_gone and not transfer.complete
    assert huge.bytes_sent < size // 2
    assert stat(result, "truncated") == 1
    assert stat(result, "parsed") == 1
    assert stat(result, "forbidden") == 1


# --------------------------------------------------------------------------- verdicts


@pytest_twisted.inlineCallbacks
def test_forbidden_request_gets_the_verdict_and_the_log_names_the_rule(origins):
    a = origins()
    a.robots("# robots for the test\nUser-agent: *\nDisallow: /private\nAllow: /private/ok\n")
    urls = [a.url("/private/x"), a.url("/private/ok"), a.url("/public")]

    result = yield run_crawl(urls, mw_settings())

    assert a.hits("/private/x") == 0
    assert sorted(result.responses) == sorted([a.url("/private/ok"), a.url("/public")])
    (error,) = result.errors
    exc = error.exception
    assert error.url == a.url("/private/x")
    assert isinstance(exc, RobotsTxtForbidden)
    assert isinstance(exc, IgnoreRequest)
    assert exc.verdict.allowed is False
    assert exc.verdict.rule.pattern == "/private"
    assert exc.verdict.rule.line == 3
    assert exc.verdict.rule.allow is False
    assert exc.robots_url == a.url("/robots.txt")
    expected = (
        f"Forbidden by robots.txt: <GET {a.url('/private/x')}> "
        f"(Disallow: /private, line 3 of {a.url('/robots.txt')})"
    )
    debug = [r.getMessage() for r in result.log_records if r.name.startswith(MW_LOGGER) and r.levelno == logging.DEBUG]
    assert expected in debug
    assert sum(m.startswith("Forbidden by robots.txt") for m in debug) == 1
    assert stat(result, "forbidden") == 1
