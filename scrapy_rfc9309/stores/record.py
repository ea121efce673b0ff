"""The stored form of an origin's state, for stores that outlive the process or
are shared by a fleet: the raw robots.txt (or tdmrep.json) with its access result
and timestamps.

Plain data (JSON metadata and raw bytes), never pickled objects: processes that
run different versions of the package read each other's records, and a record is
parsed again where it is loaded. Pure Python.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any

from ..core import limited_json as bounded_json
from ..core.documents import ROBOTS_TXT, Document
from ..core.http_cache import validator
from ..core.state import Access, Cause, FetchOutcome, OriginState, Policy

__all__ = ["CLOCK_TOLERANCE", "FORMAT", "MAX_META_BYTES", "MAX_META_CHARS", "MAX_META_DEPTH", "Record", "RecordError",
           "Unreadable", "dated_ahead", "decode", "encode"]

#: Version of the metadata layout. A reader ignores fields it does not know (the
#: validators ``etag`` and ``lm`` of the copy's fetch are optional ones) and
#: treats a record of another version as missing (the file is fetched again). A
#: record of a document other than robots.txt names it (``doc``): its layout is the
#: same, and it is stored under a key of its own (see :meth:`Document.key`), which
#: readers that know no such document never read.
FORMAT = 1

#: Bounds of a record's metadata as read (it is written by other processes, or anyone with
#: access to the store): its length in characters, and its nesting (the package writes 3
#: levels). Past either, the record is unreadable (:class:`RecordError`): a missing record.
MAX_META_CHARS = 65_536
#: The most bytes those characters take in UTF-8: a store sends no longer metadata.
MAX_META_BYTES = 4 * MAX_META_CHARS
MAX_META_DEPTH = 8

#: Seconds a record's fetch time may lie ahead of the reader's clock (the clocks of a
#: fleet's machines differ a little). A record dated further ahead was written by a
#: process whose clock is ahead: it is never fresh, and any save replaces it.
CLOCK_TOLERANCE = 1.0


class RecordError(ValueError):
    """A stored record cannot be read back (corrupt, or another format)."""


@dataclass(frozen=True)
class Record:
    """One origin's state as a store keeps it.

    ``fetched_at`` orders records (a store keeps the newest, unless it is dated
    ahead of the saver's clock: see :data:`CLOCK_TOLERANCE`); ``expires_at`` is
    when it must be fetched again (for an unreachable origin, the next retry);
    ``keep_until`` is when the store may forget it. ``meta`` is JSON text and
    ``body`` the robots.txt that applies (at most ``ROBOTSTXT_MAX_SIZE`` bytes)."""

    fetched_at: float
    expires_at: float
    keep_until: float
    meta: str
    body: bytes


@dataclass(frozen=True)
class Unreadable(Record):
    """What a store returns in place of a stored record it cannot read back (a field
    of the wrong type, a Redis key of another type): a missing record that says why.
    :func:`decode` raises :class:`RecordError` with the reason, and a save replaces it."""

    reason: str = ""

    @classmethod
    def because(cls, reason: str) -> Unreadable:
        return cls(-math.inf, -math.inf, -math.inf, "", b"", reason)


def dated_ahead(record: Record, now: float) -> float:
    """Seconds ``record``'s fetch time lies ahead of ``now`` beyond
    :data:`CLOCK_TOLERANCE` (0 when it does not): a record written by a process whose
    clock is ahead."""
    ahead = record.fetched_at - now
    return ahead if ahead > CLOCK_TOLERANCE else 0.0


def encode(state: OriginState, policy: Policy) -> Record:
    """The record of ``state``."""
    outcome = state.outcome
    meta: dict[str, Any] = {
        "v": FORMAT,
        "access": state.access.value,
        "fetched_at": state.fetched_at,
        "expires_at": state.expires_at,
        "good_at": state.good_at,
        "failures": state.failures,
        "unreachable_since": state.unreachable_since,
    }
    if state.parsed is not None and state.parsed.url:
        meta["good_url"] = state.parsed.url  # the base of relative Sitemap values
    if outcome is not None:
        if outcome.document is not ROBOTS_TXT:
            meta["doc"] = outcome.document.name
        meta.update(
            url=outcome.url, status=outcome.status, max_age=outcome.max_age, redirects=list(outcome.redirects),
            error=outcome.error, truncated=outcome.truncated, reason=outcome.reason,
        )
        if outcome.cause is not Cause.TRANSIENT:
            meta["cause"] = outcome.cause.value
        _put_validators(meta, outcome)
    good = state.good_fetch
    if state.access is Access.UNREACHABLE and state.good_at is not None and good is not None:
        # The good copy's fetch, which ``outcome`` (the failed one) no longer tells: its version for the ledger,
        # its validators for the next conditional fetch.
        meta["good"] = {"status": good.status, "redirects": list(good.redirects), "truncated": good.truncated,
                        "max_age": good.max_age}
        _put_validators(meta["good"], good)
    body = state.good_body if state.good_at is not None else b""
    return Record(state.fetched_at, state.expires_at, state.keep_until(policy),
                  json.dumps(meta, separators=(",", ":")), body)


def decode(record: Record, policy: Policy, now: float | None = None,
           document: Document = ROBOTS_TXT) -> OriginState:
    """The state a record of ``document`` holds, parsed again, as this process reads it at ``now``
    (the current time by default): never fresh for longer than its
    ``ROBOTSTXT_CACHE_TTL`` from its fetch or from ``now``, its body cut to its
    ``ROBOTSTXT_MAX_SIZE``. A record dated ahead of ``now`` (beyond
    :data:`CLOCK_TOLERANCE`) is taken as fetched ``now`` and expired: its good copy
    may still apply while its origin is fetched again. Raises :class:`RecordError`
    for a record that cannot be read."""
    if isinstance(record, Unreadable):
        raise RecordError(record.reason)
    now = time.time() if now is None else now
    try:
        meta = bounded_json.loads(record.meta, MAX_META_CHARS, MAX_META_DEPTH)
    except bounded_json.BoundExceeded as exc:
        raise RecordError(f"metadata {exc}") from None
    except (ValueError, TypeError) as exc:
        raise RecordError(f"metadata is not JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise RecordError("metadata is not a JSON object")
    if meta.get("v") != FORMAT:
        raise RecordError(f"format {meta.get('v')!r}, this version reads {FORMAT}")
    if meta.get("doc", ROBOTS_TXT.name) != document.name:
        raise RecordError(f"a record of {meta.get('doc')!r}, read as {document.name}")
    try:
        access = Access(meta["access"])
    except (KeyError, ValueError):
        raise RecordError(f"unknown access result {meta.get('access')!r}") from None
    fetched_at = _number(meta, "fetched_at")
    expires_at = _number(meta, "expires_at")
    good_at = _number(meta, "good_at", optional=True)
    failures = meta.get("failures", 0)
    if not isinstance(failures, int) or isinstance(failures, bool) or failures < 0:
        raise RecordError(f"bad failures {failures!r}")
    since = _number(meta, "unreachable_since", optional=True)
    if access is Access.UNREACHABLE and since is None:
        since = fetched_at
    if fetched_at - now > CLOCK_TOLERANCE:
        # Written by a process whose clock is ahead: none of its times can be trusted.
        fetched_at = expires_at = now
        good_at = None if good_at is None else min(good_at, now)
        since = None if since is None else min(since, now)
    elif access is not Access.UNREACHABLE:
        expires_at = min(expires_at, fetched_at + policy.ttl, now + policy.ttl)
    else:
        expires_at = min(expires_at, now + policy.ttl)
    # A store is written by other processes: never keep more than this one would fetch.
    body = bytes(record.body[: policy.parse_limit])
    if access is Access.PARSED and good_at is None:
        raise RecordError("a parsed record without good_at")
    redirects = meta.get("redirects") or []
    if not isinstance(redirects, list) or not all(isinstance(url, str) for url in redirects):
        raise RecordError(f"bad redirects {redirects!r}")
    status = meta.get("status")
    if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
        raise RecordError(f"bad status {status!r}")
    outcome = FetchOutcome(
        access,
        _text(meta, "url") or "",
        status,
        b"",  # the body is the good copy's, kept by robots
        _number(meta, "max_age", optional=True),
        tuple(redirects),
        _text(meta, "error"),
        bool(meta.get("truncated", False)),
        _text(meta, "reason") or "",
        _cause(meta),
        document,
        etag=validator("etag", _validator_text(meta, "etag")),
        last_modified=validator("last-modified", _validator_text(meta, "lm")),
    )
    good_url = _text(meta, "good_url") or outcome.url or None
    parsed = document.parse(body, policy.parse_limit, good_url, policy.keep_fetched) if good_at is not None else None
    good_fetch = None
    if access is Access.PARSED:
        good_fetch = outcome
    elif parsed is not None and good_url is not None:
        good_fetch = _good_fetch(meta.get("good"), good_url, document)
    return OriginState(access, fetched_at, expires_at, parsed, good_at, failures, outcome,
                       since if access is Access.UNREACHABLE else None, good_fetch)


def _good_fetch(good: object, url: str, document: Document) -> FetchOutcome | None:
    """The fetch of an unreachable record's good copy (``good``: its status, redirects,
    truncation and max-age), or None when absent or malformed: it only names the copy's
    version in the ledger, and the copy applies without it."""
    if not isinstance(good, dict):
        return None
    status, redirects, max_age = good.get("status"), good.get("redirects"), good.get("max_age")
    if not isinstance(status, int) or isinstance(status, bool) or not isinstance(redirects, list) \
            or not all(isinstance(hop, str) for hop in redirects) \
            or not (max_age is None or (isinstance(max_age, (int, float)) and math.isfinite(max_age))):
        return None
    return FetchOutcome(Access.PARSED, url, status, b"", None if max_age is None else float(max_age),
                        tuple(redirects), truncated=good.get("truncated") is True, document=document,
                        etag=validator("etag", _validator_text(good, "etag")),
                        last_modified=validator("last-modified", _validator_text(good, "lm")))


def _put_validators(meta: dict[str, Any], fetch: FetchOutcome) -> None:
    """The fetch's validators (``etag``, ``lm``: optional fields, absent from older records)."""
    if fetch.etag is not None:
        meta["etag"] = fetch.etag
    if fetch.last_modified is not None:
        meta["lm"] = fetch.last_modified


def _validator_text(meta: dict[str, Any], name: str) -> str | None:
    """A stored validator, or None when absent or not a string: the copy is then fetched
    again without it (a whole new download, never a wrong rule)."""
    value = meta.get(name)
    return value if isinstance(value, str) else None


def _number(meta: dict[str, Any], name: str, optional: bool = False) -> Any:
    value = meta.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise RecordError(f"bad {name} {value!r}")
    return float(value)


def _cause(meta: dict[str, Any]) -> Cause:
    """The cause of an unreachable result; one this version does not know (a newer
    writer's) is read as transient, which holds the requests as before it existed."""
    try:
        return Cause(meta.get("cause", Cause.TRANSIENT.value))
    except (ValueError, TypeError):
        return Cause.TRANSIENT


def _text(meta: dict[str, Any], name: str) -> str | None:
    value = meta.get(name)
    if value is not None and not isinstance(value, str):
        raise RecordError(f"bad {name} {value!r}")
    return value
