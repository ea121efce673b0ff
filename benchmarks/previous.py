"""The previous release of the package, for the benchmarks to measure beside the
current code: the ``scrapy_rfc9309`` tree at a git commit, exported into a
directory of its own with its C accelerator built in place. A benchmark runs
that code in child processes whose ``PYTHONPATH`` starts with that directory.

No release is tagged yet: the previous release is the commit the scale work
started from (``DEFAULT_REF``)."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The code before the scale work: files parsed whole, groups built for every
#: agent, store waiters polling.
DEFAULT_REF = "cc4d854"
#: Set in a child process that runs the previous release: the benchmark scripts
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


class PreviousRelease:
    """``with PreviousRelease(ref) as previous:`` exports and builds the tree;
    ``previous.env()`` is the environment of a child process running it, and
    ``previous.label`` is its short commit. ``previous.error`` says why it is
    not available (no git, unknown commit, the build failed): the benchmark then
    runs without that column."""

    def __init__(self, ref: str = DEFAULT_REF) -> None:
        self.ref = ref
        self.directory: str | None = None
        self.error: str | None = None
        self.label = ref

    def __enter__(self) -> PreviousRelease:
        try:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", self.ref, "scrapy_rfc9309"],
                                     capture_output=True, check=True, timeout=60).stdout
            commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", self.ref],
                                    capture_output=True, check=True, text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError) as exc:
            self.error = f"git could not export {self.ref}: {exc}"
            return self
        self.label = commit
        self.directory = tempfile.mkdtemp(prefix="rfc9309-previous-")
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(self.directory, filter="data") if sys.version_info >= (3, 12) else tar.extractall(
                self.directory)
        built = subprocess.run([sys.executable, "-c", _BUILD], cwd=self.directory, capture_output=True, text=True,
                               timeout=600, check=False)
        if built.returncode != 0:
            self.error = f"the C accelerator of {self.ref} did not build: {built.stderr.strip()[-300:]}"
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)

    @property
    def available(self) -> bool:
        return self.directory is not None and self.error is None

    def env(self) -> dict[str, str]:
        """The environment of a child process that imports the previous release."""
        assert self.directory is not None
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [self.directory, env.get("PYTHONPATH")]))
        env[ENV_FLAG] = "1"
        return env


def package_root_first() -> None:
    """Put this checkout first on ``sys.path`` (so that the benchmarks measure it
    without an install), unless this process runs the previous release."""
    if os.environ.get(ENV_FLAG):
        return
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
