"""The fetch rules of scrapy_rfc9309/lifecycle/fetch.py called directly: the request a fetch makes,
the redirect a response leads to, the size bound and content coding of a body, what a ``304 Not
Modified`` renews, the outcome of each way a fetch ends; then :meth:`RobotsFetcher.fetch` itself,
in one real crawl against local origins, for every status and error a fetch can end with. Kills
the mutants the crawl tests leave alive (docs/development.md, "Mutation testing")."""

from __future__ import annotations

import gzip
from typing import Any

import pytest
import pytest_twisted
import scrapy
from crawl import run_crawl
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.test import get_crawler
from servers import Conditional, Origin, Redirect, Static

from scrapy_rfc9309.core.documents import ROBOTS_TXT, TDMREP
from scrapy_rfc9309.core.http_cache import Validators
from scrapy_rfc9309.core.origins import Origin as Site
from scrapy_rfc9309.core.state import Access, Cause, FetchOutcome, Policy
from scrapy_rfc9309.lifecycle.fetch import CODING_HEADER, FETCH_META, Outcome, RobotsFetcher, _header_lines, _is_html

SITE = Site.from_url("http://a.example/")
ROBOTS = "http://a.example/robots.txt"
RULES = b"User-agent: *\nDisallow: /private\n"


def _fetcher(max_size: int = 100, max_redirects: int = 2) -> RobotsFetcher:
    crawler = get_crawler(settings_dict={})
    return RobotsFetcher(crawler, Policy(max_redirects=max_redirects), max_size)


def _stats(fetcher: RobotsFetcher) -> dict[str, Any]:
    assert fetcher.crawler.stats is not None
    return {key.removeprefix("robotstxt/"): value for key, value in fetcher.crawler.stats.get_stats().items()
            if key.startswith("robotstxt/")}


def _response(status: int = 200, body: bytes = b"", url: str = ROBOTS, flags: list[str] | None = None,
              **headers: Any) -> Response:
    return Response(url, status=status, body=body, flags=flags,
                    headers={name.replace("_", "-"): value for name, value in headers.items()})


# --------------------------------------------------------------------------- the outcome


def test_an_outcome_follows_redirects_and_names_its_document() -> None:
    outcome = Outcome(ROBOTS, TDMREP)
    outcome.follow("http://a.example/b")
    outcome.follow("http://a.example/c")
    assert outcome.url == "http://a.example/c"
    made = outcome.unavailable("why", 404, max_age=5.0)
    assert made == FetchOutcome(Access.UNAVAILABLE, "http://a.example/c", 404, reason="why", max_age=5.0,
                                redirects=("http://a.example/b", "http://a.example/c"), document=TDMREP)
    outcome.follow("http://a.example/d")
    assert made.redirects == ("http://a.example/b", "http://a.example/c")  # a copy, not the list that grows
    unreachable = Outcome(ROBOTS, ROBOTS_TXT).unreachable("down", 503, cause=Cause.REFUSED)
    assert unreachable == FetchOutcome(Access.UNREACHABLE, ROBOTS, 503, reason="down", cause=Cause.REFUSED)


def test_an_unexpected_error_is_an_unreachable_outcome_naming_it() -> None:
    made = Outcome(ROBOTS, ROBOTS_TXT).error(KeyError("x"))
    assert made == FetchOutcome(Access.UNREACHABLE, ROBOTS, None, reason="unexpected error", error="KeyError: 'x'")


def test_a_parsed_outcome_keeps_the_body_validators_and_header_lines() -> None:
    response = _response(200, RULES, ETag=' "v1" ', Last_Modified="Wed, 21 Oct 2026 07:28:00 GMT", X_Other="1")
    made = Outcome(ROBOTS, ROBOTS_TXT).parsed(200, RULES, 60.0, True, response)
    assert made == FetchOutcome(Access.PARSED, ROBOTS, 200, RULES, 60.0, truncated=True, etag='"v1"',
                                last_modified="Wed, 21 Oct 2026 07:28:00 GMT")
    assert (b"X-Other", b"1") in made.headers and (b"Etag", b' "v1" ') in made.headers


