"""The public API of ``RobotsTxtMiddleware`` about the states it keeps: what is
cached for an origin, a state fetched on demand, the sitemaps of a robots.txt, the
agent a request obeys. A base class of the middleware, which has the states
(``states``, ``tdm``), the agents and the origins of URLs (``_origin_of``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request

from ..core.origins import Origin, OriginOf
from ..lifecycle.states import Closing

if TYPE_CHECKING:
    from ..core.state import OriginState
    from ..enforcement.request_agents import UserAgents
    from ..lifecycle.waiting import WaitingRequests

__all__ = ["StateQueries"]


class StateQueries:
    """The middleware's queries of its origin states (see the module's description)."""

    states: WaitingRequests
    tdm: WaitingRequests | None
    agents: UserAgents
    _origin_of: OriginOf

    @property
    def cache(self) -> Any:
        """The in-memory cache of origin states (a :class:`~scrapy_rfc9309.stores.MemoryStore`)."""
        return self.states.cache

    def user_agent_for(self, request: Request) -> str | bytes:
        """The string whose product token is obeyed for ``request`` (see :class:`~.request_agents.UserAgents`)."""
        return self.agents.of(request)

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

    async def _fetched(self, states: WaitingRequests, url: str) -> OriginState | None:
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
