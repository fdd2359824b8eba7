"""Watched (Datastream) streams on a real beat and a real housekeeping worker.

Beat polls the simulator every second; its streams run through every state in a one-minute
cycle. What an operator asks goes through the broker to the worker, which has Datastream
carry it out and follows it to its end.
"""

from __future__ import annotations

import time

import pytest

from partitions.models import LagSample, Partition, WatchedStream
from partitions.simulator.datastream.config import DatastreamSimConfig
from partitions.simulator.datastream.server import start_server
from partitions.sources.datastream.client import DATASTREAM_ENDPOINT_ENV, MONITORING_ENDPOINT_ENV
from streams.models import Stream, StreamOperation
from tests.partitions.pipeline.conftest import TEST_ENV, _wait_for

pytestmark = pytest.mark.slow
BY = "partitions.watch.tasks.poll_watched_streams_task"


@pytest.fixture(scope="module")
def ds_server():
    """Yield a Datastream simulator of 6 streams that change state every few seconds."""
    config = DatastreamSimConfig(
        seed=3, streams=6, cycle=60.0, operation_seconds=0.5, metric_step=2.0, epoch=time.time() - 30
    )
    server = start_server(config)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def pipeline_env(ds_server) -> dict[str, str]:
    """Return the tests' fast beat, polling watched streams every second at the simulator."""
    return {
        **TEST_ENV,
        "CDC_WATCH_SECONDS": "1",
        "CDC_WATCH_OBJECTS_EVERY": "1",
        "CDC_WATCH_METRICS_WINDOW_SECONDS": "30",
        DATASTREAM_ENDPOINT_ENV: ds_server.endpoint,
        MONITORING_ENDPOINT_ENV: ds_server.endpoint,
    }


@pytest.fixture(scope="module")
def watched(pipeline, ds_server):
    """Import the simulator's location and start beat with its housekeeping worker."""
    pipeline.manage(
        "cdc_stream", "import-datastream", "--project", "demo-project", "--location", "us-central1"
    )
    pipeline.beat()
    return pipeline


def test_beat_records_each_move_the_simulator_makes(watched, ds_server):
    # given six watched streams whose scripts move every few seconds
    stream = Stream.objects.get(name="stream-000")
    before = stream.transitions.filter(by=BY).count()
    # when beat has polled for a while
    moves = _wait_for(
        "two moves of stream-000 recorded by beat",
        lambda: stream.transitions.filter(by=BY).count() >= before + 2,
        timeout=90,
    )
    assert moves
    # then each recorded move is one the simulator's script made, at its time
    timeline = ds_server.world.streams[f"{ds_server.config.parent}/streams/stream-000"].timeline
    script = timeline.segment_starts(timeline.start_at, time.time() + 1)
    for move in stream.transitions.filter(by=BY):
        assert min(abs(move.at.timestamp() - at) for at in script) < 0.01, move
    # and the objects, the source's view and the metrics are there too
    assert Partition.objects.filter(stream=stream).exists()
    assert WatchedStream.objects.get(stream=stream).polled_at is not None
    _wait_for(
        "a lag sample from the metrics", lambda: LagSample.objects.filter(stream__source_kind="datastream")
    )


def test_an_operators_pause_is_carried_out_through_the_worker(watched, ds_server):
    # given a stream that is running for the next few seconds
    name = _wait_for("a running stream", lambda: next(iter(ds_server.steady_streams("RUNNING", 5.0)), None))
    stream = Stream.objects.get(name=name.rsplit("/", 1)[-1])
    # when an operator pauses it from the CLI
    done = watched.manage("cdc_stream", "pause", stream.name)
    # then the CLI follows the worker's operation to its end, printing its progress
    assert "pause sent to the source" in done.stdout
    assert "  DONE: " in done.stdout, done.stdout
    # and the worker had Datastream pause it and followed the operation to its end
    operation = _wait_for(
        "the pause to end",
        lambda: StreamOperation.objects.filter(stream=stream, finished_at__isnull=False).first(),
        timeout=60,
    )
    assert operation.status == StreamOperation.Status.DONE, operation.message
    assert operation.operation
    _wait_for(
        "the stream to show PAUSED", lambda: Stream.objects.get(pk=stream.pk).state == "PAUSED", timeout=30
    )