def test_a_not_modified_outcome_renews_with_its_lifetime() -> None:
    made = Outcome(ROBOTS, ROBOTS_TXT).not_modified(30.0)
    assert made == FetchOutcome(Access.PARSED, ROBOTS, 304, max_age=30.0, not_modified=True)
    assert made.body == b"" and made.etag is None


def test_header_lines_give_the_moved_content_coding_its_name_back() -> None:
    response = _response(Set_Cookie=["a=1", "b=2"], **{CODING_HEADER.decode(): "gzip"})
    assert _header_lines(response) == ((b"Set-Cookie", b"a=1"), (b"Set-Cookie", b"b=2"), (b"Content-Encoding", b"gzip"))


@pytest.mark.parametrize(("headers", "body", "html"), [
    ({"Content-Type": "text/html; charset=utf-8"}, b"", True),
    ({"Content-Type": "Application/XHTML+xml"}, b"", True),
    ({"Content-Type": "text/plain"}, b"  \n<!DOCTYPE HTML><p>", True),
    ({}, b"<HTML><body>", True),
    ({}, b"User-agent: *\n<html>", False),
    ({}, b" " * 508 + b"<html>", False),  # only the first 512 bytes are looked at
    ({}, b" " * 507 + b"<html>", True),
    ({"Content-Type": "text/plain"}, b"<p>not a page</p>", False),
])
def test_an_html_page_is_known_by_its_type_or_its_start(headers: dict[str, str], body: bytes, html: bool) -> None:
    assert _is_html(_response(200, body, **headers)) is html


# --------------------------------------------------------------------------- the request


def test_the_request_leaves_redirects_retries_and_sizes_to_the_fetch() -> None:
    request = _fetcher().request_for(ROBOTS, SITE)
    assert request.url == ROBOTS and request.method == "GET"
    assert request.headers.get(b"Accept-Encoding") == b"identity"
    assert b"If-None-Match" not in request.headers and b"If-Modified-Since" not in request.headers
    assert request.priority == 1000 and request.dont_filter is True and request.callback is NO_CALLBACK
    assert request.meta == {FETCH_META: "http://a.example", "dont_obey_robotstxt": True, "dont_redirect": True,
                            "dont_retry": True, "handle_httpstatus_all": True, "allow_offsite": True,
                            "download_fail_on_dataloss": True, "download_maxsize": 0}


def test_the_validators_go_only_to_the_url_the_copy_came_from() -> None:
    fetcher = _fetcher()
    validators = Validators(ROBOTS, '"v1"', "Wed, 21 Oct 2026 07:28:00 GMT")
    request = fetcher.request_for(ROBOTS, SITE, validators)
    assert request.headers.get(b"If-None-Match") == b'"v1"'
    assert request.headers.get(b"If-Modified-Since") == b"Wed, 21 Oct 2026 07:28:00 GMT"
    assert request.headers.get(b"Accept-Encoding") == b"identity"
    elsewhere = fetcher.request_for("http://a.example/other.txt", SITE, validators)
    assert b"If-None-Match" not in elsewhere.headers and b"If-Modified-Since" not in elsewhere.headers


# --------------------------------------------------------------------------- redirects


def _target(location: str | None, redirects: list[str] | None = None, url: str = ROBOTS,
            max_redirects: int = 2) -> tuple[str | None, str]:
    headers = {} if location is None else {"Location": location}
    response = _response(301, url=url, **headers)
    return _fetcher(max_redirects=max_redirects)._redirect_target(response, url, ROBOTS, SITE, redirects or [])


def test_a_redirect_leads_to_its_location_read_from_the_response_url() -> None:
    assert _target("/moved.txt") == ("http://a.example/moved.txt", "")
    assert _target("  https://b.example/r.txt \t") == ("https://b.example/r.txt", "")
    assert _target("r2.txt", ["http://a.example/dir/r1.txt"], url="http://a.example/dir/r1.txt") == (
        "http://a.example/dir/r2.txt", "")


