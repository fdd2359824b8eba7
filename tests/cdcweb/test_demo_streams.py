"""`make demo` registers one stream of each kind it can serve from the simulator, once."""

from __future__ import annotations

import os
import subprocess

import pytest

from cdcweb import demo
from cdcweb.alerts.models import AlertRule
from cdcweb.alerts.rules import rule_errors
from streams.models import Stream
from tests.factories.ops import _fresh_health, django_db_setup  # noqa: F401 - the operations tests' fixtures

pytestmark = pytest.mark.django_db


def test_the_demo_registers_change_streams_a_commit_timestamp_table_and_bigtable_once(monkeypatch):
    monkeypatch.setenv("SPANNER_EMULATOR_HOST", "127.0.0.1:9010")
    done = demo.ensure_streams()
    assert sorted(line for line in done if line.startswith("created")) == [
        "created demo-bigtable", "created demo-events-table", "created demo-orders", "created demo-payments"
    ]  # fmt: skip
    kinds = dict(Stream.objects.values_list("name", "source_kind"))
    assert kinds == {
        "demo-orders": "spanner_change_stream",
        "demo-payments": "spanner_change_stream",
        "demo-events-table": "spanner_commit_timestamp",
        "demo-bigtable": "bigtable",
    }
    assert Stream.objects.get(name="demo-bigtable").connection["table"] == "events"
    table = Stream.objects.get(name="demo-events-table")
    assert table.connection["shard_column"] == "ShardId"
    assert table.connection["index"] == "ShardedEventsByShardLastModified"
    assert set(Stream.objects.values_list("state", flat=True)) == {Stream.State.STARTING}
    # a second run (the demo restarted) changes nothing
    assert demo.ensure_streams() == []
    assert Stream.objects.count() == 4


def test_the_demo_ships_example_alert_rules_once():
    assert len(demo.ensure_alert_rules()) == len(demo.DEMO_RULES)
    rules = list(AlertRule.objects.all())
    assert {rule.kind for rule in rules} >= {"lag_above", "stream_failed", "partition_stalled", "retention"}
    assert all(rule.stream is None and rule.enabled for rule in rules)  # every stream
    assert all(not rule_errors(r.kind, r.for_minutes, r.retention_hours) for r in rules)  # valid as saved
    assert demo.ensure_alert_rules() == []  # a restarted demo adds none


def test_the_demo_runs_the_bigtable_simulator_where_its_stream_reads(monkeypatch):
    # a copy of the environment, so nothing the demo sets outlives the test
    environ = {k: v for k, v in os.environ.items() if k != "BIGTABLE_EMULATOR_HOST"}
    monkeypatch.setattr(os, "environ", {**environ, "DJANGO_SECRET_KEY": "x" * 50})
    env = demo.prepare_environment()
    procfile = (demo.ROOT / "Procfile").read_text()
    line = next(line for line in procfile.splitlines() if line.startswith("bigtable:"))
    assert env["BIGTABLE_EMULATOR_HOST"] == f"127.0.0.1:{demo.BIGTABLE_PORT}"
    assert "bigtable_simulator --port ${CDC_DEMO_BIGTABLE_PORT:-8086}" in line
    assert demo.BIGTABLE_PORT == 8086


def test_the_demo_watches_two_datastream_streams_once():
    done = demo.ensure_datastream_streams()
    assert done == ["created demo-datastream-000", "created demo-datastream-001"]
    streams = Stream.objects.filter(source_kind="datastream").order_by("name")
    assert [s.connection["stream_id"] for s in streams] == ["stream-000", "stream-001"]
    assert demo.ensure_datastream_streams() == []


def test_the_procfile_serves_the_demos_datastream_streams():
    procfile = (demo.ROOT / "Procfile").read_text()
    line = next(line for line in procfile.splitlines() if line.startswith("datastream:"))
    assert f"--streams {len(demo.DEMO_DATASTREAM)}" in line
    assert str(demo.DATASTREAM_PORT) in line


def test_the_demo_runs_a_reader_process_per_core_unless_told():
    assert demo.reader_processes({}) == len(os.sched_getaffinity(0))
    assert demo.reader_processes({"CDC_READERS": " 3 "}) == 3
    for bad in ("0", "-1", "two", "1.5"):
        with pytest.raises(SystemExit, match="CDC_READERS must be a whole number"):
            demo.reader_processes({"CDC_READERS": bad})


def test_each_reader_process_of_the_demo_is_a_celery_node_of_its_own():
    from honcho.environ import expand_processes, parse_procfile

    command = demo.honcho_command("honcho", 3)
    concurrency = dict(pair.split("=") for pair in command[command.index("-c") + 1].split(","))
    procfile = parse_procfile((demo.ROOT / "Procfile").read_text())
    processes = expand_processes(procfile.processes, {k: int(v) for k, v in concurrency.items()}, env={})
    readers = [p for p in processes if p.name.startswith("reader.")]
    names = []
    for process in readers:  # the line as honcho runs it (sh -c), celery only echoing its node name
        shell = 'celery() { while [ "$1" != -n ]; do shift; done; echo "$2"; }; ' + process.cmd
        out = subprocess.run(["sh", "-c", shell], env={**process.env, "PATH": os.environ["PATH"]},
                             capture_output=True, text=True, check=True)  # fmt: skip
        names.append(out.stdout.strip())
    host = "%h"  # celery fills in the host name
    assert names == [f"reader.1@{host}", f"reader.2@{host}", f"reader.3@{host}"]
    assert sum(p.name.startswith("housekeeping.") for p in processes) == 1  # the other lines run once
