"""The reader over real gRPC against the simulator: dialects agree, errors are classified."""

from __future__ import annotations

import dataclasses
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from partitions.simulator.core.config import Fault
from partitions.simulator.spanner.server import start_server
from partitions.sources.spanner_change_stream.errors import PermanentSpannerError, RetryableSpannerError
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


class _ReadInThread:
    """One partition's read on a thread of its own: the records so far, its error, its CPU time."""

    def __init__(self, reader: ChangeStreamReader, token: str, start: datetime, end: datetime | None):
        self.records, self.error, self.cpu_s = [], None, 0.0
        self.thread = threading.Thread(target=self._run, args=(reader, token, start, end), daemon=True)
        self.thread.start()

    def _run(self, reader, token, start, end) -> None:
        began = time.thread_time()
        try:
            for record in reader.read(token, start, end):
                self.records.append(record)
        except Exception as error:  # the test looks at which
            self.error = error
        self.cpu_s = time.thread_time() - began

    def done(self) -> bool:
        return not self.thread.is_alive()


def _busy_root(server, start: datetime) -> str:
    """Return the token of the root partition at start with the most data records in the next 20 s."""
    reader = _reader(server.emulator_host, "demo-db", "googlesql")
    roots = [c.token for r in reader.read(None, start, start + WINDOW) for c in r.child_partitions]

    def data_records(token: str) -> int:
        return sum(isinstance(r, DataChangeRecord) for r in reader.read(token, start, start + WINDOW))

    return max(roots, key=data_records)


def test_a_server_gone_mid_read_ends_the_read_retryably_within_its_budget_without_spinning(
    simulator, wait_for
):
    # given an open-ended read of a partition (none splits) from its own server, records arriving
    server = start_server(dataclasses.replace(simulator.config, split_every=3600, merge_every=3600))
    start = datetime.now(UTC) - timedelta(seconds=5)
    reader = ChangeStreamReader(
        connect("p", "i", "demo-db", emulator_host=server.emulator_host), "Changes", "googlesql", 1_000,
        unavailable_s=4.0,
    )  # fmt: skip
    try:
        (root, *_) = [c.token for r in reader.read(None, start, start) for c in r.child_partitions]
        read = _ReadInThread(reader, root, start, None)
        wait_for("records to arrive", lambda: len(read.records) > 5)
    finally:
        # when the server goes away for good (timed from before the stop: the calls break
        # as it begins, and the budget runs from the first attempt after that)
        gone = time.monotonic()
        server.stop(grace=0)
    # then the read ends with a retryable UNAVAILABLE once its budget is spent, not at once
    # and not never (the client alone restarts the query for ever, a core busy all along)
    wait_for("the read to end", read.done, timeout=30)
    assert isinstance(read.error, RetryableSpannerError), read.error
    assert read.error.code == "UNAVAILABLE"
    assert 4.0 - 2.0 <= time.monotonic() - gone <= 20.0  # its last pause (<= 2 s) would pass 4 s
    # and waiting cost the thread next to no CPU (it backs off between attempts)
    assert read.cpu_s < 2.0, f"{read.cpu_s:.1f} CPU-s while the server was away"


def test_a_server_back_within_the_budget_is_read_on_and_loses_nothing(simulator, wait_for):
    # given a busy partition's window read from a server that sends one record each 2 ms,
    # and the same window read from a server that stays up
    start = _window_start()
    config = dataclasses.replace(simulator.config, batch_rows=1, faults=(Fault("slow", 2.0),))
    token = _busy_root(simulator, start)
    clean = list(_reader(simulator.emulator_host, "demo-db", "googlesql").read(token, start, start + WINDOW))
    server = start_server(config, "127.0.0.1", 0)
    try:
        reader = _reader(server.emulator_host, "demo-db", "googlesql")  # the default budget
        read = _ReadInThread(reader, token, start, start + WINDOW)
        wait_for("records to arrive", lambda: len(read.records) > 3)
    finally:
        # when the server goes away mid-read and comes back on its port two seconds later
        port = server.port
        server.stop(grace=0)
    stopped = time.monotonic()
    wait_for("two seconds", lambda: time.monotonic() - stopped >= 2.0)
    back = start_server(config, "127.0.0.1", port)
    try:
        # then the read goes on where it was, and every record arrives once
        wait_for("the read to end", read.done, timeout=60)
    finally:
        back.stop(grace=0)
    assert read.error is None, read.error
    assert read.records == clean
