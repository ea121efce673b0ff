"""The keeper: one internal request that keeps a closing spider open while requests
are parked (see :mod:`.parking`).

Scrapy closes a spider once its downloader and scheduler are empty, and a parked
request is in neither. While requests are parked, the keeper (a ``data:`` URL this
middleware answers itself, never downloaded) waits in the downloader, so that a
closing spider waits, as it does for downloads, until the parked requests are handed
back to its scheduler (which keeps them for a resumed crawl with a ``JOBDIR``) or
counted as not crawled.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet import defer

from ..meta import KEEPER_META
from ..runtime import compat as _compat
from ..runtime.reporting import Reporting

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler

__all__ = ["Keeper"]

logger = logging.getLogger(__name__)


class Keeper(Reporting):
    """The keeper request of one crawl's parking; ``parked``: how many requests are
    parked (a keeper that ends while some are is sent again)."""

    def __init__(self, crawler: Crawler, parked: Callable[[], int]) -> None:
        self.crawler = crawler
        self._parked = parked
        self._keeper: defer.Deferred[Any] | None = None
        self._keeper_done: defer.Deferred[None] | None = None
        self._failed = False
        self._stopped = False

    @property
    def keeping(self) -> bool:
        """Whether the keeper request waits in the downloader."""
        return self._keeper is not None

    def keep(self) -> None:
        """Send the keeper, unless it waits already, the spider closes, or it failed once."""
        if self._keeper is None and not self._stopped and not self._failed:
            self._keeper_done = defer.Deferred()
            self._keeper = deferred_from_coro(self._keeping())

    async def _keeping(self) -> None:
        request = Request("data:,", callback=NO_CALLBACK, dont_filter=True, priority=-1_000_000,
                          meta={KEEPER_META: True, "dont_obey_robotstxt": True, "allow_offsite": True})
        widened = _compat.widen_concurrency(self.crawler.engine, 1)
        try:
            await _compat.download(self.crawler, request)
        except IgnoreRequest:
            pass
        except Exception:
            # Another downloader middleware, before this one, refused it: not tried again, and a
            # closing spider may then close its scheduler before the parked requests are back.
            self._failed = True
            logger.error("robots.txt: the internal request that keeps a closing spider waiting for the requests "
                         "parked outside the downloader (%s) failed in a downloader middleware before this one; "
                         "a crawl stopped while requests are parked may not hand them back to its scheduler",
                         request.url, exc_info=True, extra=self._log_extra)
        finally:
            if widened:
                _compat.widen_concurrency(self.crawler.engine, -1)
            self._keeper = None
            if self._parked():  # requests were parked again while it ended
                self.keep()

    async def wait(self) -> None:
        """The keeper's ``process_request``: done when nothing is parked any more,
        or the spider closes. Raises ``IgnoreRequest``: nothing is downloaded."""
        done = self._keeper_done
        if done is not None and not done.called:
            await maybe_deferred_to_future(done)
        raise IgnoreRequest("robots.txt: the requests it kept the spider open for are handed back")

    def release(self) -> None:
        """Nothing is parked any more: the keeper ends."""
        done, self._keeper_done = self._keeper_done, None
        if done is not None and not done.called:
            done.callback(None)

    def stop(self) -> None:
        """The spider closes: the keeper ends, and is not sent again."""
        self._stopped = True
        self.release()
