"""The Spark session the report jobs and tests use: small-data defaults, UTC, no UI.

Sizing for a few cores (issue 5's 2-core machine), measured on the 1M/10M benchmark:
the landing zone is many small files (10M mods are 2,401 files of ~235 kB), so a low
open cost packs ~128 MB of them into each read task instead of one task per file; the
shuffle partition count follows the input (a few, not 200) and adaptive execution
coalesces the small report aggregates further. The JVM does nothing but Spark SQL, so
execution (the job caches nothing big: spark_tasks.job) gets 75% of the heap, not 60%.
"""

from __future__ import annotations

import math
import os

from pyspark.sql import SparkSession

from spark_tasks.submit import DRIVER_JAVA_OPTIONS

# A shuffle partition per this many input bytes. The reports read a third of the
# columns; the dedupe's hash aggregate of one partition then holds ~300k mods, which
# fits a 640m driver's execution memory with two tasks at once (larger partitions spill
# the aggregate to a sort).
BYTES_PER_SHUFFLE_PARTITION = 16 << 20
# Each file costs this many bytes when packing files into read tasks.
FILE_OPEN_COST = 1 << 20


def shuffle_partitions(input_bytes: int, cores: int) -> int:
    """Return a shuffle partition count for ``input_bytes`` of Parquet: cores..200."""
    return max(cores, min(200, math.ceil(input_bytes / BYTES_PER_SHUFFLE_PARTITION)))


def build_session(
    master: str | None = None, app_name: str = "cdcweb-report", ui: bool = False
) -> SparkSession:
    """Return a session on ``master`` (else SPARK_MASTER, else local[*]) in UTC.

    Driver memory is set by spark-submit's --driver-memory (the JVM is already running
    when this executes); submit.DRIVER_MEMORY (640m, fixed) serves 1M and 10M mods alike.
    """
    builder = (
        SparkSession.builder.master(master or os.environ.get("SPARK_MASTER") or "local[*]")
        .appName(app_name)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", str(ui).lower())
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.log.level", "WARN")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.adaptive.coalescePartitions.enabled", "true")
        .config("spark.sql.adaptive.advisoryPartitionSizeInBytes", str(16 << 20))
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.files.maxPartitionBytes", str(128 << 20))
        .config("spark.sql.files.openCostInBytes", str(FILE_OPEN_COST))
        # the job passes the listed files themselves: above 32 paths Spark would start
        # a job with one task per file just to list them (2,486 tasks at 10M mods)
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000000")
        .config("spark.memory.fraction", "0.75")
        # applies when this call starts the JVM (tests, plain Python); under spark-submit
        # the JVM runs already and takes its flags from submit_options()
        .config("spark.driver.extraJavaOptions", DRIVER_JAVA_OPTIONS)
        # percentile_approx is an object aggregate: keep it hash-based for the few
        # hundred minutes of a day instead of falling back to a sort after 128 groups
        .config("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", "4096")
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
