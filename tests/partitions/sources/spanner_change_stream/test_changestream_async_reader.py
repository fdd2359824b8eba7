"""The asyncio read (multiplexed live reads) over real gRPC against the simulator: what the thread reads."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from partitions.simulator.core.config import Fault
from partitions.simulator.spanner.server import SimulatorServer, start_server
from partitions.sources.base import PROGRESS, Ended, PartitionState, ReadOptions
from partitions.sources.spanner_change_stream.errors import RetryableSpannerError
from partitions.sources.spanner_change_stream.reader import AsyncChangeStreamReader, connect, connect_async
from partitions.sources.spanner_change_stream.source import ChangeStreamSource

WINDOW = timedelta(seconds=20)


def _source(host: str, database: str, dialect: str | None = None) -> ChangeStreamSource:
    values = {"project": "p", "instance": "i", "database": database, "emulator_host": host}
    values |= {"change_stream": "Changes", "dialect": dialect}
    return ChangeStreamSource(connect("p", "i", database, emulator_host=host), values)


async def _read_async(
    source: ChangeStreamSource, state: PartitionState, end, options
) -> tuple[list, datetime]:
    read = await source.read_async(state, end, options)
    try:
        return [item async for item in read], read.watermark
    finally:
        await read.aclose()


def _window(source: ChangeStreamSource, start: datetime) -> dict:
    """Return {token: (items, watermark)} of each root of [start, start + WINDOW], read on this thread."""
    options, end, found = ReadOptions(1_000), start + WINDOW, {}
    pending = [root.token for root in source.roots(start, end, options)]
    while pending:
        token = pending.pop(0)
        read = source.read(PartitionState(token, start, start), end, options)
        found[token] = (list(read), read.watermark)
    return found


@pytest.mark.parametrize(("database", "dialect"), [("demo-db", "googlesql"), ("demo-pg", "postgresql"),
                                                   ("demo-pg", None)])  # fmt: skip
def test_the_asyncio_read_yields_what_the_threads_read_yields(simulator, database, dialect):
    # given every root partition of a past window (records, heartbeats and ends), read by the thread's read
    source = _source(simulator.emulator_host, database, dialect)
    start = datetime.now(UTC) - timedelta(minutes=20)
    expected = _window(source, start)

    # when the same partitions are read at once on one event loop (the dialect asked of the database if unset)
    async def all_at_once():
        reads = [_read_async(source, PartitionState(t, start, start), start + WINDOW, ReadOptions(1_000))
                 for t in expected]  # fmt: skip
        return dict(zip(expected, await asyncio.gather(*reads), strict=True))

    got = asyncio.run(all_at_once())
    # then every partition gives the same items in the same order, and the same watermark
    assert got == expected
    items = [item for found, _ in got.values() for item in found]
    assert items.count(PROGRESS) > 10
    assert sum(type(i) is Ended for i in items) >= 1
    assert sum(type(i).__name__ == "DataChangeRecord" for i in items) > 20


def test_unavailable_mid_stream_is_resumed_on_the_loop_and_loses_nothing(simulator):
    # given a window read from a clean server, and a server that breaks a stream now and then
    config = dataclasses.replace(simulator.config, faults=(Fault("unavailable", 0.2),), batch_rows=8)
    server = start_server(config, "127.0.0.1", 0)
    try:
        start = datetime.now(UTC) - timedelta(minutes=20)
        clean = _window(_source(simulator.emulator_host, "demo-db", "googlesql"), start)
        faulty = _source(server.emulator_host, "demo-db", "googlesql")

        async def all_at_once():
            reads = [_read_async(faulty, PartitionState(t, start, start), start + WINDOW, ReadOptions(1_000))
                     for t in clean]  # fmt: skip
            return dict(zip(clean, await asyncio.gather(*reads), strict=True))

        # when the asyncio reads go through the faulty server
        got = asyncio.run(all_at_once())
        # then the broken streams were resumed from their resume tokens and every item arrived once
        assert [q for q in server.queries() if q.resumed], "no stream was broken and resumed"
        assert got == clean
    finally:
        server.stop(grace=0)


def test_a_server_gone_ends_the_asyncio_read_retryably_within_its_budget_without_spinning(
    simulator, wait_for
):
    # given an open-ended asyncio read of a live partition from its own server, heartbeats arriving
    server = start_server(dataclasses.replace(simulator.config, split_every=3600, merge_every=3600))
    start = datetime.now(UTC) - timedelta(seconds=5)
    source = _source(server.emulator_host, "demo-db", "googlesql")
    (root, *_) = [p.token for p in source.roots(start, start, ReadOptions(1_000))]
    seen, outcome = [], {}

    async def read_on():
        database = await connect_async("p", "i", "demo-db", server.emulator_host)
        reader = AsyncChangeStreamReader(database, "Changes", "googlesql", 1_000, unavailable_s=4.0)
        began = time.thread_time()
        try:
            async for record in reader.read(root, start, None):
                seen.append(record)
        except Exception as error:  # the test looks at which
            outcome["error"] = error
        outcome["cpu_s"] = time.thread_time() - began

    thread = threading.Thread(target=asyncio.run, args=(read_on(),), daemon=True)
    thread.start()
    try:
        wait_for("heartbeats to arrive", lambda: len(seen) > 3)
    finally:
        # when the server goes away for good
        gone = time.monotonic()
        server.stop(grace=0)
    # then the read ends with a retryable UNAVAILABLE once its budget is spent, not at once, not never
    wait_for("the read to end", lambda: not thread.is_alive(), timeout=30)
    assert isinstance(outcome.get("error"), RetryableSpannerError), outcome
    assert outcome["error"].code == "UNAVAILABLE"
    assert 4.0 - 2.0 <= time.monotonic() - gone <= 20.0
    # and the loop's thread backed off between attempts
    assert outcome["cpu_s"] < 2.0, f"{outcome['cpu_s']:.1f} CPU-s while the server was away"


def _client_threads() -> int:
    """Return this process's threads but the in-process server's (a thread per stream it serves)."""
    return sum(not t.name.startswith(SimulatorServer.threads) for t in threading.enumerate())


def test_hundreds_of_live_reads_share_one_thread(simulator, wait_for):
    # given a server of 100 partitions that never split or merge and write nothing (and that
    # serves 100 streams at once), and an open-ended read of each. Nothing written: a heartbeat
    # comes only after a second with no record, so with writes the time to three heartbeats is
    # the workload's luck (a partition with two records a second waits about 3 s for each);
    # without, every read has one a second, and a slow one is the loop's fault.
    config = dataclasses.replace(
        simulator.config, roots=100, tps=0.0, split_every=3600, merge_every=3600, max_workers=160
    )
    server = start_server(config)
    try:
        source = _source(server.emulator_host, "demo-db", "googlesql")
        start = datetime.now(UTC) - timedelta(seconds=2)
        roots = [p.token for p in source.roots(start, start, ReadOptions(1_000))]
        tokens = roots
        assert len(tokens) == 100
        beats, errors = [0] * len(tokens), []
        threads_before = _client_threads()

        async def follow(i: int, token: str) -> None:
            read = await source.read_async(PartitionState(token, start, start), None, ReadOptions(1_000))
            try:
                async for item in read:
                    beats[i] += item is PROGRESS
            except Exception as error:
                errors.append(error)
                raise
            finally:
                await read.aclose()

        async def main(stop: threading.Event) -> None:
            tasks = [asyncio.create_task(follow(i, t)) for i, t in enumerate(tokens)]
            while not stop.is_set():
                await asyncio.sleep(0.1)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        stop = threading.Event()
        loop = threading.Thread(target=asyncio.run, args=(main(stop),), daemon=True)
        loop.start()
        try:
            # when they read for a few heartbeats
            wait_for(
                "every read to see three heartbeats",
                lambda: min(beats) >= 3,
                timeout=30,
                detail=lambda: f"{sum(b == 0 for b in beats)} silent, {errors[:3]}",
            )
            # then they all did, on the loop's thread and gRPC's few own threads: not a thread each
            assert _client_threads() - threads_before < 20
        finally:
            stop.set()
            loop.join(10)
        assert not loop.is_alive()
    finally:
        server.stop(grace=0)


def test_a_read_does_not_ask_opentelemetry_for_its_tracer_provider_chunk_after_chunk(simulator, monkeypatch):
    # given both clients of a database (made, as a worker makes them, before its reads)
    from opentelemetry import trace

    source = _source(simulator.emulator_host, "demo-db", "googlesql")
    start = datetime.now(UTC) - timedelta(minutes=20)
    token = next(iter(source.roots(start, start + WINDOW, ReadOptions(1_000)))).token
    loop = asyncio.new_event_loop()  # the asyncio client is made once per loop, as on the live loop
    loop.run_until_complete(
        _read_async(source, PartitionState(token, start, start), start + WINDOW, ReadOptions(1_000))
    )
    asks = []
    looked_up = trace.get_tracer_provider

    def counted():
        asks.append(1)
        return looked_up()

    monkeypatch.setattr(trace, "get_tracer_provider", counted)
    # when a window is read on a thread and on an event loop
    items = list(source.read(PartitionState(token, start, start), start + WINDOW, ReadOptions(1_000)))
    read_async = _read_async(source, PartitionState(token, start, start), start + WINDOW, ReadOptions(1_000))
    items_async, _ = loop.run_until_complete(read_async)
    loop.close()
    # then the clients used the provider they were given (it read os.environ on each ask:
    # 7.5 % of a reader's time at 2,000 live partitions) and read the same window
    assert len(items) > 2
    assert items_async == items
    assert asks == []
