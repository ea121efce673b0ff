"""The tdmrep.json reader and matcher (scrapy_rfc9309.tdmrep), alone."""

from __future__ import annotations

import json

import pytest

from scrapy_rfc9309.core.documents import ROBOTS_TXT, TDMREP
from scrapy_rfc9309.core.state import Access, Decision, FetchOutcome, OriginState, Policy
from scrapy_rfc9309.core.tdmrep import MAX_PROBLEMS, RESERVED_CATEGORIES, TdmEntry, TdmRep, reserves
from scrapy_rfc9309.stores.record import RecordError, decode, encode

URL = "https://example.com/.well-known/tdmrep.json"
LIMIT = 500 * 1024

#: The specification's second example.
SPEC_EXAMPLE = b"""[
  {"location": "/directory-a/", "tdm-reservation": 1},
  {"location": "/directory-b/html/", "tdm-reservation": 1,
   "tdm-policy": "https://provider.com/policies/policy.json"},
  {"location": "/directory-b/images/*.jpg", "tdm-reservation": 0}
]"""


def parse(body: bytes | str, limit: int = LIMIT) -> TdmRep:
    return TdmRep(body.encode() if isinstance(body, str) else body, limit, url=URL)


def test_the_specification_example() -> None:
    rep = parse(SPEC_EXAMPLE)
    assert rep.problems == []
    assert rep.entry_for("https://example.com/directory-a/report.pdf") == TdmEntry(True, None, "/directory-a/", 0,
                                                                                   URL)
    html = rep.entry_for("https://example.com/directory-b/html/index.html")
    assert html is not None and html.reserved and html.index == 1
    assert html.policy == "https://provider.com/policies/policy.json"
    image = rep.entry_for("https://example.com/directory-b/images/cat.jpg?size=2")
    assert image is not None and not image.reserved and image.index == 2
    assert rep.entry_for("https://example.com/directory-b/images/cat.png") is None
    assert rep.entry_for("https://example.com/") is None


def test_an_entry_as_plain_data() -> None:
    entry = parse(SPEC_EXAMPLE).entry_for("https://example.com/directory-b/html/x")
    assert entry is not None
    assert json.loads(json.dumps(entry.as_dict())) == {
        "reserved": True, "policy": "https://provider.com/policies/policy.json", "location": "/directory-b/html/",
        "index": 1, "url": URL}


def test_the_first_matching_rule_applies_not_the_longest() -> None:
    rep = parse('[{"location": "/", "tdm-reservation": 0}, {"location": "/private/", "tdm-reservation": 1}]')
    entry = rep.entry_for("https://example.com/private/x")
    assert entry is not None and entry.index == 0 and not entry.reserved


@pytest.mark.parametrize(("location", "path", "matches"), [
    ("/a$", "/a", True),
    ("/a$", "/ab", False),
    ("/*.pdf$", "/x/y.pdf", True),
    ("/*.pdf$", "/x/y.pdf?v=1", False),
    ("/Docs/", "/docs/x", False),  # case-sensitive
    ("/caf%C3%A9", "/café", True),  # percent-encoding compared as robots.txt patterns are
    ("/path/foo-%24", "/path/foo-$", True),
    ("*", "/anything", True),
])
def test_path_patterns(location: str, path: str, matches: bool) -> None:
    rep = parse(json.dumps([{"location": location, "tdm-reservation": 1}]))
    assert (rep.entry_for("https://example.com" + path) is not None) is matches


def test_rules_of_the_wrong_shape_are_skipped_and_named() -> None:
    rep = parse(json.dumps([
        "x", {"location": 5, "tdm-reservation": 1}, {"location": "nopath", "tdm-reservation": 1},
        {"location": "/a", "tdm-reservation": 2}, {"location": "/b", "tdm-reservation": True},
        {"location": "/c"}, {"location": "/d", "tdm-reservation": "1", "tdm-policy": 7},
    ]))
    assert [(e.location, e.index, e.reserved, e.policy) for e in rep.entries] == [("/d", 6, True, None)]
    assert len(rep.problems) == 7
    assert "rule 0 is not an object" in rep.problems[0]
    assert "tdm-reservation 2" in rep.problems[3]
    assert "tdm-policy 7" in rep.problems[6]


@pytest.mark.parametrize(("body", "problem"), [
    (b"", "empty file"),
    (b"{}", "not a JSON array"),
    (b"<html>nope</html>", "not a JSON array"),
    (b"\xff\xfe[]", "not UTF-8"),
])
def test_a_file_that_is_no_array_has_no_rules(body: bytes, problem: str) -> None:
    rep = parse(body)
    assert rep.entries == [] and rep.entry_for("https://example.com/x") is None
    assert problem in rep.problems[0]


