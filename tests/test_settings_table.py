"""Each setting's default is written once (scrapy_rfc9309.config.SETTINGS): the
README's table is that table, and Config reads every entry of it."""

from __future__ import annotations

from pathlib import Path

from scrapy.settings import Settings

from scrapy_rfc9309.config import DEFAULTS, SETTINGS, Config, settings_table

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_readme_table_is_the_code_table():
    text = README.read_text(encoding="utf-8")
    assert settings_table() in text, "README's settings table differs: paste `python -m scrapy_rfc9309.config`"


def test_every_setting_in_the_readme_is_in_the_table():
    text = README.read_text(encoding="utf-8")
    table = text[text.index(settings_table().splitlines()[0]):]
    table = table[: table.index("\n\n")]
    names = {line.split("`")[1] for line in table.splitlines()[2:]}
    assert names == {spec.name for spec in SETTINGS}


def test_config_defaults_are_the_table_defaults():
    config = Config.from_settings(Settings())
    policy = config.policy
    read = {
        "ROBOTSTXT_USER_AGENT": config.user_agent,
        "ROBOTSTXT_MAX_SIZE": config.max_size,
        "ROBOTSTXT_MAX_REDIRECTS": policy.max_redirects,
        "ROBOTSTXT_CACHE_TTL": policy.ttl,
        "ROBOTSTXT_CACHE_MIN_TTL": policy.min_ttl,
        "ROBOTSTXT_CACHE_SIZE": config.cache_size,
        "ROBOTSTXT_RETRY_DELAY": policy.retry_delay,
        "ROBOTSTXT_RETRY_MAX_DELAY": policy.retry_max_delay,
        "ROBOTSTXT_MAX_WAIT": policy.max_wait,
        "ROBOTSTXT_KEEP_CACHED": policy.keep_cached,
        "ROBOTSTXT_CRAWL_DELAY": config.crawl_delay,
        "ROBOTSTXT_CRAWL_DELAY_MAX": config.crawl_delay_max,
        "ROBOTSTXT_USAGE_DENY": list(config.usage_deny),
        "ROBOTSTXT_MAX_WAITING": config.max_waiting,
        "ROBOTSTXT_STORE": config.store,
        "ROBOTSTXT_STORE_LOCK_TTL": config.store_lock_ttl,
        "ROBOTSTXT_STORE_RETRY_DELAY": config.store_retry_delay,
        "ROBOTSTXT_STORE_TIMEOUT": config.store_timeout,
    }
    for name, value in read.items():
        assert value == DEFAULTS[name], name
    # The store's own settings are read by the stores (disk path, Redis URL and prefix).
    assert set(DEFAULTS) - set(read) == {"ROBOTSTXT_STORE_PATH", "ROBOTSTXT_REDIS_URL", "ROBOTSTXT_REDIS_PREFIX",
                                         "ROBOTSTXT_REDIS_CLUSTER"}


def test_every_setting_can_be_changed():
    changed = {
        "ROBOTSTXT_CACHE_TTL": 120, "ROBOTSTXT_MAX_WAIT": 7, "ROBOTSTXT_STORE_TIMEOUT": 3, "ROBOTSTXT_CACHE_SIZE": 5,
    }
    config = Config.from_settings(Settings(changed))
    assert (config.policy.ttl, config.policy.max_wait, config.store_timeout, config.cache_size) == (120, 7, 3, 5)
