"""Every class of the package has one role: at most 250 lines and 20 methods (issue 39).

An AST walk over the installed package's source, so a class that grows past the bound fails here
rather than in a reviewer's reading.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import scrapy_rfc9309

MAX_LINES = 250
MAX_METHODS = 20
PACKAGE = Path(scrapy_rfc9309.__file__).parent


def _classes() -> list[tuple[str, ast.ClassDef]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found.append((f"{path.relative_to(PACKAGE)}:{node.name}", node))
    return found


def _size(node: ast.ClassDef) -> tuple[int, int]:
    lines = (node.end_lineno or node.lineno) - node.lineno + 1
    methods = sum(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) for item in node.body)
    return lines, methods


def test_the_walk_finds_the_package_classes() -> None:
    names = {name.rsplit(":", 1)[1] for name, _ in _classes()}
    assert {"RobotsTxtMiddleware", "OriginState", "Ledger"} <= names


@pytest.mark.parametrize(("name", "node"), _classes(), ids=lambda value: value if isinstance(value, str) else "")
def test_a_class_has_one_role(name: str, node: ast.ClassDef) -> None:
    lines, methods = _size(node)
    assert lines <= MAX_LINES and methods <= MAX_METHODS, (
        f"{name}: {lines} lines, {methods} methods (at most {MAX_LINES} and {MAX_METHODS}): split its roles"
    )
