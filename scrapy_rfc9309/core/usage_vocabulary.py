"""The AIPREF vocabulary (draft-ietf-aipref-vocab) and its rule for combining
statements of preference: the one place both robots.txt's ``Content-Usage`` and the
response-side sources (:mod:`scrapy_rfc9309.usage.preferences`) read categories through.

The latest draft defines two categories, ``train-ai`` (AI model training) and
``search``, that tile the space of uses: none nests inside another, so a category's
preference never follows from a broader one (the hierarchy of earlier drafts,
``bots`` > ``train-ai`` > ``train-genai``, was removed). A category without a
stated preference is *unknown*. Labels outside the vocabulary (``ai-input``,
``bots``, an extension) are kept as stated, so that a project can act on them
(``ROBOTSTXT_USAGE_DENY``); Content-Signal's ``ai-train`` is read as ``train-ai``.

Statements from several places are combined per category (vocab draft, section
"Combining Preferences"): any ``n`` makes it ``n``; otherwise any ``y`` makes it
``y``; otherwise it is unknown. Pure Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = [
    "ALLOW",
    "CATEGORIES",
    "DISALLOW",
    "OTHER_LABELS",
    "REVISION",
    "TDM_CATEGORY",
    "canonical",
    "combine",
    "known_labels",
    "labels_for",
]

#: The revision of the vocabulary this module reads (its categories, their aliases and the combining
#: rule): a run's ledger records it, since a usage verdict depends on it. Changed with any of them.
REVISION = "aipref-vocab-2026-08"
#: The categories of the vocabulary, by label.
CATEGORIES: tuple[str, ...] = ("train-ai", "search")
ALLOW = "y"
DISALLOW = "n"
#: The category a TDMRep reservation speaks for (``tdm-reservation: 1`` is ``n``, ``0``
#: is ``y``), whichever technique states it: text and data mining for AI training.
TDM_CATEGORY = "train-ai"
#: Labels of other vocabularies that name a category of this one.
_ALIASES = {"ai-train": "train-ai"}
#: Labels outside the vocabulary that sites state and the documentation names, each with
#: where it comes from: read and kept as stated, so ``ROBOTSTXT_USAGE_DENY`` may list them.
OTHER_LABELS: dict[str, str] = {
    "ai-input": "Content-Signal",
    "bots": "earlier AIPREF drafts",
    "train-genai": "earlier AIPREF drafts",
}


def known_labels() -> dict[str, str]:
    """Every label the plugin knows, with what it is: the vocabulary's categories,
    the other vocabularies' names of them, and :data:`OTHER_LABELS`."""
    known = dict.fromkeys(CATEGORIES, "AIPREF vocabulary")
    known.update({alias: f"Content-Signal's name of {name}" for alias, name in _ALIASES.items()})
    known.update(OTHER_LABELS)
    return known


def canonical(label: str) -> str:
    """The vocabulary's label for ``label`` (``ai-train`` -> ``train-ai``); other
    labels unchanged."""
    return _ALIASES.get(label, label)


def labels_for(category: str) -> tuple[str, ...]:
    """Every label that names ``category`` (``train-ai`` -> ``train-ai``, ``ai-train``)."""
    category = canonical(category)
    return (category, *(alias for alias, name in _ALIASES.items() if name == category))


def combine(statements: Iterable[tuple[str, Mapping[str, str]]]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Combine ``(where, {category: value})`` statements: per category, the value
    and where each statement giving that value comes from (in statement order).
    Only ``y`` and ``n`` count; other values leave a category unknown (absent)."""
    said: dict[str, dict[str, list[str]]] = {}
    for where, values in statements:
        for label, value in values.items():
            if value == ALLOW or value == DISALLOW:
                said.setdefault(canonical(label), {}).setdefault(value, []).append(where)
    combined: dict[str, tuple[str, tuple[str, ...]]] = {}
    for category, by_value in said.items():
        value = DISALLOW if DISALLOW in by_value else ALLOW
        combined[category] = (value, tuple(dict.fromkeys(by_value[value])))
    return combined
