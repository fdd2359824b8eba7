"""The cdc_stream command: what a script sees, including its refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from streams.models import Stream
from tests.factories import databases

pytestmark = pytest.mark.django_db
CONNECTION = ["--project", "p", "--instance", "i", "--database", "d", "--change-stream", "Orders"]


def run(*args: str) -> str:
    """Run cdc_stream in-process and return what it printed."""
    out = []

    class Sink:
        def write(self, text):
            out.append(text)

        def flush(self):
            pass

    call_command("cdc_stream", *args, stdout=Sink())
    return "".join(out)


def test_create_then_status_json(sent_tasks):
    printed = run(
        "create", "orders", *CONNECTION, "--start", "2026-01-01T12:00:00Z", "--end", "2026-01-01T16:00+02:00"
    )
    assert "created stream 'orders' (NOT_STARTED)" in printed
    stream = Stream.objects.get(name="orders")
    assert (stream.start_at, stream.end_at) == (
        datetime(2026, 1, 1, 12, tzinfo=UTC),
        datetime(2026, 1, 1, 14, tzinfo=UTC),
    )
    status = json.loads(run("status", "orders", "--json"))
    assert status["name"] == "orders"
    assert status["state"] == "NOT_STARTED"
    assert status["partitions_by_state"] == {"CREATED": 0, "SCHEDULED": 0, "RUNNING": 0, "FINISHED": 0}
    assert {"state_reason", "data_records", "low_watermark", "lag_seconds"} <= status.keys()


def test_relative_start_and_options_are_stored():
    run("create", "demo", *CONNECTION, "--start", "-30m", "--dialect", "postgresql", "--heartbeat-ms", "2000")
    stream = Stream.objects.get(name="demo")
    age = (datetime.now(UTC) - stream.start_at).total_seconds()
    assert 1790 < age < 1830
    assert (stream.connection["dialect"], stream.heartbeat_ms, stream.end_at) == ("postgresql", 2000, None)


def test_start_pause_resume_print_the_new_state(make_stream, sent_tasks):
    make_stream()
    assert "stream 'orders': STARTING" in run("start", "orders")
    Stream.objects.filter(name="orders").update(state="RUNNING")
    assert "stream 'orders': DRAINING" in run("pause", "orders")


def test_status_table_lists_every_stream(make_stream):
    make_stream(name="alpha", state="RUNNING")
    make_stream(name="beta", state="PAUSED")
    lines = run("status").splitlines()
    assert lines[0].split()[:2] == ["NAME", "STATE"]
    assert [line.split()[:2] for line in lines[1:]] == [["alpha", "RUNNING"], ["beta", "PAUSED"]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["start", "nope"], "no stream named 'nope'"),
        (
            ["resume", "orders"],
            "cannot resume stream 'orders': it is NOT_STARTED (resume is allowed from PAUSED)",
        ),
        (["create", "orders", *CONNECTION], "a stream named 'orders' already exists"),
        (["create", "x", *CONNECTION, "--start", "yesterday"], "--start: invalid time 'yesterday'"),
        (["create", "x", *CONNECTION, "--heartbeat-ms", "999"], "between 1,000 and 300,000, got 999"),
        (["create", "x", *CONNECTION, "--start", "now", "--end", "-1h"], "--end ("),
        (["recover", "orders", "--strategy", "timestamp"], "needs a timestamp"),
    ],
)
def test_refusals_are_command_errors_with_status_2(make_stream, args, message):
    make_stream()
    with pytest.raises(CommandError) as refused:
        run(*args)
    assert message in str(refused.value)
    assert refused.value.returncode == 2
    assert Stream.objects.count() == 1


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory):
    """Return an environment for cdc_stream subprocesses on a fresh database and a temp var dir."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["CDC_VAR_DIR"] = str(tmp_path_factory.mktemp("var"))
    env["DATABASE_URL"] = databases.create_database("cli")
    manage = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, timeout=120)
    yield manage, env
    databases.drop_database(env["DATABASE_URL"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["resume", "ghost"], "no stream named 'ghost'"),
        (["create", "x", *CONNECTION, "--heartbeat-ms", "abc"], "invalid int value: 'abc'"),
        (["create", "x", *CONNECTION, "--start", "2026-01-01T00:00"], "has no time zone"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_cli_error_is_one_stderr_line_and_exit_status_2(cli_env, args, message):
    manage, env = cli_env
    done = subprocess.run([*manage, "cdc_stream", *args], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
