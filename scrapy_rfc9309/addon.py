"""``ADDONS = {"scrapy_rfc9309.Addon": 0}``: the whole set-up in one line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _compat
from .middleware import RobotsTxtMiddleware

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["Addon"]


class Addon:
    """Replaces Scrapy's built-in robots.txt middleware with this one (at the same
    place, 100) and turns ``ROBOTSTXT_OBEY`` on at add-on priority, so a project or
    command-line ``ROBOTSTXT_OBEY = False`` still wins."""

    def update_settings(self, settings: BaseSettings) -> None:
        _compat.disable_builtin_middleware(settings)
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", RobotsTxtMiddleware, 100)
        settings.set("ROBOTSTXT_OBEY", True, "addon")
