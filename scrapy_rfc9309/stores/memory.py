"""The in-memory cache of parsed origin states that every store has in front:
bounded, least recently used first out, so a broad crawl over millions of hosts
stays bounded (``ROBOTSTXT_CACHE_SIZE``)."""

from __future__ import annotations

from collections import OrderedDict

from ..access import OriginState
from ..origin import Origin

__all__ = ["MemoryStore"]


class MemoryStore:
    """``ROBOTSTXT_STORE = "memory"``: origin states in this process only."""

    def __init__(self, max_origins: int) -> None:
        self.max_origins = max_origins
        self._states: OrderedDict[Origin, OriginState] = OrderedDict()
        self.evictions = 0

    def get(self, origin: Origin) -> OriginState | None:
        state = self._states.get(origin)
        if state is not None:
            self._states.move_to_end(origin)
        return state

    def put(self, origin: Origin, state: OriginState) -> None:
        self._states[origin] = state
        self._states.move_to_end(origin)
        while len(self._states) > self.max_origins:
            self._states.popitem(last=False)
            self.evictions += 1

    def __len__(self) -> int:
        return len(self._states)

    def __contains__(self, origin: object) -> bool:
        return origin in self._states
