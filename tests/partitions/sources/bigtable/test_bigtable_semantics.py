"""What a real server needs of a reader that a well-behaved simulator does not show."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from bigtable_support import OPTIONS, past_window

from partitions.simulator.bigtable.keys import partition_range
from partitions.sources.base import PartitionState
from partitions.sources.bigtable.cursor import root_cursor
from partitions.sources.bigtable.ranges import label, range_token
from partitions.sources.bigtable.records import Change


def _long_lived(simulator, start, end) -> PartitionState:
    """Return a root of a partition live over all of [start, end]."""
    topology = simulator.tables["events"].topology
    at, until = int(start.timestamp() * 1e6), int(end.timestamp() * 1e6)
    for partition in topology.live_at(at):
        if partition.end_us is None or partition.end_us > until:
            row_range = partition_range(partition)
            return PartitionState(
                range_token(row_range), start, start, root_cursor(row_range), label(row_range)
            )
    raise AssertionError("no partition lives over the window: pick another")


def test_a_read_resumed_from_tokens_past_its_end_ends_at_once(bigtable_simulator, bigtable_source):
    # given a partition read up to a change, with the read's end at that change's commit timestamp
    start, _ = past_window(4, ago=40)
    partition = _long_lived(bigtable_simulator, start, start + timedelta(seconds=3))
    first = bigtable_source.read(partition, start + timedelta(seconds=3), OPTIONS)
    changes = []
    for item in first:
        if isinstance(item, Change):
            changes.append(item)
            if len(changes) == 5:
                break
    end = changes[-1].commit_timestamp
    stored = replace(partition, watermark=first.watermark, cursor=first.cursor)
    first.close()
    # when a worker resumes that checkpoint with the end at the last change landed
    again = bigtable_source.read(stored, end, OPTIONS)
    items = list(again)
    # then it asks the server nothing the server would refuse, and the window is done
    assert items == []
    assert again.watermark == end
    assert again.attempts == 0
