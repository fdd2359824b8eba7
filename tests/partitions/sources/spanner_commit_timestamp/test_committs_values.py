"""Row values of every Spanner type become JSON-ready values, read from protobuf or via the client."""

from __future__ import annotations

import base64
import json
import math
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from google.cloud.spanner_v1 import (
    PartialResultSet,
    ResultSetMetadata,
    StructType,
    Type,
    TypeAnnotationCode,
    TypeCode,
)
from google.cloud.spanner_v1._helpers import _make_value_pb
from google.cloud.spanner_v1.data_types import JsonObject
from google.cloud.spanner_v1.streamed import StreamedResultSet

from partitions.sources.spanner_commit_timestamp.query import TableSpec
from partitions.sources.spanner_commit_timestamp.records import RowLayout
from partitions.sources.spanner_commit_timestamp.values import parse_timestamp, plain, raw_decoder

TS = datetime(2024, 5, 1, 9, 0, 0, 123456, tzinfo=UTC)
COLUMNS = [
    ("Id", Type(code=TypeCode.INT64), 42),
    ("Name", Type(code=TypeCode.STRING), "Zoë"),
    ("Ok", Type(code=TypeCode.BOOL), False),
    ("Score", Type(code=TypeCode.FLOAT64), math.inf),
    ("Missing", Type(code=TypeCode.INT64), None),
    ("LastModified", Type(code=TypeCode.TIMESTAMP), TS),
    ("Price", Type(code=TypeCode.NUMERIC), Decimal("12.50")),
    ("PgPrice", Type(code=TypeCode.NUMERIC, type_annotation=TypeAnnotationCode.PG_NUMERIC), Decimal("3.25")),
    ("Doc", Type(code=TypeCode.JSON), JsonObject({"b": [1, 2], "a": None})),
    ("Raw", Type(code=TypeCode.BYTES), base64.b64encode(b"\x00\xff")),  # the client's form of bytes
    ("Day", Type(code=TypeCode.DATE), date(2024, 5, 1)),
    ("Tags", Type(code=TypeCode.ARRAY, array_element_type=Type(code=TypeCode.STRING)), ["x", None]),
]


def message_of(columns: list[tuple], rows: list[list]) -> PartialResultSet:
    """Return one PartialResultSet with the row type of columns and the rows' values, as Spanner sends it."""
    fields = [StructType.Field(name=name, type_=type_) for name, type_, *_ in columns]
    metadata = ResultSetMetadata.pb(ResultSetMetadata(row_type=StructType(fields=fields)))
    values = [_make_value_pb(value) for row in rows for value in row]
    return PartialResultSet.wrap(PartialResultSet.pb()(metadata=metadata, values=values))


def result_of(rows: list[list]) -> StreamedResultSet:
    """Return the client's result set over rows of COLUMNS, undecoded."""
    return StreamedResultSet(iter([message_of(COLUMNS, rows)]), lazy_decode=True)


def test_a_row_becomes_a_record_of_plain_values():
    # given a row with a value of every type a table column can have
    result = result_of([[value for _, _, value in COLUMNS]])
    (row,) = list(result)
    layout = RowLayout(result, TableSpec("T", "LastModified", ("Id", "Name")), "googlesql")
    # when it becomes a record
    record = layout.record(row, 3)
    # then keys and values are what JSON can hold, and the commit timestamp is exact
    assert record.commit_timestamp == TS
    assert record.keys == {"Id": 42, "Name": "Zoë"}
    assert record.values == {
        "Ok": False,
        "Score": "Infinity",
        "Missing": None,
        "LastModified": "2024-05-01T09:00:00.123456Z",
        "Price": "12.50",
        "PgPrice": "3.25",
        "Doc": {"a": None, "b": [1, 2]},
        "Raw": base64.b64encode(b"\x00\xff").decode(),
        "Day": "2024-05-01",
        "Tags": ["x", None],
    }
    json.dumps(record.values)
    assert layout.key_types == ("INT64", "STRING")
    assert record.shard == 3


@pytest.mark.parametrize(
    "value", [0, -(2**63), 2**63 - 1, "", "ünï", True, False, 1.5, -0.0, math.nan, -math.inf, TS, None]
)
def test_reading_straight_from_protobuf_gives_what_the_client_decode_gives(value):
    code = {int: TypeCode.INT64, str: TypeCode.STRING, bool: TypeCode.BOOL, float: TypeCode.FLOAT64}
    type_ = Type(code=code.get(type(value), TypeCode.TIMESTAMP if value is not None else TypeCode.INT64))
    decoded = list(StreamedResultSet(iter([message_of([("c", type_)], [[value]])])))[0][0]
    raw = list(StreamedResultSet(iter([message_of([("c", type_)], [[value]])]), lazy_decode=True))[0][0]
    fast = raw_decoder(Type.pb(type_))(raw)
    assert json.dumps(fast) == json.dumps(plain(decoded))


@pytest.mark.parametrize(
    ("text", "plain_text"),
    [
        ("2024-05-01T09:00:00.123456Z", "2024-05-01T09:00:00.123456Z"),
        ("2024-05-01T09:00:00.123456789Z", "2024-05-01T09:00:00.123456Z"),
        ("2024-05-01T09:00:00Z", "2024-05-01T09:00:00.000000Z"),
        ("2024-05-01T09:00:00.5Z", "2024-05-01T09:00:00.500000Z"),
    ],
)
def test_timestamps_keep_microseconds_and_one_text_form(text, plain_text):
    moment, written = parse_timestamp(text)
    assert written == plain_text
    assert moment.tzinfo is not None
    assert moment.utcoffset().total_seconds() == 0
