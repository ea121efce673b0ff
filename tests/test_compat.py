"""The Scrapy internals the plugin relies on (scrapy_rfc9309.runtime.compat), checked on the
installed Scrapy: a release that removes one fails here, by name, not in a crawl; and the
event loop's helpers (scrapy_rfc9309.runtime.loop) in the run mode of the suite."""

from __future__ import annotations

import pytest
import pytest_twisted
import scrapy
from crawl import run_crawl
from middleware_support import mw_settings
from scrapy import Request
from scrapy.core.downloader import Slot
from scrapy.settings import Settings

from scrapy_rfc9309.runtime import compat as _compat


def test_every_internal_the_plugin_uses_is_there():
    assert _compat.missing() == [], f"Scrapy {scrapy.__version__} lacks what scrapy_rfc9309.runtime.compat relies on"


def test_the_version_is_read():
    assert _compat.SCRAPY_VERSION >= (2, 13)
    assert _compat.SCRAPY_VERSION == tuple(int(p) for p in scrapy.__version__.split(".")[:2])


def test_robots_parsed_is_scrapys_signal_where_it_exists():
    assert _compat.ROBOTS_PARSED is getattr(scrapy.signals, "robots_parsed", None)


@pytest.mark.parametrize("jitter", [0.0, 0.5])
def test_slot_jitter_round_trips(jitter):
    slot = Slot(1, 1.0, bool(jitter)) if not _compat._SLOT_HAS_JITTER else Slot(1, 1.0, jitter)
    assert _compat.slot_jitter(slot) == jitter
    _compat.set_slot_jitter(slot, 0.0)
    assert _compat.slot_jitter(slot) == 0.0


@pytest.mark.parametrize("key", [_compat.BUILTIN_MIDDLEWARE, "class"])
def test_the_builtin_middleware_is_disabled_under_any_key(key):
    from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware

    settings = Settings()
    settings.set("DOWNLOADER_MIDDLEWARES", {RobotsTxtMiddleware if key == "class" else key: 100}, "project")
    _compat.disable_builtin_middleware(settings)
    middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert middlewares[_compat.BUILTIN_MIDDLEWARE] is None
    assert all(value is None for value in middlewares.values())


def test_network_errors_include_scrapys_retry_exceptions():
    from twisted.internet.error import ConnectionRefusedError, DNSLookupError

    errors = _compat.network_errors(Settings({"RETRY_EXCEPTIONS": ["twisted.internet.error.DNSLookupError"]}))
    assert issubclass(DNSLookupError, errors)
    assert issubclass(ConnectionRefusedError, errors)
    assert not issubclass(RuntimeError, errors)
    assert not issubclass(KeyError, errors)


@pytest_twisted.inlineCallbacks
def test_download_slot_and_widening_in_a_real_crawl(origins):
    """The slot of a request is made on demand, and widening the concurrency is undone exactly."""
    a = origins()
    a.robots("User-agent: *\nAllow: /\n")
    seen = {}

    class Probe:
        def process_request(self, request, spider=None):
            if "probe" not in seen:
                crawler = Probe.crawler
                engine = crawler.engine
                key, slot = _compat.download_slot(crawler, request)
                seen["probe"] = (key, slot is engine.downloader.slots[key], _compat.existing_slot(crawler, key) is slot,
                                 _compat.existing_slot(crawler, "no such slot"))
                _compat.set_slot_delay(slot, 2.5)
                _compat.keep_slot_setting(crawler, key, "delay", 2.5)
                seen["delay"] = (_compat.slot_delay(slot), slot.delay, engine.downloader.per_slot_settings[key])
                _compat.set_slot_delay(slot, 0.0)
                del engine.downloader.per_slot_settings[key]
                before = engine.downloader.total_concurrency
                assert _compat.widen_concurrency(engine, 3)
                assert _compat.widen_concurrency(engine, -3)
                seen["restored"] = engine.downloader.total_concurrency == before
                seen["closing"] = _compat.engine_closing(engine)
            return None

        @classmethod
        def from_crawler(cls, crawler):
            cls.crawler = crawler
            return cls()

    import sys

    module = sys.modules[__name__]
    module.Probe = Probe  # type: ignore[attr-defined]
    settings = mw_settings(DOWNLOADER_MIDDLEWARES={**mw_settings()["DOWNLOADER_MIDDLEWARES"], f"{__name__}.Probe": 50})
    result = yield run_crawl([Request(a.url("/page"))], settings)
    assert result.responses == [a.url("/page")]
    assert seen["probe"] == ("127.0.0.1", True, True, None)
    assert seen["delay"] == (2.5, 2.5, {"delay": 2.5})
    assert seen["restored"] is True
    assert seen["closing"] is False


