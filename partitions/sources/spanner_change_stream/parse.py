"""Turn change stream rows of both SQL dialects into typed records.

Three ways in, one result:

- ``parse_googlesql_row``: a GoogleSQL row as the official client decodes it by default
  (positional lists, ``JsonObject``, ``DatetimeWithNanoseconds``);
- ``parse_postgresql_row``: a PostgreSQL row, one JSON object with one key;
- ``decode_postgresql_value``: the raw ``google.protobuf.struct_pb2.Value`` of a
  PostgreSQL row read with ``lazy_decode=True`` (the reader's path for that dialect),
  with a fast path for records of the usual shape. The raw GoogleSQL row has a module
  of its own, ``decode.py`` (``GoogleSqlDecoder``, the reader's path for GoogleSQL),
  which falls back to this module's checking builder for anything unusual.

The GoogleSQL positional struct is first named with the field names of ``schema.py``,
so both generic paths share one builder and give identical records by construction;
the fast decoder is checked against them by the tests. Anything malformed raises
``ChangeRecordError`` naming the field and the partition, never another exception.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec
import orjson

from .errors import ChangeRecordError
from .records import (
    MOD_TYPES,
    VALUE_CAPTURE_TYPES,
    ChangeRecord,
    ChildPartition,
    ChildPartitionsRecord,
    ColumnType,
    DataChangeRecord,
    HeartbeatRecord,
    Mod,
    positional_builder,
)
from .schema import (
    CHANGE_RECORD_FIELDS,
)

RECORD_KINDS = tuple(name for name, _ in CHANGE_RECORD_FIELDS)
_MOD_TYPES = frozenset(MOD_TYPES)
_VALUE_CAPTURE_TYPES = frozenset(VALUE_CAPTURE_TYPES)
# The C scanner behind json.loads, called directly: it skips json.loads' type checks and
# whitespace regex, about five times faster on the small objects a mod holds.
_scan_json = json.JSONDecoder().scan_once
_fromisoformat = datetime.fromisoformat
_new_data_change_record = positional_builder(DataChangeRecord)
_new_mod = positional_builder(Mod)


def parse_timestamp(text: Any, field: str, partition_token: str | None) -> datetime:
    """Return an RFC 3339 timestamp as a UTC datetime, truncated to microseconds."""
    try:
        # fromisoformat (C) reads any precision and truncates beyond microseconds.
        value = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise ChangeRecordError(
            f"not an RFC 3339 timestamp: {text!r}", field=field, partition_token=partition_token
        ) from None
    if value.tzinfo is UTC:
        return value
    return _as_utc(value, field, partition_token)


def _as_utc(value: datetime, field: str, partition_token: str | None) -> datetime:
    if value.tzinfo is None:
        raise ChangeRecordError(
            f"timestamp without a time zone: {value.isoformat()}",
            field=field,
            partition_token=partition_token,
        )
    value = value.astimezone(UTC)
    # Drop subclasses such as DatetimeWithNanoseconds so that every path gives equal records.
    return datetime(
        value.year,
        value.month,
        value.day,
        value.hour,
        value.minute,
        value.second,
        value.microsecond,
        tzinfo=UTC,
    )


def load_json(text: str, field: str, partition_token: str | None) -> Any:
    """Return the value of a JSON text, raising ChangeRecordError if it is not JSON."""
    try:
        value, end = _scan_json(text, 0)
        if end == len(text):
            return value
    except (StopIteration, ValueError, TypeError):
        pass
    try:
        return json.loads(text)
    except (ValueError, TypeError) as exc:
        raise ChangeRecordError(
            f"invalid JSON: {exc}", field=field, partition_token=partition_token
        ) from None


# --- generic builder over named values (PostgreSQL JSON, named GoogleSQL structs) ----------


class _Fields:
    """Read typed fields of one mapping, naming ``path.field`` in every error."""

    __slots__ = ("obj", "path", "token")

    def __init__(self, obj: Any, path: str, token: str | None):
        if not isinstance(obj, Mapping):
            raise ChangeRecordError(
                f"expected an object, got {_kind(obj)}", field=path, partition_token=token
            )
        self.obj, self.path, self.token = obj, path, token

    def fail(self, name: str, message: str) -> ChangeRecordError:
        return ChangeRecordError(message, field=f"{self.path}.{name}", partition_token=self.token)

    def get(self, name: str) -> Any:
        try:
            value = self.obj[name]
        except (KeyError, IndexError, TypeError):
            raise self.fail(name, "missing field") from None
        return value

    def string(self, name: str, *, numeric: bool = False) -> str:
        value = self.get(name)
        if isinstance(value, str):
            return value
        if numeric and isinstance(value, int) and not isinstance(value, bool):
            return str(value)  # the seed shows record_sequence as a number once
        raise self.fail(name, f"expected a string, got {_kind(value)}")

    def choice(self, name: str, allowed: frozenset[str]) -> str:
        value = self.string(name)
        if value not in allowed:
            raise self.fail(name, f"unknown value {value!r}: expected one of {', '.join(sorted(allowed))}")
        return value

    def boolean(self, name: str) -> bool:
        value = self.get(name)
        if isinstance(value, bool):
            return value
        raise self.fail(name, f"expected a boolean, got {_kind(value)}")

    def integer(self, name: str) -> int:
        value = self.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                pass
        raise self.fail(name, f"expected an integer, got {value!r}")

    def timestamp(self, name: str) -> datetime:
        value = self.get(name)
        if isinstance(value, datetime):
            return _as_utc(value, f"{self.path}.{name}", self.token)
        return parse_timestamp(value, f"{self.path}.{name}", self.token)

    def array(self, name: str) -> Sequence:
        value = _unwrap_json(self.get(name))
        if isinstance(value, list | tuple):
            return value
        raise self.fail(name, f"expected an array, got {_kind(value)}")

    def json_object(self, name: str, *, nullable: bool = False) -> dict[str, Any]:
        value = _unwrap_json(self.get(name))
        if isinstance(value, str):
            value = load_json(value, f"{self.path}.{name}", self.token)
        if value is None and nullable:
            return {}
        if isinstance(value, dict):
            return dict(value) if type(value) is not dict else value
        raise self.fail(name, f"expected a JSON object, got {_kind(value)}")


def _unwrap_json(value: Any) -> Any:
    """Return the plain Python value of the client's JsonObject (dict, list, scalar, None)."""
    if type(value).__name__ != "JsonObject":
        return value
    if value._is_null:
        return None
    if value._is_array:
        return value._array_value
    if value._is_scalar_value:
        return value._simple_value
    return dict(value.items())


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def build_record(kind: str, obj: Any, partition_token: str | None) -> ChangeRecord:
    """Return the typed record of one kind from its named fields."""
    fields = _Fields(obj, kind, partition_token)
    if kind == "data_change_record":
        return _data_change_record(fields)
    if kind == "heartbeat_record":
        return HeartbeatRecord(timestamp=fields.timestamp("timestamp"))
    return _child_partitions_record(fields)


