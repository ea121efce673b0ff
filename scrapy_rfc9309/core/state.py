"""The access-result policy of RFC 9309, 2.3.1 and 2.4: what a robots.txt fetch
outcome means for an origin, how long it holds, and when to try again. The HTTP
caching rules it uses (freshness, validators) are :mod:`.http_cache`'s.

Pure Python: the Scrapy layer feeds it fetch outcomes and the clock.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from .documents import ROBOTS_TXT, Document, Parsed
from .http_cache import Validators, http_date
from .robotstxt import RobotsTxt
from .syntax import DEFAULT_MAX_BYTES
from .tdmrep import TdmRep

__all__ = ["Access", "Cause", "Decision", "FetchOutcome", "Hold", "OriginState", "Policy"]

DAY = 86400.0


class Access(enum.Enum):
    """The access result of the last fetch."""

    PARSED = "parsed"  # 2xx: the rules apply
    UNAVAILABLE = "unavailable"  # 4xx (not 429), too many redirects: everything allowed
    UNREACHABLE = "unreachable"  # 429, 5xx, network error: complete disallow


class Cause(enum.Enum):
    """Why a fetch found the origin unreachable, which says whether waiting for the
    robots.txt can help the requests that need it."""

    TRANSIENT = "transient"  # 429, 5xx, a timeout, a reset, a body cut short: held up to max_wait
    REFUSED = "refused"  # the connection was refused: held up to max_wait_refused
    NO_HOST = "no_host"  # the host name does not resolve: requests dropped at once
    CANNOT_REQUEST = "cannot_request"  # Scrapy cannot make the request: dropped at once, not retried

    @property
    def words(self) -> str:
        return _CAUSE_WORDS[self]


#: The cause, as said of origins ("2 refusing connections").
_CAUSE_WORDS = {
    Cause.TRANSIENT: "unreachable",
    Cause.REFUSED: "refusing connections",
    Cause.NO_HOST: "whose host name does not resolve",
    Cause.CANNOT_REQUEST: "that Scrapy cannot request",
}


class Decision(enum.Enum):
    RULES = "rules"  # judge by the parsed file
    ALLOW_ALL = "allow_all"
    HOLD = "hold"  # complete disallow for now: wait for a successful retry


class Hold(enum.Enum):
    """Whether a document's state holds a request (:meth:`OriginState.hold`)."""

    NO = "no"  # its rules decide, or it allows all
    HOLD = "hold"  # unreachable without a good copy: complete disallow until a fetch succeeds
    GIVE_UP = "give_up"  # held past give_up_at: waiting no longer helps, the request is dropped


@dataclass(frozen=True, slots=True)
class Policy:
    """Lifetimes and limits, in seconds (see the settings page of the documentation)."""

    ttl: float = DAY
    min_ttl: float = 60.0
    max_redirects: int = 5
    retry_delay: float = 5.0
    retry_max_delay: float = 600.0
    keep_cached: float = 30 * DAY
    max_wait: float = 900.0
    max_wait_refused: float = 30.0
    max_size: int = DEFAULT_MAX_BYTES  # bytes of a file that are parsed
    revalidate: bool = True  # refetch a copy held with its validators (a conditional request)
    #: Keep each good copy's bytes as fetched and its response's header lines (the verdict ledger
    #: writes them): without it a robots.txt keeps its records only after its first decision
    #: (see :attr:`.RobotsTxt.body`) and a state keeps no header lines.
    keep_fetched: bool = False

    @property
    def parse_limit(self) -> int:
        """The bytes of a file that are parsed: ``max_size``, never below the
        RFC's 500 KiB (RFC 9309, 2.5)."""
        return max(self.max_size, DEFAULT_MAX_BYTES)

    def retry_after(self, failures: int) -> float:
        """Delay before the next fetch after ``failures`` consecutive failures
        (1, 2, ...): ``retry_delay`` doubling up to ``retry_max_delay``."""
        return min(self.retry_max_delay, self.retry_delay * 2 ** min(max(failures - 1, 0), 40))

    def max_wait_for(self, cause: Cause) -> float:
        """How long requests are held for an origin unreachable for ``cause``
        (counted from its first failed fetch in a row): waiting helps while a server
        answers with errors, little while it refuses connections, not at all when
        its name does not resolve or Scrapy cannot make the request."""
        if cause is Cause.TRANSIENT:
            return self.max_wait
        if cause is Cause.REFUSED:
            return min(self.max_wait_refused, self.max_wait)
        return 0.0

    def lifetime(self, max_age: float | None) -> float:
        """How long a fetched result holds: ``ttl``, or the shorter lifetime the
        response's ``Cache-Control`` gives (see :func:`max_age_of`). ``min_ttl`` is
        a floor for the latter only, so that ``max-age=0`` cannot cause a fetch per
        request, and never above ``ttl``: a short ``ttl`` holds on its own."""
        if max_age is None:
            return self.ttl
        return min(self.ttl, max(self.min_ttl, max_age))


