"""Bigtable changes land one row per mod, in the landing zone's envelope."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import pytest

from partitions.sources.bigtable.landing import landing_table
from partitions.sources.bigtable.records import (
    GARBAGE_COLLECTION,
    USER,
    Change,
    DeleteFromColumn,
    DeleteFromFamily,
    DeleteFromRow,
    SetCell,
)
from partitions.sources.landing import LANDING_SCHEMA, row_uuid

COMMIT = datetime(2026, 3, 1, 12, 0, 0, 250_000, tzinfo=UTC)
READ_AT = datetime(2026, 3, 1, 12, 0, 5, tzinfo=UTC)
BIG = bytes(range(256)) * 300  # 76,800 bytes: more than the 64 KiB that land


@pytest.fixture
def rows() -> list[dict]:
    user = Change(
        row_key=b"user#42",
        commit_timestamp=COMMIT,
        tiebreaker=-7,
        type=USER,
        source_cluster_id="cluster-a",
        mods=(
            SetCell("cf", b"name", 1_000, b"Ada"),
            SetCell("cf", b"\x00blob", 2_000, BIG),
            DeleteFromColumn("cf", b"email", 0, 5_000),
            DeleteFromFamily("meta"),
            DeleteFromRow(),
        ),
    )
    collected = Change(b"\xffold", COMMIT, 3, GARBAGE_COLLECTION, "", (DeleteFromColumn("cf", b"x", 0, 9),))
    table = landing_table("events", "my-stream", "bt-token", [user, collected], READ_AT)
    assert table.schema == LANDING_SCHEMA
    return table.to_pylist()


def test_each_mod_lands_as_a_row_of_its_change(rows):
    assert [r["mod_type"] for r in rows] == [
        "SET_CELL",
        "SET_CELL",
        "DELETE_FROM_COLUMN",
        "DELETE_FROM_FAMILY",
        "DELETE_FROM_ROW",
        "DELETE_FROM_COLUMN",
    ]
    first = rows[0]
    assert first["read_method"] == "bigtable-change-stream"
    assert first["object"] == first["table_name"] == "events"
    assert first["commit_timestamp"] == first["source_timestamp"] == COMMIT
    assert first["server_transaction_id"] == b"user#42".hex()
    assert first["record_sequence"] == "-7"
    assert [r["mod_index"] for r in rows] == [0, 1, 2, 3, 4, 0]
    assert first["value_capture_type"] == "NEW_VALUES"
    assert first["old_values"] == "{}"
    assert first["transaction_tag"] == "cluster-a"
    assert first["number_of_records_in_transaction"] == first["number_of_partitions_in_transaction"] == 1
    assert first["sort_keys"] == [COMMIT.isoformat(), b"user#42".hex(), "-7", "0"]


def test_keys_and_values_are_canonical_json(rows):
    keys = [json.loads(r["keys"]) for r in rows]
    assert keys[0] == {"row_key": "user#42", "family": "cf", "qualifier": "name"}
    assert keys[1]["qualifier"] == "0x" + b"\x00blob".hex()
    assert keys[3] == {"row_key": "user#42", "family": "meta"}
    assert keys[4] == {"row_key": "user#42"}
    assert keys[5]["row_key"] == "0x" + b"\xffold".hex()
    new = [json.loads(r["new_values"]) for r in rows]
    assert new[0] == {"timestamp_micros": 1000, "value": base64.b64encode(b"Ada").decode(), "value_size": 3}
    assert new[1] == {"timestamp_micros": 2000, "value_size": len(BIG)}  # too big to land
    assert new[2] == {"time_range": {"start_timestamp_micros": 0, "end_timestamp_micros": 5000}}
    assert new[3] == new[4] == {}
    assert rows[0]["keys"] == json.dumps(keys[0], sort_keys=True, separators=(",", ":"))
    sizes = [len(r["keys"]) + len(r["new_values"]) + len(r["old_values"]) for r in rows]
    assert [r["mod_bytes"] for r in rows] == sizes


def test_garbage_collection_lands_as_a_system_transaction(rows):
    assert [r["is_system_transaction"] for r in rows] == [False] * 5 + [True]
    assert rows[5]["transaction_tag"] == ""


def test_a_rows_uuid_is_the_spanner_rows_uuid_of_its_dedupe_key(rows):
    key = f"bt-token|{COMMIT.isoformat()}|{b'user#42'.hex()}|-7|1"
    assert rows[1]["uuid"] == row_uuid(key)
    assert len({r["uuid"] for r in rows}) == len(rows)


def test_no_changes_land_no_rows():
    table = landing_table("events", "s", "t", [], READ_AT)
    assert table.num_rows == 0
    assert table.schema == LANDING_SCHEMA
