"""What the audit tells of the records it reads, for a reader that wants more of them than the
audit's counts (``scrapy robotstxt report``): one pass over the files, one reader. Pure Python."""

from __future__ import annotations

from typing import Any, Protocol

from .audit_result import VersionInfo

__all__ = ["Observer", "Versions"]


class Versions(Protocol):
    """The audit's version files, for an observer that reads what a version says (its Crawl-delay)."""

    versions: dict[str, VersionInfo]

    def robots(self, digest: str, info: VersionInfo) -> Any: ...


class Observer:
    """Told of each record the audit counted, in the order of the files; does nothing unless
    overridden. The records are as read (JSON objects): an observer reads them, never changes them."""

    def started(self, versions: Versions, segments: int) -> None:
        """The audit read the version files and is about to read ``segments`` segment files."""

    def segment(self, run: str, number: int) -> None:
        """The audit starts reading segment ``number`` of ``run``."""

    def record(self, kind: str, record: dict[str, Any], origin: str | None, denied: tuple[str, ...]) -> None:
        """A ``head``, ``state``, ``verdict`` or ``response`` record the audit counted (a verdict:
        for ``origin``; ``denied``, for a ``usage_denied`` verdict, the categories of the run's
        ``deny`` its robots.txt denies). ``origin`` is the record's ``o`` as the audit names it."""
