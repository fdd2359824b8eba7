"""The reading pipeline end to end: real Celery workers, the real client, the simulator over gRPC."""

from __future__ import annotations

import random
import re
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from partitions.models import Partition, PartitionEdge
from partitions.pipeline import landing
from partitions.simulator.spanner.groundtruth import ground_truth
from partitions.sources.landing import DEDUPE_KEY
from streams.models import Stream, StreamError

pytestmark = pytest.mark.slow
P, S = Partition.State, Stream.State
SPAN = timedelta(seconds=40)  # 20 splits and 20 merges at one every 2 s


def create_stream(pipeline, sim, name, start, end=None, database="demo-db", window=5, start_it=True):
    """Register (and start) a stream through `cdc_stream`, as a script would."""
    args = [
        "cdc_stream", "create", name, "--project", "p", "--instance", "i", "--database", database,
        "--change-stream", sim.config.stream, "--start", start.isoformat(), "--heartbeat-ms", "1000",
        "--window-seconds", str(window), "--emulator-host", sim.emulator_host,
    ]  # fmt: skip
    if end is not None:
        args += ["--end", end.isoformat()]
    pipeline.manage(*args)
    if start_it:
        pipeline.manage("cdc_stream", "start", name)
    return Stream.objects.get(name=name)


def span_in_past(minutes_ago: float, span: timedelta = SPAN) -> tuple[datetime, datetime]:
    """Return a [start, end] of `span` that lies wholly in the past, on whole seconds."""
    start = (timezone.now() - timedelta(minutes=minutes_ago)).replace(microsecond=0)
    return start, start + span


def landed_keys(pipeline, stream) -> set[tuple]:
    """Return the dedupe keys of every landed row of the stream."""
    table = landing.read_landing(str(pipeline.landing), stream.pk)
    cols = [table.column(c).to_pylist() for c in DEDUPE_KEY]
    return set(zip(*cols, strict=True))


def truth_keys(sim, stream) -> set[tuple]:
    """Return the dedupe keys a correct reader of the stream must land."""
    return {
        (token, r.commit_timestamp, r.server_transaction_id, r.record_sequence, i)
        for token, r in ground_truth(
            sim.config, stream.connection["database"], stream.start_at, stream.end_at
        )
        for i in range(len(r.mods))
    }


def wait_until_finished(wait_for, stream, timeout=120):
    """Wait for the stream to reach its end timestamp (it is then PAUSED, saying so)."""

    def done():
        stream.refresh_from_db()
        assert stream.state not in (S.FAILED_PERMANENTLY,), stream.state_reason
        return stream.state == S.PAUSED and "reached end" in stream.state_reason

    wait_for(f"stream {stream.name} to reach its end", done, timeout=timeout)


def watermarks(stream) -> dict[int, datetime]:
    return dict(Partition.objects.filter(stream=stream).values_list("pk", "watermark"))


def in_state(stream, *states: str):
    """Return a check that the stream is in one of `states`, for wait_for."""
    return lambda: Stream.objects.get(pk=stream.pk).state in states


def state_of(stream):
    """Return a detail for wait_for: the stream's state and reason, its partitions' states, its last error."""

    def detail() -> str:
        row = Stream.objects.get(pk=stream.pk)
        error = StreamError.objects.filter(stream=stream).order_by("-pk").first()
        states = Counter(Partition.objects.filter(stream=stream).values_list("state", flat=True))
        return (
            f"stream {row.name}: {row.state} ({row.state_reason}); partitions {dict(states)}; "
            f"last error: {error and error.message}"
        )

    return detail


def housekeeping_runs(pipeline, task: str, event: str) -> int:
    """Return how many times the housekeeping workers logged `task` `event` (received, succeeded)."""
    text = "".join(log.read_text() for log in sorted(pipeline.logs.glob("hk*.log")))
    return len(re.findall(rf"{task}\[[^\]]+\] {event}", text))


@pytest.fixture(scope="module")
def worker(pipeline):
    """Run one worker and beat for the module's tests."""
    pipeline.beat()
    return pipeline.worker("w1")