def _data_change_record(f: _Fields) -> DataChangeRecord:
    return DataChangeRecord(
        commit_timestamp=f.timestamp("commit_timestamp"),
        record_sequence=f.string("record_sequence", numeric=True),
        server_transaction_id=f.string("server_transaction_id"),
        is_last_record_in_transaction_in_partition=f.boolean("is_last_record_in_transaction_in_partition"),
        table_name=f.string("table_name"),
        column_types=tuple(_column_type(c, f, i) for i, c in enumerate(f.array("column_types"))),
        mods=tuple(_mod(m, f, i) for i, m in enumerate(f.array("mods"))),
        mod_type=f.choice("mod_type", _MOD_TYPES),
        value_capture_type=f.choice("value_capture_type", _VALUE_CAPTURE_TYPES),
        number_of_records_in_transaction=f.integer("number_of_records_in_transaction"),
        number_of_partitions_in_transaction=f.integer("number_of_partitions_in_transaction"),
        transaction_tag=f.string("transaction_tag"),
        is_system_transaction=f.boolean("is_system_transaction"),
    )


def _column_type(obj: Any, parent: _Fields, index: int) -> ColumnType:
    f = _Fields(obj, f"{parent.path}.column_types[{index}]", parent.token)
    return ColumnType(
        name=f.string("name"),
        type=f.json_object("type"),
        is_primary_key=f.boolean("is_primary_key"),
        ordinal_position=f.integer("ordinal_position"),
    )


