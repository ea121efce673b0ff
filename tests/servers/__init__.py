"""Test support: loopback HTTP origins and ``redis-server`` instances.

The test suite, the benchmarks and the example project's demo site run against
these, from a checkout: ``tests/`` is on ``sys.path`` (pytest puts it there; the
benchmarks and the demo site put it there themselves), so ``import servers`` finds
this package. It is not part of the installed package (the wheel does not carry it).

- :class:`Origin` and its behaviours (:class:`Static`, :class:`Page`,
  :class:`Redirect`, :class:`Delay`, :class:`Stall`, :class:`Drop`,
  :class:`Gate`, :class:`Sequence`, :class:`Dynamic`, :class:`Huge`,
  :class:`Conditional`: a file with validators that answers ``304``): an HTTP
  server on a loopback address in the running reactor, answering each path as
  configured and logging every request it receives (:class:`Hit`).
- :class:`ThreadedOrigin`: fixed answers served from a thread, for a test that
  blocks the reactor while a subprocess talks to the server.
- :class:`SilentListener`: accepts connections and never answers (a server
  that hangs, such as a Redis behind a broken proxy).
- :class:`RedisServer`: ``redis-server`` on a free loopback port; :class:`RedisCluster`,
  three of them joined in a Redis Cluster.

The servers run in the installed reactor, shared with the crawl; in Scrapy's reactorless
mode, where no reactor may be installed, in a private one on the running asyncio loop
(:func:`server_reactor`).

Every server listens on a loopback address only (Linux routes all of 127.0.0.0/8
to the loopback interface, so ``127.0.0.2`` is a second origin).
"""

from __future__ import annotations

from .origins import (
    Behaviour,
    Conditional,
    Delay,
    Drop,
    Dynamic,
    Gate,
    Headers,
    Hit,
    Huge,
    Origin,
    Page,
    Redirect,
    Sequence,
    Stall,
    Static,
    Transfer,
    respond,
)
from .redis_server import RedisCluster, RedisServer, free_port, redis_server_binary
from .server_reactor import server_reactor
from .silent import SilentListener
from .threaded import ThreadedOrigin

__all__ = [
    "Behaviour",
    "Conditional",
    "Delay",
    "Drop",
    "Dynamic",
    "Gate",
    "Headers",
    "Hit",
    "Huge",
    "Origin",
    "Page",
    "Redirect",
    "RedisCluster",
    "RedisServer",
    "Sequence",
    "SilentListener",
    "Stall",
    "Static",
    "ThreadedOrigin",
    "Transfer",
    "free_port",
    "redis_server_binary",
    "respond",
    "server_reactor",
]
