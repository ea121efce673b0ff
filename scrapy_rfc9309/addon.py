"""``ADDONS = {"scrapy_rfc9309.Addon": 0}``: the whole set-up in one line."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from .components.provenance_middleware import ProvenanceMiddleware
from .components.robotstxt_middleware import RobotsTxtMiddleware
from .components.usage_middleware import UsageMiddleware
from .config import DEFAULTS
from .runtime import compat as _compat

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["Addon"]


class Addon:
    """Replaces Scrapy's built-in robots.txt middleware with this one (at the same
    place, 100), adds :class:`~scrapy_rfc9309.UsageMiddleware` beside it (101: the
    usage preferences of responses) and turns ``ROBOTSTXT_OBEY`` on at add-on priority, so a project or
    command-line ``ROBOTSTXT_OBEY = False`` still wins. Every ``ROBOTSTXT_*``
    setting with a default gets it at Scrapy's ``default`` priority, below any
    other, so that ``crawler.settings`` and ``python -m scrapy_rfc9309.config --get``
    show the value in force."""

    def update_settings(self, settings: BaseSettings) -> None:
        _compat.disable_builtin_middleware(settings)
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", RobotsTxtMiddleware, 100)
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", UsageMiddleware, 101)
        settings.set("ROBOTSTXT_OBEY", True, "addon")
        if settings.get("ROBOTSTXT_PROVENANCE"):  # nearest the spider: its callbacks' items, before other components
            settings.set_in_component_priority_dict("SPIDER_MIDDLEWARES", ProvenanceMiddleware, 990)
        for name, value in DEFAULTS.items():
            if value is not None:
                settings.set(name, copy.copy(value), "default")
