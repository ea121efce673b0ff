"""What changed between two copies of a robots.txt for the crawl's agents: the group
that applies, the Allow/Disallow rules added and removed, the Crawl-delay, and the
usage-preference rules (``Content-Usage``, ``Content-Signal``) added and removed with
the categories they name. Line numbers are not compared (a rule that moved is the
same rule), nor what applies to other agents only. Pure Python.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from .product_tokens import product_token
from .robotstxt import RobotsTxt
from .usage_rules import RECORDS, read_statement, split_rule
from .usage_vocabulary import canonical

__all__ = ["AgentChange", "RobotsChange", "diff"]

#: Rules (and usage rules, and categories) listed at most per change and direction: a file
#: rewritten whole says so by its counts.
MAX_LISTED = 20
#: Characters listed at most of a rule's pattern, a usage rule or a category (a longer one is cut,
#: ending in ``...``): a line may be 16 KiB long.
MAX_TEXT = 100
#: Agents whose change :meth:`RobotsChange.as_dict` and ``str`` write in full at most (the others are
#: counted): with these, a change record stays within about 100 KiB whatever the file.
MAX_AGENTS = 8


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."


@dataclass(frozen=True)
class AgentChange:
    """What changed for one product token (``""``: an agent that names none, so only
    ``*`` applies). ``group`` is the token of the group that applies before and after
    (``"*"``, the agent's own, or ``""`` for none); rules are ``(directive, pattern)``
    pairs; ``crawl_delay`` the values before and after (None: unchanged); usage rules
    are written as in the file (``content-usage: /p/ train-ai=n``), ``categories``
    the labels the listed usage rules state a preference about (``train-ai``;
    ``ai-train`` included). Each list holds the first :data:`MAX_LISTED` (each text
    cut at :data:`MAX_TEXT` characters); the counts are of them all."""

    token: str
    group: tuple[str, str]
    added: tuple[tuple[str, str], ...]
    removed: tuple[tuple[str, str], ...]
    added_count: int
    removed_count: int
    crawl_delay: tuple[float | None, float | None] | None
    usage_added: tuple[str, ...]
    usage_removed: tuple[str, ...]
    categories: tuple[str, ...]
    usage_added_count: int = 0
    usage_removed_count: int = 0

    def __bool__(self) -> bool:
        return bool(self.group[0] != self.group[1] or self.added_count or self.removed_count
                    or self.crawl_delay is not None or self.usage_added_count or self.usage_removed_count)

    def as_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"token": self.token}
        if self.group[0] != self.group[1]:
            data["group"] = list(self.group)
        if self.added_count:
            data["added"] = [list(rule) for rule in self.added]
            data["added_count"] = self.added_count
        if self.removed_count:
            data["removed"] = [list(rule) for rule in self.removed]
            data["removed_count"] = self.removed_count
        if self.crawl_delay is not None:
            data["crawl_delay"] = list(self.crawl_delay)
        if self.usage_added_count:
            data["usage_added"] = list(self.usage_added)
            data["usage_added_count"] = self.usage_added_count
        if self.usage_removed_count:
            data["usage_removed"] = list(self.usage_removed)
            data["usage_removed_count"] = self.usage_removed_count
        if self.categories:
            data["categories"] = list(self.categories)
        return data

    def __str__(self) -> str:
        parts = []
        if self.group[0] != self.group[1]:
            parts.append(f"group {self.group[0] or 'none'!r} -> {self.group[1] or 'none'!r}")
        if self.added_count:
            parts.append(f"{self.added_count} rules added")
        if self.removed_count:
            parts.append(f"{self.removed_count} rules removed")
        if self.crawl_delay is not None:
            before, after = self.crawl_delay
            parts.append(f"Crawl-delay {'none' if before is None else f'{before:g}'} -> "
                         f"{'none' if after is None else f'{after:g}'}")
        if self.usage_added_count or self.usage_removed_count:
            shown = self.categories[:_CATEGORIES_SHOWN]
            more = len(self.categories) - len(shown)
            named = ", ".join(shown) + (f", and {more} more" if more > 0 else "")
            parts.append(f"usage preferences changed ({named})" if named else "usage preferences changed")
        return f"{self.token or '*'!r}: " + ", ".join(parts)


#: Categories the INFO line names at most per agent (the change record lists :data:`MAX_LISTED`).
_CATEGORIES_SHOWN = 5


@dataclass(frozen=True)
class RobotsChange:
    """What changed for each of the crawl's agents that something changed for."""

    agents: tuple[AgentChange, ...]

    def as_dict(self) -> dict[str, object]:
        """The change as the ledger's ``state`` record holds it: the first :data:`MAX_AGENTS`
        agents' changes, and (when there are more) how many there are."""
        data: dict[str, object] = {"agents": [change.as_dict() for change in self.agents[:MAX_AGENTS]]}
        if len(self.agents) > MAX_AGENTS:
            data["agents_count"] = len(self.agents)
        return data

    def __str__(self) -> str:
        text = "; ".join(str(change) for change in self.agents[:MAX_AGENTS])
        more = len(self.agents) - MAX_AGENTS
        return f"{text}; and {more} more agents" if more > 0 else text


def _rules(robots: RobotsTxt, agent: str | bytes | None) -> dict[tuple[str, str], None]:
    return dict.fromkeys((rule.directive, rule.pattern) for rule in robots.rules(agent))


def _usage(robots: RobotsTxt, agent: str | bytes | None) -> dict[str, str]:
    """The usage rules of the agent's group, ``"record: value"`` -> record."""
    return {f"{name}: {value}": name for name in RECORDS for value, _line in robots.records(agent, name)}


def _categories(rules: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for text, record in rules:
        _path, statement = split_rule(text.split(": ", 1)[1])
        values, _malformed = read_statement(record, statement)
        found.update(dict.fromkeys(canonical(label) for label in values))
    return tuple(sorted(_cut(label) for label in found)[:MAX_LISTED])


def diff_agent(old: RobotsTxt, new: RobotsTxt, agent: str | bytes | None) -> AgentChange:
    """What changed for one agent (false when nothing did): one pass over each
    copy's rules of its group; the statements of the listed usage rules only are read."""
    before, after = _rules(old, agent), _rules(new, agent)
    added = [rule for rule in after if rule not in before]
    removed = [rule for rule in before if rule not in after]
    delay = (old.crawl_delay(agent), new.crawl_delay(agent))
    usage_before, usage_after = _usage(old, agent), _usage(new, agent)
    usage_added = [(text, record) for text, record in usage_after.items() if text not in usage_before]
    usage_removed = [(text, record) for text, record in usage_before.items() if text not in usage_after]
    listed_added, listed_removed = usage_added[:MAX_LISTED], usage_removed[:MAX_LISTED]
    return AgentChange(
        product_token(agent), (old.group_agents(agent), new.group_agents(agent)),
        tuple((directive, _cut(pattern)) for directive, pattern in added[:MAX_LISTED]),
        tuple((directive, _cut(pattern)) for directive, pattern in removed[:MAX_LISTED]),
        len(added), len(removed), None if delay[0] == delay[1] else delay,
        tuple(_cut(text) for text, _ in listed_added), tuple(_cut(text) for text, _ in listed_removed),
        _categories([*listed_added, *listed_removed]), len(usage_added), len(usage_removed),
    )


def _key(token: str, names: frozenset[str]) -> str:
    """The token of the groups that apply to ``token`` in a file naming ``names`` (as
    :func:`~scrapy_rfc9309.core.syntax.select` picks them)."""
    return token if token and token in names else "*" if "*" in names else ""


def diff(old: RobotsTxt, new: RobotsTxt, agents: Iterable[str | bytes | None]) -> RobotsChange | None:
    """What changed from ``old`` to ``new`` for ``agents`` (by product token, each
    once), or None when nothing did for any of them.

    Everything an :class:`AgentChange` holds but its token depends only on the groups
    the token selects in each copy (its own, ``*``'s, or none): the tokens a file does
    not name share ``*``'s, so each pair of groups is compared once, whatever the
    number of agents (a file's tokens are read once per copy)."""
    old_names, new_names = frozenset(old.agents), frozenset(new.agents)
    seen: set[str] = set()
    compared: dict[tuple[str, str], AgentChange] = {}
    changes = []
    for agent in agents:
        token = product_token(agent)
        if token in seen:
            continue
        seen.add(token)
        pair = (_key(token, old_names), _key(token, new_names))
        change = compared.get(pair)
        if change is None:
            change = compared[pair] = diff_agent(old, new, agent)
        elif change.token != token:
            change = replace(change, token=token)
        if change:
            changes.append(change)
    return RobotsChange(tuple(changes)) if changes else None
