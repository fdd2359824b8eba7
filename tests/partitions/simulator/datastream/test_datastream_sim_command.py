"""The datastream_simulator command: it serves the official client; a bad option is one line and status 2."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from google.cloud import datastream_v1
from google.cloud.datastream_v1.services.datastream.transports import DatastreamGrpcTransport

from partitions.management.commands.datastream_simulator import Command

MANAGE = str(Path(__file__).resolve().parents[4] / "manage.py")


@pytest.mark.parametrize(
    ("args", "says"),
    [(["--streams", "0"], "--streams must be between"), (["--streams", "many"], "invalid int value")],
)
def test_bad_option_is_one_line_on_stderr_and_status_2(args, says, capsys):
    # given the command run as manage.py runs it (in this process: Django is set up already)
    with pytest.raises(SystemExit) as exited:
        Command().run_from_argv(["manage.py", "datastream_simulator", *args])
    # then it exits with 2 after one line on stderr
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0
    assert says in err


@pytest.mark.slow
def test_command_serves_streams_until_stopped():
    # given the command started on any free port
    proc = subprocess.Popen(
        [sys.executable, MANAGE, "datastream_simulator", "--port", "0", "--streams", "3", "--seed", "9"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = proc.stdout.readline()
        endpoint = re.search(r" on (\S+?:\d+):", banner)[1]
        # when the official client lists the location
        channel = grpc.insecure_channel(endpoint)
        client = datastream_v1.DatastreamClient(transport=DatastreamGrpcTransport(channel=channel))
        streams = list(client.list_streams(parent="projects/demo-project/locations/us-central1"))
        # then it gets the three streams
        assert [s.name.rsplit("/", 1)[-1] for s in streams] == ["stream-000", "stream-001", "stream-002"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0
