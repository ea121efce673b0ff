"""``scrapy_rfc9309.audit``: a public path, kept for users' imports (and pickled objects); the code is
in :mod:`scrapy_rfc9309.evidence.audit` (the audit of verdict ledgers (scrapy robotstxt audit)). The
package itself never imports this module."""

from .evidence.audit import (
    CORRUPT,
    MAX_PROBLEMS,
    MISMATCH,
    MISSING,
    ORPHAN,
    UNSEALED,
    Audit,
    LedgerError,
    OriginReport,
    Problem,
    RunReport,
    audit,
    format_text,
)

__all__ = [
    "CORRUPT",
    "MAX_PROBLEMS",
    "MISMATCH",
    "MISSING",
    "ORPHAN",
    "UNSEALED",
    "Audit",
    "LedgerError",
    "OriginReport",
    "Problem",
    "RunReport",
    "audit",
    "format_text",
]
