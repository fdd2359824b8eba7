"""Partitions over time: key ranges of [0, 2**32) that split and merge at fixed moments.

The change stream starts at ``epoch`` with ``roots`` partitions of equal width. Split
number k (k >= 1) happens at epoch + k * split_every, merge number k at
epoch + (k + 0.5) * merge_every; each event picks its target with a random generator
keyed by (seed, kind, k), so the whole history is a pure function of the config. It is
built lazily, as far as the latest time anyone asked about (``ensure``).
"""

from __future__ import annotations

import hashlib
import random
import threading
from bisect import bisect_right
from dataclasses import dataclass, field

KEY_SPACE = 2**32
# A split makes three children only while the stream has fewer live partitions than
# this many per root, so the count stays bounded however long the simulator runs.
_THREE_WAY_CAP_PER_ROOT = 4
_THREE_WAY_CHANCE = 0.3


@dataclass(eq=False)
class Partition:
    """A key range [lo, hi) over the time [start_us, end_us); end_us is None while live."""

    token: str
    lo: int
    hi: int
    start_us: int
    parents: tuple[str, ...]
    end_us: int | None = None
    children: tuple[Partition, ...] = field(default=(), repr=False)

    def contains(self, key: int) -> bool:
        """Return whether the key lies in this partition's range."""
        return self.lo <= key < self.hi


def partition_token(seed: int, lo: int, hi: int, start_us: int) -> str:
    """Return the token of a partition: readable prefix, then a hash of its identity."""
    digest = hashlib.sha256(f"{seed}:{lo}:{hi}:{start_us}".encode()).hexdigest()[:20]
    return f"sim-{digest}"


class Topology:
    """The lazily extended, thread-safe history of a change stream's partitions."""

    def __init__(self, seed: int, epoch_us: int, roots: int, split_every_us: int, merge_every_us: int):
        self.seed = seed
        self.epoch_us = epoch_us
        self.roots = roots
        self._split_every = split_every_us
        self._merge_every = merge_every_us
        self._lock = threading.Lock()
        self._by_token: dict[str, Partition] = {}
        self._next_split = 1
        self._next_merge = 0
        self._horizon_us = epoch_us
        width = KEY_SPACE // roots
        bounds = [i * width for i in range(roots)] + [KEY_SPACE]
        live = [self._new(lo, hi, epoch_us, ()) for lo, hi in zip(bounds, bounds[1:], strict=False)]
        # One snapshot of the live partitions (sorted by lo) per moment the set changed.
        self._times = [epoch_us]
        self._snapshots = [tuple(live)]
        self._los = [[p.lo for p in live]]
        self.splits = 0
        self.merges = 0

    def _new(self, lo: int, hi: int, start_us: int, parents: tuple[str, ...]) -> Partition:
        part = Partition(partition_token(self.seed, lo, hi, start_us), lo, hi, start_us, parents)
        self._by_token[part.token] = part
        return part

    def _split_time(self, k: int) -> int:
        return self.epoch_us + k * self._split_every

    def _merge_time(self, k: int) -> int:
        return self.epoch_us + k * self._merge_every + self._merge_every // 2

    def ensure(self, t_us: int) -> None:
        """Apply every event at or before t_us (idempotent, cheap when already done)."""
        if t_us < self._horizon_us:
            return
        with self._lock:
            while True:
                split_at, merge_at = self._split_time(self._next_split), self._merge_time(self._next_merge)
                at = min(split_at, merge_at)
                if at > t_us:
                    break
                # Splits go first when both fall on one moment; a partition born at that
                # moment is not eligible for the other event (it would be empty).
                if split_at == at:
                    self._split(at, self._next_split)
                    self._next_split += 1
                if merge_at == at:
                    self._merge(at, self._next_merge)
                    self._next_merge += 1
            self._horizon_us = t_us + 1

    def _rng(self, kind: str, k: int) -> random.Random:
        return random.Random(f"{self.seed}:{kind}:{k}")

    def _commit(self, at: int, live: list[Partition]) -> None:
        live.sort(key=lambda p: p.lo)
        if self._times[-1] == at:
            self._snapshots[-1] = tuple(live)
            self._los[-1] = [p.lo for p in live]
        else:
            # Times last: a lock-free reader bisecting _times must find its snapshot.
            self._snapshots.append(tuple(live))
            self._los.append([p.lo for p in live])
            self._times.append(at)

    def _split(self, at: int, k: int) -> None:
        live = list(self._snapshots[-1])
        eligible = [p for p in live if p.start_us < at and p.hi - p.lo >= 4]
        if not eligible:
            return
        rng = self._rng("split", k)
        parent = rng.choice(eligible)
        three = len(live) < _THREE_WAY_CAP_PER_ROOT * self.roots and rng.random() < _THREE_WAY_CHANCE
        cuts = sorted(rng.sample(range(parent.lo + 1, parent.hi), 2 if three else 1))
        bounds = [parent.lo, *cuts, parent.hi]
        children = tuple(
            self._new(lo, hi, at, (parent.token,)) for lo, hi in zip(bounds, bounds[1:], strict=False)
        )
        parent.children, parent.end_us = children, at
        live.remove(parent)
        self._commit(at, live + list(children))
        self.splits += 1

    def _merge(self, at: int, k: int) -> None:
        live = list(self._snapshots[-1])
        pairs = [(a, b) for a, b in zip(live, live[1:], strict=False) if a.start_us < at and b.start_us < at]
        if not pairs:
            return
        left, right = self._rng("merge", k).choice(pairs)
        child = self._new(left.lo, right.hi, at, (left.token, right.token))
        for parent in (left, right):
            parent.children, parent.end_us = (child,), at
            live.remove(parent)
        self._commit(at, [*live, child])
        self.merges += 1

    def live_at(self, t_us: int) -> tuple[Partition, ...]:
        """Return the partitions live at t_us, sorted by key range."""
        self.ensure(t_us)
        i = bisect_right(self._times, t_us) - 1
        return self._snapshots[i] if i >= 0 else ()

    def find(self, key: int, t_us: int) -> Partition:
        """Return the partition that holds the key at t_us (t_us >= epoch)."""
        self.ensure(t_us)
        i = bisect_right(self._times, t_us) - 1
        if i < 0:
            raise ValueError("no partition exists before the change stream's epoch")
        return self._snapshots[i][bisect_right(self._los[i], key) - 1]

    def get(self, token: str) -> Partition | None:
        """Return the partition with this token, or None if there is none (yet)."""
        return self._by_token.get(token)

    def partitions(self) -> list[Partition]:
        """Return every partition created so far, in creation order."""
        return list(self._by_token.values())