def test_catch_up_follows_every_split_and_merge_and_lands_the_ground_truth(pipeline, sim, worker, wait_for):
    # given a stream over 40 s of the past with a split and a merge every 2 s
    start, end = span_in_past(30)
    stream = create_stream(pipeline, sim, "e2e", start, end)
    # when the worker catches up
    wait_until_finished(wait_for, stream)
    # then every partition finished, the leaves exactly at the stream's end
    parts = {p.pk: p for p in Partition.objects.filter(stream=stream)}
    assert {p.state for p in parts.values()} == {P.FINISHED}
    edges = list(PartitionEdge.objects.filter(stream=stream).values_list("parent_id", "child_id"))
    parents_of, children_of = defaultdict(set), defaultdict(set)
    for parent, child in edges:
        parents_of[child].add(parent)
        children_of[parent].add(child)
    assert all(p.end_at == end for pk, p in parts.items() if pk not in children_of)
    # and the lineage holds at least 10 splits and 10 merges, each as the simulator made it
    assert sum(len(c) > 1 for c in children_of.values()) >= 10
    merged = [c for c, ps in parents_of.items() if len(ps) > 1]
    assert len(merged) >= 10
    for child, ps in parents_of.items():
        expected = set(sim.topology.get(parts[child].token).parents)
        assert {parts[p].token for p in ps} == expected
        # a child ran only after all of its parents finished
        assert parts[child].running_at >= max(parts[p].finished_at for p in ps)
    # and the landing zone, deduplicated, equals the ground truth
    assert landed_keys(pipeline, stream) == truth_keys(sim, stream)
    # and each partition (a merged child too) was read once: its count matches the truth
    truth_counts = Counter(t for t, _ in ground_truth(sim.config, "demo-db", start, end))
    assert {p.token: p.data_records for p in parts.values() if p.data_records} == dict(truth_counts)


def test_killed_workers_lose_nothing_and_watermarks_never_move_back(pipeline, sim, worker, wait_for):
    # given a stream being caught up by a worker that will be killed
    pipeline.kill(worker)
    start, end = span_in_past(20, timedelta(seconds=24))
    stream = create_stream(pipeline, sim, "crash", start, end)
    rng, seen, current = random.Random(3), {}, pipeline.worker("crashy")
    # when the worker is SIGKILLed at random moments and restarted, six times
    for _ in range(6):
        deadline = time.monotonic() + rng.uniform(0.3, 1.5)
        while time.monotonic() < deadline:
            for pk, wm in watermarks(stream).items():
                assert wm >= seen.get(pk, wm), "a watermark moved backwards"
                seen[pk] = wm
            time.sleep(0.05)  # sampling watermarks until a random kill moment: not a wait for a state
        pipeline.kill(current)
        current = pipeline.worker("crashy")
    wait_until_finished(wait_for, stream, timeout=150)
    # then nothing was lost or invented, and no watermark went back
    assert landed_keys(pipeline, stream) == truth_keys(sim, stream)
    assert all(wm >= seen.get(pk, wm) for pk, wm in watermarks(stream).items())
    pipeline.kill(current)
    pipeline.worker("w1")


def _lease_intervals(text: str) -> dict[str, list[tuple[float, float, str]]]:
    """Return per partition the (start, end, owner) of each live lease the workers logged.

    A lease ends when its holder gives it up or when it expires unrenewed, whichever
    is first: after expiry another reader may take over, as designed.
    """
    opened, intervals = {}, defaultdict(list)
    pattern = r"LEASE (start|renew|end) partition=(\d+) owner=(\S+) at=([\d.]+) until=([\d.]+)"
    for event, pk, owner, at, until in re.findall(pattern, text):
        key = (pk, owner)
        if event == "start":
            opened[key] = [float(at), float(until)]
        elif event == "renew" and key in opened:
            opened[key][1] = float(until)
        elif event == "end" and key in opened:
            start, expires = opened.pop(key)
            intervals[pk].append((start, min(float(at), expires), owner))
    return intervals


