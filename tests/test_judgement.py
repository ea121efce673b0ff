"""The verdict as a value: :func:`scrapy_rfc9309.judgement.judge` and the other pure
constructors, for every kind, without a crawl (the clock passed in)."""

from __future__ import annotations

import pytest

from scrapy_rfc9309.core.documents import ROBOTS_TXT, TDMREP
from scrapy_rfc9309.core.matcher import Rule
from scrapy_rfc9309.core.robotstxt import Verdict
from scrapy_rfc9309.core.state import Access, Cause, FetchOutcome, OriginState, Policy
from scrapy_rfc9309.core.verdict import Enforced, Judgement, Kind, at_close, holding, invalid_meta, judge, not_judged

NOW = 1_000_000.0
POLICY = Policy(max_wait=60.0, max_wait_refused=10.0)
ROBOTS_URL = "https://example.com/robots.txt"
TDMREP_URL = "https://example.com/.well-known/tdmrep.json"
ROBOTS = (
    b"User-agent: *\n"  # 1
    b"Disallow: /private\n"  # 2
    b"Allow: /\n"  # 3
    b"Crawl-delay: 2\n"  # 4
    b"Content-Usage: /ai/ train-ai=n\n"  # 5
    b"\n"
    b"User-agent: otherbot\n"  # 7
    b"Disallow: /\n"  # 8
)
TDM = (b'[{"location": "/r/*", "tdm-reservation": 1, "tdm-policy": "https://example.com/p"},'
       b' {"location": "/", "tdm-reservation": 0}]')
AGENT = "MyBot/1.0"
TOKEN = "mybot"


def parsed(body: bytes = ROBOTS, document=ROBOTS_TXT, url: str = ROBOTS_URL) -> OriginState:
    return OriginState.initial(FetchOutcome(Access.PARSED, url, 200, body, document=document), NOW, POLICY)


def unreachable(cause: Cause = Cause.TRANSIENT, document=ROBOTS_TXT, since: float = NOW) -> OriginState:
    url = ROBOTS_URL if document is ROBOTS_TXT else TDMREP_URL
    return OriginState.initial(FetchOutcome(Access.UNREACHABLE, url, 503, cause=cause, document=document), since,
                               POLICY)


def unavailable(document=ROBOTS_TXT) -> OriginState:
    url = ROBOTS_URL if document is ROBOTS_TXT else TDMREP_URL
    return OriginState.initial(FetchOutcome(Access.UNAVAILABLE, url, 404, document=document), NOW, POLICY)


ENFORCED = Enforced(POLICY, ("train-ai",), tdmrep=True)


def run(path: str, robots: OriginState | None = None, tdm: OriginState | None = None,
        enforced: Enforced = ENFORCED, agent: str = AGENT, now: float = NOW, explain: bool = True,
        purposes: tuple[str, ...] | None = None) -> Judgement:
    return judge(f"https://example.com{path}", agent, TOKEN, robots or parsed(), now, enforced, tdm, explain=explain,
                 purposes=purposes)


def test_allowed_names_its_rule_and_the_states_it_rests_on():
    robots, tdm = parsed(), parsed(TDM, TDMREP, TDMREP_URL)
    judgement = run("/page", robots, tdm)
    assert judgement.kind is Kind.ALLOWED and judgement.kind.passes
    assert judgement.rule == Rule(True, "/", 3)
    assert judgement.robots is robots and judgement.tdm is tdm
    assert judgement.tdm_known and judgement.tdm_entry is not None and not judgement.tdm_entry.reserved
    assert judgement.token == TOKEN and judgement.usage is None
    assert str(judgement) == "allowed (Allow: /, line 3)"


def test_allowed_without_explain_leaves_the_allowing_rule_unresolved():
    assert run("/page", explain=False).rule is None
    # A refused request names its rule whatever explain says.
    assert run("/private/x", explain=False).rule == Rule(False, "/private", 2)


def test_robots_txt_itself_is_allowed():
    assert str(run("/robots.txt", parsed(b"User-agent: *\nDisallow: /\n"))) == "allowed (/robots.txt is always allowed)"


def test_unavailable_robots_txt_allows_everything():
    judgement = run("/private/x", unavailable())
    assert judgement.kind is Kind.ALLOWED and judgement.rule is None
    assert str(judgement) == "allowed (robots.txt unavailable: everything allowed)"


