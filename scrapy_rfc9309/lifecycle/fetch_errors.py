"""What an exception that ends a robots.txt (or tdmrep.json) download is: its
:class:`~scrapy_rfc9309.core.state.Cause`, and the log lines of the errors that are the
crawl's and not the site's (a request Scrapy cannot make, a downloader middleware or
handler that raised): each kind logged once, naming the fix. What the fetch's outcome is
stays :mod:`.fetch`'s rule.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..core.state import Cause
from ..runtime import compat as _compat
from ..runtime.reporting import Reporting

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from ..core.documents import Document
    from ..core.origins import Origin

__all__ = ["FetchErrors", "words"]

logger = logging.getLogger(__name__)

#: Distinct exceptions whose traceback is logged (beyond, each is logged at DEBUG).
_MAX_LOGGED_CAUSES = 100


def words(exc: BaseException) -> str:
    """An exception as an outcome's ``error``."""
    return f"{type(exc).__name__}: {exc}"


class FetchErrors(Reporting):
    """The exceptions a download ends with, by kind (``network``, ``cannot_request``: tuples of
    exception classes for ``except``), and what is counted and logged of each."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.network = _compat.network_errors(crawler.settings)
        self.cannot_request = _compat.cannot_request_errors()
        self._no_host = _compat.no_host_errors()
        self._refused = _compat.refused_errors()
        self._config_errors_logged: set[tuple[type, str]] = set()
        self._component_errors_logged: set[tuple[type, str]] = set()

    def cause(self, exc: BaseException) -> Cause:
        if isinstance(exc, self._no_host):
            return Cause.NO_HOST
        if isinstance(exc, self._refused):
            return Cause.REFUSED
        return Cause.TRANSIENT

    def network_error(self, exc: BaseException, origin: Origin, document: Document) -> None:
        self._inc(f"{document.stat}exception_count/{type(exc)}")
        logger.debug("%s of %s: %s: %s", document.name, origin, type(exc).__name__, exc, extra=self._log_extra)

    def cannot_make(self, exc: BaseException, url: str, origin: Origin, document: Document,
                    redirected: bool) -> None:
        """Count and log a request Scrapy cannot make at all: after a redirect, a Location the
        site got wrong (at DEBUG) or a scheme the crawl cannot download (an error); the origin's
        own URL, an error naming the fix (each cause logged once)."""
        name, stat = document.name, document.stat
        self._inc(f"{stat}exception_count/{type(exc)}")
        error = words(exc)
        if redirected:
            # A Location the site got wrong is the site's business; a scheme the crawl cannot download is not.
            if not isinstance(exc, ValueError):
                self._config_error(exc, url, error, urlsplit(url).scheme, f"the redirected {name} is unavailable")
            self._inc(f"{stat}redirect_failed")
            logger.debug("%s of %s: redirect to %s, which Scrapy cannot request (%s): unavailable", name, origin,
                         url, error, extra=self._log_extra)
            return
        self._config_error(exc, url, error, origin.scheme,
                           "requests of the origins this affects are dropped (robotstxt/dropped_cannot_request) "
                           f"and their {name} is not fetched again in this crawl")

    def _config_error(self, exc: BaseException, url: str, error: str, scheme: str, consequence: str) -> None:
        cause = (type(exc), str(exc))
        if cause in self._config_errors_logged:
            return
        if len(self._config_errors_logged) < _MAX_LOGGED_CAUSES:
            self._config_errors_logged.add(cause)
        logger.error("Scrapy cannot request %s: %s. %s This is logged once; %s.", url, error,
                     _fix_for(exc, scheme), consequence, extra=self._log_extra)

    def component_error(self, exc: BaseException, url: str, document: Document) -> None:
        """Count and log a downloader middleware's or handler's exception: its traceback once
        per kind and message, a line at DEBUG after that (it is retried on the backoff)."""
        name = document.name
        self._inc(f"{document.stat}exception_count/{type(exc)}")
        cause = (type(exc), str(exc))
        if cause in self._component_errors_logged:
            logger.debug("%s request %s failed again: %s: %s", name, url, type(exc).__name__, exc,
                         extra=self._log_extra)
            return
        if len(self._component_errors_logged) < _MAX_LOGGED_CAUSES:
            self._component_errors_logged.add(cause)
        logger.error("%s request %s failed in a downloader middleware or handler: %s: %s; counted as a "
                     "failed fetch, retried later (logged once)", name, url, type(exc).__name__, exc, exc_info=exc,
                     extra=self._log_extra)


def _fix_for(exc: BaseException, scheme: str) -> str:
    """What to change so that Scrapy can make the request ``exc`` refused."""
    if isinstance(exc, ValueError):
        return ("Its URL, or what a downloader middleware made of it (a proxy, a rewritten URL), is one Scrapy's "
                "HTTP client refuses.")
    return (f"Check the download handler for {scheme!r} URLs (DOWNLOAD_HANDLERS[{scheme!r}]) and install what it "
            "needs; Scrapy logs why it could not load it when the crawl starts.")
