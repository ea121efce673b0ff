"""An example Scrapy project using scrapy-rfc9309. See ``settings.py`` for the part to copy."""