@pytest.mark.parametrize("location", [None, ""])
def test_a_redirect_without_a_location_is_not_followed(location: str | None) -> None:
    assert _target(location) == (None, "redirect without a Location")


@pytest.mark.parametrize(("location", "why"), [
    ("ftp://a.example/robots.txt", "not an absolute http(s) URL"),
    ("http://:80/robots.txt", "not an absolute http(s) URL"),
    ("http://a.example:99999/robots.txt", "Port out of range"),
    ("http://a b.example/robots.txt", "a URL Scrapy's HTTP clients refuse"),
    ("http://a.example\x7f/robots.txt", "a URL Scrapy's HTTP clients refuse"),
])
def test_a_redirect_to_an_unusable_location_is_not_followed(location: str, why: str) -> None:
    target, reason = _target(location)
    assert target is None
    assert reason.startswith(f"redirect to an unusable Location {location!r} (") and why in reason


def test_an_unusable_location_is_named_cut() -> None:
    location = "ftp://a.example/" + "x" * 300
    target, reason = _target(location)
    assert target is None and f"{location[:200]!r}" in reason and location[:201] not in reason


@pytest.mark.parametrize(("location", "redirects", "url"), [
    (ROBOTS, [], ROBOTS),  # to itself
    ("/r1.txt", ["http://a.example/r1.txt", "http://a.example/r2.txt"], "http://a.example/r2.txt"),  # seen before
    ("/robots.txt", ["http://a.example/r1.txt"], "http://a.example/r1.txt"),  # back to the start
])
def test_a_redirect_loop_is_not_followed(location: str, redirects: list[str], url: str) -> None:
    assert _target(location, redirects, url=url, max_redirects=5) == (None, "redirect loop")


def test_redirects_are_followed_up_to_the_bound() -> None:
    one = ["http://a.example/r1.txt"]
    assert _target("/r2.txt", one, url=one[-1]) == ("http://a.example/r2.txt", "")
    two = [*one, "http://a.example/r2.txt"]
    assert _target("/r3.txt", two, url=two[-1]) == (None, "more than 2 redirects")
    assert _target("/r1.txt", [], max_redirects=0) == (None, "more than 0 redirects")


# --------------------------------------------------------------------------- a body


def _parsed(response: Response, document: Any = ROBOTS_TXT, redirects: tuple[str, ...] = (),
            max_size: int = 100) -> tuple[FetchOutcome, dict[str, Any]]:
    fetcher = _fetcher(max_size=max_size)
    outcome = Outcome(ROBOTS, document)
    for target in redirects:
        outcome.follow(target)
    return fetcher._parsed(outcome, response, response.status, 7.0), _stats(fetcher)


def test_a_body_as_long_as_the_bound_is_whole() -> None:
    made, stats = _parsed(_response(200, b"#" * 100), max_size=100)
    assert made.access is Access.PARSED and made.body == b"#" * 100 and made.truncated is False
    assert made.max_age == 7.0 and made.status == 200
    assert "truncated" not in stats


def test_a_body_longer_than_the_bound_is_cut_at_it_and_counted() -> None:
    made, stats = _parsed(_response(200, b"#" * 101), max_size=100)
    assert made.body == b"#" * 100 and made.truncated is True
    assert stats["truncated"] == 1
    made, stats = _parsed(_response(200, b"#" * 101, url="http://a.example/.well-known/tdmrep.json"),
                          document=TDMREP, max_size=100)
    assert made.truncated is True and stats == {"tdmrep/truncated": 1}


def test_a_download_stopped_at_the_bound_is_truncated() -> None:
    made, stats = _parsed(_response(200, b"#" * 10, flags=["download_stopped"]), max_size=100)
    assert made.body == b"#" * 10 and made.truncated is True and stats["truncated"] == 1


