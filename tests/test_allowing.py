"""The one function of a verdict, :class:`~scrapy_rfc9309.core.verdict.Ruling` (``judge`` is made of it),
against an oracle: ``judge``, ``allowing`` and ``explaining`` as the package had them before
(``tests/reference_verdict.py``). Over the robots.txt files of ``benchmarks/corpus`` and hand-written ones
(usage records, Crawl-delay, purpose tokens' groups), many URLs, agents and settings, the Ruling gives the
reference's verdict, with and without ``explain``; a plain ruling is one where the reference's ``allowing``
gave a test, its ``passes`` says True exactly where that test did (a bare allowed verdict, one that
carries nothing to act on or tell), and what it tells of an allowed URL is the reference's verdict with
``explain``. A regression net: that the release memo answers as the Ruling does holds by construction."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from reference_verdict import allowing, explaining
from reference_verdict import judge as reference_judge

from scrapy_rfc9309.core.product_tokens import product_token
from scrapy_rfc9309.core.state import Access, Cause, FetchOutcome, OriginState, Policy
from scrapy_rfc9309.core.verdict import Enforced, Judgement, Kind, Ruling, judge

NOW = 1_000_000.0
POLICY = Policy(max_wait=60.0, max_wait_refused=10.0)
ROBOTS_URL = "https://example.com/robots.txt"
CORPUS = Path(__file__).resolve().parent.parent / "benchmarks" / "corpus"
WRITTEN = {
    "usage": b"User-agent: *\nDisallow: /private\nContent-Usage: /ai/ train-ai=n\n\n"
             b"User-agent: mybot\nAllow: /\nContent-Usage: train-ai=y\n",
    "usage-star-only": b"User-agent: *\nAllow: /\nContent-Usage: /ai/ train-ai=y\n\n"
                       b"User-agent: googlebot\nDisallow: /nogoogle\n",
    "crawl-delay": b"User-agent: *\nDisallow: /private\nCrawl-delay: 2\n\nUser-agent: mybot\nDisallow: /x\n",
    "purpose": b"User-agent: *\nDisallow: /private\n\nUser-agent: ai-purpose\nDisallow: /ai\n\n"
               b"User-agent: mybot\nAllow: /\nDisallow: /mine$\n",
    "wildcards": b"User-agent: *\nDisallow: /*.pdf$\nDisallow: /*?session=\nAllow: /*?session=ok\n"
                 b"Disallow: /%E2%82%AC\n",
    "everything": b"User-agent: *\nDisallow: /\n",
    "empty": b"",
}
AGENTS: list[str | bytes] = ["MyBot/1.0", b"Mozilla/5.0 (compatible; Googlebot/2.1)", "bingbot", "Unlisted/3", ""]
SETTINGS = {
    "defaults": Enforced(POLICY),
    "crawl delay": Enforced(POLICY, crawl_delay=True),
    "usage deny": Enforced(POLICY, ("train-ai",)),
    "tdmrep": Enforced(POLICY, ("train-ai",), tdmrep=True),
    "purpose tokens": Enforced(POLICY, purpose_tokens=("ai-purpose",)),
    # A thousand tokens no file names beside one that some do: they share '*''s group.
    "many purpose tokens": Enforced(POLICY, purpose_tokens=(*(f"purpose-{chr(97 + n // 26 % 26)}{chr(97 + n % 26)}"
                                                              f"-{chr(97 + n // 676)}" for n in range(1000)),
                                                            "ai-purpose")),
}
FIXED_PATHS = ["/", "/robots.txt", "/private", "/private/x", "/ai/x", "/ai", "/x", "/mine", "/mine/2",
               "/nogoogle", "/a.pdf", "/a.pdf?x", "/s?session=1", "/s?session=ok", "/%E2%82%AC", "/€",
               "/search?q=1", "/wp-admin/", "/api/v1/", "/cgi-bin/x", "/p/1", "/a%3Cb", "/;x", "/A"]
_PATTERN = re.compile(rb"^\s*(?:dis)?allow\s*:\s*(\S+)", re.IGNORECASE | re.MULTILINE)


def files() -> dict[str, bytes]:
    found = {path.name: path.read_bytes() for path in sorted(CORPUS.iterdir()) if path.is_file()}
    assert len(found) >= 20, f"the robots.txt corpus of {CORPUS} is missing"
    return {**found, **WRITTEN}


def paths_of(body: bytes) -> list[str]:
    """The fixed paths and, per rule of ``body``, its pattern filled in and a near miss."""
    paths = list(FIXED_PATHS)
    for raw in _PATTERN.findall(body)[:60]:
        pattern = raw.decode("utf-8", "replace")
        if not pattern.startswith("/"):
            continue
        filled = pattern.replace("*", "x").rstrip("$")
        paths += [filled, filled + "y", filled[:-1] or "/"]
    return paths


def state_of(body: bytes | None) -> OriginState:
    if body is None:  # a 404: every URL allowed
        return OriginState.initial(FetchOutcome(Access.UNAVAILABLE, ROBOTS_URL, 404), NOW, POLICY)
    return OriginState.initial(FetchOutcome(Access.PARSED, ROBOTS_URL, 200, body), NOW, POLICY)


def shortcut_cases(enforced: Enforced) -> Iterator[tuple[tuple[str, str | bytes], OriginState, str | bytes,
                                                           str, Callable[[str], bool], list[str]]]:
    """Per robots.txt file (and a 404) and agent that :func:`allowing` gives a test for: what names the
    case, the state, the agent, its product token, the test, and the URLs to ask."""
    for name, body in [*files().items(), ("404", None)]:
        state = state_of(body)
        for agent in AGENTS:
            test = allowing(state, agent, enforced)
            if test is not None:
                urls = [f"https://example.com{path}" for path in paths_of(body or b"")]
                yield (name, agent), state, agent, product_token(agent), test, urls


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_the_ruling_gives_the_reference_verdict_everywhere(setting):
    enforced = SETTINGS[setting]
    outcomes = 0
    for name, body in [*files().items(), ("404", None)]:
        state = state_of(body)
        urls = [f"https://example.com{path}" for path in paths_of(body or b"")]
        for agent in AGENTS:
            token = product_token(agent)
            for explain in (False, True):
                ruling = Ruling(state, None, agent, token, enforced, None, explain)
                assert ruling.plain is (allowing(state, agent, enforced) is not None), (name, agent)
                for url in urls:
                    want = reference_judge(url, agent, token, state, NOW, enforced, explain=explain)
                    assert ruling.judge(url, NOW)._asdict() == want._asdict(), (name, agent, url, explain)
                    outcomes += 1
    assert outcomes > 10000


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_a_plain_ruling_passes_exactly_where_the_reference_gives_a_bare_allowed_verdict(setting):
    enforced = SETTINGS[setting]
    shortcuts = outcomes = 0
    seen = set()
    for case, state, agent, token, test, urls in shortcut_cases(enforced):
        shortcuts += 1
        ruling = Ruling(state, None, agent, token, enforced)
        assert ruling.plain, case
        for url in urls:
            verdict = reference_judge(url, agent, token, state, NOW, enforced)
            bare = verdict == Judgement(Kind.ALLOWED, url, token, state)
            assert test(url) is bare, (case, url, verdict)
            assert ruling.passes(url) is bare, (case, url, verdict)
            seen.add(bare)
            outcomes += 1
    if setting == "tdmrep":  # an allowed verdict may carry more: judge() decides
        assert shortcuts == 0
    else:  # the shortcut applies to most files, and says both things
        assert shortcuts > len(AGENTS) * 20 and seen == {True, False}, (shortcuts, seen)
        assert outcomes > 5000


@pytest.mark.parametrize("setting", ["defaults", "purpose tokens", "many purpose tokens"])
def test_a_plain_ruling_tells_the_rule_the_reference_names_for_a_bare_allowed_verdict(setting):
    # What a teller of allowed verdicts (the ledger, a robotstxt_verdict receiver) is told for a request
    # the shortcut allows is the value judge() gives with explain: the Allow rule that allowed it, or none.
    # Its function decides by itself where a teller needs the rule: a Disallow rule where the test says False
    # (with purpose tokens, the rule of the purpose token's group that refuses it).
    enforced = SETTINGS[setting]
    named = none = refused = 0
    for case, state, agent, token, test, urls in shortcut_cases(enforced):
        rule_of = explaining(state, agent, enforced)
        for url in urls:
            rule = None if rule_of is None else rule_of(url)
            if not test(url):
                if rule_of is None:  # a group without Allow rules: the test alone decides
                    continue
                assert rule is not None and not rule.allow, (case, url)
                assert judge(url, agent, token, state, NOW, enforced).rule == rule, (case, url)
                refused += 1
                continue
            assert rule is None or rule.allow, (case, url)
            verdict = Ruling(state, None, agent, token, enforced, None, True).allowed(url)  # what a teller is told
            assert verdict.rule == rule, (case, url)
            assert type(verdict) is Judgement and verdict._asdict() == Judgement(
                Kind.ALLOWED, url, token, state, rule)._asdict() == judge(
                url, agent, token, state, NOW, enforced, explain=True)._asdict() == reference_judge(
                url, agent, token, state, NOW, enforced, explain=True)._asdict(), (case, url)
            named += rule is not None
            none += rule is None
    assert named > 100 and none > 1000 and refused > 100, (named, none, refused)


@pytest.mark.parametrize(("name", "agent", "setting", "path"), [
    ("usage", "MyBot/1.0", "defaults", "/page"),  # the agent's group has usage records: the verdict carries them
    ("usage", "Unlisted/3", "defaults", "/ai/x"),
    ("usage-star-only", "Unlisted/3", "usage deny", "/ai/x?train"),
    ("crawl-delay", "Unlisted/3", "crawl delay", "/page"),  # the '*' group's Crawl-delay, applied to the request
])
def test_no_shortcut_where_an_allowed_verdict_carries_more(name, agent, setting, path):
    state = state_of(WRITTEN[name])
    enforced = SETTINGS[setting]
    assert allowing(state, agent, enforced) is None
    assert not Ruling(state, None, agent, product_token(agent), enforced).plain
    verdict = judge(f"https://example.com{path}", agent, product_token(agent), state, NOW, enforced)
    assert verdict.kind is Kind.ALLOWED
    assert verdict != Judgement(Kind.ALLOWED, verdict.url, verdict.token, state)


def test_where_an_allowed_verdict_carries_nothing_more_the_shortcut_applies():
    # Crawl-delay not enforced: the group's Crawl-delay is not part of the verdict; the googlebot group
    # has no usage records, the '*' group's do not apply to it.
    assert Ruling(state_of(WRITTEN["crawl-delay"]), None, "Unlisted/3", "unlisted", SETTINGS["defaults"]).plain
    assert Ruling(state_of(WRITTEN["usage-star-only"]), None, b"Googlebot/2.1", "googlebot",
                  SETTINGS["defaults"]).plain
    # Without rules every URL is allowed.
    everything = Ruling(state_of(None), None, "MyBot/1.0", "mybot", SETTINGS["crawl delay"])
    assert everything.plain and everything.passes("https://example.com/anything")


def test_no_shortcut_for_a_state_that_may_hold_requests():
    state = OriginState.initial(FetchOutcome(Access.UNREACHABLE, ROBOTS_URL, 503, cause=Cause.TRANSIENT), NOW,
                                POLICY)
    assert not Ruling(state, None, "MyBot/1.0", "mybot", SETTINGS["defaults"]).plain
    assert judge("https://example.com/page", "MyBot/1.0", "mybot", state, NOW, SETTINGS["defaults"]).kind \
        is Kind.HELD