def test_invalid_json_keeps_the_rules_before_it() -> None:
    rep = parse('[{"location": "/a", "tdm-reservation": 1}, {"location": "/b", tdm-reservation: 1}]')
    assert [e.location for e in rep.entries] == ["/a"]
    assert "invalid JSON" in rep.problems[0] and "the 1 rules before it" in rep.problems[0]
    rep = parse('[{"location": "/a", "tdm-reservation": 1} {"location": "/b", "tdm-reservation": 1}]')
    assert [e.location for e in rep.entries] == ["/a"]


def test_a_bom_and_trailing_text() -> None:
    rep = parse(b'\xef\xbb\xbf [{"location": "/", "tdm-reservation": 1}] trailing')
    assert [e.location for e in rep.entries] == ["/"]
    assert rep.problems == ["text after the array (ignored)"]


def test_a_file_cut_at_the_size_limit_keeps_its_complete_leading_rules() -> None:
    rule = '{"location": "/r%d/", "tdm-reservation": 1}'
    body = ("[" + ", ".join(rule % i for i in range(50_000)) + "]").encode()
    limit = 100_000
    rep = parse(body, limit)
    assert rep.truncated and len(rep.body) == limit and rep.size == len(body)
    read = len(rep.entries)
    assert 0 < read < 50_000
    assert [e.index for e in rep.entries] == list(range(read))
    assert rep.entry_for("https://example.com/r0/x") is not None
    assert rep.entry_for(f"https://example.com/r{read}/x") is None
    assert "cut at the size limit" in rep.problems[0]


def test_a_multibyte_character_cut_by_the_limit() -> None:
    body = '[{"location": "/a", "tdm-reservation": 1}, {"location": "/é'.encode()
    rep = parse(body, len(body) - 1)
    assert [e.location for e in rep.entries] == ["/a"]


def test_problems_are_bounded() -> None:
    rep = parse(json.dumps([1] * 100))
    assert len(rep.problems) == MAX_PROBLEMS and rep.problem_count == 100


def test_reserved_categories() -> None:
    assert "train-ai" in RESERVED_CATEGORIES
    assert reserves("TRAIN-AI") and reserves("ai-train") and not reserves("search") and not reserves("bots")


def test_a_reservation_denies_the_same_categories_before_download_and_on_the_response() -> None:
    """The tdmrep.json rule that drops a request before download and the statement the
    response side reads from it name the same category: one ROBOTSTXT_USAGE_DENY entry
    applies to both."""
    from scrapy_rfc9309.usage.preferences import build
    from scrapy_rfc9309.usage.response_sources import tdmrep_statement

    entry = TdmEntry(True, None, "/", 0, "https://example.com/.well-known/tdmrep.json")
    preferences = build([tdmrep_statement(entry)])
    for category in ("train-ai", "ai-train", "search", "bots"):
        assert preferences.denies(category) == reserves(category), category


def test_a_state_and_its_stored_record() -> None:
    """A tdmrep.json state goes through the robots.txt lifecycle's policy and record format,
    naming its document: read back as a tdmrep.json, never as a robots.txt (nor the reverse)."""
    policy = Policy()
    now = 1_000_000.0
    state = OriginState.initial(FetchOutcome(Access.PARSED, URL, 200, SPEC_EXAMPLE, document=TDMREP), now, policy)
    assert state.tdmrep is not None and state.robots is None
    assert state.expires_at == now + policy.ttl
    record = encode(state, policy)
    assert '"doc":"tdmrep.json"' in record.meta and record.body == SPEC_EXAMPLE
    back = decode(record, policy, now + 1, TDMREP)
    assert back.tdmrep is not None and back.tdmrep.entries == state.tdmrep.entries
    with pytest.raises(RecordError, match=r"tdmrep\.json"):
        decode(record, policy, now + 1, ROBOTS_TXT)
    robots = OriginState.initial(FetchOutcome(Access.PARSED, "https://example.com/robots.txt", 200, b"Allow: /"),
                                 now, policy)
    robots_record = encode(robots, policy)
    assert '"doc"' not in robots_record.meta  # the robots.txt record is as it was
    with pytest.raises(RecordError):
        decode(robots_record, policy, now + 1, TDMREP)
    # Unreachable later: the last good copy keeps applying, the retry is on the backoff.
    failed = state.apply(FetchOutcome(Access.UNREACHABLE, URL, 503, document=TDMREP), now + 10, policy)
    assert failed.tdmrep is state.tdmrep and failed.decision(now + 10, policy) is Decision.RULES
    assert failed.expires_at == now + 10 + policy.retry_delay
    kept = decode(encode(failed, policy), policy, now + 11, TDMREP)
    assert kept.tdmrep is not None and kept.failures == 1 and kept.access is Access.UNREACHABLE


