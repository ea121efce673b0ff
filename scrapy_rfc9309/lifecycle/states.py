"""One document's states of the origins a crawl uses (robots.txt, or another
document of :mod:`.documents`), as known now: a bounded LRU of parsed states, and
what each says of its origin's requests (judged at once, held, or given up).

The states come from :mod:`.fetches` (the fetches, one at a time per origin); the
requests that wait for them are :mod:`.waiting`'s. Every "is it held" question of
the lifecycle is asked here, of one method each: :meth:`DocumentStates.holding`,
:meth:`~DocumentStates.held`, :meth:`~DocumentStates.gives_up`,
:meth:`~DocumentStates.holds_now` and :meth:`~DocumentStates.given_up`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..core.documents import ROBOTS_TXT, Document
from ..core.state import Access, Hold, OriginState
from ..runtime.reporting import Reporting
from ..stores import MemoryStore

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from ..config import Config
    from ..core.origins import Origin

__all__ = ["Closing", "DocumentStates"]

#: Requests judged by a cached state counted before the count is written to the stats.
_HITS_FLUSHED_AT = 1000


class Closing(Exception):
    """The spider started closing while a request waited; ``reason``: ``"closing"``,
    or ``"idle"`` when held requests were all that was left of the crawl
    (``ROBOTSTXT_MAX_WAIT_IDLE``)."""

    def __init__(self, reason: str = "closing") -> None:
        super().__init__(reason)
        self.reason = reason


class DocumentStates(Reporting):
    """The states of one ``document`` (robots.txt by default) of the crawl's origins.
    ``holds`` says whether an origin whose document is unreachable (without a good
    copy) holds its requests (robots.txt: complete disallow); when False they are
    judged at once with the state at hand."""

    def __init__(self, crawler: Crawler, config: Config, *, document: Document = ROBOTS_TXT,
                 holds: bool = True) -> None:
        self.crawler = crawler
        self.document = document
        self.holds = holds
        self.policy = config.policy
        #: Parsed states of the origins in use (bounded LRU, with the backoff of evicted unreachable ones).
        self.cache = MemoryStore(config.cache_size)
        self._cache_hits = 0
        self._evictions_counted = 0

    def _inc(self, key: str, count: int = 1) -> None:
        super()._inc(self.document.stat + key, count)

    # -- is it held ---------------------------------------------------------------------
    def holding(self, state: OriginState, now: float) -> bool:
        """Whether ``state`` holds its origin's requests now (see ``holds``): they are
        held, or given up once waiting has lasted too long (:meth:`gives_up`)."""
        return self.holds and state.hold(now, self.policy) is not Hold.NO

    def held(self, state: OriginState, now: float) -> bool:
        """Whether ``state`` holds its origin's requests now and waiting can still help
        (not past the origin's maximum wait)."""
        return self.holds and state.hold(now, self.policy) is Hold.HOLD

    def gives_up(self, state: OriginState, now: float) -> bool:
        """Whether ``state`` would hold its origin's requests but they are given up:
        unreachable past the origin's maximum wait, no fetch succeeded since."""
        return self.holds and state.hold(now, self.policy) is Hold.GIVE_UP

    def holds_now(self, origin: Origin) -> bool:
        """Whether the origin's cached state holds its requests now (:meth:`held`): a
        request of an origin that waiting cannot help, one whose host name does not
        resolve, waits for its next fetch, or is dropped: never held."""
        state = self.cache.get(origin)
        return state is not None and self.held(state, time.time())

    def given_up(self, origin: Origin) -> OriginState | None:
        """The origin's cached state while its held requests are given up (:meth:`gives_up`), else None."""
        state = self.cache.get(origin)
        return state if state is not None and self.gives_up(state, time.time()) else None

    # -- reading and writing ------------------------------------------------------------
    def cached(self, origin: Origin, now: float) -> OriginState | None:
        """The origin's state when it is cached, fresh and reachable (judge at
        once), else None."""
        state = self.cache.get(origin)
        if state is None or now >= state.expires_at or state.access is Access.UNREACHABLE:
            return None
        self._hit()
        return state

    def fresh(self, origin: Origin, now: float) -> OriginState | None:
        """The origin's state when it is cached and not expired (reachable or not), else None."""
        state = self.cache.get(origin)
        if state is None or now >= state.expires_at:
            return None
        self._hit()
        return state

    def put(self, origin: Origin, state: OriginState) -> None:
        """Keep the origin's new state (a fetch's, or the store's), counting the states it evicts."""
        self.cache.put(origin, state)
        evicted = self.cache.evictions - self._evictions_counted
        if evicted and self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"robotstxt/{self.document.stat}cache_evicted", evicted)
        self._evictions_counted = self.cache.evictions

    # -- stats --------------------------------------------------------------------------
    def hits(self, count: int) -> None:
        """Count ``count`` requests judged by a state found cached, as :meth:`cached` counts
        each (for the shortcuts, see :mod:`~scrapy_rfc9309.enforcement.release_memo`)."""
        self._cache_hits += count
        if self._cache_hits >= _HITS_FLUSHED_AT:
            self.flush_stats()

    def _hit(self) -> None:
        self._cache_hits += 1  # written to the stats now and then: a stats call per request costs
        if self._cache_hits >= _HITS_FLUSHED_AT:
            self.flush_stats()

    def flush_stats(self) -> None:
        """Write the cache hits counted so far to ``robotstxt/cache_hit``."""
        if self._cache_hits and self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"robotstxt/{self.document.stat}cache_hit", self._cache_hits)
            self._cache_hits = 0
