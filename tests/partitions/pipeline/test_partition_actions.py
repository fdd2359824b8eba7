"""Partition actions with real Celery workers: a released lease moves to another worker at once,
and a re-read lands a partition again while the landing zone, deduped, stays the ground truth
and the real report job (on the tests' Spark session) gives the same figures over the range."""

from __future__ import annotations

import re
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from cdcweb.reports.command import MAIN, build_command, export_lineage
from cdcweb.reports.models import Report
from cdcweb.reports.output import load_results
from partitions.models import Partition
from partitions.pipeline import landing
from spark_tasks.main import main as job_main
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


def spark_report(spark, stream: Stream, output: Path) -> tuple[dict, dict, list]:
    """Run the report job over the stream's whole range on the tests' Spark session.

    Its arguments are the ones the report task gives spark-submit (cdcweb.reports.command)
    and its tables are read back as the task reads them (cdcweb.reports.output): only the
    JVM is the session's, started once, instead of spark-submit's own.
    """
    output.mkdir(parents=True)
    since, until = stream.start_at - timedelta(minutes=1), stream.end_at + timedelta(minutes=1)
    report = Report(stream=stream, since=since, until=until, requested_by="test")  # not saved: no task
    argv = build_command(report, output, export_lineage(stream, since, until, output / "lineage.json"))
    assert job_main(argv[argv.index(str(MAIN)) + 1 :], spark) == 0
    return load_results(output / "summary.json")


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


@pytest.mark.timeout(1200)  # two Spark reports beside the pipeline on a loaded 2-core machine
def test_a_reread_lands_a_finished_partition_again_and_the_report_over_its_range_is_unchanged(
    pipeline, sim, wait_for, stop_all, spark, settings, tmp_path
):
    # given a stream over a past span read to its end, and the report of its range
    start, end = span_in_past(10, timedelta(seconds=20))
    stream = create_stream(pipeline, sim, "bounded", start, end)
    pipeline.beat()
    pipeline.worker("w1", threads=4)
    wait_until_finished(wait_for, stream)
    wait_for("the stream to pause at its end", lambda: Stream.objects.get(pk=stream.pk).state == S.PAUSED, 60)
    landed = landing.read_landing(str(pipeline.landing), stream.pk)
    assert landed_keys(pipeline, stream) == truth_keys(sim, stream)
    settings.CDC_LANDING_URI, settings.CDC_SPARK_LANDING_URI = str(pipeline.landing), ""
    before, tables_before, assumptions_before = spark_report(spark, stream, tmp_path / "before")
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
    pipeline.stop_all()  # nothing is left to read; Spark gets the cores
    once = landed.column("partition_token").to_pylist().count(target.token)
    assert once > 0
    again = landing.read_landing(str(pipeline.landing), stream.pk)
    assert again.num_rows - landed.num_rows >= once
    # and the landing zone, deduped as reports dedupe it, is still exactly the ground truth
    assert landed_keys(pipeline, stream) == truth_keys(sim, stream)
    # and the report of the range counts the landed copies but every figure is as before
    after, tables_after, assumptions_after = spark_report(spark, stream, tmp_path / "after")
    counts, counted = dict(before["totals"]), dict(after["totals"])
    assert counted.pop("landed_mods") - counts.pop("landed_mods") == again.num_rows - landed.num_rows
    assert counted.pop("duplicate_mods_removed") - counts.pop("duplicate_mods_removed") == (
        again.num_rows - landed.num_rows
    )
    assert counted == counts
    assert counts["mods"] == len(truth_keys(sim, stream)) > 0
    assert tables_after == tables_before
    assert assumptions_after == assumptions_before
    entry = AuditEntry.objects.get(partition_id=target.pk, action="reread")
    assert entry.before["state"] == "FINISHED"
