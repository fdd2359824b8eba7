"""Housekeeping and reports run on time behind a backlog of hundreds of queued reads.

Beat's tasks go to the "housekeeping" queue and reports to "reports", each served by a
worker of its own (as in the Procfile), so a read backlog cannot delay them. Before,
every task shared one queue: lag samples, scheduling and stall checks expired unrun
behind the reads ("Discarding revoked task"), the charts had gaps for minutes, and a
report waited its turn behind every queued window.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from cdcweb.reports.models import Report
from partitions.models import LagSample, Partition
from partitions.simulator.spanner.config import SimulatorConfig
from partitions.simulator.spanner.server import start_server
from streams.models import Stream
from tests.partitions.pipeline.conftest import TEST_ENV, _wait_for

pytestmark = pytest.mark.slow
ROOTS = 300
SAMPLE_SECONDS = 2.0


@pytest.fixture(scope="module")
def pipeline_env() -> dict[str, str]:
    """Return the tests' fast beat, but the default lease: a short one makes every queued
    read's reservation lapse while it waits, and beat re-queue the whole backlog."""
    env = {k: v for k, v in TEST_ENV.items() if k != "CDC_LEASE_SECONDS"}
    return {**env, "CDC_LAG_SAMPLE_SECONDS": str(int(SAMPLE_SECONDS))}


@pytest.fixture(scope="module")
def crowded():
    """Yield a simulator whose change stream starts with 300 partitions."""
    epoch = (datetime.now(UTC) - timedelta(hours=1)).replace(second=0, microsecond=0)
    server = start_server(
        SimulatorConfig(epoch=epoch, roots=ROOTS, split_every=60.0, merge_every=60.0, seed=5)
    )
    yield server
    server.stop(0)


@pytest.fixture(scope="module")
def backlog(pipeline, crowded):
    """Start a stream of 300 partitions 20 minutes back, read by a reader of 4 threads."""
    pipeline.beat()
    pipeline.reports()
    pipeline.worker("reader", threads=4)
    start = (timezone.now() - timedelta(minutes=20)).replace(microsecond=0)
    pipeline.manage(
        "cdc_stream", "create", "crowd", "--project", "p", "--instance", "i", "--database", "demo-db",
        "--change-stream", crowded.config.stream, "--start", start.isoformat(), "--heartbeat-ms", "1000",
        "--window-seconds", "5", "--emulator-host", crowded.emulator_host,
    )  # fmt: skip
    pipeline.manage("cdc_stream", "start", "crowd")
    stream = Stream.objects.get(name="crowd")
    _wait_for("the roots", lambda: Partition.objects.filter(stream=stream).count() >= ROOTS, timeout=60)
    return stream


def queued_reads(stream) -> int:
    """Return how many of the stream's partitions still have ten minutes and more to read."""
    behind = timezone.now() - timedelta(minutes=10)
    unfinished = Partition.objects.filter(stream=stream).exclude(state=Partition.State.FINISHED)
    return unfinished.filter(watermark__lt=behind).count()


def test_a_lag_sample_lands_in_every_interval_behind_hundreds_of_queued_reads(pipeline, backlog):
    # given hundreds of partitions waiting for a read
    assert queued_reads(backlog) >= 200
    began = timezone.now()
    sampled = LagSample.objects.filter(stream=backlog, at__gte=began)
    # when the backlog lasts 15 s and beat has sampled six times meanwhile (on a loaded
    # machine the 15 s alone may hold fewer: the gaps below then say how late they were)
    _wait_for(
        "15 s and six lag samples behind the backlog",
        lambda: timezone.now() - began >= timedelta(seconds=15) and sampled.count() >= 6,
        timeout=120,
        detail=lambda: f"samples so far: {list(sampled.values_list('at', flat=True))}",
    )
    # then the reads are still backlogged
    assert queued_reads(backlog) >= 100
    # and beat's lag sample landed in every interval all the same
    times = list(sampled.values_list("at", flat=True))
    edges = [began, *sorted(times), timezone.now()]
    gaps = [(b - a).total_seconds() for a, b in zip(edges, edges[1:], strict=False)]
    assert len(times) >= 6
    assert max(gaps) < 2 * SAMPLE_SECONDS, gaps
    # and the housekeeping worker never threw a lag sample away unrun
    assert "Discarding revoked task: partitions.pipeline.tasks.sample_lag_task" not in pipeline.log_text("hk")


def test_a_report_starts_within_seconds_behind_hundreds_of_queued_reads(pipeline, backlog):
    # given hundreds of partitions waiting for a read
    assert queued_reads(backlog) >= 100
    # when an operator asks for a report
    until = timezone.now()
    code = (
        "from datetime import timedelta\n"
        "from streams.models import Stream\n"
        "from cdcweb.reports.services import create_report\n"
        "s = Stream.objects.get(name='crowd')\n"
        "create_report(s, s.start_at, s.start_at + timedelta(minutes=1), 'olga')\n"
    )
    pipeline.manage("shell", "-c", code)
    report = Report.objects.get(stream=backlog, requested_by="olga")
    # then Spark starts on it within seconds, whatever the read backlog
    _wait_for(
        "the report to start", lambda: Report.objects.get(pk=report.pk).started_at is not None, timeout=10
    )
    report.refresh_from_db()
    assert (report.started_at - report.created_at).total_seconds() < 5
    assert report.created_at >= until - timedelta(seconds=1)
