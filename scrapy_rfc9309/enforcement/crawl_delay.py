"""``ROBOTSTXT_CRAWL_DELAY``: never download faster than a site's Crawl-delay asks.

The delay of the request's download slot is raised to the group's Crawl-delay
(capped by ``ROBOTSTXT_CRAWL_DELAY_MAX``), keeping the slot's jitter but raising
the delay so that the shortest randomised gap is still the Crawl-delay. The floor
is written to ``DOWNLOAD_SLOTS``' per-slot settings too, so a slot that Scrapy
drops when idle and makes again keeps it, and restored after AutoThrottle lowers
the delay.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals

from ..runtime import compat as _compat
from ..runtime.reporting import Reporting

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from ..core.origins import Origin

__all__ = ["CrawlDelay"]

logger = logging.getLogger(__name__)


class CrawlDelay(Reporting):
    """Applies Crawl-delays to the download slots of one crawl."""

    def __init__(self, crawler: Crawler, cap: float) -> None:
        self.crawler = crawler
        self.cap = cap
        #: Per slot: the delay each origin sharing it asks for (Scrapy keys slots by host).
        self._asked: dict[str, dict[Origin, float]] = {}
        #: Per slot: the Crawl-delay applied, and the resulting slot delay.
        self._applied: dict[str, float] = {}
        self._floors: dict[str, float] = {}
        #: Per slot: its delay before any Crawl-delay.
        self._configured: dict[str, float] = {}
        self._capped: set[Origin] = set()
        # Connected after AutoThrottle's handler, so it runs after it.
        crawler.signals.connect(self._restore, signal=signals.response_downloaded)

    def apply(self, request: Request, origin: Origin, delay: float | None) -> None:
        if not delay:
            return
        if delay > self.cap:
            if origin not in self._capped:
                self._capped.add(origin)
                logger.info("robots.txt of %s asks for Crawl-delay %g s; capped at ROBOTSTXT_CRAWL_DELAY_MAX %g s",
                            origin, delay, self.cap, extra={"spider": self.crawler.spider})
                self._inc("crawl_delay_capped")
            delay = self.cap
        key, slot = _compat.download_slot(self.crawler, request)
        # The slot goes no faster than the slowest of its origins asks.
        asked = self._asked.setdefault(key, {})
        asked[origin] = delay
        delay = max(asked.values())
        if self._applied.get(key) == delay:
            return
        configured = self._configured.setdefault(key, _compat.slot_delay(slot))
        jitter = _compat.slot_jitter(slot)
        if jitter >= 1:  # a gap could be 0 however large the delay
            jitter = 0.0
            _compat.set_slot_jitter(slot, jitter)
            _compat.keep_slot_setting(self.crawler, key, "jitter", 0.0)
        floor = max(configured, delay / (1 - jitter) if jitter > 0 else delay)
        _compat.keep_slot_setting(self.crawler, key, "delay", floor)
        _compat.set_slot_delay(slot, floor if key in self._applied else max(_compat.slot_delay(slot), floor))
        self._applied[key] = delay
        self._floors[key] = floor
        self._inc("crawl_delay_applied")
        logger.debug("Crawl-delay %g s of %s applied to download slot %r (delay %g s)", delay, origin, key, floor,
                     extra={"spider": self.crawler.spider})

    def _restore(self, response: Response, request: Request, spider: Any = None) -> None:
        key = request.meta.get("download_slot")
        if not isinstance(key, str) or key not in self._floors:
            return
        floor = self._floors[key]
        slot = _compat.existing_slot(self.crawler, key)
        if slot is not None and _compat.slot_delay(slot) < floor:
            _compat.set_slot_delay(slot, floor)
