"""Exceptions the middleware raises (a dropped request raises a subclass of ``IgnoreRequest``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest

if TYPE_CHECKING:
    from .core.robotstxt import Verdict
    from .core.tdmrep import TdmEntry
    from .core.verdict import Judgement

__all__ = [
    "RobotsTxtConfigError",
    "RobotsTxtForbidden",
    "RobotsTxtLedgerError",
    "RobotsTxtMetaError",
    "RobotsTxtTdmReserved",
    "RobotsTxtUnreachable",
    "RobotsTxtUsageDenied",
    "RobotsTxtUsageDeniedByResponse",
]


class RobotsTxtConfigError(ValueError):
    """A ``ROBOTSTXT_*`` setting has a value the middleware cannot use."""


class _Judged(IgnoreRequest):
    """A request refused by a verdict: ``judgement`` is the
    :class:`~scrapy_rfc9309.judgement.Judgement` (what the ledger, the stats and the
    log tell too)."""

    judgement: Judgement | None = None


class RobotsTxtForbidden(_Judged):
    """The origin's robots.txt disallows the request. ``verdict`` holds the
    deciding rule; ``robots_url`` the file it comes from."""

    def __init__(self, message: str, verdict: Verdict, robots_url: str, *,
                 judgement: Judgement | None = None) -> None:
        super().__init__(message)
        self.judgement = judgement
        self.verdict = verdict
        self.robots_url = robots_url


class RobotsTxtUnreachable(_Judged):
    """The origin's robots.txt is unreachable (RFC 9309, 2.3.1.4: complete
    disallow) and waiting cannot help the request. ``reason`` says why:
    ``"max_wait"`` (unreachable for longer than ``ROBOTSTXT_MAX_WAIT``, or
    ``ROBOTSTXT_MAX_WAIT_REFUSED`` for refused connections), ``"no_host"`` (its
    host name does not resolve), ``"cannot_request"`` (Scrapy cannot make the
    robots.txt request with the crawl's settings), ``"closing"`` (the spider
    closed while the request was held) or ``"idle"`` (held requests were all that
    was left of the crawl for ``ROBOTSTXT_MAX_WAIT_IDLE``). The message names the
    origin, how long its robots.txt was unreachable and its last fetch."""

    def __init__(self, message: str, robots_url: str, reason: str, *, judgement: Judgement | None = None) -> None:
        super().__init__(message)
        self.judgement = judgement
        self.robots_url = robots_url
        self.reason = reason


class RobotsTxtUsageDenied(_Judged):
    """Dropped because the applicable usage preference (``Content-Usage`` /
    ``Content-Signal``) says ``n`` for a category listed in ``ROBOTSTXT_USAGE_DENY``."""

    def __init__(self, message: str, preference: object, robots_url: str, *,
                 judgement: Judgement | None = None) -> None:
        super().__init__(message)
        self.judgement = judgement
        self.preference = preference
        self.robots_url = robots_url


class RobotsTxtUsageDeniedByResponse(RobotsTxtUsageDenied):
    """A downloaded response not passed to the spider because its usage preferences
    (``preference``: a :class:`scrapy_rfc9309.usage.preferences.Preferences`, the response's
    headers and meta tags combined with robots.txt and tdmrep.json) say ``n`` for
    ``category``, listed in ``ROBOTSTXT_USAGE_DENY``; ``sources`` says where the ``n``
    comes from (``"Content-Usage header"``, ``'<meta name="robots">'``, ...)."""

    def __init__(self, message: str, preference: object, robots_url: str, category: str,
                 sources: tuple[str, ...]) -> None:
        super().__init__(message, preference, robots_url)
        self.category = category
        self.sources = sources
class RobotsTxtTdmReserved(_Judged):
    """Dropped because the origin's tdmrep.json reserves text and data mining rights
    on the URL (TDMRep) and ``ROBOTSTXT_USAGE_DENY`` lists a category a reservation
    denies (see :data:`scrapy_rfc9309.tdmrep.RESERVED_CATEGORIES`). ``entry`` is the
    rule that applies, ``tdmrep_url`` the file it comes from."""

    def __init__(self, message: str, entry: TdmEntry, tdmrep_url: str, *, judgement: Judgement | None = None) -> None:
        super().__init__(message)
        self.judgement = judgement
        self.entry = entry
        self.tdmrep_url = tdmrep_url


class RobotsTxtMetaError(_Judged):
    """Dropped because a ``robotstxt_*`` request meta key has a value of the wrong
    type; ``key`` names it."""

    def __init__(self, message: str, key: str, *, judgement: Judgement | None = None) -> None:
        super().__init__(message)
        self.judgement = judgement
        self.key = key


class RobotsTxtLedgerError(IgnoreRequest):
    """Not released (a request) or not passed to the spider (a response): its record
    could not be written to the ledger (``ROBOTSTXT_LEDGER``: a full disk, a file size
    limit, permissions). The spider closes with the reason ``robotstxt_ledger_error``."""
