"""The reader over real gRPC against the simulator: dialects agree, errors are classified."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from partitions.simulator.core.config import Fault
from partitions.simulator.spanner.server import start_server
from partitions.sources.spanner_change_stream.errors import PermanentSpannerError
from partitions.sources.spanner_change_stream.reader import ChangeStreamReader, connect, detect_dialect
from partitions.sources.spanner_change_stream.records import ChildPartitionsRecord, DataChangeRecord

WINDOW = timedelta(seconds=20)


def _reader(host: str, database: str, dialect: str) -> ChangeStreamReader:
    return ChangeStreamReader(connect("p", "i", database, emulator_host=host), "Changes", dialect, 1_000)


def _window_start() -> datetime:
    # Well inside the retention, in the past: a backlog that the simulator serves at once.
    return datetime.now(UTC) - timedelta(minutes=20)


def _read_window(reader: ChangeStreamReader, start: datetime) -> dict:
    """Return {token: records} of every partition of [start, start + WINDOW], splits and merges followed."""
    end = start + WINDOW
    pending = [(None, start)]
    records: dict = {}
    while pending:
        token, at = pending.pop(0)
        found = list(reader.read(token, at, end))
        if token is not None:
            records[token] = found
        for record in found:
            if isinstance(record, ChildPartitionsRecord):
                for child in record.child_partitions:
                    # A merged child is announced by every parent: read it once.
                    if child.token not in records and all(child.token != t for t, _ in pending):
                        pending.append((child.token, record.start_timestamp))
    return records


def test_database_dialects_are_detected(simulator):
    host = simulator.emulator_host
    assert detect_dialect(connect("p", "i", "demo-db", emulator_host=host)) == "googlesql"
    assert detect_dialect(connect("p", "i", "demo-pg", emulator_host=host)) == "postgresql"


def test_both_dialects_give_identical_records_for_the_same_window(simulator):
    # given the same window read from the GoogleSQL and the PostgreSQL database
    start = _window_start()
    googlesql = _read_window(_reader(simulator.emulator_host, "demo-db", "googlesql"), start)
    postgresql = _read_window(_reader(simulator.emulator_host, "demo-pg", "postgresql"), start)
    # then every partition gives the same records, and there were data records to compare
    assert googlesql == postgresql
    assert sum(isinstance(r, DataChangeRecord) for rs in googlesql.values() for r in rs) > 100


def test_start_older_than_retention_is_a_permanent_error(simulator):
    reader = _reader(simulator.emulator_host, "demo-db", "googlesql")
    too_old = datetime.now(UTC) - timedelta(seconds=simulator.config.retention + 600)
    with pytest.raises(PermanentSpannerError) as caught:
        list(reader.read(None, too_old, too_old + WINDOW))
    assert caught.value.code == "INVALID_ARGUMENT"
    assert caught.value.__cause__ is not None


@pytest.fixture(scope="module")
def faulty_simulator(simulator):
    # Same seed and epoch as the session simulator, so it serves the same records, but
    # every message may end the stream with UNAVAILABLE.
    config = dataclasses.replace(simulator.config, faults=(Fault("unavailable", 0.2),), batch_rows=8)
    server = start_server(config, "127.0.0.1", 0)
    try:
        yield server
    finally:
        server.stop(grace=0.5)


@pytest.mark.parametrize(("database", "dialect"), [("demo-db", "googlesql"), ("demo-pg", "postgresql")])
def test_unavailable_mid_stream_is_resumed_and_loses_nothing(simulator, faulty_simulator, database, dialect):
    # given a window read from a clean server and from one that breaks streams
    start = _window_start()
    clean = _read_window(_reader(simulator.emulator_host, database, dialect), start)
    faulty = _read_window(_reader(faulty_simulator.emulator_host, database, dialect), start)
    # then the broken streams were resumed and every record arrived exactly once
    resumed = [q for q in faulty_simulator.queries() if q.dialect == dialect and q.resumed]
    assert resumed, "no stream was broken and resumed"
    assert faulty == clean
    assert sum(isinstance(r, DataChangeRecord) for rs in faulty.values() for r in rs) > 100
