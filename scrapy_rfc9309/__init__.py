"""RFC 9309 robots.txt for Scrapy: a pure parser and matcher, and a middleware."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__
from .accelerator import ACCELERATED, matcher_in_use
from .matcher import Rule
from .robotstxt import RobotsTxt, Verdict, parse

__all__ = [
    "ACCELERATED",
    "Addon",
    "NofollowMiddleware",
    "RobotParser",
    "RobotsTxt",
    "RobotsTxtMiddleware",
    "Rule",
    "SitemapSpider",
    "UsageMiddleware",
    "Verdict",
    "matcher_in_use",
    "parse",
]

if TYPE_CHECKING:
    from .addon import Addon
    from .middleware import RobotsTxtMiddleware
    from .scrapy_parser import RobotParser
    from .sitemap import SitemapSpider
    from .usage.middleware import UsageMiddleware
    from .usage.nofollow import NofollowMiddleware

# The Scrapy layer is imported lazily, so that the core works without Scrapy.
_LAZY = {
    "RobotParser": "scrapy_parser", "RobotsTxtMiddleware": "middleware", "Addon": "addon", "SitemapSpider": "sitemap",
    "NofollowMiddleware": "usage.nofollow", "UsageMiddleware": "usage.middleware",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
