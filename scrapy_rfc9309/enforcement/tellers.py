"""The tellers of verdicts: what is told of every verdict and of the responses of judged
requests (the close summary's :class:`Tally`, the ``robotstxt_verdict`` signal, the
ledger), and :class:`Tellers`, the one loop that tells them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from .. import signals as rfc_signals
from ..core.documents import ROBOTS_TXT
from ..core.verdict_kinds import Kind

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from ..core.origins import Origin
    from ..core.verdict import Judgement

__all__ = ["AnyUrlTeller", "SignalTeller", "Tally", "Teller", "Tellers"]


class Teller(Protocol):
    """Something told of every verdict and of every response of a judged request that
    was kept from the spider (registered once with :meth:`Tellers.add`).
    ``explains``: it needs the rule that allowed an allowed request (see
    :func:`~scrapy_rfc9309.core.verdict.judge`). ``passed_responses``: it is told of the
    responses passed to the spider too (without such a teller the middleware has no
    ``process_response``)."""

    explains: bool
    passed_responses: bool

    def judged(self, request: Request, origin: Origin, judgement: Judgement) -> None: ...

    def responded(self, request: Request, status: int, outcome: str) -> None: ...

    async def close(self) -> None:
        """The spider closed: every verdict has been told."""


class AnyUrlTeller(Teller, Protocol):
    """A teller told of the verdicts on requests whose URL is not http(s) too (``origin`` None:
    a ``not_judged`` verdict, reason ``not_http``). The ledger is not one: its records are of
    http(s) requests."""

    def judged(self, request: Request, origin: Origin | None, judgement: Judgement) -> None: ...


class SignalTeller:
    """Sends ``robotstxt_verdict`` for every verdict (registered when the spider opens
    with a handler connected)."""

    explains = True
    passed_responses = False

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    def judged(self, request: Request, origin: Origin | None, judgement: Judgement) -> None:
        self.crawler.signals.send_catch_log(rfc_signals.robotstxt_verdict, request=request, judgement=judgement)

    def responded(self, request: Request, status: int, outcome: str) -> None:
        return None

    async def close(self) -> None:
        return None


class Tally:
    """The verdicts of a crawl, counted per kind, document and reason, for the close
    summary. Allowed verdicts, the most frequent, are counted by :attr:`allowed` (an int
    the actions and the release memo add to), not by a call."""

    explains = False
    passed_responses = False

    def __init__(self) -> None:
        self.allowed = 0
        self.counts: dict[tuple[Kind, str, str], int] = {}
        self.responses: dict[str, int] = {}

    def judged(self, request: Request, origin: Origin | None, judgement: Judgement) -> None:
        if judgement.kind is Kind.ALLOWED:
            self.allowed += 1
            return
        key = (judgement.kind, (judgement.document or ROBOTS_TXT).name, judgement.reason or "")
        self.counts[key] = self.counts.get(key, 0) + 1

    def responded(self, request: Request, status: int, outcome: str) -> None:
        self.responses[outcome] = self.responses.get(outcome, 0) + 1

    async def close(self) -> None:
        return None

    def count(self, kind: Kind, document: str | None = None, reason: str | None = None) -> int:
        """The verdicts of ``kind`` (of ``document``, for ``reason``) counted so far."""
        if kind is Kind.ALLOWED:
            return self.allowed
        return sum(n for (k, d, r), n in self.counts.items()
                   if k is kind and document in (None, d) and reason in (None, r))

    def dropped(self, document: str) -> dict[str, int]:
        """The requests of ``document`` dropped, per reason."""
        return {r: n for (k, d, r), n in self.counts.items() if k is Kind.DROPPED and d == document}


class Tellers:
    """The tellers of one crawl, by what they are told: :meth:`judged` is the one loop that
    tells a verdict (over :attr:`by_kind` of its kind), :meth:`responded` the one that
    tells a response (over :attr:`by_outcome`). The :class:`Tally` is among them, except for
    allowed verdicts (see :class:`Tally`). The tellers are all added before the spider opens (the
    ledger at start-up, the ``robotstxt_verdict`` teller then), before any verdict."""

    __slots__ = ("all", "any_url", "by_kind", "by_outcome", "explain", "of_allowed", "tally")

    def __init__(self, tally: Tally | None = None) -> None:
        self.tally = tally if tally is not None else Tally()
        self.all: tuple[Teller, ...] = (self.tally,)
        #: The tellers of the verdicts on requests whose URL is not http(s).
        self.any_url: tuple[AnyUrlTeller, ...] = (self.tally,)
        self.by_kind: dict[Kind, tuple[Teller, ...]] = {kind: () if kind is Kind.ALLOWED else (self.tally,)
                                                        for kind in Kind}
        #: The tellers of allowed verdicts (``by_kind[ALLOWED]``; the tally counts those apart): none, most crawls.
        self.of_allowed: tuple[Teller, ...] = ()
        #: By whether the response was passed to the spider: its tellers (those kept from it: the tally's too).
        self.by_outcome: dict[bool, tuple[Teller, ...]] = {True: (), False: (self.tally,)}
        #: Whether an allowed request's rule is resolved (a teller needs it).
        self.explain = False

    def add_any_url(self, teller: AnyUrlTeller, *, responses: bool = True) -> None:
        """:meth:`add` a teller that is told of the verdicts on requests whose URL is not http(s) too."""
        self.add(teller, responses=responses)
        self.any_url += (teller,)

    def add(self, teller: Teller, *, responses: bool = True) -> None:
        """Tell ``teller`` of every verdict and, with ``responses``, of every response it asks
        for, from now on (after the tellers added before it)."""
        self.all += (teller,)
        self.by_kind = {kind: (*tellers, teller) for kind, tellers in self.by_kind.items()}
        self.of_allowed = self.by_kind[Kind.ALLOWED]
        if responses:
            passed, kept = self.by_outcome[True], self.by_outcome[False]
            # The tally counts the responses kept from the spider after the others are told.
            self.by_outcome = {True: (*passed, teller) if teller.passed_responses else passed,
                               False: (*kept[:-1], teller, kept[-1])}
        self.explain = self.explain or teller.explains

    @property
    def of_passed(self) -> tuple[Teller, ...]:
        """The tellers of the responses passed to the spider (``ROBOTSTXT_LEDGER_RESPONSES``)."""
        return self.by_outcome[True]

    def judged(self, request: Request, origin: Origin, judgement: Judgement) -> None:
        """Tell the tellers of its kind of ``judgement``."""
        for teller in self.by_kind[judgement.kind]:
            teller.judged(request, origin, judgement)

    def not_http(self, request: Request, judgement: Judgement) -> None:
        """Tell the tellers of every URL of the verdict on a request whose URL is not http(s)."""
        for teller in self.any_url:
            teller.judged(request, None, judgement)

    def responded(self, request: Request, status: int, outcome: str) -> None:
        """Tell the response tellers of a judged request's response: ``"passed"`` to the
        spider (those that ask for it), or why not."""
        for teller in self.by_outcome[outcome == "passed"]:
            teller.responded(request, status, outcome)

    async def close(self) -> None:
        """Close the tellers (the ledger seals its run), once every verdict is told."""
        for teller in self.all:
            await teller.close()