@pytest.mark.parametrize("header", [CODING_HEADER.decode(), "Content-Encoding"])
def test_a_compressed_body_is_decoded_within_the_bound(header: str) -> None:
    made, _ = _parsed(_response(200, gzip.compress(RULES), **{header: "gzip"}))
    assert made.body == RULES and made.truncated is False
    made, stats = _parsed(_response(200, gzip.compress(b"#" * 500), **{header: "identity, gzip"}))
    assert made.body == b"#" * 100 and made.truncated is True and stats["truncated"] == 1


def test_both_codings_are_undone_in_the_order_applied() -> None:
    twice = gzip.compress(gzip.compress(RULES))
    made, _ = _parsed(_response(200, twice, **{CODING_HEADER.decode(): "gzip", "Content-Encoding": "gzip"}))
    assert made.body == RULES


def test_an_unknown_coding_is_an_undecodable_body() -> None:
    made, _ = _parsed(_response(200, RULES, Content_Encoding="zz"))
    assert made.access is Access.UNREACHABLE and made.reason == "undecodable body" and made.status == 200
    assert made.error is not None and "zz" in made.error


def test_a_redirect_to_an_html_page_is_no_robots_txt() -> None:
    page = _response(200, b"<html><body>login</body></html>", Content_Type="text/html")
    made, _ = _parsed(page, redirects=("http://a.example/login",))
    assert made.access is Access.UNAVAILABLE and made.reason == "redirected to an HTML page" and made.status == 200
    made, _ = _parsed(page)  # the origin's own robots.txt is read whatever it looks like
    assert made.access is Access.PARSED and made.body == page.body


@pytest.mark.parametrize(("body", "redirects", "reason"), [
    (b"\xef\xbb\xbf \r\n\t<html>", (), "an HTML page"),
    (b"<p>", ("http://a.example/elsewhere",), "redirected to an HTML page"),
])
def test_markup_is_no_tdmrep_json_whatever_its_type(body: bytes, redirects: tuple[str, ...], reason: str) -> None:
    made, _ = _parsed(_response(200, body, Content_Type="application/json"), document=TDMREP, redirects=redirects)
    assert made.access is Access.UNAVAILABLE and made.reason == reason and made.status == 200


def test_a_tdmrep_json_is_read_whatever_its_type() -> None:
    body = b'[{"location": "/", "tdm-reservation": 1}]'
    made, _ = _parsed(_response(200, body, Content_Type="text/html"), document=TDMREP,
                      redirects=("http://a.example/elsewhere",))
    assert made.access is Access.PARSED and made.body == body
    made, _ = _parsed(_response(200, gzip.compress(b" <html>"), Content_Encoding="gzip"), document=TDMREP)
    assert made.access is Access.UNAVAILABLE  # the markup is seen once decoded


# --------------------------------------------------------------------------- a 304


def _not_modified(validators: Validators | None, **headers: Any) -> tuple[FetchOutcome, dict[str, Any]]:
    fetcher = _fetcher()
    made = fetcher._not_modified(Outcome(ROBOTS, ROBOTS_TXT), _response(304, **headers), 9.0, validators)
    return made, _stats(fetcher)


def test_a_304_with_the_copys_validators_renews_it() -> None:
    made, stats = _not_modified(Validators(ROBOTS, '"v1"', None, size=123), ETag='"v1"')
    assert made == FetchOutcome(Access.PARSED, ROBOTS, 304, max_age=9.0, not_modified=True)
    assert stats == {"revalidated": 1, "revalidated_bytes": 123}


def test_a_304_to_a_request_without_validators_renews_nothing() -> None:
    made, stats = _not_modified(None, ETag='"v1"')
    assert made == FetchOutcome(Access.UNREACHABLE, ROBOTS, 304,
                                reason="304 Not Modified to a request without validators")
    assert stats == {"not_modified_unrequested": 1}


