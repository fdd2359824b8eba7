"""The API under 50 concurrent clients on gunicorn over loopback, while a live stream is being read.

    flock /tmp/bench.lock .venv/bin/python benchmarks/api_load.py [--database-url URL]
        [--clients 50] [--seconds 30] [--workers 2] [--threads 2] [--port 8765]
        [--broker-url redis://127.0.0.1:6379/3] [--cache-url URL] [--cache-seconds 1] [--tps 20]
        [--worker-connections N]

1. The benchmark database (api_bench_db.py) holds bench-10k: 10,000 partitions and
   30 days of lag samples (PAUSED here, so that the workers leave its made-up
   partitions alone; its lag samples are topped up to now, as if it were live).
2. The real pipeline runs beside it on the same database: the Spanner simulator
   (live, --tps transactions a second, 2 root partitions, a split and a merge every
   10 minutes), a Celery worker with --readers processes and Celery beat, with
   Redis as broker, reading a new stream bench-live (--window seconds a window)
   from a minute ago onwards; the run waits until it has read records.
3. gunicorn (gthread) serves cdcweb on 127.0.0.1; wrk (benchmarks/api_load.lua)
   keeps --clients connections busy with the dashboard's polling mix over both
   streams for --seconds, after a 5 s warm-up. Without wrk, Python threads do it.
4. Prints requests/s, latency percentiles, errors (status >= 300, socket errors),
   the records bench-live read during the run, and the load average.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from api_bench_db import DEFAULT_URL, SIZES, ensure_data, setup_django
from api_load_clients import run_python_clients
from procs import Processes, free_port

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
LIVE = "bench-live"


def pipeline_env(args: argparse.Namespace, var: Path, sim_port: int) -> dict:
    """Return the environment shared by the simulator, worker, beat and gunicorn."""
    env = {
        **os.environ,
        "DATABASE_URL": args.database_url,
        "CELERY_BROKER_URL": args.broker_url,
        "CDC_VAR_DIR": str(var),
        "SPANNER_EMULATOR_HOST": f"127.0.0.1:{sim_port}",
        "SPANNER_DISABLE_BUILTIN_METRICS": "true",
        "CDC_API_CACHE_SECONDS": str(args.cache_seconds),
    }
    # gunicorn refuses the development secret key (cdcweb/security.py): a throwaway one.
    env.setdefault("DJANGO_SECRET_KEY", secrets.token_urlsafe(50))
    if args.cache_url:
        env["CACHE_URL"] = args.cache_url
    return env


def pause_synthetic_streams() -> None:
    """Keep the workers off bench-1k and bench-10k: their partitions exist in no source.

    Benchmark data, set directly as tests.factories.lineage.make_lineage_stream sets it; what the API
    computes for a stream does not depend on its state.
    """
    from streams.models import Stream

    reason = "benchmark data: no source to read"
    Stream.objects.filter(name__in=SIZES).update(state=Stream.State.PAUSED, state_reason=reason)


def top_up_lag_samples(stream) -> int:
    """Add 10 s lag samples from the newest one up to now, so that ?since=-10m finds ~60 as when live."""
    from django.utils import timezone

    from partitions.models import LagSample

    newest = LagSample.objects.filter(stream=stream).latest("at")
    at, now, added = newest.at + timedelta(seconds=10), timezone.now(), []
    while at <= now:
        added.append(LagSample(stream=stream, at=at, lag_seconds=newest.lag_seconds,
                               low_watermark=at - timedelta(seconds=newest.lag_seconds),
                               holding_partition_id=newest.holding_partition_id,
                               p95_partition_lag=newest.p95_partition_lag,
                               max_partition_lag=newest.max_partition_lag,
                               data_records=newest.data_records, resolution_seconds=10))  # fmt: skip
        at += timedelta(seconds=10)
    LagSample.objects.bulk_create(added, batch_size=2_000)
    return len(added)


def start_pipeline(procs: Processes, args: argparse.Namespace, sim_port: int):
    """Start simulator, worker and beat; register and start bench-live; wait until it reads."""
    import redis

    from streams.models import Stream

    redis.Redis.from_url(args.broker_url).flushdb()  # the benchmark's own broker database
    epoch = (datetime.now(UTC) - timedelta(hours=1)).replace(second=0, microsecond=0)
    procs.spawn("simulator", sys.executable, "manage.py", "spanner_simulator", "--port", str(sim_port),
                "--tps", str(args.tps), "--roots", "2", "--split-every", "10m", "--merge-every", "10m",
                "--epoch", epoch.isoformat())  # fmt: skip
    procs.spawn("worker", str(BIN / "celery"), "-A", "cdcweb", "worker", "-c", str(args.readers),
                "-l", "INFO", "-n", "bench-live@%h", "--without-gossip", "--without-mingle")  # fmt: skip
    procs.spawn("beat", str(BIN / "celery"), "-A", "cdcweb", "beat", "-l", "INFO")
    Stream.objects.filter(name=LIVE).delete()
    procs.manage("cdc_stream", "create", LIVE, "--project", "bench", "--instance", "bench",
                 "--database", "demo-db", "--change-stream", "Changes", "--start=-1m", "--window-seconds",
                 str(args.window), "--emulator-host", procs.env["SPANNER_EMULATOR_HOST"])  # fmt: skip
    procs.manage("cdc_stream", "start", LIVE)
    print(f"{LIVE} started; waiting for its first records", flush=True)
    deadline = time.monotonic() + 120
    while live_records() == 0:
        if time.monotonic() > deadline:
            raise SystemExit(f"{LIVE} read nothing in 120 s: see the logs in {procs.logs}")
        time.sleep(1)
    return Stream.objects.get(name=LIVE)


def live_records() -> int:
    """Return the data change records bench-live has checkpointed so far."""
    from django.db.models import Sum

    from partitions.models import Partition

    return Partition.objects.filter(stream__name=LIVE).aggregate(n=Sum("data_records"))["n"] or 0


def live_status() -> str:
    """Return bench-live's state, partitions and lag, as the API shows them."""
    from cdcweb.dashboard.api.serializers import StreamSerializer
    from streams.models import Stream

    data = StreamSerializer(Stream.objects.get(name=LIVE)).data
    running = data["partitions_by_state"]["RUNNING"]
    return f"{data['state']}, {running} partitions RUNNING, lag {data['lag_seconds']:.1f} s"


