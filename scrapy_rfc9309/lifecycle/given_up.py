"""The origins a crawl gave up on for one document, and why: the first lines of the
summary logged when the spider closes (what was not crawled, and the cause to fix)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.verdict import DROP_REASONS

if TYPE_CHECKING:
    from ..core.documents import Document
    from ..core.origins import Origin
    from ..core.state import Cause

__all__ = ["GivenUp"]

#: Origins named per cause in the summary at close.
_SUMMARY_ORIGINS = 5


class GivenUp:
    """The origins given up (their requests dropped) for ``document``, counted per
    cause, the first few named: a broad crawl may give up thousands, and the line
    must stay short."""

    def __init__(self, document: Document) -> None:
        self.document = document
        self._names: dict[Cause, list[str]] = {}
        self._counts: dict[Cause, int] = {}

    def gave_up(self, origin: Origin, cause: Cause) -> None:
        """Count the origin as given up (its requests dropped) for ``cause``, for the summary."""
        names = self._names.setdefault(cause, [])
        if len(names) < _SUMMARY_ORIGINS:
            names.append(str(origin))
        self._counts[cause] = self._counts.get(cause, 0) + 1

    def summary(self, dropped: dict[str, int], requeued: int, discarded: int) -> str | None:
        """The origins given up and the requests dropped in this crawl, and why, in
        one line (None when there were none). ``dropped``: the requests dropped per
        reason, ``requeued`` those handed back to the scheduler and ``discarded``
        those parked when the spider closed without a scheduler to keep them."""
        if not dropped and not self._counts and not requeued and not discarded:
            return None
        parts = []
        for cause, count in self._counts.items():
            names = self._names[cause]
            more = f" and {count - len(names)} more" if count > len(names) else ""
            parts.append(f"{count} {cause.words} ({', '.join(names)}{more})")
        origins = "; ".join(parts) or "none"
        requests = ", ".join(f"{count} {DROP_REASONS.get(reason, reason)}" for reason, count in dropped.items())
        name = self.document.name
        back = (f". Put back in the scheduler for the next run: {requeued} requests that waited for a {name}"
                if requeued else "")
        if discarded:
            back += (f". Not crawled: {discarded} requests that waited for a {name} outside the downloader "
                     "when the spider closed (a JOBDIR keeps them for a resumed crawl)")
        return f"origins given up: {origins}. Requests dropped: {requests or 'none'}{back}"