def test_duplicate_reads_on_two_workers_never_share_a_lease(pipeline, sim, worker, wait_for):
    # given two workers and a stream whose every read is queued three times over
    second = pipeline.worker("w2")
    start, end = span_in_past(10, timedelta(seconds=20))
    stream = create_stream(pipeline, sim, "dupes", start, end)
    script = (
        "from partitions.models import Partition\n"
        "from partitions.pipeline.tasks import read_partition_task as t\n"
        "import time\n"
        "for _ in range(10):\n"
        "    open_ = Partition.objects.filter(stream__name='dupes').exclude(state='FINISHED')\n"
        "    ids = list(open_.values_list('pk', flat=True))\n"
        "    [t.delay(pk) for pk in ids for _ in range(3)]\n"
        "    time.sleep(0.3)\n"  # pacing the duplicates over the reads' life: not a wait for a state
    )
    pipeline.manage("shell", "-c", script)
    wait_until_finished(wait_for, stream)
    pipeline.kill(second)
    # then no two readers held a partition's lease at once
    text = pipeline.log_text("w1") + pipeline.log_text("w2")
    for pk, spans in _lease_intervals(text).items():
        spans.sort()
        for (_, end_a, a), (start_b, _, b) in zip(spans, spans[1:], strict=False):
            assert start_b >= end_a, f"partition {pk}: {b} took the lease while {a} held it"
    # and every record landed once per partition (duplicated reads were turned away)
    assert landed_keys(pipeline, stream) == truth_keys(sim, stream)
    truth_counts = Counter(t for t, _ in ground_truth(sim.config, "demo-db", start, end))
    counted = dict(
        Partition.objects.filter(stream=stream, data_records__gt=0).values_list("token", "data_records")
    )
    assert counted == dict(truth_counts)


def test_pause_drains_then_resume_finishes_with_nothing_lost(pipeline, sim, worker, wait_for):
    # given a running stream with a backlog, and an end still ahead (a backlog alone is
    # read before the pause arrives, now that the reader has threads to spare)
    start = (timezone.now() - timedelta(minutes=2)).replace(microsecond=0)
    end = start + timedelta(minutes=2, seconds=20)
    stream = create_stream(pipeline, sim, "pausing", start, end)
    wait_for("reading to begin", lambda: Partition.objects.filter(stream=stream, data_records__gt=0).exists())
    # when it is paused
    pipeline.manage("cdc_stream", "pause", "pausing")
    # then it drains and pauses with no lease held, and reading stops
    wait_for("PAUSED", in_state(stream, S.PAUSED), timeout=90, detail=state_of(stream))
    assert not Partition.objects.filter(stream=stream, lease_expires_at__gt=timezone.now()).exists()
    # and stays still for at least 2 s and two of beat's scheduling passes that began after
    # the pause (each could re-queue a read): on a loaded machine 2 s alone may see none
    before, began = watermarks(stream), time.monotonic()
    received = housekeeping_runs(pipeline, "schedule_partitions_task", "received")
    wait_for(
        "2 s and two scheduling passes after the pause",
        lambda: (
            time.monotonic() - began >= 2
            and housekeeping_runs(pipeline, "schedule_partitions_task", "succeeded") >= received + 2
        ),
    )
    assert watermarks(stream) == before
    assert Stream.objects.get(pk=stream.pk).transitions.filter(to_state=S.DRAINING).exists()
    # when it is resumed, it runs again and finishes with nothing lost
    pipeline.manage("cdc_stream", "resume", "pausing")
    wait_for("RUNNING", lambda: Stream.objects.get(pk=stream.pk).state in (S.RUNNING, S.PAUSED))
    wait_until_finished(wait_for, stream)
    assert landed_keys(pipeline, stream) == truth_keys(sim, stream)


