"""The stored form of an origin's state (``scrapy_rfc9309.record``): plain JSON and
raw bytes that read back into the same state, and never into a wrong one."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from scrapy_rfc9309.core.state import Access, Cause, Decision, FetchOutcome, OriginState, Policy
from scrapy_rfc9309.core.syntax import DEFAULT_MAX_BYTES
from scrapy_rfc9309.stores.record import (
    CLOCK_TOLERANCE,
    FORMAT,
    MAX_META_CHARS,
    Record,
    RecordError,
    Unreadable,
    dated_ahead,
    decode,
    encode,
)

POLICY = Policy()
BODY = b"User-agent: *\nDisallow: /private\nCrawl-delay: 2\nSitemap: https://h/s.xml\n\xff\xfe odd bytes\n"
T0 = 1_800_000_000.0


def parsed(body: bytes = BODY, at: float = T0, max_age: float | None = None) -> OriginState:
    outcome = FetchOutcome(Access.PARSED, "https://h/robots.txt", 200, body, max_age,
                           ("https://h/robots.txt?r",), truncated=False)
    return OriginState.initial(outcome, at, POLICY)


def unreachable(previous: OriginState | None, at: float) -> OriginState:
    outcome = FetchOutcome(Access.UNREACHABLE, "https://h/robots.txt", 503, reason="status 503")
    return previous.apply(outcome, at, POLICY) if previous else OriginState.initial(outcome, at, POLICY)


def roundtrip(state: OriginState, policy: Policy = POLICY) -> OriginState:
    """``state`` stored, and read back right after its fetch."""
    return decode(encode(state, policy), policy, state.fetched_at)


def test_a_parsed_state_reads_back_with_the_same_rules_and_timestamps() -> None:
    state = parsed(max_age=3600)
    back = roundtrip(state)
    assert (back.access, back.fetched_at, back.expires_at, back.good_at, back.failures) == (
        Access.PARSED, T0, T0 + 3600, T0, 0)
    assert back.robots is not None and back.robots is not state.robots
    assert back.good_body == BODY  # as fetched until the first decision
    assert not back.robots.allowed("https://h/private/x", "bot")
    assert back.robots.allowed("https://h/public", "bot")
    assert back.robots.crawl_delay("bot") == 2.0
    assert back.robots.sitemaps == ["https://h/s.xml"]
    assert back.outcome == state.outcome  # status, URL, redirects, max-age, body
    # Then the file's records only (without the ledger), which read back as the same rules.
    assert back.good_body == b"useragent:*\ndisalow:/private\ncrawldelay:2\nsitemap:https://h/s.xml"
    again = roundtrip(back)
    assert again.robots is not None and not again.robots.allowed("https://h/private/x", "bot")
    assert again.robots.crawl_delay("bot") == 2.0 and again.robots.sitemaps == ["https://h/s.xml"]


def test_the_record_is_json_and_raw_bytes_not_a_pickle() -> None:
    record = encode(parsed(), POLICY)
    meta = json.loads(record.meta)
    assert meta["v"] == FORMAT and meta["access"] == "parsed" and meta["status"] == 200
    assert record.body == BODY
    assert (record.fetched_at, record.expires_at) == (T0, T0 + POLICY.ttl)


def test_an_unreachable_state_keeps_its_good_copy_and_failure_count() -> None:
    state = unreachable(unreachable(parsed(), T0 + 90_000), T0 + 90_010)
    assert state.failures == 2 and state.robots is not None
    record = encode(state, POLICY)
    assert record.body == BODY  # the good copy, not the 503 page
    assert record.keep_until == T0 + POLICY.keep_cached  # kept as long as the good copy may apply
    back = decode(record, POLICY, T0 + 90_010)
    assert (back.access, back.failures, back.good_at, back.expires_at) == (
        Access.UNREACHABLE, 2, T0, state.expires_at)
    assert back.decision(T0 + 90_011, POLICY) is Decision.RULES
    assert back.robots is not None and not back.robots.allowed("https://h/private/", "bot")
    # Past the keep-cached limit the good copy no longer applies, read back or not.
    assert back.decision(T0 + POLICY.keep_cached + 1, POLICY) is Decision.HOLD


def test_an_unreachable_state_keeps_the_fetch_of_its_good_copy_for_the_ledger() -> None:
    good = parsed(max_age=3600)
    state = unreachable(good, T0 + 10)
    assert state.good_fetch is good.outcome and good.good_fetch is good.outcome
    meta = json.loads(encode(state, POLICY).meta)
    assert meta["good"] == {"status": 200, "redirects": ["https://h/robots.txt?r"], "truncated": False,
                            "max_age": 3600}
    back = roundtrip(state)
    assert back.good_fetch is not None and back.outcome is not None and back.outcome.status == 503
    assert (back.good_fetch.access, back.good_fetch.url, back.good_fetch.status, back.good_fetch.redirects,
            back.good_fetch.max_age) == (Access.PARSED, "https://h/robots.txt", 200, ("https://h/robots.txt?r",), 3600)
    assert roundtrip(good).good_fetch == good.outcome
    # A record without it (an earlier writer's), or with a malformed one, keeps its good copy: the fetch is unknown.
    for value in (None, "x", {"status": "200", "redirects": []}, {"status": 200, "redirects": [1]}):
        meta["good"] = value
        record = replace(encode(state, POLICY), meta=json.dumps(meta))
        back = decode(record, POLICY, state.fetched_at)
        assert back.robots is not None and back.good_fetch is None


def test_an_unreachable_state_without_a_good_copy_holds() -> None:
    back = roundtrip(unreachable(None, T0))
    assert back.robots is None and back.good_at is None
    assert back.decision(T0 + 1, POLICY) is Decision.HOLD
    assert back.outcome is not None and back.outcome.status == 503


def test_an_unavailable_state_allows_everything() -> None:
    outcome = FetchOutcome(Access.UNAVAILABLE, "https://h/robots.txt", 404, max_age=None, reason="status 404")
    back = roundtrip(OriginState.initial(outcome, T0, POLICY))
    assert back.decision(T0 + 1, POLICY) is Decision.ALLOW_ALL
    assert encode(back, POLICY).body == b""


def test_a_reader_with_a_shorter_lifetime_shortens_a_stored_one() -> None:
    record = encode(parsed(), POLICY)  # 24 h
    short = Policy(ttl=600, min_ttl=60)
    assert decode(record, short, T0).expires_at == T0 + 600
    assert decode(record, short, T0 + 300).expires_at == T0 + 600  # from its fetch, not from the reading


def test_a_reader_whose_clock_is_a_little_behind_trusts_a_record_for_its_lifetime_from_now_at_most() -> None:
    record = encode(parsed(), POLICY)
    short = Policy(ttl=600, min_ttl=60)
    behind = T0 - CLOCK_TOLERANCE / 2  # within the tolerance: not dated ahead
    back = decode(record, short, behind)
    assert back.expires_at == behind + 600 and back.fetched_at == T0
    assert dated_ahead(record, behind) == 0


def test_a_record_dated_ahead_of_the_reader_is_expired_and_keeps_its_good_copy() -> None:
    month = 30 * 86400.0
    record = encode(parsed(at=T0 + month), POLICY)  # written by a process whose clock runs a month ahead
    assert dated_ahead(record, T0) == month
    back = decode(record, POLICY, T0)
    assert (back.fetched_at, back.expires_at, back.good_at) == (T0, T0, T0)  # to be fetched again now
    assert back.robots is not None and not back.robots.allowed("https://h/private/x", "bot")
    failing = unreachable(unreachable(parsed(at=T0 + month), T0 + month + 10), T0 + month + 20)
    back = decode(encode(failing, POLICY), POLICY, T0)
    assert (back.access, back.fetched_at, back.expires_at, back.unreachable_since, back.good_at) == (
        Access.UNREACHABLE, T0, T0, T0, T0)
    assert back.failures == 2


def test_an_unreachable_record_is_retried_within_the_readers_lifetime_from_now() -> None:
    state = unreachable(parsed(), T0 + 90_000)
    short = Policy(ttl=2, min_ttl=1)
    assert state.expires_at > T0 + 90_002
    assert decode(encode(state, POLICY), short, T0 + 90_000).expires_at == T0 + 90_002


def test_a_record_a_store_could_not_read_is_an_error_that_says_why() -> None:
    with pytest.raises(RecordError, match="a Redis string"):
        decode(Unreadable.because("the key is a Redis string, not a hash"), POLICY, T0)


def test_a_file_larger_than_500_kib_is_parsed_whole_when_the_limit_allows() -> None:
    filler = b"# " + b"x" * 1000 + b"\n"
    body = b"User-agent: *\n" + filler * 600 + b"Disallow: /late\n"  # the rule sits past 600 KB
    assert len(body) > DEFAULT_MAX_BYTES
    big = Policy(max_size=1_000_000)
    state = OriginState.initial(FetchOutcome(Access.PARSED, "https://h/robots.txt", 200, body), T0, big)
    assert state.robots is not None and not state.robots.allowed("https://h/late", "bot")
    assert not roundtrip(state, big).robots.allowed("https://h/late", "bot")  # type: ignore[union-attr]
    small = OriginState.initial(FetchOutcome(Access.PARSED, "https://h/robots.txt", 200, body), T0, POLICY)
    assert small.robots is not None and small.robots.allowed("https://h/late", "bot")


def test_fields_of_a_newer_writer_are_ignored() -> None:
    record = encode(parsed(), POLICY)
    meta = json.loads(record.meta)
    meta["something_new"] = {"x": 1}
    back = decode(replace(record, meta=json.dumps(meta)), POLICY, T0)
    assert back.robots is not None and not back.robots.allowed("https://h/private", "bot")


@pytest.mark.parametrize(
    "meta",
    [
        "not json",
        "[1, 2]",
        json.dumps({"v": FORMAT + 1, "access": "parsed", "fetched_at": T0, "expires_at": T0, "good_at": T0}),
        json.dumps({"v": FORMAT, "access": "sideways", "fetched_at": T0, "expires_at": T0}),
        json.dumps({"v": FORMAT, "access": "parsed", "fetched_at": "yesterday", "expires_at": T0, "good_at": T0}),
        json.dumps({"v": FORMAT, "access": "parsed", "fetched_at": T0, "expires_at": T0}),  # parsed, no good_at
        json.dumps({"v": FORMAT, "access": "unreachable", "fetched_at": T0, "expires_at": T0, "failures": -1}),
        json.dumps({"v": FORMAT, "access": "unavailable", "fetched_at": T0, "expires_at": T0, "redirects": "x"}),
        json.dumps({"v": FORMAT, "access": "unavailable", "fetched_at": T0, "expires_at": T0, "status": "200"}),
        '{"v": 1, "access": "parsed", "fetched_at": NaN, "expires_at": 1, "good_at": 1}',
    ],
)
def test_an_unreadable_record_is_an_error_not_a_wrong_state(meta: str) -> None:
    with pytest.raises(RecordError):
        decode(Record(T0, T0 + 10, T0 + 10, meta, BODY), POLICY, T0)


def test_a_stored_body_longer_than_the_size_limit_is_cut_to_it() -> None:
    huge = b"User-agent: *\nDisallow: /early\n" + b"#" * (3 * DEFAULT_MAX_BYTES) + b"\nDisallow: /late\n"
    record = replace(encode(parsed(), POLICY), body=huge)
    back = decode(record, POLICY, T0)
    # Kept as the parser reads it: the first 500 KiB, its one long line cut short.
    assert len(back.good_body) <= DEFAULT_MAX_BYTES and back.outcome is not None
    assert back.outcome.body == b""  # the state keeps the body once, in its parsed copy
    assert back.robots is not None and not back.robots.allowed("https://h/early", "bot")
    assert back.robots.allowed("https://h/late", "bot")


def test_relative_sitemaps_read_back_joined_with_the_url_of_the_good_copy() -> None:
    body = b"User-agent: *\nDisallow: /private\nSitemap: /sitemap.xml\nSitemap: news.xml\n"
    # The good copy came from https://h/robots.txt; a later fetch of http://h/robots.txt fails.
    good = parsed(body)
    assert good.robots is not None and good.robots.url == "https://h/robots.txt"
    sitemaps = ["https://h/sitemap.xml", "https://h/news.xml"]
    assert good.robots.sitemaps == sitemaps
    failed = good.apply(FetchOutcome(Access.UNREACHABLE, "http://h/robots.txt", 503, reason="status 503"),
                        T0 + 90_000, POLICY)
    for state in (good, failed):
        back = roundtrip(state)
        assert back.robots is not None
        assert back.robots.url == "https://h/robots.txt"
        assert back.robots.sitemaps == sitemaps


def test_a_record_without_good_url_joins_with_the_outcome_url() -> None:
    record = encode(parsed(b"Sitemap: /s.xml\n"), POLICY)
    meta = json.loads(record.meta)
    del meta["good_url"]  # as written by a version that did not store it
    back = decode(replace(record, meta=json.dumps(meta)), POLICY, T0)
    assert back.robots is not None and back.robots.sitemaps == ["https://h/s.xml"]


@pytest.mark.parametrize("cause", list(Cause))
def test_the_cause_of_an_unreachable_state_reads_back_with_its_give_up_time(cause: Cause) -> None:
    outcome = FetchOutcome(Access.UNREACHABLE, "https://h/robots.txt", error="boom", cause=cause)
    state = OriginState.initial(outcome, T0, POLICY)
    back = roundtrip(state)
    assert back.cause is cause
    assert back.give_up_at(POLICY) == state.give_up_at(POLICY) == T0 + POLICY.max_wait_for(cause)
    assert back.waited_too_long(T0, POLICY) is (cause in (Cause.NO_HOST, Cause.CANNOT_REQUEST))


def test_a_cause_of_a_newer_writer_reads_as_transient() -> None:
    record = encode(unreachable(None, T0), POLICY)
    meta = json.loads(record.meta)
    for unknown in ("melted", ["x"], 7):
        meta["cause"] = unknown
        back = decode(replace(record, meta=json.dumps(meta)), POLICY, T0)
        assert back.cause is Cause.TRANSIENT and not back.waited_too_long(T0 + 1, POLICY)


def test_how_long_each_cause_is_held() -> None:
    policy = Policy(max_wait=900, max_wait_refused=30)
    assert [policy.max_wait_for(cause) for cause in Cause] == [900, 30, 0, 0]
    assert Policy(max_wait=10, max_wait_refused=30).max_wait_for(Cause.REFUSED) == 10
    # A request Scrapy cannot make is not retried within a lifetime; the others on the backoff.
    cannot = OriginState.initial(FetchOutcome(Access.UNREACHABLE, "u", cause=Cause.CANNOT_REQUEST), T0, policy)
    no_host = OriginState.initial(FetchOutcome(Access.UNREACHABLE, "u", cause=Cause.NO_HOST), T0, policy)
    assert cannot.expires_at == T0 + policy.ttl
    assert no_host.expires_at == T0 + policy.retry_delay


@pytest.mark.parametrize("nested", ["[" * 100_000, '{"a":' * 100_000, "[" * 9 + "]" * 9])
def test_metadata_nested_too_deep_is_an_unreadable_record_not_a_recursion_error(nested: str) -> None:
    record = encode(parsed(), POLICY)
    meta = record.meta[:-1] + ',"x":' + nested + "}"  # past MAX_META_DEPTH (8): 10 levels, or 100,000
    if len(meta) > MAX_META_CHARS:
        meta = record.meta[:-1] + ',"x":' + nested[: MAX_META_CHARS // 2] + "}"
    with pytest.raises(RecordError, match="nested deeper than 8 levels"):
        decode(replace(record, meta=meta), POLICY, T0)


def test_metadata_longer_than_its_bound_is_an_unreadable_record() -> None:
    record = encode(parsed(), POLICY)
    padded = replace(record, meta=record.meta[:-1] + ',"pad":"' + "x" * MAX_META_CHARS + '"}')
    with pytest.raises(RecordError, match=f"metadata longer than {MAX_META_CHARS}"):
        decode(padded, POLICY, T0)
    # Within both bounds, a member of a later writer is ignored, brackets in strings included.
    kept = replace(record, meta=record.meta[:-1] + ',"later":{"a":[[["' + "[" * 1000 + '"]]]}}')
    assert decode(kept, POLICY, T0).robots is not None
