"""The simulator commands' shared face: the change-stream options and their one-line errors."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

CHANGE_STREAM_COMMANDS = [("spanner_simulator", "database"), ("bigtable_simulator", "table")]


@pytest.mark.parametrize(("command", "source"), CHANGE_STREAM_COMMANDS)
@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--max-workers", "0"], "--max-workers must be at least 1"),
        (["--split-every", "soon"], "invalid duration 'soon'"),
        (["--epoch", "yesterday"], "invalid timestamp 'yesterday'"),
        (["--roots", "0"], "roots must be at least 1"),
    ],
)
def test_both_change_stream_simulators_refuse_a_bad_shared_option_in_one_line(command, source, options, says):
    with pytest.raises(CommandError, match=says) as refused:
        call_command(command, *options)
    assert refused.value.returncode == 2


@pytest.mark.parametrize(("command", "source"), CHANGE_STREAM_COMMANDS)
def test_ground_truth_asks_for_one_of_what_the_simulator_serves_and_a_window(command, source):
    # given two of them named and no end
    two = [f"--{source}", "two-a", f"--{source}", "two-b"]
    # then the command says what it needs
    with pytest.raises(CommandError, match=f"needs one --{source}, --start and --end") as refused:
        call_command(command, "--ground-truth", *two, "--start", "2024-05-01T09:00:00Z")
    assert refused.value.returncode == 2


@pytest.mark.parametrize(("command", "source"), CHANGE_STREAM_COMMANDS)
def test_a_window_before_the_epoch_prints_nothing_but_the_epoch_and_seed(command, source, capsys):
    call_command(
        command, "--ground-truth", f"--{source}", "demo-db" if source == "database" else "events",
        "--epoch", "2024-05-01T09:00:00Z", "--seed", "3",
        "--start", "2024-05-01T08:00:00Z", "--end", "2024-05-01T08:00:05Z",
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert out == ""
    assert "epoch 2024-05-01T09:00:00+00:00 seed 3" in err
