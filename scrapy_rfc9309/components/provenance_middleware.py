"""``scrapy_rfc9309.ProvenanceMiddleware``: with ``ROBOTSTXT_PROVENANCE = "FIELD"``,
every item a spider callback yields from a judged response gets, in ``FIELD``, where it
came from and what the site said about its use (docs/provenance.md): the URL, the fetch
time, the verdict and the rule that allowed its request, the robots.txt version, every
usage preference by category and by source, the purpose tokens obeyed and, with the
ledger on, its verdict record (run, segment, line, chain hash), which ``scrapy robotstxt
audit --item`` checks. The add-on enables it when the setting is set.

It reads what the crawl made, never judging again: the :class:`~.judgement.Judgement`
the downloader middleware acted on (told to this middleware as to every teller), the
meta keys set on the request (``robotstxt_preferences``, ``robotstxt_usage``,
``robotstxt_tdmrep``, the ledger's record) and the time the response was received
(Scrapy's ``response_received`` signal). Items go through ``itemadapter``: dicts,
``scrapy.Item``, dataclass and attrs items. Items not derived from a response (from
``start()``, or made by a component) are left alone.
"""

from __future__ import annotations

import copy
import logging
import time
import weakref
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from ..config import Config, purpose_tokens
from ..core.origins import Origin
from ..core.state import Access
from ..core.verdict import Judgement, Kind
from ..evidence.item_check import MAX_LIST, MAX_URL, VERSION, cut, shown_rule
from ..meta import PREFERENCES_META, PURPOSE_META, RECORD_META, TDMREP_META, USAGE_META
from ..runtime.reporting import Reporting
from ..usage.preferences import Preferences, Statement, build
from ..usage.response_sources import robotstxt_statements, tdmrep_statement
from .wiring import VerdictParts

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from ..core.origins import Origin as OriginType

__all__ = ["MAX_JSON_CHARS", "ProvenanceMiddleware", "RobotsTxtProvenanceError", "provenance"]

logger = logging.getLogger(__name__)

#: Characters of a label or robots directive kept.
_MAX_LABEL = 64
#: An upper bound of a provenance's JSON form, in characters, whatever the site sends (docs/provenance.md,
#: "Bounds"; a test holds it): every list a site controls keeps :data:`~.item_check.MAX_LIST` entries,
#: every text :data:`~.item_check.MAX_TEXT` characters, a URL :data:`~.item_check.MAX_URL`.
MAX_JSON_CHARS = 64 * 1024


class RobotsTxtProvenanceError(KeyError):
    """An item of a class that does not declare the field ``ROBOTSTXT_PROVENANCE``
    names: raised as Scrapy's items raise for a field they do not declare (a spider
    error of the response, logged with its traceback)."""

    def __str__(self) -> str:
        return str(self.args[0])


class ProvenanceMiddleware(Reporting, BaseSpiderMiddleware):
    """Puts the provenance of each item a callback yields from a judged response in the
    item's field ``ROBOTSTXT_PROVENANCE`` (stats ``robotstxt/provenance/items``, and
    ``robotstxt/provenance/unjudged`` for items of a response without a verdict)."""

    #: As a teller of verdicts (see :class:`~.actions.Teller`): the rule that allowed a request is needed.
    explains = True
    passed_responses = False

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        config = Config.from_settings(crawler.settings)
        if config.provenance is None:
            raise NotConfigured
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            logger.warning("ROBOTSTXT_PROVENANCE is set but ROBOTSTXT_OBEY is off: no request is judged, so no item "
                           "gets a provenance")
            raise NotConfigured
        self.field = config.provenance
        self.purpose_tokens = config.purpose_tokens
        #: The latest verdict on each request still alive (a request judged again, once held, is told again).
        self._verdicts: weakref.WeakKeyDictionary[Request, Judgement] = weakref.WeakKeyDictionary()
        #: When each response still alive was received.
        self._received: weakref.WeakKeyDictionary[Response, float] = weakref.WeakKeyDictionary()
        #: The provenance of the response whose items are being processed (made at its first item; the
        #: response not kept alive by it).
        self._last: tuple[weakref.ref[Response] | None, dict[str, Any] | None] = (None, None)
        VerdictParts.of(crawler, config).tellers.add(self, responses=False)
        crawler.signals.connect(self._response_received, signal=signals.response_received)

    # -- the teller ---------------------------------------------------------------------
    def judged(self, request: Request, origin: OriginType, judgement: Judgement) -> None:
        self._verdicts[request] = judgement

    def responded(self, request: Request, status: int, outcome: str) -> None:
        return None

    async def close(self) -> None:
        return None

    def _response_received(self, response: Response, request: Request, spider: Any = None) -> None:
        self._received[response] = time.time()

    # -- the items ----------------------------------------------------------------------
    def get_processed_item(self, item: Any, response: Response | None) -> Any:
        if response is None or not ItemAdapter.is_item(item):
            return item  # not derived from a response (start(), a component's own)
        last, provenance = self._last
        if last is None or last() is not response:
            provenance = self._made(response)
            self._last = (weakref.ref(response), provenance)
        if provenance is None:
            self._inc("provenance/unjudged")
            return item
        adapter = ItemAdapter(item)
        try:
            adapter[self.field] = copy.deepcopy(provenance)
        except KeyError:
            name = type(item).__qualname__
            raise RobotsTxtProvenanceError(
                f"{name} has no field {self.field!r}, in which ROBOTSTXT_PROVENANCE puts the provenance of every item: "
                f"declare it in {name} ({self.field} = scrapy.Field(), or a dataclass or attrs field defaulting to "
                f"None), or set ROBOTSTXT_PROVENANCE to a field {name} has") from None
        self._inc("provenance/items")
        return item

    def _made(self, response: Response) -> dict[str, Any] | None:
        """The provenance of the items of ``response``, or None: its request has no verdict."""
        request = response.request
        judgement = None if request is None else self._verdicts.get(request)
        if request is None or judgement is None:
            return None
        return provenance(response, request, judgement, self._received.get(response, time.time()),
                          self.purpose_tokens)


