"""Partition churn: splits and merges per hour and partition lifetimes.

The landing zone holds mods, not lineage: splits, merges and true lifetimes come from
an optional lineage export (one row per partition: token, start_at, end_at, parents).
From the mods alone a partition's observed lifetime is its first to last commit
(``throughput.build_partition_activity``).
"""

from __future__ import annotations

import json
from datetime import datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_tasks.landing import parse_time

LINEAGE_SCHEMA = T.StructType(
    [
        T.StructField("token", T.StringType(), False),
        T.StructField("start_at", T.TimestampType(), True),
        T.StructField("end_at", T.TimestampType(), True),
        T.StructField("parents", T.ArrayType(T.StringType()), True),
    ]
)


def read_lineage(spark: SparkSession, path: str) -> DataFrame:
    """Read a lineage export: Parquet (file or directory), or JSON (a list, or {"partitions": [...]})."""
    if path.endswith(".json"):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        rows = data["partitions"] if isinstance(data, dict) else data
        return spark.createDataFrame([_lineage_row(r) for r in rows], LINEAGE_SCHEMA)
    df = spark.read.parquet(path)
    return df.select(*(F.col(f.name).cast(f.dataType) for f in LINEAGE_SCHEMA.fields))


def _lineage_row(row: dict) -> tuple[str, datetime | None, datetime | None, list[str]]:
    return (
        row["token"],
        parse_time(row.get("start_at")),
        parse_time(row.get("end_at")),
        row.get("parents") or [],
    )


def _edges(lineage: DataFrame) -> DataFrame:
    return lineage.select(
        F.explode("parents").alias("parent"), F.col("token").alias("child"), F.col("start_at").alias("at")
    )


def build_churn_by_hour(lineage: DataFrame) -> DataFrame:
    """Return per hour: splits (a parent with several children) and merges (a child of several parents)."""
    edges = _edges(lineage)
    splits = (
        edges.groupBy("parent")
        .agg(F.count(F.lit(1)).alias("n"), F.min("at").alias("at"))
        .where("n > 1")
        .select(F.date_trunc("hour", "at").alias("hour"), F.lit(1).alias("splits"), F.lit(0).alias("merges"))
    )
    merges = (
        edges.groupBy("child")
        .agg(F.count(F.lit(1)).alias("n"), F.min("at").alias("at"))
        .where("n > 1")
        .select(F.date_trunc("hour", "at").alias("hour"), F.lit(0).alias("splits"), F.lit(1).alias("merges"))
    )
    return (
        splits.unionByName(merges)
        .groupBy("hour")
        .agg(F.sum("splits").alias("splits"), F.sum("merges").alias("merges"))
        .orderBy("hour")
    )


def build_lineage_lifetimes(lineage: DataFrame) -> DataFrame:
    """Return per partition: start, end, lifetime in seconds (null while open), parents and children."""
    children = _edges(lineage).groupBy("parent").agg(F.count(F.lit(1)).alias("children"))
    span = F.unix_micros(F.col("end_at")) - F.unix_micros(F.col("start_at"))
    return (
        lineage.join(children, lineage.token == children.parent, "left")
        .select(
            F.col("token").alias("partition_token"),
            "start_at",
            "end_at",
            (span / 1e6).alias("lifetime_seconds"),
            F.size(F.coalesce("parents", F.array())).alias("parents"),
            F.coalesce("children", F.lit(0)).alias("children"),
        )
        .orderBy("start_at", "partition_token")
    )
