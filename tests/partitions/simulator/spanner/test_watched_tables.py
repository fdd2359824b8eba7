"""The simulator's commit-timestamp tables: a deterministic live history, strict poll SQL, read timestamps."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from google.api_core.exceptions import InvalidArgument
from google.cloud.spanner_v1 import param_types
from simulator_rows import make_client

from partitions.simulator.core.clock import to_us
from partitions.simulator.spanner.config import SimulatorConfig, parse_fault
from partitions.simulator.spanner.server import start_server
from partitions.simulator.spanner.table_history import TableHistory
from partitions.simulator.spanner.table_reads import table_ground_truth

MANAGE = str(Path(__file__).resolve().parents[4] / "manage.py")
POLL = (
    "SELECT * FROM `Events` WHERE `LastModified` > @after "
    "ORDER BY `LastModified`, `TenantId`, `EventId` LIMIT @limit"
)
EPOCH_US = to_us(datetime(2024, 5, 1, tzinfo=UTC))


def poll(database, after: datetime, limit: int = 10_000, sql: str = POLL, **kwargs):
    """Return (rows, read timestamp) of one poll query in a multi-use snapshot."""
    params = {"after": after, "limit": limit}
    types = {"after": param_types.TIMESTAMP, "limit": param_types.INT64}
    with database.snapshot(multi_use=True, **kwargs) as snapshot:
        result = snapshot.execute_sql(sql, params=params, param_types=types)
        rows = list(result)
        return rows, result.metadata.transaction.read_timestamp


def test_history_is_a_pure_function_of_seed_and_second():
    # given two histories with the same seed and a third with another
    one, two = (TableHistory(5, "events", 300, 60, None, EPOCH_US) for _ in range(2))
    other = TableHistory(6, "events", 300, 60, None, EPOCH_US)
    second = EPOCH_US // 1_000_000 + 200
    # then the same second holds the same versions in the first two only
    assert [(v.ts_us, v.key, v.row) for v in one.second(second).versions] == [
        (v.ts_us, v.key, v.row) for v in two.second(second).versions
    ]
    assert [v.key for v in one.second(second).versions] != [v.key for v in other.second(second).versions]


def test_rows_share_commit_timestamps_often_and_updates_restamp_a_key_later():
    # given a busy table in steady state (past three update intervals)
    history = TableHistory(5, "events", 400, 60, None, EPOCH_US)
    start = EPOCH_US // 1_000_000 + 400
    versions = [v for s in range(start, start + 5) for v in history.second(s).versions]
    # then many rows share their commit timestamp with another row, as one transaction's writes do
    per_ts = Counter(v.ts_us for v in versions)
    assert sum(n for n in per_ts.values() if n > 1) > len(versions) / 2
    assert 1800 < len(versions) < 2200  # about 400 versions a second
    # and a key written again 60 s later was replaced: visible up to then, not after
    update = next(v for v in history.second(start + 60).versions if v.key in {w.key for w in versions})
    earlier = next(v for v in versions if v.key == update.key)
    assert update.ts_us - earlier.ts_us == 60_000_000
    assert not earlier.last
    assert earlier.visible_at(update.ts_us - 1, history.update_after_us)
    assert not earlier.visible_at(update.ts_us, history.update_after_us)


def test_a_poll_sees_rows_only_up_to_its_read_timestamp(simulator, wait_for):
    # given the live table
    database = make_client(simulator.port).instance("i").database("demo-db")
    after = datetime.now(UTC) - timedelta(seconds=3)
    # when it is polled now and again once rows were committed after that first read
    first, read_at = poll(database, after)

    def poll_past_first():
        rows, at = poll(database, after)
        return (rows, at) if rows and max(row[5] for row in rows) > read_at else None

    second, later = wait_for(
        "a poll with rows committed after the first one's read", poll_past_first, timeout=30
    )
    # then each poll returned rows committed up to its read timestamp, and later rows appeared later
    assert first
    assert all(after < row[5] <= read_at for row in first)
    assert max(row[5] for row in second) > read_at
    assert read_at < later <= datetime.now(UTC)
    assert [row[:2] for row in first] == [row[:2] for row in second][: len(first)]


def test_an_explicit_begin_returns_the_read_timestamp_every_query_then_reads_at(simulator, wait_for):
    database = make_client(simulator.port).instance("i").database("demo-db")
    with database.snapshot(multi_use=True) as snapshot:
        snapshot.begin()
        read_at = snapshot._transaction_read_timestamp
        wait_for("rows committed after the read timestamp", lambda: poll(database, read_at)[0], timeout=30)
        params = {"after": read_at - timedelta(seconds=5), "limit": 10_000}
        types = {"after": param_types.TIMESTAMP, "limit": param_types.INT64}
        rows = list(snapshot.execute_sql(POLL, params=params, param_types=types))
    assert read_at is not None
    assert rows
    assert max(row[5] for row in rows) <= read_at
    assert simulator.table_queries("Events")[-1].read_timestamp == read_at


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT 1", "Syntax error"),
        ("SELECT * FROM `Events`", "Syntax error"),
        (POLL.replace("`Events`", "`Nope`"), "Table not found: Nope"),
        (POLL.replace("`LastModified` >", "`Kind` >"), "answers polls of Events by"),
        (POLL.replace("`EventId`", "`Missing`"), "Unrecognized name: Missing"),
        (
            POLL.replace("`Events`", "`Events`@{FORCE_INDEX=Idx}"),
            "does not have a secondary index called Idx",
        ),
        (POLL.replace("`Events`", '"Events"'), "mixes GoogleSQL and PostgreSQL"),
        (
            "SELECT * FROM Events WHERE LastModified >= @after AND (LastModified > @after OR "
            "(LastModified = @limit AND TenantId > @after)) "
            "ORDER BY LastModified, TenantId, EventId LIMIT @limit",
            "not (ts, key) > cursor",
        ),
    ],
)
def test_sql_other_than_a_poll_it_understands_is_invalid_argument(simulator, sql, message):
    database = make_client(simulator.port).instance("i").database("demo-db")
    with pytest.raises(InvalidArgument, match=re.escape(message)):
        poll(database, datetime.now(UTC), sql=sql)


def test_only_strong_reads_are_served(simulator):
    database = make_client(simulator.port).instance("i").database("demo-db")
    with pytest.raises(InvalidArgument, match="strong reads only"):
        poll(database, datetime.now(UTC), exact_staleness=timedelta(seconds=5))


def test_a_poll_broken_by_unavailable_resumes_at_the_same_read_timestamp_with_nothing_lost():
    # given a server that drops streams after a message, with small messages
    config = SimulatorConfig(
        seed=4, table_rate=500, batch_bytes=2_000, faults=(parse_fault("unavailable:0.3"),)
    )
    server = start_server(config, "127.0.0.1", 0)
    try:
        database = make_client(server.port).instance("i").database("demo-db")
        after = datetime.now(UTC) - timedelta(seconds=3)
        # when a poll of a few thousand rows runs
        rows, read_at = poll(database, after)
        # then the client resumed it, and it returned exactly the versions visible at its read timestamp
        queries = server.table_queries("Events")
        assert any(q.resumed for q in queries)
        truth = list(
            table_ground_truth(server.config, "demo-db", "Events", after + timedelta(microseconds=1), read_at)
        )
        assert [(r[0], r[1]) for r in rows] == [(t["keys"]["TenantId"], t["keys"]["EventId"]) for t in truth]
    finally:
        server.stop(0)


def test_the_ddl_lists_the_tables_with_their_commit_timestamp_columns(simulator):
    database = make_client(simulator.port).instance("i").database("demo-pg")
    database.reload()
    ddl = "\n".join(database.ddl_statements)
    assert "last_modified spanner.commit_timestamp NOT NULL" in ddl
    assert (
        "CREATE INDEX sharded_events_by_shard_last_modified ON sharded_events (shard_id, last_modified)"
        in ddl
    )


def test_table_ground_truth_command_prints_each_version_of_the_window_once(capsys):
    # given a window of the sharded PostgreSQL table
    args = ["--ground-truth", "--database", "demo-pg:postgresql", "--epoch", "2024-05-01T09:00:00Z"]
    args += ["--table", "sharded_events", "--table-rate", "100", "--start", "2024-05-01T09:30:00Z"]
    args += ["--end", "2024-05-01T09:30:02Z"]
    # when the command runs twice
    call_command("spanner_simulator", *args)
    first = capsys.readouterr().out
    call_command("spanner_simulator", *args)
    # then it prints the same versions, sorted by commit timestamp, each with its shard
    assert capsys.readouterr().out == first
    lines = [json.loads(line) for line in first.splitlines()]
    assert 150 < len(lines) < 250
    assert [line["commit_timestamp"] for line in lines] == sorted(line["commit_timestamp"] for line in lines)
    assert all(line["shard"] == line["values"]["shard_id"] for line in lines)
    assert lines[0]["table"] == "sharded_events"


def test_an_unknown_table_is_one_line_on_stderr_and_status_2():
    window = [
        "--start",
        "2024-05-01T09:30:00Z",
        "--end",
        "2024-05-01T09:30:01Z",
        "--epoch",
        "2024-05-01T09:00:00Z",
    ]
    result = subprocess.run(
        [sys.executable, MANAGE, "spanner_simulator", "--ground-truth", "--database", "demo-db",
         "--table", "Nope", *window],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "table 'Nope' is not in database demo-db (its tables: Events, ShardedEvents)" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shards", "0"], "table shards must be between 1 and 1,000"),
        (["--table-rate", "-1"], "table rate must be between"),
        (["--table-update-after", "1.5s"], "whole seconds"),
    ],
)
def test_bad_table_options_are_refused_with_status_2(args, message):
    with pytest.raises(CommandError, match=re.escape(message)) as caught:
        call_command("spanner_simulator", *args)
    assert caught.value.returncode == 2
