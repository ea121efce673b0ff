"""Whether the C accelerator decides: :data:`ACCELERATED` and :func:`matcher_in_use`
(re-exported by the root package; the middleware's start-up log and ``scrapy robotstxt``
print the latter)."""

from __future__ import annotations

from . import matcher as _matcher
from . import syntax as _parser

__all__ = ["ACCELERATED", "matcher_in_use"]

#: Whether the C accelerator (``scrapy_rfc9309.core._speedups``) is built and used:
#: without it (no C compiler or Python headers at install) the package runs in
#: pure Python, with the same answers but slower than the figures in benchmarks/README.md.
ACCELERATED: bool = (
    getattr(_matcher, "FastMatcher", None) is not None and getattr(_parser, "scan_lines", None) is not None
)


def matcher_in_use() -> str:
    """Which parser and matcher decide, in words (for the start-up log and
    ``scrapy robotstxt``)."""
    if ACCELERATED:
        return "C accelerator (scrapy_rfc9309.core._speedups)"
    return ("pure Python: the C accelerator scrapy_rfc9309.core._speedups is not built (it needs a C compiler and the "
            "Python headers when the package is installed); same answers, slower")
