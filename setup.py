"""The optional C accelerator, ``scrapy_rfc9309.core._speedups``: everything else is in pyproject.toml.

Declared here rather than as ``[tool.setuptools] ext-modules`` in pyproject.toml, which setuptools
still calls experimental and warns about at every build. ``optional=True``: without a compiler the
package installs and runs in pure Python.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("scrapy_rfc9309.core._speedups", ["scrapy_rfc9309/core/_speedups.c"], optional=True)])
