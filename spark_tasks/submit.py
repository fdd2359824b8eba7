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

The heap is fixed (``-Xms`` = ``--driver-memory``) and glibc is held to two malloc
arenas (``SUBMIT_ENV``): with a 1g heap that could grow, the parallel collector let a
10M-mod run expand it to the cap while a 1M run stopped at ~650 MB, and the JVM's
resident size went 1.1 -> 1.4-2.0 GiB with the input. The job's live data after a
full collection is ~150-400 MB, so 640 MB, fixed, serves both sizes at the same speed
and the driver's footprint no longer depends on the input (1,041 vs 1,120 MiB).
"""

from __future__ import annotations

DRIVER_JAVA_OPTIONS = "-XX:+UseParallelGC"
DRIVER_MEMORY = "640m"
# The environment spark-submit needs beside the options: one malloc arena per core
# instead of eight, so native allocations of Spark's many threads do not fragment
# into resident memory that grows with the run's length.
SUBMIT_ENV = {"MALLOC_ARENA_MAX": "2"}


def submit_options(driver_memory: str = DRIVER_MEMORY, java_options: str = DRIVER_JAVA_OPTIONS) -> list[str]:
    """Return the spark-submit options that size and tune the driver JVM (its heap fixed)."""
    java = f"-Xms{driver_memory} {java_options}".strip()
    return ["--driver-memory", driver_memory, "--driver-java-options", java]
