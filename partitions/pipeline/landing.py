"""Write landing rows to the landing zone as Parquet files, durably.

Each kind builds its rows (one per mod, in the envelope of ``partitions.sources.landing``);
this writes them. A file is named
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
import os
import uuid
from datetime import UTC, date, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from partitions.sources.landing import LANDING_SCHEMA, legacy_stream_dir, stream_dir

# Live reads land from hundreds of threads at once, and pyarrow's default pool (mimalloc
# or jemalloc) keeps memory per thread: a reader following 500 live partitions held
# 1.3 GiB against 0.4 GiB with the C library's allocator (docs/benchmarks.md, issue 22).
# ARROW_DEFAULT_MEMORY_POOL, when set, still chooses.
if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
    pa.set_memory_pool(pa.system_memory_pool())


def partition_hash(token: str) -> str:
    """Return a short, stable, file-name-safe digest of a partition token."""
    return hashlib.sha256(token.encode()).hexdigest()[:20]


# A segment is rewritten whole at each checkpoint: past this many rows the next records
# start a new file, so a busy live partition rewrites at most this much per checkpoint
# (about 5 MB of Parquet, 50 ms) and a window still lands in few files.
SEGMENT_ROWS = 20_000


def window_path(stream_id: int, token: str, window_start: datetime, attempt: str = "") -> str:
    """Return the file's path relative to the landing zone root (one per partition, start, attempt)."""
    start = window_start.astimezone(UTC)
    micros = int(start.timestamp()) * 1_000_000 + start.microsecond
    suffix = f"-{attempt}" if attempt else ""
    name = f"{partition_hash(token)}-{micros}{suffix}.parquet"
    return f"{stream_dir(stream_id)}/date={start:%Y-%m-%d}/{name}"


def stream_dirs(stream_id: int, legacy_name: str = "") -> list[str]:
    """Return the directories (relative to the root) of a stream's files: by id, and by its landing name."""
    return [stream_dir(stream_id)] + ([legacy_stream_dir(legacy_name)] if legacy_name else [])


def attempt_name(owner: str) -> str:
    """Return a short, file-name-safe name of a read attempt (a lease owner)."""
    return hashlib.sha256(owner.encode()).hexdigest()[:12]


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
    landing_uri: str, stream_id: int, token: str, window_start: datetime, table: pa.Table, attempt: str = ""
) -> str:
    """Write landing rows durably (replacing a file of the same name) and return the file's path."""
    filesystem, root = resolve(landing_uri)
    relative = window_path(stream_id, token, window_start, attempt)
    if filesystem is None:
        target = Path(root) / relative
        _write_local(table, target)
        return str(target)
    target = f"{root.rstrip('/')}/{relative}"
    _write_remote(table, filesystem, target)
    return target


class Segment:
    """The landing file of one read attempt that grows with each checkpoint.

    ``land(table)`` adds a checkpoint's rows and rewrites the file with every row the
    segment holds, durably, before it returns; the caller may then checkpoint a
    watermark up to the newest of them. A full segment is closed and the next rows
    start a new file named after the watermark they start from.
    """

    def __init__(self, landing_uri: str, stream_id: int, token: str, attempt: str):
        self.landing_uri, self.stream_id = landing_uri, stream_id
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
        path = write_table(self.landing_uri, self.stream_id, self.token, self._start, whole, self.attempt)
        if not self.files or self.files[-1] != path:
            self.files.append(path)
        if whole.num_rows >= SEGMENT_ROWS:
            self._start, self._tables = None, []
        return path


def landed_files(landing_uri: str, relative_dirs: list[str]) -> tuple[pafs.FileSystem, list[str]]:
    """Return the filesystem and the Parquet files under some directories of the landing zone."""
    filesystem, root = resolve(landing_uri)
    fs_ = filesystem or pafs.LocalFileSystem()
    paths = []
    for relative in relative_dirs:
        selector = pafs.FileSelector(f"{root.rstrip('/')}/{relative}", recursive=True, allow_not_found=True)
        paths += [info.path for info in fs_.get_file_info(selector) if info.path.endswith(".parquet")]
    return fs_, sorted(paths)


