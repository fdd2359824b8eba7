"""A Bigtable partition read again from a time, through the official client and the simulator.

ReadChangeStream takes a start time instead of continuation tokens, for the partition's
row range: from its start (the parents' watermark, before the server's partition began)
the read goes back to the tokens its parents handed over; from a later time it reads
from that time. Either way it lands only changes the partition delivered the first time
(none of a neighbour's), and ends with the children it had.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import timedelta

import pytest
from bigtable_follow import Follower
from bigtable_support import OPTIONS, identity, past_window, source_for

from partitions.simulator.bigtable.server import start_server
from partitions.sources.base import PROGRESS, Ended, PartitionState
from partitions.sources.bigtable.cursor import origin, split_generation
from partitions.sources.bigtable.kind import KIND


@pytest.fixture(scope="module")
def followed(bigtable_simulator):
    """Return a staggered simulator's source, a past window and every partition as first followed.

    A merge's right parent closes 0.4 s after the left, as a real server's may.
    """
    server = start_server(replace(bigtable_simulator.config, merge_stagger=0.4))
    try:
        source = source_for(server)
        start, end = past_window(12, ago=100)
        partitions = Follower(source, start, end, OPTIONS).run()
        yield source, end, partitions
    finally:
        server.stop(grace=0)


def read_again(source, partition, at, end) -> tuple[Counter, Ended | None, int]:
    """Read a followed partition again from `at` to the end, as the pipeline does after a re-read.

    Return its changes, its Ended (None at the end) and the streams its first read opened.
    """
    cursor = KIND.reread_cursor(partition.state.cursor, at)
    assert cursor is not None
    state = PartitionState(partition.state.token, partition.state.start, at, cursor, partition.state.label)
    changes: Counter = Counter()
    opened = 0
    while True:
        read = source.read(state, end, OPTIONS)
        try:
            for item in read:
                if isinstance(item, Ended):
                    return changes, item, opened or read.attempts
                if item is not PROGRESS:
                    changes[identity(item)] += 1
                state = replace(state, watermark=read.watermark, cursor=read.cursor)
        finally:
            opened = opened or read.attempts
        if read.watermark >= end:
            return changes, None, opened


def delivered(partition) -> Counter:
    return Counter(identity(c) for c in partition.changes)


def test_every_partition_read_again_from_its_start_delivers_what_it_did_and_ends_the_same(followed):
    source, end, partitions = followed
    children = [p for p in partitions.values() if origin(p.state.cursor).tokens]
    assert len(children) > 6
    for partition in partitions.values():
        # when it is read again from its start (a child's: its parents' watermark)
        changes, ended, _ = read_again(source, partition, partition.state.start, end)
        # then it delivered exactly its changes of the first read
        assert changes == delivered(partition), partition.state.label
        # and, if it ended, its children are the partitions that followed it, not its parents
        for child in ended.children if ended else ():
            assert child.token in {split_generation(t)[0] for t in partitions}, partition.state.label
            assert child.label != partition.state.label


def test_a_partition_read_again_from_a_later_time_delivers_its_changes_from_then(followed):
    source, end, partitions = followed
    busy = [p for p in partitions.values() if len(p.changes) >= 20]
    assert len(busy) > 4
    for partition in busy:
        # when it is read again from the commit time of a change in the middle of its life
        first = sorted(partition.changes, key=lambda c: c.commit_timestamp)
        at = first[len(first) // 2].commit_timestamp
        changes, _, _ = read_again(source, partition, at, end)
        # then every change it delivered from then on came again, and nothing it had not delivered
        since = Counter(identity(c) for c in first if c.commit_timestamp >= at)
        assert since - changes == Counter(), partition.state.label
        assert changes - delivered(partition) == Counter(), partition.state.label


def test_a_child_read_again_from_around_its_parents_handover_delivers_what_it_did(followed):
    source, end, partitions = followed
    splits = [p for p in partitions.values() if len(origin(p.state.cursor).tokens) == 1]
    merges = [p for p in partitions.values() if len(origin(p.state.cursor).tokens) > 1]
    assert len(splits) > 3
    assert len(merges) > 1
    # when a split's child is read again from just after its parent's watermark at the split
    # (before the server's partition began, mostly: the server then names the parent instead)
    sent_back = 0
    for partition in splits:
        at = origin(partition.state.cursor).until + timedelta(microseconds=1)
        changes, _, opened = read_again(source, partition, at, end)
        # then the read went back to the parent's tokens and delivered what it did the first time
        assert changes == delivered(partition), partition.state.label
        sent_back += opened > 1
    assert sent_back > 0
    # and a merged child read again from its later parent's watermark (that parent was still
    # reading its rows after the merge) delivers only what it did: none of that parent's again
    for partition in merges:
        changes, _, _ = read_again(source, partition, origin(partition.state.cursor).until, end)
        assert changes == delivered(partition), partition.state.label


def test_a_partition_read_before_cursors_kept_its_origin_is_refused():
    # given a cursor of a partition read with tokens and no origin (stored by an older cdcweb)
    cursor = {"range": ["", "6d"], "tokens": [{"range": ["", "6d"], "token": "t"}]}
    # then it cannot be read again from a time
    assert KIND.reread_cursor(cursor, past_window(1)[0]) is None
