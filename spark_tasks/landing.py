"""Read the landing zone into Spark, deduplicate it and roll mods up into change records.

The pipeline delivers at least once: a re-read window lands the same mods again with a
later read timestamp. ``dedupe`` keeps one row per DEDUPE_KEY and the earliest read,
so latency is what the stream had, not what a crash added.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from partitions.sources.landing import DEDUPE_KEY, LANDING_SCHEMA, legacy_stream_dir, stream_dir

RECORD_KEY = DEDUPE_KEY[:4]  # a data change record: partition, commit, transaction, sequence
# The columns the reports read; the JSON values and the envelope stay on disk.
REPORT_COLUMNS = (
    *DEDUPE_KEY,
    "stream_name",
    "table_name",
    "read_timestamp",
    "mod_type",
    "mod_bytes",
    "number_of_records_in_transaction",
    "number_of_partitions_in_transaction",
    "transaction_tag",
    "is_system_transaction",
)
# Fields a re-delivered mod repeats verbatim (everything but the envelope's uuid and
# read timestamp): safe to group on while deduplicating.
SAME_IN_EVERY_DELIVERY = frozenset(
    ("stream_name", "read_method", "object", "table_name", "mod_type", "value_capture_type")
    + ("transaction_tag", "keys", "new_values", "old_values")
)
# Column metadata key: the column holds this one value on every row (read_mods' stream name).
CONSTANT = "cdcweb.constant"
# The mod types as small ints: dedupe keeps one per mod without grouping on the text.
MOD_TYPE_CODES = {"INSERT": 1, "UPDATE": 2, "DELETE": 3}
_ARROW_TO_SPARK = {
    pa.string(): T.StringType(),
    pa.int32(): T.IntegerType(),
    pa.int64(): T.LongType(),
    pa.bool_(): T.BooleanType(),
    pa.list_(pa.string()): T.ArrayType(T.StringType()),
}


class InputError(Exception):
    """The job's input cannot be read; the message is shown to the operator as is."""


@dataclass(frozen=True)
class InputFiles:
    """The landed Parquet files a report reads, and their total size."""

    paths: list[str]
    bytes: int


def spark_schema() -> T.StructType:
    """Return LANDING_SCHEMA as a Spark schema (timestamps are UTC instants)."""

    def spark_type(t: pa.DataType) -> T.DataType:
        return T.TimestampType() if pa.types.is_timestamp(t) else _ARROW_TO_SPARK[t]

    return T.StructType([T.StructField(f.name, spark_type(f.type), True) for f in LANDING_SCHEMA])


def stream_dirs(stream_id: int, legacy_name: str = "") -> list[str]:
    """Return the directories of one stream's files: stream_id=<id>, and stream=<name> if it landed there."""
    return [stream_dir(stream_id)] + ([legacy_stream_dir(legacy_name)] if legacy_name else [])


def list_input_files(spark: SparkSession, uri: str, dirs: list[str], since=None, until=None) -> InputFiles:
    """List the Parquet files under the stream's directories whose date can hold commits in [since, until).

    Directories are dated by the pipeline's window, so a day's margin on each side keeps
    a window that straddles midnight; the exact range is filtered on the rows.
    """
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    root = jvm.org.apache.hadoop.fs.Path(uri)
    fs = root.getFileSystem(conf)
    if not fs.exists(root):
        raise InputError(f"input path {uri} does not exist")
    statuses = []
    for relative in dirs:
        pattern = jvm.org.apache.hadoop.fs.Path(f"{uri.rstrip('/')}/{relative}/date=*/*.parquet")
        statuses += list(fs.globStatus(pattern) or [])
    lo = since.date() - timedelta(days=1) if since else date.min
    hi = until.date() + timedelta(days=1) if until else date.max
    paths, size = [], 0
    for status in statuses:
        day = date.fromisoformat(status.getPath().getParent().getName().removeprefix("date="))
        if lo <= day <= hi:
            paths.append(status.getPath().toString())
            size += status.getLen()
    return InputFiles(sorted(paths), size)


def read_mods(spark: SparkSession, paths: list[str], since=None, until=None, name: str = "") -> DataFrame:
    """Return the landed mods committed in [since, until), with the report columns only.

    With a name, every row carries it as its stream_name: the stream may have been renamed
    while it landed them, and a report is of one stream, under its name of today.
    """
    schema = spark_schema()
    df = spark.read.schema(schema).parquet(*paths) if paths else spark.createDataFrame([], schema)
    if name:
        # the metadata tells dedupe the column is one value: not worth hashing per row
        df = df.withColumn("stream_name", F.lit(name).alias("stream_name", metadata={CONSTANT: name}))
    if since is not None:
        df = df.where(F.col("commit_timestamp") >= F.lit(since))
    if until is not None:
        df = df.where(F.col("commit_timestamp") < F.lit(until))
    return df.select(*REPORT_COLUMNS)


