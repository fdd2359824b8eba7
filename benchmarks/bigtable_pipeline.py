"""Bigtable pipeline throughput: one reader worker against a reader-only tail, side by side in one run.

A Bigtable simulator (a subprocess, over gRPC) serves a backlog with splits and merges.
Over the same window of it, in one run:

- the reader-only tail: every partition followed with the pure reader (the official
  client, the kind's Source, children placed and started as the pipeline does) in a
  process of its own, 8 threads, nothing landed or stored. It runs twice: the
  simulator generates each second on first use, so the first pass warms it;
- one reader worker as the Procfile's `reader` (`celery -A cdcweb worker -Q urgent,celery
  --pool threads -c 32`) beside a housekeeping worker, reading a stream created with
  `cdc_stream create --kind bigtable` to its end timestamp: landed (Parquet, fsynced)
  and checkpointed.

It prints mods per second for both and their ratio, and child scheduling latency
(parent FINISHED -> child RUNNING) p50 / p95 for split and merge children apart.

Run: .venv/bin/python benchmarks/bigtable_pipeline.py [--minutes 3] [--tps 300] [--window 60]
The embedded setup by default; DATABASE_URL / CELERY_BROKER_URL switch it as for the app.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from procs import Processes, free_port  # noqa: E402

from partitions.sources.base import Ended, PartitionState, ReadOptions  # noqa: E402 - pure, no Django
from partitions.sources.bigtable.client import data_client  # noqa: E402
from partitions.sources.bigtable.cursor import place_child, split_generation  # noqa: E402
from partitions.sources.bigtable.kind import KIND, BigtableSource  # noqa: E402
from partitions.sources.bigtable.records import Change  # noqa: E402

CELERY = str(Path(sys.executable).with_name("celery"))
TABLE = "events"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=3.0, help="backlog length in stream time")
    parser.add_argument("--tps", type=float, default=300.0, help="simulator changes per second")
    parser.add_argument("--window", type=int, default=60, help="window length in seconds")
    parser.add_argument("--split-every", default="10s", help="time between splits, and between merges")
    parser.add_argument("--tail", action="store_true", help=argparse.SUPPRESS)  # the reader-only process
    parser.add_argument("--host", help=argparse.SUPPRESS)
    parser.add_argument("--start", help=argparse.SUPPRESS)
    parser.add_argument("--end", help=argparse.SUPPRESS)
    return parser.parse_args()


class Tail:
    """Follow every partition of [start, end] with the pure reader; count changes and mods."""

    def __init__(self, host: str, start: datetime, end: datetime, threads: int = 8):
        self.source = BigtableSource(data_client(host), "bench", "bench", TABLE, "default")
        self.start, self.end, self.options = start, end, ReadOptions(heartbeat_ms=1000)
        self.states, self.waiting = {}, set()
        self.changes = self.mods = self.pending = 0
        self.lock, self.done = threading.Lock(), threading.Event()
        self.pool = ThreadPoolExecutor(threads)
        self.errors: list[BaseException] = []

    def run(self) -> None:
        with self.lock:
            for root in self.source.roots(self.start, self.end, self.options):
                self._register(root)
            self._schedule()
        self.done.wait()
        self.pool.shutdown()
        if self.errors:
            raise self.errors[0]

    def _register(self, child) -> None:
        known = {t: s.cursor for t, s in self.states.items() if split_generation(t)[0] == child.token}
        token, join = place_child(child, known)
        if join:
            state = self.states[token]
            self.states[token] = replace(state, cursor=KIND.merge_cursor(state.cursor, child.cursor))
        else:
            self.states[token] = PartitionState(token, child.start, child.start, child.cursor, child.label)
            self.waiting.add(token)

    def _schedule(self) -> None:
        for token in [t for t in self.waiting if KIND.child_ready(self.states[t], False)]:
            self.waiting.discard(token)
            self.pending += 1
            self.pool.submit(self._read, self.states[token])

    def _read(self, state) -> None:
        try:
            changes = mods = 0
            ended = None
            for item in self.source.read(state, self.end, self.options):
                if type(item) is Change:
                    changes += 1
                    mods += len(item.mods)
                elif type(item) is Ended:
                    ended = item
            with self.lock:
                self.changes, self.mods = self.changes + changes, self.mods + mods
                for child in ended.children if ended else ():
                    self._register(child)
                self._schedule()
                self.pending -= 1
                if not self.pending:
                    self.done.set()
        except BaseException as error:  # any failure ends the tail
            self.errors.append(error)
            self.done.set()


def tail_main(args: argparse.Namespace) -> None:
    """Run the reader-only tail (in its own process) and print what it read."""
    start, end = datetime.fromisoformat(args.start), datetime.fromisoformat(args.end)
    began = time.monotonic()
    tail = Tail(args.host, start, end)
    tail.run()
    elapsed = time.monotonic() - began
    print(f"changes={tail.changes} mods={tail.mods} seconds={elapsed:.3f} partitions={len(tail.states)}")


class Bench:
    """One temporary pipeline: environment, simulator, database, processes."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.var = Path(tempfile.mkdtemp(prefix="cdc-bt-bench-"))
        self.host = f"127.0.0.1:{free_port()}"
        self.epoch = (datetime.now(UTC) - timedelta(hours=2)).replace(second=0, microsecond=0)
        self.env = {
            **os.environ,
            "CDC_VAR_DIR": str(self.var),
            "BIGTABLE_EMULATOR_HOST": self.host,
            "CDC_SCHEDULE_SECONDS": "1",
            "CDC_BROKER_POLLING_INTERVAL": "0.02",
        }
        self.procs = Processes(self.env, self.var)

    def run(self, *args: str) -> str:
        out = subprocess.run(args, cwd=ROOT, env=self.env, capture_output=True, text=True, check=False)
        if out.returncode:
            raise SystemExit(f"{' '.join(args)} failed:\n{out.stderr[-2000:]}")
        return out.stdout

    def start_simulator(self) -> None:
        port = self.host.rsplit(":", 1)[1]
        self.procs.spawn(
            "simulator", sys.executable, "manage.py", "bigtable_simulator", "--port", port,
            "--tps", str(self.args.tps), "--epoch", self.epoch.isoformat(), "--retention", "1d",
            "--split-every", self.args.split_every, "--merge-every", self.args.split_every,
        )  # fmt: skip
        import grpc

        grpc.channel_ready_future(grpc.insecure_channel(self.host)).result(timeout=60)

    def stop(self) -> None:
        self.procs.stop(timeout=20)