def _mod(obj: Any, parent: _Fields, index: int) -> Mod:
    f = _Fields(obj, f"{parent.path}.mods[{index}]", parent.token)
    return Mod(
        keys=f.json_object("keys"),
        new_values=f.json_object("new_values", nullable=True),
        old_values=f.json_object("old_values", nullable=True),
    )


def _child_partitions_record(f: _Fields) -> ChildPartitionsRecord:
    children = []
    for index, obj in enumerate(f.array("child_partitions")):
        child = _Fields(obj, f"{f.path}.child_partitions[{index}]", f.token)
        parents = child.array("parent_partition_tokens")
        if not all(p is None or isinstance(p, str) for p in parents):
            raise child.fail("parent_partition_tokens", "expected strings or NULL")
        # Roots returned by the initial query carry [NULL] parents.
        children.append(ChildPartition(child.string("token"), tuple(p for p in parents if p is not None)))
    return ChildPartitionsRecord(
        start_timestamp=f.timestamp("start_timestamp"),
        record_sequence=f.string("record_sequence", numeric=True),
        child_partitions=tuple(children),
    )


# --- PostgreSQL ---------------------------------------------------------------------------


def parse_postgresql_row(row: Any, partition_token: str | None) -> ChangeRecord:
    """Return the record of a PostgreSQL row: the JSON column, or the one-column row itself."""
    obj = row
    if not isinstance(row, Mapping) and isinstance(row, Sequence) and not isinstance(row, str):
        if len(row) != 1:
            raise ChangeRecordError(
                f"expected one column, got {len(row)}", field="ChangeRecord", partition_token=partition_token
            )
        obj = row[0]
    obj = _unwrap_json(obj)
    if not isinstance(obj, Mapping):
        raise ChangeRecordError(
            f"expected a JSON object, got {_kind(obj)}", field="ChangeRecord", partition_token=partition_token
        )
    present = [kind for kind in RECORD_KINDS if obj.get(kind) is not None]
    _check_one_kind(present, partition_token)
    kind, body = present[0], obj[present[0]]
    if kind == "data_change_record":
        try:
            return _canonical_data_change_record(body)
        except _NotCanonical:
            pass  # the checking builder accepts the variants or names what is wrong
    return build_record(kind, body, partition_token)


class _NotCanonical(Exception):
    """The record is not in the common shape; let the checking builder look at it."""


def _canonical_data_change_record(body: Any) -> DataChangeRecord:
    """Build a data change record in its common JSON shape, without per-field helpers.

    The hot path of the PostgreSQL dialect: plain dict lookups and exact type checks. Any
    surprise (a missing key, a number as a string, a NULL) raises _NotCanonical, and the
    checking builder, which is the reference, decides.
    """
    try:
        ts = parse_timestamp(body["commit_timestamp"], "", None)
        record = DataChangeRecord(
            ts,
            body["record_sequence"],
            body["server_transaction_id"],
            body["is_last_record_in_transaction_in_partition"],
            body["table_name"],
            _canonical_column_types(body["column_types"], body["table_name"]),
            tuple(Mod(m["keys"], m["new_values"], m["old_values"]) for m in body["mods"]),
            body["mod_type"],
            body["value_capture_type"],
            body["number_of_records_in_transaction"],
            body["number_of_partitions_in_transaction"],
            body["transaction_tag"],
            body["is_system_transaction"],
        )
    except (KeyError, TypeError, ChangeRecordError):
        raise _NotCanonical from None
    if not _is_canonical(record):
        raise _NotCanonical
    return record


