"""Partition actions with real Celery workers: a released lease moves to another worker at once,
and a re-read lands a partition again while the landing zone, deduped, stays the ground truth."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pyarrow.compute as pc
import pytest
from django.utils import timezone

from partitions.models import Partition
from partitions.pipeline import landing
from partitions.sources.landing import DEDUPE_KEY
from streams.models import AuditEntry, Stream
from tests.partitions.pipeline.conftest import TEST_ENV
from tests.partitions.pipeline.test_pipeline import (
    create_stream,
    landed_keys,
    span_in_past,
    truth_keys,
    wait_until_finished,
)

pytestmark = pytest.mark.slow
P, S = Partition.State, Stream.State
SCHEDULE_SECONDS = 5.0  # the default scheduler interval (CDC_SCHEDULE_SECONDS)


@pytest.fixture(scope="module")
def pipeline_env() -> dict[str, str]:
    """Leases of 30 s: a reader that hangs keeps its partitions that long unless an operator acts."""
    return {**TEST_ENV, "CDC_LEASE_SECONDS": "30", "CDC_SCHEDULE_SECONDS": str(SCHEDULE_SECONDS)}


@pytest.fixture
def stop_all(pipeline):
    yield
    pipeline.stop_all()


def held_by(stream: Stream, worker: str):
    """Return the unfinished partitions whose live lease a worker holds (owner "...@<worker>@host")."""
    return (
        Partition.objects.filter(stream=stream, lease_owner__contains=f"@{worker}@")
        .exclude(state=P.FINISHED)
        .filter(lease_expires_at__gt=timezone.now() + timedelta(seconds=10))
        .order_by("pk")
    )


def report_totals(table) -> dict:
    """Return the totals a report computes over a landing zone: deduped on the order key, as Spark does.

    tests/cdcweb/reports/test_report_spark.py holds the report job's totals equal to these.
    """
    unique = table.group_by(list(DEDUPE_KEY)).aggregate([("mod_bytes", "max")])
    return {
        "mods": unique.num_rows,
        "records": unique.group_by(list(DEDUPE_KEY[:4])).aggregate([]).num_rows,
        "bytes": pc.sum(unique["mod_bytes_max"]).as_py(),
        "transactions": len(pc.unique(table["server_transaction_id"])),
    }


def lease_started_at(pipeline, worker: str, partition_id: int) -> float | None:
    """Return when the worker's log says it took the partition's lease (time.time()), or None."""
    found = re.findall(
        rf"LEASE start partition={partition_id} owner=\S+ at=([\d.]+)", pipeline.log_text(worker)
    )
    return float(found[0]) if found else None


def test_a_released_lease_goes_to_another_worker_within_a_scheduler_interval(
    pipeline, sim, wait_for, stop_all
):
    # given a live stream read by w1, and w2 up
    pipeline.beat()
    w1 = pipeline.worker("w1", threads=4)
    stream = create_stream(pipeline, sim, "live", timezone.now() - timedelta(seconds=20), window=5)
    wait_for("w1 to read a partition", lambda: held_by(stream, "w1").exists(), timeout=120)
    pipeline.worker("w2", threads=4)
    wait_for("w2 to be ready", lambda: "ready." in pipeline.log_text("w2"), timeout=120)
    # and w1 dies, its leases left live for 30 s
    pipeline.kill(w1)
    stuck = list(held_by(stream, "w1"))
    assert len(stuck) >= 1
    target, others = stuck[0], stuck[1:]
    # when an operator releases the lease of one partition
    pipeline.manage("cdc_stream", "release-lease", str(target.pk))
    released_at = AuditEntry.objects.get(partition_id=target.pk, action="release-lease").at.timestamp()
    # then w2 takes it within one scheduler interval, while w1's other partitions stay stuck
    taken = wait_for("w2 to take the partition", lambda: lease_started_at(pipeline, "w2", target.pk), 60)
    print(f"released, then taken by w2 {taken - released_at:.3f} s later")
    assert taken - released_at < SCHEDULE_SECONDS
    for other in others:
        other.refresh_from_db()
        assert "@w1@" in other.lease_owner  # without the action it waits for the lease to expire
    # and w2 reads on from where w1 was
    before = target.watermark
    wait_for("the partition to move on", lambda: Partition.objects.get(pk=target.pk).watermark > before, 60)


def test_a_reread_lands_a_finished_partition_again_and_dedupe_keeps_the_ground_truth(
    pipeline, sim, wait_for, stop_all
):
    # given a stream over a past span read to its end
    start, end = span_in_past(10, timedelta(seconds=20))
    stream = create_stream(pipeline, sim, "bounded", start, end)
    pipeline.beat()
    pipeline.worker("w1", threads=4)
    wait_until_finished(wait_for, stream)
    wait_for("the stream to pause at its end", lambda: Stream.objects.get(pk=stream.pk).state == S.PAUSED, 60)
    landed = landing.read_landing(str(pipeline.landing), stream.pk)
    assert landed_keys(pipeline, stream) == truth_keys(sim, stream)
    target = Partition.objects.filter(stream=stream, data_records__gt=0).order_by("-data_records").first()
    # when an operator re-reads one finished partition from its start and resumes the stream
    pipeline.manage("cdc_stream", "reread", str(target.pk), "--from", target.start_at.isoformat())
    assert Partition.objects.get(pk=target.pk).state == P.SCHEDULED
    acted = time.time()
    pipeline.manage("cdc_stream", "resume", "bounded")
    # then the partition is read and finished again, its records landed a second time
    wait_for(
        "the partition to finish again",
        lambda: (
            (p := Partition.objects.get(pk=target.pk)).state == P.FINISHED
            and p.finished_at.timestamp() > acted
        ),
        120,
    )
    wait_for("the stream to pause at its end", lambda: Stream.objects.get(pk=stream.pk).state == S.PAUSED, 60)
    once = landed.column("partition_token").to_pylist().count(target.token)
    assert once > 0
    again = landing.read_landing(str(pipeline.landing), stream.pk)
    assert again.num_rows - landed.num_rows >= once
    # and the landing zone, deduped as reports dedupe it, is still exactly the ground truth
    assert landed_keys(pipeline, stream) == truth_keys(sim, stream)
    assert report_totals(again) == report_totals(landed)
    entry = AuditEntry.objects.get(partition_id=target.pk, action="reread")
    assert entry.before["state"] == "FINISHED"
