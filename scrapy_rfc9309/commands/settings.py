"""``python -m scrapy_rfc9309.config``: the ``ROBOTSTXT_*`` settings of the project in the
current directory as a crawl with the add-on gets them (:func:`main`; ``config.py`` runs it as
its ``__main__``), and whether a project's ``ADDONS`` list the add-on (:func:`addon_listed`,
which ``scrapy robotstxt`` asks too)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..config import DEFAULTS, Config, settings_table
from ..exceptions import RobotsTxtConfigError

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings, Settings

__all__ = ["addon_listed", "crawl_settings", "main"]


def addon_listed(settings: BaseSettings) -> bool:
    """Whether ``ADDONS`` lists this plugin's add-on (by class or path, not disabled)."""
    from scrapy.utils.misc import load_object

    from ..addon import Addon

    for key, priority in settings.getdict("ADDONS").items():
        try:
            addon = load_object(key) if isinstance(key, str) else key
        except (ImportError, NameError, ValueError, AttributeError):
            continue  # the crawl reports an add-on it cannot load
        if priority is not None and isinstance(addon, type) and issubclass(addon, Addon):
            return True
    return False


def crawl_settings(overrides: Iterable[str] = ()) -> tuple[Settings, bool]:
    """The settings of the project in the current directory (``scrapy.cfg`` or
    ``SCRAPY_SETTINGS_MODULE``; Scrapy's defaults outside a project) with ``overrides``
    (``NAME=VALUE``) at the command line's priority, as a crawl gets them once the add-ons
    have changed them, the add-on added to ``ADDONS`` when the project lacks it. Returns them
    and whether the add-on was added. A ``NAME=VALUE`` without ``=`` is a ValueError."""
    from scrapy.utils.project import get_project_settings

    from ..addon import Addon
    from ..runtime import compat as _compat

    settings = get_project_settings()
    for item in overrides:
        name, equals, value = item.partition("=")
        if not equals or not name:
            raise ValueError(f"-s takes NAME=VALUE, got {item!r}")
        settings.set(name, value, priority="cmdline")
    present = addon_listed(settings)
    if not present:
        settings.set_in_component_priority_dict("ADDONS", Addon, 0)
    return _compat.settings_with_addons(settings), not present


def _value_text(value: Any) -> str:
    """A setting's value as ``scrapy settings --get`` prints it (a dict setting as JSON)."""
    from scrapy.settings import BaseSettings

    if isinstance(value, BaseSettings):
        import json

        return json.dumps(value.copy_to_dict())
    return str(value)


def _listing(settings: Settings) -> str:
    """``ROBOTSTXT_OBEY`` and every setting of :data:`SETTINGS`: its name, value and source (the
    priority it was set at: ``default`` is the package's default, set by the add-on)."""
    from scrapy.settings import SETTINGS_PRIORITIES

    sources = {number: name for name, number in SETTINGS_PRIORITIES.items()}
    rows = [("name", "value", "source")]
    for name in ("ROBOTSTXT_OBEY", *DEFAULTS):
        priority = settings.getpriority(name)
        rows.append((name, _value_text(settings.get(name)),
                     "default" if priority is None else sources.get(priority, str(priority))))
    widths = [max(len(row[column]) for row in rows) for column in (0, 1)]
    return "\n".join(f"{name:<{widths[0]}}  {value:<{widths[1]}}  {source}".rstrip() for name, value, source in rows)


def main(argv: list[str] | None = None) -> int:
    """``python -m scrapy_rfc9309.config``: the ``ROBOTSTXT_*`` settings as a crawl with the
    add-on gets them (name, value, source), from the project in the current directory;
    ``--get NAME``: one setting's value (any setting), as ``scrapy settings --get`` prints it;
    ``--table``: the table of every setting (Markdown). Exit status 0; 1 when the settings
    would stop a crawl at start-up (a name or a value the plugin refuses, printed); 2 for a
    usage error."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m scrapy_rfc9309.config",
        description="The settings of the Scrapy project in the current directory as a crawl with the "
                    "scrapy_rfc9309 add-on gets them: the project's, the command line's (-s), the add-on's "
                    "defaults. The add-on is added when the project's ADDONS lack it.")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--get", metavar="NAME", help="print the value of the setting NAME (any setting)")
    shown.add_argument("--table", action="store_true",
                       help="print the table of every ROBOTSTXT_* setting (type, default, range, meaning, example)")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        help="set a setting, as `scrapy crawl -s NAME=VALUE` does (may be repeated)")
    args = parser.parse_args(argv)
    if args.table:
        print(settings_table())
        return 0
    try:
        settings, added = crawl_settings(args.set)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        Config.from_settings(settings)
    except RobotsTxtConfigError as exc:
        print(f"{parser.prog}: a crawl with these settings stops at start-up: {exc}", file=sys.stderr)
        return 1
    if args.get:
        print(_value_text(settings.get(args.get)))
        return 0
    if added:
        print("# The project's ADDONS lack scrapy_rfc9309.Addon: shown as a crawl with it added.")
    print(_listing(settings))
    return 0