_STR_FIELDS = ("record_sequence", "server_transaction_id", "table_name", "transaction_tag")


def _is_canonical(r: DataChangeRecord) -> bool:
    return (
        type(r.record_sequence) is str and type(r.server_transaction_id) is str
        and type(r.table_name) is str and type(r.transaction_tag) is str
        and type(r.is_last_record_in_transaction_in_partition) is bool
        and type(r.is_system_transaction) is bool
        and type(r.number_of_records_in_transaction) is int
        and type(r.number_of_partitions_in_transaction) is int
        and type(r.mod_type) is str and r.mod_type in _MOD_TYPES
        and type(r.value_capture_type) is str and r.value_capture_type in _VALUE_CAPTURE_TYPES
        and all(type(m.keys) is dict and type(m.new_values) is dict and type(m.old_values) is dict
                for m in r.mods)
    )  # fmt: skip


# (table name, column count) -> recent (decoded column_types list, built tuple) variants.
# A table's column types repeat across records (with OLD_AND_NEW_VALUES they vary with the
# columns a change touched, so a few variants per table), and comparing two decoded lists
# runs in C: far cheaper than building and checking the ColumnType objects again. The
# column count in the key keeps each scan short: keyed by table alone, a table with 15
# variants cost ~1.3 us a record in comparisons (profile, issue 22).
_PG_COLUMN_TYPES: dict[tuple[str, int], list[tuple[Any, tuple[ColumnType, ...]]]] = {}
_PG_VARIANTS_PER_TABLE = 32  # per (table, column count)
_PG_TABLES = 4096  # (table, column count) keys


def _canonical_column_types(items: Any, table: Any) -> tuple[ColumnType, ...]:
    key = (table, len(items))
    variants = _PG_COLUMN_TYPES.get(key)
    if variants is not None:
        for known, built in variants:
            if known == items:
                return built
    column_types = tuple(
        ColumnType(c["name"], c["type"], c["is_primary_key"], c["ordinal_position"]) for c in items
    )
    if not all(
        type(c.name) is str and type(c.type) is dict and type(c.is_primary_key) is bool
        and type(c.ordinal_position) is int
        for c in column_types
    ):  # fmt: skip
        raise _NotCanonical
    if variants is None and type(table) is str and len(_PG_COLUMN_TYPES) < _PG_TABLES:
        variants = _PG_COLUMN_TYPES[key] = []
    if variants is not None:
        if len(variants) >= _PG_VARIANTS_PER_TABLE:
            variants.pop(0)
        variants.append((items, column_types))
    return column_types


def decode_postgresql_value(value_pb: Any, partition_token: str | None) -> ChangeRecord:
    """Return the record of a raw PostgreSQL column value (read with lazy_decode=True)."""
    text = value_pb.string_value
    if not text:
        raise ChangeRecordError(
            f"expected a JSON text, got {value_pb.WhichOneof('kind')}",
            field="ChangeRecord",
            partition_token=partition_token,
        )
    record = typed_data_change_record(text)
    if record is not None:
        return record
    try:
        # orjson parses the whole row about twice as fast as the stdlib.
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        obj = load_json(text, "ChangeRecord", partition_token)  # raises, naming the field
    if type(obj) is dict and len(obj) == 1:
        body = obj.get("data_change_record")
        if type(body) is dict:
            record = plain_data_change_record(body)
            if record is not None:
                return record
    return parse_postgresql_row(obj, partition_token)


