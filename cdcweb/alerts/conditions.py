"""Rule kinds: which (rule, stream) pairs hold now, and the evidence each holds on.

Every kind reads what the pipeline already stored: the progress read model
(partitions.progress, loaded once per cycle for all streams), lag samples and
partition rows. Each kind function takes all enabled rules of its kind and runs at most
one query for all of them, whatever the number of rules or streams:

    kind               query (beyond the shared progress)
    lag_above          lag samples in each breaching pair's window (windows.py), if any breach now
    lag_growing        the last LAG_WINDOW raw samples of each running stream (a window function)
    partition_stalled  the stalled partitions of streams whose progress counts any
    stream_failed      none: the stream's state
    retention          none: the stream's state, pause time and low watermark
    no_data            lag samples around each quiet pair's window start (windows.py)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from django.conf import settings
from django.db.models import F, Window
from django.db.models.functions import RowNumber

from partitions.models import LagSample, Partition
from partitions.pipeline.lag_samples import SAMPLED_STATES
from partitions.progress import StreamProgress
from partitions.progress import retention as retention_of
from partitions.stalls import LAG_WINDOW, lag_grew_throughout
from streams.models import Stream
from streams.retention import resume_deadline
from streams.times import human_duration

from .models import AlertRule
from .windows import window_stats

K = AlertRule.Kind
S = Stream.State
FAILED_STATES = (S.FAILED, S.FAILED_PERMANENTLY)
STOPPED_STATES = (S.PAUSED, S.DRAINING, S.FAILED, S.FAILED_PERMANENTLY)
# Stalled partitions named in one alert's evidence.
EVIDENCE_PARTITIONS = 5
# A window with no evidence of its own (lag_growing, stalled) links to this much of the lag chart.
CHART_SPAN = timedelta(minutes=15)


@dataclass(frozen=True)
class Finding:
    """A rule holding for a stream: one line to read, and what it held on."""

    summary: str
    evidence: dict


@dataclass(frozen=True)
class Scope:
    """What one evaluation cycle knows: the moment, the streams watched and their progress."""

    now: datetime
    streams: dict[int, Stream]
    progress: dict[int, StreamProgress]

    def targets(self, rule: AlertRule) -> list[Stream]:
        """Return the streams the rule watches (its own, or every stream)."""
        if rule.stream_id is None:
            return list(self.streams.values())
        stream = self.streams.get(rule.stream_id)
        return [stream] if stream is not None else []

    def pairs(self, rules: list[AlertRule]):
        """Yield (rule, stream, progress) for every stream every rule watches."""
        for rule in rules:
            for stream in self.targets(rule):
                yield rule, stream, self.progress.get(stream.pk)


def iso(value: datetime | None) -> str | None:
    """Return an ISO 8601 instant for the evidence (JSON), or None."""
    return value.isoformat() if value is not None else None


def lookback() -> timedelta:
    """Return how far before a window its samples are read, to tell a covered window from a young stream."""
    return timedelta(seconds=max(30, 3 * settings.CDC_LAG_SAMPLE_SECONDS))


def _window(since: datetime, until: datetime) -> dict:
    return {"since": iso(since), "until": iso(until)}


def lag_above(rules: list[AlertRule], scope: Scope) -> dict[tuple[int, int], Finding]:
    """Hold where the lag is above the threshold now and was in every sample of the last for_minutes."""
    breaching = [
        (rule, stream, progress)
        for rule, stream, progress in scope.pairs(rules)
        if stream.state in SAMPLED_STATES
        and progress is not None
        and progress.lag_seconds is not None
        and progress.lag_seconds > rule.threshold_seconds
    ]
    since_of = {rule.pk: scope.now - timedelta(minutes=rule.for_minutes) for rule, _, _ in breaching}
    pairs = {(stream.pk, since_of[rule.pk]) for rule, stream, _ in breaching if rule.for_minutes}
    stats = window_stats(pairs, lookback()) if pairs else {}
    found = {}
    for rule, stream, progress in breaching:
        since = since_of[rule.pk]
        window = stats.get((stream.pk, since))
        if rule.for_minutes and not (window and window.lag_held_above(rule.threshold_seconds, since)):
            continue
        found[rule.pk, stream.pk] = _lag_finding(rule, stream, progress, window, since, scope.now)
    return found


def _lag_finding(rule, stream, progress: StreamProgress, window, since: datetime, now: datetime) -> Finding:
    return Finding(
        f"{stream.name}: lag {human_duration(progress.lag_seconds)} above "
        f"{human_duration(rule.threshold_seconds)} for {rule.for_minutes} min",
        {
            "lag_seconds": progress.lag_seconds,
            "threshold_seconds": rule.threshold_seconds,
            "for_minutes": rule.for_minutes,
            "min_lag_in_window": window.min_lag if window else progress.lag_seconds,
            "samples_in_window": window.inside if window else 0,
            "low_watermark": iso(progress.low_watermark),
            "holding_partition": progress.holding_token,
            "window": _window(min(since, now - CHART_SPAN), now),
        },
    )


class Sample(NamedTuple):
    """A lag sample as lag_grew_throughout reads it (a tuple: no model instance per row)."""

    at: datetime
    lag_seconds: float


def _recent_samples(stream_ids: set[int], now: datetime) -> dict[int, list[Sample]]:
    """Return each stream's last LAG_WINDOW raw samples, oldest first (one query).

    Read back at most twice the window's span: a stream sampled less often than that is
    not being sampled, and its lag cannot be said to grow.
    """
    bound = now - timedelta(seconds=max(60, 2 * LAG_WINDOW * settings.CDC_LAG_SAMPLE_SECONDS))
    rows = (
        LagSample.objects.filter(stream_id__in=stream_ids, resolution_seconds=10, at__gte=bound)
        .annotate(rank=Window(RowNumber(), partition_by=[F("stream_id")], order_by=F("at").desc()))
        .filter(rank__lte=LAG_WINDOW)
        .order_by()
        .values_list("stream_id", "at", "lag_seconds")
    )
    by_stream: dict[int, list[Sample]] = defaultdict(list)
    for stream_id, at, lag in rows:
        by_stream[stream_id].append(Sample(at, lag))
    return {sid: sorted(samples) for sid, samples in by_stream.items()}


def lag_growing(rules: list[AlertRule], scope: Scope) -> dict[tuple[int, int], Finding]:
    """Hold where a running stream's lag grew in each of its last LAG_WINDOW samples (Burrow's rule)."""
    running = {stream.pk for _, stream, _ in scope.pairs(rules) if stream.state == S.RUNNING}
    recent = _recent_samples(running, scope.now) if running else {}
    growing = {sid: samples for sid, samples in recent.items() if lag_grew_throughout(samples)}
    found = {}
    for rule, stream, _ in scope.pairs(rules):
        samples = growing.get(stream.pk)
        if samples is None:
            continue
        found[rule.pk, stream.pk] = Finding(
            f"{stream.name}: lag grew in each of the last {len(samples)} samples, "
            f"to {human_duration(samples[-1].lag_seconds)}",
            {
                "samples": [{"at": iso(s.at), "lag_seconds": s.lag_seconds} for s in samples],
                "window": _window(min(samples[0].at, scope.now - CHART_SPAN), scope.now),
            },
        )
    return found


def _stalled_partitions(stream_ids: set[int]) -> dict[int, list[dict]]:
    """Return each stream's stalled unfinished partitions with their stall evidence (one query)."""
    unfinished = [state for state in Partition.State.values if state != Partition.State.FINISHED]
    rows = (
        Partition.objects.filter(stream_id__in=stream_ids, state__in=unfinished, stalled=True)
        .order_by("stream_id", "watermark", "id")
        .values("stream_id", "id", "token", "state", "watermark", "stall_rule", "stall_evidence")
    )
    by_stream: dict[int, list[dict]] = defaultdict(list)
    for row in rows:
        stream_id = row.pop("stream_id")
        by_stream[stream_id].append({**row, "watermark": iso(row["watermark"])})
    return by_stream


