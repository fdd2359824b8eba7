"""Every JSON example of the seed document parses the same way through all four paths.

The examples are copied from seed 000 with its comments, "..." and trailing commas
removed, [NULL] written as [null] and the unquoted parent tokens quoted.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest
from changestream_wire import client_rows, googlesql_value, postgresql_value

from partitions.sources.spanner_change_stream.decode import decode_googlesql_value
from partitions.sources.spanner_change_stream.parse import (
    decode_postgresql_value,
    parse_googlesql_row,
    parse_postgresql_row,
)
from partitions.sources.spanner_change_stream.records import (
    ChildPartition,
    ChildPartitionsRecord,
    HeartbeatRecord,
)

TOKEN = "parent_token_1"
COLUMNS = [
    {"name": "AccountId", "type": {"code": "STRING"}, "is_primary_key": True, "ordinal_position": 1},
    {"name": "LastUpdate", "type": {"code": "TIMESTAMP"}, "is_primary_key": False, "ordinal_position": 2},
    {"name": "Balance", "type": {"code": "INT"}, "is_primary_key": False, "ordinal_position": 3},
]


def _data_change(sequence, key, new, old, capture, records=1, columns=COLUMNS):
    return {
        "data_change_record": {
            "commit_timestamp": "2022-09-27T12:30:00.123456Z",
            "record_sequence": sequence,
            "server_transaction_id": "6329047911",
            "is_last_record_in_transaction_in_partition": True,
            "table_name": "AccountBalance",
            "column_types": columns,
            "mods": [{"keys": {"AccountId": key}, "new_values": new, "old_values": old}],
            "mod_type": "UPDATE",
            "value_capture_type": capture,
            "number_of_records_in_transaction": records,
            "number_of_partitions_in_transaction": records,
            "transaction_tag": "app=banking,env=prod,action=update",
            "is_system_transaction": False,
        }
    }


NEW = {"LastUpdate": "2022-09-27T12:30:00.123456Z", "Balance": 1000}
DATA_CHANGE_EXAMPLES = {
    "old_and_new_values_account_1": _data_change(
        "00000000", "Id1", NEW, {"LastUpdate": "2022-09-26T11:28:00.189413Z", "Balance": 1500},
        "OLD_AND_NEW_VALUES", records=2,
    ),
    "old_and_new_values_account_2": _data_change(
        "00000001", "Id2", {"LastUpdate": "2022-09-27T12:30:00.123456Z", "Balance": 2000},
        {"LastUpdate": "2022-01-20T11:25:00.199915Z", "Balance": 1500}, "OLD_AND_NEW_VALUES", records=2,
    ),
    "new_values": _data_change(
        "00000000", "Id1", {"LastUpdate": "2022-09-27T12:30:00.123456Z"}, {}, "NEW_VALUES",
        columns=COLUMNS[:2],
    ),
    "new_row": _data_change("00000000", "Id1", NEW, {}, "NEW_ROW"),
    "new_row_and_old_values": _data_change(
        "00000000", "Id1", NEW, {"LastUpdate": "2022-09-26T11:28:00.189413Z"}, "NEW_ROW_AND_OLD_VALUES"
    ),
}  # fmt: skip
HEARTBEAT = {"heartbeat_record": {"timestamp": "2022-09-27T12:35:00.312486Z"}}
CHILD_PARTITIONS = {
    "child_partitions_record": {
        "start_timestamp": "2022-09-27T12:40:00.562986Z",
        "record_sequence": "00000001",
        "child_partitions": [
            {"token": "child_token_1", "parent_partition_tokens": ["parent_token_1", "parent_token_2"]}
        ],
    }
}
INITIAL_ROOTS_1 = {
    "child_partitions_record": {
        "record_type": "child_partitions",
        "start_timestamp": "2022-05-01T09:00:01Z",
        "record_sequence": 1000012389,
        "child_partitions": [
            {"token": "child_token_1", "parent_partition_tokens": [None]},
            {"token": "child_token_2", "parent_partition_tokens": [None]},
        ],
    }
}
INITIAL_ROOTS_2 = {
    "child_partitions_record": {
        "record_type": "child_partitions",
        "start_timestamp": "2022-05-01T09:00:01Z",
        "record_sequence": 1000012390,
        "child_partitions": [{"token": "child_token_3", "parent_partition_tokens": [None]}],
    }
}
MERGE = {
    "child_partitions_record": {
        "record_type": "child_partitions",
        "start_timestamp": "2022-05-01T09:30:15Z",
        "record_sequence": 1000012389,
        "child_partitions": [
            {"token": "child_token_4", "parent_partition_tokens": ["child_token_2", "child_token_3"]}
        ],
    }
}


def _googlesql_shape(example: dict) -> dict:
    # GoogleSQL has no record_type field and types record_sequence as STRING.
    example = copy.deepcopy(example)
    body = example.get("child_partitions_record")
    if body is not None:
        body.pop("record_type", None)
        body["record_sequence"] = str(body["record_sequence"])
    return example


def parse_all_paths(example: dict) -> list:
    """Return the record of one example through each of the four parse paths."""
    gsql = [googlesql_value(_googlesql_shape(example))]
    pg = [postgresql_value(example)]
    return [
        parse_postgresql_row(client_rows(pg, "postgresql", lazy=False)[0], TOKEN),
        decode_postgresql_value(client_rows(pg, "postgresql", lazy=True)[0][0], TOKEN),
        parse_googlesql_row(client_rows(gsql, "googlesql", lazy=False)[0], TOKEN),
        decode_googlesql_value(client_rows(gsql, "googlesql", lazy=True)[0][0], TOKEN),
    ]


def _utc(*parts) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize("name", sorted(DATA_CHANGE_EXAMPLES))
def test_seed_data_change_example_parses_field_by_field(name):
    # given a data change record of the seed document
    example = DATA_CHANGE_EXAMPLES[name]
    body = example["data_change_record"]
    # when it is parsed through every path
    records = parse_all_paths(example)
    # then every path gives the same record, with every field as the document shows it
    assert all(r == records[0] for r in records)
    record = records[0]
    assert record.commit_timestamp == _utc(2022, 9, 27, 12, 30, 0, 123456)
    assert record.commit_timestamp.tzinfo is UTC
    assert record.record_sequence == body["record_sequence"]
    assert record.server_transaction_id == "6329047911"
    assert record.is_last_record_in_transaction_in_partition is True
    assert record.table_name == "AccountBalance"
    assert [(c.name, c.type, c.is_primary_key, c.ordinal_position) for c in record.column_types] == [
        (c["name"], c["type"], c["is_primary_key"], c["ordinal_position"]) for c in body["column_types"]
    ]
    (mod,) = record.mods
    assert mod.keys == body["mods"][0]["keys"]
    assert mod.new_values == body["mods"][0]["new_values"]
    assert mod.old_values == body["mods"][0]["old_values"]
    assert record.mod_type == "UPDATE"
    assert record.value_capture_type == body["value_capture_type"]
    assert record.number_of_records_in_transaction == body["number_of_records_in_transaction"]
    assert record.number_of_partitions_in_transaction == body["number_of_partitions_in_transaction"]
    assert record.transaction_tag == "app=banking,env=prod,action=update"
    assert record.is_system_transaction is False


def test_all_four_value_capture_types_appear_in_the_examples():
    captures = {e["data_change_record"]["value_capture_type"] for e in DATA_CHANGE_EXAMPLES.values()}
    assert captures == {"OLD_AND_NEW_VALUES", "NEW_ROW", "NEW_VALUES", "NEW_ROW_AND_OLD_VALUES"}


def test_seed_heartbeat_example_parses():
    records = parse_all_paths(HEARTBEAT)
    assert records == [HeartbeatRecord(_utc(2022, 9, 27, 12, 35, 0, 312486))] * 4


def test_seed_child_partitions_example_parses():
    records = parse_all_paths(CHILD_PARTITIONS)
    expected = ChildPartitionsRecord(
        _utc(2022, 9, 27, 12, 40, 0, 562986),
        "00000001",
        (ChildPartition("child_token_1", ("parent_token_1", "parent_token_2")),),
    )
    assert records == [expected] * 4


def test_initial_query_roots_have_no_parents():
    # given the two child partition records of the initial query, parents [NULL]
    first, second = parse_all_paths(INITIAL_ROOTS_1), parse_all_paths(INITIAL_ROOTS_2)
    # then the children are roots and the numeric record_sequence is kept as a string
    assert (
        first
        == [
            ChildPartitionsRecord(
                _utc(2022, 5, 1, 9, 0, 1),
                "1000012389",
                (ChildPartition("child_token_1", ()), ChildPartition("child_token_2", ())),
            )
        ]
        * 4
    )
    assert second[0].child_partitions == (ChildPartition("child_token_3", ()),)
    assert second[0].record_sequence == "1000012390"
    assert all(r == second[0] for r in second)


def test_merge_example_names_both_parents():
    records = parse_all_paths(MERGE)
    expected = ChildPartitionsRecord(
        _utc(2022, 5, 1, 9, 30, 15),
        "1000012389",
        (ChildPartition("child_token_4", ("child_token_2", "child_token_3")),),
    )
    assert records == [expected] * 4
