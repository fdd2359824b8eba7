"""Throughput: records, mods by type, bytes and transactions per stream, table and minute."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_tasks.landing import to_records

_SUMS = ("records", "mods", "inserts", "updates", "deletes", "bytes")


def build_throughput(df: DataFrame) -> DataFrame:
    """Return per stream, table and minute: records, mods by type, bytes, transactions.

    ``df`` is the deduplicated mods. Transactions count distinct server transaction
    ids; a transaction that touches two tables counts once in each.
    """
    per_tx = (
        to_records(df)
        .groupBy("stream_name", "table_name", "minute", "server_transaction_id")
        .agg(F.count(F.lit(1)).alias("records"), *(F.sum(c).alias(c) for c in _SUMS[1:]))
    )
    return (
        per_tx.groupBy("stream_name", "table_name", "minute")
        .agg(*(F.sum(c).alias(c) for c in _SUMS), F.count(F.lit(1)).alias("transactions"))
        .orderBy("minute", "table_name")
    )


def build_partition_activity(df: DataFrame) -> DataFrame:
    """Return per stream and partition: records, mods, bytes, transactions, first/last commit.

    The first and last commit are the partition's lifetime as observed in the mods.
    """
    per_tx = (
        to_records(df)
        .groupBy("stream_name", "partition_token", "server_transaction_id")
        .agg(
            F.count(F.lit(1)).alias("records"),
            F.sum("mods").alias("mods"),
            F.sum("bytes").alias("bytes"),
            F.min("commit_timestamp").alias("first_commit"),
            F.max("commit_timestamp").alias("last_commit"),
        )
    )
    span = F.unix_micros(F.col("last_commit")) - F.unix_micros(F.col("first_commit"))
    return (
        per_tx.groupBy("stream_name", "partition_token")
        .agg(
            *(F.sum(c).alias(c) for c in ("records", "mods", "bytes")),
            F.count(F.lit(1)).alias("transactions"),
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