def partition_stalled(rules: list[AlertRule], scope: Scope) -> dict[tuple[int, int], Finding]:
    """Hold where a stream has a STALLED partition (its watermark stood still; partitions.stalls)."""
    stalled = {stream.pk for _, stream, progress in scope.pairs(rules) if progress and progress.stalled}
    partitions = _stalled_partitions(stalled) if stalled else {}
    found = {}
    for rule, stream, _ in scope.pairs(rules):
        rows = partitions.get(stream.pk)
        if not rows:
            continue
        found[rule.pk, stream.pk] = Finding(
            f"{stream.name}: {len(rows)} stalled partition{'s' if len(rows) != 1 else ''}, "
            f"watermark not moving (first {rows[0]['token'][:24]})",
            {
                "stalled": len(rows),
                "partitions": rows[:EVIDENCE_PARTITIONS],
                "window": _window(scope.now - CHART_SPAN, scope.now),
            },
        )
    return found


def stream_failed(rules: list[AlertRule], scope: Scope) -> dict[tuple[int, int], Finding]:
    """Hold where a stream is FAILED or FAILED_PERMANENTLY, and has been for the rule's for_minutes."""
    found = {}
    for rule, stream, _ in scope.pairs(rules):
        since = scope.now - timedelta(minutes=rule.for_minutes)
        if stream.state not in FAILED_STATES or stream.state_changed_at > since:
            continue
        found[rule.pk, stream.pk] = Finding(
            f"{stream.name}: {stream.state} since {stream.state_changed_at:%Y-%m-%d %H:%M:%S} UTC: "
            f"{stream.state_reason[:120]}",
            {
                "state": stream.state,
                "reason": stream.state_reason,
                "since": iso(stream.state_changed_at),
                "consecutive_failures": stream.consecutive_failures,
                "next_retry_at": iso(stream.next_retry_at),
                "window": _window(min(stream.state_changed_at, scope.now - CHART_SPAN), scope.now),
            },
        )
    return found