def reader_only(bench: Bench, start: datetime, end: datetime) -> dict:
    """Tail [start, end] in a process of its own, twice (warm, then measured)."""
    args = [sys.executable, __file__, "--tail", "--host", bench.host, "--start", start.isoformat(),
            "--end", end.isoformat()]  # fmt: skip
    for _ in range(2):
        out = bench.run(*args)
    got = dict(item.split("=") for item in out.split())
    mods, seconds = int(got["mods"]), float(got["seconds"])
    return {"changes": int(got["changes"]), "mods": mods, "seconds": seconds, "rate": mods / seconds}


def one_worker(bench: Bench, name: str, start: datetime, end: datetime) -> dict:
    """Read [start, end] with one reader worker; return mods/s and child scheduling latencies."""
    from streams.models import Stream

    bench.run(
        sys.executable, "manage.py", "cdc_stream", "create", name, "--kind", "bigtable",
        "--project", "bench-project", "--instance", "bench-instance", "--table", TABLE,
        "--app-profile", "default", "--start", start.isoformat(), "--end", end.isoformat(),
        "--window-seconds", str(bench.args.window), "--heartbeat-ms", "1000",
    )  # fmt: skip
    threads = os.environ.get("BENCH_READ_THREADS", "32")  # the Procfile's reader
    workers = [
        bench.procs.spawn(f"{name}-w", CELERY, "-A", "cdcweb", "worker", "-Q", "urgent,celery", "--pool",
                          "threads", "-c", threads, "-l", "INFO", "-n", f"{name}@%h", "--without-gossip",
                          "--without-mingle", "--without-heartbeat"),
        bench.procs.spawn(f"{name}-hk", CELERY, "-A", "cdcweb", "worker", "-Q", "housekeeping", "--pool",
                          "threads", "-c", "4", "-l", "INFO", "-n", f"{name}-hk@%h"),
    ]  # fmt: skip
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
    for proc in workers:
        proc.terminate()
        proc.wait(timeout=30)
    return measure(stream, elapsed)


