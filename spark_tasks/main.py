"""spark-submit entry point: read a stream's landed mods, dedupe, write the report tables.

    spark-submit --driver-memory 640m spark_tasks/main.py --input var/landing \\
        --output var/reports/42 --stream-id 7 [--stream-name orders] [--legacy-name old] \\
        [--since ISO] [--until ISO] \\
        [--report all|throughput|latency|transactions|churn|cost] [--lineage FILE] \\
        [--work-dir URI] \\
        [--retention-days 1 --edition standard --nodes 1 ...]

Stdout carries only this job's lines: ``PROGRESS <done>/<total> <elapsed s> <step>``
per step, then ``DONE <summary.json path>``; on failure ``ERROR <reason>`` (also on
stderr as ``error: <reason>``, which spark-submit's PythonRunner merges into stdout,
and in ``<output>/error.json``) and exit status 2 for bad input, 1 for anything else. A
range with no data is an empty report, not an error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
import warnings
from dataclasses import fields
from pathlib import Path
from urllib.parse import urlparse

if __package__ in (None, ""):  # run as a file by spark-submit: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# pyspark warns about pandas 3 on import; the reports never convert to pandas.
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")

from spark_tasks.cost import PriceModel  # noqa: E402
from spark_tasks.landing import InputError, parse_time  # noqa: E402

REPORTS = ("throughput", "latency", "transactions", "churn", "cost")


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parse the command line; price model fields become ``--<field-name>`` options."""
    p = argparse.ArgumentParser(prog="spark_tasks/main.py", description="cdcweb Spark reports")
    p.add_argument("--input", required=True, help="landing zone root (path or Hadoop URI)")
    p.add_argument("--output", required=True, type=Path, help="directory for the JSON result tables")
    p.add_argument(
        "--stream-id", required=True, type=int, help="cdcweb stream id (its stream_id=<id> directory)"
    )
    p.add_argument(
        "--stream-name", default="", help="the stream's name, shown in the tables (default: as landed)"
    )
    p.add_argument(
        "--legacy-name",
        default="",
        help="also read stream=<this>/, where the stream landed before ids were used",
    )
    p.add_argument("--since", help="ISO instant, inclusive (commit timestamp)")
    p.add_argument("--until", help="ISO instant, exclusive (commit timestamp)")
    p.add_argument("--report", default="all", choices=("all", *REPORTS))
    p.add_argument("--lineage", help="partition lineage export (.json or Parquet) for the churn report")
    p.add_argument(
        "--work-dir",
        help="directory (path or Hadoop URI every executor reaches) for the intermediate records; "
        "default <output>/_work; deleted at the end",
    )
    p.add_argument("--top", type=int, default=20, help="rows in the busiest partitions and tag tables")
    for f in fields(PriceModel):
        kind = str if f.name == "edition" else float
        p.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=kind, default=None)
    args = p.parse_args(argv)
    args.since, args.until = parse_time(args.since), parse_time(args.until)
    if args.since and args.until and args.until <= args.since:
        p.error("--until must be after --since")
    prices = {f.name: getattr(args, f.name) for f in fields(PriceModel) if getattr(args, f.name) is not None}
    args.prices = PriceModel(**prices)
    return args


def check_local_input(uri: str) -> None:
    """Fail before Spark starts when a local input path is missing (a readable first line)."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file") and not Path(parsed.path or uri).exists():
        raise InputError(f"input path {uri} does not exist")


def fail(args: argparse.Namespace, message: str, status: int) -> int:
    """Report a failure (stdout, stderr and <output>/error.json); return the exit status."""
    first = (message.strip().splitlines() or ["unknown error"])[0]
    print(f"ERROR {first}", flush=True)
    print(f"error: {first}", file=sys.stderr, flush=True)
    try:
        args.output.mkdir(parents=True, exist_ok=True)
        detail = traceback.format_exc()
        (args.output / "error.json").write_text(
            json.dumps({"error": first, "detail": detail}), encoding="utf-8"
        )
    except OSError:
        pass  # the output directory is unusable too: stdout and stderr still say why
    return status


def main(argv: list[str] | None = None, spark=None) -> int:
    """Run the report job (on ``spark``, a running SparkSession, if given); return the exit status."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    began = time.monotonic()
    try:
        check_local_input(args.input)
        from spark_tasks.job import run_report

        summary_path = run_report(args, began, spark)
    except InputError as e:
        return fail(args, str(e), 2)
    except Exception as e:  # noqa: BLE001 - the wrapper shows this line to the operator
        return fail(args, f"{type(e).__name__}: {e}", 1)
    print(f"DONE {summary_path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
