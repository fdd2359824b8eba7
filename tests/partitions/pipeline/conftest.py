"""A real pipeline for the tests: simulator over gRPC, Celery worker processes, a shared database.

The workers are separate processes, so the database must be one they can open too: a
fresh PostgreSQL database per module, on the embedded server the tests run on (or on
CDC_TEST_DATABASE_URL's server when set), and Redis when CDC_TEST_BROKER_URL is set. This
process reads it through Django with the default connection pointed there for the module.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connections

from cdcweb.settings import database_config
from partitions.simulator.spanner.config import SimulatorConfig, parse_fault
from partitions.simulator.spanner.server import start_server
from tests import factories
from tests.factories import databases
from tests.factories.api import point_default_at

ROOT = Path(__file__).resolve().parents[3]
CELERY = str(Path(sys.executable).with_name("celery"))
# Short enough that a crashed worker's lease lapses quickly, long enough for a window.
TEST_ENV = {
    "CDC_LEASE_SECONDS": "3",
    "CDC_LEASE_LOG_LEVEL": "DEBUG",  # test_pipeline checks every lease's renewals for overlaps
    "CDC_SCHEDULE_SECONDS": "0.5",
    "CDC_MAX_CONSECUTIVE_FAILURES": "2",
    "CDC_RETRY_BACKOFF_MAX": "2",
    "CDC_LAG_SAMPLE_SECONDS": "1",
    "CDC_STALL_CHECK_SECONDS": "2",
    "CDC_BROKER_POLLING_INTERVAL": "0.02",
    "SPANNER_DISABLE_BUILTIN_METRICS": "true",
    "PYTHONUNBUFFERED": "1",
}
SIM_OPTIONS = {"roots": 4, "split_every": 2.0, "merge_every": 2.0, "tps": 20.0, "seed": 7}


class Pipeline:
    """The environment every process of one test module shares, and its processes."""

    def __init__(self, var_dir: Path, database_url: str, broker_url: str, env: dict[str, str]):
        self.var_dir = var_dir
        self.landing = var_dir / "landing"
        self.env = {**os.environ, **env, "CDC_VAR_DIR": str(var_dir), "DATABASE_URL": database_url}
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        if broker_url:
            self.env["CELERY_BROKER_URL"] = broker_url
        self.procs: list[subprocess.Popen] = []
        self.logs = var_dir / "logs"
        self.logs.mkdir(exist_ok=True)

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run manage.py with the pipeline's environment; fail with its stderr if it fails."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True
        )
        if check and done.returncode:
            pytest.fail(f"manage.py {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
        return done

    def spawn(self, name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start a process in its own session (so a kill takes its children too)."""
        log = open(self.logs / f"{name}.log", "a")  # noqa: SIM115 - lives as long as the process
        proc = subprocess.Popen(
            args, cwd=ROOT, env={**self.env, **(env or {})}, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        self.procs.append(proc)
        return proc

    def _celery_worker(self, name: str, queues: str, threads: int, **env: str) -> subprocess.Popen:
        return self.spawn(
            name, CELERY, "-A", "cdcweb", "worker", "-l", "INFO", "-Q", queues, "--pool", "threads",
            "-c", str(threads), "-n", f"{name}@%h",
            "--without-gossip", "--without-mingle", "--without-heartbeat", env=env,
        )  # fmt: skip

    def worker(self, name: str = "w1", threads: int = 8, **env: str) -> subprocess.Popen:
        """Start a read worker like the Procfile's `reader` (its log shows leases taken and given up).

        `env` overrides the pipeline's environment for this worker (another host's CDC_VAR_DIR).
        """
        return self._celery_worker(name, "urgent,celery", threads, **env)

    def housekeeping(self, name: str = "hk") -> subprocess.Popen:
        """Start the housekeeping worker as the Procfile's: beat's tasks, start and drain."""
        return self._celery_worker(name, "housekeeping", 4)

    def reports(self, name: str = "rep") -> subprocess.Popen:
        """Start the reports worker as the Procfile's."""
        return self._celery_worker(name, "reports", 2)

    def alerts(self, name: str = "al") -> subprocess.Popen:
        """Start the alerts worker as the Procfile's: notices to webhooks, Slack and mail."""
        return self._celery_worker(name, "alerts", 4)

    def beat(self) -> subprocess.Popen:
        """Start `celery -A cdcweb beat` (its schedule in the database) and the housekeeping worker."""
        self.housekeeping()
        return self.spawn("beat", CELERY, "-A", "cdcweb", "beat", "-l", "WARNING")

    @staticmethod
    def kill(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
        """Send sig to the process and its children, and reap it."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def stop_all(self) -> None:
        """Stop every process this pipeline started (killed: a warm shutdown waits for live windows)."""
        for proc in self.procs:
            if proc.poll() is None:
                self.kill(proc)
        self.procs.clear()

    def log_text(self, name: str) -> str:
        """Return a process's log so far."""
        return (self.logs / f"{name}.log").read_text()


@pytest.fixture
def queued() -> factories.RecordingQueue:
    """Return a queue that records the reads and starts the services ask for, instead of a broker."""
    return factories.RecordingQueue()


@pytest.fixture(scope="module")
def pipeline_env() -> dict[str, str]:
    """Return the settings every process of the module runs with (a module may override this)."""
    return TEST_ENV


@pytest.fixture(scope="module")
def pipeline_database(migrated_database):
    """Yield the URL of the module's migrated, empty database (on the test server; a module may override
    this, with a database migrated or not)."""
    url = databases.create_database("pipeline", template=migrated_database)
    yield url
    databases.drop_database(url)


@pytest.fixture(scope="module")
def pipeline_broker() -> str:
    """Return the module's broker URL: CDC_TEST_BROKER_URL's Redis, or "" for the filesystem broker."""
    return os.environ.get("CDC_TEST_BROKER_URL", "")


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, django_db_blocker, pipeline_env, pipeline_database, pipeline_broker):
    """Yield a migrated, empty pipeline environment; stop its processes afterwards."""
    var_dir = tmp_path_factory.mktemp("var")
    database_url, broker_url = pipeline_database, pipeline_broker
    if broker_url:
        import redis

        redis.Redis.from_url(broker_url).flushdb()
    pipe = Pipeline(var_dir, database_url, broker_url, pipeline_env)
    if not databases.is_migrated(database_url):
        pipe.manage("migrate", "--no-input")
    new = database_config(database_url, var_dir)
    # Keep Django's filled-in defaults, but not the other engine's OPTIONS.
    new = {**connections["default"].settings_dict, "OPTIONS": {}, **new, "NAME": str(new["NAME"])}
    with django_db_blocker.unblock():
        old = point_default_at(new)
        try:
            yield pipe
        finally:
            pipe.stop_all()
            point_default_at(old)


@pytest.fixture(scope="module")
def sim_config() -> SimulatorConfig:
    """Return the simulator's config, its epoch pinned so the ground truth is fixed too."""
    epoch = (datetime.now(UTC) - timedelta(hours=2)).replace(second=0, microsecond=0)
    return SimulatorConfig(epoch=epoch, retention=86400.0, **SIM_OPTIONS)


@pytest.fixture(scope="module")
def sim(sim_config):
    """Yield a simulator on a free port, serving the pinned config."""
    server = start_server(sim_config)
    yield server
    server.stop(0)


@pytest.fixture
def faulty_sim(sim_config):
    """Yield a factory of simulators with faults on one port (stopped and restarted at will)."""
    servers = []

    def start(*faults: str, port: int = 0):
        config = SimulatorConfig(**{**sim_config.__dict__, "faults": tuple(parse_fault(f) for f in faults)})
        servers.append(start_server(config, port=port))
        return servers[-1]

    yield start
    for server in servers:
        server.stop(0)


_wait_for = factories.wait_for  # module-scoped fixtures here cannot take the wait_for fixture
