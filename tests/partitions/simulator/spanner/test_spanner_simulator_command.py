"""The spanner_simulator command: ground truth is reproducible, bad options exit with 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

MANAGE = str(Path(__file__).resolve().parents[4] / "manage.py")
WINDOW = ["--start", "2024-05-01T09:10:00Z", "--end", "2024-05-01T09:10:05Z"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, MANAGE, "spanner_simulator", *args], capture_output=True, text=True, timeout=60
    )


def test_ground_truth_is_identical_across_runs():
    # given the same seed, options and epoch
    args = [
        "--ground-truth",
        "--database",
        "demo-db",
        "--epoch",
        "2024-05-01T09:00:00Z",
        "--retention",
        "1d",
        *WINDOW,
    ]
    # when the command runs twice
    first, second = run(*args), run(*args)
    # then it prints the same JSON lines, sorted, with the seed's field names
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    lines = [json.loads(line) for line in first.stdout.splitlines()]
    assert len(lines) > 50
    assert list(lines[0])[:3] == ["partition_token", "commit_timestamp", "record_sequence"]
    keys = [(d["commit_timestamp"], d["server_transaction_id"], d["record_sequence"]) for d in lines]
    assert keys == sorted(keys)


def test_bad_option_is_one_line_on_stderr_and_status_2():
    result = run("--fault", "explode:1")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "invalid fault" in result.stderr


def test_a_denial_of_a_database_not_served_is_one_line_and_status_2():
    result = run("--deny", "nope:reader")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "cannot deny access to database nope: it is not served" in result.stderr
