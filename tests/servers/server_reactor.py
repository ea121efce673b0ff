"""The Twisted reactor the test servers run in, with a reactor installed or without one.

With a reactor installed (the asyncio reactor, Scrapy's default) it is that reactor: the servers
and the crawl share it. In Scrapy's reactorless mode (``TWISTED_REACTOR_ENABLED = False``, Scrapy
2.15 and later) no reactor may be installed: importing ``twisted.internet.reactor`` installs one,
and Scrapy then refuses to crawl. The servers then run in a private
:class:`~twisted.internet.asyncioreactor.AsyncioSelectorReactor` built on the running asyncio loop
and never installed: its sockets and timers are that loop's, so servers and crawl still share one
thread and one loop, and nothing outside this package can reach it.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

__all__ = ["server_reactor"]

#: The private reactor and the loop it runs on (one at a time: a new loop gets a new reactor).
_private: tuple[asyncio.AbstractEventLoop, Any] | None = None


def server_reactor() -> Any:
    """The installed reactor if there is one; otherwise a private reactor on the running asyncio
    loop (the same one for every call on that loop). With neither, the reactor is imported, which
    installs Twisted's default one, as ``from twisted.internet import reactor`` does: start the
    servers after the crawl's reactor is installed, or from inside the running loop."""
    global _private
    if "twisted.internet.reactor" not in sys.modules:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            if _private is None or _private[0] is not loop:
                from twisted.internet.asyncioreactor import AsyncioSelectorReactor

                _private = (loop, AsyncioSelectorReactor(eventloop=loop))
            return _private[1]
    from twisted.internet import reactor

    return reactor
