"""``scrapy_rfc9309.judgement``: a public path, kept for users' imports (and pickled objects); the code
is in :mod:`scrapy_rfc9309.core.verdict` (the verdict: judge() and the Judgement it returns). The
package itself never imports this module."""

from .core.verdict import (
    DROP_REASONS,
    Enforced,
    Judgement,
    Kind,
    allowed,
    at_close,
    holding,
    invalid_meta,
    judge,
    not_judged,
    unreachable_reason,
)

__all__ = [
    "DROP_REASONS", "Enforced", "Judgement", "Kind", "allowed", "at_close", "holding",
    "invalid_meta", "judge", "not_judged", "unreachable_reason",
]
