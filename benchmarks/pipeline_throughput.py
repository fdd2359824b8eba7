"""Pipeline throughput: catch-up into the landing zone plus checkpoints, with real Celery workers.

For 1 and 2 read workers (each as the Procfile's `reader`: `celery -A cdcweb worker
-Q urgent,celery --pool threads -c 32`, BENCH_READ_THREADS to change it, beside one
housekeeping worker), a stream over a backlog of the simulator (a subprocess, over
gRPC) is read to its end timestamp:

- data change records per second, landed (Parquet, fsynced) and checkpointed;
- child scheduling latency, parent FINISHED -> child RUNNING, p50 / p95;
- database rows written per partition-hour (lease, checkpoint and hand-over updates
  per window, plus partition and edge inserts), at the benchmark's window and at the
  default 60 s window;
- lag-sample rows per stream-day, by running a simulated 30 days of 10 s samples
  through the downsampling tiers.

Beside them, the reader-only rate: `manage.py tail_change_stream` (read_throughput.py's
(c)) over the same backlog of the same simulator. It runs twice before the workers
start: the simulator generates each second on first use and caches it, so the first
pass warms it (as read_throughput.py does) and every measured run finds it warm;
without that the 1-worker run alone paid the generation (2,265 rec/s cold against
5,835 rec/s for 2 workers warm: a "2.6x" speed-up on 2 cores).

Run: .venv/bin/python benchmarks/pipeline_throughput.py [--minutes 5] [--tps 100] [--window 60]
The embedded setup by default; DATABASE_URL / CELERY_BROKER_URL switch it as for the app.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from procs import Processes, free_port  # noqa: E402

CELERY = str(Path(sys.executable).with_name("celery"))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="backlog length in stream time")
    parser.add_argument("--tps", type=float, default=100.0, help="simulator transactions per second")
    parser.add_argument("--window", type=int, default=60, help="window length in seconds")
    parser.add_argument("--split-every", default="30s")
    return parser.parse_args()


class Bench:
    """One temporary pipeline: environment, simulator, database, processes."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.var = Path(tempfile.mkdtemp(prefix="cdc-bench-"))
        self.port = free_port()
        self.epoch = (datetime.now(UTC) - timedelta(hours=2)).replace(second=0, microsecond=0)
        self.env = {
            **os.environ,
            "CDC_VAR_DIR": str(self.var),
            "SPANNER_EMULATOR_HOST": f"127.0.0.1:{self.port}",
            "SPANNER_DISABLE_BUILTIN_METRICS": "true",
            "CDC_SCHEDULE_SECONDS": "1",
            "CDC_LEASE_LOG_LEVEL": "DEBUG",  # it counts the renewals
            "CDC_BROKER_POLLING_INTERVAL": "0.02",
        }
        self.procs = Processes(self.env, self.var)

    def run(self, *args: str) -> str:
        out = subprocess.run(args, cwd=ROOT, env=self.env, capture_output=True, text=True, check=False)
        if out.returncode:
            raise SystemExit(f"{' '.join(args)} failed:\n{out.stderr[-2000:]}")
        return out.stdout

    def spawn(self, name: str, *args: str) -> subprocess.Popen:
        return self.procs.spawn(name, *args)

    def start_simulator(self) -> None:
        self.spawn(
            "simulator", sys.executable, "manage.py", "spanner_simulator", "--port", str(self.port),
            "--tps", str(self.args.tps), "--epoch", self.epoch.isoformat(),
            "--split-every", self.args.split_every, "--merge-every", self.args.split_every,
        )  # fmt: skip
        import grpc

        grpc.channel_ready_future(grpc.insecure_channel(f"127.0.0.1:{self.port}")).result(timeout=60)

    def stop(self) -> None:
        self.procs.stop(timeout=20)


def setup_django(bench: Bench) -> None:
    os.environ.update({k: v for k, v in bench.env.items() if k.startswith(("CDC_", "DATABASE_", "CELERY_"))})
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")
    import django

    django.setup()