def retention(rules: list[AlertRule], scope: Scope) -> dict[tuple[int, int], Finding]:
    """Hold where a stopped stream has less than retention_hours left to resume from its watermark."""
    found = {}
    for rule, stream, progress in scope.pairs(rules):
        low, kept = (progress.low_watermark if progress else None), retention_of(stream)
        deadline = resume_deadline(stream, low, kept) if stream.state in STOPPED_STATES else None
        if deadline is None or deadline - scope.now >= timedelta(hours=rule.retention_hours):
            continue
        left = (deadline - scope.now).total_seconds()
        found[rule.pk, stream.pk] = Finding(
            f"{stream.name}: {stream.state}, {human_duration(max(0.0, left))} left before its low "
            "watermark leaves the source's retention"
            if left > 0
            else f"{stream.name}: {stream.state} beyond the retention: recover from now or a timestamp",
            {
                "state": stream.state,
                "left_hours": round(left / 3600, 3),
                "deadline": iso(deadline),
                "retention_hours": kept.total_seconds() / 3600,
                "low_watermark": iso(low),
                "paused_at": iso(stream.paused_at),
            },
        )
    return found


def no_data(rules: list[AlertRule], scope: Scope) -> dict[tuple[int, int], Finding]:
    """Hold where a stream RUNNING throughout the last for_minutes read no data change record in them."""
    if not settings.CDC_ALERTS_NO_DATA:
        return {}
    since_of = {rule.pk: scope.now - timedelta(minutes=max(1, rule.for_minutes)) for rule in rules}
    quiet = [
        (rule, stream, progress)
        for rule, stream, progress in scope.pairs(rules)
        if stream.state == S.RUNNING and progress and stream.state_changed_at <= since_of[rule.pk]
    ]
    stats = window_stats({(s.pk, since_of[r.pk]) for r, s, _ in quiet}, lookback()) if quiet else {}
    found = {}
    for rule, stream, progress in quiet:
        since = since_of[rule.pk]
        window = stats.get((stream.pk, since))
        if window is None or window.records_before is None or progress.data_records > window.records_before:
            continue
        found[rule.pk, stream.pk] = Finding(
            f"{stream.name}: no data change records for {rule.for_minutes} min while RUNNING",
            {"data_records": progress.data_records, "since": iso(since), "window": _window(since, scope.now)},
        )
    return found


KINDS = {
    K.LAG_ABOVE: lag_above,
    K.LAG_GROWING: lag_growing,
    K.PARTITION_STALLED: partition_stalled,
    K.STREAM_FAILED: stream_failed,
    K.RETENTION: retention,
    K.NO_DATA: no_data,
}
# Kinds that read the progress read model (the others need only the streams' rows).
PROGRESS_KINDS = (K.LAG_ABOVE, K.PARTITION_STALLED, K.RETENTION, K.NO_DATA)
