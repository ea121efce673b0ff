"""The versions of robots.txt (and tdmrep.json) a run used, as the ledger keeps them: what a
version file holds (:class:`Version`, its digest of ``docs/ledger-format.md``), written as a WARC
record under ``versions/`` by the ledger's worker (:func:`write_version`: temporary name,
``fsync``, link to the final name, so that a file under its final name is always whole).
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import time
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from ..core.caches import BoundedDict
from ..core.documents import ROBOTS_TXT
from ..core.state import Access
from ..evidence.format import VERSION_FORMAT, version_digest, version_name
from .segments import sync_directory

if TYPE_CHECKING:
    from ..core.documents import Document
    from ..core.origins import Origin
    from ..core.state import OriginState, Policy

__all__ = ["Version", "VersionMemo", "write_version"]

#: Headers of the archived response renamed, because its body is the bytes the parser read
#: (decoded, and cut at ROBOTSTXT_MAX_SIZE), not those the server sent.
_RENAMED = {b"content-encoding", b"transfer-encoding", b"content-length"}


class Version:
    """What a version file holds: the fields of the digest, and the rest of the
    fetch (headers, times) for the WARC record."""

    __slots__ = ("access", "body", "digest", "document", "fetched_at", "final_url", "headers", "lifetime",
                 "redirects", "requested_url", "source", "status", "truncated")

    def __init__(self, document: str, requested_url: str, redirects: list[str], final_url: str, status: int,
                 access: str, body: bytes, source: str, headers: tuple[tuple[bytes, bytes], ...],
                 fetched_at: float, lifetime: float, truncated: bool) -> None:
        self.document, self.requested_url, self.redirects = document, requested_url, redirects
        self.final_url = final_url
        self.status, self.access, self.body, self.source, self.headers = status, access, body, source, headers
        self.fetched_at, self.lifetime, self.truncated = fetched_at, lifetime, truncated
        self.digest = version_digest(document, requested_url, redirects, final_url, status, access, body)

    @classmethod
    def of(cls, origin: Origin, state: OriginState, document: Document, source: str,
           policy: Policy) -> Version | None:
        """The version ``state`` holds as fetched (parsed, or unavailable with a
        status), or None: no HTTP response (a request another component ignored), or
        unreachable without a good copy whose fetch is known. An unreachable state's
        good copy is the version of its own fetch (``good_fetch``); when the directory
        lacks its file, the process did not fetch it (it would have written it then):
        it came from a store."""
        outcome, lifetime = state.outcome, state.expires_at - state.fetched_at
        if state.access is Access.UNREACHABLE:
            outcome = state.good_fetch if state.parsed is not None and state.good_at is not None else None
            if outcome is None:
                return None
            source, lifetime = "store", policy.lifetime(outcome.max_age)
        if outcome is None or outcome.status is None:
            return None
        if outcome.not_modified:
            source = "store"  # renewed by a 304: the copy held (its headers not known when its file is written now)
        requested = document.url(origin)
        hops = [requested, *outcome.redirects]
        access = outcome.access.value
        body = state.good_body if outcome.access is Access.PARSED else b""
        fetched_at = state.good_at if state.good_at is not None else state.fetched_at
        return cls(document.name, requested, hops[:-1], outcome.url or hops[-1], outcome.status, access, body,
                   source, () if source == "store" else outcome.headers, fetched_at, lifetime, outcome.truncated)

    def write_warc(self, handle: Any) -> None:
        # warcio ships no type information.
        from warcio.statusandheaders import StatusAndHeaders  # type: ignore[import-untyped]
        from warcio.warcwriter import WARCWriter  # type: ignore[import-untyped]

        try:
            phrase = HTTPStatus(self.status).phrase
        except ValueError:
            phrase = ""
        lines = []
        for name, value in self.headers:
            text = name.decode("latin-1")
            if name.lower() in _RENAMED:
                text = "X-RFC9309-Original-" + text
            lines.append((text, value.decode("latin-1")))
        http = StatusAndHeaders(f"{self.status} {phrase}".rstrip(), lines, protocol="HTTP/1.1")
        fields = {
            "WARC-Date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.fetched_at)),
            "WARC-RFC9309-Format": str(VERSION_FORMAT),
            "WARC-RFC9309-Version": self.digest,
            "WARC-RFC9309-Document": self.document,
            "WARC-RFC9309-Requested-URI": self.requested_url,
            "WARC-RFC9309-Status": str(self.status),
            "WARC-RFC9309-Access": self.access,
            "WARC-RFC9309-Lifetime": f"{self.lifetime:.0f}",
            "WARC-RFC9309-Source": self.source,
        }
        if self.redirects:
            fields["WARC-RFC9309-Redirects"] = " ".join(self.redirects)
        if self.truncated:
            fields["WARC-RFC9309-Truncated"] = "true"
        writer = WARCWriter(handle, gzip=True, warc_version="1.1")
        record = writer.create_warc_record(self.final_url, "response", payload=io.BytesIO(self.body),
                                           length=len(self.body), http_headers=http, warc_headers_dict=fields)
        writer.write_record(record)


def write_version(versions: str, run: str, version: Version | None, digest: str) -> str:
    """In the worker: write a version file into ``versions`` unless it has it (or ``version``
    is None: a copy this run recorded before), and return the SHA-256 of its bytes."""
    final = os.path.join(versions, version_name(digest))
    if version is not None and not os.path.exists(final):
        _write_version_file(versions, run, version, final)
    with open(final, "rb") as handle:
        hashed = hashlib.sha256()
        while chunk := handle.read(1 << 20):
            hashed.update(chunk)
    return hashed.hexdigest()


def _write_version_file(versions: str, run: str, version: Version, final: str) -> None:
    temporary = f"{final}.{run}.tmp"
    try:
        with open(temporary, "wb") as handle:
            version.write_warc(handle)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, final)
        except FileExistsError:
            pass  # another process, or an earlier run, wrote it: the same bytes digest the same
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
                raise
            if not os.path.exists(final):  # no hard links here: a rename, which may replace a twin
                os.rename(temporary, final)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    sync_directory(versions)


class VersionMemo:
    """The versions a run's records name: per document and origin, the digest of the version that
    a parsed file (or a state) applies, computed once per file; and the digests whose file is in
    ``versions/`` already, with the SHA-256 of its bytes (``stored``). Each bounded to ``kept``
    entries (the oldest go first: a digest forgotten is computed again)."""

    __slots__ = ("_digests", "_kept", "_policy", "robots", "stored")

    def __init__(self, policy: Policy, kept: int) -> None:
        self._policy = policy
        self._kept = kept
        #: Per document: origin -> (the parsed file, or the state, whose version it is; its digest).
        self._digests: dict[str, BoundedDict[Origin, tuple[object, str | None]]] = {ROBOTS_TXT.name: BoundedDict(kept)}
        #: The robots.txt's, read by the ledger's verdicts without a call.
        self.robots = self._digests[ROBOTS_TXT.name]
        self.stored: BoundedDict[str, str] = BoundedDict(kept)

    def known(self, origin: Origin, document: Document) -> tuple[object, str | None] | None:
        """What was last remembered of ``origin``'s ``document``: (its parsed file or state, its digest)."""
        digests = self._digests.get(document.name)
        return None if digests is None else digests.get(origin)

    def version_of(self, origin: Origin, state: OriginState, document: Document) -> str | None:
        """The digest of the version of ``document`` that ``state`` applies (None when
        none does), computed once per parsed file (or state)."""
        key: object = state.parsed if state.parsed is not None else state
        known = self.known(origin, document)
        if known is not None and known[0] is key:
            return known[1]
        return self.remember(origin, state, document, Version.of(origin, state, document, "fetch", self._policy))

    def remember(self, origin: Origin, state: OriginState, document: Document, version: Version | None) -> str | None:
        """Remember (and return) the digest of ``version``, the version ``state`` applies."""
        key: object = state.parsed if state.parsed is not None else state
        digests = self._digests.get(document.name)
        if digests is None:
            digests = self._digests[document.name] = BoundedDict(self._kept)
        digest = version.digest if version is not None else None
        if digest is None and state.access is Access.UNREACHABLE and state.parsed is not None:
            # A stale copy whose fetch is not known (a store record of an earlier version): the version this
            # process recorded for the same copy, if it did.
            previous = digests.get(origin)
            digest = previous[1] if previous is not None and previous[0] is key else None
        digests[origin] = (key, digest)
        return digest
