"""``scrapy_rfc9309.NofollowMiddleware``: a spider middleware that drops the requests a
spider yields from a response whose robots directives say ``nofollow`` (or ``none``),
from its ``X-Robots-Tag`` headers or, with ``ROBOTSTXT_USAGE_META``, its
``<meta name="robots">`` / ``<meta name="AGENT">`` tags. Items pass. Opt-in::

    SPIDER_MIDDLEWARES = {"scrapy_rfc9309.NofollowMiddleware": 800}

It reads what :class:`~scrapy_rfc9309.RobotsTxtMiddleware` put in
``response.meta["robotstxt_preferences"]``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from ..config import flag
from ..meta import PREFERENCES_META
from ..runtime.reporting import Reporting

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["NofollowMiddleware"]

logger = logging.getLogger(__name__)


class NofollowMiddleware(Reporting, BaseSpiderMiddleware):
    """Drops the requests yielded from a ``nofollow`` response (stat
    ``robotstxt/nofollow_dropped``); a request with meta ``dont_obey_robotstxt`` passes."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        if not settings.getbool("ROBOTSTXT_OBEY"):
            logger.warning("NofollowMiddleware is enabled but ROBOTSTXT_OBEY is off: RobotsTxtMiddleware reads no "
                           "robots directives, so no request is dropped")
        elif not flag(settings, "ROBOTSTXT_USAGE_HEADERS") and not flag(settings, "ROBOTSTXT_USAGE_META"):
            logger.warning("NofollowMiddleware is enabled but ROBOTSTXT_USAGE_HEADERS and ROBOTSTXT_USAGE_META are "
                           "both off: no robots directive is read, so no request is dropped")

    def get_processed_request(self, request: Request, response: Response | None) -> Request | None:
        if response is None:
            return request
        preferences: Any = response.meta.get(PREFERENCES_META)
        if preferences is None or not preferences.nofollow or request.meta.get("dont_obey_robotstxt"):
            return request
        self._inc("nofollow_dropped")
        logger.debug("Not followed: %s, yielded from %s, whose robots directives say nofollow (%s)", request,
                     response, "; ".join(s.where for s in preferences.statements if "nofollow" in s.directives),
                     extra=self._log_extra)
        return None
