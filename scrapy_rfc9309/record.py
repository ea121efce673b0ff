"""``scrapy_rfc9309.record``: a public path, kept for users' imports (and pickled objects); the code is
in :mod:`scrapy_rfc9309.stores.record` (the record format of a shared store). The package itself
never imports this module."""

from .stores.record import (
    CLOCK_TOLERANCE,
    FORMAT,
    MAX_META_BYTES,
    MAX_META_CHARS,
    MAX_META_DEPTH,
    Record,
    RecordError,
    Unreadable,
    dated_ahead,
    decode,
    encode,
)

__all__ = [
    "CLOCK_TOLERANCE", "FORMAT", "MAX_META_BYTES", "MAX_META_CHARS", "MAX_META_DEPTH", "Record", "RecordError",
    "Unreadable", "dated_ahead", "decode", "encode",
]
