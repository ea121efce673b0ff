"""RFC 9309 robots.txt for Scrapy: a pure parser and matcher, and a middleware."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import matcher as _matcher
from . import parser as _parser
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
__version__ = "0.1.0"

#: Whether the C accelerator (``scrapy_rfc9309._speedups``) is built and used:
#: without it (no C compiler or Python headers at install) the package runs in
#: pure Python, with the same answers but slower than the figures in benchmarks/README.md.
ACCELERATED: bool = (
    getattr(_matcher, "FastMatcher", None) is not None and getattr(_parser, "scan_lines", None) is not None
)


def matcher_in_use() -> str:
    """Which parser and matcher decide, in words (for the start-up log and
    ``scrapy robotstxt``)."""
    if ACCELERATED:
        return "C accelerator (scrapy_rfc9309._speedups)"
    return ("pure Python: the C accelerator scrapy_rfc9309._speedups is not built (it needs a C compiler and the "
            "Python headers when the package is installed); same answers, slower")

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
