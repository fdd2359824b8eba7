"""Landing rows of table row records, in the landing zone's Datastream-style envelope.

One landing row per row read. The key's canonical JSON stands in for the server
transaction id, so (partition token, commit timestamp, key) identifies a row version
for dedupe exactly as (token, commit timestamp, transaction, sequence, mod) identifies a
change stream mod; a re-read of the same version lands with the same uuid.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import pyarrow as pa

from partitions.sources.landing import LANDING_SCHEMA, canonical_json, row_uuid

from .records import TableRowRecord

READ_METHOD = "spanner-commit-timestamp"
_OLD_VALUES = b"{}"  # a poll sees only the row as it is now
_TIMESTAMP = LANDING_SCHEMA.field("commit_timestamp").type


def landing_table(
    stream_name: str, token: str, records: Iterable[TableRowRecord], read_at: datetime
) -> pa.Table:
    """Return the landing rows (a pyarrow Table in LANDING_SCHEMA) of some table row records."""
    cols = _per_row(token, records)
    rows = len(cols["uuid"])
    keys, new = cols.pop("keys"), cols.pop("new_values")
    commits, tables = (
        pa.array(cols.pop("commit_timestamp"), _TIMESTAMP),
        pa.array(cols.pop("object"), pa.string()),
    )
    columns = {
        "uuid": pa.array(cols["uuid"], pa.string()),
        "stream_name": _repeat(stream_name, pa.string(), rows),
        "read_method": _repeat(READ_METHOD, pa.string(), rows),
        "object": tables,
        "read_timestamp": _repeat(read_at, _TIMESTAMP, rows),
        "source_timestamp": commits,
        "sort_keys": pa.ListArray.from_arrays(
            pa.array(range(0, 4 * rows + 1, 4), pa.int32()), pa.array(cols["sort_keys"], pa.string())
        ),
        "partition_token": _repeat(token, pa.string(), rows),
        "commit_timestamp": commits,
        "server_transaction_id": pa.array(cols["server_transaction_id"], pa.string()),
        "table_name": tables,
        "keys": pa.array(keys, pa.string()),
        "new_values": pa.array(new, pa.string()),
        "mod_bytes": pa.array([len(k) + len(n) + len(_OLD_VALUES) for k, n in zip(keys, new, strict=True)]),
    }
    columns.update(
        {name: _repeat(value, LANDING_SCHEMA.field(name).type, rows) for name, value in _SAME.items()}
    )
    return pa.Table.from_arrays([columns[f.name] for f in LANDING_SCHEMA], schema=LANDING_SCHEMA)


# Columns whose value is the same for every row read by this kind.
_SAME = {
    "record_sequence": "0",
    "mod_index": 0,
    "mod_type": "UPSERT",  # an insert and an update look the same to a poll; deletes are not seen
    "value_capture_type": "NEW_ROW",
    "old_values": _OLD_VALUES.decode(),
    "number_of_records_in_transaction": 1,
    "number_of_partitions_in_transaction": 1,
    "transaction_tag": "",
    "is_system_transaction": False,
}


def _per_row(token: str, records: Iterable[TableRowRecord]) -> dict[str, list]:
    """Return the columns that differ from row to row, as lists (sort keys flattened, four per row)."""
    cols: dict[str, list] = {
        name: [] for name in ("object", "commit_timestamp", "server_transaction_id", "uuid", "sort_keys")
    }
    cols["keys"], cols["new_values"] = [], []
    for record in records:
        commit = record.commit_timestamp.astimezone(UTC)
        commit_iso = commit.isoformat()  # as the Spanner kind writes sort keys and uuids
        key_json = canonical_json(record.keys)
        txid = key_json.decode()
        cols["object"].append(record.table)
        cols["commit_timestamp"].append(commit)
        cols["server_transaction_id"].append(txid)
        cols["uuid"].append(row_uuid(f"{token}|{commit_iso}|{txid}|0|0"))
        cols["sort_keys"] += (commit_iso, txid, "0", "0")
        cols["keys"].append(key_json)
        cols["new_values"].append(canonical_json(record.values))
    return cols


def _repeat(value, type_, rows: int) -> pa.Array:
    """Return an array of rows copies of one value."""
    return pa.repeat(pa.scalar(value, type_), rows)
