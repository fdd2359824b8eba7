"""Check a report's latency percentiles against the exact ranks of the landed records.

The report's percentiles come from ``percentile_approx`` (spark_tasks/latency.py), whose
rank error is at most 1/ACCURACY of a group's records. This reads the landing zone that
the report read with pyarrow, takes each data change record's earliest read, and prints,
for every percentile of ``latency_by_table`` and ``latency_by_minute``, how far the report's
value lies from the nearest rank, as a share of the group's records, and names any group
where that is more than 1/ACCURACY of its records, rounded up to a whole rank.

    .venv/bin/python benchmarks/latency_accuracy.py \\
        [--landing var/bench/landing-10m] [--report var/bench/report-10m] [--stream-id 1]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from partitions.pipeline.landing import landed_files, stream_dirs  # noqa: E402
from partitions.sources.landing import LANDING_SCHEMA  # noqa: E402
from spark_tasks.landing import RECORD_KEY  # noqa: E402
from spark_tasks.latency import ACCURACY, PERCENTILES  # noqa: E402


def records(landing: Path, stream_id: int) -> pa.Table:
    """Return one row per record of the stream: its table, commit minute and latency in seconds."""
    columns = [*RECORD_KEY, "table_name", "read_timestamp"]
    filesystem, paths = landed_files(landing.as_uri(), stream_dirs(stream_id))
    parts = [pq.read_table(p, filesystem=filesystem, schema=LANDING_SCHEMA, columns=columns) for p in paths]
    grouped = (
        pa.concat_tables(parts).group_by([*RECORD_KEY, "table_name"]).aggregate([("read_timestamp", "min")])
    )
    read = pc.cast(grouped["read_timestamp_min"], pa.int64()).to_numpy()
    commit = pc.cast(grouped["commit_timestamp"], pa.int64()).to_numpy()
    minute = pc.cast(pc.floor_temporal(grouped["commit_timestamp"], unit="minute"), pa.int64())
    return pa.table({"table_name": grouped["table_name"], "minute": minute, "latency": (read - commit) / 1e6})


def rank_distances(samples: np.ndarray, row: dict) -> dict[str, int]:
    """Return how many ranks each of the row's percentiles lies from the nearest rank."""
    ordered = np.sort(samples)
    n = len(ordered)
    out = {}
    for q in PERCENTILES:
        value = row[f"p{round(q * 100)}_seconds"]
        # the value's ranks, counted from 1: a value that several samples share holds all theirs
        low, high = np.searchsorted(ordered, value, "left") + 1, np.searchsorted(ordered, value, "right")
        target = math.ceil(q * n)  # the nearest rank, as the tests of spark_tasks/latency.py count it
        out[f"p{round(q * 100)}"] = (
            0 if low <= target <= high else int(min(abs(low - target), abs(high - target)))
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--landing", type=Path, default=ROOT / "var" / "bench" / "landing-10m")
    parser.add_argument("--report", type=Path, default=ROOT / "var" / "bench" / "report-10m")
    parser.add_argument("--stream-id", type=int, default=1, help="the stream the report read")
    args = parser.parse_args()
    table = records(args.landing.resolve(), args.stream_id)
    by_table = table["table_name"].to_numpy(zero_copy_only=False)
    by_minute = table["minute"].to_numpy()
    latency = table["latency"].to_numpy()
    worst, within = 0.0, True
    for name, key, column in (
        ("latency_by_table", "table_name", by_table),
        ("latency_by_minute", "minute", by_minute),
    ):
        report = json.loads((args.report / f"{name}.json").read_text())
        rows = [dict(zip(report["columns"], values, strict=True)) for values in report["rows"]]
        shares = []
        for row in rows:
            wanted = row[key]
            if key == "minute":  # the report writes minutes as ISO text
                wanted = np.datetime64(wanted.replace("+00:00", "").replace("Z", ""), "us").astype(np.int64)
            samples = latency[column == wanted]
            if len(samples) != row["records"]:
                raise SystemExit(
                    f"{name} {row[key]}: {row['records']} records in the report, {len(samples)} landed"
                )
            distances = rank_distances(samples, row)
            allowed = math.ceil(len(samples) / ACCURACY)  # 1/ACCURACY of the group's records, in whole ranks
            shares.append(max(distances.values()) / len(samples))
            if max(distances.values()) > allowed:
                within = False
                print(json.dumps({"past_bound": name, key: str(row[key]), "records": len(samples),
                                  "ranks": distances, "allowed": allowed}))  # fmt: skip
        worst = max(worst, *shares)
        figures = {
            "table": name,
            "groups": len(rows),
            "max_rank_error_pct": round(100 * max(shares), 4),
            "median_rank_error_pct": round(100 * float(np.median(shares)), 4),
            "bound_pct": 100 / ACCURACY,
        }
        print(json.dumps(figures))
    print(json.dumps({"within_bound": within, "max_rank_error_pct": round(100 * worst, 4)}))


if __name__ == "__main__":
    main()
