"""The AIPREF vocabulary (draft-ietf-aipref-vocab-08) and its rule for combining
statements of preference: the one place both robots.txt's ``Content-Usage`` and the
response-side sources (:mod:`scrapy_rfc9309.usage.preferences`) read categories through.

The text followed is the published draft-ietf-aipref-vocab-08 (14 September 2026), as the
working group's repository (github.com/ietf-wg-aipref/drafts) renders its tag. It defines
three categories (section 4, labels in section 6.1): ``train-ai`` (AI Training), ``ai-use``
(AI Use) and ``search`` (Search). None nests inside another, so a category's preference
never follows from another's (drafts -01 to -04 nested them: ``tdm`` > ``ai`` > ``genai``,
then ``all`` or ``bots`` > ``train-ai`` > ``train-genai``); a category without a stated
preference is *unknown*, and the draft "takes no position on what default might be
assigned" (section 5). What relates them is which category a use falls in
(:func:`governing`): Search "overrides any usage that falls into other categories,
including AI Training (Section 4.1) and AI Use (Section 4.2)" (section 4.3), and AI Use "does not include any use that
is included in the AI Training usage category" (section 4.2).

A ``Content-Usage`` statement (the draft's exemplary format, section 6) names a category by
its label in section 6.1 only: any other label is no category (section 6.4: "any unknown
labels MUST be ignored"). The plugin keeps such labels as stated (``bots``, an extension), so
that a project can act on them (``ROBOTSTXT_USAGE_DENY``), but they never stand for a
category: Content-Signal's ``ai-train`` names ``train-ai`` in a ``Content-Signal`` record (an
alternative format, section 7, whose mapping is Cloudflare's) and nothing in a
``Content-Usage`` statement, where it is ignored (:func:`category_of`).

Statements from several places are combined per category (section 5.1, "Combining
Preferences"): any ``n`` makes it ``n``; otherwise any ``y`` makes it ``y``;
otherwise it is unknown. Pure Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = [
    "ALIASES_IN_CONTENT_USAGE",
    "ALLOW",
    "CATEGORIES",
    "CONTENT_SIGNAL",
    "CONTENT_USAGE",
    "DEFINITIONS",
    "DISALLOW",
    "GENERATIVE_AI_MODEL",
    "OTHER_LABELS",
    "OVERRIDES",
    "REVISION",
    "REVISIONS_READ",
    "TDM_CATEGORY",
    "canonical",
    "category_of",
    "combine",
    "governing",
    "known_labels",
    "labels_for",
]

#: The revision of the vocabulary this module reads (its categories, their aliases, which labels a
#: ``Content-Usage`` statement names categories by, and the combining rule): a run's ledger records it,
#: since a usage verdict depends on it. Changed with any of them. This one is draft-ietf-aipref-vocab-08
#: read to the letter of its section 6.5 (only the labels of section 6.1 name categories in
#: ``Content-Usage``), as read from November 2026.
REVISION = "draft-ietf-aipref-vocab-08+2026-11"
#: The revisions before :data:`REVISION` whose runs the audit still reads: they also read
#: Content-Signal's ``ai-train`` in a ``Content-Usage`` statement as ``train-ai``, which
#: :func:`category_of` gives again for them. ``draft-ietf-aipref-vocab-08``: the three categories of
#: vocab-08; ``aipref-vocab-2026-08``: draft-ietf-aipref-vocab-07, whose categories are ``train-ai``
#: and ``search`` (``ai-use`` was then a label outside the vocabulary, kept as stated and read the
#: same way, so its verdicts are given again too).
ALIASES_IN_CONTENT_USAGE: frozenset[str] = frozenset({"draft-ietf-aipref-vocab-08", "aipref-vocab-2026-08"})
#: The revisions whose usage verdicts this module gives again, the ledger's audit reads.
REVISIONS_READ: tuple[str, ...] = (REVISION, "draft-ietf-aipref-vocab-08", "aipref-vocab-2026-08")
#: The categories of the vocabulary, by label (section 6.1, table "Mappings for Categories").
CATEGORIES: tuple[str, ...] = ("train-ai", "ai-use", "search")
#: Each category's name and definition, as the draft's section 4 states them (each paragraph that
#: defines it, word for word; section 4.3's conditions and notes are summarised in docs/preferences.md).
DEFINITIONS: dict[str, tuple[str, str]] = {
    "train-ai": ("AI Training", "Using an asset to modify the learned parameters of a generative AI model. "
                 "The training of models that are used to perform exclusively non-generative tasks is not "
                 "included in this category, even if the model is capable of generative tasks."),
    "ai-use": ("AI Use", "Using an asset as input to a generative AI model, where the asset is not directly "
               "provided by the user. This does not include any use that is included in the AI Training "
               "usage category (Section 4.1)."),
    "search": ("Search", "Using an asset in an application where the primary purpose of the application is to "
               "select assets and direct users to the location of those assets. This category of use "
               "overrides any usage that falls into other categories, including AI Training (Section 4.1) "
               "and AI Use (Section 4.2)."),
}
#: The term the categories rest on, as the draft's section 2 defines it.
GENERATIVE_AI_MODEL = (
    "An AI model that is used to generate synthetic content in one or more modalities. Alternatively, an AI "
    "model that is made available for use to generate synthetic content in one or more modalities. This "
    "definition does not include a model that is used, or made available for use, for classification, "
    "ranking, or scoring, even where the model generates rationale for its output.")
#: Per category, the categories it overrides: a use in several of them is governed by the overriding
#: one alone. Search overrides AI Training and AI Use (section 4.3); AI Use does not include a use
#: included in AI Training (section 4.2), which so governs it.
OVERRIDES: dict[str, tuple[str, ...]] = {"search": ("train-ai", "ai-use"), "train-ai": ("ai-use",)}
ALLOW = "y"
DISALLOW = "n"
#: The category a TDMRep reservation speaks for (``tdm-reservation: 1`` is ``n``, ``0``
#: is ``y``), whichever technique states it: text and data mining for AI training.
TDM_CATEGORY = "train-ai"
#: Content-Signal's names of categories of this vocabulary (read so in a ``Content-Signal`` record only).
_ALIASES = {"ai-train": "train-ai"}
#: The record formats that state preferences: the vocabulary's own (``Content-Usage``, in robots.txt
#: and the response header) and Content-Signal's.
CONTENT_USAGE = "content-usage"
CONTENT_SIGNAL = "content-signal"
#: Labels outside the vocabulary that sites state and the documentation names, each with
#: where it comes from: read and kept as stated, so ``ROBOTSTXT_USAGE_DENY`` may list them.
OTHER_LABELS: dict[str, str] = {
    "ai-input": "Content-Signal",
    "bots": "draft-ietf-aipref-vocab-03 and -04",
    "train-genai": "draft-ietf-aipref-vocab-02 and -03",
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
    labels unchanged. For a label a statement states, :func:`category_of` says what it names."""
    return _ALIASES.get(label, label)


def category_of(label: str, record: str, revision: str = REVISION) -> str | None:
    """What a label of a ``record`` statement (:data:`CONTENT_USAGE` or
    :data:`CONTENT_SIGNAL`) names, under ``revision``: in Content-Signal, its names of
    categories (``ai-train`` -> ``train-ai``); in Content-Usage, the label itself, except
    another vocabulary's name of a category, which names nothing (None: vocab-08, sections
    6.4 and 6.5) and which the revisions of :data:`ALIASES_IN_CONTENT_USAGE` read as that
    category. A label outside the vocabulary is itself (kept as stated)."""
    if label not in _ALIASES:
        return label
    if record == CONTENT_SIGNAL or revision in ALIASES_IN_CONTENT_USAGE:
        return _ALIASES[label]
    return None


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
