"""Acting on verdicts: the one place where a :class:`~.judgement.Judgement` becomes
the request's meta keys, its stat, its log line, the signals, the tellers' records
(the ledger, the close summary) and, for a refused request, the ``IgnoreRequest``
subclass that carries it."""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from scrapy import signals

from .. import signals as rfc_signals
from ..core.caches import BoundedDict
from ..core.documents import ROBOTS_TXT
from ..core.verdict import Enforced, Judgement, Kind, Ruling
from ..core.verdict_kinds import log_words, row_of
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
from .close_summary import CloseSummary, Summarized
from .crawl_delay import CrawlDelay
from .request_agents import UserAgents
from .tellers import SignalTeller, Teller, Tellers

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from ..config import Config
    from ..core.origins import Origin
    from ..core.state import OriginState

__all__ = ["Actions", "Enforcement"]

logger = logging.getLogger(__name__)

#: Origins whose ruling is remembered at most (a BoundedDict: the oldest go first).
_MAX_RULINGS = 1024

_BY_CRAWLER: weakref.WeakKeyDictionary[Crawler, Enforcement] = weakref.WeakKeyDictionary()


class Actions(Reporting):
    """Acts on the verdicts of one crawl (:meth:`act`): the request's meta keys, its stat,
    its log line, the usage signal, the tellers, and the exception of a refused request."""

    def __init__(self, crawler: Crawler, tellers: Tellers, crawl_delay: CrawlDelay | None) -> None:
        self.crawler = crawler
        self.tellers = tellers
        self.tally = tellers.tally
        self.crawl_delay = crawl_delay
        self._meta_errors_logged: set[type] = set()

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
            self.tellers.judged(request, origin, judgement)
            return None
        if kind is Kind.NOT_JUDGED:
            self.tellers.judged(request, origin, judgement)
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
        self.tellers.judged(request, origin, judgement)
        if kind is Kind.HELD:
            return None
        if kind is Kind.REQUEUED:
            return request.replace(dont_filter=True)
        raise _exception(message, origin, judgement)

    def _usage_signal(self, request: Request, judgement: Judgement) -> None:
        if _compat.has_receivers(self.crawler, rfc_signals.robotstxt_content_usage):
            self.crawler.signals.send_catch_log(rfc_signals.robotstxt_content_usage, request=request,
                                                preference=judgement.usage)


class Enforcement:
    """The verdicts' side of one crawl, shared by its middlewares: what it enforces, the
    agents of its requests, its tellers, its actions and its close summary."""

    def __init__(self, crawler: Crawler, config: Config) -> None:
        self.crawler = crawler
        self.crawl_delay = CrawlDelay(crawler, config.crawl_delay_max) if config.crawl_delay else None
        self.enforced = Enforced(config.policy, config.usage_deny, config.tdmrep, self.crawl_delay is not None,
                                 config.purpose_tokens)
        self.agents = UserAgents(crawler, config)
        self.tellers = Tellers()
        self.tally = self.tellers.tally
        self.actions = Actions(crawler, self.tellers, self.crawl_delay)
        self.close_summary = CloseSummary(self.tally, self.actions._log_extra)
        #: Per origin: the ruling of its robots.txt state for the agent of its last plain request.
        self._rulings: BoundedDict[Origin, Ruling] = BoundedDict(_MAX_RULINGS)
        crawler.signals.connect(self._opened, signal=signals.spider_opened)

    def _opened(self, spider: Any = None) -> None:
        if _compat.has_receivers(self.crawler, rfc_signals.robotstxt_verdict):
            self.tellers.add(SignalTeller(self.crawler), responses=False)

    @classmethod
    def of(cls, crawler: Crawler, config: Config | None = None) -> Enforcement:
        """The crawl's enforcement, shared by its middlewares (made at the first call)."""
        enforcement = _BY_CRAWLER.get(crawler)
        if enforcement is None:
            from ..config import Config

            enforcement = _BY_CRAWLER[crawler] = cls(crawler, config or Config.from_settings(crawler.settings))
        return enforcement

    @property
    def explain(self) -> bool:
        """Whether an allowed request's rule is resolved (a teller needs it)."""
        return self.tellers.explain

    def add(self, teller: Teller) -> None:
        """Tell ``teller`` of every verdict and every response it asks for from now on."""
        self.tellers.add(teller)

    def act(self, request: Request, origin: Origin, judgement: Judgement) -> Request | None:
        """:meth:`Actions.act`."""
        return self.actions.act(request, origin, judgement)

    def allows(self, request: Request, origin: Origin, agent: str | bytes,
               robots: OriginState) -> Callable[[str], bool] | None:
        """Whether ``request`` (by ``agent``, none named in its meta) gets a bare
        ``ALLOWED`` verdict, one with nothing to act on: counted here, and told to the
        tellers of allowed verdicts (:meth:`.Ruling.allowed`). Returns the test that said so
        (the ``passes`` of the origin's :class:`~.verdict.Ruling`, remembered per origin), or
        None: :meth:`act` on the ruling's verdict."""
        url = request.url
        ruling = self._rulings.get(origin)
        if ruling is None or ruling.robots is not robots or ruling.agent != agent or ruling.explain != self.explain:
            ruling = self._rulings[origin] = Ruling(robots, None, agent, self.agents.token(agent), self.enforced,
                                                    None, self.explain)
        if not ruling.plain or not ruling.passes(url):
            return None
        self.tally.allowed += 1
        if self.tellers.of_allowed:
            self.tellers.judged(request, origin, ruling.allowed(url))
        return ruling.passes

    def telling(self, origin: Origin) -> Callable[[Request], None] | None:
        """For the shortcut of ``origin`` (see :mod:`.release_memo`), made after :meth:`allows`
        allowed one of its requests: what tells the tellers of allowed verdicts of each
        request the shortcut allows, the verdict :meth:`allows` would tell (None: no teller
        reads allowed verdicts)."""
        if not self.tellers.of_allowed:
            return None
        ruling = self._rulings[origin]  # what allows() judged its request by
        tellers = self.tellers

        def tell(request: Request) -> None:
            tellers.judged(request, origin, ruling.allowed(request.url))

        return tell

    def count_allowed(self, count: int) -> None:
        """Count ``count`` allowed verdicts that :meth:`allows` would have given (answered
        by the shortcuts, see :mod:`.release_memo`)."""
        self.tally.allowed += count

    def tell(self, request: Request, origin: Origin, judgement: Judgement) -> None:
        """Tell the tellers of a verdict that the parking acts on itself (a parked
        request held: it stays parked, counted there)."""
        self.tellers.judged(request, origin, judgement)

    def responded(self, request: Request, status: int, outcome: str) -> None:
        """:meth:`Tellers.responded`."""
        self.tellers.responded(request, status, outcome)

    async def close(self) -> None:
        """Close the tellers (the ledger seals its run), once every verdict is told."""
        await self.tellers.close()

    def summarize(self, lifecycles: Sequence[Summarized]) -> None:
        """Log the close summary (see :class:`.CloseSummary`)."""
        self.close_summary.log(lifecycles)


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
