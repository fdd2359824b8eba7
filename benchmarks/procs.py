"""Helpers the benchmark scripts share: a free loopback port and a group of child processes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from cdcweb import embedded_db  # noqa: E402 - the project's root is on the path from here on


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Processes:
    """Child processes in their own sessions, each logging to <logs>/<name>.log, stopped together."""

    def __init__(self, env: dict, logs: Path) -> None:
        self.env, self.logs, self.procs = env, logs, []

    def spawn(self, name: str, *args: str, env: dict | None = None) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "w")  # noqa: SIM115 - lives as long as the process
        proc = subprocess.Popen(args, cwd=ROOT, env=env or self.env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
        self.procs.append(proc)
        return proc

    def manage(self, *args: str) -> None:
        subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip

    def run_module(self, module: str, *args: str) -> None:
        """Run `python -m module args` to its end (output discarded)."""
        subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=self.env, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM every leader, then SIGKILL the process group of any still running after timeout.

        The leader only at first: Celery's warm shutdown lets its children finish their window.
        """
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        self.stop_embedded_database()

    def stop_embedded_database(self) -> None:
        """Stop the embedded PostgreSQL the processes started in the run's CDC_VAR_DIR, if they did."""
        var_dir = self.env.get("CDC_VAR_DIR")
        if var_dir and embedded_db.is_default(self.env) and embedded_db.is_running(Path(var_dir)):
            embedded_db.stop(Path(var_dir))
