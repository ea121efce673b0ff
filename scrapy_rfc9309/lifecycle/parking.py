"""Requests that wait for a robots.txt, kept out of the downloader: parked.

A request that waits inside the downloader (its ``process_request`` not yet done)
holds Scrapy's whole download machinery for it: some hundred objects, about 11 KB,
and the garbage collector walks them all as long as it waits. A parked request is the
:class:`~scrapy.Request` alone, as in the scheduler's queue, and takes no
``CONCURRENT_REQUESTS`` place, so other origins' requests go on.

How: the middleware returns the request from ``process_request``, which Scrapy
reschedules; this module's ``request_scheduled`` handler raises ``IgnoreRequest`` for
it (Scrapy's documented way to keep a request from the scheduler) and keeps it. While
an origin has parked requests, the new ones the spider schedules for it are parked the
same way, before the scheduler sees them. When the origin's state is known (or its
requests are to be dropped) they are scheduled again, a batch per loop turn, and judged
when they come back. One that had passed the scheduler's duplicate filter goes back
marked ``dont_filter``; one parked before the scheduler saw it goes back as it was.

While requests are parked, the :mod:`.keeper` keeps a closing spider open until they
are handed back to its scheduler or counted as not crawled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest

from ..exceptions import RobotsTxtLedgerError
from ..meta import GIVEN_UP_META
from ..runtime import compat as _compat
from ..runtime.loop import Timer, call_later
from ..runtime.reporting import Reporting
from .keeper import Keeper

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from ..core.documents import Document
    from ..core.origins import Origin

__all__ = ["GIVEN_UP_META", "Parking"]

logger = logging.getLogger(__name__)

#: Requests scheduled again per loop turn: releasing thousands must not stall the crawl.
RELEASE_BATCH = 500
#: Flags of a parked request: it passed the duplicate filter; it is held (its origin is
#: unreachable); it is scheduled again because its origin's held requests are given up
#: (at ``ROBOTSTXT_MAX_WAIT``; with IDLE, at ``ROBOTSTXT_MAX_WAIT_IDLE``).
SEEN, HELD, GIVEN_UP, IDLE = 1, 2, 4, 8


class Parking(Reporting):
    """The parked requests of one crawl, by origin, each origin's for one document
    (the one whose fetch, or retry, they wait for)."""

    def __init__(self, crawler: Crawler, origin_of: Callable[[str], Origin | None],
                 held: Callable[[Origin, Document], bool], room: Callable[[], bool],
                 on_held: Callable[[Request, Origin, Document], None] | None = None,
                 on_requeued: Callable[[Request, Origin, str, Document], None] | None = None) -> None:
        self.crawler = crawler
        #: Told of each parked request handed back to the scheduler at close, with the close's reason
        #: (``closing``, ``idle``) and the document it waited for: its ``requeued`` verdict, which
        #: counts it and tells the tellers.
        self.on_requeued = on_requeued
        self._origin_of = origin_of
        #: Whether the origin's document holds its requests (unreachable), and whether one more request may wait.
        self._held = held
        self._room = room
        self._parked: dict[Origin, list[tuple[Request, int]]] = {}
        #: The document each origin's parked requests wait for.
        self._documents: dict[Origin, Document] = {}
        #: Requests the middleware returned to be parked, on their way to the handler.
        self._incoming: dict[Request, tuple[Origin, int]] = {}
        #: Requests being scheduled again (their origin no longer parks), with the document they waited for.
        self._releasing: list[tuple[Request, int, Document]] = []
        self._releaser: Timer | None = None
        self.count = 0
        self.closing = False
        self._listening = False
        #: Keeps a closing spider open while requests are parked.
        self.keeper = Keeper(crawler, lambda: self.count)
        #: Told of each request held while parked (its origin's document is unreachable), as it is parked
        #: or as the document turns out unreachable, with that document: the ledger's ``held`` record. A
        #: request the middleware returns to be parked is refused when it raises (the ledger cannot be written).
        self.on_held = on_held

    def __contains__(self, origin: Origin) -> bool:
        return origin in self._parked

    def parked(self) -> dict[Origin, int]:
        """The requests parked per origin."""
        return {origin: len(entries) for origin, entries in self._parked.items() if entries}

    # -- parking ----------------------------------------------------------------------
    def park(self, origin: Origin, request: Request, held: bool, document: Document) -> Request | None:
        """Park ``request`` (which has passed the scheduler, and waits for the origin's
        ``document``, held by it when ``held``): the middleware returns
        what this returns from ``process_request``. None for a request that came
        back without being scheduled (downloaded by ``engine.download``, which
        downloads a returned request at once): it waits in the downloader."""
        if request in self._incoming:
            del self._incoming[request]
            self.count -= 1
            return None
        if held and self.on_held is not None:
            self.on_held(request, origin, document)
        self._incoming[request] = (origin, SEEN | (HELD if held else 0))
        self.count += 1
        if origin not in self._parked:
            self._parked[origin] = []
            self._documents[origin] = document
        self._listen(True)
        return request

    def _scheduled(self, request: Request, spider: Any = None) -> None:
        """``request_scheduled``: keep a request returned to be parked, or a new one
        of an origin that has parked requests."""
        if self.closing:
            return
        incoming = self._incoming.pop(request, None)
        if incoming is None:
            origin = self._origin_of(request.url)
            parked = self._parked.get(origin) if origin is not None else None
            if parked is None or origin is None or not self._room():
                return
            document = self._documents[origin]
            held = self._held(origin, document)
            if held:
                self._held_now(request, origin, document)
            parked.append((request, HELD if held else 0))
            self.count += 1
            if held:
                self._inc(document.stat + "held")
        else:
            origin, flags = incoming
            parked = self._parked.get(origin)
            if parked is None:  # its origin was released while it came back: scheduled again now
                self.count -= 1
                self._reschedule(request, flags)
                self._settle()
                raise IgnoreRequest("scheduled again as a copy the duplicate filter lets through")
            parked.append((request, flags))
        self.keeper.keep()
        raise IgnoreRequest("parked until its robots.txt is known")

    def hold(self, origin: Origin) -> int:
        """The origin turned out unreachable: its parked requests are held now (they
        waited for its fetch). Returns how many were not held before."""
        parked = self._parked.get(origin)
        if not parked:
            return 0
        newly = 0
        document = self._documents[origin]
        for index, (request, flags) in enumerate(parked):
            if not flags & HELD:
                self._held_now(request, origin, document)
                parked[index] = (request, flags | HELD)
                newly += 1
        return newly

    def _held_now(self, request: Request, origin: Origin, document: Document) -> None:
        """Tell :attr:`on_held` of a request held while it stays parked. A ledger that cannot be
        written has logged it and closes the spider; the request, judged when it comes back, is
        refused then (its verdict's record fails too)."""
        if self.on_held is not None:
            try:
                self.on_held(request, origin, document)
            except RobotsTxtLedgerError:
                pass

    def release(self, origin: Origin, given_up: bool = False, idle: bool = False) -> int:
        """Schedule the origin's parked requests again; how many of them were held
        (their origin was unreachable). ``given_up``: the origin's held requests are
        given up, and each held one is marked to be dropped when it comes back (it
        must not wait for the origin's next fetch as a new request would); ``idle``:
        given up because nothing else was left (``ROBOTSTXT_MAX_WAIT_IDLE``)."""
        parked = self._parked.pop(origin, None)
        document = self._documents.pop(origin, None)
        if not parked or document is None:
            return 0
        mark = GIVEN_UP | (IDLE if idle else 0) if given_up or idle else 0
        self._releasing.extend((request, flags | mark if flags & HELD else flags, document)
                               for request, flags in parked)
        if self._releaser is None:
            self._releaser = call_later(0, self._release_batch)
        return sum(1 for _, flags in parked if flags & HELD)

    def _release_batch(self) -> None:
        self._releaser = None
        if self.closing:
            return
        batch, self._releasing = self._releasing[:RELEASE_BATCH], self._releasing[RELEASE_BATCH:]
        for request, flags, _ in batch:
            self.count -= 1
            self._reschedule(request, flags)
        if self._releasing:
            self._releaser = call_later(0, self._release_batch)
        self._settle()

    def _reschedule(self, request: Request, flags: int) -> None:
        """Schedule a parked request again: one that had passed the duplicate filter
        as a copy it lets through (the filter saw it once; it is crawled once)."""
        if self.crawler.engine is not None:
            again = request.replace(dont_filter=True) if flags & SEEN else request
            if flags & GIVEN_UP:
                again.meta[GIVEN_UP_META] = "idle" if flags & IDLE else True
            _compat.schedule(self.crawler, again)

    def _settle(self) -> None:
        if self.count or self._incoming or self._parked or self._releasing:
            return
        self._listen(False)
        self.keeper.release()

    def _listen(self, on: bool) -> None:
        """Listen to ``request_scheduled`` only while requests are parked: every
        scheduled request would pay for the dispatch otherwise."""
        if on == self._listening:
            return
        self._listening = on
        if on:
            self.crawler.signals.connect(self._scheduled, signal=signals.request_scheduled)
        else:
            self.crawler.signals.disconnect(self._scheduled, signal=signals.request_scheduled)

    # -- closing ----------------------------------------------------------------------
    def close(self, persist: bool, reason: str = "closing") -> tuple[int, int]:
        """The spider closes: hand every parked request back to a scheduler that
        keeps its queue (``persist``; each told to :attr:`on_requeued` first, with the
        document it waited for), or count it as not crawled. Returns (handed back, not crawled)."""
        self.closing = True
        pending = [(request, flags, self._documents[origin]) for origin, entries in self._parked.items()
                   for request, flags in entries] + self._releasing
        self._parked.clear()
        self._documents.clear()
        self._releasing = []
        self._incoming.clear()
        if self._releaser is not None:
            self._releaser.cancel()
            self._releaser = None
        self.count = 0
        self._listen(False)
        if persist:
            for request, flags, document in pending:
                origin = self._origin_of(request.url)
                if self.on_requeued is not None and origin is not None:
                    try:
                        self.on_requeued(request, origin, reason, document)
                    except RobotsTxtLedgerError:
                        pass  # logged by the ledger, which closes the spider; the request is handed back
                self._reschedule(request, flags)
        self.keeper.stop()
        return (len(pending), 0) if persist else (0, len(pending))