def test_a_304_with_another_copys_validators_renews_nothing_and_says_both() -> None:
    validators = Validators(ROBOTS, '"v1"', "Wed, 21 Oct 2026 07:28:00 GMT", size=5)
    made, stats = _not_modified(validators, ETag='"v2"', Last_Modified="Thu, 22 Oct 2026 07:28:00 GMT")
    assert made.access is Access.UNREACHABLE and made.status == 304 and not made.not_modified
    assert made.reason == ("304 Not Modified with ETag '\"v2\"', Last-Modified 'Thu, 22 Oct 2026 07:28:00 GMT', "
                           "not the copy's (If-None-Match \"v1\", If-Modified-Since Wed, 21 Oct 2026 07:28:00 GMT)")
    assert stats == {"not_modified_unmatched": 1}
    made, _ = _not_modified(Validators(ROBOTS, '"v1"', None))
    assert made.access is Access.UNREACHABLE
    assert made.reason == "304 Not Modified with no validators, not the copy's (If-None-Match \"v1\")"
    made, _ = _not_modified(validators, ETag='"' + "x" * 200 + '"')
    assert made.reason.startswith("304 Not Modified with ETag " + repr('"' + "x" * 99) + ", not the copy's")


# --------------------------------------------------------------------------- fetch, in a crawl


class _Refusing:
    """A downloader middleware of the crawl that refuses (IgnoreRequest) or fails (RuntimeError) the
    requests to the origins named in the setting ``REFUSED`` and ``FAILING``."""

    def __init__(self, refused: list[str], failing: list[str]) -> None:
        self.refused, self.failing = refused, failing

    @classmethod
    def from_crawler(cls, crawler: Any) -> _Refusing:
        return cls(crawler.settings.getlist("REFUSED"), crawler.settings.getlist("FAILING"))

    def process_request(self, request: Request, spider: Any = None) -> None:
        if any(request.url.startswith(base) for base in self.refused):
            raise IgnoreRequest("refused by a test middleware")
        if any(request.url.startswith(base) for base in self.failing):
            raise RuntimeError("a test middleware failed")