@dataclass(frozen=True, slots=True)
class FetchOutcome:
    """What one fetch of an origin's ``document`` (after its redirects) gave."""

    access: Access
    url: str
    status: int | None = None
    body: bytes = b""
    max_age: float | None = None
    redirects: tuple[str, ...] = ()
    error: str | None = None
    truncated: bool = False
    reason: str = ""
    #: For an unreachable result: why (see :class:`Cause`).
    cause: Cause = Cause.TRANSIENT
    #: The document fetched (robots.txt, tdmrep.json).
    document: Document = ROBOTS_TXT
    #: The final response's header lines as received, ``(name, value)`` bytes pairs, for the
    #: ledger's copy of the version: kept in a state only with ``ROBOTSTXT_LEDGER`` (empty otherwise,
    #: also in the ``robotstxt_fetched`` signal's state), and not stored (a state from a store has none).
    headers: tuple[tuple[bytes, bytes], ...] = field(default=(), compare=False, repr=False)
    #: The copy's validators (see :func:`validator`), for the next fetch's conditional request.
    etag: str | None = None
    last_modified: str | None = None
    #: A ``304 Not Modified`` answered the conditional request: the copy held was renewed (``status``
    #: and the rest are those of the copy's own fetch, so that it stays the same version).
    not_modified: bool = False

    @property
    def detail(self) -> str:
        """Why the result is what it is, in words ("" when nothing to add)."""
        return self.error or self.reason


