"""tail_change_stream end to end: the real client over real gRPC against the simulator."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from partitions.simulator.spanner.config import SimulatorConfig
from partitions.simulator.spanner.server import start_server
from streams.times import format_time

EPOCH = (datetime.now(UTC) - timedelta(minutes=30)).replace(second=0, microsecond=0)
# An event every second (splits and merges interleaved) so a 50 s window holds > 20 of each.
CONFIG = SimulatorConfig(
    seed=11, roots=4, split_every=2.0, merge_every=2.0, tps=30.0, retention=3600.0, epoch=EPOCH
)
SIM_OPTIONS = ["--seed", "11", "--roots", "4", "--split-every", "2", "--merge-every", "2"]
SIM_OPTIONS += ["--tps", "30", "--retention", "3600s", "--epoch", format_time(EPOCH)]
START = EPOCH + timedelta(minutes=5)
END = START + timedelta(seconds=50)


@pytest.fixture(scope="module")
def lineage_simulator():
    server = start_server(CONFIG, "127.0.0.1", 0)
    try:
        yield server
    finally:
        server.stop(grace=0.5)


def manage(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], capture_output=True, text=True, check=check, timeout=240
    )


def tail(server, database: str, *extra: str, check: bool = True) -> subprocess.CompletedProcess:
    return manage(
        "tail_change_stream",
        *("--project", "p", "--instance", "i", "--database", database, "--stream", "Changes"),
        *("--start", format_time(START), "--end", format_time(END)),
        *("--emulator-host", server.emulator_host),
        *extra,
        check=check,
    )


def canonical(lines: str) -> list[str]:
    return sorted(json.dumps(json.loads(line), sort_keys=True) for line in lines.splitlines() if line)


@pytest.fixture(scope="module")
def ground_truth() -> list[str]:
    window = ("--start", format_time(START), "--end", format_time(END))
    out = manage("spanner_simulator", "--ground-truth", "--database", "demo-db", *window, *SIM_OPTIONS)
    return canonical(out.stdout)


@pytest.fixture(scope="module")
def googlesql_run(lineage_simulator):
    return tail(lineage_simulator, "demo-db")


def test_tail_output_equals_ground_truth(googlesql_run, ground_truth):
    # given a window with many splits and merges, when it is tailed, then
    # every record a correct reader must deliver is printed, none missing, none twice
    printed = canonical(googlesql_run.stdout)
    assert len(ground_truth) > 1000
    assert printed == ground_truth
    assert len(set(printed)) == len(printed)


def test_window_holds_at_least_20_splits_and_merges(googlesql_run):
    summary = dict(item.split("=") for item in googlesql_run.stderr.split())
    assert int(summary["splits"]) >= 20
    assert int(summary["merges"]) >= 20
    assert int(summary["data_records"]) > 1000


def test_children_are_queried_after_all_parents_ended_and_merged_children_once(
    lineage_simulator, googlesql_run
):
    log = [q for q in lineage_simulator.queries() if q.database == "demo-db" and q.token]
    by_token: dict[str, list] = {}
    for query in log:
        by_token.setdefault(query.token, []).append(query)
    merged = 0
    for token, queries in by_token.items():
        partition = lineage_simulator.topology.get(token)
        parents = [p for p in partition.parents if p in by_token]
        if len(partition.parents) > 1:
            merged += 1
            # a merged child is read once, not once per parent
            assert len([q for q in queries if not q.resumed]) == 1
        first_opened = min(q.opened_at for q in queries)
        for parent in parents:
            assert all(q.closed_at is not None for q in by_token[parent])
            assert first_opened >= max(q.closed_at for q in by_token[parent])
    assert merged >= 20


def test_postgresql_database_gives_the_same_records(lineage_simulator, googlesql_run):
    # the same simulator window read through the PostgreSQL dialect
    pg = tail(lineage_simulator, "demo-pg")
    strip = [json.loads(line) for line in canonical(pg.stdout)]
    google = [json.loads(line) for line in canonical(googlesql_run.stdout)]
    assert strip == google


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--stream", "Nope"], "Nope"),
        (["--heartbeat-ms", "999"], "heartbeat"),
        (["--stream", "Changes; DROP"], "invalid change stream name"),
        (["--end", "2020-01-01T00:00:00Z"], "before"),
    ],
)
def test_bad_arguments_end_with_one_line_and_status_2(lineage_simulator, args, message):
    base = ["--project", "p", "--instance", "i", "--database", "demo-db", "--stream", "Changes"]
    base += ["--start", format_time(START), "--emulator-host", lineage_simulator.emulator_host]
    result = manage("tail_change_stream", *base, *args, check=False)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]
    assert "Traceback" not in result.stderr


def test_start_outside_retention_is_refused_with_status_2(lineage_simulator):
    base = ["--project", "p", "--instance", "i", "--database", "demo-db", "--stream", "Changes"]
    old = format_time(EPOCH - timedelta(hours=3))
    result = manage(
        "tail_change_stream",
        *base,
        "--start",
        old,
        "--emulator-host",
        lineage_simulator.emulator_host,
        check=False,
    )
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "retention" in result.stderr