def reader_only(bench: Bench, start: datetime) -> dict:
    """Tail [start, start + minutes] with tail_change_stream (twice: warm, then measured)."""
    end = start + timedelta(minutes=bench.args.minutes)
    args = [sys.executable, "manage.py", "tail_change_stream", "--project", "b", "--instance", "b",
            "--database", "demo-db", "--stream", "Changes", "--emulator-host", f"127.0.0.1:{bench.port}",
            "--start", start.isoformat(), "--end", end.isoformat()]  # fmt: skip
    for _ in range(2):
        began = time.monotonic()
        out = subprocess.run(args, cwd=ROOT, env=bench.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True, check=True)  # fmt: skip
        elapsed = time.monotonic() - began
    summary = dict(item.split("=") for item in out.stderr.split())
    records, reading = int(summary["data_records"]), float(summary["seconds"])
    return {"records": records, "seconds": elapsed, "rate": records / elapsed, "read_rate": records / reading}


def catch_up(bench: Bench, name: str, start: datetime, workers: int) -> dict:
    """Read [start, start + minutes] with `workers` worker processes; return the measurements."""
    from streams.models import Stream

    end = start + timedelta(minutes=bench.args.minutes)
    bench.run(
        sys.executable, "manage.py", "cdc_stream", "create", name, "--project", "b", "--instance", "b",
        "--database", "demo-db", "--change-stream", "Changes", "--start", start.isoformat(),
        "--end", end.isoformat(), "--window-seconds", str(bench.args.window),
    )  # fmt: skip
    threads = os.environ.get("BENCH_READ_THREADS", "32")  # the Procfile's reader
    procs = [bench.spawn(f"{name}-w{i}", CELERY, "-A", "cdcweb", "worker", "-Q", "urgent,celery",
                         "--pool", "threads", "-c", threads, "-l", "INFO", "-n", f"{name}{i}@%h",
                         "--without-gossip", "--without-mingle", "--without-heartbeat")
             for i in range(workers)]  # fmt: skip
    procs.append(bench.spawn(f"{name}-hk", CELERY, "-A", "cdcweb", "worker", "-Q", "housekeeping", "--pool",
                             "threads", "-c", "4", "-l", "INFO", "-n", f"{name}-hk@%h"))  # fmt: skip
    time.sleep(6)  # let the workers boot: their start-up is not throughput
    began = time.monotonic()
    bench.run(sys.executable, "manage.py", "cdc_stream", "start", name)
    stream = Stream.objects.get(name=name)
    while not (stream.state == Stream.State.PAUSED and "reached end" in stream.state_reason):
        time.sleep(0.2)
        stream.refresh_from_db()
        if stream.state == Stream.State.FAILED_PERMANENTLY:
            raise SystemExit(f"{name} failed: {stream.state_reason}")
    elapsed = time.monotonic() - began
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    logs = "".join((bench.var / f"{name}-w{i}.log").read_text() for i in range(workers))
    windows, renewals = len(re.findall("LEASE start", logs)), len(re.findall("LEASE renew", logs))
    return measure(stream, elapsed, windows, renewals)


def measure(stream, elapsed: float, windows: int, renewals: int) -> dict:
    from partitions.models import Partition, PartitionEdge
    from streams.models import Stream, StreamTransition

    parts = {p.pk: p for p in Partition.objects.filter(stream=stream)}
    # Reading time without the start command's process start-up, as the tail's own seconds:
    # from the start action's transition to the last partition's end (database times).
    started = StreamTransition.objects.filter(stream=stream, to_state=Stream.State.STARTING).earliest("at").at
    reading = (max(p.finished_at for p in parts.values()) - started).total_seconds()
    edges = list(PartitionEdge.objects.filter(stream=stream).values_list("parent_id", "child_id"))
    parents: dict[int, list[int]] = {}
    for parent, child in edges:
        parents.setdefault(child, []).append(parent)
    latency = sorted(
        (parts[c].running_at - max(parts[p].finished_at for p in ps)).total_seconds()
        for c, ps in parents.items()
    )
    records = sum(p.data_records for p in parts.values())
    hours = sum((p.end_at - p.start_at).total_seconds() for p in parts.values()) / 3600
    # Per window: the lease UPDATE and the hand-over UPDATE; per checkpoint one UPDATE (a
    # renewal, or the one that finishes a partition); the partition and edge inserts.
    rows = 2 * windows + renewals + 2 * len(parts) + len(edges)
    return {
        "records": records,
        "seconds": elapsed,
        "rate": records / elapsed,
        "read_rate": records / reading,
        "partitions": len(parts),
        "windows": windows,
        "p50": statistics.median(latency) if latency else float("nan"),
        "p95": latency[int(0.95 * (len(latency) - 1))] if latency else float("nan"),
        "rows_per_partition_hour": rows / hours if hours else float("nan"),
    }


