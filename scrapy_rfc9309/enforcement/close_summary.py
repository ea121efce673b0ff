"""The close summary: per document, the origins given up and the requests dropped or handed
back (a WARNING, when there are some), and every verdict counted (INFO), in the words of
:mod:`~scrapy_rfc9309.core.verdict_kinds`."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..core.documents import DOCUMENTS
from ..core.verdict_kinds import DROPPED_SUMMARY, ROWS, Kind, reason_words, row_of

if TYPE_CHECKING:
    from ..core.documents import Document
    from .tellers import Tally

__all__ = ["CloseSummary", "Summarized"]

logger = logging.getLogger(__name__)


class Summarized(Protocol):
    """What the close summary reads of a document's requests (its waiting requests): the
    document, and the line of its origins given up and requests dropped."""

    @property
    def document(self) -> Document: ...

    def summary(self, dropped: dict[str, int], requeued: int) -> str | None: ...


class CloseSummary:
    """The close summary of one crawl's verdicts, counted by ``tally``."""

    def __init__(self, tally: Tally, log_extra: dict[str, Any]) -> None:
        self.tally = tally
        self.log_extra = log_extra

    def verdicts(self) -> str:
        """Every kind of verdict counted, in one line."""
        tally = self.tally
        parts = [f"{tally.allowed} {ROWS[(Kind.ALLOWED, None)].summary}"]
        for kind in (Kind.FORBIDDEN, Kind.USAGE_DENIED, Kind.TDM_RESERVED):
            if count := tally.count(kind):
                parts.append(f"{count} {ROWS[(kind, None)].summary}")
        for document in DOCUMENTS:
            dropped = tally.dropped(document)
            if dropped:
                reasons = ", ".join(f"{n} {reason_words(r)}" for r, n in dropped.items())
                parts.append(f"{sum(dropped.values())} {DROPPED_SUMMARY.format(document=document, reasons=reasons)}")
            for kind in (Kind.HELD, Kind.REQUEUED):
                if count := tally.count(kind, document):
                    parts.append(f"{count} {row_of(kind, None).summary.format(document=document)}")
        not_judged: dict[str, int] = {}
        for (kind, _document, reason), count in tally.counts.items():
            if kind is Kind.NOT_JUDGED:
                words = row_of(kind, reason).summary
                not_judged[words] = not_judged.get(words, 0) + count
        parts.extend(f"{count} {words}" for words, count in not_judged.items())
        parts.extend(f"{count} responses {outcome.replace('_', ' ')}" for outcome, count in tally.responses.items())
        return ", ".join(parts)

    def log(self, lifecycles: Sequence[Summarized]) -> None:
        """Log the close summary of the documents' ``lifecycles``."""
        tally = self.tally
        for states in lifecycles:
            document = states.document.name
            summary = states.summary(tally.dropped(document), tally.count(Kind.REQUEUED, document))
            if summary is not None:
                logger.warning("%s: %s", document, summary, extra=self.log_extra)
        logger.info("robots.txt verdicts: %s", self.verdicts(), extra=self.log_extra)
