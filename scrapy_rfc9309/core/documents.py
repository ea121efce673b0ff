"""The per-origin documents whose lifecycle :mod:`.states` and :mod:`.waiting` run: robots.txt
(RFC 9309) and the TDMRep ``/.well-known/tdmrep.json``.

Both are fetched once per origin at a time, cached for the same lifetime, bounded
by the same size limit, retried on the same backoff and shared through the same
stores; a :class:`Document` says what differs: the path, how a body is parsed, the
store key, the stats and the words of the log. Pure Python.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .robotstxt import RobotsTxt
from .tdmrep import TDMREP_PATH, TdmRep

if TYPE_CHECKING:
    from .origins import Origin

__all__ = ["DOCUMENTS", "ROBOTS_TXT", "TDMREP", "Document", "Parsed"]

#: What a document's body is parsed into.
Parsed = RobotsTxt | TdmRep


@dataclass(frozen=True)
class Document:
    """One kind of per-origin document.

    ``name`` is how logs and stored records name it; ``path`` is where an origin
    serves it; ``parse(body, max_bytes, url, keep_body)`` reads a body that the
    fetch found usable (2xx), ``keep_body`` telling whether the parsed file must
    keep its bytes as fetched (see :class:`~scrapy_rfc9309.access.Policy`);
    ``stat`` is put before the names of its lifecycle's stats
    (``robotstxt/<stat><name>``); ``key_path`` is added to the origin in its store
    key (robots.txt records keep the bare origin, as before tdmrep.json existed);
    ``unreachable`` says, in words, what an unreachable document means before its
    requests are held; ``html_is_no_file``, whether a body of markup (an HTML page,
    whatever its ``Content-Type``) answered with 2xx is no file (a site's catch-all
    page). A robots.txt is parsed whatever it holds, unless a redirect led to an
    HTML page."""

    name: str
    path: str
    parse: Callable[[bytes, int, str | None, bool], Parsed]
    stat: str
    key_path: str
    unreachable: str
    html_is_no_file: bool = False

    def url(self, origin: Origin) -> str:
        """The document's URL on ``origin``."""
        return origin.base + self.path

    def key(self, origin: Origin) -> str:
        """The document's key in a store."""
        return origin.base + self.key_path

    def __repr__(self) -> str:
        return f"<Document {self.name}>"


def _robots(body: bytes, max_bytes: int, url: str | None, keep_body: bool) -> Parsed:
    return RobotsTxt(body, max_bytes, url=url, keep_body=keep_body)


def _tdmrep(body: bytes, max_bytes: int, url: str | None, keep_body: bool) -> Parsed:
    return TdmRep(body, max_bytes, url=url)  # it keeps its bytes (compressed) in any case


ROBOTS_TXT = Document("robots.txt", "/robots.txt", _robots, "", "", "complete disallow")
TDMREP = Document("tdmrep.json", TDMREP_PATH, _tdmrep, "tdmrep/", TDMREP_PATH, "TDM reservations unknown",
                  html_is_no_file=True)
#: The documents by name (a stored record names its document).
DOCUMENTS = {document.name: document for document in (ROBOTS_TXT, TDMREP)}