def test_forbidden_carries_the_verdict_of_the_group():
    judgement = run("/private/x")
    assert judgement.kind is Kind.FORBIDDEN and not judgement.kind.passes
    assert judgement.verdict == Verdict(False, Rule(False, "/private", 2), "*", "/private/x")
    assert str(judgement) == "disallowed (Disallow: /private, line 2)"
    other = run("/page", agent="OtherBot")
    assert other.kind is Kind.FORBIDDEN and other.verdict is not None and other.verdict.token == "otherbot"


def test_usage_denied_names_the_category_and_the_statement():
    judgement = run("/ai/x")
    assert judgement.kind is Kind.USAGE_DENIED
    assert judgement.category == "train-ai" and judgement.usage is not None and judgement.usage.denies("train-ai")
    assert str(judgement) == "usage denied (content-usage: /ai/ train-ai=n (line 5) denies train-ai)"
    # Not enforced: allowed, with the statement that applied.
    told = run("/ai/x", enforced=Enforced(POLICY))
    assert told.kind is Kind.ALLOWED and told.usage == judgement.usage


def test_tdm_reserved_when_a_reservation_is_enforced():
    tdm = parsed(TDM, TDMREP, TDMREP_URL)
    judgement = run("/r/x", tdm=tdm)
    assert judgement.kind is Kind.TDM_RESERVED
    assert judgement.tdm_entry is not None and judgement.tdm_entry.reserved and judgement.tdm_entry.index == 0
    assert judgement.category == "train-ai" and judgement.rule == Rule(True, "/", 3)
    assert str(judgement).startswith("reserved (TDM rights reserved (rule 0, location '/r/*'")
    # A category a reservation does not deny: told, not enforced.
    told = run("/r/x", tdm=tdm, enforced=Enforced(POLICY, ("search",), tdmrep=True))
    assert told.kind is Kind.ALLOWED and told.tdm_entry == judgement.tdm_entry
    # robots.txt decides first: a disallowed URL is forbidden whatever the tdmrep.json says.
    assert run("/private/r/x", tdm=tdm).kind is Kind.FORBIDDEN


def test_without_a_tdmrep_state_the_robots_txt_is_judged_alone():
    judgement = run("/r/x")
    assert judgement.kind is Kind.ALLOWED and judgement.tdm is None and not judgement.tdm_known


@pytest.mark.parametrize(("cause", "reason"), [
    (Cause.NO_HOST, "no_host"), (Cause.CANNOT_REQUEST, "cannot_request"),
])
def test_dropped_at_once_where_waiting_cannot_help(cause, reason):
    judgement = run("/page", unreachable(cause))
    assert judgement.kind is Kind.DROPPED and judgement.reason == reason
    assert judgement.document is ROBOTS_TXT and judgement.detail == "status 503"


def test_held_while_waiting_helps_then_dropped():
    state = unreachable(Cause.TRANSIENT)
    held = run("/page", state, now=NOW + 59)
    assert held.kind is Kind.HELD and held.kind.passes and held.document is ROBOTS_TXT
    assert str(held) == "held (robots.txt unreachable (status 503): complete disallow until a fetch succeeds)"
    dropped = run("/page", state, now=NOW + 60)
    assert dropped.kind is Kind.DROPPED and dropped.reason == "max_wait" and dropped.waited == 60
    refused = unreachable(Cause.REFUSED)
    assert run("/page", refused, now=NOW + 9).kind is Kind.HELD
    assert run("/page", refused, now=NOW + 10).waited == 10


def test_a_good_copy_stands_in_for_an_unreachable_robots_txt():
    stale = parsed().apply(FetchOutcome(Access.UNREACHABLE, ROBOTS_URL, 503), NOW + 10, POLICY)
    assert run("/private/x", stale, now=NOW + 1000).kind is Kind.FORBIDDEN
    assert run("/page", stale, now=NOW + 1000).kind is Kind.ALLOWED


