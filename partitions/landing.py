"""Write data change records to the landing zone as Parquet files.

One row per mod in the Datastream-style envelope of ``landing_schema``. A file is named
after the partition, the watermark its records start from and the read attempt that
wrote it: a late writer whose lease lapsed never replaces the file of the reader that
took over, and the report job dedupes what a re-read lands twice. Writes go to a
temporary file that is fsynced and renamed into place, so a reader never sees half a
file. ``Segment`` lets a read at the live edge checkpoint every few seconds without a
file per checkpoint: each checkpoint rewrites the read's current file whole, with the
new records added, until it holds ``SEGMENT_ROWS`` rows. No Django here.
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

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from .changestream.records import DataChangeRecord
from .landing_schema import LANDING_SCHEMA, READ_METHOD

# Fixed namespace: the uuid of a landed row depends only on its dedupe key.
UUID_NAMESPACE = uuid.UUID("7c1f3f0e-5b2a-4d3c-9a77-0c0dcdc0a001")


def partition_hash(token: str) -> str:
    """Return a short, stable, file-name-safe digest of a partition token."""
    return hashlib.sha256(token.encode()).hexdigest()[:20]


# A segment is rewritten whole at each checkpoint: past this many rows the next records
# start a new file, so a busy live partition rewrites at most this much per checkpoint
# (about 5 MB of Parquet, 50 ms) and a window still lands in few files.
SEGMENT_ROWS = 20_000


def window_path(stream_name: str, token: str, window_start: datetime, attempt: str = "") -> str:
    """Return the file's path relative to the landing zone root (one per partition, start, attempt)."""
    start = window_start.astimezone(UTC)
    micros = int(start.timestamp()) * 1_000_000 + start.microsecond
    suffix = f"-{attempt}" if attempt else ""
    return f"stream={stream_name}/date={start:%Y-%m-%d}/{partition_hash(token)}-{micros}{suffix}.parquet"


def attempt_name(owner: str) -> str:
    """Return a short, file-name-safe name of a read attempt (a lease owner)."""
    return hashlib.sha256(owner.encode()).hexdigest()[:12]


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
    landing_uri: str, stream_name: str, token: str, window_start: datetime, table: pa.Table, attempt: str = ""
) -> str:
    """Write landing rows durably (replacing a file of the same name) and return the file's path."""
    filesystem, root = resolve(landing_uri)
    relative = window_path(stream_name, token, window_start, attempt)
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


class Segment:
    """The landing file of one read attempt that grows with each checkpoint.

    ``land(table)`` adds a checkpoint's rows and rewrites the file with every row the
    segment holds, durably, before it returns; the caller may then checkpoint a
    watermark up to the newest of them. A full segment is closed and the next rows
    start a new file named after the watermark they start from.
    """

    def __init__(self, landing_uri: str, stream_name: str, token: str, attempt: str):
        self.landing_uri, self.stream_name = landing_uri, stream_name
        self.token, self.attempt = token, attempt
        self.files: list[str] = []
        self._start: datetime | None = None
        self._tables: list[pa.Table] = []

    def land(self, start: datetime, table: pa.Table) -> str | None:
        """Add rows (read from watermark ``start`` on) and rewrite the file; return its path."""
        if table.num_rows == 0:
            return None
        if self._start is None:
            self._start, self._tables = start, []
        self._tables.append(table)
        whole = pa.concat_tables(self._tables) if len(self._tables) > 1 else table
        path = write_table(self.landing_uri, self.stream_name, self.token, self._start, whole, self.attempt)
        if not self.files or self.files[-1] != path:
            self.files.append(path)
        if whole.num_rows >= SEGMENT_ROWS:
            self._start, self._tables = None, []
        return path


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
