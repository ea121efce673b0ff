"""``scrapy_rfc9309.origin``: a public path, kept for users' imports (and pickled objects); the code is
in :mod:`scrapy_rfc9309.core.origins` (an origin (scheme, host, port) and the memo of the origins of
URLs). The package itself never imports this module."""

from .core.origins import (
    DEFAULT_PORTS,
    HttpOrigins,
    Origin,
)

__all__ = [
    "DEFAULT_PORTS", "HttpOrigins", "Origin",
]
