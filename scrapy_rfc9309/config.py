"""The ``ROBOTSTXT_*`` settings, read and checked once at start-up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .access import DAY, Policy
from .exceptions import RobotsTxtConfigError
from .parser import DEFAULT_MAX_BYTES

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["DEFAULTS", "Config"]

#: Every setting the middleware reads, with its default.
DEFAULTS: dict[str, Any] = {
    "ROBOTSTXT_USER_AGENT": None,
    "ROBOTSTXT_MAX_SIZE": DEFAULT_MAX_BYTES,
    "ROBOTSTXT_MAX_REDIRECTS": 5,
    "ROBOTSTXT_CACHE_TTL": DAY,
    "ROBOTSTXT_CACHE_MIN_TTL": 60.0,
    "ROBOTSTXT_CACHE_SIZE": 10_000,
    "ROBOTSTXT_RETRY_DELAY": 5.0,
    "ROBOTSTXT_RETRY_MAX_DELAY": 600.0,
    "ROBOTSTXT_MAX_WAIT": 900.0,
    "ROBOTSTXT_KEEP_CACHED": 30 * DAY,
    "ROBOTSTXT_CRAWL_DELAY": False,
    "ROBOTSTXT_CRAWL_DELAY_MAX": 60.0,
    "ROBOTSTXT_USAGE_DENY": [],
    "ROBOTSTXT_MAX_WAITING": 10_000,
    "ROBOTSTXT_STORE": "memory",
    "ROBOTSTXT_STORE_PATH": None,
    "ROBOTSTXT_STORE_LOCK_TTL": 30.0,
    "ROBOTSTXT_STORE_RETRY_DELAY": 5.0,
    "ROBOTSTXT_REDIS_URL": None,
    "ROBOTSTXT_REDIS_PREFIX": "robotstxt",
}


def _number(settings: BaseSettings, name: str, kind: type, minimum: float, strict: bool = False) -> Any:
    raw = settings.get(name, DEFAULTS[name])
    if raw is None or raw == "":
        raw = DEFAULTS[name]
    try:
        if isinstance(raw, bool):
            raise ValueError
        value = kind(raw)
        if kind is int and float(raw) != value:
            raise ValueError
    except (TypeError, ValueError):
        raise RobotsTxtConfigError(f"{name} must be a number, got {raw!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise RobotsTxtConfigError(f"{name} must be a finite number, got {raw!r}")
    if value < minimum or (strict and value == minimum):
        relation = "greater than" if strict else "at least"
        raise RobotsTxtConfigError(f"{name} must be {relation} {minimum:g}, got {raw!r}")
    return value


@dataclass(frozen=True)
class Config:
    user_agent: str | None
    max_size: int
    cache_size: int
    policy: Policy
    crawl_delay: bool = False
    crawl_delay_max: float = 60.0
    usage_deny: tuple[str, ...] = ()
    max_waiting: int = 10_000
    store_lock_ttl: float = 30.0
    store_retry_delay: float = 5.0

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Config:
        user_agent = settings.get("ROBOTSTXT_USER_AGENT")
        if user_agent is not None and not isinstance(user_agent, str):
            raise RobotsTxtConfigError(f"ROBOTSTXT_USER_AGENT must be a string, got {user_agent!r}")
        max_size = _number(settings, "ROBOTSTXT_MAX_SIZE", int, DEFAULT_MAX_BYTES)
        ttl = _number(settings, "ROBOTSTXT_CACHE_TTL", float, 0, strict=True)
        min_ttl = _number(settings, "ROBOTSTXT_CACHE_MIN_TTL", float, 0)
        if min_ttl > ttl and settings.get("ROBOTSTXT_CACHE_MIN_TTL") not in (None, ""):  # a floor set above the TTL
            raise RobotsTxtConfigError(
                f"ROBOTSTXT_CACHE_MIN_TTL ({min_ttl:g}) must not exceed ROBOTSTXT_CACHE_TTL ({ttl:g})"
            )
        retry = _number(settings, "ROBOTSTXT_RETRY_DELAY", float, 0, strict=True)
        retry_max = _number(settings, "ROBOTSTXT_RETRY_MAX_DELAY", float, 0, strict=True)
        if retry_max < retry:
            raise RobotsTxtConfigError(
                f"ROBOTSTXT_RETRY_MAX_DELAY ({retry_max:g}) must be at least ROBOTSTXT_RETRY_DELAY ({retry:g})"
            )
        policy = Policy(
            ttl=ttl,
            min_ttl=min_ttl,
            max_redirects=_number(settings, "ROBOTSTXT_MAX_REDIRECTS", int, 0),
            retry_delay=retry,
            retry_max_delay=retry_max,
            keep_cached=_number(settings, "ROBOTSTXT_KEEP_CACHED", float, 0),
            max_wait=_number(settings, "ROBOTSTXT_MAX_WAIT", float, 0, strict=True),
            max_size=max_size,
        )
        try:
            crawl_delay = settings.getbool("ROBOTSTXT_CRAWL_DELAY", False)
        except ValueError:
            raise RobotsTxtConfigError(
                f"ROBOTSTXT_CRAWL_DELAY must be True or False, got {settings.get('ROBOTSTXT_CRAWL_DELAY')!r}"
            ) from None
        deny = settings.get("ROBOTSTXT_USAGE_DENY") or []
        if isinstance(deny, str):
            deny = [part.strip() for part in deny.split(",") if part.strip()]
        if not isinstance(deny, (list, tuple)) or not all(isinstance(item, str) and item for item in deny):
            raise RobotsTxtConfigError(f"ROBOTSTXT_USAGE_DENY must be a list of category names, got {deny!r}")
        return cls(
            user_agent=user_agent or None,
            max_size=max_size,
            cache_size=_number(settings, "ROBOTSTXT_CACHE_SIZE", int, 1),
            policy=policy,
            crawl_delay=crawl_delay,
            crawl_delay_max=_number(settings, "ROBOTSTXT_CRAWL_DELAY_MAX", float, 0, strict=True),
            usage_deny=tuple(item.lower() for item in deny),
            max_waiting=_number(settings, "ROBOTSTXT_MAX_WAITING", int, 0),
            store_lock_ttl=_number(settings, "ROBOTSTXT_STORE_LOCK_TTL", float, 0, strict=True),
            store_retry_delay=_number(settings, "ROBOTSTXT_STORE_RETRY_DELAY", float, 0, strict=True),
        )
