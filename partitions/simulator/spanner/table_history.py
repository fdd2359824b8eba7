"""Row versions of a commit-timestamp table, as a pure function of (seed, table, time).

Each second s has its own generator keyed by (seed, history, s); it decides the rows
inserted in s: how many, grouped into transactions (each group shares one commit
timestamp, and groups of 2-12 rows are common, so a page boundary often falls inside
one), their keys and how often each key will be updated. An update re-stamps a key
exactly ``update_after`` seconds after its previous write, with the same offset in the
second, so the versions of second s are the inserts of s plus the updates of the keys
born at s - U, s - 2U, s - 3U: no history has to be replayed to know them.

A version is visible to a read at R once R reaches its commit timestamp, until the
key's next version replaces it (at commit timestamp + U): a table, not a log.
"""

from __future__ import annotations

import bisect
import random
import threading
from collections import OrderedDict

from partitions.simulator.core.workload import SecondCache, count_in_second

MAX_UPDATES = 3  # a key is written at most four times: its insert and three updates
_UPDATE_CHANCE = 0.5
VERSIONS_PER_KEY = sum(_UPDATE_CHANCE**j for j in range(MAX_UPDATES + 1))  # 1.875
_SINGLE_ROW_CHANCE = 0.4
_MAX_GROUP = 12
TENANTS = 16
_KINDS = ("view", "cart", "order", "refund", "review", "visit")
_MASK = (1 << 64) - 1


def mix(*parts: int) -> int:
    """Return a 64-bit hash of integers (splitmix64 steps), the same in every process."""
    h = 0x9E3779B97F4A7C15
    for part in parts:
        h = (h ^ (part & _MASK)) * 0xBF58476D1CE4E5B9 & _MASK
        h = (h ^ (h >> 31)) * 0x94D049BB133111EB & _MASK
        h ^= h >> 29
    return h


class Version:
    """One row version: commit timestamp, key, values, shard; ``last`` if never replaced."""

    __slots__ = ("ts_us", "key", "row", "shard", "last", "wire")

    def __init__(self, ts_us: int, key: tuple[int, str], row: tuple, shard: int | None, last: bool):
        self.ts_us, self.key, self.row, self.shard, self.last = ts_us, key, row, shard, last
        self.wire = b""  # the framed column values, built on first serve

    def visible_at(self, read_us: int, update_after_us: int) -> bool:
        """Return whether a read at read_us sees this version (committed, not yet replaced)."""
        return self.ts_us <= read_us and (self.last or self.ts_us + update_after_us > read_us)


class Second:
    """The versions committed in one second, sorted by (commit timestamp, key), also per shard."""

    __slots__ = ("versions", "order", "by_shard")

    def __init__(self, versions: list[Version]):
        versions.sort(key=lambda v: (v.ts_us, v.key))
        self.versions = versions
        self.order = [(v.ts_us, v.key) for v in versions]
        self.by_shard: dict[int, tuple[list[Version], list]] = {}
        for v in versions:
            found = self.by_shard.setdefault(v.shard, ([], []))
            found[0].append(v)
            found[1].append((v.ts_us, v.key))

    def after(self, shard: int | None, position: tuple) -> list[Version]:
        """Return the versions (of one shard, or all for None) ordered after position."""
        versions, order = (self.versions, self.order) if shard is None else self.by_shard.get(shard, ([], []))
        return versions[bisect.bisect_right(order, position) :]


def _weight(second: Second) -> int:
    """Return what a cached second counts against the bound: its versions, one if it has none."""
    # An empty second weighs one, so a quiet table's cache stays bounded too.
    return max(len(second.versions), 1)


class TableHistory:
    """The generated versions of one table history, seconds cached behind a bounded LRU."""

    def __init__(
        self,
        seed: int,
        history: str,
        rate: float,
        update_after_s: int,
        shards: int | None,
        epoch_us: int,
        max_versions: int = 400_000,
    ):
        self.seed, self.history, self.rate, self.shards, self.epoch_us = seed, history, rate, shards, epoch_us
        self.update_after_s, self.update_after_us = update_after_s, update_after_s * 1_000_000
        self._salt = mix(seed, *history.encode())
        self._births: OrderedDict[int, list] = OrderedDict()
        self._lock = threading.Lock()
        self._seconds = SecondCache(lambda s: Second(self._versions(s)), _weight, max_versions, keep=2)

    def second(self, s: int) -> Second:
        """Return the versions committed in [s, s + 1), generating them on first use."""
        return self._seconds.get(s)

    def _versions(self, s: int) -> list[Version]:
        """Return second s's versions: its inserts, and updates of keys born U, 2U, 3U seconds before."""
        out = []
        for j in range(MAX_UPDATES + 1):
            offset_us = j * self.update_after_us
            for ts_us, uid, key, shard, updates in self._born(s - j * self.update_after_s):
                if updates >= j:
                    row = self._row(uid, j, key, ts_us + offset_us, shard)
                    out.append(Version(ts_us + offset_us, key, row, shard, updates == j))
        return out

    def _row(self, uid: int, j: int, key: tuple[int, str], ts_us: int, shard: int | None) -> tuple:
        """Return the column values of a key's j-th version."""
        h = mix(self._salt, uid, j)
        quantity = None if h & 15 == 0 else (h >> 8) % 10_000  # NULLs appear too
        row = (*key, _KINDS[(h >> 24) % len(_KINDS)], quantity, bool(h >> 40 & 1), ts_us)
        return row if shard is None else (*row, shard)

    def _born(self, s: int) -> list[tuple]:
        """Return (commit us, uid, key, shard, updates) of the rows inserted in second s."""
        with self._lock:
            found = self._births.get(s)
            if found is not None:
                return found
        born = self._generate_births(s)
        with self._lock:
            self._births[s] = born
            while len(self._births) > 4 * (MAX_UPDATES + 1) + 64:
                self._births.popitem(last=False)
        return born

    def _generate_births(self, s: int) -> list[tuple]:
        """Return the rows inserted in second s, grouped in transactions sharing a commit timestamp."""
        rng = random.Random(mix(self._salt, s))
        mean = self.rate / VERSIONS_PER_KEY
        rows = count_in_second(rng, mean)
        sizes = []
        while rows > 0:
            size = 1 if rng.random() < _SINGLE_ROW_CHANCE else rng.randint(2, _MAX_GROUP)
            sizes.append(min(size, rows))
            rows -= sizes[-1]
        offsets = sorted(rng.sample(range(1_000_000), len(sizes)))
        born, ordinal = [], 0
        for offset, size in zip(offsets, sizes, strict=True):
            ts_us = s * 1_000_000 + offset
            for _ in range(size):
                uid = s * 1_000_000 + ordinal
                ordinal += 1
                updates = 0
                while updates < MAX_UPDATES and rng.random() < _UPDATE_CHANCE:
                    updates += 1
                key = (rng.randrange(TENANTS), f"ev-{s:010d}-{ordinal:06d}")
                shard = None if self.shards is None else mix(self._salt, uid, 99) % self.shards
                if ts_us >= self.epoch_us:  # nothing was written before the table existed
                    born.append((ts_us, uid, key, shard, updates))
        return born
