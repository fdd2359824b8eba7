"""The Spark session the report jobs and tests use: small-data defaults, UTC, no UI."""

from __future__ import annotations

import math
import os

from pyspark.sql import SparkSession

# A shuffle partition per this many input bytes: the reports read a third of the
# columns, so this keeps tasks near the adaptive advisory size without tiny tasks.
BYTES_PER_SHUFFLE_PARTITION = 64 << 20


def shuffle_partitions(input_bytes: int, cores: int) -> int:
    """Return a shuffle partition count for ``input_bytes`` of Parquet: cores..200."""
    return max(cores, min(200, math.ceil(input_bytes / BYTES_PER_SHUFFLE_PARTITION)))


def build_session(
    master: str | None = None, app_name: str = "cdcweb-report", ui: bool = False
) -> SparkSession:
    """Return a session on ``master`` (else SPARK_MASTER, else local[*]) in UTC.

    Driver memory is set by spark-submit's --driver-memory (the JVM is already running
    when this executes); the default 1g is ample because the results are small tables.
    """
    builder = (
        SparkSession.builder.master(master or os.environ.get("SPARK_MASTER") or "local[*]")
        .appName(app_name)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", str(ui).lower())
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.log.level", "WARN")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.shuffle.partitions", "4")
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
