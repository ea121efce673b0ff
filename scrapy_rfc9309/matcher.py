"""The compiled matcher of one merged group (RFC 9309, 2.2.2, 2.2.3 and 5.2).

A group's rules are compiled once into:

* a dict of literal rules (no ``*``, no trailing ``$``) keyed by their canonical
  text, probed once per distinct rule length (the longest literal that prefixes
  the path wins);
* wildcard rules sorted by priority, each a regular expression that cannot
  backtrack: every ``*`` but the last is an atomic lazy group, which commits to the
  leftmost occurrence of the next literal piece (always the right choice for glob
  patterns), so a decision is linear in the URL length per rule.

Hot matchers are promoted to a single regular expression over the whole URL (a
trie of the literal rules, whose first match is the longest, plus one lookahead
that tells whether any wildcard rule could win), so that a typical decision is one
call into the regex engine. Both tiers give the same answers; the tests check it.
"""

from __future__ import annotations

import re
import sys
from typing import NamedTuple

from .urlnorm import canonical_path, path_of

__all__ = ["Matcher", "Rule", "compile_pattern"]

#: Decisions a matcher makes before it is promoted to the single-regex tier.
PROMOTE_AFTER = 32
#: Limits for building the single-regex tier (its compile cost grows with them).
_FAST_MAX_LITERALS = 4000
_FAST_MAX_CHARS = 200_000
_FAST_MAX_WILDCARDS = 64
_FAST_MAX_DEPTH = 60
_HAS_ATOMIC = sys.version_info >= (3, 11)


class Rule(NamedTuple):
    """A rule as written in the file."""

    allow: bool
    pattern: str
    line: int

    @property
    def directive(self) -> str:
        return "Allow" if self.allow else "Disallow"

    def __str__(self) -> str:
        return f"{self.directive}: {self.pattern}, line {self.line}"


class _Wildcard(NamedTuple):
    priority: int
    allow: bool
    rule: Rule
    prefix: str
    source: str
    match: object  # compiled pattern's ``match`` method


def compile_pattern(pattern: str) -> tuple[list[str], bool]:
    """Split a pattern at its ``*`` wildcards and trailing ``$`` anchor and bring
    each literal piece to canonical form (``%2A`` and ``%24`` become literal
    ``*`` and ``$``). Returns ``(pieces, anchored)``."""
    anchored = pattern.endswith("$")
    if anchored:
        pattern = pattern[:-1]
    pieces = []
    in_query = False
    for raw in pattern.split("*"):
        pieces.append(canonical_path(raw, in_query))
        in_query = in_query or "?" in raw
    return pieces, anchored


def _regex_source(pieces: list[str], anchored: bool) -> str:
    escape = re.escape
    src = [escape(pieces[0])]
    for number, middle in enumerate(pieces[1:-1]):
        if _HAS_ATOMIC:
            src.append(f"(?>.*?{escape(middle)})")
        else:  # Python 3.10: a lookahead is atomic too
            src.append(f"(?=(?P<a{number}>.*?{escape(middle)}))(?P=a{number})")
    if len(pieces) > 1:
        src.append(f".*{escape(pieces[-1])}" if anchored else f".*?{escape(pieces[-1])}")
    if anchored:
        src.append(r"\Z")
    return "".join(src)


