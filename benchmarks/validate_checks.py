"""How long the checks before a create take, and how long a source that does not answer holds them.

Against the Spanner simulator in this process, through the official client over real
gRPC, each kind's checks as `cdc_stream validate` and the API run them (run_checks):
  (a) a Spanner change stream whose checks all pass; (b) one with a wrong stream name;
  (c) a sharded commit-timestamp table with its index (the plan check included);
  (d) an endpoint that accepts connections and never answers (the per-check deadline).
The goal: an answer within the bounded time, never a hang; a working source in well
under a second.

Run: .venv/bin/python benchmarks/validate_checks.py [--runs 20]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from partitions.simulator.spanner.config import SimulatorConfig  # noqa: E402
from partitions.simulator.spanner.server import start_server  # noqa: E402
from partitions.sources import KINDS  # noqa: E402
from partitions.sources.checks import CHECK_TIMEOUT_S, run_checks  # noqa: E402


def timed(kind: str, values: dict, runs: int) -> tuple[float, float, int]:
    """Return (median s, max s, failed checks of the last run) of `runs` runs of a kind's checks."""
    spent, failed = [], 0
    for _ in range(runs):
        began = time.perf_counter()
        results = run_checks(KINDS[kind].checks(KINDS[kind].clean(values)))
        spent.append(time.perf_counter() - began)
        failed = sum(not r.ok for r in results)
    return statistics.median(spent), max(spent), failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    server = start_server(SimulatorConfig(seed=7, roots=4, retention=3600.0))
    host = server.emulator_host
    stream = {
        "project": "p",
        "instance": "i",
        "database": "demo-db",
        "change_stream": "Changes",
        "emulator_host": host,
    }
    table = {
        "project": "p", "instance": "i", "database": "demo-db", "table": "ShardedEvents",
        "timestamp_column": "LastModified", "key_columns": "TenantId,EventId", "shard_column": "ShardId",
        "shards": "0-18", "index": "ShardedEventsByShardLastModified", "emulator_host": host,
    }  # fmt: skip
    cases = [
        ("(a) change stream, all pass", "spanner_change_stream", stream, args.runs),
        (
            "(b) change stream, wrong name",
            "spanner_change_stream",
            {**stream, "change_stream": "Nope"},
            args.runs,
        ),
        ("(c) sharded table with index", "spanner_commit_timestamp", table, args.runs),
    ]
    print(f"{'case':34} {'median':>8} {'max':>8} {'failed':>7}")
    try:
        for label, kind, values, runs in cases:
            median, worst, failed = timed(kind, values, runs)
            print(f"{label:34} {median * 1000:7.1f}ms {worst * 1000:7.1f}ms {failed:7d}")
        with socket.socket() as silent:
            silent.bind(("127.0.0.1", 0))
            silent.listen()
            values = {**stream, "emulator_host": f"127.0.0.1:{silent.getsockname()[1]}"}
            median, worst, failed = timed("spanner_change_stream", values, 2)
            print(f"{'(d) silent endpoint':34} {median:7.2f}s  {worst:7.2f}s  {failed:7d}"
                  f"   (deadline {CHECK_TIMEOUT_S:g} s per check)")  # fmt: skip
    finally:
        server.stop(0.5)


if __name__ == "__main__":
    main()
