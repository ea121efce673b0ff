"""The AIPREF vocabulary (draft-ietf-aipref-vocab-08) and its rule for combining
statements of preference: the one place both robots.txt's ``Content-Usage`` and the
response-side sources (:mod:`scrapy_rfc9309.usage.preferences`) read categories through.

The draft defines three categories (section 4): ``train-ai`` (AI Training),
``ai-use`` (AI Use) and ``search`` (Search). None nests inside another, so a
category's preference never follows from another's (the hierarchy of earlier drafts,
``bots`` > ``train-ai`` > ``train-genai``, was removed); a category without a stated
preference is *unknown* (section 5). What relates them is which category a use falls
in (:func:`governing`): Search overrides the others (section 4.3), so a use that is
Search is governed by the ``search`` preference alone, even where it also trains or
runs a generative model inside the search application; and AI Use leaves out what AI
Training includes (section 4.2). Labels outside the vocabulary (``ai-input``, ``bots``, an
extension) are kept as stated, so that a project can act on them
(``ROBOTSTXT_USAGE_DENY``); Content-Signal's ``ai-train`` is read as ``train-ai``.

Statements from several places are combined per category (section 5.1, "Combining
Preferences"): any ``n`` makes it ``n``; otherwise any ``y`` makes it ``y``;
otherwise it is unknown. Pure Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = [
    "ALLOW",
    "CATEGORIES",
    "DEFINITIONS",
    "DISALLOW",
    "OTHER_LABELS",
    "OVERRIDES",
    "REVISION",
    "REVISIONS_READ",
    "TDM_CATEGORY",
    "canonical",
    "combine",
    "governing",
    "known_labels",
    "labels_for",
]

#: The revision of the vocabulary this module reads (its categories, their aliases and the combining
#: rule): a run's ledger records it, since a usage verdict depends on it. Changed with any of them.
REVISION = "draft-ietf-aipref-vocab-08"
#: The revisions whose usage verdicts this module gives again, the ledger's audit reads: this one, and
#: ``aipref-vocab-2026-08`` (draft-ietf-aipref-vocab-07: ``train-ai`` and ``search``, which keep their
#: labels and the combining rule; ``ai-use`` was then unknown, so no run of it denied that category).
REVISIONS_READ: tuple[str, ...] = (REVISION, "aipref-vocab-2026-08")
#: The categories of the vocabulary, by label (section 6.1, "Usage Category Labels").
CATEGORIES: tuple[str, ...] = ("train-ai", "ai-use", "search")
#: Each category's name and definition, as the draft's section 4 states them (its first paragraph).
DEFINITIONS: dict[str, tuple[str, str]] = {
    "train-ai": ("AI Training", "Using an asset to modify the learned parameters of a generative AI model "
                 "(section 4.1; the training of models used to perform exclusively non-generative tasks is "
                 "not included)."),
    "ai-use": ("AI Use", "Use of an asset as input to a generative AI model, where the asset is not directly "
               "provided by the user (section 4.2; uses included in AI Training are not)."),
    "search": ("Search", "Use of an asset in an application where the primary purpose of the application is to "
               "select assets and direct users to the location of those assets (section 4.3; it overrides any "
               "usage that falls into other categories, including AI Training and AI Use)."),
}
#: Per category, the categories it overrides: a use in several of them is governed by the overriding
#: one alone. Search overrides AI Training and AI Use (section 4.3); AI Use does not include a use
#: included in AI Training (section 4.2), which so governs it.
OVERRIDES: dict[str, tuple[str, ...]] = {"search": ("train-ai", "ai-use"), "train-ai": ("ai-use",)}
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


def governing(categories: Iterable[str]) -> tuple[str, ...]:
    """The categories whose preference governs one use that falls into every one of
    ``categories`` (labels as :func:`canonical` reads them), in the order given: those
    another of them overrides are left out (:data:`OVERRIDES`: model training inside a
    search application is governed by ``search``). Labels outside the vocabulary are kept."""
    named = tuple(dict.fromkeys(canonical(category) for category in categories))
    overridden = {other for category in named for other in OVERRIDES.get(category, ())}
    return tuple(category for category in named if category not in overridden)


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
