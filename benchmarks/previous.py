"""The package at another git commit, for the benchmarks to measure beside the current code: the
commit checked out in a temporary git worktree, its C accelerator built in place. A benchmark runs
that code in child processes whose ``PYTHONPATH`` starts with the worktree (:meth:`Checkout.env`),
or, for a crawl, passes the worktree as the crawl's ``package_root``.

No release is tagged yet: the previous release is the commit the scale work started from
(``DEFAULT_REF``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT, commit

#: The code before the scale work: files parsed whole, groups built for every
#: agent, store waiters polling.
DEFAULT_REF = "cc4d854"
#: Set in a child process that runs another commit's package: the benchmark scripts
#: then import the package from ``PYTHONPATH`` instead of this checkout.
ENV_FLAG = "RFC9309_BENCH_PREVIOUS"

_BUILD = """
import os
from setuptools import Distribution, Extension
# The accelerator's place in the commit's tree: scrapy_rfc9309/core/ since the modules are in folders.
in_core = os.path.exists("scrapy_rfc9309/core/_speedups.c")
name = "scrapy_rfc9309.core._speedups" if in_core else "scrapy_rfc9309._speedups"
extension = Extension(name, [name.replace(".", "/") + ".c"])
dist = Distribution({"name": "previous", "ext_modules": [extension]})
command = dist.get_command_obj("build_ext")
command.inplace = True
dist.run_command("build_ext")
"""


def build(tree: str) -> str | None:
    """Build the C accelerator of the ``scrapy_rfc9309`` in ``tree`` in place (the build of every
    tree a benchmark compares, so that they differ in their code only); why it failed, or None."""
    for old in Path(tree).glob("scrapy_rfc9309/**/_speedups*.so"):
        old.unlink()
    built = subprocess.run([sys.executable, "-c", _BUILD], cwd=tree, capture_output=True, text=True, timeout=600,
                           check=False)
    return None if built.returncode == 0 else built.stderr.strip()[-300:]


class Checkout:
    """``with Checkout(ref) as tree:`` checks ``ref`` out in a temporary worktree and builds its
    accelerator when first asked about it; ``tree.directory`` holds its ``scrapy_rfc9309``,
    ``tree.env()`` is the environment of a child process running it, ``tree.label`` its short commit.
    ``tree.error`` says why it is not available (no git, unknown commit, the build failed): the
    benchmark then runs without it. Setting ``error`` first (a run told to leave it out) checks
    nothing out. The worktree is removed on leaving the ``with`` block."""

    def __init__(self, ref: str = DEFAULT_REF) -> None:
        self.ref = ref
        self._prepared = False
        self._error: str | None = None
        self._directory: str | None = None
        self._label = ref
        self._parent: str | None = None

    def __enter__(self) -> Checkout:
        return self

    def _prepare(self) -> None:
        if self._prepared:
            return
        self._prepared = True
        label = commit(ROOT, f"{self.ref}^{{commit}}")
        if not label:
            self._error = f"git does not know the commit {self.ref!r}"
            return
        self._label = label
        self._parent = tempfile.mkdtemp(prefix="rfc9309-bench-")
        tree = os.path.join(self._parent, label)
        added = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", tree, label],
                               capture_output=True, text=True, timeout=300, check=False)
        if added.returncode != 0:
            self._error = f"git could not check out {self.ref}: {added.stderr.strip()[-300:]}"
            return
        self._directory = tree
        failed = build(tree)
        if failed:
            self._error = f"the C accelerator of {self.ref} did not build: {failed}"

    def __exit__(self, *exc_info: object) -> None:
        if self._directory is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", self._directory],
                           capture_output=True, timeout=300, check=False)
        if self._parent is not None:
            shutil.rmtree(self._parent, ignore_errors=True)

    @property
    def error(self) -> str | None:
        self._prepare()
        return self._error

    @error.setter
    def error(self, reason: str | None) -> None:
        self._prepared = True
        self._error = reason

    @property
    def directory(self) -> str | None:
        self._prepare()
        return self._directory

    @property
    def label(self) -> str:
        self._prepare()
        return self._label

    @property
    def available(self) -> bool:
        return self.directory is not None and self.error is None

    def env(self) -> dict[str, str]:
        """The environment of a child process that imports this commit's package."""
        assert self.directory is not None
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [self.directory, env.get("PYTHONPATH")]))
        env[ENV_FLAG] = "1"
        return env


#: The name ``bench_core.py`` imports.
PreviousRelease = Checkout


def package_root_first() -> None:
    """Put this checkout first on ``sys.path`` (so that the benchmarks measure it
    without an install), unless this process runs another commit's package."""
    if os.environ.get(ENV_FLAG):
        return
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
