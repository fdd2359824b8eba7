"""Loop reads: how late heartbeats reach the reading coroutines, with no pipeline behind the reads.

Starts the simulator as benchmarks/width.py does (S databases, each one change stream of
100 fixed partitions, heartbeats every 2 s, a few records a minute per partition) and reads
every partition window after window on one event loop, through the same asyncio reader
the live reads use (AsyncChangeStreamReader), but lands and checkpoints nothing. Every
10 s it prints how late the heartbeats of the last 10 s reached their coroutine (receipt
minus the heartbeat's timestamp): p50, p99 and max. It separates what the client and the
simulator cost from what the pipeline costs (width.py measures both together).

`--window` sets the windows' length (60 s, the default's). `--aligned` ends every window at
watermark + window, as cdcweb did before its windows were
staggered (partitions started together then end their windows in the same instant);
the default ends them as window.staggered_end does.

Run: .venv/bin/python benchmarks/loop_reads.py [--partitions 2000] [--seconds 180] [--window 60]
     [--aligned]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from procs import Deployment  # noqa: E402

PER_STREAM = 100
HEARTBEAT_MS = 2000


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=2000, help="live partitions in all (100 a stream)")
    parser.add_argument("--seconds", type=float, default=180.0, help="how long to read")
    parser.add_argument("--aligned", action="store_true", help="end every window at watermark + window")
    parser.add_argument("--window", type=float, default=60.0, help="window seconds (60, the default's)")
    return parser.parse_args()


async def follow(reader, token: str, start: datetime, until: float, args, delays: list) -> None:
    from partitions.models import Partition
    from partitions.pipeline.window import staggered_end
    from partitions.sources.spanner_change_stream.records import HeartbeatRecord

    watermark, window = start, timedelta(seconds=args.window)
    while time.monotonic() < until:
        if args.aligned:
            end = watermark + window
        else:
            end = staggered_end(Partition(token=token, watermark=watermark), window)
        async for record in reader.read(token, watermark, end):
            if type(record) is HeartbeatRecord:
                now = time.time()
                delays.append((now, now - record.timestamp.timestamp()))
        watermark = end


async def read_all(args: argparse.Namespace, host: str, streams: int) -> None:
    from partitions.sources.spanner_change_stream.reader import AsyncChangeStreamReader, connect_async
    from partitions.sources.spanner_change_stream.records import ChildPartitionsRecord

    start = datetime.now(UTC) - timedelta(seconds=5)
    until = time.monotonic() + args.seconds
    delays: list[tuple[float, float]] = []
    reads = []
    for i in range(streams):
        database = await connect_async("w", "w", f"db{i}", host)
        reader = AsyncChangeStreamReader(database, "Changes", "googlesql", HEARTBEAT_MS)
        tokens = []
        async for record in reader.read(None, start, start + timedelta(seconds=1)):
            if isinstance(record, ChildPartitionsRecord):
                tokens += [child.token for child in record.child_partitions]
        reads += [follow(reader, token, start, until, args, delays) for token in tokens]
    tasks = [asyncio.create_task(read) for read in reads]
    began = time.monotonic()
    shape = "aligned" if args.aligned else "staggered"
    print(f"{len(tasks)} live reads on one loop, windows of {args.window:g} s, {shape}")
    print("   time  heartbeats  late p50  late p99  late max  (s)")
    worst = []
    while time.monotonic() < until:
        await asyncio.sleep(10)
        cut = time.time() - 10
        recent = sorted(late for at, late in delays if at > cut)
        delays[:] = [d for d in delays if d[0] > cut]
        if recent:
            p99 = recent[int(len(recent) * 0.99)]
            worst.append(p99)
            print(f"{time.monotonic() - began:6.0f}s {len(recent):10d} {recent[len(recent) // 2]:9.2f} "
                  f"{p99:9.2f} {recent[-1]:9.2f}")  # fmt: skip
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    settled = worst[2:] or worst  # the first 20 s hold the start of all reads at once
    print(f"after the first 20 s: worst 10-s p99 {max(settled):.2f} s, median 10-s p99 "
          f"{sorted(settled)[len(settled) // 2]:.2f} s")  # fmt: skip


def main() -> None:
    args = parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")
    streams = max(1, args.partitions // PER_STREAM)
    host = Deployment("cdc-loop-reads-")
    try:
        databases = [arg for i in range(streams) for arg in ("--database", f"db{i}")]
        epoch = (datetime.now(UTC) - timedelta(minutes=10)).replace(second=0, microsecond=0)
        host.simulator(
            *databases, "--roots", str(PER_STREAM), "--split-every", "100000d", "--merge-every", "100000d",
            "--tps", "2.0", "--epoch", epoch.isoformat(),
            timeout=120,
        )  # fmt: skip
        import django

        django.setup()
        asyncio.run(read_all(args, f"127.0.0.1:{host.port}", streams))
    finally:
        host.procs.stop(timeout=30)


if __name__ == "__main__":
    main()
