"""Throughput: records, mods by type, bytes and transactions per stream, table and minute."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_tasks.landing import to_records

_SUMS = ("records", "mods", "inserts", "updates", "deletes", "bytes")


def distinct_transactions(records: DataFrame, keys: tuple[str, ...]) -> DataFrame:
    """Return ``_group`` (a 64-bit hash of ``keys``) and its count of distinct transactions.

    Counting distinct strings means hashing millions of variable-length keys; two
    64-bit hashes make the keys fixed-width, which Spark aggregates about twice as
    fast (measured at 10M mods). Two transactions of one group would have to share a
    64-bit hash to be counted once: at 10,000 transactions in a group that is about
    3 in 10^12. Join the result back on ``F.xxhash64(*keys)``.
    """
    pairs = records.select(
        F.xxhash64(*keys).alias("_group"), F.xxhash64("server_transaction_id").alias("_tx")
    ).distinct()
    return pairs.groupBy("_group").agg(F.count(F.lit(1)).alias("transactions"))


def _with_transactions(records: DataFrame, sums: DataFrame, keys: tuple[str, ...]) -> DataFrame:
    counted = distinct_transactions(records, keys)
    return sums.withColumn("_group", F.xxhash64(*keys)).join(counted, "_group").drop("_group")


def build_throughput(df: DataFrame) -> DataFrame:
    """Return per stream, table and minute: records, mods by type, bytes, transactions.

    ``df`` is the deduplicated mods (or their records). Transactions count distinct
    server transaction ids; a transaction that touches two tables counts once in each.
    """
    keys = ("stream_name", "table_name", "minute")
    records = to_records(df)
    sums = records.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("records"), *(F.sum(c).alias(c) for c in _SUMS[1:])
    )
    return _with_transactions(records, sums, keys).orderBy("minute", "table_name")


def build_partition_activity(df: DataFrame) -> DataFrame:
    """Return per stream and partition: records, mods, bytes, transactions, first/last commit.

    The first and last commit are the partition's lifetime as observed in the mods.
    ``df`` may be mods, their records, or this function's own output (returned as is).
    """
    if "observed_seconds" in df.columns:
        return df
    keys = ("stream_name", "partition_token")
    records = to_records(df)
    sums = records.groupBy(*keys).agg(
        *(F.sum(c).alias(c) for c in ("mods", "bytes")),
        F.count(F.lit(1)).alias("records"),
        F.min("commit_timestamp").alias("first_commit"),
        F.max("commit_timestamp").alias("last_commit"),
    )
    span = F.unix_micros(F.col("last_commit")) - F.unix_micros(F.col("first_commit"))
    return (
        _with_transactions(records, sums, keys)
        .select(*keys, "records", "mods", "bytes", "transactions", "first_commit", "last_commit")
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
