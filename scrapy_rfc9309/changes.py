"""``scrapy_rfc9309.changes``: a public path, kept for users' imports (and pickled objects); the code
is in :mod:`scrapy_rfc9309.core.changes` (what changed between two versions of a robots.txt). The
package itself never imports this module."""

from .core.changes import (
    AgentChange,
    RobotsChange,
    diff,
)

__all__ = [
    "AgentChange", "RobotsChange", "diff",
]