def test_an_unreachable_tdmrep_json_holds_only_when_reservations_are_enforced():
    tdm = unreachable(Cause.TRANSIENT, TDMREP)
    held = run("/r/x", tdm=tdm)
    assert held.kind is Kind.HELD and held.document is TDMREP and held.tdm is tdm
    assert run("/r/x", tdm=tdm, now=NOW + 60).reason == "max_wait"
    free = run("/r/x", tdm=tdm, enforced=Enforced(POLICY, ("search",), tdmrep=True))
    assert free.kind is Kind.ALLOWED and not free.tdm_known and free.tdm_entry is None


def test_crawl_delay_only_when_enforced():
    assert run("/page").crawl_delay is None
    assert run("/page", enforced=Enforced(POLICY, crawl_delay=True)).crawl_delay == 2.0


def test_holding_alone_for_a_given_up_document():
    state = unreachable(Cause.TRANSIENT, TDMREP)
    assert holding("https://example.com/x", TOKEN, parsed(), ROBOTS_TXT, NOW, POLICY, None) is None
    dropped = holding("https://example.com/x", TOKEN, state, TDMREP, NOW + 61, POLICY, parsed())
    assert dropped is not None and dropped.kind is Kind.DROPPED and dropped.document is TDMREP


def test_the_verdicts_the_scrapy_layer_makes():
    assert not_judged("u", TOKEN) == Judgement(Kind.NOT_JUDGED, "u", TOKEN, reason="dont_obey_robotstxt")
    assert str(not_judged("u", TOKEN)) == "not judged (dont_obey_robotstxt)"
    bad = invalid_meta("u", TOKEN, "not a string")
    assert bad.kind is Kind.DROPPED and bad.reason == "invalid_meta" and not bad.kind.passes
    assert at_close("u", TOKEN, ROBOTS_TXT, persists=True).kind is Kind.REQUEUED
    closing = at_close("u", TOKEN, TDMREP, persists=False)
    assert closing.kind is Kind.DROPPED and closing.reason == "closing" and closing.document is TDMREP
    assert str(closing) == "dropped (tdmrep.json: held when the spider closed)"


def test_a_judgement_is_immutable_and_compares_by_value():
    judgement = run("/page")
    with pytest.raises(AttributeError):
        judgement.kind = Kind.FORBIDDEN  # type: ignore[misc]
    assert run("/page", judgement.robots) == judgement


PURPOSE_ROBOTS = (
    b"User-agent: *\n"  # 1
    b"Allow: /\n"  # 2
    b"\n"
    b"User-agent: GPTBot\n"  # 4
    b"Disallow: /articles/\n"  # 5
    b"\n"
    b"User-agent: CCBot\n"  # 7
    b"Disallow: /\n"  # 8
    b"Allow: /public/\n"  # 9
)


def test_a_purpose_token_whose_group_disallows_refuses_the_request():
    robots = parsed(PURPOSE_ROBOTS)
    enforced = Enforced(POLICY, purpose_tokens=("gptbot", "ccbot"))
    judgement = run("/articles/1", robots, enforced=enforced)
    assert judgement.kind is Kind.FORBIDDEN and judgement.purpose == "gptbot"
    assert judgement.rule == Rule(False, "/articles/", 5) and judgement.token == TOKEN
    assert judgement.verdict == Verdict(False, Rule(False, "/articles/", 5), "gptbot", "/articles/1")
    assert str(judgement) == "disallowed (Disallow: /articles/, line 5, in the group of purpose token 'gptbot')"
    # Every listed token's group must allow it: the second decides where the first allows.
    assert run("/other", robots, enforced=enforced).purpose == "ccbot"
    assert run("/public/x", robots, enforced=enforced).kind is Kind.ALLOWED
    # Without purpose tokens, or with the request's own list, only those groups count.
    assert run("/articles/1", robots).kind is Kind.ALLOWED
    assert run("/other", robots, enforced=enforced, purposes=("gptbot",)).kind is Kind.ALLOWED
    assert run("/other", robots, enforced=enforced, purposes=()).kind is Kind.ALLOWED


def test_the_own_group_decides_before_the_purpose_tokens():
    robots = parsed(PURPOSE_ROBOTS + b"\nUser-agent: MyBot\nDisallow: /mine/\n")
    judgement = run("/mine/x", robots, enforced=Enforced(POLICY, purpose_tokens=("ccbot",)))
    assert judgement.kind is Kind.FORBIDDEN and judgement.purpose is None
    assert judgement.rule is not None and judgement.rule.pattern == "/mine/"