@dataclass(frozen=True, slots=True)
class OriginState:
    """What is known of one origin's robots.txt (or another :class:`Document`,
    ``outcome.document``). Immutable: ``apply`` returns the next state. ``parsed``
    is the file that applies (:attr:`robots` for a robots.txt, :attr:`tdmrep` for a
    tdmrep.json) and ``good_at`` when it was fetched; while the origin is
    unreachable the last good copy keeps applying, up to ``Policy.keep_cached``.
    ``unreachable_since`` is the time of the first of the ``failures`` in a row
    (``Policy.max_wait`` counts from it). ``outcome`` is kept without its body: the
    good copy's bytes are ``good_body``, read back from ``parsed`` (a robots.txt
    keeps them compressed) when a store persists the state."""

    access: Access
    fetched_at: float
    expires_at: float
    parsed: Parsed | None = None
    good_at: float | None = None
    failures: int = 0
    outcome: FetchOutcome | None = field(default=None, compare=False)
    unreachable_since: float | None = None
    #: The outcome (without its body) of the fetch that gave the good copy ``parsed``: ``outcome``
    #: itself when parsed, kept while the origin is unreachable and the copy stands in, so that the
    #: ledger names the copy's version (None when unknown: a stored record of an earlier version).
    good_fetch: FetchOutcome | None = field(default=None, compare=False)

    @property
    def robots(self) -> RobotsTxt | None:
        """The robots.txt that applies (None for another document)."""
        parsed = self.parsed
        return parsed if isinstance(parsed, RobotsTxt) else None

    @property
    def tdmrep(self) -> TdmRep | None:
        """The tdmrep.json that applies (None for another document)."""
        parsed = self.parsed
        return parsed if isinstance(parsed, TdmRep) else None

    @property
    def good_body(self) -> bytes:
        """The good copy's bytes (up to the parsing limit), ``b""`` without one."""
        return self.parsed.body if self.parsed is not None and self.good_at is not None else b""

    def validators(self, now: float, policy: Policy) -> Validators | None:
        """What a refetch sends to revalidate the good copy (None without a copy that
        may still apply, or without validators). A ``Last-Modified`` later than the
        copy's fetch is no validator (RFC 9110, 8.8.2.1: a server never sends a date
        ahead of its response): ``If-Modified-Since`` with a date in the future would
        make a server that compares dates answer 304 to every later version."""
        good = self.good_fetch
        if not policy.revalidate or good is None or self.parsed is None or self.good_at is None:
            return None
        if now - self.good_at > policy.keep_cached:
            return None
        last_modified = good.last_modified
        if last_modified is not None:
            date = http_date(last_modified)
            if date is None or date > self.good_at:
                last_modified = None
        if good.etag is None and last_modified is None:
            return None
        return Validators(good.url, good.etag, last_modified, self.parsed.size)

    @classmethod
    def initial(cls, outcome: FetchOutcome, now: float, policy: Policy) -> OriginState:
        return cls._from_outcome(None, outcome, now, policy)

    def apply(self, outcome: FetchOutcome, now: float, policy: Policy) -> OriginState:
        return self._from_outcome(self, outcome, now, policy)

    @classmethod
    def _from_outcome(
        cls, previous: OriginState | None, outcome: FetchOutcome, now: float, policy: Policy
    ) -> OriginState:
        if outcome.not_modified:
            renewed = cls._renewed(previous, outcome, now, policy)
            if renewed is not None:
                return renewed
            outcome = replace(outcome, access=Access.UNREACHABLE, not_modified=False,
                              reason="304 Not Modified, but no copy is held")
        if outcome.access is Access.PARSED:
            parsed = outcome.document.parse(outcome.body, policy.parse_limit, outcome.url, policy.keep_fetched)
            fetched = replace(outcome, body=b"", headers=outcome.headers if policy.keep_fetched else ())
            return cls(Access.PARSED, now, now + policy.lifetime(outcome.max_age), parsed, now, 0, fetched, None,
                       fetched)
        if not policy.keep_fetched and outcome.headers:
            outcome = replace(outcome, headers=())
        if outcome.access is Access.UNAVAILABLE:
            return cls(Access.UNAVAILABLE, now, now + policy.lifetime(outcome.max_age), None, None, 0, outcome)
        failures = (previous.failures if previous else 0) + 1
        # A request Scrapy cannot make stays so while the crawl's settings hold: not retried within a lifetime.
        retry_at = now + (policy.ttl if outcome.cause is Cause.CANNOT_REQUEST else policy.retry_after(failures))
        since = now
        if previous is not None and previous.access is Access.UNREACHABLE and previous.unreachable_since is not None:
            since = min(previous.unreachable_since, now)
        good, good_at, good_fetch = None, None, None
        if previous is not None and previous.parsed is not None and previous.good_at is not None:
            if now - previous.good_at <= policy.keep_cached:
                good, good_at, good_fetch = previous.parsed, previous.good_at, previous.good_fetch
        if good_fetch is not None and outcome.status == 304:
            # A 304 that renewed nothing (its validators are not the copy's, RFC 9111, 4.3.4): the copy
            # stands in as for any failed fetch, and the next fetch is unconditional.
            good_fetch = replace(good_fetch, etag=None, last_modified=None)
        return cls(Access.UNREACHABLE, now, retry_at, good, good_at, failures, outcome, since, good_fetch)

    @classmethod
    def _renewed(cls, previous: OriginState | None, outcome: FetchOutcome, now: float,
                 policy: Policy) -> OriginState | None:
        """The state a ``304 Not Modified`` gives: the good copy held, fetched anew
        (RFC 9111, 4.3.4: its freshness from the 304's caching headers, or its own
        lifetime when they give none; its rules kept),
        or None when no copy is held."""
        if previous is None or previous.parsed is None or previous.good_at is None:
            return None
        good = previous.good_fetch
        if good is None:
            return None
        max_age = outcome.max_age if outcome.max_age is not None else good.max_age
        # The copy keeps its own validators: the 304 matched them (fetch.py), and a date it sends is
        # not the copy's (RFC 9110, 13.1.3: If-Modified-Since is the stored Last-Modified).
        fetched = replace(good, max_age=max_age, not_modified=True, headers=())
        return cls(Access.PARSED, now, now + policy.lifetime(max_age), previous.parsed, now, 0, fetched, None,
                   fetched)

    def backoff(self) -> OriginState:
        """The state without its good copy: what is kept of an unreachable origin
        after it leaves the cache, so that its retry time and failure count hold."""
        return OriginState(self.access, self.fetched_at, self.expires_at, None, None, self.failures, self.outcome,
                           self.unreachable_since)

    def expired(self, now: float) -> bool:
        """Whether the state must be fetched again before it is used (for an
        unreachable origin: whether the next retry is due)."""
        return now >= self.expires_at

    def decision(self, now: float, policy: Policy) -> Decision:
        if self.access is Access.PARSED:
            return Decision.RULES
        if self.access is Access.UNAVAILABLE:
            return Decision.ALLOW_ALL
        if self.parsed is not None and self.good_at is not None and now - self.good_at <= policy.keep_cached:
            return Decision.RULES
        return Decision.HOLD

    @property
    def detail(self) -> str:
        """What the last fetch gave, in words (its error or reason, or its status)."""
        outcome = self.outcome
        if outcome is None:
            return "unknown"
        return outcome.detail or f"status {outcome.status}"

    @property
    def cause(self) -> Cause:
        """Why the last fetch found the origin unreachable."""
        return self.outcome.cause if self.outcome is not None else Cause.TRANSIENT

    def give_up_at(self, policy: Policy) -> float:
        """When an unreachable origin's requests stop being held: its first failed
        fetch in a row plus :meth:`Policy.max_wait_for` the last failure's cause."""
        since = self.unreachable_since if self.unreachable_since is not None else self.fetched_at
        return since + policy.max_wait_for(self.cause)

    def waited_too_long(self, now: float, policy: Policy) -> bool:
        """Whether the origin has been unreachable, with no good copy standing in,
        past :meth:`give_up_at`: its requests are dropped instead of held, until a
        fetch succeeds."""
        return self.hold(now, policy) is Hold.GIVE_UP

    def hold(self, now: float, policy: Policy) -> Hold:
        """Whether the state holds its requests: THE definition of "is it held". ``NO``: its
        rules decide (or it allows all); ``HOLD``: unreachable, with no good copy standing in;
        ``GIVE_UP``: that, past :meth:`give_up_at` (waiting no longer helps)."""
        if self.decision(now, policy) is not Decision.HOLD:
            return Hold.NO
        return Hold.GIVE_UP if now >= self.give_up_at(policy) else Hold.HOLD

    def keep_until(self, policy: Policy) -> float:
        """Until when the state is worth keeping: its lifetime, or longer while its
        good copy may still stand in for an unreachable file."""
        if self.good_at is None:
            return self.expires_at
        return max(self.expires_at, self.good_at + policy.keep_cached)

