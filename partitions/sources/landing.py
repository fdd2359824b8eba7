"""What every kind's landing rows share: the Parquet schema, canonical JSON text, row uuids.

One row per mod, in a Datastream-style envelope. Pure pyarrow (no Django): each kind
builds its rows with these, the pipeline writes them and the Spark jobs read them, so
all of them import the one definition here. Files live under
``<CDC_LANDING_URI>/stream_id=<cdcweb stream id>/date=YYYY-MM-DD/``: by the stream's id,
never its name, so a renamed stream keeps its data and a new stream given a deleted
one's name never sees it. Streams that landed before that (under ``stream=<name>/``)
keep reading it: their ``Stream.landing_name`` names that directory.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import orjson
import pyarrow as pa

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


def stream_dir(stream_id: int) -> str:
    """Return the directory, relative to the landing zone's root, of one stream's files."""
    return f"stream_id={int(stream_id)}"


def legacy_stream_dir(name: str) -> str:
    """Return the directory a stream landed in before files were kept by stream id (by its name then)."""
    return f"stream={name}"


# A landed row is identified by the record's order key, the partition and the mod.
DEDUPE_KEY = ("partition_token", "commit_timestamp", "server_transaction_id", "record_sequence", "mod_index")

# Fixed namespace: the uuid of a landed row depends only on its dedupe key.
UUID_NAMESPACE = uuid.UUID("7c1f3f0e-5b2a-4d3c-9a77-0c0dcdc0a001")


def _json_slow(value: Any) -> bytes:
    return json.dumps(dict(value or {}), sort_keys=True, separators=(",", ":"), default=str).encode()


def canonical_json(value: Any) -> bytes:
    """Return a mod's JSON column as canonical text (UTF-8 bytes, all ASCII).

    Sorted keys, so the same mod always lands as the same text (and the same
    mod_bytes). orjson writes what ``json.dumps(sort_keys=True, separators=(",", ":"))``
    writes, about ten times faster; where the two differ, the stdlib writes it: non-ASCII
    text (json escapes it), floats below 1e-4 (json "1e-05", orjson "0.00001" or "1e-5";
    caught by their "e-" or "0.0000"), ints beyond 64 bits, and dict subclasses,
    datetimes or other non-JSON types (passed through, so orjson refuses them). NaN and
    Infinity, which JSON and so Spanner never hold, would land as null.
    """
    if type(value) is not dict:
        return _json_slow(value)
    try:
        out = orjson.dumps(value, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError: a type or an int it does not write like json
        return _json_slow(value)
    if not out.isascii() or b"e-" in out or b"0.0000" in out:
        return _json_slow(value)
    return out


_ORJSON_OPTIONS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)
# uuid5 (SHA-1 of namespace + name, version and variant bits set) without a UUID object
# per row: the same strings uuid.uuid5 gives, at a third of the cost.
_UUID_SHA1 = hashlib.sha1(UUID_NAMESPACE.bytes, usedforsecurity=False)


def row_uuid(name: str) -> str:
    digest = _UUID_SHA1.copy()
    digest.update(name.encode())
    raw = bytearray(digest.digest()[:16])
    raw[6] = (raw[6] & 0x0F) | 0x50
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