# --- PostgreSQL, the usual data change record typed in one C pass --------------------------
#
# msgspec decodes the row straight into these structs, checking every field's JSON type as
# it goes (a string, a boolean, an integer, an object), so no Python runs per field and
# the column types, identical across a table's records, are not parsed at all: they arrive
# as the raw JSON text, which is the key of the cache of built ColumnType tuples. 1.46x the
# rate of orjson followed by plain_data_change_record over the read benchmark's backlog
# (profile, issue 22). Any row it does not take (another record kind, a NULL, a number as
# a string, JSON msgspec refuses, such as NaN or 1e400, which the stdlib reads) goes on to
# the orjson and checking paths, which decide as before.


class _PgDataChangeRecord(msgspec.Struct):
    commit_timestamp: str  # a str: msgspec rounds to microseconds, parse_timestamp truncates
    record_sequence: str
    server_transaction_id: str
    is_last_record_in_transaction_in_partition: bool
    table_name: str
    column_types: msgspec.Raw
    mods: tuple[Mod, ...]  # msgspec builds the frozen dataclasses itself
    mod_type: str
    value_capture_type: str
    number_of_records_in_transaction: int
    number_of_partitions_in_transaction: int
    transaction_tag: str
    is_system_transaction: bool


class _PgRow(msgspec.Struct, forbid_unknown_fields=True):
    data_change_record: _PgDataChangeRecord


_decode_pg_row = msgspec.json.Decoder(_PgRow).decode
# (table name, raw column_types JSON) -> built tuple; an entry is a few hundred bytes.
_PG_RAW_COLUMN_TYPES: dict[tuple[str, bytes], tuple[ColumnType, ...]] = {}
_PG_RAW_COLUMN_TYPES_LIMIT = 4096


def typed_data_change_record(text: str) -> DataChangeRecord | None:
    """Return the data change record of a PostgreSQL row text in its usual shape, else None.

    Whatever it returns, ``plain_data_change_record`` returns for the same row; None sends
    the row on to the orjson and checking paths.
    """
    try:
        body = _decode_pg_row(text).data_change_record
        commit = _fromisoformat(body.commit_timestamp)
    except ValueError:  # msgspec.DecodeError is one
        return None
    table, mod_type, vct = body.table_name, body.mod_type, body.value_capture_type
    if commit.tzinfo is not UTC or mod_type not in _MOD_TYPES or vct not in _VALUE_CAPTURE_TYPES:
        return None
    key = (table, bytes(body.column_types))
    column_types = _PG_RAW_COLUMN_TYPES.get(key)
    if column_types is None:
        try:
            column_types = _canonical_column_types(orjson.loads(key[1]), table)
        except (KeyError, TypeError, ValueError, _NotCanonical):
            return None
        if len(_PG_RAW_COLUMN_TYPES) >= _PG_RAW_COLUMN_TYPES_LIMIT:
            _PG_RAW_COLUMN_TYPES.clear()
        _PG_RAW_COLUMN_TYPES[key] = column_types
    return _new_data_change_record(
        commit,
        body.record_sequence,
        body.server_transaction_id,
        body.is_last_record_in_transaction_in_partition,
        table,
        column_types,
        body.mods,
        mod_type,
        vct,
        body.number_of_records_in_transaction,
        body.number_of_partitions_in_transaction,
        body.transaction_tag,
        body.is_system_transaction,
    )


