"""Commit-timestamp polling throughput: one process polls a simulated table at rising write rates.

For each write rate and each layout (ShardedEvents with 19 shards, one partition per
shard; Events unsharded, one partition), the simulator runs in its own process and
one poller process (this one, one thread) reads every partition the way the pipeline
would: a read, then the kind's next_read_delay (the poll interval when caught up, 0
after a capped read). It reports rows delivered per second against rows written, the
lag (now - the stream's watermark, the lowest partition watermark) sampled after every
read and summarised per poll interval, and the poller's CPU use. The poller is not the
bottleneck while it delivers what is written with lag under 2 poll intervals.

Run: .venv/bin/python benchmarks/commit_timestamp_poll.py [--rates 1000,3000,5000,8000]
     [--seconds 12] [--interval-ms 1000] [--dialect googlesql] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from procs import free_port  # noqa: E402

from partitions.simulator.core.clock import to_us  # noqa: E402
from partitions.simulator.spanner.config import SimulatorConfig  # noqa: E402
from partitions.simulator.spanner.table_reads import build_histories, versions_between  # noqa: E402
from partitions.sources.base import Ended, PartitionState, ReadOptions  # noqa: E402
from partitions.sources.spanner_commit_timestamp.kind import KIND  # noqa: E402
from partitions.sources.spanner_commit_timestamp.records import TableRowRecord  # noqa: E402

SEED_FIGURE = "3,000-5,000 mutations/s per table on a one-node instance (seed 004, Spanner Change Watcher)"
SHARDS = 19
LAYOUTS = {
    "googlesql": {
        "19 shards": ("demo-db", "ShardedEvents", "LastModified", "TenantId,EventId", "ShardId",
                      "ShardedEventsByShardLastModified"),
        "unsharded": ("demo-db", "Events", "LastModified", "TenantId,EventId", "", ""),
    },
    "postgresql": {
        "19 shards": ("demo-pg", "sharded_events", "last_modified", "tenant_id,event_id", "shard_id",
                      "sharded_events_by_shard_last_modified"),
        "unsharded": ("demo-pg", "events", "last_modified", "tenant_id,event_id", "", ""),
    },
}  # fmt: skip
_SERVE = """
import sys, threading
from datetime import datetime
from partitions.simulator.spanner.config import SimulatorConfig
from partitions.simulator.spanner.server import start_server
config = SimulatorConfig(seed=9, table_rate=float(sys.argv[2]), table_shards=int(sys.argv[3]),
                         retention=3600.0, epoch=datetime.fromisoformat(sys.argv[4]), tps=1.0)
