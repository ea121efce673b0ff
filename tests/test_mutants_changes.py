"""Change news (scrapy_rfc9309/core/changes.py): agents whose groups are the same share one comparison
but each change names its own agent's token, and a long pattern is listed cut at MAX_TEXT characters.
Kills mutants the change tests leave alive (docs/development.md, "Mutation testing")."""

from __future__ import annotations

import scrapy_rfc9309
from scrapy_rfc9309.core.changes import MAX_TEXT, diff


def test_agents_of_one_group_each_get_a_change_under_their_own_token() -> None:
    old = scrapy_rfc9309.parse("User-agent: *\nDisallow: /a\n")
    new = scrapy_rfc9309.parse("User-agent: *\nDisallow: /b\n")
    change = diff(old, new, ["MyBot/1.0", "OtherBot/2.0", "MyBot/3.0"])
    assert change is not None
    assert [agent.token for agent in change.agents] == ["mybot", "otherbot"]
    same = ((("Disallow", "/b"),), (("Disallow", "/a"),))
    assert [(agent.added, agent.removed) for agent in change.agents] == [same, same]


def test_a_long_pattern_is_listed_cut() -> None:
    long = "/" + "x" * (2 * MAX_TEXT)
    change = diff(scrapy_rfc9309.parse("User-agent: *\nDisallow: /a\n"),
                  scrapy_rfc9309.parse(f"User-agent: *\nDisallow: /a\nDisallow: {long}\n"), ["MyBot/1.0"])
    assert change is not None
    assert change.agents[0].added == (("Disallow", long[:MAX_TEXT] + "..."),)


def test_a_change_of_group_is_said() -> None:
    old = scrapy_rfc9309.parse("User-agent: *\nDisallow: /a\n")
    new = scrapy_rfc9309.parse("User-agent: *\nDisallow: /a\n\nUser-agent: MyBot\nDisallow: /a\n")
    change = diff(old, new, ["MyBot/1.0"])
    assert change is not None
    assert str(change) == "'mybot': group '*' -> 'mybot'"
    assert change.as_dict()["agents"] == [{"token": "mybot", "group": ["*", "mybot"]}]
