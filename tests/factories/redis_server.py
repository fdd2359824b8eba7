"""A Redis server of the test's own (redis-server on a free loopback port), to restart at will.

Never the machine's shared Redis: other jobs use that one. It keeps its data in an
append-only file, as a production broker would, so a restart keeps the queued tasks.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import redis

from tests.factories import wait_for


class RedisServer:
    """redis-server on 127.0.0.1:<free port>, its files in `folder`."""

    def __init__(self, folder: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (Debian: apt-get install redis-server)")
        self.binary, self.folder = binary, Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.proc: subprocess.Popen | None = None
        self.start()

    @property
    def url(self) -> str:
        """Return the broker URL of database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server and wait until it answers."""
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
             "--appendonly", "yes", "--save", "", "--daemonize", "no"],
            stdout=open(self.folder / "redis.log", "a"), stderr=subprocess.STDOUT,  # noqa: SIM115
        )  # fmt: skip
        wait_for(
            f"redis-server on port {self.port} to answer", self._answers, timeout=30, every=0.05,
            detail=lambda: f"see {self.folder / 'redis.log'}",
        )  # fmt: skip

    def _answers(self) -> bool:
        try:
            return redis.Redis(port=self.port, socket_timeout=1).ping()
        except redis.exceptions.ConnectionError:
            return False

    def stop(self) -> None:
        """Stop the server (SIGTERM: it writes its append-only file first)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.proc = None

    def restart(self) -> None:
        """Stop and start it again on the same port."""
        self.stop()
        self.start()
