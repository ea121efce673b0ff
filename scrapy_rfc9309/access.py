"""``scrapy_rfc9309.access``: a public path, kept for users' imports (and pickled objects); the code is
in :mod:`scrapy_rfc9309.core.state` (the states of an origin's documents: access, cause, policy) and
:mod:`scrapy_rfc9309.core.http_cache` (the HTTP cache rules). The package itself never imports this module."""

from .core.http_cache import Validators, cache_directives, classify_status, http_date, max_age_of, validator
from .core.state import DAY, Access, Cause, Decision, FetchOutcome, OriginState, Policy

__all__ = [
    "DAY",
    "Access",
    "Cause",
    "Decision",
    "FetchOutcome",
    "OriginState",
    "Policy",
    "Validators",
    "cache_directives",
    "classify_status",
    "http_date",
    "max_age_of",
    "validator",
]