def test_burst_of_errors_fails_the_stream_then_it_recovers_by_itself(pipeline, faulty_sim, worker, wait_for):
    # given a stream whose source answers too slowly for any query to finish in time
    broken = faulty_sim("slow:5000")
    start, end = span_in_past(12, timedelta(seconds=10))
    stream = create_stream(pipeline, broken, "bursty", start, end)
    # when the burst lasts, the stream moves to FAILED with the errors recorded
    wait_for("FAILED", lambda: Stream.objects.get(pk=stream.pk).state == S.FAILED, timeout=60)
    assert StreamError.objects.filter(stream=stream, kind="retryable").count() >= 2
    # when the source heals (same data, same port), the stream is back with nobody acting
    port = broken.port
    broken.stop(0)
    healed = faulty_sim(port=port)
    wait_for(
        "RUNNING again", lambda: Stream.objects.get(pk=stream.pk).state in (S.RUNNING, S.PAUSED), timeout=60
    )
    wait_until_finished(wait_for, stream)
    assert landed_keys(pipeline, stream) == truth_keys(healed, stream)
    back = stream.transitions.filter(from_state=S.FAILED, to_state__in=[S.RUNNING, S.STARTING])
    assert back.filter(by__startswith="partitions").exists()


def test_a_start_task_lost_with_its_worker_is_sent_again_by_beat(pipeline, faulty_sim, worker, wait_for):
    # given a stream whose initial query takes a while (a slow source, within the 3 s deadline)
    slow = faulty_sim("slow:1500")
    start, end = span_in_past(14, timedelta(seconds=10))
    stream = create_stream(pipeline, slow, "lost-start", start, end)
    claimed = Stream.objects.filter(pk=stream.pk, start_claimed_until__isnull=False)
    wait_for("the start task to claim the start", claimed.exists, timeout=30)
    # when the housekeeping worker running the start task is SIGKILLed (the filesystem
    # broker removed the task's message when the worker took it) and comes back
    running = [p for p in pipeline.procs if "housekeeping" in p.args and p.poll() is None]
    for proc in running:
        pipeline.kill(proc)
    pipeline.housekeeping("hk-again")
    # then beat's sweep sends another start task once the claim lapses, and the stream runs
    wait_for("RUNNING", lambda: Stream.objects.get(pk=stream.pk).state == S.RUNNING, timeout=90)
    assert not stream.transitions.filter(to_state__in=[S.FAILED, S.FAILED_PERMANENTLY]).exists()
    pipeline.manage("cdc_stream", "pause", "lost-start")


def test_start_older_than_retention_fails_permanently_and_recovers_from_now(pipeline, sim, worker, wait_for):
    # given a stream that starts before the change stream's retention
    start = timezone.now() - timedelta(days=2)
    stream = create_stream(pipeline, sim, "too-old", start)
    # then it fails permanently, saying why
    wait_for("FAILED_PERMANENTLY", lambda: Stream.objects.get(pk=stream.pk).state == S.FAILED_PERMANENTLY)
    stream.refresh_from_db()
    assert "INVALID_ARGUMENT" in stream.state_reason
    assert StreamError.objects.filter(stream=stream, kind="permanent").exists()
    # when it is recovered from now, it runs again
    # (generous deadlines: a start task and its first query wait behind the other tests'
    # work on a loaded 2-core machine; a quick run returns at once)
    pipeline.manage("cdc_stream", "recover", "too-old", "--strategy", "now")
    wait_for("RUNNING after recover", in_state(stream, S.RUNNING), timeout=120, detail=state_of(stream))
    wait_for(
        "a partition read after recover",
        lambda: Partition.objects.filter(stream=stream, state=P.RUNNING).exists(),
        timeout=120,
        detail=state_of(stream),
    )
    pipeline.manage("cdc_stream", "pause", "too-old")
    wait_for("PAUSED", in_state(stream, S.PAUSED), timeout=90, detail=state_of(stream))


def test_lag_is_sampled_while_streams_run(pipeline):
    # then beat sampled the lag of the streams that ran, naming what held them back
    from partitions.models import LagSample

    assert LagSample.objects.exists()
    assert LagSample.objects.filter(holding_partition__isnull=False).exists()


_ = UTC  # timestamps above are aware; UTC kept for readers of this module
