"""Helpers the benchmark scripts share: a free loopback port, a group of child processes, a deployment."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from cdcweb import embedded_db  # noqa: E402 - the project's root is on the path from here on

CELERY = str(Path(sys.executable).with_name("celery"))


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


class Deployment:
    """A temporary deployment on the embedded defaults, as the Procfile runs it.

    Its own CDC_VAR_DIR (database, broker, landing zone, logs), a port for the simulator,
    the environment every process gets, and the processes themselves.
    """

    def __init__(self, prefix: str) -> None:
        self.var = Path(tempfile.mkdtemp(prefix=prefix))
        self.var.chmod(0o755)  # the embedded server may run as another user (root runs it as nobody)
        self.port = free_port()
        self.env = {
            **os.environ,
            "CDC_VAR_DIR": str(self.var),
            "SPANNER_EMULATOR_HOST": f"127.0.0.1:{self.port}",
            "SPANNER_DISABLE_BUILTIN_METRICS": "true",
            "PYTHONUNBUFFERED": "1",
        }
        self.procs = Processes(self.env, self.var)

    def manage(self, *args: str) -> str:
        """Run `manage.py args` to its end; return its output, or exit with its error."""
        out = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env,
                             capture_output=True, text=True, check=False)  # fmt: skip
        if out.returncode:
            raise SystemExit(f"manage.py {' '.join(args)} failed:\n{out.stderr[-2000:]}")
        return out.stdout

    def simulator(self, *args: str, timeout: float = 60) -> None:
        """Start the Spanner simulator on this deployment's port; return once it answers."""
        port = str(self.port)
        self.procs.spawn("simulator", sys.executable, "manage.py", "spanner_simulator", "--port", port, *args)
        import grpc

        grpc.channel_ready_future(grpc.insecure_channel(f"127.0.0.1:{self.port}")).result(timeout=timeout)

    def procfile(
        self, read_threads: int | None = None, log_level: str = "INFO", readers: int = 1
    ) -> subprocess.Popen:
        """Start the Procfile's reader, housekeeping worker and beat; return the (first) reader.

        The reader's pool is CDC_READ_THREADS threads (the Procfile's default, 32) unless given.
        readers > 1 starts that many reader processes (reader, reader2, ...), as a host would
        run the Procfile's reader line more than once; self.readers lists them all.
        """
        threads = read_threads or int(os.environ.get("CDC_READ_THREADS", "32"))
        names = ["reader"] + [f"reader{i}" for i in range(2, readers + 1)]
        workers = [(name, "urgent,celery", threads) for name in names] + [("housekeeping", "housekeeping", 4)]
        self.readers = []
        for name, queues, size in workers:
            proc = self.procs.spawn(name, CELERY, "-A", "cdcweb", "worker", "-l", log_level, "-Q", queues,
                                    "--pool", "threads", "-c", str(size), "-n", f"{name}@%h")  # fmt: skip
            if name.startswith("reader"):
                self.readers.append(proc)
        self.procs.spawn("beat", CELERY, "-A", "cdcweb", "beat", "-l", "WARNING", "-s",
                         str(self.var / "celerybeat-schedule"))  # fmt: skip
        return self.readers[0]

    def setup_django(self) -> None:
        """Set up Django in this process against the deployment's database."""
        prefixes = ("CDC_", "SPANNER_", "DATABASE_", "CELERY_")
        os.environ.update({k: v for k, v in self.env.items() if k.startswith(prefixes)})
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")
        import django
        from django.apps import apps

        if not apps.ready:
            django.setup()
