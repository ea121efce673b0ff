"""Types of the optional C accelerator, ``_speedups.c`` (see its method tables)."""

from collections.abc import Callable, Iterable
from typing import Any, final

from typing_extensions import Buffer

@final
class FastMatcher:
    """One merged group's rules, decided in C."""

    def __new__(
        cls,
        patterns: Iterable[str],
        codes: Buffer,
        canon: Callable[[str], str | tuple[int, list[str], bool]],
        hash_above: int,
        /,
    ) -> FastMatcher:
        """``codes``: one C ``unsigned int`` (``array("I")``, or its octets) per pattern, ``line << 1 | allow``,
        the lines distinct. ``canon(pattern)`` gives ``(priority, pieces, anchored)`` for a
        wildcard rule written with ``%`` or non-ASCII text (such a literal rule's canonical
        key is made in C, as ``urls.canonical_path`` makes it). The literal keys are hashed when there are
        more than ``hash_above``."""

    def __call__(self, url: str | bytes, /) -> bool:
        """Whether the rules allow the URL."""

    def best_rule(self, canonical_path: str, /) -> Any:
        """The deciding rule as written (of the type given to ``configure``), or None
        when no rule matches."""

    def url_rule(self, url: str | bytes, /) -> Any:
        """The rule that decides the URL (``best_rule`` of its canonical path), or None."""

    def written(self) -> list[Any]:
        """Every rule as written, in the order of its line (of the type given to ``configure``)."""

    def fill(self, records: bytes, keys: tuple[bytes, bytes], /) -> bytes:
        """``records`` (lines of octets, each rule's line empty) with every rule written
        on its line as its key (``keys``: Disallow's, Allow's) and its text as written."""

    @property
    def allowed(self) -> FastMatcher:
        """The matcher itself (``allowed(url)``, as ``matcher.Matcher`` has it)."""

def configure(path_of: Callable[[str | bytes], str], rule_type: type[tuple[Any, ...]], /) -> None:
    """What every matcher calls: ``path_of(url)``, the canonical path of a URL not decoded
    in C; ``rule_type(allow, pattern, line)``, a rule as written (a tuple type)."""

def scan_lines(text: str, keys: list[tuple[str, int]], /) -> list[tuple[int, str, int]]:
    """The known records of a robots.txt text: ``[(kind, value, line)]``. ``keys`` are
    ``(lowercase key, kind)`` pairs, longest first, at most 64."""

def select_groups(
    text: str, keys: list[tuple[str, int]], token: str, star: bool = True, /
) -> tuple[str, list[tuple[list[str], bytes, bytes, list[tuple[int, str, int, bool, bool]]]]]:
    """The groups of a robots.txt text that a product token selects: ``(key, groups)``
    (see ``parser.select``); with ``star`` false, the groups of ``*`` are not built."""

def records_text(
    text: str, keys: list[tuple[str, int]], short_keys: tuple[str, ...], omit: Buffer | None = None, /
) -> str:
    """The text reduced to its known records (see ``parser.records_text``): each on
    its own line number as ``short_keys[kind]`` and its value, every other line empty;
    the Allow and Disallow rules ``omit`` names (``array("I")`` of ``line << 1 | allow``, or its octets,
    by line) left out, the text as many lines long."""

def reduce_octets(
    body: Buffer, max_bytes: int, max_line: int, keys: list[tuple[str, int]], short_keys: tuple[str, ...], /
) -> bytes:
    """The body's first ``max_bytes`` octets reduced to their known records, as octets
    (see ``parser.reduce_body``), read from the body itself: nothing but the result
    is allocated."""

def first_question(
    body: bytes, max_line: int, keys: list[tuple[str, int]], short_keys: tuple[str, ...], token: str, /
) -> tuple[str, list[tuple[list[str], bytes, bytes, list[tuple[int, str, int, bool, bool]]]], bytes]:
    """A file's first question from its bytes, in one call: ``(key, groups, records)``,
    ``select_groups`` (``"*"``'s included) of the text of ``reduce_octets(body)`` and
    ``records_text`` of it without the rules of the groups given, as UTF-8 with surrogate
    escapes (see ``parser.first_question``)."""

def write_record(
    fd: int, previous: bytes, head: str, url: str, fingerprint: bytes, when: float, /
) -> tuple[bytes, int]:
    """A ledger record written (``ledger.write_record``): its chain hash and the bytes written."""
