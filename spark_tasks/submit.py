"""How to start the report job: spark-submit options for the driver JVM (no pyspark import).

Whoever runs ``spark-submit spark_tasks/main.py`` (the Celery task, the benchmark)
should pass ``submit_options()`` before the script: in local mode the driver JVM is
also the only executor and its flags cannot be changed once Python runs.

The JIT is left at its default tiers, with the parallel collector (a batch job gains
nothing from G1's concurrent threads). Stopping at the C1 tier
(``-XX:TieredStopAtLevel=1``) saved C2's compile time on a 1M-mod run, but at 10M
mods Spark's generated aggregation code then ran about half as fast (throughput table
from 5M records: 72 JVM CPU-seconds with C1 only, 30-41 with C2), so the default tiers
win where the time goes. What the default tiers do cost is C2 compiling lukewarm code:
at 10M mods C2 spent 37-40 CPU-s on 4,300 methods (``-XX:+CITime``), on two cores
where the job's tasks want both. Raising the C2 tier's thresholds tenfold
(``TIER4_THRESHOLDS``) leaves the hot loops to C2 and the rest at C1: 2,750 methods,
22-23 CPU-s of C2; the whole job took 9-20 CPU-s and 2-10 s of wall less in alternated
runs (docs/benchmarks.md, issue 22 goal 5). Thirtyfold saved no more wall. A loop over
millions of rows passes 50,000 calls early in its stage, so it is still compiled by C2.

The heap is fixed (``-Xms`` = ``--driver-memory``) and glibc is held to two malloc
arenas (``SUBMIT_ENV``): with a 1g heap that could grow, the parallel collector let a
10M-mod run expand it to the cap while a 1M run stopped at ~650 MB, and the JVM's
resident size went 1.1 -> 1.4-2.0 GiB with the input. The job's live data after a
full collection is ~150-400 MB, so 640 MB, fixed, serves both sizes at the same speed
and the driver's footprint no longer depends on the input (1,041 vs 1,120 MiB).

The JVM loads and verifies thousands of Spark's classes before the first line of the
job runs (~6 s on the 2-core machine). An application class-data-sharing archive maps
them ready-made instead (``class_data_sharing``): the first job on a machine writes it
at exit (``-XX:ArchiveClassesAtExit``, Java 17's way; ``AutoCreateSharedArchive``
came in 19) and later jobs map it (``-XX:SharedArchiveFile``). Its file name holds a
hash of the Java runtime and Spark's jars, so a new JDK or Spark gets a new archive
instead of a stale one, and a missing or refused archive only means the JVM loads the
classes itself (``-Xshare:auto``, the default). The JVM's warnings go to stderr:
stdout carries only the job's lines.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import time
from pathlib import Path

# C2 (tier 4) compiles a method after ten times HotSpot's default invocations and loops.
TIER4_THRESHOLDS = (
    "-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000"
    " -XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=400000"
)
DRIVER_JAVA_OPTIONS = f"-XX:+UseParallelGC {TIER4_THRESHOLDS}"
DRIVER_MEMORY = "640m"
# The environment spark-submit needs beside the options: one malloc arena per core
# instead of eight, so native allocations of Spark's many threads do not fragment
# into resident memory that grows with the run's length.
SUBMIT_ENV = {"MALLOC_ARENA_MAX": "2"}


# Where the class-data-sharing archives live: var/ of the project, beside its other state.
CDS_DIR = Path(__file__).resolve().parents[1] / "var" / "cds"
# A job writing the archive holds a claim this long at most: a claim left by a job
# killed before its JVM exited is taken over after it (the longest reports take minutes).
CDS_CLAIM_SECONDS = 3600
# JVM log lines would go to stdout, which carries the job's PROGRESS lines: warnings
# (a rejected archive, for one) go to stderr instead, and nothing else is logged.
JVM_LOG_OPTIONS = "-Xlog:disable -Xlog:all=warning:stderr"


def submit_options(
    driver_memory: str = DRIVER_MEMORY,
    java_options: str = DRIVER_JAVA_OPTIONS,
    cds_dir: Path | None = CDS_DIR,
) -> list[str]:
    """Return the spark-submit options that size and tune the driver JVM (its heap fixed).

    With ``cds_dir`` (None: no archive), the JVM maps the class-data-sharing archive
    there or, when there is none yet, writes it at exit.
    """
    cds = class_data_sharing(cds_dir) if cds_dir is not None else ""
    java = " ".join(o for o in (f"-Xms{driver_memory}", java_options, JVM_LOG_OPTIONS, cds) if o)
    return ["--driver-memory", driver_memory, "--driver-java-options", java]


def class_data_sharing(cds_dir: Path) -> str:
    """Return the JVM option that maps this runtime's archive, or that writes it; "" to do neither.

    Only one job writes an archive: the first to create its claim file (another job
    starting meanwhile runs without). The JVM validates an archive's header before
    mapping it and, under ``-Xshare:auto``, runs without one it refuses (a test runs a
    job over a garbage archive; one caught while the writing JVM is still dumping it
    was not tested). Nothing here may fail the job: an unwritable directory means no
    archive.
    """
    try:
        archive = cds_dir / f"spark-{runtime_key()}.jsa"
        if archive.exists():
            return f"-XX:SharedArchiveFile={archive}"
        cds_dir.mkdir(parents=True, exist_ok=True)
        if not _claim(archive.with_suffix(".claim")):
            return ""
        for old in cds_dir.glob("spark-*.jsa"):  # another runtime's: stale
            old.unlink(missing_ok=True)
        return f"-XX:ArchiveClassesAtExit={archive}"
    except OSError:
        return ""


def _claim(path: Path) -> bool:
    """Create ``path`` exclusively (taking over one older than CDS_CLAIM_SECONDS); return if ours."""
    try:
        if time.time() - path.stat().st_mtime > CDS_CLAIM_SECONDS:
            path.unlink(missing_ok=True)
    except FileNotFoundError:
        pass
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    return True


def runtime_key() -> str:
    """Return a short hash of what an archive is only valid for: the java binary and Spark's jars."""
    java_home = os.environ.get("JAVA_HOME")
    java = Path(java_home, "bin", "java") if java_home else Path(shutil.which("java") or "java")
    parts = [_stamp(java.resolve())]
    jars = _spark_jars()
    if jars is not None:
        parts += [f"{j.name}:{_stamp(j)}" for j in sorted(jars.glob("*.jar"))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _stamp(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return f"{path}:missing"
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def _spark_jars() -> Path | None:
    """Return the jars directory spark-submit puts on the classpath (SPARK_HOME's, else pyspark's)."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"], "jars")
    spec = importlib.util.find_spec("pyspark")
    return Path(spec.origin).parent / "jars" if spec and spec.origin else None
