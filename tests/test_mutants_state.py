"""Conditional refetch in the state model (scrapy_rfc9309/core/state.py): a weak entity tag in a
``304 Not Modified`` selects the copy only if it is the copy's tag by weak comparison (RFC 9110,
8.8.3.2), another weak tag never. Kills a mutant the revalidation tests leave alive
(docs/development.md, "Mutation testing")."""

from __future__ import annotations

import pytest

from scrapy_rfc9309.core.http_cache import MAX_VALIDATOR, Validators, http_date, validator
from scrapy_rfc9309.core.state import Access, Cause, FetchOutcome, OriginState, Policy


@pytest.mark.parametrize(("copy", "etag", "selected"), [
    ('"v1"', 'W/"v2"', False),
    ('W/"v1"', 'W/"v2"', False),
    ('W/"v1"', 'W/"v1"', True),
    ('"v1"', 'W/"v1"', True),
])
def test_a_weak_entity_tag_selects_only_its_own_copy(copy: str, etag: str, selected: bool) -> None:
    validators = Validators("https://h/robots.txt", copy, None)
    assert validators.selected_by(etag, None) is selected
    assert validators.selected_by(etag.encode(), None) is selected


def test_an_http_date_padded_past_the_validator_bound_is_not_read() -> None:
    date = "Sun, 06 Nov 1994 08:49:37 GMT"
    assert http_date(date) == 784111777.0
    assert http_date("Sun, 06 Nov 1994 10:49:37 +0200") == 784111777.0  # its offset counts
    assert http_date("Sun, 06 Nov 1994 08:49:37 -0000") == 784111777.0  # no zone: UTC
    assert http_date(date + " " * MAX_VALIDATOR) is None  # longer than a validator may be, padding or not


@pytest.mark.parametrize(("access", "status"), [(Access.UNAVAILABLE, 404), (Access.UNREACHABLE, 503)])
def test_a_failed_fetchs_headers_are_kept_only_when_asked(access: Access, status: int) -> None:
    """``keep_fetched`` (the ledger archives what was fetched): a 404's or 503's header fields kept."""
    headers = ((b"Retry-After", b"120"),)
    outcome = FetchOutcome(access, "https://h/robots.txt", status, headers=headers, cause=Cause.TRANSIENT)
    kept = OriginState.initial(outcome, 1_800_000_000.0, Policy(keep_fetched=True))
    assert kept.outcome is not None and kept.outcome.headers == headers
    dropped = OriginState.initial(outcome, 1_800_000_000.0, Policy())
    assert dropped.outcome is not None and dropped.outcome.headers == ()


def test_an_entity_tag_as_long_as_the_bound_is_kept() -> None:
    tag = '"' + "a" * (MAX_VALIDATOR - 2) + '"'
    assert validator("etag", tag) == tag
    assert validator("etag", '"' + "a" * (MAX_VALIDATOR - 1) + '"') is None


def test_the_first_failed_fetch_is_retried_after_the_first_backoff() -> None:
    policy = Policy()
    now = 1_800_000_000.0
    outcome = FetchOutcome(Access.UNREACHABLE, "https://h/robots.txt", 503, cause=Cause.TRANSIENT)
    first = OriginState.initial(outcome, now, policy)
    assert first.failures == 1 and first.expires_at == now + policy.retry_after(1)
    second = first.apply(outcome, now + 10, policy)
    assert second.failures == 2 and second.expires_at == now + 10 + policy.retry_after(2)
    assert policy.retry_after(1) < policy.retry_after(2)
