"""The verdict (scrapy_rfc9309/core/verdict.py) where the judgement tests left mutants alive: the fast
``allowed`` constructor is ``Judgement(Kind.ALLOWED, ...)``, ``judge`` leaves an allowing rule unresolved
unless asked, a ruling's test and rule agree with ``judge``, and the verdict at close of a request whose
document is unreachable carries its last fetch and how long it waited (docs/development.md, "Mutation testing")."""

from __future__ import annotations

import pytest
from test_judgement import AGENT, ENFORCED, NOW, POLICY, PURPOSE_ROBOTS, TOKEN, parsed, unavailable, unreachable

from scrapy_rfc9309.core.documents import ROBOTS_TXT, TDMREP
from scrapy_rfc9309.core.matcher import Rule
from scrapy_rfc9309.core.state import Access, Cause, FetchOutcome
from scrapy_rfc9309.core.verdict import Enforced, Judgement, Kind, Ruling, allowed, at_close, judge


def test_the_fast_allowed_verdict_is_the_allowed_judgement() -> None:
    robots = parsed()
    rule = Rule(True, "/", 3)
    fast = allowed("https://example.com/page", TOKEN, robots, rule)
    assert fast == Judgement(Kind.ALLOWED, "https://example.com/page", TOKEN, robots, rule)
    assert type(fast) is Judgement and fast.kind.passes and str(fast) == "allowed (Allow: /, line 3)"


def test_judge_resolves_the_allowing_rule_only_when_asked() -> None:
    robots, url = parsed(), "https://example.com/page"
    assert judge(url, AGENT, TOKEN, robots, NOW, ENFORCED).rule is None
    assert judge(url, AGENT, TOKEN, robots, NOW, ENFORCED, explain=True).rule == Rule(True, "/", 3)


def test_the_verdict_at_close_of_a_request_held_for_an_unreachable_document() -> None:
    state = unreachable(since=NOW - 40)
    verdict = at_close("u", TOKEN, ROBOTS_TXT, False, "idle", state, NOW)
    assert (verdict.kind, verdict.reason, verdict.robots, verdict.tdm) == (Kind.DROPPED, "idle", state, None)
    assert verdict.waited == 40 and verdict.detail == state.detail and verdict.detail
    tdm = unreachable(document=TDMREP, since=NOW - 5)
    verdict = at_close("u", TOKEN, TDMREP, True, "closing", tdm, NOW)
    assert (verdict.kind, verdict.robots, verdict.tdm, verdict.waited) == (Kind.REQUEUED, None, tdm, 5)
    # A state that is not unreachable says nothing of a last fetch.
    for other in (parsed(), unavailable()):
        verdict = at_close("u", TOKEN, ROBOTS_TXT, False, "closing", other, NOW)
        assert verdict == Judgement(Kind.DROPPED, "u", TOKEN, document=ROBOTS_TXT, reason="closing")


def test_an_allowed_verdict_no_rule_matched_says_so() -> None:
    robots = parsed(b"User-agent: *\nDisallow: /private\n")
    for path in ("/", "/page", "/a"):  # paths that sort before /robots.txt
        verdict = judge(f"https://example.com{path}", AGENT, TOKEN, robots, NOW, ENFORCED, explain=True)
        assert str(verdict) == "allowed (no rule matched)"
    verdict = judge("https://example.com/robots.txt", AGENT, TOKEN, robots, NOW, ENFORCED, explain=True)
    assert str(verdict) == "allowed (/robots.txt is always allowed)"


@pytest.mark.parametrize("purpose_tokens", [(), ("gptbot",), ("gptbot", "ccbot")])
def test_a_plain_rulings_test_agrees_with_judge(purpose_tokens: tuple[str, ...]) -> None:
    """A plain ruling's ``passes`` says True exactly where judge gives the bare allowed verdict."""
    robots = parsed(PURPOSE_ROBOTS)
    enforced = Enforced(POLICY, purpose_tokens=purpose_tokens)
    ruling = Ruling(robots, None, AGENT, TOKEN, enforced)
    assert ruling.plain
    test = ruling.passes
    for path in ("/", "/articles/1", "/public/x", "/other", "/robots.txt"):
        url = f"https://example.com{path}"
        verdict = judge(url, AGENT, TOKEN, robots, NOW, enforced)
        assert test(url) == (verdict == allowed(url, TOKEN, robots, None)), (path, verdict)


@pytest.mark.parametrize("body", [PURPOSE_ROBOTS, b"User-agent: *\nDisallow: /private\nAllow: /private/open\n",
                                  b"User-agent: *\nDisallow: /private\n"])
def test_a_rulings_rule_of_names_the_rule_judge_names(body: bytes) -> None:
    """None for a group without an Allow rule (an allowed URL is allowed by no rule); else, for each
    URL the ruling passes, the rule judge() names with explain."""
    robots = parsed(body)
    enforced = Enforced(POLICY)
    ruling = Ruling(robots, None, AGENT, TOKEN, enforced, explain=True)
    rule_of = ruling.rule_of
    if b"Allow:" not in body.split(b"User-agent: GPTBot")[0]:
        assert rule_of is None
        return
    assert rule_of is not None
    test = ruling.passes
    for path in ("/", "/articles/1", "/private/x", "/private/open/1", "/other"):
        url = f"https://example.com{path}"
        if test(url):
            assert rule_of(url) == judge(url, AGENT, TOKEN, robots, NOW, enforced, explain=True).rule, path


@pytest.mark.parametrize("purpose_tokens", [None, (), ("gptbot", "ccbot")])
def test_a_rulings_rule_of_with_purpose_tokens_names_the_allowing_rule(purpose_tokens: tuple[str, ...] | None) -> None:
    """With purpose tokens, a URL the ruling passes is named by the agent's Allow rule; one a purpose
    group refuses is disallowed, naming that group's Disallow rule."""
    robots = parsed(PURPOSE_ROBOTS)
    enforced = Enforced(POLICY, purpose_tokens=purpose_tokens or ())
    ruling = Ruling(robots, None, AGENT, TOKEN, enforced, explain=True)
    assert ruling.rule_of is not None
    refused = {"/": 8, "/articles/1": 5, "/other": 8} if purpose_tokens else {}
    for path in ("/", "/articles/1", "/public/x", "/other"):
        url = f"https://example.com{path}"
        verdict = judge(url, AGENT, TOKEN, robots, NOW, enforced, explain=True)
        if path in refused:
            assert not ruling.passes(url) and verdict.kind is Kind.FORBIDDEN, path
            assert verdict.rule is not None and not verdict.rule.allow and verdict.rule.line == refused[path], path
        else:
            assert ruling.passes(url), path
            assert ruling.rule_of(url) == verdict.rule == Rule(True, "/", 2), path


def test_the_wait_at_close_counts_from_the_first_failed_fetch() -> None:
    """An origin unreachable since ``since`` and fetched again (in vain) since: the wait is from the first failure."""
    since = NOW - 600_000
    state = unreachable(since=since)
    state = state.apply(FetchOutcome(Access.UNREACHABLE, "https://example.com/robots.txt", 503, cause=Cause.TRANSIENT),
                        NOW - 10, POLICY)
    assert state.unreachable_since == since and state.fetched_at == NOW - 10
    verdict = at_close("u", TOKEN, ROBOTS_TXT, False, "idle", state, NOW)
    assert verdict.waited == 600_000
