"""Run the selected reports over one stream's landed mods and write their tables.

Steps: list the input files; dedupe the mods and roll them up into change records in
one shuffle of the report columns (the JSON values are never read) and write the
records as Parquet to a work directory; roll the records up into transactions and
those into the transaction profile (how many transactions share a tag, shape and
flags); sum the records once into the record roll-up (per table, minute and
partition); then build, collect and write each table from the narrowest level it
needs (the roll-up, the profile, or the records themselves for the latency
percentiles), then ``summary.json``; the work directory is deleted at the end.

Materialising the records on disk, rather than in Spark's in-memory cache, is what
keeps the driver's memory flat as the input grows: at 10M mods the cached records
outgrew the heap's storage share, were evicted and spilled, and the JVM grew to its
cap. The roll-up and the profile are a few thousand rows each and are cached: the
tables built from them are small queries, where one query per table over the records
was a scan each and new generated code for the JIT to compile each (issue 22). Only
small result tables are collected into Python.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import pyspark
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_tasks.churn import build_churn_by_hour, build_lineage_lifetimes, read_lineage
from spark_tasks.cost import assumptions, build_cost
from spark_tasks.landing import dedupe, list_input_files, read_mods, stream_dirs, to_records
from spark_tasks.latency import build_latency_by_minute, build_latency_by_table
from spark_tasks.output import collect_table, write_json, write_table
from spark_tasks.rollup import build_record_rollup
from spark_tasks.session import build_session, shuffle_partitions
from spark_tasks.throughput import build_busiest_partitions, build_partition_activity, build_throughput
from spark_tasks.transactions import (
    build_transaction_profile,
    build_transaction_shape,
    build_transaction_summary,
    build_transaction_tags,
)

Builder = Callable[[DataFrame], DataFrame]
# The work directory's records columns that hold a new value on (nearly) every row.
UNIQUE_COLUMNS = ("commit_timestamp", "server_transaction_id", "read_timestamp")


def progress(done: int, total: int, began: float, step: str) -> None:
    """Print ``PROGRESS <done>/<total> <elapsed seconds> <step>`` for the Celery wrapper."""
    print(f"PROGRESS {done}/{total} {time.monotonic() - began:.1f} {step}", flush=True)


def select_tables(args: argparse.Namespace, lineage: DataFrame | None) -> list[tuple[str, str, str, Builder]]:
    """Return (report, table name, input level, builder) for the reports ``args.report`` selects.

    The level names the narrowest input the builder needs: ``rollup`` (the records
    summed per table, minute and partition), ``profile`` (the transactions counted per
    tag, shape and flags) or ``records`` (each builder also accepts deduplicated mods).
    """
    tables = [
        ("throughput", "throughput", "rollup", build_throughput),
        ("throughput", "busiest_partitions", "rollup", lambda m: build_busiest_partitions(m, args.top)),
        ("latency", "latency_by_minute", "records", build_latency_by_minute),
        ("latency", "latency_by_table", "records", build_latency_by_table),
        ("transactions", "transaction_summary", "profile", build_transaction_summary),
        ("transactions", "transaction_shape", "profile", build_transaction_shape),
        ("transactions", "transaction_tags", "profile", lambda m: build_transaction_tags(m, args.top)),
        ("churn", "partition_activity", "rollup", build_partition_activity),
        ("cost", "cost", "rollup", lambda m: build_cost(m, args.prices)),
    ]
    if lineage is not None:
        tables.insert(-1, ("churn", "churn_by_hour", "records", lambda _: build_churn_by_hour(lineage)))
        tables.insert(
            -1, ("churn", "partition_lifetimes", "records", lambda _: build_lineage_lifetimes(lineage))
        )
    return [t for t in tables if args.report in ("all", t[0])]


def load_lineage(spark: SparkSession, args: argparse.Namespace) -> DataFrame | None:
    """Return the lineage partitions that overlap the range, or None without --lineage."""
    if not args.lineage or args.report not in ("all", "churn"):
        return None
    lineage = read_lineage(spark, args.lineage)
    if args.until is not None:
        lineage = lineage.where(F.col("start_at") < F.lit(args.until))
    if args.since is not None:
        lineage = lineage.where(F.col("end_at").isNull() | (F.col("end_at") >= F.lit(args.since)))
    return lineage


def transaction_count(profile: DataFrame) -> int:
    """Return how many transactions the transaction profile counts."""
    return profile.agg(F.coalesce(F.sum("transactions"), F.lit(0))).first()[0]


def totals(rollup: DataFrame, transactions: int) -> dict:
    """Return the deduplicated totals and how many landed mods were duplicates.

    Added up from the record roll-up (its ``deliveries`` count every landed copy, so
    the input is not scanned again). Users' changes and the system's (Bigtable's
    garbage collection) are counted apart.
    """
    total = lambda c: F.coalesce(F.sum(c), F.lit(0)).alias(c)  # noqa: E731
    columns, rows = collect_table(
        rollup.agg(
            total("records"),
            total("mods"),
            total("bytes"),
            F.min("first_commit").alias("first_commit"),
            F.max("last_commit").alias("last_commit"),
            F.coalesce(F.sum("deliveries"), F.lit(0)).alias("landed_mods"),
            # System changes apart from users' (Bigtable: garbage collection; Spanner: TTL).
            total("system_records"),
            total("system_mods"),
        )
    )
    result = dict(zip(columns, rows[0], strict=True))
    landed = result.pop("landed_mods")
    result = {**dict(list(result.items())[:3]), "transactions": transactions, **result}
    result["landed_mods"] = landed
    result["duplicate_mods_removed"] = result["landed_mods"] - result["mods"]
    result["user_records"] = result["records"] - result["system_records"]
    result["user_mods"] = result["mods"] - result["system_mods"]
    return result


def write_cost(out: Path, df: DataFrame, args: argparse.Namespace) -> tuple[int, list[dict]]:
    """Write cost.json with its assumptions beside the figures; return rows and assumptions."""
    columns, rows = collect_table(df)
    factor = columns.index("overhead_factor")
    measured = {} if args.prices.overhead_factor is not None else {r[0]: r[factor] for r in rows}
    used = assumptions(args.prices, measured)
    write_json(out / "cost.json", {"name": "cost", "columns": columns, "rows": rows, "assumptions": used})
    return len(rows), used


def settings(args: argparse.Namespace) -> dict:
    """Return the job's settings for the summary."""
    iso = lambda t: t.isoformat().replace("+00:00", "Z") if t else None  # noqa: E731
    return {
        "input": args.input,
        "stream_id": args.stream_id,
        "stream": args.stream_name,
        "since": iso(args.since),
        "until": iso(args.until),
        "report": args.report,
        "lineage": args.lineage,
        "prices": asdict(args.prices),
    }