def worker_connections(args: argparse.Namespace) -> int:
    """Return each gunicorn worker's connection limit: --worker-connections, else an even share.

    Without a limit, the first worker to wake accepts most of wrk's connections, all
    opened at once and kept alive: half the runs measured one process of two (~600
    against ~1,250 requests/s on 2026-11-27). A share of clients/workers (plus the
    threads, so that every held connection may stay alive) spreads them as a load
    balancer in front would.
    """
    if args.worker_connections:
        return args.worker_connections
    return -(-args.clients // args.workers) + args.threads


def start_gunicorn(procs: Processes, args: argparse.Namespace) -> None:
    """Start gunicorn serving cdcweb and wait until it answers /healthz."""
    import http.client

    procs.spawn("gunicorn", str(BIN / "gunicorn"), "cdcweb.wsgi", "-b", f"127.0.0.1:{args.port}",
                "-w", str(args.workers), "-k", "gthread", "--threads", str(args.threads),
                "--worker-connections", str(worker_connections(args)),
                "--log-level", "warning")  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status in (200, 503):
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit("gunicorn did not start")


def run_wrk(wrk: str, args, token: str, ids: list[int], seconds: float) -> dict:
    """Run wrk with api_load.lua; return its RESULT line as numbers."""
    command = [wrk, "-t2", f"-c{args.clients}", f"-d{seconds:g}s", "--timeout", "10s", "--latency",
               "-s", str(ROOT / "benchmarks" / "api_load.lua"), f"http://127.0.0.1:{args.port}",
               "--", token, *map(str, ids)]  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    found = re.search(r"^RESULT (.*)$", out, re.MULTILINE)
    if found is None:
        raise SystemExit(f"wrk printed no RESULT:\n{out}")
    result = {k: float(v) for k, v in (item.split("=") for item in found.group(1).split())}
    result["errors"] = sum(result[k] for k in ("status_errors", "connect", "read", "write", "timeout"))
    bad = re.search(r"^BAD (.*)$", out, re.MULTILINE)
    result["bad"] = bad.group(1) if bad else ""
    return result


def connections_per_process(port: int) -> list[int]:
    """Return how many established connections each process holds on port, largest first (ss)."""
    out = subprocess.run(["ss", "-Htnp", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True, check=False).stdout  # fmt: skip
    counts: dict[str, int] = {}
    for pid in re.findall(r"pid=(\d+)", out):
        counts[pid] = counts.get(pid, 0) + 1
    return sorted(counts.values(), reverse=True)


def generate_load(args, token: str, ids: list[int], seconds: float) -> tuple[str, dict]:
    """Run wrk if installed, else the Python clients; return (which, result), with the connections' split.

    The split is read halfway through: the clients' kept-alive connections stay with the
    gunicorn worker that accepted them, so it tells whether every worker served.
    """
    split: list[list[int]] = []
    timer = threading.Timer(seconds / 2, lambda: split.append(connections_per_process(args.port)))
    timer.start()
    try:
        wrk = shutil.which("wrk")
        if wrk:
            which = "wrk (benchmarks/api_load.lua, 2 threads)"
            result = run_wrk(wrk, args, token, ids, seconds)
        else:
            which = "Python threads (wrk not found)"
            result = run_python_clients(args.port, args.clients, token, ids, seconds)
    finally:
        timer.cancel()
    result["split"] = split[0] if split else []
    return which, result


def report(which: str, args, result: dict, records: int, status: str, loads: tuple) -> None:
    """Print what the run measured."""
    cache = f"{args.cache_url or 'local memory'}, {args.cache_seconds:g} s"
    print(f"load generator: {which}; {args.clients} connections for {result['seconds']:.1f} s")
    print(f"gunicorn: {args.workers} gthread workers x {args.threads} threads, at most "
          f"{worker_connections(args)} connections each; API cache: {cache}")  # fmt: skip
    print(f"connections per gunicorn worker (halfway): {' / '.join(map(str, result['split'])) or 'not read'}")
    print(f"requests {result['requests']:.0f} = {result['requests'] / result['seconds']:.1f} req/s")
    print(f"latency ms: p50 {result['p50']:.1f}  p90 {result['p90']:.1f}  p99 {result['p99']:.1f}  "
          f"max {result['max']:.1f}")  # fmt: skip
    print(f"errors {result['errors']:.0f} {result.get('bad', '')}".rstrip())
    print(f"{LIVE}: {records} data change records read during the run ({records / result['seconds']:.1f}/s); "
          f"at the end {status}")  # fmt: skip
    print(f"load average before: {loads[0]}; after: {loads[1]}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--broker-url", default="redis://127.0.0.1:6379/3")
    parser.add_argument("--cache-url", default="", help="CACHE_URL of gunicorn; local memory if empty")
    parser.add_argument("--cache-seconds", type=float, default=1.0, help="CDC_API_CACHE_SECONDS (0: off)")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--workers", type=int, default=2)
    # Measured on 2 cores: 2 x 2 beat 2 x 3/4/8, 1 x 16 and 3 x 2 (fewer threads fight over each GIL).
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--port", type=int, default=8765)
    limit = "gunicorn's connections per worker (default clients/workers + threads; gunicorn's own: 1000)"
    parser.add_argument("--worker-connections", type=int, default=0, help=limit)
    parser.add_argument("--rebuild", action="store_true", help="rebuild the benchmark streams first")
    parser.add_argument("--tps", type=float, default=20, help="simulator transactions per second")
    parser.add_argument("--readers", type=int, default=4, help="worker processes reading partitions")
    parser.add_argument("--window", type=int, default=10, help="bench-live's window, seconds")
    return parser.parse_args()


def main() -> None:
    """Build the data, start the pipeline and gunicorn, load them, report, stop everything."""
    args = parse_args()
    setup_django(args.database_url)
    data = ensure_data(args.rebuild)
    pause_synthetic_streams()
    top_up_lag_samples(data["streams"]["bench-10k"])
    var = Path(tempfile.mkdtemp(prefix="cdc-api-load-"))
    procs = Processes(pipeline_env(args, var, free_port()), var)
    try:
        live = start_pipeline(procs, args, int(procs.env["SPANNER_EMULATOR_HOST"].rsplit(":", 1)[1]))
        start_gunicorn(procs, args)
        ids = [data["streams"]["bench-10k"].pk, live.pk]
        generate_load(args, data["token"], ids, 5)  # warm-up: imports, connections, first queries
        before, loads = live_records(), [" ".join(f"{x:.2f}" for x in os.getloadavg())]
        which, result = generate_load(args, data["token"], ids, args.seconds)
        loads.append(" ".join(f"{x:.2f}" for x in os.getloadavg()))
        report(which, args, result, live_records() - before, live_status(), tuple(loads))
    finally:
        procs.stop()
        print(f"logs: {var}")


if __name__ == "__main__":
    main()