class Matcher:
    """Decides URLs for one merged group."""

    __slots__ = ("allowed", "_literals", "_lengths", "_wildcards", "_uses", "_fast", "_lit_allow")

    def __init__(self, rules: list[tuple[bool, str, int]]) -> None:
        literals: dict[str, Rule] = {}
        wildcards: list[_Wildcard] = []
        for allow, pattern, line in rules:
            rule = Rule(allow, pattern, line)
            pieces, anchored = compile_pattern(pattern)
            if len(pieces) == 1 and not anchored:
                key = pieces[0]
                if key and ((prev := literals.get(key)) is None or (allow and not prev.allow)):
                    literals[key] = rule
                continue
            source = _regex_source(pieces, anchored)
            # Priority: the length of the canonical pattern, wildcards and anchor included.
            priority = sum(map(len, pieces)) + len(pieces) - 1 + anchored
            match = re.compile(source, re.S).match
            wildcards.append(_Wildcard(priority, allow, rule, pieces[0], source, match))
        wildcards.sort(key=lambda w: (-w.priority, not w.allow))
        self._literals = literals
        self._lengths = sorted({len(k) for k in literals}, reverse=True)
        self._wildcards = wildcards
        self._uses = 0
        self._fast: object = None
        self._lit_allow: dict[str, bool] = {}
        if not literals and not wildcards:
            self.allowed = _allow_all
        else:
            self.allowed = self._counting_allowed

    # -- exact tier -------------------------------------------------------------
    def best_rule(self, path: str) -> Rule | None:
        """The deciding rule for a canonical path, or None when no rule matches."""
        best: Rule | None = None
        best_priority = -1
        size = len(path)
        literals = self._literals
        for length in self._lengths:
            if length <= size:
                hit = literals.get(path[:length])
                if hit is not None:
                    best, best_priority = hit, length
                    break
        for wildcard in self._wildcards:
            if wildcard.priority < best_priority:
                break
            if wildcard.priority == best_priority and (best.allow or not wildcard.allow):  # type: ignore[union-attr]
                break
            if path.startswith(wildcard.prefix) and wildcard.match(path):  # type: ignore[operator]
                return wildcard.rule
        return best

    def exact_allowed(self, url: str) -> bool:
        path = path_of(url)
        if path == "/robots.txt":
            return True
        rule = self.best_rule(path)
        return rule is None or rule.allow

    def _counting_allowed(self, url: str) -> bool:
        self._uses += 1
        if self._uses >= PROMOTE_AFTER:
            self.promote()
        return self.exact_allowed(url)

    # -- single-regex tier ------------------------------------------------------
    def promote(self) -> bool:
        """Build the single-regex tier; stay on the exact tier when the group is
        too large or deep for it to pay off. Returns whether it was built."""
        self.allowed = self.exact_allowed
        if not _HAS_ATOMIC or len(self._wildcards) > _FAST_MAX_WILDCARDS:
            return False
        literals = self._literals
        if len(literals) > _FAST_MAX_LITERALS or sum(map(len, literals)) > _FAST_MAX_CHARS:
            return False
        try:
            trie = _trie_source(literals)
        except _TooDeep:
            return False
        source = r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?;#]*(?=/)()"
        # Group 1 marks the path start, group 2 says a wildcard rule matches,
        # group 3 is the longest literal rule that prefixes the path.
        never = "(?!)"
        wildcards = "|".join(w.source for w in self._wildcards) or never
        source += f"(?:(?={wildcards})())?({trie or never})?"
        self._fast = re.compile(source, re.S).match
        self._lit_allow = {key: rule.allow for key, rule in literals.items()}
        self.allowed = self._fast_allowed
        return True

    def _fast_allowed(self, url: str) -> bool:
        if "%" in url or "#" in url or not url.isascii():
            return self.exact_allowed(url)
        found = self._fast(url)  # type: ignore[operator]
        if found is None or found.start(2) >= 0:
            return self.exact_allowed(url)
        start, end = found.span(3)
        if end <= start:
            return True
        if self._lit_allow[url[start:end]]:
            return True
        return url.endswith("/robots.txt") and url[found.end(1):] == "/robots.txt"


def _allow_all(url: str) -> bool:
    return True


class _TooDeep(Exception):
    pass


def _trie_source(literals: dict[str, Rule]) -> str:
    """A regex whose first match at a position is the longest literal there."""
    root: dict[str, dict] = {}
    for literal in literals:
        node = root
        for char in literal:
            node = node.setdefault(char, {})
        node[""] = {}
    return _emit(root, 0)


def _emit(node: dict[str, dict], depth: int) -> str:
    if depth > _FAST_MAX_DEPTH:
        raise _TooDeep
    branches = []
    for char in sorted(k for k in node if k):
        chain = [char]
        child = node[char]
        while len(child) == 1 and "" not in child:
            (char, child), = child.items()
            chain.append(char)
        branches.append(re.escape("".join(chain)) + _emit(child, depth + 1))
    if "" in node:
        return f"(?:{'|'.join(branches)})?" if branches else ""
    return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
