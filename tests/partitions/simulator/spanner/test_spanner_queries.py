"""Change stream queries through the official client behave as Spanner's do."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from google.api_core.exceptions import InvalidArgument, NotFound
from google.cloud.spanner_admin_database_v1 import DatabaseDialect
from google.cloud.spanner_v1 import ExecuteSqlRequest
from simulator_rows import normalize

from partitions.simulator.core.clock import to_datetime, to_us
from partitions.simulator.spanner.groundtruth import ground_truth
from partitions.simulator.spanner.stream import Position
from partitions.sources.spanner_change_stream.jsonl import format_timestamp, record_fields, record_to_json

GSQL, PG = "googlesql", "postgresql"


def ago(seconds: float) -> datetime:
    return datetime.now(UTC) - timedelta(seconds=seconds)


def ended_partition(simulator, after: datetime, merged: bool):
    """Return a partition of 20 s or more that started after `after` and has ended."""
    now_us = to_us(ago(5))
    simulator.topology.ensure(now_us)
    for part in simulator.topology.partitions():
        ended = part.start_us >= to_us(after) and part.end_us is not None and part.end_us < now_us
        # Long and wide enough to be sure to hold records.
        ended = ended and part.end_us - part.start_us >= 20_000_000 and part.hi - part.lo >= 2**26
        by_merge = len(part.children) == 1
        # For merges, return the left parent so the caller can find the right one.
        if ended and by_merge == merged and (not merged or part.children[0].parents[0] == part.token):
            return part
    raise AssertionError("no such partition")


def test_dialect_is_read_from_the_database(reader):
    assert reader.instance.database("demo-db").database_dialect == DatabaseDialect.GOOGLE_STANDARD_SQL
    assert reader.instance.database("demo-pg").database_dialect == DatabaseDialect.POSTGRESQL


@pytest.mark.parametrize(("database", "dialect"), [("demo-db", GSQL), ("demo-pg", PG)])
def test_initial_query_returns_only_root_child_records(simulator, reader, database, dialect):
    start = ago(600)
    rows = [normalize(v, dialect) for v in reader.rows(database, dialect, start, None, None)]
    assert {kind for kind, _ in rows} == {"child_partitions_record"}
    children = [c for _, body in rows for c in body["child_partitions"]]
    assert all(c["parent_partition_tokens"] == [None] for c in children)
    assert all(body["start_timestamp"] == record_fields_ts(start) for _, body in rows)
    live = simulator.topology.live_at(to_us(start))
    assert [c["token"] for c in children] == [p.token for p in live]


def record_fields_ts(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_split_partition_query_ends_with_its_children(simulator, reader):
    part = ended_partition(simulator, ago(1800), merged=False)
    rows = [
        normalize(v, GSQL) for v in reader.rows("demo-db", GSQL, to_datetime(part.start_us), None, part.token)
    ]
    kinds = [kind for kind, _ in rows]
    assert kinds[-1] == "child_partitions_record"
    assert kinds.count("child_partitions_record") == 1
    last = rows[-1][1]
    assert last["start_timestamp"] == to_datetime(part.end_us).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert [c["token"] for c in last["child_partitions"]] == [c.token for c in part.children]
    assert all(c["parent_partition_tokens"] == [part.token] for c in last["child_partitions"])
    assert len(part.children) in (2, 3)


def test_merged_child_is_announced_by_both_parents_with_one_token(simulator, reader):
    left = ended_partition(simulator, ago(1800), merged=True)
    child = left.children[0]
    announced = []
    for token in child.parents:
        start = to_datetime(simulator.topology.get(token).start_us)
        kind, body = normalize(reader.rows("demo-db", GSQL, start, None, token)[-1], GSQL)
        assert kind == "child_partitions_record"
        announced.append(body["child_partitions"])
    assert (
        announced[0]
        == announced[1]
        == [{"token": child.token, "parent_partition_tokens": list(child.parents)}]
    )


def test_end_timestamp_bounds_a_query_without_child_records(simulator, reader):
    part = ended_partition(simulator, ago(1800), merged=False)
    start = to_datetime(part.start_us)
    end = start + (to_datetime(part.end_us) - start) / 2
    rows = [normalize(v, GSQL) for v in reader.rows("demo-db", GSQL, start, end, part.token, 1000)]
    assert rows
    assert "child_partitions_record" not in {kind for kind, _ in rows}
    stamps = [body.get("commit_timestamp") or body.get("timestamp") for _, body in rows]
    assert stamps == sorted(stamps)
    assert max(stamps) <= record_fields_ts(end)
    assert "data_change_record" in {kind for kind, _ in rows}


def test_heartbeats_fill_idle_time_at_the_requested_interval(simulator, reader):
    part = ended_partition(simulator, ago(1800), merged=True)
    rows = reader.rows("demo-db", GSQL, to_datetime(part.start_us), None, part.token, 1000)
    stamps = [
        datetime.fromisoformat(b.get("commit_timestamp") or b.get("timestamp") or b["start_timestamp"])
        for _, b in (normalize(v, GSQL) for v in rows)
    ]
    gaps = [
        (b - a).total_seconds() for a, b in zip([to_datetime(part.start_us), *stamps], stamps, strict=False)
    ]
    assert max(gaps) <= 1.0


def test_both_dialects_and_ground_truth_agree_on_a_window(simulator, reader):
    part = ended_partition(simulator, ago(1200), merged=False)
    start, end = to_datetime(part.start_us), to_datetime(part.end_us)
    gsql = [normalize(v, GSQL) for v in reader.rows("demo-db", GSQL, start, end, part.token, 2000)]
    pg = [normalize(v, PG) for v in reader.rows("demo-pg", PG, start, end, part.token, 2000)]
    assert gsql == pg
    truth = [
        record_fields(r) for t, r in ground_truth(simulator.config, "demo-db", start, end) if t == part.token
    ]
    assert [body for kind, body in gsql if kind == "data_change_record"] == truth
    assert truth


def test_walking_every_partition_delivers_the_ground_truth_once(simulator, reader):
    start, end = ago(900), ago(870)
    delivered, done, queue = [], set(), []
    parents_of = {}
    for _, body in (normalize(v, GSQL) for v in reader.rows("demo-db", GSQL, start, end, None)):
        queue += [(c["token"], start) for c in body["child_partitions"]]
    while queue:
        token, at = queue.pop(0)
        for kind, body in (normalize(v, GSQL) for v in reader.rows("demo-db", GSQL, at, end, token, 5000)):
            if kind == "data_change_record":
                delivered.append({"partition_token": token, **body})
            for child in body.get("child_partitions", ()):
                parents_of[child["token"]] = child["parent_partition_tokens"]
                child_start = datetime.fromisoformat(body["start_timestamp"])
                ready = all(p in done or p == token for p in child["parent_partition_tokens"])
                if ready and child["token"] not in {t for t, _ in queue}:
                    queue.append((child["token"], child_start))
        done.add(token)
    truth = [record_to_json(r, t) for t, r in ground_truth(simulator.config, "demo-db", start, end)]

    def key(d):
        return (
            d["commit_timestamp"],
            d["server_transaction_id"],
            d["record_sequence"],
            d["partition_token"],
        )

    assert sorted(delivered, key=key) == truth
    assert len(truth) > 100
    assert any(len(p) == 2 for p in parents_of.values())
    assert any(len(p) == 1 for p in parents_of.values())


@pytest.mark.parametrize(
    ("database", "dialect", "start_ago", "token", "stream", "error", "text"),
    [
        ("demo-db", GSQL, 7200, None, "Changes", InvalidArgument, "retention"),
        ("demo-db", GSQL, 60, "sim-nope", "Changes", InvalidArgument, "partition token"),
        ("demo-db", GSQL, 60, None, "Other", InvalidArgument, "Function not found"),
        ("demo-pg", GSQL, 60, None, "Changes", InvalidArgument, "dialect"),
        ("nope-db", GSQL, 60, None, "Changes", NotFound, "Database not found"),
    ],
)
def test_bad_queries_are_refused_like_spanner(
    reader, database, dialect, start_ago, token, stream, error, text
):
    with pytest.raises(error, match=text):
        reader.rows(database, dialect, ago(start_ago), None, token, stream=stream)


def steady_partition(simulator, start: datetime, end: datetime) -> str:
    """Return the token of a partition live from start until after end: no split or merge ends it sooner.

    The topology is a function of time, so its future is known. Any partition live now
    could have begun less than a second ago (a query from before its start is refused)
    or end within the window (the query then ends early, with the children).
    """
    simulator.topology.ensure(to_us(end) + 1_000_000)
    for part in simulator.topology.live_at(to_us(start)):
        if part.start_us <= to_us(start) and (part.end_us is None or part.end_us > to_us(end) + 500_000):
            return part.token
    raise AssertionError(f"no partition lives through {start} - {end}")


def test_live_query_releases_records_as_the_clock_reaches_them(simulator, reader):
    # given a partition live through the window, read from one second ago to two seconds ahead
    now = datetime.now(UTC)
    start, end = now - timedelta(seconds=1), now + timedelta(seconds=2)
    token = steady_partition(simulator, start, end)
    # when the query runs
    rows = reader.rows("demo-db", GSQL, start, end, token, 1000)
    # then it took until the end time and heartbeats kept coming while idle
    assert datetime.now(UTC) >= end - timedelta(milliseconds=50)
    assert "heartbeat_record" in {kind for kind, _ in (normalize(v, GSQL) for v in rows)} or len(rows) > 2


def test_live_query_stays_open_until_its_end_even_with_no_heartbeat_due(simulator, reader):
    # given a partition live through the window, read to two seconds ahead with heartbeats far apart
    now = datetime.now(UTC)
    end = now + timedelta(seconds=2)
    token = steady_partition(simulator, now - timedelta(seconds=1), end)
    # when the query runs
    reader.rows("demo-db", GSQL, now - timedelta(seconds=1), end, token, 10_000)
    # then it ended only once the clock reached its end, as Spanner's does: a reader
    # that takes the end as its new watermark must never start the next window in the future
    assert datetime.now(UTC) >= end - timedelta(milliseconds=50)


def test_a_resumed_query_whose_next_records_aged_out_is_refused(simulator, reader):
    # given a query that started long ago and is resumed with a token for a position
    # that has since fallen out of retention (as after a long outage of its client)
    retention = simulator.config.retention

    def resume(start: datetime, position: Position) -> list:
        sql = (
            f'SELECT ChangeRecord FROM READ_Changes(start_timestamp => "{format_timestamp(start)}", '
            "end_timestamp => NULL, partition_token => NULL, heartbeat_milliseconds => 10000)"
        )
        database = reader.instance.database("demo-db")
        session = database.session()
        session.create()
        request = ExecuteSqlRequest(session=session.name, sql=sql, resume_token=position.encode())
        return list(database.spanner_api.execute_streaming_sql(request=request))

    # when it is resumed, and when a recent query is resumed
    with pytest.raises(InvalidArgument, match="resume position .* retention period"):
        resume(ago(retention + 120), Position(3, to_us(ago(retention + 60)), 0))
    recent = resume(ago(60), Position(0, to_us(ago(60)), 0))
    # then the aged-out one is refused as Spanner refuses a start that old, the other served
    assert recent
