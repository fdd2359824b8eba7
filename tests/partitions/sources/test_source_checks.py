"""Checks before a create, against the Spanner simulator over real gRPC: each fails for its reason.

A wrong change stream name, a start outside retention, a table without the column, a
missing index: each check names the setting and says why; the same settings fixed pass.
"""

from __future__ import annotations

import socket
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from partitions.simulator.spanner.server import start_server
from partitions.sources import KINDS
from partitions.sources.checks import Check, CheckFailed, run_checks


def results(kind: str, values: dict, start=None, timeout: float = 5.0) -> dict[str, tuple[bool, str]]:
    """Return {check: (ok, detail)} of a kind's checks of raw settings."""
    found = run_checks(KINDS[kind].checks(KINDS[kind].clean(values), start), timeout)
    return {r.check: (r.ok, r.detail) for r in found}


def failed(found: dict[str, tuple[bool, str]]) -> list[str]:
    return [name for name, (ok, _) in found.items() if not ok]


@pytest.fixture
def change_stream(simulator):
    return {
        "project": "p", "instance": "i", "database": "demo-db", "change_stream": "Changes",
        "emulator_host": simulator.emulator_host,
    }  # fmt: skip


@pytest.fixture
def table(simulator):
    return {
        "project": "p", "instance": "i", "database": "demo-db", "table": "ShardedEvents",
        "timestamp_column": "LastModified", "key_columns": "TenantId,EventId", "shard_column": "ShardId",
        "shards": "0-18", "index": "ShardedEventsByShardLastModified",
        "emulator_host": simulator.emulator_host,
    }  # fmt: skip


def test_a_change_stream_that_exists_passes_every_check(change_stream):
    found = results("spanner_change_stream", change_stream)
    assert failed(found) == []
    assert "root partitions" in found["change stream query allowed"][1]


@pytest.mark.parametrize("database", ["demo-db", "demo-pg"])
def test_a_wrong_change_stream_name_fails_naming_the_streams_there_are(change_stream, database):
    found = results(
        "spanner_change_stream", {**change_stream, "database": database, "change_stream": "Chnages"}
    )
    assert found["change stream exists"] == (
        False,
        "change stream Chnages does not exist (there are: Changes)",
    )
    assert not found["change stream query allowed"][0]
    assert found["database answers"][0]


def test_a_start_outside_retention_fails_and_a_start_inside_passes(change_stream):
    old = datetime.now(UTC) - timedelta(hours=2)  # the simulator keeps one hour
    ok, detail = results("spanner_change_stream", change_stream, start=old)["start inside retention"]
    assert not ok
    assert "older than the change stream keeps records (retention 1 h" in detail
    recent = datetime.now(UTC) - timedelta(minutes=30)
    assert results("spanner_change_stream", change_stream, start=recent)["start inside retention"][0]


def test_a_dialect_other_than_the_databases_fails(change_stream):
    found = results("spanner_change_stream", {**change_stream, "dialect": "postgresql"})
    assert found["dialect"] == (
        False,
        "the database uses googlesql, not postgresql: set the dialect to googlesql",
    )


def test_a_database_that_does_not_exist_fails_and_the_rest_are_not_asked(change_stream):
    found = results("spanner_change_stream", {**change_stream, "database": "nope"})
    assert found["database answers"][0] is False
    assert "NOT_FOUND" in found["database answers"][1]
    assert found["change stream exists"] == (False, "not checked: database answers failed")


@pytest.mark.parametrize(
    ("dialect", "names"),
    [
        ("googlesql", {}),
        ("postgresql", {
            "database": "demo-pg", "table": "sharded_events", "timestamp_column": "last_modified",
            "key_columns": "tenant_id,event_id", "shard_column": "shard_id",
            "index": "sharded_events_by_shard_last_modified",
        }),
    ],
)  # fmt: skip
def test_a_sharded_table_with_its_index_passes_and_the_poll_plan_reads_the_index(table, dialect, names):
    found = results("spanner_commit_timestamp", {**table, **names})
    assert failed(found) == []
    assert found["poll query uses the index"][1].startswith("the poll query's plan: IndexScan of ")


