"""Polling the simulator's tables with the official client over real gRPC lands exactly the ground truth."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest
from committs_support import as_json, poll_to_end, settings_for, sort_truth

from partitions.simulator.spanner.table_reads import table_ground_truth
from partitions.sources.base import PROGRESS, Ended, PartitionState, PermanentSourceError, ReadOptions
from partitions.sources.spanner_commit_timestamp.kind import KIND
from partitions.sources.spanner_commit_timestamp.records import TableRowRecord

ONE_US = timedelta(microseconds=1)


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


def canonical(keys: dict) -> str:
    return json.dumps(keys, sort_keys=True, separators=(",", ":"))


def window(backlog_s: float = 3.0, ahead_s: float = 1.0) -> tuple[datetime, datetime]:
    """Return a window that starts in the past (a backlog) and ends shortly in the future (live)."""
    now = datetime.now(UTC)
    return now - timedelta(seconds=backlog_s), now + timedelta(seconds=ahead_s)


def landed(source, run) -> pa.Table:
    """Return every landing row of a run, deduplicated by uuid as the pipeline does."""
    read_at = datetime.now(UTC)
    tables = [source.landing_table("s", token, [r], read_at) for token, r in run.records]
    table = pa.concat_tables(tables)
    first = {uuid: i for i, uuid in reversed(list(enumerate(table["uuid"].to_pylist())))}
    return table.take(sorted(first.values()))


@pytest.mark.parametrize("layout", ["unsharded", "sharded"])
@pytest.mark.parametrize("dialect", ["googlesql", "postgresql"])
def test_polling_window_after_window_lands_exactly_the_ground_truth(table_simulator, dialect, layout):
    # given a table being written to, and a stream over a window from a few seconds ago to just ahead
    settings = settings_for(table_simulator, dialect, layout)
    source = KIND.connect(settings)
    start, end = window()
    # when every partition is polled window after window until it ends
    run = poll_to_end(source, start, end, interval_ms=300)
    # then after dedupe the landed rows are exactly the row versions committed in the window
    truth = list(
        table_ground_truth(table_simulator.config, settings["database"], settings["table"], start, end)
    )
    assert len(truth) > 1000
    assert as_json(run.records) == sort_truth(truth)
    # (landed once each, as dedupe by uuid keeps them)
    rows = landed(source, run).to_pylist()
    landed_keys = sorted((r["commit_timestamp"], r["keys"]) for r in rows)
    assert landed_keys == sorted((parse_ts(t["commit_timestamp"]), canonical(t["keys"])) for t in truth)
    assert len(source.roots(start, end, None)) == (19 if layout == "sharded" else 1)


def test_a_page_boundary_inside_a_group_sharing_a_commit_timestamp_loses_and_doubles_nothing(table_simulator):
    # given pages of 3 rows, while transactions stamp up to 12 rows with one commit timestamp
    source = KIND.connect(settings_for(table_simulator, "googlesql", "unsharded"))
    source.page_size, source.window_rows = 3, 60
    start, end = window(backlog_s=1.5, ahead_s=0.5)
    # when the table is polled to the end
    run = poll_to_end(source, start, end, interval_ms=200)
    # then some page boundary fell between two rows of one commit timestamp
    split = 0
    for read in run.reads:
        rows = [item for item in read.items if isinstance(item, TableRowRecord)]
        split += sum(rows[i - 1].commit_timestamp == rows[i].commit_timestamp for i in range(3, len(rows), 3))
    assert split > 5
    # and every row version arrived exactly once
    keys = [(r.commit_timestamp, tuple(r.keys.values())) for _, r in run.records]
    assert len(keys) == len(set(keys))
    truth = list(table_ground_truth(table_simulator.config, "demo-db", "Events", start, end))
    assert as_json(run.records) == sort_truth(truth)


def test_watermark_is_the_read_timestamp_when_caught_up_else_just_before_the_last_row(table_simulator):
    # given a backlog larger than a window's row cap
    source = KIND.connect(settings_for(table_simulator, "postgresql", "unsharded"))
    source.page_size, source.window_rows = 50, 200
    start, end = window(backlog_s=4.0, ahead_s=0.5)
    # when the table is polled to the end
    run = poll_to_end(source, start, end, interval_ms=250)
    reads = run.reads
    assert any(r.capped for r in reads)
    assert not reads[-1].capped
    for read in reads:
        rows = [item for item in read.items if isinstance(item, TableRowRecord)]
        if read.capped:
            # then a capped read stops before its last row's timestamp (more may share it) and asks for more
            assert read.watermark == rows[-1].commit_timestamp - ONE_US
            assert read.delay == 0.0
            assert PROGRESS not in read.items
        else:
            # and a read that caught up reaches its transaction's read timestamp (or the end), then waits
            assert read.watermark == min(read.read_timestamp, end)
            assert read.delay == 0.25
            assert read.cursor == {"after": read.cursor["after"], "key": None, "types": []}
    # and the watermark never moves backwards, and the read ended only at the end, with no children
    marks = [r.watermark for r in reads]
    assert marks == sorted(marks)
    assert reads[-1].items[-1] == Ended(at=end)
    assert all(not any(isinstance(i, Ended) for i in r.items) for r in reads[:-1])


def test_every_page_of_a_poll_reads_at_the_one_read_timestamp_its_first_query_began(table_simulator):
    # given a poll that needs several pages
    source = KIND.connect(settings_for(table_simulator, "googlesql", "sharded"))
    source.page_size, source.window_rows = 20, 100
    before = len(table_simulator.table_queries())
    start, end = window(backlog_s=2.0, ahead_s=0.0)
    state = source.roots(start, end, None)[0]
    read = source.read(PartitionState(state.token, start, start, {}, state.label), None, ReadOptions(1000))
    # when it runs
    list(read)
    # then the first query began the transaction inline and every page read at its read timestamp
    queries = table_simulator.table_queries()[before:]
    assert len(queries) == read.pages >= 2
    assert queries[0].began_transaction
    assert not any(q.began_transaction for q in queries[1:])
    assert {q.read_timestamp for q in queries} == {read.read_timestamp}


@pytest.mark.parametrize(
    ("dialect", "hint"), [("googlesql", "@{FORCE_INDEX="), ("postgresql", "/*@ FORCE_INDEX = ")]
)
def test_force_index_hint_is_sent_when_an_index_is_set_and_only_then(table_simulator, dialect, hint):
    # given the sharded table read with its index, and without
    with_index = KIND.connect(settings_for(table_simulator, dialect, "sharded"))
    without = KIND.connect(settings_for(table_simulator, dialect, "sharded", index=""))
    start, end = window(backlog_s=0.5, ahead_s=0.0)
    # when each polls to the end
    before = len(table_simulator.table_queries())
    poll_to_end(with_index, start, end)
    middle = len(table_simulator.table_queries())
    poll_to_end(without, start, end)
    sent = table_simulator.table_queries()
    # then the hint named the index in every query of the first, and in none of the second
    assert all(hint + with_index.spec.index in q.sql for q in sent[before:middle])
    assert not any("FORCE_INDEX" in q.sql for q in sent[middle:])
    assert all(q.status == "OK" for q in sent[before:])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"table": "Missing"}, "table Missing or one of its columns"),
        (
            {"timestamp_column": "UpdatedAt"},
            "table Events or one of its columns (UpdatedAt, TenantId, EventId)",
        ),
        (
            {"table": "ShardedEvents", "shard_column": "ShardId", "shards": "0-3", "index": "NoSuchIndex"},
            "index NoSuchIndex was not found on table ShardedEvents",
        ),
    ],
)
def test_a_missing_table_column_or_index_is_a_permanent_error_that_says_which(
    table_simulator, override, message
):
    # given settings naming something the database does not have
    source = KIND.connect(settings_for(table_simulator, "googlesql", "unsharded", **override))
    start = datetime.now(UTC)
    token = source.roots(start, None, None)[0].token
    # when a poll runs
    with pytest.raises(PermanentSourceError) as caught:
        list(source.read(PartitionState(token, start, start), None, ReadOptions(1000)))
    # then it fails for good, naming what to check
    assert message in str(caught.value)
    assert caught.value.code == "INVALID_ARGUMENT"


def test_a_read_closed_early_resumes_exactly_after_its_last_record(table_simulator):
    # given a poll stopped after 25 records, mid-page, while rows share commit timestamps
    source = KIND.connect(settings_for(table_simulator, "postgresql", "unsharded"))
    source.page_size = 10
    start, end = window(backlog_s=1.0, ahead_s=0.0)
    first = source.read(PartitionState("all", start, start), end, ReadOptions(1000))
    head = [item for _, item in zip(range(25), first, strict=False)]
    first.close()
    first.close()  # safe twice
    # when the next read starts from its watermark and cursor and runs to the end
    rest = source.read(PartitionState("all", start, first.watermark, first.cursor), end, ReadOptions(1000))
    tail = [item for item in rest if isinstance(item, TableRowRecord)]
    # then the two together are the window's rows, none twice
    truth = list(table_ground_truth(table_simulator.config, "demo-pg", "events", start, end))
    assert as_json([(None, r) for r in head + tail]) == sort_truth(truth)
    assert first.watermark == head[-1].commit_timestamp - ONE_US
