"""What a real server needs of a reader that a well-behaved simulator does not show."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import timedelta

import pytest
from bigtable_follow import Follower
from bigtable_support import OPTIONS, identity, past_window, source_for

from partitions.simulator.bigtable.groundtruth import ground_truth
from partitions.simulator.bigtable.keys import partition_range
from partitions.simulator.bigtable.server import start_server
from partitions.simulator.core.clock import to_datetime
from partitions.sources.base import Ended, PartitionState
from partitions.sources.bigtable.cursor import child_ready, root_cursor
from partitions.sources.bigtable.ranges import label, range_token
from partitions.sources.bigtable.records import Change


def _long_lived(simulator, start, end, holds=lambda entries: True) -> PartitionState:
    """Return a root of a partition live over all of [start, end] whose changes there satisfy `holds`."""
    table = simulator.tables["events"]
    at, until = int(start.timestamp() * 1e6), int(end.timestamp() * 1e6)
    window = [
        entry
        for second in range(at // 1_000_000, until // 1_000_000 + 1)
        for entry in table.workload.second(second).entries
        if at <= entry.ts_us <= until
    ]
    for partition in table.topology.live_at(at):
        lives = partition.end_us is None or partition.end_us > until
        if lives and holds([entry for entry in window if entry.token == partition.token]):
            row_range = partition_range(partition)
            return PartitionState(
                range_token(row_range), start, start, root_cursor(row_range), label(row_range)
            )
    raise AssertionError("no partition lives over the window: pick another")


def _ends_in_a_merge(topology, start, end):
    """Return a partition live in [start, end] that ends in a merge before end."""
    begin, until = int(start.timestamp() * 1e6), int(end.timestamp() * 1e6)
    topology.ensure(until)  # children are learnt lazily
    for at in range(begin, until, 250_000):
        for p in topology.live_at(at):
            if p.end_us is not None and p.end_us < until and len(p.children) == 1:
                return p
    raise AssertionError("the window should hold a merge")


@pytest.mark.parametrize("before_us", [0, 1])
def test_a_read_resumed_from_tokens_at_or_past_its_end_ends_without_error(
    bigtable_simulator, bigtable_source, before_us
):
    # given a partition read up to a change and checkpointed there
    # (one with five changes in the window: a partition of a narrow range may hold none)
    start, _ = past_window(4, ago=40)
    partition = _long_lived(
        bigtable_simulator, start, start + timedelta(seconds=3), lambda entries: len(entries) >= 5
    )
    first = bigtable_source.read(partition, start + timedelta(seconds=3), OPTIONS)
    changes = []
    for item in first:
        if isinstance(item, Change):
            changes.append(item)
            if len(changes) == 5:
                break
    stored = replace(partition, watermark=first.watermark, cursor=first.cursor)
    first.close()
    # when a worker resumes that checkpoint with its end at that change (a worker killed
    # before the checkpoint that finished it), or before it (a window behind its tokens)
    end = changes[-1].commit_timestamp - timedelta(microseconds=before_us)
    again = bigtable_source.read(stored, end, OPTIONS)
    items = list(again)
    # then nothing is left to read and the window is done; past the end, the server is not asked
    assert items == []
    assert again.watermark == end
    assert again.attempts == (0 if before_us else 1)


def test_a_merged_child_waits_for_every_parent_though_a_token_names_its_whole_range(bigtable_simulator):
    # given a server that names the merged child's whole range in each closing parent's token
    quirky = start_server(replace(bigtable_simulator.config, wide_merge_tokens=True))
    try:
        start, end = past_window(10, ago=50)
        # when every partition is followed through its splits and merges
        follower = Follower(source_for(quirky), start, end, OPTIONS)
        follower.run()
        # then no merged child was read before both parents closed, and nothing was lost
        assert quirky.early_child_reads("events") == []
        merged = [r for r in quirky.reads() if len(r.tokens) > 1 and r.partition]
        assert merged, "the window should hold merges read from both parents' tokens"
        expected = Counter(ground_truth(quirky.config, "events", start, end))
        assert Counter(identity(c) for c in follower.changes()) == expected
    finally:
        quirky.stop(grace=0)


def test_the_quirk_is_reproduced_a_closing_token_names_the_whole_merged_range(bigtable_simulator):
    # given the quirky server, and a partition that ends in a merge
    quirky = start_server(replace(bigtable_simulator.config, wide_merge_tokens=True))
    try:
        start, end = past_window(10, ago=50)
        topology = quirky.tables["events"].topology
        parent = _ends_in_a_merge(topology, start, end)
        start = max(start, to_datetime(parent.start_us))
        row_range = partition_range(parent)
        state = PartitionState(range_token(row_range), start, start, root_cursor(row_range), label(row_range))
        # when it is read to its close
        (ended,) = [i for i in source_for(quirky).read(state, end, OPTIONS) if isinstance(i, Ended)]
        # then the child waits: the token handed over is for the parent's own range only
        (child,) = ended.children
        assert child.cursor["tokens"][0]["range"] == row_range.to_json()
        assert child.cursor["range"] == partition_range(parent.children[0]).to_json()
        assert not child_ready(PartitionState(child.token, start, start, child.cursor), False)
    finally:
        quirky.stop(grace=0)


@pytest.fixture(scope="module")
def twins_simulator(bigtable_simulator):
    """Yield a simulator where one user change in four has a twin at its commit timestamp."""
    server = start_server(replace(bigtable_simulator.config, shared_timestamp_chance=0.25))
    try:
        yield server
    finally:
        server.stop(grace=0)


def test_changes_sharing_a_commit_timestamp_all_arrive_through_resumes(twins_simulator):
    # given a window where changes share commit timestamps (two clusters, two tiebreakers)
    start, end = past_window(6, ago=45)
    expected = set(ground_truth(twins_simulator.config, "events", start, end))
    stamps = Counter(c.commit_timestamp for c in expected)
    assert any(n > 1 for n in stamps.values())
    # when every partition is followed, each read cut after 7 items and resumed from its tokens
    follower = Follower(source_for(twins_simulator), start, end, OPTIONS, window_items=7)
    follower.run()
    # then every change arrived (a resume may send the first of two again: the landing dedupes)
    assert {identity(c) for c in follower.changes()} == expected


def test_the_watermark_stays_below_a_timestamp_whose_changes_are_still_coming(twins_simulator):
    # given a partition whose changes sometimes share a commit timestamp, and an estimate that claims it
    # (picked from the workload: a partition of a narrow range may hold no twin in 3 s, or no change)
    start, _ = past_window(4, ago=40)
    partition = _long_lived(
        twins_simulator,
        start,
        start + timedelta(seconds=3),
        lambda entries: any(e.twin_follows for e in entries),
    )
    read = source_for(twins_simulator).read(partition, start + timedelta(seconds=3), OPTIONS)
    # when it is read up to the first change whose twin is still to come
    previous, stored = None, None
    for item in read:
        if not isinstance(item, Change):
            continue
        # then the watermark never reached the commit timestamp of the change just read
        assert read.watermark < item.commit_timestamp
        if previous is not None and previous.commit_timestamp == item.commit_timestamp:
            break
        previous, stored = item, read.watermark
    else:
        pytest.fail("the partition should hold two changes at one commit timestamp")
    read.close()
    # and a read started again from the watermark (a recover from it) delivers the twin again
    twin = item
    again = source_for(twins_simulator).read(
        replace(partition, watermark=stored), twin.commit_timestamp, OPTIONS
    )
    assert identity(twin) in {identity(c) for c in again if isinstance(c, Change)}


def test_merge_parents_that_close_at_different_times_lose_and_repeat_nothing(bigtable_simulator):
    # given a server whose merge parents close 0.4 s apart, the right one still serving its rows
    staggered = start_server(replace(bigtable_simulator.config, merge_stagger=0.4))
    try:
        start, end = past_window(12, ago=55)
        # when every partition is followed, reads cut and resumed now and then
        follower = Follower(source_for(staggered), start, end, OPTIONS, window_items=25)
        follower.run()
        # then every change arrived, and no merged child was read before both parents closed
        expected = set(ground_truth(staggered.config, "events", start, end))
        assert {identity(c) for c in follower.changes()} == expected
        assert staggered.early_child_reads("events") == []
    finally:
        staggered.stop(grace=0)
