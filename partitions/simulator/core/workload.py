"""What every workload shares: events drawn second by second, each second generated once and cached.

Each whole second has its own random generator keyed by (seed, second), so a second's
events are a pure function of the config and the second alone: a query can start
anywhere in the past without replaying what came before.
"""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


def count_in_second(rng: random.Random, rate: float) -> int:
    """Return how many events one second holds: about `rate`, drawn from rng (no draw when rate <= 0)."""
    if rate <= 0:
        return 0
    return min(999_999, max(0, round(rng.gauss(rate, rate**0.5 / 2))))


class Second:
    """The entries of one second, all together and by partition token."""

    __slots__ = ("entries", "by_token")

    def __init__(self, entries: list):
        self.entries = entries
        self.by_token: dict[str, list] = {}
        for entry in entries:
            self.by_token.setdefault(entry.token, []).append(entry)


class SecondCache(Generic[T]):
    """Seconds generated on first use behind a bounded LRU, shared by every call.

    At most ``max_size`` in all (``size`` says what one second weighs), but never fewer
    than ``keep`` seconds: a call that reads across a boundary needs both sides.
    """

    def __init__(self, generate: Callable[[int], T], size: Callable[[T], int], max_size: int, keep: int = 1):
        self._generate, self._sizeof, self._max_size, self._keep = generate, size, max_size, keep
        self._cache: OrderedDict[int, T] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, s: int) -> T:
        """Return second s, generating it on first use."""
        with self._lock:
            found = self._cache.get(s)
            if found is not None:
                self._cache.move_to_end(s)
                return found
        # Generated outside the lock: two threads may both build it, identically.
        built = self._generate(s)
        with self._lock:
            found = self._cache.setdefault(s, built)
            if found is built:
                self._size += self._sizeof(built)
                while self._size > self._max_size and len(self._cache) > self._keep:
                    _, old = self._cache.popitem(last=False)
                    self._size -= self._sizeof(old)
            return found


class Workload:
    """The entries of every second, generated on first use and cached (``generate`` says how)."""

    def __init__(self, max_entries: int):
        self._seconds = SecondCache(self._build, lambda second: len(second.entries), max_entries)

    def generate(self, s: int) -> list:
        """Return the entries committed in [s, s + 1), in commit order."""
        raise NotImplementedError

    def second(self, s: int) -> Second:
        """Return the entries of second s, generating them on first use."""
        return self._seconds.get(s)

    def _build(self, s: int) -> Second:
        """Return second s, generated."""
        return Second(self.generate(s))
