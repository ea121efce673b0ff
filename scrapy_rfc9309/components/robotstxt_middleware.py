"""``scrapy_rfc9309.RobotsTxtMiddleware``: Scrapy's robots.txt middleware, done the
way RFC 9309 says.

Data flows one way: request -> origin -> document states -> verdict -> action. The
origin's states are a :class:`~scrapy_rfc9309.lifecycle.states.DocumentStates` (cached),
fetched by a :class:`~scrapy_rfc9309.lifecycle.fetches.Fetches` (store, single flight), and its
requests wait in a :class:`~scrapy_rfc9309.lifecycle.waiting.WaitingRequests` (parked or in the downloader, retries,
deadlines), one pair per document (robots.txt, and tdmrep.json with
``ROBOTSTXT_TDMREP``); the origin's :class:`~scrapy_rfc9309.core.verdict.Ruling` makes the
verdict, a :class:`~scrapy_rfc9309.judgement.Judgement`; the
:class:`~scrapy_rfc9309.enforcement.actions.Actions` act on it and tell the tellers.
``process_request`` dispatches: the most frequent verdict, a bare allowed one, is answered
per origin by the release memo (:mod:`~scrapy_rfc9309.enforcement.release_memo`), every
other request takes the :class:`~.verdict_path.VerdictPath`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.http.headers import Headers

from ..config import Config, refuse_builtin_beside, usage_line
from ..core.accelerator import ACCELERATED, matcher_in_use
from ..core.origins import Origin, OriginOf
from ..core.urls import origin_text
from ..enforcement.release_memo import Releases, has_header
from ..ledger.writer import Ledger
from ..lifecycle.change_signal import ChangeNews
from ..lifecycle.dns_warmup import DnsWarmup
from ..lifecycle.fetch import RobotsFetcher
from ..lifecycle.idle_watch import HeldWatch
from ..lifecycle.waiting import for_crawl
from ..meta import (
    AGENT_META,
    FETCH_META,
    GIVEN_UP_META,
    KEEPER_META,
    PREFERENCES_META,
    PURPOSE_META,
    TDMREP_META,
    USAGE_META,
)
from ..runtime.reporting import Reporting
from ..stores import store_class
from ..stores.client import StoreClient
from .queries import StateQueries
from .verdict_path import VerdictPath
from .wiring import VerdictParts

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from ..core.documents import Document

__all__ = ["AGENT_META", "PREFERENCES_META", "TDMREP_META", "USAGE_META", "RobotsTxtMiddleware"]

logger = logging.getLogger(__name__)

#: The meta keys the plugin reads or sets on a request it judges.
_KEYS = frozenset({KEEPER_META, FETCH_META, "dont_obey_robotstxt", USAGE_META, PREFERENCES_META, TDMREP_META,
                   GIVEN_UP_META, AGENT_META, PURPOSE_META})
#: This middleware's path in ``DOWNLOADER_MIDDLEWARES``.
MIDDLEWARE_PATH = "scrapy_rfc9309.RobotsTxtMiddleware"
_now = time.time


class RobotsTxtMiddleware(Reporting, StateQueries):
    """Downloader middleware enforcing robots.txt per RFC 9309."""

    #: Set (to :meth:`_responded`) when a teller reads responses: the hook is not called otherwise.
    process_response: Callable[[Request, Response, Any], Response]

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        self.crawler = crawler
        refuse_builtin_beside(crawler.settings, MIDDLEWARE_PATH)
        config = self.config = Config.from_settings(crawler.settings)
        #: The http(s) origin of a URL, or None.
        self._origin_of = OriginOf()
        self.policy = config.policy
        #: The verdicts' side of the crawl, shared with the usage middleware.
        parts = self.parts = VerdictParts.of(crawler, config)
        self.agents = parts.agents
        self.enforced = parts.enforced
        self.tellers = parts.tellers
        logger.info("%s", usage_line(config))
        logger.log(logging.INFO if ACCELERATED else logging.WARNING, "robots.txt matcher: %s", matcher_in_use())
        store = warmup = None
        store_cls = store_class(config.store)
        if store_cls is not None:
            store = StoreClient(store_cls.from_crawler(crawler), crawler, config)
            warmup = DnsWarmup.for_crawl(crawler, config.dns_warmup)
        #: The verdict ledger (``ROBOTSTXT_LEDGER``): told of every state settled and every verdict.
        self.ledger = Ledger(crawler, config, self.agents.token(self.agents.default)) if config.ledger else None
        settled = None
        if self.ledger is not None:
            self.tellers.add(self.ledger)
            settled = self.ledger.settled
        self.fetcher = RobotsFetcher(crawler, self.policy, config.max_size,
                                     warmup.route_seen if warmup is not None else None)
        #: The usage categories listed in ROBOTSTXT_USAGE_DENY that a TDM reservation denies.
        self.tdm_deny = self.enforced.tdm_deny
        #: The requests waiting for their robots.txt (its states: ``states.states``) and, with
        #: ROBOTSTXT_TDMREP, for their tdmrep.json (held while it is unreachable only when reservations
        #: are enforced, as an unreachable robots.txt holds them; otherwise they go on, nothing known).
        self.states, self.tdm = for_crawl(crawler, config, self.fetcher, self._origin_of, store=store, warmup=warmup,
                                          on_settled=settled, on_held=self._parked_held, tdm_holds=bool(self.tdm_deny),
                                          news=ChangeNews(crawler, self.agents.seen, self.agents.default),
                                          on_requeued=self._parked_requeued)
        #: The per-origin memo of the most frequent verdict (see release_memo).
        self.releases = Releases(self.states.states, self.tellers)
        self._release_of = self.releases.get
        self._path = VerdictPath(crawler, parts, self.states, self.tdm, self._origin_of, self.releases)
        self._plain = self._path.plain
        self._special = self._path.special
        #: Says what held requests wait for, and gives them up once they are all that is left.
        self.held_watch = HeldWatch(crawler, [states for states in (self.states, self.tdm) if states is not None],
                                    self.policy, config.max_wait_idle, own_receivers=(self._spider_idle,))
        if self.tellers.of_passed:  # without any, Scrapy has no process_response to call
            self.process_response = self._responded
        crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    # -- the downloader hooks -------------------------------------------------------------
    def process_request(self, request: Request,
                        spider: Any = None) -> Request | Coroutine[Any, Any, Request | None] | None:
        """Judge ``request``: by its origin's release when it has one that applies (see
        release_memo), else on the verdict path. A request of an origin whose documents are
        cached and fresh is judged at once; otherwise a coroutine waits for their fetch
        (Scrapy awaits what ``process_request`` returns)."""
        if _KEYS.isdisjoint(request.meta):  # most requests carry none of the plugin's meta keys
            url = request.url
            release = self._release_of(origin_text(url))
            if (release is not None and release.remaining and release.version == release.cache.version
                    and _now() < release.expires_at
                    and (release.any_headers or (type(headers := request.headers) is Headers
                                                 and not has_header(headers, b"User-Agent")))
                    and release.test(url)):
                release.remaining -= 1  # counted when it is refreshed
                if release.tell is not None:  # the tellers of allowed verdicts (the ledger) are told
                    release.tell(request)
                return None
            return self._plain(request)
        return self._special(request)

    def _responded(self, request: Request, response: Response, spider: Any = None) -> Response:
        """``process_response`` with a teller of passed responses (the ledger with
        ``ROBOTSTXT_LEDGER_RESPONSES``): tell it of the response of a judged request,
        before it goes to the spider."""
        meta = request.meta
        if FETCH_META in meta or KEEPER_META in meta or meta.get("dont_obey_robotstxt"):
            return response
        if self._origin_of(request.url) is not None:
            self.tellers.responded(request, response.status, "passed")
        return response

    def _parked_held(self, request: Request, origin: Origin, document: Document) -> None:
        self._path.parked_held(request, origin, document)

    def _parked_requeued(self, request: Request, origin: Origin, reason: str, document: Document) -> None:
        self._path.parked_requeued(request, origin, reason, document)

    # -- what the crawl waits for ----------------------------------------------------------
    @property
    def waiting_count(self) -> int:
        """Requests waiting for their origin's robots.txt or tdmrep.json now: in the downloader, and parked."""
        return self.states.room.waiting

    @property
    def held_count(self) -> int:
        """Requests held now (their origin's document unreachable, waiting for a retry), of all documents."""
        now = _now()
        return sum(count for waiting in (self.states, self.tdm) if waiting is not None
                   for _, count, _ in waiting.held(now))

    # -- the crawl's end -------------------------------------------------------------------
    def _spider_idle(self, spider: Any = None) -> None:
        if self.waiting_count and not self.states.closing:
            raise DontCloseSpider

    async def _spider_closed(self, spider: Any = None) -> None:
        self.releases.flush()
        self.states.close()
        if self.tdm is not None:
            self.tdm.close()
        if self.states.fetches.store is not None:
            await self.states.fetches.store.close()  # after the saves still running
        self.parts.close_summary.log([states for states in (self.states, self.tdm) if states is not None])
        await self.tellers.close()
