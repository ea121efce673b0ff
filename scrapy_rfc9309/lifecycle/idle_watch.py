"""While requests are held for an unreachable robots.txt (or tdmrep.json), say what
the crawl waits for, and end the wait once held requests are all that is left.

RFC 9309 (2.3.1.4) makes an unreachable robots.txt a complete disallow: its origin's
requests wait for a retry that succeeds, up to ``ROBOTSTXT_MAX_WAIT`` (900 s by
default), while the rest of the crawl goes on. Once nothing else can make progress,
waiting keeps the crawl open for those requests alone: after ``ROBOTSTXT_MAX_WAIT_IDLE``
(120 s by default: a few retries on the backoff, short enough for someone waiting for
the crawl to end) they are given up as at close: dropped (reason ``idle``), or handed
back to a scheduler that keeps its queue (``JOBDIR``, persistent scrapy-redis) for the
next run. Nothing is crawled early.

"Nothing else can make progress" is Scrapy's own idle test with the held requests left
out: the start requests consumed, the scheduler empty, the scraper idle, nothing in the
downloader but the held requests (and the parking's keeper), no other origin's
robots.txt (or tdmrep.json) fetch in flight, and no other receiver of ``spider_idle``
keeping the spider open. A held origin's retry in flight does not stop the idle time,
but nothing is given up while it runs: it may succeed. The held requests keep Scrapy from sending
``spider_idle`` itself, so while the rest holds the watch sends it, as the engine would
without them: a spider that feeds itself from ``spider_idle``, or a scrapy-redis worker,
gets its work, and one that raises ``DontCloseSpider`` keeps the crawl (and the held
requests, up to their ``ROBOTSTXT_MAX_WAIT``) going; the idle time counts only across
looks at which nothing else kept it open.

Every ``LOGSTATS_INTERVAL`` seconds (Scrapy's LogStats interval, 60 by default) while
requests are held, one INFO line says how many, for which origins, why, when each is
fetched next, and when they will be given up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import CloseSpider, DontCloseSpider
from twisted.python.failure import Failure

from ..runtime import compat as _compat
from ..runtime.loop import Timer, looping_call
from ..runtime.reporting import Reporting

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from ..core.state import Policy
    from .waiting import WaitingRequests

__all__ = ["HeldWatch"]

logger = logging.getLogger(__name__)

#: Seconds between two looks at the crawl.
TICK = 1.0
#: Origins named in the progress line.
NAMED = 3


class HeldWatch(Reporting):
    """Watches the requests held by ``lifecycles`` (one per document) for one crawl."""

    def __init__(self, crawler: Crawler, lifecycles: Sequence[WaitingRequests], policy: Policy, max_wait_idle: float,
                 clock: Callable[[], float] = time.time, own_receivers: Sequence[Callable[..., Any]] = ()) -> None:
        self.crawler = crawler
        #: The plugin's own ``spider_idle`` receivers: their ``DontCloseSpider`` is the hold itself.
        self.own_receivers = tuple(own_receivers)
        self.lifecycles = tuple(lifecycles)
        self.policy = policy
        self.max_wait_idle = max_wait_idle
        self.clock = clock
        self.log_interval = crawler.settings.getfloat("LOGSTATS_INTERVAL", 60.0) or 60.0
        #: Since when held requests have been all that is left of the crawl (None: not now).
        self.idle_since: float | None = None
        self._logged_at: float | None = None
        self._held_since: float | None = None
        self._timer: Timer | None = None
        crawler.signals.connect(self._opened, signal=signals.spider_opened)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)

    def _opened(self, spider: Any = None) -> None:
        self._timer = looping_call(TICK, self.tick)

    def _closed(self, spider: Any = None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def tick(self) -> None:
        """One look: log the progress line when due, give up when idle long enough."""
        now = self.clock()
        waiting = sum(states.waiting for states in self.lifecycles)
        if not waiting or any(states.closing for states in self.lifecycles):
            self.idle_since = self._held_since = None
            return
        held = [(states, origin, count, state) for states in self.lifecycles
                for origin, count, state in states.held(now)]
        if held and self._only_held_left(held) and not self._kept_open(held):
            if self.idle_since is None:
                self.idle_since = now
            elif now - self.idle_since >= self.max_wait_idle and not self._retrying(held):
                self._give_up(held, now)
                return
        else:
            self.idle_since = None
        if not held:
            self._held_since = None
            return
        if self._held_since is None:
            self._held_since = now
        if now - (self._logged_at if self._logged_at is not None else self._held_since) >= self.log_interval:
            self._logged_at = now
            logger.info("%s", self.progress(held, now), extra=self._log_extra)

    def _only_held_left(self, held: list[tuple[WaitingRequests, Any, int, Any]]) -> bool:
        """Whether nothing but the held requests is left: no fetch in flight but the
        held origins' retries (then every request of ours in the downloader waits for
        one of them), and Scrapy's idle test true but for those requests, those
        retries and the parking's keeper."""
        retries = self._retrying(held)
        if sum(states.fetches.in_flight for states in self.lifecycles) > retries:
            return False  # another origin's fetch: its requests wait for it
        ours = sum(states.downloading for states in self.lifecycles)
        ours += 1 if self.lifecycles[0].parking.keeper.keeping else 0
        return _compat.only_these_left(self.crawler.engine, ours)

    @staticmethod
    def _retrying(held: list[tuple[WaitingRequests, Any, int, Any]]) -> int:
        """The held origins' retries in flight: the idle time goes on while they run (a
        failed one changes nothing), but nothing is given up until they end (one may
        succeed)."""
        return sum(1 for states, origin, _, _ in held if states.fetches.fetching(origin))

    def _kept_open(self, held: list[tuple[WaitingRequests, Any, int, Any]]) -> bool:
        """Send ``spider_idle``, as the engine would were the held requests not in its way:
        whether another receiver kept the spider open (``DontCloseSpider``), gave it more
        to do (the crawl is no longer idle), or closed it (``CloseSpider``: closed with its
        reason, as the engine closes it, and the held requests are given up at close)."""
        results = self.crawler.signals.send_catch_log(signal=signals.spider_idle, spider=self.crawler.spider,
                                                      dont_log=(DontCloseSpider, CloseSpider))
        close: CloseSpider | None = None
        for receiver, result in results:
            if receiver in self.own_receivers or not isinstance(result, Failure):
                continue
            if isinstance(result.value, DontCloseSpider):
                return True
            if isinstance(result.value, CloseSpider) and close is None:
                close = result.value
        if not self._only_held_left(held):
            return True
        if close is not None:  # as the engine does: closed with that reason, the held requests given up at close
            _compat.close_spider(self.crawler, close.reason)
            return True
        return False

    def progress(self, held: list[tuple[WaitingRequests, Any, int, Any]], now: float) -> str:
        """The progress line: how many requests are held, for which origins, why,
        when each is fetched next, and when they are given up."""
        held = sorted(held, key=lambda entry: -entry[2])
        count = sum(entry[2] for entry in held)
        named = [f"{origin} ({states.document.name} {state.detail}, next fetch in "
                 f"{max(0.0, state.expires_at - now):.0f} s)" for states, origin, _, state in held[:NAMED]]
        more = f" and {len(held) - NAMED} more" if len(held) > NAMED else ""
        ends = min(state.give_up_at(self.policy) for _, _, _, state in held)
        line = (f"robots.txt: {count} requests held for {len(held)} unreachable origins ({'; '.join(named)}{more}): "
                f"complete disallow until a fetch succeeds; given up in {max(0.0, ends - now):.0f} s at the latest "
                "(ROBOTSTXT_MAX_WAIT)")
        if self.idle_since is not None:
            line += (f", or in {max(0.0, self.idle_since + self.max_wait_idle - now):.0f} s: nothing else is left to "
                     "crawl (ROBOTSTXT_MAX_WAIT_IDLE)")
        return line

    def _give_up(self, held: list[tuple[WaitingRequests, Any, int, Any]], now: float) -> None:
        """Give the held requests up. A scheduler that keeps its queue gets them back only
        at close: the spider closes (``finished``, as Scrapy would close it: nothing else is
        left). Otherwise they are dropped (reason ``idle``), and the spider then closes, or
        not, as it would without them."""
        count = sum(entry[2] for entry in held)
        persists = _compat.scheduler_persists(self.crawler.engine)
        fate = ("handed back to the scheduler for the next run, and the spider closes" if persists
                else "dropped")
        logger.warning("robots.txt: nothing left to crawl for %.0f s but %d requests held for %d unreachable origins "
                       "(ROBOTSTXT_MAX_WAIT_IDLE): they are %s", now - (self.idle_since or now),
                       count, len(held), fate, extra=self._log_extra)
        self._inc("gave_up_idle")
        self.idle_since = None
        for states, origin, _, state in held:  # named in the close summary, as origins given up
            states.given_up_origins.gave_up(origin, state.cause)
        if persists:
            for states in self.lifecycles:
                states.close("idle")
            _compat.close_spider(self.crawler, "finished")
            return
        for states, origin, _, _ in held:
            states.retries.give_up_idle(origin)
