"""How to start the report job: spark-submit options for the driver JVM (no pyspark import).

Whoever runs ``spark-submit spark_tasks/main.py`` (the Celery task, the benchmark)
should pass ``submit_options()`` before the script: in local mode the driver JVM is
also the only executor and its flags cannot be changed once Python runs.

The JIT is left at its default tiers, with the parallel collector (a batch job gains
nothing from G1's concurrent threads). Stopping at the C1 tier
(``-XX:TieredStopAtLevel=1``) saved C2's compile time on a 1M-mod run, but at 10M
mods Spark's generated aggregation code then ran about half as fast (throughput table
from 5M records: 72 JVM CPU-seconds with C1 only, 30-41 with C2), so the default tiers
win where the time goes.
"""

from __future__ import annotations

DRIVER_JAVA_OPTIONS = "-XX:+UseParallelGC"
DRIVER_MEMORY = "1g"


def submit_options(driver_memory: str = DRIVER_MEMORY, java_options: str = DRIVER_JAVA_OPTIONS) -> list[str]:
    """Return the spark-submit options that size and tune the driver JVM."""
    options = ["--driver-memory", driver_memory]
    if java_options:
        options += ["--driver-java-options", java_options]
    return options
