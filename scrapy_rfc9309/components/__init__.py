"""The Scrapy components a project enables: the robots.txt and usage middlewares, the nofollow
middleware, the sitemap spider, and the middleware's queries."""
