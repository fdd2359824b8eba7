"""Write a window's data change records to the landing zone as one Parquet file.

One row per mod in the Datastream-style envelope of ``landing_schema``. The file name
is derived from the partition and the window start, so a re-read of the same window
replaces the same file; writes go to a temporary file that is fsynced and renamed
into place, so a reader never sees half a file and a crash leaves nothing behind
that a re-read does not overwrite. No Django here: the pipeline passes plain values.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from .changestream.records import DataChangeRecord
from .landing_schema import LANDING_SCHEMA, READ_METHOD

# Fixed namespace: the uuid of a landed row depends only on its dedupe key.
_UUID_NAMESPACE = uuid.UUID("7c1f3f0e-5b2a-4d3c-9a77-0c0dcdc0a001")


def partition_hash(token: str) -> str:
    """Return a short, stable, file-name-safe digest of a partition token."""
    return hashlib.sha256(token.encode()).hexdigest()[:20]


def window_path(stream_name: str, token: str, window_start: datetime) -> str:
    """Return the file's path relative to the landing zone root."""
    start = window_start.astimezone(UTC)
    micros = int(start.timestamp()) * 1_000_000 + start.microsecond
    return f"stream={stream_name}/date={start:%Y-%m-%d}/{partition_hash(token)}-{micros}.parquet"


def _json(value: Any) -> str:
    # The client hands JSON columns over as dict-like objects; sort keys so the
    # same mod always lands as the same text (and the same mod_bytes).
    return json.dumps(dict(value or {}), sort_keys=True, separators=(",", ":"), default=str)


def _row_uuid(token: str, record: DataChangeRecord, mod_index: int) -> str:
    key = "|".join(
        (
            token,
            record.commit_timestamp.isoformat(),
            record.server_transaction_id,
            record.record_sequence,
            str(mod_index),
        )
    )
    return str(uuid.uuid5(_UUID_NAMESPACE, key))


def _record_rows(stream_name: str, token: str, record: DataChangeRecord, read_at: datetime):
    commit = record.commit_timestamp.astimezone(UTC)
    for index, mod in enumerate(record.mods):
        keys, new, old = _json(mod.keys), _json(mod.new_values), _json(mod.old_values)
        yield {
            "uuid": _row_uuid(token, record, index),
            "stream_name": stream_name,
            "read_method": READ_METHOD,
            "object": record.table_name,
            "read_timestamp": read_at,
            "source_timestamp": commit,
            "sort_keys": [
                commit.isoformat(),
                record.server_transaction_id,
                record.record_sequence,
                str(index),
            ],
            "partition_token": token,
            "commit_timestamp": commit,
            "server_transaction_id": record.server_transaction_id,
            "record_sequence": record.record_sequence,
            "table_name": record.table_name,
            "mod_index": index,
            "mod_type": record.mod_type,
            "value_capture_type": record.value_capture_type,
            "keys": keys,
            "new_values": new,
            "old_values": old,
            "number_of_records_in_transaction": record.number_of_records_in_transaction,
            "number_of_partitions_in_transaction": record.number_of_partitions_in_transaction,
            "transaction_tag": record.transaction_tag,
            "is_system_transaction": record.is_system_transaction,
            "mod_bytes": len(keys.encode()) + len(new.encode()) + len(old.encode()),
        }


def build_table(
    stream_name: str, token: str, records: Iterable[DataChangeRecord], read_at: datetime
) -> pa.Table:
    """Return the landing rows (one per mod) of a window's data change records."""
    rows = [row for record in records for row in _record_rows(stream_name, token, record, read_at)]
    columns = {field.name: [row[field.name] for row in rows] for field in LANDING_SCHEMA}
    return pa.table(columns, schema=LANDING_SCHEMA)


def resolve(uri: str) -> tuple[pafs.FileSystem | None, str]:
    """Return (filesystem, root path); the filesystem is None for a local directory."""
    if "://" not in uri or uri.startswith("file://"):
        return None, uri.removeprefix("file://")
    filesystem, root = pafs.FileSystem.from_uri(uri)
    return filesystem, root


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_local(table: pa.Table, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # Unique per writer, so two readers of the same window (a lost lease) never
    # write into each other's temporary file; the last rename wins with equal content.
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "wb") as handle:
            pq.write_table(table, handle, compression="zstd")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(target.parent)


def _write_remote(table: pa.Table, filesystem: pafs.FileSystem, target: str) -> None:
    # Object stores make a finished upload visible atomically; write then move where
    # the filesystem supports it, so an interrupted upload never shows the final name.
    filesystem.create_dir(target.rsplit("/", 1)[0], recursive=True)
    tmp = f"{target}.{uuid.uuid4().hex[:8]}.tmp"
    with filesystem.open_output_stream(tmp) as stream:
        pq.write_table(table, stream, compression="zstd")
    try:
        filesystem.move(tmp, target)
    except (NotImplementedError, OSError):
        filesystem.copy_file(tmp, target)
        filesystem.delete_file(tmp)


def write_table(
    landing_uri: str, stream_name: str, token: str, window_start: datetime, table: pa.Table
) -> str:
    """Write a window's landing rows durably and return the file's path."""
    filesystem, root = resolve(landing_uri)
    relative = window_path(stream_name, token, window_start)
    if filesystem is None:
        target = Path(root) / relative
        _write_local(table, target)
        return str(target)
    target = f"{root.rstrip('/')}/{relative}"
    _write_remote(table, filesystem, target)
    return target


def write_window(
    landing_uri: str,
    stream_name: str,
    token: str,
    window_start: datetime,
    records: Iterable[DataChangeRecord],
    read_at: datetime | None = None,
) -> str | None:
    """Land a window's records durably; return the file's path, or None if there were none."""
    table = build_table(stream_name, token, records, read_at or datetime.now(UTC))
    if table.num_rows == 0:
        return None
    return write_table(landing_uri, stream_name, token, window_start, table)


def read_landing(landing_uri: str, stream_name: str | None = None) -> pa.Table:
    """Return every landed row (of one stream, or all) as one table; for tests and tools."""
    filesystem, root = resolve(landing_uri)
    base = f"{root.rstrip('/')}/stream={stream_name}" if stream_name else root
    if filesystem is None and not Path(base).exists():
        return LANDING_SCHEMA.empty_table()
    selector = pafs.FileSelector(base, recursive=True, allow_not_found=True)
    fs_ = filesystem or pafs.LocalFileSystem()
    paths = sorted(info.path for info in fs_.get_file_info(selector) if info.path.endswith(".parquet"))
    tables = [pq.read_table(path, filesystem=fs_, schema=LANDING_SCHEMA) for path in paths]
    return pa.concat_tables(tables) if tables else LANDING_SCHEMA.empty_table()
