"""Where per-origin robots.txt state is kept, chosen with ``ROBOTSTXT_STORE``.

``memory`` (the default) keeps it in the process only; ``disk`` adds a SQLite
file that survives restarts; ``redis`` shares it across a fleet; or the dotted
path of a :class:`Store` or :class:`AsyncStore` subclass. Every store has the bounded in-memory cache
(:class:`MemoryStore`) in front of it.
"""

from __future__ import annotations

from importlib import import_module

from .base import REDIS_INSTALL, AsyncStore, Claim, Store
from .memory import MemoryStore

__all__ = ["ALIASES", "AsyncStore", "Claim", "MemoryStore", "Store", "store_class"]

#: ``ROBOTSTXT_STORE`` names and the classes they stand for (None: memory only).
ALIASES: dict[str, str | None] = {
    "memory": None,
    "disk": "scrapy_rfc9309.stores.disk.DiskStore",
    "redis": "scrapy_rfc9309.stores.redis.RedisStore",
}


def store_class(value: object) -> type[Store | AsyncStore] | None:
    """The store class ``ROBOTSTXT_STORE`` names, or None for memory only."""
    # Imported here: importing the package (the record format, Store, MemoryStore) imports no Scrapy.
    from ..exceptions import RobotsTxtConfigError

    if isinstance(value, type):
        cls = value
    else:
        if not isinstance(value, str) or not value.strip():
            raise RobotsTxtConfigError(
                f"ROBOTSTXT_STORE must be 'memory', 'disk', 'redis' or the dotted path of a store class, got {value!r}"
            )
        name = value.strip()
        path = ALIASES[name.lower()] if name.lower() in ALIASES else name
        if path is None:
            return None
        module_name, _, attribute = path.rpartition(".")
        if not module_name:
            raise RobotsTxtConfigError(
                f"ROBOTSTXT_STORE must be 'memory', 'disk', 'redis' or the dotted path of a store class, got {value!r}"
            )
        try:
            cls = getattr(import_module(module_name), attribute)
        except ImportError as exc:
            hint = f" ({REDIS_INSTALL})" if name.lower() == "redis" else ""
            raise RobotsTxtConfigError(f"ROBOTSTXT_STORE = {value!r} cannot be imported: {exc}{hint}") from None
        except AttributeError:
            raise RobotsTxtConfigError(f"ROBOTSTXT_STORE = {value!r}: {module_name} has no {attribute}") from None
        except Exception as exc:  # the module failed as it ran: a broken store of the user's
            raise RobotsTxtConfigError(
                f"ROBOTSTXT_STORE = {value!r} cannot be imported: {module_name} raised {type(exc).__name__}: {exc}"
            ) from exc
    if cls is MemoryStore:
        return None
    if not (isinstance(cls, type) and issubclass(cls, (Store, AsyncStore))):
        raise RobotsTxtConfigError(
            f"ROBOTSTXT_STORE = {value!r} is not a subclass of scrapy_rfc9309.stores.Store or AsyncStore"
        )
    return cls