def measure(stream, elapsed: float) -> dict:
    """Return mods/s and the scheduling latency of split and merge children."""
    from partitions.models import Partition, PartitionEdge

    parts = {p.pk: p for p in Partition.objects.filter(stream=stream)}
    parents: dict[int, list[int]] = {}
    for parent, child in PartitionEdge.objects.filter(stream=stream).values_list("parent_id", "child_id"):
        parents.setdefault(child, []).append(parent)
    latency = {"split": [], "merge": []}
    for child, ps in parents.items():
        waited = (parts[child].running_at - max(parts[p].finished_at for p in ps)).total_seconds()
        latency["merge" if len(ps) > 1 else "split"].append(waited)
    mods = sum(p.mods for p in parts.values())
    result = {"mods": mods, "changes": sum(p.data_records for p in parts.values()), "seconds": elapsed}
    result.update(rate=mods / elapsed, partitions=len(parts))
    for kind, values in latency.items():
        values.sort()
        result[f"{kind}s"] = len(values)
        result[f"{kind}_p50"] = statistics.median(values) if values else float("nan")
        result[f"{kind}_p95"] = values[int(0.95 * (len(values) - 1))] if values else float("nan")
    return result


def setup_django(bench: Bench) -> None:
    os.environ.update({k: v for k, v in bench.env.items() if k.startswith(("CDC_", "DATABASE_", "CELERY_"))})
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")
    import django

    django.setup()


def main() -> None:
    args = parse_args()
    if args.tail:
        tail_main(args)
        return
    bench = Bench(args)
    try:
        bench.run(sys.executable, "manage.py", "migrate", "--no-input")
        bench.start_simulator()
        setup_django(bench)
        start = (datetime.now(UTC) - timedelta(minutes=20 + args.minutes)).replace(microsecond=0)
        end = start + timedelta(minutes=args.minutes)
        tail = reader_only(bench, start, end)
        print(f"reader only: {tail}", flush=True)
        worker = one_worker(bench, "bt-bench", start, end)
        print(f"1 worker: {worker}", flush=True)
    finally:
        bench.stop()
    report(args, tail, worker)


def report(args, tail: dict, worker: dict) -> None:
    print(f"\nbacklog {args.minutes:g} min at {args.tps:g} changes/s, window {args.window}s, split and merge "
          f"every {args.split_every}; {worker['partitions']} partitions")  # fmt: skip
    print(f"  reader only (pure reader, 8 threads, warm simulator): {tail['mods']} mods "
          f"({tail['changes']} changes) in {tail['seconds']:.1f}s = {tail['rate']:.0f} mods/s")  # fmt: skip
    w = worker
    print(f"  1 reader worker: {w['mods']} mods ({w['changes']} changes) in {w['seconds']:.1f}s "
          f"= {w['rate']:.0f} mods/s")  # fmt: skip
    print(f"  1 worker / reader only: {w['rate'] / tail['rate']:.2f}")
    for kind in ("split", "merge"):
        p50, p95 = w[kind + "_p50"] * 1000, w[kind + "_p95"] * 1000
        print(f"  child scheduling, {w[kind + 's']} {kind} children: p50 {p50:.0f} ms, p95 {p95:.0f} ms")


if __name__ == "__main__":
    main()
