"""Settings of the example project.

The robots.txt block is the part to copy into your own project's ``settings.py``;
the rest are ordinary polite-crawler defaults.
"""

BOT_NAME = "example_project"
SPIDER_MODULES = ["example_project.spiders"]
NEWSPIDER_MODULE = "example_project.spiders"

# --- robots.txt, the RFC 9309 way ---------------------------------------------------
# The add-on removes Scrapy's built-in robots.txt middleware and puts
# scrapy_rfc9309.RobotsTxtMiddleware in its place (100). The equivalent without
# the add-on is:
#
#     ROBOTSTXT_OBEY = True
#     DOWNLOADER_MIDDLEWARES = {
#         "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
#         "scrapy_rfc9309.RobotsTxtMiddleware": 100,
#     }
ADDONS = {"scrapy_rfc9309.Addon": 0}

# The add-on turns this on already; it is spelled out so that the project says
# what it does. Set it to False (or `-s ROBOTSTXT_OBEY=False`) to turn it off.
ROBOTSTXT_OBEY = True

# The product token whose robots.txt groups this crawler obeys ("User-agent: DemoBot").
# Unset, it is taken from the User-Agent header below. A spider can set its own in
# `custom_settings` (see spiders/real_sites.py), a request with meta["robotstxt_user_agent"].
ROBOTSTXT_USER_AGENT = "DemoBot"

# Who you are, with a way to reach you: site owners read this in their logs.
USER_AGENT = "Mozilla/5.0 (compatible; DemoBot/0.1; +https://www.example.com/demobot.html)"

# An unreachable robots.txt (429, 5xx, network error) means "disallow everything for
# now": the origin's requests are held and the file is fetched again after 5 s,
# doubling up to ROBOTSTXT_RETRY_MAX_DELAY. A request held longer than
# ROBOTSTXT_MAX_WAIT is dropped with RobotsTxtUnreachable.
ROBOTSTXT_RETRY_DELAY = 5.0
ROBOTSTXT_RETRY_MAX_DELAY = 600.0
ROBOTSTXT_MAX_WAIT = 900.0

# How long a fetched robots.txt is trusted (a Cache-Control max-age on it can
# shorten this, but not below ROBOTSTXT_CACHE_MIN_TTL).
ROBOTSTXT_CACHE_TTL = 24 * 3600.0

# Bytes of a robots.txt that are downloaded and obeyed; the rest is ignored.
# 512000 (500 KiB) is the RFC's minimum and the default; it can only be raised.
ROBOTSTXT_MAX_SIZE = 512_000

# Apply the Crawl-delay of the group we obey to the site's download slot (never
# faster than the site asks), but never wait more than 30 s between requests.
ROBOTSTXT_CRAWL_DELAY = True
ROBOTSTXT_CRAWL_DELAY_MAX = 30.0

# Usage preferences (Content-Usage / Content-Signal) are exposed in
# response.meta["robotstxt_usage"]. Combined with what each response states (the
# Content-Usage, tdm-reservation and X-Robots-Tag headers, read by default, and the
# meta tags of its head, read with ROBOTSTXT_USAGE_META), they are in
# response.meta["robotstxt_preferences"].
ROBOTSTXT_USAGE_META = True
# A crawler collecting AI training data can drop the pages whose preference says
# train-ai=n:
# ROBOTSTXT_USAGE_DENY = ["train-ai"]
# The links of pages whose robots directives say nofollow are not followed:
SPIDER_MIDDLEWARES = {"scrapy_rfc9309.NofollowMiddleware": 800}

# Where robots.txt state is kept (ROBOTSTXT_STORE). "memory", the default, keeps it
# in this process: every run fetches every robots.txt again. "disk" keeps it in a
# SQLite file under .scrapy/robotstxt (or ROBOTSTXT_STORE_PATH), so a run restarted
# within the lifetime fetches none again; "redis" shares it across a fleet of
# processes (pip install 'scrapy-rfc9309[redis]'), one fetch per origin for all.
# The offline demo keeps the default, so that it shows the fetches every time.
# ROBOTSTXT_STORE = "disk"
# ROBOTSTXT_STORE = "redis"
# ROBOTSTXT_REDIS_URL = "redis://localhost:6379/0"  # default: REDIS_URL (scrapy-redis's), then this

# --- polite defaults ----------------------------------------------------------------
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 2
DOWNLOAD_DELAY = 1.0
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 1.0
AUTOTHROTTLE_MAX_DELAY = 30.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 1.0
DOWNLOAD_TIMEOUT = 30
RETRY_TIMES = 2
COOKIES_ENABLED = False
TELNETCONSOLE_ENABLED = False
FEED_EXPORT_ENCODING = "utf-8"
