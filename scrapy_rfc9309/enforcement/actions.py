"""Acting on verdicts: the one place where a :class:`~.judgement.Judgement` becomes
the request's meta keys, its stat, its log line, the signals, the tellers' records
(the ledger, the close summary) and, for a refused request, the ``IgnoreRequest``
subclass that carries it."""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from scrapy import signals

from .. import signals as rfc_signals
from ..core.caches import BoundedDict
from ..core.documents import DOCUMENTS, ROBOTS_TXT, Document
from ..core.verdict import Enforced, Judgement, Kind, allowed, allowing, explaining
from ..core.verdict_kinds import DROPPED_SUMMARY, ROWS, log_words, reason_words, row_of
from ..exceptions import (
    RobotsTxtForbidden,
    RobotsTxtMetaError,
    RobotsTxtTdmReserved,
    RobotsTxtUnreachable,
    RobotsTxtUsageDenied,
)
from ..meta import AGENT_META, TDMREP_META, USAGE_META
from ..runtime import compat as _compat
from ..runtime.reporting import Reporting
from .crawl_delay import CrawlDelay
from .request_agents import UserAgents

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from ..config import Config
    from ..core.matcher import Rule
    from ..core.origins import Origin
    from ..core.state import OriginState

__all__ = ["Enforcement", "Summarized", "Tally", "Teller"]

logger = logging.getLogger(__name__)

class Teller(Protocol):
    """Something told of every verdict and of every response of a judged request that
    was kept from the spider (registered once with :meth:`Enforcement.add`).
    ``explains``: it needs the rule that allowed an allowed request (see
    :func:`~.judgement.judge`). ``passed_responses``: it is told of the responses
    passed to the spider too (without such a teller the middleware has no
    ``process_response``)."""

    explains: bool
    passed_responses: bool

    def judged(self, request: Request, origin: Origin, judgement: Judgement) -> None: ...

    def responded(self, request: Request, status: int, outcome: str) -> None: ...

    async def close(self) -> None:
        """The spider closed: every verdict has been told."""


class Summarized(Protocol):
    """What the close summary reads of a document's requests (its :class:`.Waiting`): the
    document, and the line of its origins given up and requests dropped."""

    @property
    def document(self) -> Document: ...

    def summary(self, dropped: dict[str, int], requeued: int) -> str | None: ...


class SignalTeller:
    """Sends ``robotstxt_verdict`` for every verdict (registered when the spider opens
    with a handler connected)."""

    explains = True
    passed_responses = False

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    def judged(self, request: Request, origin: Origin, judgement: Judgement) -> None:
        self.crawler.signals.send_catch_log(rfc_signals.robotstxt_verdict, request=request, judgement=judgement)

    def responded(self, request: Request, status: int, outcome: str) -> None:
        return None

    async def close(self) -> None:
        return None


class Tally:
    """The verdicts of a crawl, counted per kind, document and reason, for the close
    summary."""

    explains = False
    passed_responses = False

    def __init__(self) -> None:
        self.allowed = 0
        self.counts: dict[tuple[Kind, str, str], int] = {}
        self.responses: dict[str, int] = {}

    def judged(self, request: Request, origin: Origin, judgement: Judgement) -> None:
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

    def summary(self) -> str:
        """Every kind of verdict counted, in one line."""
        parts = [f"{self.allowed} {ROWS[(Kind.ALLOWED, None)].summary}"]
        for kind in (Kind.FORBIDDEN, Kind.USAGE_DENIED, Kind.TDM_RESERVED):
            if count := self.count(kind):
                parts.append(f"{count} {ROWS[(kind, None)].summary}")
        for document in DOCUMENTS:
            dropped = self.dropped(document)
            if dropped:
                reasons = ", ".join(f"{n} {reason_words(r)}" for r, n in dropped.items())
                parts.append(f"{sum(dropped.values())} {DROPPED_SUMMARY.format(document=document, reasons=reasons)}")
            for kind in (Kind.HELD, Kind.REQUEUED):
                if count := self.count(kind, document):
                    parts.append(f"{count} {row_of(kind, None).summary.format(document=document)}")
        not_judged: dict[str, int] = {}
        for (kind, _document, reason), count in self.counts.items():
            if kind is Kind.NOT_JUDGED:
                words = row_of(kind, reason).summary
                not_judged[words] = not_judged.get(words, 0) + count
        parts.extend(f"{count} {words}" for words, count in not_judged.items())
        for outcome, count in self.responses.items():
            parts.append(f"{count} responses {outcome.replace('_', ' ')}")
        return ", ".join(parts)


