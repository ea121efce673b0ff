"""What the crawl is told of one document's fetches: the stats of each outcome, one
log line per origin when its state changes, the signals of a file parsed
(``robotstxt_fetched``, ``robotstxt_sitemaps``, Scrapy's ``robots_parsed``), and a
warning, once, when the cache is too small for the crawl (most fetches are of
origins evicted while still fresh)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from .. import signals as rfc_signals
from ..core.documents import ROBOTS_TXT
from ..core.state import Access, Cause
from ..runtime import compat as _compat
from ..runtime.reporting import Reporting
from .robot_parser import RobotParser

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from ..core.origins import Origin
    from ..core.state import OriginState
    from .given_up import GivenUp
    from .states import DocumentStates

__all__ = ["FetchReport"]

logger = logging.getLogger(__name__)

#: Warn (once) when more than this share of the fetches, after at least
#: ``EVICTION_WARN_AFTER`` of them, were of origins evicted from the cache while fresh.
EVICTION_WARN_SHARE, EVICTION_WARN_AFTER = 0.5, 100


class FetchReport(Reporting):
    """Tells of the fetches of ``states``' document; ``given_up``: where an origin
    that cannot be requested, or whose host name does not resolve, is counted;
    ``shared``: whether the crawl has a store (the eviction warning's remedy)."""

    def __init__(self, crawler: Crawler, states: DocumentStates, given_up: GivenUp, *, shared: bool) -> None:
        self.crawler = crawler
        self.states = states
        self.document = states.document
        self.policy = states.policy
        self.given_up = given_up
        self.shared = shared
        self._fetches_made = 0
        self._refetches_evicted = 0
        self._eviction_warned = False

    def _inc(self, key: str, count: int = 1) -> None:
        super()._inc(self.document.stat + key, count)

    def fetching(self, origin: Origin) -> None:
        """Count a fetch by this process, and the fetches that evictions from the
        cache caused (their origin's state was still fresh): a warning, once, when
        those are most of them."""
        self._fetches_made += 1
        cache = self.states.cache
        if not cache.evicted_fresh(origin):
            return
        self._refetches_evicted += 1
        self._inc("refetch_evicted")
        if (not self._eviction_warned and self._fetches_made >= EVICTION_WARN_AFTER
                and self._refetches_evicted > EVICTION_WARN_SHARE * self._fetches_made):
            self._eviction_warned = True
            remedy = f"raise ROBOTSTXT_CACHE_SIZE (now {cache.max_origins})"
            if not self.shared:
                remedy += " or set ROBOTSTXT_STORE (\"disk\", \"redis\") to load them from a store instead"
            name = self.document.name
            logger.warning(
                "%s cache: %d of the %d %s fetches so far were of origins evicted from the in-memory cache while their "
                "%s was still fresh: %s", name, self._refetches_evicted, self._fetches_made, name, name, remedy,
                extra=self._log_extra)

    async def report(self, origin: Origin, state: OriginState, previous: OriginState | None,
                     trigger: Request | None) -> None:
        """Tell of the fetch that ended in ``state`` (after ``previous``), which ``trigger`` needed."""
        outcome = state.outcome
        assert outcome is not None
        self._inc(outcome.access.value)
        self.states.flush_stats()
        if self.document is ROBOTS_TXT:
            await _compat.send_signal(self.crawler, rfc_signals.robotstxt_fetched, origin=origin, state=state,
                                      request=trigger)
        await self.announce(origin, state, trigger)
        if outcome.access is Access.UNREACHABLE and state.parsed is not None:
            self._inc("stale_used")
        tdmrep = state.tdmrep
        if outcome.access is Access.PARSED and tdmrep is not None and tdmrep.problem_count:
            # The file is the site's: what could not be read is skipped (see tdmrep), and said once per fetch.
            self._inc("invalid")
            more = tdmrep.problem_count - len(tdmrep.problems)
            logger.warning("%s of %s (%s): %s%s; %d rules read", self.document.name, origin, outcome.url,
                           "; ".join(tdmrep.problems), f" (and {more} more problems)" if more else "",
                           len(tdmrep.entries), extra=self._log_extra)
        self._log_change(origin, state, previous)

    def _log_change(self, origin: Origin, state: OriginState, previous: OriginState | None) -> None:
        """One line per origin when its state changes (it became unreachable, or
        reachable again); a failed retry of an unreachable origin is logged at DEBUG.
        Giving up at the maximum wait is logged when it happens (:mod:`.retries`)."""
        now = time.time()
        was_unreachable = previous is not None and previous.access is Access.UNREACHABLE
        detail = state.detail
        name = self.document.name
        if state.access is not Access.UNREACHABLE:
            if was_unreachable:
                assert previous is not None
                since = previous.unreachable_since or previous.fetched_at
                logger.info("%s of %s is reachable again (%s) after %d failed fetches over %.0f s", name, origin,
                            state.access.value, previous.failures, now - since, extra=self._log_extra)
            return
        retry = state.expires_at - now
        cause = state.cause
        if cause is Cause.CANNOT_REQUEST and not was_unreachable:
            self.given_up.gave_up(origin, cause)
        if was_unreachable or cause is Cause.CANNOT_REQUEST:  # the cause was logged once, by the fetcher
            logger.debug("%s of %s still unreachable (%s), failure %d, next fetch in %.1f s", name, origin,
                         detail, state.failures, retry, extra=self._log_extra)
        elif state.parsed is not None:
            logger.warning("%s of %s unreachable (%s); keeping the copy fetched %.0f s ago, retrying in "
                           "%.1f s", name, origin, detail, now - (state.good_at or now), retry, extra=self._log_extra)
        elif not self.states.holds:
            logger.warning("%s of %s unreachable (%s): %s, its requests go on; retrying in %.1f s", name, origin,
                           detail, self.document.unreachable, retry, extra=self._log_extra)
        elif cause is Cause.NO_HOST:
            self.given_up.gave_up(origin, cause)
            logger.warning("%s of %s cannot be fetched: its host name does not resolve (%s). Its requests are "
                           "dropped (robotstxt/%sdropped_no_host); fetched again in %.0f s if more come", name, origin,
                           detail, self.document.stat, retry, extra=self._log_extra)
        else:
            logger.warning("%s of %s unreachable (%s): %s. Its requests are held for up to "
                           "%.0f s, retrying in %.1f s", name, origin, detail, self.document.unreachable,
                           self.policy.max_wait_for(cause), retry, extra=self._log_extra)

    async def announce(self, origin: Origin, state: OriginState, trigger: Request | None) -> None:
        """Send ``robotstxt_sitemaps`` and Scrapy's ``robots_parsed`` for a file
        parsed in this process (fetched, or loaded from the store)."""
        if state.access is not Access.PARSED or state.robots is None:
            return
        if state.robots.sitemaps:
            await _compat.send_signal(self.crawler, rfc_signals.robotstxt_sitemaps, origin=origin,
                                      sitemaps=list(state.robots.sitemaps), request=trigger)
        if _compat.ROBOTS_PARSED is not None:
            parser = RobotParser.from_robots(state.robots, self.crawler.spider)
            await _compat.send_signal(self.crawler, _compat.ROBOTS_PARSED, robotparser=parser, request=trigger)
