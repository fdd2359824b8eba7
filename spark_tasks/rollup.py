"""One pass over the records for every record-level sum: the record roll-up.

The throughput, partition activity, cost tables and the job's totals all sum the
same records, each by its own keys. Scanning the records once per table was five
scans and ten aggregates at 10M mods, and every one of them was new generated code
that the JIT's C2 compiler had to compile while the two task threads waited for the
cores (~38 CPU-s of C2 in a 10M run: docs/benchmarks.md, issue 22). Their keys all
nest in one cell, a stream's table, minute and partition, so the records are summed
once per cell (a few thousand rows at 10M mods) and each table adds up cells.

Distinct transactions do not add up across cells: they are counted in one pass of
their own, per minute group and per partition group at once, and carried on each cell.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_tasks.landing import to_records

CELL = ("stream_name", "table_name", "minute", "partition_token")
MINUTE_GROUP = ("stream_name", "table_name", "minute")
PARTITION_GROUP = ("stream_name", "partition_token")
# Bytes a change record carries beside its mods: commit timestamp, two counts, flags.
RECORD_FIXED_BYTES = 8 + 8 + 8 + 1


def is_rollup(df: DataFrame) -> bool:
    """Return whether ``df`` is ``build_record_rollup`` output rather than mods or records."""
    return "partition_transactions" in df.columns


def envelope_bytes() -> F.Column:
    """Return a record's bytes beside its mods: table, transaction id, sequence, tag and fixed fields."""
    text = ("table_name", "server_transaction_id", "record_sequence", "transaction_tag")
    return sum((F.length(c) for c in text), F.lit(RECORD_FIXED_BYTES))


def _group_hash(kind: str, keys: tuple[str, ...]) -> F.Column:
    # the kind keeps a minute group's hash apart from a partition group's in one column
    return F.xxhash64(F.lit(kind), *keys)


def transaction_counts(records: DataFrame) -> DataFrame:
    """Return ``_group`` (a 64-bit hash of a minute or a partition group) and its distinct transactions.

    Each record yields its minute group and its partition group, each paired with the
    64-bit hash of its transaction id, in one distinct and one count (the id's text is
    read and hashed once, not once per table). The hash is not written with the
    records: a wider records file is split differently when read back, which changed
    the latency percentiles' approximations (docs/benchmarks.md). Counting distinct strings
    means hashing millions of variable-length keys; fixed-width hashes aggregate about
    twice as fast (measured at 10M mods). Two transactions of one group would have to
    share a 64-bit hash to be counted once: at 10,000 transactions in a group that is
    about 3 in 10^12.
    """
    tx = F.xxhash64("server_transaction_id")
    groups = F.array(_group_hash("minute", MINUTE_GROUP), _group_hash("partition", PARTITION_GROUP))
    # Shuffled before any dedupe: a task's pairs are mostly distinct (a transaction's
    # records are spread over the record files), so a map-side distinct held millions
    # of keys for little gain; this step took 17-20 s at 10M mods that way, 12 s so.
    pairs = records.select(F.explode(groups).alias("_group"), tx.alias("_tx"))
    pairs = pairs.repartition("_group", "_tx").distinct()
    return pairs.groupBy("_group").agg(F.count(F.lit(1)).alias("transactions"))


def build_record_rollup(df: DataFrame) -> DataFrame:
    """Return per stream, table, minute and partition the records' sums and their groups' transactions.

    Columns: the cell's keys; records, mods, inserts, updates, deletes, bytes,
    envelope_bytes, first_commit, last_commit, system_records, system_mods, deliveries
    (null unless the records carry ``dedupe``'s count); ``minute_transactions`` and
    ``partition_transactions``, the distinct transactions of the cell's (stream,
    table, minute) and of its (stream, partition), the same on every cell of a group.
    ``df`` may be mods, their records, or this function's own output (returned as is).
    """
    if is_rollup(df):
        return df
    records = to_records(df)
    system = F.col("is_system_transaction")
    deliveries = F.col("deliveries") if "deliveries" in records.columns else F.lit(None).cast("long")
    cells = records.groupBy(*CELL).agg(
        F.count(F.lit(1)).alias("records"),
        *(F.sum(c).alias(c) for c in ("mods", "inserts", "updates", "deletes", "bytes")),
        F.sum(envelope_bytes()).alias("envelope_bytes"),
        F.min("commit_timestamp").alias("first_commit"),
        F.max("commit_timestamp").alias("last_commit"),
        F.sum(F.when(system, 1).otherwise(0)).alias("system_records"),
        F.sum(F.when(system, F.col("mods")).otherwise(0)).alias("system_mods"),
        F.sum(deliveries).alias("deliveries"),
    )
    counts = transaction_counts(records)
    minute = counts.select(F.col("_group").alias("_m"), F.col("transactions").alias("minute_transactions"))
    part = counts.select(F.col("_group").alias("_p"), F.col("transactions").alias("partition_transactions"))
    return (
        cells.withColumn("_m", _group_hash("minute", MINUTE_GROUP))
        .withColumn("_p", _group_hash("partition", PARTITION_GROUP))
        .join(minute, "_m")
        .join(part, "_p")
        .drop("_m", "_p")
    )
