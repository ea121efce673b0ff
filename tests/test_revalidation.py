"""Conditional refetch of an expired robots.txt (and tdmrep.json): the validators the copy keeps
(in the state, in disk and Redis records), the conditional request, what a ``304 Not Modified``
does (pure, with an injected clock), then real crawls against a server that answers 304 to
matching validators, a restart with the disk store, Scrapy's HTTP cache in between, and the ledger."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from email.utils import formatdate
from typing import Any

import pytest
import pytest_twisted
from crawl import ListSpider, run_crawl
from ledger_writer import records
from middleware_support import mw_settings, page_hits, robots_hits, sleep, stat
from scrapy import Request
from scrapy.utils.defer import maybe_deferred_to_future
from servers import Behaviour, Conditional, Hit, Origin, Redirect, Static, respond
from test_fleet import _crawl as fleet_crawl
from test_fleet import _settings as fleet_settings
from twisted.internet import defer

from scrapy_rfc9309.core.documents import ROBOTS_TXT, TDMREP
from scrapy_rfc9309.core.http_cache import Validators, http_date, validator
from scrapy_rfc9309.core.state import Access, FetchOutcome, OriginState, Policy
from scrapy_rfc9309.evidence.audit import audit, format_text
from scrapy_rfc9309.signals import robotstxt_fetched
from scrapy_rfc9309.stores.record import Record, decode, encode

RULES = "User-agent: *\nDisallow: /private\n"
ETAG = '"v1"'
#: The copy's Last-Modified: not after its fetch at the injected clock's 0 (a later date is no validator).
DATE = "Thu, 01 Jan 1970 00:00:00 GMT"
POLICY = Policy(ttl=100.0, min_ttl=10.0, keep_cached=1000.0)


def _parsed(now: float = 0.0, etag: str | None = ETAG, last_modified: str | None = DATE,
            max_age: float | None = None) -> OriginState:
    outcome = FetchOutcome(Access.PARSED, "https://h/robots.txt", 200, RULES.encode(), max_age,
                           etag=etag, last_modified=last_modified)
    return OriginState.initial(outcome, now, POLICY)


def _not_modified(max_age: float | None = None, etag: str | None = None) -> FetchOutcome:
    return FetchOutcome(Access.PARSED, "https://h/robots.txt", 304, max_age=max_age, etag=etag, not_modified=True)


# --------------------------------------------------------------------------- validators


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("etag", b'"abc"', '"abc"'),
        ("etag", ' W/"abc" ', 'W/"abc"'),
        ("etag", "abc", None),  # not quoted: not an entity tag
        ("etag", '"a"b"', None),
        ("etag", '"' + "x" * 2000 + '"', None),  # longer than MAX_VALIDATOR
        ("etag", '"a"\r\nX-Injected: 1', None),  # no control characters in a request's field
        ("etag", None, None),
        ("last-modified", DATE, DATE),
        ("last-modified", "yesterday", None),  # If-Modified-Since must be an HTTP date
        ("last-modified", "", None),
    ],
)
def test_validator(name, value, expected):
    assert validator(name, value) == expected


def test_the_validators_of_a_good_copy():
    state = _parsed(etag=ETAG, last_modified=DATE)
    assert state.validators(50.0, POLICY) == Validators("https://h/robots.txt", ETAG, DATE, len(RULES))
    assert state.validators(50.0, POLICY).headers() == {"If-None-Match": ETAG, "If-Modified-Since": DATE}
    assert _parsed(etag=None).validators(50.0, POLICY).headers() == {"If-Modified-Since": DATE}
    # None without validators, past keep_cached, or with ROBOTSTXT_REVALIDATE off.
    assert _parsed(etag=None, last_modified=None).validators(50.0, POLICY) is None
    assert state.validators(2000.0, POLICY) is None
    assert state.validators(50.0, replace(POLICY, revalidate=False)) is None
    unavailable = OriginState.initial(FetchOutcome(Access.UNAVAILABLE, "https://h/robots.txt", 404, etag=ETAG), 0.0,
                                      POLICY)
    assert unavailable.validators(50.0, POLICY) is None


def test_an_unreachable_state_keeps_its_copys_validators():
    failed = _parsed().apply(FetchOutcome(Access.UNREACHABLE, "https://h/robots.txt", 503), 200.0, POLICY)
    assert failed.validators(210.0, POLICY) == Validators("https://h/robots.txt", ETAG, DATE, len(RULES))


# --------------------------------------------------------------------------- a 304 (pure, clock injected)


def test_a_304_renews_the_copy_with_its_own_lifetime():
    first = _parsed(0.0, max_age=50.0)
    renewed = first.apply(_not_modified(max_age=30.0), 200.0, POLICY)
    assert renewed.access is Access.PARSED
    assert renewed.parsed is first.parsed  # the rules kept, not parsed again
    assert renewed.good_at == renewed.fetched_at == 200.0
    assert renewed.expires_at == 230.0  # the 304's Cache-Control
    assert renewed.outcome is not None and renewed.outcome.not_modified
    assert renewed.outcome.status == 200  # the copy's version: its own fetch's status
    # The copy's own validators (a 304 renews only the copy whose validators it names: fetch.py).
    assert renewed.validators(210.0, POLICY) == Validators("https://h/robots.txt", ETAG, DATE, len(RULES))
    assert not renewed.robots.allowed("https://h/private", "Bot")  # type: ignore[union-attr]


def test_a_304_without_a_lifetime_keeps_the_copys():
    renewed = _parsed(0.0, max_age=50.0).apply(_not_modified(), 200.0, POLICY)
    assert renewed.expires_at == 250.0
    assert _parsed(0.0).apply(_not_modified(), 200.0, POLICY).expires_at == 300.0  # the TTL


def test_a_304_brings_an_unreachable_origin_back():
    failed = _parsed().apply(FetchOutcome(Access.UNREACHABLE, "https://h/robots.txt", 503), 200.0, POLICY)
    renewed = failed.apply(_not_modified(), 205.0, POLICY)
    assert renewed.access is Access.PARSED and renewed.failures == 0 and renewed.parsed is failed.parsed


def test_a_304_without_a_copy_is_unreachable():
    state = OriginState.initial(_not_modified(), 0.0, POLICY)
    assert state.access is Access.UNREACHABLE
    assert state.parsed is None
    assert "304" in state.detail


FUTURE = "Fri, 01 Jan 2099 00:00:00 GMT"


def test_a_last_modified_later_than_the_copys_fetch_is_no_validator():
    assert _parsed(0.0, last_modified=FUTURE).validators(50.0, POLICY) == Validators(
        "https://h/robots.txt", ETAG, None, len(RULES))
    assert _parsed(0.0, etag=None, last_modified=FUTURE).validators(50.0, POLICY) is None
    now = http_date(FUTURE)
    assert now is not None and _parsed(now, last_modified=FUTURE).validators(now, POLICY) is not None


@pytest.mark.parametrize(
    ("copy", "etag", "last_modified", "selected"),
    [
        ((ETAG, DATE), ETAG, None, True),
        ((ETAG, DATE), ETAG, FUTURE, True),  # a strong entity tag decides
        ((ETAG, DATE), '"zzz"', DATE, False),  # another copy's entity tag
        ((ETAG, DATE), 'W/"v1"', None, True),  # weak comparison for a weak one (RFC 9110, 8.8.3.2)
        (('W/"v1"', None), 'W/"v1"', None, True),
        (('W/"v1"', None), ETAG, None, False),  # a strong one matches only a strong one
        ((ETAG, DATE), "unquoted", None, False),  # an entity tag that cannot be read matches nothing
        ((None, DATE), ETAG, None, False),  # the copy has none
        ((ETAG, DATE), None, DATE, True),  # no entity tag: the copy's own date
        ((None, DATE), None, "Thursday, 01-Jan-70 00:00:00 GMT", True),  # the same date, written otherwise
        ((None, DATE), None, FUTURE, False),  # another date
        ((None, DATE), None, "never", False),
        ((None, DATE), None, None, True),  # validated by its date, which a 304 need not repeat
        ((ETAG, DATE), None, None, False),  # a 304 must repeat the ETag a 200 would carry
    ],
)
def test_a_304_selects_the_copy_only_by_its_validators(copy, etag, last_modified, selected):
    validators = Validators("https://h/robots.txt", *copy)
    assert validators.selected_by(etag, last_modified) is selected
    assert validators.selected_by(None if etag is None else etag.encode(),
                                  None if last_modified is None else last_modified.encode()) is selected


def test_a_304_that_renews_nothing_is_a_failed_fetch_and_the_next_is_unconditional():
    held = _parsed(0.0)
    failed = held.apply(FetchOutcome(Access.UNREACHABLE, "https://h/robots.txt", 304, reason="unmatched"), 200.0,
                        POLICY)
    assert failed.access is Access.UNREACHABLE and failed.failures == 1
    assert failed.parsed is held.parsed  # the copy stands in, as for any failed fetch
    assert failed.validators(210.0, POLICY) is None
    assert decode(encode(failed, POLICY), POLICY, 201.0).validators(210.0, POLICY) is None
    # A later failure of another kind does not bring them back; a new copy brings its own.
    assert failed.apply(FetchOutcome(Access.UNREACHABLE, "https://h/robots.txt", 503), 210.0,
                        POLICY).validators(220.0, POLICY) is None


# --------------------------------------------------------------------------- records


@pytest.mark.parametrize("document", [None, TDMREP], ids=["robots.txt", "tdmrep.json"])
def test_records_keep_the_validators(document):
    body = b'[{"location": "/", "tdm-reservation": 1}]' if document is TDMREP else RULES.encode()
    kwargs = {"document": document} if document is not None else {}
    outcome = FetchOutcome(Access.PARSED, "https://h/x", 200, body, etag=ETAG, last_modified=DATE, **kwargs)
    state = OriginState.initial(outcome, 0.0, POLICY)
    loaded = decode(encode(state, POLICY), POLICY, 1.0, document or ROBOTS_TXT)
    assert loaded.validators(1.0, POLICY) == Validators("https://h/x", ETAG, DATE, len(body))
    failed = state.apply(FetchOutcome(Access.UNREACHABLE, "https://h/x", 503, **kwargs), 200.0, POLICY)
    loaded = decode(encode(failed, POLICY), POLICY, 201.0, document or ROBOTS_TXT)
    assert loaded.validators(201.0, POLICY) == Validators("https://h/x", ETAG, DATE, len(body))


def test_a_record_without_validators_or_with_bad_ones_is_read_without_them():
    record = encode(_parsed(), POLICY)
    meta = json.loads(record.meta)
    assert meta["etag"] == ETAG and meta["lm"] == DATE
    for etag, lm in ((None, None), (5, ["x"]), ("unquoted", "not a date"), ('"a"\r\nX: 1', DATE + "\r\nX: 1")):
        changed = {k: v for k, v in meta.items() if k not in ("etag", "lm")}
        if etag is not None:
            changed.update(etag=etag, lm=lm)
        state = decode(Record(record.fetched_at, record.expires_at, record.keep_until, json.dumps(changed),
                              record.body), POLICY, 1.0)
        assert state.access is Access.PARSED and state.robots is not None  # the copy still applies
        assert state.validators(1.0, POLICY) is None


# --------------------------------------------------------------------------- crawls


class AnsweringSpider(ListSpider):
    """A ListSpider that calls ``_answered`` for each response or error."""

    def _answered(self) -> None:
        raise NotImplementedError

    def parse(self, response: Any, **kwargs: Any) -> Any:
        self._answered()
        yield from super().parse(response, **kwargs)

    def on_error(self, failure: Any) -> None:
        self._answered()
        super().on_error(failure)


class TwoRoundsSpider(AnsweringSpider):
    """Requests ``first``, waits until their responses (or errors) are all in, then ``gap``
    seconds more (longer than the robots.txt's lifetime: it has expired), then requests ``second``."""

    name = "two_rounds"

    def __init__(self, first: list[str], second: list[str], gap: float, **kwargs: Any) -> None:
        super().__init__(urls=[], **kwargs)
        self.first, self.second, self.gap = first, second, gap
        self.answered = 0
        self.first_done: defer.Deferred[None] = defer.Deferred()

    def _answered(self) -> None:
        self.answered += 1
        if self.answered == len(self.first) and not self.first_done.called:
            self.first_done.callback(None)

    async def start(self):  # type: ignore[override]
        for url in self.first:
            yield Request(url, callback=self.parse, errback=self.on_error, dont_filter=True)
        await maybe_deferred_to_future(self.first_done)
        await maybe_deferred_to_future(sleep(self.gap))
        for url in self.second:
            yield Request(url, callback=self.parse, errback=self.on_error, dont_filter=True)


_SHORT = {"ROBOTSTXT_CACHE_TTL": 0.3, "ROBOTSTXT_CACHE_MIN_TTL": 0.1}


def _rounds(a: Origin) -> dict[str, Any]:
    return {"first": [a.url("/private/1"), a.url("/public/1")], "second": [a.url("/private/2"), a.url("/public/2")],
            "gap": 0.6}


@pytest_twisted.inlineCallbacks
def test_an_expired_robots_txt_is_revalidated_and_a_304_keeps_its_rules(origins):
    a = origins()
    conditional = a["/robots.txt"] = Conditional(RULES.encode(), ETAG, DATE)

    result = yield run_crawl(TwoRoundsSpider, mw_settings(**_SHORT), **_rounds(a))

    first, second = robots_hits(a)
    assert "If-None-Match" not in first.headers and "If-Modified-Since" not in first.headers
    assert second.headers["If-None-Match"] == ETAG
    assert second.headers["If-Modified-Since"] == DATE
    assert conditional.not_modified == 1
    assert sorted(h.path for h in page_hits(a)) == ["/public/1", "/public/2"]
    assert stat(result, "forbidden") == 2  # the rules kept after the 304
    assert stat(result, "revalidated") == 1
    assert stat(result, "revalidated_bytes") == len(RULES)
    assert stat(result, "refetch") == 1
    assert stat(result, "response_status_count/304") == 1


@pytest_twisted.inlineCallbacks
def test_an_expired_tdmrep_json_is_revalidated_too(origins):
    a = origins()
    a["/robots.txt"] = Conditional(RULES.encode(), ETAG, DATE)
    tdmrep = a["/.well-known/tdmrep.json"] = Conditional(b'[{"location": "/public/*", "tdm-reservation": 1}]',
                                                         '"t1"', None)

    result = yield run_crawl(TwoRoundsSpider, mw_settings(ROBOTSTXT_TDMREP=True, **_SHORT), **_rounds(a))

    first, second = a.requests_for("/.well-known/tdmrep.json")
    assert "If-None-Match" not in first.headers
    assert second.headers["If-None-Match"] == '"t1"' and "If-Modified-Since" not in second.headers
    assert tdmrep.not_modified == 1
    assert stat(result, "tdmrep/revalidated") == 1
    assert stat(result, "tdmrep/revalidated_bytes") == len(tdmrep.body)
    assert stat(result, "revalidated") == 1  # the robots.txt's
    assert sorted(h.path for h in page_hits(a) if not h.path.startswith("/.well-known")) == ["/public/1", "/public/2"]


@pytest_twisted.inlineCallbacks
def test_revalidation_can_be_switched_off(origins):
    a = origins()
    conditional = a["/robots.txt"] = Conditional(RULES.encode(), ETAG, DATE)

    result = yield run_crawl(TwoRoundsSpider, mw_settings(ROBOTSTXT_REVALIDATE=False, **_SHORT), **_rounds(a))

    assert [("If-None-Match" in h.headers, "If-Modified-Since" in h.headers) for h in robots_hits(a)] == \
        [(False, False)] * 2
    assert conditional.not_modified == 0
    assert stat(result, "revalidated") == 0
    assert stat(result, "forbidden") == 2


@pytest_twisted.inlineCallbacks
def test_a_changed_file_is_downloaded_and_obeyed(origins):
    a = origins()
    conditional = a["/robots.txt"] = Conditional(RULES.encode(), ETAG, DATE)
    rounds = _rounds(a)

    def change(_: Any) -> None:
        conditional.body, conditional.etag = b"User-agent: *\nDisallow: /public\n", '"v2"'

    run = run_crawl(TwoRoundsSpider, mw_settings(**_SHORT), **rounds)
    a.wait_for("/public/1").addCallback(change)
    result = yield run

    assert conditional.not_modified == 0
    assert robots_hits(a)[1].headers["If-None-Match"] == ETAG
    assert sorted(h.path for h in page_hits(a)) == ["/private/2", "/public/1"]
    assert stat(result, "revalidated") == 0


@pytest_twisted.inlineCallbacks
def test_a_304_to_a_request_without_validators_is_unreachable_not_allow_all(origins):
    a = origins()
    a["/robots.txt"] = Static(b"", 304)

    result = yield run_crawl([a.url("/private/1")], mw_settings(ROBOTSTXT_MAX_WAIT=0.5))

    assert page_hits(a) == []
    assert stat(result, "not_modified_unrequested") >= 1
    assert stat(result, "unreachable") >= 1
    assert stat(result, "revalidated") == 0


@pytest.mark.parametrize("kind", ["disk", "redis"])
@pytest_twisted.inlineCallbacks
def test_a_restart_with_a_store_revalidates(origins, tmp_path, request, kind):
    a = origins()
    conditional = a["/robots.txt"] = Conditional(RULES.encode(), ETAG, DATE)
    where = ({"ROBOTSTXT_STORE_PATH": str(tmp_path)} if kind == "disk" else
             {"ROBOTSTXT_REDIS_URL": request.getfixturevalue("redis_url")})
    settings = mw_settings(ROBOTSTXT_STORE=kind, **where, **_SHORT)

    first = yield run_crawl([a.url("/private/1"), a.url("/public/1")], settings)
    yield sleep(0.5)  # longer than the lifetime: the stored record has expired
    second = yield run_crawl([a.url("/private/2"), a.url("/public/2")], settings)

    hits = robots_hits(a)
    assert len(hits) == 2
    assert hits[1].headers["If-None-Match"] == ETAG
    assert conditional.not_modified == 1
    assert stat(first, "revalidated") == 0
    assert stat(second, "revalidated") == 1
    assert stat(second, "forbidden") == 1
    assert sorted(h.path for h in page_hits(a)) == ["/public/1", "/public/2"]


@pytest_twisted.inlineCallbacks
def test_a_fleet_process_revalidates_from_the_shared_redis_record(origins, redis_url, tmp_path):
    a = origins()
    conditional = a["/robots.txt"] = Conditional(RULES.encode(), ETAG, DATE)
    settings = mw_settings(ROBOTSTXT_STORE="redis", ROBOTSTXT_REDIS_URL=redis_url, **_SHORT)

    first = yield run_crawl([a.url("/private/1"), a.url("/public/1")], settings)
    yield sleep(0.5)  # longer than the lifetime: the shared record has expired
    other = yield fleet_crawl({"kind": "list", "urls": [a.url("/private/2"), a.url("/public/2")],
                               "settings": fleet_settings(ROBOTSTXT_STORE="redis", ROBOTSTXT_REDIS_URL=redis_url,
                                                          **_SHORT)}, tmp_path, "fleet")

    assert stat(first, "parsed") == 1
    assert robots_hits(a)[1].headers["If-None-Match"] == ETAG
    assert conditional.not_modified == 1
    assert int(other["stats"].get("robotstxt/revalidated", 0)) == 1
    assert int(other["stats"].get("robotstxt/forbidden", 0)) == 1
    assert sorted(h.path for h in page_hits(a)) == ["/public/1", "/public/2"]


@pytest_twisted.inlineCallbacks
def test_through_scrapys_http_cache_the_cache_revalidates_and_the_rules_hold(origins, tmp_path):
    """RFC2616Policy revalidates its own stale copy with the same validators and answers the
    middleware with its stored 200: the refetch is a fetch, not a revalidation, for the plugin."""
    a = origins()
    conditional = a["/robots.txt"] = Conditional(RULES.encode(), ETAG, DATE, headers={"Cache-Control": "max-age=0"})
    settings = mw_settings(HTTPCACHE_ENABLED=True, HTTPCACHE_DIR=str(tmp_path),
                           HTTPCACHE_POLICY="scrapy.extensions.httpcache.RFC2616Policy", **_SHORT)

    result = yield run_crawl(TwoRoundsSpider, settings, **_rounds(a))

    assert len(robots_hits(a)) == 2
    assert conditional.not_modified == 1  # the server saw a conditional request
    assert stat(result, "revalidated") == 0  # answered by the cache's stored 200
    assert stat(result, "parsed") == 2
    assert stat(result, "forbidden") == 2
    assert result.stats.get("httpcache/revalidate") == 1


@pytest_twisted.inlineCallbacks
def test_the_ledger_records_a_304_as_the_same_version_renewed(origins, tmp_path):
    a = origins()
    a["/robots.txt"] = Conditional(RULES.encode(), ETAG, DATE)
    ledger = tmp_path / "ledger"

    result = yield run_crawl(TwoRoundsSpider, mw_settings(ROBOTSTXT_LEDGER=str(ledger), **_SHORT), **_rounds(a))

    assert stat(result, "revalidated") == 1
    states = [r for r in records(ledger) if r["k"] == "state"]
    assert [r["status"] for r in states] == [200, 304]
    assert states[0]["ver"] is not None and states[1]["ver"] == states[0]["ver"]
    assert states[1]["exp"] > states[0]["exp"]
    report = audit([ledger])
    assert report.exit_status() == 0, format_text(report)


# --------------------------------------------------------------------------- sites that answer 304 their own way


@dataclass
class Site(Behaviour):
    """A robots.txt (``body`` with ``headers``) whose server answers a request with the header fields
    of a ``304 Not Modified`` that ``not_modified(hit, site)`` gives, or with the file (200) when it
    gives None. ``sent`` counts the 304s."""

    body: bytes
    headers: dict[str, str]
    not_modified: Callable[[Hit, Site], dict[str, str] | None]
    changed_at: float = field(default_factory=lambda: time.time() - 3600)
    sent: int = 0

    def handle(self, origin: Origin, request: Any, hit: Hit) -> None:
        answer = self.not_modified(hit, self)
        if answer is None:
            respond(request, 200, {"Content-Type": "text/plain", **self.headers}, self.body)
            return
        self.sent += 1
        respond(request, 304, answer, b"")

    def change(self, body: bytes, **headers: str) -> None:
        self.body, self.changed_at = body, time.time()
        self.headers.update(headers)


class RoundsSpider(AnsweringSpider):
    """Requests each round once every response (or error) of the round before is in, ``settled[n]``
    robots.txt fetches in all have ended (``robotstxt_fetched``; 0 by default), and ``gap`` seconds
    more have passed (longer than the robots.txt's lifetime: it has expired)."""

    name = "rounds"

    def __init__(self, rounds: list[list[str]], gap: float, settled: dict[int, int] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(urls=[], **kwargs)
        self.rounds, self.gap, self.settled = rounds, gap, settled or {}
        self.answered = 0
        self.round_done: defer.Deferred[None] = defer.Deferred()
        self.fetches = 0

    def _fetched(self, **kwargs: Any) -> None:
        self.fetches += 1
        if not self.round_done.called:
            self.round_done.callback(None)

    def _answered(self) -> None:
        self.answered += 1
        if not self.round_done.called:
            self.round_done.callback(None)

    async def start(self):  # type: ignore[override]
        self.crawler.signals.connect(self._fetched, signal=robotstxt_fetched)
        for number, urls in enumerate(self.rounds):
            if number:
                while self.fetches < self.settled.get(number, 0):
                    await maybe_deferred_to_future(self.round_done)
                    self.round_done = defer.Deferred()
                await maybe_deferred_to_future(sleep(self.gap))
            self.answered, self.round_done = 0, defer.Deferred()
            for url in urls:
                yield Request(url, callback=self.parse, errback=self.on_error, dont_filter=True)
            while self.answered < len(urls):
                await maybe_deferred_to_future(self.round_done)
                self.round_done = defer.Deferred()


V0 = b"User-agent: *\nDisallow: /v0/\n"
V1 = b"User-agent: *\nDisallow: /v1/\n"


def _compares_dates(hit: Hit, site: Site) -> dict[str, str] | None:
    """A server that answers 304 to an If-Modified-Since not before the file's change, sending its
    (future) Last-Modified again."""
    since = hit.headers.get("If-Modified-Since")
    when = None if since is None else http_date(since)
    return None if when is None or when < site.changed_at else {"Last-Modified": site.headers["Last-Modified"]}


@pytest_twisted.inlineCallbacks
def test_a_last_modified_in_the_future_is_never_sent_so_a_changed_file_is_obeyed(origins):
    """Issue 38: a Last-Modified of 2099 sent back as If-Modified-Since made a server that compares
    dates answer 304 to every later version, and the crawl kept the old rules."""
    a = origins()
    site = a["/robots.txt"] = Site(V0, {"Last-Modified": FUTURE}, _compares_dates)
    run = run_crawl(RoundsSpider, mw_settings(**_SHORT), rounds=[[a.url("/v1/1")], [a.url("/v1/2")]], gap=0.6)
    a.wait_for("/v1/1").addCallback(lambda _: site.change(V1))
    result = yield run

    assert [h.headers.get("If-Modified-Since") for h in robots_hits(a)] == [None, None]
    assert site.sent == 0
    assert [h.path for h in page_hits(a)] == ["/v1/1"]
    assert stat(result, "forbidden") == 1 and stat(result, "parsed") == 2


@pytest.mark.parametrize("answer", [{"ETag": '"zzz"'}, {}], ids=["another ETag", "no validator"])
@pytest_twisted.inlineCallbacks
def test_a_304_that_names_another_copy_renews_nothing_and_the_next_fetch_is_unconditional(origins, answer):
    """Issue 38: a 304 with an ETag that is not the copy's (or with none, where the copy has one, which
    a 304 must repeat) renewed the copy, and the next request sent that ETag. Now it is a failed fetch:
    the copy stands in (rounds 2 and 3, whose request starts the retry) until the retry, unconditional,
    brings the file (round 4, once that third fetch has ended)."""
    a = origins()

    def cache_in_between(hit: Hit, site: Site) -> dict[str, str] | None:
        tag = hit.headers.get("If-None-Match")
        if tag is None:
            return None
        return {"ETag": tag} if tag == site.headers["ETag"] else answer

    site = a["/robots.txt"] = Site(V0, {"ETag": '"v0"'}, cache_in_between)
    rounds = [[a.url(f"/v1/{n}")] for n in range(1, 5)]
    run = run_crawl(RoundsSpider, mw_settings(**_SHORT), rounds=rounds, gap=0.6, settled={3: 3})
    a.wait_for("/v1/1").addCallback(lambda _: site.change(V1, ETag='"v1"'))
    result = yield run

    tags = [h.headers.get("If-None-Match") for h in robots_hits(a)]
    assert tags[:3] == [None, '"v0"', None]
    assert '"zzz"' not in tags
    assert [h.path for h in page_hits(a)] == ["/v1/1", "/v1/2", "/v1/3"]  # 2 and 3 by the copy standing in
    assert stat(result, "not_modified_unmatched") == 1
    assert stat(result, "stale_used") == 1
    assert stat(result, "forbidden") == 1


@pytest_twisted.inlineCallbacks
def test_a_copy_with_only_a_last_modified_is_revalidated_by_a_304_without_validators(origins):
    """Issue 40: the copy's date is sent as If-Modified-Since, and a 304 that does not repeat it (a
    304 need not: RFC 9110, 15.4.5) renews the copy; it is not read as unreachable."""
    a = origins()

    def same_date(hit: Hit, site: Site) -> dict[str, str] | None:
        return {} if hit.headers.get("If-Modified-Since") == site.headers["Last-Modified"] else None

    site = a["/robots.txt"] = Site(RULES.encode(), {"Last-Modified": formatdate(time.time() - 3600, usegmt=True)},
                                   same_date)

    result = yield run_crawl(TwoRoundsSpider, mw_settings(**_SHORT), **_rounds(a))

    first, second = robots_hits(a)
    assert "If-Modified-Since" not in first.headers
    assert second.headers["If-Modified-Since"] == site.headers["Last-Modified"]
    assert "If-None-Match" not in second.headers
    assert site.sent == 1
    assert stat(result, "revalidated") == 1 and stat(result, "unreachable") == 0
    assert sorted(h.path for h in page_hits(a)) == ["/public/1", "/public/2"]
    assert stat(result, "forbidden") == 2  # the rules kept after the 304


@pytest_twisted.inlineCallbacks
def test_the_validators_go_to_the_copys_url_never_to_a_redirects_target(origins):
    """Issue 40: the copy came from /robots.txt; the refetch there carries its validators, and when
    /robots.txt now redirects, the request to the target carries none (it is another resource: a 304
    from it would renew a copy it never sent)."""
    a = origins()
    a["/robots.txt"] = Conditional(RULES.encode(), ETAG, DATE)
    moved = Conditional(b"User-agent: *\nDisallow: /public\n", ETAG, DATE)

    def redirect(_: Any) -> None:
        a["/robots.txt"] = Redirect("/moved/robots.txt")
        a["/moved/robots.txt"] = moved

    run = run_crawl(TwoRoundsSpider, mw_settings(**_SHORT), **_rounds(a))
    a.wait_for("/public/1").addCallback(redirect)
    result = yield run

    assert [h.headers.get("If-None-Match") for h in robots_hits(a)] == [None, ETAG]
    (target,) = a.requests_for("/moved/robots.txt")
    assert "If-None-Match" not in target.headers and "If-Modified-Since" not in target.headers
    assert moved.not_modified == 0
    assert stat(result, "revalidated") == 0
    assert sorted(h.path for h in page_hits(a) if not h.path.startswith("/moved")) == ["/private/2", "/public/1"]
