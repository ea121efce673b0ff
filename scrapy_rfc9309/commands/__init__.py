"""The plugin's commands: ``scrapy robotstxt`` (:mod:`.robotstxt`, the entry point
``scrapy_rfc9309.commands:RobotstxtCommand``) and ``python -m scrapy_rfc9309.config``
(:mod:`.settings`)."""

from .robotstxt import RobotstxtCommand

__all__ = ["RobotstxtCommand"]
