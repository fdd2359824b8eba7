"""The partition topology: deterministic, tiling the key space, splitting and merging as Spanner's does."""

from __future__ import annotations

from collections import Counter

from partitions.simulator.core.topology import KEY_SPACE, Topology

EPOCH_US = 1_700_000_000 * 1_000_000
HOUR_US = 3600 * 1_000_000


def make_topology(seed=7):
    return Topology(seed, EPOCH_US, 4, 5_000_000, 5_000_000)


def test_same_seed_gives_same_history_and_other_seed_another():
    # given two topologies with one seed and one with another
    a, b, c = make_topology(), make_topology(), make_topology(seed=8)
    # when each is extended over an hour
    for topology in (a, b, c):
        topology.ensure(EPOCH_US + HOUR_US)
    # then the first two agree on every partition and the third does not
    assert [(p.token, p.end_us) for p in a.partitions()] == [(p.token, p.end_us) for p in b.partitions()]
    assert {p.token for p in a.partitions()} != {p.token for p in c.partitions()}


def test_live_partitions_always_tile_the_key_space():
    topology = make_topology()
    topology.ensure(EPOCH_US + HOUR_US)
    for t in range(EPOCH_US, EPOCH_US + HOUR_US, 1_250_000):
        live = topology.live_at(t)
        assert live[0].lo == 0
        assert live[-1].hi == KEY_SPACE
        assert all(a.hi == b.lo for a, b in zip(live, live[1:], strict=False))
        assert all(p.start_us <= t and (p.end_us is None or t < p.end_us) for p in live)


def test_splits_and_merges_happen_and_merges_join_adjacent_ranges():
    topology = make_topology()
    topology.ensure(EPOCH_US + 10 * 60 * 1_000_000)
    assert topology.splits >= 100
    assert topology.merges >= 100
    merged = [p for p in topology.partitions() if len(p.parents) == 2]
    assert merged
    for child in merged:
        left, right = (topology.get(t) for t in child.parents)
        assert left.hi == right.lo
        assert (child.lo, child.hi) == (left.lo, right.hi)
        assert left.end_us == right.end_us == child.start_us
        assert left.children == right.children == (child,)
    split_sizes = Counter(len(p.children) for p in topology.partitions() if len(p.children) > 1)
    assert set(split_sizes) <= {2, 3}
    assert split_sizes[2] > 0
