"""Commit-to-read latency percentiles per minute and per table.

One sample per data change record: its earliest read minus its commit timestamp. All
mods of a record are read together, so weighting by mods would only over-count big
records.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_tasks.landing import to_records

PERCENTILES = (0.5, 0.95, 0.99)
# percentile_approx's rank error is at most 1/ACCURACY of a group's samples: 0.1%, so
# the p99 of a minute with 30,000 records is within 30 ranks of the exact one. Groups
# of up to about a thousand records are exact (the tests' nearest-rank checks). 10,000
# kept ten times larger sketches per group and cost more to merge than it told.
ACCURACY = 1_000


def _latency_seconds() -> F.Column:
    micros = F.unix_micros(F.col("read_timestamp")) - F.unix_micros(F.col("commit_timestamp"))
    return (micros / 1e6).alias("latency_seconds")


def _percentiles(records: DataFrame, *keys: str) -> DataFrame:
    samples = records.select(*keys, _latency_seconds())
    p = F.percentile_approx("latency_seconds", list(PERCENTILES), ACCURACY)
    return (
        samples.groupBy(*keys)
        .agg(
            F.count(F.lit(1)).alias("records"),
            p.alias("p"),
            F.max("latency_seconds").alias("max_seconds"),
        )
        .select(
            *keys,
            "records",
            *(F.col("p")[i].alias(f"p{round(q * 100)}_seconds") for i, q in enumerate(PERCENTILES)),
            "max_seconds",
        )
        .orderBy(*keys)
    )


def build_latency_by_minute(df: DataFrame) -> DataFrame:
    """Return per stream and commit minute: records, p50/p95/p99/max latency in seconds."""
    return _percentiles(to_records(df), "stream_name", "minute")


def build_latency_by_table(df: DataFrame) -> DataFrame:
    """Return per stream and table: records, p50/p95/p99/max latency in seconds."""
    return _percentiles(to_records(df), "stream_name", "table_name")
