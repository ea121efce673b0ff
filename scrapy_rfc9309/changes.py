"""What changed between two copies of a robots.txt for the crawl's agents: the group
that applies, the Allow/Disallow rules added and removed, the Crawl-delay, and the
usage-preference rules (``Content-Usage``, ``Content-Signal``) added and removed with
the categories they name. Line numbers are not compared (a rule that moved is the
same rule), nor what applies to other agents only. Pure Python.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .agent import product_token
from .robotstxt import RobotsTxt
from .usage.robotstxt_records import RECORDS, read_statement, split_rule
from .usage.vocabulary import canonical

__all__ = ["AgentChange", "RobotsChange", "diff"]

#: Rules listed at most per change and direction (a file rewritten whole says so by its counts).
MAX_LISTED = 100


@dataclass(frozen=True)
class AgentChange:
    """What changed for one product token (``""``: an agent that names none, so only
    ``*`` applies). ``group`` is the token of the group that applies before and after
    (``"*"``, the agent's own, or ``""`` for none); rules are ``(directive, pattern)``
    pairs; ``crawl_delay`` the values before and after (None: unchanged); usage rules
    are written as in the file (``content-usage: /p/ train-ai=n``), ``categories``
    the labels they state a preference about (``train-ai``; ``ai-train`` included)."""

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

    def __bool__(self) -> bool:
        return bool(self.group[0] != self.group[1] or self.added_count or self.removed_count
                    or self.crawl_delay is not None or self.usage_added or self.usage_removed)

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
        if self.usage_added:
            data["usage_added"] = list(self.usage_added)
        if self.usage_removed:
            data["usage_removed"] = list(self.usage_removed)
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
        if self.usage_added or self.usage_removed:
            named = f" ({', '.join(self.categories)})" if self.categories else ""
            parts.append(f"usage preferences changed{named}")
        return f"{self.token or '*'!r}: " + ", ".join(parts)


@dataclass(frozen=True)
class RobotsChange:
    """What changed for each of the crawl's agents that something changed for."""

    agents: tuple[AgentChange, ...]

    def as_dict(self) -> dict[str, object]:
        return {"agents": [change.as_dict() for change in self.agents]}

    def __str__(self) -> str:
        return "; ".join(str(change) for change in self.agents)


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
    return tuple(sorted(found))


def diff_agent(old: RobotsTxt, new: RobotsTxt, agent: str | bytes | None) -> AgentChange:
    """What changed for one agent (false when nothing did)."""
    before, after = _rules(old, agent), _rules(new, agent)
    added = [rule for rule in after if rule not in before]
    removed = [rule for rule in before if rule not in after]
    delay = (old.crawl_delay(agent), new.crawl_delay(agent))
    usage_before, usage_after = _usage(old, agent), _usage(new, agent)
    usage_added = {text: record for text, record in usage_after.items() if text not in usage_before}
    usage_removed = {text: record for text, record in usage_before.items() if text not in usage_after}
    return AgentChange(
        product_token(agent), (old.group_agents(agent), new.group_agents(agent)),
        tuple(added[:MAX_LISTED]), tuple(removed[:MAX_LISTED]), len(added), len(removed),
        None if delay[0] == delay[1] else delay, tuple(usage_added), tuple(usage_removed),
        _categories([*usage_added.items(), *usage_removed.items()]),
    )


def diff(old: RobotsTxt, new: RobotsTxt, agents: Iterable[str | bytes | None]) -> RobotsChange | None:
    """What changed from ``old`` to ``new`` for ``agents`` (by product token, each
    once), or None when nothing did for any of them."""
    seen: set[str] = set()
    changes = []
    for agent in agents:
        token = product_token(agent)
        if token in seen:
            continue
        seen.add(token)
        change = diff_agent(old, new, agent)
        if change:
            changes.append(change)
    return RobotsChange(tuple(changes)) if changes else None
