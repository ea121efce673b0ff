"""A real ``redis-server`` on a free loopback port, without persistence, that a test
can stop and start again (the Redis store must survive Redis going away), or that a
benchmark runs for a bounded time.

:func:`redis_server_binary` finds the program; the test suite skips (or, under CI,
fails) a test that needs it when it is missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["RedisCluster", "RedisServer", "free_port", "redis_server_binary"]


def redis_server_binary() -> str | None:
    """The path of ``redis-server`` on ``PATH``, or None."""
    return shutil.which("redis-server")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on at ``host`` right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _free_cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free as well (a cluster
    node whose bus port is taken exits without a word)."""
    import random

    for _ in range(200):
        port = random.randint(20000, 50000)
        try:
            with socket.socket() as first, socket.socket() as bus:
                first.bind(("127.0.0.1", port))
                bus.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port pair for a cluster node")


class RedisServer:
    """``redis-server`` on 127.0.0.1:``port``, without persistence.

    ``binary`` defaults to the one on ``PATH``. ``workdir`` (a temporary directory by
    default, removed by :meth:`close`) holds its files. With ``max_life`` (seconds) it
    runs under ``timeout`` in a session of its own, so that it stops by itself even if
    the process that started it dies; ``log`` then receives its output, and
    ``preexec_fn`` runs in the child before it starts; ``options`` are more
    ``redis-server`` arguments. Usable as a context manager (started on entry,
    stopped on exit).
    """

    def __init__(
        self,
        binary: str | None = None,
        *,
        workdir: str | Path | None = None,
        max_life: float | None = None,
        log: str | Path | None = None,
        preexec_fn: Callable[[], Any] | None = None,
        options: tuple[str, ...] = (),
    ) -> None:
        found = binary or redis_server_binary()
        if found is None:
            raise RuntimeError("redis-server is not installed")
        self.binary = found
        self.options = options
        self.port = _free_cluster_port() if "--cluster-enabled" in options else free_port()
        self._own_workdir = workdir is None
        self.workdir = str(workdir) if workdir is not None else tempfile.mkdtemp(prefix="redis-test-")
        self.max_life = max_life
        self.log = Path(log) if log is not None else None
        self.preexec_fn = preexec_fn
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def command(self) -> list[str]:
        command = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                   "--dir", self.workdir, "--loglevel", "warning", *self.options]
        wrapper = shutil.which("timeout") if self.max_life is not None else None
        if wrapper is not None:
            command = [wrapper, "-k", "5", str(self.max_life), *command]
        return command

    def _exited(self) -> str:
        if self.log is not None:
            return self.log.read_text(errors="replace")[-500:] if self.log.exists() else ""
        stderr = self.proc.stderr if self.proc is not None else None
        return stderr.read().decode(errors="replace") if stderr is not None else ""

    def start(self) -> RedisServer:
        if self.log is not None:
            with open(self.log, "wb") as out:
                self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, start_new_session=self.max_life is not None,
                                             preexec_fn=self.preexec_fn)
        else:
            self.proc = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         start_new_session=self.max_life is not None, preexec_fn=self.preexec_fn)
        # A bound for a server that never answers, far above what one takes to start on a loaded machine.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited: {self._exited()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith((b"+PONG", b"-NOAUTH")):  # -NOAUTH: it answers, with a password
                        return self
            except OSError:
                pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError("redis-server did not answer within 60 s")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()  # timeout, when it wraps the server, passes SIGTERM on
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                if self.max_life is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)  # the session started here
                else:
                    proc.kill()
                proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()

    def close(self) -> None:
        """Stop the server and remove the working directory it was given by default."""
        self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class RedisCluster:
    """A Redis Cluster of three masters (no replicas) on loopback ports, each a
    ``redis-server --cluster-enabled yes``, joined with ``redis-cli --cluster create``."""

    def __init__(self, binary: str | None = None) -> None:
        found = binary or redis_server_binary()
        if found is None:
            raise RuntimeError("redis-server is not installed")
        cli = shutil.which("redis-cli") or os.path.join(os.path.dirname(found), "redis-cli")
        if not os.path.exists(cli):
            raise RuntimeError("redis-cli is not installed (it comes with redis-server)")
        self.cli = cli
        self.nodes = [RedisServer(found, options=("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                                  "--cluster-node-timeout", "5000")) for _ in range(3)]

    def url(self) -> str:
        return self.nodes[0].url()

    def start(self) -> RedisCluster:
        try:
            for node in self.nodes:
                node.start()
            subprocess.run([self.cli, "--cluster", "create", *(f"127.0.0.1:{n.port}" for n in self.nodes),
                            "--cluster-replicas", "0", "--cluster-yes"],
                           check=True, capture_output=True, timeout=60)
            deadline = time.monotonic() + 30
            while not all(self._ok(node) for node in self.nodes):
                if time.monotonic() > deadline:
                    raise RuntimeError("the cluster did not reach cluster_state:ok within 30 s")
                time.sleep(0.1)
        except BaseException:
            self.close()
            raise
        return self

    def _ok(self, node: RedisServer) -> bool:
        answer = subprocess.run([self.cli, "-p", str(node.port), "cluster", "info"], capture_output=True,
                                timeout=10)
        return b"cluster_state:ok" in answer.stdout

    def flush(self) -> None:
        for node in self.nodes:
            subprocess.run([self.cli, "-p", str(node.port), "flushall"], check=True, capture_output=True, timeout=10)

    def close(self) -> None:
        for node in self.nodes:
            node.close()
