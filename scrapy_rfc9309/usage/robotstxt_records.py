"""``scrapy_rfc9309.usage.robotstxt_records``: a public path, kept for users' imports (and pickled
objects); the code is in :mod:`scrapy_rfc9309.core.usage_rules` (robots.txt's Content-Usage and
Content-Signal records). The package itself never imports this module."""

from ..core.usage_rules import (
    UsageIndex,
    UsagePreference,
    UsageRule,
    applicable,
    read_statement,
    split_rule,
)

__all__ = [
    "UsageIndex", "UsagePreference", "UsageRule", "applicable", "read_statement", "split_rule",
]
