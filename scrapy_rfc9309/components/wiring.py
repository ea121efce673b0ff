"""The one place a crawl's parts are made and wired, once per crawler:
:class:`VerdictParts`, the verdicts' side shared by its middlewares
(:class:`~scrapy_rfc9309.RobotsTxtMiddleware`, the usage middleware): what the crawl
enforces, the agents of its requests, its tellers, the actions on verdicts and the close
summary; and :class:`RobotsTxtParts`, everything else the robots.txt middleware runs: the
documents' lifecycle (store, fetches, states, waiting requests, parking, idle watch), the
ledger, the release memo and the verdict path."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import DontCloseSpider

from .. import signals as rfc_signals
from ..config import Config
from ..core.origins import Origin, OriginOf
from ..core.verdict import Enforced
from ..enforcement.actions import Actions
from ..enforcement.close_summary import CloseSummary
from ..enforcement.crawl_delay import CrawlDelay
from ..enforcement.release_memo import Releases
from ..enforcement.request_agents import UserAgents
from ..enforcement.tellers import SignalTeller, Tellers
from ..ledger.writer import Ledger
from ..lifecycle.change_signal import ChangeNews
from ..lifecycle.dns_warmup import DnsWarmup
from ..lifecycle.fetch import RobotsFetcher
from ..lifecycle.idle_watch import HeldWatch
from ..lifecycle.waiting import for_crawl
from ..runtime import compat as _compat
from ..stores import store_class
from ..stores.client import StoreClient
from .verdict_path import VerdictPath

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from ..core.documents import Document

__all__ = ["RobotsTxtParts", "VerdictParts"]

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


class RobotsTxtParts:
    """Every part of one crawl's :class:`~scrapy_rfc9309.RobotsTxtMiddleware`, made and wired
    here once (by its ``from_crawler``); the middleware binds what its hooks read. The parts'
    own ends are here too: a crawl with requests waiting is not idle, and the close flushes,
    closes and summarises them."""

    def __init__(self, crawler: Crawler, config: Config) -> None:
        self.crawler = crawler
        self.config = config
        verdicts = self.verdicts = VerdictParts.of(crawler, config)
        agents = verdicts.agents
        #: The http(s) origin of a URL, or None.
        self.origin_of = OriginOf()
        self.store = warmup = None
        store_cls = store_class(config.store)
        if store_cls is not None:
            self.store = StoreClient(store_cls.from_crawler(crawler), crawler, config)
            warmup = DnsWarmup.for_crawl(crawler, config.dns_warmup)
        #: The verdict ledger (``ROBOTSTXT_LEDGER``): told of every state settled and every verdict.
        self.ledger = Ledger(crawler, config, agents.token(agents.default)) if config.ledger else None
        settled = None
        if self.ledger is not None:
            verdicts.tellers.add(self.ledger)
            settled = self.ledger.settled
        self.fetcher = RobotsFetcher(crawler, config.policy, config.max_size,
                                     warmup.route_seen if warmup is not None else None)
        #: The requests waiting for their robots.txt and, with ROBOTSTXT_TDMREP, for their
        #: tdmrep.json (held while it is unreachable only when reservations are enforced, as an
        #: unreachable robots.txt holds them; otherwise they go on, nothing known). A request
        #: parked while a document holds it, or handed back at close, is told by the verdict
        #: path, made below: the parking calls it through this object.
        self.robots, self.tdm = for_crawl(crawler, config, self.fetcher, self.origin_of, store=self.store,
                                          warmup=warmup, on_settled=settled,
                                          on_held=self._parked_held, tdm_holds=bool(verdicts.enforced.tdm_deny),
                                          news=ChangeNews(crawler, agents.seen, agents.default),
                                          on_requeued=self._parked_requeued)
        #: Each document's waiting requests: robots.txt's, then tdmrep.json's.
        self.waiting = tuple(waiting for waiting in (self.robots, self.tdm) if waiting is not None)
        #: The per-origin memo of the most frequent verdict (see release_memo).
        self.releases = Releases(self.robots.document_states, verdicts.tellers)
        self.path = VerdictPath(crawler, verdicts, self.robots, self.tdm, self.origin_of, self.releases)
        #: Says what held requests wait for, and gives them up once they are all that is left.
        self.held_watch = HeldWatch(crawler, self.waiting, config.policy, config.max_wait_idle,
                                    own_receivers=(self._spider_idle,))
        crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    def _parked_held(self, request: Request, origin: Origin, document: Document) -> None:
        self.path.parked_held(request, origin, document)

    def _parked_requeued(self, request: Request, origin: Origin, reason: str, document: Document) -> None:
        self.path.parked_requeued(request, origin, reason, document)

    def _spider_idle(self, spider: Any = None) -> None:
        """Keep the crawl open while requests wait for a document, until it closes."""
        if self.robots.room.waiting and not self.robots.closing:
            raise DontCloseSpider

    async def _spider_closed(self, spider: Any = None) -> None:
        self.releases.flush()
        for waiting in self.waiting:
            waiting.close()
        if self.store is not None:
            await self.store.close()  # after the saves still running
        self.verdicts.close_summary.log(self.waiting)
        await self.verdicts.tellers.close()
