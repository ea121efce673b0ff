"""``scrapy_rfc9309.tdmrep``: a public path, kept for users' imports (and pickled objects); the code is
in :mod:`scrapy_rfc9309.core.tdmrep` (the TDM Reservation Protocol's tdmrep.json, parsed and
matched). The package itself never imports this module."""

from .core.tdmrep import (
    MAX_DEPTH,
    MAX_PROBLEMS,
    MAX_WILDCARD_RULES,
    RESERVED_CATEGORIES,
    TDMREP_PATH,
    TdmEntry,
    TdmRep,
    reserves,
)

__all__ = [
    "MAX_DEPTH", "MAX_PROBLEMS", "MAX_WILDCARD_RULES", "RESERVED_CATEGORIES", "TDMREP_PATH", "TdmEntry", "TdmRep",
    "reserves",
]