@pytest.mark.parametrize("how", ["crawler", "any sender", "any signal", "any sender and signal"])
def test_has_receivers_is_true_exactly_when_send_catch_log_calls_one(how):
    from pydispatch import dispatcher
    from scrapy.utils.test import get_crawler

    crawler = get_crawler()
    signal = object()
    received: list[object] = []

    def receiver(**kwargs: object) -> None:
        received.append(kwargs.get("signal"))

    assert not _compat.has_receivers(crawler, signal)
    crawler.signals.send_catch_log(signal)
    assert received == []
    connect = {
        "crawler": lambda: crawler.signals.connect(receiver, signal=signal),
        "any sender": lambda: dispatcher.connect(receiver, signal=signal),
        "any signal": lambda: crawler.signals.connect(receiver, signal=dispatcher.Any),
        "any sender and signal": lambda: dispatcher.connect(receiver),
    }
    connect[how]()
    try:
        assert _compat.has_receivers(crawler, signal)
        crawler.signals.send_catch_log(signal)
        assert received == [signal]
    finally:
        sender = crawler.signals.sender if how in ("crawler", "any signal") else dispatcher.Any
        dispatcher.disconnect(receiver, signal=signal if how in ("crawler", "any sender") else dispatcher.Any,
                              sender=sender)
    assert not _compat.has_receivers(crawler, signal)


def test_header_values_is_getlist_for_a_normalized_name():
    from scrapy.http import Headers

    class Subclass(Headers):
        pass

    for cls in (Headers, Subclass):
        headers = cls({"content-usage": "train-ai=n", "X-ROBOTS-TAG": ["noai", "noindex"], "Tdm-Policy": []})
        headers.appendlist("x-robots-tag", "nofollow")
        headers[b"tdm-reservation"] = 1
        for name in ("Content-Usage", "x-robots-tag", "TDM-RESERVATION", "tdm-policy", "content-type"):
            key = headers.normkey(name)
            assert _compat.header_values(headers, key) == headers.getlist(name)
        assert _compat.header_values(headers, headers.normkey("x-robots-tag")) == [b"noai", b"noindex", b"nofollow"]


# ------------------------------------------------------------------ the event loop (scrapy_rfc9309.runtime.loop)


@pytest_twisted.inlineCallbacks
def test_timers_sleeps_and_timeouts_run_on_the_crawls_loop():
    """In either run mode (the asyncio reactor, or its loop alone), in a coroutine run as Scrapy runs
    the plugin's: a call later runs once, a cancelled one never, a looping call until cancelled, and
    an awaitable that does not finish in time raises the built-in TimeoutError."""
    from scrapy.utils.defer import deferred_from_coro

    yield deferred_from_coro(_timers_sleeps_and_timeouts())


async def _timers_sleeps_and_timeouts() -> None:
    import asyncio

    from scrapy_rfc9309.runtime import loop

    calls: list[str] = []
    loop.call_later(0.01, calls.append, "later")
    loop.call_later(0.01, calls.append, "cancelled").cancel()
    looping = loop.looping_call(0.01, calls.append, "tick")
    while calls.count("tick") < 3:  # until three ticks (the test's deadline bounds the wait)
        await loop.sleep(0.01)
    looping.cancel()
    ticks = calls.count("tick")
    await loop.sleep(0.05)
    assert calls.count("later") == 1 and "cancelled" not in calls
    assert 3 <= ticks == calls.count("tick")  # none after the cancel
    with pytest.raises(TimeoutError):
        await loop.within(asyncio.sleep(30) if loop.asyncio_available() else loop.sleep(30), 0.05)
    assert await loop.within(loop.sleep(0), 5) is None
