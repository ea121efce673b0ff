"""The parts of one crawl's verdicts, made once per crawler and shared by its middlewares
(:class:`~scrapy_rfc9309.RobotsTxtMiddleware`, the usage middleware): what the crawl
enforces, the agents of its requests, its tellers, the actions on verdicts and the close
summary."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from scrapy import signals

from .. import signals as rfc_signals
from ..config import Config
from ..core.verdict import Enforced
from ..enforcement.actions import Actions
from ..enforcement.close_summary import CloseSummary
from ..enforcement.crawl_delay import CrawlDelay
from ..enforcement.request_agents import UserAgents
from ..enforcement.tellers import SignalTeller, Tellers
from ..runtime import compat as _compat

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["VerdictParts"]

_BY_CRAWLER: weakref.WeakKeyDictionary[Crawler, VerdictParts] = weakref.WeakKeyDictionary()


class VerdictParts:
    """The verdicts' side of one crawl (see the module); :meth:`of` gives the crawl's."""

    def __init__(self, crawler: Crawler, config: Config) -> None:
        self.crawler = crawler
        self.config = config
        self.crawl_delay = CrawlDelay(crawler, config.crawl_delay_max) if config.crawl_delay else None
        self.enforced = Enforced(config.policy, config.usage_deny, config.tdmrep, self.crawl_delay is not None,
                                 config.purpose_tokens)
        self.agents = UserAgents(crawler, config)
        self.tellers = Tellers()
        self.actions = Actions(crawler, self.tellers, self.crawl_delay)
        self.close_summary = CloseSummary(self.tellers.tally, self.actions._log_extra)
        crawler.signals.connect(self._opened, signal=signals.spider_opened)

    def _opened(self, spider: Any = None) -> None:
        if _compat.has_receivers(self.crawler, rfc_signals.robotstxt_verdict):
            self.tellers.add_any_url(SignalTeller(self.crawler), responses=False)

    @classmethod
    def of(cls, crawler: Crawler, config: Config | None = None) -> VerdictParts:
        """The crawl's parts, shared by its middlewares (made at the first call)."""
        parts = _BY_CRAWLER.get(crawler)
        if parts is None:
            parts = _BY_CRAWLER[crawler] = cls(crawler, config or Config.from_settings(crawler.settings))
        return parts
