"""Resolving an origin's host name while this process waits for another process's
robots.txt fetch (``ROBOTSTXT_DNS_WARMUP``, with a shared store).

The process that fetched the robots.txt resolved the host for it, and its first page
request finds the name in Scrapy's DNS cache. A process that only waited would
resolve it once its requests are released; resolving it while it waits puts the
name in the same cache first, so a waiting process reaches the origin as soon as the
one that fetched.

A lookup is made only where the crawl's own requests would make it: the request
goes straight to the origin, through Scrapy's Twisted HTTP download handlers and a
caching resolver of Scrapy's. Not for a request with a proxy (its ``proxy`` meta, or
the environment's proxies as ``HttpProxyMiddleware`` applies them), and only once
this process's own robots.txt requests were seen reaching the downloader without
one: a proxy set by a later downloader middleware shows on them, and from then on
nothing is looked up. A lookup there would tell the local DNS resolver host names
that the crawl sends through the proxy, and gain nothing.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from urllib.request import getproxies, proxy_bypass

from twisted.internet.interfaces import IResolutionReceiver
from zope.interface import implementer  # type: ignore[import-untyped]

from ..runtime import compat as _compat
from ..runtime.reporting import Reporting

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from ..core.origins import Origin

__all__ = ["DnsWarmup"]

logger = logging.getLogger(__name__)

#: Lookups of this module running at once: the reactor's thread pool (10 threads by
#: default) keeps room for the lookups of the requests being downloaded.
MAX_IN_FLIGHT = 4
#: Host names waiting for a lookup (beyond, a wait starts without one).
MAX_QUEUED = 10_000


class DnsWarmup(Reporting):
    """Looks up the host names of origins this process waits for."""

    @classmethod
    def for_crawl(cls, crawler: Crawler, enabled: bool) -> DnsWarmup | None:
        """The crawl's warm-up: with ``ROBOTSTXT_DNS_WARMUP`` (``enabled``), unless the
        crawl runs without a reactor: the lookups go through Twisted's resolver into
        Scrapy's DNS cache, which such a crawl does not use (its download handler
        resolves names itself)."""
        if not enabled:
            return None
        settings = crawler.settings
        if _compat.reactor_enabled(settings):
            return cls(crawler)
        if (settings.getpriority("ROBOTSTXT_DNS_WARMUP") or 0) > 0:
            logger.warning("ROBOTSTXT_DNS_WARMUP is off: it needs a Twisted reactor (TWISTED_REACTOR_ENABLED is "
                           "False). Set ROBOTSTXT_DNS_WARMUP to False to remove this warning.")
        return None

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._env_proxies = getproxies() if crawler.settings.getbool("HTTPPROXY_ENABLED", True) else {}
        self._handlers: dict[str, bool] = {}
        #: Whether this process's robots.txt requests go direct: None until one was seen.
        self._direct: bool | None = None
        #: Whether the reactor resolves through a caching resolver of Scrapy's: None until asked.
        self._caching: bool | None = None
        #: (host, port) -> the origin waited for, in the order the waits began.
        #: Scrapy's ``CachingHostnameResolver`` kept the looked-up port in its cache
        #: before Scrapy 2.18, so the lookup is made with the origin's.
        self._queue: dict[tuple[str, int], Origin] = {}
        self._in_flight = 0
        self._running = False

    def waiting(self, origin: Origin, request: Request | None) -> None:
        """This process starts waiting for another process's fetch of ``origin``
        (for ``request``): look its host up, when allowed, unless it is cached."""
        if self._direct is False or request is None:
            return
        if request.meta.get("proxy") or not self._direct_handler(origin.scheme):
            return
        if origin.scheme in self._env_proxies and not proxy_bypass(origin.host):
            return
        host = _compat.resolver_host_name(origin.host)
        key = (host, origin.port)
        if key in self._queue or len(self._queue) >= MAX_QUEUED or _compat.dns_cached(host):
            return
        self._queue[key] = origin
        self._run()

    def done(self, origin: Origin) -> None:
        """The wait for ``origin`` ended: a lookup not started yet would help no
        more (its released requests resolve the host themselves), and lookups of
        hosts whose waits ended must not queue ahead of the others'."""
        if self._queue:
            self._queue.pop((_compat.resolver_host_name(origin.host), origin.port), None)

    def close(self) -> None:
        """The spider closes: no more lookups (those running end on their own, a
        few at most, so the process is not held up joining resolver threads)."""
        self._direct = False
        self._forget()

    def route_seen(self, request: Request) -> None:
        """One of this process's robots.txt requests reached the downloader, after
        every downloader middleware: a proxy on it turns the lookups off."""
        if self._direct is False:
            return
        if request.meta.get("proxy"):
            self._direct = False
            self._forget()
            logger.debug("robots.txt requests go through a proxy: no DNS warm-up", extra=self._log_extra)
            return
        if self._direct is None:
            self._direct = True
            self._run()

    def _direct_handler(self, scheme: str) -> bool:
        known = self._handlers.get(scheme)
        if known is None:
            known = self._handlers[scheme] = _compat.direct_http_handler(self.crawler.settings, scheme)
        return known

    def _run(self) -> None:
        if not self._direct or self._running:
            return
        from twisted.internet import reactor  # the installed one, not at import time

        if self._caching is None:
            self._caching = _compat.caching_resolver(reactor)
        if not self._caching:  # nothing would keep the answer
            self._forget()
            return
        # A resolver may answer at once, from inside resolveHostName: the loop goes
        # on, instead of each answer starting the next lookup from within the last.
        self._running = True
        try:
            while self._queue and self._in_flight < MAX_IN_FLIGHT:
                host, port = key = next(iter(self._queue))
                del self._queue[key]
                if _compat.dns_cached(host):
                    continue
                self._in_flight += 1
                self._inc("dns_warmup")
                try:
                    reactor.nameResolver.resolveHostName(_Done(self), host, port)
                except Exception:
                    self._in_flight -= 1
                    logger.debug("DNS warm-up of %s failed", host, exc_info=True, extra=self._log_extra)
        finally:
            self._running = False

    def _forget(self) -> None:
        self._queue.clear()

    def _done(self) -> None:
        self._in_flight -= 1
        self._run()


@implementer(IResolutionReceiver)
class _Done:
    """Receives a warm-up lookup's answer: the resolver caches it; this only frees
    the lookup's place (a failed lookup ends here too)."""

    def __init__(self, warmup: DnsWarmup) -> None:
        self._warmup = warmup
        self._ended = False

    def resolutionBegan(self, resolution: Any) -> None:
        pass

    def addressResolved(self, address: Any) -> None:
        pass

    def resolutionComplete(self) -> None:
        if not self._ended:
            self._ended = True
            self._warmup._done()
