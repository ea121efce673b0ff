"""The per-origin memo of the most frequent verdict: a bare allowed one, for a request with
none of the plugin's meta keys, of the crawl's own agent. Once the origin's
:class:`~scrapy_rfc9309.core.verdict.Ruling` has judged such a request and is plain (an
allowed verdict carries nothing but its kind), its :class:`Release` answers the next ones
of the origin in ``RobotsTxtMiddleware.process_request``: one look-up of the URL's
:func:`~scrapy_rfc9309.core.urls.origin_text`, a few comparisons and one call of the
ruling's ``passes`` (and, where a teller reads allowed verdicts, one call that tells it
``ruling.allowed(url)``), while the origin's cached state is the one the ruling was made
from (the cache has not changed since, and the state is fresh).

The memo cannot answer otherwise than the ruling: its test IS the ruling's ``passes`` (the
same object), and a plain ruling's verdict is ``ruling.allowed(url)`` exactly where
``passes(url)``; what it tells is that value. What it adds are the conditions of its
validity only.

What the memo skips, it makes up every :data:`REFRESH` requests of an origin, when it is
forgotten and at the spider's close (:meth:`Releases.flush`): the allowed verdicts it
answered are counted in the close summary (the tally's ``allowed``), as cache hits in
``robotstxt/cache_hit`` (:meth:`States.hits`), and the origin is judged in full again, which
marks its cached state as used for the cache's least-recently-used order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..core.caches import BoundedDict
from ..core.urls import one_origin, origin_text

if TYPE_CHECKING:
    from scrapy import Request

    from ..core.origins import Origin
    from ..core.verdict import Ruling
    from ..stores import MemoryStore
    from .tellers import Tellers

__all__ = ["MAX_RELEASES", "REFRESH", "Release", "Releases", "States", "has_header"]

#: Requests an origin's release answers before the origin is judged in full again.
REFRESH = 64
#: Origins with a release at most (then the oldest quarter is counted and forgotten, as a crawl moves on).
MAX_RELEASES = 1024
#: Whether a Scrapy ``Headers`` has a header (spelled as ``Headers`` stores it), without a Python call.
has_header = dict.__contains__


class States(Protocol):
    """The states a release is made from (the robots.txt's): their cache, and where the
    requests the releases answered are counted as cache hits."""

    @property
    def cache(self) -> MemoryStore: ...

    def hits(self, count: int) -> None: ...


@dataclass(slots=True, eq=False)
class Release:
    """One origin's memo of its ruling's answer "bare allowed" (see the module).

    ``test`` is ``ruling.passes``; ``version`` the :attr:`.MemoryStore.version` of ``cache``
    when the ruling's state was read from it (any put ends the memo); ``expires_at`` the
    ruling's; ``any_headers``: it applies whatever the request's headers
    (``ROBOTSTXT_USER_AGENT`` is set; else only to a request without a ``User-Agent``
    header, whose agent is ``USER_AGENT``); ``tell`` tells the tellers of allowed verdicts
    (None: there are none); ``remaining``: the requests it answers before a refresh."""

    ruling: Ruling
    test: Callable[[str], bool]
    cache: MemoryStore
    version: int
    expires_at: float
    any_headers: bool
    tell: Callable[[Request], None] | None
    remaining: int = REFRESH


class Releases(BoundedDict[str, Release]):
    """The releases of one crawl, by the origin text of their origin (only a text that
    names one origin: :func:`~scrapy_rfc9309.core.urls.one_origin`)."""

    __slots__ = ("states", "tellers")

    def __init__(self, states: States, tellers: Tellers, max_entries: int = MAX_RELEASES) -> None:
        super().__init__(max_entries)
        self.states = states
        self.tellers = tellers

    def remember(self, url: str, origin: Origin, ruling: Ruling, any_headers: bool) -> None:
        """After ``ruling`` (plain) allowed a plain request for ``url`` of the crawl's own agent:
        (re)make the release of its origin, counting what the old one answered."""
        key = origin_text(url)
        if not ruling.plain or not one_origin(key):
            return
        old = self.get(key)
        if old is not None:
            self._flush(old)
        elif len(self) >= self.max_entries:
            self.flush()  # the oldest quarter is forgotten next: what they answered is counted first
        cache = self.states.cache
        self[key] = Release(ruling, ruling.passes, cache, cache.version, ruling.expires_at, any_headers,
                            self._telling(origin, ruling))

    def _telling(self, origin: Origin, ruling: Ruling) -> Callable[[Request], None] | None:
        tellers = self.tellers
        if not tellers.of_allowed:
            return None
        allowed = ruling.allowed
        judged = tellers.judged

        def tell(request: Request) -> None:
            judged(request, origin, allowed(request.url))

        return tell

    def flush(self) -> None:
        """Count what the releases answered (before the close summary and the stats are written)."""
        for release in self.values():
            self._flush(release)

    def _flush(self, release: Release) -> None:
        answered = REFRESH - release.remaining
        if answered:
            release.remaining = REFRESH
            self.tellers.tally.allowed += answered
            self.states.hits(answered)
