"""The fast GoogleSQL decoder and the generic paths give identical records."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from changestream_wire import client_rows, googlesql_value, postgresql_value, random_records
from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud.spanner_v1.data_types import JsonObject

from partitions.sources.spanner_change_stream.decode import GoogleSqlDecoder, decode_googlesql_value
from partitions.sources.spanner_change_stream.errors import ChangeRecordError
from partitions.sources.spanner_change_stream.parse import (
    decode_postgresql_value,
    parse_googlesql_row,
    parse_postgresql_row,
    parse_timestamp,
)
from partitions.sources.spanner_change_stream.records import DataChangeRecord

RECORDS = random_records(2_000, seed=11)


def test_fast_and_generic_googlesql_paths_agree_on_many_records():
    # given the same wire messages, decoded by the client eagerly and lazily
    values = [googlesql_value(r) for r in RECORDS]
    eager = client_rows(values, "googlesql", lazy=False)
    lazy = client_rows(values, "googlesql", lazy=True)
    # when each is parsed by its path
    generic = [parse_googlesql_row(row, "t") for row in eager]
    fast = [GoogleSqlDecoder().decode(row[0], "t") for row in lazy]
    # then the records are identical, field by field
    assert fast == generic
    assert sum(isinstance(r, DataChangeRecord) for r in fast) > 1_500


def test_both_dialects_give_identical_records():
    gsql = [decode_googlesql_value(googlesql_value(r), "t") for r in RECORDS]
    pg_values = [postgresql_value(r) for r in RECORDS]
    pg_lazy = [
        decode_postgresql_value(row[0], "t") for row in client_rows(pg_values, "postgresql", lazy=True)
    ]
    pg_eager = [parse_postgresql_row(row, "t") for row in client_rows(pg_values, "postgresql", lazy=False)]
    assert gsql == pg_lazy == pg_eager


def test_cached_column_types_are_reused_across_records_of_a_table():
    decoder = GoogleSqlDecoder()
    first, second = _two_data_changes(decoder)
    assert first.column_types is second.column_types


def _two_data_changes(decoder):
    same = [r for r in RECORDS if r.get("data_change_record", {}).get("table_name") == "Singers"][:2]
    return [decoder.decode(googlesql_value(r), "t") for r in same]


def test_hand_built_client_row_parses():
    # given a row shaped as the client decodes it: JsonObject and DatetimeWithNanoseconds
    ts = DatetimeWithNanoseconds(2024, 5, 1, 9, 0, 1, nanosecond=123456789, tzinfo=UTC)
    data = [ts, "1", "tx", True, "T", [["Id", JsonObject({"code": "INT64"}), True, 1]],
            [[JsonObject({"Id": "1"}), JsonObject({"V": 2}), JsonObject(None)]],
            "DELETE", "OLD_AND_NEW_VALUES", 1, 1, "", False]  # fmt: skip
    # when it is parsed
    record = parse_googlesql_row([[[[data], None, []]]], "t")
    # then the timestamp is a plain UTC datetime truncated to microseconds, JSON plain dicts
    assert type(record.commit_timestamp) is datetime
    assert record.commit_timestamp == datetime(2024, 5, 1, 9, 0, 1, 123456, tzinfo=UTC)
    assert type(record.mods[0].keys) is dict
    assert record.mods[0].old_values == {}
    assert record.column_types[0].type == {"code": "INT64"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2022-09-27T12:30:00.123456789Z", datetime(2022, 9, 27, 12, 30, 0, 123456, tzinfo=UTC)),
        ("2022-09-27T12:30:00.999999999Z", datetime(2022, 9, 27, 12, 30, 0, 999999, tzinfo=UTC)),
        ("2022-09-27T12:30:00Z", datetime(2022, 9, 27, 12, 30, tzinfo=UTC)),
        ("2022-09-27T12:30:00.1Z", datetime(2022, 9, 27, 12, 30, 0, 100000, tzinfo=UTC)),
        ("2022-09-27T14:30:00.5+02:00", datetime(2022, 9, 27, 12, 30, 0, 500000, tzinfo=UTC)),
    ],
)
def test_timestamps_keep_microseconds_in_utc(text, expected):
    value = parse_timestamp(text, "f", "t")
    assert value == expected
    assert value.tzinfo is UTC


@pytest.mark.parametrize("text", ["2022-09-27T12:30:00", "2022-09-27", "", "noon", None])
def test_timestamps_without_zone_or_form_are_refused(text):
    with pytest.raises(ChangeRecordError):
        parse_timestamp(text, "f", "t")
