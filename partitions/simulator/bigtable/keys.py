"""Row keys of the simulated table, and the row ranges of its partitions.

The topology cuts an integer key space [0, 2**32) (``partitions.simulator.core.topology``);
key k is the row ``row#`` followed by k as eight hex digits, so byte order is numeric
order. The first partition starts at the table's first row (b"") and the last ends
after its last row (b""), as Bigtable's do.
"""

from __future__ import annotations

import re

from partitions.simulator.core.topology import KEY_SPACE, Partition
from partitions.sources.bigtable.ranges import RowRange

_KEY = re.compile(rb"row#([0-9a-f]{8})")


def row_key(k: int) -> bytes:
    """Return the row key of integer key k."""
    return b"row#%08x" % k


def key_int(key: bytes) -> int:
    """Return the integer of a row key this table uses; ValueError for any other key."""
    match = _KEY.fullmatch(key)
    if match is None:
        raise ValueError(f"{key!r} is not a row key of this table")
    return int(match[1], 16)


def bounds_range(lo: int, hi: int) -> RowRange:
    """Return the row range of the integer keys [lo, hi)."""
    return RowRange(b"" if lo == 0 else row_key(lo), b"" if hi >= KEY_SPACE else row_key(hi))


def range_bounds(row_range: RowRange) -> tuple[int, int]:
    """Return the integer keys [lo, hi) of a row range; ValueError if its ends are not this table's."""
    lo = 0 if not row_range.start else key_int(row_range.start)
    hi = KEY_SPACE if not row_range.end else key_int(row_range.end)
    if lo >= hi:
        raise ValueError(f"empty row range {row_range}")
    return lo, hi


def partition_range(partition: Partition) -> RowRange:
    """Return the row range of a topology partition."""
    return bounds_range(partition.lo, partition.hi)
