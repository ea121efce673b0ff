"""``scrapy_rfc9309.RobotsTxtMiddleware``: Scrapy's robots.txt middleware, done the
way RFC 9309 says.

Data flows one way: request -> origin -> cached state -> matcher -> verdict.
Requests that must wait (for a robots.txt being fetched, or for an unreachable
one to come back) are taken out of the downloader's active set while they wait,
so they do not count against ``CONCURRENT_REQUESTS`` and stall other origins.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet import defer, task
from twisted.internet.error import TimeoutError as TxTimeoutError

from . import ACCELERATED, matcher_in_use
from . import signals as rfc_signals
from .access import Access, Decision, OriginState
from .agent import agent_note, product_token
from .config import DEFAULTS, Config
from .exceptions import RobotsTxtForbidden, RobotsTxtUnreachable, RobotsTxtUsageDenied
from .fetch import FETCH_META, RobotsFetcher
from .origin import Origin
from .scrapy_parser import RobotParser
from .store_client import StoreClient
from .stores import MemoryStore, store_class

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

__all__ = ["RobotsTxtMiddleware"]

logger = logging.getLogger(__name__)

#: Request meta key: the product token (or User-Agent string) to obey for this request.
AGENT_META = "robotstxt_user_agent"
#: Request (and so response) meta key set to the applicable usage preference.
USAGE_META = "robotstxt_usage"


class _Closing(Exception):
    """The spider started closing while a request waited."""

_CLOSE_POLL = 0.2


class RobotsTxtMiddleware:
    """Downloader middleware enforcing robots.txt per RFC 9309."""

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        self.crawler = crawler
        self.config = Config.from_settings(crawler.settings)
        self.policy = self.config.policy
        self.stats = crawler.stats
        if note := agent_note(self.config.user_agent or crawler.settings.get("USER_AGENT"),
                              "ROBOTSTXT_USER_AGENT" if self.config.user_agent else "USER_AGENT"):
            logger.warning(note)
        logger.log(logging.INFO if ACCELERATED else logging.WARNING, "robots.txt matcher: %s", matcher_in_use())
        #: Parsed states of the origins in use, in this process (bounded LRU).
        self.cache = MemoryStore(self.config.cache_size)
        #: The store behind the cache (``ROBOTSTXT_STORE``), None for memory only.
        self.shared: StoreClient | None = None
        store_cls = store_class(crawler.settings.get("ROBOTSTXT_STORE", DEFAULTS["ROBOTSTXT_STORE"]))
        if store_cls is not None:
            self.shared = StoreClient(store_cls.from_crawler(crawler), crawler, self.policy,
                                      self.config.store_lock_ttl, self.config.store_retry_delay)
        self.fetcher = RobotsFetcher(crawler, self.policy, self.config.max_size)
        self._default_agent: str = crawler.settings.get("USER_AGENT") or ""
        self._inflight: set[Origin] = set()
        self._waiters: dict[Origin, list[defer.Deferred[Any]]] = {}
        self._retry_calls: dict[Origin, Any] = {}
        self._triggers: dict[Origin, Request] = {}
        self._fetch_tasks: dict[Origin, defer.Deferred[Any]] = {}
        self._origins: dict[str, Origin | None] = {}
        self._cache_hits = 0
        self._detached: set[Request] = set()
        self._waiting = 0
        self._closing = False
        self._close_watch: task.LoopingCall | None = None
        self._agents_logged: set[str] = set()
        self._slot_floors: dict[str, float] = {}
        self._slot_delays: dict[str, float] = {}
        self._slot_origin_delays: dict[str, dict[Origin, float]] = {}
        self._capped_logged: set[Origin] = set()
        crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)
        if self.config.crawl_delay:
            # Connected after AutoThrottle's handler, so it runs after it.
            crawler.signals.connect(self._keep_crawl_delay, signal=signals.response_downloaded)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    # -- stats and logging ------------------------------------------------------------
    def _inc(self, key: str) -> None:
        assert self.stats is not None
        self.stats.inc_value(f"robotstxt/{key}")

    @property
    def _log_extra(self) -> dict[str, Any]:
        return {"spider": self.crawler.spider}

    # -- the agent ------------------------------------------------------------------
    def user_agent_for(self, request: Request) -> str | bytes:
        """The string whose product token is obeyed for ``request``: the request's
        ``robotstxt_user_agent`` meta key, ``ROBOTSTXT_USER_AGENT``, the request's
        User-Agent header, the spider's ``user_agent`` attribute, ``USER_AGENT``."""
        agent = request.meta.get(AGENT_META) or self.config.user_agent
        if not agent:
            agent = request.headers.get(b"User-Agent")
        if not agent:
            agent = getattr(self.crawler.spider, "user_agent", None) or self._default_agent
        return agent

    def _log_agent(self, agent: str | bytes) -> None:
        key = agent.decode("latin-1") if isinstance(agent, bytes) else agent
        if key in self._agents_logged:
            return
        self._agents_logged.add(key)
        token = product_token(agent)
        logger.info(
            "robots.txt: obeying the groups for product token %r (from %r)%s", token or "*", key,
            "" if token else "; it names no token, so only the '*' group applies", extra=self._log_extra,
        )

    # -- the downloader hooks -----------------------------------------------------------
    def process_request(self, request: Request, spider: Any = None) -> Coroutine[Any, Any, None] | None:
        """Judge ``request``. A request of an origin whose robots.txt is cached and
        fresh is judged at once; otherwise a coroutine waits for the fetch (Scrapy
        awaits what ``process_request`` returns)."""
        meta = request.meta
        if FETCH_META in meta:
            # Our own robots.txt fetch: keep it from occupying a CONCURRENT_REQUESTS place.
            self._detach(request)
            return None
        if meta.get("dont_obey_robotstxt") or request.url.startswith(("data:", "file:")):
            return None
        origin = self._origin_of(request.url)
        if origin is None:
            return None
        # A redirect copies meta: a preference found for the URL before it is stale.
        meta.pop(USAGE_META, None)
        agent = self.user_agent_for(request)
        if agent not in self._agents_logged:
            self._log_agent(agent)
        state = self.cache.get(origin)
        if state is not None and not state.expired(time.time()) and state.access is not Access.UNREACHABLE:
            self._cache_hits += 1  # written to the stats now and then (see _flush_stats)
            if self._cache_hits >= 1000:
                self._flush_stats()
            self._judge(request, origin, state, agent)
            return None
        return self._process_request_waiting(request, origin, agent)

    async def _process_request_waiting(self, request: Request, origin: Origin, agent: str | bytes) -> None:
        held_since: float | None = None
        while True:
            try:
                state = await self._current_state(request, origin)
            except _Closing:
                self._drop(request, origin, "was still being fetched when the spider closed", "closing")
            if state is None:
                continue
            decision = state.decision(time.time(), self.policy)
            if decision is Decision.HOLD:
                if held_since is None:
                    held_since = time.time()
                    self._inc("held")
                    logger.debug("Holding %s: robots.txt of %s is unreachable (%s)", request, origin,
                                 _why(state), extra=self._log_extra)
                remaining = held_since + self.policy.max_wait - time.time()
                if remaining <= 0:
                    self._drop(request, origin, f"unreachable for {self.policy.max_wait:g} s", "max_wait")
                self._schedule_retry(origin, state)
                try:
                    await self._wait_for_state(request, origin, remaining)
                except _Closing:
                    self._drop(request, origin, "the spider is closing", "closing")
                continue
            if held_since is not None:
                self._inc("released")
            self._judge(request, origin, state, agent)
            return

    def _judge(self, request: Request, origin: Origin, state: OriginState, agent: str | bytes) -> None:
        """Raise for a request the state forbids; apply Crawl-delay and usage
        preferences to one it allows."""
        robots = state.robots
        if robots is None:  # unavailable: everything is allowed
            return
        if not robots.allowed(request.url, agent):
            self._forbid(request, origin, robots.verdict(request.url, agent))
        if self.config.crawl_delay:
            self._apply_crawl_delay(request, origin, robots.crawl_delay(agent))
        if robots.has_usage(agent):
            self._apply_usage(request, origin, robots, agent)

    async def _current_state(self, request: Request, origin: Origin) -> OriginState | None:
        """The origin's state, fetched (and waited for) when there is none or it
        expired; an unreachable origin's retry is started but not waited for."""
        now = time.time()
        state = self.cache.get(origin)
        if state is None:
            self._start_fetch(origin, request)
            return await self._wait_for_state(request, origin, None)
        if not state.expired(now):
            self._cache_hits += 1  # counted here, written to the stats now and then (see _flush_stats)
            if self._cache_hits >= 1000:
                self._flush_stats()
            return state
        if origin not in self._inflight:
            self._start_fetch(origin, request)
        if state.access is Access.UNREACHABLE:
            # Judged by the last good copy, or held, while the retry runs.
            return state
        return await self._wait_for_state(request, origin, None)

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

    # -- public API -------------------------------------------------------------------
    def state_for(self, url: str) -> OriginState | None:
        """The cached state of the origin of ``url`` (no fetch), or None."""
        origin = Origin.from_url(url)
        return None if origin is None else self.cache.get(origin)

    async def fetch_state(self, url: str) -> OriginState | None:
        """The state of the origin of ``url``, fetching its robots.txt through the
        engine (once, shared with the requests waiting for it) when it is not
        cached or expired. None for a URL without an http(s) origin."""
        origin = Origin.from_url(url)
        if origin is None or origin.scheme not in ("http", "https"):
            return None
        probe = Request(origin.robots_url, dont_filter=True)
        state = None
        while state is None:
            state = await self._current_state(probe, origin)
        return state

    def sitemaps_for(self, url: str) -> list[str]:
        """Sitemap URLs of the cached robots.txt of the origin of ``url``."""
        state = self.state_for(url)
        robots = None if state is None else state.robots
        return [] if robots is None else list(robots.sitemaps)

    # -- Crawl-delay and usage preferences ----------------------------------------------
    def _apply_crawl_delay(self, request: Request, origin: Origin, delay: float | None) -> None:
        """Never faster than the site asks: raise the request's download slot delay
        to the group's Crawl-delay (capped), keeping the slot's jitter but raising
        the delay so that the shortest randomised gap is still the Crawl-delay."""
        if not delay:
            return
        cap = self.config.crawl_delay_max
        if delay > cap:
            if origin not in self._capped_logged:
                self._capped_logged.add(origin)
                logger.info("robots.txt of %s asks for Crawl-delay %g s; capped at ROBOTSTXT_CRAWL_DELAY_MAX %g s",
                            origin, delay, cap, extra=self._log_extra)
                self._inc("crawl_delay_capped")
            delay = cap
        engine = self.crawler.engine
        assert engine is not None
        downloader = engine.downloader
        key = downloader.get_slot_key(request)
        # Origins can share a slot (Scrapy keys slots by host): the slot goes no
        # faster than the slowest of them asks.
        asked = self._slot_origin_delays.setdefault(key, {})
        asked[origin] = delay
        delay = max(asked.values())
        if self._slot_floors.get(key) == delay:
            return
        settings = downloader.per_slot_settings.setdefault(key, {})
        configured = float(settings.get("configured_delay", settings.get("delay", downloader._delay)))
        settings["configured_delay"] = configured
        jitter = float(settings.get("jitter", downloader._jitter))
        if jitter >= 1:
            settings["jitter"] = jitter = 0.0
        floor = max(configured, delay / (1 - jitter)) if jitter > 0 else max(configured, delay)
        settings["delay"] = floor
        slot = downloader.slots.get(key)
        if slot is not None:
            slot.delay = max(slot.delay, floor) if self._slot_floors.get(key) is None else floor
            slot.jitter = jitter
        self._slot_floors[key] = delay
        self._slot_delays[key] = floor
        self._inc("crawl_delay_applied")
        logger.debug("Crawl-delay %g s of %s applied to download slot %r (delay %g s)", delay, origin, key, floor,
                     extra=self._log_extra)

    def _keep_crawl_delay(self, response: Response, request: Request, spider: Any = None) -> None:
        engine = self.crawler.engine
        if engine is None:
            return
        key = request.meta.get("download_slot")
        if key is None:
            return
        floor = self._slot_delays.get(key)
        if floor is not None:
            slot = engine.downloader.slots.get(key)
            if slot is not None and slot.delay < floor:
                slot.delay = floor

    def _apply_usage(self, request: Request, origin: Origin, robots: Any, agent: str | bytes) -> None:
        preference = robots.usage(request.url, agent)
        if not preference:
            return
        request.meta[USAGE_META] = preference
        self.crawler.signals.send_catch_log(rfc_signals.robotstxt_content_usage, request=request,
                                            preference=preference)
        for category in self.config.usage_deny:
            if preference.denies(category):
                self._inc("usage_denied")
                message = f"Usage preference denies {category}: {request} ({preference} of {origin.robots_url})"
                logger.debug(message, extra=self._log_extra)
                raise RobotsTxtUsageDenied(message, preference, origin.robots_url)

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Response:
        self._reattach(request)
        return response

    def process_exception(self, request: Request, exception: BaseException, spider: Any = None) -> None:
        self._reattach(request)
        return None

    # -- verdicts ---------------------------------------------------------------------
    def _forbid(self, request: Request, origin: Origin, verdict: Any) -> None:
        robots_url = origin.robots_url
        reason = f"{_rule_text(verdict)} of {robots_url}"
        logger.debug("Forbidden by robots.txt: %(request)s (%(reason)s)", {"request": request, "reason": reason},
                     extra=self._log_extra)
        self._inc("forbidden")
        raise RobotsTxtForbidden(f"Forbidden by robots.txt: {request} ({reason})", verdict, robots_url)

    def _drop(self, request: Request, origin: Origin, why: str, stat: str) -> None:
        stat_key = "dropped_unreachable" if stat == "max_wait" else "held_released_on_close"
        self._inc(stat_key)
        message = f"Dropped: robots.txt of {origin} {why}: {request}"
        logger.info(message, extra=self._log_extra)
        raise RobotsTxtUnreachable(message, origin.robots_url, stat)

    # -- fetching ---------------------------------------------------------------------
    def _start_fetch(self, origin: Origin, request: Request) -> None:
        if origin in self._inflight:
            return
        self._inflight.add(origin)
        self._triggers[origin] = request
        fetching = deferred_from_coro(self._fetch(origin))
        self._fetch_tasks[origin] = fetching
        self._watch_close()
        fetching.addBoth(self._fetch_done, origin, fetching)

    def _fetch_done(self, result: Any, origin: Origin, fetching: defer.Deferred[Any]) -> None:
        if self._fetch_tasks.get(origin) is fetching:
            del self._fetch_tasks[origin]

    async def _fetch(self, origin: Origin) -> None:
        """Get a new state for ``origin``: from the store when another process
        fetched it (or is fetching it), otherwise by fetching its robots.txt."""
        state: OriginState | None = None
        lease = None
        try:
            previous = self.cache.get(origin)
            if self.shared is not None:
                found = await self.shared.obtain(origin, previous)
                if found.state is not None:
                    state = found.state
                    self.cache.put(origin, state)
                    self._inc("store_hit")
                    logger.debug("robots.txt of %s from the store (%s, fetched %.0f s ago)", origin,
                                 state.access.value, time.time() - state.fetched_at, extra=self._log_extra)
                    await self._announce(origin, state)
                    return
                previous, lease = found.previous, found.lease
            if previous is not None:
                self._inc("retry" if previous.access is Access.UNREACHABLE else "refetch")
            outcome = await self.fetcher.fetch(origin)
            now = time.time()
            state = previous.apply(outcome, now, self.policy) if previous else OriginState.initial(
                outcome, now, self.policy)
            self.cache.put(origin, state)
            if self.shared is not None:
                self.shared.save(origin, state, lease)
            self._inc(outcome.access.value)
            self._flush_stats()
            await self.crawler.signals.send_catch_log_async(
                signal=rfc_signals.robotstxt_fetched, origin=origin, state=state, request=self._triggers.get(origin))
            await self._announce(origin, state)
            if outcome.access is Access.UNREACHABLE and state.robots is not None:
                self._inc("stale_used")
                logger.warning("robots.txt of %s unreachable (%s); keeping the copy fetched %.0f s ago",
                               origin, _why(state), now - (state.good_at or now), extra=self._log_extra)
            elif outcome.access is Access.UNREACHABLE:
                logger.warning("robots.txt of %s unreachable (%s): complete disallow, retrying in %.1f s",
                               origin, _why(state), state.expires_at - now, extra=self._log_extra)
        except Exception:
            logger.exception("Unexpected error handling robots.txt of %s", origin, extra=self._log_extra)
        finally:
            if self.shared is not None:
                self.shared.release(lease)  # only when not saved: the fetch was cancelled or failed
            self._inflight.discard(origin)
            if state is None or state.decision(time.time(), self.policy) is not Decision.HOLD:
                # Kept while held, so that a retry's robots_parsed names a real request.
                self._triggers.pop(origin, None)
            self._notify(origin, state)

    async def _announce(self, origin: Origin, state: OriginState) -> None:
        """Send ``robotstxt_sitemaps`` and Scrapy's ``robots_parsed`` for a file
        parsed in this process (fetched, or loaded from the store)."""
        if state.access is not Access.PARSED or state.robots is None:
            return
        trigger = self._triggers.get(origin)
        if state.robots.sitemaps:
            await self.crawler.signals.send_catch_log_async(
                signal=rfc_signals.robotstxt_sitemaps, origin=origin, sitemaps=list(state.robots.sitemaps),
                request=trigger)
        parser = RobotParser.from_robots(state.robots, self.crawler.spider)
        await self.crawler.signals.send_catch_log_async(signal=signals.robots_parsed, robotparser=parser,
                                                        request=trigger)

    def _schedule_retry(self, origin: Origin, state: OriginState) -> None:
        if origin in self._inflight or origin in self._retry_calls:
            return
        from twisted.internet import reactor

        delay = max(0.0, state.expires_at - time.time())

        def retry() -> None:
            self._retry_calls.pop(origin, None)
            if self._waiters.get(origin) and not self._closing:
                self._start_fetch(origin, self._triggers.get(origin) or Request(origin.robots_url))

        self._retry_calls[origin] = reactor.callLater(delay, retry)  # type: ignore[attr-defined,arg-type]

    # -- waiting ----------------------------------------------------------------------
    def _notify(self, origin: Origin, value: Any) -> None:
        for waiter in self._waiters.pop(origin, []):
            if not waiter.called:
                waiter.callback(value)

    async def _wait_for_state(self, request: Request, origin: Origin, timeout: float | None) -> OriginState | None:
        """Wait, out of the downloader's active set, until the origin's state
        changes (returns the new state) or the timeout passes (returns None).
        Raises :class:`_Closing` when the spider starts closing meanwhile."""
        from twisted.internet import reactor

        waiter: defer.Deferred[Any] = defer.Deferred()
        self._waiters.setdefault(origin, []).append(waiter)
        if timeout is not None:
            waiter.addTimeout(timeout, reactor)
        self._detach(request)
        self._waiting += 1
        self._watch_close()
        try:
            value = await maybe_deferred_to_future(waiter)
        except (defer.CancelledError, defer.TimeoutError, TxTimeoutError):
            return None
        finally:
            self._waiting -= 1
            waiters = self._waiters.get(origin)
            if waiters and waiter in waiters:
                waiters.remove(waiter)
            self._reattach(request)
        if isinstance(value, _Closing):
            raise value
        return value

    def _detach(self, request: Request) -> None:
        """Take a waiting request out of the downloader's active set, up to
        ``ROBOTSTXT_MAX_WAITING`` of them: beyond, waiting requests count against
        CONCURRENT_REQUESTS again, so the scheduler stops handing out more and
        memory stays bounded."""
        engine = self.crawler.engine
        if self._waiting >= self.config.max_waiting and FETCH_META not in request.meta:
            return
        if engine is not None and request in engine.downloader.active:
            engine.downloader.active.discard(request)
            self._detached.add(request)

    def _reattach(self, request: Request) -> None:
        if request in self._detached:
            self._detached.discard(request)
            engine = self.crawler.engine
            if engine is not None:
                engine.downloader.active.add(request)

    # -- closing ----------------------------------------------------------------------
    def _spider_idle(self, spider: Any = None) -> None:
        if self._waiting and not self._closing:
            raise DontCloseSpider

    def _watch_close(self) -> None:
        if self._close_watch is None or not self._close_watch.running:
            self._close_watch = task.LoopingCall(self._check_closing)
            self._close_watch.start(_CLOSE_POLL, now=False)

    def _check_closing(self) -> None:
        engine = self.crawler.engine
        slot = getattr(engine, "_slot", None) if engine is not None else None
        closing = engine is None or not engine.running or slot is None or slot.closing is not None
        if closing:
            self._release_all()
        if (closing or not (self._waiting or self._fetch_tasks)) and self._close_watch is not None \
                and self._close_watch.running:
            self._close_watch.stop()

    def _release_all(self) -> None:
        self._closing = True
        for call in self._retry_calls.values():
            if call.active():
                call.cancel()
        self._retry_calls.clear()
        for origin in list(self._waiters):
            self._notify(origin, _Closing())
        # Scrapy's close waits for in-flight downloads: do not let a stalled
        # robots.txt keep the crawl open until DOWNLOAD_TIMEOUT.
        for fetching in list(self._fetch_tasks.values()):
            fetching.cancel()

    def _flush_stats(self) -> None:
        if self._cache_hits:
            assert self.stats is not None
            self.stats.inc_value("robotstxt/cache_hit", self._cache_hits)
            self._cache_hits = 0

    async def _spider_closed(self, spider: Any = None) -> None:
        self._flush_stats()
        self._release_all()
        if self._close_watch is not None and self._close_watch.running:
            self._close_watch.stop()
        if self.shared is not None:
            await self.shared.close()  # after the saves still running


def _why(state: OriginState) -> str:
    outcome = state.outcome
    if outcome is None:
        return "unknown"
    return outcome.detail or f"status {outcome.status}"


def _rule_text(verdict: Any) -> str:
    rule = verdict.rule
    if rule is None:
        return "no rule"
    return f"{rule.directive}: {rule.pattern}, line {rule.line}"
