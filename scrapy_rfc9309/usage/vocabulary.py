"""``scrapy_rfc9309.usage.vocabulary``: a public path, kept for users' imports (and pickled objects);
the code is in :mod:`scrapy_rfc9309.core.usage_vocabulary` (the AIPREF vocabulary: its categories
and how statements combine). The package itself never imports this module."""

from ..core.usage_vocabulary import (
    ALLOW,
    CATEGORIES,
    DEFINITIONS,
    DISALLOW,
    OTHER_LABELS,
    OVERRIDES,
    REVISION,
    REVISIONS_READ,
    TDM_CATEGORY,
    canonical,
    combine,
    governing,
    known_labels,
    labels_for,
)

__all__ = [
    "ALLOW", "CATEGORIES", "DEFINITIONS", "DISALLOW", "OTHER_LABELS", "OVERRIDES", "REVISION", "REVISIONS_READ",
    "TDM_CATEGORY", "canonical", "combine", "governing", "known_labels", "labels_for",
]
