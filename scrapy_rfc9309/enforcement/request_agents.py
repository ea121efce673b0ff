"""Which agent a request obeys: its ``robotstxt_user_agent`` meta key,
``ROBOTSTXT_USER_AGENT``, its User-Agent header, or what Scrapy sends; and the
product token it names (see :mod:`.product_tokens`). Each agent is logged once, with where it
comes from: at INFO for the first :data:`MAX_LOGGED` agents, then one INFO line says so
and later ones are logged at DEBUG (a crawl's agents can come from its requests'
headers, one per request)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..core.caches import BoundedDict
from ..core.product_tokens import agent_note, product_token
from ..meta import AGENT_META
from ..runtime.compat import header_values
from ..runtime.reporting import Reporting

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from ..config import Config

__all__ = ["InvalidAgentMeta", "UserAgents"]

logger = logging.getLogger(__name__)

#: Agents logged at INFO at most (later ones at DEBUG).
MAX_LOGGED = 100
#: Agents remembered at most (as logged, and as the crawl's agents the change news is about).
MAX_SEEN = 1024


class InvalidAgentMeta(ValueError):
    """A request's ``robotstxt_user_agent`` meta key is not a string."""

    def __init__(self, value: object) -> None:
        super().__init__(f"request meta {AGENT_META!r} must be a product token string, got "
                         f"{type(value).__name__} {value!r}")
        self.value = value


class UserAgents(Reporting):
    """The agents of a crawl's requests, and their product tokens."""

    def __init__(self, crawler: Crawler, config: Config) -> None:
        self.crawler = crawler
        self.configured = config.user_agent
        #: The agents obeyed lately, at most :data:`MAX_SEEN` (each logged once while remembered).
        self.seen: BoundedDict[str | bytes, None] = BoundedDict(MAX_SEEN)
        #: The agents logged so far.
        self.logged = 0
        self.default, source = self._default_agent()
        if note := agent_note(self.default, source):
            logger.warning(note)
        self._log(self.default, source)
        self._tokens: BoundedDict[str | bytes, str] = BoundedDict(1024)

    def _default_agent(self) -> tuple[str, str]:
        """The agent obeyed for a request that names none of its own, and where it is
        set: ``ROBOTSTXT_USER_AGENT``, else what Scrapy sends: ``USER_AGENT``, or the
        spider's ``user_agent`` attribute, which Scrapy sends instead (deprecated in
        Scrapy 2.19, which warns about it)."""
        if self.configured:
            return self.configured, "ROBOTSTXT_USER_AGENT"
        spider_agent = getattr(self.crawler.spider, "user_agent", None)
        if isinstance(spider_agent, str) and spider_agent:
            return spider_agent, "the spider's user_agent attribute"
        return self.crawler.settings.get("USER_AGENT") or "", "USER_AGENT"

    def of(self, request: Request) -> str | bytes:
        """The string whose product token is obeyed for ``request``: its
        ``robotstxt_user_agent`` meta key, ``ROBOTSTXT_USER_AGENT``, its User-Agent
        header, ``USER_AGENT``. Raises :class:`InvalidAgentMeta`."""
        agent = request.meta.get(AGENT_META)
        if not agent:
            if agent is not None and not isinstance(agent, (str, bytes)):
                raise InvalidAgentMeta(agent)
            return self.unnamed(request)
        elif not isinstance(agent, (str, bytes)):
            raise InvalidAgentMeta(agent)
        elif agent not in self.seen:
            self._log(agent, f"a request's {AGENT_META!r} meta key")
        return agent

    def unnamed(self, request: Request) -> str | bytes:
        """The agent of a request whose meta names none: ``ROBOTSTXT_USER_AGENT``, its
        User-Agent header, ``USER_AGENT``."""
        if self.configured:
            return self.configured
        agent: str | bytes = self._header(request) or self.default
        if agent not in self.seen:
            self._log(agent, "a request's User-Agent header")
        return agent

    def token(self, agent: str | bytes) -> str:
        """The product token ``agent`` names (remembered)."""
        token = self._tokens.get(agent)
        if token is None:
            token = self._tokens[agent] = product_token(agent)
        return token

    def token_of(self, request: Request) -> str:
        """The product token obeyed for ``request``, without raising: a request whose
        meta key is invalid was dropped when it was judged."""
        agent = request.meta.get(AGENT_META)
        if not agent or not isinstance(agent, (str, bytes)):
            agent = self.configured or self._header(request) or self.default
        return self.token(agent)

    @staticmethod
    def _header(request: Request) -> bytes | None:
        """The request's User-Agent header (its last value), or None."""
        values = header_values(request.headers, b"User-Agent")
        return values[-1] if values else None

    def _log(self, agent: str | bytes, source: str) -> None:
        self.seen[agent] = None
        self.logged += 1
        if self.logged == MAX_LOGGED + 1:
            logger.info("robots.txt: %d agents obeyed so far; further ones are logged at DEBUG", MAX_LOGGED,
                        extra=self._log_extra)
        text = agent.decode("latin-1") if isinstance(agent, bytes) else agent
        token = product_token(agent)
        logger.log(
            logging.INFO if self.logged <= MAX_LOGGED else logging.DEBUG,
            "robots.txt: obeying the groups for product token %r (from %s %r)%s", token or "*", source, text,
            "" if token else "; it names no token, so only the '*' group applies", extra=self._log_extra,
        )
