"""RFC 9309 robots.txt for Scrapy: a pure parser and matcher, and a middleware."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .matcher import Rule
from .robotstxt import RobotsTxt, Verdict, parse

__all__ = ["RobotParser", "RobotsTxt", "Rule", "Verdict", "parse"]
__version__ = "0.1.0"

if TYPE_CHECKING:
    from .scrapy_parser import RobotParser


def __getattr__(name: str) -> Any:
    # The Scrapy adapters are imported lazily so that the core works without Scrapy.
    if name == "RobotParser":
        from .scrapy_parser import RobotParser

        return RobotParser
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
