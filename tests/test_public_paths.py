"""The public paths stay where users' code, the documentation and pickled requests name them:
every name the API reference documents resolves at its documented path; each module kept at an
old path (a re-export of the module that now holds the code) offers the same names as before the
modules moved to folders, each the very object of its new home; and a request pickled before the
move (as a JOBDIR queue keeps it, its meta holding a usage preference and a tdmrep.json entry)
loads."""

from __future__ import annotations

import importlib
import pickle
import re
from pathlib import Path

import pytest
from scrapy.utils.request import request_from_dict

from scrapy_rfc9309 import parse
from scrapy_rfc9309.core.tdmrep import TdmEntry, TdmRep
from scrapy_rfc9309.core.usage_rules import UsagePreference

ROOT = Path(__file__).resolve().parent.parent
#: Each public path, its names (its ``__all__`` before the move) and the modules that hold them now.
PUBLIC = {
    "access": ("core.state core.http_cache", ["DAY", "Access", "Cause", "Decision", "FetchOutcome", "OriginState",
                                              "Policy", "Validators", "cache_directives", "classify_status",
                                              "http_date", "max_age_of", "validator"]),
    "origin": ("core.origins", ["DEFAULT_PORTS", "HttpOrigins", "Origin"]),
    "judgement": ("core.verdict", ["DROP_REASONS", "Enforced", "Judgement", "Kind", "allowed", "at_close",
                                   "holding", "invalid_meta", "judge", "not_judged", "unreachable_reason"]),
    "tdmrep": ("core.tdmrep", ["MAX_DEPTH", "MAX_PROBLEMS", "MAX_WILDCARD_RULES", "RESERVED_CATEGORIES",
                               "TDMREP_PATH", "TdmEntry", "TdmRep", "reserves"]),
    "changes": ("core.changes", ["AgentChange", "RobotsChange", "diff"]),
    "record": ("stores.record", ["CLOCK_TOLERANCE", "FORMAT", "MAX_META_BYTES", "MAX_META_CHARS", "MAX_META_DEPTH",
                                 "Record", "RecordError", "Unreadable", "dated_ahead", "decode", "encode"]),
    "audit": ("evidence.audit", ["CORRUPT", "MAX_PROBLEMS", "MISMATCH", "MISSING", "ORPHAN", "UNSEALED", "Audit",
                                 "LedgerError", "OriginReport", "Problem", "RunReport", "audit", "format_text"]),
    "usage.vocabulary": ("core.usage_vocabulary", ["ALLOW", "CATEGORIES", "DEFINITIONS", "DISALLOW", "OTHER_LABELS",
                                                   "OVERRIDES", "REVISION", "REVISIONS_READ", "TDM_CATEGORY",
                                                   "canonical", "combine", "governing", "known_labels",
                                                   "labels_for"]),
    "usage.robotstxt_records": ("core.usage_rules", ["UsageIndex", "UsagePreference", "UsageRule", "applicable",
                                                     "read_statement", "split_rule"]),
}
#: A request's dict (``Request.to_dict``, what a JOBDIR queue pickles) pickled at eeb9a56, before the move:
#: its meta's ``robotstxt_usage`` and ``robotstxt_tdmrep`` name the classes at their old paths.
OLD_PICKLE = Path(__file__).parent / "data" / "jobdir_request_eeb9a56.pickle"


def module(path: str) -> object:
    return importlib.import_module(f"scrapy_rfc9309.{path}")


@pytest.mark.parametrize("public", sorted(PUBLIC))
def test_a_public_path_offers_its_names_from_their_new_home(public: str) -> None:
    homes, names = PUBLIC[public]
    old, new = module(public), [module(home) for home in homes.split()]
    assert sorted(old.__all__) == sorted(names)  # type: ignore[attr-defined]
    for name in names:
        assert any(getattr(old, name) is getattr(home, name, None) for home in new), name


def documented() -> list[str]:
    """The dotted names of the API reference's autodoc directives (a module's: each name of its ``__all__``)."""
    text = (ROOT / "docs" / "api-docstrings.md").read_text(encoding="utf-8")
    names = []
    for kind, path in re.findall(r"^\.\. auto(function|class|exception|data|module):: (\S+)", text, re.M):
        if kind == "module":
            names += [f"{path}.{name}" for name in importlib.import_module(path).__all__]
        else:
            names.append(path)
    return names


def test_every_documented_name_resolves_at_its_documented_path() -> None:
    names = documented()
    assert "scrapy_rfc9309.judgement.Judgement" in names and "scrapy_rfc9309.tdmrep.TdmEntry" in names
    for dotted in names:
        module_name, _, name = dotted.rpartition(".")
        assert hasattr(importlib.import_module(module_name), name), dotted


def test_a_request_pickled_before_the_move_loads() -> None:
    assert b"scrapy_rfc9309.usage.robotstxt_records" in OLD_PICKLE.read_bytes()  # the old class paths
    request = request_from_dict(pickle.loads(OLD_PICKLE.read_bytes()))
    usage, entry = request.meta["robotstxt_usage"], request.meta["robotstxt_tdmrep"]
    robots = parse(b"User-agent: *\nContent-Usage: train-ai=n\nContent-Usage: /public/ train-ai=y\n"
                   b"Disallow: /private\n")
    tdm = TdmRep(b'[{"location": "/*", "tdm-reservation": 1, "tdm-policy": "https://example.com/policy.json"}]', 4096,
                 url="https://example.com/.well-known/tdmrep.json")
    assert type(usage) is UsagePreference and type(entry) is TdmEntry
    assert usage == robots.usage(request.url, "ExampleBot")
    assert entry == tdm.entry_for(request.url)
    assert usage.get("train-ai") == "y" and entry.reserved
