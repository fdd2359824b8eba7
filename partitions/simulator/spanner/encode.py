"""Protobuf wire bytes of change records, written by hand for speed.

A PartialResultSet is built by concatenating already encoded parts: field 1 metadata
(first message only), field 2 one ``google.protobuf.Value`` per row, field 4 the resume
token. Each data record's Value is encoded once per dialect and cached on its Entry,
so serving a record a second time (another reader, a resumed stream) costs a join.
"""

from __future__ import annotations

import json

from google.cloud.spanner_v1 import ResultSetMetadata

from partitions.simulator.core.clock import to_us
from partitions.sources.spanner_change_stream.jsonl import record_fields
from partitions.sources.spanner_change_stream.query import GOOGLESQL
from partitions.sources.spanner_change_stream.records import ChildPartitionsRecord, DataChangeRecord
from partitions.sources.spanner_change_stream.schema import googlesql_row_type, postgresql_row_type

from .tables import format_ts
from .workload import Entry

_NULL = b"\x08\x00"  # Value.null_value = NULL_VALUE
_TRUE = b"\x20\x01"  # Value.bool_value = true (oneof members are sent even when false)
_FALSE = b"\x20\x00"
_EMPTY_LIST = b"\x32\x00"
_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


_SMALL = [bytes((n,)) for n in range(128)]


def _varint(n: int) -> bytes:
    if n < 0x80:
        return _SMALL[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    n = len(payload)
    return tag + (_SMALL[n] if n < 0x80 else _varint(n)) + payload


def _str(text: str) -> bytes:
    data = text.encode()
    n = len(data)
    return b"\x1a" + (_SMALL[n] if n < 0x80 else _varint(n)) + data


def _list(items) -> bytes:
    small, varint = _SMALL, _varint
    inner = b"".join([b"\x0a" + (small[len(i)] if len(i) < 0x80 else varint(len(i))) + i for i in items])
    return _field(b"\x32", inner)


def _int(n: int) -> bytes:
    return _str(str(n))  # INT64 travels as a decimal string


def _bool(flag: bool) -> bytes:
    return _TRUE if flag else _FALSE


def _row(kind: int, struct: bytes) -> bytes:
    """Return the ChangeRecord value: one element whose field ``kind`` holds the struct."""
    arrays = [_EMPTY_LIST, _EMPTY_LIST, _EMPTY_LIST]
    arrays[kind] = _list([struct])
    return _list([_list(arrays)])


_column_cache: dict[tuple, bytes] = {}


def _column_types(record: DataChangeRecord) -> bytes:
    key = (record.table_name, tuple(c.name for c in record.column_types))
    found = _column_cache.get(key)
    if found is None:
        found = _list(
            [
                _list([_str(c.name), _str(_JSON(c.type)), _bool(c.is_primary_key), _int(c.ordinal_position)])
                for c in record.column_types
            ]
        )
        _column_cache[key] = found
    return found


def googlesql_data(record: DataChangeRecord) -> bytes:
    """Return the GoogleSQL Value of a data change record."""
    mods = _list(
        [
            _list([_str(_JSON(m.keys)), _str(_JSON(m.new_values)), _str(_JSON(m.old_values))])
            for m in record.mods
        ]
    )
    struct = _list(
        [
            _str(format_ts(to_us(record.commit_timestamp))),
            _str(record.record_sequence),
            _str(record.server_transaction_id),
            _bool(record.is_last_record_in_transaction_in_partition),
            _str(record.table_name),
            _column_types(record),
            mods,
            _str(record.mod_type),
            _str(record.value_capture_type),
            _int(record.number_of_records_in_transaction),
            _int(record.number_of_partitions_in_transaction),
            _str(record.transaction_tag),
            _bool(record.is_system_transaction),
        ]
    )
    return _row(0, struct)


def postgresql_data(record: DataChangeRecord) -> bytes:
    """Return the PostgreSQL Value (JSON text) of a data change record."""
    return _str(_JSON({"data_change_record": record_fields(record)}))


def framed(value: bytes) -> bytes:
    """Return a Value as one entry of PartialResultSet.values (field 2)."""
    return _field(b"\x12", value)


def entry_value(entry: Entry, dialect: str) -> bytes:
    """Return the framed Value of a data record, encoding it on first use."""
    found = entry.wire.get(dialect)
    if found is None:
        record = entry.record
        found = framed(googlesql_data(record) if dialect == GOOGLESQL else postgresql_data(record))
        entry.wire[dialect] = found
    return found


def heartbeat_value(ts_us: int, dialect: str) -> bytes:
    """Return the framed Value of a heartbeat record."""
    text = format_ts(ts_us)
    if dialect == GOOGLESQL:
        return framed(_row(1, _list([_str(text)])))
    return framed(_str(_JSON({"heartbeat_record": {"timestamp": text}})))


def child_value(record: ChildPartitionsRecord, dialect: str) -> bytes:
    """Return the framed Value of a child partitions record; roots get parents [NULL]."""
    start = format_ts(to_us(record.start_timestamp))
    if dialect == GOOGLESQL:
        children = _list(
            [
                _list([_str(c.token), _list([_str(p) for p in c.parent_partition_tokens] or [_NULL])])
                for c in record.child_partitions
            ]
        )
        return framed(_row(2, _list([_str(start), _str(record.record_sequence), children])))
    body = {
        "start_timestamp": start,
        "record_sequence": record.record_sequence,
        "child_partitions": [
            {"token": c.token, "parent_partition_tokens": list(c.parent_partition_tokens) or [None]}
            for c in record.child_partitions
        ],
    }
    return framed(_str(_JSON({"child_partitions_record": body})))


def malformed_value(entry: Entry, dialect: str) -> bytes:
    """Return a data record with its mod_type missing, as a broken server might send."""
    if dialect == GOOGLESQL:
        return framed(_row(0, _list([_str(format_ts(entry.ts_us)), _str(entry.record.record_sequence)])))
    fields = record_fields(entry.record)
    del fields["mod_type"]
    return framed(_str(_JSON({"data_change_record": fields})))


def metadata(dialect: str, stream: str) -> bytes:
    """Return PartialResultSet field 1: the result set metadata with the row type."""
    row_type = googlesql_row_type() if dialect == GOOGLESQL else postgresql_row_type(stream)
    return _field(b"\x0a", ResultSetMetadata.serialize(ResultSetMetadata(row_type=row_type)))


def partial_result_set(head: bytes, values: list[bytes], resume_token: bytes) -> bytes:
    """Return one PartialResultSet: optional metadata, the values, the resume token."""
    return b"".join([head, *values, _field(b"\x22", resume_token)])
