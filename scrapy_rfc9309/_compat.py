"""Everything the plugin needs from Scrapy beyond its documented API, and every
difference between the Scrapy releases it supports (2.13 to the latest), in one
place, found by feature detection rather than by version numbers.

:func:`missing` lists what the installed Scrapy lacks; a test asserts it is empty,
so a release that removes one of these fails the suite instead of a crawl.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy import signals
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.misc import load_object

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.core.downloader import Downloader, Slot
    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings, Settings

__all__ = [
    "BUILTIN_MIDDLEWARE",
    "ROBOTS_PARSED",
    "SCRAPY_VERSION",
    "caching_resolver",
    "direct_http_handler",
    "disable_builtin_middleware",
    "dns_cached",
    "download",
    "download_slot",
    "engine_closing",
    "missing",
    "network_errors",
    "resolver_host_name",
    "send_signal",
    "set_slot_jitter",
    "settings_with_addons",
    "slot_jitter",
    "widen_concurrency",
]

SCRAPY_VERSION: tuple[int, ...] = tuple(int(part) for part in scrapy.__version__.split(".")[:2] if part.isdigit())

#: The built-in middleware this one replaces, by the path Scrapy's base settings use.
BUILTIN_MIDDLEWARE = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"

#: Scrapy's ``robots_parsed`` signal (Scrapy 2.18 and later), or None.
ROBOTS_PARSED: object | None = getattr(signals, "robots_parsed", None)


async def send_signal(crawler: Crawler, signal: object, **kwargs: Any) -> None:
    """Send ``signal`` to its handlers, waiting for those that return a Deferred
    or a coroutine; handler errors are logged, not raised
    (``send_catch_log_async`` from Scrapy 2.15, ``send_catch_log_deferred`` before)."""
    manager = crawler.signals
    send_async = getattr(manager, "send_catch_log_async", None)
    if send_async is not None:
        await send_async(signal=signal, **kwargs)
    else:
        await maybe_deferred_to_future(manager.send_catch_log_deferred(signal=signal, **kwargs))


async def download(crawler: Crawler, request: Request) -> Response:
    """Download ``request`` through the engine and every downloader middleware
    (``engine.download_async`` from Scrapy 2.14, ``engine.download`` before)."""
    engine = crawler.engine
    assert engine is not None
    download_async = getattr(engine, "download_async", None)
    if download_async is not None:
        return await download_async(request)  # type: ignore[no-any-return]
    return await maybe_deferred_to_future(engine.download(request))  # type: ignore[no-any-return]


def engine_closing(engine: ExecutionEngine | None) -> bool:
    """Whether the spider has started closing (there is no signal for that: the
    engine's private slot says so), or the engine is gone or stopped."""
    if engine is None or not engine.running:
        return True
    slot = getattr(engine, "_slot", None)
    return slot is None or getattr(slot, "closing", None) is not None


def widen_concurrency(engine: ExecutionEngine | None, count: int) -> bool:
    """Let ``count`` more requests (less, when negative) be in the downloader at
    once without the engine backing out: requests waiting for a robots.txt, and
    robots.txt fetches, must not take the places of ``CONCURRENT_REQUESTS``.
    Returns False when the limit is off (0, no limit) and nothing was changed."""
    if engine is None:
        return False
    downloader = engine.downloader
    if downloader.total_concurrency <= 0 and count > 0:
        return False
    downloader.total_concurrency += count
    return True


def download_slot(downloader: Downloader, request: Request, spider: Any) -> tuple[str, Slot]:
    """The download slot ``request`` will use, made now when it does not exist yet
    (``Downloader._get_slot``; it took the spider before Scrapy 2.15)."""
    get_slot = downloader._get_slot
    if _SLOT_TAKES_SPIDER:
        return get_slot(request, spider)  # type: ignore[call-arg]
    return get_slot(request)


def slot_jitter(slot: Slot) -> float:
    """The slot's random variation of its delay, as a fraction of it
    (``Slot.jitter`` from Scrapy 2.19, ±50 % or nothing before)."""
    if _SLOT_HAS_JITTER:
        return float(slot.jitter)
    return 0.5 if slot.randomize_delay else 0.0  # type: ignore[attr-defined]


def set_slot_jitter(slot: Slot, jitter: float) -> None:
    if _SLOT_HAS_JITTER:
        slot.jitter = jitter
    else:
        slot.randomize_delay = bool(jitter)  # type: ignore[attr-defined]


def disable_builtin_middleware(settings: BaseSettings) -> None:
    """Turn Scrapy's built-in robots.txt middleware off in ``DOWNLOADER_MIDDLEWARES``,
    under the path Scrapy's base settings use and under any other key (class or
    path) that names it: before Scrapy 2.15, a class key and a path key of the same
    middleware are two entries."""
    builtin = load_object(BUILTIN_MIDDLEWARE)
    middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
    for key in list(middlewares):
        try:
            named = load_object(key) if isinstance(key, str) else key
        except (ImportError, NameError, ValueError):
            continue
        if named is builtin:
            middlewares[key] = None
    middlewares[BUILTIN_MIDDLEWARE] = None
    settings.set("DOWNLOADER_MIDDLEWARES", middlewares, settings.getpriority("DOWNLOADER_MIDDLEWARES") or "addon")


def settings_with_addons(settings: Settings) -> Settings:
    """A copy of ``settings`` as a crawl gets them, once the add-ons of ``ADDONS``
    have changed them (``update_pre_crawler_settings``, then ``update_settings``,
    as ``CrawlerProcess`` and ``Crawler`` call them); the add-ons see a crawler
    that does not crawl."""
    from scrapy import Spider
    from scrapy.addons import AddonManager
    from scrapy.crawler import Crawler

    copy = settings.copy()
    AddonManager.load_pre_crawler_settings(copy)
    crawler = Crawler(Spider, copy)
    crawler.addons.load_settings(crawler.settings)
    return crawler.settings


def network_errors(settings: BaseSettings) -> tuple[type[BaseException], ...]:
    """The exceptions that mean the network failed (Scrapy's ``RETRY_EXCEPTIONS``,
    and the transport errors of Twisted's HTTP client), as opposed to a bug or an
    exception raised by a downloader middleware."""
    from twisted.internet import defer, error
    from twisted.web import client

    found: list[type[BaseException]] = [
        defer.TimeoutError, defer.CancelledError, error.ConnectError, error.ConnectionLost, error.TimeoutError,
        error.DNSLookupError, client.ResponseFailed, client.ResponseNeverReceived, OSError,
    ]
    cancelled = getattr(scrapy.exceptions, "DownloadCancelledError", None)
    if cancelled is not None:
        found.append(cancelled)
    for timeout in ("DownloadTimeoutError", "DownloadConnectionRefusedError", "DownloadFailedError"):
        extra = getattr(scrapy.exceptions, timeout, None)
        if isinstance(extra, type):
            found.append(extra)
    for entry in _as_list(settings.get("RETRY_EXCEPTIONS")):
        try:
            cls = load_object(entry) if isinstance(entry, str) else entry
        except (ImportError, NameError, ValueError, AttributeError):
            continue
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(dict.fromkeys(found))


#: Scrapy's download handlers that connect to the origin themselves, resolving its
#: host with the reactor's resolver (and so through Scrapy's DNS cache).
DIRECT_HTTP_HANDLERS = frozenset({
    "scrapy.core.downloader.handlers.http11.HTTP11DownloadHandler",
    "scrapy.core.downloader.handlers.http2.H2DownloadHandler",
})


def direct_http_handler(settings: BaseSettings, scheme: str) -> bool:
    """Whether ``scheme``'s download handler (``DOWNLOAD_HANDLERS``) is exactly one
    of Scrapy's Twisted HTTP handlers (not a subclass: a browser or an API handler
    may subclass one and download some requests another way)."""
    entry = settings.getwithbase("DOWNLOAD_HANDLERS").get(scheme)
    try:
        handler = load_object(entry) if isinstance(entry, str) else entry
    except Exception:  # the handler's own import fails: Scrapy reports it, not this
        return False
    return isinstance(handler, type) and f"{handler.__module__}.{handler.__qualname__}" in DIRECT_HTTP_HANDLERS


def caching_resolver(reactor: Any) -> bool:
    """Whether the reactor resolves names through one of Scrapy's caching
    resolvers (``DNS_RESOLVER``, installed by ``CrawlerProcess``) with the DNS cache
    on (``DNSCACHE_ENABLED``)."""
    from scrapy.resolver import CachingHostnameResolver, CachingThreadedResolver, dnscache

    if not dnscache.limit:
        return False
    return isinstance(getattr(reactor, "nameResolver", None), CachingHostnameResolver) or isinstance(
        getattr(reactor, "resolver", None), CachingThreadedResolver)


def dns_cached(host: str) -> bool:
    """Whether Scrapy's DNS cache holds ``host`` (as :func:`resolver_host_name` gives it)."""
    from scrapy.resolver import dnscache

    return host in dnscache


def resolver_host_name(host: str) -> str:
    """``host`` (an origin's, ASCII) as Twisted's ``HostnameEndpoint`` gives it to
    the resolver, which is the DNS cache's key: an internationalised name decoded
    from its IDNA form."""
    from twisted.internet.endpoints import HostnameEndpoint

    try:
        return str(HostnameEndpoint._hostAsBytesAndText(host.encode("ascii"))[2])
    except (AttributeError, UnicodeError, TypeError, IndexError):
        return host


def _as_list(value: Any) -> Iterable[Any]:
    if value is None:
        return ()
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return list(value)


def _detect() -> tuple[bool, bool]:
    from scrapy.core.downloader import Downloader, Slot

    parameter = inspect.signature(Downloader._get_slot).parameters.get("spider")
    takes_spider = parameter is not None and parameter.default is inspect.Parameter.empty
    has_jitter = "jitter" in inspect.signature(Slot).parameters
    return takes_spider, has_jitter


_SLOT_TAKES_SPIDER, _SLOT_HAS_JITTER = _detect()


def missing() -> list[str]:
    """The Scrapy internals this module relies on that the installed Scrapy lacks
    (empty on every supported release)."""
    from scrapy.core.downloader import Downloader, Slot
    from scrapy.core.engine import ExecutionEngine

    gone: list[str] = []
    if not (hasattr(ExecutionEngine, "download_async") or hasattr(ExecutionEngine, "download")):
        gone.append("ExecutionEngine.download_async / download")
    source = inspect.getsource(ExecutionEngine)
    if "self._slot" not in source or ".closing" not in source:
        gone.append("ExecutionEngine._slot.closing")
    if "total_concurrency" not in inspect.getsource(Downloader):
        gone.append("Downloader.total_concurrency")
    if not hasattr(Downloader, "_get_slot"):
        gone.append("Downloader._get_slot")
    if not hasattr(Downloader, "get_slot_key"):
        gone.append("Downloader.get_slot_key")
    if "per_slot_settings" not in inspect.getsource(Downloader):
        gone.append("Downloader.per_slot_settings")
    slot_source = inspect.getsource(Slot)
    if not _SLOT_HAS_JITTER and "randomize_delay" not in slot_source:
        gone.append("Slot.jitter / Slot.randomize_delay")
    if "delay" not in inspect.signature(Slot).parameters:
        gone.append("Slot.delay")
    from scrapy import resolver
    from twisted.internet.endpoints import HostnameEndpoint

    for name in ("CachingHostnameResolver", "CachingThreadedResolver", "dnscache"):
        if not hasattr(resolver, name):
            gone.append(f"scrapy.resolver.{name}")
    if not hasattr(HostnameEndpoint, "_hostAsBytesAndText"):
        gone.append("twisted HostnameEndpoint._hostAsBytesAndText")
    return gone
