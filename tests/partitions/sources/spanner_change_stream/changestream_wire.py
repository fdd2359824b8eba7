"""Build change stream rows as Spanner sends them, for the parser tests and the benchmark.

A record is written once in the seed's JSON shape ({"data_change_record": {...}}); these
helpers turn it into a GoogleSQL ChangeRecord protobuf Value (positional structs in the
field order of schema.py), a PostgreSQL JSON text, and PartialResultSet messages that the
official client's StreamedResultSet decodes exactly as it would off the wire.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

from google.cloud.spanner_v1 import PartialResultSet, ResultSetMetadata
from google.cloud.spanner_v1.streamed import StreamedResultSet
from google.protobuf import struct_pb2

from partitions.sources.spanner_change_stream import schema
from partitions.sources.spanner_change_stream.records import MOD_TYPES, VALUE_CAPTURE_TYPES


def _null() -> struct_pb2.Value:
    return struct_pb2.Value(null_value=struct_pb2.NULL_VALUE)


def _value(value, spec) -> struct_pb2.Value:
    """Return the wire Value of one field; spec is a schema.py type spec."""
    if value is None:
        return _null()
    if isinstance(spec, tuple):
        if spec[0] == "ARRAY":
            return _list([_value(v, spec[1]) for v in value])
        return _list([_value(value.get(name), sub) for name, sub in spec[1]])
    if spec == schema.TypeCode.JSON:
        return struct_pb2.Value(string_value=json.dumps(value))
    if spec == schema.TypeCode.BOOL:
        return struct_pb2.Value(bool_value=value)
    return struct_pb2.Value(string_value=str(value))  # STRING, INT64, TIMESTAMP


def _list(values) -> struct_pb2.Value:
    return struct_pb2.Value(list_value=struct_pb2.ListValue(values=values))


def googlesql_value(record_json: dict) -> struct_pb2.Value:
    """Return the ChangeRecord column Value: ARRAY of one STRUCT of three arrays."""
    arrays = []
    for name, spec in schema.CHANGE_RECORD_FIELDS:
        body = record_json.get(name)
        arrays.append(_value([body] if body is not None else [], spec))
    return _list([_list(arrays)])


def postgresql_value(record_json: dict) -> struct_pb2.Value:
    """Return the PostgreSQL column Value: one JSON text."""
    return struct_pb2.Value(string_value=json.dumps(record_json))


def partial_result_sets(values, dialect: str, per_message: int = 50) -> list[PartialResultSet]:
    """Return PartialResultSets carrying the values, with metadata and resume tokens."""
    if dialect == "googlesql":
        row_type = schema.googlesql_row_type()
    else:
        row_type = schema.postgresql_row_type("Changes")
    # Build raw protobuf messages: proto-plus would convert the Values to Python values.
    message_pb = PartialResultSet.pb()
    metadata = ResultSetMetadata.pb(ResultSetMetadata(row_type=row_type))
    messages = []
    for start in range(0, len(values), per_message):
        message = message_pb(values=values[start : start + per_message], resume_token=b"%d" % start)
        if start == 0:
            message.metadata.CopyFrom(metadata)
        messages.append(PartialResultSet.wrap(message))
    return messages


def client_rows(values, dialect: str, *, lazy: bool) -> list:
    """Return the rows the official client yields for these values."""
    return list(StreamedResultSet(iter(partial_result_sets(values, dialect)), lazy_decode=lazy))


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def random_record(rng: random.Random, moment: datetime) -> dict:
    """Return one random record in the seed's JSON shape (mostly data change records)."""
    roll = rng.random()
    if roll < 0.05:
        return {"heartbeat_record": {"timestamp": _ts(moment)}}
    if roll < 0.08:
        children = [
            {
                "token": f"tok-{rng.randrange(10**9)}",
                "parent_partition_tokens": rng.choice([[None], ["p1"], ["p1", "p2"]]),
            }
            for _ in range(rng.randint(1, 3))
        ]
        record = {"start_timestamp": _ts(moment), "record_sequence": f"{rng.randrange(10**8):08d}"}
        return {"child_partitions_record": record | {"child_partitions": children}}
    return {"data_change_record": random_data_change(rng, moment)}


def random_data_change(rng: random.Random, moment: datetime) -> dict:
    """Return a random data change record body with 1-4 mods over a small table."""
    table = rng.choice(["Singers", "Albums", "AccountBalance"])
    columns = [
        {"name": "Id", "type": {"code": "INT64"}, "is_primary_key": True, "ordinal_position": 1},
        {"name": "Name", "type": {"code": "STRING"}, "is_primary_key": False, "ordinal_position": 2},
        {"name": "Tags", "type": {"code": "ARRAY", "array_element_type": {"code": "STRING"}},
         "is_primary_key": False, "ordinal_position": 3},
    ]  # fmt: skip
    mods = [
        {
            "keys": {"Id": str(rng.randrange(10**6))},
            "new_values": {"Name": f"n{rng.randrange(1000)}", "Tags": ["a", "b"]}
            if rng.random() < 0.8
            else {},
            "old_values": {"Name": f"o{rng.randrange(1000)}", "Tags": None} if rng.random() < 0.5 else {},
        }
        for _ in range(rng.randint(1, 4))
    ]
    return {
        "commit_timestamp": _ts(moment),
        "record_sequence": f"{rng.randrange(10**8):08d}",
        "server_transaction_id": f"tx-{rng.randrange(10**12)}",
        "is_last_record_in_transaction_in_partition": rng.random() < 0.5,
        "table_name": table,
        "column_types": columns,
        "mods": mods,
        "mod_type": rng.choice(MOD_TYPES),
        "value_capture_type": rng.choice(VALUE_CAPTURE_TYPES),
        "number_of_records_in_transaction": rng.randint(1, 5),
        "number_of_partitions_in_transaction": rng.randint(1, 3),
        "transaction_tag": rng.choice(["", "app=x"]),
        "is_system_transaction": rng.random() < 0.1,
    }


def random_records(count: int, seed: int = 7) -> list[dict]:
    """Return count random records with increasing timestamps."""
    rng = random.Random(seed)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    return [random_record(rng, start + timedelta(microseconds=i * 1237)) for i in range(count)]