#: Origins whose :func:`~.judgement.allowing` function is remembered at most (a BoundedDict: the oldest go first).
_MAX_ALLOWING = 1024

_BY_CRAWLER: weakref.WeakKeyDictionary[Crawler, Enforcement] = weakref.WeakKeyDictionary()


class Enforcement(Reporting):
    """Acts on the verdicts of one crawl (:meth:`act`) and tells its tellers."""

    def __init__(self, crawler: Crawler, config: Config) -> None:
        self.crawler = crawler
        self.crawl_delay = CrawlDelay(crawler, config.crawl_delay_max) if config.crawl_delay else None
        self.enforced = Enforced(config.policy, config.usage_deny, config.tdmrep, self.crawl_delay is not None,
                                 config.purpose_tokens)
        self.agents = UserAgents(crawler, config)
        self.tally = Tally()
        self.tellers: tuple[Teller, ...] = (self.tally,)
        #: The tellers of allowed verdicts, the most frequent: the tally counts those in :meth:`act`.
        self.allowed_tellers: tuple[Teller, ...] = ()
        #: Tellers of the responses kept from the spider (the tally counts them apart): none, most crawls.
        self.response_tellers: tuple[Teller, ...] = ()
        #: Tellers of the responses passed to the spider (``ROBOTSTXT_LEDGER_RESPONSES``): none, most crawls.
        self.passed_tellers: tuple[Teller, ...] = ()
        #: Whether an allowed request's rule is resolved (a teller needs it).
        self.explain = False
        self._meta_errors_logged: set[type] = set()
        #: Per origin: the robots.txt state and agent its :func:`~.judgement.allowing` function is for.
        #: With the function naming the rule that allowed a URL, where a teller needs it (``explain``).
        self._allowing: BoundedDict[Origin, tuple[OriginState, str | bytes, Callable[[str], bool] | None,
                                                  Callable[[str], Rule | None] | None]] = BoundedDict(_MAX_ALLOWING)
        crawler.signals.connect(self._opened, signal=signals.spider_opened)

    def _opened(self, spider: Any = None) -> None:
        if _compat.has_receivers(self.crawler, rfc_signals.robotstxt_verdict):
            teller = SignalTeller(self.crawler)
            self.tellers += (teller,)
            self.allowed_tellers += (teller,)
            self.explain = True

    @classmethod
    def of(cls, crawler: Crawler, config: Config | None = None) -> Enforcement:
        """The crawl's enforcement, shared by its middlewares (made at the first call)."""
        enforcement = _BY_CRAWLER.get(crawler)
        if enforcement is None:
            from ..config import Config

            enforcement = _BY_CRAWLER[crawler] = cls(crawler, config or Config.from_settings(crawler.settings))
        return enforcement

    def add(self, teller: Teller) -> None:
        """Tell ``teller`` of every verdict and every response it asks for from now on."""
        self.tellers += (teller,)
        self.allowed_tellers += (teller,)
        self.response_tellers += (teller,)
        if teller.passed_responses:
            self.passed_tellers += (teller,)
        self.explain = self.explain or teller.explains

    def allows(self, request: Request, origin: Origin, agent: str | bytes,
               robots: OriginState) -> Callable[[str], bool] | None:
        """Whether ``request`` (by ``agent``, none named in its meta) gets a bare
        ``ALLOWED`` verdict, one with nothing to act on: counted here, and told to the
        tellers of allowed verdicts (with the rule that allowed it, where one needs it:
        :func:`~.judgement.explaining`), the same value :func:`~.judgement.judge` would
        give. Returns the test that said so (:func:`~.judgement.allowing`, remembered per
        origin), or None: :meth:`act` on :func:`~.judgement.judge`'s verdict."""
        url = request.url
        known = self._allowing.get(origin)
        if known is None or known[0] is not robots or known[1] != agent:
            test = allowing(robots, agent, self.enforced)
            rule_of = explaining(robots, agent, self.enforced) if test is not None and self.explain else None
            known = self._allowing[origin] = (robots, agent, test, rule_of)
        test = known[2]
        if test is None:
            return None
        rule_of = known[3]
        if rule_of is None:
            if not test(url):
                return None
            rule = None
        else:  # the rule that decides, which says whether it allows: one look-up
            rule = rule_of(url)
            if rule is not None and not rule.allow:
                return None
        self.tally.allowed += 1
        if self.allowed_tellers:
            judgement = allowed(url, self.agents.token(agent), robots, rule)
            for teller in self.allowed_tellers:
                teller.judged(request, origin, judgement)
        return test

    def telling(self, origin: Origin) -> Callable[[Request], None] | None:
        """For the shortcut of ``origin`` (see :mod:`.release_memo`), made after :meth:`allows`
        allowed one of its requests: what tells the tellers of allowed verdicts of each
        request the shortcut allows, the verdict :meth:`allows` would tell (None: no teller
        reads allowed verdicts)."""
        if not self.allowed_tellers:
            return None
        robots, agent, _test, rule_of = self._allowing[origin]  # what allows() judged its request by
        token = self.agents.token(agent)

        def tell(request: Request) -> None:
            url = request.url
            judgement = allowed(url, token, robots, None if rule_of is None else rule_of(url))
            for teller in self.allowed_tellers:
                teller.judged(request, origin, judgement)

        return tell

    def count_allowed(self, count: int) -> None:
        """Count ``count`` allowed verdicts that :meth:`allows` would have given (answered
        by the shortcuts, see :mod:`.release_memo`)."""
        self.tally.allowed += count

    def act(self, request: Request, origin: Origin, judgement: Judgement) -> Request | None:
        """Do what ``judgement`` says with ``request``: set its meta keys, count its
        stat, log it, tell the tellers (before the request is released: the ledger's
        record comes first), and raise for a refused request. Returns the request to
        hand back to the scheduler (requeued), else None."""
        kind = judgement.kind
        if kind is Kind.ALLOWED:
            self.tally.allowed += 1
            meta = request.meta
            if judgement.usage is not None:
                meta[USAGE_META] = judgement.usage
                self._usage_signal(request, judgement)
            if judgement.tdm_known:
                meta[TDMREP_META] = judgement.tdm_entry
            if judgement.crawl_delay is not None and self.crawl_delay is not None:
                self.crawl_delay.apply(request, origin, judgement.crawl_delay)
            for teller in self.allowed_tellers:
                teller.judged(request, origin, judgement)
            return None
        if kind is Kind.NOT_JUDGED:
            for teller in self.tellers:
                teller.judged(request, origin, judgement)
            return None
        return self._refuse(request, origin, judgement)

    def _refuse(self, request: Request, origin: Origin, judgement: Judgement) -> Request | None:
        kind = judgement.kind
        document = judgement.document or ROBOTS_TXT
        stat = row_of(kind, judgement.reason).stat
        if stat is not None:
            self._inc(document.stat + stat)
        message = ""
        if kind is Kind.FORBIDDEN:
            reason = f"{_rule_text(judgement)} of {origin.robots_url}"
            logger.debug("Forbidden by robots.txt: %(request)s (%(reason)s)", {"request": request, "reason": reason},
                         extra=self._log_extra)
            message = f"Forbidden by robots.txt: {request} ({reason})"
        elif kind is Kind.USAGE_DENIED:
            request.meta[USAGE_META] = judgement.usage
            self._usage_signal(request, judgement)
            message = (f"Usage preference denies {judgement.category}: {request} ({judgement.usage} of "
                       f"{origin.robots_url})")
            logger.debug(message, extra=self._log_extra)
        elif kind is Kind.TDM_RESERVED:
            if judgement.usage is not None:
                request.meta[USAGE_META] = judgement.usage
                self._usage_signal(request, judgement)
            request.meta[TDMREP_META] = judgement.tdm_entry
            message = f"TDM rights reserved ({judgement.category} denied): {request} ({judgement.tdm_entry})"
            logger.debug(message, extra=self._log_extra)
        elif kind is Kind.HELD:
            logger.debug("Holding %s: %s of %s is unreachable (%s)", request, document.name, origin,
                         judgement.detail, extra=self._log_extra)
        elif kind is Kind.REQUEUED:
            logger.debug("Put back in the scheduler: %s (%s of %s %s)", request, document.name, origin,
                         _drop_words(judgement), extra=self._log_extra)
        elif judgement.reason == "invalid_meta":
            message = f"Dropped {request}: {judgement.detail}"
            value = type(request.meta.get(AGENT_META))
            if value not in self._meta_errors_logged:
                self._meta_errors_logged.add(value)
                logger.error(message, extra=self._log_extra)
        else:  # dropped: nothing decides the request, and waiting cannot help it
            message = f"Dropped: {document.name} of {origin} {_drop_words(judgement)}: {request}"
            logger.debug(message, extra=self._log_extra)
        for teller in self.tellers:
            teller.judged(request, origin, judgement)
        if kind is Kind.HELD:
            return None
        if kind is Kind.REQUEUED:
            return request.replace(dont_filter=True)
        raise _exception(message, origin, judgement)

    def tell(self, request: Request, origin: Origin, judgement: Judgement) -> None:
        """Tell the tellers of a verdict that the parking acts on itself (a parked
        request held: it stays parked, counted there)."""
        for teller in self.tellers:
            teller.judged(request, origin, judgement)

    def responded(self, request: Request, status: int, outcome: str) -> None:
        """Tell the response tellers of a judged request's response: ``"passed"`` to
        the spider (those that ask for it), or why not."""
        if outcome == "passed":
            for teller in self.passed_tellers:
                teller.responded(request, status, outcome)
            return
        for teller in self.response_tellers:
            teller.responded(request, status, outcome)
        self.tally.responded(request, status, outcome)

    async def close(self) -> None:
        """Close the tellers (the ledger seals its run), once every verdict is told."""
        for teller in self.tellers:
            await teller.close()

    def summarize(self, lifecycles: Sequence[Summarized]) -> None:
        """Log the close summary: per document, the origins given up and the requests
        dropped or handed back (a WARNING, when there are some); every verdict counted (INFO)."""
        tally = self.tally
        for states in lifecycles:
            document = states.document.name
            summary = states.summary(tally.dropped(document), tally.count(Kind.REQUEUED, document))
            if summary is not None:
                logger.warning("%s: %s", document, summary, extra=self._log_extra)
        logger.info("robots.txt verdicts: %s", tally.summary(), extra=self._log_extra)

    def _usage_signal(self, request: Request, judgement: Judgement) -> None:
        if _compat.has_receivers(self.crawler, rfc_signals.robotstxt_content_usage):
            self.crawler.signals.send_catch_log(rfc_signals.robotstxt_content_usage, request=request,
                                                preference=judgement.usage)


