"""``scrapy_rfc9309.RobotsTxtMiddleware``: Scrapy's robots.txt middleware, done the
way RFC 9309 says.

Data flows one way: request -> origin -> document states -> verdict -> action. The
origin's states are a :class:`~scrapy_rfc9309.lifecycle.states.DocumentStates` (cached),
fetched by a :class:`~scrapy_rfc9309.lifecycle.fetches.Fetches` (store, single flight), and its
requests wait in a :class:`~scrapy_rfc9309.lifecycle.waiting.WaitingRequests` (parked or in the downloader, retries,
deadlines), one pair per document (robots.txt, and tdmrep.json with
``ROBOTSTXT_TDMREP``); the origin's :class:`~scrapy_rfc9309.core.verdict.Ruling` makes the
verdict, a :class:`~scrapy_rfc9309.judgement.Judgement`; the
:class:`~scrapy_rfc9309.enforcement.actions.Actions` act on it and tell the tellers.
``process_request`` dispatches: the most frequent verdict, a bare allowed one, is answered
per origin by the release memo (:mod:`~scrapy_rfc9309.enforcement.release_memo`), every
other request takes the :class:`~.verdict_path.VerdictPath`. Every part is made and wired
once per crawler by :class:`~.wiring.RobotsTxtParts`; the middleware binds what it reads.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http.headers import Headers

from ..config import Config, refuse_builtin_beside, usage_line
from ..core.accelerator import ACCELERATED, matcher_in_use
from ..core.urls import origin_text
from ..enforcement.release_memo import has_header
from ..meta import (
    AGENT_META,
    FETCH_META,
    GIVEN_UP_META,
    KEEPER_META,
    PREFERENCES_META,
    PURPOSE_META,
    TDMREP_META,
    USAGE_META,
)
from ..runtime.reporting import Reporting
from .queries import StateQueries
from .wiring import RobotsTxtParts

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

__all__ = ["AGENT_META", "PREFERENCES_META", "TDMREP_META", "USAGE_META", "RobotsTxtMiddleware"]

logger = logging.getLogger(__name__)

#: The meta keys the plugin reads or sets on a request it judges.
_KEYS = frozenset({KEEPER_META, FETCH_META, "dont_obey_robotstxt", USAGE_META, PREFERENCES_META, TDMREP_META,
                   GIVEN_UP_META, AGENT_META, PURPOSE_META})
#: This middleware's path in ``DOWNLOADER_MIDDLEWARES``.
MIDDLEWARE_PATH = "scrapy_rfc9309.RobotsTxtMiddleware"
_now = time.time


class RobotsTxtMiddleware(Reporting, StateQueries):
    """Downloader middleware enforcing robots.txt per RFC 9309."""

    #: Set (to :meth:`_responded`) when a teller reads responses: the hook is not called otherwise.
    process_response: Callable[[Request, Response, Any], Response]

    def __init__(self, parts: RobotsTxtParts) -> None:
        """Bind what the hooks and the queries read from ``parts`` (see :mod:`.wiring`)."""
        self.parts = parts
        self.crawler = parts.crawler
        self.config = parts.config
        self.policy = parts.config.policy
        self.agents = parts.verdicts.agents
        self.enforced = parts.verdicts.enforced
        self.tellers = parts.verdicts.tellers
        #: The verdict ledger (``ROBOTSTXT_LEDGER``): told of every state settled and every verdict.
        self.ledger = parts.ledger
        #: The requests waiting for their robots.txt, and with ROBOTSTXT_TDMREP for their tdmrep.json.
        self.states, self.tdm = parts.robots, parts.tdm
        self.releases = parts.releases
        self._origin_of = parts.origin_of
        self._release_of = parts.releases.get
        self._plain = parts.path.plain
        self._special = parts.path.special
        if self.tellers.of_passed:  # without any, Scrapy has no process_response to call
            self.process_response = self._responded

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        refuse_builtin_beside(crawler.settings, MIDDLEWARE_PATH)
        config = Config.from_settings(crawler.settings)
        logger.info("%s", usage_line(config))
        logger.log(logging.INFO if ACCELERATED else logging.WARNING, "robots.txt matcher: %s", matcher_in_use())
        return cls(RobotsTxtParts(crawler, config))

    # -- the downloader hooks -------------------------------------------------------------
    def process_request(self, request: Request,
                        spider: Any = None) -> Request | Coroutine[Any, Any, Request | None] | None:
        """Judge ``request``: by its origin's release when it has one that applies (see
        release_memo), else on the verdict path. A request of an origin whose documents are
        cached and fresh is judged at once; otherwise a coroutine waits for their fetch
        (Scrapy awaits what ``process_request`` returns)."""
        if _KEYS.isdisjoint(request.meta):  # most requests carry none of the plugin's meta keys
            url = request.url
            release = self._release_of(origin_text(url))
            if (release is not None and release.remaining and release.version == release.cache.version
                    and _now() < release.expires_at
                    and (release.any_headers or (type(headers := request.headers) is Headers
                                                 and not has_header(headers, b"User-Agent")))
                    and release.test(url)):
                release.remaining -= 1  # counted when it is refreshed
                if release.tell is not None:  # the tellers of allowed verdicts (the ledger) are told
                    release.tell(request)
                return None
            return self._plain(request)
        return self._special(request)

    def _responded(self, request: Request, response: Response, spider: Any = None) -> Response:
        """``process_response`` with a teller of passed responses (the ledger with
        ``ROBOTSTXT_LEDGER_RESPONSES``): tell it of the response of a judged request,
        before it goes to the spider."""
        meta = request.meta
        if FETCH_META in meta or KEEPER_META in meta or meta.get("dont_obey_robotstxt"):
            return response
        if self._origin_of(request.url) is not None:
            self.tellers.responded(request, response.status, "passed")
        return response

    # -- what the crawl waits for ----------------------------------------------------------
    @property
    def waiting_count(self) -> int:
        """Requests waiting for their origin's robots.txt or tdmrep.json now: in the downloader, and parked."""
        return self.states.room.waiting

    @property
    def held_count(self) -> int:
        """Requests held now (their origin's document unreachable, waiting for a retry), of all documents."""
        now = _now()
        return sum(count for waiting in self.parts.waiting for _, count, _ in waiting.held(now))