class _FetchingSpider(scrapy.Spider):
    """Fetches each ``(name, origin URL, document, validators)`` of ``jobs`` in turn with a
    :class:`RobotsFetcher` of the crawl; keeps each outcome, the stats it added, and whether the
    downloader's concurrency and the fetcher's progress were back where they were."""

    name = "fetching"

    def __init__(self, jobs: list[tuple[str, str, Any, Validators | None]], found: dict[str, Any],
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.jobs, self.found = jobs, found

    async def start(self):  # type: ignore[override]
        crawler = self.crawler
        assert crawler.engine is not None and crawler.stats is not None
        fetcher = RobotsFetcher(crawler, Policy(max_redirects=2), 64)
        for name, url, document, validators in self.jobs:
            concurrency = crawler.engine.downloader.total_concurrency
            before = dict(crawler.stats.get_stats())
            outcome = await fetcher.fetch(Site.from_url(url), document, validators=validators)
            after = crawler.stats.get_stats()
            added = {key.removeprefix("robotstxt/"): value - before.get(key, 0) for key, value in after.items()
                     if key.startswith("robotstxt/") and value != before.get(key, 0)}
            balanced = crawler.engine.downloader.total_concurrency == concurrency and fetcher.progress.in_flight == 0
            self.found[name] = (outcome, added, balanced)
        return
        yield


def _origin(origins: Any, **behaviours: Any) -> Origin:
    made: Origin = origins("127.0.0.1")
    for path, behaviour in behaviours.items():
        made["/" + path.replace("__", "/").replace("_", ".")] = behaviour
    return made


@pytest_twisted.inlineCallbacks
def test_every_way_a_fetch_ends(origins):
    plain = {"Content-Type": "text/plain"}
    parsed = _origin(origins, robots_txt=Static(RULES, 200, {**plain, "Cache-Control": "max-age=100", "ETag": '"e"'}))
    moved = _origin(origins, robots_txt=Redirect("/a.txt", 302), a_txt=Redirect("/b.txt", 307),
                    b_txt=Static(RULES, 200, plain))
    too_far = _origin(origins, robots_txt=Redirect("/a.txt"), a_txt=Redirect("/b.txt"), b_txt=Redirect("/c.txt"),
                      c_txt=Static(RULES, 200, plain))
    looping = _origin(origins, robots_txt=Redirect("/a.txt"), a_txt=Redirect("/robots.txt"))
    missing = _origin(origins, robots_txt=Static(b"gone", 404, {"Cache-Control": "max-age=50"}))
    failing = _origin(origins, robots_txt=Static(b"busy", 503))
    too_many = _origin(origins, robots_txt=Static(b"slow down", 429))
    unasked = _origin(origins, robots_txt=Static(b"", 304))
    conditional = _origin(origins, robots_txt=Conditional(RULES, '"v1"', None, {"Cache-Control": "max-age=20"}))
    large = _origin(origins, robots_txt=Static(b"#" * 100, 200, plain))
    refused = _origin(origins)
    broken = _origin(origins)
    tdmrep = _origin(origins)
    tdmrep.tdmrep([{"location": "/", "tdm-reservation": 1}])
    to_https = _origin(origins, robots_txt=Redirect("https://127.0.0.1:1/robots.txt"))
    down = _origin(origins)
    yield down.stop()
    https = "https://127.0.0.1:1/"
    copy = Validators(conditional.url("/robots.txt"), '"v1"', None, size=len(RULES))
    elsewhere = Validators(unasked.url("/other.txt"), '"v1"', None)
    jobs = [("parsed", parsed.url(), ROBOTS_TXT, None), ("moved", moved.url(), ROBOTS_TXT, None),
            ("too far", too_far.url(), ROBOTS_TXT, None), ("looping", looping.url(), ROBOTS_TXT, None),
            ("missing", missing.url(), ROBOTS_TXT, None), ("failing", failing.url(), ROBOTS_TXT, None),
            ("too many", too_many.url(), ROBOTS_TXT, None), ("unasked", unasked.url(), ROBOTS_TXT, elsewhere),
            ("conditional", conditional.url(), ROBOTS_TXT, copy), ("large", large.url(), ROBOTS_TXT, None),
            ("refused", refused.url(), ROBOTS_TXT, None), ("broken", broken.url(), ROBOTS_TXT, None),
            ("tdmrep", tdmrep.url(), TDMREP, None), ("to https", to_https.url(), ROBOTS_TXT, None),
            ("https", https, ROBOTS_TXT, None), ("down", down.url(), ROBOTS_TXT, None)]
    found: dict[str, Any] = {}
    settings = {"ROBOTSTXT_OBEY": False, "DOWNLOAD_HANDLERS": {"https": None},
                "DOWNLOADER_MIDDLEWARES": {_Refusing: 50}, "REFUSED": [refused.base], "FAILING": [broken.base]}

    yield run_crawl(_FetchingSpider, settings, jobs=jobs, found=found)

    assert set(found) == {name for name, *_ in jobs}
    assert all(balanced for _, _, balanced in found.values())
    outcome, added, _ = found["parsed"]
    assert outcome == FetchOutcome(Access.PARSED, parsed.url("/robots.txt"), 200, RULES, 100.0, etag='"e"')
    assert added == {"request_count": 1, "response_count": 1, "response_status_count/200": 1}
    outcome, added, _ = found["moved"]
    assert outcome == FetchOutcome(Access.PARSED, moved.url("/b.txt"), 200, RULES,
                                   redirects=(moved.url("/a.txt"), moved.url("/b.txt")))
    assert added == {"request_count": 3, "response_count": 3, "response_status_count/302": 1,
                     "response_status_count/307": 1, "response_status_count/200": 1, "redirect_count": 2}
    outcome, added, _ = found["too far"]
    assert outcome == FetchOutcome(Access.UNAVAILABLE, too_far.url("/b.txt"), 301, reason="more than 2 redirects",
                                   redirects=(too_far.url("/a.txt"), too_far.url("/b.txt")))
    assert added == {"request_count": 3, "response_count": 3, "response_status_count/301": 3, "redirect_count": 2,
                     "redirect_failed": 1}
    outcome, added, _ = found["looping"]
    assert outcome == FetchOutcome(Access.UNAVAILABLE, looping.url("/a.txt"), 301, reason="redirect loop",
                                   redirects=(looping.url("/a.txt"),))
    assert added["redirect_failed"] == 1 and added["redirect_count"] == 1
    outcome, added, _ = found["missing"]
    assert outcome == FetchOutcome(Access.UNAVAILABLE, missing.url("/robots.txt"), 404, reason="status 404",
                                   max_age=50.0)
    assert (b"Cache-Control", b"max-age=50") in outcome.headers
    assert added == {"request_count": 1, "response_count": 1, "response_status_count/404": 1}
    for name, status in (("failing", 503), ("too many", 429)):
        outcome, added, _ = found[name]
        assert outcome == FetchOutcome(Access.UNREACHABLE, outcome.url, status, reason=f"status {status}")
        assert outcome.headers == ()
        assert added == {"request_count": 1, "response_count": 1, f"response_status_count/{status}": 1}
    outcome, added, _ = found["unasked"]  # its validators are another URL's: none sent, the 304 renews nothing
    assert outcome == FetchOutcome(Access.UNREACHABLE, unasked.url("/robots.txt"), 304,
                                   reason="304 Not Modified to a request without validators")
    assert added["not_modified_unrequested"] == 1
    assert "If-None-Match" not in unasked.requests[0].headers
    outcome, added, _ = found["conditional"]
    assert outcome == FetchOutcome(Access.PARSED, conditional.url("/robots.txt"), 304, max_age=20.0,
                                   not_modified=True)
    assert added == {"request_count": 1, "response_count": 1, "response_status_count/304": 1, "revalidated": 1,
                     "revalidated_bytes": len(RULES)}
    assert conditional.requests[0].headers["If-None-Match"] == '"v1"'
    assert conditional.requests[0].headers["Accept-Encoding"] == "identity"
    outcome, added, _ = found["large"]
    assert outcome.access is Access.PARSED and outcome.body == b"#" * 64 and outcome.truncated
    assert added["truncated"] == 1
    outcome, added, _ = found["refused"]
    assert outcome == FetchOutcome(Access.UNAVAILABLE, refused.url("/robots.txt"), reason="request ignored",
                                   error="ignored: refused by a test middleware")
    assert added == {"request_count": 1}
    outcome, added, _ = found["broken"]
    assert outcome == FetchOutcome(Access.UNREACHABLE, broken.url("/robots.txt"),
                                   reason="error in the crawl's components",
                                   error="RuntimeError: a test middleware failed")
    assert added == {"request_count": 1, f"exception_count/{RuntimeError}": 1}
    outcome, added, _ = found["tdmrep"]
    assert outcome.access is Access.PARSED and outcome.document is TDMREP
    assert outcome.url == tdmrep.url("/.well-known/tdmrep.json")
    assert added == {"tdmrep/request_count": 1, "tdmrep/response_count": 1, "tdmrep/response_status_count/200": 1}
    outcome, added, _ = found["to https"]
    assert outcome.access is Access.UNAVAILABLE and outcome.reason == "redirect to a URL Scrapy cannot request"
    assert outcome.redirects == ("https://127.0.0.1:1/robots.txt",) and outcome.error
    outcome, added, _ = found["https"]
    assert outcome.access is Access.UNREACHABLE and outcome.reason == "Scrapy cannot make the request"
    assert outcome.cause is Cause.CANNOT_REQUEST and outcome.error
    outcome, added, _ = found["down"]
    assert outcome.access is Access.UNREACHABLE and outcome.reason == "network error"
    assert outcome.cause is Cause.REFUSED and outcome.error
