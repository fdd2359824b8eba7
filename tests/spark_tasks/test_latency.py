"""Commit-to-read latency percentiles against the nearest-rank method in plain Python."""

import math
from collections import defaultdict

from spark_tasks.latency import build_latency_by_minute, build_latency_by_table


def nearest_rank(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[math.ceil(p * len(ordered)) - 1]


def latencies(records, key) -> dict:
    samples = defaultdict(list)
    for mods_of_record in records.values():
        first = mods_of_record[0]
        read = min(m["read_timestamp"] for m in mods_of_record)
        samples[key(first)].append((read - first["commit_timestamp"]).total_seconds())
    return samples


def assert_percentiles(row: dict, values: list[float]) -> None:
    assert row["records"] == len(values)
    for q in (50, 95, 99):
        assert math.isclose(row[f"p{q}_seconds"], nearest_rank(values, q / 100)), q
    assert math.isclose(row["max_seconds"], max(values))


def test_latency_per_minute_matches_plain_python(mods, records, collect):
    # given one latency sample per record, by commit minute
    expected = latencies(records, lambda r: r["commit_timestamp"].strftime("%Y-%m-%dT%H:%M:00.000000Z"))
    # when the report is built
    got = {r["minute"]: r for r in collect(build_latency_by_minute(mods))}
    # then every minute has the same percentiles
    assert set(got) == set(expected)
    for key, values in expected.items():
        assert_percentiles(got[key], values)


def test_latency_per_table_ignores_the_late_redelivery(mods, records, collect):
    # given one latency sample per record, by table (re-reads came a minute later)
    expected = latencies(records, lambda r: r["table_name"])
    # when the report is built
    got = {r["table_name"]: r for r in collect(build_latency_by_table(mods))}
    # then the percentiles are those of the first reads
    assert set(got) == set(expected)
    for key, values in expected.items():
        assert_percentiles(got[key], values)