@pytest.mark.parametrize("damage", [b"[" * 5000, b'{"a":' * 2000, b"[" * 33 + b"]" * 33])
def test_a_file_nested_too_deep_is_read_up_to_that_point(damage: bytes) -> None:
    from scrapy_rfc9309.core.tdmrep import MAX_DEPTH

    body = b'[{"location": "/a", "tdm-reservation": 1}, ' + damage + b', {"location": "/b", "tdm-reservation": 1}]'
    tdm = TdmRep(body, 1 << 20)
    assert [e.location for e in tdm.entries] == ["/a"]  # the rules before the damage; none after
    (problem,) = tdm.problems
    assert f"nested deeper than {MAX_DEPTH} levels at char" in problem and "the 1 rules before it are used" in problem


def test_nesting_within_the_bound_and_brackets_in_strings_are_read() -> None:
    from scrapy_rfc9309.core.tdmrep import MAX_DEPTH

    deep = "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2)  # with the array and the object: MAX_DEPTH
    body = ('[{"location": "/a[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "tdm-reservation": 1, "x": ' + deep + "},"
            ' {"location": "/b", "tdm-reservation": 0, "y": "' + "{" * 100 + '\\"[[["}]')
    tdm = TdmRep(body.encode(), 1 << 20)
    assert [e.location for e in tdm.entries] == ["/a" + "[" * 40, "/b"]
    assert tdm.problems == []


def test_too_deep_finds_the_first_bracket_past_the_limit() -> None:
    from scrapy_rfc9309.core.limited_json import too_deep

    assert too_deep("[" * 3 + "]" * 3, 3) is None
    assert too_deep("[" * 4 + "]" * 4, 3) == 3
    assert too_deep('["[[[[", {"a": [[]]}]', 3) == 16  # brackets in a string do not count
    assert too_deep('["]]]]", [[[]]]]', 3) == 11
    assert too_deep("[[]" * 50, 3) == 7  # each unclosed level adds to the next ones
    assert too_deep("[]" * 50, 3) is None
    assert too_deep("[" * 10, 3) == 3  # unclosed


def _first_match(rules: list[dict[str, object]], url: str) -> int | None:
    """The reference: the first rule, in file order, whose location matches the URL's path."""
    from scrapy_rfc9309.core.matcher import glob_match, glob_pieces
    from scrapy_rfc9309.core.urls import path_of

    path = path_of(url)
    for index, rule in enumerate(rules):
        pieces, anchored, _, _ = glob_pieces(str(rule["location"]))
        if glob_match(path, pieces, anchored):
            return index
    return None


def test_the_indexed_match_is_the_first_rule_in_file_order() -> None:
    import random

    chooser = random.Random(9309)
    parts = ["/", "a", "b", "/a", "/b", "*", "x", "%41", "é", "?q", "=", "$"]
    for _ in range(300):
        rules = []
        for _ in range(chooser.randint(1, 12)):
            location = "/" + "".join(chooser.choice(parts) for _ in range(chooser.randint(0, 4)))
            location = location.replace("$", "") + ("$" if chooser.random() < 0.2 else "")
            rules.append({"location": location, "tdm-reservation": chooser.randint(0, 1)})
        tdm = TdmRep(json.dumps(rules).encode(), 1 << 20)
        assert tdm.problems == []
        for _ in range(20):
            path = "/" + "".join(chooser.choice(parts[:-1]) for _ in range(chooser.randint(0, 6)))
            url = "https://h" + path
            entry = tdm.entry_for(url)
            assert (None if entry is None else entry.index) == _first_match(rules, url), (rules, url)


def test_wildcard_rules_past_the_bound_are_not_read() -> None:
    from scrapy_rfc9309.core.tdmrep import MAX_WILDCARD_RULES

    rules = [{"location": "/plain/", "tdm-reservation": 1}]
    rules += [{"location": f"/*/w{n}/*x$", "tdm-reservation": 1} for n in range(10_000)]
    tdm = TdmRep(json.dumps(rules).encode(), 1 << 22)
    assert len(tdm.entries) == MAX_WILDCARD_RULES + 1
    assert tdm.problems == [f"more than {MAX_WILDCARD_RULES} rules with wildcards: rule {MAX_WILDCARD_RULES + 1} and "
                            f"the rest are not read; the {MAX_WILDCARD_RULES + 1} rules before it are used"]
    last = MAX_WILDCARD_RULES - 1
    assert tdm.entry_for(f"https://h/a/w{last}/x").index == last + 1  # type: ignore[union-attr]
    assert tdm.entry_for(f"https://h/a/w{last + 1}/x") is None
    assert tdm.entry_for("https://h/plain/w5/x").index == 0  # type: ignore[union-attr]
