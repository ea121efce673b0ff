"""The package's version: the one place it is written (pyproject.toml reads it; the
root package and the ledger's run header import it)."""

__version__ = "0.1.0"