def plain_data_change_record(body: dict) -> DataChangeRecord | None:
    """Return the record of a data change body in its usual JSON shape, else None.

    The PostgreSQL hot path (profile, issue 22): one frame, exact type checks, no generic
    row handling. Whatever it returns, ``_canonical_data_change_record`` returns too; for
    anything else (a missing key, a number as a string, an offset other than Z) it returns
    None and ``parse_postgresql_row`` decides.
    """
    try:
        commit = _fromisoformat(body["commit_timestamp"])
        seq, txid = body["record_sequence"], body["server_transaction_id"]
        last, table = body["is_last_record_in_transaction_in_partition"], body["table_name"]
        items, mods = body["column_types"], body["mods"]
        mod_type, vct = body["mod_type"], body["value_capture_type"]
        nrec, npart = body["number_of_records_in_transaction"], body["number_of_partitions_in_transaction"]
        tag, system = body["transaction_tag"], body["is_system_transaction"]
        if (
            commit.tzinfo is not UTC or type(mods) is not list
            or type(seq) is not str or type(txid) is not str or type(table) is not str
            or type(tag) is not str or type(last) is not bool or type(system) is not bool
            or type(nrec) is not int or type(npart) is not int
            or mod_type not in _MOD_TYPES or vct not in _VALUE_CAPTURE_TYPES
        ):  # fmt: skip
            return None
        out = []
        for mod in mods:
            keys, new, old = mod["keys"], mod["new_values"], mod["old_values"]
            if type(keys) is not dict or type(new) is not dict or type(old) is not dict:
                return None
            out.append(_new_mod(keys, new, old))
        column_types = _canonical_column_types(items, table)
    except (KeyError, TypeError, ValueError, _NotCanonical):
        return None
    return _new_data_change_record(
        commit, seq, txid, last, table, column_types, tuple(out), mod_type, vct, nrec, npart, tag, system
    )


def _check_one_kind(present: list[str], partition_token: str | None) -> None:
    if len(present) != 1:
        found = ", ".join(present) or "none"
        raise ChangeRecordError(
            f"a row must hold exactly one of {', '.join(RECORD_KINDS)}; found {found}",
            field="ChangeRecord",
            partition_token=partition_token,
        )


# --- GoogleSQL, as the client decodes it by default ------------------------------------------


def parse_googlesql_row(row: Sequence, partition_token: str | None) -> ChangeRecord:
    """Return the record of a GoogleSQL row as the official client decodes it by default."""
    column = _element(row, "ChangeRecord", partition_token, what="row with one column")
    struct = _element(column, "ChangeRecord", partition_token, what="ChangeRecord array of one element")
    if not isinstance(struct, list | tuple) or len(struct) != len(CHANGE_RECORD_FIELDS):
        raise ChangeRecordError(
            f"expected a struct of {len(CHANGE_RECORD_FIELDS)} arrays, got {struct!r:.80}",
            field="ChangeRecord[0]",
            partition_token=partition_token,
        )
    present = [
        (name, spec, items) for (name, spec), items in zip(CHANGE_RECORD_FIELDS, struct, strict=True) if items
    ]
    _check_one_kind([name for name, _, _ in present], partition_token)
    name, spec, items = present[0]
    if len(items) != 1:
        raise ChangeRecordError(
            f"expected one element, got {len(items)}", field=name, partition_token=partition_token
        )
    return build_record(name, name_struct(items[0], spec[1], name, partition_token), partition_token)


def _element(value: Any, field: str, partition_token: str | None, *, what: str) -> Any:
    if not isinstance(value, list | tuple) or len(value) != 1:
        raise ChangeRecordError(
            f"expected a {what}, got {value!r:.80}", field=field, partition_token=partition_token
        )
    return value[0]


def name_struct(value: Any, spec: Any, path: str, partition_token: str | None) -> Any:
    """Return a positional client value with every STRUCT turned into a dict keyed by name."""
    if not isinstance(spec, tuple) or value is None:
        return value
    if spec[0] == "ARRAY":
        if not isinstance(value, list | tuple):
            return value  # the builder reports the wrong type with the field's name
        return [name_struct(v, spec[1], f"{path}[{i}]", partition_token) for i, v in enumerate(value)]
    fields = spec[1]
    if not isinstance(value, list | tuple):
        return value
    if len(value) < len(fields):
        missing = fields[len(value)][0]
        raise ChangeRecordError("missing field", field=f"{path}.{missing}", partition_token=partition_token)
    return {
        name: name_struct(v, sub, f"{path}.{name}", partition_token)
        for (name, sub), v in zip(fields, value, strict=False)
    }
