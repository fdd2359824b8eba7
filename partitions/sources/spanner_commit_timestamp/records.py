"""The kind's data record (one row version read from the table) and how a result row becomes one.

A poll sees a row as it is at the read timestamp: the last write of each key, with the
commit timestamp that write stamped. Inserts and updates look the same and deletes are
not seen at all, so a record is a row, not a change.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from partitions.sources.base import PermanentSourceError
from partitions.sources.spanner_change_stream.query import GOOGLESQL
from streams.times import format_time

from .query import TableSpec
from .values import PARAM_TYPES, parse_timestamp, plain, raw_decoder, type_name


@dataclass(frozen=True, slots=True)
class TableRowRecord:
    """One row version of the watched table: its commit timestamp, key and other columns, shard."""

    table: str
    commit_timestamp: datetime
    keys: dict[str, Any]
    values: dict[str, Any]
    shard: int | str | None = None


def record_json(record: TableRowRecord) -> dict[str, Any]:
    """Return the record as JSON-ready values (the simulator's ground truth has this shape)."""
    return {
        "table": record.table,
        "commit_timestamp": format_time(record.commit_timestamp),
        "keys": record.keys,
        "values": record.values,
        "shard": record.shard,
    }


def to_utc(value: datetime) -> datetime:
    """Return a plain aware UTC datetime (microseconds) for the client's DatetimeWithNanoseconds."""
    v = value.astimezone(UTC)
    return datetime(v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond, tzinfo=UTC)


class RowLayout:
    """Where the timestamp, the key and the other columns sit in ``SELECT *`` rows, and how to read each.

    Rows come undecoded (``lazy_decode=True``): each column is read straight from its
    protobuf Value where its type allows (values.raw_decoder), else decoded by the client.
    """

    def __init__(self, result, spec: TableSpec, dialect: str):
        fields = result.fields
        self.names = [f.name for f in fields]
        self.table = spec.table
        self.ts = self._find(spec.timestamp_column, dialect)
        if type_name(fields[self.ts].type_) != "TIMESTAMP":
            raise PermanentSourceError(
                f"column {spec.timestamp_column} of table {spec.table} is "
                f"{type_name(fields[self.ts].type_)}, not a TIMESTAMP with allow_commit_timestamp"
            )
        self.keys = [self._find(k, dialect) for k in spec.key_columns]
        self.key_types = tuple(type_name(fields[i].type_) for i in self.keys)
        for column, type_ in zip(spec.key_columns, self.key_types, strict=True):
            if type_ not in PARAM_TYPES:
                raise PermanentSourceError(f"key column {column} is {type_}: this kind cannot page by it")
        self.key_names = [self.names[i] for i in self.keys]
        self.others = [(name, i) for i, name in enumerate(self.names) if i not in self.keys and i != self.ts]
        self.readers = [_reader(result, f, i) for i, f in enumerate(fields)]

    def _find(self, column: str, dialect: str) -> int:
        """Return the position of a column, matching names as the dialect does."""
        for i, name in enumerate(self.names):
            if name == column or (dialect == GOOGLESQL and name.lower() == column.lower()):
                return i
        raise PermanentSourceError(f"column {column} is not in table {self.table} (it has {self.names})")

    def record(self, row: list, shard: int | str | None) -> TableRowRecord:
        """Return the record of one undecoded result row."""
        readers = self.readers
        keys = {name: readers[i](row[i]) for name, i in zip(self.key_names, self.keys, strict=True)}
        values = {name: readers[i](row[i]) for name, i in self.others}
        committed, text = parse_timestamp(row[self.ts].string_value)
        values[self.names[self.ts]] = text
        return TableRowRecord(self.table, committed, keys, values, shard)

    def cursor_key(self, record: TableRowRecord) -> tuple:
        """Return the record's key values in key order, as the cursor keeps them."""
        return tuple(record.keys[name] for name in self.key_names)


def _reader(result, field, index: int):
    """Return the function that reads one column of the undecoded rows."""
    fast = raw_decoder(field.type_)
    if fast is not None:
        return fast
    # decode_column reads row[index]; a row of copies of the one value serves it.
    return lambda value: plain(result.decode_column([value] * (index + 1), index))
