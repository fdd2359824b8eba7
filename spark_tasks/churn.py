"""Partition churn: splits and merges per hour and partition lifetimes.

The landing zone holds mods, not lineage: splits, merges and true lifetimes come from
an optional lineage export (one row per partition: token, start_at, end_at, parents).
From the mods alone a partition's observed lifetime is its first to last commit
(``throughput.build_partition_activity``).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

LINEAGE_SCHEMA = T.StructType(
    [
        T.StructField("token", T.StringType(), False),
        T.StructField("start_at", T.TimestampType(), True),
        T.StructField("end_at", T.TimestampType(), True),
        T.StructField("parents", T.ArrayType(T.StringType()), True),
    ]
)


def read_lineage(spark: SparkSession, path: str) -> DataFrame:
    """Read a lineage export: Parquet (file or directory), or JSON (a list, or {"partitions": [...]}).

    JSON is read by Spark's own reader, not parsed in Python and handed over with
    ``createDataFrame``: that path starts Python workers, which took seconds for a
    47-row export on a loaded machine. Instants are cast from text as ``parse_time``
    reads them (``Z`` or an offset; naive ones in the session's UTC).
    """
    if not path.endswith(".json"):
        df = spark.read.parquet(path)
        return df.select(*(F.col(f.name).cast(f.dataType) for f in LINEAGE_SCHEMA.fields))
    as_text = T.StructType(
        [T.StructField(f.name, T.StringType() if f.name != "parents" else f.dataType) for f in LINEAGE_SCHEMA]
    )
    with open(path, encoding="utf-8") as f:
        wrapped = f.read(4096).lstrip().startswith("{")
    reader = spark.read.option("multiLine", "true")
    if wrapped:
        rows = reader.schema(T.StructType([T.StructField("partitions", T.ArrayType(as_text))])).json(path)
        rows = rows.select(F.explode("partitions").alias("p")).select("p.*")
    else:
        rows = reader.schema(as_text).json(path)
    return rows.select(
        F.col("token"),
        F.col("start_at").cast("timestamp").alias("start_at"),
        F.col("end_at").cast("timestamp").alias("end_at"),
        F.coalesce("parents", F.array().cast("array<string>")).alias("parents"),
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
