"""One JSON shape for a data change record, shared by the tail tool and the simulator.

Field names are the seed document's, plus ``partition_token``; timestamps are RFC 3339
with microseconds and 'Z'; column_types and mods are lists of objects. Comparing the
tail tool's output with the simulator's ground truth is then a plain text comparison.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from .records import DataChangeRecord


def format_timestamp(value: datetime) -> str:
    """Return RFC 3339 text in UTC with exactly six fractional digits and 'Z'."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def record_fields(record: DataChangeRecord) -> dict[str, Any]:
    """Return the record's fields as JSON-ready values, in the seed document's order."""
    return {
        "commit_timestamp": format_timestamp(record.commit_timestamp),
        "record_sequence": record.record_sequence,
        "server_transaction_id": record.server_transaction_id,
        "is_last_record_in_transaction_in_partition": record.is_last_record_in_transaction_in_partition,
        "table_name": record.table_name,
        "column_types": [
            {
                "name": c.name,
                "type": c.type,
                "is_primary_key": c.is_primary_key,
                "ordinal_position": c.ordinal_position,
            }
            for c in record.column_types
        ],
        "mods": [
            {"keys": m.keys, "new_values": m.new_values, "old_values": m.old_values} for m in record.mods
        ],
        "mod_type": record.mod_type,
        "value_capture_type": record.value_capture_type,
        "number_of_records_in_transaction": record.number_of_records_in_transaction,
        "number_of_partitions_in_transaction": record.number_of_partitions_in_transaction,
        "transaction_tag": record.transaction_tag,
        "is_system_transaction": record.is_system_transaction,
    }


def record_to_json(record: DataChangeRecord, partition_token: str) -> dict[str, Any]:
    """Return the JSON object of one delivered record: partition_token, then the fields."""
    return {"partition_token": partition_token, **record_fields(record)}


def record_to_json_line(record: DataChangeRecord, partition_token: str) -> str:
    """Return the record as one line of JSON (no newline), keys in a fixed order."""
    return json.dumps(record_to_json(record, partition_token), separators=(",", ":"), ensure_ascii=False)
