"""The in-memory cache of parsed origin states that every store has in front:
bounded, least recently used first out, so a broad crawl over millions of hosts
stays bounded (``ROBOTSTXT_CACHE_SIZE``).

An unreachable origin that leaves the cache leaves its backoff behind (its retry
time and failure count, without the parsed file): otherwise the next request of
that origin would fetch its robots.txt again at once, whatever the retry delay
said. Those small records are bounded too.

Evictions are counted, and the origins evicted while their state was still fresh
are remembered (as many as the backoffs), so that a fetch of one of them can be
told apart: a fetch the eviction caused, which a larger cache or a store saves."""

from __future__ import annotations

import time
from collections import OrderedDict

from ..core.origins import Origin
from ..core.state import Access, OriginState

__all__ = ["MemoryStore"]

#: Backoff records kept beyond the cache, at least (the cache size if larger).
MIN_BACKOFFS = 10_000


class MemoryStore:
    """``ROBOTSTXT_STORE = "memory"``: origin states in this process only."""

    def __init__(self, max_origins: int) -> None:
        self.max_origins = max_origins
        self.max_backoffs = max(MIN_BACKOFFS, max_origins)
        self._states: OrderedDict[Origin, OriginState] = OrderedDict()
        self._backoffs: OrderedDict[Origin, OriginState] = OrderedDict()
        #: Origins evicted while their (reachable) state was fresh, oldest first.
        self._evicted_fresh: OrderedDict[Origin, None] = OrderedDict()
        self.evictions = 0
        #: Changes with every state put (and evicted): what a state found here before is still here
        #: while it is the same (see :mod:`~scrapy_rfc9309.enforcement.release_memo`).
        self.version = 0

    def get(self, origin: Origin) -> OriginState | None:
        """The origin's state, or, for an unreachable origin evicted meanwhile, its
        backoff (an unreachable state without a good copy)."""
        state = self._states.get(origin)
        if state is not None:
            self._states.move_to_end(origin)
            return state
        return self._backoffs.get(origin) if self._backoffs else None

    def put(self, origin: Origin, state: OriginState) -> None:
        self.version += 1
        self._states[origin] = state
        self._states.move_to_end(origin)
        if self._backoffs:
            self._backoffs.pop(origin, None)
        if self._evicted_fresh:
            self._evicted_fresh.pop(origin, None)
        now: float | None = None
        while len(self._states) > self.max_origins:
            evicted, old = self._states.popitem(last=False)
            self.evictions += 1
            if old.access is Access.UNREACHABLE:
                self._backoffs[evicted] = old.backoff()
                while len(self._backoffs) > self.max_backoffs:
                    self._backoffs.popitem(last=False)
                continue
            now = time.time() if now is None else now
            if old.expires_at > now:
                self._evicted_fresh[evicted] = None
                while len(self._evicted_fresh) > self.max_backoffs:
                    self._evicted_fresh.popitem(last=False)

    def evicted_fresh(self, origin: Origin) -> bool:
        """Whether ``origin`` left the cache while its state was fresh (and has not
        been put back since): its next fetch is one the eviction caused."""
        return origin in self._evicted_fresh

    def __len__(self) -> int:
        return len(self._states)

    def __contains__(self, origin: object) -> bool:
        return origin in self._states
