"""Landing rows of Bigtable changes: one row per mod, in the landing zone's envelope.

The envelope is Spanner-shaped (``partitions.sources.landing.LANDING_SCHEMA``); a Bigtable change
fills it as follows: the row key (hex) is the server_transaction_id, the tiebreaker the
record_sequence, the mod's position in the change the mod_index; keys hold the row key,
family and qualifier; new_values the cell (base64 value, left out above 64 KiB, and its
size) or the deleted time range; garbage collection lands as a system transaction and
the source cluster as the transaction tag. A row's uuid depends only on its dedupe key,
computed exactly as for Spanner rows.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc

from partitions.sources.landing import LANDING_SCHEMA, canonical_json, row_uuid

from .ranges import key_text
from .records import GARBAGE_COLLECTION, Change, DeleteFromColumn, SetCell

READ_METHOD = "bigtable-change-stream"
MAX_LANDED_VALUE = 64 * 1024  # larger values land as their size only: the landing zone is for analysis
_TIMESTAMP = LANDING_SCHEMA.field("commit_timestamp").type
_EMPTY = b"{}"  # old_values: a change stream records no old values
_STRING = pa.string()


def mod_keys(row_key_text: str, mod) -> dict:
    """Return the keys JSON object of a mod: the row key, and its family and qualifier if any."""
    keys = {"row_key": row_key_text}
    family = getattr(mod, "family", None)
    if family is not None:
        keys["family"] = family
    qualifier = getattr(mod, "qualifier", None)
    if qualifier is not None:
        keys["qualifier"] = key_text(qualifier)
    return keys


def mod_new_values(mod) -> dict:
    """Return the new_values JSON object of a mod: the cell written, or the time range deleted."""
    if isinstance(mod, SetCell):
        size = len(mod.value)
        if size > MAX_LANDED_VALUE:
            return {"timestamp_micros": mod.timestamp_micros, "value_size": size}
        value = base64.b64encode(mod.value).decode("ascii")
        return {"timestamp_micros": mod.timestamp_micros, "value": value, "value_size": size}
    if isinstance(mod, DeleteFromColumn):
        return {
            "time_range": {
                "start_timestamp_micros": mod.start_timestamp_micros,
                "end_timestamp_micros": mod.end_timestamp_micros,
            }
        }
    return {}


class _Columns:
    """The landing columns filled one row (mod) at a time."""

    def __init__(self):
        self.row_change: list[int] = []  # which change each row belongs to
        self.uuids: list[str] = []
        self.mod_indexes: list[int] = []
        self.mod_types: list[str] = []
        self.sort_keys: list[str] = []  # four per row, flattened
        self.keys: list[bytes] = []
        self.new_values: list[bytes] = []
        self.commits: list[datetime] = []  # per change
        self.txids: list[str] = []
        self.seqs: list[str] = []
        self.tags: list[str] = []
        self.systems: list[bool] = []

    def add(self, position: int, change: Change, token: str) -> None:
        """Add the rows of one change (the change's own columns once)."""
        ts = change.commit_timestamp
        commit = ts.astimezone(UTC)
        commit_iso = commit.isoformat()
        txid, seq = change.row_key.hex(), str(change.tiebreaker)
        head = f"{token}|{commit_iso if commit is ts else ts.isoformat()}|{txid}|{seq}|"
        row_key = key_text(change.row_key)
        for index, mod in enumerate(change.mods):
            self.row_change.append(position)
            self.uuids.append(row_uuid(f"{head}{index}"))
            self.mod_indexes.append(index)
            self.mod_types.append(mod.mod_type)
            self.sort_keys += (commit_iso, txid, seq, str(index))
            self.keys.append(canonical_json(mod_keys(row_key, mod)))
            self.new_values.append(canonical_json(mod_new_values(mod)))
        self.commits.append(commit)
        self.txids.append(txid)
        self.seqs.append(seq)
        self.tags.append(change.source_cluster_id)
        self.systems.append(change.type == GARBAGE_COLLECTION)


def landing_table(
    table: str, stream_name: str, token: str, records: Iterable[Change], read_at: datetime
) -> pa.Table:
    """Return the landing rows (one per mod) of a window's changes of one partition."""
    cols = _Columns()
    for position, change in enumerate(records):
        cols.add(position, change, token)
    rows = len(cols.uuids)
    columns = _change_columns(cols)
    columns.update(_mod_columns(cols))
    for name, value, type_ in (
        ("stream_name", stream_name, _STRING),
        ("read_method", READ_METHOD, _STRING),
        ("object", table, _STRING),
        ("table_name", table, _STRING),
        ("read_timestamp", read_at, _TIMESTAMP),
        ("partition_token", token, _STRING),
        ("value_capture_type", "NEW_VALUES", _STRING),
        ("old_values", _EMPTY.decode(), _STRING),
        ("number_of_records_in_transaction", 1, pa.int64()),
        ("number_of_partitions_in_transaction", 1, pa.int64()),
    ):
        columns[name] = pa.repeat(pa.scalar(value, type_), rows)
    return pa.Table.from_arrays([columns[f.name] for f in LANDING_SCHEMA], schema=LANDING_SCHEMA)


def _change_columns(cols: _Columns) -> dict[str, pa.Array]:
    """Return the columns whose value is the change's, spread over its mods."""
    spread = pa.array(cols.row_change, pa.int32())
    columns = {
        name: pa.array(values, LANDING_SCHEMA.field(name).type).take(spread)
        for name, values in (
            ("commit_timestamp", cols.commits),
            ("server_transaction_id", cols.txids),
            ("record_sequence", cols.seqs),
            ("transaction_tag", cols.tags),
            ("is_system_transaction", cols.systems),
        )
    }
    columns["source_timestamp"] = columns["commit_timestamp"]
    return columns


def _mod_columns(cols: _Columns) -> dict[str, pa.Array]:
    """Return the columns with a value per mod, and mod_bytes from the JSON texts."""
    keys, new = pa.array(cols.keys, _STRING), pa.array(cols.new_values, _STRING)
    lengths = pc.add(pc.binary_length(keys).cast(pa.int64()), pc.binary_length(new).cast(pa.int64()))
    rows = len(cols.uuids)
    return {
        "uuid": pa.array(cols.uuids, _STRING),
        "sort_keys": pa.ListArray.from_arrays(
            pa.array(range(0, 4 * rows + 1, 4), pa.int32()), pa.array(cols.sort_keys, _STRING)
        ),
        "mod_index": pa.array(cols.mod_indexes, pa.int32()),
        "mod_type": pa.array(cols.mod_types, _STRING),
        "keys": keys,
        "new_values": new,
        "mod_bytes": pc.add(lengths, len(_EMPTY)),
    }
