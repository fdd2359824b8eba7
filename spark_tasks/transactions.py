"""Transaction shape: records and partitions per transaction, spanning share, top tags.

Spanner declares on every record how many records and partitions its transaction has
(``number_of_records_in_transaction``, ``number_of_partitions_in_transaction``); the
distributions use those. What actually landed is counted beside them: a transaction
whose landed records fall short of the declared count is reported as incomplete.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_tasks.landing import to_records

MEASURES = ("records", "partitions", "mods")


def build_transactions(df: DataFrame) -> DataFrame:
    """Return one row per stream and transaction: declared and landed counts, tag, tables.

    The records are clustered by transaction once, so both aggregates run in one stage
    after one shuffle. The tag is a property of the transaction, the same on all its
    records: grouping on it keeps the aggregates hash-based (a ``first`` of a string
    would make Spark sort every record, twice). ``df`` may be mods, their records, or
    this function's own output, which is returned as it is.
    """
    if "landed_records" in df.columns:  # transactions already (the job's work directory)
        return df
    tx = ("stream_name", "server_transaction_id")
    per_partition = (
        to_records(df)
        .repartition(*tx)
        .groupBy(*tx, "transaction_tag", "partition_token")
        .agg(
            F.count(F.lit(1)).alias("landed_records"),
            F.sum("mods").alias("mods"),
            F.sum("bytes").alias("bytes"),
            F.max("tx_records").alias("records"),
            F.max("tx_partitions").alias("partitions"),
            F.max(F.col("is_system_transaction").cast("int")).alias("system"),
        )
    )
    return (
        per_partition.groupBy(*tx, "transaction_tag")
        .agg(
            F.max("records").alias("records"),
            F.max("partitions").alias("partitions"),
            F.sum("landed_records").alias("landed_records"),
            F.count(F.lit(1)).alias("landed_partitions"),
            F.sum("mods").alias("mods"),
            F.sum("bytes").alias("bytes"),
            F.max("system").alias("system"),
        )
        .select(
            *tx,
            "records",
            "partitions",
            "landed_records",
            "landed_partitions",
            "mods",
            "bytes",
            "transaction_tag",
            "system",
        )  # fmt: skip
    )


def is_profile(df: DataFrame) -> bool:
    """Return whether ``df`` is ``build_transaction_profile`` output."""
    return "incomplete" in df.columns


def build_transaction_profile(df: DataFrame) -> DataFrame:
    """Return how many transactions share each stream, tag, shape and flags, with their sums.

    Keys: stream_name, transaction_tag, records, partitions, mods (the three measures),
    system and incomplete (fewer landed records than declared); sums: transactions,
    landed_records, bytes. The three transaction tables only count and add up
    transactions by these keys, so each adds up this profile (a few thousand rows at
    10M mods) instead of the transactions themselves: the transactions (2.6M at 10M
    mods) are aggregated once, in the query that builds them, and never written to
    the work directory nor read back. ``df`` may be mods, records, transactions, or
    this function's own output (returned as is).
    """
    if is_profile(df):
        return df
    incomplete = (F.col("landed_records") < F.col("records")).alias("incomplete")
    return (
        build_transactions(df)
        .groupBy("stream_name", "transaction_tag", *MEASURES, "system", incomplete)
        .agg(
            F.count(F.lit(1)).alias("transactions"),
            F.sum("landed_records").alias("landed_records"),
            F.sum("bytes").alias("bytes"),
        )
    )


def build_transaction_shape(df: DataFrame) -> DataFrame:
    """Return per stream, measure (records, partitions, mods) and value: how many transactions."""
    profile = build_transaction_profile(df)
    long = profile.select(
        "stream_name",
        "transactions",
        F.explode(
            F.array(*(F.struct(F.lit(m).alias("measure"), F.col(m).alias("value")) for m in MEASURES))
        ).alias("m"),
    )
    return (
        long.groupBy("stream_name", "m.measure", "m.value")
        .agg(F.sum("transactions").alias("transactions"))
        .orderBy("stream_name", "measure", "value")
    )


def build_transaction_summary(df: DataFrame) -> DataFrame:
    """Return per stream: transactions, those spanning partitions and their share, incomplete, system."""
    profile = build_transaction_profile(df)
    n = F.col("transactions")
    flag = lambda cond: F.sum(F.when(cond, n).otherwise(0))  # noqa: E731
    # avg over transactions, as Spark's avg computes it: a double sum of the non-null
    # values over their count (exact integers below 2^53, so the same quotient)
    mean = lambda c: F.sum((F.col(c) * n).cast("double")) / F.sum(F.when(F.col(c).isNotNull(), n))  # noqa: E731
    return (
        profile.groupBy("stream_name")
        .agg(
            F.sum(n).alias("transactions"),
            flag(F.col("partitions") > 1).alias("spanning_partitions"),
            flag(F.col("incomplete")).alias("incomplete"),
            flag(F.col("system") == 1).alias("system"),
            mean("records").alias("mean_records"),
            mean("partitions").alias("mean_partitions"),
        )
        .withColumn("spanning_share", F.col("spanning_partitions") / F.col("transactions"))
        .orderBy("stream_name")
    )


def build_transaction_tags(df: DataFrame, top: int = 20) -> DataFrame:
    """Return the ``top`` transaction tags per stream by transactions ("" = untagged)."""
    profile = build_transaction_profile(df)
    return (
        profile.groupBy("stream_name", "transaction_tag")
        .agg(
            F.sum("transactions").alias("transactions"),
            F.sum("landed_records").alias("records"),
            F.sum(F.col("mods") * F.col("transactions")).alias("mods"),
            F.sum("bytes").alias("bytes"),
        )
        .orderBy(F.desc("transactions"), "transaction_tag")
        .limit(top)
    )
