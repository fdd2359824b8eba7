"""The simulator speaks ReadChangeStream as Bigtable does, where a reader can go wrong."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from bigtable_raw import close_of, read_raw, token_of
from google.api_core import exceptions

from partitions.simulator.bigtable.keys import partition_range
from partitions.simulator.bigtable.server import start_server
from partitions.simulator.core.clock import to_datetime, to_us
from partitions.sources.bigtable.cursor import Token
from partitions.sources.bigtable.ranges import RowRange, covers

OK, OUT_OF_RANGE = 0, 11


def _partition_with_changes(simulator, at: datetime, lasting_s: float = 2.0):
    """Return the widest partition live at ``at`` for at least ``lasting_s`` more seconds."""
    topology = simulator.tables["events"].topology
    at_us = to_us(at)
    topology.ensure(at_us + int(lasting_s * 1e6))  # learn which of them end that soon
    lasting = [p for p in topology.live_at(at_us) if p.end_us is None or p.end_us - at_us > lasting_s * 1e6]
    return max(lasting, key=lambda p: p.hi - p.lo)


def _kinds(responses) -> list[str]:
    return [r.WhichOneof("stream_record") for r in responses]


def _changes_and_tokens(responses) -> list[tuple[bytes, str]]:
    """Return (the change's bytes without its token, the token) per finished change, in order."""
    out, parts = [], []
    for r in responses:
        if r.WhichOneof("stream_record") != "data_change":
            continue
        change = r.data_change
        parts.append(change.SerializeToString() if not change.done else None)
        if change.done:
            token = change.token
            change.token = ""
            change.ClearField("estimated_low_watermark")
            out.append((b"".join(p for p in parts[:-1]) + change.SerializeToString(), token))
            parts = []
    return out


def test_a_read_resumed_from_any_token_continues_exactly(bigtable_sim):
    # given every message of a partition's past window, read at once
    start = datetime.now(UTC) - timedelta(seconds=90)
    partition = _partition_with_changes(bigtable_sim, start, lasting_s=4)
    row_range = partition_range(partition)
    end = start + timedelta(seconds=4)
    # (a heartbeat comes only after an interval without a change: at 10 ms every gap in
    # the partition's traffic longer than that has one; at 100 ms a busy partition had none)
    full = read_raw(bigtable_sim, row_range, start=start, end=end, heartbeat_ms=10)
    changes = _changes_and_tokens(full)
    assert len(changes) > 5
    # when the read is resumed from the token after each change, and after a heartbeat
    for index in (0, len(changes) // 2, len(changes) - 1):
        resumed = read_raw(bigtable_sim, row_range, tokens=[Token(row_range, changes[index][1])], end=end)
        # then it sends exactly the changes after it
        assert [c for c, _ in _changes_and_tokens(resumed)] == [c for c, _ in changes[index + 1 :]]
    beats = [i for i, kind in enumerate(_kinds(full)) if kind == "heartbeat"]
    assert beats, "no gap of 10 ms between changes in 4 s of the partition"
    beat = beats[len(beats) // 2]
    after_beat = _changes_and_tokens(full[beat + 1 :])
    resumed = read_raw(bigtable_sim, row_range, tokens=[token_of(full[beat])], end=end)
    assert [c for c, _ in _changes_and_tokens(resumed)] == [c for c, _ in after_beat]


def test_an_end_time_closes_the_stream_with_ok_and_nothing_else(bigtable_sim):
    start = datetime.now(UTC) - timedelta(seconds=80)
    row_range = partition_range(_partition_with_changes(bigtable_sim, start))
    responses = read_raw(bigtable_sim, row_range, start=start, end=start + timedelta(seconds=1))
    assert _kinds(responses)[-1] == "close_stream"
    assert close_of(responses[-1]) == (OK, [], [])


def _ended_partition(simulator, kind: str):
    """Return a partition of the last ten minutes that ended in a split or in a merge."""
    topology = simulator.tables["events"].topology
    now = to_us(datetime.now(UTC))
    for partition in topology.partitions():
        children = partition.children
        if partition.end_us is None or not now - 600e6 < partition.start_us < partition.end_us < now - 5e6:
            continue
        if (kind == "split") == (len(children) > 1):
            return partition
    raise AssertionError(f"no {kind} in the last ten minutes")


@pytest.mark.parametrize("kind", ["split", "merge"])
def test_a_partition_that_ends_closes_with_tokens_for_its_new_partitions(bigtable_sim, kind):
    # given a partition that ended in a split or a merge, read from its start
    partition = _ended_partition(bigtable_sim, kind)
    row_range = partition_range(partition)
    responses = read_raw(bigtable_sim, row_range, start=to_datetime(partition.start_us))
    # then the stream ends with OUT_OF_RANGE, a token per new partition, the tokens tiling the range
    code, tokens, new = close_of(responses[-1])
    assert code == OUT_OF_RANGE
    assert new == [partition_range(c) for c in partition.children]
    assert len(tokens) == len(new)
    assert all(t.row_range.within(n) for t, n in zip(tokens, new, strict=True))
    assert covers(row_range, [t.row_range for t in tokens])
    if kind == "merge":
        assert new[0] != row_range  # a merged child is wider than the tokens handed over


def test_a_merged_child_is_refused_until_the_tokens_cover_it(bigtable_sim):
    # given a merge: each parent's read hands over a token for its own half
    child = _ended_partition(bigtable_sim, "merge").children[0]
    topology = bigtable_sim.tables["events"].topology
    parents = [topology.get(token) for token in child.parents]
    halves = []
    for parent in parents:
        responses = read_raw(bigtable_sim, partition_range(parent), start=to_datetime(parent.start_us))
        halves += close_of(responses[-1])[1]
    child_range = partition_range(child)
    end = to_datetime(child.start_us) + timedelta(milliseconds=200)
    # when the child is read with one parent's token only
    with pytest.raises(exceptions.InvalidArgument, match="must exactly cover the requested partition"):
        read_raw(bigtable_sim, child_range, tokens=halves[:1], end=end)
    # then it is refused; with both it is served from where the parents stopped
    responses = read_raw(bigtable_sim, child_range, tokens=halves, end=end)
    assert close_of(responses[-1])[0] == OK


def test_a_range_read_from_before_it_existed_is_redirected_to_the_partitions_of_then(bigtable_sim):
    # given today's partitions and a start a minute back, when the table was cut differently
    start = datetime.now(UTC) - timedelta(seconds=60)
    topology = bigtable_sim.tables["events"].topology
    now_ranges = [partition_range(p) for p in topology.live_at(to_us(datetime.now(UTC)))]
    then = {partition_range(p) for p in topology.live_at(to_us(start))}
    row_range = next(r for r in now_ranges if r not in then)
    # when one of today's ranges is read from then
    responses = read_raw(bigtable_sim, row_range, start=start)
    # then the stream closes at once naming the partitions of then, with tokens for its share of each
    code, tokens, new = close_of(responses[0])
    assert code == OUT_OF_RANGE
    assert set(new) <= then
    assert covers(row_range, [t.row_range for t in tokens])


def test_heartbeats_come_at_the_requested_interval_when_idle(bigtable_sim):
    idle = start_server(
        replace(bigtable_sim.config, tps=0.0, roots=1, split_every=86400.0, merge_every=86400.0)
    )
    try:
        start = datetime.now(UTC) - timedelta(seconds=30)
        responses = read_raw(
            idle, RowRange(b"", b""), start=start, end=start + timedelta(seconds=2), heartbeat_ms=250
        )
        assert _kinds(responses) == ["heartbeat"] * 8 + ["close_stream"]
        marks = [r.heartbeat.estimated_low_watermark.ToDatetime(tzinfo=UTC) for r in responses[:-1]]
        assert all(start < m <= start + timedelta(seconds=2) for m in marks)
    finally:
        idle.stop(grace=0)


def test_a_live_read_stays_open_until_its_end_time(bigtable_sim):
    now = datetime.now(UTC)
    row_range = partition_range(_partition_with_changes(bigtable_sim, now, lasting_s=0))
    began = time.monotonic()
    responses = read_raw(bigtable_sim, row_range, start=now, end=now + timedelta(seconds=1), heartbeat_ms=200)
    assert time.monotonic() - began >= 0.9 or close_of(responses[-1])[0] == OUT_OF_RANGE


@pytest.mark.parametrize(
    ("start_offset_s", "says"),
    [(-7200, "outside the change stream retention period"), (30, "must not be in the future")],
)
def test_a_start_outside_what_can_be_read_is_refused(bigtable_sim, start_offset_s, says):
    start = datetime.now(UTC) + timedelta(seconds=start_offset_s)
    with pytest.raises(exceptions.InvalidArgument, match=says):
        read_raw(bigtable_sim, RowRange(b"", b""), start=start)


def test_a_token_for_another_partition_is_refused(bigtable_sim):
    # given a token of one partition, when it is handed over for another, then it is refused
    start = datetime.now(UTC) - timedelta(seconds=70)
    row_range = partition_range(_partition_with_changes(bigtable_sim, start))
    responses = read_raw(
        bigtable_sim, row_range, start=start, end=start + timedelta(seconds=1), heartbeat_ms=100
    )
    _, token = _changes_and_tokens(responses)[0]
    wider = RowRange(b"", b"")
    with pytest.raises(exceptions.InvalidArgument, match="does not belong to its partition"):
        read_raw(bigtable_sim, wider, tokens=[Token(wider, token)])


def test_the_call_log_says_what_was_read_from_where_and_how_it_ended(bigtable_sim):
    start = datetime.now(UTC) - timedelta(seconds=75)
    partition = _partition_with_changes(bigtable_sim, start, lasting_s=3)
    read_raw(bigtable_sim, partition_range(partition), start=start, end=start + timedelta(seconds=3))
    entry = bigtable_sim.reads(partition_range(partition))[-1]
    assert (entry.start, entry.tokens, entry.partition, entry.status) == (start, (), partition.token, "OK")
    assert entry.messages > entry.changes > 0
