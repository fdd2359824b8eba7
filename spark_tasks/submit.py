"""How to start the report job: spark-submit options for the driver JVM (no pyspark import).

Whoever runs ``spark-submit spark_tasks/main.py`` (the Celery task, the benchmark)
should pass ``submit_options()`` before the script: in local mode the driver JVM is
also the only executor and its flags cannot be changed once Python runs.

Measured on the 2-core machine (1M mods, load average ~8): of the JVM's ~80 CPU seconds,
~50 went to the C2 JIT compiler threads compiling Spark's generated code, against ~25 in
the tasks themselves. Stopping at the C1 tier (``-XX:TieredStopAtLevel=1``) removes most
of that; the parallel collector suits a batch job better than G1's concurrent threads.
"""

from __future__ import annotations

DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"
DRIVER_MEMORY = "1g"


def submit_options(driver_memory: str = DRIVER_MEMORY, java_options: str = DRIVER_JAVA_OPTIONS) -> list[str]:
    """Return the spark-submit options that size and tune the driver JVM."""
    options = ["--driver-memory", driver_memory]
    if java_options:
        options += ["--driver-java-options", java_options]
    return options
