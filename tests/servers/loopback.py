"""Whether this machine can serve on the loopback addresses the tests use.

The test suite and the benchmarks serve distinct origins on 127.0.0.2, 127.0.0.3, ...
as distinct hosts. Linux routes all of 127.0.0.0/8 to its loopback interface; macOS
configures 127.0.0.1 alone, and listening on 127.0.0.2 fails there until the address
is added to ``lo0``. :func:`loopback_problem` says so before anything starts, with
the command that fixes it. (The example project's demo site needs no fix: it puts
every origin on 127.0.0.1, a port each, where only that address works.)
"""

from __future__ import annotations

import socket
from collections.abc import Iterable

__all__ = ["loopback_problem", "unusable_address"]


def unusable_address(addresses: Iterable[str]) -> tuple[str, OSError] | None:
    """The first of ``addresses`` that a TCP server cannot listen on, with the error; None when all can."""
    for address in addresses:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((address, 0))
            except OSError as exc:
                return address, exc
    return None


def loopback_problem(last: int, addresses: Iterable[str] | None = None) -> str | None:
    """None when servers can listen on 127.0.0.1 to 127.0.0.<last> (or on ``addresses``),
    otherwise the message that names the address that failed and the fix."""
    found = unusable_address(addresses if addresses is not None else (f"127.0.0.{n}" for n in range(1, last + 1)))
    if found is None:
        return None
    address, error = found
    return (
        f"Cannot listen on {address} ({error.strerror or error}). The tests and the benchmarks serve their "
        f"origins on the loopback addresses 127.0.0.1 to 127.0.0.{last}, as distinct hosts. Linux routes all of "
        "127.0.0.0/8 to its loopback interface; on macOS, add the addresses to lo0 (until the next reboot): "
        f"for i in $(seq 2 {last}); do sudo ifconfig lo0 alias 127.0.0.$i up; done"
    )
