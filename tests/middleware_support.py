"""Shared pieces of the ``scrapy_rfc9309.RobotsTxtMiddleware`` integration tests (test_middleware_*.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from typing import Any

import deadline
from crawl import CrawlResult, ListSpider
from scrapy import Request
from scrapy.utils.defer import maybe_deferred_to_future
from servers import Hit, Origin, Static, server_reactor
from twisted.internet import defer
from twisted.internet.task import deferLater

from scrapy_rfc9309.stores.record import Record

__all__ = [
    "BUILTIN",
    "ENABLE",
    "MIDDLEWARE",
    "BatchSpider",
    "TrackingSpider",
    "channel_waited",
    "mw_settings",
    "page_hits",
    "record_of_another_process",
    "robots_hits",
    "sleep",
    "stat",
    "text",
    "until",
]

MIDDLEWARE = "scrapy_rfc9309.RobotsTxtMiddleware"
USAGE_MIDDLEWARE = "scrapy_rfc9309.UsageMiddleware"
BUILTIN = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"

#: The explicit way of enabling the middleware (docs/quickstart.md, "Enable").
ENABLE: dict[str, Any] = {
    "ROBOTSTXT_OBEY": True,
    "DOWNLOADER_MIDDLEWARES": {BUILTIN: None, MIDDLEWARE: 100, USAGE_MIDDLEWARE: 101},
}

#: Short timings, so that held requests and retries play out in well under a second.
FAST: dict[str, Any] = {
    "ROBOTSTXT_RETRY_DELAY": 0.2,
    "ROBOTSTXT_RETRY_MAX_DELAY": 0.5,
    "ROBOTSTXT_MAX_WAIT": 3,
}


def mw_settings(**overrides: Any) -> dict[str, Any]:
    """Settings enabling the middleware with short timings, updated by ``overrides``."""
    return {**ENABLE, **FAST, **overrides}


def text(body: str | bytes, status: int = 200, **headers: str) -> Static:
    """A ``text/plain`` response (a robots.txt file), e.g. ``text("...", Cache_Control="max-age=1")``."""
    data = body.encode() if isinstance(body, str) else body
    hdrs = {"Content-Type": "text/plain; charset=utf-8"}
    hdrs.update({k.replace("_", "-"): v for k, v in headers.items()})
    return Static(data, status, hdrs)


def sleep(seconds: float) -> defer.Deferred[None]:
    """A Deferred that fires after ``seconds``, in the servers' reactor (the installed one, or the
    private one on the loop of a reactorless run)."""
    return deferLater(server_reactor(), seconds, lambda: None)


def _pause(seconds: float) -> Any:
    """``sleep(seconds)``, to await from an asyncio task (a coroutine run by
    ``deferred_from_coro``) or from a coroutine driven by Deferreds
    (``pytest_twisted.ensureDeferred``)."""
    try:
        in_task = asyncio.current_task() is not None
    except RuntimeError:
        in_task = False
    return maybe_deferred_to_future(sleep(seconds)) if in_task else sleep(seconds)


async def until(condition: Any, what: str = "the condition") -> None:
    """Return once ``condition()`` holds, checking every 10 ms. The test's deadline (tests/deadline.py)
    is the only bound: a condition that never comes fails the test there, saying that it waited for
    ``what``."""
    unregister = deadline.on_timeout(lambda: f"it waited for: {what}")
    try:
        while not condition():
            await _pause(0.01)
    finally:
        unregister()


async def channel_waited(store: Any, channel: str) -> None:
    """Return once some client subscribes to ``channel`` of ``store`` (a ``RedisStore`` on a
    single Redis or a cluster): a crawl waiting for another process's fetch of an origin. The test's
    deadline bounds the wait, and says what it waited for."""
    unregister = deadline.on_timeout(lambda: f"it waited for a subscriber to {channel}")
    try:
        await _subscribed(store, channel)
    finally:
        unregister()


async def _subscribed(store: Any, channel: str) -> None:
    while True:
        if store.cluster:  # a raw command: redis-py 5.0 has no pubsub_shardnumsub
            node = store.client.get_node_from_key(channel)
            counts = await store.client.execute_command("PUBSUB SHARDNUMSUB", channel, target_nodes=node)
        else:
            counts = await store._command("PUBSUB", "NUMSUB", channel)
        if counts and not isinstance(counts[0], (list, tuple)):  # unparsed: channel, count, ...
            counts = list(zip(counts[::2], counts[1::2], strict=True))
        found = dict(counts)
        if found.get(channel.encode()) or found.get(channel):
            return
        await _pause(0.01)


def stat(result: CrawlResult, key: str, default: Any = 0) -> Any:
    """``robotstxt/<key>`` from the crawl's stats."""
    return result.stats.get(f"robotstxt/{key}", default)


def robots_hits(origin: Origin) -> list[Hit]:
    return origin.requests_for("/robots.txt")


def page_hits(origin: Origin) -> list[Hit]:
    """Every request the origin received except for /robots.txt."""
    return [h for h in origin.requests if h.path_only != "/robots.txt"]


class BatchSpider(ListSpider):
    """Sends its requests in batches: ``batches=[(delay, [url_or_request, ...]), ...]``, each batch
    ``delay`` seconds after the previous one. The spider stays open while ``start()`` sleeps."""

    name = "batches"

    def __init__(self, batches: Sequence[tuple[float, Iterable[str | Request]]] = (), **kwargs: Any) -> None:
        super().__init__(urls=[], **kwargs)
        self.batches = [(delay, list(entries)) for delay, entries in batches]

    async def start(self):  # type: ignore[override]
        for delay, entries in self.batches:
            if delay:
                await maybe_deferred_to_future(sleep(delay))
            for entry in entries:
                if isinstance(entry, Request):
                    yield entry.replace(callback=self.parse, errback=self.on_error)
                else:
                    yield Request(entry, callback=self.parse, errback=self.on_error, dont_filter=True)


class TrackingSpider(ListSpider):
    """A ListSpider that remembers its latest instance, so a test can look at the crawler mid-crawl."""

    name = "tracking"
    latest: TrackingSpider | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        TrackingSpider.latest = self


def record_of_another_process(site: Origin, body: bytes, fetched_at: float, expires_at: float) -> Record:
    """The store record another process saves after fetching ``site``'s robots.txt (``body``)."""
    meta = {"v": 1, "access": "parsed", "fetched_at": fetched_at, "expires_at": expires_at, "good_at": fetched_at,
            "failures": 0, "url": site.url("/robots.txt"), "status": 200}
    return Record(fetched_at, expires_at, expires_at + 3600, json.dumps(meta), body)