def lag_rows_per_stream_day() -> tuple[int, int]:
    """Return (rows written a day, rows kept at steady state) for one stream's lag samples."""
    from django.conf import settings

    from partitions.models import LagSample
    from partitions.pipeline import lag_samples as lag
    from streams.models import Stream

    stream = Stream.objects.create(name="lag-bench", connection={"change_stream": "Changes"})
    now = datetime.now(UTC).replace(microsecond=0)
    days = settings.CDC_LAG_RETENTION_DAYS + 1
    for day in range(days):  # write a day at a time, fold an hour at a time as beat would
        base = now - timedelta(days=days - day)
        LagSample.objects.bulk_create(
            LagSample(stream=stream, at=base + timedelta(seconds=10 * i), lag_seconds=i % 97)
            for i in range(8640)
        )
        lag.cleanup(base + timedelta(days=1))
    kept = LagSample.objects.filter(stream=stream).count()
    stream.delete()
    return 8640, kept


def main() -> None:
    args = parse_args()
    bench = Bench(args)
    try:
        bench.run(sys.executable, "manage.py", "migrate", "--no-input")
        bench.start_simulator()
        setup_django(bench)
        start = (datetime.now(UTC) - timedelta(minutes=30 + 2 * args.minutes)).replace(microsecond=0)
        tail = reader_only(bench, start)
        print(f"reader only (tail_change_stream): {tail}", flush=True)
        results = {}
        for workers in (1, 2):
            results[workers] = catch_up(bench, f"bench-{workers}w", start, workers)
            print(f"{workers} worker(s): {results[workers]}", flush=True)
        written, kept = lag_rows_per_stream_day()
    finally:
        bench.stop()
    report(args, tail, results, written, kept)


def report(args, tail: dict, results: dict, written: int, kept: int) -> None:
    one, two = results[1], results[2]
    print(f"\nbacklog {args.minutes:g} min at {args.tps:g} tps, window {args.window}s, split/merge every "
          f"{args.split_every}; {one['partitions']} partitions")  # fmt: skip
    print(f"  reader only (tail_change_stream, warm simulator): {tail['records']} records in "
          f"{tail['seconds']:.1f}s = {tail['rate']:.0f} rec/s")  # fmt: skip
    for n, r in results.items():
        print(
            f"  {n} worker(s): {r['records']} records in {r['seconds']:.1f}s = {r['rate']:.0f} rec/s;"
            f" {r['windows']} windows; child scheduling p50 {r['p50'] * 1000:.0f} ms,"
            f" p95 {r['p95'] * 1000:.0f} ms; {r['rows_per_partition_hour']:.0f} DB rows per partition-hour"
        )
    print(f"  1 worker / reader only: {one['rate'] / tail['rate']:.2f} (wall, process start-ups included)")
    print(f"  reading rates without process start-up (the tail's own seconds; the worker from the start"
          f" action to the last partition's end): reader only {tail['read_rate']:.0f} rec/s,"
          f" 1 worker {one['read_rate']:.0f}, 2 workers {two['read_rate']:.0f} rec/s")  # fmt: skip
    print(f"  1 worker / reader only, reading: {one['read_rate'] / tail['read_rate']:.2f}")
    print(f"  speed-up with 2 workers: {two['rate'] / one['rate']:.2f}x")
    print(f"  lag samples: {written} rows written per stream-day; {kept} kept per stream at steady state")


if __name__ == "__main__":
    main()