def dedupe(mods: DataFrame) -> DataFrame:
    """Drop mods landed more than once (same DEDUPE_KEY), keeping the earliest read.

    Rows are first clustered by the record key, a prefix of DEDUPE_KEY, so that
    ``to_records`` after this needs no second shuffle: the whole dedupe and roll-up is
    one shuffle of the narrow columns. Text fields that a re-delivery repeats verbatim
    are grouped on rather than aggregated: Spark's hash aggregate cannot hold strings in
    its buffers and would fall back to sorting every row. Two of them are kept out of
    the grouping key, which made the dedupe and roll-up about a third cheaper at 10M
    mods (docs/benchmarks.md, issue 22): the mod type travels as a small int (``first``
    of an int stays hash-based; a type other than INSERT, UPDATE and DELETE, such as
    UPSERT, is still grouped on as text) and is turned back into its text after, and a stream
    name that ``read_mods`` set to one value is put back as that value. The extra
    ``deliveries`` column counts how often each mod landed, so the job's totals need no
    second scan.
    """
    constant = mods.schema["stream_name"].metadata.get(CONSTANT) if "stream_name" in mods.columns else None
    apart = ("mod_type", "stream_name") if constant is not None else ("mod_type",)
    same = [c for c in mods.columns if c in SAME_IN_EVERY_DELIVERY and c not in apart]
    others = [c for c in mods.columns if c not in (*DEDUPE_KEY, *same, *apart, "read_timestamp")]
    aggs = [
        F.min("read_timestamp").alias("read_timestamp"),
        *(F.first(c).alias(c) for c in others),
        *([F.first(_mod_type_code()).alias("_mod_type")] if "mod_type" in mods.columns else []),
        F.count(F.lit(1)).alias("deliveries"),
    ]
    restore = {"mod_type": _mod_type_text(F.col("_mod_type"))}
    if constant is not None:
        restore["stream_name"] = F.lit(constant).alias("stream_name", metadata={CONSTANT: constant})
    keys = [*DEDUPE_KEY, *same]
    if "mod_type" in mods.columns:  # a type other than the coded ones is grouped on as text
        known = F.col("mod_type").isin(*MOD_TYPE_CODES)
        keys.append(F.when(~known, F.col("mod_type")).alias("_other_type"))
        restore["mod_type"] = F.coalesce(F.col("_other_type"), restore["mod_type"]).alias("mod_type")
    deduped = mods.repartition(*RECORD_KEY).groupBy(*keys).agg(*aggs)
    return deduped.select(*(restore.get(c, F.col(c)) for c in mods.columns), "deliveries")


def _mod_type_code() -> F.Column:
    """Return the mod type as its MOD_TYPE_CODES int; 0 for any other text (kept apart)."""
    code = F.lit(0)
    for text, number in MOD_TYPE_CODES.items():
        code = F.when(F.col("mod_type") == text, number).otherwise(code)
    return code


def _mod_type_text(code: F.Column) -> F.Column:
    """Return the text of a ``_mod_type_code``; null for 0 (a type kept as text)."""
    text = F.lit(None).cast("string")
    for name, number in MOD_TYPE_CODES.items():
        text = F.when(code == number, name).otherwise(text)
    return text


def to_records(mods: DataFrame) -> DataFrame:
    """Return one row per data change record of deduplicated mods, with its mods counted.

    Columns: the record key, stream_name, table_name, minute (of the commit),
    read_timestamp, mods, inserts, updates, deletes, bytes, the transaction's declared
    records and partitions, transaction_tag, is_system_transaction, and the mods'
    ``deliveries`` when ``dedupe`` counted them. Records are returned as they are, so
    a builder given records (the job reads them back from its work directory) skips
    the roll-up.
    """
    if is_records(mods):
        return mods
    is_type = lambda t: F.sum(F.when(F.col("mod_type") == t, 1).otherwise(0))  # noqa: E731
    # A record's stream, table and tag are the same on all its mods: grouping on them
    # keeps the aggregate hash-based (see dedupe).
    minute = F.date_trunc("minute", F.col("commit_timestamp")).alias("minute")
    return mods.groupBy(*RECORD_KEY, "stream_name", "table_name", "transaction_tag", minute).agg(
        F.min("read_timestamp").alias("read_timestamp"),
        F.count(F.lit(1)).alias("mods"),
        is_type("INSERT").alias("inserts"),
        is_type("UPDATE").alias("updates"),
        is_type("DELETE").alias("deletes"),
        F.sum("mod_bytes").alias("bytes"),
        F.first("number_of_records_in_transaction").alias("tx_records"),
        F.first("number_of_partitions_in_transaction").alias("tx_partitions"),
        F.first("is_system_transaction").alias("is_system_transaction"),
        *([F.sum("deliveries").alias("deliveries")] if "deliveries" in mods.columns else []),
    )


def is_records(df: DataFrame) -> bool:
    """Return whether ``df`` is already ``to_records`` output rather than mods."""
    return "mods" in df.columns and "mod_index" not in df.columns


def parse_time(text: str | None) -> datetime | None:
    """Parse an ISO 8601 instant (``Z`` allowed); a naive one is taken as UTC."""
    if not text:
        return None
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
