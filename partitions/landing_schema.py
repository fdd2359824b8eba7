"""The landing zone's Parquet schema: one row per mod, in a Datastream-style envelope.

Pure pyarrow (no Django): the pipeline writes it and the Spark jobs read it, so both
import the one definition here. Files live under
``<CDC_LANDING_URI>/stream=<cdcweb stream name>/date=YYYY-MM-DD/``.
"""

from __future__ import annotations

import pyarrow as pa

READ_METHOD = "spanner-change-stream"
_TS = pa.timestamp("us", tz="UTC")

LANDING_SCHEMA = pa.schema(
    [
        # Datastream-style envelope
        pa.field("uuid", pa.string(), nullable=False),
        pa.field("stream_name", pa.string(), nullable=False),
        pa.field("read_method", pa.string(), nullable=False),
        pa.field("object", pa.string(), nullable=False),  # the table name
        pa.field("read_timestamp", _TS, nullable=False),
        pa.field("source_timestamp", _TS, nullable=False),  # the commit timestamp
        # [commit timestamp ISO, server_transaction_id, record_sequence, mod_index]
        pa.field("sort_keys", pa.list_(pa.string()), nullable=False),
        # Spanner change record fields
        pa.field("partition_token", pa.string(), nullable=False),
        pa.field("commit_timestamp", _TS, nullable=False),
        pa.field("server_transaction_id", pa.string(), nullable=False),
        pa.field("record_sequence", pa.string(), nullable=False),
        pa.field("table_name", pa.string(), nullable=False),
        pa.field("mod_index", pa.int32(), nullable=False),
        pa.field("mod_type", pa.string(), nullable=False),
        pa.field("value_capture_type", pa.string(), nullable=False),
        pa.field("keys", pa.string(), nullable=False),  # JSON text
        pa.field("new_values", pa.string(), nullable=False),  # JSON text
        pa.field("old_values", pa.string(), nullable=False),  # JSON text
        pa.field("number_of_records_in_transaction", pa.int64(), nullable=False),
        pa.field("number_of_partitions_in_transaction", pa.int64(), nullable=False),
        pa.field("transaction_tag", pa.string(), nullable=False),
        pa.field("is_system_transaction", pa.bool_(), nullable=False),
        # size in bytes of keys + new_values + old_values as JSON text (for cost reports)
        pa.field("mod_bytes", pa.int64(), nullable=False),
    ]
)

# A landed row is identified by the record's order key, the partition and the mod.
DEDUPE_KEY = ("partition_token", "commit_timestamp", "server_transaction_id", "record_sequence", "mod_index")
