"""The ``ROBOTSTXT_*`` settings: one table (:data:`SETTINGS`) holds each one's
default, type, range, description and an example value; :class:`Config` reads and
checks them once at start-up, and the documentation's settings page is generated
from the same table (:func:`settings_table`, called by ``docs/conf.py``).

``python -m scrapy_rfc9309.config [--get NAME] [-s NAME=VALUE ...]`` prints the settings
of the project in the current directory as a crawl with the add-on gets them
(:func:`scrapy_rfc9309.commands.settings.main`); ``--table`` prints the table of every setting.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .core.state import DAY, Policy
from .core.syntax import DEFAULT_MAX_BYTES
from .core.tdmrep import reserves
from .core.usage_vocabulary import canonical, known_labels
from .exceptions import RobotsTxtConfigError

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["DEFAULTS", "FOREIGN_SETTINGS", "SETTINGS", "Config", "Setting", "check_names", "flag",
           "refuse_builtin_beside", "settings_table", "usage_line"]

#: The longest duration any setting takes: 10 years (a Redis expiry in
#: milliseconds, and every clock sum, stays far inside 64 bits).
MAX_SECONDS = 10 * 365 * DAY


@dataclass(frozen=True)
class Setting:
    """One ``ROBOTSTXT_*`` setting. ``kind`` is ``"int"``, ``"float"`` (seconds),
    ``"bool"``, ``"str"``, ``"list"`` or ``"object"``; numbers lie in
    ``[minimum, maximum]`` (``minimum`` excluded when ``above`` is set).
    ``example`` is a value a project might set, shown in the documentation (a
    test checks that :class:`Config` accepts it)."""

    name: str
    default: Any
    kind: str
    summary: str
    minimum: float | None = None
    maximum: float | None = None
    above: bool = False
    example: Any = None

    @property
    def type_name(self) -> str:
        """The Python type(s) the setting takes, as the documentation names them."""
        optional = " or None" if self.default is None else ""
        if self.kind == "object":
            return "str or class"
        names = {"int": "int", "float": "float", "bool": "bool", "str": "str", "list": "list of str"}
        return names[self.kind] + optional


SETTINGS: tuple[Setting, ...] = (
    Setting("ROBOTSTXT_USER_AGENT", None, "str", "product token (or User-Agent string) to obey", example="ExampleBot"),
    Setting("ROBOTSTXT_PURPOSE_TOKENS", [], "list",
            "further product tokens whose groups must also allow a request (e.g. the tokens sites use to refuse AI "
            "training); the request meta key `robotstxt_purpose_tokens` sets them per request",
            example=["GPTBot", "CCBot", "Google-Extended"]),
    Setting("ROBOTSTXT_MAX_SIZE", DEFAULT_MAX_BYTES, "int",
            "bytes of a robots.txt downloaded, decoded and parsed (the RFC's 500 KiB at least)",
            DEFAULT_MAX_BYTES, 1 << 30, example=1_048_576),
    Setting("ROBOTSTXT_MAX_REDIRECTS", 5, "int", "consecutive redirects followed", 0, 100, example=3),
    Setting("ROBOTSTXT_CACHE_TTL", DAY, "float", "seconds a fetched result holds", 0, MAX_SECONDS, above=True,
            example=3600),
    Setting("ROBOTSTXT_CACHE_MIN_TTL", 60.0, "float",
            "floor for a lifetime given by `Cache-Control` (never above `ROBOTSTXT_CACHE_TTL`)", 0, MAX_SECONDS,
            example=300),
    Setting("ROBOTSTXT_CACHE_SIZE", 10_000, "int", "origins whose parsed robots.txt is kept in memory (LRU)",
            1, 100_000_000, example=100_000),
    Setting("ROBOTSTXT_RETRY_DELAY", 5.0, "float", "seconds before the first retry of an unreachable robots.txt",
            0, MAX_SECONDS, above=True, example=10),
    Setting("ROBOTSTXT_RETRY_MAX_DELAY", 600.0, "float", "cap of the doubling retry delay", 0, MAX_SECONDS,
            above=True, example=1800),
    Setting("ROBOTSTXT_MAX_WAIT", 900.0, "float",
            "seconds an origin may stay unreachable (from its first failed fetch) before its requests are dropped",
            0, MAX_SECONDS, above=True, example=3600),
    Setting("ROBOTSTXT_MAX_WAIT_REFUSED", 30.0, "float",
            "seconds an origin that refuses connections may stay unreachable before its requests are dropped "
            "(never more than `ROBOTSTXT_MAX_WAIT`)", 0, MAX_SECONDS, example=120),
    Setting("ROBOTSTXT_MAX_WAIT_IDLE", 120.0, "float",
            "seconds held requests may keep the crawl open once they are all that is left of it (nothing else "
            "downloading, no robots.txt fetch or retry in flight, no other `spider_idle` receiver keeping the spider "
            "open); then they are given up as at close (dropped, or handed back to a scheduler that keeps its queue)",
            0, MAX_SECONDS,
            example=600),
    Setting("ROBOTSTXT_KEEP_CACHED", 30 * DAY, "float",
            "seconds the last good copy keeps applying while the robots.txt is unreachable", 0, MAX_SECONDS,
            example=604_800),
    Setting("ROBOTSTXT_REVALIDATE", True, "bool",
            "refetch an expired robots.txt (and tdmrep.json) with `If-None-Match` / `If-Modified-Since` from the "
            "copy's `ETag` / `Last-Modified`: a `304 Not Modified` renews the copy without downloading it again",
            example=False),
    Setting("ROBOTSTXT_CRAWL_DELAY", False, "bool", "apply the group's Crawl-delay to the download slot", example=True),
    Setting("ROBOTSTXT_CRAWL_DELAY_MAX", 60.0, "float", "cap on the Crawl-delay applied", 0, DAY, above=True,
            example=10),
    Setting("ROBOTSTXT_USAGE_DENY", [], "list",
            "usage categories (e.g. `\"train-ai\"`) whose `n` drops the request; each one a label the plugin "
            "knows (see the usage preferences page) or one of `ROBOTSTXT_USAGE_EXTENSIONS`, else the crawl stops "
            "at start-up", example=["train-ai"]),
    Setting("ROBOTSTXT_USAGE_EXTENSIONS", [], "list",
            "labels of your own (vocabulary extensions a site states, e.g. `\"ai-summary\"`) that "
            "`ROBOTSTXT_USAGE_DENY` may list beside the known ones", example=["ai-summary"]),
    # -- usage preferences stated by responses (see docs/preferences.md) --
    Setting("ROBOTSTXT_USAGE_HEADERS", True, "bool",
            "read the usage preferences of each response's headers (`Content-Usage`, `tdm-reservation`/`tdm-policy`, "
            "`X-Robots-Tag`) into `robotstxt_preferences`", example=False),
    Setting("ROBOTSTXT_USAGE_META", False, "bool",
            "also read the `<meta>` tags of HTML heads (`robots`, the crawler's product token, `tdm-reservation`, "
            "`tdm-policy`)", example=True),
    Setting("ROBOTSTXT_USAGE_META_MAX_BYTES", 32_768, "int",
            "bytes of an HTML body searched for the meta tags of its head (`ROBOTSTXT_USAGE_META`)", 1024, 1 << 24,
            example=65_536),
    Setting("ROBOTSTXT_TDMREP", False, "bool",
            "fetch each origin's `/.well-known/tdmrep.json` (TDMRep) once per lifetime, as robots.txt is, and put the "
            "rule that applies to each request in its `robotstxt_tdmrep` meta key; with `ROBOTSTXT_USAGE_DENY` "
            "listing `\"train-ai\"`, requests of reserved URLs are dropped (off by default: one more request per "
            "origin)", example=True),
    Setting("ROBOTSTXT_LEDGER", None, "str",
            "directory where the crawl records every robots.txt version it used (WARC) and every verdict it gave "
            "(JSON Lines, hash-chained), for proving compliance afterwards (see the ledger format page); created "
            "if missing, checked writable at start-up; a fleet may share one", example="/data/ledger"),
    Setting("ROBOTSTXT_LEDGER_ROTATE_BYTES", 64 * 1024 * 1024, "int",
            "size of the ledger's open segment (plain JSON Lines) at which it is sealed, compressed and a new one "
            "started", 4096, 1 << 40, example=16_777_216),
    Setting("ROBOTSTXT_LEDGER_RESPONSES", False, "bool",
            "also record every response passed to the spider (a `response` record with its status, written before "
            "the spider gets it); by default the ledger records the responses a usage preference kept from the "
            "spider, the decisions it made on responses, and a passed response is implied by its request's "
            "`allowed` verdict", example=True),
    Setting("ROBOTSTXT_PROVENANCE", None, "str",
            "the item field in which every item a spider callback yields from a judged response gets its provenance: "
            "the verdict and the rule that allowed its request, the usage preferences of every source, and its "
            "ledger record (see the provenance page); off when unset", example="provenance"),
    Setting("ROBOTSTXT_MAX_WAITING", 100_000, "int",
            "requests that may wait for a robots.txt without taking a `CONCURRENT_REQUESTS` place (most of them "
            "parked outside the downloader, about 1 KB each); beyond, waiting requests take places again, so the "
            "scheduler stops handing out more", 0, 10_000_000, example=500_000),
    Setting("ROBOTSTXT_CONCURRENT_FETCHES", None, "int",
            "robots.txt downloads in flight at once; more wait for a free place (default: `CONCURRENT_REQUESTS`, "
            "16 when that is 0)", 1, 100_000, example=32),
    Setting("ROBOTSTXT_STORE", "memory", "object",
            "where origin states are kept: `\"memory\"`, `\"disk\"`, `\"redis\"`, or the dotted path of a "
            "`scrapy_rfc9309.stores.Store` or `AsyncStore` subclass", example="redis"),
    Setting("ROBOTSTXT_STORE_PATH", None, "str",
            "the disk store's directory (default: `.scrapy/robotstxt` of the project)",
            example="/var/lib/crawler/robotstxt"),
    Setting("ROBOTSTXT_STORE_LOCK_TTL", 30.0, "float",
            "seconds an origin's fetch lock lasts unless renewed (a dead fetcher holds the others up this long)",
            0, DAY, above=True, example=60),
    Setting("ROBOTSTXT_STORE_RETRY_DELAY", 5.0, "float",
            "seconds the store is left alone after it failed (robots.txt files are fetched locally meanwhile)",
            0, DAY, above=True, example=30),
    Setting("ROBOTSTXT_STORE_TIMEOUT", 10.0, "float",
            "seconds one store call may take before the store counts as down", 0, 3600, above=True, example=2),
    Setting("ROBOTSTXT_DNS_WARMUP", True, "bool",
            "while another process fetches an origin's robots.txt (a shared store), resolve its host into Scrapy's "
            "DNS cache; never for requests through a proxy or a download handler other than Scrapy's HTTP ones",
            example=False),
    Setting("ROBOTSTXT_REDIS_URL", None, "str",
            "the Redis of the Redis store: a `redis://`, `rediss://` (TLS) or `unix://` URL, with its user, password "
            "and database (default: the `REDIS_URL` setting, else `redis://localhost:6379/0`)",
            example="redis://redis.internal:6379/1"),
    Setting("ROBOTSTXT_REDIS_PREFIX", "robotstxt", "str", "first part of the Redis store's keys",
            example="crawler-a:robotstxt"),
    Setting("ROBOTSTXT_REDIS_CLUSTER", False, "bool",
            "the Redis URL names a node of a Redis Cluster (the Redis store then uses redis-py's cluster client)",
            example=True),
)

#: Every setting's default, by name (from :data:`SETTINGS`).
DEFAULTS: dict[str, Any] = {setting.name: setting.default for setting in SETTINGS}
_BY_NAME = {setting.name: setting for setting in SETTINGS}

#: ``ROBOTSTXT_*`` settings that are not the plugin's and are accepted beside its own: Scrapy's
#: (its built-in middleware's; ``ROBOTSTXT_USER_AGENT`` is read by both). A name Scrapy itself
#: sets only at its ``default`` priority (a setting of a newer Scrapy) is accepted too.
FOREIGN_SETTINGS = frozenset({"ROBOTSTXT_OBEY", "ROBOTSTXT_PARSER", "ROBOTSTXT_USER_AGENT"})


def check_names(settings: BaseSettings) -> None:
    """Refuse a ``ROBOTSTXT_*`` setting name (in any case) that is neither one of
    :data:`SETTINGS` nor of :data:`FOREIGN_SETTINGS`: a misspelled name would do
    nothing, silently. The error names the closest known setting. Names set only at
    Scrapy's ``default`` priority are Scrapy's own (or the add-on's) and pass."""
    from scrapy.settings import SETTINGS_PRIORITIES

    known = sorted({*DEFAULTS, *FOREIGN_SETTINGS})
    lowest = SETTINGS_PRIORITIES["default"]
    for name in settings:
        if not isinstance(name, str) or not name.upper().startswith("ROBOTSTXT_") or name in known:
            continue
        if (settings.getpriority(name) or lowest) <= lowest:
            continue
        close = difflib.get_close_matches(name.upper(), known, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}? " if close else ""
        raise RobotsTxtConfigError(
            f"{name} is not a setting of scrapy_rfc9309 or Scrapy, so it would change nothing; {hint}"
            "The plugin's settings: python -m scrapy_rfc9309.config --table"
        )


def _number(settings: BaseSettings, name: str) -> Any:
    spec = _BY_NAME[name]
    raw = settings.get(name, spec.default)
    if raw is None or raw == "":
        raw = spec.default
    kind = int if spec.kind == "int" else float
    try:
        if isinstance(raw, bool):
            raise ValueError
        value = kind(raw)
        if kind is int and float(raw) != value:
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise RobotsTxtConfigError(f"{name} must be a number, got {raw!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise RobotsTxtConfigError(f"{name} must be a finite number, got {raw!r}")
    low, high = spec.minimum, spec.maximum
    if (low is not None and (value < low or (spec.above and value == low))) or (high is not None and value > high):
        opening = "(" if spec.above else "["
        raise RobotsTxtConfigError(f"{name} must be in {opening}{low:g}, {high:g}], got {raw!r}")
    return value


def _concurrent_fetches(settings: BaseSettings) -> int:
    if settings.get("ROBOTSTXT_CONCURRENT_FETCHES") not in (None, ""):
        return int(_number(settings, "ROBOTSTXT_CONCURRENT_FETCHES"))
    concurrency = settings.getint("CONCURRENT_REQUESTS", 16)
    return concurrency if concurrency > 0 else 16


def flag(settings: BaseSettings, name: str) -> bool:
    """A boolean setting (``True``/``False``, ``1``/``0``, ``"true"``/``"false"``)."""
    try:
        return settings.getbool(name, DEFAULTS[name])
    except ValueError:
        raise RobotsTxtConfigError(f"{name} must be True or False, got {settings.get(name)!r}") from None


def _text(settings: BaseSettings, name: str) -> str | None:
    value = settings.get(name, DEFAULTS[name])
    if value is not None and not isinstance(value, str):
        raise RobotsTxtConfigError(f"{name} must be a string, got {value!r}")
    return value or None


#: An item field name: a Python identifier, which dataclass and attrs items need too.
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _field_name(settings: BaseSettings, name: str) -> str | None:
    """An item field name, None or empty (or False) for none."""
    value = settings.get(name, DEFAULTS[name])
    if value is None or value == "" or value is False:
        return None
    if not isinstance(value, str) or not _FIELD.fullmatch(value):
        raise RobotsTxtConfigError(f"{name} must be an item field name (letters, digits and '_', not starting with "
                                   f"a digit), or unset for none, got {value!r}")
    return value


def _path(settings: BaseSettings, name: str) -> str | None:
    """A directory setting: a string or an ``os.PathLike``, None or empty for none."""
    value = settings.get(name, DEFAULTS[name])
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if value is not None and not isinstance(value, str):
        raise RobotsTxtConfigError(f"{name} must be a directory path, got {value!r}")
    return value or None


#: A label as a Structured Field Dictionary key (RFC 9651, section 3.2), lower-cased:
#: what a Content-Usage field can state a preference for.
_LABEL = re.compile(r"[a-z*][a-z0-9_.*-]*")


def _labels(settings: BaseSettings, name: str) -> tuple[str, ...]:
    """A list-of-labels setting, read as Scrapy reads list settings (a string is
    comma-separated, :meth:`~scrapy.settings.BaseSettings.getlist`), lower-cased.
    A JSON-looking string is refused rather than read as one odd label."""
    raw = settings.get(name) or []
    if isinstance(raw, str):
        if raw.lstrip().startswith(("[", "{", '"')):
            raise RobotsTxtConfigError(
                f"{name} is a string that looks like JSON ({raw!r}); a list setting given as a string is "
                f"comma-separated, as Scrapy reads list settings: -s {name}=train-ai,search"
            )
        raw = [part.strip() for part in settings.getlist(name)]
        raw = [part for part in raw if part]
    if not isinstance(raw, (list, tuple)) or not all(isinstance(item, str) and item.strip() for item in raw):
        raise RobotsTxtConfigError(f"{name} must be a list of category names, got {raw!r}")
    labels = tuple(item.strip().lower() for item in raw)
    for label in labels:
        if not _LABEL.fullmatch(label):
            raise RobotsTxtConfigError(
                f"{name} lists {label!r}, which is not a label a site can state (lower-case letters, digits, "
                "'_', '-', '.', '*', starting with a letter)"
            )
    return labels


def purpose_tokens(value: object, name: str = "ROBOTSTXT_PURPOSE_TOKENS") -> tuple[str, ...]:
    """Product tokens (RFC 9309, 2.2.1: letters, ``_`` and ``-``), lower-cased, without
    duplicates; a string is comma-separated. Raises :class:`RobotsTxtConfigError`."""
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if value is None:
        value = []
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        raise RobotsTxtConfigError(f"{name} must be a list of product tokens, got {value!r}")
    tokens = tuple(dict.fromkeys(item.strip().lower() for item in value))
    for token in tokens:
        if not _TOKEN.fullmatch(token):
            raise RobotsTxtConfigError(f"{name} lists {token!r}, which is not a product token (letters, '_' and '-' "
                                       "only, as a robots.txt User-agent line names one)")
    return tokens


#: A product token (RFC 9309, 2.2.1), lower-cased.
_TOKEN = re.compile(r"[a-z_-]+")


def _usage_deny(settings: BaseSettings) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``ROBOTSTXT_USAGE_DENY`` and ``ROBOTSTXT_USAGE_EXTENSIONS``: every denied label is
    one the plugin knows or a declared extension (a typo would enforce nothing)."""
    extensions = _labels(settings, "ROBOTSTXT_USAGE_EXTENSIONS")
    deny = _labels(settings, "ROBOTSTXT_USAGE_DENY")
    known = known_labels()
    for label in deny:
        if label in known or label in extensions:
            continue
        close = difflib.get_close_matches(label, [*known, *extensions], n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        listed = ", ".join(f"{name!r} ({what})" for name, what in known.items())
        raise RobotsTxtConfigError(
            f"ROBOTSTXT_USAGE_DENY lists {label!r}, a usage category this plugin does not know, so it would "
            f"enforce nothing; {hint}the known ones: {listed}. A label of your own (a vocabulary extension) "
            "is declared in ROBOTSTXT_USAGE_EXTENSIONS"
        )
    return deny, extensions


@dataclass(frozen=True)
class Config:
    user_agent: str | None
    max_size: int
    cache_size: int
    policy: Policy
    crawl_delay: bool = False
    crawl_delay_max: float = 60.0
    usage_deny: tuple[str, ...] = ()
    usage_extensions: tuple[str, ...] = ()
    purpose_tokens: tuple[str, ...] = ()
    max_waiting: int = 100_000
    concurrent_fetches: int = 16
    store: Any = "memory"
    store_lock_ttl: float = 30.0
    store_retry_delay: float = 5.0
    store_timeout: float = 10.0
    dns_warmup: bool = True
    usage_headers: bool = True
    usage_meta: bool = False
    usage_meta_max_bytes: int = 32_768
    tdmrep: bool = False
    ledger: str | None = None
    ledger_rotate_bytes: int = 64 * 1024 * 1024
    ledger_responses: bool = False
    max_wait_idle: float = 120.0
    #: ``ROBOTSTXT_PROVENANCE``: the item field of the provenance, or None (off).
    provenance: str | None = None

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Config:
        check_names(settings)
        max_size = _number(settings, "ROBOTSTXT_MAX_SIZE")
        retry = _number(settings, "ROBOTSTXT_RETRY_DELAY")
        retry_max = _number(settings, "ROBOTSTXT_RETRY_MAX_DELAY")
        if retry_max < retry:
            raise RobotsTxtConfigError(
                f"ROBOTSTXT_RETRY_MAX_DELAY ({retry_max:g}) must be at least ROBOTSTXT_RETRY_DELAY ({retry:g})"
            )
        policy = Policy(
            ttl=_number(settings, "ROBOTSTXT_CACHE_TTL"),
            min_ttl=_number(settings, "ROBOTSTXT_CACHE_MIN_TTL"),
            max_redirects=_number(settings, "ROBOTSTXT_MAX_REDIRECTS"),
            retry_delay=retry,
            retry_max_delay=retry_max,
            keep_cached=_number(settings, "ROBOTSTXT_KEEP_CACHED"),
            max_wait=_number(settings, "ROBOTSTXT_MAX_WAIT"),
            max_wait_refused=_number(settings, "ROBOTSTXT_MAX_WAIT_REFUSED"),
            max_size=max_size,
            revalidate=flag(settings, "ROBOTSTXT_REVALIDATE"),
            keep_fetched=_path(settings, "ROBOTSTXT_LEDGER") is not None,
        )
        deny, extensions = _usage_deny(settings)
        return cls(
            user_agent=_text(settings, "ROBOTSTXT_USER_AGENT"),
            purpose_tokens=purpose_tokens(settings.get("ROBOTSTXT_PURPOSE_TOKENS")),
            max_size=max_size,
            cache_size=_number(settings, "ROBOTSTXT_CACHE_SIZE"),
            policy=policy,
            crawl_delay=flag(settings, "ROBOTSTXT_CRAWL_DELAY"),
            crawl_delay_max=_number(settings, "ROBOTSTXT_CRAWL_DELAY_MAX"),
            usage_deny=deny,
            usage_extensions=extensions,
            max_waiting=_number(settings, "ROBOTSTXT_MAX_WAITING"),
            concurrent_fetches=_concurrent_fetches(settings),
            store=settings.get("ROBOTSTXT_STORE", DEFAULTS["ROBOTSTXT_STORE"]),
            store_lock_ttl=_number(settings, "ROBOTSTXT_STORE_LOCK_TTL"),
            store_retry_delay=_number(settings, "ROBOTSTXT_STORE_RETRY_DELAY"),
            store_timeout=_number(settings, "ROBOTSTXT_STORE_TIMEOUT"),
            dns_warmup=flag(settings, "ROBOTSTXT_DNS_WARMUP"),
            usage_headers=flag(settings, "ROBOTSTXT_USAGE_HEADERS"),
            usage_meta=flag(settings, "ROBOTSTXT_USAGE_META"),
            usage_meta_max_bytes=_number(settings, "ROBOTSTXT_USAGE_META_MAX_BYTES"),
            tdmrep=flag(settings, "ROBOTSTXT_TDMREP"),
            ledger=_path(settings, "ROBOTSTXT_LEDGER"),
            ledger_rotate_bytes=_number(settings, "ROBOTSTXT_LEDGER_ROTATE_BYTES"),
            ledger_responses=flag(settings, "ROBOTSTXT_LEDGER_RESPONSES"),
            max_wait_idle=_number(settings, "ROBOTSTXT_MAX_WAIT_IDLE"),
            provenance=_field_name(settings, "ROBOTSTXT_PROVENANCE"),
        )


def refuse_builtin_beside(settings: Any, ours: str) -> None:
    """Refuse to start with Scrapy's built-in robots.txt middleware enabled beside ``ours``
    (read from ``DOWNLOADER_MIDDLEWARES`` as Scrapy's middleware manager reads it)."""
    from .runtime import compat as _compat

    if _compat.builtin_middleware_enabled(settings):
        raise RobotsTxtConfigError(
            f"Scrapy's built-in robots.txt middleware is enabled beside {ours}: both would fetch every robots.txt, "
            f"and the built-in one would judge each request first. Add '{_compat.BUILTIN_MIDDLEWARE}': None to "
            "DOWNLOADER_MIDDLEWARES, or enable this plugin with ADDONS = {'scrapy_rfc9309.Addon': 0}, which does "
            "it for you"
        )


def usage_line(config: Config) -> str:
    """The start-up line on usage preferences: the categories ``ROBOTSTXT_USAGE_DENY``
    enforces and the sources whose ``n`` for them drops a request or a response (or
    that none is enforced, and where preferences are read from for the reports)."""
    deny = {canonical(label) for label in config.usage_deny}
    everything = not deny  # nothing enforced: every source that is read, for the reports
    tdm = everything or any(reserves(label) for label in deny)
    robots_tags = everything or bool(deny & {"train-ai", "search"})  # noai, noindex, ...
    sources = ["robots.txt (Content-Usage, Content-Signal)"]
    off = []
    headers = ["Content-Usage", *(["X-Robots-Tag"] if robots_tags else []), *(["tdm-reservation"] if tdm else [])]
    if config.usage_headers:
        sources.append(f"response headers ({', '.join(headers)})")
    else:
        off.append("response headers (ROBOTSTXT_USAGE_HEADERS)")
    meta = [*(["robots", "the product token's"] if robots_tags else []), *(["tdm-reservation"] if tdm else [])]
    if meta and config.usage_meta:
        sources.append(f"HTML meta tags ({', '.join(meta)})")
    elif meta:
        off.append("HTML meta tags (ROBOTSTXT_USAGE_META)")
    if tdm and config.tdmrep:
        sources.append("tdmrep.json (TDMRep)")
    elif tdm:
        off.append("tdmrep.json (ROBOTSTXT_TDMREP)")
    not_read = f"; not read: {', '.join(off)}" if off else ""
    if everything:
        return (f"usage preferences: none enforced (ROBOTSTXT_USAGE_DENY is empty); read for the reports from "
                f"{', '.join(sources)}{not_read}")
    return (f"usage preferences enforced for {', '.join(config.usage_deny)} (ROBOTSTXT_USAGE_DENY): a request or "
            f"response is dropped when one of these says n: {', '.join(sources)}{not_read}")


def _shown(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value!r}`" if not isinstance(value, str) else f'`"{value}"`'


def _number_text(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def _example(spec: Setting) -> str:
    value = spec.example
    if isinstance(value, str):
        shown = f'"{value}"'
    elif isinstance(value, list):
        shown = "[" + ", ".join(f'"{item}"' for item in value) + "]"
    else:
        shown = repr(value)
    return f"`{spec.name} = {shown}`"


def settings_table() -> str:
    """The settings as a Markdown table: the documentation's settings page
    (``docs/conf.py`` writes it into the page at build time)."""
    rows = ["| setting | type | default | range | meaning | example |", "|---|---|---|---|---|---|"]
    for spec in SETTINGS:
        span = ""
        if spec.minimum is not None and spec.maximum is not None:
            span = f"{'(' if spec.above else '['}{_number_text(spec.minimum)}, {_number_text(spec.maximum)}]"
        cells = [f"`{spec.name}`", spec.type_name, _shown(spec.default), span, spec.summary, _example(spec)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    import sys

    # The settings command lives with the other commands (it loads the add-on, which imports this module);
    # it reads the module's own copy (``scrapy_rfc9309.config``), not ``__main__``'s.
    from scrapy_rfc9309.commands.settings import main as _main

    sys.exit(_main())
