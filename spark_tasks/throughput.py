"""Throughput: records, mods by type, bytes and transactions per stream, table and minute.

Both tables here add up the record roll-up's cells (spark_tasks.rollup): the records
are summed once for every record-level table, not scanned again per table.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_tasks.rollup import MINUTE_GROUP, PARTITION_GROUP, build_record_rollup

_SUMS = ("records", "mods", "inserts", "updates", "deletes", "bytes")


def build_throughput(df: DataFrame) -> DataFrame:
    """Return per stream, table and minute: records, mods by type, bytes, transactions.

    ``df`` is the deduplicated mods, their records or their roll-up. Transactions count
    distinct server transaction ids; a transaction that touches two tables counts once
    in each.
    """
    cells = build_record_rollup(df)
    return (
        cells.groupBy(*MINUTE_GROUP)
        .agg(*(F.sum(c).alias(c) for c in _SUMS), F.max("minute_transactions").alias("transactions"))
        .orderBy("minute", "table_name")
    )


def build_partition_activity(df: DataFrame) -> DataFrame:
    """Return per stream and partition: records, mods, bytes, transactions, first/last commit.

    The first and last commit are the partition's lifetime as observed in the mods.
    ``df`` may be mods, their records, their roll-up, or this function's own output
    (returned as is).
    """
    if "observed_seconds" in df.columns:
        return df
    cells = build_record_rollup(df)
    span = F.unix_micros(F.col("last_commit")) - F.unix_micros(F.col("first_commit"))
    return (
        cells.groupBy(*PARTITION_GROUP)
        .agg(
            *(F.sum(c).alias(c) for c in ("records", "mods", "bytes")),
            F.max("partition_transactions").alias("transactions"),
            F.min("first_commit").alias("first_commit"),
            F.max("last_commit").alias("last_commit"),
        )
        .withColumn("observed_seconds", span / 1e6)
        .orderBy("first_commit", "partition_token")
    )


def build_busiest_partitions(df: DataFrame, top: int = 20) -> DataFrame:
    """Return the ``top`` partitions by mods (then bytes), with their share of all mods."""
    activity = build_partition_activity(df)
    total = activity.agg(F.sum("mods").alias("all_mods"))
    return (
        activity.crossJoin(total)
        .withColumn("share_of_mods", F.col("mods") / F.col("all_mods"))
        .drop("all_mods")
        .orderBy(F.desc("mods"), F.desc("bytes"), "partition_token")
        .limit(top)
    )
