"""Row ranges of change stream partitions: comparison, coverage, printable labels and tokens.

A partition is a row range [start, end): ``start`` is the first row key it holds (b""
means from the first row of the table), ``end`` the first it no longer holds (b"" means
to the end of the table). Keys compare as raw bytes, as Bigtable orders rows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import NamedTuple

_PRINTABLE = frozenset(range(0x20, 0x7F))


class RowRange(NamedTuple):
    """The row keys [start, end) of a partition; an empty start or end is unbounded."""

    start: bytes
    end: bytes

    def contains(self, key: bytes) -> bool:
        """Return whether a row key lies in the range."""
        return self.start <= key and (not self.end or key < self.end)

    def within(self, other: RowRange) -> bool:
        """Return whether every key of this range lies in ``other``."""
        return other.start <= self.start and end_bound(self.end) <= end_bound(other.end)

    def overlaps(self, other: RowRange) -> bool:
        """Return whether the two ranges share a key (empty ranges share none)."""
        return start_bound(max(self.start, other.start)) < min(end_bound(self.end), end_bound(other.end))

    def intersection(self, other: RowRange) -> RowRange | None:
        """Return the keys both ranges hold, or None when they share none."""
        if not self.overlaps(other):
            return None
        ends = [e for e in (self.end, other.end) if e]
        return RowRange(max(self.start, other.start), min(ends) if ends else b"")

    def to_json(self) -> list[str]:
        """Return the range as [start hex, end hex] for a JSON cursor."""
        return [self.start.hex(), self.end.hex()]

    @classmethod
    def from_json(cls, value) -> RowRange:
        """Return the range stored by ``to_json``; ValueError if it is not one."""
        start, end = value
        return cls(bytes.fromhex(start), bytes.fromhex(end))


Bound = tuple[int, bytes]


def start_bound(key: bytes) -> Bound:
    """Return a start key as a bound comparable with ``end_bound``."""
    return (0, key)


def end_bound(end: bytes) -> Bound:
    """Return an end key as a bound: b"" (unbounded) sorts after every row key."""
    return (1, b"") if not end else (0, end)


def covers(target: RowRange, pieces: Iterable[RowRange]) -> bool:
    """Return whether the pieces tile the target exactly: no gap, no overlap, nothing outside.

    1. Sort the pieces by start key (b"", unbounded, first).
    2. Walk from the target's start: each piece must begin exactly where the last ended.
    3. The last piece must end exactly where the target ends.
    """
    ordered = sorted(pieces, key=lambda piece: piece.start)
    if not ordered:
        return False
    position = start_bound(target.start)
    for piece in ordered:
        if start_bound(piece.start) != position:
            return False  # a gap before the piece, an overlap with the last, or a piece past the end
        if end_bound(piece.end) <= position:
            return False  # an empty or inverted piece covers nothing
        position = end_bound(piece.end)
    return position == end_bound(target.end)


def key_text(key: bytes) -> str:
    """Return a row key (or qualifier) as text: itself if printable ASCII, else 0x and hex.

    Printable keys that begin with "0x" are shown in hex too, so the text is never ambiguous.
    """
    if key and all(b in _PRINTABLE for b in key) and not key.startswith(b"0x"):
        return key.decode("ascii")
    return "0x" + key.hex() if key else ""


def label(row_range: RowRange) -> str:
    """Return how pages show a partition, e.g. "[row#40000000, row#80000000)" or "[-inf, +inf)"."""
    start = key_text(row_range.start) if row_range.start else "-inf"
    end = key_text(row_range.end) if row_range.end else "+inf"
    return f"[{start}, {end})"


def range_token(row_range: RowRange) -> str:
    """Return the partition token a row range stands for: the same text for the same range.

    Bigtable names partitions by row range only; two parents of a merge must name their
    child alike without talking to each other, so the token is a digest of the range
    (row keys may be 4 KiB, too long for a token). ``cursor.place_child`` adds a
    generation when a range recurs over time.
    """
    digest = hashlib.sha256(len(row_range.start).to_bytes(4, "big") + row_range.start + row_range.end)
    return f"bt-{digest.hexdigest()[:32]}"
