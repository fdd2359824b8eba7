"""The workload's cache of generated seconds: each built once, the oldest dropped past the bound."""

from __future__ import annotations

import random
import statistics
from types import SimpleNamespace

from partitions.simulator.core.workload import SecondCache, Workload, count_in_second


class CountingWorkload(Workload):
    """Two entries a second, in tokens a and b; counts how often each second is generated."""

    def __init__(self, max_entries: int):
        super().__init__(max_entries)
        self.built: list[int] = []

    def generate(self, s: int) -> list:
        self.built.append(s)
        return [SimpleNamespace(token="a", s=s), SimpleNamespace(token="b", s=s)]


def test_a_second_is_generated_once_and_grouped_by_token():
    workload = CountingWorkload(max_entries=100)
    first = workload.second(7)
    assert workload.second(7) is first
    assert workload.built == [7]
    assert [e.token for e in first.entries] == ["a", "b"]
    assert [e.s for e in first.by_token["b"]] == [7]


def test_past_the_bound_the_least_recently_used_second_is_dropped():
    # given a cache of four entries (two seconds) holding seconds 1 and 2, 1 used last
    workload = CountingWorkload(max_entries=4)
    workload.second(1)
    workload.second(2)
    workload.second(1)
    # when a third second comes in
    workload.second(3)
    # then 2 was dropped and is generated again, while 1 is still cached
    workload.second(1)
    workload.second(2)
    assert workload.built == [1, 2, 3, 2]


def test_a_second_holds_about_the_rate_and_none_at_rate_zero():
    rng = random.Random(5)
    counts = [count_in_second(rng, 400.0) for _ in range(200)]
    assert 380 < statistics.mean(counts) < 420
    assert count_in_second(random.Random(5), 0.0) == 0


def test_a_cache_keeps_its_floor_of_seconds_even_past_the_bound():
    # given a cache that must keep two seconds, each weighing more than the bound
    built = []
    cache = SecondCache(lambda s: built.append(s) or [s] * 10, len, max_size=5, keep=2)
    # when three seconds are read, then the last two again
    for s in (1, 2, 3, 2, 3):
        cache.get(s)
    # then only the oldest was dropped: the two a boundary-crossing read needs stay
    assert built == [1, 2, 3]