def provenance(response: Response, request: Request, judgement: Judgement, received: float,
               default_purposes: tuple[str, ...]) -> dict[str, Any]:
    """The provenance (version :data:`~.item_check.VERSION`) of the items of ``response``,
    from its request's verdict and meta keys; every list and text a site controls bounded
    (docs/provenance.md, "Bounds")."""
    meta = request.meta
    url = request.url
    robots = judgement.robots
    rule = judgement.rule
    record = meta.get(RECORD_META)
    if record is not None and record[0] != url:
        record = None  # copied from another request's meta
    purposes = meta.get(PURPOSE_META)
    obeyed = purpose_tokens(purposes, PURPOSE_META) if purposes is not None else default_purposes
    origin = Origin.from_url(url)
    robots_part: dict[str, Any] | None = None
    if robots is not None:
        fetch = robots.good_fetch if robots.access is Access.UNREACHABLE else robots.outcome
        fetched = robots.good_at if robots.good_at is not None else robots.fetched_at
        robots_part = {
            "url": None if origin is None else cut(origin.robots_url, MAX_URL),
            "access": robots.access.value,
            "status": None if fetch is None else fetch.status,
            "fetched": round(fetched, 3),
            "digest": None if record is None else record[5],
        }
    entry = meta.get(TDMREP_META)
    return {
        "v": VERSION,
        "url": cut(response.url, MAX_URL),
        "request_url": cut(url, MAX_URL),
        "status": response.status,
        "fetched": round(received, 3),
        "verdict": judgement.kind.value,
        "token": judgement.purpose or judgement.token,
        "purpose_tokens": [cut(token, _MAX_LABEL) for token in obeyed[:MAX_LIST]],
        "rule": None if rule is None else shown_rule(rule.directive, rule.pattern, rule.line),
        "robots": robots_part,
        "usage": _usage(meta, origin),
        "tdmrep": None if TDMREP_META not in meta or judgement.kind is Kind.NOT_JUDGED else {"rule": None if
                  entry is None else {"reserved": bool(entry.reserved), "location": cut(entry.location),
                                      "index": entry.index,
                                      "policy": None if entry.policy is None else cut(entry.policy)}},
        "ledger": None if record is None else {"run": record[1], "seg": record[2], "seq": record[3],
                                               "hash": record[4].hex()},
    }


def _usage(meta: dict[str, Any], origin: Origin | None) -> dict[str, Any]:
    """Every usage preference that applied, by category and by source (bounded)."""
    preferences: Preferences | None = meta.get(PREFERENCES_META)
    if preferences is None:  # no response-side source read (or none stated one): robots.txt and tdmrep.json's
        statements: list[Statement] = []
        usage = meta.get(USAGE_META)
        if usage:
            statements.extend(robotstxt_statements(usage, "" if origin is None else origin.robots_url))
        entry = meta.get(TDMREP_META)
        if entry is not None and getattr(entry, "reserved", None) is not None:
            statements.append(tdmrep_statement(entry))
        preferences = build(statements)
    more: dict[str, int] = {}
    categories = {}
    for label, (value, sources) in list(preferences.combined.items())[:MAX_LIST]:
        categories[cut(label, _MAX_LABEL)] = {"value": value, "sources": [cut(s) for s in sources[:MAX_LIST]]}
        if len(sources) > MAX_LIST:
            more[f"categories.{cut(label, _MAX_LABEL)}.sources"] = len(sources) - MAX_LIST
    if len(preferences.combined) > MAX_LIST:
        more["categories"] = len(preferences.combined) - MAX_LIST
    said = [_statement(statement) for statement in preferences.statements[:MAX_LIST]]
    if len(preferences.statements) > MAX_LIST:
        more["sources"] = len(preferences.statements) - MAX_LIST
    directives = sorted(preferences.directives)
    if len(directives) > MAX_LIST:
        more["directives"] = len(directives) - MAX_LIST
    part: dict[str, Any] = {"categories": categories, "sources": said,
                            "directives": [cut(d, _MAX_LABEL) for d in directives[:MAX_LIST]]}
    if more:
        part["more"] = more
    return part


def _statement(statement: Statement) -> dict[str, Any]:
    values = list(statement.values.items())
    data: dict[str, Any] = {
        "source": statement.source, "where": cut(statement.where), "text": cut(statement.text),
        "values": {cut(label, _MAX_LABEL): cut(str(value), _MAX_LABEL) for label, value in values[:MAX_LIST]}}
    if len(values) > MAX_LIST:
        data["more_values"] = len(values) - MAX_LIST
    if statement.directives:
        directives = sorted(statement.directives)
        data["directives"] = [cut(d, _MAX_LABEL) for d in directives[:MAX_LIST]]
    if statement.policy is not None:
        data["policy"] = cut(statement.policy)
    if not statement.counted:
        data["superseded_by"] = cut(statement.superseded_by or "")
    return data

