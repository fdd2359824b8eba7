"""Streams broken with UNAVAILABLE are resumed from the last tokens: nothing lost, nothing doubled."""

from __future__ import annotations

from collections import Counter

from bigtable_follow import Follower
from bigtable_support import OPTIONS, identity, past_window, source_for

from partitions.simulator.bigtable.groundtruth import ground_truth


def test_broken_streams_are_resumed_with_nothing_lost_or_doubled(faulty_simulator):
    # given a simulator that breaks about one stream message in fifteen, mid-change too
    source = source_for(faulty_simulator)
    start, end = past_window(6, ago=100)
    # when every partition of a window is followed
    follower = Follower(source, start, end, OPTIONS)
    follower.run()
    # then every change arrived exactly once
    expected = Counter(ground_truth(faulty_simulator.config, "events", start, end))
    assert Counter(identity(c) for c in follower.changes()) == expected
    # and the streams really broke and were resumed from tokens
    broken = [r for r in faulty_simulator.reads() if r.status == "UNAVAILABLE"]
    assert len(broken) > 10
    resumed_after_break = {r.row_range for r in broken} & {
        r.row_range for r in faulty_simulator.reads() if r.tokens
    }
    assert resumed_after_break
