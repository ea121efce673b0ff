"""The store's record (scrapy_rfc9309/stores/record.py): a state written and read back keeps its
document and its failed fetch's reason, for robots.txt and tdmrep.json alike. Kills mutants the
record tests leave alive (docs/development.md, "Mutation testing")."""

from __future__ import annotations

from pathlib import Path

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


def test_the_disk_store_reads_metadata_of_as_many_characters_as_a_record_holds(tmp_path: Path) -> None:
    """MAX_META_CHARS characters of metadata, each of up to four bytes in UTF-8 (MAX_META_BYTES): read
    back whole; a byte more is not read."""
    from scrapy_rfc9309.stores.disk import DiskStore
    from scrapy_rfc9309.stores.record import MAX_META_CHARS, Record, Unreadable

    text = "\U0001f600" * (MAX_META_CHARS - 8)  # four bytes each
    meta = '{"x":"' + text + '"}'
    store = DiskStore(str(tmp_path))
    store.open()
    try:
        record = Record(T0, T0 + 60, T0 + 3600, meta, b"")
        assert store.save("https://example.com", record)
        back = store.load("https://example.com")
        assert back is not None and not isinstance(back, Unreadable), back
        assert back.meta == meta
        over = Record(T0 + 1, T0 + 60, T0 + 3600, meta + " " * 40, b"")
        assert store.save("https://example.com", over)
        assert isinstance(store.load("https://example.com"), Unreadable)
    finally:
        store.close()


def test_a_record_says_its_format_and_one_of_another_format_is_not_read() -> None:
    """Processes of other versions share a store: the format's number is what tells them apart."""
    import json

    from scrapy_rfc9309.stores.record import Record, RecordError

    state = OriginState.initial(FetchOutcome(Access.UNAVAILABLE, "https://example.com/robots.txt", 404), T0, POLICY)
    record = encode(state, POLICY)
    meta = json.loads(record.meta)
    assert meta["v"] == 1
    for other in (0, 2):
        changed = Record(record.fetched_at, record.expires_at, record.keep_until, json.dumps({**meta, "v": other}),
                         record.body)
        with pytest.raises(RecordError, match=f"format {other}, this version reads 1"):
            decode(changed, POLICY, T0 + 1)


def test_a_good_copy_read_back_without_its_fetch_is_refetched_unconditionally() -> None:
    """An unreachable origin's record whose good copy's fetch (``good``) is malformed: the copy still
    applies, and the refetch sends no validators (there are none to send), without failing."""
    import json

    from scrapy_rfc9309.stores.record import Record

    url = "https://example.com/robots.txt"
    good = OriginState.initial(FetchOutcome(Access.PARSED, url, 200, b"User-agent: *\nDisallow: /x\n", etag='"v1"'),
                               T0, POLICY)
    state = good.apply(FetchOutcome(Access.UNREACHABLE, url, 503, cause=Cause.TRANSIENT), T0 + 100, POLICY)
    assert state.validators(T0 + 101, POLICY) is not None  # its copy's entity tag
    record = encode(state, POLICY)
    meta = json.loads(record.meta)
    assert "good" in meta
    damaged = Record(record.fetched_at, record.expires_at, record.keep_until, json.dumps({**meta, "good": "?"}),
                     record.body)
    back = decode(damaged, POLICY, T0 + 101)
    assert back.robots is not None and not back.robots.allowed("https://example.com/x/1", "bot")
    assert back.validators(T0 + 101, POLICY) is None
