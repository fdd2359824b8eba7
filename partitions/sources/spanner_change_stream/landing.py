"""The landing rows of Spanner data change records: one row per mod, built column by column.

Pure Python and pyarrow, no Django.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc

from partitions.sources.landing import LANDING_SCHEMA, canonical_json, row_uuid

from .records import DataChangeRecord

READ_METHOD = "spanner-change-stream"


def build_table(
    stream_name: str, token: str, records: Iterable[DataChangeRecord], read_at: datetime
) -> pa.Table:
    """Return the landing rows (one per mod) of a window's data change records.

    Built column by column: one pass over the records fills a list per column (values
    that are the same for every mod of a record once per record, spread over its mods
    with a take), and arrow converts each list in C.
    """
    per_record: dict[str, list] = {name: [] for name in _RECORD_COLUMNS}
    (
        objects, commits, txids, seqs, mod_types, vcts, nrecs, nparts, tags, systems
    ) = (per_record[name] for name in _RECORD_COLUMNS)  # fmt: skip
    row_record: list[int] = []  # which record each row (mod) belongs to
    uuids: list[str] = []
    mod_indexes: list[int] = []
    sort_keys: list[str] = []  # four per row, flattened
    keys_col: list[bytes] = []
    new_col: list[bytes] = []
    old_col: list[bytes] = []
    prefix = f"{token}|"
    for position, record in enumerate(records):
        ts = record.commit_timestamp
        commit = ts.astimezone(UTC)  # the same object when ts is in UTC already
        commit_iso = commit.isoformat()
        ts_iso = commit_iso if commit is ts else ts.isoformat()
        txid, seq = record.server_transaction_id, record.record_sequence
        key_head = f"{prefix}{ts_iso}|{txid}|{seq}|"
        for index, mod in enumerate(record.mods):
            position_text = _INDEX_TEXT[index] if index < len(_INDEX_TEXT) else str(index)
            row_record.append(position)
            uuids.append(row_uuid(key_head + position_text))
            mod_indexes.append(index)
            sort_keys += (commit_iso, txid, seq, position_text)
            keys_col.append(canonical_json(mod.keys))
            new_col.append(canonical_json(mod.new_values))
            old_col.append(canonical_json(mod.old_values))
        objects.append(record.table_name)
        commits.append(commit)
        txids.append(txid)
        seqs.append(seq)
        mod_types.append(record.mod_type)
        vcts.append(record.value_capture_type)
        nrecs.append(record.number_of_records_in_transaction)
        nparts.append(record.number_of_partitions_in_transaction)
        tags.append(record.transaction_tag)
        systems.append(record.is_system_transaction)
    rows = len(uuids)
    spread = pa.array(row_record, pa.int32())
    columns = {
        name: pa.array(values, LANDING_SCHEMA.field(name).type).take(spread)
        for name, values in per_record.items()
    }
    keys, new, old = (pa.array(col, pa.string()) for col in (keys_col, new_col, old_col))
    lengths = [pc.binary_length(col).cast(pa.int64()) for col in (keys, new, old)]
    columns.update(
        uuid=pa.array(uuids, pa.string()),
        stream_name=pa.repeat(pa.scalar(stream_name, pa.string()), rows),
        read_method=pa.repeat(pa.scalar(READ_METHOD, pa.string()), rows),
        read_timestamp=pa.repeat(pa.scalar(read_at, _TIMESTAMP), rows),
        sort_keys=pa.ListArray.from_arrays(
            pa.array(range(0, 4 * rows + 1, 4), pa.int32()), pa.array(sort_keys, pa.string())
        ),
        partition_token=pa.repeat(pa.scalar(token, pa.string()), rows),
        mod_index=pa.array(mod_indexes, pa.int32()),
        keys=keys,
        new_values=new,
        old_values=old,
        mod_bytes=pc.add(pc.add(lengths[0], lengths[1]), lengths[2]),
    )
    columns["source_timestamp"] = columns["commit_timestamp"]
    columns["object"] = columns["table_name"]
    return pa.Table.from_arrays([columns[f.name] for f in LANDING_SCHEMA], schema=LANDING_SCHEMA)


_TIMESTAMP = LANDING_SCHEMA.field("commit_timestamp").type
# Columns whose value is the record's, the same for each of its mods (in this order).
_RECORD_COLUMNS = (
    "table_name",
    "commit_timestamp",
    "server_transaction_id",
    "record_sequence",
    "mod_type",
    "value_capture_type",
    "number_of_records_in_transaction",
    "number_of_partitions_in_transaction",
    "transaction_tag",
    "is_system_transaction",
)
_INDEX_TEXT = tuple(str(i) for i in range(256))
