"""The verdict on one request, as a value: what the crawl does with it and what it
rests on (the document states, the deciding rule, the usage preference and TDM rule
that applied, the product token). :func:`judge` makes it from the request's URL and
its origin's document states; the Scrapy layer acts on it in one place
(:mod:`.actions`), and every teller (the exception, the stats, the log, the
signals, the ledger, the close summary, ``scrapy robotstxt URL``) reads it.

Pure Python: no Scrapy, no I/O, the clock passed in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from .documents import ROBOTS_TXT, TDMREP, Document
from .robotstxt import Verdict
from .state import Access, Cause, Hold, OriginState, Policy
from .tdmrep import reserves
from .urls import path_of
from .verdict_kinds import DROP_REASONS, Kind, reason_words

if TYPE_CHECKING:
    from .matcher import Rule
    from .tdmrep import TdmEntry
    from .usage_rules import UsagePreference

__all__ = [
    "DROP_REASONS",
    "Enforced",
    "Judgement",
    "Kind",
    "Ruling",
    "allowed",
    "at_close",
    "holding",
    "invalid_meta",
    "judge",
    "not_judged",
    "unreachable_reason",
]


@dataclass(frozen=True, slots=True)
class Enforced:
    """What a crawl enforces, from its settings: the access policy (lifetimes and
    waits), the usage categories it refuses (``ROBOTSTXT_USAGE_DENY``), and whether
    it consults tdmrep.json (``ROBOTSTXT_TDMREP``)."""

    policy: Policy
    usage_deny: tuple[str, ...] = ()
    tdmrep: bool = False
    crawl_delay: bool = False
    #: ``ROBOTSTXT_PURPOSE_TOKENS``: further product tokens whose groups must also allow a request.
    purpose_tokens: tuple[str, ...] = ()

    @property
    def tdm_deny(self) -> tuple[str, ...]:
        """The categories of ``usage_deny`` that a TDM reservation denies: with none,
        reservations are read and told, not enforced, and an unreachable tdmrep.json
        holds nothing."""
        return tuple(category for category in self.usage_deny if reserves(category))


class Judgement(NamedTuple):
    """The verdict on one request.

    ``robots`` and ``tdm`` are the document states it rests on (None where none was
    consulted); ``rule`` the robots.txt rule that decided (None: none matched, or not
    resolved for an allowed request when nobody asked, see :func:`judge`);
    ``usage`` the robots.txt usage preference that applied; ``category`` the
    enforced category it denies (usage-denied, TDM-reserved); ``tdm_entry`` the
    tdmrep.json rule that applied; ``document`` the document a held, dropped or
    requeued request waited for; ``reason`` why it was dropped (a key of
    :data:`DROP_REASONS`) or not judged; ``detail`` the document's last fetch, in
    words, for those."""

    kind: Kind
    url: str
    token: str
    robots: OriginState | None = None
    rule: Rule | None = None
    usage: UsagePreference | None = None
    tdm: OriginState | None = None
    tdm_entry: TdmEntry | None = None
    category: str | None = None
    document: Document | None = None
    reason: str | None = None
    detail: str = ""
    #: The group that applied (its product token, ``"*"``, or ``""``) and the path
    #: matched, for a forbidden request (see :attr:`verdict`).
    group: str = ""
    path: str = ""
    #: The Crawl-delay of the agent's group, in seconds (with ``ROBOTSTXT_CRAWL_DELAY``).
    crawl_delay: float | None = None
    #: Whether the tdmrep.json rule is known (``tdm_entry`` says which applies, None for
    #: none): not while the file is unreachable without a copy and reservations are not enforced.
    tdm_known: bool = False
    #: For a request dropped after it was held: how long its document was unreachable, in seconds.
    waited: float = 0.0
    #: For a request a purpose token's group disallows: that token (``rule`` and ``group`` are its).
    purpose: str | None = None

    @property
    def verdict(self) -> Verdict | None:
        """The robots.txt verdict of a forbidden request (its rule, group and path)."""
        if self.kind is not Kind.FORBIDDEN:
            return None
        return Verdict(False, self.rule, self.group, self.path)

    def __str__(self) -> str:
        """The verdict in words, as ``scrapy robotstxt URL`` prints it."""
        return f"{self.kind.words} ({self.why})"

    @property
    def why(self) -> str:
        """What decided, in words."""
        kind = self.kind
        if kind is Kind.NOT_JUDGED:
            return self.reason or "not judged"
        if kind in (Kind.DROPPED, Kind.HELD, Kind.REQUEUED):
            document = (self.document or ROBOTS_TXT).name
            reason = reason_words(self.reason)
            if kind is Kind.HELD:
                return f"{document} unreachable ({self.detail}): complete disallow until a fetch succeeds"
            if kind is Kind.REQUEUED:
                if not self.detail:
                    return f"{document} not known when the spider closed: handed back to the scheduler"
                return f"{document} unreachable ({self.detail}), {reason}: handed back to the scheduler"
            return f"{document}: {reason}" + (f" ({self.detail})" if self.detail else "")
        if kind is Kind.USAGE_DENIED:
            return f"{self.usage} denies {self.category}"
        if kind is Kind.TDM_RESERVED:
            return f"{self.tdm_entry}; ROBOTSTXT_USAGE_DENY denies {self.category}"
        if self.robots is not None and self.robots.robots is None:
            return f"robots.txt {self.robots.access.value}: everything allowed"
        if self.purpose is not None:
            return f"{self.rule}, in the group of purpose token {self.purpose!r}"
        if self.rule is not None:
            return str(self.rule)
        if path_of(self.url) == "/robots.txt":
            return "/robots.txt is always allowed"
        return "no rule matched"


#: The fields of an allowed verdict after its rule, as :class:`Judgement` defaults them.
_ALLOWED_TAIL = tuple(Judgement._field_defaults[name] for name in Judgement._fields[5:])
_new_tuple = tuple.__new__
_ALLOWED = Kind.ALLOWED


def allowed(url: str, token: str, robots: OriginState, rule: Rule | None) -> Judgement:
    """``Judgement(Kind.ALLOWED, url, token, robots, rule)``, the most frequent verdict,
    built without the generated constructor's Python call (what :meth:`Ruling.allowed` and the
    release memo tell for every allowed request)."""
    return _new_tuple(Judgement, (_ALLOWED, url, token, robots, rule) + _ALLOWED_TAIL)  # noqa: RUF005 (faster)


def unreachable_reason(cause: Cause) -> str:
    """The drop reason of a request whose document is unreachable for ``cause``,
    once waiting cannot help it."""
    if cause is Cause.NO_HOST:
        return "no_host"
    if cause is Cause.CANNOT_REQUEST:
        return "cannot_request"
    return "max_wait"


def holding(url: str, token: str, state: OriginState, document: Document, now: float, policy: Policy,
             robots: OriginState | None) -> Judgement | None:
    """HELD or DROPPED for a request whose ``document`` is unreachable without a good
    copy standing in (DROPPED once waiting cannot help: :meth:`OriginState.waited_too_long`);
    None when the state decides by its rules (or allows all). ``robots``: the
    robots.txt state the verdict rests on, when ``document`` is another one."""
    hold = state.hold(now, policy)
    if hold is Hold.NO:
        return None
    if hold is Hold.GIVE_UP:
        return Judgement(Kind.DROPPED, url, token, robots, document=document,
                         reason=unreachable_reason(state.cause), detail=state.detail,
                         tdm=state if document is TDMREP else None, waited=policy.max_wait_for(state.cause))
    return Judgement(Kind.HELD, url, token, robots, document=document, detail=state.detail,
                     tdm=state if document is TDMREP else None)


class Ruling:
    """The verdicts of one origin's documents for one agent: what depends on the states
    and the agent is worked out once, here, and per URL only the rest.
    ``judge(url, ...) == Ruling(...).judge(url, now)``: :func:`judge` is made of it.

    ``passes`` is THE allow test of a URL: its agent's group allows it and so does the
    group of each purpose token (``purposes``, else ``enforced.purpose_tokens``; see
    :meth:`~scrapy_rfc9309.RobotsTxt.purpose_groups`). ``rule_of`` names the rule that
    allowed an allowed URL, with ``explain`` (None: not asked, or the group has no Allow
    rule and an allowed URL none to name). ``plain``: an allowed verdict carries nothing
    but its kind (the state cannot hold, no tdmrep.json is consulted, the group has no
    usage record, no Crawl-delay applies), so that :meth:`judge` is :meth:`allowed` exactly
    where ``passes`` says True. ``expires_at``: when the states it rests on expire."""

    __slots__ = ("_allows", "_groups", "agent", "delay", "enforced", "expires_at", "explain", "parsed", "passes",
                 "plain", "purposes", "robots", "rule_of", "tdm", "token")

    def __init__(self, robots: OriginState, tdm: OriginState | None, agent: str | bytes, token: str,
                 enforced: Enforced, purposes: tuple[str, ...] | None = None, explain: bool = False) -> None:
        self.robots = robots
        self.tdm = tdm
        self.agent = agent
        self.token = token
        self.enforced = enforced
        self.purposes = enforced.purpose_tokens if purposes is None else purposes
        self.explain = explain
        parsed = self.parsed = robots.robots
        self.rule_of: Callable[[str], Rule | None] | None = None
        self.delay: float | None = None
        self._groups: tuple[tuple[str, Any], ...] = ()
        if parsed is None:
            self._allows: Callable[[str], bool] = _everything
            self.passes: Callable[[str], bool] = _everything
            usage = False
        else:
            self._allows = self.passes = parsed.allower(agent)
            if self.purposes:
                self._groups = parsed.purpose_groups(agent, self.purposes)
            if self._groups:
                tests = (self._allows, *(matcher.allowed for _purpose, matcher in self._groups))
                self.passes = lambda url: all(allows(url) for allows in tests)
            if explain and any(rule.allow for rule in parsed.rules(agent)):
                self.rule_of = parsed.decider(agent)
            if enforced.crawl_delay:
                self.delay = parsed.crawl_delay(agent)
            usage = parsed.has_usage(agent)
        self.plain = (robots.access is not Access.UNREACHABLE and not enforced.tdmrep and not usage
                      and self.delay is None)
        self.expires_at = robots.expires_at if tdm is None else min(robots.expires_at, tdm.expires_at)

    def allowed(self, url: str) -> Judgement:
        """The bare allowed verdict on ``url`` (for a plain ruling, one that ``passes``)."""
        rule_of = self.rule_of
        return allowed(url, self.token, self.robots, None if rule_of is None else rule_of(url))

    def judge(self, url: str, now: float) -> Judgement:
        """The verdict on a request for ``url`` at ``now`` (see :func:`judge`)."""
        if self.plain:
            return self.allowed(url) if self.passes(url) else self._forbidden(url)
        return self._judge(url, now)

    def _forbidden(self, url: str) -> Judgement:
        """The verdict on a URL that ``passes`` refuses: the first group that disallows it names it."""
        parsed = self.parsed
        assert parsed is not None  # a state without rules refuses nothing
        purpose = None
        if self._allows(url):
            purpose = next(purpose for purpose, matcher in self._groups if not matcher.allowed(url))
        verdict = parsed.verdict(url, self.agent if purpose is None else purpose)
        return Judgement(Kind.FORBIDDEN, url, self.token, self.robots, verdict.rule, group=verdict.token,
                         path=verdict.path, purpose=purpose)

    def _judge(self, url: str, now: float) -> Judgement:
        robots, token, enforced = self.robots, self.token, self.enforced
        policy = enforced.policy
        if robots.access is Access.UNREACHABLE:  # only then can the robots.txt hold the request
            held = holding(url, token, robots, ROBOTS_TXT, now, policy, robots)
            if held is not None:
                return held
        parsed = self.parsed
        rule = None
        usage = None
        delay = self.delay
        if parsed is not None:
            if not self.passes(url):
                return self._forbidden(url)
            if self.rule_of is not None:
                rule = self.rule_of(url)
            if parsed.has_usage(self.agent):
                usage = parsed.usage(url, self.agent) or None
                if usage is not None:
                    for category in enforced.usage_deny:
                        if usage.denies(category):
                            return Judgement(Kind.USAGE_DENIED, url, token, robots, rule, usage, category=category)
        tdm = self.tdm
        if not enforced.tdmrep or tdm is None:
            return Judgement(Kind.ALLOWED, url, token, robots, rule, usage, crawl_delay=delay)
        tdm_deny = enforced.tdm_deny
        if tdm_deny:
            held = holding(url, token, tdm, TDMREP, now, policy, robots)
            if held is not None:
                return held
        elif tdm.hold(now, policy) is not Hold.NO:  # not enforced: nothing known, the request goes on
            return Judgement(Kind.ALLOWED, url, token, robots, rule, usage, tdm, crawl_delay=delay)
        tdmrep = tdm.tdmrep
        entry = None if tdmrep is None else tdmrep.entry_for(url)
        if entry is not None and entry.reserved and tdm_deny:
            return Judgement(Kind.TDM_RESERVED, url, token, robots, rule, usage, tdm, entry,
                             category=", ".join(tdm_deny), tdm_known=True)
        return Judgement(Kind.ALLOWED, url, token, robots, rule, usage, tdm, entry, crawl_delay=delay,
                         tdm_known=True)


def _everything(url: str) -> bool:
    """The allow test of a state without rules: every URL allowed."""
    return True


def judge(url: str, agent: str | bytes, token: str, robots: OriginState, now: float, enforced: Enforced,
          tdm: OriginState | None = None, *, explain: bool = False,
          purposes: tuple[str, ...] | None = None) -> Judgement:
    """The verdict on a request for ``url`` by ``agent`` (whose product token is
    ``token``), from its origin's robots.txt state and, with ``enforced.tdmrep``,
    its tdmrep.json state ``tdm`` (None: not known yet; the robots.txt is judged
    alone, and a request it allows is not final). The :class:`Ruling` of these states
    and agent, asked about one URL.

    An unreachable document without a good copy holds the request (robots.txt
    always; tdmrep.json when reservations are enforced), or drops it once waiting
    cannot help. ``explain``: resolve the rule that allowed an allowed request too
    (it costs a second look-up; the ledger and the command ask for it); a refused
    request always names its rule. A request its own token's group allows must be
    allowed by the group of each purpose token too (``purposes``, else
    ``enforced.purpose_tokens``): the first that disallows it decides (``purpose``)."""
    return Ruling(robots, tdm, agent, token, enforced, purposes, explain).judge(url, now)


def not_judged(url: str, token: str, reason: str = "dont_obey_robotstxt") -> Judgement:
    """The verdict on a request that is not judged: it asks not to be (``dont_obey_robotstxt``),
    or its URL is not http(s) (``not_http``: no robots.txt applies to it)."""
    return Judgement(Kind.NOT_JUDGED, url, token, reason=reason)


def invalid_meta(url: str, token: str, detail: str) -> Judgement:
    """The verdict on a request whose ``robotstxt_user_agent`` meta key is not a string."""
    return Judgement(Kind.DROPPED, url, token, reason="invalid_meta", detail=detail)


def at_close(url: str, token: str, document: Document, persists: bool, reason: str = "closing",
             state: OriginState | None = None, now: float = 0.0) -> Judgement:
    """The verdict on a request still waiting for ``document`` when the spider closes:
    handed back to a scheduler that keeps its queue (``persists``: ``JOBDIR``, a
    persistent scrapy-redis queue), which a resumed crawl judges then; otherwise dropped.
    ``reason``: ``"closing"``, or ``"idle"`` when held requests were all that was left.
    ``state``: the document's state then, if any: an unreachable one gives the verdict
    its last fetch (``detail``) and how long it was unreachable at ``now`` (``waited``)."""
    kind = Kind.REQUEUED if persists else Kind.DROPPED
    if state is None or state.access is not Access.UNREACHABLE:
        return Judgement(kind, url, token, document=document, reason=reason)
    waited = max(0.0, now - (state.unreachable_since or state.fetched_at))
    robots, tdm = (None, state) if document is TDMREP else (state, None)
    return Judgement(kind, url, token, robots, tdm=tdm, document=document, reason=reason, detail=state.detail,
                     waited=waited)
