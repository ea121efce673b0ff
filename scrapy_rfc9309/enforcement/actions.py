"""Acting on verdicts: the one place where a :class:`~.judgement.Judgement` becomes
the request's meta keys, its stat, its log line, the signals, the tellers' records
(the ledger, the close summary) and, for a refused request, the ``IgnoreRequest``
subclass that carries it."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .. import signals as rfc_signals
from ..core.documents import ROBOTS_TXT
from ..core.verdict import Judgement, Kind
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
from .crawl_delay import CrawlDelay
from .tellers import Tellers

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from ..core.origins import Origin

__all__ = ["Actions"]

logger = logging.getLogger(__name__)



class Actions(Reporting):
    """Acts on the verdicts of one crawl (:meth:`act`): the request's meta keys, its stat,
    its log line, the usage signal, the tellers, and the exception of a refused request."""

    def __init__(self, crawler: Crawler, tellers: Tellers, crawl_delay: CrawlDelay | None) -> None:
        self.crawler = crawler
        self.tellers = tellers
        self.tally = tellers.tally
        self.crawl_delay = crawl_delay
        self._meta_errors_logged: set[type] = set()

    def act(self, request: Request, origin: Origin | None, judgement: Judgement) -> Request | None:
        """Do what ``judgement`` says with ``request``: set its meta keys, count its
        stat, log it, tell the tellers (before the request is released: the ledger's
        record comes first), and raise the ``IgnoreRequest`` subclass of a refused or
        dropped request. Returns None to release it (allowed, not judged), or the request to
        hand back to the scheduler (requeued). A held verdict is not final: acting on it
        raises ``RuntimeError`` (see :meth:`hold`), so that no return value sends a held
        request to the downloader. ``origin`` is None only for a request whose URL is not
        http(s) (a ``not_judged`` verdict)."""
        kind = judgement.kind
        if kind is Kind.ALLOWED:
            assert origin is not None  # an allowed verdict is of an http(s) request
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
            if origin is None:
                self.tellers.not_http(request, judgement)
            else:
                self.tellers.judged(request, origin, judgement)
            return None
        if kind is Kind.HELD:
            raise RuntimeError(f"a held verdict is not final: {request} ({judgement})")
        if origin is None:
            raise RuntimeError(f"a {kind.value} verdict on a request that is not http(s): {request}")
        return self._refuse(request, origin, judgement)

    def hold(self, request: Request, origin: Origin, judgement: Judgement, *, counted: bool = False) -> None:
        """Tell the tellers of a held verdict and, unless the parking has counted it already
        (``counted``: a parked request), count its stat and log it. The request waits: it is
        neither released nor refused here."""
        if judgement.kind is not Kind.HELD:
            raise ValueError(f"not a held verdict: {judgement}")
        if not counted:
            document = judgement.document or ROBOTS_TXT
            self._inc(document.stat + (row_of(Kind.HELD, None).stat or ""))
            logger.debug("Holding %s: %s of %s is unreachable (%s)", request, document.name, origin,
                         judgement.detail, extra=self._log_extra)
        self.tellers.judged(request, origin, judgement)

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
        if kind is Kind.REQUEUED:
            return request.replace(dont_filter=True)
        raise _exception(message, origin, judgement)

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
