"""The groups of a robots.txt that apply to an agent (RFC 9309, 2.2.1), merged, and the
choice of them per agent, built on an agent's first question and remembered."""

from __future__ import annotations

from array import array
from collections.abc import Callable

from .caches import BoundedDict
from .matcher import compile_rules
from .product_tokens import product_token
from .robots_body import (
    _AS_READ,
    _COMPACT_FROM,
    _COMPRESSED,
    _KEEP_BODY,
    _NORMALIZED,
    _REDUCED,
    _SPEEDUPS,
    RobotsBody,
)
from .syntax import GROUP_RECORDS, SelectedGroup, first_question, records_text, select, select_records
from .usage_rules import UsageIndex

__all__ = ["GroupSelector", "MergedGroup"]

#: Records that apply to the user-agent lines of their block only, not to the whole group.
BLOCK_RECORDS = frozenset({"crawl-delay"})
#: Group records that are usage preferences (see :mod:`.usage`).
USAGE_RECORDS = frozenset({"content-usage", "content-signal"})
#: Agents and tokens remembered per file (the oldest quarter dropped when full), and
#: tokens of the shared empty groups.
_MAX_MEMO = 64


def _allow_all(url: str | bytes) -> bool:
    return True


class MergedGroup:
    """All groups that apply to one product token, merged (RFC 9309, 2.2.1): the
    compiled rules, and the group records that apply (see :meth:`~scrapy_rfc9309.RobotsTxt.records`)."""

    __slots__ = ("crawl_delay", "matcher", "records", "token", "usage_index", "usage_records")

    def __init__(self, token: str, groups: list[SelectedGroup], speedups: bool = True) -> None:
        self.token = token
        #: The usage records indexed by path (made on the first question about one).
        self.usage_index: UsageIndex | None = None
        if len(groups) == 1:
            # The codes as selected (octets): the C matcher reads them as they are.
            patterns, codes, special, raw_records = groups[0]
            self.matcher = compile_rules(patterns, codes, speedups, special)
            named = [record for record in raw_records if _applies(record, token)] if raw_records else raw_records
        else:
            patterns = []
            all_codes = array("I")
            indices: list[int] = []
            named = []
            for group_patterns, codes, special, raw_records in groups:
                offset = len(patterns)
                indices += [offset + index for index in array("I", special)]
                patterns += group_patterns
                all_codes.frombytes(codes)
                named += [record for record in raw_records if _applies(record, token)]
            self.matcher = compile_rules(patterns, all_codes, speedups, indices)
        #: ``(name, value, line)`` of the records that apply, in file order.
        self.records: list[tuple[str, str, int]] | None = None
        self.usage_records: list[tuple[str, str, int]] | tuple[()] = ()
        self.crawl_delay: float | None = None
        if named:  # most groups have no records: nothing more to make
            self._set_records(named)

    def _set_records(self, named: list[tuple[int, str, int, bool, bool]]) -> None:
        self.records = [(GROUP_RECORDS[kind], value, line) for kind, value, line, _, _ in named]
        self.usage_records = [record for record in self.records if record[0] in USAGE_RECORDS] or ()
        delays = []
        for name, value, _line in self.records:
            if name == "crawl-delay":
                try:
                    delay = float(value.split()[0]) if value else -1.0
                except ValueError:
                    continue
                if 0 <= delay < float("inf"):
                    delays.append(delay)
        self.crawl_delay = max(delays) if delays else None


#: The merged groups without rules or records, by token (see :func:`_empty_group`).
_EMPTY_GROUPS: BoundedDict[str, MergedGroup] = BoundedDict(_MAX_MEMO)


def _empty_group(token: str) -> MergedGroup:
    """The merged group of ``token`` without rules or records: one shared by every
    file (it holds nothing of a file; many have no group for an agent, or an empty
    one), for the tokens of the last few dozen such groups asked for."""
    merged = _EMPTY_GROUPS.get(token)
    if merged is None:
        merged = _EMPTY_GROUPS[token] = MergedGroup(token, [])
    return merged


def _applies(record: tuple[int, str, int, bool, bool], token: str) -> bool:
    """Whether a group record applies to the token that selected its group: a
    Crawl-delay only when its block names the token (``*`` for the global group)."""
    kind, _value, _line, names_token, names_star = record
    if GROUP_RECORDS[kind] not in BLOCK_RECORDS:
        return True
    return names_star if token == "*" else names_token


