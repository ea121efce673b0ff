"""Types of the optional C accelerator, ``_speedups.c`` (see its method tables)."""

from collections.abc import Callable, Iterable
from typing import final

from typing_extensions import Buffer

@final
class FastMatcher:
    """One merged group's rules, decided in C."""

    def __new__(
        cls,
        patterns: Iterable[str],
        codes: Buffer,
        canon: Callable[[str], str | tuple[int, list[str], bool]],
        path_of: Callable[[str | bytes], str],
        hash_above: int,
        /,
    ) -> FastMatcher:
        """``codes``: one C ``unsigned int`` (``array("I")``) per pattern, ``line << 1 | allow``.
        ``canon(pattern)`` gives the canonical key of a literal rule written with ``%``
        or non-ASCII text (``""``: no rule), or ``(priority, pieces, anchored)`` for
        such a wildcard rule. ``path_of(url)`` gives the canonical path of a URL not
        decoded in C. The literal keys are hashed when there are more than ``hash_above``."""

    def __call__(self, url: str | bytes, /) -> bool:
        """Whether the rules allow the URL."""

    def best(self, canonical_path: str, /) -> int:
        """The index of the deciding rule, or -1 when no rule matches."""

    def best_index(self, canonical_path: str, /) -> int:
        """The same as ``best``: the name ``matcher.Matcher`` has."""

    @property
    def allowed(self) -> FastMatcher:
        """The matcher itself (``allowed(url)``, as ``matcher.Matcher`` has it)."""

    @property
    def has_patterns(self) -> bool:
        """False: the matcher keeps no rule's text (the caller reads the rule again)."""

def scan_lines(text: str, keys: list[tuple[str, int]], /) -> list[tuple[int, str, int]]:
    """The known records of a robots.txt text: ``[(kind, value, line)]``. ``keys`` are
    ``(lowercase key, kind)`` pairs, longest first, at most 64."""

def select_groups(
    text: str, keys: list[tuple[str, int]], token: str, star: bool = True, /
) -> tuple[str, list[tuple[list[str], bytes, bytes, list[tuple[int, str, int, bool, bool]]]]]:
    """The groups of a robots.txt text that a product token selects: ``(key, groups)``
    (see ``parser.select``); with ``star`` false, the groups of ``*`` are not built."""

def records_text(text: str, keys: list[tuple[str, int]], short_keys: tuple[str, ...], /) -> str:
    """The text reduced to its known records (see ``parser.records_text``): each on
    its own line number as ``short_keys[kind]`` and its value, every other line empty."""
