"""``scrapy_rfc9309.RobotsTxtMiddleware``: Scrapy's robots.txt middleware, done the
way RFC 9309 says.

Data flows one way: request -> origin -> document states -> verdict -> action. The
origin's states come from a :class:`~scrapy_rfc9309.lifecycle.states.StateCache` (cache,
store, single-flight fetch) and its requests wait in a
:class:`~scrapy_rfc9309.lifecycle.waiting.Waiting` (parked or in the downloader, retries,
deadlines), one pair per document (robots.txt, and tdmrep.json with
``ROBOTSTXT_TDMREP``); :func:`~scrapy_rfc9309.judgement.judge`
makes the verdict, a :class:`~scrapy_rfc9309.judgement.Judgement`; the
:class:`~scrapy_rfc9309.enforcement.actions.Enforcement` acts on it and tells its tellers.
This class only gets the states and judges; the most frequent verdict, a bare
allowed one, it answers per origin (:mod:`~scrapy_rfc9309.enforcement.release_memo`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.http.headers import Headers

from ..config import Config, purpose_tokens, refuse_builtin_beside, usage_line
from ..core.accelerator import ACCELERATED, matcher_in_use
from ..core.origins import Origin, OriginOf
from ..core.urls import origin_text
from ..core.verdict import Judgement, Kind, at_close, holding, invalid_meta, judge, not_judged
from ..enforcement.actions import Enforcement
from ..enforcement.release_memo import Shortcuts, has_header
from ..enforcement.request_agents import InvalidAgentMeta
from ..exceptions import RobotsTxtConfigError
from ..ledger.writer import Ledger
from ..lifecycle.change_signal import ChangeNews
from ..lifecycle.dns_warmup import DnsWarmup
from ..lifecycle.fetch import RobotsFetcher
from ..lifecycle.idle_watch import HeldWatch
from ..lifecycle.states import Closing
from ..lifecycle.waiting import Waiting, for_crawl
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
from ..runtime import compat as _compat
from ..runtime.reporting import Reporting
from ..stores import store_class
from ..stores.client import StoreClient
from .queries import StateQueries

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from ..core.state import OriginState

__all__ = ["AGENT_META", "PREFERENCES_META", "TDMREP_META", "USAGE_META", "RobotsTxtMiddleware"]

logger = logging.getLogger(__name__)

#: The meta keys the plugin reads or sets on a request it judges.
_KEYS = frozenset({KEEPER_META, FETCH_META, "dont_obey_robotstxt", USAGE_META, PREFERENCES_META, TDMREP_META,
                   GIVEN_UP_META, AGENT_META, PURPOSE_META})
#: This middleware's path in ``DOWNLOADER_MIDDLEWARES``.
MIDDLEWARE_PATH = "scrapy_rfc9309.RobotsTxtMiddleware"


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
        self.enforcement = Enforcement.of(crawler, config)
        self.agents = self.enforcement.agents
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
            self.enforcement.add(self.ledger)
            settled = self.ledger.settled
        self.fetcher = RobotsFetcher(crawler, self.policy, config.max_size,
                                     warmup.route_seen if warmup is not None else None)
        #: The usage categories listed in ROBOTSTXT_USAGE_DENY that a TDM reservation denies.
        self.tdm_deny = self.enforcement.enforced.tdm_deny
        #: The requests waiting for their robots.txt (its states: ``states.states``) and, with
        #: ROBOTSTXT_TDMREP, for their tdmrep.json (held while it is unreachable only when reservations
        #: are enforced, as an unreachable robots.txt holds them; otherwise they go on, nothing known).
        self.states, self.tdm = for_crawl(crawler, config, self.fetcher, self._origin_of, store=store, warmup=warmup,
                                          on_settled=settled, on_held=self._parked_held, tdm_holds=bool(self.tdm_deny),
                                          news=ChangeNews(crawler, self.agents.seen, self.agents.default),
                                          on_requeued=self._parked_requeued)
        #: The per-origin shortcuts of the most frequent verdict (see shortcuts).
        self.shortcuts = Shortcuts(self.states.states, self.enforcement, self.agents)
        #: Says what held requests wait for, and gives them up once they are all that is left.
        self.held_watch = HeldWatch(crawler, [states for states in (self.states, self.tdm) if states is not None],
                                    self.policy, config.max_wait_idle, own_receivers=(self._spider_idle,))
        if self.enforcement.tellers.of_passed:  # without any, Scrapy has no process_response to call
            self.process_response = self._responded
        crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    # -- the downloader hooks -------------------------------------------------------------
    def process_request(self, request: Request,
                        spider: Any = None) -> Request | Coroutine[Any, Any, Request | None] | None:
        """Judge ``request``. A request of an origin whose documents are cached and
        fresh is judged at once; otherwise a coroutine waits for their fetch (Scrapy
        awaits what ``process_request`` returns)."""
        meta = request.meta
        url = request.url
        special = not _KEYS.isdisjoint(meta)  # most requests carry none of the plugin's meta keys
        if not special:  # the shortcut of the origin, if it has one (see shortcuts): inline, for speed
            shortcut = self.shortcuts.get(origin_text(url))
            if (shortcut is not None and shortcut[0] and time.time() < shortcut[1]
                    and shortcut[2] == shortcut[5].version
                    and (shortcut[3] or (type(headers := request.headers) is Headers
                                         and not has_header(headers, b"User-Agent")))
                    and shortcut[4](url)):
                shortcut[0] -= 1  # counted when it is refreshed
                if shortcut[6] is not None:  # the tellers of allowed verdicts (the ledger) are told
                    shortcut[6](request)
                return None
        else:
            if KEEPER_META in meta:
                return self.states.parking.keeper()
            if FETCH_META in meta:
                return None
        if url.startswith(("data:", "file:")):
            return None
        origin = self._origin_of(url)
        if origin is None:
            return None
        tdm = self.tdm
        if not special:
            agent = self.agents.unnamed(request)
        else:
            if meta.get("dont_obey_robotstxt"):
                return self.enforcement.act(request, origin, not_judged(url, self.agents.token_of(request)))
            # A redirect copies meta: what was found for the URL before it is stale.
            meta.pop(USAGE_META, None)
            meta.pop(PREFERENCES_META, None)
            if tdm is not None:
                meta.pop(TDMREP_META, None)
            try:
                agent = self.agents.of(request)
                self._purposes(meta)
            except (InvalidAgentMeta, RobotsTxtConfigError) as exc:
                return self.enforcement.act(request, origin, invalid_meta(url, self.agents.token_of(request),
                                                                          str(exc)))
            given_up_as = meta.pop(GIVEN_UP_META, False)
            if given_up_as == "idle":  # held, back from parking: given up as nothing else was left
                self.enforcement.act(request, origin, self._at_close(request, origin, self._holder(origin), False,
                                                                     "idle"))
            if given_up_as:  # held, back from parking: its origin was given up
                for states in (self.states, tdm):
                    if states is not None and (given_up := states.given_up(origin)) is not None:
                        states.give_up(origin)
                        dropped = holding(url, self.agents.token(agent), given_up, states.document, time.time(),
                                          self.policy, self.states.cache.get(origin))
                        if dropped is not None:  # not held again
                            self.enforcement.act(request, origin, dropped)
        now = time.time()
        robots = self.states.cached(origin, now)
        if robots is not None:
            enforcement = self.enforcement
            if tdm is None and not special and (test := enforcement.allows(request, origin, agent, robots)):
                self.shortcuts.remember(url, agent, robots, test, enforcement.telling(origin))
                return None  # a bare allowed verdict, the most frequent: nothing else to do
            tdm_state = None
            if tdm is not None:
                tdm_state = tdm.cached(origin, now)
                if tdm_state is None:
                    self._judge_robots(request, origin, agent, robots)
                    return tdm.park(origin, request) or self._waiting(request, origin, agent, robots)
            return enforcement.act(request, origin, self._verdict(request, agent, robots, tdm_state, now))
        if tdm is not None:
            tdm.prefetch(origin, request)  # fetched beside the robots.txt, not after it
        # Scrapy schedules a returned request: it is parked on the way (see parking).
        return self.states.park(origin, request) or self._waiting(request, origin, agent, None)

    def _verdict(self, request: Request, agent: str | bytes, robots: OriginState, tdm: OriginState | None,
                 now: float) -> Judgement:
        """The verdict on ``request`` by the states at hand."""
        enforcement = self.enforcement
        return judge(request.url, agent, self.agents.token(agent), robots, now, enforcement.enforced, tdm,
                     explain=enforcement.explain, purposes=self._purposes(request.meta))

    def _purposes(self, meta: dict[str, Any]) -> tuple[str, ...] | None:
        """The request's ``robotstxt_purpose_tokens`` (None: ``ROBOTSTXT_PURPOSE_TOKENS``)."""
        value = meta.get(PURPOSE_META)
        return None if value is None else purpose_tokens(value, f"request meta {PURPOSE_META!r}")

    def _judge_robots(self, request: Request, origin: Origin, agent: str | bytes, robots: OriginState) -> None:
        """Act on a request the robots.txt refuses before it waits for the tdmrep.json."""
        judgement = self._verdict(request, agent, robots, None, time.time())
        if not judgement.kind.passes:
            self.enforcement.act(request, origin, judgement)

    async def _waiting(self, request: Request, origin: Origin, agent: str | bytes,
                       robots: OriginState | None) -> Request | None:
        """Judge ``request`` once its origin's documents are known: wait for their
        fetch, and while a document holds the request (unreachable), until a retry
        succeeds or waiting no longer helps."""
        tdm = self.tdm
        waiting: Waiting = self.states
        try:
            if robots is None:
                robots = await self._known(self.states, request, origin, agent, None)
                if tdm is not None:
                    self._judge_robots(request, origin, agent, robots)
            tdm_state = None
            if tdm is not None:
                waiting = tdm
                tdm_state = await self._known(tdm, request, origin, agent, robots)
        except Closing as closing:
            persists = _compat.scheduler_persists(self.crawler.engine)
            return self.enforcement.act(request, origin, self._at_close(request, origin, waiting, persists,
                                                                        closing.reason))
        return self.enforcement.act(request, origin, self._verdict(request, agent, robots, tdm_state, time.time()))

    async def _known(self, states: Waiting, request: Request, origin: Origin, agent: str | bytes,
                     robots: OriginState | None) -> OriginState:
        """The state of ``states``' document once it no longer holds ``request``. A
        request it holds is told once (``held``); one that waiting no longer helps is
        dropped (acting on it raises). ``robots``: the robots.txt state, when
        ``states`` is another document's. Raises :class:`Closing`."""
        held = False
        state = await states.current(origin, request)
        token = self.agents.token(agent)
        while True:
            now = time.time()
            if not states.holding(state, now):
                break
            judgement = holding(request.url, token, state, states.document, now, self.policy, robots or state)
            assert judgement is not None
            if judgement.kind is Kind.DROPPED:
                states.give_up(origin)
                self.enforcement.act(request, origin, judgement)  # raises
            if not held:
                held = True
                self.enforcement.act(request, origin, judgement)
            fetched = await states.wait(origin, request, state.give_up_at(self.policy) - now)
            # Woken by a fetch's state, or at the deadline (a retry still running then serves nobody).
            state = fetched or states.cache.get(origin) or await states.current(origin, request)
        if held:
            self._inc(f"{states.document.stat}released")
        return state

    def _responded(self, request: Request, response: Response, spider: Any = None) -> Response:
        """``process_response`` with a teller of passed responses (the ledger with
        ``ROBOTSTXT_LEDGER_RESPONSES``): tell it of the response of a judged request,
        before it goes to the spider."""
        enforcement = self.enforcement
        meta = request.meta
        if FETCH_META in meta or KEEPER_META in meta or meta.get("dont_obey_robotstxt"):
            return response
        if self._origin_of(request.url) is not None:
            enforcement.responded(request, response.status, "passed")
        return response

    def _parked_held(self, request: Request, origin: Origin) -> None:
        """A request parked while its origin is held: told as held (its verdict follows
        when it comes back from parking). A ``dont_obey_robotstxt`` request, parked with
        the others of its origin, is not held by the robots.txt: it is judged when it comes back."""
        if request.meta.get("dont_obey_robotstxt"):
            return
        token = self.agents.token_of(request)
        state = self.states.cache.get(origin)
        judgement = None if state is None else holding(request.url, token, state, self.states.document,
                                                       time.time(), self.policy, state)
        if judgement is None or judgement.kind is not Kind.HELD:
            judgement = Judgement(Kind.HELD, request.url, token, state, document=self.states.document)
        self.enforcement.tell(request, origin, judgement)

    def _at_close(self, request: Request, origin: Origin, waiting: Waiting, persists: bool,
                  reason: str) -> Judgement:
        """The verdict on a request given up at close or at idle (``reason``) while
        ``waiting``'s document held it: handed back (``persists``) or dropped, with the
        document's state then (what it answered, how long it was unreachable)."""
        return at_close(request.url, self.agents.token_of(request), waiting.document, persists, reason,
                        waiting.cache.get(origin), time.time())

    def _holder(self, origin: Origin) -> Waiting:
        """The document that holds the origin's requests: its robots.txt, else its tdmrep.json."""
        tdm = self.tdm
        if tdm is not None and not self.states.states.holds_now(origin):
            return tdm
        return self.states

    def _parked_requeued(self, request: Request, origin: Origin, reason: str) -> None:
        """A parked request handed back to the scheduler at close (``reason``): its
        ``requeued`` verdict, counted and told as that of a request that waited in the
        downloader (the parking schedules it)."""
        self.enforcement.act(request, origin, self._at_close(request, origin, self.states, True, reason))

    # -- the crawl's end -------------------------------------------------------------------
    def _spider_idle(self, spider: Any = None) -> None:
        waiting = self.states.waiting + (self.tdm.waiting if self.tdm is not None else 0)
        if waiting and not self.states.closing:
            raise DontCloseSpider

    async def _spider_closed(self, spider: Any = None) -> None:
        self.shortcuts.flush()
        self.states.close()
        if self.tdm is not None:
            self.tdm.close()
        if self.states.states.store is not None:
            await self.states.states.store.close()  # after the saves still running
        self.enforcement.summarize([states for states in (self.states, self.tdm) if states is not None])
        await self.enforcement.close()
