"""Build the spark-submit command of a report, its environment and its lineage input."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.db.models import Q

from partitions.models import Partition, PartitionEdge
from spark_tasks.submit import SUBMIT_ENV, submit_options

from .assumptions import price_options

MAIN = Path(settings.BASE_DIR) / "spark_tasks" / "main.py"
# What spark-submit, the JVM, Hadoop clients and the Python workers read from the
# environment. Nothing else of the web's or the worker's goes to the job: not the
# secret key, the database or broker URLs, nor tokens (CDC_SPARK_ENV_PASSTHROUGH adds names).
PASSED_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "TEMP", "TMP", "JAVA_HOME",
    "CLASSPATH", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV", "MALLOC_ARENA_MAX",
    "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "GOOGLE_APPLICATION_CREDENTIALS", "KRB5CCNAME", "KRB5_CONFIG",
})  # fmt: skip
PASSED_PREFIXES = ("LC_", "SPARK_", "PYSPARK_", "HADOOP_", "YARN_")


def iso(value: datetime | None) -> str | None:
    """Format an instant as ISO 8601 UTC with a ``Z``, as the job reads and writes them."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def spark_submit() -> str:
    """Return the spark-submit of the project's interpreter (the pip package's launcher)."""
    beside = Path(sys.executable).with_name("spark-submit")
    return str(beside) if beside.exists() else (shutil.which("spark-submit") or "spark-submit")


def driver_options() -> list[str]:
    """Return the driver JVM's options: the job's own sizing and tuning (spark_tasks/submit.py).

    The JVM's class-data-sharing archive lives in CDC_VAR_DIR/cds, beside the rest of
    the installation's state.
    """
    return submit_options(settings.CDC_SPARK_DRIVER_MEMORY, cds_dir=Path(settings.VAR_DIR) / "cds")


def work_options(report) -> list[str]:
    """Return ``--work-dir`` under CDC_SPARK_WORK_URI (one directory per report), or nothing."""
    base = settings.CDC_SPARK_WORK_URI.rstrip("/")
    return ["--work-dir", f"{base}/report-{report.pk}"] if base else []


def build_command(report, output_dir: Path, lineage: Path) -> list[str]:
    """Return the spark-submit argv that runs the report's job into ``output_dir``."""
    return [
        spark_submit(), "--master", settings.SPARK_MASTER, *driver_options(), str(MAIN),
        "--input", settings.CDC_SPARK_LANDING_URI or settings.CDC_LANDING_URI, "--output", str(output_dir),
        "--stream-id", str(report.stream_id), "--stream-name", report.stream.name,
        *(["--legacy-name", report.stream.landing_name] if report.stream.landing_name else []),
        "--since", iso(report.since), "--until", iso(report.until),
        "--report", report.kind, "--lineage", str(lineage), *work_options(report),
        *price_options(report.stream),
    ]  # fmt: skip


def _passed(name: str) -> bool:
    """Return True if the job may see this variable of ours."""
    return (
        name in PASSED_NAMES or name.startswith(PASSED_PREFIXES) or name in settings.CDC_SPARK_ENV_PASSTHROUGH
    )


def spark_env() -> dict[str, str]:
    """Return the job's environment: what Spark needs, and this interpreter on both sides (DESIGN §9)."""
    return {
        **SUBMIT_ENV,
        **{name: value for name, value in os.environ.items() if _passed(name)},
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_MASTER": settings.SPARK_MASTER,
        # Progress lines must arrive as they are printed, not when a buffer fills.
        "PYTHONUNBUFFERED": "1",
    }


def export_lineage(stream, since: datetime, until: datetime, path: Path) -> Path:
    """Write the stream's partitions alive in [since, until) with their parents, for the churn report."""
    alive = Partition.objects.filter(stream=stream, start_at__lt=until).filter(
        Q(end_at__isnull=True) | Q(end_at__gte=since)
    )
    parents = defaultdict(list)
    edges = PartitionEdge.objects.filter(stream=stream, child__in=alive)
    for child_id, token in edges.values_list("child_id", "parent__token").iterator():
        parents[child_id].append(token)
    rows = [
        {"token": token, "start_at": iso(start), "end_at": iso(end), "parents": parents.get(pk, [])}
        for pk, token, start, end in alive.values_list("pk", "token", "start_at", "end_at").iterator()
    ]
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps({"partitions": rows}), encoding="utf-8")
    os.replace(tmp, path)
    return path
