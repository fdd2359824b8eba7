"""The reader's hot path: GoogleSQL change records decoded straight from protobuf values.

Rows read with ``lazy_decode=True`` arrive as raw ``struct_pb2.Value`` objects; this
module reads the one ChangeRecord shape from them directly, over 5x faster than the
client's generic decode alone (docs/benchmarks.md, issue 22's goal 4). Both give identical
records (a test checks it); anything unusual falls back to the checking builder of
``parse``, which names the field and the partition in its error.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec

from .errors import ChangeRecordError
from .parse import (
    _MOD_TYPES,
    _VALUE_CAPTURE_TYPES,
    RECORD_KINDS,
    _check_one_kind,
    _kind,
    _scan_json,
    load_json,
    parse_timestamp,
)
from .records import (
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
    CHILD_PARTITION_FIELDS,
    CHILD_PARTITIONS_RECORD_FIELDS,
    COLUMN_TYPE_FIELDS,
    DATA_CHANGE_RECORD_FIELDS,
    HEARTBEAT_RECORD_FIELDS,
    MOD_FIELDS,
)

# Distinct column lists cached per decoder; an entry is a few hundred bytes.
_COLUMN_TYPE_CACHE_LIMIT = 4096

# --- GoogleSQL, raw protobuf values (lazy_decode=True): the hot path ------------------------
#
# The client's generic decode calls a closure per cell and builds JsonObject and
# DatetimeWithNanoseconds objects; this reads the one known shape straight from the
# protobuf Values. It trades small helpers for inline code where rows/s depend on it, and
# checks a value's kind only when its payload is falsy (an empty string or False is what a
# NULL or a wrong kind reads as).

_DCR_WIDTH = len(DATA_CHANGE_RECORD_FIELDS)
_fromisoformat = datetime.fromisoformat
_new_data_change_record = positional_builder(DataChangeRecord)
_new_mod = positional_builder(Mod)
_json_object = msgspec.json.Decoder(dict).decode


class GoogleSqlDecoder:
    """Decode raw GoogleSQL ChangeRecord values into typed records, caching column types."""

    def __init__(self) -> None:
        self._column_types: dict[bytes, tuple[ColumnType, ...]] = {}

    def decode(self, value_pb: Any, partition_token: str | None) -> ChangeRecord:
        """Return the record held by the ChangeRecord column value of one row."""
        outer = value_pb.list_value.values
        if len(outer) == 1:
            arrays = outer[0].list_value.values
            # The usual row first: one data change record, the other two arrays empty (a
            # NULL array reads as empty). 5-10 % faster than counting all three arrays'
            # records first (profile, issue 22); any other row takes the checking way below.
            if len(arrays) == 3:
                data = arrays[0].list_value.values
                if len(data) == 1 and not arrays[1].list_value.values and not arrays[2].list_value.values:
                    values = data[0].list_value.values
                    plain = self._plain_data_change_record(values, partition_token)
                    return plain or self._data_change_record(values, partition_token)
        return self._checked_decode(value_pb, partition_token)

    def _checked_decode(self, value_pb: Any, partition_token: str | None) -> ChangeRecord:
        outer = value_pb.list_value.values
        if len(outer) != 1:
            raise ChangeRecordError(
                f"expected an array of one element, got {len(outer)} elements",
                field="ChangeRecord",
                partition_token=partition_token,
            )
        arrays = outer[0].list_value.values
        if len(arrays) != 3:
            raise ChangeRecordError(
                f"expected a struct of 3 arrays, got {len(arrays)} fields",
                field="ChangeRecord[0]",
                partition_token=partition_token,
            )
        # A NULL array reads as an empty list_value, so NULL counts as empty for free.
        # Unpacked by hand: a generator here cost a tenth of the decode (profile, issue 22).
        data = arrays[0].list_value.values
        heartbeat = arrays[1].list_value.values
        children = arrays[2].list_value.values
        if len(data) + len(heartbeat) + len(children) != 1:
            _fail_kinds((data, heartbeat, children), partition_token)
        # One data change record alone took decode's first branch; here it is a heartbeat or
        # children.
        if heartbeat:
            return _heartbeat_pb(heartbeat[0].list_value.values, partition_token)
        return _child_partitions_pb(children[0].list_value.values, partition_token)

    def _plain_data_change_record(self, values: Any, token: str | None) -> DataChangeRecord | None:
        """Return the record if every field is of the usual kind and form, else None.

        One frame, no helper calls: each field is read once, and a falsy read (an empty
        string or False, which is also what a NULL or a wrong kind reads as) is confirmed
        by the value's kind inline. Anything else returns None, and the checking decoder
        below decides, naming what is wrong.
        """
        if len(values) != _DCR_WIDTH:
            return None
        ts, seq, txid, last, table, ctypes, mods, mod_type, vct, nrec, npart, tag, system = values
        mod_type_s = mod_type.string_value
        vct_s = vct.string_value
        if mod_type_s not in _MOD_TYPES or vct_s not in _VALUE_CAPTURE_TYPES:
            return None
        try:
            commit = _fromisoformat(ts.string_value)
            nrec_i = int(nrec.string_value)
            npart_i = int(npart.string_value)
        except ValueError:
            return None
        seq_s, txid_s = seq.string_value, txid.string_value
        table_s, tag_s = table.string_value, tag.string_value
        last_b, system_b = last.bool_value, system.bool_value
        if (
            commit.tzinfo is not UTC
            or (not seq_s and seq.WhichOneof("kind") != "string_value")
            or (not txid_s and txid.WhichOneof("kind") != "string_value")
            or (not table_s and table.WhichOneof("kind") != "string_value")
            or (not tag_s and tag.WhichOneof("kind") != "string_value")
            or (not last_b and last.WhichOneof("kind") != "bool_value")
            or (not system_b and system.WhichOneof("kind") != "bool_value")
        ):
            return None
        plain_mods = _plain_mods(mods.list_value.values)
        if plain_mods is None:
            return None
        return _new_data_change_record(
            commit,
            seq_s,
            txid_s,
            last_b,
            table_s,
            self._column_types_pb(ctypes, token),
            plain_mods,
            mod_type_s,
            vct_s,
            nrec_i,
            npart_i,
            tag_s,
            system_b,
        )

    def _data_change_record(self, values: Any, token: str | None) -> DataChangeRecord:
        if len(values) != _DCR_WIDTH:
            _fail_width(values, DATA_CHANGE_RECORD_FIELDS, "data_change_record", token)
        ts, seq, txid, last, table, ctypes, mods, mod_type, vct, nrec, npart, tag, system = values
        path = "data_change_record"
        mod_type_s = mod_type.string_value
        if mod_type_s not in _MOD_TYPES:
            _fail_choice(mod_type, f"{path}.mod_type", _MOD_TYPES, token)
        vct_s = vct.string_value
        if vct_s not in _VALUE_CAPTURE_TYPES:
            _fail_choice(vct, f"{path}.value_capture_type", _VALUE_CAPTURE_TYPES, token)
        return DataChangeRecord(
            parse_timestamp(ts.string_value, f"{path}.commit_timestamp", token),
            seq.string_value or _string_pb(seq, f"{path}.record_sequence", token),
            txid.string_value or _string_pb(txid, f"{path}.server_transaction_id", token),
            last.bool_value or _bool_pb(last, f"{path}.is_last_record_in_transaction_in_partition", token),
            table.string_value or _string_pb(table, f"{path}.table_name", token),
            self._column_types_pb(ctypes, token),
            _mods_pb(mods.list_value.values, token),
            mod_type_s,
            vct_s,
            _int_pb(nrec, f"{path}.number_of_records_in_transaction", token),
            _int_pb(npart, f"{path}.number_of_partitions_in_transaction", token),
            tag.string_value or _string_pb(tag, f"{path}.transaction_tag", token),
            system.bool_value or _bool_pb(system, f"{path}.is_system_transaction", token),
        )

    def _column_types_pb(self, value: Any, token: str | None) -> tuple[ColumnType, ...]:
        # A table's column list repeats in every record of that table: key the parsed
        # tuple by the serialized message (one C call) instead of rebuilding it.
        key = value.SerializeToString()
        cached = self._column_types.get(key)
        if cached is None:
            cached = _column_types_pb(value.list_value.values, token)
            if len(self._column_types) >= _COLUMN_TYPE_CACHE_LIMIT:
                self._column_types.clear()
            self._column_types[key] = cached
        return cached


def _fail_kinds(arrays: tuple, token: str | None) -> None:
    present = [kind for kind, items in zip(RECORD_KINDS, arrays, strict=True) if items]
    _check_one_kind(present, token)
    raise ChangeRecordError(
        "expected an array of at most one element", field=present[0], partition_token=token
    )


_default_decoder = GoogleSqlDecoder()


def decode_googlesql_value(value_pb: Any, partition_token: str | None) -> ChangeRecord:
    """Return the record of a raw GoogleSQL ChangeRecord value (read with lazy_decode=True)."""
    return _default_decoder.decode(value_pb, partition_token)


def _column_types_pb(items: Any, token: str | None) -> tuple[ColumnType, ...]:
    out = []
    for index, item in enumerate(items):
        path = f"data_change_record.column_types[{index}]"
        values = item.list_value.values
        if len(values) != 4:
            _fail_width(values, COLUMN_TYPE_FIELDS, path, token)
        name, type_, key, position = values
        out.append(
            ColumnType(
                name.string_value or _string_pb(name, f"{path}.name", token),
                _object_pb(type_, f"{path}.type", token, nullable=False),
                key.bool_value or _bool_pb(key, f"{path}.is_primary_key", token),
                _int_pb(position, f"{path}.ordinal_position", token),
            )
        )
    return tuple(out)


def _plain_mods(items: Any) -> tuple[Mod, ...] | None:
    """Return the mods if each is three JSON object texts, else None.

    No index, no width check, no helper frame: a wrong width fails the unpacking and a
    text that is not one JSON object fails msgspec's typed decode (C, about 2.5x the stdlib
    scanner on a mod's small objects; profile, issue 22), and either returns None for the
    checking ``_mods_pb`` to name. msgspec refuses some JSON the stdlib reads (NaN, 1e400,
    a lone surrogate): those also go to ``_mods_pb``, so every mod holds what json.loads
    reads. An empty object, what most old_values hold, skips the decode.
    """
    out = []
    try:
        for item in items:
            keys, new, old = item.list_value.values
            new_s, old_s = new.string_value, old.string_value
            out.append(
                _new_mod(
                    _json_object(keys.string_value),
                    {} if new_s == "{}" else _json_object(new_s),
                    {} if old_s == "{}" else _json_object(old_s),
                )
            )
    except ValueError:  # msgspec.DecodeError is one, and so is a wrong width
        return None
    return tuple(out)


def _mods_pb(items: Any, token: str | None) -> tuple[Mod, ...]:
    out = []
    for index, item in enumerate(items):
        values = item.list_value.values
        if len(values) != 3:
            _fail_width(values, MOD_FIELDS, f"data_change_record.mods[{index}]", token)
        keys, new, old = values
        keys_s, new_s, old_s = keys.string_value, new.string_value, old.string_value
        try:
            # Inline happy path: three C scanner calls and type checks, no helper frames.
            k, k_end = _scan_json(keys_s, 0)
            n, n_end = _scan_json(new_s, 0)
            o, o_end = _scan_json(old_s, 0)
            ok = (
                k_end == len(keys_s) and n_end == len(new_s) and o_end == len(old_s)
                and type(k) is dict and type(n) is dict and type(o) is dict
            )  # fmt: skip
        except (StopIteration, ValueError):
            ok = False
        if not ok:
            path = f"data_change_record.mods[{index}]"
            k = _object_pb(keys, f"{path}.keys", token, nullable=False)
            n = _object_pb(new, f"{path}.new_values", token, nullable=True)
            o = _object_pb(old, f"{path}.old_values", token, nullable=True)
        out.append(Mod(k, n, o))
    return tuple(out)


def _heartbeat_pb(values: Any, token: str | None) -> HeartbeatRecord:
    if len(values) != 1:
        _fail_width(values, HEARTBEAT_RECORD_FIELDS, "heartbeat_record", token)
    return HeartbeatRecord(parse_timestamp(values[0].string_value, "heartbeat_record.timestamp", token))


def _child_partitions_pb(values: Any, token: str | None) -> ChildPartitionsRecord:
    if len(values) != 3:
        _fail_width(values, CHILD_PARTITIONS_RECORD_FIELDS, "child_partitions_record", token)
    ts, seq, children = values
    path = "child_partitions_record"
    out = []
    for index, child in enumerate(children.list_value.values):
        child_path = f"{path}.child_partitions[{index}]"
        fields = child.list_value.values
        if len(fields) != 2:
            _fail_width(fields, CHILD_PARTITION_FIELDS, child_path, token)
        child_token, parents = fields
        out.append(
            ChildPartition(
                child_token.string_value or _string_pb(child_token, f"{child_path}.token", token),
                _parents_pb(parents, f"{child_path}.parent_partition_tokens", token),
            )
        )
    return ChildPartitionsRecord(
        parse_timestamp(ts.string_value, f"{path}.start_timestamp", token),
        seq.string_value or _string_pb(seq, f"{path}.record_sequence", token),
        tuple(out),
    )


def _parents_pb(value: Any, field: str, token: str | None) -> tuple[str, ...]:
    kind = value.WhichOneof("kind")
    if kind == "null_value":
        return ()
    if kind != "list_value":
        raise ChangeRecordError(f"expected an array, got {kind}", field=field, partition_token=token)
    parents = []
    for item in value.list_value.values:
        item_kind = item.WhichOneof("kind")
        if item_kind == "string_value":
            parents.append(item.string_value)
        elif item_kind != "null_value":  # [NULL] marks a root partition
            raise ChangeRecordError(
                f"expected strings or NULL, got {item_kind}", field=field, partition_token=token
            )
    return tuple(parents)


# Slow helpers, called only when a fast read came out falsy or failed: they decide whether
# the value was legitimately empty/False or malformed, and name the field if malformed.


def _string_pb(value: Any, field: str, token: str | None) -> str:
    kind = value.WhichOneof("kind")
    if kind != "string_value":
        raise ChangeRecordError(f"expected a string, got {kind}", field=field, partition_token=token)
    return ""


def _bool_pb(value: Any, field: str, token: str | None) -> bool:
    kind = value.WhichOneof("kind")
    if kind != "bool_value":
        raise ChangeRecordError(f"expected a boolean, got {kind}", field=field, partition_token=token)
    return False


def _int_pb(value: Any, field: str, token: str | None) -> int:
    # INT64 travels as a decimal string.
    try:
        return int(value.string_value)
    except ValueError:
        raise ChangeRecordError(
            f"expected an INT64 string, got {value.WhichOneof('kind')} {value.string_value!r}",
            field=field,
            partition_token=token,
        ) from None


def _object_pb(value: Any, field: str, token: str | None, *, nullable: bool) -> dict[str, Any]:
    kind = value.WhichOneof("kind")
    if kind == "null_value" and nullable:
        return {}
    if kind != "string_value":
        raise ChangeRecordError(f"expected a JSON string, got {kind}", field=field, partition_token=token)
    obj = load_json(value.string_value, field, token)
    if obj is None and nullable:
        return {}
    if type(obj) is not dict:
        raise ChangeRecordError(
            f"expected a JSON object, got {_kind(obj)}", field=field, partition_token=token
        )
    return obj


def _fail_choice(value: Any, field: str, allowed: frozenset[str], token: str | None) -> None:
    _string_pb(value, field, token)
    raise ChangeRecordError(
        f"unknown value {value.string_value!r}: expected one of {', '.join(sorted(allowed))}",
        field=field,
        partition_token=token,
    )


def _fail_width(values: Any, fields: tuple, path: str, token: str | None) -> None:
    if len(values) < len(fields):
        missing = fields[len(values)][0]
        raise ChangeRecordError("missing field", field=f"{path}.{missing}", partition_token=token)
    raise ChangeRecordError(
        f"expected {len(fields)} fields, got {len(values)}", field=path, partition_token=token
    )
