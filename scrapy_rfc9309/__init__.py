"""RFC 9309 robots.txt for Scrapy: a pure parser and matcher, and a middleware."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .matcher import Rule
from .robotstxt import RobotsTxt, Verdict, parse

__all__ = ["Addon", "RobotParser", "RobotsTxt", "RobotsTxtMiddleware", "Rule", "SitemapSpider", "Verdict", "parse"]
__version__ = "0.1.0"

if TYPE_CHECKING:
    from .addon import Addon
    from .middleware import RobotsTxtMiddleware
    from .scrapy_parser import RobotParser
    from .sitemap import SitemapSpider

# The Scrapy layer is imported lazily, so that the core works without Scrapy.
_LAZY = {
    "RobotParser": "scrapy_parser", "RobotsTxtMiddleware": "middleware", "Addon": "addon", "SitemapSpider": "sitemap",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
