"""The AIPREF vocabulary as draft-ietf-aipref-vocab-08 states it (its categories, their
definitions, Search's override, the combining rule), from the draft's examples and those of
draft-ietf-aipref-attach-05; each cites its section ("vocab" is vocab-08, "attach" attach-05)."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
from crawl import run_crawl
from ledger_writer import Run, write_version
from scrapy.utils.test import get_crawler
from servers import Static
from test_audit import _head_settings, settings_ledger

import scrapy_rfc9309
from scrapy_rfc9309.config import Config
from scrapy_rfc9309.core.usage_vocabulary import (
    CATEGORIES,
    DEFINITIONS,
    GENERATIVE_AI_MODEL,
    REVISION,
    REVISIONS_READ,
    combine,
    governing,
    known_labels,
)
from scrapy_rfc9309.evidence.audit import audit
from scrapy_rfc9309.exceptions import RobotsTxtUsageDenied, RobotsTxtUsageDeniedByResponse
from scrapy_rfc9309.usage import read_statement
from scrapy_rfc9309.usage.response_sources import content_usage


def test_the_labels_are_those_of_section_6_1():
    # vocab, section 6.1, table "Mappings for Categories": AI Training, AI Use, Search.
    assert CATEGORIES == ("train-ai", "ai-use", "search")
    assert {label: name for label, (name, _) in DEFINITIONS.items()} == {
        "train-ai": "AI Training", "ai-use": "AI Use", "search": "Search"}
    assert REVISION == "draft-ietf-aipref-vocab-08+2026-11"
    # The runs written under vocab-07 and under vocab-08 as first read (Content-Usage's ai-train as train-ai)
    # are still audited.
    assert REVISIONS_READ == (REVISION, "draft-ietf-aipref-vocab-08", "aipref-vocab-2026-08")


def test_the_definitions_are_the_drafts():
    # vocab, section 4.1: generative models only; section 4.2: not directly provided by the user.
    assert "modify the learned parameters of a generative AI model" in DEFINITIONS["train-ai"][1]
    assert "input to a generative AI model, where the asset is not directly provided by the user" \
        in DEFINITIONS["ai-use"][1]
    assert "select assets and direct users to the location of those assets" in DEFINITIONS["search"][1]


def test_search_overrides_the_other_categories():
    # vocab, section 4.3: "This category of use overrides any usage that falls into other categories,
    # including AI Training (Section 4.1) and AI Use (Section 4.2)": a model trained inside a search
    # application is Search.
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


@pytest.mark.parametrize("revision", REVISIONS_READ)
def test_the_audit_reads_runs_of_this_revision_and_the_previous_one(tmp_path, revision):
    directory, path = settings_ledger(tmp_path)
    _head_settings(path, vocab=revision)
    assert audit([directory]).problems == []
    _head_settings(path, vocab="draft-ietf-aipref-vocab-09")
    assert "usage vocabulary revision 'draft-ietf-aipref-vocab-09'" in str(audit([directory]).problems[0])


def test_the_attach_example_with_ai_use():
    # attach, section 3.4 (its example, with ai-use): the longest matching Content-Usage path applies.
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


# --------------------------------------------------------------------------- vocab-08 word for word
# The text is that of draft-ietf-aipref-vocab-08 (14 September 2026) as github.com/ietf-wg-aipref/drafts
# renders its tag (gh-pages, draft-ietf-aipref-vocab-08/draft-ietf-aipref-vocab.html).


def test_each_definition_is_section_4_word_for_word():
    # vocab, section 4.1 (both paragraphs), 4.2 (paragraphs 1 and 3), 4.3 (paragraphs 1 and 7).
    assert DEFINITIONS["train-ai"] == ("AI Training", (
        "Using an asset to modify the learned parameters of a generative AI model. The training of models that "
        "are used to perform exclusively non-generative tasks is not included in this category, even if the "
        "model is capable of generative tasks."))
    assert DEFINITIONS["ai-use"] == ("AI Use", (
        "Using an asset as input to a generative AI model, where the asset is not directly provided by the user. "
        "This does not include any use that is included in the AI Training usage category (Section 4.1)."))
    assert DEFINITIONS["search"] == ("Search", (
        "Using an asset in an application where the primary purpose of the application is to select assets and "
        "direct users to the location of those assets. This category of use overrides any usage that falls into "
        "other categories, including AI Training (Section 4.1) and AI Use (Section 4.2)."))
    # vocab, section 2: the term AI Training and AI Use rest on; a ranking model is not one.
    assert GENERATIVE_AI_MODEL.startswith("An AI model that is used to generate synthetic content in one or more "
                                          "modalities.")
    assert "for classification, ranking, or scoring" in GENERATIVE_AI_MODEL


@pytest.mark.parametrize(("record", "text", "train_ai"), [
    # vocab, section 6.5: a category's value is that of its label in table 1 ("train-ai"); section 6.4: "any
    # unknown labels MUST be ignored". Content-Signal's "ai-train" is such a label in Content-Usage.
    ("content-usage", "ai-train=n", None),
    ("content-usage", "ai-train=n, train-ai=y", "y"),
    # In a Content-Signal record (an alternative format, section 7), "ai-train" is its name of train-ai.
    ("content-signal", "ai-train=no", "n"),
])
def test_in_content_usage_only_the_labels_of_section_6_1_name_a_category(record, text, train_ai):
    robots = scrapy_rfc9309.parse(f"User-Agent: *\nAllow: /\n{record}: {text}\n")
    usage = robots.usage("https://h/x", "Bot")
    assert usage.get("train-ai") == train_ai
    assert usage.denies("train-ai") is (train_ai == "n")


def test_the_content_usage_header_names_categories_by_the_labels_of_section_6_1():
    # vocab, sections 6.4 and 6.5, for the header (attach, section 2) as for the robots.txt rule.
    statement = content_usage([b"ai-train=n, search=n"])
    assert statement is not None and statement.values == {"search": "n"}
    statement = content_usage([b"ai-train=y, train-ai=n"])
    assert statement is not None and statement.values == {"train-ai": "n"}


@pytest.mark.parametrize(("kind", "revision", "problem"), [
    # A run written under the revisions before this one read Content-Usage's "ai-train" as train-ai: its
    # usage_denied verdict is given again under its own revision, and a run of this one's is a mismatch;
    # an allowed verdict is the other way round.
    ("usage_denied", "draft-ietf-aipref-vocab-08", None),
    ("usage_denied", "aipref-vocab-2026-08", None),
    ("usage_denied", REVISION, "usage_denied, but version"),
    ("allowed", "draft-ietf-aipref-vocab-08", "allowed, but version"),
    ("allowed", REVISION, None),
])
def test_the_audit_reads_a_run_as_its_revision_read_content_usage(tmp_path, kind, revision, problem):
    directory = tmp_path / "ledger"
    body = b"User-agent: *\nAllow: /\nContent-Usage: /train/ ai-train=n\n"
    robots = write_version(directory, "http://p.test/robots.txt", body)
    run = Run(directory, settings={"deny": ["train-ai"], "vocab": revision})
    run.state("http://p.test", robots)
    run.verdict("http://p.test/train/x", "p1", kind, robots, ["Allow", "/", 2])
    run.close()
    problems = audit([directory]).problems
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problem in problems[0].message, problems


# --------------------------------------------------------------------------- vocab-08's other examples


@pytest.mark.parametrize(("text", "expected"), [
    # vocab, section 6.1: "These tokens are case sensitive" (the values too: section 6.2, Tokens y and n).
    ("train-ai=Y, search=N", {}),
    # vocab, section 6.4: "any unknown parameters MUST be ignored".
    ("train-ai=n;why=x;since=2026, search=y;a", {"train-ai": "n", "search": "y"}),
    # vocab, section 6.5: values that are not Tokens, and Tokens other than y and n, leave it unknown.
    ('train-ai="y", ai-use=?1, search=yes', {}),
])
def test_the_processing_algorithm(text, expected):
    values, malformed = read_statement("content-usage", text)
    assert malformed is None
    assert dict(values) == expected


def test_a_statement_with_a_trailing_semicolon_states_nothing():
    # vocab, section 6.5.2: 'train-ai;has;parameters="?";' has parameters "even though the preference is
    # unknown"; its last ";" names no parameter, so the Dictionary does not parse (section 6.5.1: unknown).
    values, malformed = read_statement("content-usage", 'train-ai;has;parameters="?";')
    assert values == {} and malformed
    values, malformed = read_statement("content-usage", 'train-ai;has;parameters="?"')
    assert values == {} and malformed is None


# --------------------------------------------------------------------------- attach-05's rule syntax


def test_the_rule_is_processed_as_attach_section_3_2_says():
    robots = scrapy_rfc9309.parse(
        "User-Agent: *\n"
        "  content-usage\t:  train-ai=n # the rest of the line is a comment\n"  # SP/HTAB around label and colon
        "Content-Usage: /tab/\ttrain-ai=y\n"  # the path ends at the first SP or HTAB
        "Content-Usage: /both/ \t search=n\n"
        "Disallow: /never/\n"  # the order of rules carries no semantics (section 3.1)
        "Content-Usage: /never/ train-ai=y\n")
    assert robots.usage("https://h/x", "Bot").denies("train-ai")
    assert robots.usage("https://h/tab/x", "Bot").get("train-ai") == "y"
    assert robots.usage("https://h/both/x", "Bot").denies("search")
    assert not robots.allowed("https://h/never/x", "Bot")


@pytest_twisted.inlineCallbacks
def test_the_http_example_of_attach_section_1_2(origins):
    """attach, section 1.2: the response whose Content-Usage field says train-ai=n, in a crawl that denies
    train-ai (its errback is told) and in one that denies nothing (the spider reads the preference)."""
    a = origins()
    a.robots("User-Agent: *\nAllow: /\n")
    a["/content"] = Static(b"This is some content.", headers={"Content-Type": "text/plain",
                                                              "Content-Usage": "train-ai=n"})
    a["/ai-train"] = Static(b"This is some content.", headers={"Content-Type": "text/plain",
                                                               "Content-Usage": "ai-train=n"})

    denying = yield run_crawl([a.url("/content"), a.url("/ai-train")], {**ADDON, "ROBOTSTXT_USAGE_DENY": ["train-ai"]})
    assert [type(e) for e in denying.errors_for(a.url("/content"))] == [RobotsTxtUsageDeniedByResponse]
    assert denying.responses == [a.url("/ai-train")]  # vocab, section 6.4: "ai-train" is no label of its own

    reading = yield run_crawl([a.url("/content")], {**ADDON, "ROBOTSTXT_USAGE_DENY": []})
    assert reading.responses == [a.url("/content")]
