"""A real Redis Cluster for the tests: three ``redis-server --cluster-enabled yes``
nodes on loopback, joined with ``redis-cli --cluster create`` (the single server the
other tests use is :class:`scrapy_rfc9309.testing.RedisServer`)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time

__all__ = ["RedisCluster"]



def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _free_cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free as well."""
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
    """``redis-server`` on 127.0.0.1:``port``, without persistence."""

    def __init__(self, binary: str, *options: str) -> None:
        self.binary = binary
        self.options = options
        self.port = _free_cluster_port() if "--cluster-enabled" in options else _free_port()
        self.workdir = tempfile.mkdtemp(prefix="redis-test-")
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> RedisServer:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.workdir, "--loglevel", "warning", *self.options],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited: {self.proc.stderr.read().decode()}")  # type: ignore[union-attr]
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError("redis-server did not answer within 10 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()
        self.proc = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


class RedisCluster:
    """A Redis Cluster of three masters (no replicas) on loopback ports, each a
    ``redis-server --cluster-enabled yes``, joined with ``redis-cli --cluster create``."""

    def __init__(self, binary: str) -> None:
        cli = shutil.which("redis-cli") or os.path.join(os.path.dirname(binary), "redis-cli")
        if not os.path.exists(cli):
            raise RuntimeError("redis-cli is not installed (it comes with redis-server)")
        self.cli = cli
        self.nodes = [RedisServer(binary, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                  "--cluster-node-timeout", "5000") for _ in range(3)]

    def url(self) -> str:
        return f"redis://127.0.0.1:{self.nodes[0].port}/0"

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