def _rule_text(judgement: Judgement) -> str:
    rule = judgement.rule
    if rule is None:
        return "no rule"
    text = f"{rule.directive}: {rule.pattern}, line {rule.line}"
    return text if judgement.purpose is None else f"{text}, in the group of purpose token {judgement.purpose!r}"


def _drop_words(judgement: Judgement) -> str:
    return log_words(judgement.kind, judgement.reason, judgement.detail, judgement.waited)


def _exception(message: str, origin: Origin, judgement: Judgement) -> Exception:
    """The ``IgnoreRequest`` subclass of a refused request, carrying its verdict."""
    kind = judgement.kind
    if kind is Kind.FORBIDDEN:
        verdict = judgement.verdict
        assert verdict is not None
        return RobotsTxtForbidden(message, verdict, origin.robots_url, judgement=judgement)
    if kind is Kind.USAGE_DENIED:
        return RobotsTxtUsageDenied(message, judgement.usage, origin.robots_url, judgement=judgement)
    if kind is Kind.TDM_RESERVED:
        entry = judgement.tdm_entry
        assert entry is not None
        return RobotsTxtTdmReserved(message, entry, entry.url, judgement=judgement)
    if judgement.reason == "invalid_meta":
        return RobotsTxtMetaError(message, AGENT_META, judgement=judgement)
    document = judgement.document or ROBOTS_TXT
    return RobotsTxtUnreachable(message, document.url(origin), judgement.reason or "max_wait", judgement=judgement)
