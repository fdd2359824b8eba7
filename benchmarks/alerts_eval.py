"""One alert evaluation cycle of 1,000 rules over 1,000 streams on PostgreSQL: time and query count.

    .venv/bin/python benchmarks/alerts_eval.py [--database-url URL] [--streams 1000] [--runs 10]
        [--sample-minutes 60] [--every-stream-rules] [--explain] [--rebuild]

Builds (once, in its own database) --streams streams with four partitions each and
--sample-minutes of raw lag samples every 10 s, and one rule per stream, the six kinds in
turn (no_data enabled), tuned so that half of them hold; --every-stream-rules adds one
rule of each kind for every stream. Then it times evaluation.evaluate() in-process: the
first cycle (which opens every alert), then --runs steady cycles (everything still
firing, nothing to send), printing wall time, this process's CPU time, time in SQL and
the queries. --explain adds PostgreSQL's own execution time of each read of a steady
cycle (EXPLAIN ANALYZE), which the client's scheduling on a busy machine does not inflate.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/cdcweb_alerts_bench"
KINDS = ("lag_above", "lag_growing", "partition_stalled", "stream_failed", "retention", "no_data")
BATCH = 5000


def setup_django(url: str) -> None:
    """Point Django at the benchmark database (created if missing) and load it."""
    import psycopg

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ["DATABASE_URL"] = url
    os.environ["CDC_ALERTS_NO_DATA"] = "true"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")
    import django

    django.setup()


def _state_and_lags(kind: str, holds: bool, count: int) -> tuple[str, list[float]]:
    """Return the stream state and the lag samples (oldest first) that make the kind hold or not."""
    if kind == "lag_above":
        return "RUNNING", [600.0 if holds else 30.0] * count
    if kind == "lag_growing":
        return "RUNNING", [float(i if holds else i % 3) for i in range(count)]
    if kind == "stream_failed":
        return ("FAILED_PERMANENTLY" if holds else "RUNNING"), [5.0] * count
    if kind == "retention":
        return ("PAUSED" if holds else "RUNNING"), [5.0] * count
    return "RUNNING", [5.0] * count


def build(streams: int, sample_minutes: int) -> None:
    """Create the streams, their partitions, lag samples and one rule each."""
    from django.utils import timezone

    from cdcweb.alerts.models import AlertRule
    from partitions.models import LagSample, Partition
    from streams.models import Stream

    now = timezone.now().replace(microsecond=0)
    count = sample_minutes * 6
    connection = {"project": "p", "instance": "i", "database": "d", "change_stream": "Changes"}
    made = Stream.objects.bulk_create(
        Stream(name=f"bench-{i:04d}", connection=connection, start_at=now - timedelta(days=1))
        for i in range(streams)
    )
    partitions, samples, rules = [], [], []
    for i, stream in enumerate(made):
        kind, holds = KINDS[i % len(KINDS)], (i // len(KINDS)) % 2 == 0
        state, lags = _state_and_lags(kind, holds, count)
        changed = now - timedelta(hours=21 if kind == "retention" else 2)
        Stream.objects.filter(pk=stream.pk).update(state=state, state_changed_at=changed, paused_at=changed)
        for p in range(4):
            partitions.append(Partition(
                stream=stream, token=f"t{i}-{p}", state="FINISHED" if p < 2 else "RUNNING", start_at=now,
                watermark=now - timedelta(seconds=lags[-1] + p), data_records=100,
                stalled=kind == "partition_stalled" and holds and p == 3,
            ))  # fmt: skip
        records = [400 if kind == "no_data" and holds else j for j in range(count)]  # 4 x 100 now
        samples += [
            LagSample(stream=stream, at=now - timedelta(seconds=10 * (count - 1 - j)), lag_seconds=lag,
                      data_records=records[j], resolution_seconds=10)
            for j, lag in enumerate(lags)
        ]  # fmt: skip
        rules.append(AlertRule(name=f"rule-{i:04d}", kind=kind, stream=stream, threshold_seconds=300,
                               for_minutes=10, retention_hours=6, repeat_minutes=0))  # fmt: skip
    Partition.objects.bulk_create(partitions, batch_size=BATCH)
    LagSample.objects.bulk_create(samples, batch_size=BATCH)
    AlertRule.objects.bulk_create(rules, batch_size=BATCH)


def ensure_data(streams: int, sample_minutes: int, rebuild: bool):
    """Migrate and build the data if missing; return the moment to evaluate at (the last sample)."""
    from django.core.management import call_command
    from django.db import connection
    from django.db.models import Max

    from partitions.models import LagSample
    from streams.models import Stream

    call_command("migrate", verbosity=0, interactive=False)
    if rebuild or Stream.objects.count() != streams:
        Stream.objects.all().delete()
        print(f"building {streams} streams, {sample_minutes} min of samples each", flush=True)
        started = time.perf_counter()
        build(streams, sample_minutes)
        print(f"built in {time.perf_counter() - started:.0f} s", flush=True)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    return LagSample.objects.aggregate(last=Max("at"))["last"] + timedelta(seconds=1)


def every_stream_rules(enabled: bool) -> None:
    """Add (or remove) one rule of each kind that watches every stream."""
    from cdcweb.alerts.models import AlertRule

    AlertRule.objects.filter(stream__isnull=True).delete()
    if enabled:
        AlertRule.objects.bulk_create(
            AlertRule(
                name=f"every-{kind}", kind=kind, threshold_seconds=300, for_minutes=10, retention_hours=6
            )
            for kind in KINDS
        )


def cycle(now) -> tuple[float, int, dict, float, float]:
    """Run one evaluation; return (seconds, queries, what it did, this process's CPU seconds, SQL seconds)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from cdcweb.alerts import evaluation

    class Outbox:
        def send(self, *args) -> None:
            pass

    with CaptureQueriesContext(connection) as queries:
        started, cpu = time.perf_counter(), time.process_time()
        done = evaluation.evaluate(Outbox(), now)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    sql = sum(float(q["time"]) for q in queries.captured_queries)
    return seconds, len(queries), done.counts(), cpu, sql


def explain(now) -> None:
    """Print PostgreSQL's execution time of each read of one steady cycle."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from cdcweb.alerts import evaluation

    class Outbox:
        def send(self, *args) -> None:
            pass

    with CaptureQueriesContext(connection) as queries:
        evaluation.evaluate(Outbox(), now)
    total = 0.0
    for query in queries.captured_queries:
        sql = query["sql"].strip()
        if not sql.upper().startswith(("SELECT", "WITH")):
            continue
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
            plan = cursor.fetchone()[0]
        plan = plan if isinstance(plan, list) else json.loads(plan)
        ms = plan[0]["Execution Time"] + plan[0]["Planning Time"]
        total += ms
        print(f"  {ms:7.2f} ms  {' '.join(sql.split())[:90]}")
    print(f"  {total:7.2f} ms  in PostgreSQL for the whole cycle's reads")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--sample-minutes", type=int, default=60)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--every-stream-rules", action="store_true")
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args()
    setup_django(args.database_url)
    from cdcweb.alerts.models import Alert, AlertRule

    now = ensure_data(args.streams, args.sample_minutes, args.rebuild)
    every_stream_rules(args.every_stream_rules)
    Alert.objects.all().delete()
    print(f"{AlertRule.objects.count()} rules over {args.streams} streams, evaluated at {now:%H:%M:%S}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    seconds, queries, done, cpu, sql = cycle(now)
    print(f"first cycle (opens every alert): {seconds * 1000:6.1f} ms wall, {cpu * 1000:6.1f} ms CPU here, "
          f"{sql * 1000:6.1f} ms in SQL, {queries} queries, {done}")  # fmt: skip
    runs = [cycle(now) for _ in range(args.runs)]
    wall, cpu, sql = ([r[i] * 1000 for r in runs] for i in (0, 3, 4))
    median = statistics.median
    print(f"steady cycle x{args.runs}: median {median(wall):6.1f} ms wall (min {min(wall):6.1f}, max "
          f"{max(wall):6.1f}), {median(cpu):6.1f} ms CPU here, {median(sql):6.1f} ms in SQL, "
          f"{runs[-1][1]} queries, {runs[-1][2]}")  # fmt: skip
    if args.explain:
        explain(now)


if __name__ == "__main__":
    main()