def read_landing(landing_uri: str, stream_id: int | None = None, legacy_name: str = "") -> pa.Table:
    """Return every landed row (of one stream, or of all) as one table; for tests and tools."""
    filesystem, root = resolve(landing_uri)
    if filesystem is None and not Path(root).exists():
        return LANDING_SCHEMA.empty_table()
    fs_, paths = landed_files(landing_uri, [""] if stream_id is None else stream_dirs(stream_id, legacy_name))
    tables = [pq.read_table(path, filesystem=fs_, schema=LANDING_SCHEMA) for path in paths]
    return pa.concat_tables(tables) if tables else LANDING_SCHEMA.empty_table()


def delete_stream_files(landing_uri: str, stream_id: int, legacy_name: str = "") -> int:
    """Delete every file a stream landed (its directories too); return how many files there were."""
    filesystem, root = resolve(landing_uri)
    fs_, paths = landed_files(landing_uri, stream_dirs(stream_id, legacy_name))
    for relative in stream_dirs(stream_id, legacy_name):
        base = f"{root.rstrip('/')}/{relative}"
        if fs_.get_file_info(base).type != pafs.FileType.NotFound:
            fs_.delete_dir(base)
    return len(paths)


def adopt_legacy(landing_uri: str, stream_id: int, legacy_name: str) -> int:
    """Move a stream's files from stream=<name>/ to stream_id=<id>/ (same date folders); return how many.

    A file whose name is taken there already (it cannot be the same read's) keeps both, the
    moved one suffixed "-legacy". The emptied stream=<name>/ is removed.
    """
    filesystem, root = resolve(landing_uri)
    fs_, paths = landed_files(landing_uri, [legacy_stream_dir(legacy_name)])
    base = root.rstrip("/")
    old, new = f"{base}/{legacy_stream_dir(legacy_name)}/", f"{base}/{stream_dir(stream_id)}/"
    for path in paths:
        target = new + path.removeprefix(old)
        if fs_.get_file_info(target).type != pafs.FileType.NotFound:
            target = target.removesuffix(".parquet") + "-legacy.parquet"
        fs_.create_dir(target.rsplit("/", 1)[0], recursive=True)
        fs_.move(path, target)
    if fs_.get_file_info(old.rstrip("/")).type != pafs.FileType.NotFound:
        fs_.delete_dir(old.rstrip("/"))
    return len(paths)


def delete_days_before(landing_uri: str, day: date) -> dict[str, int]:
    """Delete every stream's date=YYYY-MM-DD folders of days before `day`; return {folder: files deleted}."""
    filesystem, root = resolve(landing_uri)
    fs_ = filesystem or pafs.LocalFileSystem()
    base = root.rstrip("/")
    if fs_.get_file_info(base).type == pafs.FileType.NotFound:
        return {}
    deleted = {}
    for stream in fs_.get_file_info(pafs.FileSelector(base)):
        if stream.type != pafs.FileType.Directory or not stream.base_name.startswith("stream"):
            continue
        for folder in fs_.get_file_info(pafs.FileSelector(stream.path)):
            if folder.type == pafs.FileType.Directory and _day_of(folder.base_name) < day:
                files = fs_.get_file_info(pafs.FileSelector(folder.path, recursive=True))
                fs_.delete_dir(folder.path)
                deleted[folder.path] = sum(info.type == pafs.FileType.File for info in files)
    return deleted


def _day_of(folder_name: str) -> date:
    """Return the day of a date=YYYY-MM-DD folder (date.max for any other folder: never deleted)."""
    try:
        return date.fromisoformat(folder_name.removeprefix("date="))
    except ValueError:
        return date.max
