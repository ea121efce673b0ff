"""The retries of the origins whose document holds their requests (unreachable, no
good copy): the next fetch when it is due, while requests still wait for it, and the
deadline at which those requests are given up (``ROBOTSTXT_MAX_WAIT``).

A retry that serves nobody any more is cancelled: its download would keep the spider
open until ``DOWNLOAD_TIMEOUT``. The requests that wait are :mod:`.waiting`'s; it
hands this module the ways to ask whether any wait, to start a fetch, and to wake
them.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ..core.state import Access
from ..runtime.loop import Timer, call_later
from ..runtime.reporting import Reporting
from .states import Closing

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request

    from ..core.origins import Origin
    from .fetches import Fetches
    from .given_up import GivenUp
    from .parking import Parking
    from .states import DocumentStates

__all__ = ["Retries"]

logger = logging.getLogger(__name__)


class Retries(Reporting):
    """The retries and deadlines of ``states``' held origins. ``waited``: whether
    requests of an origin wait (in the downloader or parked); ``start``: start the
    origin's fetch for a request; ``notify``: wake the origin's waiting requests with a
    value (None: look again)."""

    def __init__(self, states: DocumentStates, fetches: Fetches, given_up: GivenUp, parking: Parking, *,
                 waited: Callable[[Origin], bool], start: Callable[[Origin, Request], None],
                 notify: Callable[[Origin, Any], None]) -> None:
        self.crawler = states.crawler
        self.states = states
        self.document = states.document
        self.policy = states.policy
        self.fetches = fetches
        self.given_up = given_up
        self.parking = parking
        self._waited = waited
        self._start = start
        self._notify = notify
        self._retries: dict[Origin, Timer] = {}
        self._deadlines: dict[Origin, tuple[float, Timer]] = {}
        self.closing = False

    def schedule(self, origin: Origin, request: Request) -> None:
        """For a held origin: fetch again when its retry is due (if requests still wait),
        for ``request`` unless the origin's fetches already name one."""
        if self.fetches.fetching(origin) or origin in self._retries:
            return
        state = self.states.cache.get(origin)
        if state is None or state.access is not Access.UNREACHABLE:
            return
        self.fetches.keep_trigger(origin, request)

        def retry() -> None:
            self._retries.pop(origin, None)
            if self._waited(origin) and not self.closing:
                self._start(origin, self.fetches.trigger(origin))

        delay = max(0.0, state.expires_at - time.time())
        self._retries[origin] = call_later(delay, retry)

    def cancel(self, origin: Origin) -> None:
        """Cancel the origin's retry not yet due, if any."""
        retry = self._retries.pop(origin, None)
        if retry is not None:
            retry.cancel()

    def give_up(self, origin: Origin) -> None:
        """The origin's held requests were dropped (``ROBOTSTXT_MAX_WAIT``): a retry
        still in flight serves nobody, and its download would keep the spider open
        until ``DOWNLOAD_TIMEOUT``. It is cancelled; the origin keeps its unreachable
        state, and the next request of it fetches again."""
        if self._waited(origin):
            return
        self.cancel(origin)
        state = self.states.cache.get(origin)
        if state is not None and state.access is Access.UNREACHABLE:
            self.fetches.cancel(origin)

    def give_up_idle(self, origin: Origin) -> None:
        """The origin's held requests are given up because nothing else is left
        (``ROBOTSTXT_MAX_WAIT_IDLE``) and no scheduler keeps them: those waiting in the
        downloader are let go (dropped, reason ``idle``), the parked ones scheduled
        again to be dropped as they come back; its retry is not made for them."""
        self.cancel(origin)
        self._notify(origin, Closing("idle"))
        self.parking.release(origin, idle=True)

    def wake_at(self, origin: Origin, when: float) -> None:
        """Wake the origin's waiters (with None) at ``when``: one timer per origin,
        and the waking in batches (see :mod:`.waiting`), so that thousands of held
        requests reaching ``ROBOTSTXT_MAX_WAIT`` together are not all dropped in one
        loop turn. A waiter woken before its own time waits again."""
        current = self._deadlines.get(origin)
        if current is not None:  # a timer still to run (``_deadline`` removes it)
            if current[0] <= when:
                return
            current[1].cancel()
        delay = max(0.0, when - time.time())
        self._deadlines[origin] = (when, call_later(delay, self._deadline, origin))

    def _deadline(self, origin: Origin) -> None:
        self._deadlines.pop(origin, None)
        state = self.states.given_up(origin)
        if state is not None and self._waited(origin):
            self.given_up.gave_up(origin, state.cause)
            logger.warning("%s of %s unreachable for %.0f s (%s): its held requests, and new ones until a "
                           "fetch succeeds, are dropped (robotstxt/%sdropped_unreachable)", self.document.name, origin,
                           self.policy.max_wait_for(state.cause), state.detail, self.document.stat,
                           extra=self._log_extra)
        self._notify(origin, None)
        if state is not None:
            self.parking.release(origin, given_up=True)  # dropped as they come back

    def close(self) -> None:
        """The spider closes: no retry is made, no deadline kept."""
        self.closing = True
        for call in self._retries.values():
            call.cancel()
        self._retries.clear()
        for _, call in self._deadlines.values():
            call.cancel()
        self._deadlines.clear()
