"""``scrapy_rfc9309.RobotsTxtMiddleware``: Scrapy's robots.txt middleware, done the
way RFC 9309 says.

Data flows one way: request -> origin -> cached state -> matcher -> verdict. The
origin's state comes from :class:`~scrapy_rfc9309.origin_states.OriginStates`
(cache, store, single-flight fetch, waiting, retries); this class only judges.
With ``ROBOTSTXT_TDMREP`` on, a request allowed by robots.txt is judged by the
origin's tdmrep.json as well, from a second :class:`OriginStates` of the same kind.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, NoReturn

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, NotConfigured

from . import ACCELERATED, _compat, matcher_in_use
from . import signals as rfc_signals
from .access import Cause, Decision, OriginState
from .agent import agent_note, product_token
from .config import Config, usage_line
from .crawl_delay import CrawlDelay
from .dns_warmup import DnsWarmup
from .documents import TDMREP
from .exceptions import (
    RobotsTxtConfigError,
    RobotsTxtForbidden,
    RobotsTxtMetaError,
    RobotsTxtTdmReserved,
    RobotsTxtUnreachable,
    RobotsTxtUsageDenied,
    RobotsTxtUsageDeniedByResponse,
)
from .fetch import FETCH_META, RobotsFetcher
from .ledger import Ledger
from .origin import Origin
from .origin_states import Closing, OriginStates
from .parking import GIVEN_UP_META, KEEPER_META
from .reporting import Reporting
from .response_usage import PREFERENCES_META, TDMREP_META, ResponseUsage
from .store_client import StoreClient
from .stores import store_class
from .tdmrep import reserves

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from .matcher import Rule
    from .preferences import Preferences
    from .robotstxt import RobotsTxt, Verdict

__all__ = ["AGENT_META", "PREFERENCES_META", "TDMREP_META", "USAGE_META", "RobotsTxtMiddleware"]

logger = logging.getLogger(__name__)

#: Request meta key: the product token (or User-Agent string) to obey for this request.
AGENT_META = "robotstxt_user_agent"
#: Request (and so response) meta key set to the applicable usage preference.
USAGE_META = "robotstxt_usage"
#: The stat counting the requests dropped for each ``RobotsTxtUnreachable.reason``.
DROP_STATS = {
    "max_wait": "dropped_unreachable",
    "no_host": "dropped_no_host",
    "cannot_request": "dropped_cannot_request",
    "closing": "held_released_on_close",
}
#: This middleware's path in ``DOWNLOADER_MIDDLEWARES``.
MIDDLEWARE_PATH = "scrapy_rfc9309.RobotsTxtMiddleware"


class RobotsTxtMiddleware(Reporting):
    """Downloader middleware enforcing robots.txt per RFC 9309."""

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        self.crawler = crawler
        if _compat.builtin_middleware_enabled(crawler.settings):
            raise RobotsTxtConfigError(
                f"Scrapy's built-in robots.txt middleware is enabled beside {MIDDLEWARE_PATH}: both would fetch "
                "every robots.txt, and the built-in one would judge each request first. Add "
                f"'{_compat.BUILTIN_MIDDLEWARE}': None to DOWNLOADER_MIDDLEWARES, or enable this plugin with "
                "ADDONS = {'scrapy_rfc9309.Addon': 0}, which does it for you"
            )
        self.config = Config.from_settings(crawler.settings)
        self.policy = self.config.policy
        self._agents_logged: set[str | bytes] = set()
        self._default_agent, source = self._configured_agent()
        if note := agent_note(self._default_agent, source):
            logger.warning(note)
        self._log_agent(self._default_agent, source)
        logger.info("%s", usage_line(self.config))
        logger.log(logging.INFO if ACCELERATED else logging.WARNING, "robots.txt matcher: %s", matcher_in_use())
        store = warmup = None
        store_cls = store_class(self.config.store)
        if store_cls is not None:
            store = StoreClient(store_cls.from_crawler(crawler), crawler, self.config)
            warmup = DnsWarmup(crawler) if self._dns_warmup_possible() else None
        self.fetcher = RobotsFetcher(crawler, self.policy, self.config.max_size,
                                     warmup.route_seen if warmup is not None else None)
        self.states = OriginStates(crawler, self.config, self.fetcher, store, warmup, self._origin_of)
        #: The usage categories listed in ROBOTSTXT_USAGE_DENY that a TDM reservation denies.
        self.tdm_deny = tuple(category for category in self.config.usage_deny if reserves(category))
        #: The tdmrep.json states (ROBOTSTXT_TDMREP): an unreachable file holds requests when reservations
        #: are enforced, as an unreachable robots.txt does; otherwise they go on, with nothing known.
        self.tdm = (OriginStates(crawler, self.config, self.fetcher, store, None, self._origin_of, document=TDMREP,
                                 holds=bool(self.tdm_deny), peer=self.states)
                    if self.config.tdmrep else None)
        self.crawl_delay = CrawlDelay(crawler, self.config.crawl_delay_max) if self.config.crawl_delay else None
        self._origins: dict[str, Origin | None] = {}
        self._meta_errors_logged: set[type] = set()
        config = self.config
        self.response_usage = (ResponseUsage(crawler, config) if config.usage_headers or config.usage_meta
                                else None)
        #: The verdict ledger (``ROBOTSTXT_LEDGER``), told of every state settled and every verdict.
        self.ledger = Ledger(crawler, config, product_token(self._default_agent)) if config.ledger else None
        self._tokens: dict[str | bytes, str] = {}
        for lifecycle in (self.states, self.tdm):
            if lifecycle is not None:
                lifecycle.ledger = self.ledger
        if self.ledger is not None:
            self.states.parking.on_held = self._parked_held
        crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    def _dns_warmup_possible(self) -> bool:
        """``ROBOTSTXT_DNS_WARMUP``, unless the crawl runs without a reactor: the
        lookups go through Twisted's resolver into Scrapy's DNS cache, which such a
        crawl does not use (its download handler resolves names itself)."""
        if not self.config.dns_warmup:
            return False
        settings = self.crawler.settings
        if _compat.reactor_enabled(settings):
            return True
        if (settings.getpriority("ROBOTSTXT_DNS_WARMUP") or 0) > 0:
            logger.warning("ROBOTSTXT_DNS_WARMUP is off: it needs a Twisted reactor (TWISTED_REACTOR_ENABLED is "
                           "False). Set ROBOTSTXT_DNS_WARMUP to False to remove this warning.")
        return False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @property
    def cache(self) -> Any:
        """The in-memory cache of origin states (a :class:`~scrapy_rfc9309.stores.MemoryStore`)."""
        return self.states.cache

    # -- the downloader hook --------------------------------------------------------------
    def process_request(self, request: Request,
                        spider: Any = None) -> Request | Coroutine[Any, Any, Request | None] | None:
        """Judge ``request``. A request of an origin whose robots.txt is cached and
        fresh is judged at once; otherwise a coroutine waits for the fetch (Scrapy
        awaits what ``process_request`` returns)."""
        meta = request.meta
        if KEEPER_META in meta:
            return self.states.parking.keeper()
        if FETCH_META in meta or request.url.startswith(("data:", "file:")):
            return None
        if meta.get("dont_obey_robotstxt"):
            if self.ledger is not None and (origin := self._origin_of(request.url)) is not None:
                self._record(request, origin, "not_judged", why="dont_obey_robotstxt")
            return None
        origin = self._origin_of(request.url)
        if origin is None:
            return None
        # A redirect copies meta: a preference found for the URL before it is stale.
        meta.pop(USAGE_META, None)
        meta.pop(PREFERENCES_META, None)
        agent = self.user_agent_for(request)
        now = time.time()
        tdm = self.tdm
        if meta.pop(GIVEN_UP_META, False):  # a held request back from parking after its origin was given up
            for lifecycle in (self.states, tdm):
                if lifecycle is not None and (given_up := lifecycle.given_up(origin)) is not None:
                    self._give_up(request, origin, given_up, lifecycle)  # not held again
        state = self.states.cached(origin, now)
        if state is not None:
            rule = self._judge(request, origin, state, agent)
            if tdm is None:
                if self.ledger is not None:
                    self._allowed(request, origin, state, agent, rule)
                return None
            meta.pop(TDMREP_META, None)
            tdm_state = tdm.cached(origin, now)
            if tdm_state is not None:
                self._judge_tdm(request, origin, tdm_state, state, agent)
                return None
            return tdm.park(origin, request) or self._process_tdm(request, origin, state, agent)
        if tdm is not None:
            tdm.prefetch(origin, request)  # fetched beside the robots.txt, not after it
        parked = self.states.park(origin, request)
        if parked is not None:
            return parked  # Scrapy schedules a returned request: it is parked on the way (see parking)
        return self._process_waiting(request, origin, agent)

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Response:
        """Read the usage preferences the response states (headers, and meta tags with
        ``ROBOTSTXT_USAGE_META``), combined with its request's robots.txt and
        tdmrep.json ones; raise for one that denies a category of ``ROBOTSTXT_USAGE_DENY``."""
        reader, ledger = self.response_usage, self.ledger
        if reader is None and ledger is None:
            return response
        meta = request.meta
        if FETCH_META in meta or KEEPER_META in meta or meta.get("dont_obey_robotstxt"):
            return response
        origin = self._origin_of(request.url)
        if origin is None:
            return response
        if reader is not None:
            try:
                self._read_usage(request, response, origin, reader)
            except RobotsTxtUsageDeniedByResponse:
                if ledger is not None:
                    ledger.response(request, response.status, "usage_denied")
                raise
        if ledger is not None:
            ledger.response(request, response.status, "passed")
        return response

    def _read_usage(self, request: Request, response: Response, origin: Origin, reader: ResponseUsage) -> None:
        preferences = reader.read(request, response, self._token_of(request), origin.robots_url)
        if preferences is None:
            return
        request.meta[PREFERENCES_META] = preferences
        if _compat.has_receivers(self.crawler, rfc_signals.robotstxt_usage_preferences):
            self.crawler.signals.send_catch_log(rfc_signals.robotstxt_usage_preferences, request=request,
                                                response=response, preferences=preferences)
        for category in self.config.usage_deny:
            if preferences.denies(category):
                self._deny_response(request, response, origin, preferences, category)

    def _deny_response(self, request: Request, response: Response, origin: Origin, preferences: Preferences,
                       category: str) -> NoReturn:
        sources = preferences.sources_of(category)
        self._inc("usage_denied_response")
        message = f"Usage preference denies {category}: {response} not passed to the spider ({'; '.join(sources)})"
        logger.debug(message, extra=self._log_extra)
        raise RobotsTxtUsageDeniedByResponse(message, preferences, origin.robots_url, category, sources)

    async def _process_waiting(self, request: Request, origin: Origin, agent: str | bytes) -> Request | None:
        state = await self._known(self.states, request, origin)
        if isinstance(state, Request):
            return state
        rule = self._judge(request, origin, state, agent)
        if self.tdm is None:
            if self.ledger is not None:
                self._allowed(request, origin, state, agent, rule)
            return None
        request.meta.pop(TDMREP_META, None)
        return await self._process_tdm(request, origin, state, agent)

    async def _process_tdm(self, request: Request, origin: Origin, robots: OriginState,
                           agent: str | bytes) -> Request | None:
        assert self.tdm is not None
        state = await self._known(self.tdm, request, origin)
        if isinstance(state, Request):
            return state
        self._judge_tdm(request, origin, state, robots, agent)
        return None

    async def _known(self, states: OriginStates, request: Request, origin: Origin) -> OriginState | Request:
        """The origin's state of ``states``' document once it is known (waiting for
        its fetch, and while it holds the request), or the request to hand back to
        the scheduler at close. Raises :class:`RobotsTxtUnreachable` for a request
        dropped instead."""
        held = False
        try:
            state = await states.current(origin, request)
            while True:
                now = time.time()
                if not states.holding(state, now):
                    break
                if state.waited_too_long(now, self.policy):
                    self._give_up(request, origin, state, states)
                if not held:
                    held = True
                    if self.ledger is not None:
                        self._record(request, origin, "held")
                    self._inc(f"{states.document.stat}held")
                    logger.debug("Holding %s: %s of %s is unreachable (%s)", request, states.document.name, origin,
                                 state.detail, extra=self._log_extra)
                fetched = await states.wait(origin, request, state.give_up_at(self.policy) - now)
                # Woken by a fetch's state, or at the deadline (a retry still running then serves nobody).
                state = fetched or states.cache.get(origin) or await states.current(origin, request)
        except Closing:
            if _compat.scheduler_persists(self.crawler.engine):
                return self._requeue(request, origin, states)
            self._drop(request, origin, "was not known when the spider closed", "closing", states)
        if held:
            self._inc(f"{states.document.stat}released")
        return state

    def _requeue(self, request: Request, origin: Origin, states: OriginStates) -> Request:
        """A request still waiting when the spider closes, handed back to a scheduler
        that keeps it (``JOBDIR``, a persistent scrapy-redis queue): a resumed crawl
        judges it then. The copy is not filtered as a duplicate: the original was
        seen already, and it is taken out of the queue once, so it is crawled once."""
        self._inc(f"{states.document.stat}requeued_on_close")
        states.requeued()
        if self.ledger is not None:
            self._record(request, origin, "requeued")
        logger.debug("Put back in the scheduler: %s (%s of %s was not known when the spider closed)",
                     request, states.document.name, origin, extra=self._log_extra)
        return request.replace(dont_filter=True)

    def _give_up(self, request: Request, origin: Origin, state: OriginState, states: OriginStates) -> NoReturn:
        """Drop a request of an origin that waiting cannot help, or no longer helps."""
        states.give_up(origin)
        cause = state.cause
        if cause is Cause.NO_HOST:
            self._drop(request, origin, f"cannot be fetched: its host name does not resolve ({state.detail})",
                       "no_host", states)
        if cause is Cause.CANNOT_REQUEST:
            self._drop(request, origin, f"cannot be fetched: Scrapy cannot make the request ({state.detail})",
                       "cannot_request", states)
        waited = self.policy.max_wait_for(cause)
        self._drop(request, origin, f"unreachable for {waited:g} s ({state.detail})", "max_wait", states)

    # -- the agent ------------------------------------------------------------------------
    def _configured_agent(self) -> tuple[str, str]:
        """The agent obeyed for a request that names none of its own, and where it is
        set: ``ROBOTSTXT_USER_AGENT``, else what Scrapy sends: ``USER_AGENT``, or the
        spider's ``user_agent`` attribute, which Scrapy sends instead (deprecated in
        Scrapy 2.19, which warns about it)."""
        if self.config.user_agent:
            return self.config.user_agent, "ROBOTSTXT_USER_AGENT"
        spider_agent = getattr(self.crawler.spider, "user_agent", None)
        if isinstance(spider_agent, str) and spider_agent:
            return spider_agent, "the spider's user_agent attribute"
        return self.crawler.settings.get("USER_AGENT") or "", "USER_AGENT"

    def user_agent_for(self, request: Request) -> str | bytes:
        """The string whose product token is obeyed for ``request``: the request's
        ``robotstxt_user_agent`` meta key, ``ROBOTSTXT_USER_AGENT``, the request's
        User-Agent header, ``USER_AGENT``."""
        agent = request.meta.get(AGENT_META)
        if agent is not None and not isinstance(agent, (str, bytes)):
            self._bad_meta(request, agent)
        if not agent:
            agent = self.config.user_agent or request.headers.get(b"User-Agent") or self._default_agent
            if agent not in self._agents_logged:
                self._log_agent(agent, "a request's User-Agent header")
        elif agent not in self._agents_logged:
            self._log_agent(agent, f"a request's {AGENT_META!r} meta key")
        return agent

    def _bad_meta(self, request: Request, value: object) -> None:
        kind = type(value)
        message = (f"Dropped {request}: request meta {AGENT_META!r} must be a product token string, "
                   f"got {kind.__name__} {value!r}")
        self._inc("invalid_meta")
        if self.ledger is not None and (origin := self._origin_of(request.url)) is not None:
            self._record(request, origin, "dropped", why="invalid_meta")
        if kind not in self._meta_errors_logged:
            self._meta_errors_logged.add(kind)
            logger.error(message, extra=self._log_extra)
        raise RobotsTxtMetaError(message, AGENT_META)

    def _log_agent(self, agent: str | bytes, source: str) -> None:
        self._agents_logged.add(agent)
        text = agent.decode("latin-1") if isinstance(agent, bytes) else agent
        token = product_token(agent)
        logger.info(
            "robots.txt: obeying the groups for product token %r (from %s %r)%s", token or "*", source, text,
            "" if token else "; it names no token, so only the '*' group applies", extra=self._log_extra,
        )

    # -- verdicts -------------------------------------------------------------------------
    def _judge(self, request: Request, origin: Origin, state: OriginState, agent: str | bytes) -> Rule | None:
        """Raise for a request the state forbids; apply Crawl-delay and usage
        preferences to one it allows. With the ledger on, returns the rule that
        allowed it, None when none matched (asked once: the ledger records it)."""
        robots = state.robots
        if robots is None:  # unavailable: everything is allowed
            return None
        rule = None
        if self.ledger is not None:
            rule = robots.deciding_rule(request.url, agent)
            if rule is not None and not rule.allow:
                self._record(request, origin, "disallowed", state, rule, agent=agent)
                self._forbid(request, origin, robots.verdict(request.url, agent))
        elif not robots.allowed(request.url, agent):
            self._forbid(request, origin, robots.verdict(request.url, agent))
        if self.crawl_delay is not None:
            self.crawl_delay.apply(request, origin, robots.crawl_delay(agent))
        if robots.has_usage(agent):
            self._apply_usage(request, origin, state, robots, agent)
        return rule

    def _forbid(self, request: Request, origin: Origin, verdict: Verdict) -> None:
        reason = f"{_rule_text(verdict)} of {origin.robots_url}"
        logger.debug("Forbidden by robots.txt: %(request)s (%(reason)s)", {"request": request, "reason": reason},
                     extra=self._log_extra)
        self._inc("forbidden")
        raise RobotsTxtForbidden(f"Forbidden by robots.txt: {request} ({reason})", verdict, origin.robots_url)

    def _drop(self, request: Request, origin: Origin, why: str, reason: str, states: OriginStates) -> NoReturn:
        """Raise :class:`RobotsTxtUnreachable` for ``request``, counted under
        ``reason`` (its stat and the close summary; the origin's state change is
        logged once, by :class:`OriginStates`)."""
        self._inc(states.document.stat + DROP_STATS[reason])
        states.dropped(origin, reason)
        if self.ledger is not None:
            self._record(request, origin, "dropped", why=reason)
        document = states.document
        message = f"Dropped: {document.name} of {origin} {why}: {request}"
        logger.debug(message, extra=self._log_extra)
        raise RobotsTxtUnreachable(message, document.url(origin), reason)

    def _apply_usage(self, request: Request, origin: Origin, state: OriginState, robots: RobotsTxt,
                     agent: str | bytes) -> None:
        preference = robots.usage(request.url, agent)
        if not preference:
            return
        request.meta[USAGE_META] = preference
        self.crawler.signals.send_catch_log(rfc_signals.robotstxt_content_usage, request=request,
                                            preference=preference)
        for category in self.config.usage_deny:
            if preference.denies(category):
                if self.ledger is not None:
                    self._record(request, origin, "usage_denied", state, robots.deciding_rule(request.url, agent),
                                 usage=str(preference), agent=agent)
                self._inc("usage_denied")
                message = f"Usage preference denies {category}: {request} ({preference} of {origin.robots_url})"
                logger.debug(message, extra=self._log_extra)
                raise RobotsTxtUsageDenied(message, preference, origin.robots_url)

    def _judge_tdm(self, request: Request, origin: Origin, state: OriginState, robots: OriginState,
                   agent: str | bytes) -> None:
        """Put the tdmrep.json rule that applies in the request's meta; raise for a
        reserved URL when reservations are enforced. An unreachable file without a
        copy at hand (only when they are not enforced) leaves the meta key unset.
        ``robots`` is the robots.txt state that allowed the request, for the ledger."""
        if state.decision(time.time(), self.policy) is Decision.HOLD:
            if self.ledger is not None:
                self._allowed(request, origin, robots, agent, _robots_rule(robots, request, agent), tdm=state)
            return
        tdmrep = state.tdmrep
        entry = None if tdmrep is None else tdmrep.entry_for(request.url)
        request.meta[TDMREP_META] = entry
        if entry is None or not entry.reserved or not self.tdm_deny:
            if self.ledger is not None:
                self._allowed(request, origin, robots, agent, _robots_rule(robots, request, agent), tdm=state)
            return
        if self.ledger is not None:
            self._record(request, origin, "tdm_reserved", robots, _robots_rule(robots, request, agent),
                         usage=_usage_text(request), tdm=state, agent=agent)
        self._inc("tdm_reserved")
        message = f"TDM rights reserved ({', '.join(self.tdm_deny)} denied): {request} ({entry})"
        logger.debug(message, extra=self._log_extra)
        raise RobotsTxtTdmReserved(message, entry, entry.url)

    # -- the ledger -----------------------------------------------------------------------
    def _allowed(self, request: Request, origin: Origin, state: OriginState, agent: str | bytes, rule: Rule | None,
                 tdm: OriginState | None = None) -> None:
        """Record that ``request`` is released (before it is: raises
        :class:`RobotsTxtLedgerError` when the record cannot be written). ``rule``:
        the robots.txt's rule that allowed it, None when none matched."""
        self._record(request, origin, "allowed", state, rule, usage=_usage_text(request), tdm=tdm, agent=agent)

    def _parked_held(self, request: Request, origin: Origin) -> None:
        """A request parked while its origin is held: its ``held`` record (its verdict follows
        when it comes back from parking). A ``dont_obey_robotstxt`` request, parked with the
        others of its origin, is not held by the robots.txt: its record is ``not_judged``, when it comes back."""
        if not request.meta.get("dont_obey_robotstxt"):
            self._record(request, origin, "held")

    def _record(self, request: Request, origin: Origin, verdict: str, state: OriginState | None = None,
                rule: Rule | None = None, why: str | None = None, usage: str | None = None,
                tdm: OriginState | None = None, agent: str | bytes | None = None) -> None:
        """Write the verdict record of ``request`` (see docs/ledger-format.md). ``agent``:
        the one :meth:`user_agent_for` gave, when the caller has it."""
        ledger = self.ledger
        assert ledger is not None
        version = None if state is None else ledger.version_of(origin, state)
        tdm_fields = None
        if self.tdm is not None:
            entry = request.meta.get(TDMREP_META)
            tdm_fields = (None if tdm is None else ledger.version_of(origin, tdm, TDMREP),
                          None if entry is None else [int(entry.reserved), entry.location, entry.index])
        ledger.verdict(request, origin, self._token_of(request, agent), version, verdict, rule, why, usage, tdm_fields)

    def _token_of(self, request: Request, agent: str | bytes | None = None) -> str:
        """The product token obeyed for ``request`` (judged, and its agent logged, in
        ``process_request`` already); ``agent``: the one :meth:`user_agent_for` gave."""
        if agent is None:
            agent = request.meta.get(AGENT_META)
            if not agent or not isinstance(agent, (str, bytes)):
                agent = self.config.user_agent or request.headers.get(b"User-Agent") or self._default_agent
        token = self._tokens.get(agent)
        if token is None:
            if len(self._tokens) >= 1024:
                self._tokens.clear()
            token = self._tokens[agent] = product_token(agent)
        return token

    # -- public API -----------------------------------------------------------------------
    def state_for(self, url: str) -> OriginState | None:
        """The cached state of the origin of ``url`` (no fetch), or None."""
        origin = Origin.from_url(url)
        return None if origin is None else self.states.cache.get(origin)

    async def fetch_state(self, url: str) -> OriginState | None:
        """The state of the origin of ``url``, fetching its robots.txt through the
        engine (once, shared with the requests waiting for it) when it is not
        cached or expired. None for a URL without an http(s) origin, or when the
        spider closes meanwhile."""
        return await self._fetched(self.states, url)

    async def fetch_tdmrep_state(self, url: str) -> OriginState | None:
        """With ``ROBOTSTXT_TDMREP`` on, the tdmrep.json state of the origin of
        ``url``, fetched as :meth:`fetch_state` fetches the robots.txt; otherwise None."""
        return None if self.tdm is None else await self._fetched(self.tdm, url)

    async def _fetched(self, states: OriginStates, url: str) -> OriginState | None:
        origin = self._origin_of(url)
        if origin is None:
            return None
        try:
            return await states.current(origin, Request(states.document.url(origin), dont_filter=True))
        except Closing:
            return None

    def sitemaps_for(self, url: str) -> list[str]:
        """Sitemap URLs of the cached robots.txt of the origin of ``url``."""
        state = self.state_for(url)
        robots = None if state is None else state.robots
        return [] if robots is None else list(robots.sitemaps)

    # -- plumbing -------------------------------------------------------------------------
    def _origin_of(self, url: str) -> Origin | None:
        """The http(s) origin of ``url``, memoised by its ``scheme://authority`` text."""
        end = url.find("/", url.find("//") + 2) if "//" in url else -1
        prefix = url if end < 0 else url[:end]
        try:
            return self._origins[prefix]
        except KeyError:
            origin = Origin.from_url(url)
            if origin is not None and origin.scheme not in ("http", "https"):
                origin = None
            if len(self._origins) >= 4096:
                self._origins.clear()
            if "?" not in prefix and "#" not in prefix and ";" not in prefix:
                self._origins[prefix] = origin
            return origin

    def _spider_idle(self, spider: Any = None) -> None:
        waiting = self.states.waiting + (self.tdm.waiting if self.tdm is not None else 0)
        if waiting and not self.states.closing:
            raise DontCloseSpider

    async def _spider_closed(self, spider: Any = None) -> None:
        self.states.close()
        if self.tdm is not None:
            self.tdm.close()
        if self.states.store is not None:
            await self.states.store.close()  # after the saves still running
        for states in (self.states, self.tdm):
            summary = None if states is None else states.summary()
            if summary is not None:
                assert states is not None
                logger.warning("%s: %s", states.document.name, summary, extra=self._log_extra)
        if self.ledger is not None:
            await self.ledger.close()


def _robots_rule(state: OriginState, request: Request, agent: str | bytes) -> Rule | None:
    robots = state.robots
    return None if robots is None else robots.deciding_rule(request.url, agent)


def _usage_text(request: Request) -> str | None:
    preference = request.meta.get(USAGE_META)
    return str(preference) if preference else None


def _rule_text(verdict: Verdict) -> str:
    rule = verdict.rule
    if rule is None:
        return "no rule"
    return f"{rule.directive}: {rule.pattern}, line {rule.line}"
