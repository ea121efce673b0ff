"""Everything the plugin needs from Scrapy beyond its documented API, and every
difference between the Scrapy releases it supports (2.13 to the latest), in one
place, found by feature detection rather than by version numbers: the engine's
closing state and scheduler, the downloader's concurrency limit and download slots
(:func:`download_slot` and the slot helpers below, for ``crawl_delay``), signals,
exception names, settings with the add-ons applied. The event loop's timers,
sleeps and thread hand-offs, and how they differ between releases and run modes,
are :mod:`.loop`'s.

:func:`missing` lists what the installed Scrapy lacks; a test asserts it is empty,
so a release that removes one of these fails the suite instead of a crawl.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import scrapy
from pydispatch import dispatcher  # type: ignore[import-untyped,unused-ignore]
from pydispatch.dispatcher import getReceivers  # type: ignore[import-untyped,unused-ignore]
from scrapy import signals
from scrapy.http.headers import Headers
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
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
    "builtin_middleware_enabled",
    "caching_resolver",
    "cannot_request_errors",
    "close_spider",
    "direct_http_handler",
    "disable_builtin_middleware",
    "dns_cached",
    "download",
    "download_slot",
    "engine_closing",
    "existing_slot",
    "keep_slot_setting",
    "missing",
    "network_errors",
    "no_host_errors",
    "reactor_enabled",
    "refused_errors",
    "resolver_host_name",
    "schedule",
    "scheduler_persists",
    "send_signal",
    "set_slot_delay",
    "set_slot_jitter",
    "settings_with_addons",
    "slot_delay",
    "slot_jitter",
    "widen_concurrency",
]

SCRAPY_VERSION: tuple[int, ...] = tuple(int(part) for part in scrapy.__version__.split(".")[:2] if part.isdigit())

#: The built-in middleware this one replaces, by the path Scrapy's base settings use.
BUILTIN_MIDDLEWARE = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"

#: Scrapy's ``robots_parsed`` signal (Scrapy 2.18 and later), or None.
ROBOTS_PARSED: object | None = getattr(signals, "robots_parsed", None)


def reactor_enabled(settings: BaseSettings) -> bool:
    """Whether the crawl runs on a Twisted reactor (``TWISTED_REACTOR_ENABLED``,
    Scrapy 2.15 and later; always before)."""
    return settings.getbool("TWISTED_REACTOR_ENABLED", True)


def has_receivers(crawler: Crawler, signal: object) -> bool:
    """Whether ``crawler.signals.send_catch_log(signal, ...)`` would call any receiver:
    PyDispatcher's ``getReceivers`` (documented as a truth test of the connections) for
    the four (sender, signal) pairs its ``getAllReceivers`` reads, the sender being the
    one ``SignalManager`` sends from (its ``sender``). A receiver connected later is
    seen at the next look."""
    sender = crawler.signals.sender
    return bool(getReceivers(sender, signal) or getReceivers(sender, dispatcher.Any)
                or getReceivers(dispatcher.Any, signal) or getReceivers(dispatcher.Any, dispatcher.Any))


def header_values(headers: Headers, key: bytes) -> list[bytes]:
    """``headers.getlist(key)`` for a ``key`` spelled as ``headers.normkey`` spells it. Scrapy's
    ``Headers`` (every version supported) is a dict from those keys to the lists of values
    ``getlist`` returns; read directly, the name is not normalized again on each look-up (a
    subclass is asked through ``getlist``)."""
    if type(headers) is Headers:
        return dict.get(headers, key) or []
    return headers.getlist(key)


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


def close_spider(crawler: Crawler, reason: str) -> None:
    """Close the crawl's spider with ``reason`` (``engine.close_spider_async`` from
    Scrapy 2.14, ``engine.close_spider`` before); nothing when it is closing already."""
    engine = crawler.engine
    if engine_closing(engine):
        return
    assert engine is not None
    close_async = getattr(engine, "close_spider_async", None)
    if close_async is not None:
        deferred_from_coro(close_async(reason=reason))
    else:
        engine.close_spider(crawler.spider, reason)  # type: ignore[arg-type]


def schedule(crawler: Crawler, request: Request) -> bool:
    """Hand ``request`` to the crawl's scheduler, as a request a spider yields
    (``engine.crawl``); False when the engine is gone."""
    engine = crawler.engine
    if engine is None:
        return False
    engine.crawl(request)
    return True


def engine_closing(engine: ExecutionEngine | None) -> bool:
    """Whether the spider has started closing (there is no signal for that: the
    engine's private slot says so), or the engine is gone or stopped."""
    if engine is None or not engine.running:
        return True
    slot = getattr(engine, "_slot", None)
    return slot is None or getattr(slot, "closing", None) is not None


def only_these_left(engine: ExecutionEngine | None, ours: int) -> bool:
    """Whether the crawl has nothing left but ``ours`` requests in the downloader: its
    start requests consumed, its scheduler empty, its scraper idle, and no more than
    ``ours`` requests in the downloader (the engine's own idle test, which a request
    waiting in the downloader keeps false; its parts are private: ``_start`` (Scrapy
    2.13+), the slot's scheduler before 2.19, the scraper's slot)."""
    if engine is None or engine_closing(engine):
        return False
    if getattr(engine, "_start", None) is not None:
        return False
    slot = getattr(engine, "_slot", None)
    scheduler = getattr(engine, "scheduler", None) or getattr(slot, "scheduler", None)
    scraper_slot = getattr(engine.scraper, "slot", None)
    if scheduler is None or scraper_slot is None or not scraper_slot.is_idle():
        return False
    if scheduler.has_pending_requests():
        return False
    return len(engine.downloader.active) <= ours


def scheduler_persists(engine: ExecutionEngine | None) -> bool:
    """Whether the crawl's scheduler keeps the requests it holds when the spider
    closes, so that a resumed crawl gets them: Scrapy's with a ``JOBDIR`` (its disk
    queues), or one with a true ``persist`` attribute (scrapy-redis's, with
    ``SCHEDULER_PERSIST``). The scheduler is ``engine.scheduler`` from Scrapy 2.19,
    the engine's private slot's before."""
    if engine is None:
        return False
    scheduler = getattr(engine, "scheduler", None)
    if scheduler is None:
        slot = getattr(engine, "_slot", None)
        scheduler = getattr(slot, "scheduler", None)
    if scheduler is None:
        return False
    return getattr(scheduler, "dqs", None) is not None or bool(getattr(scheduler, "persist", False))


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


def download_slot(crawler: Crawler, request: Request) -> tuple[str, Slot]:
    """The key and the download slot ``request`` will use, the slot made now when it
    does not exist yet (``Downloader._get_slot``; it took the spider before Scrapy 2.15)."""
    get_slot = _downloader(crawler)._get_slot
    if _SLOT_TAKES_SPIDER:
        return get_slot(request, crawler.spider)  # type: ignore[call-arg]
    return get_slot(request)


def existing_slot(crawler: Crawler, key: str) -> Slot | None:
    """The download slot of ``key``, None when the downloader has none (it drops idle
    slots) or the engine is gone (``Downloader.slots``)."""
    engine = crawler.engine
    return None if engine is None else engine.downloader.slots.get(key)


def keep_slot_setting(crawler: Crawler, key: str, name: str, value: float) -> None:
    """Have the slot of ``key`` made with ``name`` (``"delay"``, ``"jitter"``) set to ``value``
    when the downloader makes it again after dropping it idle, as a ``DOWNLOAD_SLOTS`` entry
    would (``Downloader.per_slot_settings``)."""
    _downloader(crawler).per_slot_settings.setdefault(key, {})[name] = value


def slot_delay(slot: Slot) -> float:
    """The slot's delay between downloads, in seconds, before its jitter (``Slot.delay``)."""
    return float(slot.delay)


def set_slot_delay(slot: Slot, delay: float) -> None:
    slot.delay = delay


def _downloader(crawler: Crawler) -> Downloader:
    engine = crawler.engine
    assert engine is not None, "the crawl's engine is not running"
    return engine.downloader


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


def builtin_middleware_enabled(settings: BaseSettings) -> bool:
    """Whether Scrapy's built-in robots.txt middleware (or a subclass of it) is in
    the downloader middlewares Scrapy builds from ``DOWNLOADER_MIDDLEWARES`` and
    its base, read as Scrapy's middleware manager reads them."""
    return downloader_middleware_enabled(settings, load_object(BUILTIN_MIDDLEWARE))


def downloader_middleware_enabled(settings: BaseSettings, middleware: type) -> bool:
    """Whether ``middleware`` (or a subclass of it) is in the downloader middlewares
    Scrapy builds from ``DOWNLOADER_MIDDLEWARES`` and its base, read as Scrapy's
    middleware manager reads them."""
    from scrapy.utils.conf import build_component_list

    # Scrapy 2.15 and later merge a class key with the path key of the same class.
    with_base = getattr(settings, "get_component_priority_dict_with_base", settings.getwithbase)
    for entry in build_component_list(with_base("DOWNLOADER_MIDDLEWARES")):
        try:
            cls = load_object(entry) if isinstance(entry, str) else entry
        except (ImportError, NameError, ValueError, AttributeError):
            continue  # Scrapy reports a middleware it cannot load
        if isinstance(cls, type) and issubclass(cls, middleware):
            return True
    return False


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


def no_host_errors() -> tuple[type[BaseException], ...]:
    """The exceptions of a download whose host name does not resolve
    (``CannotResolveHostError`` from Scrapy 2.15, Twisted's before)."""
    import socket

    from twisted.internet.error import DNSLookupError

    found: list[type[BaseException]] = [DNSLookupError, socket.gaierror]
    return _with_scrapy(found, "CannotResolveHostError")


def refused_errors() -> tuple[type[BaseException], ...]:
    """The exceptions of a download whose connection was refused
    (``DownloadConnectionRefusedError`` from Scrapy 2.15, Twisted's before)."""
    from twisted.internet.error import ConnectionRefusedError as TxConnectionRefusedError

    found: list[type[BaseException]] = [TxConnectionRefusedError, ConnectionRefusedError]
    return _with_scrapy(found, "DownloadConnectionRefusedError")


def cannot_request_errors() -> tuple[type[BaseException], ...]:
    """The exceptions of a download Scrapy cannot make at all: no download handler
    for the scheme (or one that failed to load), a URL its HTTP client refuses
    (Twisted's ``ValueError: Invalid URI``; ``UnsupportedURLSchemeError`` from
    Scrapy 2.15)."""
    from scrapy.exceptions import NotSupported
    from twisted.web.error import SchemeNotSupported

    found: list[type[BaseException]] = [NotSupported, SchemeNotSupported, ValueError]
    return _with_scrapy(found, "UnsupportedURLSchemeError")


def _with_scrapy(found: list[type[BaseException]], name: str) -> tuple[type[BaseException], ...]:
    extra = getattr(scrapy.exceptions, name, None)
    if isinstance(extra, type):
        found.append(extra)
    return tuple(found)


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
    if "self.slots" not in inspect.getsource(Downloader):
        gone.append("Downloader.slots")
    if not hasattr(ExecutionEngine, "crawl"):
        gone.append("ExecutionEngine.crawl")
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
    from scrapy.signalmanager import SignalManager

    if not hasattr(SignalManager(), "sender"):
        gone.append("SignalManager.sender")
    if not hasattr(HostnameEndpoint, "_hostAsBytesAndText"):
        gone.append("twisted HostnameEndpoint._hostAsBytesAndText")
    return gone