def work_dir(args: argparse.Namespace) -> str:
    """Return the work directory's URI: ``--work-dir``, else ``<output>/_work``."""
    if args.work_dir:
        return args.work_dir.rstrip("/")
    return (args.output.resolve() / "_work").as_uri()


def delete_path(spark: SparkSession, uri: str) -> None:
    """Delete ``uri`` recursively through Hadoop's file system (local, HDFS, gs:// ...)."""
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).delete(path, True)


def materialise(df: DataFrame, uri: str) -> DataFrame:
    """Write ``df`` as Parquet to ``uri`` and return a frame reading it back.

    Columns whose every value is (nearly) its own get no dictionary: Parquet's writer
    would fill one per column chunk only to fall back to plain values once it outgrew
    its page (10 % of a 10M-mod job's CPU samples; docs/benchmarks.md, issue 22, goal 5).
    """
    writer = df.write.mode("overwrite")
    for column in UNIQUE_COLUMNS:
        if column in df.columns:
            writer = writer.option(f"parquet.enable.dictionary#{column}", "false")
    writer.parquet(uri)
    return df.sparkSession.read.schema(df.schema).parquet(uri)


def run_report(args: argparse.Namespace, began: float, spark: SparkSession | None = None) -> Path:
    """Run the job and return the summary's path: on ``spark``, else on a new session it stops.

    A caller's session (the tests' one session) is left running for its next report.
    """
    own = spark is None
    spark = build_session() if spark is None else spark
    work = work_dir(args)
    try:
        return _run(spark, args, began, work)
    finally:
        try:
            delete_path(spark, work)
        finally:
            if own:
                spark.stop()


def _run(spark: SparkSession, args: argparse.Namespace, began: float, work: str) -> Path:
    args.output.mkdir(parents=True, exist_ok=True)
    dirs = stream_dirs(args.stream_id, args.legacy_name)
    files = list_input_files(spark, args.input, dirs, args.since, args.until)
    partitions = shuffle_partitions(files.bytes, spark.sparkContext.defaultParallelism)
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    tables = select_tables(args, load_lineage(spark, args))
    total = len(tables) + 3
    progress(1, total, began, f"input {len(files.paths)} files {files.bytes} bytes")
    mods = read_mods(spark, files.paths, args.since, args.until, args.stream_name)
    records = materialise(to_records(dedupe(mods)), f"{work}/records")
    progress(2, total, began, "records")
    profile = build_transaction_profile(records).persist()
    transactions = transaction_count(profile)
    progress(3, total, began, "transactions")
    rollup = build_record_rollup(records).persist()
    summary = {"settings": settings(args), "totals": totals(rollup, transactions), "tables": {}}
    # Every shuffle from here on carries a few thousand rows at most (the latency
    # aggregates' partial sketches, the tables' sorts): one partition each, so a sort
    # needs no sampling job to find its ranges and a stage no scheduling of idle tasks.
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    inputs = {"records": records, "rollup": rollup, "profile": profile}
    for done, (report, name, level, build) in enumerate(tables, start=4):
        if name == "cost":
            rows, summary["assumptions"] = write_cost(args.output, build(inputs[level]), args)
        else:
            rows = write_table(args.output, name, build(inputs[level]))
        summary["tables"][name] = {"report": report, "file": f"{name}.json", "rows": rows}
        progress(done, total, began, name)
    rollup.unpersist()
    profile.unpersist()
    summary["input"] = {"files": len(files.paths), "bytes": files.bytes}
    summary["spark"] = {"version": pyspark.__version__, "master": spark.sparkContext.master,
                        "shuffle_partitions": partitions}  # fmt: skip
    summary["elapsed_seconds"] = round(time.monotonic() - began, 3)
    summary["empty"] = summary["totals"]["mods"] == 0
    write_json(args.output / "summary.json", summary)
    return args.output / "summary.json"