server = start_server(config, "127.0.0.1", int(sys.argv[1]))
print("ready", flush=True)
threading.Event().wait()
"""


def simulator_config(rate: float, epoch: datetime) -> SimulatorConfig:
    """Return the config the simulator process runs with (for counting what it writes)."""
    return SimulatorConfig(
        seed=9, table_rate=rate, table_shards=SHARDS, retention=3600.0, epoch=epoch, tps=1.0
    )


def start_simulator(port: int, rate: float, epoch: datetime) -> subprocess.Popen:
    """Start the simulator in its own process (no Django) and wait until it serves."""
    args = [sys.executable, "-c", _SERVE, str(port), str(rate), str(SHARDS), epoch.isoformat()]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.stdout.readline().strip() != "ready":
        proc.kill()
        raise SystemExit(f"the simulator did not start: {proc.stdout.read()}")
    grpc.channel_ready_future(grpc.insecure_channel(f"127.0.0.1:{port}")).result(timeout=30)
    return proc


def connect(host: str, dialect: str, layout: str):
    """Return the kind's Source for one of the simulator's tables."""
    database, table, ts, keys, shard_column, index = LAYOUTS[dialect][layout]
    settings = KIND.clean({
        "project": "bench", "instance": "bench", "database": database, "dialect": dialect, "table": table,
        "timestamp_column": ts, "key_columns": keys, "shard_column": shard_column,
        "shards": f"0-{SHARDS - 1}" if shard_column else "", "index": index, "emulator_host": host,
    })  # fmt: skip
    return KIND.connect(settings)


def poll(host: str, dialect: str, layout: str, seconds: float, interval_ms: int, threads: int) -> dict:
    """Poll one table for a while as the pipeline would; return counts, lag samples and CPU time.

    With threads > 1 the partitions are dealt out to that many threads of this process,
    each polling its own in turn, as several worker slots would.
    """
    source, options = connect(host, dialect, layout), ReadOptions(heartbeat_ms=interval_ms, timeout=60)
    start = datetime.now(UTC)
    states = {
        p.token: PartitionState(p.token, start, start, {}, p.label)
        for p in source.roots(start, None, options)
    }
    stamps, samples, began, cpu = [], [], time.monotonic(), time.process_time()

    def worker(tokens: list[str]) -> None:
        """Poll these partitions in turn, each when its next read falls due, until time is up."""
        due = dict.fromkeys(tokens, 0.0)
        while time.monotonic() - began < seconds:
            token = min(due, key=due.get)
            time.sleep(max(0.0, due[token] - time.monotonic()))
            read = source.read(states[token], None, options)
            for item in read:
                if isinstance(item, TableRowRecord):
                    stamps.append(item.commit_timestamp)
                assert not isinstance(item, Ended)
            states[token] = PartitionState(token, start, read.watermark, read.cursor)
            due[token] = time.monotonic() + source.next_read_delay(read)
            watermark = min(s.watermark for s in states.values())
            samples.append((time.monotonic() - began, (datetime.now(UTC) - watermark).total_seconds()))

    tokens = list(states)
    with ThreadPoolExecutor(threads) as pool:
        for done in [pool.submit(worker, tokens[i::threads]) for i in range(min(threads, len(tokens)))]:
            done.result()
    elapsed, cpu = time.monotonic() - began, time.process_time() - cpu
    watermark = min(s.watermark for s in states.values())
    settled = sum(1 for stamp in stamps if stamp <= watermark)  # rows every partition had reached
    return {"rows": len(stamps), "settled": settled, "elapsed": elapsed, "cpu": cpu, "samples": samples,
            "start": start, "watermark": watermark}  # fmt: skip


def written(rate: float, epoch: datetime, table: str, start: datetime, end: datetime) -> int:
    """Return how many row versions the simulator committed in [start, end]."""
    history = build_histories(simulator_config(rate, epoch))[
        "sharded_events" if "hard" in table else "events"
    ]
    return sum(1 for _ in versions_between(history, to_us(start), to_us(end)))


def cpu_seconds(pid: int) -> float:
    """Return the CPU time (user + system) a process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def lag_per_interval(samples: list[tuple[float, float]], interval_s: float, warmup_s: float) -> list[float]:
    """Return the highest lag seen in each poll interval after the warm-up."""
    buckets: dict[int, float] = {}
    for at, lag in samples:
        if at >= warmup_s:
            buckets[int(at // interval_s)] = max(buckets.get(int(at // interval_s), 0.0), lag)
    return [buckets[k] for k in sorted(buckets)]


def report(rate: float, layout: str, result: dict, truth: int, interval_s: float) -> tuple[str, bool]:
    """Return one result line and whether the goal (all rows, lag under 2 intervals) was met."""
    lags = lag_per_interval(result["samples"], interval_s, warmup_s=2 * interval_s)
    delivered = result["rows"] / result["elapsed"]
    window = (result["watermark"] - result["start"]).total_seconds()
    kept_up = result["settled"] == truth  # every row written up to the watermark was delivered, once
    worst = max(lags) / interval_s if lags else float("nan")
    median = statistics.median(lags) / interval_s if lags else float("nan")
    cpu_share = 100 * result["cpu"] / result["elapsed"]
    line = (
        f"{layout:>10} {rate:>7,.0f} {truth / max(window, 1e-9):>10,.0f} {delivered:>11,.0f} "
        f"{median:>8.2f} {worst:>8.2f} {cpu_share:>6.0f}% "
        f"{result['rows'] / max(result['cpu'], 1e-9):>10,.0f}  {'yes' if kept_up else 'NO'}"
    )
    return line, kept_up and worst < 2


def arguments() -> argparse.Namespace:
    """Return the command line's options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="1000,3000,5000,8000", help="table write rates, rows/s")
    parser.add_argument("--seconds", type=float, default=12.0, help="polling time per rate and layout")
    parser.add_argument(
        "--interval-ms", type=int, default=1000, help="poll interval (the stream's heartbeat)"
    )
    parser.add_argument("--dialect", choices=sorted(LAYOUTS), default="googlesql")
    parser.add_argument("--threads", type=int, default=1, help="polling threads in this one process")
    return parser.parse_args()


def run_rate(args: argparse.Namespace, rate: float, epoch: datetime) -> None:
    """Start a simulator writing at rate, poll each layout of it in turn, print a line per layout."""
    port, interval_s = free_port(), args.interval_ms / 1000
    proc = start_simulator(port, rate, epoch)
    try:
        for layout in LAYOUTS[args.dialect]:
            sim_cpu = cpu_seconds(proc.pid)
            host = f"127.0.0.1:{port}"
            result = poll(host, args.dialect, layout, args.seconds, args.interval_ms, args.threads)
            sim_share = 100 * (cpu_seconds(proc.pid) - sim_cpu) / result["elapsed"]
            truth = written(
                rate, epoch, LAYOUTS[args.dialect][layout][1], result["start"], result["watermark"]
            )
            line, ok = report(rate, layout, result, truth, interval_s)
            # The machine's load says how far the wall-clock figures (rates, lag) describe the
            # poller rather than a lack of CPU; rows per CPU-second does not depend on it.
            line += f"  {sim_share:>6.0f}% {os.getloadavg()[0]:>5.1f}"
            print(line + ("" if ok or rate > 5000 else "   <- goal missed"), flush=True)
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    """Print the seed's figure, then one line per write rate and layout."""
    args = arguments()
    epoch = (datetime.now(UTC) - timedelta(minutes=10)).replace(second=0, microsecond=0)
    print(f"seed's figure: {SEED_FIGURE}")
    print(
        f"poll interval {args.interval_ms / 1000:g} s, {args.seconds:g} s per run, {args.dialect}, "
        f"{args.threads} thread(s); lag in poll intervals; CPU: share of one CPU (poller; simulator)"
    )
    print(f"{'layout':>10} {'rate':>7} {'written/s':>10} {'delivered/s':>11} {'lag p50':>8} {'lag max':>8} "
          f"{'CPU':>7} {'rows/CPU-s':>10}  all rows  sim CPU  load")  # fmt: skip
    for rate in (float(r) for r in args.rates.split(",")):
        run_rate(args, rate, epoch)


if __name__ == "__main__":
    main()
