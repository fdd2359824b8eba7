"""The GoogleSQL field check that both readers run on the first row of a result."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from google.cloud.spanner_v1 import StructType, _helpers, streamed
from google.cloud.spanner_v1._async import streamed as async_streamed

from partitions.sources.spanner_change_stream import schema
from partitions.sources.spanner_change_stream.errors import ChangeRecordError
from partitions.sources.spanner_change_stream.reader import (
    AsyncChangeStreamReader,
    ChangeStreamReader,
    _RowDecoder,
    check_googlesql_fields,
    connect,
    connect_async,
)


class _Rows:
    """A result set as the decoder sees it: only its fields."""

    def __init__(self, row_type: StructType):
        self.fields = list(StructType.pb(row_type).fields)


def _shifted_row_type() -> StructType:
    """The expected layout with two fields of the record struct swapped."""
    fields = list(schema.CHANGE_RECORD_FIELDS)
    fields[0], fields[1] = fields[1], fields[0]
    column = schema.to_type(("ARRAY", ("STRUCT", fields)))
    return StructType(fields=[StructType.Field(name=schema.GOOGLESQL_COLUMN, type_=column)])


def test_the_expected_layout_passes():
    check_googlesql_fields(_Rows(schema.googlesql_row_type()).fields, "t")


def test_a_shifted_layout_stops_the_read_instead_of_misreading_it():
    with pytest.raises(ChangeRecordError, match="unexpected result columns") as caught:
        check_googlesql_fields(_Rows(_shifted_row_type()).fields, "tok")
    assert caught.value.partition_token == "tok"


def test_the_row_decoder_checks_the_first_row_only_and_decodes_each():
    # given a GoogleSQL decoder over a result whose layout changes after the first row
    decoded = []
    decoder = _RowDecoder(lambda value, token: decoded.append((value, token)) or value, "t", check=True)
    rows = _Rows(schema.googlesql_row_type())
    # when two rows are decoded, the layout spoiled in between
    assert decoder(rows, ["first"]) == "first"
    rows.fields = _Rows(_shifted_row_type()).fields
    assert decoder(rows, ["second"]) == "second"
    # then both were decoded with their token, and only the first was checked
    assert decoded == [("first", "t"), ("second", "t")]


def test_the_row_decoder_checks_a_bad_first_row():
    decoder = _RowDecoder(lambda value, token: value, "t", check=True)
    with pytest.raises(ChangeRecordError):
        decoder(_Rows(_shifted_row_type()), ["first"])


def test_postgresql_rows_are_not_checked_against_the_googlesql_layout():
    decoder = _RowDecoder(lambda value, token: value, "t", check=False)
    assert decoder(_Rows(_shifted_row_type()), ["json"]) == "json"


@pytest.mark.parametrize("dialect", ["googlesql", "postgresql"])
def test_both_readers_read_without_building_the_clients_type_decoders(simulator, monkeypatch, dialect):
    # given the client's type decoder factory, counted in both its result sets
    built = []

    def counted(*args, **kwargs):
        built.append(args)
        return _helpers._get_type_decoder(*args, **kwargs)

    monkeypatch.setattr(streamed, "_get_type_decoder", counted)
    monkeypatch.setattr(async_streamed, "_get_type_decoder", counted)
    database = "demo-db" if dialect == "googlesql" else "demo-pg"
    start = datetime.now(UTC) - timedelta(minutes=5)
    end = start + timedelta(seconds=20)
    # when a partition's window is read through the threaded and the asyncio reader
    client = connect("p", "i", database, simulator.emulator_host)
    threaded = ChangeStreamReader(client, "Changes", dialect, 1_000)
    token = next(iter(threaded.read(None, start, start))).child_partitions[0].token
    records = list(threaded.read(token, start, end))

    async def read_async():
        db = await connect_async("p", "i", database, simulator.emulator_host)
        reader = AsyncChangeStreamReader(db, "Changes", dialect, 1_000)
        return [record async for record in reader.read(token, start, end)]

    # then both read every record, decoded, and no type decoder was built (the client builds
    # them on a query's first row, whatever its record: the session simulator's partitions
    # live about 5 s, so the window may hold only a few heartbeats and the partition's end)
    assert records
    assert asyncio.run(read_async()) == records
    assert built == []
