"""Spanner tables watched by commit timestamp, read by real workers through SIGKILLs.

Both dialects, sharded (19 fixed partitions) and unsharded (one), over the simulator's
watched tables: each stream polls live to an end 40 s ahead while its worker is killed
and restarted, and the landing zone (deduplicated) holds exactly the row versions the
simulator committed in the window, no more and no less.

Live, because the method sees a table's current rows only: a version overwritten
before a poll reads it is gone (the simulator re-stamps a key 60 s after its last
write), so a poller must keep up, and recover from a crash, well inside that.
"""

from __future__ import annotations

import random
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from partitions.models import Partition
from partitions.pipeline import landing
from partitions.simulator.spanner.table_reads import table_ground_truth
from partitions.sources.landing import canonical_json
from streams.models import Stream
from tests.partitions.pipeline.conftest import _wait_for
from tests.partitions.sources.spanner_commit_timestamp.committs_support import TABLES

pytestmark = pytest.mark.slow
CASES = [
    ("googlesql", "unsharded"),
    ("googlesql", "sharded"),
    ("postgresql", "unsharded"),
    ("postgresql", "sharded"),
]
AHEAD = timedelta(seconds=40)


def create(pipeline, sim, name: str, dialect: str, layout: str, start, end) -> None:
    """Register a commit-timestamp stream through cdc_stream, as a script would."""
    database, table, ts, keys, shard_column, shards, index = TABLES[(dialect, layout)]
    args = [
        "cdc_stream", "create", name, "--kind", "spanner_commit_timestamp", "--project", "p",
        "--instance", "i", "--database", database, "--dialect", dialect, "--table", table,
        "--timestamp-column", ts, "--key-columns", keys, "--start", start.isoformat(),
        "--end", end.isoformat(), "--heartbeat-ms", "1000", "--emulator-host", sim.emulator_host,
    ]  # fmt: skip
    if shard_column:
        args += ["--shard-column", shard_column, "--shards", shards, "--index", index]
    pipeline.manage(*args)


@pytest.fixture(scope="module")
def read_through_kills(pipeline, sim):
    """Read four streams to their end while the worker is SIGKILLed twice; return their names."""
    pipeline.beat()
    start = (timezone.now() - timedelta(seconds=5)).replace(microsecond=0)
    end = start + AHEAD
    names = {f"ct-{dialect[:2]}-{layout}": (dialect, layout) for dialect, layout in CASES}
    for name, (dialect, layout) in names.items():
        create(pipeline, sim, name, dialect, layout, start, end)
    worker = pipeline.worker("ct")
    for name in names:
        pipeline.manage("cdc_stream", "start", name)
    rng = random.Random(5)
    for _ in range(2):
        _wait_for("reading to begin", lambda: Partition.objects.filter(data_records__gt=0).exists())
        time.sleep(rng.uniform(0.2, 1.0))  # a random moment to SIGKILL at: not a wait for a state
        pipeline.kill(worker)
        worker = pipeline.worker("ct")

    def all_ended():
        streams = Stream.objects.filter(name__in=names)
        assert not streams.filter(state=Stream.State.FAILED_PERMANENTLY).exists()
        return all(s.state == Stream.State.PAUSED and s.reached_end_at for s in streams)

    _wait_for("every stream to reach its end", all_ended, timeout=120)
    return names, start, end


@pytest.mark.parametrize(("dialect", "layout"), CASES)
def test_every_row_version_lands_once_after_dedupe(pipeline, sim, read_through_kills, dialect, layout):
    names, start, end = read_through_kills
    name = next(n for n, case in names.items() if case == (dialect, layout))
    database, table, *_ = TABLES[(dialect, layout)]
    # the simulator's truth: (partition, commit timestamp, key) of every version in the window
    truth = {
        (
            "all" if v["shard"] is None else f"shard:{v['shard']}",
            v["commit_timestamp"],
            canonical_json(v["keys"]).decode(),
        )
        for v in table_ground_truth(sim.config, database, table, start, end)
    }
    landed_table = landing.read_landing(str(pipeline.landing), Stream.objects.get(name=name).pk)
    landed = set(
        zip(
            landed_table.column("partition_token").to_pylist(),
            [
                t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
                for t in landed_table.column("commit_timestamp").to_pylist()
            ],
            landed_table.column("server_transaction_id").to_pylist(),
            strict=True,
        )
    )
    assert truth
    assert landed == truth
    # and each partition is one of the stream's fixed ones, with no lineage
    partitions = Partition.objects.filter(stream__name=name)
    assert partitions.count() == (19 if layout == "sharded" else 1)
    assert not partitions.filter(parent_edges__isnull=False).exists()
