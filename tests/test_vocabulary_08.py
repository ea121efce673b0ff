"""The AIPREF vocabulary as draft-ietf-aipref-vocab-08 states it (its categories, their
definitions, Search's override, the combining rule), from the draft's examples and those of
draft-ietf-aipref-attach-05; each cites its section ("vocab" is vocab-08, "attach" attach-05)."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
from crawl import run_crawl
from scrapy.utils.test import get_crawler
from servers import Static
from test_audit import _head_settings, settings_ledger

import scrapy_rfc9309
from scrapy_rfc9309.config import Config
from scrapy_rfc9309.core.usage_vocabulary import (
    CATEGORIES,
    DEFINITIONS,
    REVISION,
    REVISIONS_READ,
    combine,
    governing,
    known_labels,
)
from scrapy_rfc9309.evidence.audit import audit
from scrapy_rfc9309.exceptions import RobotsTxtUsageDenied, RobotsTxtUsageDeniedByResponse
from scrapy_rfc9309.usage import read_statement


def test_the_labels_are_those_of_section_6_1():
    # vocab, section 6.1, table "Mappings for Categories": AI Training, AI Use, Search.
    assert CATEGORIES == ("train-ai", "ai-use", "search")
    assert {label: name for label, (name, _) in DEFINITIONS.items()} == {
        "train-ai": "AI Training", "ai-use": "AI Use", "search": "Search"}
    assert REVISION == "draft-ietf-aipref-vocab-08"
    assert "aipref-vocab-2026-08" in REVISIONS_READ  # the runs written under vocab-07 are still audited


def test_the_definitions_are_the_drafts():
    # vocab, section 4.1: generative models only; section 4.2: not directly provided by the user.
    assert "modify the learned parameters of a generative AI model" in DEFINITIONS["train-ai"][1]
    assert "input to a generative AI model, where the asset is not directly provided by the user" \
        in DEFINITIONS["ai-use"][1]
    assert "select assets and direct users to the location of those assets" in DEFINITIONS["search"][1]


def test_search_overrides_the_other_categories():
    # vocab, section 4.3: "This category of use overrides any usage that falls into other categories,
    # including AI Training and AI Use": training a model inside a search application is Search.
    assert governing(["train-ai", "search"]) == ("search",)
    assert governing(["search", "ai-use", "train-ai"]) == ("search",)
    # vocab, section 4.2: AI Use "does not include any use that is included in the AI Training usage category".
    assert governing(["ai-use", "train-ai"]) == ("train-ai",)
    # Each category alone governs itself; a label outside the vocabulary is kept; Content-Signal's name is read.
    assert governing(["ai-use"]) == ("ai-use",)
    assert governing(["ai-input", "ai-train"]) == ("ai-input", "train-ai")


def test_no_category_follows_from_another():
    # vocab, section 5: a category without an explicit preference is unknown (no hierarchy).
    combined = combine([("robots.txt", {"train-ai": "n"})])
    assert "ai-use" not in combined and "search" not in combined


def test_combining_any_n_wins_then_any_y():
    # vocab, section 5.1, for the new category as for the others.
    combined = combine([("a", {"ai-use": "y", "search": "y"}), ("b", {"ai-use": "n"}), ("c", {"search": "n"})])
    assert combined == {"ai-use": ("n", ("b",)), "search": ("n", ("c",))}


@pytest.mark.parametrize(("text", "expected"), [
    # vocab, section 6: "train-ai=y, search=n" (ai-use unknown).
    ("train-ai=y, search=n", {"train-ai": "y", "search": "n"}),
    ("train-ai=n, ai-use=n, search=y", {"train-ai": "n", "ai-use": "n", "search": "y"}),
    # vocab, section 6.5.1: a repeated key keeps its last value; a boolean and a String are no preference.
    ('train-ai=y, train-ai, search=n, search="n"', {}),
    ('ai-use=y, ai-use="n"', {}),
    # vocab, section 6.5.2: only the parameters of the value selected apply.
    ("train-ai;allow=n, train-ai=y", {"train-ai": "y"}),
    ("ai-use;allow=y, ai-use=n", {"ai-use": "n"}),
])
def test_the_serialization_examples(text, expected):
    values, malformed = read_statement("content-usage", text)
    assert malformed is None
    assert dict(values) == expected


def test_an_uppercase_key_fails_the_dictionary():
    # vocab, section 6.5.1: "This includes where keys include uppercase characters".
    values, malformed = read_statement("content-usage", "AI-Use=n")
    assert values == {} and malformed


def test_use_deny_accepts_every_category():
    for category in ("train-ai", "ai-use", "search"):
        assert category in known_labels()
        config = Config.from_settings(get_crawler(settings_dict={"ROBOTSTXT_USAGE_DENY": [category]}).settings)
        assert config.usage_deny == (category,)


@pytest.mark.parametrize("revision", [REVISION, "aipref-vocab-2026-08"])
def test_the_audit_reads_runs_of_this_revision_and_the_previous_one(tmp_path, revision):
    directory, path = settings_ledger(tmp_path)
    _head_settings(path, vocab=revision)
    assert audit([directory]).problems == []
    _head_settings(path, vocab="draft-ietf-aipref-vocab-09")
    assert "usage vocabulary revision 'draft-ietf-aipref-vocab-09'" in str(audit([directory]).problems[0])


def test_the_attach_example_with_ai_use():
    # attach, section 3.4: the longest matching Content-Usage path applies, per category.
    robots = scrapy_rfc9309.parse("User-Agent: *\nAllow: /\nDisallow: /never/\nContent-Usage: ai-use=n\n"
                                  "Content-Usage: /ai-ok/ ai-use=y\n")
    assert robots.usage("https://h/test", "Bot").denies("ai-use")
    assert robots.usage("https://h/ai-ok/test", "Bot").get("ai-use") == "y"
    assert robots.usage("https://h/test", "Bot").get("train-ai") is None
    assert not robots.allowed("https://h/never/test", "Bot")


ADDON: dict[str, Any] = {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "ROBOTSTXT_USER_AGENT": "MyBot",
                         "ROBOTSTXT_USAGE_DENY": ["ai-use"]}


@pytest_twisted.inlineCallbacks
def test_a_crawl_denying_ai_use(origins):
    """attach, sections 2 and 3: the robots.txt rule and the header, for ai-use, enforced."""
    a = origins()
    a.robots("User-Agent: *\nAllow: /\nContent-Usage: /gen/ ai-use=n\nContent-Usage: train-ai=n\n")
    a["/gen/x"] = Static(b"<html></html>")
    a["/page"] = Static(b"<html></html>")  # train-ai=n: not a category this crawl denies
    a["/header"] = Static(b"<html></html>", headers={"Content-Type": "text/html", "Content-Usage": "ai-use=n"})

    result = yield run_crawl([a.url("/gen/x"), a.url("/page"), a.url("/header")], ADDON)

    assert result.responses == [a.url("/page")]
    assert [type(e) for e in result.errors_for(a.url("/gen/x"))] == [RobotsTxtUsageDenied]
    assert [type(e) for e in result.errors_for(a.url("/header"))] == [RobotsTxtUsageDeniedByResponse]
