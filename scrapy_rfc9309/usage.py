"""Usage preferences in robots.txt: the AIPREF ``Content-Usage`` record
(draft-ietf-aipref-attach) and the ``Content-Signal`` record.

Both are group records (they never end a group). A value may start with a path
pattern, which scopes it the way Allow/Disallow patterns are matched (longest
pattern wins); without one it applies to the whole group::

    Content-Usage: train-ai=n
    Content-Usage: /public/ train-ai=y
    Content-Signal: search=yes, ai-train=no

Preferences are ``key=value`` pairs separated by commas; ``y``/``yes`` and
``n``/``no`` are read as ``y`` and ``n``. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .matcher import glob_match, glob_pieces
from .vocab import labels_for

__all__ = ["UsagePreference", "applicable", "parse_preferences"]

_YES_NO = {"y": "y", "yes": "y", "n": "n", "no": "n"}
#: The record names, in the order a category is looked up in (Content-Usage, then Content-Signal).
RECORDS = ("content-usage", "content-signal")


def parse_preferences(text: str) -> dict[str, str]:
    """``"train-ai=n, search=yes"`` -> ``{"train-ai": "n", "search": "y"}``."""
    found: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if not key or not sep:
            continue
        value = value.split(";")[0].strip().strip('"').lower()  # without structured-field parameters
        found[key] = _YES_NO.get(value, value)
    return found


@dataclass(frozen=True)
class UsagePreference:
    """The usage preferences that apply to one URL: per record name
    (``content-usage``, ``content-signal``) the values and the line they come from."""

    values: dict[str, dict[str, str]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)

    def get(self, category: str) -> str | None:
        """``"y"``, ``"n"`` (or another value) for a category such as ``train-ai``
        (``ai-train`` in Content-Signal is the same category), or None."""
        found = self.source_of(category)
        return None if found is None else found[0]

    def source_of(self, category: str) -> tuple[str, str] | None:
        """The value for ``category`` and the record it comes from
        (``("n", "content-usage")``), or None: Content-Usage (the AIPREF record)
        is read first, Content-Signal for what it does not say."""
        names = labels_for(category)
        for record in RECORDS:
            values = self.values.get(record)
            if values:
                for name in names:
                    value = values.get(name)
                    if value is not None:
                        return value, record
        return None

    def denies(self, category: str) -> bool:
        return self.get(category) == "n"

    def as_dict(self) -> dict[str, object]:
        return {"values": {k: dict(v) for k, v in self.values.items()}, "lines": dict(self.lines)}

    def __bool__(self) -> bool:
        return bool(self.values)

    def __str__(self) -> str:
        parts = []
        for record, values in self.values.items():
            text = ", ".join(f"{k}={v}" for k, v in values.items())
            parts.append(f"{record}: {text} (line {self.lines[record]})")
        return "; ".join(parts) or "no usage preference"


def applicable(records: list[tuple[str, str, int]], path: str) -> UsagePreference:
    """The preference per record name that applies to a canonical path:
    the path-scoped record with the longest matching pattern, else the unscoped one."""
    best: dict[str, tuple[int, dict[str, str], int]] = {}
    for name, value, line in records:
        parts = value.split(None, 1)
        if len(parts) == 2 and parts[0].startswith(("/", "*")):
            scope, rest = parts
            pieces, anchored, _, _ = glob_pieces(scope)
            if not glob_match(path, pieces, anchored):
                continue
            priority = len(scope)
            prefs = parse_preferences(rest)
        else:
            priority = -1
            prefs = parse_preferences(value)
        if not prefs:
            continue
        current = best.get(name)
        if current is None or priority > current[0]:
            best[name] = (priority, prefs, line)
    return UsagePreference({k: v[1] for k, v in best.items()}, {k: v[2] for k, v in best.items()})
