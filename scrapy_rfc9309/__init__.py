"""RFC 9309 robots.txt for Scrapy: a pure parser and matcher, and a middleware."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__
from .core.accelerator import ACCELERATED, matcher_in_use
from .core.matcher import Rule
from .core.robotstxt import RobotsTxt, Verdict, parse

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
    from .components.nofollow_middleware import NofollowMiddleware
    from .components.robotstxt_middleware import RobotsTxtMiddleware
    from .components.sitemap_spider import SitemapSpider
    from .components.usage_middleware import UsageMiddleware
    from .lifecycle.robot_parser import RobotParser

# The Scrapy layer is imported lazily, so that the core works without Scrapy.
_LAZY = {
    "RobotParser": "lifecycle.robot_parser", "RobotsTxtMiddleware": "components.robotstxt_middleware",
    "Addon": "addon", "SitemapSpider": "components.sitemap_spider",
    "NofollowMiddleware": "components.nofollow_middleware", "UsageMiddleware": "components.usage_middleware",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
