"""Malformed rows raise ChangeRecordError naming the field and the partition, never anything else."""

from __future__ import annotations

import copy

import pytest
from changestream_wire import client_rows, googlesql_value, postgresql_value, random_records
from google.protobuf import struct_pb2

from partitions.sources.spanner_change_stream.decode import decode_googlesql_value
from partitions.sources.spanner_change_stream.errors import ChangeRecordError
from partitions.sources.spanner_change_stream.parse import (
    decode_postgresql_value,
    parse_googlesql_row,
    parse_postgresql_row,
)

TOKEN = "partition-A"


def _data_change() -> dict:
    record = next(r for r in random_records(50, seed=3) if "data_change_record" in r)
    return copy.deepcopy(record)


def _errors(record: dict) -> list[ChangeRecordError]:
    """Return the error of every path for a record in the seed's JSON shape."""
    attempts = [
        lambda: parse_postgresql_row(record, TOKEN),
        lambda: decode_postgresql_value(postgresql_value(record), TOKEN),
        lambda: decode_googlesql_value(googlesql_value(record), TOKEN),
    ]
    try:
        positional = client_rows([googlesql_value(record)], "googlesql", lazy=False)[0]
        attempts.append(lambda: parse_googlesql_row(positional, TOKEN))
    except ValueError:
        pass  # the client's own decode refuses a bad INT64 or TIMESTAMP before we see it
    errors = []
    for attempt in attempts:
        with pytest.raises(ChangeRecordError) as caught:
            attempt()
        errors.append(caught.value)
    return errors


def _assert_names(errors, field_part: str) -> None:
    for error in errors:
        assert field_part in error.field
        assert error.partition_token == TOKEN
        assert TOKEN in str(error)


def test_two_record_kinds_in_one_row_are_refused():
    record = _data_change() | {"heartbeat_record": {"timestamp": "2024-01-01T00:00:00Z"}}
    errors = _errors(record)
    _assert_names(errors, "ChangeRecord")
    assert all("data_change_record, heartbeat_record" in str(e) for e in errors)


def test_a_row_without_a_record_is_refused():
    _assert_names(_errors({}), "ChangeRecord")


def test_an_unknown_mod_type_is_refused():
    record = _data_change()
    record["data_change_record"]["mod_type"] = "UPSERT"
    _assert_names(_errors(record), "data_change_record.mod_type")


def test_an_unknown_value_capture_type_is_refused():
    record = _data_change()
    record["data_change_record"]["value_capture_type"] = "EVERYTHING"
    _assert_names(_errors(record), "data_change_record.value_capture_type")


def test_a_bad_timestamp_is_refused():
    record = _data_change()
    record["data_change_record"]["commit_timestamp"] = "yesterday"
    _assert_names(_errors(record), "data_change_record.commit_timestamp")


def test_keys_that_are_not_an_object_are_refused():
    record = _data_change()
    record["data_change_record"]["mods"][0]["keys"] = ["Id", 1]
    _assert_names(_errors(record), "data_change_record.mods[0].keys")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("number_of_records_in_transaction", "many"),
        ("is_system_transaction", None),
        ("table_name", None),
        ("server_transaction_id", None),
    ],
)
def test_a_wrong_type_is_refused(field, value):
    record = _data_change()
    record["data_change_record"][field] = value
    _assert_names(_errors(record), f"data_change_record.{field}")


def test_a_missing_field_is_refused_in_postgresql():
    record = _data_change()
    del record["data_change_record"]["mod_type"]
    for error in [
        _raises(lambda: parse_postgresql_row(record, TOKEN)),
        _raises(lambda: decode_postgresql_value(postgresql_value(record), TOKEN)),
    ]:
        _assert_names([error], "data_change_record.mod_type")


def test_a_missing_field_is_refused_in_googlesql():
    # given a data change struct one field short (is_system_transaction is last)
    value = googlesql_value(_data_change())
    struct = value.list_value.values[0].list_value.values[0].list_value.values[0]
    del struct.list_value.values[-1]
    # then both GoogleSQL paths name the missing field
    positional = client_rows([value], "googlesql", lazy=False)[0]
    for error in [
        _raises(lambda: decode_googlesql_value(value, TOKEN)),
        _raises(lambda: parse_googlesql_row(positional, TOKEN)),
    ]:
        _assert_names([error], "data_change_record.is_system_transaction")


def test_a_wrong_protobuf_kind_is_refused_in_the_fast_path():
    value = googlesql_value(_data_change())
    struct = value.list_value.values[0].list_value.values[0].list_value.values[0]
    struct.list_value.values[1].CopyFrom(struct_pb2.Value(bool_value=True))  # record_sequence
    _assert_names(
        [_raises(lambda: decode_googlesql_value(value, TOKEN))], "data_change_record.record_sequence"
    )


def test_child_partition_parents_must_be_strings():
    record = {
        "child_partitions_record": {
            "start_timestamp": "2024-01-01T00:00:00Z",
            "record_sequence": "1",
            "child_partitions": [{"token": "c", "parent_partition_tokens": [7]}],
        }
    }
    error = _raises(lambda: parse_postgresql_row(record, TOKEN))
    _assert_names([error], "child_partitions_record.child_partitions[0].parent_partition_tokens")


@pytest.mark.parametrize(
    "value",
    [
        struct_pb2.Value(string_value="not a list"),
        struct_pb2.Value(null_value=struct_pb2.NULL_VALUE),
        struct_pb2.Value(list_value=struct_pb2.ListValue(values=[struct_pb2.Value(bool_value=True)])),
    ],
)
def test_garbage_googlesql_values_are_refused(value):
    _assert_names([_raises(lambda: decode_googlesql_value(value, TOKEN))], "ChangeRecord")


@pytest.mark.parametrize("text", ["", "not json", "[1, 2]", '{"heartbeat_record": {"timestamp": 5}}'])
def test_garbage_postgresql_values_are_refused(text):
    error = _raises(lambda: decode_postgresql_value(struct_pb2.Value(string_value=text), TOKEN))
    assert error.partition_token == TOKEN


def test_the_initial_query_is_named_when_there_is_no_token():
    error = _raises(lambda: parse_postgresql_row({}, None))
    assert "initial query" in str(error)


def _raises(call) -> ChangeRecordError:
    with pytest.raises(ChangeRecordError) as caught:
        call()
    return caught.value