#: Stands for "no agent asked yet" (``None`` is an agent: it names no token).
_NO_AGENT = object()


class GroupSelector(RobotsBody):
    """The merged group of each agent asked about: the last one's at hand, the others'
    in a memo (from the second agent on), built from the file's records on an agent's
    first question. The file's first question also reduces it to its records (see
    :class:`~scrapy_rfc9309.core.robots_body.RobotsBody`)."""

    __slots__ = ("_agent", "_allowed", "_group", "_memo")

    def _forget_groups(self) -> None:
        """No agent asked yet."""
        self._agent: object = _NO_AGENT  # the last agent asked about, and its merged group
        self._group: MergedGroup | None = None
        self._memo: BoundedDict[str | bytes | None, MergedGroup] | None = None
        self._allowed: Callable[[str | bytes], bool] = _allow_all

    def _group_for(self, user_agent: str | bytes | None) -> MergedGroup:
        if user_agent is self._agent or user_agent == self._agent:
            return self._group  # type: ignore[return-value]
        memo = self._memo
        merged = None if memo is None else memo.get(user_agent)
        if merged is None:
            merged = self._merged_for(user_agent)
        self._agent, self._group, self._allowed = user_agent, merged, merged.matcher.allowed
        return merged

    def _merged_for(self, user_agent: str | bytes | None) -> MergedGroup:
        """The merged group for an agent not asked about last: found by its
        product token, or built. The memo starts with a second agent; it maps
        agents, their tokens and the tokens of merged groups (``"*"``) to them,
        which never disagree: an agent string made of token characters names the
        token it spells."""
        token = product_token(user_agent)
        memo = self._memo
        last = self._group
        merged = None if memo is None else memo.get(token)
        if merged is None:
            star = None if memo is None else memo.get("*")
            if star is None and last is not None and last.token == "*":
                star = last
            # The groups of "*" are not read again when they are built already.
            flags = self._flags
            # The first question reduces the file to its records, without the
            # rules of the group it builds (a file reduced as it was read, 128 KiB
            # or more, has its records only already: they lose those rules, and
            # are compressed); a file that keeps its body compresses it.
            reduce = not flags & (_COMPRESSED if flags & _KEEP_BODY else _REDUCED) or flags & _AS_READ
            records: str | bytes | None = None
            speedups = bool(flags & _SPEEDUPS)
            if star is None and not flags & (_COMPRESSED | _NORMALIZED | _REDUCED | _KEEP_BODY):
                # A first question on the bytes as fetched; in C one call, no Python
                # between its steps (each costs a small file's first question more
                # than the step itself once other work has left the caches cold).
                key, selected, records = first_question(self._source, token, speedups)
            elif reduce and not flags & _KEEP_BODY and not speedups:
                # In Python one scan of the text gives the groups and the records.
                # In C the groups are selected, then the records written: one pass
                # for both would keep every record's place while it builds the
                # groups, which leaves holes in the heap and gains nothing on a
                # first verdict (benchmarks/README.md, issue 42).
                key, selected, records = select_records(self._text(), token)
            else:
                text = self._text()
                key, selected = select(text, token, speedups, star=star is None)
                if reduce and not flags & _KEEP_BODY:
                    # The rules' codes as selected (octets), joined only for several groups.
                    omit = selected[0][1] if len(selected) == 1 else b"".join([group[1] for group in selected])
                    records = records_text(text, speedups, None, omit)
            if len(selected) == 1:  # most files: one group, no generator made
                has_rules = bool(selected[0][0])
                has_any = has_rules or bool(selected[0][3])
            else:
                has_rules = any(group[0] for group in selected)
                has_any = has_rules or any(group[3] for group in selected)
            if key == "*" and star is not None:
                merged = star
            elif last is not None and last.token == key:
                merged = last  # a token without groups of its own: "*"'s apply
            elif memo is not None and key in memo:
                merged = memo[key]
            elif has_any:
                merged = MergedGroup(key, selected, speedups)
            else:
                merged = _empty_group(key)
            if records is not None:
                self._keep(records, merged if has_rules else None)
            elif reduce and len(self._source) >= _COMPACT_FROM:
                self._compact()  # a file that keeps its body: compressed
        if last is not None:
            if memo is None:
                memo = self._memo = BoundedDict(_MAX_MEMO)
            memo[self._agent] = memo[last.token] = last  # type: ignore[index]
            memo[user_agent] = memo[token] = memo[merged.token] = merged
        return merged