def test_a_table_without_the_column_fails_and_with_it_passes(table):
    found = results("spanner_commit_timestamp", {**table, "timestamp_column": "UpdatedAt"})
    assert found["commit timestamp column"] == (
        False, "column UpdatedAt does not exist in table ShardedEvents (there are: Active, EventId, Kind, "
        "LastModified, Quantity, ShardId, TenantId)",
    )  # fmt: skip
    not_commit = results("spanner_commit_timestamp", {**table, "timestamp_column": "Kind"})
    assert not_commit["commit timestamp column"] == (False, "column Kind is STRING, not a TIMESTAMP")
    assert results("spanner_commit_timestamp", table)["commit timestamp column"][0]


def test_a_missing_table_fails_and_the_checks_that_need_it_are_not_asked(table):
    found = results("spanner_commit_timestamp", {**table, "table": "Nope"})
    assert found["table exists"] == (False, "table Nope does not exist (there are: Events, ShardedEvents)")
    assert found["index exists"] == (False, "not checked: table exists failed")


def test_a_missing_index_fails_and_no_index_shows_a_table_scan(table):
    found = results("spanner_commit_timestamp", {**table, "index": "ByShard"})
    assert not found["index exists"][0]
    assert not found["poll query uses the index"][0]
    plain = {**table, "table": "Events", "shard_column": "", "shards": "", "index": ""}
    found = results("spanner_commit_timestamp", plain)
    assert failed(found) == []
    assert found["poll query uses the index"][1] == "the poll query's plan: TableScan of Events"


def test_a_source_that_does_not_answer_fails_within_the_deadline(change_stream):
    # given an endpoint that accepts connections and never answers
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        values = {**change_stream, "emulator_host": f"127.0.0.1:{silent.getsockname()[1]}"}
        began = time.monotonic()
        found = results("spanner_change_stream", values, timeout=1.0)
        took = time.monotonic() - began
    assert found["database answers"] == (False, "the source did not answer within 1 s")
    assert failed(found) == list(found)
    assert took < 5


def test_a_check_that_raises_anything_is_a_failed_check_not_an_error():
    def broken() -> str:
        raise RuntimeError("boom")

    def refused() -> str:
        raise CheckFailed("no")

    found = run_checks([Check("a", "", broken), Check("b", "", refused), Check("c", "", lambda: "fine")])
    assert [(r.check, r.ok, r.detail) for r in found] == [
        ("a", False, "RuntimeError: boom"), ("b", False, "no"), ("c", True, "fine"),
    ]  # fmt: skip


@pytest.fixture
def denying(simulator):
    """Yield a simulator like the session's whose demo-db denies callers without a database role."""
    config = replace(simulator.config, denied=(("demo-db", ""),))
    server = start_server(config, "127.0.0.1", 0)
    try:
        yield server
    finally:
        server.stop(0)


def test_credentials_that_may_not_query_the_change_stream_fail_that_check_saying_what_they_need(
    change_stream, denying
):
    # given credentials the database answers (GetDatabase) but lets run no query
    values = {**change_stream, "emulator_host": denying.emulator_host}
    # when the checks run
    found = results("spanner_change_stream", values)
    # then the query check fails with Spanner's PERMISSION_DENIED and what to grant
    ok, detail = found["change stream query allowed"]
    assert not ok
    assert detail.startswith(
        "PERMISSION_DENIED: Caller is missing IAM permission spanner.databases.select on resource "
        "projects/p/instances/i/databases/demo-db."
    )
    assert detail.endswith(
        "; the credentials may not read the change stream: give them spanner.databases.select on the "
        "database (IAM), or, with a database role, SELECT ON CHANGE STREAM Changes and EXECUTE ON "
        "TABLE FUNCTION READ_Changes"
    )
    assert found["database answers"][0]
    # and where they may (the other database of the same server), it passes
    allowed = results("spanner_change_stream", {**values, "database": "demo-pg"})
    assert allowed["change stream query allowed"][0], allowed
