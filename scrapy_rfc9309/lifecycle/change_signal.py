"""News of a changed robots.txt: when a refetch gives rules or usage preferences that
differ, for the crawl's agents, from the copy it replaces, the stat
``robotstxt/changed``, the ``robotstxt_changed`` signal and one INFO line tell it (the
ledger's ``state`` record names the version replaced and the change). What changed
is computed once, by :func:`scrapy_rfc9309.changes.diff`, and every teller reads it."""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import TYPE_CHECKING

from .. import signals as rfc_signals
from ..core.changes import RobotsChange, diff
from ..core.state import Access
from ..runtime import compat as _compat
from ..runtime.reporting import Reporting

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from ..core.origins import Origin
    from ..core.state import OriginState

__all__ = ["ChangeNews"]

logger = logging.getLogger(__name__)


class ChangeNews(Reporting):
    """Tells of robots.txt changes for ``agents`` (the agents the crawl obeys, a
    collection the middleware keeps adding to; ``default`` when it is empty)."""

    def __init__(self, crawler: Crawler, agents: Collection[str | bytes], default: str | bytes) -> None:
        self.crawler = crawler
        self.agents = agents
        self.default = default

    def between(self, previous: OriginState | None, state: OriginState) -> RobotsChange | None:
        """What changed from the copy ``previous`` held to the one ``state`` holds, or
        None (no copy before, the same copy renewed or kept, no new copy, or nothing
        changed for the crawl's agents)."""
        if previous is None or state.access is not Access.PARSED:
            return None
        old, new = previous.robots, state.robots
        if old is None or new is None or old is new or previous.good_at is None:
            return None
        if old.records_body == new.records_body:
            return None
        # Asked of a copy: the new file itself keeps its bytes as fetched until the store has them.
        return diff(old, new.copy(), list(self.agents) or [self.default])

    async def tell(self, origin: Origin, previous: OriginState, state: OriginState, change: RobotsChange) -> None:
        self._inc("changed")
        logger.info("robots.txt of %s changed: %s", origin, change, extra=self._log_extra)
        await _compat.send_signal(self.crawler, rfc_signals.robotstxt_changed, origin=origin, old=previous,
                                  new=state, change=change)
