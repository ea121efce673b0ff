"""The per-origin shortcut for the most frequent verdict: a request with none of the
plugin's meta keys, for the crawl's own agent, that the robots.txt allows and whose
verdict carries nothing else (see :func:`~.judgement.allowing`). Once
:meth:`.Enforcement.allows` has judged such a request, the next ones of its origin are
answered in ``RobotsTxtMiddleware.process_request`` by one look-up of the URL's
``scheme://authority`` text, two comparisons and one call of the matcher (and, where a
teller reads allowed verdicts, one call that tells it), while the
origin's cached state is the one the shortcut was made from (the cache has not changed
since, and the state is fresh); the path through the origin's states, the agent and
:func:`~.judgement.judge` crosses ten Python functions, each of which a crawl's other
work has pushed out of the CPU's caches between two requests.

What the shortcut skips, it makes up every :data:`REFRESH` requests of an origin and at
the spider's close (:meth:`Shortcuts.flush`): the allowed verdicts it answered are
counted in the close summary (:meth:`.Enforcement.count_allowed`), as cache hits in
``robotstxt/cache_hit`` (:meth:`.StateCache.hits`), and the origin is judged in full
again, which marks its cached state as used for the cache's least-recently-used order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..core.urls import one_origin, origin_text

if TYPE_CHECKING:
    from ..core.state import OriginState
    from ..stores import MemoryStore
    from .actions import Enforcement
    from .request_agents import UserAgents

__all__ = ["REFRESH", "Shortcuts", "States", "has_header"]

#: Requests an origin's shortcut answers before the origin is judged in full again.
REFRESH = 64
#: Origins with a shortcut at most (then all are flushed and forgotten, as a crawl moves on).
MAX_SHORTCUTS = 1024
#: Whether a Scrapy ``Headers`` has a header (spelled as ``Headers`` stores it), without a Python call.
has_header = dict.__contains__

#: The field of a shortcut counting down the requests it answers before a refresh.
REMAINING = 0


class States(Protocol):
    """The states a shortcut is made from (a document's :class:`.StateCache`): their cache, and
    where the requests the shortcuts answered are counted as cache hits."""

    @property
    def cache(self) -> MemoryStore: ...

    def hits(self, count: int) -> None: ...


class Shortcuts(dict[str, list[Any]]):
    """The shortcuts of one crawl, by the ``scheme://authority`` text of their origin
    (:func:`~.urls.origin_text`, only for a text that names one origin: :func:`~.urls.one_origin`).
    A shortcut is ``[remaining, expires_at, cache_version, any_headers, test, cache, tell]``:
    the requests it answers before a refresh, when its state expires, the
    :attr:`.MemoryStore.version` of ``cache`` it was made at, whether it applies whatever
    the request's headers (``ROBOTSTXT_USER_AGENT`` is set; else only to a request without
    a ``User-Agent`` header, whose agent is ``USER_AGENT``), the matcher's test, and what
    tells the tellers of allowed verdicts (the ledger, ``robotstxt_verdict``) of each
    request it allows (:meth:`.Enforcement.telling`; None without any)."""

    def __init__(self, states: States, enforcement: Enforcement, agents: UserAgents) -> None:
        super().__init__()
        self.states = states
        self.enforcement = enforcement
        self.agents = agents

    def remember(self, url: str, agent: str | bytes, robots: OriginState, test: Any, tell: Any = None) -> None:
        """After :meth:`.Enforcement.allows` allowed a request for ``url`` of the crawl's
        own agent with ``test``: (re)make the shortcut of its origin, counting what the old one answered."""
        key = origin_text(url)
        if not one_origin(key):
            return
        configured = self.agents.configured
        if agent != (configured or self.agents.default):
            return
        old = self.get(key)
        if old is not None:
            self._flush(old)
        elif len(self) >= MAX_SHORTCUTS:
            self.flush()
            self.clear()
        cache = self.states.cache
        self[key] = [REFRESH, robots.expires_at, cache.version, bool(configured), test, cache, tell]

    def flush(self) -> None:
        """Count what the shortcuts answered (before the close summary and the stats are written)."""
        for shortcut in self.values():
            self._flush(shortcut)

    def _flush(self, shortcut: list[Any]) -> None:
        answered = REFRESH - shortcut[REMAINING]
        if answered:
            shortcut[REMAINING] = REFRESH
            self.enforcement.count_allowed(answered)
            self.states.hits(answered)

