"""Poll SQL: names checked and quoted, values bound and typed, the cursor expanded column by column."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from google.cloud.spanner_v1 import param_types
from google.cloud.spanner_v1._helpers import _make_value_pb

from partitions.sources.spanner_commit_timestamp.kind import KIND
from partitions.sources.spanner_commit_timestamp.query import Cursor, TableSpec, page_query
from partitions.sources.spanner_commit_timestamp.source import CommitTimestampSource

AT = datetime(2024, 5, 1, 9, 0, 0, 123456, tzinfo=UTC)
END = datetime(2024, 5, 2, tzinfo=UTC)
SHARDED = TableSpec("Singers", "LastModified", ("SingerId", "Name"), "ShardId", "SingersByShard")


def test_googlesql_page_after_a_row_expands_the_composite_key_and_forces_the_index():
    cursor = Cursor(AT, (7, "Marc"), ("INT64", "STRING"))
    query = page_query(SHARDED, "googlesql", cursor, -3, END, 500)
    assert query.sql == (
        "SELECT * FROM `Singers`@{FORCE_INDEX=SingersByShard} WHERE `ShardId` IS NOT NULL "
        "AND `ShardId` = @shard AND `LastModified` >= @after "
        "AND (`LastModified` > @after OR (`LastModified` = @after AND "
        "(`SingerId` > @k0 OR (`SingerId` = @k0 AND `Name` > @k1)))) AND `LastModified` <= @end "
        "ORDER BY `LastModified`, `SingerId`, `Name` LIMIT @limit"
    )
    assert query.params == {"shard": -3, "after": AT, "k0": 7, "k1": "Marc", "end": END, "limit": 500}
    assert query.param_types == {
        "shard": param_types.INT64,
        "after": param_types.TIMESTAMP,
        "k0": param_types.INT64,
        "k1": param_types.STRING,
        "end": param_types.TIMESTAMP,
        "limit": param_types.INT64,
    }


def test_postgresql_page_numbers_each_value_once_and_sorts_null_keys_first():
    cursor = Cursor(AT, (7, "Marc"), ("INT64", "STRING"))
    query = page_query(SHARDED, "postgresql", cursor, "eu", None, 500)
    assert query.sql == (
        'SELECT * FROM "Singers" /*@ FORCE_INDEX = SingersByShard */ WHERE "ShardId" IS NOT NULL AND '
        '"ShardId" = $1 AND "LastModified" >= $2 AND ("LastModified" > $2 OR ("LastModified" = $2 AND '
        '("SingerId" > $3 OR ("SingerId" = $3 AND "Name" > $4)))) '
        'ORDER BY "LastModified", "SingerId" NULLS FIRST, "Name" NULLS FIRST LIMIT $5'
    )
    assert query.params == {"p1": "eu", "p2": AT, "p3": 7, "p4": "Marc", "p5": 500}
    assert query.param_types["p1"] == param_types.STRING


@pytest.mark.parametrize("dialect", ["googlesql", "postgresql"])
def test_a_cursor_at_a_timestamp_only_asks_for_later_commits(dialect):
    spec = TableSpec("Events", "Ts", ("Id",))
    query = page_query(spec, dialect, Cursor(AT), None, None, 10)
    assert " WHERE " + ("`Ts` > @after" if dialect == "googlesql" else '"Ts" > $1') + " ORDER BY" in query.sql
    assert "FORCE_INDEX" not in query.sql


def test_a_null_key_value_in_the_cursor_is_compared_with_is_null_not_bound():
    spec = TableSpec("Events", "Ts", ("A", "B", "C"))
    query = page_query(
        spec,
        "googlesql",
        Cursor(AT, (None, 2, Decimal("1.5")), ("STRING", "INT64", "NUMERIC")),
        None,
        None,
        10,
    )
    assert "(`A` IS NOT NULL OR (`A` IS NULL AND (`B` > @k1 OR (`B` = @k1 AND `C` > @k2))))" in query.sql
    assert "k0" not in query.params
    assert query.params["k2"] == Decimal("1.5")


def test_values_never_enter_the_sql_text():
    hostile = "x' OR '1'='1"
    cursor = Cursor(AT, (hostile, hostile), ("STRING", "STRING"))
    query = page_query(SHARDED, "googlesql", cursor, hostile, None, 10)
    assert hostile not in query.sql
    assert query.params["shard"] == hostile


def test_a_cursor_survives_json_and_starting_at_means_at_or_after():
    cursor = Cursor(AT, (1, "b"), ("INT64", "STRING"))
    assert Cursor.from_json(cursor.to_json()) == cursor
    assert Cursor.starting_at(AT).after == datetime(2024, 5, 1, 9, 0, 0, 123455, tzinfo=UTC)
    with pytest.raises(ValueError, match="not a cursor"):
        Cursor.from_json({"key": [1]})


@pytest.mark.parametrize(
    "spec",
    [
        {"table": "T; DELETE FROM T"},
        {"timestamp_column": "ts`"},
        {"key_columns": ("id", 'x"')},
        {"index": "i */ --"},
    ],
)
def test_bad_identifiers_are_refused_before_any_query(table_simulator, spec):
    # given settings that skipped clean() and name something that is not an identifier
    values = {
        "project": "p", "instance": "i", "database": "demo-db", "table": "Events",
        "timestamp_column": "LastModified", "key_columns": ("TenantId",), "shard_column": "", "index": "",
        "emulator_host": table_simulator.emulator_host,
    }  # fmt: skip
    values.update(spec)
    before = len(table_simulator.table_queries())
    # when a source is made from them, then it is refused and nothing reached the database
    with pytest.raises(ValueError, match="invalid"):
        KIND.connect(values)
    with pytest.raises(ValueError, match="invalid"):
        CommitTimestampSource(None, values)
    assert len(table_simulator.table_queries()) == before


@pytest.mark.parametrize(
    ("type_", "plain_value", "sent"),
    [
        ("BYTES", "AP8=", "AP8="),
        ("DATE", "2024-05-01", "2024-05-01"),
        ("TIMESTAMP", "2024-05-01T09:00:00.123456Z", "2024-05-01T09:00:00.123456Z"),
        ("NUMERIC", "12.50", "12.50"),
        ("PG_NUMERIC", "12.50", "12.50"),
        ("FLOAT64", "NaN", "NaN"),
        ("BOOL", True, True),
    ],
)
def test_cursor_key_values_of_each_type_are_sent_as_spanner_reads_them(type_, plain_value, sent):
    # given a cursor whose key is a value of one type, as a record keeps it
    query = page_query(
        TableSpec("T", "Ts", ("K",)), "googlesql", Cursor(AT, (plain_value,), (type_,)), None, None, 1
    )
    # when the client encodes the parameter, then Spanner gets the value's own text
    value = _make_value_pb(query.params["k0"])
    assert (value.bool_value if isinstance(sent, bool) else value.string_value) == sent
