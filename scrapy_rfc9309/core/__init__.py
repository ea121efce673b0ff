"""The pure core: robots.txt syntax and matching (with the C accelerator), URLs, product
tokens, origins, documents, the state model, the verdict, and the usage rules of robots.txt
and tdmrep.json. Imports neither Scrapy nor Twisted (the ``pure`` contract of
``[tool.importlinter]`` in pyproject.toml)."""
