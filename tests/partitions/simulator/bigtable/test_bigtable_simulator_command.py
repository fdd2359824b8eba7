"""The bigtable_simulator command: ground truth is reproducible, bad options exit with 2."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from partitions.simulator.bigtable.config import BigtableSimulatorConfig
from partitions.simulator.bigtable.groundtruth import ground_truth_lines

MANAGE = str(Path(__file__).resolve().parents[4] / "manage.py")
WINDOW = ["--start", "2024-05-01T09:10:00Z", "--end", "2024-05-01T09:10:03Z"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, MANAGE, "bigtable_simulator", *args], capture_output=True, text=True, timeout=60
    )


def test_ground_truth_is_printed_as_sorted_json_lines_the_same_in_every_process():
    # given the same seed, options and epoch
    args = ["--ground-truth", "--table", "events", "--epoch", "2024-05-01T09:00:00Z", "--tps", "50", *WINDOW]
    # when the command runs
    first = run(*args)
    # then it prints what the same config gives in any other process, in commit order
    assert first.returncode == 0, first.stderr
    config = BigtableSimulatorConfig(tps=50, epoch=datetime(2024, 5, 1, 9, tzinfo=UTC))
    start, end = datetime(2024, 5, 1, 9, 10, tzinfo=UTC), datetime(2024, 5, 1, 9, 10, 3, tzinfo=UTC)
    assert first.stdout.splitlines() == list(ground_truth_lines(config, "events", start, end))
    lines = [json.loads(line) for line in first.stdout.splitlines()]
    assert len(lines) > 100
    stamps = [line["commit_timestamp"] for line in lines]
    assert stamps == sorted(stamps)
    assert {"row_key", "tiebreaker", "type", "source_cluster_id", "mods"} <= set(lines[0])
    assert lines[0]["mods"][0]["keys"]["row_key"] == lines[0]["row_key"]


def test_a_bad_option_is_one_line_on_stderr_and_status_2():
    result = run("--fault", "explode:1")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "invalid fault" in result.stderr


def test_ground_truth_needs_one_table_and_a_window():
    result = run("--ground-truth", "--start", "2024-05-01T09:10:00Z")
    assert result.returncode == 2
    assert "--ground-truth needs one --table, --start and --end" in result.stderr
