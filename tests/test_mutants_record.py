"""The store's record (scrapy_rfc9309/stores/record.py): a state written and read back keeps its
document and its failed fetch's reason, for robots.txt and tdmrep.json alike. Kills mutants the
record tests leave alive (docs/development.md, "Mutation testing")."""

from __future__ import annotations

import pytest

from scrapy_rfc9309.core.documents import ROBOTS_TXT, TDMREP, Document
from scrapy_rfc9309.core.state import Access, Cause, FetchOutcome, OriginState, Policy
from scrapy_rfc9309.stores.record import decode, encode

POLICY = Policy()
T0 = 1_800_000_000.0


@pytest.mark.parametrize("document", [ROBOTS_TXT, TDMREP])
def test_an_unreachable_state_read_back_keeps_its_document_and_reason(document: Document) -> None:
    url = "https://example.com/robots.txt" if document is ROBOTS_TXT else "https://example.com/.well-known/tdmrep.json"
    outcome = FetchOutcome(Access.UNREACHABLE, url, 503, cause=Cause.TRANSIENT, document=document,
                           reason="HTTP 503 Service Unavailable")
    state = OriginState.initial(outcome, T0, POLICY)
    back = decode(encode(state, POLICY), POLICY, T0 + 1, document=document)
    assert back.outcome is not None
    assert back.outcome.document is document
    assert back.outcome.reason == "HTTP 503 Service Unavailable"
    assert back.detail == state.detail
