"""The origin a robots.txt applies to: scheme, host and port (RFC 9309, 2.3)."""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import urlsplit

from .caches import BoundedDict
from .urls import one_origin, origin_text

__all__ = ["DEFAULT_PORTS", "HttpOrigins", "Origin", "OriginOf"]

DEFAULT_PORTS = {"http": 80, "https": 443, "ftp": 21}


class Origin(NamedTuple):
    """``scheme://host:port`` with the scheme and host case-folded, the host in
    IDNA (punycode) form and the port always explicit, so that ``http://H``,
    ``http://h:80`` and ``http://h/`` are one origin and ``https://h`` another.

    A trailing dot is kept: ``http://h./`` is an origin of its own, because Scrapy
    sends its requests to ``h.`` (its ``Host`` header, its download slot), and the
    robots.txt that applies to them is the one that authority serves."""

    scheme: str
    host: str
    port: int

    @classmethod
    def from_url(cls, url: str) -> Origin | None:
        """The origin of an absolute URL, or None when it has no host or an
        unknown scheme without a port."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            return None
        scheme = parts.scheme.lower()
        host = parts.hostname
        if not host:
            return None
        if port is None:
            port = DEFAULT_PORTS.get(scheme)
            if port is None:
                return None
        return cls(scheme, _idna(host), port)

    @property
    def robots_url(self) -> str:
        return f"{self.base}/robots.txt"

    @property
    def base(self) -> str:
        if DEFAULT_PORTS.get(self.scheme) == self.port:
            host = f"[{self.host}]" if ":" in self.host else self.host
            return f"{self.scheme}://{host}"
        return self.with_port

    @property
    def with_port(self) -> str:
        """``scheme://host:port`` with the port always written (the ledger's form)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def __str__(self) -> str:
        return self.base


def _idna(host: str) -> str:
    host = host.lower()
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        # Labels that the IDNA 2003 codec refuses: encode each one on its own.
        labels = []
        for label in host.split("."):
            try:
                labels.append(label.encode("idna").decode("ascii") if not label.isascii() else label)
            except UnicodeError:
                labels.append("xn--" + label.encode("punycode").decode("ascii"))
        return ".".join(labels)


class OriginOf(BoundedDict[str, "Origin | None"]):
    """The http(s) origin of a URL (None for another scheme, or no origin), memoised
    by its :func:`~.urls.origin_text`: the per-request look-up of the middlewares."""

    __slots__ = ()

    #: Origins remembered at most (then the oldest quarter is forgotten, as a crawl moves on).
    MAX = 4096

    def __init__(self, max_entries: int = MAX) -> None:
        super().__init__(max_entries)

    def __call__(self, url: str) -> Origin | None:
        text = origin_text(url)
        try:
            return self[text]
        except KeyError:
            origin = Origin.from_url(url)
            if origin is not None and origin.scheme not in ("http", "https"):
                origin = None
            if one_origin(text):
                self[text] = origin
            return origin


#: The name users' code knew :class:`OriginOf` by.
HttpOrigins = OriginOf
