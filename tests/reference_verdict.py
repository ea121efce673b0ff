"""A test oracle: :func:`judge`, :func:`allowing` and :func:`explaining` as the package had them
before :class:`scrapy_rfc9309.core.verdict.Ruling` took their place, copied verbatim (test code only).
``tests/test_allowing.py`` compares the Ruling's answers with theirs over a corpus of robots.txt files."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy_rfc9309.core.documents import ROBOTS_TXT, TDMREP
from scrapy_rfc9309.core.state import Access, Decision, OriginState
from scrapy_rfc9309.core.verdict import Enforced, Judgement, Kind, holding

if TYPE_CHECKING:
    from scrapy_rfc9309.core.matcher import Rule

__all__ = ["allowing", "explaining", "judge"]


def judge(url: str, agent: str | bytes, token: str, robots: OriginState, now: float, enforced: Enforced,
          tdm: OriginState | None = None, *, explain: bool = False,
          purposes: tuple[str, ...] | None = None) -> Judgement:
    """The verdict on a request for ``url`` by ``agent`` (whose product token is
    ``token``), from its origin's robots.txt state and, with ``enforced.tdmrep``,
    its tdmrep.json state ``tdm`` (None: not known yet; the robots.txt is judged
    alone, and a request it allows is not final).

    An unreachable document without a good copy holds the request (robots.txt
    always; tdmrep.json when reservations are enforced), or drops it once waiting
    cannot help. ``explain``: resolve the rule that allowed an allowed request too
    (it costs a second look-up; the ledger and the command ask for it); a refused
    request always names its rule. A request its own token's group allows must be
    allowed by the group of each purpose token too (``purposes``, else
    ``enforced.purpose_tokens``): the first that disallows it decides (``purpose``)."""
    policy = enforced.policy
    if robots.access is Access.UNREACHABLE:  # only then can the robots.txt hold the request
        held = holding(url, token, robots, ROBOTS_TXT, now, policy, robots)
        if held is not None:
            return held
    parsed = robots.robots
    rule = None
    usage = None
    delay = None
    if parsed is not None:
        if not parsed.allowed(url, agent):
            verdict = parsed.verdict(url, agent)
            return Judgement(Kind.FORBIDDEN, url, token, robots, verdict.rule, group=verdict.token,
                             path=verdict.path)
        for purpose, matcher in parsed.purpose_groups(agent, enforced.purpose_tokens if purposes is None
                                                      else purposes):
            if not matcher.allowed(url):
                verdict = parsed.verdict(url, purpose)
                return Judgement(Kind.FORBIDDEN, url, token, robots, verdict.rule, group=verdict.token,
                                 path=verdict.path, purpose=purpose)
        if explain:
            rule = parsed.deciding_rule(url, agent)
        if enforced.crawl_delay:
            delay = parsed.crawl_delay(agent)
        if parsed.has_usage(agent):
            usage = parsed.usage(url, agent) or None
            if usage is not None:
                for category in enforced.usage_deny:
                    if usage.denies(category):
                        return Judgement(Kind.USAGE_DENIED, url, token, robots, rule, usage, category=category)
    if not enforced.tdmrep or tdm is None:
        return Judgement(Kind.ALLOWED, url, token, robots, rule, usage, crawl_delay=delay)
    tdm_deny = enforced.tdm_deny
    if tdm_deny:
        held = holding(url, token, tdm, TDMREP, now, policy, robots)
        if held is not None:
            return held
    elif tdm.decision(now, policy) is Decision.HOLD:  # not enforced: nothing known, the request goes on
        return Judgement(Kind.ALLOWED, url, token, robots, rule, usage, tdm, crawl_delay=delay)
    tdmrep = tdm.tdmrep
    entry = None if tdmrep is None else tdmrep.entry_for(url)
    if entry is not None and entry.reserved and tdm_deny:
        return Judgement(Kind.TDM_RESERVED, url, token, robots, rule, usage, tdm, entry,
                         category=", ".join(tdm_deny), tdm_known=True)
    return Judgement(Kind.ALLOWED, url, token, robots, rule, usage, tdm, entry, crawl_delay=delay, tdm_known=True)


def allowing(robots: OriginState, agent: str | bytes, enforced: Enforced) -> Callable[[str], bool] | None:
    """:func:`judge` specialised to one robots.txt state and one agent, for the
    common request: one of ``enforced``'s own product tokens (no ``purposes`` of its
    own), judged without ``explain`` and without a tdmrep.json. A function of the URL,
    True where :func:`judge` gives a bare ``Judgement(Kind.ALLOWED, url, token, robots)``
    (nothing but the kind to act on or tell), False where :func:`judge` must be asked
    (a refused request; its verdict names its rule); None when it must always be
    asked: the state may hold requests, or an allowed verdict carries more (a usage
    preference, a Crawl-delay, a tdmrep.json rule). With purpose tokens, True where
    the group of each of them allows the URL too (see
    :meth:`~scrapy_rfc9309.RobotsTxt.purpose_groups`: only the groups other than the
    agent's are asked, however many tokens select them)."""
    if robots.access is Access.UNREACHABLE or enforced.tdmrep:
        return None
    parsed = robots.robots
    if parsed is None:
        return _everything
    if parsed.has_usage(agent) or (enforced.crawl_delay and parsed.crawl_delay(agent) is not None):
        return None
    test = parsed.allower(agent)
    groups = parsed.purpose_groups(agent, enforced.purpose_tokens) if enforced.purpose_tokens else ()
    if not groups:
        return test
    tests = (test, *(matcher.allowed for _purpose, matcher in groups))
    return lambda url: all(allows(url) for allows in tests)


def _everything(url: str) -> bool:
    """What :func:`allowing` gives for a state without rules: every URL allowed."""
    return True


def explaining(robots: OriginState, agent: str | bytes,
               enforced: Enforced | None = None) -> Callable[[str], Rule | None] | None:
    """The rule that decides a URL (None: no rule matched, it is allowed): for a URL
    that :func:`allowing` says True for, the rule :func:`judge` names with
    ``explain``, and a Disallow rule for one it says False for (with ``enforced``'s
    purpose tokens, the rule of a purpose token's group that refuses it). None when
    the group has no Allow rule: a URL it allows is allowed by no rule, and there is
    nothing to name."""
    parsed = robots.robots
    if parsed is None or not any(rule.allow for rule in parsed.rules(agent)):
        return None
    decider = parsed.decider(agent)
    groups = parsed.purpose_groups(agent, enforced.purpose_tokens) if enforced and enforced.purpose_tokens else ()
    if not groups:
        return decider
    refusers = tuple(matcher.url_rule for _purpose, matcher in groups)

    def rule_of(url: str) -> Rule | None:
        rule = decider(url)
        if rule is None or rule.allow:
            for refuser in refusers:
                refused = refuser(url)
                if refused is not None and not refused.allow:
                    return refused
        return rule

    return rule_of
